"""Hugging Face ``config.json`` → :class:`~k3lib.architecture.Architecture`.

Reads only the config (nothing is downloaded). Rules that estimators commonly
get wrong are explicit here:

* ``head_dim`` is taken from the config when given, never recomputed as
  hidden/heads (Qwen3-Next: 256, not 2048/16 = 128).
* MLA models (``kv_lora_rank`` set) cache a latent of ``kv_lora_rank +
  qk_rope_head_dim`` per layer, not GQA keys and values.
* Hybrid linear-attention models (Kimi Linear / K3 ``linear_attn_config``,
  Qwen3-Next ``full_attention_interval``) count only their full-attention layers
  in the per-token cache, and add a constant per-sequence state.
* Sliding-window layers (``layer_types``, ``sliding_window_pattern``) cap at the
  window.
"""
from __future__ import annotations

import warnings
from typing import Any, Mapping

from .architecture import AttentionGroup, Architecture, MLPSpec
from .errors import K3InputError

KNOWN_MODEL_TYPES = (
    "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "qwen3_next", "mixtral",
    "deepseek_v3", "kimi_k2", "kimi_linear", "kimi_k3", "gpt_oss", "gemma3",
    "gemma3_text", "llama4", "llama4_text", "minimax_m2", "glm4_moe",
)


class AssumedFieldWarning(UserWarning):
    """A config lacked a field and a standard default was assumed."""


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    tc = cfg.get("text_config")
    return tc if isinstance(tc, Mapping) else cfg


def _req(c: Mapping[str, Any], key: str, source: str) -> int:
    v = c.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise K3InputError(f"config.{key}", f"missing or not a positive integer in {source} (got {v!r})")
    return v


def _native_formats(cfg: Mapping[str, Any], tc: Mapping[str, Any]) -> dict[str, str]:
    q = tc.get("quantization_config") or cfg.get("quantization_config") or {}
    method = str(q.get("quant_method", "")).lower()
    fmt = str(q.get("format", "")).lower()
    if method == "mxfp4" or "mxfp4" in fmt:
        return {"routed_experts": "mxfp4", "*": "bf16"}
    if method == "fp8":
        block = q.get("weight_block_size")
        body = "fp8-block" if block else "fp8"
        # embeddings, lm_head, norms and routers stay in BF16
        return {"*": body, "embedding": "bf16", "lm_head": "bf16", "norms": "bf16", "moe_other": "bf16"}
    return {"*": "bf16"}


