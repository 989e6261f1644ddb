"""Typed, bounded validation of a Hugging Face ``config.json`` before any formula reads it.

A config is checked with pydantic models (strict integers, no string or list where a
number belongs, booleans are not numbers) and physical bounds, then by cross-field
rules. Every failure is one :class:`~k3lib.core.errors.K3InputError` naming the field
(``config.text_config.num_key_value_heads``) and what is allowed — never a
``TypeError`` from deep inside a formula, never a string repeated into gigabytes
(``"n_shared_experts": "1"`` used to be multiplied as a string).

Bounds (any value past them is corruption, not a model):

* layers ≤ 10,000 (the deepest published LLMs have ~130);
* widths (hidden, intermediate, expert, latent sizes) ≤ 2^22 = 4,194,304 (the widest
  published FFN is ~10^5);
* heads, head dims, ranks, expert counts ≤ 2^16 = 65,536 (the most routed experts
  published are 384–1,024);
* vocabulary ≤ 2^24 = 16,777,216 (the largest published are ~260k);
* positions (``max_position_embeddings``, windows) ≤ 2^31 − 1.

Cross-field rules: ``num_key_value_heads`` ≤ ``num_attention_heads`` and divides it
(GQA groups are whole); ``len(layer_types)`` = ``num_hidden_layers``;
``first_k_dense_replace`` ≤ ``num_hidden_layers``; ``num_kv_shared_layers`` <
``num_hidden_layers``; a per-layer ``intermediate_size`` list has one entry per layer; ``num_experts_per_tok`` ≤ the
routed expert count; ``quantization_config.bits`` (GPTQ/AWQ) is 4 or 8 and
``num_bits`` (compressed-tensors) one of 4 or 8, as numbers; a ``group_size`` is a positive
integer or −1; ``ignore`` / ``modules_to_not_convert`` / ``llm_int8_skip_modules`` are lists of
names; bitsandbytes' ``load_in_4bit`` / ``load_in_8bit`` / ``bnb_4bit_use_double_quant`` are
booleans and ``bnb_4bit_quant_type`` is nf4 or fp4.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from k3lib.core.errors import K3InputError

MAX_LAYERS = 10_000
MAX_WIDTH = 2**22
MAX_HEADS = 2**16
MAX_VOCAB = 2**24
MAX_POSITIONS = 2**31 - 1

Layers = Annotated[StrictInt, Field(ge=1, le=MAX_LAYERS)]
LayerCount0 = Annotated[StrictInt, Field(ge=0, le=MAX_LAYERS)]
Width = Annotated[StrictInt, Field(ge=1, le=MAX_WIDTH)]
Width0 = Annotated[StrictInt, Field(ge=0, le=MAX_WIDTH)]
Small = Annotated[StrictInt, Field(ge=1, le=MAX_HEADS)]
Small0 = Annotated[StrictInt, Field(ge=0, le=MAX_HEADS)]
Positions = Annotated[StrictInt, Field(ge=0, le=MAX_POSITIONS)]
Number = Annotated[StrictInt | StrictFloat, Field(allow_inf_nan=False)]


class _Lenient(BaseModel):
    """Unknown keys pass through untouched; known ones must have the right type."""

    model_config = ConfigDict(extra="allow", frozen=True)


class RopeScaling(_Lenient):
    factor: Annotated[Number, Field(gt=0, le=1024)] | None = None
    original_max_position_embeddings: Positions | None = None
    type: StrictStr | None = None
    rope_type: StrictStr | None = None


class LinearAttnConfig(_Lenient):
    num_heads: Small | None = None
    head_dim: Small | None = None
    short_conv_kernel_size: Small | None = None
    full_attn_layers: list[LayerCount0] | None = Field(default=None, max_length=MAX_LAYERS)
    kda_layers: list[LayerCount0] | None = Field(default=None, max_length=MAX_LAYERS)


class VisionConfig(_Lenient):
    hidden_size: Width0 | None = None
    intermediate_size: Width0 | None = None
    num_hidden_layers: LayerCount0 | None = None
    patch_size: Small | None = None
    num_channels: Small | None = None
    image_size: Small | None = None
    init_pos_emb_height: Small | None = None
    init_pos_emb_width: Small | None = None
    merge_kernel_size: list[Small] | None = Field(default=None, max_length=4)
    projector_input_dim: Width0 | None = None
    projector_output_dim: Width0 | None = None
    vision_output_dim: Width0 | None = None
    pixel_shuffle_ratio: Annotated[Number, Field(gt=0, le=1)] | None = None


class TextConfig(_Lenient):
    """The fields k3lib's formulas read, each optional here (presence is checked where used)."""

    hidden_size: Width | None = None
    num_hidden_layers: Layers | None = None
    num_attention_heads: Small | None = None
    num_key_value_heads: Small | None = None
    head_dim: Small | None = None
    vocab_size: Annotated[StrictInt, Field(ge=1, le=MAX_VOCAB)] | None = None
    intermediate_size: Width0 | Annotated[list[Width0], Field(min_length=1, max_length=MAX_LAYERS)] | None = None
    intermediate_size_mlp: Width0 | None = None
    moe_intermediate_size: Width0 | None = None
    shared_expert_intermediate_size: Width0 | None = None
    shared_intermediate_size: Width0 | None = None
    routed_expert_hidden_size: Width0 | None = None
    max_position_embeddings: Positions | None = None
    sliding_window: Positions | None = None
    attention_chunk_size: Positions | None = None
    sliding_window_pattern: Layers | None = None
    max_window_layers: Positions | None = None
    layer_types: list[StrictStr] | None = Field(default=None, max_length=MAX_LAYERS)
    # KV sharing, per-layer embeddings (Gemma-3n, Gemma 4), MTP modules (DeepSeek-V3, GLM-4.5)
    num_kv_shared_layers: LayerCount0 | None = None
    global_head_dim: Small | None = None
    num_global_key_value_heads: Small | None = None
    attention_k_eq_v: StrictBool | None = None
    use_double_wide_mlp: StrictBool | None = None
    hidden_size_per_layer_input: Width0 | None = None
    vocab_size_per_layer_input: Annotated[StrictInt, Field(ge=0, le=MAX_VOCAB)] | None = None
    num_nextn_predict_layers: LayerCount0 | None = None
    # MLA: the latent's dims must be numbers when given (null is not "default")
    kv_lora_rank: Small0 | None = None
    q_lora_rank: Small0 | None = None
    qk_nope_head_dim: Small0 = 128
    qk_rope_head_dim: Small0 = 64
    v_head_dim: Small = 128
    # MoE
    n_routed_experts: Small0 | None = None
    num_experts: Small0 | None = None
    num_local_experts: Small0 | None = None
    num_experts_per_tok: Small0 | None = None
    num_experts_per_token: Small0 | None = None
    experts_per_token: Small0 | None = None
    n_shared_experts: Small0 | None = None
    num_shared_experts: Small0 | None = None
    first_k_dense_replace: LayerCount0 | None = None
    interleave_moe_layer_step: LayerCount0 | None = None
    moe_layer_freq: LayerCount0 | None = None
    decoder_sparse_step: LayerCount0 | None = None
    # hybrid linear attention
    full_attention_interval: Layers | None = None
    linear_num_key_heads: Small | None = None
    linear_num_value_heads: Small | None = None
    linear_key_head_dim: Small | None = None
    linear_value_head_dim: Small | None = None
    linear_conv_kernel_dim: Small | None = None
    linear_attn_config: LinearAttnConfig | None = None
    # rotary
    rotary_dim: Small0 | None = None
    partial_rotary_factor: Annotated[Number, Field(gt=0, le=1)] | None = None
    rope_scaling: RopeScaling | None = None
    tie_word_embeddings: StrictBool | None = None
    quantization_config: Mapping[str, Any] | None = None


