"""Guide 000: checks of the figures it derives from its own inputs."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from k3lib.core.hardware import get_gpu
from k3lib.core.memory import kv_cache_bytes
from k3lib.core.units import GiB
from k3lib.guides.claims import (
    G000_ACTIVATION,
    G000_OVERHEAD_PER_GPU_EXAMPLE,
    G000_OVERHEAD_PER_GPU_RULE,
    G000_OVERHEAD_TOTAL,
    G004_ACTIVE_PARAMS,
    LONG_CONTEXT,
    Q4_BITS,
    Claim,
)
from k3lib.guides.refs import (
    _g000,
    _k3,
    _own_plan,
    _real_plan,
    measured_outside_weights_kv_gib,
    min_gpus,
    published_bytes,
    real_kv_bytes,
    real_node_gpus,
    real_weights_bytes,
)
from k3lib.guides.registry import check, check_pattern, register_not_checkable
from k3lib.guides.verdicts import EXACT, AtLeast, Figure, Tolerance, Verdict, make, written_tolerance


def _real_headroom_gib(weights: str, kv: str, ctx: int, gpus: int) -> float:
    """Capacity of ``gpus`` H100s minus K3's real weights + KV + the guide's 10 GB + 48 GB (GiB)."""
    need = (
        real_weights_bytes(weights)
        + real_kv_bytes(kv_dtype=kv, context_tokens=ctx)
        + G000_ACTIVATION
        + G000_OVERHEAD_TOTAL
    )
    return (gpus * 80 * GiB - need) / GiB


@check("g000-intro-8xh100-headroom")
def intro_headroom(claim: Claim) -> Verdict:
    plan = _own_plan(weights="bf16", kv_dtype="bf16", context=1048576, gpus=8, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.headroom_bytes / GiB
    no_kv = (640 * GiB - _g000().weights_bytes_by_tier["bf16"] - G000_ACTIVATION - G000_OVERHEAD_TOTAL) / GiB
    real = _real_headroom_gib("bf16", "bf16", 1048576, 8)
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="640 − (594 + 256 + 10 + 48)",
        figures=[
            Figure("need_gib", "594 + 256 + 10 + 48", plan.total.total_bytes / GiB, "GiB"),
            Figure("headroom_gib", "640 − need", own, "GiB"),
            Figure("headroom_without_kv_gib", "640 − 594 − 10 − 48", no_kv, "GiB"),
        ],
        explanation=f"With its own figures the 8x H100 needs {plan.total.total_bytes / GiB:,.0f} GiB of 640: "
        f"{-own:,.0f} GiB short, not 20 spare. Even with no KV cache at all it is "
        f"{-no_kv:,.0f} GiB short. For real K3 it is {-real:,.0f} GiB short.",
    )


@check("g000-weight-budget-8xh100")
def weight_budget(claim: Claim) -> Verdict:
    own = 640 * (1 - 0.15)
    return make(
        claim,
        own=own,
        real=own,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="arithmetic",
        formula="640 × (1 − 15%)",
        explanation=f"640 less the 15% reserve is {own:g} GiB. On its own numbers that fits Q8 "
        f"({_g000().weights_bytes_by_tier['q8'] / GiB:g}) but not BF16 (594); K3's smallest "
        f"published file ({published_bytes('UD-Q1_0') / GiB:,.0f} GiB) does not fit either.",
    )


@check("g000-usable-8xh100")
def usable_8xh100(claim: Claim) -> Verdict:
    own = 640 - 8 * 8
    return make(
        claim,
        own=own,
        real=own,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="arithmetic",
        formula="8 × 80 − 8 × 8",
        explanation=f"640 − 8 × 8 = {own} GiB.",
    )


@check("g000-activation-batch4")
def activation_batch4(claim: Claim) -> Verdict:
    """4 × (8–15): the upper end (4 × 15 = 60) must fall inside the claimed range."""
    high = 4 * 15
    return make(
        claim,
        own=high,
        real=None,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="arithmetic",
        formula="4 × 15 (upper end of 4 × 8–15)",
        explanation=f"4 × 8–15 = 32–{high}, the guide's linear rule applied to its batch-1 range. For K3 "
        f"activation needs a measurement (not checkable).",
    )


def measured_overhead() -> tuple[float, float, Tolerance]:
    """The measured per-GPU memory outside weights and KV (vLLM 0.19 on H100): middle, half-width,
    and the tolerance 'inside the measured range'."""
    xs = measured_outside_weights_kv_gib()
    mid, half = (xs[0] + xs[-1]) / 2, (xs[-1] - xs[0]) / 2
    return (
        mid,
        half,
        Tolerance(
            abs=half,
            text=f"inside the measured range {xs[0]:.1f}–{xs[-1]:.1f} GiB per GPU ({len(xs)} vLLM 0.19 H100 runs)",
        ),
    )


@check("g000-overhead-8gpu")
def overhead_8gpu(claim: Claim) -> Verdict:
    """'8 × (5–10) = 40–80': the arithmetic, and 8 × the measured per-GPU range."""
    mid, half, _ = measured_overhead()
    return make(
        claim,
        own=80,
        real=8 * mid,
        unit="GiB",
        basis="arithmetic",
        tol=Tolerance(abs=8 * half, text=f"8 × the measured per-GPU range (±{8 * half:.1f} GiB)"),
        formula="8 × 10 (upper end); real: 8 × measured middle",
        explanation=f"8 × 5–10 = 40–80, treating the 'single node' figure as per GPU. Measured vLLM runs on "
        f"H100 leave {mid - half:.1f}–{mid + half:.1f} GiB per GPU outside weights and KV, "
        f"8 × which is {8 * (mid - half):.0f}–{8 * (mid + half):.0f} GiB.",
    )


def k3lib_activation_gib() -> float:
    """k3lib's stated activation rule for K3 at batch 1 (GiB): one 8,192-token prefill chunk."""
    from k3lib.core.memory import activation_bytes

    return activation_bytes(_k3(), batch=1) / GiB


