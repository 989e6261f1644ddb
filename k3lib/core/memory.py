"""The four memory components: weights, KV cache, activation, runtime overhead.

The one equation (bytes):

$$M_{total} = W + B·T·kv_{tok} + A + O$$

where $W$ is the weights, $kv_{tok}$ the KV bytes per token (dtype-dependent),
$T$ the context, $B$ the batch, $A$ the activation buffers and $O$ the runtime
overhead (per GPU: CUDA context, NCCL buffers, fragmentation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import numpy as np

from k3lib.core.architecture import Architecture, AttentionGroup
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import KINDS, state_kind
from k3lib.core.models import ModelSpec, PublishedProfile
from k3lib.core.precisions import KVDtype, WeightFormat, get_kv_dtype, get_weight_format
from k3lib.core.units import GB, GiB, MiB

if TYPE_CHECKING:
    from k3lib.core.units import IntArray

#: tokens of one prefill chunk (vLLM's default ``max_num_batched_tokens`` for chunked prefill)
DEFAULT_PREFILL_CHUNK_TOKENS = 8192


def weight_bits_by_group(model: Architecture, weight_format: str | WeightFormat) -> dict[str, float]:
    """Bits per weight for each parameter group: one format everywhere, or the
    model's native mix (e.g. K3: MXFP4 routed experts, BF16 elsewhere)."""
    fmt = get_weight_format(weight_format)
    if fmt.bits_per_weight is not None:
        return {"*": fmt.bits_per_weight}
    return {group: get_weight_format(f).bits for group, f in model.native_formats.items()}


def weights_bytes_by_group(model: Architecture, weight_format: str | WeightFormat) -> dict[str, int]:
    """Bytes per parameter group = params × bits / 8 (rounded up)."""
    bits = weight_bits_by_group(model, weight_format)
    return {g: int(math.ceil(n * bits.get(g, bits.get("*", 16)) / 8)) for g, n in model.param_groups().items()}


def weights_bytes(model: ModelSpec, weight_format: str | WeightFormat, *, include_mtp: bool = False) -> int:
    """Weight bytes: Σ params × bits/8 for an architecture; the published figure
    for a guide profile.

    MTP modules (``Architecture.mtp_layers``) are left out by default: vLLM and SGLang
    skip their tensors unless speculative decoding is on. ``include_mtp=True`` prices
    them too (the checkpoint's text weights, or a speculative-decoding deployment)."""
    fmt = get_weight_format(weight_format)
    if isinstance(model, PublishedProfile):
        return model.weights_bytes_by_tier[model.tier_for(fmt.id)]
    return model.weights_bytes(weight_bits_by_group(model, fmt), include_mtp=include_mtp)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str | KVDtype) -> int:
    """KV bytes per token of context (layers whose cache grows):
    elements per token × bytes per element."""
    return model.kv_bytes_per_token(get_kv_dtype(kv_dtype).bytes_per_element)


@overload
def kv_cache_bytes(
    model: ModelSpec, *, context_tokens: int, batch: int, kv_dtype: str | KVDtype, state_bytes_per_element: float = 4.0
) -> int: ...
@overload
def kv_cache_bytes(
    model: PublishedProfile,
    *,
    context_tokens: IntArray,
    batch: int,
    kv_dtype: str | KVDtype,
    state_bytes_per_element: float = 4.0,
) -> IntArray: ...
def kv_cache_bytes(
    model: ModelSpec,
    *,
    context_tokens: int | IntArray,
    batch: int,
    kv_dtype: str | KVDtype,
    state_bytes_per_element: float = 4.0,
) -> int | IntArray:
    """KV cache = $B·T·kv_{tok}$ (+ window-capped layers + linear-attention state).

    >>> from k3lib.core.models import get_model
    >>> kv_cache_bytes(get_model("kimi-k3@guide-000"), context_tokens=262144, batch=1, kv_dtype="fp8") / 2**30
    32.0
    """
    dt = get_kv_dtype(kv_dtype)
    if isinstance(model, PublishedProfile):  # array-aware: the sweep's contexts
        return batch * context_tokens * model.kv_bytes_per_token(dt.bytes_per_element)
    if not isinstance(context_tokens, int):
        raise TypeError("an architecture's KV cache takes one context length (an int), not an array")
    return model.kv_cache_bytes(
        context_tokens=context_tokens,
        batch=batch,
        bytes_per_element=dt.bytes_per_element,
        state_bytes_per_element=state_bytes_per_element,
    )


