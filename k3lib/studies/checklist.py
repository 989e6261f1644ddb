"""Guide 000's seven-step "VRAM decision framework" as code, a solver, the cheat
sheets and the optimization priority matrix.

Each step is one pure function that returns a frozen dataclass with its figure
(``.figure``) and a one-sentence ``.reason``:

1. :func:`step1_budget` — real budget $B = G·C_{gpu} - G·O_{gpu}$ (8 GiB per GPU by default);
2. :func:`step2_precision` — the guide's "Q4 unless 10+ H100s", generalized by memory;
3. :func:`step3_context` — max context per KV dtype, $T_{max} = (B - W - A) / kv_{tok}$;
4. :func:`step4_optimizations` — FlashAttention, PagedAttention, FP8 KV and what each saves;
5. :func:`step5_test_sequence` — the ``max_model_len`` values to try (half, double, −25 % on OOM);
6. :func:`step6_throughput` — decode tokens/s from HBM bandwidth, and the < 5 tok/s warning;
7. :func:`step7_add_one_gpu` — the fewest GPUs that fit, plus one for production.

:func:`run_checklist` runs all seven. The solver (:func:`cheapest_configuration`,
:func:`best_configuration`, :func:`min_gpus`) and the cheat sheets
(:func:`cheatsheet`, :func:`optimal_gpu_counts`) are computed by the vectorized
:func:`k3lib.core.sweep.sweep` over whole grids at once (no loop over :func:`~k3lib.core.plan.make_plan`).

Defaults follow the guide: 8 GiB of overhead per GPU (``Assumptions(overhead_per_gpu_bytes=8 GiB)``),
the model's own memory basis (marketed 80 GiB for guide profiles, usable 79.19 GiB for
architectures) and FP8 KV.

>>> b = step1_budget(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=8)
>>> b.budget_bytes / 2**30
576.0
>>> step2_precision(model="kimi-k3@guide-000", budget=b).weights
'q4'
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.memory import activation_bytes, kv_bytes_per_token, weight_bits_by_group, weights_bytes
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.plan import Assumptions, Plan, choose_layout, make_plan
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.sweep import sweep
from k3lib.core.units import GB, GiB, parse_context_tokens, parse_positive_int

# ----------------------------------------------------------------- the guide's figures
#: "Subtract at least 8 GB per GPU from your available VRAM" (guide 000; GB read as GiB).
GUIDE_OVERHEAD_PER_GPU_BYTES = 8 * GiB
#: "Reserve 10-15% for KV cache and overhead before you pick a precision level" (guide 000).
GUIDE_WEIGHT_RESERVE_FRACTION = 0.15
#: "Start with Q4 unless you have 10+ H100s" (guide 000, step 2).
GUIDE_DEFAULT_WEIGHTS = "q4"
#: Step 3 divides by 262,144 (BF16), 131,072 (FP8) or 65,536 (INT4) bytes per token.
GUIDE_KV_DTYPES = ("bf16", "fp8", "int4")
#: "If the model loads but generates at under 5 tok/s, your interconnect is the bottleneck".
GUIDE_MIN_TOKENS_PER_S = 5.0
#: "roughly 20-35% less peak memory" — FlashAttention, of activation memory (a guide claim).
GUIDE_FLASH_ATTENTION_SAVING = (0.20, 0.35)
#: "typically saves 5-12% of total VRAM" — PagedAttention (a guide claim).
GUIDE_PAGED_ATTENTION_SAVING = (0.05, 0.12)
#: "2,800B total parameters and 104B active per token" (guide 004) — for profiles without an active count.
GUIDE_004_ACTIVE_PARAMS = 104_000_000_000
#: Grid step of the max-context searches: 1K tokens.
CONTEXT_STEP_TOKENS = 1024
#: vLLM's KV dtypes, highest precision first (what the solver may choose from by default).
SOLVER_KV_DTYPES = ("bf16", "fp8")
#: Cheat-sheet hardware: the guide's H100 and the next three HBM parts in k3lib's catalogue.
CHEATSHEET_GPUS = ("h100-sxm", "h200-sxm", "b200", "mi300x")
CHEATSHEET_COUNTS = tuple(range(1, 17))
#: Share of the GPU an engine must keep outside ``--gpu-memory-utilization`` (CUDA context,
#: allocations outside the caching allocator, other processes). A stated rule: vLLM's
#: default 0.9 keeps 10 %; above 0.95 we call the reserve gone.
ENGINE_RESERVE_FRACTION = 0.05


def checklist_assumptions(overhead_per_gpu_bytes: int | None = GUIDE_OVERHEAD_PER_GPU_BYTES) -> Assumptions:
    """The checklist's default assumptions: the guide's flat overhead per GPU."""
    return Assumptions(overhead_per_gpu_bytes=overhead_per_gpu_bytes)


def _a(assumptions: Assumptions | None) -> Assumptions:
    return assumptions if assumptions is not None else checklist_assumptions()


def format_context(tokens: int) -> str:
    """``262144`` → ``'256K'``, ``1048576`` → ``'1M'``, ``200000`` → ``'200,000'`` (K = 1,024).

    >>> format_context(204800), format_context(1048576), format_context(0)
    ('200K', '1M', '0')
    """
    tokens = int(tokens)
    if tokens and tokens % (1024 * 1024) == 0:
        return f"{tokens // (1024 * 1024)}M"
    if tokens and tokens % 1024 == 0:
        return f"{tokens // 1024:,}K"
    return f"{tokens:,}"


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GiB:,.1f} GiB"


def _spec(model: "str | ModelSpec") -> ModelSpec:
    return get_model(model)


def _hw(gpu: "str | GPUSpec") -> GPUSpec:
    return gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)


def _basis(spec: ModelSpec, a: Assumptions) -> str:
    return a.memory_basis or (spec.memory_basis if isinstance(spec, PublishedProfile) else "usable")


# ----------------------------------------------------------------- precisions


def precision_ladder(model: "str | ModelSpec") -> tuple[str, ...]:
    """Weight precisions the checklist considers, highest quality first.

    A guide profile: its published tiers (as k3lib format ids), by bits per weight.
    An architecture: its native checkpoint precision (``native`` when it is not
    plain BF16, e.g. K3's MXFP4 experts), then the guides' Q8, Q4, Q2 tiers.

    >>> precision_ladder("kimi-k3@guide-000")
    ('bf16', 'q8', 'q4', 'q2')
    >>> precision_ladder("kimi-k3")
    ('native', 'q8', 'q4', 'q2')
    """
    spec = _spec(model)
    if isinstance(spec, PublishedProfile):
        reverse = {tier: alias for alias, tier in spec.weight_aliases.items()}
        ids = []
        for tier in spec.tiers:
            for candidate in (tier, reverse.get(tier)):
                if candidate is None:
                    continue
                try:
                    ids.append(get_weight_format(candidate).id)
                    break
                except K3InputError:
                    continue
        return tuple(sorted(dict.fromkeys(ids), key=lambda f: -get_weight_format(f).bits_per_weight))
    top = "native" if set(spec.native_formats.values()) - {"bf16"} else "bf16"
    return (top, "q8", "q4", "q2")


def _rank_kv(kv_dtypes: Sequence[str]) -> tuple[str, ...]:
    return tuple(get_kv_dtype(k).id for k in kv_dtypes)


# ----------------------------------------------------------------- vectorized grid

@dataclass(frozen=True)
class _Grid:
    """Fits and per-GPU totals over (row = GPU count × nodes, weights, KV dtype, context)."""

    rows: tuple[tuple[int, int], ...]
    layouts: tuple[tuple[int, int], ...]
    weights: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    contexts: np.ndarray
    fits: np.ndarray
    total_bytes_per_gpu: np.ndarray
    available_bytes_per_gpu: np.ndarray

    def max_context(self) -> np.ndarray:
        """[row, weights, kv]: the largest context of the grid that fits; 0 = does not load."""
        c = self.fits.shape[-1]
        last = c - 1 - np.argmax(self.fits[..., ::-1], axis=-1)
        return np.where(self.fits.any(axis=-1), self.contexts[last], 0)


def _grid(spec: ModelSpec, hw: GPUSpec, rows: Sequence[tuple[int, int]], weights: Sequence[str],
          kv_dtypes: Sequence[str], contexts: Sequence[int], *, batch: int, assumptions: Assumptions) -> _Grid:
    """One :func:`k3lib.core.sweep.sweep` call per node count (1 or 2), stacked by row."""
    rows = tuple((int(n), int(m)) for n, m in rows)
    ctx = np.asarray(sorted(set(int(c) for c in contexts)), dtype=np.int64)
    shape = (len(rows), len(weights), len(kv_dtypes), len(ctx))
    fits = np.zeros(shape, dtype=bool)
    total = np.zeros(shape, dtype=np.int64)
    avail = np.zeros(shape, dtype=np.int64)
    for nodes in sorted({m for _, m in rows}):
        idx = [i for i, (_, m) in enumerate(rows) if m == nodes]
        res = sweep(models=[spec], gpus=[hw.id], counts=[rows[i][0] for i in idx], weights=list(weights),
                    kv_dtypes=list(kv_dtypes), contexts=ctx.tolist(), batch=batch, nodes=nodes,
                    assumptions=assumptions)
        fits[idx] = res.fits[0, 0]
        total[idx] = res.total_bytes_per_gpu[0, 0]
        avail[idx] = res.available_bytes_per_gpu[0, 0]
    layouts = tuple(choose_layout(spec, gpus=n, nodes=m if n % m == 0 else 1)[:2] for n, m in rows)
    return _Grid(rows, layouts, tuple(get_weight_format(w).id for w in weights), _rank_kv(kv_dtypes), ctx,
                 fits, total, avail)


def context_grid(model: "str | ModelSpec", step_tokens: int = CONTEXT_STEP_TOKENS) -> np.ndarray:
    """Contexts ``step, 2·step, …`` up to the model's maximum (1K steps to 1M: 1,024 points)."""
    spec = _spec(model)
    return np.arange(step_tokens, spec.max_context_tokens + 1, step_tokens, dtype=np.int64)


# ----------------------------------------------------------------- solver


@dataclass(frozen=True)
class Configuration:
    """One configuration the solver picked: hardware, layout, precisions, target context,
    the per-GPU total there and the largest context (1K grid) this configuration holds."""

    model: str
    gpu: str
    gpus: int
    nodes: int
    tp: int
    pp: int
    weights: str
    kv_dtype: str
    context_tokens: int
    batch: int
    total_bytes_per_gpu: int
    available_bytes_per_gpu: int
    max_context_tokens: int
    reason: str
    assumptions: Assumptions = field(default_factory=checklist_assumptions, repr=False)

    @property
    def headroom_bytes_per_gpu(self) -> int:
        return self.available_bytes_per_gpu - self.total_bytes_per_gpu

    @property
    def fits(self) -> bool:
        return self.headroom_bytes_per_gpu >= 0

    @property
    def label(self) -> str:
        layout = f"{self.nodes}×{self.gpus // self.nodes}" if self.nodes > 1 else f"{self.gpus}×"
        return (f"{layout} {self.gpu}, weights {self.weights}, KV {self.kv_dtype}, "
                f"context {format_context(self.context_tokens)} (TP={self.tp} PP={self.pp})")

    def plan(self) -> Plan:
        """The full :class:`~k3lib.core.plan.Plan` of this configuration (one make_plan call)."""
        return make_plan(model=self.model, gpu=self.gpu, gpus=self.gpus, nodes=self.nodes, weights=self.weights,
                         kv_dtype=self.kv_dtype, context=self.context_tokens, batch=self.batch,
                         assumptions=self.assumptions)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "gpu": self.gpu, "gpus": self.gpus, "nodes": self.nodes, "tp": self.tp,
                "pp": self.pp, "weights": self.weights, "kv_dtype": self.kv_dtype,
                "context_tokens": self.context_tokens, "batch": self.batch,
                "total_bytes_per_gpu": self.total_bytes_per_gpu,
                "available_bytes_per_gpu": self.available_bytes_per_gpu,
                "headroom_bytes_per_gpu": self.headroom_bytes_per_gpu,
                "max_context_tokens": self.max_context_tokens, "reason": self.reason}