@check_pattern(lambda c: c.guide == "guide-000" and c.quantity == "overhead" and not c.is_range and not c.gpu_count)
def overhead_rule(claim: Claim) -> Verdict:
    """'Subtract 8 GB per GPU': a stated rule, against measured vLLM runs on H100 (memory outside
    weights and KV per GPU, the unused reserve included)."""
    mid, half, tol = measured_overhead()
    xs = measured_outside_weights_kv_gib()
    return make(
        claim,
        own=None,
        real=mid,
        unit="GiB per GPU",
        tol=tol,
        stated_input=True,
        basis="published files",
        formula="capacity − weights − KV per GPU, vLLM 0.19 on H100",
        figures=[
            Figure("measured_runs", "vLLM 0.19 H100 runs with weights and KV logged", len(xs), "runs"),
            Figure("measured_min_gib", "min over runs", xs[0], "GiB"),
            Figure("measured_max_gib", "max over runs", xs[-1], "GiB"),
            Figure("middle_gib", "(min + max) / 2", mid, "GiB"),
        ],
        explanation=f"Measured vLLM runs on H100 leave {mid - half:.1f}–{mid + half:.1f} GiB per GPU outside "
        f"weights and KV; the guide's worked example uses 6 GB per GPU, below its 'at least 8'.",
    )


@check("g000-worked-overhead")
def worked_overhead(claim: Claim) -> Verdict:
    """'overhead = 48 GB (8 GPUs × 6 GB)' in a 6-GPU example."""
    mid, half, _ = measured_overhead()
    return make(
        claim,
        own=8 * 6,
        real=6 * mid,
        unit="GiB",
        basis="guide's own numbers",
        tol=Tolerance(abs=6 * half, text=f"6 GPUs × the measured per-GPU range (±{6 * half:.1f} GiB)"),
        formula="8 GPUs × 6 GB; real: 6 GPUs × measured middle",
        assumption="the 8-GPU figure is reused for a 6-GPU (and 5-GPU) deployment",
        figures=[
            Figure("six_gpus_at_6_gib", "6 × 6", 36, "GiB"),
            Figure("six_gpus_at_8_gib", "6 × 8 (its 'at least 8 GB' rule)", 48, "GiB"),
        ],
        explanation="8 × 6 = 48, but the example then runs on 6 and 5 GPUs (6 × 6 = 36, 5 × 6 = 30), and "
        "6 GB per GPU is below the guide's own 'at least 8 GB per GPU'.",
    )


