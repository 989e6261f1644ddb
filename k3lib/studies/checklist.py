"""Guide 000's decision checklist as a whole: the seven steps (:mod:`k3lib.studies.steps`),
anti-pattern warnings, the recommended and the cheapest configuration
(:mod:`k3lib.studies.solver`), the interactive form, and the guide's sizing statements.

:func:`run_checklist` runs all seven steps for an inventory. Every per-GPU figure comes
from :func:`k3lib.core.plan.make_plan` or the sweep that computes the same bytes.

>>> c = run_checklist(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")
>>> [s.step for s in c.steps], c.precision.weights, c.add_one.recommended_gpus
([1, 2, 3, 4, 5, 6, 7], 'q4', 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec
from k3lib.core.layout import choose_layout
from k3lib.core.memory import weights_bytes
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.precisions import get_kv_dtype
from k3lib.core.search import gpus_per_node_of
from k3lib.core.units import GiB, parse_context_tokens, parse_positive_int
from k3lib.studies.cheatsheet import (  # noqa: F401 — re-exported for notebook 05
    PRIORITY_LEVERS,
    OrderCheck,
    cheatsheet,
    cheatsheet_display,
    cheatsheet_gpus,
    check_priority_order,
    optimal_gpu_counts,
    priority_matrix,
)
from k3lib.studies.solver import (  # noqa: F401 — re-exported for notebook 05
    CHEATSHEET_GPUS,
    CONTEXT_STEP_TOKENS,
    ENGINE_RESERVE_FRACTION,
    GUIDE_KV_DTYPES,
    SOLVER_KV_DTYPES,
    Configuration,
    _a,
    _checkpoint_engine,
    _gib,
    _hw,
    _spec,
    best_configuration,
    cheapest_configuration,
    checklist_assumptions,
    context_grid,
    format_context,
    min_gpus,
    precision_ladder,
)
from k3lib.studies.steps import (  # noqa: F401 — re-exported for notebook 05
    AddOneGPU,
    Budget,
    ContextChoice,
    ContextLimit,
    Optimization,
    Optimizations,
    PrecisionChoice,
    TestSequence,
    Throughput,
    Trial,
    _weights_size,
    active_weight_bytes,
    step1_budget,
    step2_precision,
    step3_context,
    step4_optimizations,
    step5_test_sequence,
    step6_throughput,
    step7_add_one_gpu,
)

if TYPE_CHECKING:
    from k3lib.engines.deployment import EngineSettings
    from k3lib.serving.offload_model import OffloadPlan


# ----------------------------------------------------------------- anti-patterns


@dataclass(frozen=True)
class AntiPattern:
    """A deployment mistake the inputs show, with what to do instead."""

    code: str
    message: str


def recommended_context_tokens(workload_context_tokens: object) -> int:
    """Twice the workload's need, rounded up to a power of two (guide: 50K average → 128K).

    >>> format_context(recommended_context_tokens(50 * 1024))
    '128K'
    """
    need = parse_context_tokens(workload_context_tokens, "workload_context")
    return max(1024, 1 << (2 * need - 1).bit_length())


def anti_patterns(
    plan: Plan,
    *,
    cpu_offload_bytes: int = 0,
    workload_context_tokens: object | None = None,
    gpu_memory_utilization: float | None = None,
) -> tuple[AntiPattern, ...]:
    """Warnings for three mistakes the guide names:

    * ``cpu-offload-when-it-fits``: offloading while the plan fits in VRAM (10–100× slower for nothing);
    * ``context-beyond-need``: ``max_model_len`` above :func:`recommended_context_tokens` of the workload;
    * ``no-engine-reserve``: ``--gpu-memory-utilization`` above ``1 − 5 %``
      (:data:`ENGINE_RESERVE_FRACTION`), and ``utilization-below-need`` when it is too low
      to hold this plan on each GPU.

    >>> p = make_plan(model="kimi-k3@guide-000", gpu="h100", gpus=8, weights="q4", kv_dtype="fp8",
    ...               context="1M", assumptions=checklist_assumptions())
    >>> [w.code for w in anti_patterns(p, cpu_offload_bytes=1, workload_context_tokens="50K")]
    ['cpu-offload-when-it-fits', 'context-beyond-need']
    """
    out: list[AntiPattern] = []
    if cpu_offload_bytes and cpu_offload_bytes > 0 and plan.fits:
        out.append(
            AntiPattern(
                "cpu-offload-when-it-fits",
                (
                    f"The plan fits in VRAM ({_gib(plan.per_gpu.headroom_bytes)} headroom per GPU) yet offloads "
                    f"{_gib(cpu_offload_bytes)} to CPU: drop the offload flags; offloading costs 10–100× in speed (guide)."
                ),
            )
        )
    if workload_context_tokens is not None:
        rec = recommended_context_tokens(workload_context_tokens)
        if plan.context_tokens > rec:
            smaller = make_plan(
                model=plan.model,
                gpu=plan.gpu,
                layout=plan.layout,
                weights=plan.weight_format,
                kv_dtype=plan.kv_dtype,
                context=rec,
                batch=plan.batch,
                assumptions=plan.assumptions,
            )
            saved = plan.core().total.kv_cache_bytes - smaller.total.kv_cache_bytes  # like with like
            out.append(
                AntiPattern(
                    "context-beyond-need",
                    (
                        f"max_model_len {format_context(plan.context_tokens)} is far beyond a "
                        f"{format_context(parse_context_tokens(workload_context_tokens))} workload: "
                        f"{format_context(rec)} would free {_gib(saved)} of KV cache."
                    ),
                )
            )
    if gpu_memory_utilization is not None:
        u = float(gpu_memory_utilization)
        if not 0 < u <= 1:
            raise K3InputError("gpu_memory_utilization", f"{u!r} must be in (0, 1]")
        cap = plan.gpu.memory_bytes("usable")
        if u > 1 - ENGINE_RESERVE_FRACTION:
            out.append(
                AntiPattern(
                    "no-engine-reserve",
                    (
                        f"--gpu-memory-utilization {u:.2f} leaves {_gib((1 - u) * cap)} per GPU outside the engine "
                        f"(under {ENGINE_RESERVE_FRACTION:.0%}): CUDA graphs, NCCL and other processes have no room; "
                        f"stay at or below {1 - ENGINE_RESERVE_FRACTION:.2f}."
                    ),
                )
            )
        if u * cap < plan.per_gpu.total_bytes:
            out.append(
                AntiPattern(
                    "utilization-below-need",
                    (
                        f"--gpu-memory-utilization {u:.2f} gives the engine {_gib(u * cap)} per GPU but the plan needs "
                        f"{_gib(plan.per_gpu.total_bytes)}: vLLM will refuse max_model_len "
                        f"{format_context(plan.context_tokens)}."
                    ),
                )
            )
    return tuple(out)


# ----------------------------------------------------------------- the whole checklist


@dataclass(frozen=True)
class Checklist:
    """The seven answers, the recommended configuration for this inventory, and the
    cheapest configuration on this GPU type (which may need more GPUs)."""

    model: str
    gpu: str
    gpus: int
    nodes: int
    context_tokens: int
    kv_dtype: str
    budget: Budget
    precision: PrecisionChoice
    context: ContextChoice
    optimizations: Optimizations | None
    test_sequence: TestSequence
    throughput: Throughput | None
    add_one: AddOneGPU
    recommended: Configuration | None
    cheapest: Configuration | None
    #: when nothing fits the inventory in VRAM: llama.cpp's offload plan (experts in host memory,
    #: :func:`k3lib.serving.offload_model.best_offload_plan`), or vLLM's plan with the fewest whole
    #: GiB of ``--cpu-offload-gb`` that loads (:func:`vllm_cpu_offload_plan`); else None
    offload: Any = None

    @property
    def steps(self) -> tuple:
        return tuple(
            s
            for s in (
                self.budget,
                self.precision,
                self.context,
                self.optimizations,
                self.test_sequence,
                self.throughput,
                self.add_one,
            )
            if s is not None
        )

    def to_frame(self):
        """One row per step: step, title, figure, reason."""
        import pandas as pd

        rows = [{"step": s.step, "title": s.title, "figure": s.figure, "reason": s.reason} for s in self.steps]
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "context_tokens": self.context_tokens,
            "kv_dtype": self.kv_dtype,
            "steps": [{"step": s.step, "title": s.title, "figure": s.figure, "reason": s.reason} for s in self.steps],
            "budget_bytes": self.budget.budget_bytes,
            "weights": self.precision.weights,
            "max_context_tokens": {x.kv_dtype: x.max_context_tokens for x in self.context.limits},
            "test_sequence": list(self.test_sequence.values),
            "tokens_per_s_ceiling": self.throughput.tokens_per_s if self.throughput else None,
            "needed_gpus": self.add_one.needed_gpus,
            "recommended_gpus": self.add_one.recommended_gpus,
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "cheapest": self.cheapest.to_dict() if self.cheapest else None,
            "offload": self.offload.to_dict() if self.offload is not None else None,
        }


def run_checklist(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    gpus: object,
    context: object,
    nodes: object = None,
    kv_dtype: str = "fp8",
    batch: object = 1,
    engine: str | EngineSettings = "vllm",
    assumptions: Assumptions | None = None,
    host: object = None,
    ram: object = None,
    ram_bandwidth: object = None,
) -> Checklist:
    """Run the seven steps for an inventory (GPU type × count) and a target context.

    >>> c = run_checklist(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")
    >>> [s.step for s in c.steps], c.precision.weights, c.add_one.recommended_gpus
    ([1, 2, 3, 4, 5, 6, 7], 'q4', 7)
    """
    spec, hw = _spec(model), _hw(gpu)
    a = _a(assumptions, spec)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes") if nodes is not None else None
    m = choose_layout(spec, gpus=n, nodes=m, gpus_per_node=gpus_per_node_of(hw)).nodes
    target = parse_context_tokens(context, "context")
    kid = get_kv_dtype(kv_dtype).id
    budget = step1_budget(model=spec, gpu=hw, gpus=n, assumptions=a)
    prec = step2_precision(model=spec, budget=budget, assumptions=a)
    loaded = model if hasattr(model, "require_architecture") else None  # the user's own file, when given
    src = loaded or spec  # what the engine plans
    ctx = step3_context(
        model=spec,
        gpu=hw,
        gpus=n,
        nodes=m,
        weights=prec.weights,
        budget=budget,
        kv_dtypes=tuple(dict.fromkeys(GUIDE_KV_DTYPES + (kid,))),
        target_context=target,
        batch=batch,
        assumptions=a,
        engine=engine,
        source=loaded,
    )
    predicted = ctx.limit(kid).max_context_tokens
    seq = step5_test_sequence(target_context_tokens=target, predicted_max_context_tokens=predicted)
    opts = thr = None
    if prec.weights is not None:
        opts = step4_optimizations(
            model=spec,
            gpu=hw,
            gpus=n,
            nodes=m,
            weights=prec.weights,
            context=target,
            kv_dtype=kid,
            batch=batch,
            assumptions=a,
        )
        run_ctx = min(target, predicted) if predicted else target
        thr = step6_throughput(
            model=spec,
            gpu=hw,
            gpus=n,
            nodes=m,
            weights=prec.weights,
            kv_dtype=kid,
            context=run_ctx,
            batch=batch,
            assumptions=a,
        )
    # Step 7 needs a precision even when none fits this inventory: then the smallest checkpoint.
    eid = str(getattr(engine, "engine", engine))
    ladder = precision_ladder(src, _checkpoint_engine(engine))
    smallest = min(ladder, key=lambda w: _weights_size(spec, w))
    add = step7_add_one_gpu(
        model=spec,
        gpu=hw,
        weights=prec.weights or smallest,
        kv_dtype=kid,
        context=target,
        batch=batch,
        assumptions=a,
        engine=engine,
        source=loaded,
    )
    # the configurations keep the user's KV dtype: the same inputs give the same numbers as `estimate`
    # a real engine verifies every candidate by its own rules (the plan for that engine); a guide
    # profile or the generic model keeps the sweep
    rec = best_configuration(
        model=src, gpu=hw, gpus=n, nodes=m, context=target, batch=batch, assumptions=a, engine=engine, kv_dtypes=(kid,)
    )
    cheap = cheapest_configuration(
        model=src,
        gpu=hw,
        context=target,
        batch=batch,
        assumptions=a,
        max_gpus=max(32, n),
        engine=engine,
        kv_dtypes=(kid,),
    )
    off: OffloadPlan | Plan | None = None
    if rec is None and eid == "llama.cpp" and not isinstance(spec, PublishedProfile) and spec.mlp.moe_layers:
        # llama.cpp runs what does not fit with experts in host memory: the offload study's own plan
        from k3lib.serving.offload_model import best_offload_plan

        for w in ladder:
            try:
                off = best_offload_plan(
                    model=src,
                    gpu=hw,
                    gpus=n,
                    weights=None if w == "native" and loaded else w,
                    kv_dtype=kid,
                    context=target,
                    batch=batch,
                    host=host,
                    ram=ram,
                    ram_bandwidth=ram_bandwidth,
                )
            except K3InputError:
                off = None
            if off is not None:
                break
    if rec is None and eid == "vllm" and not isinstance(spec, PublishedProfile):
        off = vllm_cpu_offload_plan(
            model=src,
            gpu=hw,
            gpus=n,
            nodes=m,
            weights=ladder[0],
            kv_dtype=kid,
            context=target,
            batch=batch,
            engine=engine,
        )
    return Checklist(spec.id, hw.id, n, m, target, kid, budget, prec, ctx, opts, seq, thr, add, rec, cheap, off)


def vllm_cpu_offload_plan(
    *,
    model: Any,
    gpu: Any,
    gpus: int,
    context: object,
    weights: str = "native",
    kv_dtype: str = "bf16",
    nodes: object = None,
    batch: object = 1,
    engine: Any = "vllm",
) -> Plan | None:
    """vLLM's own answer when the weights do not fit: ``--cpu-offload-gb X`` keeps X GiB of each
    GPU's weights in pinned CPU memory (vllm/config/offload.py: "the space in GiB to offload to
    CPU, per GPU"). $X = \\lceil \\text{short} / \\text{GiB} \\rceil$ on the binding GPU, raised
    a GiB at a time until vLLM's rules load it (the offload also frees what the weights'
    share of the budget held); None when even every weight byte is not enough.
    Every decode step then streams X GiB per GPU over the host link: at least X ÷ link seconds.

    >>> p = vllm_cpu_offload_plan(model="llama-3.1-70b", gpu="h100", gpus=1, context="8K")
    >>> dict(p.engine.settings)["cpu_offload_gb"], p.fits
    (65.0, True)
    """
    import dataclasses

    from k3lib.engines.deployment import EngineSettings, plan_for_engine

    base = engine if isinstance(engine, EngineSettings) else EngineSettings("vllm")
    try:
        p = plan_for_engine(
            model=model,
            engine=base,
            gpu=gpu,
            gpus=gpus,
            nodes=nodes,
            weights=weights,
            kv_dtype=kv_dtype,
            context=context,
            batch=batch,
            with_limits=False,
        )
    except K3InputError:
        return None
    if p.fits or not p.loads:
        return None
    weights_gpu = p.per_gpu.weights_bytes
    deficit = -p.per_gpu.headroom_bytes
    x = max(1, -(-deficit // GiB))  # the missing memory in whole GiB, rounded up
    while x * GiB <= weights_gpu:
        q = plan_for_engine(
            model=model,
            engine=dataclasses.replace(base, cpu_offload_gb=float(x)),
            gpu=gpu,
            gpus=gpus,
            nodes=nodes,
            weights=weights,
            kv_dtype=kv_dtype,
            context=context,
            batch=batch,
        )
        if q.fits:
            return q
        deficit = -q.per_gpu.headroom_bytes
        x += max(1, -(-deficit // GiB))
    return None


# ----------------------------------------------------------------- guide 000's statements


def guide_statement_checks(*, gpu: str = "h100-sxm"):
    """Guide 000's sizing statements, each recomputed on the guide-000 profile with its own
    rules (8 GiB per GPU, 80 GiB H100s) by the solver; one row each with the guide's
    figure, the computed one and a verdict.

    >>> df = guide_statement_checks()
    >>> df["verdict"].tolist()[0]
    'reproduced'
    """
    import pandas as pd

    g = "kimi-k3@guide-000"
    a = checklist_assumptions()
    worked = Assumptions(overhead_total_bytes=48 * GiB)

    def cheap(ctx, **kw):
        return cheapest_configuration(model=g, gpu=gpu, context=ctx, assumptions=a, **kw)

    def mg(w, kv, ctx):  # the guide counts GPUs as one pool: its own arithmetic, not a deployable layout
        return min_gpus(model=g, gpu=gpu, weights=w, kv_dtype=kv, context=ctx, assumptions=a, whole_nodes=False)

    def p(**kw):
        kw.setdefault("assumptions", a)
        kw.setdefault("nodes", 1)
        return make_plan(model=g, gpu=gpu, **kw)

    rows = []
    c128 = cheap("128K", weights=["q4"], kv_dtypes=["fp8"])
    c256 = cheap("256K", weights=["q4"], kv_dtypes=["fp8"])
    rows.append(
        (
            "Q4 + FP8 KV at 128K–256K fits on 5–6 H100",
            "5–6 GPUs",
            c256.gpus,
            f"128K: {c128.gpus} GPUs (up to {format_context(c128.max_context_tokens)}); "
            f"256K: {c256.gpus} GPUs (up to {format_context(c256.max_context_tokens)})",
            "reproduced" if (c128.gpus, c256.gpus) == (5, 6) else "shown wrong",
        )
    )
    low = cheap("64K", kv_dtypes=["fp8"])
    h8 = p(gpus=low.gpus, weights=low.weights, kv_dtype="fp8", context="64K").total.headroom_bytes
    h48 = p(gpus=low.gpus, weights=low.weights, kv_dtype="fp8", context="64K", assumptions=worked).total.headroom_bytes
    rows.append(
        (
            "minimum viable: 4× H100 at Q2 and 64K, ~28 GB headroom",
            "4 GPUs, ~28 GiB",
            low.gpus,
            f"{low.gpus} GPUs at {low.weights}; headroom {_gib(h8)} at 8 GiB/GPU, {_gib(h48)} with the "
            f"worked example's 48 GiB",
            "count reproduced; the ~28 GiB needs 48 GiB of overhead" if low.gpus == 4 else "shown wrong",
        )
    )
    b8 = step1_budget(model=g, gpu=gpu, gpus=8, assumptions=a)
    q8 = step3_context(model=g, gpu=gpu, gpus=8, weights="q8", budget=b8, kv_dtypes=("bf16", "fp8"), assumptions=a)
    q8_512 = p(gpus=8, weights="q8", kv_dtype="bf16", context="512K")
    bf16_loads = weights_bytes(get_model(g), "bf16") < b8.budget_bytes
    rows.append(
        (
            "8× H100: enough for Q8, not for BF16",
            "Q8 yes, BF16 no",
            8,
            f"BF16 weights {_gib(weights_bytes(get_model(g), 'bf16'))} > budget {_gib(b8.budget_bytes)}; Q8 "
            f"holds up to {format_context(q8.limit('bf16').max_context_tokens)} at BF16 KV, "
            f"{format_context(q8.limit('fp8').max_context_tokens)} at FP8; at 512K BF16 KV it needs "
            f"{_gib(q8_512.per_gpu.total_bytes)} per GPU",
            "reproduced (not at the guide's own 512K BF16-KV example)" if not bf16_loads else "shown wrong",
        )
    )
    n_bf, n_f8 = mg("bf16", "bf16", "512K"), mg("bf16", "fp8", "512K")
    short = -p(gpus=10, weights="bf16", kv_dtype="bf16", context="512K").total.headroom_bytes
    rows.append(
        (
            "BF16 + 512K needs at least 10× H100",
            "≥ 10 GPUs",
            n_bf,
            f"{n_bf} at BF16 KV (10 is {_gib(short)} short); {n_f8} at FP8 KV",
            "bound holds; the minimum is 11 at BF16 KV"
            if n_bf == 11
            else ("reproduced" if n_bf == 10 else "shown wrong"),
        )
    )
    q8_bf, q8_f8 = mg("q8", "bf16", "512K"), mg("q8", "fp8", "512K")
    rows.append(
        (
            "FP8 KV at 512K saves 64 GB — enough to drop from 10 GPUs to 8",
            "10 → 8",
            n_bf - n_f8,
            f"BF16 weights: {n_bf} → {n_f8}; Q8 weights: {q8_bf} → {q8_f8}",
            "shown wrong: one GPU, not two" if n_bf - n_f8 == 1 else "reproduced",
        )
    )
    return pd.DataFrame(rows, columns=["statement", "guide", "GPUs (computed)", "computed", "verdict"])
