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


@pytest.mark.parametrize(
    "name, engine",
    [
        ("llamacpp-mistral-7b-32k.log", "llama.cpp"),
        ("ollama-partial-offload-2k.log", "ollama"),
        ("vllm-v0-llama-3.1-8b-rtx3090.log", "vllm"),
        ("sglang-qwen3-235b-fp8-tp4.log", "sglang"),
    ],
)
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
    # the GPU's compute buffer is modelled (no flash attention): F32 mask 512 × 32,768 × 4 B = 64 MiB, the 32
    # heads' F32 scores 32 × 512 × 32,768 × 4 B = 2,048 MiB, activations 512 × 4 B × 6 × 4,096 = 48 MiB:
    # 2,160 MiB against the 2,144.00 MiB this CUDA log printed (+0.75 %, inside the model's 20 % band)
    comp = _row(chk, "compute buffer (CUDA0)")
    assert comp.logged == 2144 * MiB and comp.predicted == (64 + 2048 + 48) * MiB and comp.within
    assert any("compute buffer (CUDA_Host)" in m for m in chk.not_predicted)  # the host side: listed, not guessed


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
    assert k.predicted == (367404 + 1) * 94 * 128 * 2  # + SGLang's padded slot 0
    assert k.logged == pytest.approx(8.23 * GiB) and abs(k.error_pct) <= 0.5


def test_vllm_v1_lmcache_run_is_reported_as_a_miss():
    # 8.11 GiB / (16 x 94 layers x 512 B) = 11,308 blocks -> 180,928 tokens; vLLM printed 178,880 (a run with the
    # LMCache connector): check-log reports the 1.1 % gap, it does not hide it
    chk = check_log(_read("vllm-qwen3-235b-fp8-tp4.log"))
    r = _row(chk, "KV cache tokens")
    assert r.predicted == int(8.11 * GiB) // (16 * 94 * 512) * 16
    assert not r.within and 1.0 < r.error_pct < 1.3
    # 178,880 tokens = 11,180 blocks x 770,048 B = 8.02 GiB: with TP=4 each rank prints its own available memory and
    # vLLM keeps the smallest rank's blocks, so check-log says which rank budget the printed tokens fit
    assert any("8.02 GiB" in n and "different ranks" in n for n in chk.notes)


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
    assert r.logged == pytest.approx(37.22 * GiB) and abs(r.error_pct) <= 0.05  # printed to 0.01 GiB


# ----------------------------------------------------------------------------- vLLM rules per version


def test_vllm_version_read_from_the_log_selects_its_rules():
    text = (
        "INFO 03-20 17:28:13 [api_server.py:977] vLLM API server version 0.8.1\n"
        "MODEL: meta-llama/Llama-3.1-8B-Instruct\nAvailable KV cache memory: 58.11 GiB\n"
        "GPU KV cache size: 476,016 tokens\n"
    )
    chk = check_log(text)
    assert chk.config["vllm_version"] == "0.8.1" and not any("not printed" in n for n in chk.notes)
    assert "vLLM 0.8.1 (V1)" in _row(chk, "KV cache tokens").rule
    eng = check_log(
        "Initializing an LLM engine (v0.6.3.post1) with config: model='meta-llama/Llama-3.1-8B-Instruct'\n"
        "# GPU blocks: 1952, # CPU blocks: 2048\n"
    )
    assert eng.config["vllm_version"] == "0.6.3.post1" and eng.config["vllm_engine"] == "V0"


def test_vllm_v0_budget_line_reproduced_with_the_064_rule():
    # 0.6.4 (worker.py): kv = 0.90 x 23.58 - peak torch (17.06, weights included) - non-torch 0.35 = 3.812 GiB;
    # check-log uses its own weights (32 x (4 x 4096^2 ... ) Llama 3.1 8B) and the printed activation 17.06 - 14.9888
    chk = check_log(_read("vllm-v0-llama-3.1-8b-rtx3090.log"))
    # V0 profiles max(20,000, 2,048) tokens: 20,000 x (3 x 14,336 + 3 x 4,096) x 2 B = 2.06 GiB; printed 17.06 - 14.99
    a = _row(chk, "activation peak")
    assert a.predicted == 20000 * 110592 and a.within
    r = _row(chk, "available KV memory")
    assert r.logged == pytest.approx(3.81 * GiB) and r.within and "torch-peak" in r.rule
    assert abs(r.predicted - (0.90 * 23.58 - 17.06 - 0.35) * GiB) < 0.01 * GiB
    # Maximum concurrency (gpu_executor.py, 0.6.4): blocks x 16 / max_model_len = 1,952 x 16 / 20,000 = 1.56
    c = _row(chk, "maximum concurrency")
    assert c.logged == 1.56 and c.within and abs(c.predicted - 1950 * 16 / 20000) < 1e-9