@check("g000-worked-total")
def worked_total(claim: Claim) -> Verdict:
    """'Total = 325 + 32 + 10 + 48 = ~415 GB' via make_plan on the guide's profile."""
    plan = _own_plan(weights="q4", kv_dtype="fp8", context=262144, gpus=6, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.total_bytes / GiB
    real = (
        published_bytes("UD-Q4_K_XL")
        + real_kv_bytes(kv_dtype="fp8", context_tokens=262144)
        + G000_ACTIVATION
        + G000_OVERHEAD_TOTAL
    ) / GiB
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="W + T·kv + A + O = 325 + 32 + 10 + 48",
        assumption="the guide's 325 GB of Q4 weights and 131,072 B/token at FP8",
        figures=[
            Figure("weights_gib", "Q4 tier", plan.total.weights_bytes / GiB, "GiB"),
            Figure("kv_gib", "131,072 × 262,144 / 2^30", plan.total.kv_cache_bytes / GiB, "GiB"),
            Figure("activation_gib", "worked example", plan.total.activation_bytes / GiB, "GiB"),
            Figure("overhead_gib", "8 × 6", plan.total.overhead_bytes / GiB, "GiB"),
            Figure("total_gib", "sum", own, "GiB"),
        ],
        explanation=f"325 + 32 + 10 + 48 = {own:g} GiB: the sum follows from its inputs. With K3's published "
        f"UD-Q4_K_XL file and real FP8 KV (same activation and overhead) it is {real:,.0f} GiB.",
    )


def _worked_on(gpus: int, overhead_total: int | None = None, overhead_per_gpu: int | None = None):
    return _own_plan(
        weights="q4",
        kv_dtype="fp8",
        context=262144,
        gpus=gpus,
        overhead_total=overhead_total,
        overhead_per_gpu=overhead_per_gpu,
    )


@check("g000-worked-6x-headroom", "g000-worked-5x-over")
def worked_headroom(claim: Claim) -> Verdict:
    """Headroom of the worked example on 6 and 5 GPUs (its 48 GB overhead kept)."""
    n = claim.stated_gpu_count
    sign = -1 if claim.quantity == "overage" else 1
    reused = sign * _worked_on(n, overhead_total=G000_OVERHEAD_TOTAL).total.headroom_bytes / GiB
    at6 = sign * _worked_on(n, overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE).total.headroom_bytes / GiB
    at8 = sign * _worked_on(n, overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE).total.headroom_bytes / GiB
    real = sign * _real_headroom_gib("q4", "fp8", 262144, n)
    # "it is 15 GB over — it will OOM": for real K3 the figure is not 15, but the conclusion is the
    # question a deployer asks, and a deficit of 15 or more OOMs just the same
    over = claim.quantity == "overage"
    real_tol = AtLeast(abs=0.5, text=f"over by at least {claim.value:g}: it OOMs, as claimed") if over else None
    real_note = (
        f"Real K3 (Q4_K weights) is {real:,.0f} GiB over on {n} GPUs: it OOMs, as the guide says, "
        f"though by far more than {claim.value:g}."
        if over and real > 0
        else f"For real K3 (Q4_K weights) it is {sign * real:,.0f}."
    )
    return make(
        claim,
        own=reused,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        real_tol=real_tol,
        formula=f"{n} × 80 − (325 + 32 + 10 + 48)",
        assumption=f"the 48 GB overhead of 8 GPUs is kept on {n} GPUs",
        figures=[
            Figure("with_48_gib", f"{n} × 80 − 415", reused, "GiB"),
            Figure("with_6_per_gpu", f"overhead {n} × 6", at6, "GiB"),
            Figure("with_8_per_gpu", f"overhead {n} × 8", at8, "GiB"),
        ],
        explanation=f"{n} × 80 − 415 = {sign * reused:g}. With the example's own 6 GB per GPU "
        f"({n} × 6 = {6 * n}) it would be {sign * at6:g} GiB; with its 8 GB-per-GPU rule, "
        f"{sign * at8:g}. " + real_note,
    )


@check("g000-min-viable-headroom")
def min_viable_headroom(claim: Claim) -> Verdict:
    plan = _own_plan(weights="q2", kv_dtype="fp8", context=65536, gpus=4, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.headroom_bytes / GiB
    at8 = (
        _own_plan(
            weights="q2", kv_dtype="fp8", context=65536, gpus=4, overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE
        ).total.headroom_bytes
        / GiB
    )
    real = _real_headroom_gib("q2", "fp8", 65536, 4)
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="4 × 80 − (225 + 8 + 10 + 48)",
        assumption="FP8 KV cache and the 48 GB overhead of 8 GPUs kept on 4 GPUs",
        figures=[
            Figure("need_gib", "225 + 8 + 10 + 48", plan.total.total_bytes / GiB, "GiB"),
            Figure("headroom_at_8_per_gpu", "overhead 4 × 8", at8, "GiB"),
        ],
        explanation=f"225 (Q2) + 8 (FP8 KV at 64K) + 10 + 48 = {plan.total.total_bytes / GiB:g} GiB leaves "
        f"{own:g} of 320 — only with 8 GPUs' overhead on 4 GPUs; its 8 GB-per-GPU rule leaves "
        f"{at8:g}. Real K3 at Q2_K is {-real:,.0f} GiB short.",
    )


