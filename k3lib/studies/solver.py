"""The solver: which deployable configuration holds a context — fewest GPUs first, then
the best checkpoint the engine can load, then the highest KV precision.

A configuration someone can launch: whole nodes (TP inside a node, PP across nodes; see
:func:`k3lib.core.layout.deployable_layout`), a checkpoint that exists for the engine
(:func:`k3lib.core.checkpoints.checkpoints_for`; a guide profile keeps its tiers), and the
bytes of :func:`k3lib.core.plan.make_plan` (read through the vectorized sweep, which
computes the same numbers for a whole grid of GPU counts × checkpoints × contexts).

Defaults: a guide profile is sized with its guide's rules (8 GiB of overhead per GPU,
marketed memory); a real architecture with k3lib's measured rules (the same defaults as
``k3plan estimate``), so every surface gives one answer.

>>> c = cheapest_configuration(model="kimi-k3", gpu="h200", context="256K", kv_dtypes=["fp8"])
>>> c.gpus, c.label
(16, '2 nodes × 8 h200-sxm, weights native, KV fp8, context 256K (TP=8 PP=2, vllm)')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from k3lib.core.checkpoints import checkpoints_for
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.layout import Layout, choose_layout
from k3lib.core.memory import weights_bytes
from k3lib.core.models import ModelSpec, PublishedProfile, get_model, get_profile
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.search import candidate_gpu_counts, context_grid_tokens, gpus_per_node_of, min_gpus_plan
from k3lib.core.sweep import sweep
from k3lib.core.units import GiB, context_label, parse_context_tokens, parse_positive_int

if TYPE_CHECKING:
    from k3lib.engines.deployment import EngineSettings
    from k3lib.loaders import LoadedModel

# ----------------------------------------------------------------- the guide's figures
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
#: Grid step of the max-context searches: 1K tokens.
CONTEXT_STEP_TOKENS = 1024
#: vLLM's KV dtypes, highest precision first (what the solver may choose from by default).
SOLVER_KV_DTYPES = ("bf16", "fp8")
#: Cheat-sheet hardware: the guide's H100 and the next three HBM parts in k3lib's catalogue.
CHEATSHEET_GPUS = ("h100-sxm", "h200-sxm", "b200", "mi300x")
CHEATSHEET_MAX_GPUS = 32
#: Share of the GPU an engine must keep outside ``--gpu-memory-utilization`` (CUDA context,
#: allocations outside the caching allocator, other processes). A stated rule: vLLM's
#: default 0.9 keeps 10 %; above 0.95 we call the reserve gone.
ENGINE_RESERVE_FRACTION = 0.05


def capped_claim_bytes(fractions: Sequence[float], of_bytes: float, cap_bytes: float) -> tuple[float, float]:
    """A guide's percentage claim applied to ``of_bytes`` and capped at ``cap_bytes``:
    $s_i = \\min(f_i \\cdot B_{of},\\ B_{cap})$ for the low and high fraction.

    A lever cannot save more than the memory it acts on: PagedAttention can at most save
    the KV cache's fragmentation (cap = the KV cache), FlashAttention at most the
    activation (cap = the activation), whatever percentage of another quantity the guide
    quotes.

    >>> capped_claim_bytes((0.05, 0.12), 100, 8)
    (5.0, 8)
    """
    lo, hi = (f * of_bytes for f in fractions)
    return min(lo, cap_bytes), min(hi, cap_bytes)


def guide_overhead_per_gpu_bytes() -> int:
    """Guide 000's "subtract at least 8 GB per GPU from your available VRAM" (GB read as GiB),
    read from its profile (``data/profiles/kimi-k3@guide-000.json``), not re-typed here."""
    value = get_profile("kimi-k3@guide-000").overhead_per_gpu_bytes
    if value is None:
        raise K3InputError("overhead_per_gpu", "guide 000's profile states no overhead per GPU")
    return value


def guide004_active_params() -> int:
    """Guide 004's "104B active per token", from its profile — for profiles without an active count."""
    value = get_profile("kimi-k3@guide-004").params_active
    if value is None:
        raise K3InputError("params_active", "guide 004's profile states no active parameter count")
    return value


