"""Hugging Face transformers: the DynamicCache (no paging, expanded MLA K/V)."""
from __future__ import annotations

import math
from typing import Any

from k3lib.engines.base import _resolve_model

# ---------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------

def transformers_cache_bytes(model: Any, *, context_tokens: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """DynamicCache bytes: expanded K/V per layer (MLA too), windowed layers capped,
    linear-attention conv state at the model dtype and recurrent state in fp32."""
    arch, _ = _resolve_model(model)
    n = 0.0
    for g in arch.attention:
        if g.kind == "mla":
            per_tok = g.num_heads * (g.qk_nope_head_dim + g.qk_rope_head_dim + g.v_head_dim)
            n += g.count * per_tok * context_tokens * dtype_bytes
        elif g.kind in ("full", "sliding"):
            tokens = min(context_tokens, g.window_tokens) if g.kind == "sliding" else context_tokens
            n += g.count * g.kv_elements_per_token_per_layer * tokens * dtype_bytes
        else:
            n += g.count * (g.conv_state_elements_per_layer * dtype_bytes + g.recurrent_state_elements_per_layer * 4)
    return int(math.ceil(n * batch))