@cache
def _min_own_gpus(weights: str, kv: str, ctx: int, per_gpu: int) -> int | None:
    return min_gpus(lambda n: _own_plan(weights=weights, kv_dtype=kv, context=ctx, gpus=n, overhead_per_gpu=per_gpu))


def _node_note(gpus: int | None, what: str) -> str:
    return (
        f"Real K3 ({what}) needs {gpus} H100s in whole 8-GPU nodes (TP inside a node); published deployments: "
        f"vLLM's recipe runs 16× H200 as TP8×PP2 and needs 32× H100."
    )


@check("g000-min-viable-gpus", "g000-faq-min-gpus")
def min_viable_gpus(claim: Claim) -> Verdict:
    """'The minimum viable K3 deployment is 4x H100 with Q2 and 64K context'."""
    at8 = _min_own_gpus("q2", "fp8", 65536, G000_OVERHEAD_PER_GPU_RULE)
    real = real_node_gpus(weights="q2", kv_dtype="fp8", context=65536)
    return make(
        claim,
        own=at8,
        real=real,
        unit="GPUs",
        tol=EXACT,
        basis="guide's own numbers",
        formula="min n: 225 + 8 + 10 + n × 8 ≤ n × 80",
        assumption="the guide's 225 GB of Q2 weights and FP8 KV (not stated)",
        figures=[Figure("gpus_at_8_per_gpu", "min n", at8, "GPUs")],
        explanation=f"Its own numbers need {at8} H100s. " + _node_note(real, "Q2_K, FP8 KV, 64K"),
    )


@check("g000-summary-min-q2-64k", "g000-faq-min-total-q2-64k", "g000-summary-max-bf16-1m", "g000-faq-total-bf16-512k")
def own_totals(claim: Claim) -> Verdict:
    """A requirement total: weights + KV + 10 + 48 on the guide's numbers."""
    kv = claim.kv_dtype or "fp8"
    plan = _own_plan(
        weights=claim.precision,
        kv_dtype=kv,
        context=claim.stated_context_tokens,
        gpus=8,
        overhead_total=G000_OVERHEAD_TOTAL,
    )
    own = plan.total.total_bytes / GiB
    real = (
        real_weights_bytes(claim.precision)
        + real_kv_bytes(kv_dtype=kv, context_tokens=claim.stated_context_tokens)
        + G000_ACTIVATION
        + G000_OVERHEAD_TOTAL
    ) / GiB
    w = plan.total.weights_bytes / GiB
    k = plan.total.kv_cache_bytes / GiB
    assume = "the guide's weights and 262,144 B/token KV, plus 10 GB activation and 48 GB overhead"
    if not claim.kv_dtype:
        assume += "; FP8 KV (not stated)"
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula=f"{w:g} + {k:g} + 10 + 48",
        assumption=assume,
        figures=[
            Figure("weights_gib", claim.precision, w, "GiB"),
            Figure("kv_gib", kv, k, "GiB"),
            Figure("total_gib", "sum", own, "GiB"),
        ],
        explanation=f"{own:,.4g} GiB from its own inputs; with K3's real weights and KV (same activation and "
        f"overhead) it is {real:,.0f} GiB.",
    )


@check("g000-fp8kv-gpus-before", "g000-faq-gpus-bf16-512k", "g000-checklist-10plus-h100")
def bf16_gpu_count(claim: Claim) -> Verdict:
    """GPUs for BF16 weights + BF16 KV at 512K (the FAQ's case), 6 GB per GPU as in its example."""
    ctx = claim.context_tokens or LONG_CONTEXT
    at6 = _min_own_gpus("bf16", "bf16", ctx, G000_OVERHEAD_PER_GPU_EXAMPLE)
    at8 = _min_own_gpus("bf16", "bf16", ctx, G000_OVERHEAD_PER_GPU_RULE)
    real = real_node_gpus(weights="bf16", kv_dtype="bf16", context=ctx)
    return make(
        claim,
        own=at6,
        real=real,
        unit="GPUs",
        tol=EXACT,
        basis="guide's own numbers",
        formula="min n: 594 + 128 + 10 + n × 6 ≤ n × 80",
        assumption=f"6 GB overhead per GPU, the worked example's rate (its 8 GB rule needs {at8}); the "
        f"guide's 594 GB and 262,144 B/token",
        figures=[Figure("gpus_at_6_per_gpu", "min n", at6, "GPUs"), Figure("gpus_at_8_per_gpu", "min n", at8, "GPUs")],
        explanation=f"Its own numbers need {at6} H100s at 6 GB per GPU ({at8} at 8). "
        + _node_note(real, "BF16 weights and KV, 512K"),
    )


