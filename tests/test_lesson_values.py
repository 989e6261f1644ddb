"""The figures the lessons (notebooks 00–05) state, checked here instead of in the lessons.

Each expected value is worked by hand from the guide's numbers and the formula in the comment,
so a lesson's table cannot drift from its prose without a test failing. (The lessons show the
formula, the numbers and the takeaway; checks live in tests/, issue 15.)
"""

from __future__ import annotations

import pytest

from k3lib.core.hardware import get_gpu
from k3lib.core.plan import make_plan
from k3lib.studies import checklist, offload, parallel
from k3lib.views import tables

GiB = 2**30


# ------------------------------------------------------------------ 00 VRAM anatomy


def test_00_contrast_per_gpu_figures():
    from k3lib.views import anatomy

    plans = {
        m: make_plan(model=m, weights=w, kv_dtype=kv, context=c, gpu="h200-sxm", gpus=n)
        for m, w, kv, c, n in (
            ("llama-3.1-70b", "bf16", "bf16", "128K", 2),
            ("qwen3-next-80b", "fp8", "bf16", "256K", 1),
        )
    }
    t = anatomy.anatomy_table(plans).set_index("model")
    # Llama: 2·L·K·H·b·T split over TP=2 by KV head: 2·80·(8/2)·128·2 B × 131,072 / 2^30
    assert t.loc["llama-3.1-70b", "KV cache (GiB)"] == 2 * 80 * 4 * 128 * 2 * 131_072 / GiB == 20.0
    # Qwen3-Next: 12 GQA layers 2·12·2·256·2 B × 262,144 + 36 DeltaNet states (32·128·128 + 3·8,192)·4 B
    qwen = (2 * 12 * 2 * 256 * 2 * 262_144 + 36 * (32 * 128 * 128 + 3 * 8192) * 4) / GiB
    assert t.loc["qwen3-next-80b", "KV cache (GiB)"] == pytest.approx(qwen, abs=0.005)  # 6.07 GiB