def checklist_assumptions(overhead_per_gpu_bytes: int | None = None) -> Assumptions:
    """The checklist's guide assumptions: a flat overhead per GPU (default guide 000's 8 GiB)."""
    if overhead_per_gpu_bytes is None:
        overhead_per_gpu_bytes = guide_overhead_per_gpu_bytes()
    return Assumptions(overhead_per_gpu_bytes=overhead_per_gpu_bytes)


def _a(assumptions: Assumptions | None, spec: ModelSpec | None = None) -> Assumptions:
    """The assumptions given, else the model's own defaults: a guide profile is sized with
    the guide's 8 GiB per GPU; an architecture with k3lib's measured rule (as ``estimate``)."""
    if assumptions is not None:
        return assumptions
    if spec is not None and not isinstance(spec, PublishedProfile):
        return Assumptions()
    return checklist_assumptions()


#: contexts as labels (``'256K'``): :func:`k3lib.core.units.context_label`, under the name the
#: studies have always used
format_context = context_label


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GiB:,.1f} GiB"


def _spec(model: Any) -> ModelSpec:
    """The model spec of a built-in id, a spec, or a user's loaded file (its architecture)."""
    if hasattr(model, "require_architecture"):
        return model.require_architecture()
    return get_model(model)


def _is_engine(engine: Any) -> bool:
    """True when ``engine`` (an id or an EngineSettings) is a real engine whose rules decide
    (not k3lib's generic model or a guide's policy)."""
    return _engine_id(engine) not in ("generic", "guide", "k3lib", "default")


def _engine_id(engine: Any) -> str:
    return str(getattr(engine, "engine", engine)).strip().lower()


def _checkpoint_engine(engine: Any) -> str:
    """Whose checkpoints the ladder lists: the engine's; vLLM's for k3lib's generic model or a guide's policy."""
    eid = _engine_id(engine)
    return "vllm" if eid in ("generic", "guide", "k3lib", "default") else eid


def _hw(gpu: str | GPUSpec) -> GPUSpec:
    return gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)


# ----------------------------------------------------------------- precisions


def precision_ladder(model: str | ModelSpec, engine: str = "vllm") -> tuple[str, ...]:
    """The weights the solver may choose from, best quality first.

    A guide profile: its published tiers (as k3lib format ids), by bits per weight.
    An architecture: the checkpoints ``engine`` can load for it
    (:func:`k3lib.core.checkpoints.checkpoints_for`), e.g. K3 on vLLM: the native
    checkpoint and RedHat's FP8-BLOCK; on llama.cpp: unsloth's published GGUF files.

    >>> precision_ladder("kimi-k3@guide-000")
    ('bf16', 'q8', 'q4', 'q2')
    >>> precision_ladder("kimi-k3")
    ('native', 'fp8-block')
    >>> precision_ladder("kimi-k3", engine="llama.cpp")[:3]
    ('ud-q8_k_xl', 'ud-q4_k_xl', 'ud-q2_k_xl')
    """
    if hasattr(model, "require_architecture"):  # the user's own file: its own weights, nothing else exists
        return ("native",)
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
        return tuple(sorted(dict.fromkeys(ids), key=lambda f: -get_weight_format(f).bits))
    ckpts = checkpoints_for(spec, engine)
    size = {c.id: (c.file_bytes or weights_bytes(spec, c.weight_format)) for c in ckpts}
    # best quality first: the native checkpoint, then by size (bigger = more bits)
    return tuple(sorted(size, key=lambda c: (c != "native", -size[c])))


def _rank_kv(kv_dtypes: Sequence[str]) -> tuple[str, ...]:
    return tuple(get_kv_dtype(k).id for k in kv_dtypes)


# ----------------------------------------------------------------- vectorized grid


@dataclass(frozen=True)
class _Grid:
    """Fits and per-GPU totals over (GPU count, weights, KV dtype, context)."""

    counts: tuple[int, ...]
    layouts: tuple[Layout, ...]
    weights: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    contexts: np.ndarray
    fits: np.ndarray
    total_bytes_per_gpu: np.ndarray
    available_bytes_per_gpu: np.ndarray

    def max_context(self) -> np.ndarray:
        """[count, weights, kv]: the largest context of the grid that fits; 0 = does not load."""
        c = self.fits.shape[-1]
        last = c - 1 - np.argmax(self.fits[..., ::-1], axis=-1)
        return np.where(self.fits.any(axis=-1), self.contexts[last], 0)


