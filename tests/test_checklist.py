"""Tests for k3lib.studies.checklist: guide 000's seven steps, the solver, the cheat sheets,
the priority matrix and the form callback.

Every expected figure is derived by hand in the test from the guide's own numbers
(guide-000 profile, GiB: BF16 594, Q8 450.4, Q4 325, Q2 225; KV 262,144 B/token at
BF16; activation 10; overhead 8 per GPU; an "80 GB" H100 = 80 GiB), never read back
from k3lib.
"""

from __future__ import annotations

import math

import pytest
from nbrun import run_notebook

import k3lib.studies.checklist as cl
from k3lib.core.errors import K3InputError
from k3lib.core.plan import Assumptions, make_plan
from k3lib.studies.checklist import (
    active_weight_bytes,
    anti_patterns,
    best_configuration,
    cheapest_configuration,
    cheatsheet,
    check_priority_order,
    checklist_assumptions,
    format_context,
    min_gpus,
    optimal_gpu_counts,
    precision_ladder,
    priority_matrix,
    recommended_context_tokens,
    run_checklist,
    step1_budget,
    step2_precision,
    step3_context,
    step4_optimizations,
    step5_test_sequence,
    step6_throughput,
    step7_add_one_gpu,
)
from k3lib.views.explorers import checklist_form, checklist_frame

G = 2**30  # GiB, typed by hand
K = 1024  # tokens per "K"
GUIDE = "kimi-k3@guide-000"
H100 = "h100-sxm"
KV_BF16, KV_FP8 = 262_144, 131_072  # bytes per token (guide)
W = {"bf16": 594, "q8": 450.4, "q4": 325, "q2": 225}  # GiB (guide)
ACT, OH = 10, 8  # GiB (guide)
WORKED = Assumptions(overhead_total_bytes=48 * G)  # the worked example's "48 GB (8 GPUs × 6 GB)"


def plan(**kw):
    kw.setdefault("model", GUIDE)
    kw.setdefault("gpu", H100)
    kw.setdefault("assumptions", checklist_assumptions())
    kw.setdefault("nodes", 1)  # the guide's own reading: one pool of GPUs
    return make_plan(**kw)


# ------------------------------------------------------------ guide statement 1
# "The sweet spot ... Q4 weights with FP8 KV cache and 128K-256K context. This configuration
#  fits on 5-6 H100 80 GB GPUs with reasonable headroom."  → REPRODUCED: 128K on 5, 256K on 6.


def test_statement_q4_fp8_128k_to_256k_on_5_to_6_h100():
    # 5 GPUs: 5·80 − 5·8 − 325 − 10 = 25 GiB of KV; FP8 128K = 131,072·131,072 B = 16 GiB (fits),
    # 256K = 32 GiB (7 GiB over). Max = 25 GiB / 131,072 B = 204,800 tokens = 200K.
    # 6 GPUs: 6·80 − 48 − 325 − 10 = 97 GiB → 794,624 tokens (776K).
    kv5 = 5 * 80 - 5 * OH - W["q4"] - ACT
    assert kv5 == 25
    assert kv5 * G // KV_FP8 == 204_800
    kv6 = 6 * 80 - 6 * OH - W["q4"] - ACT
    assert kv6 * G // KV_FP8 == 794_624
    at128 = cheapest_configuration(model=GUIDE, gpu=H100, context="128K", weights=["q4"], kv_dtypes=["fp8"])
    at256 = cheapest_configuration(model=GUIDE, gpu=H100, context="256K", weights=["q4"], kv_dtypes=["fp8"])
    assert (at128.gpus, at256.gpus) == (5, 6)
    assert at128.max_context_tokens == 204_800  # exactly 200K fits on 5
    # on 6 the linear 794,624 is an exact boundary; per-GPU byte rounding (ceil of 10 GiB / 6) costs 1K
    assert at256.max_context_tokens == 794_624 - K
    c6 = step3_context(model=GUIDE, gpu=H100, gpus=6, weights="q4", budget=step1_budget(model=GUIDE, gpu=H100, gpus=6))
    assert c6.limit("fp8").max_context_tokens == 794_624  # the guide's linear formula
    # 5 GPUs at 256K: 7 GiB over under 8 GiB/GPU; the guide's "15 GB over" used 8 GPUs' 48 GiB of overhead
    assert -plan(gpus=5, weights="q4", kv_dtype="fp8", context="256K").total.headroom_bytes == 7 * G
    assert (
        -plan(gpus=5, weights="q4", kv_dtype="fp8", context="256K", assumptions=WORKED).total.headroom_bytes == 15 * G
    )
    # ... and the guide's "65 GB of headroom" on 6: 480 − (325 + 32 + 10 + 48)
    assert plan(gpus=6, weights="q4", kv_dtype="fp8", context="256K").total.headroom_bytes == 65 * G


# ------------------------------------------------------------ guide statement 2
# "The minimum viable K3 deployment is 4x H100 80 GB with Q2 quantization and 64K context —
#  and even that leaves only ~28 GB of headroom." → count REPRODUCED; headroom only with 48 GiB overhead.


