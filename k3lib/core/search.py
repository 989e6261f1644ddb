"""Searches over plans: the fewest GPUs that hold a context, and the longest context a
deployment holds. Every answer is a :class:`~k3lib.core.plan.Plan` (or read from the
vectorized sweep, which computes the same bytes), so the search never has its own
arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.layout import deployable_gpu_counts
from k3lib.core.models import ModelSpec, get_model
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.sweep import sweep
from k3lib.core.units import parse_context_tokens, parse_positive_int

#: contexts are searched on a grid of this many tokens (1K).
CONTEXT_STEP_TOKENS = 1024


def gpus_per_node_of(gpu: str | GPUSpec) -> int:
    """GPUs per node of a hardware row (``GPUSpec.gpus_per_node``; 8 for a spec built by hand)."""
    return (gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)).gpus_per_node


def candidate_gpu_counts(
    model: ModelSpec, gpu: str | GPUSpec, *, max_gpus: int = 256, whole_nodes: bool = True
) -> tuple[int, ...]:
    """Counts a search tries: those with a deployable layout (one node, then whole nodes);
    with ``whole_nodes=False`` every count 1…``max_gpus`` (the guides' "one pool" reading,
    for auditing a guide's own arithmetic only)."""
    if not whole_nodes:
        return tuple(range(1, max_gpus + 1))
    return deployable_gpu_counts(model, gpus_per_node=gpus_per_node_of(gpu), max_gpus=max_gpus)


def next_gpu_count(model: ModelSpec, gpu: str | GPUSpec, *, at_least: int, whole_nodes: bool = True) -> int:
    """The first count of :func:`candidate_gpu_counts` that is ≥ ``at_least`` — the guide's
    "add one more GPU" read as the next count one can deploy (past one node: the next node).

    >>> next_gpu_count(get_model("kimi-k3@guide-000"), "h100-sxm", at_least=7), \\
    ...     next_gpu_count(get_model("kimi-k3"), "h200", at_least=17)
    (7, 24)
    """
    counts = candidate_gpu_counts(model, gpu, max_gpus=4 * at_least + 64, whole_nodes=whole_nodes)
    return next(n for n in counts if n >= at_least)


def min_gpus_plan(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    weights: str,
    kv_dtype: str,
    context: object,
    batch: object = 1,
    max_gpus: int = 256,
    whole_nodes: bool = True,
    assumptions: Assumptions | None = None,
) -> Plan | None:
    """The plan with the fewest GPUs that fits (deployable layouts only, unless
    ``whole_nodes=False``); None when nothing up to ``max_gpus`` does. One sweep finds the
    count; one :func:`~k3lib.core.plan.make_plan` call builds the answer.

    >>> p = min_gpus_plan(model="kimi-k3", gpu="h200", weights="native", kv_dtype="fp8", context="256K")
    >>> p.gpus, p.layout.describe()
    (16, 'TP=8 × PP=2 over 2 nodes')
    """
    spec = get_model(model)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    max_gpus = parse_positive_int(max_gpus, "max_gpus")
    counts = candidate_gpu_counts(spec, hw, max_gpus=max_gpus, whole_nodes=whole_nodes)
    target = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    if target > spec.max_context_tokens:
        return None
    res = sweep(
        models=[spec],
        gpus=[hw.id],
        counts=counts,
        weights=[weights],
        kv_dtypes=[kv_dtype],
        contexts=[target],
        batch=n_batch,
        nodes=None if whole_nodes else 1,
        assumptions=assumptions,
    )
    ok = np.flatnonzero(res.fits[0, 0, :, 0, 0, 0])
    if not len(ok):
        return None
    n = int(res.counts[ok[0]])
    return make_plan(
        model=spec,
        gpu=hw,
        gpus=n,
        nodes=None if whole_nodes else 1,
        weights=weights,
        kv_dtype=kv_dtype,
        context=target,
        batch=n_batch,
        assumptions=assumptions,
    )


def context_grid_tokens(model: ModelSpec, step_tokens: int = CONTEXT_STEP_TOKENS) -> np.ndarray:
    """Contexts ``step, 2·step, …`` up to the model's maximum."""
    return np.arange(step_tokens, get_model(model).max_context_tokens + 1, step_tokens, dtype=np.int64)


def max_context_tokens(plan: Plan, *, step_tokens: int = CONTEXT_STEP_TOKENS) -> int:
    """The longest context (on a ``step_tokens`` grid, up to the model's maximum) that the
    plan's model, GPUs and layout (``plan.layout``: its TP, PP, DP, EP and nodes, not the
    default layout of its GPU count) hold with its precisions and batch; 0 when even the
    shortest does not load. Read from the sweep over the grid (same bytes as make_plan).

    >>> p = make_plan(model="deepseek-v3", gpu="h200", gpus=8, tp=2, pp=4, batch=8, context=8192)
    >>> max_context_tokens(p)      # TP=2 × PP=4: 61 latents spread over 4 stages
    163840
    """
    grid = context_grid_tokens(plan.model, step_tokens)
    res = sweep(
        models=[plan.model],
        gpus=[plan.gpu],
        counts=[plan.gpus],
        weights=[plan.weight_format],
        kv_dtypes=[plan.kv_dtype],
        contexts=grid.tolist(),
        batch=plan.batch,
        layout=plan.layout,
        assumptions=plan.assumptions,
    )
    fits = res.fits[0, 0, 0, 0, 0]
    return int(grid[np.flatnonzero(fits)[-1]]) if fits.any() else 0


def fewest_gpus_table(
    *,
    model: str | ModelSpec,
    gpus: Sequence[str],
    rows: Sequence[tuple[str, str]],
    context: object,
    batch: object = 1,
    whole_nodes: bool = True,
    assumptions: Assumptions | None = None,
) -> list[tuple[str, str, str, Plan | None]]:
    """(GPU, weights, KV dtype, plan or None) for each GPU and (weights, KV dtype) row."""
    out = []
    for g in gpus:
        for w, kv in rows:
            try:
                p = min_gpus_plan(
                    model=model,
                    gpu=g,
                    weights=w,
                    kv_dtype=kv,
                    context=context,
                    batch=batch,
                    whole_nodes=whole_nodes,
                    assumptions=assumptions,
                )
            except K3InputError:
                p = None
            out.append((g, w, kv, p))
    return out
