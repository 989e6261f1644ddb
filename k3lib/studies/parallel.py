"""Tensor (TP), pipeline (PP), data (DP) and expert (EP) parallelism as a study: tables,
layout comparisons, GPU counts, and guide 000's per-GPU cases — all read from
:func:`k3lib.core.plan.make_plan`, which states the rules once (sharded vs replicated
weights, KV per rank, whole-layer stages, the fullest GPU decides).

>>> from k3lib.core.models import get_model
>>> valid_tp_sizes(get_model("kimi-k3"))[:8]
(1, 2, 3, 4, 6, 8, 12, 16)
>>> stage_layer_counts(93, 4)
(23, 23, 24, 23)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.layout import Layout, deployable_layout, valid_tp_sizes

# re-exported: tests/test_parallel.py imports them from here
from k3lib.core.layout import check_tp as check_tp
from k3lib.core.layout import stage_layer_counts as stage_layer_counts
from k3lib.core.memory import NCCL_BYTES_PER_GPU, overhead_bytes_per_gpu
from k3lib.core.memory import replicated_attention_params as replicated_attention_params
from k3lib.core.models import ModelSpec, get_model, get_profile
from k3lib.core.plan import Assumptions, Plan, kv_bytes_per_gpu, make_plan
from k3lib.core.precisions import get_weight_format
from k3lib.core.search import gpus_per_node_of, min_gpus_plan, next_gpu_count
from k3lib.core.units import GiB, parse_context_tokens, parse_positive_int

# ---------------------------------------------------------------- the plan, from k3lib.core

ParallelPlan = Plan  # one plan type: a ParallelPlan IS a k3lib.core.plan.Plan


def distribute(
    *,
    model: str | ModelSpec = "kimi-k3",
    gpu: str | GPUSpec = "h200",
    layout: Layout | None = None,
    tp: int | None = None,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    nodes: int = 1,
    weights: str = "native",
    kv_dtype: str = "bf16",
    context: object = 262144,
    batch: object = 1,
    assumptions: Assumptions | None = None,
) -> Plan:
    """:func:`k3lib.core.plan.make_plan` on an explicit ``layout`` (or ``tp``/``pp``/``dp``/``ep``/``nodes``).

    >>> p = distribute(model="llama-3.1-70b", gpu="h100", tp=16, context=8192, weights="bf16", nodes=2)
    >>> p.peak.kv_cache_bytes == 327680 // 8 * 8192      # ÷ 8 KV heads, not ÷ 16
    True
    """
    if layout is None:
        layout = Layout(
            tp=parse_positive_int(tp if tp is not None else 1, "tp"),
            pp=parse_positive_int(pp, "pp"),
            dp=parse_positive_int(dp, "dp"),
            ep=parse_positive_int(ep, "ep"),
            nodes=parse_positive_int(nodes, "nodes"),
        )
    return make_plan(
        model=model,
        gpu=gpu,
        layout=layout,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
        assumptions=assumptions,
    )


def from_plan(plan: Plan, *, dp: int = 1, ep: int = 1) -> Plan:
    """The same plan with ``dp`` attention copies and ``ep`` expert parallelism (the plan
    itself when both are 1)."""
    if dp == 1 and ep == 1:
        return plan
    layout = Layout(tp=plan.tp // dp, pp=plan.pp, dp=dp, ep=ep, nodes=plan.nodes)
    return make_plan(
        model=plan.model,
        gpu=plan.gpu,
        layout=layout,
        weights=plan.weight_format,
        kv_dtype=plan.kv_dtype,
        context=plan.context_tokens,
        batch=plan.batch,
        assumptions=plan.assumptions,
    )


# ---------------------------------------------------------------- tables


def _unit(unit: str) -> int:
    if unit not in ("GiB", "GB"):
        raise K3InputError("unit", f"{unit!r}", "GiB, GB")
    return GiB if unit == "GiB" else 10**9


def per_gpu_table(plan: ParallelPlan | Plan, unit: str = "GiB"):
    """One row per pipeline stage (every GPU of a stage holds the same): each component,
    the total, capacity and headroom in ``unit``; the fullest stage is marked.

    >>> t = per_gpu_table(distribute(model="kimi-k3", gpu="h200", tp=8, weights="native", context="256K"))
    >>> list(t.columns)[:4]
    ['stage', 'layers', 'GPUs', 'weights sharded (GiB)']
    """
    import pandas as pd

    pp = plan
    div = _unit(unit)
    peak = pp.peak
    rows = []
    for s in pp.shares:
        row: dict[str, Any] = {"stage": s.stage, "layers": s.layers, "GPUs": s.gpus}
        for name, b in s.components().items():
            row[f"{name} ({unit})"] = round(b / div, 2)
        row[f"total ({unit})"] = round(s.total_bytes / div, 2)
        row[f"available ({unit})"] = round(s.available_bytes / div, 2)
        row[f"headroom ({unit})"] = round(s.headroom_bytes / div, 2)
        row["fits"] = s.fits
        row["fullest"] = s is peak
        rows.append(row)
    return pd.DataFrame(rows)


def per_gpu_long(plan: ParallelPlan | Plan, unit: str = "GiB"):
    """Long format for a stacked bar: ``GPU`` (stage label), ``component``, ``{unit}``,
    ``available``."""
    import pandas as pd

    pp = plan
    div = _unit(unit)
    rows = []
    for s in pp.shares:
        label = f"stage {s.stage}: {s.layers} layers, ×{s.gpus} GPUs" if pp.layout.pp > 1 else f"each of {s.gpus} GPUs"
        for i, (name, b) in enumerate(s.components().items()):
            rows.append(
                {"GPU": label, "component": name, "order": i, unit: b / div, "available": s.available_bytes / div}
            )
    return pd.DataFrame(rows)


def compare_layouts(
    layouts: Sequence[tuple[str, Layout]],
    *,
    model: str | ModelSpec,
    gpu: str,
    weights: str,
    kv_dtype: str,
    context: object,
    batch: object = 1,
    unit: str = "GiB",
    assumptions: Assumptions | None = None,
):
    """One row per named layout: the fullest GPU's components and whether it fits."""
    import pandas as pd

    div = _unit(unit)
    rows = []
    for name, lay in layouts:
        p = distribute(
            model=model,
            gpu=gpu,
            layout=lay,
            weights=weights,
            kv_dtype=kv_dtype,
            context=context,
            batch=batch,
            assumptions=assumptions,
        )
        pk = p.peak
        row: dict[str, Any] = {"layout": name, "GPUs": lay.gpus}
        for comp, b in pk.components().items():
            row[f"{comp} ({unit})"] = round(b / div, 2)
        row[f"fullest GPU ({unit})"] = round(pk.total_bytes / div, 2)
        row[f"headroom ({unit})"] = round(pk.headroom_bytes / div, 2)
        row["fits"] = p.fits
        rows.append(row)
    return pd.DataFrame(rows)


