"""`k3plan estimate` takes every llama.cpp cache setting the API takes (issue 23 §5): each flag's
figure derived by hand from llama.cpp's rule, each refused for an engine that lacks it, each shown in
the llama-server command.

The models' shapes, from their config.json files:
* Llama 3.1 8B: 32 layers, 8 KV heads × 128 → a K or V row of 1,024 elements, hidden 4,096,
  32 heads, FFN 14,336, vocabulary 128,256;
* Gemma 3 27B: 62 layers, 52 sliding (window 1,024) and 10 full, 16 KV heads × 128 → rows of 2,048;
* Kimi K3: 69 KDA layers of 96 heads × 128, short conv kernel 4 → per layer and snapshot row
  S = 96 × 128 × 128 and R = (4 − 1) × 3 × 96 × 128 elements, F32.

llama.cpp's rules (ggml-org/llama.cpp@0c1e570, src/llama-context.cpp, src/llama-kv-cache.cpp,
src/llama-kv-cache-iswa.cpp, src/llama-memory-recurrent.cpp): the context padded to 256 cells; n_seq
streams of ⌈n_ctx ÷ n_seq⌉₂₅₆ cells, or one stream of n_ctx with --kv-unified; a sliding cache of
⌈min(cells, window + n_ubatch)⌉₂₅₆ cells, all cells with --swa-full; K/V bytes = layers × streams ×
cells × row × bytes per element (f16 2, q8_0 34/32, q4_0 18/32); recurrent rows = n_seq × (1 + n_rs_seq).
"""

from __future__ import annotations

import json

import pytest

from k3lib.cli import main

LLAMA = ["--model", "llama-3.1-8b", "--engine", "llama.cpp", "--gpu", "h100", "--gpus", "1"]
GEMMA = ["--model", "gemma-3-27b", "--engine", "llama.cpp", "--gpu", "h200", "--gpus", "1"]


def estimate(capsys, *argv: str) -> dict:
    rc = main(["estimate", *argv, "--json"])
    out = capsys.readouterr().out
    assert rc in (0, 3), out
    return json.loads(out)


def kv(capsys, *argv: str) -> int:
    return estimate(capsys, *argv)["kv_cache_bytes"]


# ------------------------------------------------------------------ each flag, one figure by hand


def test_cache_type_k_alone_keeps_v_at_f16(capsys):
    # -ctk q8_0: K = 32 × 8,192 × 1,024 × 34/32 B; V stays f16: 32 × 8,192 × 1,024 × 2 B
    k = 32 * 8192 * 1024 * 34 // 32
    v = 32 * 8192 * 1024 * 2
    d = estimate(capsys, *LLAMA, "--context", "8192", "--cache-type-k", "q8_0")
    assert d["kv_cache_bytes"] == k + v == 822_083_584
    assert d["engine_settings"]["type_k"] == "q8_0" and d["engine_settings"]["type_v"] == "f16"
    line = d["engine_estimate"]["estimate"]["printed"]["llama_kv_cache: size (8,192 cells)"]
    assert "K (q8_0): 272.00 MiB" in line and "V (f16): 512.00 MiB" in line


def test_cache_type_v_alone(capsys):
    # -ctv q4_0: K f16 32 × 8,192 × 1,024 × 2; V 32 × 8,192 × 1,024 × 18/32
    assert kv(capsys, *LLAMA, "--context", "8192", "-ctv", "q4_0") == 536_870_912 + 150_994_944


def test_flash_attn_off_auto_and_on(capsys):
    # the compute buffer (k3lib.engines.llamacpp.llamacpp_compute_buffer_bytes' terms), ub 512, 8,192 cells:
    # on: F16 mask 512 × 8,192 × 2 + 512 × 4 × (128,256 + 2 × 14,336 + 3 × 4,096)
    # off: F32 mask 512 × 8,192 × 4 + 32 heads' F32 scores 32 × 512 × 8,192 × 4 + 512 × 4 × 6 × 4,096
    on = 512 * 8192 * 2 + 512 * 4 * (128_256 + 2 * 14_336 + 3 * 4096)
    off = 512 * 8192 * 4 + 32 * 512 * 8192 * 4 + 512 * 4 * 6 * 4096
    assert (on, off) == (354_942_976, 603_979_776)
    assert estimate(capsys, *LLAMA, "--context", "8192", "--flash-attn", "off")["activation_bytes"] == off
    d = estimate(capsys, *LLAMA, "--context", "8192", "-fa", "auto")
    assert d["activation_bytes"] == on  # auto: resolved as enabled, as llama.cpp does where the backend runs it
    assert d["engine_settings"]["flash_attn"] == "auto"
    assert any("auto" in n and "enabled" in n for n in d["notes"])


def test_n_ubatch_sizes_the_sliding_cache(capsys):
    # Gemma 3 27B at 32,768 tokens: full 10 × 32,768 cells; sliding 52 × ⌈1,024 + ub⌉₂₅₆ cells; rows 2,048 × 2 B, K and V
    full = 10 * 32768 * 2048 * 2 * 2
    assert kv(capsys, *GEMMA, "--context", "32768") == full + 52 * 1536 * 2048 * 2 * 2
    assert kv(capsys, *GEMMA, "--context", "32768", "-ub", "1024") == full + 52 * 2048 * 2048 * 2 * 2
    assert kv(capsys, *GEMMA, "--context", "32768", "--ubatch-size", "1024") == 3_556_769_792


def test_swa_full_keeps_the_whole_context(capsys):
    # --swa-full: every one of the 62 layers holds 32,768 cells
    assert kv(capsys, *GEMMA, "--context", "32768", "--swa-full") == 62 * 32768 * 2048 * 2 * 2 == 16_642_998_272