def activation_bytes(model: ModelSpec, *, batch: int, prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS) -> int:
    """Peak activation buffers.

    Profile: the guide's batch-1 figure × batch (it says activation scales linearly).
    Architecture (a stated rule, not a measurement): one prefill chunk of $C$ tokens
    in BF16 through the widest layer, per sequence in the batch:
    $A = B·C·2·(4D + 2I_{max}) + B·V·4$ — residual, normed input, attention output
    and its projection ($4D$), the gated MLP's two intermediates ($2I_{max}$), and the
    FP32 logits of the last token.
    """
    if isinstance(model, PublishedProfile):
        return model.activation_bytes_batch1 * batch
    m = model.mlp
    widest = max(
        m.dense_intermediate if m.dense_layers else 0,
        m.experts_per_token * m.moe_intermediate + m.n_shared_experts * m.shared_intermediate,
    )
    per_seq = prefill_chunk_tokens * 2 * (4 * model.hidden_size + 2 * widest) + model.vocab_size * 4
    return batch * per_seq


#: Memory outside torch on each GPU of a communicating group (> 1 GPU): NCCL buffers and
#: communicator state, cuBLAS workspaces. vLLM 0.19 on H100 reports 2.1–2.2 GiB of non-torch
#: memory at TP=2 and TP=4 and ≈0.25 GiB at TP=1 (llm-d-planner PR #205 calibration sweep,
#: ``data/measured/vllm-0.19-h100-sweep.csv``); it does not grow with the group size.
NCCL_BYTES_PER_GPU = int(2.15 * GiB)
#: CUDA context + allocator reserve per GPU.
CUDA_CONTEXT_BYTES = GiB
#: Fragmentation: a fraction of the GPU's payload the allocator cannot hand out.
FRAGMENTATION_FRACTION = 0.05