def _solver_rows(max_gpus: int, two_nodes: bool) -> list[tuple[int, int]]:
    rows = [(n, 1) for n in range(1, max_gpus + 1)]
    if two_nodes and max_gpus >= 16:
        rows.insert(16, (16, 2))   # right after (16, 1): same count, one node preferred
    return rows


def _pick(spec: ModelSpec, hw: GPUSpec, grid: _Grid, target: int, batch: int, a: Assumptions, why: str,
          row_filter: np.ndarray | None = None) -> Configuration | None:
    ti = int(np.searchsorted(grid.contexts, target))
    at_target = grid.fits[..., ti]                                    # [R, P, K]
    if row_filter is not None:
        at_target = at_target & row_filter[:, None, None]
    hits = np.argwhere(at_target)                                    # C order = (row, precision, KV) order
    if not len(hits):
        return None
    r, p, k = (int(x) for x in hits[0])
    n, m = grid.rows[r]
    tp, pp = grid.layouts[r]
    total = int(grid.total_bytes_per_gpu[r, p, k, ti])
    avail = int(grid.available_bytes_per_gpu[r, p, k, ti])
    mx = int(grid.max_context()[r, p, k])
    w, kv = grid.weights[p], grid.kv_dtypes[k]
    reason = (f"{why}: {n}× {hw.id} (TP={tp} PP={pp}) at weights {w} and KV {kv} needs {_gib(total)} of "
              f"{_gib(avail)} per GPU at {format_context(target)} ({_gib(avail - total)} headroom per GPU) "
              f"and holds up to {format_context(mx)}.")
    return Configuration(spec.id, hw.id, n, m, tp, pp, w, kv, target, batch, total, avail, mx, reason, a)


def _solver_inputs(model, gpu, context, weights, kv_dtypes, batch):
    spec, hw = _spec(model), _hw(gpu)
    target = parse_context_tokens(context, "context")
    ws = tuple(get_weight_format(w).id for w in (weights or precision_ladder(spec)))
    ks = _rank_kv(kv_dtypes)
    n_batch = parse_positive_int(batch, "batch")
    return spec, hw, target, ws, ks, n_batch


def cheapest_configuration(*, model: "str | ModelSpec", gpu: "str | GPUSpec", context: object,
                           weights: Sequence[str] | None = None, kv_dtypes: Sequence[str] = SOLVER_KV_DTYPES,
                           max_gpus: int = 16, two_nodes: bool = True, batch: object = 1,
                           assumptions: Assumptions | None = None) -> Configuration | None:
    """The cheapest configuration that holds ``context``: fewest GPUs, then the highest
    weight precision (``weights`` in preference order, default :func:`precision_ladder`),
    then the highest KV precision. ``None`` if nothing up to ``max_gpus`` fits.

    One vectorized sweep over every GPU count × precision × KV dtype × context (a
    1K-token grid plus the target), so the answer carries its max context too.

    >>> c = cheapest_configuration(model="kimi-k3@guide-000", gpu="h100-sxm", context="256K",
    ...                            weights=["q4"], kv_dtypes=["fp8"])
    >>> c.gpus, format_context(c.max_context_tokens)
    (6, '775K')
    """
    a = _a(assumptions)
    spec, hw, target, ws, ks, n_batch = _solver_inputs(model, gpu, context, weights, kv_dtypes, batch)
    rows = _solver_rows(int(max_gpus), two_nodes)
    ctx = np.append(context_grid(spec), target)
    grid = _grid(spec, hw, rows, ws, ks, ctx, batch=n_batch, assumptions=a)
    return _pick(spec, hw, grid, target, n_batch, a, "fewest GPUs, then highest precision")


def best_configuration(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object, context: object,
                       nodes: object = 1, weights: Sequence[str] | None = None,
                       kv_dtypes: Sequence[str] = SOLVER_KV_DTYPES, batch: object = 1,
                       assumptions: Assumptions | None = None) -> Configuration | None:
    """The best configuration for a given GPU count: the highest weight precision, then
    the highest KV precision, that holds ``context``; ``None`` if none does.

    >>> c = best_configuration(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=8, context="256K")
    >>> c.weights, c.kv_dtype
    ('q8', 'bf16')
    """
    a = _a(assumptions)
    spec, hw, target, ws, ks, n_batch = _solver_inputs(model, gpu, context, weights, kv_dtypes, batch)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes")
    choose_layout(spec, gpus=n, nodes=m)            # validates the layout, names the field
    ctx = np.append(context_grid(spec), target)
    grid = _grid(spec, hw, [(n, m)], ws, ks, ctx, batch=n_batch, assumptions=a)
    return _pick(spec, hw, grid, target, n_batch, a, f"highest precision on {n} GPUs")


def min_gpus(*, model: "str | ModelSpec", gpu: "str | GPUSpec", weights: str, kv_dtype: str, context: object,
             max_gpus: int = 64, batch: object = 1, assumptions: Assumptions | None = None) -> int | None:
    """Fewest GPUs (one pool, 1…``max_gpus``) that hold ``context`` at these precisions; one sweep.

    >>> min_gpus(model="kimi-k3@guide-000", gpu="h100-sxm", weights="bf16", kv_dtype="bf16", context="512K")
    11
    """
    a = _a(assumptions)
    spec, hw = _spec(model), _hw(gpu)
    target = parse_context_tokens(context, "context")
    res = sweep(models=[spec], gpus=[hw.id], counts=range(1, int(max_gpus) + 1), weights=[weights],
                kv_dtypes=[kv_dtype], contexts=[target], batch=parse_positive_int(batch, "batch"), assumptions=a)
    ok = np.flatnonzero(res.fits[0, 0, :, 0, 0, 0])
    return int(res.counts[ok[0]]) if len(ok) else None


# ----------------------------------------------------------------- step 1


@dataclass(frozen=True)
class Budget:
    """Step 1: total memory minus the per-GPU overhead."""

    gpu: str
    gpus: int
    memory_basis: str
    memory_per_gpu_bytes: int
    overhead_bytes: int
    total_bytes: int
    budget_bytes: int
    reason: str

    step = 1
    title = "Count your GPUs"

    @property
    def figure(self) -> str:
        return f"real budget {_gib(self.budget_bytes)}"