def _grid(
    spec: ModelSpec,
    hw: GPUSpec,
    counts: Sequence[int],
    weights: Sequence[str],
    kv_dtypes: Sequence[str],
    contexts: Iterable[int],
    *,
    batch: int,
    assumptions: Assumptions,
    nodes: int | None = None,
) -> _Grid:
    """One :func:`k3lib.core.sweep.sweep` call over deployable counts (or ``nodes`` nodes)."""
    counts = tuple(int(n) for n in counts)
    ctx = np.asarray(sorted(set(int(c) for c in contexts)), dtype=np.int64)
    res = sweep(
        models=[spec],
        gpus=[hw.id],
        counts=list(counts),
        weights=list(weights),
        kv_dtypes=list(kv_dtypes),
        contexts=ctx.tolist(),
        batch=batch,
        nodes=nodes,
        assumptions=assumptions,
    )
    per_node = gpus_per_node_of(hw)
    layouts = tuple(choose_layout(spec, gpus=n, nodes=nodes, gpus_per_node=per_node) for n in counts)
    return _Grid(
        counts,
        layouts,
        tuple(res.weights),
        _rank_kv(kv_dtypes),
        ctx,
        res.fits[0, 0],
        res.total_bytes_per_gpu[0, 0],
        res.available_bytes_per_gpu[0, 0],
    )


def context_grid(model: str | ModelSpec, step_tokens: int = CONTEXT_STEP_TOKENS) -> np.ndarray:
    """Contexts ``step, 2·step, …`` up to the model's maximum (1K steps to 1M: 1,024 points)."""
    return context_grid_tokens(_spec(model), step_tokens)


# ----------------------------------------------------------------- solver


@dataclass(frozen=True)
class Configuration:
    """One configuration the solver picked: hardware, layout, checkpoint, engine, target
    context, the fullest GPU's total there and the largest context (1K grid) it holds."""

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
    engine: str = "vllm"
    #: the model object planned (a user's LoadedModel; None = the built-in ``model`` id)
    source: Any = field(default=None, repr=False, compare=False)
    #: the plan for the engine the configuration was verified with (None for the guide's/generic policy)
    engine_plan: Any = field(default=None, repr=False, compare=False)

    @property
    def headroom_bytes_per_gpu(self) -> int:
        return self.available_bytes_per_gpu - self.total_bytes_per_gpu

    @property
    def fits(self) -> bool:
        return self.headroom_bytes_per_gpu >= 0

    @property
    def label(self) -> str:
        where = (
            f"{self.nodes} nodes × {self.gpus // self.nodes} {self.gpu}"
            if self.nodes > 1
            else f"{self.gpus}× {self.gpu}"
        )
        return (
            f"{where}, weights {self.weights}, KV {self.kv_dtype}, "
            f"context {format_context(self.context_tokens)} (TP={self.tp} PP={self.pp}, {self.engine})"
        )

    def plan(self) -> Plan:
        """The full :class:`~k3lib.core.plan.Plan` of this configuration: the plan for its
        engine it was verified with, or (guide policy, generic model) one make_plan call."""
        if self.engine_plan is not None:
            return self.engine_plan
        return make_plan(
            model=self.model,
            gpu=self.gpu,
            gpus=self.gpus,
            nodes=self.nodes,
            weights=self.weights,
            kv_dtype=self.kv_dtype,
            context=self.context_tokens,
            batch=self.batch,
            assumptions=self.assumptions,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "tp": self.tp,
            "pp": self.pp,
            "weights": self.weights,
            "kv_dtype": self.kv_dtype,
            "engine": self.engine,
            "context_tokens": self.context_tokens,
            "batch": self.batch,
            "total_bytes_per_gpu": self.total_bytes_per_gpu,
            "available_bytes_per_gpu": self.available_bytes_per_gpu,
            "headroom_bytes_per_gpu": self.headroom_bytes_per_gpu,
            "max_context_tokens": self.max_context_tokens,
            "reason": self.reason,
        }