def test_statement_minimum_viable_is_4_h100_q2_64k():
    # 3 GPUs: 3·80 − 3·8 = 216 < 225 GiB of Q2 weights: nothing loads on 3.
    assert 3 * 80 - 3 * OH < W["q2"]
    cheap = cheapest_configuration(model=GUIDE, gpu=H100, context="64K")
    assert (cheap.gpus, cheap.weights) == (4, "q2")
    assert min_gpus(model=GUIDE, gpu=H100, weights="q2", kv_dtype="fp8", context="64K") == 4
    # Q2 + FP8 + 64K on 4×80: 225 + 8 (65,536·131,072 B) + 10 + 32 = 275 of 320 → 45 GiB headroom
    kv = 65_536 * KV_FP8 / G
    assert kv == 8
    assert 4 * 80 - (W["q2"] + kv + ACT + 4 * OH) == 45
    assert plan(gpus=4, weights="q2", kv_dtype="fp8", context="64K").total.headroom_bytes == 45 * G
    # with the worked example's 48 GiB: 225 + 8 + 10 + 48 = 291 (the guide's "~291 GB") → 29 GiB (guide: ~28)
    worked = plan(gpus=4, weights="q2", kv_dtype="fp8", context="64K", assumptions=WORKED)
    assert worked.total.total_bytes == 291 * G
    assert worked.total.headroom_bytes == 29 * G
    # step 2 on 4 H100 picks Q2: 0.85 · 288 = 244.8 ≥ 225, < 325
    assert step2_precision(model=GUIDE, budget=step1_budget(model=GUIDE, gpu=H100, gpus=4)).weights == "q2"


# ------------------------------------------------------------ guide statement 3
# "If your total VRAM is 640 GB (8x H100), your usable weight budget is ~540 GB — enough for Q8,
#  not enough for BF16." → REPRODUCED at 256K; the guide's own 512K/BF16-KV Q8 "fix" does not fit.


def test_statement_8_h100_q8_fits_bf16_does_not():
    budget = 8 * 80 - 8 * OH  # 576 GiB
    assert budget < W["bf16"]  # BF16 weights alone overflow
    assert 640 * 0.85 == pytest.approx(544)  # the guide's "~540 GB" weight budget
    b = step1_budget(model=GUIDE, gpu=H100, gpus=8)
    assert b.budget_bytes == budget * G
    ctx = step3_context(model=GUIDE, gpu=H100, gpus=8, weights="q8", budget=b)
    # Q8: 576 − 450.4 − 10 = 115.6 GiB of KV → 473,497 tokens at BF16 (int((115.6·2^30)/262,144))
    assert ctx.limit("bf16").formula_context_tokens == int(round(115.6 * G)) // KV_BF16 == 473_497
    assert not any(plan(gpus=8, weights="bf16", kv_dtype="fp8", context=c).fits for c in ("1K", "64K"))
    best = best_configuration(model=GUIDE, gpu=H100, gpus=8, context="256K")
    assert (best.weights, best.kv_dtype) == ("q8", "bf16")
    assert best.max_context_tokens == 462 * K  # the 1K grid below 473,497
    # The guide's per-GPU fix "Quantize to Q8 ... ~78.8 GB — comfortable": at 512K BF16 KV,
    # 450.4/8 + 128/8 + 10/8 + 8 = 81.55 GiB > 80 per GPU.
    q8_512 = plan(gpus=8, weights="q8", kv_dtype="bf16", context="512K")
    assert not q8_512.fits
    assert q8_512.per_gpu.total_bytes / G == pytest.approx(450.4 / 8 + 128 / 8 + 10 / 8 + 8, abs=1e-6)


# ------------------------------------------------------------ guide statement 4
# "BF16 weights 594 GB. With 512K context, KV cache adds 128 GB. Including overhead, you need
#  approximately 780 GB ... at least 10x H100." → bound holds, but 10 is 12 GiB short at BF16 KV: 11.


def test_statement_bf16_512k_needs_at_least_10_h100():
    kv = 512 * K * KV_BF16 / G
    assert kv == 128
    # n H100 hold 594 + 128 + 10 + 8n ≤ 80n  ⇔  n ≥ 732/72 = 10.17 → 11
    assert math.ceil((W["bf16"] + kv + ACT) / (80 - OH)) == 11
    assert min_gpus(model=GUIDE, gpu=H100, weights="bf16", kv_dtype="bf16", context="512K", whole_nodes=False) == 11
    # as deployed, 11 GPUs are not whole 8-GPU nodes: the next deployable count is 2 nodes (16)
    assert min_gpus(model=GUIDE, gpu=H100, weights="bf16", kv_dtype="bf16", context="512K") == 16
    ten = plan(gpus=10, weights="bf16", kv_dtype="bf16", context="512K")
    assert -ten.total.headroom_bytes == 12 * G  # 812 vs 800
    # the FAQ's 780 uses 48 GiB of overhead: 594 + 128 + 10 + 48, which fits 10 with 20 spare
    assert (
        plan(gpus=10, weights="bf16", kv_dtype="bf16", context="512K", assumptions=WORKED).total.headroom_bytes
        == 20 * G
    )
    # with FP8 KV: 594 + 64 + 10 = 668 ≤ 72n ⇔ n ≥ 9.28 → 10
    assert min_gpus(model=GUIDE, gpu=H100, weights="bf16", kv_dtype="fp8", context="512K", whole_nodes=False) == 10