def test_vllm_v0_profiling_rule_pr_10511_h100():
    # 0.6.5 rule: 0.90 x 79.22 - weights - 1.26 activation - 1.79 non-torch; printed 53.29 GiB
    chk = check_log(_read("vllm-v0-llama-3-8b-h100-budget.log"), model="llama-3.1-8b")
    r = _row(chk, "available KV memory")
    assert r.logged == pytest.approx(53.29 * GiB) and r.within and abs(r.error_pct) <= 0.5 and "profiling" in r.rule
    w = _row(chk, "weights per rank")
    assert w.logged == pytest.approx(14.96 * GiB) and abs(w.error_pct) <= 3.0
    # the activation estimate is the known miss on this H100 run: Meta-Llama-3-8B's max_model_len 8192 gives
    # 8,192 x (3 x 14,336 + 3 x 4,096) x 2 B = 0.84 GiB against the printed 1.26 GiB
    chk = check_log(_read("vllm-v0-llama-3-8b-h100-budget.log"), model="llama-3.1-8b")
    assert chk.config["max_model_len"] == 8192
    a = _row(chk, "activation peak")
    assert a.predicted == 8192 * (3 * 14336 + 3 * 4096) * 2 and a.logged == pytest.approx(1.26 * GiB)
    assert not a.within and -35 < a.error_pct < -30


def test_vllm_v1_qwen3_14b_tokens_and_concurrency():
    # 40 layers x 8 KV heads x 128 x 2 (K,V) x 2 B = 163,840 B per token; a 16-token block is 2,621,440 B.
    # 6.51 GiB // 2,621,440 = 2,666 blocks -> 42,656 tokens (vLLM printed 42,656);
    # concurrency (>= 0.9): 2,666 / ceil(32,768 / 16) = 1.30 (printed 1.30x)
    chk = check_log(_read("vllm-v1-qwen3-14b-lmcache.log"), model=str(LOGS.parent / "configs" / "qwen3-14b.json"))
    t = _row(chk, "KV cache tokens")
    assert t.logged == 42656 and t.predicted == int(6.51 * GiB) // 2621440 * 16 == 42656
    c = _row(chk, "maximum concurrency")
    assert c.logged == 1.30 and c.predicted == pytest.approx(2666 / 2048) and c.within


def test_vllm_v1_fp8_kv_qwen3_30b_a3b():
    # fp8 KV: 48 layers x 4 KV heads x 128 x 2 x 1 B = 49,152 B per token, 786,432 B per 16-token block.
    # 10.545-10.555 GiB -> 14,397-14,411 blocks; vLLM printed 230,528 tokens = 14,408 blocks; 14,408 / 6,250 = 2.305
    chk = check_log(_read("vllm-v1-qwen3-30b-a3b-fp8-kv.log"), model="qwen3-30b-a3b")  # fp8 from "# config:"
    assert chk.config["kv_cache_dtype"] == "fp8" and chk.config["max_model_len"] == 100000
    t = _row(chk, "KV cache tokens")
    assert t.logged == 230528 and t.predicted == int(10.55 * GiB) // 786432 * 16 and t.within
    assert abs(t.error_pct) <= 0.5 and _row(chk, "maximum concurrency").within


def test_sglang_kv_budget_from_free_memory_and_mem_fraction_static():
    # profile_max_num_token: rest = free after load - free before load x (1 - 0.911); free before = 230.20 + 56.98
    # (mem usage = before - after) -> 230.20 - 287.18 x 0.089 = 204.64 GiB; SGLang printed 219,721,119,039 B
    chk = check_log(_read("sglang-qwen3-30b-a3b-mi355x-budget.log"), model="qwen3-30b-a3b")
    assert chk.config["mem_fraction_static"] == 0.911
    r = _row(chk, "KV budget (rest memory)")
    assert r.logged == 219721119039 and r.within
    assert abs(r.predicted - (230.20 - (230.20 + 56.98) * (1 - 0.911)) * GiB) < 1e-3 * GiB
    assert abs(r.error_pct) <= 0.5


def test_sglang_pool_tokens_from_a_printed_budget():
    # Qwen3-30B-A3B bf16: 48 layers x 4 KV heads x 128 x 2 (K,V) x 2 B = 98,304 B per slot;
    # a printed budget of 17.67 GB allows floor((17.665..17.675) GiB / 98,304) = 192,947..193,056 slots
    text = (
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --mem-fraction-static 0.85\n"
        "The available memory for KV cache is 17.67 GB.\n"
        "KV Cache is allocated. #tokens: 193000, K size: 8.84 GB, V size: 8.84 GB\n"
    )
    chk = check_log(text)
    r = _row(chk, "pool tokens")
    assert r.predicted == int(17.67 * GiB) // 98304 and r.within


def test_sglang_budget_bad_fraction_is_one_clear_error():
    from k3lib.engines.sglang import sglang_kv_budget_bytes

    with pytest.raises(K3InputError, match="mem_fraction_static"):
        sglang_kv_budget_bytes(available_after_load_bytes=GiB, total_before_load_bytes=2 * GiB, mem_fraction_static=1.2)