def kv_per_gpu_vs_tp(
    models: Sequence[str], *, tps: Sequence[int], context: object = "128K", kv_dtype: str = "bf16", unit: str = "GiB"
):
    """KV cache on one GPU against TP, next to the guide's rule (total ÷ TP): the
    difference is the replication — GQA past $K$ KV heads, MLA always.

    Rows where the model cannot be split ``tp`` ways are left out.
    """
    import pandas as pd

    from k3lib.core.memory import kv_cache_bytes

    ctx = parse_context_tokens(context)
    div = _unit(unit)
    rows = []
    for name in models:
        m = get_model(name)
        total = kv_cache_bytes(m, context_tokens=ctx, batch=1, kv_dtype=kv_dtype)
        allowed = valid_tp_sizes(m, max(tps))
        for t in tps:
            if t not in allowed:
                continue
            per = kv_bytes_per_gpu(m, kv_total_bytes=total, context_tokens=ctx, batch=1, kv_dtype=kv_dtype, tp=t, pp=1)
            rows.append(
                {
                    "model": m.name,
                    "TP": t,
                    f"KV per GPU ({unit})": per / div,
                    f"guide rule: total ÷ TP ({unit})": total / t / div,
                    "ratio to rule": per / (total / t),
                }
            )
    return pd.DataFrame(rows)