def _first_error(exc: ValidationError, prefix: str, source: str) -> K3InputError:
    err = exc.errors(include_url=False)[0]
    # a union's member tag ("int", "float", "function-after[...]") is not a field name
    loc = ".".join(str(x) for x in err["loc"] if not (isinstance(x, str) and (x in _TAGS or "[" in x)))
    got = err.get("input")
    text = repr(got)
    if len(text) > 60:
        text = text[:57] + "..."
    return K3InputError(prefix + loc, f"{text} in {source}: {err['msg'].lower()}", _ALLOWED.get(err["type"]))


_TAGS = {"int", "float", "bool", "str", "list", "dict"}
_ALLOWED = {
    "int_type": "a JSON integer",
    "int_parsing": "a JSON integer",
    "bool_type": "true or false",
    "list_type": "a JSON list",
    "string_type": "a JSON string",
    "model_type": "a JSON object",
    "dict_type": "a JSON object",
    "float_type": "a JSON number",
    "less_than_equal": None,
    "greater_than_equal": None,
}


def _check_quantization(q: Any, prefix: str, source: str) -> None:
    field = prefix + "quantization_config"
    if q is None:
        return
    if not isinstance(q, Mapping):
        raise K3InputError(field, f"{q!r} in {source} is not an object", "a JSON object")
    method = str(q.get("quant_method", "")).lower()
    if "bits" in q and method in ("gptq", "awq", ""):
        bits = q["bits"]
        if isinstance(bits, bool) or not isinstance(bits, int) or bits not in (4, 8):
            raise K3InputError(
                field + ".bits", f"{bits!r} in {source} is not a bit width k3lib knows", "the number 4 or 8"
            )
    if "group_size" in q and method in ("gptq", "awq", ""):
        _check_group_size(q["group_size"], field + ".group_size", source)
    for key in ("ignore", "modules_to_not_convert", "llm_int8_skip_modules"):
        v = q.get(key)
        if v is not None and (not isinstance(v, list) or not all(isinstance(x, str) for x in v)):
            raise K3InputError(
                f"{field}.{key}",
                f"{v!r:.60} in {source} is not a list of module names",
                "a JSON list of strings, or null",
            )
    for key in ("load_in_4bit", "load_in_8bit", "bnb_4bit_use_double_quant"):
        if key in q and not isinstance(q[key], bool):
            raise K3InputError(f"{field}.{key}", f"{q[key]!r} in {source} is not true or false", "true or false")
    qt = q.get("bnb_4bit_quant_type")
    if q.get("load_in_4bit") and qt is not None and str(qt).lower() not in ("nf4", "fp4"):
        raise K3InputError(
            f"{field}.bnb_4bit_quant_type", f"{qt!r} in {source} is not a 4-bit type k3lib knows", "nf4 or fp4"
        )
    for name, group in (q.get("config_groups") or {}).items() if isinstance(q.get("config_groups"), Mapping) else ():
        w = group.get("weights") if isinstance(group, Mapping) else None
        if isinstance(w, Mapping) and "num_bits" in w:
            bits = w["num_bits"]
            if isinstance(bits, bool) or not isinstance(bits, int) or bits not in (4, 8):
                raise K3InputError(
                    f"{field}.config_groups.{name}.weights.num_bits",
                    f"{bits!r} in {source} is not a bit width k3lib knows",
                    "the number 4 or 8",
                )
        if isinstance(w, Mapping) and w.get("group_size") is not None:
            _check_group_size(w["group_size"], f"{field}.config_groups.{name}.weights.group_size", source)


