"""Hugging Face transformers, its whole profile: the DynamicCache (no paging, expanded MLA K/V) and
the estimate for one GPU under ``device_map="auto"`` (the layers spread over the GPUs, each holding
its share of the weights, of the cache and of the activation):

$$KV_{avail} = C_{gpu} - \\lceil W / N \\rceil - \\lceil A / N \\rceil - O, \\qquad
KV_{need} = \\lceil DynamicCache(T, B) / N \\rceil$$

(:func:`transformers_estimate` moved unchanged from ``estimate_for_engine``'s last branch.)
"""

from __future__ import annotations

import math
from typing import Any

from k3lib.core.kinds import kind_of
from k3lib.core.memory import activation_bytes, weights_bytes_by_group
from k3lib.core.units import GiB
from k3lib.engines.base import EngineEstimate, EstimateInputs, _gib, _resolve_model

# ---------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------


def transformers_cache_bytes(model: Any, *, context_tokens: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """DynamicCache bytes: expanded K/V per layer (MLA too), windowed layers capped,
    linear-attention conv state at the model dtype and recurrent state in fp32."""
    arch, _ = _resolve_model(model)
    n = 0.0
    for g in arch.attention:
        k = kind_of(g)
        if k.caches_kv_per_token:  # MLA expanded to every head's K and V; a window caps its tokens
            n += g.count * k.transformers_cache_elements_per_token(g) * k.cached_tokens(g, context_tokens) * dtype_bytes
        else:
            n += g.count * (g.conv_state_elements_per_layer * dtype_bytes + g.recurrent_state_elements_per_layer * 4)
    return int(math.ceil(n * batch))


def transformers_estimate(x: EstimateInputs) -> EngineEstimate:
    """One GPU under transformers' ``device_map="auto"`` (``dtype_bytes``: the model's dtype, default the file's)."""
    prof, model, arch, loaded, hw = x.profile, x.model, x.arch, x.loaded, x.gpu
    n_gpus, ctx, n_batch, weights, dtype_bytes = x.gpus, x.context_tokens, x.batch, x.weights, x.dtype_bytes
    base_b = x.base_dtype_bytes
    total = hw.memory_bytes("usable")
    notes = x.implied_pp_notes()
    if loaded is not None and loaded.exact and weights == "native":
        w_all = loaded.text_weights_bytes() + loaded.weights_bytes_by_group.get("vision", 0)
    else:
        w_all = sum(weights_bytes_by_group(arch, weights).values())
        if dtype_bytes:
            w_all = w_all * dtype_bytes // 2
        if loaded is not None:
            w_all += loaded.vision_params * base_b
    w = -(-w_all // n_gpus)
    need = -(-transformers_cache_bytes(model, context_tokens=ctx, batch=n_batch, dtype_bytes=base_b) // n_gpus)
    act = -(-activation_bytes(arch, batch=n_batch, prefill_chunk_tokens=ctx) // n_gpus)
    rt = int(0.5 * GiB)
    avail = total - w - act - rt
    fits = need <= avail
    notes.append("device_map='auto' spreads layers over the GPUs; each holds its layers' weights and cache")
    reason = f"{'fits' if fits else 'does not fit'}: DynamicCache {_gib(need)} per GPU, {_gib(max(avail, 0))} left"
    per_tok = need / max(1, ctx * n_batch)
    return EngineEstimate(
        prof.id,
        prof.version,
        arch.id,
        hw.id,
        n_gpus,
        1,
        ctx,
        n_batch,
        f"model dtype ({base_b} B)",
        total,
        total,
        w,
        act,
        rt,
        0,
        max(avail, 0),
        need,
        int(max(avail, 0) // per_tok) if per_tok else 0,
        (max(avail, 0) / need * n_batch) if need else 0.0,
        fits,
        reason,
        {},
        tuple(notes),
    )