def test_cli_kv_dtype_and_vllm_version_options(capsys):
    log = str(LOGS / "vllm-v1-qwen3-30b-a3b-fp8-kv.log")
    assert (
        main(["check-log", log, "--model", "qwen3-30b-a3b", "--kv-cache-dtype", "fp8", "--vllm-version", "0.10.2"]) == 0
    )
    out = capsys.readouterr().out
    assert "vLLM 0.10.2 (V1)" in out and "2 of 2 figures within tolerance" in out
    assert main(["check-log", log, "--vllm-version", "banana"]) == 2
    assert "vllm_version" in capsys.readouterr().err


def test_vllm_hybrid_block_and_padding_kimi_linear_tp2():
    # TP=2: a KDA state = 16 heads x 128 x 128 x 4 B (float32) + 3 x 3 x 2,048 x 2 B = 1,085,440 B; MLA 1,152 B per
    # token. From 0.11.1: 64 x ceil(1,085,440 / 73,728) = 64 x 15 = 960 tokens (vLLM printed 960), and the state page
    # is padded by 960 x 1,152 / 1,085,440 - 1 = 1.89 % (printed 1.89%)
    chk = check_log(_read("vllm-v1-kimi-linear-tp2-hybrid-block.log"), model="kimi-linear-48b")
    assert chk.config["tp"] == 2
    b, p = _row(chk, "hybrid attention block"), _row(chk, "state page padding")
    assert b.logged == 960 and b.predicted == 64 * -(-1085440 // (64 * 1152)) == 960 and b.within
    assert p.logged == 1.89 and p.predicted == round(100 * (960 * 1152 / 1085440 - 1), 2) and p.within
    # 0.11.0's 16-token alignment would give 16 x ceil(58.9) = 944: the version decides
    old = check_log(_read("vllm-v1-kimi-linear-tp2-hybrid-block.log"), model="kimi-linear-48b", vllm_version="0.11.0")
    assert _row(old, "hybrid attention block").predicted == 944 and not _row(old, "hybrid attention block").within


def test_sglang_k_and_v_sizes_each_checked_against_the_printed_pair():
    # MHATokenToKVPool prints K and V apart ("K size: 8.23 GB, V size: 8.23 GB", vllm-project/vllm#21348): the
    # profile predicts each buffer, (367,404 + 1 padded slot) x 94 layers x 1 KV head per rank x 128 x 2 B
    chk = check_log(_read("sglang-qwen3-235b-fp8-tp4.log"))
    k, v = _row(chk, "K pool"), _row(chk, "V pool")
    assert k.logged == v.logged == pytest.approx(8.23 * GiB)
    assert k.predicted == v.predicted == (367404 + 1) * 94 * 128 * 2
    assert k.within and v.within and round(k.predicted / GiB, 2) == 8.23


def test_sglang_mla_prints_one_kv_size_and_it_is_the_latent():
    # MLATokenToKVPool prints one "KV size" (Kimi-K2.5 on 8x MI355X, TP 8: 2,454,421 tokens, 160.63 GB):
    # (2,454,421 + 1) x 61 layers x (512 + 64) x 2 B = 160.63 GiB on every rank (the latent is not split by TP)
    chk = check_log(_read("sglang-kimi-k2.5-mla-tp8-mi355x.log"), model="kimi-k2")
    assert chk.config["tp"] == 8 and chk.config["kv_cache_dtype"] == "bfloat16"
    kv = _row(chk, "KV pool")
    assert kv.logged == pytest.approx(160.63 * GiB)
    assert kv.predicted == (2454421 + 1) * 61 * 576 * 2 and kv.within
    assert round(kv.predicted / GiB, 2) == 160.63
    assert not [r for r in chk.rows if r.component in ("K pool", "V pool")]


def test_sglang_estimate_prints_k_and_v_apart():
    # the estimate's printed lines follow SGLang's: K and V sizes for MHA, one KV size for MLA
    from k3lib.engines import estimate_for_engine

    mha = estimate_for_engine("sglang", model="qwen3-30b-a3b", gpu="h100-sxm", context=8192)
    assert "K size" in mha.printed and "V size" in mha.printed and "K size + V size" not in mha.printed
    assert mha.printed["K size"] == mha.printed["V size"]
    mla = estimate_for_engine("sglang", model="deepseek-v3", gpu="h200", gpus=8, tp=8, context=8192)
    assert "KV size" in mla.printed and "V size" not in mla.printed


def test_sglang_kv_sizes_refuse_bad_counts():
    from k3lib.engines.sglang import sglang_kv_sizes_bytes

    with pytest.raises(K3InputError, match="pool_tokens"):
        sglang_kv_sizes_bytes("qwen3-30b-a3b", pool_tokens=-1)
    with pytest.raises(K3InputError, match="page_size"):
        sglang_kv_sizes_bytes("qwen3-30b-a3b", pool_tokens=10, page_size=0)
