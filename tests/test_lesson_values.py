"""The figures the lessons (notebooks 00–05) state, checked here instead of in the lessons.

Each expected value is worked by hand from the guide's numbers and the formula in the comment,
so a lesson's table cannot drift from its prose without a test failing. (The lessons show the
formula, the numbers and the takeaway; checks live in tests/, issue 15.)
"""
from __future__ import annotations

import pytest

from k3lib.core.hardware import get_gpu
from k3lib.studies import checklist, offload, parallel
from k3lib.views import tables

GiB = 2**30


# ------------------------------------------------------------------ 00 VRAM anatomy


def test_00_worked_example_and_five_versus_six():
    worked = tables.worked_example_table(tables.guide_000_plan(gpus=6))
    assert worked.set_index("param").loc["total", "value"] == 415.0            # 325 + 32 + 10 + 48
    five_vs_six = tables.gpu_count_table(gpus=(5, 6))
    assert list(five_vs_six["headroom_GiB"]) == [-15.0, 65.0]                 # 400 − 415, 480 − 415
    per_gpu_rule = tables.gpu_count_table(gpus=(4, 5, 6, 7, 8), assumptions=None)
    assert list(per_gpu_rule["total_GiB"]) == [399.0, 407.0, 415.0, 423.0, 431.0]  # 367 + 8·G


# ------------------------------------------------------------------ 01 weights


def test_01_ladder_comparison_and_budget():
    ladder = tables.precision_ladder_table("kimi-k3@guide-000")
    assert list(ladder["saved_vs_bf16_pct"]) == [0.0, 24.2, 45.3, 62.1]       # 1 − 450.4/594, 1 − 325/594, 1 − 225/594
    guides = tables.guide_weights_comparison()
    assert guides.set_index("source").loc["guide 004: FP16 row", "ratio_to_guide_000"] == 8.59  # 5,476.2 GB / (594 × 2^30 B)
    budget = tables.precision_budget_table()
    # fewest G with W + KV + 10 ≤ 72·G, the guide's one pool of GPUs …
    assert list(budget["gpus_one_pool"]) == [10, 8, 7, 6, 5, 4]
    # … deployed as one node of up to 8, then whole 8-GPU nodes: BF16's 10 becomes 16
    assert list(budget["gpus"]) == [16, 8, 7, 6, 5, 4]
    assert list(budget["total_GiB"]) == [796.0, 588.4, 548.4, 415.0, 391.0, 283.0]  # W + KV + 10 + 8·G


# ------------------------------------------------------------------ 02 KV cache


def test_02_kv_per_token_worked():
    llama = tables.kv_worked_table("llama-3.1-70b", kv_dtype="bf16", context="256K")
    assert llama.set_index("param").loc["kv_tok", "value"] == 2 * 80 * 8 * 128 * 2   # 327,680 B
    k3 = tables.kv_worked_table("kimi-k3", kv_dtype="bf16", context="256K")
    assert k3.set_index("param").loc["kv_tok", "value"] == 24 * (512 + 64) * 2       # 27,648 B
    per_token = tables.kv_per_token_table()
    assert per_token.set_index("model").loc["kimi-k3@guide-000", "kv_B_per_token"] == 262_144


def test_02_kv_context_mixes_savings_and_reference():
    kv_table = tables.kv_context_table("kimi-k3@guide-000")
    assert list(kv_table["bf16_GiB"]) == [256.0, 128.0, 64.0, 32.0]            # 262,144 B × T / 2^30
    assert list(kv_table["fp8_GiB"]) == [128.0, 64.0, 32.0, 16.0]
    assert list(kv_table["int4_GiB"]) == [64.0, 32.0, 16.0, 8.0]
    mixes = tables.precision_budget_table(rows=[("q4", "bf16"), ("q4", "fp8"), ("bf16", "fp8"), ("bf16", "bf16")])
    assert list(mixes["total_GiB"]) == [447.0, 415.0, 764.0, 796.0]            # W + KV + 10 + 8·G, BF16 on 16
    saved = tables.context_savings_table("kimi-k3@guide-000", current="512K", target="128K")
    assert saved.loc[0, "saved_GiB"] == 96.0                                     # 262,144 × 393,216 / 2^30
    saved_gb = tables.context_savings_table("kimi-k3@guide-000", current="512K", target="128K", unit="GB")
    assert saved_gb.loc[0, "saved_GB"] == 103.08                                 # 262,144 × 393,216 / 10^9
    reference = tables.reference_table()
    assert reference.loc[3, "total_GiB_64K"] == 291.0                            # 225 + 8 + 10 + 48
    assert reference.loc[0, "total_GiB_1M"] == 908.0                             # 594 + 256 + 10 + 48


# ------------------------------------------------------------------ 03 tensor parallel (guide arithmetic)


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
    counts = parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="256K", whole_nodes=False,
                                      rows=[("bf16", "bf16"), ("bf16", "fp8"), ("q8", "fp8"), ("q4", "fp8"),
                                            ("q4", "int4"), ("q2", "int4")])
    assert counts["minimum GPUs"].tolist() == [10, 9, 7, 6, 5, 4]
    assert counts["production GPUs (+1)"].tolist() == [11, 10, 8, 7, 6, 5]
    counts_512k = parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="512K", whole_nodes=False,
                                           rows=[("bf16", "bf16"), ("bf16", "fp8")])
    assert counts_512k["minimum GPUs"].tolist() == [11, 10]
    kv_tp = parallel.kv_per_gpu_vs_tp(["kimi-k3", "deepseek-v3", "llama-3.1-70b"], tps=[1, 2, 4, 8, 16], context="128K")
    # GQA: 8 KV heads split over at most 8 ranks → at TP 16 each rank holds 1/8 of 327,680 B × 131,072
    assert kv_tp.query("model == 'Llama 3.1 70B' and TP == 16")["KV per GPU (GiB)"].item() == 327680 * 131072 / 8 / GiB
    # MLA: the latent is replicated, so at TP 8 each GPU holds 8× the "divide by TP" rule
    assert kv_tp.query("model == 'DeepSeek-V3' and TP == 8")["ratio to rule"].item() == 8.0


# ------------------------------------------------------------------ 04 offload (guide 004)


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


# ------------------------------------------------------------------ 05 decision checklist (guide profile)


def test_05_cheatsheet_spot_checks_by_hand():
    # 4 H100 at Q2: 288 − 225 − 10 = 53 GiB → 53·2^30 / 131,072 B per token (FP8) = 434,176 = 424K tokens
    # 5 H100 at Q4: 25 GiB left → exactly 200K tokens
    h100 = checklist.cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])
    assert h100.set_index("config").loc["h100-sxm ×4", "q2"] == 424 * 1024
    assert h100.set_index("config").loc["h100-sxm ×5", "q4"] == 200 * 1024