@overload
def overhead_bytes_per_gpu(
    *,
    tp: int,
    payload_bytes_per_gpu: int,
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES,
    nccl_bytes: int = NCCL_BYTES_PER_GPU,
    fragmentation_fraction: float = FRAGMENTATION_FRACTION,
) -> int: ...
@overload
def overhead_bytes_per_gpu(
    *,
    tp: int,
    payload_bytes_per_gpu: IntArray,
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES,
    nccl_bytes: int = NCCL_BYTES_PER_GPU,
    fragmentation_fraction: float = FRAGMENTATION_FRACTION,
) -> IntArray: ...
def overhead_bytes_per_gpu(
    *,
    tp: int,
    payload_bytes_per_gpu: int | IntArray,
    cuda_context_bytes: int = CUDA_CONTEXT_BYTES,
    nccl_bytes: int = NCCL_BYTES_PER_GPU,
    fragmentation_fraction: float = FRAGMENTATION_FRACTION,
) -> int | IntArray:
    """Runtime overhead on one GPU (array-aware in the payload):

    $O = C_{ctx} + [g > 1]·N_{nccl} + \\lfloor f·P \\rfloor$ — CUDA context, the communicator's
    buffers once the GPU talks to peers ($g$ = ``tp``, the size of its all-reduce group;
    a constant, as measured, not a multiple of the peers), and fragmentation as a fraction
    $f$ of the GPU's payload $P$.

    >>> round(overhead_bytes_per_gpu(tp=8, payload_bytes_per_gpu=100 * GiB) / GiB, 2)
    8.15
    """
    if tp < 1:
        raise K3InputError("tp", f"{tp!r} must be at least 1")
    if not 0 <= fragmentation_fraction < 1:
        raise K3InputError("fragmentation_fraction", f"{fragmentation_fraction!r} must be in [0, 1)")
    fixed = cuda_context_bytes + (nccl_bytes if tp > 1 else 0)
    frag = np.floor(fragmentation_fraction * np.asarray(payload_bytes_per_gpu, dtype=np.float64)).astype(np.int64)
    out = fixed + frag
    return int(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------- one GPU's share (per rank)


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads one TP rank caches: $K/\\min(TP, K)$ — split while $TP \\le K$, one (replicated)
    head past it (the valid-TP rule guarantees $K \\bmod TP = 0$ or $TP \\bmod K = 0$).

    >>> kv_heads_per_rank(8, 16), kv_heads_per_rank(8, 4)
    (1, 2)
    """
    return max(1, kv_heads // tp)


@overload
def kv_bytes_per_rank(
    model: Architecture,
    *,
    context_tokens: int,
    batch: int,
    bytes_per_element: float,
    tp: int,
    state_bytes_per_element: float = 4.0,
) -> int: ...
@overload
def kv_bytes_per_rank(
    model: Architecture,
    *,
    context_tokens: IntArray,
    batch: int,
    bytes_per_element: float,
    tp: int,
    state_bytes_per_element: float = 4.0,
) -> IntArray: ...
def kv_bytes_per_rank(
    model: Architecture,
    *,
    context_tokens: int | IntArray,
    batch: int,
    bytes_per_element: float,
    tp: int,
    state_bytes_per_element: float = 4.0,
) -> int | IntArray:
    """KV cache on one GPU of a TP group holding all of ``model``'s layers (pass one
    pipeline stage as ``model``), array-aware in ``context_tokens``:

    $KV_{rank} = \\sum_{groups} n_g·e_g·\\min(T, W_g)·B·b / s_g + n_g·S_g·B·b_{state}/TP$

    with $s_g = \\min(TP, K)$ for GQA (heads split, then replicated past $K$), $s_g = 1$
    for an MLA latent (one vector per token shared by all heads: replicated on every
    rank), and linear-attention state split by head ($÷TP$). Rounded up to whole bytes.

    Layers that share another layer's cache (``kv_shared`` groups: Gemma-3n / Gemma 4
    ``num_kv_shared_layers``) have $e_g = 0$ and add nothing; MTP modules are not layers
    of ``model`` and add nothing either.

    >>> from k3lib.core.models import get_model
    >>> kv_bytes_per_rank(get_model("llama-3.1-70b"), context_tokens=8192, batch=1, bytes_per_element=2, tp=16)
    335544320
    """
    total = np.zeros(np.shape(context_tokens), dtype=np.float64)
    ctx = np.asarray(context_tokens, dtype=np.float64)
    for g in model.attention:
        k = g.kind_spec
        tokens = k.cached_tokens(g, ctx)
        cache = g.count * g.kv_elements_per_token_per_layer * tokens * batch * bytes_per_element
        if k.grouped_kv:
            cache = cache / k.kv_split(g, tp)
        state = g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) * batch
        total = total + cache + state * state_bytes_per_element / tp
    out = np.ceil(total).astype(np.int64)
    return int(out) if np.ndim(out) == 0 else out


def replicated_attention_params(group: AttentionGroup, hidden_size: int) -> int:
    """Attention weights of one layer that every TP rank holds whole (vLLM):
    MLA $D·r_q + r_q + D·(r_{kv} + d_{rope}) + r_{kv}$ (down-projections and their norms);
    KDA $D·d_k + d_k$ (the decay gate's ``f_a``: 120.75 MiB over K3's 69 layers, replicated
    at TP16 in local-inference-lab/vllm#385); Gated DeltaNet its output norm $d_v$; GQA $2H$
    with QK-norm and the output projection's bias $D$ (a row-parallel bias is whole on every rank).

    >>> from k3lib.core.models import get_model
    >>> replicated_attention_params(get_model("kimi-k3").attention[0], 7168)   # K3's MLA
    15140864
    """
    return group.kind_spec.replicated_params(group, hidden_size)


def kv_projection_params(group: AttentionGroup, hidden_size: int, kv_heads: int | None = None) -> int:
    """The K and V projections of one GQA layer for ``kv_heads`` heads (default all $K$):
    $k·(H + H_v)·(D + [bias])$; 0 for other attention kinds.

    >>> from k3lib.core.models import get_model
    >>> kv_projection_params(get_model("llama-3.1-70b").attention[0], 8192)   # 8·256·8192
    16777216
    """
    return group.kind_spec.kv_projection_params(group, hidden_size, kv_heads)


def attention_split_params(group: AttentionGroup, hidden_size: int, tp: int) -> tuple[int, int]:
    """(split, whole) weights of one attention layer under TP: ``split`` is divided over the
    $TP$ ranks, each rank holds ``whole`` in full. The one sharding rule (vLLM's linear layers):

    * :func:`replicated_attention_params` whole;
    * GQA K/V projections (:func:`kv_projection_params`) split while $TP \\le K$; past $K$ each
      rank holds one KV head's K/V in full (``QKVParallelLinear``: $TP/K$ replicas per head);
    * everything else (Q, O, output gates, KDA/GDN projections) split by head.

    >>> from k3lib.core.models import get_model
    >>> g = get_model("llama-3.1-70b").attention[0]
    >>> attention_split_params(g, 8192, 16)[1]     # one KV head's K and V: 256 · 8192
    2097152
    """
    total = group.params_per_layer(hidden_size)
    rep = replicated_attention_params(group, hidden_size)
    if group.kind_spec.grouped_kv and tp > group.kv_heads:
        kv_all = kv_projection_params(group, hidden_size)
        return total - rep - kv_all, rep + kv_projection_params(
            group, hidden_size, kv_heads_per_rank(group.kv_heads, tp)
        )
    return total - rep, rep


@dataclass(frozen=True)
class GroupShare:
    """One parameter group on one TP rank: ``split`` parameters divided over the TP ranks and
    ``whole`` parameters every rank holds in full; $P_{rank} = split/TP + whole$."""

    split: int
    whole: int

    def per_rank(self, tp: int) -> float:
        """$split/TP + whole$ parameters."""
        return self.split / tp + self.whole


def params_per_rank_by_group(
    model: Architecture,
    stage: Architecture | None = None,
    *,
    tp: int,
    first: bool = True,
    last: bool = True,
    pp: int = 1,
    ep: int = 1,
) -> dict[str, GroupShare]:
    """THE sharding rule: each parameter group of ``stage`` (default: all of ``model``'s layers)
    on one GPU of a TP group, as (split ÷TP, whole on every rank) — what
    :func:`stage_weight_bytes_per_rank` (the plan) and vLLM's per-rank weights both read.

    * ``embedding`` (first stage) and ``lm_head`` (last stage) split by vocabulary rows; a tied
      head is 0 at $PP = 1$ and the embedding again on the last stage when $PP > 1$;
    * ``attention``: :func:`attention_split_params` per layer (K/V replicated past $K$, MLA/KDA
      down-projections whole);
    * ``dense_mlp``, ``shared_experts`` split; ``routed_experts`` split, or with expert
      parallelism $\\lceil E/EP \\rceil$ whole experts per rank;
    * ``moe_other`` (routers, shared-expert gates, latent projections: :func:`replicated_moe_params`)
      and ``norms`` whole.

    >>> from k3lib.core.models import get_model
    >>> s = params_per_rank_by_group(get_model("llama-3.1-70b"), tp=16)["attention"]
    >>> s.whole == 80 * 8 * 256 * 8192 // 8      # one KV head's K and V on each rank, 80 layers
    True
    """
    st = model if stage is None else stage
    g = st.param_groups()
    d = model.hidden_size
    attn = [attention_split_params(grp, d, tp) for grp in st.attention]
    rep_moe = st.mlp.moe_layers * replicated_moe_params(st)
    if not last:
        lm_head = 0
    elif model.tie_word_embeddings:
        lm_head = g["embedding"] if pp > 1 else 0
    else:
        lm_head = g["lm_head"]
    if ep > 1:
        routed = GroupShare(0, st.mlp.moe_layers * -(-model.mlp.n_routed_experts // ep) * model.mlp.expert_params(d))
    else:
        routed = GroupShare(g["routed_experts"], 0)
    return {
        "embedding": GroupShare(g["embedding"] if first else 0, 0),
        "lm_head": GroupShare(lm_head, 0),
        "attention": GroupShare(
            sum(grp.count * a for grp, (a, _) in zip(st.attention, attn)),
            sum(grp.count * b for grp, (_, b) in zip(st.attention, attn)),
        ),
        "dense_mlp": GroupShare(g["dense_mlp"], 0),
        "shared_experts": GroupShare(g["shared_experts"], 0),
        "routed_experts": routed,
        "moe_other": GroupShare(g["moe_other"] - rep_moe, rep_moe),
        "norms": GroupShare(0, (st.norms_per_layer * st.num_layers + (1 if last else 0)) * d),
    }


def replicated_moe_params(model: Architecture) -> int:
    """Per MoE layer, what every TP rank holds whole: the router $E·D$ (+ its bias), a
    shared-expert gate $D$, and a latent MoE's down/up projections $2·D·D_e + D_e$ (vLLM
    replicates the latent projections under TP: vLLM's K3 release blog)."""
    m, d = model.mlp, model.hidden_size
    if not m.moe_layers:
        return 0
    router = m.n_routed_experts * d + (m.n_routed_experts if (m.router_bias or m.router_score_bias) else 0)
    latent = (2 * d * m.latent_dim + m.latent_dim) if m.latent_dim else 0
    return router + (d if m.shared_expert_gate else 0) + latent


def stage_weight_bytes_per_rank(
    model: Architecture,
    stage: Architecture,
    *,
    bits: dict[str, float],
    first: bool,
    last: bool,
    pp: int,
    tp: int,
    ep: int = 1,
) -> tuple[int, int, int]:
    """(sharded, replicated, routed experts) weight bytes on one GPU of a pipeline stage, from
    :func:`params_per_rank_by_group` (the one sharding rule) priced at ``bits`` per group:

    * sharded: the ``split`` parameters ÷TP — attention projections, dense MLPs, shared
      experts, and the embedding (first stage) and LM head (last stage; a tied embedding is a
      second copy there when $PP > 1$, priced like the embedding), vocabulary-parallel;
    * replicated: the ``whole`` parameters — norms, routers, MLA/KDA down-projections, and GQA
      K/V projections once TP exceeds the KV heads (one head's K/V on every rank);
    * routed experts ÷TP, or with expert parallelism $\\lceil E/EP \\rceil$ whole experts.
    """
    shares = params_per_rank_by_group(model, stage, tp=tp, first=first, last=last, pp=pp, ep=ep)

    def bit(group: str) -> float:
        return bits.get(group, bits.get("*", 16))

    price = {grp: bit("embedding" if grp == "lm_head" and model.tie_word_embeddings else grp) for grp in shares}
    sharded_bits = sum(sh.split * price[grp] for grp, sh in shares.items() if grp != "routed_experts")
    replicated_bits = sum(sh.whole * price[grp] for grp, sh in shares.items() if grp != "routed_experts")
    r = shares["routed_experts"]
    if ep > 1:
        routed = math.ceil(r.whole * price["routed_experts"] / 8)
    else:
        routed = math.ceil(r.split * price["routed_experts"] / 8 / tp)
    return math.ceil(sharded_bits / 8 / tp), math.ceil(replicated_bits / 8), int(routed)


# ---------------------------------------------------------------- what a total leaves out or assumes

#: engines :func:`loaded_parts_notes` knows (``generic`` = k3lib's own component model)
NOTE_ENGINES = ("vllm", "sglang", "llama.cpp", "transformers", "generic")
#: bytes per element of the linear-attention state, (recurrent, conv), as each engine keeps it, by
#: engine and state kind: each kind's own rule (:attr:`k3lib.core.kinds.LayerKind.state_dtype_bytes`:
#: FP32 for the planner, SGLang and llama.cpp; the model dtype for vLLM and transformers, except KDA's
#: recurrent state under vLLM, FP32)
STATE_DTYPE_BYTES = {
    eng: {k.name: k.state_dtype_bytes[eng] for k in KINDS.values() if k.holds_state}
    for eng in ("generic", "sglang", "llama.cpp", "vllm", "transformers")
}


def _state_kind(group: AttentionGroup) -> str:
    """The state's kind: a parallel Mamba mixer (Falcon-H1) counts as ``mamba``."""
    return state_kind(group).name


def _note_engine(engine: str) -> str:
    e = str(engine).strip().lower().replace("_", "").replace("-", "")
    for known in NOTE_ENGINES:
        if known.replace(".", "") == e.replace(".", "") or (e in ("gguf", "llamacpp") and known == "llama.cpp"):
            return known
    raise K3InputError("engine", f"{engine!r} is not known", ", ".join(NOTE_ENGINES))


def vision_tower_bytes(model: ModelSpec) -> int:
    """Bytes of the vision tower a model's published checkpoint carries beyond its text weights:
    the checkpoint's tensor bytes (``data/checkpoints.csv``, a row whose source says it includes
    the vision tower) less :func:`weights_bytes` of the text model at the same precision; 0 when no
    such row exists. Kimi K3: 1,560,855,539,876 − 1,559,937,995,968 = 917,543,908 B (0.92 GB).

    >>> from k3lib.core.models import get_model
    >>> vision_tower_bytes(get_model("kimi-k3"))
    917543908
    """
    if not isinstance(model, Architecture):
        return 0
    from k3lib.core.checkpoints import checkpoints_for

    for ck in checkpoints_for(model, "vllm"):
        if ck.file_bytes and "vision" in f"{ck.source} {ck.notes}".lower():
            text = weights_bytes(model, ck.weight_format, include_mtp=True)
            return max(0, ck.file_bytes - text)
    return 0


def mtp_weights_bytes(model: ModelSpec, weight_format: str | WeightFormat = "native") -> int:
    """Bytes of the multi-token-prediction modules at ``weight_format``: $W(\\text{with MTP}) - W$
    (0 without MTP modules). DeepSeek-V3: one module of 11.5 B parameters."""
    if not isinstance(model, Architecture) or not model.mtp_layers:
        return 0
    return weights_bytes(model, weight_format, include_mtp=True) - weights_bytes(model, weight_format)


def state_bytes_per_sequence(model: ModelSpec, dtype_bytes: Mapping[str, tuple[float, float]]) -> int:
    """Linear-attention state of one sequence over all layers (before any TP split):
    $\\sum_g n_g·(S^{rec}_g·b_{rec} + S^{conv}_g·b_{conv})$ with ``dtype_bytes[kind]`` =
    $(b_{rec}, b_{conv})$.

    >>> from k3lib.core.models import get_model
    >>> state_bytes_per_sequence(get_model("kimi-k3"), {"kda": (4, 4)})   # 69 × 1,683,456 × 4 B
    464633856
    """
    if not isinstance(model, Architecture):
        return 0
    total = 0.0
    for g in model.attention:
        if g.has_state:
            rec_b, conv_b = dtype_bytes[_state_kind(g)]
            total += g.count * (g.recurrent_state_elements_per_layer * rec_b + g.conv_state_elements_per_layer * conv_b)
    return int(math.ceil(total))


def loaded_parts_notes(spec: ModelSpec, engine: str) -> tuple[str, ...]:
    """What a memory total for ``spec`` under ``engine`` (``vllm``, ``sglang``, ``llama.cpp``,
    ``transformers`` or ``generic``, k3lib's own model) leaves out or assumes, one sentence each
    with its size: the vision tower (:func:`vision_tower_bytes`), MTP modules
    (:func:`mtp_weights_bytes`: loaded only for speculative decoding), and the linear-attention
    state's dtypes (:data:`STATE_DTYPE_BYTES`, compared with the planner's FP32). Empty for a
    guide profile or a model with none of these.

    >>> from k3lib.core.models import get_model
    >>> loaded_parts_notes(get_model("llama-3.1-8b"), "vllm")
    ()
    """
    eng = _note_engine(engine)
    if not isinstance(spec, Architecture):
        return ()
    name = {
        "generic": "the planner",
        "llama.cpp": "llama.cpp",
        "vllm": "vLLM",
        "sglang": "SGLang",
        "transformers": "transformers",
    }[eng]
    out: list[str] = []
    vision = vision_tower_bytes(spec)
    if vision:
        where = (
            "it ships as a separate mmproj GGUF, loaded only with --mmproj"
            if eng == "llama.cpp"
            else "the published checkpoint carries it and a multimodal engine loads it for image input"
        )
        out.append(
            f"vision tower not in the weights total: {vision / GB:,.2f} GB ({vision / GiB:,.2f} GiB), "
            f"the checkpoint's tensors less the text weights; {where}"
        )
    mtp = mtp_weights_bytes(spec)
    if mtp:
        why = {
            "llama.cpp": "llama.cpp skips the MTP (nextn) layers a GGUF carries unless it loads them for MTP "
            "drafting (TENSOR_SKIP in src/llama-model.cpp), and some converters leave them out",
            "generic": "engines load them only for speculative decoding (MTP drafts)",
        }.get(eng, f"{name} loads them only for speculative decoding (MTP drafts)")
        out.append(
            f"MTP left out of the weights: {spec.mtp_layers} module{'s' if spec.mtp_layers > 1 else ''}, "
            f"{spec.params_mtp / 1e9:,.1f} B parameters, {mtp / GB:,.2f} GB ({mtp / GiB:,.2f} GiB) at "
            f"native precision; {why}"
        )
    kinds = sorted({_state_kind(g) for g in spec.attention if g.has_state})
    if kinds:
        planner = state_bytes_per_sequence(spec, STATE_DTYPE_BYTES["generic"])
        engine_b = state_bytes_per_sequence(spec, STATE_DTYPE_BYTES[eng])

        def dt(b: float) -> str:
            return "FP32" if b == 4 else "BF16"

        how = "; ".join(
            f"{k.upper()} recurrent {dt(STATE_DTYPE_BYTES[eng][k][0])}, conv {dt(STATE_DTYPE_BYTES[eng][k][1])}"
            for k in kinds
        )
        text = (
            f"linear-attention state: {name} keeps it as {how}: {engine_b / MiB:,.1f} MiB per sequence "
            f"over {sum(g.count for g in spec.attention if g.has_state)} layers (before the TP split)"
        )
        if engine_b != planner:
            text += (
                f"; the general planner keeps it all in FP32 ({planner / MiB:,.1f} MiB per sequence, "
                f"{(planner / engine_b - 1) * 100:+.1f} %)"
            )
        out.append(text)
    return tuple(out)