@check("g000-fp8kv-gpus-after")
def fp8_drops_to_8(claim: Claim) -> Verdict:
    """'FP8 KV at 512K saves 64 GB — enough to drop from 10 GPUs to 8': GPUs after the switch."""
    before6 = _min_own_gpus("bf16", "bf16", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_EXAMPLE)
    before8 = _min_own_gpus("bf16", "bf16", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_RULE)
    at6 = _min_own_gpus("bf16", "fp8", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_EXAMPLE)
    at8 = _min_own_gpus("bf16", "fp8", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_RULE)
    real = real_node_gpus(weights="bf16", kv_dtype="fp8", context=LONG_CONTEXT)
    return make(
        claim,
        own=at6,
        real=real,
        unit="GPUs",
        tol=EXACT,
        basis="guide's own numbers",
        formula="min n: 594 + 64 + 10 + n × 6 ≤ n × 80",
        figures=[
            Figure("gpus_before_at_6", "BF16 KV", before6, "GPUs"),
            Figure("gpus_at_6_per_gpu", "FP8 KV", at6, "GPUs"),
            Figure("gpus_before_at_8", "BF16 KV", before8, "GPUs"),
            Figure("gpus_at_8_per_gpu", "FP8 KV", at8, "GPUs"),
            Figure("saving_in_gpus", "64 / 80", 64 / 80, "GPUs"),
        ],
        explanation=f"On its own numbers FP8 KV takes BF16 weights at 512K from {before6} to {at6} H100s "
        f"(6 GB per GPU) or from {before8} to {at8} (8 GB per GPU): 64 GB is {64 / 80:.1f} of "
        f"one GPU, so it saves at most one, not two. " + _node_note(real, "BF16, FP8 KV, 512K"),
    )


@check("g000-fp8kv-saves-512k", "g000-maxlen-savings-512k-128k")
def kv_savings(claim: Claim) -> Verdict:
    prof = _g000()
    if claim.kv_dtype == "fp8":
        own = (
            kv_cache_bytes(prof, context_tokens=LONG_CONTEXT, batch=1, kv_dtype="bf16")
            - kv_cache_bytes(prof, context_tokens=LONG_CONTEXT, batch=1, kv_dtype="fp8")
        ) / GiB
        real = (
            real_kv_bytes(kv_dtype="bf16", context_tokens=LONG_CONTEXT)
            - real_kv_bytes(kv_dtype="fp8", context_tokens=LONG_CONTEXT)
        ) / GiB
        formula = "262,144 × 524,288 / 2^30 × (1 − 1/2)"
    else:
        own = 262144 * (LONG_CONTEXT - 131072) / GiB
        real = (
            real_kv_bytes(kv_dtype="bf16", context_tokens=LONG_CONTEXT)
            - real_kv_bytes(kv_dtype="bf16", context_tokens=131072)
        ) / GiB
        formula = "262,144 × (524,288 − 131,072) / 2^30"
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula=formula,
        assumption="the guide's 262,144 B/token at BF16",
        explanation=f"{own:,.4g} GiB from its own 262,144 B/token; with K3's 27,648 B/token the saving is "
        f"{real:.2f} GiB.",
    )