def step1_budget(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object,
                 assumptions: Assumptions | None = None) -> Budget:
    """Real budget $B = G·C_{gpu} - O$, with $O = G·8$ GiB unless the assumptions say otherwise.

    >>> step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=4).budget_bytes / 2**30
    288.0
    """
    a = _a(assumptions)
    spec, hw = _spec(model), _hw(gpu)
    n = parse_positive_int(gpus, "gpus")
    basis = _basis(spec, a)
    cap = hw.memory_bytes(basis)
    if a.overhead_per_gpu_bytes is not None:
        overhead, how = a.overhead_per_gpu_bytes * n, f"{n} × {_gib(a.overhead_per_gpu_bytes)}"
    elif a.overhead_total_bytes is not None:
        overhead, how = a.overhead_total_bytes, f"{_gib(a.overhead_total_bytes)} in total"
    elif isinstance(spec, PublishedProfile) and spec.overhead_per_gpu_bytes is not None:
        overhead, how = spec.overhead_per_gpu_bytes * n, f"{n} × {_gib(spec.overhead_per_gpu_bytes)}"
    else:
        overhead, how = GUIDE_OVERHEAD_PER_GPU_BYTES * n, f"{n} × 8.0 GiB (the guide's rule)"
    total = cap * n
    reason = (f"{n} × {_gib(cap)} ({basis} memory of a {hw.id}) = {_gib(total)}, minus {how} of overhead "
              f"= {_gib(total - overhead)}.")
    return Budget(hw.id, n, basis, cap, overhead, total, total - overhead, reason)


# ----------------------------------------------------------------- step 2


@dataclass(frozen=True)
class PrecisionChoice:
    """Step 2: the weight precision to start with."""

    weights: str | None
    weights_bytes: int | None
    weight_budget_bytes: int
    reserve_fraction: float
    fitting: tuple[str, ...]
    reason: str

    step = 2
    title = "Pick a precision"

    @property
    def figure(self) -> str:
        if self.weights is None:
            return "none fits"
        return f"{self.weights} ({_gib(self.weights_bytes)} of weights)"


def step2_precision(*, model: "str | ModelSpec", budget: Budget,
                    reserve_fraction: float = GUIDE_WEIGHT_RESERVE_FRACTION,
                    default: str = GUIDE_DEFAULT_WEIGHTS, assumptions: Assumptions | None = None) -> PrecisionChoice:
    """The guide's "start with Q4 unless you have 10+ H100s", generalized by memory.

    *Upgrade* to the model's full precision when its weights fit in $(1-r)·B$, the budget
    less the guide's reserve $r$ = 15 % ("Reserve 10-15% for KV cache and overhead"):
    for 10 H100s $0.85 · 720 = 612 ≥ 594$ GiB of BF16, for 9 $0.85 · 648 = 551 < 594$ —
    the guide's threshold falls out. Otherwise *start* with Q4 (the guide's best quality
    per GB) if it loads, i.e. weights + activation $< B$ (5 H100s: $325 + 10 < 360$), or
    with a higher precision that is no larger than Q4 (K3's native MXFP4 experts are
    smaller than a 4.5-bit Q4). Otherwise the highest precision that loads; else none.

    >>> b10 = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=10)
    >>> step2_precision(model="kimi-k3@guide-000", budget=b10).weights
    'bf16'
    >>> b4 = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=4)
    >>> step2_precision(model="kimi-k3@guide-000", budget=b4).weights
    'q2'
    """
    if not 0 <= reserve_fraction < 1:
        raise K3InputError("reserve_fraction", f"{reserve_fraction!r} must be in [0, 1)")
    a = _a(assumptions)
    spec = _spec(model)
    ladder = precision_ladder(spec)
    sizes = {w: weights_bytes(spec, w) for w in ladder}
    act = a.activation_bytes if a.activation_bytes is not None else activation_bytes(
        spec, batch=1, prefill_chunk_tokens=a.prefill_chunk_tokens)
    limit = int(budget.budget_bytes * (1 - reserve_fraction))
    fitting = tuple(w for w in ladder if sizes[w] <= limit)
    loads = tuple(w for w in ladder if sizes[w] + act < budget.budget_bytes)
    pct = f"{1 - reserve_fraction:.0%}"
    dflt = get_weight_format(default).id
    top = ladder[0]
    room = lambda x: _gib(budget.budget_bytes - sizes[x] - act)   # noqa: E731
    if top in fitting:
        w, why = top, (f"{top} ({_gib(sizes[top])}) fits in {pct} of the budget ({_gib(limit)}), so there is "
                       f"memory for full precision")
    elif dflt in loads:
        better = [x for x in ladder[:ladder.index(dflt)] if sizes[x] <= sizes[dflt]]
        if better:
            w = better[0]
            why = (f"{w} ({_gib(sizes[w])}) is no larger than the guide's {dflt} ({_gib(sizes[dflt])}) and loads "
                   f"with {room(w)} left for the KV cache")
        else:
            w = dflt
            others = [x for x in fitting if ladder.index(x) < ladder.index(dflt)]
            also = f"; {', '.join(others)} would also fit in {pct}" if others else ""
            why = (f"{top} ({_gib(sizes[top])}) does not fit in {pct} of the budget ({_gib(limit)}), so the guide's "
                   f"{dflt} ({_gib(sizes[dflt])}, {room(dflt)} left for the KV cache){also}")
    elif loads:
        w = loads[0]
        why = (f"{dflt} ({_gib(sizes.get(dflt, 0))}) plus activation does not load in {_gib(budget.budget_bytes)}; "
               f"{w} ({_gib(sizes[w])}) is the highest precision that does, with {room(w)} left for the KV cache")
    else:
        return PrecisionChoice(None, None, limit, reserve_fraction, (), (
            f"even {ladder[-1]} ({_gib(sizes[ladder[-1]])}) plus activation exceeds the real budget "
            f"({_gib(budget.budget_bytes)}): add GPUs."))
    return PrecisionChoice(w, sizes[w], limit, reserve_fraction, fitting, why + ".")


# ----------------------------------------------------------------- step 3


@dataclass(frozen=True)
class ContextLimit:
    """The largest context at one KV dtype."""

    kv_dtype: str
    kv_bytes_per_token: int
    kv_budget_bytes: int
    formula_context_tokens: int
    max_context_tokens: int
    method: str


@dataclass(frozen=True)
class ContextChoice:
    """Step 3: max context per KV dtype for the chosen weights."""

    weights: str | None
    limits: tuple[ContextLimit, ...]
    target_context_tokens: int | None
    reason: str

    step = 3
    title = "Set context length"

    def limit(self, kv_dtype: str) -> ContextLimit:
        kid = get_kv_dtype(kv_dtype).id
        for lim in self.limits:
            if lim.kv_dtype == kid:
                return lim
        raise K3InputError("kv_dtype", f"{kv_dtype!r} was not computed", ", ".join(x.kv_dtype for x in self.limits))

    @property
    def figure(self) -> str:
        return ", ".join(f"{x.kv_dtype} {format_context(x.max_context_tokens)}" for x in self.limits)