def test_guide_statement_table():
    df = cl.guide_statement_checks()
    assert df["GPUs (computed)"].tolist() == [6, 4, 8, 11, 1]
    assert df["verdict"].tolist() == [
        "reproduced",
        "count reproduced; the ~28 GiB needs 48 GiB of overhead",
        "reproduced (not at the guide's own 512K BF16-KV example)",
        "bound holds; the minimum is 11 at BF16 KV",
        "shown wrong: one GPU, not two",
    ]


def test_fp8_at_512k_drops_one_gpu_not_two():
    # Guide: "At 512K context, that saves 64 GB — enough to drop from 10 GPUs to 8."
    # BF16 weights: 11 → 10.  Q8: (450.4+128+10)/72 = 8.17 → 9 vs (450.4+64+10)/72 = 7.28 → 8.
    kw = dict(model=GUIDE, gpu=H100, context="512K", whole_nodes=False)
    assert (min_gpus(weights="bf16", kv_dtype="bf16", **kw), min_gpus(weights="bf16", kv_dtype="fp8", **kw)) == (11, 10)
    assert (min_gpus(weights="q8", kv_dtype="bf16", **kw), min_gpus(weights="q8", kv_dtype="fp8", **kw)) == (9, 8)


# ------------------------------------------------------------ the steps one by one


def test_step1_budget_subtracts_8_gib_per_gpu():
    b = step1_budget(model=GUIDE, gpu=H100, gpus=8)
    assert (b.total_bytes, b.overhead_bytes, b.budget_bytes) == (640 * G, 64 * G, 576 * G)
    assert b.figure == "real budget 576.0 GiB"
    assert "8 × 8.0 GiB" in b.reason
    # an architecture uses the usable 79.19 GiB of an H100
    arch = step1_budget(model="kimi-k3", gpu=H100, gpus=8)
    assert arch.memory_basis == "usable"
    assert arch.budget_bytes == pytest.approx(8 * (79.19 - 8) * G, abs=1e3)


@pytest.mark.parametrize("gpus, expected", [(4, "q2"), (5, "q4"), (8, "q4"), (9, "q4"), (10, "bf16"), (12, "bf16")])
def test_step2_q4_unless_10_h100(gpus, expected):
    # weight budget = 0.85 · 72 n GiB; BF16 594 needs n ≥ 9.71 → 10 (the guide's "10+ H100s")
    assert (0.85 * 72 * gpus >= W["bf16"]) == (gpus >= 10)
    choice = step2_precision(model=GUIDE, budget=step1_budget(model=GUIDE, gpu=H100, gpus=gpus))
    assert choice.weights == expected


def test_step2_mentions_q8_on_8_h100_and_handles_nothing_fitting():
    c = step2_precision(model=GUIDE, budget=step1_budget(model=GUIDE, gpu=H100, gpus=8))
    assert c.fitting == ("q8", "q4", "q2") and "q8 would also fit" in c.reason
    none = step2_precision(model=GUIDE, budget=step1_budget(model=GUIDE, gpu=H100, gpus=3))
    assert none.weights is None and "add GPUs" in none.reason
    # the real K3: native (MXFP4 experts, ≈1,453 GiB) on 16 H200: 0.85 · 16 · 132.4 ≈ 1,801 GiB
    k3 = step2_precision(model="kimi-k3", budget=step1_budget(model="kimi-k3", gpu="h200", gpus=16))
    assert k3.weights == "native"
    with pytest.raises(K3InputError, match="reserve_fraction"):
        step2_precision(model=GUIDE, budget=step1_budget(model=GUIDE, gpu=H100, gpus=8), reserve_fraction=1.5)


def test_step3_profile_uses_the_linear_formula_per_kv_dtype():
    b = step1_budget(model=GUIDE, gpu=H100, gpus=8)
    c = step3_context(model=GUIDE, gpu=H100, gpus=8, weights="q4", budget=b)
    # 576 − 325 − 10 = 241 GiB; /262,144 → 987,136 tokens (964K); FP8 and INT4 exceed 1M → capped
    assert c.limit("bf16").max_context_tokens == 241 * G // KV_BF16 == 987_136
    assert c.limit("fp8").formula_context_tokens == 241 * G // KV_FP8
    assert c.limit("fp8").max_context_tokens == 1_048_576
    assert c.limit("int4").kv_bytes_per_token == 65_536
    assert c.figure == "bf16 964K, fp8 1M, int4 1M"


def test_step3_architecture_uses_replicated_per_gpu_kv():
    # K3: 24 MLA layers × (512 + 64) × 2 B = 27,648 B/token, replicated on each TP rank.
    b = step1_budget(model="kimi-k3", gpu="h200", gpus=16)
    c = step3_context(model="kimi-k3", gpu="h200", gpus=16, weights="native", budget=b)
    lim = c.limit("bf16")
    assert lim.kv_bytes_per_token == 24 * 576 * 2 == 27_648
    assert lim.method == "k3lib per-GPU sweep"
    assert lim.max_context_tokens == 1_048_576  # fits the model's maximum
    # 12 H200 in one node (an H200 node holds 8) is no deployment: a named error, not a 12-way TP pool
    b12 = step1_budget(model="kimi-k3", gpu="h200", gpus=12)
    with pytest.raises(K3InputError, match="^nodes: 12 GPUs in 1 node"):
        step3_context(model="kimi-k3", gpu="h200", gpus=12, nodes=1, weights="native", budget=b12)