def _own_max_context_tokens(gpus: int) -> int:
    """Longest Q4 + FP8 context (tokens, 1K steps) that fits ``gpus`` H100s on the guide's numbers (8 GB/GPU)."""
    w = _g000().weights_bytes_by_tier["q4"]
    per_tok = _g000().kv_bytes_per_token(1.0)
    budget = gpus * 80 * GiB - w - G000_ACTIVATION - gpus * G000_OVERHEAD_PER_GPU_RULE
    return max(0, min(budget // per_tok // 1024 * 1024, _g000().max_context_tokens))


@check("g000-sweetspot-gpus", "g000-summary-sweetspot-gpus")
def sweetspot_gpus(claim: Claim) -> Verdict:
    """'5–6 H100 at 128K–256K': the GPUs the upper context (256K) needs must lie in 5–6 (the context
    half is checked the same way: what the lower GPU count reaches)."""
    own = _min_own_gpus("q4", "fp8", 262144, G000_OVERHEAD_PER_GPU_RULE)
    at128 = _min_own_gpus("q4", "fp8", 131072, G000_OVERHEAD_PER_GPU_RULE)
    real = real_node_gpus(weights="q4", kv_dtype="fp8", context=262144)
    return make(
        claim,
        own=own,
        real=real,
        unit="GPUs",
        tol=EXACT,
        basis="guide's own numbers",
        formula="min n: 325 + 32 + 10 + n × 8 ≤ n × 80",
        figures=[Figure("gpus_for_128k", "min n", at128, "GPUs"), Figure("gpus_for_256k", "min n", own, "GPUs")],
        explanation=f"On its own numbers (8 GB per GPU) 128K needs {at128} H100s and 256K needs {own}: "
        f"5–6 follows. " + _node_note(real, "Q4_K, FP8 KV, 256K"),
    )


@check("g000-sweetspot-context", "g000-summary-sweetspot-context")
def sweetspot_context(claim: Claim) -> Verdict:
    """The context half of the sweet spot: the longest context 5 H100s hold must lie in 128K–256K."""
    k5 = _own_max_context_tokens(5) / 1024
    k6 = _own_max_context_tokens(6) / 1024
    return make(
        claim,
        own=k5,
        real=0.0,
        unit="K tokens",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="(5 × 80 − 325 − 10 − 5 × 8) × 2^30 / 131,072",
        figures=[
            Figure("max_context_5_gpus_k", "5 GPUs", k5, "K tokens"),
            Figure("max_context_6_gpus_k", "6 GPUs", k6, "K tokens"),
        ],
        explanation=f"With 8 GB per GPU, 5 H100s hold Q4 + FP8 KV up to {k5:.0f}K tokens (6 up to "
        f"{k6:.0f}K), so 128K–256K follows. K3's real Q4_K weights "
        f"({real_weights_bytes('q4') / GiB:,.0f} GiB) fit 5–6 H100s at no context (0).",
    )


def _per_gpu_case(weights: str, kv: str, ctx: int, weights_per_gpu: float | None = None):
    plan = _own_plan(weights=weights, kv_dtype=kv, context=ctx, gpus=8, overhead_total=G000_OVERHEAD_TOTAL)
    pg = plan.per_gpu
    w = pg.weights_bytes / GiB if weights_per_gpu is None else weights_per_gpu
    total = w + (pg.kv_cache_bytes + pg.activation_bytes + pg.overhead_bytes) / GiB
    return plan, w, total


@check("g000-8xh100-bf16-512k-over", "g000-fix-256k-total", "g000-fix-q8-total", "g000-fix-fp8kv-total")
def per_gpu_totals(claim: Claim) -> Verdict:
    """Per-GPU totals of the 8x H100 BF16 512K case and its three fixes (W/8 + KV/8 + 10/8 + 6)."""
    q8 = claim.precision == "q8"
    plan, w, total = _per_gpu_case(
        "bf16", claim.kv_dtype, claim.stated_context_tokens, weights_per_gpu=56.3 if q8 else None
    )
    real_plan = _real_plan(
        weights="q8" if q8 else "bf16",
        kv_dtype=claim.kv_dtype,
        context=claim.stated_context_tokens,
        gpus=8,
        overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE,
    )
    real_total = real_plan.per_gpu.total_bytes / GiB
    over = claim.quantity == "overage"
    own = total - 80 if over else total
    real = real_total - 80 if over else real_total
    kv = plan.per_gpu.kv_cache_bytes / GiB
    inputs = (
        "the guide's 594 GB BF16 and 262,144 B/token, split evenly over 8 GPUs, 10 GB activation and 48 GB overhead"
    )
    if q8:
        inputs = "the 56.3 GB of Q8 weights per GPU (themselves contradicted: 8 bits of its 594 GB is 37.1); " + inputs
    extra = ""
    if claim.claim_id == "g000-fix-fp8kv-total":
        extra = f" At {total:.1f} GiB it is still {total - 80:.1f} over an 80 GB card, so it is not a fix on its own."
    elif claim.claim_id == "g000-fix-q8-total":
        extra = f" That leaves {80 - total:.1f} GiB, hardly 'comfortable'."
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB per GPU",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula=f"{w:g} + {kv:g} + 1.25 + 6" + (" − 80" if over else ""),
        assumption=inputs,
        figures=[
            Figure("weights_per_gpu", "W / 8", w, "GiB"),
            Figure("kv_per_gpu", "KV / 8", kv, "GiB"),
            Figure("total_per_gpu", "sum", total, "GiB"),
        ],
        explanation=f"{own:,.4g} GiB per GPU from its own inputs; for K3's real weights and KV it is "
        f"{real:,.0f}.{extra}",
    )


@check("g000-faq-tp8-weights")
def tp8_weights(claim: Claim) -> Verdict:
    own = _g000().weights_bytes_by_tier["bf16"] / 8 / GiB
    real = real_weights_bytes("bf16") / 8 / GiB
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB per GPU",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="594 / 8",
        assumption="the guide's 594 GB of BF16 weights",
        explanation=f"594 / 8 = {own:g}; K3's real BF16 share is {real:,.0f} GiB per GPU.",
    )