def _check_group_size(g: Any, field: str, source: str) -> None:
    if g is None:
        return
    if isinstance(g, bool) or not isinstance(g, int) or not (g == -1 or 0 < g <= MAX_WIDTH):
        raise K3InputError(
            field,
            f"{g!r} in {source} is not a group size",
            f"a positive integer up to {MAX_WIDTH:,}, or -1 (one group per column)",
        )


def validate_hf_config(cfg: Mapping[str, Any], tc: Mapping[str, Any], prefix: str, source: str) -> TextConfig:
    """Type- and bound-check the text config ``tc`` (and ``cfg``'s vision tower), then the
    cross-field rules; returns the validated model or raises one named :class:`K3InputError`."""
    try:
        model = TextConfig.model_validate(dict(tc))
        vc = cfg.get("vision_config")
        if vc is not None:
            if not isinstance(vc, Mapping):
                raise K3InputError("config.vision_config", f"{vc!r} in {source} is not an object", "a JSON object")
            try:
                VisionConfig.model_validate(dict(vc))
            except ValidationError as exc:
                raise _first_error(exc, "config.vision_config.", source) from None
        if tc is not cfg and cfg.get("max_position_embeddings") is not None:
            TextConfig.model_validate({"max_position_embeddings": cfg["max_position_embeddings"]})
    except ValidationError as exc:
        raise _first_error(exc, prefix, source) from None
    _check_quantization(tc.get("quantization_config") or cfg.get("quantization_config"), prefix, source)
    heads, kv = model.num_attention_heads, model.num_key_value_heads
    layers = model.num_hidden_layers
    if heads and kv and (kv > heads or heads % kv):
        raise K3InputError(
            prefix + "num_key_value_heads",
            f"{kv} KV heads for {heads} attention heads in {source}",
            f"a divisor of num_attention_heads ({heads}), at most {heads}",
        )
    if layers and model.layer_types is not None and len(model.layer_types) != layers:
        raise K3InputError(
            prefix + "layer_types",
            f"{len(model.layer_types)} entries for {layers} layers in {source}",
            f"one entry per layer ({layers})",
        )
    if layers and isinstance(model.intermediate_size, list) and len(model.intermediate_size) != layers:
        raise K3InputError(
            prefix + "intermediate_size",
            f"{len(model.intermediate_size)} entries for {layers} layers in {source}",
            f"one number, or one entry per layer ({layers})",
        )
    if layers and model.num_kv_shared_layers is not None and model.num_kv_shared_layers >= layers:
        raise K3InputError(
            prefix + "num_kv_shared_layers",
            f"{model.num_kv_shared_layers} KV-sharing layers of {layers} in {source}",
            f"0 to num_hidden_layers − 1 ({layers - 1}): a shared layer needs an earlier layer's cache",
        )
    if layers and model.first_k_dense_replace is not None and model.first_k_dense_replace > layers:
        raise K3InputError(
            prefix + "first_k_dense_replace",
            f"{model.first_k_dense_replace} dense layers of {layers} in {source}",
            f"0 to num_hidden_layers ({layers})",
        )
    experts = model.n_routed_experts or model.num_experts or model.num_local_experts or 0
    top_k = model.num_experts_per_tok or model.num_experts_per_token or model.experts_per_token or 0
    if experts and top_k > experts:
        raise K3InputError(
            prefix + "num_experts_per_tok",
            f"{top_k} experts per token of {experts} in {source}",
            f"1 to the routed expert count ({experts})",
        )
    return model


__all__ = ["TextConfig", "VisionConfig", "validate_hf_config", "MAX_LAYERS", "MAX_WIDTH", "MAX_HEADS", "MAX_VOCAB"]
