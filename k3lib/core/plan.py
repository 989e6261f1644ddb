"""A deployment plan — THE one place a per-GPU number is computed. The CLI, notebooks,
reports, the solver, the sweep and the audit all read a :class:`Plan`.

For an architecture, every pipeline stage $s$ of whole layers gets one GPU's share:

$$m_{gpu,s} = \\frac{W^{shard}_s}{TP} + W^{rep}_s + X_s + KV_{rank,s}(T, B) + \\frac{A}{TP}
             + [g>1]·N_{nccl} + C_{ctx} + f·P_s$$

(sharded weights, replicated weights, routed experts ÷TP or ÷EP, the KV cache of the
stage's layers — GQA ÷min(TP, K), MLA latent replicated, linear state ÷TP — activation,
communicator buffers, CUDA context and fragmentation of the payload $P_s$). The
**fullest GPU** decides: ``Plan.per_gpu`` is its breakdown and ``Plan.fits`` its verdict.

A guide profile publishes no layer shapes, so it gets the guides' own policy, the even
split: $m_{gpu} = W/G + KV/(TP·PP) + A/G + O_{gpu}$.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.checkpoints import resolve_weights
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, MemoryBasis, get_gpu
from k3lib.core.kinds import kind_of
from k3lib.core.layout import Layout, check_tp, choose_layout, pipeline_stages
from k3lib.core.memory import (
    CUDA_CONTEXT_BYTES,
    DEFAULT_PREFILL_CHUNK_TOKENS,
    FRAGMENTATION_FRACTION,
    NCCL_BYTES_PER_GPU,
    activation_bytes,
    kv_bytes_per_rank,
    kv_cache_bytes,
    overhead_bytes_per_gpu,
    stage_weight_bytes_per_rank,
    weight_bits_by_group,
    weights_bytes,
)
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.precisions import KVDtype, WeightFormat, get_kv_dtype
from k3lib.core.units import format_bytes, parse_context_tokens, parse_positive_int

if TYPE_CHECKING:
    from k3lib.core.units import IntArray

COMPONENTS = ("weights", "kv_cache", "activation", "overhead")
#: Per-GPU components of a stage share, in the order tables and stacked bars show them.
SHARE_COMPONENTS = (
    "weights sharded",
    "weights replicated",
    "routed experts",
    "KV cache",
    "activation",
    "NCCL buffers",
    "runtime",
)


@dataclass(frozen=True)
class Assumptions:
    """Explicit, overridable assumptions. Sizes in bytes; ``None`` = model default."""

    activation_bytes: int | None = None
    overhead_per_gpu_bytes: int | None = None
    overhead_total_bytes: int | None = None
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES
    nccl_bytes: int = NCCL_BYTES_PER_GPU
    fragmentation_fraction: float = FRAGMENTATION_FRACTION
    memory_basis: MemoryBasis | None = None
    state_bytes_per_element: float = 4.0
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS

    def __post_init__(self) -> None:
        for name in ("activation_bytes", "overhead_per_gpu_bytes", "overhead_total_bytes"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise K3InputError(name.replace("_bytes", ""), f"{v!r} must be a non-negative byte count")
        for name in ("cuda_context_bytes", "nccl_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise K3InputError(name.replace("_bytes", ""), f"{v!r} must be a non-negative byte count")
        if self.overhead_per_gpu_bytes is not None and self.overhead_total_bytes is not None:
            raise K3InputError("overhead", "give overhead per GPU or in total, not both")
        if self.memory_basis not in (None, "marketed", "usable"):
            raise K3InputError("memory_basis", f"{self.memory_basis!r} is not known", "marketed, usable")
        if not 0 <= self.fragmentation_fraction < 1:
            raise K3InputError("fragmentation_fraction", f"{self.fragmentation_fraction!r} must be in [0, 1)")
        if not 0 < self.state_bytes_per_element <= 8:
            raise K3InputError("state_bytes_per_element", f"{self.state_bytes_per_element!r}", "0 < b ≤ 8")
        if not isinstance(self.prefill_chunk_tokens, int) or not 1 <= self.prefill_chunk_tokens <= 2**24:
            raise K3InputError("prefill_chunk_tokens", f"{self.prefill_chunk_tokens!r}", "1 … 16,777,216")


class _Headroom:
    """``available_bytes − total_bytes`` and whether it is ≥ 0 (shared by the result types)."""

    available_bytes: int

    @property
    def total_bytes(self) -> int:
        raise NotImplementedError  # each result type sums its own components

    @property
    def headroom_bytes(self) -> int:
        return self.available_bytes - self.total_bytes

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0


@dataclass(frozen=True)
class Breakdown(_Headroom):
    """Bytes by component, with capacity and headroom."""

    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    overhead_bytes: int
    available_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.overhead_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "activation_bytes": self.activation_bytes,
            "overhead_bytes": self.overhead_bytes,
            "total_bytes": self.total_bytes,
            "available_bytes": self.available_bytes,
            "headroom_bytes": self.headroom_bytes,
            "fits": self.fits,
        }


@dataclass(frozen=True)
class GPUShare(_Headroom):
    """What one GPU of pipeline stage ``stage`` holds (bytes); ``gpus`` GPUs hold the same."""

    stage: int
    layers: int
    gpus: int
    weights_sharded_bytes: int
    weights_replicated_bytes: int
    routed_experts_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    nccl_bytes: int
    runtime_bytes: int
    available_bytes: int

    @property
    def weights_bytes(self) -> int:
        return self.weights_sharded_bytes + self.weights_replicated_bytes + self.routed_experts_bytes

    @property
    def overhead_bytes(self) -> int:
        return self.nccl_bytes + self.runtime_bytes

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.overhead_bytes

    def breakdown(self) -> Breakdown:
        """The four components of this GPU."""
        return Breakdown(
            self.weights_bytes, self.kv_cache_bytes, self.activation_bytes, self.overhead_bytes, self.available_bytes
        )

    def components(self) -> dict[str, int]:
        """Bytes by :data:`SHARE_COMPONENTS`."""
        return dict(
            zip(
                SHARE_COMPONENTS,
                (
                    self.weights_sharded_bytes,
                    self.weights_replicated_bytes,
                    self.routed_experts_bytes,
                    self.kv_cache_bytes,
                    self.activation_bytes,
                    self.nccl_bytes,
                    self.runtime_bytes,
                ),
            )
        )


@dataclass(frozen=True)
class EngineVerdict:
    """What the engine a plan is for makes of it (built by :func:`k3lib.engines.deployment.plan_for_engine`;
    core only reads it). Its rules decide the verdict: ``per_gpu`` is the binding GPU as the
    engine sizes it — weights, the KV cache the request needs, the activation peak, the
    runtime (non-torch memory, CUDA context, graphs) — and ``available_bytes`` the engine's
    budget (vLLM: utilization × usable memory; SGLang: its static fraction; llama.cpp: the
    whole device), so ``headroom = budget − (W + KV + A + R)`` = the engine's KV headroom.

    ``settings``: the engine options the figures were computed with (the printed command
    carries exactly these); ``max_context_tokens``: the longest context (1K grid, up to the
    model's maximum) that ``batch`` sequences hold under the engine's rules, None when not
    searched; ``max_concurrency``: requests of ``context_tokens`` the KV cache holds at once.
    """

    engine: str
    name: str
    version: str
    settings: tuple[tuple[str, Any], ...]
    fits: bool
    reason: str
    per_gpu: Breakdown
    total: Breakdown
    kv_capacity_tokens: int
    max_concurrency: float
    max_context_tokens: int | None = None
    notes: tuple[str, ...] = ()
    estimate: Any = field(default=None, repr=False, compare=False)

    @property
    def basis(self) -> str:
        return f"{self.name} {self.version} rules"

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "name": self.name,
            "version": self.version,
            "basis": self.basis,
            "settings": dict(self.settings),
            "fits": self.fits,
            "reason": self.reason,
            "per_gpu": self.per_gpu.to_dict(),
            "total": self.total.to_dict(),
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "max_concurrency": self.max_concurrency,
            "max_context_tokens": self.max_context_tokens,
            "notes": list(self.notes),
            "estimate": self.estimate.to_dict() if self.estimate is not None else None,
        }


@dataclass(frozen=True)
class Plan:
    """The result of :func:`make_plan`: inputs, one :class:`GPUShare` per pipeline stage,
    the fullest GPU (``per_gpu``), totals over every GPU, and the verdict.

    A plan *for an engine* (:func:`k3lib.engines.deployment.plan_for_engine`) carries an
    :class:`EngineVerdict`: then the engine's rules decide ``fits``, ``reason``, ``per_gpu``
    and ``total``; the stage shares stay as the explanation of where the bytes go
    (``core_per_gpu``), and ``total`` is the engine's total over every GPU."""

    model: ModelSpec = field(repr=False)
    gpu: GPUSpec = field(repr=False)
    layout: Layout
    weight_format: str
    kv_dtype: str
    context_tokens: int
    batch: int
    assumptions: Assumptions
    memory_basis: MemoryBasis
    shares: tuple[GPUShare, ...]
    total: Breakdown
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    policy: str = "stages"
    engine: EngineVerdict | None = None
    #: k3lib's own totals when ``total`` holds the engine's (a plan for an engine)
    core_total: Breakdown | None = field(default=None, repr=False)

    # ---- layout shortcuts
    gpus = property(lambda self: self.layout.gpus)
    nodes = property(lambda self: self.layout.nodes)
    tp = property(lambda self: self.layout.tp)
    pp = property(lambda self: self.layout.pp)
    dp = property(lambda self: self.layout.dp)
    ep = property(lambda self: self.layout.ep)

    @property
    def peak(self) -> GPUShare:
        """The fullest GPU: it decides whether the plan fits."""
        return max(self.shares, key=lambda s: s.total_bytes)

    def core(self) -> Plan:
        """This plan by k3lib's component model alone (no engine verdict): for studies that
        compare it with other :func:`make_plan` plans, like with like."""
        if self.engine is None:
            return self
        return dataclasses.replace(self, engine=None, total=self.core_total or self.total, core_total=None)

    @property
    def core_per_gpu(self) -> Breakdown:
        """The fullest GPU by k3lib's component model (the explanation of the stage shares)."""
        return self.peak.breakdown()

    @property
    def per_gpu(self) -> Breakdown:
        """The fullest GPU's four components (the number every surface shows): the
        engine's binding GPU for a plan for an engine, else the fullest stage share."""
        return self.engine.per_gpu if self.engine is not None else self.peak.breakdown()

    @property
    def loads(self) -> bool:
        """False when something other than memory stops the plan (see ``problems``)."""
        return not self.problems

    @property
    def fits(self) -> bool:
        if self.engine is not None:
            return self.loads and self.engine.fits
        return self.loads and all(s.fits for s in self.shares)

    @property
    def headroom_bytes(self) -> int:
        """Spare bytes over all GPUs: available − needed (positive = room left, negative =
        short by that much); one sign convention on every surface (``per_gpu.headroom_bytes``
        is the fullest GPU's)."""
        return self.total.headroom_bytes

    @property
    def engine_id(self) -> str:
        """The rules that decide the verdict: an engine id, ``generic`` (k3lib's component
        model) or ``guide`` (a guide profile's own policy)."""
        if self.engine is not None:
            return self.engine.engine
        return "guide" if self.policy != "stages" else "generic"

    @property
    def verdict_basis(self) -> str:
        """Whose rules decide ``fits``, in words."""
        if self.engine is not None:
            return self.engine.basis
        if self.policy != "stages":
            return f"the guide's own policy ({self.policy}, {self.memory_basis} memory)"
        return "k3lib's generic component model (no engine)"

    @property
    def reason(self) -> str:
        """One sentence: why it fits, or what stops it and by how much."""
        pg, unit = self.per_gpu, "GiB"
        where = "on the fullest GPU" if len(self.shares) > 1 else "per GPU"
        if self.problems:
            return "does not fit: " + "; ".join(self.problems)
        if self.engine is not None:
            return self.engine.reason
        if self.fits:
            return (
                f"fits: {format_bytes(pg.total_bytes, unit)} {where} of {format_bytes(pg.available_bytes, unit)}, "
                f"{format_bytes(pg.headroom_bytes, unit)} headroom "
                f"({format_bytes(self.total.headroom_bytes, unit)} over {self.gpus} GPUs)"
            )
        parts = {
            "weights": pg.weights_bytes,
            "KV cache": pg.kv_cache_bytes,
            "activation": pg.activation_bytes,
            "overhead": pg.overhead_bytes,
        }
        biggest = max(parts, key=parts.__getitem__)
        if pg.weights_bytes > pg.available_bytes:
            why = f"the weights alone ({format_bytes(pg.weights_bytes, unit)} {where}) exceed the GPU"
        else:
            why = f"largest component: {biggest} ({format_bytes(parts[biggest], unit)} {where})"
        spare = self.total.headroom_bytes
        overall = (
            f"{format_bytes(-spare, unit)} short over all {self.gpus} GPUs"
            if spare < 0
            else f"though the {self.gpus} GPUs together have {format_bytes(spare, unit)} spare, on other stages"
        )
        return (
            f"does not fit: {format_bytes(pg.total_bytes, unit)} {where} needed, "
            f"{format_bytes(pg.available_bytes, unit)} available — short by "
            f"{format_bytes(-pg.headroom_bytes, unit)} {where} ({overall}); {why}"
        )

    def verdict(self, unit: str = "GiB") -> str:
        """``FITS``/``DOES NOT FIT`` with the layout and the reason, one line."""
        head = f"{self.gpus}× {self.gpu.name}, {self.layout.describe()}"
        return f"{'FITS' if self.fits else 'DOES NOT FIT'} — {head}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: sizes are integers in bytes; ``per_gpu`` is the fullest GPU."""
        out = self.total.to_dict()
        out.update(
            {
                "fits": self.fits,
                "per_gpu": self.per_gpu.to_dict(),
                "stages": [
                    dataclasses.asdict(s) | {"total_bytes": s.total_bytes, "headroom_bytes": s.headroom_bytes}
                    for s in self.shares
                ],
                "reason": self.reason,
                "problems": list(self.problems),
                "policy": self.policy,
                "model": self.model.id,
                "model_kind": self.model.kind,
                "gpu": self.gpu.id,
                "gpus": self.gpus,
                "nodes": self.nodes,
                "tp": self.tp,
                "pp": self.pp,
                "dp": self.dp,
                "ep": self.ep,
                "weights": self.weight_format,
                "kv_dtype": self.kv_dtype,
                "context_tokens": self.context_tokens,
                "batch": self.batch,
                "memory_basis": self.memory_basis,
                "assumptions": {k: v for k, v in asdict(self.assumptions).items()},
                "notes": list(self.notes),
                "engine": self.engine_id,
                "verdict_basis": self.verdict_basis,
                "core_per_gpu": self.core_per_gpu.to_dict(),
            }
        )
        if self.engine is not None:
            e = self.engine
            out.update(
                {
                    "engine_settings": dict(e.settings),
                    "kv_capacity_tokens": e.kv_capacity_tokens,
                    "max_concurrency": e.max_concurrency,
                    "max_context_tokens": e.max_context_tokens,
                    "engine_estimate": e.to_dict(),
                }
            )
        return out


def memory_basis_for(model: ModelSpec, assumptions: Assumptions) -> MemoryBasis:
    """The one capacity rule: what the engine can use (``usable``: e.g. 79.19 GiB of an
    H100 under vLLM) for every model, except a guide profile that states the marketed
    figure (``marketed``: 80 GiB), unless an assumption overrides it."""
    if assumptions.memory_basis:
        return assumptions.memory_basis
    return model.memory_basis if isinstance(model, PublishedProfile) else "usable"


def fixed_overhead(model: ModelSpec, assumptions: Assumptions, *, gpus: int) -> tuple[int, int] | None:
    """(per GPU, total) overhead bytes when an assumption or a guide profile fixes it,
    first match wins: assumed per GPU, assumed total, profile per GPU, profile total.
    A total spreads as $\\lceil O/G \\rceil$ per GPU. None: the component rule
    (:func:`k3lib.core.memory.overhead_bytes_per_gpu`)."""
    model_per_gpu = model_total = None
    if isinstance(model, PublishedProfile):
        model_per_gpu, model_total = model.overhead_per_gpu_bytes, model.overhead_total_bytes
    for per_gpu, total in (
        (assumptions.overhead_per_gpu_bytes, None),
        (None, assumptions.overhead_total_bytes),
        (model_per_gpu, None),
        (None, model_total),
    ):
        if per_gpu is not None:
            return per_gpu, per_gpu * gpus
        if total is not None:
            return -(-total // gpus), total
    return None


# ---------------------------------------------------------------- stage arithmetic (array-aware)


@dataclass(frozen=True)
class StageWeights:
    """Context-independent bytes of one GPU of a stage (weights and activation)."""

    stage: int
    layers: int
    sharded: int
    replicated: int
    routed: int
    activation: int


def stage_weights(
    spec: Architecture, layout: Layout, fmt: WeightFormat, *, activation_total_bytes: int, weights_scale: float = 1.0
) -> tuple[StageWeights, ...]:
    """The weights and activation of one GPU per stage (see the module docstring); a
    ``weights_scale`` ≠ 1 rescales every weight component to exact file bytes."""
    bits = weight_bits_by_group(spec, fmt)
    stages = pipeline_stages(spec, layout.pp)
    act = -(-activation_total_bytes // layout.tp)
    out = []
    for s, st in enumerate(stages):
        sh, rep, routed = stage_weight_bytes_per_rank(
            spec, st, bits=bits, first=s == 0, last=s == layout.pp - 1, pp=layout.pp, tp=layout.tp, ep=layout.ep
        )
        if weights_scale != 1.0:
            whole = round((sh + rep + routed) * weights_scale)
            rep, routed = round(rep * weights_scale), round(routed * weights_scale)
            sh = whole - rep - routed if layout.gpus == 1 else math.ceil(sh * weights_scale)
        out.append(StageWeights(s, st.num_layers, sh, rep, routed, act))
    return tuple(out)


@overload
def stage_totals_bytes(
    spec: Architecture,
    layout: Layout,
    weights: tuple[StageWeights, ...],
    *,
    context_tokens: int,
    batch: int,
    kv_bytes_per_element: float,
    a: Assumptions,
) -> list[tuple[int, int, int]]: ...
@overload
def stage_totals_bytes(
    spec: Architecture,
    layout: Layout,
    weights: tuple[StageWeights, ...],
    *,
    context_tokens: IntArray,
    batch: int,
    kv_bytes_per_element: float,
    a: Assumptions,
) -> list[tuple[IntArray, int, IntArray]]: ...
def stage_totals_bytes(
    spec: Architecture,
    layout: Layout,
    weights: tuple[StageWeights, ...],
    *,
    context_tokens: int | IntArray,
    batch: int,
    kv_bytes_per_element: float,
    a: Assumptions,
) -> Sequence[tuple[int | IntArray, int, int | IntArray]]:
    """Per stage: (KV per GPU, NCCL, runtime) — arrays when ``context_tokens`` is one.
    The same code serves :func:`make_plan` (scalars) and :mod:`k3lib.core.sweep` (arrays)."""
    stages = pipeline_stages(spec, layout.pp)
    seq_batch = -(-batch // layout.dp)
    fixed = fixed_overhead(spec, a, gpus=layout.gpus)
    out = []
    for w, st in zip(weights, stages):
        kv = kv_bytes_per_rank(
            st,
            context_tokens=context_tokens,
            batch=seq_batch,
            bytes_per_element=kv_bytes_per_element,
            tp=layout.tp,
            state_bytes_per_element=a.state_bytes_per_element,
        )
        if fixed is not None:
            nccl, runtime = 0, fixed[0] + 0 * kv
        else:
            nccl = a.nccl_bytes if layout.comm_group > 1 else 0
            payload = w.sharded + w.replicated + w.routed + w.activation + kv
            runtime = overhead_bytes_per_gpu(
                tp=1,
                payload_bytes_per_gpu=payload,
                nccl_bytes=0,
                cuda_context_bytes=a.cuda_context_bytes,
                fragmentation_fraction=a.fragmentation_fraction,
            )
        out.append((kv, nccl, runtime))
    return out


@overload
def profile_share_bytes(
    spec: PublishedProfile,
    layout: Layout,
    *,
    weights_total_bytes: int,
    kv_total_bytes: int,
    activation_total_bytes: int,
    a: Assumptions,
) -> tuple[int, int, int, int]: ...
@overload
def profile_share_bytes(
    spec: PublishedProfile,
    layout: Layout,
    *,
    weights_total_bytes: int,
    kv_total_bytes: IntArray,
    activation_total_bytes: int,
    a: Assumptions,
) -> tuple[int, IntArray, int, IntArray]: ...
def profile_share_bytes(
    spec: PublishedProfile,
    layout: Layout,
    *,
    weights_total_bytes: int,
    kv_total_bytes: int | IntArray,
    activation_total_bytes: int,
    a: Assumptions,
) -> tuple[int, int | IntArray, int, int | IntArray]:
    """The guides' even split for a profile: (weights, KV, activation, overhead) per GPU,
    KV array-aware: $\\lceil W/G \\rceil$, $\\lceil KV/(TP·PP) \\rceil$, $\\lceil A/G \\rceil$, $O_{gpu}$."""
    g = layout.gpus
    w = -(-weights_total_bytes // g)
    kv_per_gpu = -(-np.asarray(kv_total_bytes, dtype=np.int64) // (layout.tp * layout.pp))
    kv: int | IntArray = int(kv_per_gpu) if np.ndim(kv_per_gpu) == 0 else kv_per_gpu
    act = -(-activation_total_bytes // g)
    fixed = fixed_overhead(spec, a, gpus=g)
    if fixed is not None:
        oh = fixed[0] + 0 * kv
    else:
        oh = overhead_bytes_per_gpu(
            tp=layout.comm_group,
            payload_bytes_per_gpu=w + kv + act,
            cuda_context_bytes=a.cuda_context_bytes,
            nccl_bytes=a.nccl_bytes,
            fragmentation_fraction=a.fragmentation_fraction,
        )
    return w, kv, act, oh


def activation_total_bytes(spec: ModelSpec, layout: Layout, batch: int, a: Assumptions) -> int:
    """Activation of the whole model: the assumption, or the rule for the sequences of one
    attention copy ($\\lceil B/DP \\rceil$)."""
    if a.activation_bytes is not None:
        return a.activation_bytes
    return activation_bytes(spec, batch=-(-batch // layout.dp), prefill_chunk_tokens=a.prefill_chunk_tokens)


# ---------------------------------------------------------------- the plan


def _layout_notes(spec: ModelSpec, layout: Layout, hw: GPUSpec) -> list[str]:
    notes = list(layout.topology_notes(hw.gpus_per_node))
    if isinstance(spec, Architecture):
        if any(kind_of(g).latent for g in spec.attention) and layout.tp > 1:
            notes.append("MLA latent cache replicated on every TP rank: TP does not shrink it")
        for g in spec.attention:
            if kind_of(g).grouped_kv and layout.tp > g.kv_heads:
                notes.append(
                    f"TP={layout.tp} > {g.kv_heads} KV heads: KV heads replicated, KV split only {g.kv_heads} ways"
                )
                break
    else:
        notes.append(
            f"guide profile: weights, KV and activation split evenly over {layout.gpus} GPUs, as the guide does"
        )
    return notes


def make_plan(
    *,
    model: str | ModelSpec = "kimi-k3",
    gpu: str | GPUSpec = "h100-sxm",
    gpus: object = 8,
    weights: str = "native",
    kv_dtype: str = "bf16",
    context: object = 262144,
    batch: object = 1,
    nodes: object = None,
    tp: object = None,
    pp: object = None,
    dp: object = 1,
    ep: object = 1,
    layout: Layout | None = None,
    assumptions: Assumptions | None = None,
    weights_total_bytes: int | None = None,
    extra_notes: tuple[str, ...] = (),
) -> Plan:
    """Validate inputs and compute a :class:`Plan`. Bad input raises a
    :class:`~k3lib.core.errors.K3InputError` (a ``ValueError``) naming the field.

    With no ``nodes``/``tp``/``pp`` the layout is the deployable one
    (:func:`k3lib.core.layout.deployable_layout`, nodes of the GPU's ``gpus_per_node``).
    ``weights_total_bytes``: exact weight bytes (from a checkpoint or GGUF file) that replace
    the formula's, spread over the stages in the formula's proportions.
    """
    spec = get_model(model)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    n_batch = parse_positive_int(batch, "batch")
    ctx = parse_context_tokens(context, "context")
    fmt, published_bytes, ckpt = resolve_weights(spec, weights)
    kvd = get_kv_dtype(kv_dtype)
    a = assumptions or Assumptions()
    per_node = hw.gpus_per_node
    if layout is None:
        n_gpus = parse_positive_int(gpus, "gpus")
        layout = choose_layout(
            spec,
            gpus=n_gpus,
            gpus_per_node=per_node,
            nodes=parse_positive_int(nodes, "nodes") if nodes is not None else None,
            tp=parse_positive_int(tp, "tp") if tp is not None else None,
            pp=parse_positive_int(pp, "pp") if pp is not None else None,
            dp=parse_positive_int(dp, "dp"),
            ep=parse_positive_int(ep, "ep"),
        )
    else:
        check_tp(spec, layout.tp)
    if isinstance(spec, PublishedProfile) and fmt.is_native:
        raise K3InputError("weights", f"{spec.id} publishes per-tier figures; pick one", ", ".join(spec.tiers))
    basis = memory_basis_for(spec, a)
    cap = hw.memory_bytes(basis)
    for name, value in (
        ("overhead_per_gpu", a.overhead_per_gpu_bytes),
        ("overhead_total", None if a.overhead_total_bytes is None else -(-a.overhead_total_bytes // layout.gpus)),
    ):
        if value is not None and value >= cap:
            raise K3InputError(
                name,
                f"{format_bytes(value, 'GiB')} per GPU is more than a {hw.name} holds ({format_bytes(cap, 'GiB')})",
                f"less than {format_bytes(cap, 'GiB')} per GPU",
            )
    notes = _layout_notes(spec, layout, hw) + list(extra_notes)
    if ckpt is not None and weights_total_bytes is None and published_bytes is not None:
        weights_total_bytes = published_bytes
        notes.append(f"weights: {ckpt.label} ({ckpt.repo}), {published_bytes:,} bytes as published")
    weight_id = ckpt.id if ckpt is not None else fmt.id
    problems = []
    if ctx > spec.max_context_tokens:
        problems.append(f"context {ctx:,} tokens exceeds the model's maximum of {spec.max_context_tokens:,}")
    act_total = activation_total_bytes(spec, layout, n_batch, a)
    kv_total = kv_cache_bytes(
        spec, context_tokens=ctx, batch=n_batch, kv_dtype=kvd, state_bytes_per_element=a.state_bytes_per_element
    )

    if isinstance(spec, PublishedProfile):
        if layout.dp > 1 or layout.ep > 1:
            raise K3InputError(
                "layout", f"{spec.id} publishes no layer shapes; DP and EP need an architecture", "TP and PP only"
            )
        w_total = weights_total_bytes or weights_bytes(spec, fmt)
        w, kv, act, oh = profile_share_bytes(
            spec, layout, weights_total_bytes=w_total, kv_total_bytes=kv_total, activation_total_bytes=act_total, a=a
        )
        shares: tuple[GPUShare, ...] = (GPUShare(0, 0, layout.gpus, w, 0, 0, kv, act, 0, oh, cap),)
        fixed = fixed_overhead(spec, a, gpus=layout.gpus)
        total = Breakdown(w_total, kv_total, act_total, fixed[1] if fixed else oh * layout.gpus, cap * layout.gpus)
        return Plan(
            spec,
            hw,
            layout,
            weight_id,
            kvd.id,
            ctx,
            n_batch,
            a,
            basis,
            shares,
            total,
            tuple(notes),
            tuple(problems),
            policy="even split (guide profile)",
        )

    if layout.ep > 1 and not spec.mlp.moe_layers:
        raise K3InputError("ep", f"{spec.name} has no routed experts to spread", "1 for a dense model")
    scale = 1.0
    if weights_total_bytes is not None:
        scale = weights_total_bytes / weights_bytes(spec, fmt)
    sw = stage_weights(spec, layout, fmt, activation_total_bytes=act_total, weights_scale=scale)
    per_stage = stage_totals_bytes(
        spec, layout, sw, context_tokens=ctx, batch=n_batch, kv_bytes_per_element=kvd.bytes_per_element, a=a
    )
    shares = tuple(
        GPUShare(
            w.stage,
            w.layers,
            layout.stage_gpus,
            w.sharded,
            w.replicated,
            w.routed,
            int(kv),
            w.activation,
            int(nccl),
            int(rt),
            cap,
        )
        for w, (kv, nccl, rt) in zip(sw, per_stage)
    )
    n = layout.stage_gpus
    total = Breakdown(
        sum(s.weights_bytes for s in shares) * n,
        sum(s.kv_cache_bytes for s in shares) * n,
        sum(s.activation_bytes for s in shares) * n,
        sum(s.overhead_bytes for s in shares) * n,
        cap * layout.gpus,
    )
    return Plan(
        spec, hw, layout, weight_id, kvd.id, ctx, n_batch, a, basis, shares, total, tuple(notes), tuple(problems)
    )


def kv_bytes_per_gpu(
    model: ModelSpec,
    *,
    kv_total_bytes: int,
    context_tokens: int,
    batch: int,
    kv_dtype: str | KVDtype,
    tp: int,
    pp: int = 1,
    state_bytes_per_element: float = 4.0,
) -> int:
    """One GPU's KV share, all layers on one stage when ``pp`` = 1 (the fullest stage's
    share otherwise): a profile's even split $KV/(TP·PP)$, or
    :func:`k3lib.core.memory.kv_bytes_per_rank` per stage."""
    if isinstance(model, PublishedProfile):
        return -(-kv_total_bytes // (tp * pp))
    b = get_kv_dtype(kv_dtype).bytes_per_element
    return max(
        kv_bytes_per_rank(
            st,
            context_tokens=context_tokens,
            batch=batch,
            bytes_per_element=b,
            tp=tp,
            state_bytes_per_element=state_bytes_per_element,
        )
        for st in pipeline_stages(model, pp)
    )