def test_step4_fp8_is_derived_flash_and_paged_are_guide_claims():
    o = step4_optimizations(model=GUIDE, gpu=H100, gpus=8, weights="q4", context="256K")
    fp8 = o.get("FP8 KV cache")
    assert fp8.basis == "derived"
    assert fp8.saves_bytes_total == (32 * G, 32 * G)  # 64 → 32 GiB at 256K
    assert fp8.saves_bytes_per_gpu == (4 * G, 4 * G)
    fa, pa = o.get("FlashAttention"), o.get("PagedAttention")
    assert fa.basis == pa.basis == "guide claim"
    assert fa.saves_bytes_total == (int(0.20 * 10 * G), int(0.35 * 10 * G))
    total = (W["q4"] + 32 + ACT + 64) * G  # 431 GiB in use
    # the guide's 5–12 % of it, but never more than the 32 GiB FP8 cache PagedAttention pages
    assert pa.saves_bytes_total == (int(0.05 * total), 32 * G)
    assert "capped at the whole KV cache (32.0 GiB)" in pa.reason
    assert "claim" in fa.reason and "not derived" in pa.reason


def test_step4_real_k3_fp8_saves_little():
    # 2×8 H200, TP=8 PP=2, the fullest GPU on stage 0 (47 layers, 11 of the config's 24 MLA layers): its latent
    # (512 + 64) × 2 B per token per layer at BF16, half at FP8: FP8 saves 11 · 576 · 262,144 B = 1.55 GiB per GPU
    o = step4_optimizations(model="kimi-k3", gpu="h200", gpus=16, nodes=2, weights="native", context="256K")
    assert o.get("FP8 KV cache").saves_bytes_per_gpu[0] == 11 * 576 * 262_144


@pytest.mark.parametrize(
    "target, predicted, values, final",
    [
        (256 * K, 776 * K, [128 * K, 256 * K], 256 * K),  # loads at half, doubles to the target
        (256 * K, 200 * K, [128 * K, 256 * K, 192 * K], 192 * K),  # OOM at 256K → −25 % → 192K loads
        (256 * K, 100 * K, [128 * K, 96 * K], 96 * K),  # OOM at half already
        (1024 * K, 300 * K, [512 * K, 384 * K, 288 * K], 288 * K),  # two OOMs: 512 → 384 → 288
        (100 * K, 1024 * K, [50 * K, 100 * K], 100 * K),
        (256 * K, 0, [128 * K], 0),  # nothing loads: one failed try
    ],
)
def test_step5_test_at_50_percent(target, predicted, values, final):
    s = step5_test_sequence(target_context_tokens=target, predicted_max_context_tokens=predicted)
    assert list(s.values) == values
    assert [t.loads for t in s.trials] == [v <= predicted for v in values]
    assert s.final_max_model_len == final


def test_step6_bandwidth_ceiling_and_5_tok_s_warning():
    # 104e9 active × 4.5/8 = 58.5 GB + 32 GiB KV (34.36 GB) per token over 6 × 3.35 TB/s
    t = step6_throughput(model=GUIDE, gpu=H100, gpus=6, weights="q4", kv_dtype="fp8", context="256K")
    assert t.active_weight_bytes == 58_500_000_000
    assert t.kv_read_bytes == pytest.approx(32 * G, abs=6)  # six per-GPU shares, each rounded up
    assert t.tokens_per_s == pytest.approx(6 * 3.35e12 / (58.5e9 + 32 * G))
    assert not t.ceiling_below_threshold and t.command == "nvidia-smi topo -m"
    assert "nvidia-smi topo -m" in t.reason
    # A Mac Studio M3 Ultra (819 GB/s), Q4 + BF16 KV at 1M: 58.5 GB + 256 GiB → 2.5 tok/s < 5
    mac = step6_throughput(model=GUIDE, gpu="m3-ultra-512gb", gpus=1, weights="q4", kv_dtype="bf16", context="1M")
    assert mac.tokens_per_s == pytest.approx(819e9 / (58.5e9 + 256 * G))
    assert mac.ceiling_below_threshold and "not the cause" in mac.reason


def test_active_weight_bytes_of_the_real_k3_native():
    # K3: 104.19 B active (experts 16 of 896 at MXFP4, the rest BF16), input embedding excluded
    b = active_weight_bytes("kimi-k3", "native")
    assert 100e9 < b < 2 * 104.2e9


def test_step7_adds_one_gpu():
    s = step7_add_one_gpu(model=GUIDE, gpu=H100, weights="q4", kv_dtype="fp8", context="256K")
    assert (s.needed_gpus, s.recommended_gpus) == (6, 7)
    none = step7_add_one_gpu(model=GUIDE, gpu="rtx-4090", weights="bf16", kv_dtype="bf16", context="1M", max_gpus=8)
    assert none.needed_gpus is None