def nccl_table(tps: Sequence[int] = (1, 2, 4, 8, 16), *, nccl_bytes: int = NCCL_BYTES_PER_GPU, unit: str = "GiB"):
    """Communicator buffers per GPU against TP: $[TP > 1]·N_{nccl}$ (measured: constant, not
    a multiple of the peers), against the guide's 2–5 GB at TP=8."""
    import pandas as pd

    div = _unit(unit)
    return pd.DataFrame(
        [
            {
                "TP": t,
                f"NCCL buffers per GPU ({unit})": overhead_bytes_per_gpu(
                    tp=t, payload_bytes_per_gpu=0, cuda_context_bytes=0, nccl_bytes=nccl_bytes, fragmentation_fraction=0
                )
                / div,
            }
            for t in tps
        ]
    )


# ---------------------------------------------------------------- GPU counts


def layouts_for(model: ModelSpec, gpus: int, *, gpus_per_node: int = 8) -> tuple[Layout, ...]:
    """The deployable layout of ``gpus`` GPUs (:func:`k3lib.core.layout.deployable_layout`),
    as a one-element tuple; empty when there is none.

    >>> [l.describe() for l in layouts_for(get_model("kimi-k3"), 16)]
    ['TP=8 × PP=2 over 2 nodes']
    """
    try:
        return (deployable_layout(model, gpus=gpus, gpus_per_node=gpus_per_node),)
    except K3InputError:
        return ()


def min_gpus(
    *,
    model: str | ModelSpec,
    gpu: str,
    weights: str,
    kv_dtype: str,
    context: object,
    batch: object = 1,
    gpus_per_node: int | None = None,
    max_gpus: int = 256,
    whole_nodes: bool = True,
    assumptions: Assumptions | None = None,
) -> Plan | None:
    """The fewest GPUs, deployable (one node, then whole nodes, TP inside a node), whose
    fullest GPU fits: :func:`k3lib.core.search.min_gpus_plan`. ``gpus_per_node`` is the
    GPU's own (hardware row); the argument is kept for callers and must agree with it."""
    if gpus_per_node is not None and gpus_per_node != gpus_per_node_of(gpu):
        raise K3InputError(
            "gpus_per_node", f"{gpus_per_node} is not what a {get_gpu(gpu).name} node holds", str(gpus_per_node_of(gpu))
        )
    return min_gpus_plan(
        model=model,
        gpu=gpu,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
        max_gpus=max_gpus,
        whole_nodes=whole_nodes,
        assumptions=assumptions,
    )


def gpu_count_table(
    *,
    model: str | ModelSpec,
    gpu: str | Sequence[str],
    rows: Sequence[tuple[str, str]],
    context: object,
    batch: object = 1,
    production_extra: int = 1,
    gpus_per_node: int | None = None,
    whole_nodes: bool = True,
    assumptions: Assumptions | None = None,
    unit: str = "GiB",
):
    """The guide's lost "optimal GPU counts by precision" table: for each GPU and each
    (weights, KV dtype) row, the fewest GPUs that fit (:func:`min_gpus`) and the
    production count: the guide's "add one more GPU to each row", read as the next
    deployable count after ``production_extra`` more GPUs (a whole node past one node)."""
    import pandas as pd

    div = _unit(unit)
    out = []
    for g in [gpu] if isinstance(gpu, str) else list(gpu):
        name = get_gpu(g).name
        for weights, kv in rows:
            p = min_gpus(
                model=model,
                gpu=g,
                weights=weights,
                kv_dtype=kv,
                context=context,
                batch=batch,
                gpus_per_node=gpus_per_node,
                whole_nodes=whole_nodes,
                assumptions=assumptions,
            )
            row: dict[str, Any] = {"GPU": name, "weights": weights, "KV dtype": kv}
            if p is None:
                row.update(
                    {
                        "minimum GPUs": None,
                        "layout": "none up to 256",
                        f"fullest GPU ({unit})": None,
                        f"headroom per GPU ({unit})": None,
                        f"production GPUs (+{production_extra})": None,
                    }
                )
            else:
                row.update(
                    {
                        "minimum GPUs": p.layout.gpus,
                        "layout": p.layout.describe(),
                        f"fullest GPU ({unit})": round(p.peak.total_bytes / div, 1),
                        f"headroom per GPU ({unit})": round(p.peak.headroom_bytes / div, 1),
                        f"production GPUs (+{production_extra})": next_gpu_count(
                            p.model, p.gpu, at_least=p.gpus + production_extra, whole_nodes=whole_nodes
                        ),
                    }
                )
            out.append(row)
    return pd.DataFrame(out)


