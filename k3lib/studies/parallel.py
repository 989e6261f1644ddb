"""What each GPU holds under tensor (TP), pipeline (PP), data (DP) and expert (EP)
parallelism.

One GPU's memory, per pipeline stage $s$ (bytes):

$$m_{gpu} = \\frac{W^{shard}_s}{TP} + W^{rep}_s + \\frac{X_s}{TP \\text{ or } EP}
            + KV_{rank,s} + \\frac{A}{TP} + N_{nccl}(TP) + O_{rt}$$

The rules (those of vLLM, stated once; change them here, not in a notebook):

* **Sharded ÷TP** — attention projections, dense MLPs, shared experts, the latent-MoE
  projections, and the embedding and LM head (vLLM's vocabulary-parallel layers).
  The embedding sits only on the first pipeline stage and the LM head only on the last.
* **Replicated on every TP rank** — norms, MoE routers (a ``ReplicatedLinear``), MLA's
  query/KV down-projections $D·(r_q + r_{kv} + d_{rope})$ and the low-rank gate
  projections of KDA layers; these are small, but they do not shrink with TP.
* **Routed experts** — ÷TP (each expert's matrices split across the TP group, vLLM's
  default) or, with expert parallelism, whole experts spread over the $EP = TP·DP$ ranks
  of a stage: $\\lceil E/EP \\rceil$ experts per GPU (the fullest rank sets the need).
* **KV cache** — a GQA cache splits by KV head only while $TP \\le K$; beyond that each
  rank keeps a copy of one KV head, so the split stops at $K$ (÷min(TP, K)).
  An **MLA latent is replicated on every TP rank**: it is one vector per token shared by
  all heads, so the guide's "each GPU holds the KV for its head range" does not hold for
  MLA — TP does not shrink it at all. Linear-attention state splits by head (÷TP).
* **Pipeline stages hold whole layers**: $L$ layers are cut into $PP$ runs of
  $\\lfloor L/PP \\rfloor$, the remainder going one each to the stages before the last
  (vLLM's rule); layer kinds are assumed evenly interleaved, dense layers first. Uneven
  stages differ, and the **largest stage sets the per-GPU need**.
* **Activation** — one prefill chunk through the widest layer
  (:func:`k3lib.core.memory.activation_bytes`) split by TP; every stage holds its own.
* **NCCL buffers** grow with the communicating group: $(g-1)·N_{peer}$ with
  $g = TP$ (or $TP·DP$ when EP all-to-alls span the stage); 0.5 GiB per peer gives 3.5 GiB
  at TP=8, inside the guide's "2–5 GB at TP=8". Pipeline send/receive buffers are small
  and not counted.
* **Runtime** — CUDA context plus fragmentation, as in
  :func:`k3lib.core.memory.overhead_bytes_per_gpu`.

>>> from k3lib.core.models import get_model
>>> valid_tp_sizes(get_model("kimi-k3"))[:8]
(1, 2, 3, 4, 6, 8, 12, 16)
>>> stage_layer_counts(93, 4)
(23, 23, 24, 23)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

from k3lib.core.architecture import Architecture, AttentionGroup
from k3lib.core.memory import activation_bytes, overhead_bytes_per_gpu, weight_bits_by_group
from k3lib.core.errors import DoesNotSplitError, K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.plan import Assumptions, Plan, kv_bytes_per_gpu, make_plan
from k3lib.core.plan import valid_tp_sizes as _head_divisors
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import GiB, parse_context_tokens, parse_positive_int

#: Per-GPU components, in the order the tables and stacked bars show them.
SHARE_COMPONENTS = ("weights sharded", "weights replicated", "routed experts", "KV cache", "activation",
                    "NCCL buffers", "runtime")


# ---------------------------------------------------------------- layout


@dataclass(frozen=True)
class Layout:
    """How the GPUs are arranged: $G = TP·DP·PP$ GPUs over ``nodes`` nodes.

    ``tp`` splits every layer; ``pp`` cuts the layers into stages; ``dp`` copies the
    attention (each copy serves its own sequences); ``ep`` spreads whole routed experts
    over the GPUs of a stage: 1 (experts split by TP) or exactly ``tp·dp``.

    >>> Layout(tp=8, pp=2, nodes=2).gpus
    16
    >>> Layout(tp=8, ep=8).ep
    8
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    nodes: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise K3InputError(name, f"{value!r} is not a whole number ≥ 1")
        if self.ep not in (1, self.tp * self.dp):
            raise K3InputError("ep", f"EP={self.ep} with TP={self.tp} × DP={self.dp}",
                               f"1 (experts split by TP) or {self.tp * self.dp} (TP × DP: every GPU of a stage)")
        if self.gpus % self.nodes:
            raise K3InputError("nodes", f"{self.gpus} GPUs cannot be spread evenly over {self.nodes} nodes",
                               "a divisor of TP × DP × PP")

    @property
    def gpus(self) -> int:
        """$G = TP·DP·PP$."""
        return self.tp * self.dp * self.pp

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def stage_gpus(self) -> int:
        """GPUs in one pipeline stage: $TP·DP$."""
        return self.tp * self.dp

    def describe(self) -> str:
        """``TP=8 × PP=2 over 2 nodes`` and the like."""
        parts = [f"TP={self.tp}"]
        if self.dp > 1:
            parts.append(f"DP={self.dp}")
        if self.pp > 1:
            parts.append(f"PP={self.pp}")
        text = " × ".join(parts)
        if self.ep > 1:
            text += f", EP={self.ep}"
        if self.nodes > 1:
            text += f" over {self.nodes} nodes"
        return text

    def notes(self) -> tuple[str, ...]:
        out = []
        if self.tp > self.gpus_per_node:
            out.append(f"TP={self.tp} spans nodes ({self.gpus_per_node} GPUs each): its all-reduces cross "
                       "the network, which is far slower than NVLink")
        return tuple(out)