def test_run_checklist_all_seven_steps():
    c = run_checklist(model=GUIDE, gpu=H100, gpus=6, context="256K")
    assert [s.step for s in c.steps] == [1, 2, 3, 4, 5, 6, 7]
    assert all(isinstance(s.reason, str) and s.reason.endswith(".") for s in c.steps)
    assert c.precision.weights == "q4"
    assert c.recommended.gpus == 6
    d = c.to_dict()
    assert d["budget_bytes"] == 432 * G and d["test_sequence"] == [128 * K, 256 * K]
    # the real K3 on 8 H100: nothing fits; step 7 counts at the smallest checkpoint vLLM can load
    # (the native one: no 2-bit K3 checkpoint exists for vLLM); by vLLM's rules the cheapest is 4 whole
    # nodes (3 hold the weights, but 0.9 × 79.19 GiB leaves the last stage under a GiB for the cache)
    k3 = run_checklist(model="kimi-k3", gpu=H100, gpus=8, context="256K")
    assert k3.precision.weights is None and k3.recommended is None
    assert k3.add_one.weights == "native" and k3.add_one.needed_gpus == k3.cheapest.gpus == 32
    assert (k3.cheapest.nodes, k3.cheapest.tp, k3.cheapest.pp) == (4, 8, 4)
    generic = run_checklist(model="kimi-k3", gpu=H100, gpus=8, context="256K", engine="generic")
    assert generic.cheapest.gpus == 24  # k3lib's component model alone


# ------------------------------------------------------------ solver


def test_solver_orders_by_gpus_then_precision_then_kv():
    c = cheapest_configuration(model=GUIDE, gpu=H100, context="256K")
    # 4 GPUs: 320 − 32 − 10 = 278 GiB: Q2 (225) + FP8 256K (32) = 257 fits, BF16 KV (64) does not
    assert (c.gpus, c.weights, c.kv_dtype) == (4, "q2", "fp8")
    best = best_configuration(model=GUIDE, gpu=H100, gpus=10, nodes=1, context="512K")  # asked for: one pool
    assert (best.weights, best.kv_dtype) == ("bf16", "fp8")  # 594 + 64 + 10 + 80 = 748 ≤ 800
    assert best_configuration(model=GUIDE, gpu=H100, gpus=2, context="64K") is None
    assert cheapest_configuration(model="kimi-k3", gpu="rtx-4090", context="1M") is None


def test_solver_figures_match_make_plan():
    for c in (
        best_configuration(model=GUIDE, gpu=H100, gpus=8, context="256K"),
        best_configuration(model="kimi-k3", gpu="h200", gpus=16, nodes=2, context="256K"),
        cheapest_configuration(model="kimi-k3", gpu=H100, context="128K"),
    ):
        p = c.plan()
        assert p.fits and p.per_gpu.total_bytes == c.total_bytes_per_gpu
        assert (p.tp, p.pp) == (c.tp, c.pp)


def test_solver_two_nodes_row_and_bad_input():
    c = best_configuration(model="kimi-k3", gpu="h200", gpus=16, nodes=2, context="256K")
    assert (c.tp, c.pp, c.weights) == (8, 2, "native")
    with pytest.raises(K3InputError, match="gpus"):
        best_configuration(model=GUIDE, gpu=H100, gpus=0, context="256K")
    with pytest.raises(K3InputError, match="context"):
        cheapest_configuration(model=GUIDE, gpu=H100, context="lots")


def test_precision_ladder():
    assert precision_ladder(GUIDE) == ("bf16", "q8", "q4", "q2")
    # a real architecture: only checkpoints the engine can load (data/checkpoints.csv)
    assert precision_ladder("kimi-k3") == ("native", "fp8-block")
    assert precision_ladder("kimi-k3", engine="llama.cpp") == (
        "ud-q8_k_xl",
        "ud-q4_k_xl",
        "ud-q2_k_xl",
        "ud-iq2_xxs",
        "ud-iq1_m",
        "ud-iq1_s",
    )
    assert precision_ladder("llama-3.1-70b") == ("native",)
    assert precision_ladder("llama-3.1-70b", engine="llama.cpp") == ("q8_0", "q4_k_m")
    assert precision_ladder("kimi-k3@guide-004")[0] == "bf16"


# ------------------------------------------------------------ anti-patterns


def test_anti_patterns():
    p = plan(gpus=8, weights="q4", kv_dtype="fp8", context="1M")
    codes = [w.code for w in anti_patterns(p, cpu_offload_bytes=10 * G)]
    assert codes == ["cpu-offload-when-it-fits"]
    # 50K workload → 128K (the guide's example); 1M → 128K frees (1024 − 128)K × 131,072 B = 112 GiB
    assert recommended_context_tokens(50 * K) == 128 * K
    w = anti_patterns(p, workload_context_tokens="50K")
    assert [x.code for x in w] == ["context-beyond-need"] and "112.0 GiB" in w[0].message
    assert anti_patterns(p, workload_context_tokens="600K") == ()
    # 0.99 of 79.19 GiB leaves 0.79 GiB: the reserve is gone
    assert [x.code for x in anti_patterns(p, gpu_memory_utilization=0.99)] == ["no-engine-reserve"]
    assert [x.code for x in anti_patterns(p, gpu_memory_utilization=0.5)] == ["utilization-below-need"]
    with pytest.raises(K3InputError, match="gpu_memory_utilization"):
        anti_patterns(p, gpu_memory_utilization=1.5)
    assert anti_patterns(plan(gpus=3, weights="q2", kv_dtype="fp8", context="64K"), cpu_offload_bytes=G) == ()