# ---------------------------------------------------------------- guide 000's per-GPU cases

#: Guide 000's per-GPU figures (GiB; the guide writes GB but its H100 is 80 of them).
GUIDE000_CASES: tuple[tuple[str, dict[str, str], float, str], ...] = (
    # (case, change from the 8× H100 BF16 512K base, guide's per-GPU figure, what it is)
    ("8× H100, BF16, BF16 KV, 512K", {}, 97.0, "~17 over 80 → ~97 per GPU"),
    ("fix 1: context 256K", {"context": "256K"}, 88.8, "total ~88.8"),
    ("fix 2: Q8 weights", {"weights": "q8"}, 78.8, "total ~78.8"),
    ("fix 3: FP8 KV cache", {"kv_dtype": "fp8"}, 88.8, "total ~88.8"),
)
GUIDE000_BASE: dict[str, Any] = dict(
    model="kimi-k3@guide-000", gpu="h100", gpus=8, weights="bf16", kv_dtype="bf16", context="512K"
)
GUIDE000_CASE2: dict[str, Any] = dict(model="kimi-k3@guide-000", gpu="h100", gpus=5, weights="q4", context="128K")


def guide000_assumption_sets() -> tuple[tuple[str, Assumptions], ...]:
    """Named readings of guide 000's activation and overhead, for its per-GPU cases.

    The last pair solves both cases at once (:func:`solve_activation_overhead`):
    activation $A = 33⅓$ GiB in total and overhead $O = 2⅓$ GiB per GPU.
    """
    return (
        ("stated: act 10, 8/GPU", Assumptions()),
        ("worked example: act 10, 6/GPU", Assumptions(activation_bytes=10 * GiB, overhead_per_gpu_bytes=6 * GiB)),
        ("act 12, 5/GPU", Assumptions(activation_bytes=12 * GiB, overhead_per_gpu_bytes=5 * GiB)),
        ("act 10, 7/GPU", Assumptions(activation_bytes=10 * GiB, overhead_per_gpu_bytes=7 * GiB)),
        (
            "both cases: act 33⅓, 2⅓/GPU",
            Assumptions(activation_bytes=round(100 / 3 * GiB), overhead_per_gpu_bytes=round(7 / 3 * GiB)),
        ),
    )


def guide000_implied_table(unit: str = "GiB"):
    """For each of guide 000's per-GPU figures: the total it implies, the weights and KV
    per GPU the guide's own inputs give, and what is left for activation + overhead
    (:func:`implied_extra_per_gpu`)."""
    import pandas as pd

    div = _unit(unit)
    rows = []
    figures = [(case, {**GUIDE000_BASE, **change}, guide) for case, change, guide, _ in GUIDE000_CASES]
    figures += [
        ("5× H100, Q4, 128K, FP8 KV", {**GUIDE000_CASE2, "kv_dtype": "fp8"}, 80 - 2.8),
        ("5× H100, Q4, 128K, BF16 KV", {**GUIDE000_CASE2, "kv_dtype": "bf16"}, 80 - 2.8),
    ]
    for case, args, guide in figures:
        g = make_plan(**args).per_gpu
        w, kv = g.weights_bytes / div, g.kv_cache_bytes / div
        rows.append(
            {
                "case": case,
                "GPUs": args["gpus"],
                f"guide total per GPU ({unit})": guide,
                f"weights per GPU ({unit})": round(w, 2),
                f"KV per GPU ({unit})": round(kv, 2),
                f"left for activation + overhead ({unit})": round(
                    implied_extra_per_gpu(total_per_gpu=guide, weights_per_gpu=w, kv_per_gpu=kv), 2
                ),
            }
        )
    return pd.DataFrame(rows)


