"""llama.cpp: KV cells and rows per cache type, recurrent state, compute buffer and
where the weights sit, as rules read from its source."""
from __future__ import annotations

from typing import Any

from k3lib.core.architecture import LINEAR_KINDS
from k3lib.core.errors import K3InputError
from k3lib.engines.base import _resolve_model, _round_up

# ---------------------------------------------------------------------------
# llama.cpp
# ---------------------------------------------------------------------------

#: (elements per block, bytes per block) of llama.cpp cache types
LLAMACPP_CACHE_TYPES = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18),
                        "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "iq4_nl": (32, 18)}


def _llamacpp_row_bytes(cache_type: str, n: int) -> float:
    key = str(cache_type).lower()
    if key not in LLAMACPP_CACHE_TYPES:
        raise K3InputError("cache_type", f"{cache_type!r} is not a llama.cpp cache type",
                           ", ".join(LLAMACPP_CACHE_TYPES))
    block, size = LLAMACPP_CACHE_TYPES[key]
    if n % block:
        raise K3InputError("cache_type", f"{cache_type} needs rows that are a multiple of {block}; this model's "
                           f"row is {n}")
    return n // block * size


def llamacpp_kv_cache_bytes(model: Any, *, context_tokens: int, n_seq: int = 1, flash_attn: bool = True,
                            type_k: str = "f16", type_v: str = "f16", n_ubatch: int = 512, swa_full: bool = False,
                            kv_unified: bool = False) -> dict[str, int]:
    """llama.cpp's KV and recurrent-state buffers for ``n_seq`` sequences of ``context_tokens``:
    ``k`` and ``v`` (as its 'K (f16): … MiB, V (f16): … MiB' line), ``full``/``sliding`` by
    layer kind, ``state`` (recurrent), ``total``; K bytes = layers × cells × streams × K row bytes
    (src/llama-kv-cache.cpp, ggml-org/llama.cpp).

    >>> kv = llamacpp_kv_cache_bytes("llama-3.1-8b", context_tokens=8000)    # padded to 8,192 cells
    >>> kv["cells"], kv["total"] // 2**20                                     # MiB, as llama.cpp prints
    (8192, 1024)
    """
    arch, _ = _resolve_model(model)
    pad = 256 if flash_attn else 32
    if not flash_attn and str(type_v).lower() not in ("f16", "f32", "bf16"):
        raise K3InputError("type_v", "a quantized V cache needs flash attention in llama.cpp", "f16, or flash_attn=True")
    streams = 1 if kv_unified else n_seq
    ctx_per_stream = context_tokens * n_seq if kv_unified else context_tokens
    cells = _round_up(ctx_per_stream, pad)
    out = {"cells": cells, "streams": streams, "full": 0, "sliding": 0, "state": 0, "k": 0, "v": 0}
    for g in arch.attention:
        if g.kind in LINEAR_KINDS:
            out["state"] += int(g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer)
                                * 4 * n_seq)
            continue
        if g.kind == "mla":
            k_row = _llamacpp_row_bytes(type_k, g.kv_lora_rank + g.qk_rope_head_dim)
            v_row = _llamacpp_row_bytes(type_v, g.kv_lora_rank)
        else:
            k_row = _llamacpp_row_bytes(type_k, g.kv_heads * g.head_dim)
            v_row = _llamacpp_row_bytes(type_v, g.kv_heads * (g.v_head_dim or g.head_dim))
        n_cells = cells
        if g.kind == "sliding" and not swa_full:
            n_cells = min(cells, _round_up(g.window_tokens * (n_seq if kv_unified else 1) + n_ubatch, pad))
        size = int(g.count * n_cells * streams * (k_row + v_row))
        out["k"] += int(g.count * n_cells * streams * k_row)      # llama.cpp prints K and V separately
        out["v"] += int(g.count * n_cells * streams * v_row)
        out["sliding" if g.kind == "sliding" else "full"] += size
        if g.kind == "sliding":
            out["swa_cells"] = n_cells
    out["total"] = out["full"] + out["sliding"] + out["state"]
    return out


def llamacpp_compute_buffer_bytes(model: Any, *, context_tokens: int, n_seq: int = 1, flash_attn: bool = True,
                                  n_ubatch: int = 512) -> int:
    """Approximate CUDA compute buffer: n_ubatch × 4 B × (V + 4D + 2·I), plus the
    f32 attention scores (heads × n_ubatch × cells) without flash attention."""
    arch, _ = _resolve_model(model)
    m = arch.mlp
    width = max(m.dense_intermediate if m.dense_layers else 0,
                m.experts_per_token * m.moe_intermediate + m.n_shared_experts * m.shared_intermediate)
    b = n_ubatch * 4 * (arch.vocab_size + 4 * arch.hidden_size + 2 * width)
    if not flash_attn:
        cells = _round_up(context_tokens * n_seq, 32)
        b += arch.attention_heads * n_ubatch * cells * 4
    return int(b)


def llamacpp_weights_bytes(model: Any, *, weights: str = "native") -> dict[str, int]:
    """GPU and host weight bytes with every layer offloaded: token_embd stays on the host."""
    from k3lib.core.memory import weights_bytes_by_group

    arch, loaded = _resolve_model(model)
    if loaded is not None and loaded.exact and weights == "native":
        groups = {g: b for g, b in loaded.weights_bytes_by_group.items() if g not in ("vision",)}
    else:
        groups = weights_bytes_by_group(arch, weights if weights != "native" else "native")
    emb = groups.get("embedding", 0)
    gpu = sum(groups.values()) - emb
    if arch.tie_word_embeddings:
        gpu += emb                                   # the tied output head is duplicated onto the GPU
    return {"gpu": gpu, "host": emb, "total": sum(groups.values())}