@check("g000-5xh100-q4-128k-headroom")
def five_gpu_headroom(claim: Claim) -> Verdict:
    """'2.8 GB per GPU left' on 5 H100s at Q4 and 128K: the KV dtype is not stated, so both readings
    are computed; the claim is judged against the FP8 reading with the 6 GB example rate."""
    at8 = (
        80
        - _own_plan(
            weights="q4", kv_dtype="fp8", context=131072, gpus=5, overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE
        ).per_gpu.total_bytes
        / GiB
    )
    at6 = (
        80
        - _own_plan(
            weights="q4", kv_dtype="fp8", context=131072, gpus=5, overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE
        ).per_gpu.total_bytes
        / GiB
    )
    real = (
        (
            5 * 80 * GiB
            - published_bytes("UD-Q4_K_XL")
            - real_kv_bytes(kv_dtype="fp8", context_tokens=131072)
            - G000_ACTIVATION
            - 5 * G000_OVERHEAD_PER_GPU_EXAMPLE
        )
        / 5
        / GiB
    )
    return make(
        claim,
        own=at6,
        real=real,
        unit="GiB per GPU",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="80 − (325 + 16 + 10) / 5 − 6",
        assumption="FP8 KV (not stated)",
        figures=[
            Figure("left_at_8_per_gpu", "80 − 351/5 − 8", at8, "GiB"),
            Figure("left_at_6_per_gpu", "80 − 351/5 − 6", at6, "GiB"),
        ],
        explanation=f"The breakdown table is missing. With FP8 KV its own numbers leave {at6:.1f} GiB per "
        f"GPU (6 GB overhead) or {at8:.1f} (8 GB); 2.8 matches neither. Real K3 is "
        f"{-real:,.0f} GiB per GPU short.",
    )


_PUBLISHED_TIER = {"q8": "UD-Q8_K_XL", "q4": "UD-Q4_K_XL", "q2": "UD-Q2_K_XL"}


@check("g000-faq-q4-saving", "g000-faq-q2-saving")
def precision_saving(claim: Claim) -> Verdict:
    tier = claim.precision
    own = (1 - _g000().weights_bytes_by_tier[tier] / _g000().weights_bytes_by_tier["bf16"]) * 100
    real = (1 - published_bytes(_PUBLISHED_TIER[tier]) / real_weights_bytes("bf16")) * 100
    return make(
        claim,
        own=own,
        real=real,
        unit="%",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula=f"1 − {tier.upper()} / BF16",
        assumption="the guide's 594 / 325 / 225 GB tiers",
        explanation=f"{own:.1f}% on its own tiers; the published {_PUBLISHED_TIER[tier]} is {real:.0f}% "
        f"smaller than K3 at BF16.",
    )


def _largest_step(sizes: Sequence[float]) -> tuple[float, list[float]]:
    steps = [100 * (1 - b / a) for a, b in zip(sizes, sizes[1:])]
    return max(steps), steps


@check("g000-precision-step-saving")
def precision_steps(claim: Claim) -> Verdict:
    """'Each step down in precision saves 20–30%': the largest step must lie in the range, on the guide's
    stated tiers (BF16 594, Q4 325, Q2 225; its Q8 = half of BF16 by its own 8-of-16-bits rule,
    not the contradicted 56.3 × 8) and on K3's BF16 and the published 8/4/2-bit files."""
    g = _g000().weights_bytes_by_tier
    own_sizes = [g["bf16"], g["bf16"] / 2, g["q4"], g["q2"]]
    real_sizes = [real_weights_bytes("bf16")] + [published_bytes(_PUBLISHED_TIER[t]) for t in ("q8", "q4", "q2")]
    own, own_steps = _largest_step(own_sizes)
    real, real_steps = _largest_step(real_sizes)
    figs = [Figure(f"own_step_{i}", "1 − next / tier", s, "%") for i, s in enumerate(own_steps)]
    figs += [Figure(f"real_step_{i}", "1 − next / tier", s, "%") for i, s in enumerate(real_steps)]
    return make(
        claim,
        own=own,
        real=real,
        unit="% (largest step)",
        tol=Tolerance(rel=0.05, text="±5% on the range ends"),
        basis="guide's own numbers",
        formula="max over steps of 1 − next tier / tier",
        figures=figs,
        explanation=f"On its own tiers (594 → 297 → 325 → 225) the steps are "
        f"{', '.join(f'{s:.0f}' for s in own_steps)}%; K3 BF16 → UD-Q8_K_XL → UD-Q4_K_XL → "
        f"UD-Q2_K_XL gives {', '.join(f'{s:.0f}' for s in real_steps)}%.",
    )


