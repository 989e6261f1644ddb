"""A deployment plan: model + hardware + layout + precisions + context → a frozen
:class:`Plan` with totals, a per-GPU breakdown, headroom and a verdict.

Per GPU (even split over $G = TP·PP$ GPUs unless a component is replicated):

$$m_{gpu} = W/G + KV_{rank} + A/G + O_{gpu} \\le C_{gpu}$$

Under tensor parallelism a GQA cache splits by KV head only while $TP \\le K$
(beyond that heads are replicated), an MLA latent is replicated on every TP
rank, and linear-attention state splits by head.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from k3lib.core.architecture import Architecture
from k3lib.core.memory import (DEFAULT_PREFILL_CHUNK_TOKENS, activation_bytes, kv_cache_bytes, overhead_bytes_per_gpu,
                         weights_bytes)
from k3lib.core.errors import DoesNotSplitError, K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import GiB, format_bytes, parse_context_tokens, parse_positive_int, parse_size_bytes

COMPONENTS = ("weights", "kv_cache", "activation", "overhead")


@dataclass(frozen=True)
class Assumptions:
    """Explicit, overridable assumptions. Sizes in bytes; ``None`` = model default."""

    activation_bytes: int | None = None
    overhead_per_gpu_bytes: int | None = None
    overhead_total_bytes: int | None = None
    cuda_context_bytes: int = GiB
    nccl_bytes_per_peer: int = GiB // 2
    fragmentation_fraction: float = 0.05
    memory_basis: str | None = None
    state_bytes_per_element: float = 4.0
    prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS

    def __post_init__(self) -> None:
        for name in ("activation_bytes", "overhead_per_gpu_bytes", "overhead_total_bytes"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise K3InputError(name.replace("_bytes", ""), f"{v!r} must be a non-negative byte count")
        if self.overhead_per_gpu_bytes is not None and self.overhead_total_bytes is not None:
            raise K3InputError("overhead", "give overhead per GPU or in total, not both")
        if self.memory_basis not in (None, "marketed", "usable"):
            raise K3InputError("memory_basis", f"{self.memory_basis!r} is not known", "marketed, usable")
        if not 0 <= self.fragmentation_fraction < 1:
            raise K3InputError("fragmentation_fraction", f"{self.fragmentation_fraction!r} must be in [0, 1)")


@dataclass(frozen=True)
class Breakdown:
    """Bytes by component, with capacity and headroom."""

    weights_bytes: int
    kv_cache_bytes: int
    activation_bytes: int
    overhead_bytes: int
    available_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.overhead_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.available_bytes - self.total_bytes

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0

    def to_dict(self) -> dict[str, Any]:
        return {"weights_bytes": self.weights_bytes, "kv_cache_bytes": self.kv_cache_bytes,
                "activation_bytes": self.activation_bytes, "overhead_bytes": self.overhead_bytes,
                "total_bytes": self.total_bytes, "available_bytes": self.available_bytes,
                "headroom_bytes": self.headroom_bytes, "fits": self.fits}


@dataclass(frozen=True)
class Plan:
    """The result of :func:`make_plan`: inputs, totals over all GPUs, one GPU's share."""

    model: ModelSpec = field(repr=False)
    gpu: GPUSpec = field(repr=False)
    gpus: int
    nodes: int
    tp: int
    pp: int
    weight_format: str
    kv_dtype: str
    context_tokens: int
    batch: int
    assumptions: Assumptions
    memory_basis: str
    total: Breakdown
    per_gpu: Breakdown
    notes: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.per_gpu.fits and self.total.fits

    @property
    def headroom_bytes(self) -> int:
        return self.total.headroom_bytes

    @property
    def reason(self) -> str:
        """One sentence: why it fits or which component overflows by how much."""
        pg = self.per_gpu
        parts = {"weights": pg.weights_bytes, "KV cache": pg.kv_cache_bytes,
                 "activation": pg.activation_bytes, "overhead": pg.overhead_bytes}
        biggest = max(parts, key=parts.get)
        unit = "GiB"
        if self.fits:
            return (f"fits: {format_bytes(pg.total_bytes, unit)} per GPU of {format_bytes(pg.available_bytes, unit)}, "
                    f"{format_bytes(pg.headroom_bytes, unit)} headroom per GPU "
                    f"({format_bytes(self.total.headroom_bytes, unit)} over {self.gpus} GPUs)")
        over = -pg.headroom_bytes
        if pg.weights_bytes > pg.available_bytes:
            why = f"the weights alone ({format_bytes(pg.weights_bytes, unit)} per GPU) exceed the GPU"
        else:
            why = f"largest component: {biggest} ({format_bytes(parts[biggest], unit)} per GPU)"
        return (f"does not fit: {format_bytes(pg.total_bytes, unit)} per GPU needed, "
                f"{format_bytes(pg.available_bytes, unit)} available — over by {format_bytes(over, unit)} per GPU "
                f"({format_bytes(-self.total.headroom_bytes, unit)} over {self.gpus} GPUs); {why}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: sizes are integers in bytes."""
        out = self.total.to_dict()
        out.update({
            "fits": self.fits,
            "per_gpu": self.per_gpu.to_dict(),
            "reason": self.reason,
            "model": self.model.id, "model_kind": self.model.kind, "gpu": self.gpu.id,
            "gpus": self.gpus, "nodes": self.nodes, "tp": self.tp, "pp": self.pp,
            "weights": self.weight_format, "kv_dtype": self.kv_dtype,
            "context_tokens": self.context_tokens, "batch": self.batch,
            "memory_basis": self.memory_basis,
            "assumptions": {k: v for k, v in asdict(self.assumptions).items()},
            "notes": list(self.notes),
        })
        return out


def valid_tp_sizes(model: ModelSpec, limit: int = 1024) -> tuple[int, ...]:
    """TP sizes that divide every head count of the model (any size for a profile)."""
    if isinstance(model, PublishedProfile):
        return tuple(range(1, limit + 1))
    return _common_divisors(model.head_counts(), limit)


@lru_cache(maxsize=None)
def _common_divisors(counts: tuple[int, ...], limit: int) -> tuple[int, ...]:
    return tuple(t for t in range(1, limit + 1) if all(c % t == 0 for c in counts))


def choose_layout(model: ModelSpec, *, gpus: int, nodes: int = 1, tp: int | None = None,
                  pp: int | None = None) -> tuple[int, int, tuple[str, ...]]:
    """(tp, pp, notes). Default: TP inside a node, PP across nodes; when the model's
    heads cannot be split ``gpus/nodes`` ways, the largest TP that divides them and
    the rest as pipeline stages."""
    notes: list[str] = []
    if gpus % nodes:
        raise K3InputError("nodes", f"{gpus} GPUs cannot be spread evenly over {nodes} nodes",
                           "a divisor of the GPU count")
    allowed = valid_tp_sizes(model, max(gpus, 128))
    if tp is not None:
        if tp not in allowed:
            raise DoesNotSplitError("tp", f"{model.name} cannot be split {tp}-way by tensor parallelism "
                                    f"(heads: {', '.join(map(str, getattr(model, 'head_counts', lambda: ())()))})",
                                    ", ".join(map(str, allowed[:16])))
        if pp is None:
            if gpus % tp:
                raise K3InputError("tp", f"TP {tp} does not divide {gpus} GPUs", "a divisor of --gpus")
            pp = gpus // tp
    elif pp is not None:
        if gpus % pp:
            raise K3InputError("pp", f"PP {pp} does not divide {gpus} GPUs", "a divisor of --gpus")
        tp = gpus // pp
        if tp not in allowed:
            raise DoesNotSplitError("tp", f"{model.name} cannot be split {tp}-way by tensor parallelism",
                                    ", ".join(map(str, allowed[:16])))
    else:
        per_node = gpus // nodes
        tp = max(t for t in allowed if t <= per_node and per_node % t == 0)
        pp = gpus // tp
        if tp != per_node:
            notes.append(f"{model.name} cannot be split {per_node}-way by tensor parallelism; "
                         f"using TP={tp} × PP={pp}")
    if tp * pp != gpus:
        raise K3InputError("gpus", f"TP {tp} × PP {pp} = {tp * pp}, not {gpus}", "tp × pp = gpus")
    if isinstance(model, Architecture) and pp > model.num_layers:
        raise DoesNotSplitError("pp", f"{pp} pipeline stages for {model.num_layers} layers",
                                f"at most {model.num_layers}")
    return tp, pp, tuple(notes)


def kv_bytes_per_gpu(model: ModelSpec, *, kv_total_bytes: int, context_tokens: int, batch: int,
                     kv_dtype: str, tp: int, pp: int, state_bytes_per_element: float = 4.0) -> int:
    """One GPU's share of the KV cache.

    Profile: $KV / (TP·PP)$ (the guides' even split). Architecture, per layer group:
    GQA $÷\\min(TP, K)$, MLA latent replicated over TP, linear state $÷TP$; all $÷PP$.
    """
    if isinstance(model, PublishedProfile):
        return -(-kv_total_bytes // (tp * pp))
    b = get_kv_dtype(kv_dtype).bytes_per_element
    total = 0.0
    for g in model.attention:
        tokens = min(context_tokens, g.window_tokens) if g.kind == "sliding" else context_tokens
        elems = g.count * g.kv_elements_per_token_per_layer * tokens * batch * b
        if g.kind in ("full", "sliding"):
            elems /= min(tp, g.kv_heads)
        state = g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) * batch
        total += elems + state * state_bytes_per_element / tp
    return int(-(-total // pp))


def fixed_overhead(model: ModelSpec, assumptions: Assumptions, *, gpus: int) -> tuple[int, int] | None:
    """(per GPU, total) overhead bytes when an assumption or a guide profile fixes it,
    first match wins: assumed per GPU, assumed total, profile per GPU, profile total.
    A total spreads as $\\lceil O/G \\rceil$ per GPU. None: use the component rule
    (:func:`k3lib.core.memory.overhead_bytes_per_gpu`)."""
    model_per_gpu = model_total = None
    if isinstance(model, PublishedProfile):
        model_per_gpu, model_total = model.overhead_per_gpu_bytes, model.overhead_total_bytes
    for per_gpu, total in ((assumptions.overhead_per_gpu_bytes, None), (None, assumptions.overhead_total_bytes),
                           (model_per_gpu, None), (None, model_total)):
        if per_gpu is not None:
            return per_gpu, per_gpu * gpus
        if total is not None:
            return -(-total // gpus), total
    return None


def make_plan(*, model: "str | ModelSpec" = "kimi-k3", gpu: "str | GPUSpec" = "h100-sxm", gpus: object = 8,
              weights: str = "native", kv_dtype: str = "bf16", context: object = 262144, batch: object = 1,
              nodes: object = 1, tp: int | None = None, pp: int | None = None,
              assumptions: Assumptions | None = None) -> Plan:
    """Validate inputs and compute a :class:`Plan`. Bad input raises a
    :class:`~k3lib.core.errors.K3InputError` (a ``ValueError``) naming the field."""
    spec = get_model(model)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    n_gpus = parse_positive_int(gpus, "gpus")
    n_nodes = parse_positive_int(nodes, "nodes")
    n_batch = parse_positive_int(batch, "batch")
    ctx = parse_context_tokens(context, "context")
    fmt = get_weight_format(weights)
    kvd = get_kv_dtype(kv_dtype)
    a = assumptions or Assumptions()
    tp_i = parse_positive_int(tp, "tp") if tp is not None else None
    pp_i = parse_positive_int(pp, "pp") if pp is not None else None
    notes: list[str] = []
    if isinstance(spec, PublishedProfile) and fmt.is_native:
        raise K3InputError("weights", f"{spec.id} publishes per-tier figures; pick one", ", ".join(spec.tiers))
    if ctx > spec.max_context_tokens:
        notes.append(f"context {ctx:,} tokens exceeds the model's maximum of {spec.max_context_tokens:,}")
    tp_i, pp_i, layout_notes = choose_layout(spec, gpus=n_gpus, nodes=n_nodes, tp=tp_i, pp=pp_i)
    notes.extend(layout_notes)

    w = weights_bytes(spec, fmt)
    kv = kv_cache_bytes(spec, context_tokens=ctx, batch=n_batch, kv_dtype=kvd,
                        state_bytes_per_element=a.state_bytes_per_element)
    act = a.activation_bytes if a.activation_bytes is not None else activation_bytes(
        spec, batch=n_batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
    w_gpu = -(-w // n_gpus)
    kv_gpu = kv_bytes_per_gpu(spec, kv_total_bytes=kv, context_tokens=ctx, batch=n_batch, kv_dtype=kvd.id,
                              tp=tp_i, pp=pp_i, state_bytes_per_element=a.state_bytes_per_element)
    act_gpu = -(-act // n_gpus)
    fixed = fixed_overhead(spec, a, gpus=n_gpus)
    if fixed is not None:
        oh_gpu, overhead_total = fixed
    else:
        oh_gpu = overhead_bytes_per_gpu(tp=tp_i, payload_bytes_per_gpu=w_gpu + kv_gpu + act_gpu,
                                        cuda_context_bytes=a.cuda_context_bytes,
                                        nccl_bytes_per_peer=a.nccl_bytes_per_peer,
                                        fragmentation_fraction=a.fragmentation_fraction)
        overhead_total = oh_gpu * n_gpus
    basis = a.memory_basis or (spec.memory_basis if isinstance(spec, PublishedProfile) else "usable")
    cap = hw.memory_bytes(basis)
    per_gpu = Breakdown(w_gpu, kv_gpu, act_gpu, oh_gpu, cap)
    total = Breakdown(w, max(kv, kv_gpu * n_gpus) if isinstance(spec, Architecture) else kv, act,
                      overhead_total, cap * n_gpus)
    return Plan(model=spec, gpu=hw, gpus=n_gpus, nodes=n_nodes, tp=tp_i, pp=pp_i, weight_format=fmt.id,
                kv_dtype=kvd.id, context_tokens=ctx, batch=n_batch, assumptions=a, memory_basis=basis,
                total=total, per_gpu=per_gpu, notes=tuple(notes))