def architecture_from_hf_config(cfg: Mapping[str, Any], *, id: str, name: str | None = None,
                                source: str = "") -> Architecture:
    """Build an :class:`Architecture` from a parsed config.json dict."""
    if not isinstance(cfg, Mapping):
        raise K3InputError("config", "must be a JSON object")
    tc = _text_config(cfg)
    mtype = str(cfg.get("model_type") or tc.get("model_type") or "")
    src = source or "config.json"
    if mtype not in KNOWN_MODEL_TYPES:
        warnings.warn(f"model_type {mtype!r} is not one k3lib knows; reading the standard fields "
                      "(hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, "
                      "head_dim or hidden/heads, intermediate_size, vocab_size) and assuming a dense "
                      "gated-MLP transformer with full attention", AssumedFieldWarning, stacklevel=2)
    d = _req(tc, "hidden_size", src)
    n_layers = _req(tc, "num_hidden_layers", src)
    heads = _req(tc, "num_attention_heads", src)
    vocab = _req(tc, "vocab_size", src)
    kv_heads = tc.get("num_key_value_heads") or heads
    head_dim = tc.get("head_dim")
    if not head_dim:
        head_dim = d // heads
        if mtype not in ("llama", "mistral", "qwen2", "mixtral", "") and not tc.get("kv_lora_rank"):
            warnings.warn(f"head_dim missing: assumed hidden_size / num_attention_heads = {head_dim}",
                          AssumedFieldWarning, stacklevel=2)
    max_ctx = (tc.get("max_position_embeddings") or tc.get("model_max_length")
               or cfg.get("max_position_embeddings") or 4096)
    groups: list[AttentionGroup] = []
    gqa = dict(num_heads=heads, kv_heads=kv_heads, head_dim=head_dim,
               qkv_bias=bool(tc.get("attention_bias") or mtype == "qwen2"),
               o_bias=bool(tc.get("attention_bias") and mtype == "gpt_oss"),
               qk_norm=mtype in ("qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text", "glm4_moe")
               or bool(tc.get("use_qk_norm")),
               sinks=mtype == "gpt_oss")
    if mtype == "qwen2" and "attention_bias" not in tc:
        gqa["qkv_bias"] = True
    lac = tc.get("linear_attn_config")
    if tc.get("kv_lora_rank"):
        mla = dict(kind="mla", num_heads=heads, q_lora_rank=tc.get("q_lora_rank") or 0,
                   kv_lora_rank=tc["kv_lora_rank"], qk_nope_head_dim=tc.get("qk_nope_head_dim", 128),
                   qk_rope_head_dim=tc.get("qk_rope_head_dim", 64), v_head_dim=tc.get("v_head_dim", 128),
                   output_gate=bool(tc.get("mla_use_output_gate")))
        if isinstance(lac, Mapping):
            n_full = len(lac.get("full_attn_layers") or [])
            n_kda = len(lac.get("kda_layers") or [])
            if n_full + n_kda != n_layers:
                raise K3InputError("config.linear_attn_config",
                                   f"kda_layers ({n_kda}) + full_attn_layers ({n_full}) != num_hidden_layers ({n_layers})")
            groups.append(AttentionGroup(count=n_full, **mla))
            groups.append(AttentionGroup(kind="kda", count=n_kda, num_heads=lac["num_heads"],
                                         head_dim=lac["head_dim"], v_head_dim=lac["head_dim"],
                                         conv_kernel=lac.get("short_conv_kernel_size", 4),
                                         full_rank_gate=bool(lac.get("use_full_rank_gate"))))
        else:
            groups.append(AttentionGroup(count=n_layers, **mla))
    elif mtype == "qwen3_next" or tc.get("full_attention_interval"):
        interval = tc.get("full_attention_interval", 4)
        n_full = n_layers // interval
        groups.append(AttentionGroup(kind="full", count=n_full, output_gate=True, **gqa))
        groups.append(AttentionGroup(kind="gdn", count=n_layers - n_full, num_heads=tc["linear_num_key_heads"],
                                     linear_value_heads=tc["linear_num_value_heads"],
                                     head_dim=tc["linear_key_head_dim"], v_head_dim=tc["linear_value_head_dim"],
                                     conv_kernel=tc.get("linear_conv_kernel_dim", 4)))
    else:
        window = tc.get("sliding_window") or tc.get("attention_chunk_size") or 0
        layer_types = tc.get("layer_types")
        if mtype in ("qwen2", "qwen3", "qwen3_moe") and not tc.get("use_sliding_window"):
            window = 0
        if isinstance(layer_types, list) and window:
            n_slide = sum(1 for t in layer_types if "sliding" in str(t) or "chunked" in str(t))
        elif tc.get("sliding_window_pattern") and window:
            p = tc["sliding_window_pattern"]
            n_slide = n_layers - sum(1 for i in range(n_layers) if (i + 1) % p == 0)
        elif mtype.startswith("llama4") and window:
            n_slide = n_layers - n_layers // 4  # every 4th layer is global NoPE
        elif window and mtype == "mistral":
            n_slide = n_layers
        else:
            n_slide = 0
        if n_slide:
            groups.append(AttentionGroup(kind="sliding", count=n_slide, window_tokens=window, **gqa))
        if n_layers - n_slide:
            groups.append(AttentionGroup(kind="full", count=n_layers - n_slide, **gqa))
    # ---- MLP ----
    n_experts = (tc.get("n_routed_experts") or tc.get("num_experts") or tc.get("num_local_experts") or 0)
    if mtype in ("qwen3_next",) or tc.get("mlp_only_layers") == [] and n_experts:
        pass
    top_k = tc.get("num_experts_per_tok") or tc.get("num_experts_per_token") or tc.get("experts_per_token") or 0
    if n_experts:
        first_dense = tc.get("first_k_dense_replace", 0) or 0
        step = tc.get("interleave_moe_layer_step") or tc.get("moe_layer_freq") or 1
        moe_layers = len([i for i in range(first_dense, n_layers) if (i - first_dense) % step == step - 1 or step == 1])
        dense_layers = n_layers - moe_layers
        moe_inter = tc.get("moe_intermediate_size") or tc.get("intermediate_size")
        n_shared = tc.get("n_shared_experts") or tc.get("num_shared_experts") or 0
        shared_inter = tc.get("shared_expert_intermediate_size") or tc.get("shared_intermediate_size") or 0
        if mtype.startswith("llama4"):
            n_shared, shared_inter = 1, tc.get("intermediate_size")
        if n_shared and not shared_inter:
            shared_inter = moe_inter
        if mtype == "qwen3_next" and shared_inter:
            n_shared = n_shared or 1
        dense_inter = tc.get("intermediate_size_mlp") or tc.get("intermediate_size") or 0
        mlp = MLPSpec(dense_layers=dense_layers, dense_intermediate=dense_inter if dense_layers else 0,
                      moe_layers=moe_layers, n_routed_experts=n_experts, experts_per_token=top_k,
                      moe_intermediate=moe_inter, n_shared_experts=n_shared, shared_intermediate=shared_inter,
                      latent_dim=tc.get("routed_expert_hidden_size") or 0,
                      expert_bias=mtype == "gpt_oss", router_bias=mtype == "gpt_oss",
                      router_score_bias=mtype in ("deepseek_v3", "kimi_k2", "kimi_linear", "kimi_k3", "glm4_moe", "minimax_m2")
                      or tc.get("topk_method") == "noaux_tc",
                      shared_expert_gate=mtype == "qwen3_next")
    else:
        mlp = MLPSpec(dense_layers=n_layers, dense_intermediate=_req(tc, "intermediate_size", src))
    tie_default = mtype.startswith("gemma")  # Gemma ties input and output embeddings
    tie = bool(tc.get("tie_word_embeddings", cfg.get("tie_word_embeddings", tie_default)))
    return Architecture(
        id=id, name=name or id, hidden_size=d, vocab_size=vocab, num_layers=n_layers,
        attention=tuple(groups), mlp=mlp, max_context_tokens=int(max_ctx), tie_word_embeddings=tie,
        native_formats=_native_formats(cfg, tc), source=src, family=mtype,
    )