# ------------------------------------------------------------ cheat sheets (vectorized)


def test_cheatsheet_values_derived_by_hand():
    df = cheatsheet(model=GUIDE, gpus=[H100])
    # deployable counts only: 1–8 in one node, then whole nodes 16, 24, 32
    assert df.gpus.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32]
    assert list(df.columns[:6]) == ["config", "gpu", "gpus", "nodes", "tp", "pp"]

    def row(n, m=1):
        return df[(df.gpus == n) & (df.nodes == m)].iloc[0]

    # 4 × H100 Q2: 288 − 225 − 10 = 53 GiB / 131,072 B = 434,176 tokens = 424K
    assert row(4)["q2"] == 53 * G // KV_FP8 == 424 * K
    # 5 × H100 Q4: 25 GiB → 200K
    assert row(5)["q4"] == 200 * K
    # BF16 does not load up to 8 (576 < 594): empty cells
    assert df[df.gpus <= 8]["bf16"].isna().all()
    assert row(3).isna()[["bf16", "q8", "q4", "q2"]].all()
    assert row(16, 2)["config"] == "h100-sxm 2×8" and (row(16, 2)["tp"], row(16, 2)["pp"]) == (8, 2)
    assert df.attrs["kv_dtype"] == "fp8"


def test_cheatsheet_real_k3_needs_three_h100_nodes():
    # native K3 (1,453.66 GiB of tensors) over 16 H100: 90.9 GiB of weights per GPU > 79.19 → empty;
    # 24 H100 (3 nodes, TP8 × PP3): ≈ 61 GiB of weights per GPU, fits up to the model's 1M
    df = cheatsheet(model="kimi-k3", gpus=[H100], engine="generic")
    assert list(df.columns[5:]) == ["pp", "native", "fp8-block"]
    assert df[df.gpus <= 16]["native"].isna().all()
    assert df[df.gpus == 24]["native"].iloc[0] == 1_048_576
    assert (df[df.gpus == 24]["tp"].iloc[0], df[df.gpus == 24]["pp"].iloc[0]) == (8, 3)
    # by vLLM's rules (the default) 24 H100 hold far less: each stage keeps 0.9 × 79.19 GiB and
    # its weights, activation peak and 2.15 GiB NCCL leave the cache under a GiB; 32 hold the 1M maximum
    v = cheatsheet(model="kimi-k3", gpus=[H100])
    assert 0 < v[v.gpus == 24]["native"].iloc[0] < 64 * 1024 and v[v.gpus == 32]["native"].iloc[0] == 1_048_576