def step3_context(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object, weights: str | None,
                  budget: Budget, nodes: object = 1, kv_dtypes: Sequence[str] = GUIDE_KV_DTYPES,
                  target_context: object | None = None, batch: object = 1,
                  assumptions: Assumptions | None = None) -> ContextChoice:
    """Max context per KV dtype: $T_{max} = (B - W - A) / kv_{tok}$, capped at the model's maximum.

    A guide profile uses exactly that linear formula. An architecture uses k3lib's
    per-GPU KV (an MLA latent is replicated on every TP rank, pipeline stages split
    it, linear-attention state is a constant) through one sweep over a 1K-token grid;
    the linear figure is kept alongside in ``formula_context_tokens``.

    >>> b = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=6)
    >>> c = step3_context(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", budget=b)
    >>> format_context(c.limit("fp8").max_context_tokens)
    '776K'
    """
    a = _a(assumptions)
    spec, hw = _spec(model), _hw(gpu)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes")
    n_batch = parse_positive_int(batch, "batch")
    target = parse_context_tokens(target_context, "context") if target_context is not None else None
    kvs = _rank_kv(kv_dtypes)
    if weights is None:
        return ContextChoice(None, tuple(ContextLimit(k, kv_bytes_per_token(spec, k), 0, 0, 0, "none") for k in kvs),
                             target, "No precision fits, so there is no KV budget.")
    w = get_weight_format(weights).id
    w_bytes = weights_bytes(spec, w)
    act = a.activation_bytes if a.activation_bytes is not None else activation_bytes(
        spec, batch=n_batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
    kv_budget = budget.budget_bytes - w_bytes - act
    per_tok = {k: kv_bytes_per_token(spec, k) for k in kvs}
    formula = {k: max(0, kv_budget // (per_tok[k] * n_batch)) for k in kvs}
    if isinstance(spec, PublishedProfile):
        maxes = {k: min(formula[k], spec.max_context_tokens) for k in kvs}
        method = "guide formula"
    else:
        grid = _grid(spec, hw, [(n, m)], [w], kvs, context_grid(spec), batch=n_batch, assumptions=a)
        mx = grid.max_context()[0, 0]
        maxes = {k: int(mx[i]) for i, k in enumerate(kvs)}
        method = "k3lib per-GPU sweep"
    limits = tuple(ContextLimit(k, per_tok[k], kv_budget, int(formula[k]), int(maxes[k]), method) for k in kvs)
    parts = "; ".join(f"{k}: {per_tok[k]:,} B/token → {format_context(maxes[k])}" for k in kvs)
    if isinstance(spec, PublishedProfile):
        reason = (f"KV budget = {_gib(budget.budget_bytes)} − {_gib(w_bytes)} weights − {_gib(act)} activation "
                  f"= {_gib(kv_budget)}; {parts} (capped at {format_context(spec.max_context_tokens)}).")
    else:
        reason = (f"Per-GPU KV from k3lib on {n} GPUs (the linear formula on {_gib(kv_budget)} would give "
                  f"{format_context(formula[kvs[0]])} at {kvs[0]}); {parts} (1K grid, capped at "
                  f"{format_context(spec.max_context_tokens)}).")
    return ContextChoice(w, limits, target, reason)


# ----------------------------------------------------------------- step 4


@dataclass(frozen=True)
class Optimization:
    """One optimization and what it saves here (low, high), in total and per GPU."""

    name: str
    saves_bytes_total: tuple[int, int]
    saves_bytes_per_gpu: tuple[int, int]
    basis: str
    how: str
    reason: str


@dataclass(frozen=True)
class Optimizations:
    """Step 4: FlashAttention, PagedAttention, FP8 KV."""

    items: tuple[Optimization, ...]
    reason: str

    step = 4
    title = "Enable optimizations"

    def get(self, name: str) -> Optimization:
        for o in self.items:
            if o.name == name:
                return o
        raise K3InputError("optimization", f"{name!r} is not listed", ", ".join(o.name for o in self.items))

    @property
    def figure(self) -> str:
        return ", ".join(f"{o.name} {_range_gib(o.saves_bytes_total)}" for o in self.items)


def _range_gib(r: tuple[int, int]) -> str:
    lo, hi = r
    if lo == hi:
        return _gib(lo)
    return f"{lo / GiB:,.1f}–{hi / GiB:,.1f} GiB"


def step4_optimizations(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object, weights: str,
                        context: object, kv_dtype: str = "fp8", nodes: object = 1, batch: object = 1,
                        assumptions: Assumptions | None = None) -> Optimizations:
    """What each of the guide's three optimizations saves in this configuration.

    FP8 KV is derived: $KV_{bf16}(T) - KV_{fp8}(T)$ from k3lib (per GPU, replication
    included). FlashAttention (20–35 % of activation) and PagedAttention (5–12 % of
    total VRAM) are the guide's claims, not derived: k3lib models neither the
    attention matrix nor contiguous over-allocation.

    >>> o = step4_optimizations(model="kimi-k3@guide-000", gpu="h100", gpus=8, weights="q4", context="256K")
    >>> o.get("FP8 KV cache").saves_bytes_total[0] / 2**30
    32.0
    """
    a = _a(assumptions)
    common = dict(model=model, gpu=gpu, gpus=gpus, nodes=nodes, weights=weights, context=context, batch=batch,
                  assumptions=a)
    bf = make_plan(kv_dtype="bf16", **common)
    f8 = make_plan(kv_dtype="fp8", **common)
    cur = make_plan(kv_dtype=kv_dtype, **common)
    n = cur.gpus
    kv_total = bf.total.kv_cache_bytes - f8.total.kv_cache_bytes
    kv_gpu = bf.per_gpu.kv_cache_bytes - f8.per_gpu.kv_cache_bytes
    act = cur.total.activation_bytes
    fa = tuple(int(act * f) for f in GUIDE_FLASH_ATTENTION_SAVING)
    pa = tuple(int(cur.total.total_bytes * f) for f in GUIDE_PAGED_ATTENTION_SAVING)
    items = (
        Optimization("FlashAttention", fa, tuple(-(-x // n) for x in fa), "guide claim",
                     "on by default in vLLM; check the attention backend in the startup log",
                     f"The guide claims 20–35 % less activation memory; on {_gib(act)} of activation that is "
                     f"{_range_gib(fa)} (a claim, not derived)."),
        Optimization("PagedAttention", pa, tuple(-(-x // n) for x in pa), "guide claim",
                     "native in vLLM (its block allocator); nothing to switch on",
                     f"The guide claims 5–12 % of total VRAM; on this plan's {_gib(cur.total.total_bytes)} that is "
                     f"{_range_gib(pa)} (a claim, not derived: k3lib already sizes the KV cache exactly)."),
        Optimization("FP8 KV cache", (kv_total, kv_total), (kv_gpu, kv_gpu), "derived",
                     "--kv-cache-dtype fp8 (vLLM); check 'kv_cache_dtype=fp8' in the log",
                     f"Halving {_gib(bf.total.kv_cache_bytes)} of BF16 KV at {format_context(cur.context_tokens)} "
                     f"saves {_gib(kv_total)} ({_gib(kv_gpu)} per GPU)."),
    )
    reason = ("FP8 KV is derived from the model; the FlashAttention and PagedAttention figures are the guide's "
              "percentages applied to this plan.")
    return Optimizations(items, reason)


# ----------------------------------------------------------------- step 5


@dataclass(frozen=True)
class Trial:
    max_model_len: int
    loads: bool


@dataclass(frozen=True)
class TestSequence:
    """Step 5: the ``max_model_len`` values to try, with the predicted outcome of each."""

    __test__ = False   # not a pytest test class

    target_context_tokens: int
    predicted_max_context_tokens: int
    trials: tuple[Trial, ...]
    final_max_model_len: int
    reason: str

    step = 5
    title = "Test at 50 %"

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(t.max_model_len for t in self.trials)

    @property
    def figure(self) -> str:
        return " → ".join(f"{format_context(t.max_model_len)} {'loads' if t.loads else 'OOM'}" for t in self.trials)


def step5_test_sequence(*, target_context_tokens: int, predicted_max_context_tokens: int,
                        step_tokens: int = CONTEXT_STEP_TOKENS, max_trials: int = 16) -> TestSequence:
    """The guide's "test at 50 %": start at half the target; if it loads, double (up to
    the target); if it OOMs, reduce by 25 % (rounded down to ``step_tokens``) and retry;
    after an OOM the first load is the answer. Outcomes are predicted from
    ``predicted_max_context_tokens`` (step 3).

    >>> s = step5_test_sequence(target_context_tokens=262144, predicted_max_context_tokens=204800)
    >>> [format_context(v) for v in s.values], format_context(s.final_max_model_len)
    (['128K', '256K', '192K'], '192K')
    """
    target = parse_context_tokens(target_context_tokens, "context")
    pred = int(predicted_max_context_tokens)
    v = max(step_tokens, (target // 2) // step_tokens * step_tokens)
    trials: list[Trial] = []
    oom_seen = False
    if pred < step_tokens:          # nothing loads: one failed try says so
        trials.append(Trial(v, False))
    while pred >= step_tokens and len(trials) < max_trials:
        loads = v <= pred
        trials.append(Trial(v, loads))
        if loads:
            if oom_seen or v >= target:
                break
            v = min(2 * v, target)
        else:
            oom_seen = True
            nv = (v * 3 // 4) // step_tokens * step_tokens
            if nv < step_tokens:
                break
            v = nv
    final = max((t.max_model_len for t in trials if t.loads), default=0)
    if final >= target:
        runs = f"{len(trials)} run{'s' if len(trials) > 1 else ''}"
        reason = f"{format_context(target)} is predicted to load (max {format_context(pred)}); {runs} confirm it."
    elif final:
        reason = (f"The prediction caps context at {format_context(pred)}, so the sequence settles at "
                  f"{format_context(final)} below the {format_context(target)} target.")
    else:
        reason = "Nothing is predicted to load at any tried length: fix the weights or add GPUs first."
    return TestSequence(target, pred, tuple(trials), final, reason)


# ----------------------------------------------------------------- step 6


@dataclass(frozen=True)
class Throughput:
    """Step 6: the bandwidth ceiling on decode speed, and the guide's 5 tok/s check."""

    active_weight_bytes: int
    kv_read_bytes: int
    bytes_per_token: int
    bandwidth_bytes_per_s: int
    tokens_per_s: float
    threshold_tokens_per_s: float
    ceiling_below_threshold: bool
    interconnect: str
    command: str
    reason: str

    step = 6
    title = "Benchmark throughput"

    @property
    def figure(self) -> str:
        return f"≤ {self.tokens_per_s:,.1f} tok/s (bandwidth ceiling)"


def active_weight_bytes(model: "str | ModelSpec", weights: str) -> int:
    """Bytes of weights read per decoded token.

    Architecture: every group but the input embedding (a lookup) and the routed
    experts, plus $k/E$ of the routed experts, each at its own bits. Profile: the
    active parameter count (guide 004's 104B for K3 when the profile has none) × bits/8.

    >>> active_weight_bytes("kimi-k3@guide-000", "q4") / 1e9
    58.5
    """
    spec = _spec(model)
    fmt = get_weight_format(weights)
    if isinstance(spec, PublishedProfile):
        if fmt.is_native:
            raise K3InputError("weights", f"{spec.id} publishes per-tier figures; pick one", ", ".join(spec.tiers))
        active = spec.params_active or GUIDE_004_ACTIVE_PARAMS
        return int(round(active * fmt.bits_per_weight / 8))
    bits = weight_bits_by_group(spec, fmt)
    groups = spec.param_groups()
    m = spec.mlp
    frac = (m.experts_per_token / m.n_routed_experts) if m.n_routed_experts else 0.0
    total = 0.0
    for g, n in groups.items():
        if g == "embedding":
            continue
        b = bits.get(g, bits.get("*", 16))
        total += (n * frac if g == "routed_experts" else n) * b / 8
    return int(math.ceil(total))


def step6_throughput(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object, weights: str,
                     kv_dtype: str, context: object, nodes: object = 1, batch: object = 1,
                     assumptions: Assumptions | None = None) -> Throughput:
    """Decode ceiling $r = B · TP·bw / (W_{active} + KV_{read})$ tokens/s.

    Each token reads the active weights and the whole KV cache once. Under TP the
    ranks read in parallel; pipeline stages run one after another for one sequence,
    so the bandwidth that counts is $TP·bw$. $KV_{read}$ is what all GPUs read,
    replicated copies included. This is a ceiling: real decode is lower.

    >>> t = step6_throughput(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", kv_dtype="fp8",
    ...                      context="256K")
    >>> round(t.tokens_per_s)
    216
    """
    a = _a(assumptions)
    plan = make_plan(model=model, gpu=gpu, gpus=gpus, nodes=nodes, weights=weights, kv_dtype=kv_dtype,
                     context=context, batch=batch, assumptions=a)
    w_act = active_weight_bytes(plan.model, plan.weight_format)
    kv_read = plan.per_gpu.kv_cache_bytes * plan.tp * plan.pp
    per_tok = w_act + kv_read
    bw = plan.tp * plan.gpu.memory_bw_bytes_per_s
    rate = plan.batch * bw / per_tok
    below = rate < GUIDE_MIN_TOKENS_PER_S
    links = []
    if plan.nodes > 1:
        links.append(f"pipeline stages cross {plan.nodes} nodes over the network")
    if plan.gpu.scale_up_link_bytes_per_s is None and plan.tp > 1:
        links.append(f"{plan.gpu.id} has no NVLink-class link, so TP all-reduces go over PCIe")
    interconnect = "; ".join(links) or "TP inside one NVLink domain"
    pp_note = f" (PP={plan.pp}: stages take turns)" if plan.pp > 1 else ""
    if below:
        reason = (f"{w_act / GB:,.1f} GB of active weights + {kv_read / GB:,.1f} GB of KV per token over "
                  f"{bw / GB * 1e-3:,.1f} TB/s{pp_note} caps decode at {rate:,.2f} tok/s — below the guide's "
                  f"{GUIDE_MIN_TOKENS_PER_S:g} tok/s from bandwidth alone, so the interconnect is not the cause.")
    else:
        reason = (f"{w_act / GB:,.1f} GB of active weights + {kv_read / GB:,.1f} GB of KV per token over "
                  f"{bw / GB * 1e-3:,.1f} TB/s{pp_note} allow at most {rate:,.0f} tok/s; if you measure under "
                  f"{GUIDE_MIN_TOKENS_PER_S:g} tok/s, suspect the interconnect ({interconnect}) and run "
                  f"nvidia-smi topo -m.")
    return Throughput(w_act, kv_read, per_tok, bw, rate, GUIDE_MIN_TOKENS_PER_S, below, interconnect,
                      "nvidia-smi topo -m", reason)


# ----------------------------------------------------------------- step 7


@dataclass(frozen=True)
class AddOneGPU:
    """Step 7: the fewest GPUs that fit, and the production count (one more)."""

    weights: str | None
    kv_dtype: str
    context_tokens: int
    needed_gpus: int | None
    recommended_gpus: int | None
    layout: tuple[int, int] | None
    reason: str

    step = 7
    title = "Add one GPU"

    @property
    def figure(self) -> str:
        if self.needed_gpus is None:
            return "no count fits"
        return f"{self.needed_gpus} needed → buy {self.recommended_gpus}"


def step7_add_one_gpu(*, model: "str | ModelSpec", gpu: "str | GPUSpec", weights: str | None, kv_dtype: str,
                      context: object, batch: object = 1, max_gpus: int = 64,
                      assumptions: Assumptions | None = None) -> AddOneGPU:
    """Fewest GPUs at these precisions and context (:func:`min_gpus`, one sweep), plus one.

    >>> step7_add_one_gpu(model="kimi-k3@guide-000", gpu="h100", weights="q4", kv_dtype="fp8",
    ...                   context="256K").figure
    '6 needed → buy 7'
    """
    spec, hw = _spec(model), _hw(gpu)
    target = parse_context_tokens(context, "context")
    kid = get_kv_dtype(kv_dtype).id
    if weights is None:
        return AddOneGPU(None, kid, target, None, None, None, "No precision chosen in step 2, so no count to round up.")
    w = get_weight_format(weights).id
    need = min_gpus(model=spec, gpu=hw, weights=w, kv_dtype=kid, context=target, max_gpus=max_gpus, batch=batch,
                    assumptions=assumptions)
    if need is None:
        return AddOneGPU(w, kid, target, None, None, None,
                         f"No count up to {max_gpus} {hw.id} holds {w} + {kid} KV at {format_context(target)}.")
    rec = need + 1
    tp, pp, notes = choose_layout(spec, gpus=rec)
    layout_note = f" ({notes[0]})" if notes else ""
    reason = (f"{need} {hw.id} hold {w} + {kid} KV at {format_context(target)}; the guide's production rule "
              f"adds one: {rec} (TP={tp} PP={pp}){layout_note}.")
    return AddOneGPU(w, kid, target, need, rec, (tp, pp), reason)


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


def anti_patterns(plan: Plan, *, cpu_offload_bytes: int = 0, workload_context_tokens: object | None = None,
                  gpu_memory_utilization: float | None = None) -> tuple[AntiPattern, ...]:
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
        out.append(AntiPattern("cpu-offload-when-it-fits", (
            f"The plan fits in VRAM ({_gib(plan.per_gpu.headroom_bytes)} headroom per GPU) yet offloads "
            f"{_gib(cpu_offload_bytes)} to CPU: drop the offload flags; offloading costs 10–100× in speed (guide).")))
    if workload_context_tokens is not None:
        rec = recommended_context_tokens(workload_context_tokens)
        if plan.context_tokens > rec:
            smaller = make_plan(model=plan.model, gpu=plan.gpu, gpus=plan.gpus, nodes=plan.nodes, tp=plan.tp,
                                pp=plan.pp, weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=rec,
                                batch=plan.batch, assumptions=plan.assumptions)
            saved = plan.total.kv_cache_bytes - smaller.total.kv_cache_bytes
            out.append(AntiPattern("context-beyond-need", (
                f"max_model_len {format_context(plan.context_tokens)} is far beyond a "
                f"{format_context(parse_context_tokens(workload_context_tokens))} workload: "
                f"{format_context(rec)} would free {_gib(saved)} of KV cache.")))
    if gpu_memory_utilization is not None:
        u = float(gpu_memory_utilization)
        if not 0 < u <= 1:
            raise K3InputError("gpu_memory_utilization", f"{u!r} must be in (0, 1]")
        cap = plan.gpu.memory_bytes("usable")
        if u > 1 - ENGINE_RESERVE_FRACTION:
            out.append(AntiPattern("no-engine-reserve", (
                f"--gpu-memory-utilization {u:.2f} leaves {_gib((1 - u) * cap)} per GPU outside the engine "
                f"(under {ENGINE_RESERVE_FRACTION:.0%}): CUDA graphs, NCCL and other processes have no room; "
                f"stay at or below {1 - ENGINE_RESERVE_FRACTION:.2f}.")))
        if u * cap < plan.per_gpu.total_bytes:
            out.append(AntiPattern("utilization-below-need", (
                f"--gpu-memory-utilization {u:.2f} gives the engine {_gib(u * cap)} per GPU but the plan needs "
                f"{_gib(plan.per_gpu.total_bytes)}: vLLM will refuse max_model_len "
                f"{format_context(plan.context_tokens)}.")))
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

    @property
    def steps(self) -> tuple:
        return tuple(s for s in (self.budget, self.precision, self.context, self.optimizations,
                                 self.test_sequence, self.throughput, self.add_one) if s is not None)

    def to_frame(self):
        """One row per step: step, title, figure, reason."""
        import pandas as pd

        rows = [{"step": s.step, "title": s.title, "figure": s.figure, "reason": s.reason} for s in self.steps]
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "gpu": self.gpu, "gpus": self.gpus, "nodes": self.nodes,
                "context_tokens": self.context_tokens, "kv_dtype": self.kv_dtype,
                "steps": [{"step": s.step, "title": s.title, "figure": s.figure, "reason": s.reason}
                          for s in self.steps],
                "budget_bytes": self.budget.budget_bytes, "weights": self.precision.weights,
                "max_context_tokens": {x.kv_dtype: x.max_context_tokens for x in self.context.limits},
                "test_sequence": list(self.test_sequence.values),
                "tokens_per_s_ceiling": self.throughput.tokens_per_s if self.throughput else None,
                "needed_gpus": self.add_one.needed_gpus, "recommended_gpus": self.add_one.recommended_gpus,
                "recommended": self.recommended.to_dict() if self.recommended else None,
                "cheapest": self.cheapest.to_dict() if self.cheapest else None}


def run_checklist(*, model: "str | ModelSpec", gpu: "str | GPUSpec", gpus: object, context: object,
                  nodes: object = 1, kv_dtype: str = "fp8", batch: object = 1,
                  assumptions: Assumptions | None = None) -> Checklist:
    """Run the seven steps for an inventory (GPU type × count) and a target context.

    >>> c = run_checklist(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")
    >>> [s.step for s in c.steps], c.precision.weights, c.add_one.recommended_gpus
    ([1, 2, 3, 4, 5, 6, 7], 'q4', 7)
    """
    a = _a(assumptions)
    spec, hw = _spec(model), _hw(gpu)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes")
    choose_layout(spec, gpus=n, nodes=m)
    target = parse_context_tokens(context, "context")
    kid = get_kv_dtype(kv_dtype).id
    budget = step1_budget(model=spec, gpu=hw, gpus=n, assumptions=a)
    prec = step2_precision(model=spec, budget=budget, assumptions=a)
    ctx = step3_context(model=spec, gpu=hw, gpus=n, nodes=m, weights=prec.weights, budget=budget,
                        kv_dtypes=tuple(dict.fromkeys(GUIDE_KV_DTYPES + (kid,))), target_context=target,
                        batch=batch, assumptions=a)
    predicted = ctx.limit(kid).max_context_tokens
    seq = step5_test_sequence(target_context_tokens=target, predicted_max_context_tokens=predicted)
    opts = thr = None
    if prec.weights is not None:
        opts = step4_optimizations(model=spec, gpu=hw, gpus=n, nodes=m, weights=prec.weights, context=target,
                                   kv_dtype=kid, batch=batch, assumptions=a)
        run_ctx = min(target, predicted) if predicted else target
        thr = step6_throughput(model=spec, gpu=hw, gpus=n, nodes=m, weights=prec.weights, kv_dtype=kid,
                               context=run_ctx, batch=batch, assumptions=a)
    # Step 7 needs a precision even when none fits this inventory: then the smallest tier.
    add = step7_add_one_gpu(model=spec, gpu=hw, weights=prec.weights or precision_ladder(spec)[-1], kv_dtype=kid,
                            context=target, batch=batch, assumptions=a)
    rec = best_configuration(model=spec, gpu=hw, gpus=n, nodes=m, context=target, batch=batch, assumptions=a)
    cheap = cheapest_configuration(model=spec, gpu=hw, context=target, batch=batch, assumptions=a,
                                   max_gpus=max(16, n))
    return Checklist(spec.id, hw.id, n, m, target, kid, budget, prec, ctx, opts, seq, thr, add, rec, cheap)


# ----------------------------------------------------------------- widget callback


def checklist_frame(*, model: str, gpu: str, gpus: object, context: object, overhead_per_gpu_gib: float = 8.0,
                    kv_dtype: str = "fp8", nodes: object = 1):
    """The interactive form's callback: inventory in, one row per step out (a DataFrame
    with step, title, figure, reason), plus a row for the recommended configuration.
    Bad input gives a one-row frame naming the field instead of raising.

    >>> checklist_frame(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")["figure"].iloc[0]
    'real budget 432.0 GiB'
    """
    import pandas as pd

    try:
        try:
            oh = float(overhead_per_gpu_gib)
        except (TypeError, ValueError):
            raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} is not a number") from None
        if not math.isfinite(oh) or oh < 0:
            raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} must be ≥ 0")
        c = run_checklist(model=model, gpu=gpu, gpus=gpus, context=context, nodes=nodes, kv_dtype=kv_dtype,
                          assumptions=checklist_assumptions(int(round(oh * GiB))))
    except K3InputError as exc:
        return pd.DataFrame([{"step": 0, "title": "input error", "figure": exc.field, "reason": str(exc)}])
    df = c.to_frame()
    if c.recommended is not None:
        rec = {"step": 8, "title": "Recommended", "figure": c.recommended.label, "reason": c.recommended.reason}
    elif c.cheapest is not None:
        rec = {"step": 8, "title": "Recommended", "figure": c.cheapest.label,
               "reason": f"Nothing fits on {c.gpus} GPUs; {c.cheapest.reason}"}
    else:
        rec = {"step": 8, "title": "Recommended", "figure": "none",
               "reason": f"No configuration up to 16 {c.gpu} holds {format_context(c.context_tokens)}."}
    return pd.concat([df, pd.DataFrame([rec])], ignore_index=True)


def checklist_form(*, model: str = "kimi-k3@guide-000", gpu: str = "h100-sxm", gpus: int = 8,
                   context: str = "256K", overhead_per_gpu_gib: float = 8.0,
                   models: Sequence[str] = ("kimi-k3@guide-000", "kimi-k3"),
                   gpu_choices: Sequence[str] = CHEATSHEET_GPUS,
                   contexts: Sequence[str] = ("32K", "64K", "128K", "256K", "512K", "1M")):
    """An ipywidgets form (thin layer over :func:`checklist_frame`): change any input and
    the table of answers updates. Returns the widget box; ``box.children[-1]`` is the
    HTML output. Needs ipywidgets (imported lazily)."""
    import ipywidgets as w

    style = {"description_width": "9em"}
    inputs = dict(
        model=w.Dropdown(options=list(dict.fromkeys([model, *models])), value=model, description="model", style=style),
        gpu=w.Dropdown(options=list(dict.fromkeys([gpu, *gpu_choices])), value=gpu, description="GPU", style=style),
        gpus=w.IntSlider(value=int(gpus), min=1, max=32, description="GPUs", style=style),
        context=w.Dropdown(options=list(dict.fromkeys([context, *contexts])), value=context,
                           description="target context", style=style),
        overhead_per_gpu_gib=w.FloatText(value=float(overhead_per_gpu_gib), description="overhead/GPU (GiB)",
                                         style=style),
    )
    out = w.HTML()

    def update(_change=None) -> None:
        df = checklist_frame(**{k: v.value for k, v in inputs.items()})
        out.value = df.to_html(index=False, escape=True)

    for widget in inputs.values():
        widget.observe(update, names="value")
    update()
    return w.VBox([*inputs.values(), out])


# ----------------------------------------------------------------- cheat sheets


def cheatsheet(*, model: "str | ModelSpec", gpus: Sequence[str] = CHEATSHEET_GPUS,
               counts: Sequence[int] = CHEATSHEET_COUNTS, two_nodes: bool = True,
               precisions: Sequence[str] | None = None, kv_dtype: str = "fp8", batch: object = 1,
               step_tokens: int = CONTEXT_STEP_TOKENS, assumptions: Assumptions | None = None):
    """"GPU configuration cheat sheet: max context by hardware": one row per GPU × count
    (1–16, plus 2 nodes × 8), one column per precision; a cell is the largest context
    (1K-token grid up to the model's maximum) that fits, empty (``<NA>``) where the
    model will not load. Computed by one :func:`k3lib.core.sweep.sweep` per GPU list and
    node count over the whole grid.

    >>> df = cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])
    >>> row = df[(df.gpus == 6) & (df.nodes == 1)].iloc[0]
    >>> format_context(row["q4"]), bool(df[(df.gpus == 8)]["bf16"].isna().all())
    ('775K', True)
    """
    import pandas as pd

    a = _a(assumptions)
    spec = _spec(model)
    hws = [_hw(g) for g in gpus]
    ws = tuple(get_weight_format(w).id for w in (precisions or precision_ladder(spec)))
    kid = get_kv_dtype(kv_dtype).id
    n_batch = parse_positive_int(batch, "batch")
    rows = [(int(n), 1) for n in counts] + ([(16, 2)] if two_nodes else [])
    ctx = context_grid(spec, step_tokens)
    frames = []
    for nodes in sorted({m for _, m in rows}):
        cnt = [n for n, m in rows if m == nodes]
        res = sweep(models=[spec], gpus=[h.id for h in hws], counts=cnt, weights=list(ws), kv_dtypes=[kid],
                    contexts=ctx.tolist(), batch=n_batch, nodes=nodes, assumptions=a)
        fits = res.fits[0, :, :, :, 0, :]                                  # [G, N, P, C]
        last = fits.shape[-1] - 1 - np.argmax(fits[..., ::-1], axis=-1)
        mx = np.where(fits.any(axis=-1), ctx[last], 0)                     # [G, N, P]
        g_idx, n_idx = np.meshgrid(np.arange(len(hws)), np.arange(len(cnt)), indexing="ij")
        part = pd.DataFrame({"gpu": np.asarray([h.id for h in hws])[g_idx.ravel()],
                             "gpus": np.asarray(cnt)[n_idx.ravel()], "nodes": nodes})
        for pi, w in enumerate(ws):
            part[w] = pd.array(np.where(mx[:, :, pi].ravel() > 0, mx[:, :, pi].ravel(), 0), dtype="Int64")
            part.loc[part[w] == 0, w] = pd.NA
        frames.append(part)
    df = pd.concat(frames, ignore_index=True)
    layouts = {(n, m): choose_layout(spec, gpus=n, nodes=m)[:2] for n, m in rows}
    df.insert(3, "tp", [layouts[(n, m)][0] for n, m in zip(df.gpus, df.nodes)])
    df.insert(4, "pp", [layouts[(n, m)][1] for n, m in zip(df.gpus, df.nodes)])
    df.insert(0, "config", [f"{g} {m}×{n // m}" if m > 1 else f"{g} ×{n}" for g, n, m in zip(df.gpu, df.gpus, df.nodes)])
    order = {h.id: i for i, h in enumerate(hws)}
    df = df.sort_values(["gpu", "gpus", "nodes"], key=lambda s: s.map(order) if s.name == "gpu" else s,
                        ignore_index=True)
    df.attrs.update(model=spec.id, kv_dtype=kid, batch=n_batch, step_tokens=step_tokens, precisions=ws,
                    note=(f"max context (tokens) at {kid} KV, batch {n_batch}, 1K-token grid up to "
                          f"{format_context(spec.max_context_tokens)}; empty = will not load"))
    return df


def cheatsheet_gpus(gpu: "str | GPUSpec | None" = None) -> tuple[str, ...]:
    """The cheat sheet's GPUs, with ``gpu`` first when it is not one of them.

    >>> cheatsheet_gpus("a100")
    ('a100-sxm-80gb', 'h100-sxm', 'h200-sxm', 'b200', 'mi300x')
    """
    first = [_hw(gpu).id] if gpu is not None else []
    return tuple(dict.fromkeys([*first, *CHEATSHEET_GPUS]))


def cheatsheet_display(df, *, gpu: "str | GPUSpec | None" = None):
    """The cheat sheet with cells as ``256K`` labels and blanks where the model will not load
    (only ``gpu``'s rows when given)."""
    import pandas as pd

    out = df.copy()
    if gpu is not None:
        out = out[out["gpu"] == _hw(gpu).id].reset_index(drop=True)
    for col in df.attrs.get("precisions", ()):
        out[col] = ["" if pd.isna(v) else format_context(v) for v in out[col]]
    return out


def _isna(v) -> bool:
    import pandas as pd

    return bool(pd.isna(v))


def optimal_gpu_counts(*, model: "str | ModelSpec", gpu: "str | GPUSpec" = "h100-sxm",
                       contexts: Sequence[object] = ("64K", "128K", "256K", "512K", "1M"),
                       kv_dtype: str = "fp8", precisions: Sequence[str] | None = None, max_gpus: int = 64,
                       batch: object = 1, assumptions: Assumptions | None = None):
    """"Optimal GPU counts by precision": the fewest GPUs (one pool) per precision and
    context, and the production count (+1, the guide's rule). One sweep.

    >>> df = optimal_gpu_counts(model="kimi-k3@guide-000", contexts=["256K"])
    >>> int(df.loc["q4", ("256K", "minimum")]), int(df.loc["q4", ("256K", "production (+1)")])
    (6, 7)
    """
    import pandas as pd

    a = _a(assumptions)
    spec, hw = _spec(model), _hw(gpu)
    ws = tuple(get_weight_format(w).id for w in (precisions or precision_ladder(spec)))
    ctx = [parse_context_tokens(c, "contexts") for c in contexts]
    kid = get_kv_dtype(kv_dtype).id
    counts = np.arange(1, int(max_gpus) + 1)
    res = sweep(models=[spec], gpus=[hw.id], counts=counts.tolist(), weights=list(ws), kv_dtypes=[kid],
                contexts=ctx, batch=parse_positive_int(batch, "batch"), assumptions=a)
    fits = res.fits[0, 0, :, :, 0, :]                                   # [N, P, C]
    first = np.argmax(fits, axis=0)                                     # [P, C]
    minimum = np.where(fits.any(axis=0), counts[first], 0)
    res_ctx = list(res.contexts)
    cols, data = [], []
    for c in ctx:
        ci = res_ctx.index(c)
        for kind, add in (("minimum", 0), ("production (+1)", 1)):
            cols.append((format_context(c), kind))
            data.append([int(v) + add if v else None for v in minimum[:, ci]])
    df = pd.DataFrame({col: pd.array(vals, dtype="Int64") for col, vals in zip(cols, data)}, index=list(ws))
    df.columns = pd.MultiIndex.from_tuples(cols, names=["context", "GPUs"])
    df.index.name = "weights"
    df.attrs.update(model=spec.id, gpu=hw.id, kv_dtype=kid,
                    note=f"{hw.id}, {kid} KV, 8 GiB/GPU overhead unless overridden; empty = more than {max_gpus}")
    return df


# ----------------------------------------------------------------- priority matrix

#: The guide's levers in its recommended order: FlashAttention and PagedAttention (on by
#: default), FP8 KV, then max_model_len, then weight precision; CPU offload and batch 1
#: follow in its list's order ("Optimization Priority Matrix" and "7 Ways").
PRIORITY_LEVERS = (
    ("FlashAttention", "none: on by default in vLLM", "none"),
    ("PagedAttention", "none: vLLM's native allocator", "none"),
    ("FP8 KV cache", "one flag: --kv-cache-dtype fp8", "negligible (guide)"),
    ("shorter context", "one flag: --max-model-len", "none while prompts fit; longer prompts are rejected"),
    ("lower precision", "a new checkpoint to download and validate", "Q8 none, Q4 minor, Q2 significant (guide)"),
    ("CPU offload", "flags; emergency only (guide)", "none in output; 10–100× slower generation (guide)"),
    ("batch 1", "one flag: --max-num-seqs 1", "none; fewer concurrent requests"),
)


def _lower_precision(spec: ModelSpec, weights: str) -> str | None:
    ladder = precision_ladder(spec)
    w = get_weight_format(weights).id
    size = weights_bytes(spec, w)
    below = ladder[ladder.index(w) + 1:] if w in ladder else ladder
    for x in below:
        if weights_bytes(spec, x) < size:
            return x
    return None


def _routed_fraction(spec: ModelSpec) -> float:
    """Share of the weights in routed experts (K3's architecture stands in for a profile)."""
    arch = spec if isinstance(spec, Architecture) else get_model("kimi-k3")
    g = arch.param_groups()
    return g["routed_experts"] / sum(g.values())


def priority_matrix(plan: Plan, *, shorter_context: object | None = None, max_gpus: int = 64):
    """"Optimization priority matrix" for one configuration: each lever in the guide's
    order with the memory it saves here (per GPU and in total, GiB; a low–high range
    for the guide's percentage claims), the GPUs it saves (a vectorized :func:`min_gpus`
    per lever), its effort and quality cost, and whether the figure is derived or a claim.

    ``shorter_context`` defaults to half the plan's context. CPU offload's figure is
    the routed-expert weights (all of them moved to RAM), an upper bound.
    """
    import pandas as pd

    spec = plan.model
    a = plan.assumptions
    n = plan.gpus
    common = dict(model=spec, gpu=plan.gpu, gpus=n, nodes=plan.nodes, tp=plan.tp, pp=plan.pp, assumptions=a)
    short = parse_context_tokens(shorter_context, "shorter_context") if shorter_context is not None \
        else max(1024, plan.context_tokens // 2)

    def need(weights=plan.weight_format, kv=plan.kv_dtype, ctx=plan.context_tokens, batch=plan.batch):
        return min_gpus(model=spec, gpu=plan.gpu, weights=weights, kv_dtype=kv, context=ctx, batch=batch,
                        max_gpus=max_gpus, assumptions=a)

    base_need = need()

    def saved_gpus(k):
        if base_need is None or k is None:
            return None
        return base_need - k

    rows = []
    # FlashAttention, PagedAttention: the guide's percentages.
    act, tot = plan.total.activation_bytes, plan.total.total_bytes
    fa = [act * f for f in GUIDE_FLASH_ATTENTION_SAVING]
    pa = [tot * f for f in GUIDE_PAGED_ATTENTION_SAVING]
    rows.append(("FlashAttention", fa, "guide claim", None, "20–35 % of activation (guide)"))
    rows.append(("PagedAttention", pa, "guide claim", None, "5–12 % of total VRAM (guide)"))
    # FP8 KV
    if plan.kv_dtype == "bf16":
        f8 = make_plan(weights=plan.weight_format, kv_dtype="fp8", context=plan.context_tokens, batch=plan.batch,
                       **common)
        s = [plan.total.kv_cache_bytes - f8.total.kv_cache_bytes] * 2
        g = saved_gpus(need(kv="fp8"))
        note = f"BF16 → FP8 KV at {format_context(plan.context_tokens)}"
    else:
        bf = make_plan(weights=plan.weight_format, kv_dtype="bf16", context=plan.context_tokens, batch=plan.batch,
                       **common)
        s = [bf.total.kv_cache_bytes - plan.total.kv_cache_bytes] * 2
        k_bf = need(kv="bf16")
        g = (k_bf - base_need) if (k_bf is not None and base_need is not None) else None
        note = f"already {plan.kv_dtype}; shown: what it saves against BF16 KV"
    rows.append(("FP8 KV cache", s, "derived", g, note))
    # shorter context
    sp = make_plan(weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=short, batch=plan.batch, **common)
    rows.append(("shorter context", [plan.total.kv_cache_bytes - sp.total.kv_cache_bytes] * 2, "derived",
                 saved_gpus(need(ctx=short)),
                 f"{format_context(plan.context_tokens)} → {format_context(short)}"))
    # lower precision
    low = _lower_precision(spec, plan.weight_format)
    if low is None:
        rows.append(("lower precision", [0, 0], "derived", 0, f"{plan.weight_format} is already the lowest tier"))
    else:
        ws = plan.total.weights_bytes - weights_bytes(spec, low)
        rows.append(("lower precision", [ws, ws], "derived", saved_gpus(need(weights=low)),
                     f"{plan.weight_format} → {low}"))
    # CPU offload: routed experts to RAM (upper bound)
    frac = _routed_fraction(spec)
    off = plan.total.weights_bytes * frac
    rows.append(("CPU offload", [0, off], "derived (upper bound)", None,
                 f"up to all routed experts ({frac:.0%} of the weights) in RAM"))
    # batch 1
    if plan.batch > 1:
        b1 = make_plan(weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=plan.context_tokens, batch=1,
                       **common)
        s = [plan.total.total_bytes - b1.total.total_bytes] * 2
        rows.append(("batch 1", s, "derived", saved_gpus(need(batch=1)), f"batch {plan.batch} → 1"))
    else:
        b4 = make_plan(weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=plan.context_tokens, batch=4,
                       **common)
        rows.append(("batch 1", [0, 0], "derived", 0,
                     f"already batch 1; batch 4 would add {_gib(b4.total.total_bytes - plan.total.total_bytes)}"))
    meta = {name: (effort, quality) for name, effort, quality in PRIORITY_LEVERS}
    out = []
    for order, (name, (lo, hi), basis, g, note) in enumerate(rows, start=1):
        effort, quality = meta[name]
        out.append({"order": order, "lever": name,
                    "saved per GPU, low (GiB)": lo / n / GiB, "saved per GPU, high (GiB)": hi / n / GiB,
                    "saved in total, low (GiB)": lo / GiB, "saved in total, high (GiB)": hi / GiB,
                    "GPUs saved": g, "basis": basis, "effort": effort, "quality cost": quality, "note": note})
    df = pd.DataFrame(out)
    df["GPUs saved"] = pd.array(df["GPUs saved"].tolist(), dtype="Int64")
    for col in df.columns[2:6]:
        df[col] = df[col].astype(float)
    df.attrs.update(model=spec.id, gpu=plan.gpu.id, gpus=n, weights=plan.weight_format, kv_dtype=plan.kv_dtype,
                    context_tokens=plan.context_tokens, per_gpu_total_bytes=plan.per_gpu.total_bytes,
                    min_gpus=base_need)
    return df


@dataclass(frozen=True)
class OrderCheck:
    """Does the guide's order (FP8 KV first, precision last) pay off for this model?"""

    holds: bool
    fp8_kv_saved_bytes_per_gpu: float
    fp8_kv_share_of_gpu: float
    fp8_kv_gpus_saved: int | None
    lower_precision_saved_bytes_per_gpu: float
    lower_precision_gpus_saved: int | None
    findings: tuple[str, ...]


def _n_gpus(g: int | None) -> str:
    if g is None:
        return "an unknown number of GPUs"
    return "no GPU" if g == 0 else f"{g} GPU{'s' if abs(g) != 1 else ''}"


def check_priority_order(matrix) -> OrderCheck:
    """The guide calls FP8 KV "the single highest-impact, lowest-effort optimization"
    ("enough to drop from 10 GPUs to 8"). The order holds here when FP8 KV (a free,
    one-flag lever) saves at least one GPU; the findings give the figures either way.
    """
    row = matrix.set_index("lever")
    per_gpu_total = matrix.attrs.get("per_gpu_total_bytes") or 1
    f8 = float(row.loc["FP8 KV cache", "saved per GPU, high (GiB)"]) * GiB
    f8_g = row.loc["FP8 KV cache", "GPUs saved"]
    f8_g = None if _isna(f8_g) else int(f8_g)
    lp = float(row.loc["lower precision", "saved per GPU, high (GiB)"]) * GiB
    lp_g = row.loc["lower precision", "GPUs saved"]
    lp_g = None if _isna(lp_g) else int(lp_g)
    share = f8 / per_gpu_total
    holds = bool(f8_g is not None and f8_g >= 1)
    findings = [
        f"FP8 KV saves {_gib(f8)} per GPU ({share:.1%} of the {_gib(per_gpu_total)} each GPU holds) and "
        f"{_n_gpus(f8_g)}.",
        f"Lower precision saves {_gib(lp)} per GPU and {_n_gpus(lp_g)}.",
    ]
    model = matrix.attrs.get("model", "")
    if not holds:
        spec = get_model(model) if model else None
        if isinstance(spec, Architecture):
            findings.append(
                f"{spec.name}'s KV is only {spec.kv_bytes_per_token(2):,} B/token at BF16, so the weights dominate: "
                f"the guide's order is still the order of effort, but only precision or more GPUs move the fit.")
        else:
            findings.append("FP8 KV is still free to switch on, but here it does not change the GPU count.")
    else:
        findings.append("The guide's order holds: the free lever buys a GPU before precision is touched.")
    return OrderCheck(holds, f8, share, f8_g, lp, lp_g, tuple(findings))


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

    def mg(w, kv, ctx):
        return min_gpus(model=g, gpu=gpu, weights=w, kv_dtype=kv, context=ctx, assumptions=a)

    def p(**kw):
        kw.setdefault("assumptions", a)
        return make_plan(model=g, gpu=gpu, **kw)

    rows = []
    c128 = cheap("128K", weights=["q4"], kv_dtypes=["fp8"])
    c256 = cheap("256K", weights=["q4"], kv_dtypes=["fp8"])
    rows.append(("Q4 + FP8 KV at 128K–256K fits on 5–6 H100", "5–6 GPUs", c256.gpus,
                 f"128K: {c128.gpus} GPUs (up to {format_context(c128.max_context_tokens)}); "
                 f"256K: {c256.gpus} GPUs (up to {format_context(c256.max_context_tokens)})",
                 "reproduced" if (c128.gpus, c256.gpus) == (5, 6) else "shown wrong"))
    low = cheap("64K", kv_dtypes=["fp8"])
    h8 = p(gpus=low.gpus, weights=low.weights, kv_dtype="fp8", context="64K").total.headroom_bytes
    h48 = p(gpus=low.gpus, weights=low.weights, kv_dtype="fp8", context="64K",
            assumptions=worked).total.headroom_bytes
    rows.append(("minimum viable: 4× H100 at Q2 and 64K, ~28 GB headroom", "4 GPUs, ~28 GiB", low.gpus,
                 f"{low.gpus} GPUs at {low.weights}; headroom {_gib(h8)} at 8 GiB/GPU, {_gib(h48)} with the "
                 f"worked example's 48 GiB",
                 "count reproduced; the ~28 GiB needs 48 GiB of overhead" if low.gpus == 4 else "shown wrong"))
    b8 = step1_budget(model=g, gpu=gpu, gpus=8, assumptions=a)
    q8 = step3_context(model=g, gpu=gpu, gpus=8, weights="q8", budget=b8, kv_dtypes=("bf16", "fp8"),
                       assumptions=a)
    q8_512 = p(gpus=8, weights="q8", kv_dtype="bf16", context="512K")
    bf16_loads = weights_bytes(get_model(g), "bf16") < b8.budget_bytes
    rows.append(("8× H100: enough for Q8, not for BF16", "Q8 yes, BF16 no", 8,
                 f"BF16 weights {_gib(weights_bytes(get_model(g), 'bf16'))} > budget {_gib(b8.budget_bytes)}; Q8 "
                 f"holds up to {format_context(q8.limit('bf16').max_context_tokens)} at BF16 KV, "
                 f"{format_context(q8.limit('fp8').max_context_tokens)} at FP8; at 512K BF16 KV it needs "
                 f"{_gib(q8_512.per_gpu.total_bytes)} per GPU",
                 "reproduced (not at the guide's own 512K BF16-KV example)" if not bf16_loads else "shown wrong"))
    n_bf, n_f8 = mg("bf16", "bf16", "512K"), mg("bf16", "fp8", "512K")
    short = -p(gpus=10, weights="bf16", kv_dtype="bf16", context="512K").total.headroom_bytes
    rows.append(("BF16 + 512K needs at least 10× H100", "≥ 10 GPUs", n_bf,
                 f"{n_bf} at BF16 KV (10 is {_gib(short)} short); {n_f8} at FP8 KV",
                 "bound holds; the minimum is 11 at BF16 KV" if n_bf == 11 else
                 ("reproduced" if n_bf == 10 else "shown wrong")))
    q8_bf, q8_f8 = mg("q8", "bf16", "512K"), mg("q8", "fp8", "512K")
    rows.append(("FP8 KV at 512K saves 64 GB — enough to drop from 10 GPUs to 8", "10 → 8", n_bf - n_f8,
                 f"BF16 weights: {n_bf} → {n_f8}; Q8 weights: {q8_bf} → {q8_f8}",
                 "shown wrong: one GPU, not two" if n_bf - n_f8 == 1 else "reproduced"))
    return pd.DataFrame(rows, columns=["statement", "guide", "GPUs (computed)", "computed", "verdict"])