def test_00_min_gpus_by_context_and_batch():
    from k3lib.views import anatomy

    t = anatomy.min_gpus_table(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200-sxm")
    one_seq = (24 * 576 * 262_144 + 69 * (96 * 128 * 128 + 110_592) * 4) / GiB  # 3.81 GiB at 256K
    assert list(t["KV cache, one copy (GiB)"]) == [
        round(one_seq, 2),
        round(one_seq + 24 * 576 * 786_432 / GiB, 2),
        round(64 * one_seq, 2),
    ]
    # 1,452.8 GiB of weights > 8 × 140.4 GiB: never one node; whole 8-GPU nodes after that
    assert list(t["fewest h200-sxm"])[:2] == [16, 16]
    assert list(t["fewest h200-sxm"])[2] > 16 and list(t["fewest h200-sxm"])[2] % 8 == 0


# ------------------------------------------------------------------ 01 weights


def test_01_formats_tensors_and_ladder():
    from k3lib.views import weights_view

    bits = weights_view.format_bits_table(("bf16", "q8_0", "q4_k_m", "mxfp4")).set_index("format")
    assert bits["bits per weight"].tolist() == [
        16,
        8 * 34 / 32,
        8 * 144 / 256,
        8 * 17 / 32,
    ]  # block bytes × 8 / weights
    k3 = weights_view.tensor_formats_table("kimi-k3").set_index("tensors")
    assert k3.loc["routed experts", "format"] == "mxfp4" and k3.loc["attention", "format"] == "bf16"
    routed = 92 * 896 * 3 * 3584 * 3072  # MoE layers × E × 3 matrices
    assert k3.loc["routed experts", "weights (GiB)"] == round(routed * 4.25 / 8 / GiB, 2)  # 1,347.12
    ladder = tables.precision_ladder_comparison(["llama-3.1-70b"], precisions=("bf16", "q8_0", "q4_k_m"))
    P = 70_553_706_496  # Llama 3.1 70B, from its config
    assert ladder["weights_GiB"].tolist() == [round(P * b / 8 / GiB, 2) for b in (16, 8.5, 4.5)]
    assert ladder["saved_vs_bf16_pct"].tolist() == [0.0, 46.9, 71.9]  # 1 − 8.5/16, 1 − 4.5/16


# ------------------------------------------------------------------ 02 KV cache


def test_02_kv_per_token_worked():
    llama = tables.kv_worked_table("llama-3.1-70b", kv_dtype="bf16", context="128K")
    assert llama.set_index("param").loc["kv_tok", "value"] == 2 * 80 * 8 * 128 * 2  # 327,680 B
    k3 = tables.kv_worked_table("kimi-k3", kv_dtype="bf16", context="256K")
    assert k3.set_index("param").loc["kv_tok", "value"] == 24 * (512 + 64) * 2  # 27,648 B
    qwen = tables.kv_worked_table("qwen3-next-80b", kv_dtype="bf16", context="256K").set_index("param")
    assert qwen.loc["kv_tok", "value"] == 2 * 12 * 2 * 256 * 2  # 24,576 B: 12 GQA layers only


def test_02_why_the_cache_growth_and_budget():
    from k3lib.views import kv_growth

    steps = kv_growth.decode_step_table(["llama-3.1-70b"], contexts=["128K"]).iloc[0]
    assert steps["cache read per token (GiB)"] == 2 * 80 * 8 * 128 * 2 * 131_072 / GiB == 40.0
    # without a cache the prefix runs again: T times the FLOPs of one token
    assert steps["GFLOP per token, without cache"] == pytest.approx(
        131_072 * steps["GFLOP per token, with cache"], rel=1e-3
    )
    line = kv_growth.timeline_frame(["llama-3.1-70b"], prompt_tokens=8192, output_tokens=8192)
    prefill = line[line.phase == "prefill"].iloc[0]
    assert prefill["kv_cache_GiB"] == 327_680 * 8192 / GiB == 2.5  # the whole prompt at once
    assert line["kv_cache_GiB"].iloc[-1] == 327_680 * 16_384 / GiB == 5.0  # + one token per decode step
    budget = kv_growth.sequences_table(budget_bytes=64 * GiB, contexts=["8K", "128K", "256K"], kv_dtype="bf16")
    n = {(r.model, r.context): r["sequences that fit"] for _, r in budget.iterrows()}
    assert n[("llama-3.1-70b", "128K")] == 64 * GiB // (327_680 * 131_072) == 1
    assert ("llama-3.1-70b", "256K") not in n  # past its 128K maximum
    k3_128k = 24 * 576 * 2 * 131_072 + 69 * (96 * 128 * 128 + 110_592) * 4
    assert n[("kimi-k3", "128K")] == 64 * GiB // k3_128k == 16


# ------------------------------------------------------------------ 03 tensor parallel (real models)


def test_03_dense_model_halves_until_k_heads_and_buffers_stay_flat():
    from k3lib.core.layout import Layout

    t = parallel.compare_layouts(
        [(f"TP={n}", Layout(tp=n, nodes=1)) for n in (1, 2, 4, 8)],
        model="llama-3.1-70b",
        gpu="h200",
        weights="bf16",
        kv_dtype="bf16",
        context="128K",
    )
    # KV: 327,680 B/token × 131,072 / TP → 40, 20, 10, 5 GiB (TP ≤ K = 8)
    assert t["KV cache (GiB)"].tolist() == [40.0, 20.0, 10.0, 5.0]
    # NCCL: 0 at TP = 1, then 2.15 GiB whatever the group (vLLM 0.19: 2.1–2.2 GiB at TP 2 and 4)
    assert t["NCCL buffers (GiB)"].tolist() == [0.0, 2.15, 2.15, 2.15]
    assert t["fits"].tolist() == [False, True, True, True]  # 131.4 GiB of BF16 weights > 140.4 − rest


def test_03_k3_latent_is_whole_on_every_tp_rank():
    # 24 × 576 × 2 B × 1,048,576 = 27 GiB of latent on every GPU at TP = 16; PP = 2 halves it per stage
    tp16 = parallel.distribute(model="kimi-k3", gpu="h200", tp=16, nodes=2, context="1M")
    pp2 = parallel.distribute(model="kimi-k3", gpu="h200", tp=8, pp=2, nodes=2, context="1M")
    assert 27.0 <= tp16.peak.kv_cache_bytes / GiB < 27.1
    assert pp2.peak.kv_cache_bytes < 0.6 * tp16.peak.kv_cache_bytes


# ------------------------------------------------------------------ guide 000's per-GPU cases (audited in 07)


def test_03_guide000_implied_case1_tiers_case2():
    implied = parallel.guide000_implied_table()
    assert implied["left for activation + overhead (GiB)"].tolist() == [6.75, 6.55, 6.5, 6.55, 9.0, 5.8]
    case1 = parallel.guide000_case1_table()
    assert case1["stated: act 10, 8/GPU (GiB)"].tolist() == [99.5, 91.5, 81.55, 91.5]
    assert case1["worked example: act 10, 6/GPU (GiB)"].tolist() == [97.5, 89.5, 79.55, 89.5]
    assert case1["act 12, 5/GPU (GiB)"].tolist() == [96.75, 88.75, 78.8, 88.75]
    tiers = parallel.guide000_tier_check()
    assert tiers["guide per GPU at 8 (GiB)"].tolist() == [74.25, 56.3, 40.62, 28.12]
    assert tiers["rule per GPU at 8 (GiB)"].tolist() == [74.25, 39.45, 20.88, 12.18]
    case2 = parallel.guide000_case2_table()
    assert case2["headroom (GiB)"].tolist() == [1.8, 3.8, 4.4, 2.8, 2.8, -1.4, 3.4]


def test_03_activation_overhead_solved_from_two_readings():
    # A/8 + O = 6.5 and A/5 + O = 9.0  →  A·(1/5 − 1/8) = 2.5  →  A = 33.33, O = 2.33
    activation_gib, overhead_gib = parallel.solve_activation_overhead([(8, 6.5), (5, 9.0)])
    assert (round(activation_gib, 2), round(overhead_gib, 2)) == (33.33, 2.33)


def test_03_guide_counts_and_kv_rule():
    counts = parallel.gpu_count_table(
        model="kimi-k3@guide-000",
        gpu="h100",
        context="256K",
        whole_nodes=False,
        rows=[("bf16", "bf16"), ("bf16", "fp8"), ("q8", "fp8"), ("q4", "fp8"), ("q4", "int4"), ("q2", "int4")],
    )
    assert counts["minimum GPUs"].tolist() == [10, 9, 7, 6, 5, 4]
    assert counts["production GPUs (+1)"].tolist() == [11, 10, 8, 7, 6, 5]
    counts_512k = parallel.gpu_count_table(
        model="kimi-k3@guide-000",
        gpu="h100",
        context="512K",
        whole_nodes=False,
        rows=[("bf16", "bf16"), ("bf16", "fp8")],
    )
    assert counts_512k["minimum GPUs"].tolist() == [11, 10]
    kv_tp = parallel.kv_per_gpu_vs_tp(["kimi-k3", "deepseek-v3", "llama-3.1-70b"], tps=[1, 2, 4, 8, 16], context="128K")
    # GQA: 8 KV heads split over at most 8 ranks → at TP 16 each rank holds 1/8 of 327,680 B × 131,072
    assert kv_tp.query("model == 'Llama 3.1 70B' and TP == 16")["KV per GPU (GiB)"].item() == 327680 * 131072 / 8 / GiB
    # MLA: the latent is replicated, so at TP 8 each GPU holds 8× the "divide by TP" rule
    assert kv_tp.query("model == 'DeepSeek-V3' and TP == 8")["ratio to rule"].item() == 8.0


# ------------------------------------------------------------------ guide 004's offload figures (audited in 07;
#                                                                     04's own answers: tests/test_exercises_04.py)


def test_04_guide004_memory_devices_and_fit():
    memory = offload.guide004_memory_table()
    assert memory["model (GB)"].tolist() == [32.9, 1531.5, 1532.2, 1546.2, 1565.1]
    devices = offload.guide004_device_table()
    assert len(devices) == 17 and devices["VRAM fits"].all()
    assert devices["model ÷ guide"].between(1.4, 1.65).all()
    fit = offload.fit_two_tier_bytes(devices)
    assert round(fit["ram_read_bytes"] / 1e9, 1) == 39.8 and fit["rows_within_0_05"] == 13


def test_04_hbm_to_unified_bandwidth_ratio():
    # 3,350 GB/s (H100 SXM) ÷ 819 GB/s (M3 Ultra) = 4.09
    ratio = get_gpu("h100").memory_bw_bytes_per_s / get_gpu("m3-ultra-512gb").memory_bw_bytes_per_s
    assert round(ratio, 1) == 4.1


# ------------------------------------------------------------------ the checklist on guide 000's profile (the guide's
#                                                                     figures are audited in 07; 05's own answers:
#                                                                     tests/test_exercises_05.py)


def test_05_cheatsheet_spot_checks_by_hand():
    # 4 H100 at Q2: 288 − 225 − 10 = 53 GiB → 53·2^30 / 131,072 B per token (FP8) = 434,176 = 424K tokens
    # 5 H100 at Q4: 25 GiB left → exactly 200K tokens
    h100 = checklist.cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])
    assert h100.set_index("config").loc["h100-sxm ×4", "q2"] == 424 * 1024
    assert h100.set_index("config").loc["h100-sxm ×5", "q4"] == 200 * 1024