def test_cheatsheet_is_computed_by_the_sweep_not_make_plan(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("make_plan called inside the cheat sheet")

    calls = []
    import k3lib.studies.solver as solver

    real_sweep = solver.sweep

    def counting_sweep(**kw):
        calls.append(kw)
        return real_sweep(**kw)

    monkeypatch.setattr("k3lib.studies.cheatsheet.make_plan", boom)
    monkeypatch.setattr("k3lib.core.plan.make_plan", boom)
    monkeypatch.setattr(solver, "sweep", counting_sweep)
    df = cheatsheet(model=GUIDE)
    assert len(df) == 4 * 11
    # one sweep per GPU, each over every deployable count × precision × 1,024 contexts
    assert len(calls) == 4
    assert len(calls[0]["contexts"]) == 1024 and len(calls[0]["counts"]) == 11
    calls.clear()
    cheapest_configuration(model=GUIDE, gpu=H100, context="256K")
    optimal_gpu_counts(model=GUIDE)
    assert len(calls) == 2


def test_optimal_gpu_counts_plus_one():
    df = optimal_gpu_counts(model=GUIDE, contexts=["64K", "256K", "512K"])
    # Q4 256K FP8: (325 + 32 + 10)/72 = 5.1 → 6; Q2 64K: (225 + 8 + 10)/72 = 3.4 → 4;
    # BF16 512K: 668/72 → 10, not whole 8-GPU nodes → 16
    assert int(df.loc["q4", ("256K", "minimum")]) == 6
    assert int(df.loc["q2", ("64K", "minimum")]) == 4
    assert int(df.loc["bf16", ("512K", "minimum")]) == 16
    # production: the next deployable count (7 after 6 in one node, 24 after 16)
    assert int(df.loc["q4", ("256K", "production (next count)")]) == 7
    assert int(df.loc["bf16", ("512K", "production (next count)")]) == 24


# ------------------------------------------------------------ priority matrix


def test_priority_matrix_in_the_guides_order():
    p = plan(gpus=8, weights="q4", kv_dtype="fp8", context="256K")
    m = priority_matrix(p)
    assert list(m["lever"]) == [
        "FlashAttention",
        "PagedAttention",
        "FP8 KV cache",
        "shorter context",
        "lower precision",
        "CPU offload",
        "batch 1",
    ]
    r = m.set_index("lever")
    assert r.loc["FP8 KV cache", "saved in total, high (GiB)"] == 32.0  # vs BF16 KV
    assert r.loc["shorter context", "saved in total, high (GiB)"] == 16.0  # 256K → 128K at FP8
    assert r.loc["lower precision", "saved in total, high (GiB)"] == 100.0  # Q4 325 → Q2 225
    assert r.loc["FlashAttention", "basis"] == "guide claim"
    assert r.loc["lower precision", "GPUs saved"] == 2  # 6 → 4 GPUs
    assert {"effort", "quality cost", "note"} <= set(m.columns)


# A saving can never exceed what it saves (issue 21 §5). Llama 3.1 8B: 32 layers × 8 KV heads × 128 ×
# (K, V) = 65,536 B/token at FP8, 131,072 at BF16.
LLAMA8_KV_FP8, LLAMA8_KV_BF16 = 32 * 8 * 128 * 2 * 1, 32 * 8 * 128 * 2 * 2


def test_paged_attention_saves_at_most_the_kv_cache():
    # 8× H100, 8K, FP8 KV: the whole cache is 65,536 B × 8,192 = 0.5 GiB. The guide's "5–12 % of
    # total VRAM" was 2.1–5.1 GiB of it (before); now capped at the cache, and the note says so.
    p = make_plan(model="llama-3.1-8b", gpu=H100, gpus=8, context="8K", kv_dtype="fp8")
    r = priority_matrix(p).set_index("lever")
    assert r.loc["PagedAttention", "saved in total, low (GiB)"] == 0.5
    assert r.loc["PagedAttention", "saved in total, high (GiB)"] == 0.5
    assert r.loc["PagedAttention", "saved per GPU, high (GiB)"] == 0.5 / 8
    note = r.loc["PagedAttention", "note"]
    assert "exceeds the whole KV cache here" in note and "capped at 0.50 GiB" in note
    # FlashAttention's 20–35 % of the activation is under the activation: not capped, plain note
    assert r.loc["FlashAttention", "note"] == "20–35 % of activation (guide)"


def test_fp8_lever_on_an_int4_plan_is_what_fp8_saves():
    # int4 plan at 8K: FP8 saves BF16 − FP8 = 65,536 B × 8,192 = 0.5 GiB (before: BF16 − INT4 = 0.75 GiB)
    p = make_plan(model="llama-3.1-8b", gpu=H100, gpus=8, context="8K", kv_dtype="int4")
    r = priority_matrix(p).set_index("lever")
    assert r.loc["FP8 KV cache", "saved in total, high (GiB)"] == 0.5


def test_shorter_context_never_saves_a_negative_amount():
    # 512 tokens at FP8: half is 256 tokens, 65,536 B × 256 = 16 MiB saved (before: 512 → 1K, −32 MiB)
    p = make_plan(model="llama-3.1-8b", gpu=H100, gpus=8, context=512, kv_dtype="fp8")
    r = priority_matrix(p).set_index("lever")
    assert r.loc["shorter context", "saved in total, high (GiB)"] * G == LLAMA8_KV_FP8 * 256
    assert r.loc["shorter context", "note"] == "512 → 256"
    with pytest.raises(K3InputError, match="^shorter_context: .*not shorter"):
        priority_matrix(p, shorter_context="1K")


def test_priority_chart_shows_the_cap_note():
    pytest.importorskip("altair")
    from k3lib.views.charts_checklist import priority_matrix_chart

    p = make_plan(model="llama-3.1-8b", gpu=H100, gpus=8, context="8K", kv_dtype="fp8")
    spec = priority_matrix_chart(priority_matrix(p), per="total").to_dict()
    assert any(t == {"field": "note", "type": "nominal"} for t in spec["layer"][0]["encoding"]["tooltip"])
    rows = {r["lever"]: r for r in spec["datasets"][next(iter(spec["datasets"]))]}
    assert rows["PagedAttention"]["label"] == "0.5" and "capped at 0.50 GiB" in rows["PagedAttention"]["note"]


LEVER_MODELS = [
    ("llama-3.1-8b", None),
    ("llama-3.1-70b", None),
    ("qwen3-30b-a3b", None),
    ("gpt-oss-120b", None),
    ("deepseek-v3", None),
    ("qwen3-next-80b", None),
    ("kimi-linear-48b", None),
    (GUIDE, "q4"),
]


@pytest.mark.parametrize("model, weights", LEVER_MODELS)
@pytest.mark.parametrize("gpu", [H100, "rtx-4090"])
@pytest.mark.parametrize("context, kv", [(512, "fp8"), ("8K", "bf16"), ("32K", "int4")])
def test_no_lever_saves_more_than_it_acts_on(model, weights, gpu, context, kv):
    kw = dict(model=model, gpu=gpu, gpus=8, context=context) | ({"weights": weights} if weights else {})
    p = make_plan(kv_dtype=kv, **kw)
    bf16_kv = make_plan(kv_dtype="bf16", **kw).total.kv_cache_bytes
    bound = {
        "FlashAttention": p.total.activation_bytes,
        "PagedAttention": p.total.kv_cache_bytes,
        "FP8 KV cache": bf16_kv / 2,  # FP8 halves at most the BF16 cache
        "shorter context": p.total.kv_cache_bytes,
        "lower precision": p.total.weights_bytes,
        "CPU offload": p.total.weights_bytes,
        "batch 1": p.total.total_bytes,
    }
    m = priority_matrix(p, max_gpus=16).set_index("lever")
    assert set(m.index) == set(bound)
    for lever, cap in bound.items():
        lo = m.loc[lever, "saved in total, low (GiB)"] * G
        hi = m.loc[lever, "saved in total, high (GiB)"] * G
        assert 0 <= lo <= hi <= cap * (1 + 1e-12) + 1, (lever, lo / G, hi / G, cap / G)
        assert m.loc[lever, "saved per GPU, high (GiB)"] == pytest.approx(hi / 8 / G)


def test_priority_order_holds_for_the_guides_example_not_for_the_real_k3():
    # guide's example: BF16 weights, 512K, BF16 KV on 11 H100: FP8 KV saves one GPU (11 → 10)
    # (as deployed, 11 → 10 is no saving: both round up to two 8-GPU nodes; at 8 GPUs Q8 + 256K shows it)
    guide = check_priority_order(priority_matrix(plan(gpus=6, weights="q4", kv_dtype="bf16", context="512K")))
    # Q4 + BF16 KV at 512K: 325 + 128 + 10 = 463 ≤ 72n → 7; FP8: 325 + 64 + 10 = 399 → 6: one GPU saved
    assert guide.holds and guide.fp8_kv_gpus_saved == 1
    assert guide.fp8_kv_saved_bytes_per_gpu == pytest.approx(64 * G / 6, rel=1e-9)
    # real K3, native on 2×8 H200 at 256K: FP8 saves 1.69 GiB per GPU (27,648 B/token) and no GPU
    k3 = best_configuration(model="kimi-k3", gpu="h200", gpus=16, nodes=2, context="256K").plan()
    check = check_priority_order(priority_matrix(k3))
    assert not check.holds and check.fp8_kv_gpus_saved == 0
    assert check.fp8_kv_saved_bytes_per_gpu == pytest.approx(27_648 / 2 * 262_144 / 2, rel=1e-3)
    assert check.fp8_kv_share_of_gpu < 0.02
    assert any("27,648 B/token" in f for f in check.findings)


# ------------------------------------------------------------ the form's callback


def test_checklist_frame_callback():
    df = checklist_frame(model=GUIDE, gpu=H100, gpus=6, context="256K")
    assert list(df["step"]) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert df["figure"].iloc[0] == "real budget 432.0 GiB"
    assert df["figure"].iloc[6] == "6 needed → buy 7"
    assert df["title"].iloc[7] == "Recommended"
    # a different overhead changes step 1: 6 × (80 − 6) = 444 GiB
    assert (
        checklist_frame(model=GUIDE, gpu=H100, gpus=6, context="256K", overhead_per_gpu_gib=6)["figure"].iloc[0]
        == "real budget 444.0 GiB"
    )
    # real K3 on 8 H100: nothing fits here, the recommended row points at the cheapest (by vLLM's rules)
    k3 = checklist_frame(model="kimi-k3", gpu=H100, gpus=8, context="256K")
    assert "Nothing loads on your 8× h100-sxm" in k3["reason"].iloc[-1] and "4 nodes × 8" in k3["reason"].iloc[-1]


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"gpus": 0}, "gpus"),
        ({"context": "abc"}, "context"),
        ({"gpu": "nope"}, "gpu"),
        ({"overhead_per_gpu_gib": "x"}, "overhead_per_gpu_gib"),
    ],
)
def test_checklist_frame_bad_input_is_one_row(kw, field):
    args = dict(model=GUIDE, gpu=H100, gpus=6, context="256K") | kw
    df = checklist_frame(**args)
    assert len(df) == 1 and df["title"].iloc[0] == "input error" and df["figure"].iloc[0] == field