def guide000_tier_check(unit: str = "GiB"):
    """Guide 000's weight tiers against the bits-per-weight rule applied to its BF16 594:
    $W_{tier} = 594 · b_{tier} / 16$; per GPU at 8 GPUs."""
    import pandas as pd

    prof = get_profile("kimi-k3@guide-000")
    div = _unit(unit)
    bf16 = prof.weights_bytes_by_tier["bf16"]
    rows = []
    for tier in ("bf16", "q8", "q4", "q2"):
        b = get_weight_format(tier).bits
        w = prof.weights_bytes_by_tier[tier]
        rows.append(
            {
                "tier": tier,
                "bits per weight": b,
                f"guide ({unit})": round(w / div, 1),
                f"594 × bits/16 ({unit})": round(bf16 * b / 16 / div, 1),
                f"guide per GPU at 8 ({unit})": round(w / 8 / div, 2),
                f"rule per GPU at 8 ({unit})": round(bf16 * b / 16 / 8 / div, 2),
                "guide ÷ rule": round(w / (bf16 * b / 16), 2),
            }
        )
    return pd.DataFrame(rows)


def guide000_case1_table(assumptions: Sequence[tuple[str, Assumptions]] | None = None, unit: str = "GiB"):
    """Guide 000's 8× H100 case and its three fixes, recomputed per GPU under each named
    assumption (default :func:`guide000_assumption_sets`), next to the guide's figure."""
    import pandas as pd

    assumptions = guide000_assumption_sets() if assumptions is None else assumptions
    div = _unit(unit)
    rows = []
    for case, change, guide, _what in GUIDE000_CASES:
        row: dict[str, Any] = {"case": case, f"guide ({unit})": guide}
        for name, a in assumptions:
            p = make_plan(**{**GUIDE000_BASE, **change}, assumptions=a)
            row[f"{name} ({unit})"] = round(p.per_gpu.total_bytes / div, 2)
        rows.append(row)
    return pd.DataFrame(rows)


def guide000_case2_table(assumptions: Sequence[tuple[str, str, Assumptions]] | None = None, unit: str = "GiB"):
    """Guide 000's 5× H100, Q4, 128K case: headroom per GPU under each (name, KV dtype,
    assumption), next to the guide's ~2.8. Default: every :func:`guide000_assumption_sets`
    reading with FP8 KV (the guide's sweet spot), then the stated defaults with BF16 and
    INT4 KV (the guide does not name the KV dtype of this case)."""
    import pandas as pd

    if assumptions is None:
        sets = guide000_assumption_sets()
        assumptions = [(n, "fp8", a) for n, a in sets] + [(sets[0][0], kv, sets[0][1]) for kv in ("bf16", "int4")]
    div = _unit(unit)
    rows = []
    for name, kv, a in assumptions:
        g = make_plan(**GUIDE000_CASE2, kv_dtype=kv, assumptions=a).per_gpu
        rows.append(
            {
                "assumption": name,
                "KV dtype": kv,
                f"weights ({unit})": round(g.weights_bytes / div, 2),
                f"KV cache ({unit})": round(g.kv_cache_bytes / div, 2),
                f"activation + overhead ({unit})": round((g.activation_bytes + g.overhead_bytes) / div, 2),
                f"total ({unit})": round(g.total_bytes / div, 2),
                f"headroom ({unit})": round(g.headroom_bytes / div, 2),
                f"guide headroom ({unit})": 2.8,
            }
        )
    return pd.DataFrame(rows)


def implied_extra_per_gpu(*, total_per_gpu: float, weights_per_gpu: float, kv_per_gpu: float) -> float:
    """What a guide's per-GPU total leaves for activation + overhead:
    $X = m_{gpu} - W/G - KV/G$ (same unit in, same unit out).

    >>> implied_extra_per_gpu(total_per_gpu=88.8, weights_per_gpu=74.25, kv_per_gpu=8)
    6.55
    """
    return round(total_per_gpu - weights_per_gpu - kv_per_gpu, 6)


def solve_activation_overhead(cases: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """Solve $X_i = A/G_i + O$ for one activation total $A$ and one per-GPU overhead $O$
    from two (GPU count $G_i$, implied extra $X_i$) pairs.

    >>> a, o = solve_activation_overhead([(8, 6.5), (5, 9.0)])
    >>> round(a, 2), round(o, 2)
    (33.33, 2.33)
    """
    (g1, x1), (g2, x2) = cases
    if g1 == g2:
        raise K3InputError("cases", "two different GPU counts are needed")
    a = (x1 - x2) / (1 / g1 - 1 / g2)
    return a, x1 - a / g1