def _pick(
    spec: ModelSpec, hw: GPUSpec, grid: _Grid, target: int, batch: int, a: Assumptions, why: str, engine: str
) -> Configuration | None:
    ti = int(np.searchsorted(grid.contexts, target))
    hits = np.argwhere(grid.fits[..., ti])  # C order = (count, precision, KV) order
    if not len(hits):
        return None
    r, p, k = (int(x) for x in hits[0])
    n, lay = grid.counts[r], grid.layouts[r]
    total = int(grid.total_bytes_per_gpu[r, p, k, ti])
    avail = int(grid.available_bytes_per_gpu[r, p, k, ti])
    mx = int(grid.max_context()[r, p, k])
    w, kv = grid.weights[p], grid.kv_dtypes[k]
    reason = (
        f"{why}: {n}× {hw.id} ({lay.describe()}) at weights {w} and KV {kv} needs {_gib(total)} of "
        f"{_gib(avail)} on the fullest GPU at {format_context(target)} ({_gib(avail - total)} headroom) "
        f"and holds up to {format_context(mx)}."
    )
    return Configuration(
        spec.id, hw.id, n, lay.nodes, lay.tp, lay.pp, w, kv, target, batch, total, avail, mx, reason, a, engine
    )


def _engine_pick(
    model: Any,
    spec: ModelSpec,
    hw: GPUSpec,
    counts: Sequence[int],
    ws: Sequence[str],
    ks: Sequence[str],
    target: int,
    batch: int,
    engine: str | EngineSettings,
    why: str,
    nodes: int | None = None,
) -> Configuration | None:
    """The first (count, checkpoint, KV dtype), in preference order, whose plan for ``engine``
    fits by that engine's rules (:func:`k3lib.engines.deployment.plan_for_engine`), with
    its maximum context under the same rules."""
    import dataclasses

    from k3lib.engines.deployment import EngineSettings, engine_max_context_tokens, plan_for_engine

    for n in counts:
        for w in ws:
            for kv in ks:
                try:
                    p = plan_for_engine(
                        model=model,
                        engine=engine,
                        gpu=hw,
                        gpus=n,
                        nodes=nodes,
                        weights=w,
                        kv_dtype=kv,
                        context=target,
                        batch=batch,
                        with_limits=False,
                    )
                except K3InputError:
                    continue
                if not p.fits:
                    continue
                verdict = p.engine
                assert verdict is not None  # plan_for_engine always sets it
                settings = engine if isinstance(engine, EngineSettings) else EngineSettings(verdict.engine)
                mx = engine_max_context_tokens(model, p, settings, weights=w, kv_dtype=kv)
                verdict = dataclasses.replace(verdict, max_context_tokens=mx)
                p = dataclasses.replace(p, engine=verdict)
                pg = p.per_gpu
                reason = (
                    f"{why}: {n}× {hw.id} ({p.layout.describe()}) at weights {p.weight_format} and KV "
                    f"{p.kv_dtype}: {p.reason}; holds up to {format_context(mx)} by "
                    f"{verdict.name}'s rules."
                )
                return Configuration(
                    spec.id,
                    hw.id,
                    n,
                    p.nodes,
                    p.tp,
                    p.pp,
                    p.weight_format,
                    p.kv_dtype,
                    target,
                    batch,
                    pg.total_bytes,
                    pg.available_bytes,
                    mx,
                    reason,
                    p.assumptions,
                    verdict.engine,
                    source=model if model is not spec else None,
                    engine_plan=p,
                )
    return None


def _solver_inputs(model, gpu, context, weights, kv_dtypes, batch, engine):
    spec, hw = _spec(model), _hw(gpu)
    target = parse_context_tokens(context, "context")
    ws = tuple(
        weights
        or precision_ladder(model if hasattr(model, "require_architecture") else spec, _checkpoint_engine(engine))
    )
    ks = _rank_kv(kv_dtypes)
    n_batch = parse_positive_int(batch, "batch")
    return spec, hw, target, ws, ks, n_batch