def test_parallel_and_kv_unified(capsys):
    # -np 4 at 300 tokens each: -c 1,200 → 1,280 cells; 4 streams of ⌈1,280 ÷ 4 = 320⌉₂₅₆ = 512 cells,
    # or with --kv-unified one stream of 1,280
    per_cell = 32 * 1024 * 2 * 2  # 32 layers, K and V rows of 1,024 f16
    streams = kv(capsys, *LLAMA, "--context", "300", "--parallel", "4")
    assert streams == 4 * 512 * per_cell == 268_435_456
    assert kv(capsys, *LLAMA, "--context", "300", "--batch", "4") == streams  # -np N is the batch N
    d = estimate(capsys, *LLAMA, "--context", "300", "-np", "4", "--kv-unified")
    assert d["kv_cache_bytes"] == 1280 * per_cell == 167_772_160
    assert d["batch"] == 4 and d["engine_settings"]["kv_unified"] is True


def test_n_rs_seq_keeps_snapshots_of_the_recurrent_state(capsys):
    # Kimi K3, one sequence: 3 snapshots add 3 rows of R and S in each of its 69 KDA layers, F32
    row = 69 * (3 * 3 * 96 * 128 + 96 * 128 * 128) * 4
    k3 = ["--model", "kimi-k3", "--engine", "llama.cpp", "--gpu", "h200", "--gpus", "1", "--context", "4096"]
    assert kv(capsys, *k3, "--n-rs-seq", "3") - kv(capsys, *k3) == 3 * row == 1_393_901_568
    # a family without rollback keeps none (llama.cpp sets n_rs_seq to 0) and says so
    d = estimate(capsys, *LLAMA, "--context", "8192", "--n-rs-seq", "3")
    assert d["kv_cache_bytes"] == 32 * 8192 * 1024 * 2 * 2
    assert any("n_rs_seq 3" in n for n in d["notes"])


# ------------------------------------------------------------------ refused where the engine lacks it

FLAGS = [
    (["--cache-type-k", "q8_0"], "cache-type-k"),
    (["--cache-type-v", "q8_0"], "cache-type-v"),
    (["--flash-attn", "auto"], "flash-attn"),
    (["--n-ubatch", "256"], "n-ubatch"),
    (["--swa-full"], "swa-full"),
    (["--kv-unified"], "kv-unified"),
    (["--parallel", "4"], "parallel"),
    (["--n-rs-seq", "2"], "n-rs-seq"),
]


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(("argv", "flag"), FLAGS, ids=[f for _, f in FLAGS])
def test_llamacpp_settings_are_refused_for_other_engines(capsys, argv, flag, engine):
    rc = main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--engine", engine, *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"k3plan: error: {flag}: --{flag} is a llama.cpp option; the plan is for {engine}")
    assert "--engine llama.cpp" in err


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--cache-type-k", "q9_0"], "cache-type-k"),
        (["-ctv", "fp8"], "cache-type-v"),
        (["-ctv", "q8_0", "-fa", "off"], "cache-type-v"),  # a quantized V needs flash attention
        (["--flash-attn", "maybe"], "flash-attn"),
        (["--n-rs-seq", "-1"], "n-rs-seq"),
        (["--parallel", "0"], "parallel"),
        (["--parallel", "4", "--batch", "2"], "parallel"),
        (["-ub", "0"], "n-ubatch"),
    ],
)
def test_bad_llamacpp_settings_name_the_flag(capsys, argv, field):
    try:
        rc = main(["estimate", *LLAMA, *argv])
    except SystemExit as exc:  # argparse's own refusal of a choice it does not list (exit 2, one line)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and (f"error: {field}:" in err or f"--{field}" in err), err


def test_cli_cache_types_are_llamacpps():
    from k3lib.cli_args import LLAMACPP_CACHE_TYPE_NAMES
    from k3lib.engines.llamacpp import LLAMACPP_CACHE_TYPES

    assert set(LLAMACPP_CACHE_TYPE_NAMES) == set(LLAMACPP_CACHE_TYPES)


# ------------------------------------------------------------------ the launch command carries them


def test_llama_server_command_carries_every_cache_setting():
    from k3lib.engines.deployment import EngineSettings, plan_for_engine
    from k3lib.studies.commands import llama_server_command

    settings = EngineSettings(
        "llama.cpp",
        type_k="q8_0",
        type_v="q4_0",
        flash_attn="auto",
        n_ubatch=256,
        swa_full=True,
        kv_unified=True,
        n_rs_seq=2,
        parallel=3,
    )
    p = plan_for_engine(model="gemma-3-27b", engine=settings, gpu="h200", gpus=1, context=4096, with_limits=False)
    cmd = llama_server_command(p, model_path="/models/gemma-3-27b.gguf")
    argv = list(cmd.argv)

    def flag(name: str) -> str:
        return argv[argv.index(name) + 1]

    assert (flag("-c"), flag("-np")) == ("12288", "3")  # 3 slots × 4,096 tokens
    assert (flag("--cache-type-k"), flag("--cache-type-v")) == ("q8_0", "q4_0")
    assert flag("--flash-attn") == "auto" and flag("-ub") == "256"
    assert "--swa-full" in argv and "--kv-unified" in argv
    assert any("n_rs_seq 2" in n for n in cmd.notes)  # no llama-server flag of its own: said, not dropped
    # the defaults print no flag of their own
    plain = llama_server_command(
        plan_for_engine(model="gemma-3-27b", engine="llama.cpp", gpu="h200", gpus=1, context=4096, with_limits=False),
        model_path="/m.gguf",
    )
    assert "--swa-full" not in plain.argv and "--kv-unified" not in plain.argv
    assert not any("n_rs_seq" in n for n in plain.notes)
