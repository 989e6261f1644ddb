"""k3plan check-log against real engine logs (tests/fixtures/logs, each with its public source URL).

Every expected figure is worked by hand from the model's shape and the engine's rule,
never read back from the function under test."""
from __future__ import annotations

from pathlib import Path

import pytest

from k3lib.cli import main
from k3lib.core.errors import K3InputError
from k3lib.engines.logcheck import check_log, detect_engine, parse_log

LOGS = Path(__file__).parent / "fixtures" / "logs"
MiB, GiB = 2**20, 2**30


def _read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def _row(chk, component):
    return next(r for r in chk.rows if r.component == component)


def test_every_fixture_cites_its_public_source():
    for p in LOGS.glob("*.log"):
        head = p.read_text(encoding="utf-8").splitlines()[:4]
        assert any(line.startswith("# source: https://github.com/") for line in head), p.name


@pytest.mark.parametrize("name, engine", [("llamacpp-mistral-7b-32k.log", "llama.cpp"),
                                          ("ollama-partial-offload-2k.log", "ollama"),
                                          ("vllm-v0-llama-3.1-8b-rtx3090.log", "vllm"),
                                          ("sglang-qwen3-235b-fp8-tp4.log", "sglang")])
def test_engine_detected(name, engine):
    assert detect_engine(_read(name)) == engine


def test_llamacpp_k_and_v_to_the_byte():
    # Mistral 7B: 32 layers x 8 KV heads x 128 x 2 B (f16) x 32,768 cells = 2,048 MiB for K, the same for V
    chk = check_log(_read("llamacpp-mistral-7b-32k.log"), model="mistral-7b-v0.3")
    assert chk.config["n_ctx"] == 32768 and chk.config["flash_attn"] is False
    k, v = _row(chk, "K cache"), _row(chk, "V cache")
    assert k.logged == 2048 * MiB and k.predicted == 32 * 8 * 128 * 2 * 32768
    assert v.predicted == 32 * 8 * 128 * 2 * 32768 and v.within
    assert _row(chk, "KV total").within
    assert any("compute buffer (CUDA0)" in m for m in chk.not_predicted)     # listed, not guessed


def test_ollama_partial_offload_device_split_and_unknown_model():
    chk = check_log(_read("ollama-partial-offload-2k.log"))
    assert chk.engine == "ollama" and chk.config["n_ctx"] == 2048
    split = _row(chk, "KV buffers summed over devices")
    assert split.logged == 72 * MiB and split.predicted == (66 + 6) * MiB
    assert chk.model_id is None
    assert any("K and V" in m for m in chk.not_predicted)


def test_llamacpp_excerpt_without_n_ctx_predicts_nothing_it_cannot():
    chk = check_log(_read("llamacpp-qwen2.5-3b-layers.log"))
    assert not any(r.component.startswith(("K ", "V ")) for r in chk.rows)
    assert any("n_ctx" in m for m in chk.not_predicted)


def test_vllm_v0_blocks_and_weights():
    # Llama 3.1 8B: a 16-token block is 16 x 32 layers x 2 x 8 x 128 x 2 B = 2 MiB; 3.81 GiB -> 1,950 blocks
    # (the printed 3.81 is rounded: 3.805-3.815 GiB allows 1,948-1,953); vLLM printed 1,952
    chk = check_log(_read("vllm-v0-llama-3.1-8b-rtx3090.log"))
    assert chk.model_id == "llama-3.1-8b"
    blocks = _row(chk, "KV cache blocks")
    assert blocks.logged == 1952 and blocks.predicted == int(3.81 * GiB) // (2 * MiB) and blocks.within
    w = _row(chk, "weights per rank")
    assert w.logged == pytest.approx(14.9888 * GiB) and abs(w.error_pct) <= 3.0


def test_vllm_v0_second_run_and_unknown_line_listed():
    chk = check_log(_read("vllm-v0-llama-3.1-8b-rtx3090-29k.log"))
    assert _row(chk, "KV cache blocks").logged == 1478 and _row(chk, "KV cache blocks").within
    assert any("max seq len (29000)" in u for u in chk.unknown_lines)


def test_sglang_k_pool_within_half_a_percent():
    # Qwen3-235B: 94 layers, 4 KV heads / TP 4 = 1 per rank, head dim 128, bf16: 367,404 x 94 x 128 x 2 B
    chk = check_log(_read("sglang-qwen3-235b-fp8-tp4.log"))
    assert chk.config["tp"] == 4 and chk.config["mem_fraction_static"] == 0.93
    k = _row(chk, "K pool")
    assert k.predicted == 367404 * 94 * 128 * 2
    assert k.logged == pytest.approx(8.23 * GiB) and abs(k.error_pct) <= 0.5


def test_vllm_v1_lmcache_run_is_reported_as_a_miss():
    # 8.11 GiB / (16 x 94 layers x 512 B) = 11,308 blocks -> 180,928 tokens; vLLM printed 178,880 (a run with the
    # LMCache connector): check-log reports the 1.1 % gap, it does not hide it
    chk = check_log(_read("vllm-qwen3-235b-fp8-tp4.log"))
    r = _row(chk, "KV cache tokens")
    assert r.predicted == int(8.11 * GiB) // (16 * 94 * 512) * 16
    assert not r.within and 1.0 < r.error_pct < 1.3


def test_parse_lists_engine_memory_lines():
    eng, cfg, figs, unknown = parse_log(_read("sglang-qwen3-235b-fp8-tp4.log"))
    assert eng == "sglang" and {f.quantity for f in figs} == {"pool tokens", "K", "V"}


def test_bad_input_is_one_clear_error(tmp_path, capsys):
    with pytest.raises(K3InputError, match="LOG"):
        check_log("nothing to see here")
    assert main(["check-log", str(tmp_path / "missing.log")]) == 2
    assert "LOG" in capsys.readouterr().err


def test_cli_prints_the_table(capsys):
    assert main(["check-log", str(LOGS / "llamacpp-mistral-7b-32k.log"), "--model", "mistral-7b-v0.3"]) == 0
    out = capsys.readouterr().out
    assert "K cache" in out and "2,048.00 MiB" in out


def test_ollama_model_size_from_the_llamacpp_recipe():
    # Llama 3.1 70B as Q4_0 (llama-quant.cpp): every 2-D weight Q4_0 (18 B per 32) except output Q6_K (210 B per 256),
    # norms F32. token_embd 128,256 x 8,192; per layer 2 x 8,192^2 + 2 x 8,192 x 1,024 + 3 x 8,192 x 28,672 elements
    per_layer = 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672
    q4_0 = (128256 * 8192 + 80 * per_layer) // 32 * 18
    q6_k = 128256 * 8192 // 256 * 210
    f32 = (2 * 80 + 1) * 8192 * 4
    chk = check_log(_read("ollama-llama-3.1-70b-q4_0-meta.log"))
    r = _row(chk, "model size (tensor data)")
    assert chk.model_id == "llama-3.1-70b" and chk.config["ftype"] == "Q4_0"
    assert r.predicted == q4_0 + q6_k + f32
    assert r.logged == pytest.approx(37.22 * GiB) and abs(r.error_pct) <= 0.05    # printed to 0.01 GiB