def valid_tp_sizes(model: ModelSpec, limit: int = 128) -> tuple[int, ...]:
    """TP sizes the model can be split by: each must divide every head count
    (:meth:`~k3lib.core.architecture.Architecture.head_counts`) and, for GQA layers with $K$ KV
    heads, either divide $K$ or be a multiple of it (vLLM's rule; a multiple means
    replicated KV heads). A guide profile has no heads: any size.

    >>> from k3lib.core.models import get_model
    >>> valid_tp_sizes(get_model("llama-3.1-70b"))
    (1, 2, 4, 8, 16, 32, 64)
    """
    sizes = _head_divisors(model, limit)
    if isinstance(model, PublishedProfile):
        return sizes
    kv = {g.kv_heads for g in model.attention if g.kind in ("full", "sliding")}
    return tuple(t for t in sizes if all(k % t == 0 or t % k == 0 for k in kv))


def check_tp(model: ModelSpec, tp: int) -> int:
    """Return ``tp`` if the model splits that way, else raise
    :class:`~k3lib.core.errors.DoesNotSplitError` (a :class:`~k3lib.core.errors.K3InputError`)
    naming ``tp`` and the valid sizes."""
    tp = parse_positive_int(tp, "tp")
    allowed = valid_tp_sizes(model, max(128, tp))
    if tp not in allowed:
        heads = ", ".join(map(str, getattr(model, "head_counts", lambda: ())()))
        raise DoesNotSplitError("tp", f"{model.name} cannot be split {tp}-way by tensor parallelism "
                                f"(attention heads: {heads})", "TP = " + ", ".join(map(str, allowed)))
    return tp


