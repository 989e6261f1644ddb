"""The four memory components: weights, KV cache, activation, runtime overhead.

The one equation (bytes):

$$M_{total} = W + B·T·kv_{tok} + A + O$$

where $W$ is the weights, $kv_{tok}$ the KV bytes per token (dtype-dependent),
$T$ the context, $B$ the batch, $A$ the activation buffers and $O$ the runtime
overhead (per GPU: CUDA context, NCCL buffers, fragmentation).
"""
from __future__ import annotations

import math

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.models import ModelSpec, PublishedProfile
from k3lib.core.precisions import KVDtype, WeightFormat, get_kv_dtype, get_weight_format
from k3lib.core.units import GiB

#: tokens of one prefill chunk (vLLM's default ``max_num_batched_tokens`` for chunked prefill)
DEFAULT_PREFILL_CHUNK_TOKENS = 8192


def weight_bits_by_group(model: Architecture, weight_format: "str | WeightFormat") -> dict[str, float]:
    """Bits per weight for each parameter group: one format everywhere, or the
    model's native mix (e.g. K3: MXFP4 routed experts, BF16 elsewhere)."""
    fmt = get_weight_format(weight_format)
    if not fmt.is_native:
        return {"*": fmt.bits_per_weight}
    return {group: get_weight_format(f).bits_per_weight for group, f in model.native_formats.items()}


def weights_bytes_by_group(model: Architecture, weight_format: "str | WeightFormat") -> dict[str, int]:
    """Bytes per parameter group = params × bits / 8 (rounded up)."""
    bits = weight_bits_by_group(model, weight_format)
    return {g: int(math.ceil(n * bits.get(g, bits.get("*", 16)) / 8)) for g, n in model.param_groups().items()}


def weights_bytes(model: ModelSpec, weight_format: "str | WeightFormat") -> int:
    """Weight bytes: Σ params × bits/8 for an architecture; the published figure
    for a guide profile."""
    fmt = get_weight_format(weight_format)
    if isinstance(model, PublishedProfile):
        return model.weights_bytes_by_tier[model.tier_for(fmt.id)]
    return model.weights_bytes(weight_bits_by_group(model, fmt))


def kv_bytes_per_token(model: ModelSpec, kv_dtype: "str | KVDtype") -> int:
    """KV bytes per token of context (layers whose cache grows):
    elements per token × bytes per element."""
    return model.kv_bytes_per_token(get_kv_dtype(kv_dtype).bytes_per_element)


def kv_cache_bytes(model: ModelSpec, *, context_tokens: int, batch: int, kv_dtype: "str | KVDtype",
                   state_bytes_per_element: float = 4.0) -> int:
    """KV cache = $B·T·kv_{tok}$ (+ window-capped layers + linear-attention state).

    >>> from k3lib.core.models import get_model
    >>> kv_cache_bytes(get_model("kimi-k3@guide-000"), context_tokens=262144, batch=1, kv_dtype="fp8") / 2**30
    32.0
    """
    dt = get_kv_dtype(kv_dtype)
    if isinstance(model, PublishedProfile):
        return batch * context_tokens * model.kv_bytes_per_token(dt.bytes_per_element)
    return model.kv_cache_bytes(context_tokens=context_tokens, batch=batch, bytes_per_element=dt.bytes_per_element,
                                state_bytes_per_element=state_bytes_per_element)


def activation_bytes(model: ModelSpec, *, batch: int,
                     prefill_chunk_tokens: int = DEFAULT_PREFILL_CHUNK_TOKENS) -> int:
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
    widest = max(m.dense_intermediate if m.dense_layers else 0,
                 m.experts_per_token * m.moe_intermediate + m.n_shared_experts * m.shared_intermediate)
    per_seq = prefill_chunk_tokens * 2 * (4 * model.hidden_size + 2 * widest) + model.vocab_size * 4
    return batch * per_seq


def overhead_bytes_per_gpu(*, tp: int, payload_bytes_per_gpu: int, cuda_context_bytes: int = GiB,
                           nccl_bytes_per_peer: int = GiB // 2, fragmentation_fraction: float = 0.05) -> int:
    """Runtime overhead on one GPU:

    $O = C_{ctx} + (TP-1)·N_{peer} + f·P$ — CUDA context, NCCL all-reduce buffers that
    grow with the TP group (0.5 GiB per peer gives 3.5 GiB at TP=8, inside the
    guide's 2–5 GB), and fragmentation as a fraction $f$ of the GPU's payload $P$.
    """
    if tp < 1:
        raise K3InputError("tp", f"{tp!r} must be at least 1")
    if not 0 <= fragmentation_fraction < 1:
        raise K3InputError("fragmentation_fraction", f"{fragmentation_fraction!r} must be in [0, 1)")
    return int(cuda_context_bytes + (tp - 1) * nccl_bytes_per_peer + fragmentation_fraction * payload_bytes_per_gpu)