def cheapest_configuration(
    *,
    model: str | ModelSpec | LoadedModel,
    gpu: str | GPUSpec,
    context: object,
    weights: Sequence[str] | None = None,
    kv_dtypes: Sequence[str] = SOLVER_KV_DTYPES,
    max_gpus: int = 32,
    engine: str | EngineSettings = "vllm",
    batch: object = 1,
    assumptions: Assumptions | None = None,
) -> Configuration | None:
    """The cheapest deployable configuration that holds ``context``: fewest GPUs (one node,
    then whole nodes), then the best checkpoint (``weights`` in preference order, default
    :func:`precision_ladder` for ``engine``), then the highest KV precision. ``None`` if
    nothing up to ``max_gpus`` fits. One vectorized sweep, so the answer carries its max
    context too.

    >>> c = cheapest_configuration(model="kimi-k3@guide-000", gpu="h100-sxm", context="256K",
    ...                            weights=["q4"], kv_dtypes=["fp8"])
    >>> c.gpus, format_context(c.max_context_tokens)
    (6, '775K')
    """
    spec, hw, target, ws, ks, n_batch = _solver_inputs(model, gpu, context, weights, kv_dtypes, batch, engine)
    a = _a(assumptions, spec)
    counts = candidate_gpu_counts(spec, hw, max_gpus=parse_positive_int(max_gpus, "max_gpus"))
    if target > spec.max_context_tokens or not counts:
        return None
    if _is_engine(engine) and not isinstance(spec, PublishedProfile):
        return _engine_pick(
            model, spec, hw, counts, ws, ks, target, n_batch, engine, "fewest GPUs, then highest precision"
        )
    ctx = np.append(context_grid(spec), target)
    grid = _grid(spec, hw, counts, ws, ks, ctx, batch=n_batch, assumptions=a)
    return _pick(spec, hw, grid, target, n_batch, a, "fewest GPUs, then highest precision", _engine_id(engine))


def best_configuration(
    *,
    model: str | ModelSpec | LoadedModel,
    gpu: str | GPUSpec,
    gpus: object,
    context: object,
    nodes: object = None,
    weights: Sequence[str] | None = None,
    kv_dtypes: Sequence[str] = SOLVER_KV_DTYPES,
    engine: str | EngineSettings = "vllm",
    batch: object = 1,
    assumptions: Assumptions | None = None,
) -> Configuration | None:
    """The best configuration for a given GPU count: the best checkpoint, then the highest
    KV precision, that holds ``context``; ``None`` if none does.

    >>> c = best_configuration(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=8, context="256K")
    >>> c.weights, c.kv_dtype
    ('q8', 'bf16')
    """
    spec, hw, target, ws, ks, n_batch = _solver_inputs(model, gpu, context, weights, kv_dtypes, batch, engine)
    a = _a(assumptions, spec)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes") if nodes is not None else None
    choose_layout(spec, gpus=n, nodes=m, gpus_per_node=gpus_per_node_of(hw))  # validates, names the field
    if target > spec.max_context_tokens:
        return None
    if _is_engine(engine) and not isinstance(spec, PublishedProfile):
        return _engine_pick(
            model, spec, hw, [n], ws, ks, target, n_batch, engine, f"highest precision on {n} GPUs", nodes=m
        )
    ctx = np.append(context_grid(spec), target)
    grid = _grid(spec, hw, [n], ws, ks, ctx, batch=n_batch, assumptions=a, nodes=m)
    return _pick(spec, hw, grid, target, n_batch, a, f"highest precision on {n} GPUs", _engine_id(engine))


def min_gpus(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    weights: str,
    kv_dtype: str,
    context: object,
    max_gpus: int = 256,
    batch: object = 1,
    whole_nodes: bool = True,
    assumptions: Assumptions | None = None,
) -> int | None:
    """Fewest GPUs that hold ``context`` at these precisions: deployable counts (one node,
    then whole nodes), or with ``whole_nodes=False`` any count in one pool (the guides'
    own reading, for auditing their arithmetic). One sweep (:func:`k3lib.core.search.min_gpus_plan`).

    >>> min_gpus(model="kimi-k3@guide-000", gpu="h100-sxm", weights="bf16", kv_dtype="bf16", context="512K")
    16
    >>> min_gpus(model="kimi-k3@guide-000", gpu="h100-sxm", weights="bf16", kv_dtype="bf16", context="512K",
    ...          whole_nodes=False)
    11
    """
    spec = _spec(model)
    p = min_gpus_plan(
        model=spec,
        gpu=gpu,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
        max_gpus=max_gpus,
        whole_nodes=whole_nodes,
        assumptions=_a(assumptions, spec),
    )
    return None if p is None else p.gpus