def stage_layer_counts(num_layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage: $\\lfloor L/PP \\rfloor$ each, the remainder given one
    each to the stages just before the last (vLLM's ``get_pp_indices``; the last stage
    also holds the LM head).

    >>> stage_layer_counts(61, 2)
    (31, 30)
    """
    if pp > num_layers:
        raise DoesNotSplitError("pp", f"{pp} pipeline stages for {num_layers} layers", f"at most {num_layers}")
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i % pp] += 1
    return tuple(counts)


def layer_sequence(model: Architecture) -> tuple[tuple[int, bool], ...]:
    """(attention group index, is MoE) for each layer, in an assumed order: the dense
    MLP layers first (``first_k_dense_replace``), attention kinds evenly interleaved
    (largest remainder), which matches K3's MLA-every-fourth-layer pattern closely."""
    counts = [g.count for g in model.attention]
    assigned = [0] * len(counts)
    out = []
    n = model.num_layers
    for i in range(n):
        deficit = [c * (i + 1) / n - a for c, a in zip(counts, assigned)]
        g = max(range(len(counts)), key=lambda j: (round(deficit[j], 9), counts[j]))
        assigned[g] += 1
        out.append((g, i >= model.mlp.dense_layers))
    return tuple(out)


def stage_architecture(model: Architecture, layers: Sequence[tuple[int, bool]]) -> Architecture:
    """The slice of ``model`` holding only ``layers`` (from :func:`layer_sequence`), so
    :meth:`~k3lib.core.architecture.Architecture.param_groups` and
    :func:`~k3lib.core.plan.kv_bytes_per_gpu` can be reused per stage."""
    groups = []
    for j, g in enumerate(model.attention):
        k = sum(1 for gi, _ in layers if gi == j)
        if k:
            groups.append(dataclasses.replace(g, count=k))
    moe = sum(1 for _, is_moe in layers if is_moe)
    mlp = dataclasses.replace(model.mlp, dense_layers=len(layers) - moe, moe_layers=moe)
    return dataclasses.replace(model, num_layers=len(layers), attention=tuple(groups), mlp=mlp)


# ---------------------------------------------------------------- replication rules


def replicated_attention_params(group: AttentionGroup, hidden_size: int) -> int:
    """Attention weights of one layer that every TP rank holds whole (vLLM):
    MLA $D·r_q + r_q + D·(r_{kv} + d_{rope}) + r_{kv}$ (down-projections and their norms);
    KDA $D·d_k$ (+$D·d_k$ for a low-rank output gate) $+ d_k$; GQA $2H$ with QK-norm.

    >>> from k3lib.core.models import get_model
    >>> replicated_attention_params(get_model("kimi-k3").attention[0], 7168)   # K3's MLA
    15140864
    """
    d = hidden_size
    if group.kind == "mla":
        q = d * group.q_lora_rank + group.q_lora_rank if group.q_lora_rank else 0
        return q + d * (group.kv_lora_rank + group.qk_rope_head_dim) + group.kv_lora_rank
    if group.kind == "kda":
        return d * group.head_dim * (1 if group.full_rank_gate else 2) + group.head_dim
    if group.kind == "gdn":
        return group.v_head_dim or group.head_dim
    return 2 * group.head_dim if group.qk_norm else 0


def replicated_moe_params(model: Architecture) -> int:
    """Per MoE layer: the router $E·D$ (+ its bias) and a shared-expert gate $D$."""
    m, d = model.mlp, model.hidden_size
    if not model.mlp.moe_layers:
        return 0
    router = m.n_routed_experts * d + (m.n_routed_experts if (m.router_bias or m.router_score_bias) else 0)
    return router + (d if m.shared_expert_gate else 0)


# ---------------------------------------------------------------- per-GPU shares


@dataclass(frozen=True)
class GPUShare:
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

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or v < 0:
                raise K3InputError(f.name, f"{v!r} must be a non-negative integer")

    @property
    def weights_bytes(self) -> int:
        return self.weights_sharded_bytes + self.weights_replicated_bytes + self.routed_experts_bytes

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.kv_cache_bytes + self.activation_bytes + self.nccl_bytes
                + self.runtime_bytes)

    @property
    def headroom_bytes(self) -> int:
        return self.available_bytes - self.total_bytes

    @property
    def fits(self) -> bool:
        return self.headroom_bytes >= 0

    def components(self) -> dict[str, int]:
        """Bytes by :data:`SHARE_COMPONENTS`."""
        return dict(zip(SHARE_COMPONENTS, (
            self.weights_sharded_bytes, self.weights_replicated_bytes, self.routed_experts_bytes,
            self.kv_cache_bytes, self.activation_bytes, self.nccl_bytes, self.runtime_bytes)))