# ================================================================= guide 000: not checkable

register_not_checkable(
    ["g000-activation-batch1", "g000-worked-activation"],
    "Activation memory needs a measurement of K3 in an engine, which no source here gives. k3lib's stated "
    "rule (one 8,192-token prefill chunk through the widest layer) gives 2.1 GiB; the guide's 10 GB sits inside "
    "its own 8–15 GB range.",
    computed=lambda: k3lib_activation_gib(),
    unit="GiB",
    basis="k3lib rule",
)
register_not_checkable(
    ["g000-overhead-node"],
    "Engine overhead per node needs a measurement; the next sentence multiplies this 'single node' figure by "
    "8 GPUs, so the guide itself is unsure what it counts.",
)
register_not_checkable(
    ["g000-nccl-tp8"],
    "NCCL buffer sizes depend on the engine and its settings. k3lib's default, 0.5 GiB per TP peer (3.5 GiB at "
    "TP=8), was chosen inside this range, so agreement with it is not evidence.",
    computed=lambda: 7 * 0.5,
    unit="GiB",
    basis="k3lib rule",
)
register_not_checkable(
    ["g000-reserve-10-15pct"],
    "A rule of thumb. Its own overhead rule (8 GB per GPU) is already 10% of an 80 GB card, leaving 0–5% for "
    "the KV cache.",
)
register_not_checkable(
    ["g000-precision-table-context"],
    "The precision-by-precision table this note describes is missing from the guide's text.",
)
register_not_checkable(
    ["g000-production-gpus", "g000-faq-usable-gpus"],
    "Advice about production throughput, not a memory figure. (K3's real Q4_K weights alone, 1,456 GiB, "
    "are more than 18 H100s hold.)",
)
register_not_checkable(
    ["g000-gpu-table-plus-one", "g000-checklist-plus-one"], "Advice (one spare GPU); nothing to compute."
)
register_not_checkable(
    ["g000-flashattention-saving", "g000-pagedattention-saving"],
    "An engine optimisation's saving needs a measurement on K3; none is given or available here.",
)
register_not_checkable(
    ["g000-offload-slowdown"],
    "A slowdown range for CPU offload needs a measurement. For scale: an H100's HBM (3,350 GB/s) is 52× a PCIe "
    "Gen5 x16 link (64 GB/s).",
)
register_not_checkable(
    ["g000-maxlen-advice-128k", "g000-checklist-test-50pct", "g000-checklist-reduce-25pct"],
    "Procedural advice about choosing max_model_len; it states no figure about K3 to compute.",
)
register_not_checkable(
    ["g000-checklist-min-speed"],
    "A diagnostic threshold (under 5 tok/s means the interconnect is the bottleneck) that needs measurements of "
    "the deployment.",
)


@check("g000-faq-mac-speed")
def mac_speed(claim: Claim) -> Verdict:
    mac = get_gpu("mac studio 512gb")
    bound = mac.memory_bw_bytes_per_s / (G004_ACTIVE_PARAMS * Q4_BITS / 8)
    return make(
        claim,
        own=None,
        real=None,
        unit="tok/s",
        tol=None,
        basis="hardware catalogue",
        formula="819 GB/s / (104B × 4.5 bits / 8)",
        figures=[Figure("bandwidth_bound_tok_s", "819 GB/s / (104B × 4.5 / 8)", bound, "tok/s")],
        explanation=f"K3's real Q4_K weights ({real_weights_bytes('q4') / GiB:,.0f} GiB) do not fit in 512 GB, "
        f"so the speed depends on streaming from SSD, which the guide does not describe. If the "
        f"guide's own 325 GB fitted, the M3 Ultra's bandwidth would allow up to {bound:.0f} tok/s "
        f"(104B active at 4.5 bits, guide 004's count).",
    )