def test_checklist_form_updates_live():
    pytest.importorskip("ipywidgets")
    form = checklist_form(model=GUIDE, gpus=6, context="256K")
    out = form.children[-1]
    assert "real budget 432.0 GiB" in out.value
    gpus = next(w for w in form.children if getattr(w, "description", "") == "GPUs")
    gpus.value = 5
    assert "real budget 360.0 GiB" in out.value


def test_format_context():
    assert [format_context(t) for t in (131072, 1048576, 204800, 200000)] == ["128K", "1M", "200K", "200,000"]


# ------------------------------------------------------------ the notebook under papermill

NOTEBOOK = __import__("pathlib").Path(__file__).resolve().parent.parent / "notebooks" / "05-decision-checklist.ipynb"


def _papermill(tmp_path, **parameters):
    pytest.importorskip("papermill")
    return run_notebook(tmp_path, "05-decision-checklist", **parameters)


def test_notebook_parameters_change_the_answers(tmp_path):
    nb = _papermill(tmp_path, gpu="h200", gpus=4, context="128K")
    cell = next(c for c in nb.cells if c.cell_type == "code" and "checklist.step1_budget(" in c.source)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert "real budget 529.6 GiB" in text  # 4 × 140.4 (an H200's usable GiB) − 4 × 8
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)


def test_notebook_bad_parameter_stops_with_one_line(tmp_path):
    papermill = pytest.importorskip("papermill")
    with pytest.raises(papermill.PapermillExecutionError) as err:
        _papermill(tmp_path, gpus=0)
    assert "parameter gpus" in str(err.value)