@dataclass(frozen=True)
class ParallelPlan:
    """A model on a :class:`Layout`: one :class:`GPUShare` per pipeline stage."""

    model: ModelSpec = dataclasses.field(repr=False)
    gpu: GPUSpec = dataclasses.field(repr=False)
    layout: Layout
    weight_format: str
    kv_dtype: str
    context_tokens: int
    batch: int
    memory_basis: str
    shares: tuple[GPUShare, ...]
    notes: tuple[str, ...] = ()

    @property
    def peak(self) -> GPUShare:
        """The fullest GPU: it decides whether the layout fits."""
        return max(self.shares, key=lambda s: s.total_bytes)

    @property
    def fits(self) -> bool:
        return all(s.fits for s in self.shares)

    @property
    def total_bytes(self) -> int:
        """Σ over every GPU."""
        return sum(s.total_bytes * s.gpus for s in self.shares)

    def verdict(self, unit: str = "GiB") -> str:
        """One line: fits or not, by how much, on the fullest GPU."""
        div = GiB if unit == "GiB" else 10**9
        p = self.peak
        head = f"{self.layout.gpus}× {self.gpu.name}, {self.layout.describe()}: "
        if self.fits:
            return head + (f"fits — fullest GPU {p.total_bytes / div:,.1f} of {p.available_bytes / div:,.1f} {unit}, "
                           f"{p.headroom_bytes / div:,.1f} {unit} headroom")
        return head + (f"does not fit — fullest GPU needs {p.total_bytes / div:,.1f} of "
                       f"{p.available_bytes / div:,.1f} {unit}, over by {-p.headroom_bytes / div:,.1f} {unit}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; sizes are integers in bytes."""
        return {"model": self.model.id, "gpu": self.gpu.id, "tp": self.layout.tp, "pp": self.layout.pp,
                "dp": self.layout.dp, "ep": self.layout.ep, "nodes": self.layout.nodes, "gpus": self.layout.gpus,
                "weights": self.weight_format, "kv_dtype": self.kv_dtype, "context_tokens": self.context_tokens,
                "batch": self.batch, "memory_basis": self.memory_basis, "fits": self.fits,
                "shares": [dataclasses.asdict(s) | {"total_bytes": s.total_bytes, "headroom_bytes": s.headroom_bytes}
                           for s in self.shares],
                "notes": list(self.notes)}


def _ceil_div(a: float, b: int) -> int:
    return int(math.ceil(a / b))


def distribute(*, model: "str | ModelSpec" = "kimi-k3", gpu: "str | GPUSpec" = "h200", layout: Layout | None = None,
               tp: int | None = None, pp: int = 1, dp: int = 1, ep: int = 1, nodes: int = 1,
               weights: str = "native", kv_dtype: str = "bf16", context: object = 262144, batch: object = 1,
               assumptions: Assumptions | None = None) -> ParallelPlan:
    """Per-GPU memory of ``model`` on ``layout`` (or ``tp``/``pp``/``dp``/``ep``/``nodes``),
    stage by stage, by the rules in this module's docstring.

    A guide profile has no layer shapes: its one share is the guide's even split
    (:func:`k3lib.core.plan.make_plan`'s per-GPU figures).

    >>> p = distribute(model="llama-3.1-70b", gpu="h100", tp=16, context=8192, weights="bf16", nodes=2)
    >>> p.peak.kv_cache_bytes == 327680 // 8 * 8192      # ÷ 8 KV heads, not ÷ 16
    True
    """
    spec = get_model(model)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    if layout is None:
        layout = Layout(tp=parse_positive_int(tp if tp is not None else 1, "tp"), pp=parse_positive_int(pp, "pp"),
                        dp=parse_positive_int(dp, "dp"), ep=parse_positive_int(ep, "ep"),
                        nodes=parse_positive_int(nodes, "nodes"))
    check_tp(spec, layout.tp)
    ctx = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    fmt = get_weight_format(weights)
    kvd = get_kv_dtype(kv_dtype)
    a = assumptions or Assumptions()
    notes = list(layout.notes())

    if isinstance(spec, PublishedProfile):
        if layout.dp > 1 or layout.ep > 1:
            raise K3InputError("layout", f"{spec.id} publishes no layer shapes; DP and EP need an architecture",
                               "TP and PP only")
        plan = make_plan(model=spec, gpu=hw, gpus=layout.gpus, nodes=layout.nodes, tp=layout.tp, pp=layout.pp,
                         weights=fmt.id, kv_dtype=kvd.id, context=ctx, batch=n_batch, assumptions=a)
        return from_plan(plan)

    if layout.ep > 1 and not spec.mlp.moe_layers:
        raise K3InputError("ep", f"{spec.name} has no routed experts to spread", "1 for a dense model")
    basis = a.memory_basis or "usable"
    cap = hw.memory_bytes(basis)
    bits = weight_bits_by_group(spec, fmt)
    bit = lambda group: bits.get(group, bits.get("*", 16))  # noqa: E731
    seq = layer_sequence(spec)
    counts = stage_layer_counts(spec.num_layers, layout.pp)
    seq_batch = -(-n_batch // layout.dp)
    act_total = a.activation_bytes if a.activation_bytes is not None else activation_bytes(
        spec, batch=seq_batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
    d = spec.hidden_size
    shares = []
    start = 0
    for s, n in enumerate(counts):
        layers = seq[start:start + n]
        start += n
        st = stage_architecture(spec, layers)
        g = st.param_groups()
        first, last = s == 0, s == layout.pp - 1
        rep_attn = sum(grp.count * replicated_attention_params(grp, d) for grp in st.attention)
        rep_moe = st.mlp.moe_layers * replicated_moe_params(st)
        norms = (2 * st.num_layers + (1 if last else 0)) * d
        embedding = g["embedding"] if first else 0
        lm_head = (g["lm_head"] if not spec.tie_word_embeddings else (g["embedding"] if layout.pp > 1 else 0)) \
            if last else 0
        sharded_bits = (embedding * bit("embedding") + lm_head * bit("lm_head" if not spec.tie_word_embeddings
                                                                       else "embedding")
                        + (g["attention"] - rep_attn) * bit("attention") + g["dense_mlp"] * bit("dense_mlp")
                        + g["shared_experts"] * bit("shared_experts") + (g["moe_other"] - rep_moe) * bit("moe_other"))
        replicated_bits = rep_attn * bit("attention") + rep_moe * bit("moe_other") + norms * bit("norms")
        if layout.ep > 1:
            per_rank = -(-spec.mlp.n_routed_experts // layout.ep)
            routed = st.mlp.moe_layers * per_rank * spec.mlp.expert_params(d) * bit("routed_experts") / 8
        else:
            routed = g["routed_experts"] * bit("routed_experts") / 8 / layout.tp
        kv = kv_bytes_per_gpu(st, kv_total_bytes=0, context_tokens=ctx, batch=seq_batch, kv_dtype=kvd.id,
                              tp=layout.tp, pp=1, state_bytes_per_element=a.state_bytes_per_element)
        act = _ceil_div(act_total, layout.tp)
        w_sh = _ceil_div(sharded_bits / 8, layout.tp)
        w_rep = int(math.ceil(replicated_bits / 8))
        routed = int(math.ceil(routed))
        if a.overhead_per_gpu_bytes is not None or a.overhead_total_bytes is not None:
            nccl = 0
            runtime = a.overhead_per_gpu_bytes if a.overhead_per_gpu_bytes is not None else \
                _ceil_div(a.overhead_total_bytes, layout.gpus)
        else:
            group = layout.tp * layout.dp if layout.ep > 1 else layout.tp
            nccl = overhead_bytes_per_gpu(tp=group, payload_bytes_per_gpu=0, cuda_context_bytes=0,
                                          nccl_bytes_per_peer=a.nccl_bytes_per_peer, fragmentation_fraction=0)
            runtime = overhead_bytes_per_gpu(tp=1, payload_bytes_per_gpu=w_sh + w_rep + routed + kv + act,
                                             cuda_context_bytes=a.cuda_context_bytes,
                                             fragmentation_fraction=a.fragmentation_fraction)
        shares.append(GPUShare(stage=s, layers=n, gpus=layout.stage_gpus, weights_sharded_bytes=w_sh,
                               weights_replicated_bytes=w_rep, routed_experts_bytes=routed, kv_cache_bytes=kv,
                               activation_bytes=act, nccl_bytes=nccl, runtime_bytes=runtime, available_bytes=cap))
    if ctx > spec.max_context_tokens:
        notes.append(f"context {ctx:,} tokens exceeds the model's maximum of {spec.max_context_tokens:,}")
    if any(g.kind == "mla" for g in spec.attention) and layout.tp > 1:
        notes.append("MLA latent cache replicated on every TP rank: TP does not shrink it")
    for g in spec.attention:
        if g.kind in ("full", "sliding") and layout.tp > g.kv_heads:
            notes.append(f"TP={layout.tp} > {g.kv_heads} KV heads: KV heads replicated, KV split only {g.kv_heads} ways")
            break
    return ParallelPlan(model=spec, gpu=hw, layout=layout, weight_format=fmt.id, kv_dtype=kvd.id,
                        context_tokens=ctx, batch=n_batch, memory_basis=basis, shares=tuple(shares),
                        notes=tuple(notes))


def from_plan(plan: Plan, *, dp: int = 1, ep: int = 1) -> ParallelPlan:
    """A :class:`ParallelPlan` for a :class:`~k3lib.core.plan.Plan`.

    An architecture is redistributed stage by stage (replication, layer granularity);
    a guide profile keeps the plan's even split as one share (its overhead under
    ``runtime``), which is how the guides compute per-GPU figures.
    """
    if isinstance(plan.model, PublishedProfile):
        g = plan.per_gpu
        share = GPUShare(stage=0, layers=0, gpus=plan.gpus, weights_sharded_bytes=g.weights_bytes,
                         weights_replicated_bytes=0, routed_experts_bytes=0, kv_cache_bytes=g.kv_cache_bytes,
                         activation_bytes=g.activation_bytes, nccl_bytes=0, runtime_bytes=g.overhead_bytes,
                         available_bytes=g.available_bytes)
        layout = Layout(tp=plan.tp, pp=plan.pp, nodes=plan.nodes)
        return ParallelPlan(model=plan.model, gpu=plan.gpu, layout=layout, weight_format=plan.weight_format,
                            kv_dtype=plan.kv_dtype, context_tokens=plan.context_tokens, batch=plan.batch,
                            memory_basis=plan.memory_basis, shares=(share,),
                            notes=plan.notes + ("guide profile: weights, KV and activation split evenly over "
                                                f"{plan.gpus} GPUs, as the guide does",))
    tp = plan.tp // dp if dp > 1 else plan.tp
    return distribute(model=plan.model, gpu=plan.gpu,
                      layout=Layout(tp=tp, pp=plan.pp, dp=dp, ep=ep, nodes=plan.nodes),
                      weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=plan.context_tokens,
                      batch=plan.batch, assumptions=plan.assumptions)


# ---------------------------------------------------------------- tables


def _unit(unit: str) -> int:
    if unit not in ("GiB", "GB"):
        raise K3InputError("unit", f"{unit!r}", "GiB, GB")
    return GiB if unit == "GiB" else 10**9


def per_gpu_table(plan: "ParallelPlan | Plan", unit: str = "GiB"):
    """One row per pipeline stage (every GPU of a stage holds the same): each component,
    the total, capacity and headroom in ``unit``; the fullest stage is marked.

    >>> t = per_gpu_table(distribute(model="kimi-k3", gpu="h200", tp=8, weights="native", context="256K"))
    >>> list(t.columns)[:4]
    ['stage', 'layers', 'GPUs', 'weights sharded (GiB)']
    """
    import pandas as pd

    pp = plan if isinstance(plan, ParallelPlan) else from_plan(plan)
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


def per_gpu_long(plan: "ParallelPlan | Plan", unit: str = "GiB"):
    """Long format for a stacked bar: ``GPU`` (stage label), ``component``, ``{unit}``,
    ``available``."""
    import pandas as pd

    pp = plan if isinstance(plan, ParallelPlan) else from_plan(plan)
    div = _unit(unit)
    rows = []
    for s in pp.shares:
        label = f"stage {s.stage}: {s.layers} layers, ×{s.gpus} GPUs" if pp.layout.pp > 1 else \
            f"each of {s.gpus} GPUs"
        for i, (name, b) in enumerate(s.components().items()):
            rows.append({"GPU": label, "component": name, "order": i, unit: b / div,
                         "available": s.available_bytes / div})
    return pd.DataFrame(rows)


def compare_layouts(layouts: Sequence[tuple[str, Layout]], *, model: "str | ModelSpec", gpu: str, weights: str,
                    kv_dtype: str, context: object, batch: object = 1, unit: str = "GiB",
                    assumptions: Assumptions | None = None):
    """One row per named layout: the fullest GPU's components and whether it fits."""
    import pandas as pd

    div = _unit(unit)
    rows = []
    for name, lay in layouts:
        p = distribute(model=model, gpu=gpu, layout=lay, weights=weights, kv_dtype=kv_dtype, context=context,
                       batch=batch, assumptions=assumptions)
        pk = p.peak
        row: dict[str, Any] = {"layout": name, "GPUs": lay.gpus}
        for comp, b in pk.components().items():
            row[f"{comp} ({unit})"] = round(b / div, 2)
        row[f"fullest GPU ({unit})"] = round(pk.total_bytes / div, 2)
        row[f"headroom ({unit})"] = round(pk.headroom_bytes / div, 2)
        row["fits"] = p.fits
        rows.append(row)
    return pd.DataFrame(rows)


def kv_per_gpu_vs_tp(models: Sequence[str], *, tps: Sequence[int], context: object = "128K", kv_dtype: str = "bf16",
                     unit: str = "GiB"):
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
            per = kv_bytes_per_gpu(m, kv_total_bytes=total, context_tokens=ctx, batch=1, kv_dtype=kv_dtype,
                                   tp=t, pp=1)
            rows.append({"model": m.name, "TP": t, f"KV per GPU ({unit})": per / div,
                         f"guide rule: total ÷ TP ({unit})": total / t / div, "ratio to rule": per / (total / t)})
    return pd.DataFrame(rows)


def nccl_table(tps: Sequence[int] = (1, 2, 4, 8, 16), *, nccl_bytes_per_peer: int = GiB // 2, unit: str = "GiB"):
    """NCCL all-reduce buffers per GPU, $(TP-1)·N_{peer}$, against the guide's 2–5 GB at TP=8."""
    import pandas as pd

    div = _unit(unit)
    return pd.DataFrame([{"TP": t, f"NCCL buffers per GPU ({unit})": overhead_bytes_per_gpu(
        tp=t, payload_bytes_per_gpu=0, cuda_context_bytes=0, nccl_bytes_per_peer=nccl_bytes_per_peer,
        fragmentation_fraction=0) / div} for t in tps])


# ---------------------------------------------------------------- GPU counts


def layouts_for(model: ModelSpec, gpus: int, *, gpus_per_node: int = 8) -> tuple[Layout, ...]:
    """Every TP × PP layout of ``gpus`` GPUs with TP valid for the model and no wider
    than a node (``gpus_per_node``), widest TP first; the GPUs fill as few equal nodes
    as possible.

    >>> [l.describe() for l in layouts_for(get_model("kimi-k3"), 16)]
    ['TP=8 × PP=2 over 2 nodes', 'TP=4 × PP=4 over 2 nodes', 'TP=2 × PP=8 over 2 nodes', 'TP=1 × PP=16 over 2 nodes']
    """
    nodes = -(-gpus // gpus_per_node)
    while gpus % nodes:
        nodes += 1
    out = []
    for t in sorted(valid_tp_sizes(model, gpus), reverse=True):
        if gpus % t or t > gpus_per_node:
            continue
        pp = gpus // t
        if isinstance(model, Architecture) and pp > model.num_layers:
            continue
        out.append(Layout(tp=t, pp=pp, nodes=nodes))
    return tuple(out)


def candidate_gpu_counts(*, gpus_per_node: int = 8, max_gpus: int = 256, whole_nodes: bool = True) -> tuple[int, ...]:
    """GPU counts a deployment can have: 1 … ``gpus_per_node`` inside one node, then
    (``whole_nodes``) only whole nodes — 16, 24, … — as clusters are bought and scheduled.

    >>> candidate_gpu_counts(max_gpus=32)
    (1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32)
    """
    if not whole_nodes:
        return tuple(range(1, max_gpus + 1))
    one = tuple(range(1, min(gpus_per_node, max_gpus) + 1))
    return one + tuple(range(2 * gpus_per_node, max_gpus + 1, gpus_per_node))


def min_gpus(*, model: "str | ModelSpec", gpu: str, weights: str, kv_dtype: str, context: object, batch: object = 1,
             gpus_per_node: int = 8, max_gpus: int = 256, whole_nodes: bool = True,
             assumptions: Assumptions | None = None) -> ParallelPlan | None:
    """The fewest GPUs (from :func:`candidate_gpu_counts`) and the first layout (widest
    TP first) on which the fullest GPU fits; None if nothing up to ``max_gpus`` does."""
    spec = get_model(model)
    for n in candidate_gpu_counts(gpus_per_node=gpus_per_node, max_gpus=max_gpus, whole_nodes=whole_nodes):
        for lay in layouts_for(spec, n, gpus_per_node=gpus_per_node):
            p = distribute(model=spec, gpu=gpu, layout=lay, weights=weights, kv_dtype=kv_dtype, context=context,
                           batch=batch, assumptions=assumptions)
            if p.fits:
                return p
    return None


def gpu_count_table(*, model: "str | ModelSpec", gpu: "str | Sequence[str]", rows: Sequence[tuple[str, str]],
                    context: object, batch: object = 1, production_extra: int = 1, gpus_per_node: int = 8,
                    whole_nodes: bool = True, assumptions: Assumptions | None = None, unit: str = "GiB"):
    """The guide's lost "optimal GPU counts by precision" table: for each GPU and each
    (weights, KV dtype) row, the fewest GPUs that fit (:func:`min_gpus`) and the
    production count, +``production_extra`` (the guide's "add one more GPU to each row")."""
    import pandas as pd

    div = _unit(unit)
    out = []
    for g in ([gpu] if isinstance(gpu, str) else list(gpu)):
        name = get_gpu(g).name
        for weights, kv in rows:
            p = min_gpus(model=model, gpu=g, weights=weights, kv_dtype=kv, context=context, batch=batch,
                         gpus_per_node=gpus_per_node, whole_nodes=whole_nodes, assumptions=assumptions)
            row: dict[str, Any] = {"GPU": name, "weights": weights, "KV dtype": kv}
            if p is None:
                row.update({"minimum GPUs": None, "layout": "none up to 256", f"fullest GPU ({unit})": None,
                            f"headroom per GPU ({unit})": None, f"production GPUs (+{production_extra})": None})
            else:
                row.update({"minimum GPUs": p.layout.gpus, "layout": p.layout.describe(),
                            f"fullest GPU ({unit})": round(p.peak.total_bytes / div, 1),
                            f"headroom per GPU ({unit})": round(p.peak.headroom_bytes / div, 1),
                            f"production GPUs (+{production_extra})": p.layout.gpus + production_extra})
            out.append(row)
    return pd.DataFrame(out)


# ---------------------------------------------------------------- guide 000's per-GPU cases

#: Guide 000's per-GPU figures (GiB; the guide writes GB but its H100 is 80 of them).
GUIDE000_CASES = (
    # (case, change from the 8× H100 BF16 512K base, guide's per-GPU figure, what it is)
    ("8× H100, BF16, BF16 KV, 512K", {}, 97.0, "~17 over 80 → ~97 per GPU"),
    ("fix 1: context 256K", {"context": "256K"}, 88.8, "total ~88.8"),
    ("fix 2: Q8 weights", {"weights": "q8"}, 78.8, "total ~78.8"),
    ("fix 3: FP8 KV cache", {"kv_dtype": "fp8"}, 88.8, "total ~88.8"),
)
GUIDE000_BASE = dict(model="kimi-k3@guide-000", gpu="h100", gpus=8, weights="bf16", kv_dtype="bf16",
                     context="512K")
GUIDE000_CASE2 = dict(model="kimi-k3@guide-000", gpu="h100", gpus=5, weights="q4", context="128K")


def guide000_assumption_sets() -> tuple[tuple[str, Assumptions], ...]:
    """Named readings of guide 000's activation and overhead, for its per-GPU cases.

    The last pair solves both cases at once (:func:`solve_activation_overhead`):
    activation $A = 33⅓$ GiB in total and overhead $O = 2⅓$ GiB per GPU.
    """
    return (
        ("stated: act 10, 8/GPU", Assumptions()),
        ("worked example: act 10, 6/GPU",
         Assumptions(activation_bytes=10 * GiB, overhead_per_gpu_bytes=6 * GiB)),
        ("act 12, 5/GPU", Assumptions(activation_bytes=12 * GiB, overhead_per_gpu_bytes=5 * GiB)),
        ("act 10, 7/GPU", Assumptions(activation_bytes=10 * GiB, overhead_per_gpu_bytes=7 * GiB)),
        ("both cases: act 33⅓, 2⅓/GPU",
         Assumptions(activation_bytes=round(100 / 3 * GiB), overhead_per_gpu_bytes=round(7 / 3 * GiB))),
    )


def guide000_implied_table(unit: str = "GiB"):
    """For each of guide 000's per-GPU figures: the total it implies, the weights and KV
    per GPU the guide's own inputs give, and what is left for activation + overhead
    (:func:`implied_extra_per_gpu`)."""
    import pandas as pd

    div = _unit(unit)
    rows = []
    figures = [(case, {**GUIDE000_BASE, **change}, guide) for case, change, guide, _ in GUIDE000_CASES]
    figures += [("5× H100, Q4, 128K, FP8 KV", {**GUIDE000_CASE2, "kv_dtype": "fp8"}, 80 - 2.8),
                ("5× H100, Q4, 128K, BF16 KV", {**GUIDE000_CASE2, "kv_dtype": "bf16"}, 80 - 2.8)]
    for case, args, guide in figures:
        g = make_plan(**args).per_gpu
        w, kv = g.weights_bytes / div, g.kv_cache_bytes / div
        rows.append({"case": case, "GPUs": args["gpus"], f"guide total per GPU ({unit})": guide,
                     f"weights per GPU ({unit})": round(w, 2), f"KV per GPU ({unit})": round(kv, 2),
                     f"left for activation + overhead ({unit})": round(implied_extra_per_gpu(
                         total_per_gpu=guide, weights_per_gpu=w, kv_per_gpu=kv), 2)})
    return pd.DataFrame(rows)


def guide000_tier_check(unit: str = "GiB"):
    """Guide 000's weight tiers against the bits-per-weight rule applied to its BF16 594:
    $W_{tier} = 594 · b_{tier} / 16$; per GPU at 8 GPUs."""
    import pandas as pd

    prof = get_model("kimi-k3@guide-000")
    div = _unit(unit)
    bf16 = prof.weights_bytes_by_tier["bf16"]
    rows = []
    for tier in ("bf16", "q8", "q4", "q2"):
        b = get_weight_format(tier).bits_per_weight
        w = prof.weights_bytes_by_tier[tier]
        rows.append({"tier": tier, "bits per weight": b, f"guide ({unit})": round(w / div, 1),
                     f"594 × bits/16 ({unit})": round(bf16 * b / 16 / div, 1),
                     f"guide per GPU at 8 ({unit})": round(w / 8 / div, 2),
                     f"rule per GPU at 8 ({unit})": round(bf16 * b / 16 / 8 / div, 2),
                     "guide ÷ rule": round(w / (bf16 * b / 16), 2)})
    return pd.DataFrame(rows)


def guide000_case1_table(assumptions: Sequence[tuple[str, Assumptions]] | None = None, unit: str = "GiB"):
    """Guide 000's 8× H100 case and its three fixes, recomputed per GPU under each named
    assumption (default :func:`guide000_assumption_sets`), next to the guide's figure."""
    import pandas as pd

    assumptions = guide000_assumption_sets() if assumptions is None else assumptions
    div = _unit(unit)
    rows = []
    for case, change, guide, what in GUIDE000_CASES:
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
        rows.append({"assumption": name, "KV dtype": kv, f"weights ({unit})": round(g.weights_bytes / div, 2),
                     f"KV cache ({unit})": round(g.kv_cache_bytes / div, 2),
                     f"activation + overhead ({unit})": round((g.activation_bytes + g.overhead_bytes) / div, 2),
                     f"total ({unit})": round(g.total_bytes / div, 2), f"headroom ({unit})": round(g.headroom_bytes / div, 2),
                     f"guide headroom ({unit})": 2.8})
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


# ---------------------------------------------------------------- widget callback


def layout_figure(*, model: str = "kimi-k3", gpu: str = "h200", gpus: int = 8, nodes: int = 1, tp: int = 8,
                  pp: int = 1, ep: int = 1, weights: str = "native", kv_dtype: str = "bf16",
                  context: object = "256K", batch: int = 1):
    """The explorer's callback: a stacked bar per GPU (stage) whose title carries the
    verdict. ``gpus`` must equal TP × PP (× DP where EP > TP)."""
    from k3lib.views.charts_parallel import per_gpu_stacked_bar

    n = parse_positive_int(gpus, "gpus")
    tp_i = check_tp(get_model(model), tp)
    pp_i = parse_positive_int(pp, "pp")
    if n % (tp_i * pp_i):
        raise K3InputError("gpus", f"{n} GPUs is not a multiple of TP {tp_i} × PP {pp_i}", "TP × PP × DP")
    dp = n // (tp_i * pp_i)
    plan = distribute(model=model, gpu=gpu, layout=Layout(tp=tp_i, pp=pp_i, dp=dp, ep=ep, nodes=nodes),
                      weights=weights, kv_dtype=kv_dtype, context=context, batch=batch)
    return per_gpu_stacked_bar(per_gpu_long(plan), title=plan.verdict())
