"""Hugging Face ``config.json`` → :class:`~k3lib.core.architecture.Architecture`.

Reads only the config (nothing is downloaded). Rules that estimators commonly
get wrong are explicit here:

* ``head_dim`` is taken from the config when given, never recomputed as
  hidden/heads (Qwen3-Next: 256, not 2048/16 = 128).
* MLA models (``kv_lora_rank`` set) cache a latent of ``kv_lora_rank +
  qk_rope_head_dim`` per layer, not GQA keys and values.
* Hybrid linear-attention models (Kimi Linear / K3 ``linear_attn_config``,
  Qwen3-Next ``full_attention_interval``) count only their full-attention layers
  in the per-token cache, and add a constant per-sequence state.
* Sliding-window layers cap at the window. Which layers slide comes from
  ``layer_types`` when the config lists them, else ``sliding_window_pattern``,
  else the family's own convention: Gemma 2 alternates (even layers slide),
  Gemma 3 slides 5 of every 6, Llama 4 chunks 3 of every 4, Mistral slides every
  layer, Qwen2/Qwen3 slide layers from ``max_window_layers`` on only when
  ``use_sliding_window`` is true.
* KV-sharing layers (Gemma-3n, Gemma 4 ``num_kv_shared_layers`` $N$): the last $N$
  layers reuse the cache of the last earlier layer of their own kind and cache
  nothing (huggingface/transformers@01854809
  src/transformers/models/gemma3n/configuration_gemma3n.py ``kv_sharing_roles``;
  vLLM@034f08e6 vllm/model_executor/models/gemma3n.py and vLLM@001cabc1
  vllm/model_executor/models/gemma4.py pass ``kv_sharing_target_layer_name``, and such an
  attention layer gets no KV cache of its own). They become groups with
  ``kv_shared=True``. Full-attention layers use ``global_head_dim`` when the config gives
  one, and ``num_global_key_value_heads`` when ``attention_k_eq_v`` is set (vLLM gemma4.py).
  Per-layer embeddings (``hidden_size_per_layer_input`` × ``vocab_size_per_layer_input``)
  are counted; a per-layer ``intermediate_size`` list is averaged over the layers (exact
  for the parameter count when the widths sum to a multiple of the layer count), and
  Gemma 4's ``use_double_wide_mlp`` doubles the width of the KV-sharing layers.
* MTP modules (``num_nextn_predict_layers``) become ``Architecture.mtp_layers``: counted
  in :attr:`~k3lib.core.architecture.Architecture.params_mtp`, never in the KV cache.
* Multimodal wrappers (``mistral3``, ``kimi_vl``, ``llava`` …) are read through
  their ``text_config``; the vision tower is counted separately by
  :func:`vision_tower_params`.
* ``quantization_config`` sets the native precision per parameter group: FP8
  (per-tensor or 128×128 blocks), FBGEMM FP8 (row scales), MXFP4 experts (gpt-oss,
  Kimi K3), compressed-tensors integer/NVFP4, GPTQ and AWQ (any bits and group size),
  bitsandbytes 4-bit (NF4/FP4, double quantization) and 8-bit. Modules a method leaves
  out (``ignore``, ``modules_to_not_convert``, ``llm_int8_skip_modules``, ``lm_head``)
  stay in BF16, per layer when only some layers are left out (see :func:`_native_formats`).

A config that states no context window (no ``max_position_embeddings``) is read at 4,096
tokens with an :class:`AssumedFieldWarning` and a note; one that states 0, a negative number
or null raises :class:`~k3lib.core.errors.K3InputError` naming the field.

A config that lacks a field the formulas need raises
:class:`~k3lib.core.errors.K3InputError` naming ``config.<field>`` and the file. An
unknown ``model_type`` with the standard fields is read as a dense transformer,
with one :class:`AssumedFieldWarning` that lists every field it assumed.

>>> arch = architecture_from_hf_config({"model_type": "llama", "hidden_size": 4096,
...     "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
...     "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072}, id="llama-3.1-8b")
>>> arch.params_total, arch.kv_bytes_per_token(2)     # 2·32·8·128·2 B
(8030261248, 131072)
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from k3lib.core.architecture import (
    Architecture,
    AttentionGroup,
    MLPSpec,
    first_dense_moe_indices,
    interleaved_moe_indices,
)
from k3lib.core.errors import K3InputError
from k3lib.loaders.config_schema import validate_hf_config

KNOWN_MODEL_TYPES = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "mixtral",
    "deepseek_v3",
    "kimi_k2",
    "kimi_linear",
    "kimi_k3",
    "gpt_oss",
    "gemma3",
    "gemma3_text",
    "llama4",
    "llama4_text",
    "minimax_m2",
    "glm4_moe",
    "gemma",
    "gemma2",
    "phi3",
    "deepseek_v2",
    "qwen2_moe",
    "gemma3n",
    "gemma3n_text",
    "gemma4",
    "gemma4_text",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "falcon_h1",
    "mamba2",
    "lfm2",
)
#: Qwen3-Next and Qwen3.5 (transformers ``Qwen3_5TextConfig`` builds on Qwen3-Next: gated attention
#: every ``full_attention_interval``-th layer, Gated DeltaNet between, QK-norm, a gated shared expert);
#: their llama.cpp names are in :data:`k3lib.engines.llamacpp.LLAMACPP_ARCH_BY_HF_MODEL_TYPE`
_QWEN_NEXT_TYPES = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")

#: Multimodal wrappers whose text tower is read from ``text_config`` under its own model_type.
WRAPPER_MODEL_TYPES = ("mistral3", "kimi_vl", "llava", "llava_next", "pixtral", "paligemma", "idefics3")
#: families whose ``head_dim`` / ``q_norm`` / ``k_norm`` follow Gemma 3 (QK-norm on every layer)
_GEMMA_QK_NORM = ("gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text")

_LINEAR_GROUPS = ("attention", "dense_mlp", "shared_experts", "routed_experts", "lm_head")
# module names of each parameter group in layer {i}, matched against a checkpoint's list of
# modules left unquantized (``ignore`` / ``modules_to_not_convert`` / ``llm_int8_skip_modules``)
_GROUP_MODULES = {
    "attention": ("model.layers.{i}.self_attn.q_proj", "model.layers.{i}.self_attn.o_proj"),
    "dense_mlp": ("model.layers.{i}.mlp.gate_proj", "model.layers.{i}.mlp.down_proj"),
    "shared_experts": ("model.layers.{i}.mlp.shared_experts.gate_proj", "model.layers.{i}.mlp.shared_expert.gate_proj"),
    "routed_experts": ("model.layers.{i}.mlp.experts.0.gate_proj", "model.layers.{i}.mlp.experts.gate_up_proj"),
    "lm_head": ("lm_head",),
}


class AssumedFieldWarning(UserWarning):
    """A config lacked a field and a standard default was assumed."""


def warn_assumed(what: str, source: str, assumed: list[str], *, unknown: bool, read_as: str) -> None:
    """One :class:`AssumedFieldWarning` for a model read from a file: an unknown ``what`` (a
    config's ``model_type``, a GGUF's ``general.architecture``) names how it was read and what
    was assumed; a known one with missing keys names those."""
    if unknown:
        fields = "; ".join(assumed) if assumed else "no field was missing"
        warnings.warn(
            f"{what} is not one k3lib knows ({source}); read as {read_as}. Assumed: {fields}",
            AssumedFieldWarning,
            stacklevel=3,
        )
    elif assumed:
        warnings.warn(f"{source}: assumed " + "; ".join(assumed), AssumedFieldWarning, stacklevel=3)


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    tc = cfg.get("text_config")
    return tc if isinstance(tc, Mapping) else cfg


def _req(c: Mapping[str, Any], key: str, source: str, prefix: str = "config.") -> int:
    v = c.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise K3InputError(f"{prefix}{key}", f"missing or not a positive integer in {source} (got {v!r})")
    return v


def _opt_int(c: Mapping[str, Any], key: str, source: str, default: int, prefix: str = "config.") -> int:
    """An optional positive integer: ``default`` when absent or null, an error when malformed."""
    v = c.get(key)
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise K3InputError(f"{prefix}{key}", f"not a positive integer in {source} (got {v!r})")
    return v


def max_context_from_config(cfg: Mapping[str, Any], source: object = "config.json") -> tuple[int, str | None]:
    """The model's context window (tokens) from a config.json, and the assumption made (None if none).

    The window is the first of ``text_config.max_position_embeddings``,
    ``text_config.model_max_length`` and the top-level ``max_position_embeddings`` that is
    present and not null (for a plain config the first two are top-level fields).

    * A field present as 0, negative or not a whole number is a :class:`K3InputError`
      naming it: a model with no positions holds no context, and a guess would hide a
      broken file.
    * Fields present only as null (none stating the window) are the same error.
    * No field at all: :data:`~k3lib.loaders._common.ASSUMED_CONTEXT_TOKENS` (4,096), with
      the assumption stated (the second item; the loader warns and notes it).

    >>> max_context_from_config({"max_position_embeddings": 131072})
    (131072, None)
    >>> max_context_from_config({"hidden_size": 64})[0]
    4096
    """
    from k3lib.loaders._common import ASSUMED_CONTEXT_TOKENS, assumed_context_note

    tc = _text_config(cfg)
    prefix = "config.text_config." if tc is not cfg else "config."
    candidates = [(tc, prefix, "max_position_embeddings"), (tc, prefix, "model_max_length")]
    if tc is not cfg:
        candidates.append((cfg, "config.", "max_position_embeddings"))
    allowed = (
        "a whole number of positions ≥ 1 (the model's context window), or leave the field out "
        f"to assume {ASSUMED_CONTEXT_TOKENS:,}"
    )
    found, nulls = None, []
    for doc, pre, key in candidates:
        if key not in doc:
            continue
        v = doc[key]
        if v is None:
            nulls.append(pre + key)
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            raise K3InputError(pre + key, f"{v!r:.40} in {source} is not a whole number of positions", allowed)
        if v <= 0:
            raise K3InputError(pre + key, f"{v} in {source}: a model with no positions holds no context", allowed)
        if found is None:
            found = v
    if found is not None:
        return int(found), None
    if nulls:
        raise K3InputError(nulls[0], f"is null in {source}, and no other field states the context window", allowed)
    return ASSUMED_CONTEXT_TOKENS, assumed_context_note(prefix + "max_position_embeddings", source)


def config_notes(cfg: Mapping[str, Any], source: object = "config.json") -> list[str]:
    """What a loader states on screen about a config.json: the fields it assumed (a missing
    context window) and an unknown ``model_type`` read from the standard fields."""
    notes = []
    mtype = model_type_of(cfg)
    if mtype not in KNOWN_MODEL_TYPES:
        notes.append(
            f"model_type {mtype!r} is not one k3lib knows: read as a dense transformer from the standard fields"
        )
    assumed = max_context_from_config(cfg, source)[1]
    if assumed:
        notes.append(assumed)
    return notes


def model_type_of(cfg: Mapping[str, Any]) -> str:
    """The model_type whose rules apply: the top-level one, or the text tower's for a
    multimodal wrapper k3lib has no rules for (``mistral3`` → ``mistral``)."""
    tc = _text_config(cfg)
    top = str(cfg.get("model_type") or "")
    text = str(tc.get("model_type") or "") if tc is not cfg else ""
    if top in KNOWN_MODEL_TYPES:
        return top
    if text and (top in WRAPPER_MODEL_TYPES or not top):
        return text
    return top or text


def _ignore_matcher(patterns: list[Any]) -> Callable[[str], bool]:
    """A predicate: is a module name in ``patterns``? A pattern is ``re:REGEX`` (matched from
    the start, compressed-tensors), or a run of whole name components anywhere in the name
    (``lm_head``, ``model.layers.0``, ``mlp``, ``model.layers.*.self_attn`` with ``*`` one
    component) — the substring rule of transformers' bitsandbytes, fbgemm and AWQ
    integrations, held to component boundaries."""
    plain, regexes = [], []
    for p in patterns:
        p = str(p)
        if p.startswith("re:"):
            regexes.append(re.compile(p[3:]))
        elif p.replace("*", "").strip("."):
            plain.append(re.compile(r"(?:^|\.)" + re.escape(p.strip(".")).replace(r"\*", r"[^.]+") + r"(?:\.|$)"))
    return lambda module: any(r.search(module) for r in plain) or any(r.match(module) for r in regexes)


def _ignored(patterns: list[str], module: str) -> bool:
    return _ignore_matcher(patterns)(module)


def _int_or(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default


def _moe_layer_indices(tc: Mapping[str, Any], n_layers: int) -> tuple[int, ...]:
    """0-based indices of the MoE layers, by the family's own rule (transformers):

    * Llama 4: ``moe_layers`` when listed, else $(i+1) \\bmod s = 0$ with $s$ =
      ``interleave_moe_layer_step`` (``Llama4TextConfig``; Maverick: 1, 3, 5, …);
    * Qwen MoE: $i \\notin$ ``mlp_only_layers`` and $(i+1) \\bmod s = 0$ with $s$ =
      ``decoder_sparse_step`` (``Qwen2MoeDecoderLayer``, Qwen3-MoE, Qwen3-Next);
    * DeepSeek / Kimi / GLM: $i \\ge$ ``first_k_dense_replace`` and $i \\bmod f = 0$ with $f$ =
      ``moe_layer_freq`` (``DeepseekV3DecoderLayer``); every layer when none of these keys is set.
    """
    listed = tc.get("moe_layers")
    if isinstance(listed, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in listed):
        return tuple(sorted({i for i in listed if 0 <= i < n_layers}))
    if tc.get("interleave_moe_layer_step") is not None:
        return interleaved_moe_indices(n_layers, _int_or(tc.get("interleave_moe_layer_step"), 1) or 1)
    if tc.get("decoder_sparse_step") is not None or isinstance(tc.get("mlp_only_layers"), list):
        skip = tuple(i for i in (tc.get("mlp_only_layers") or []) if isinstance(i, int))
        return interleaved_moe_indices(n_layers, _int_or(tc.get("decoder_sparse_step"), 1) or 1, skip=skip)
    return first_dense_moe_indices(
        n_layers, _int_or(tc.get("first_k_dense_replace"), 0), _int_or(tc.get("moe_layer_freq"), 1) or 1
    )


def _group_layers(tc: Mapping[str, Any]) -> dict[str, list[int]]:
    """Layer indices holding each linear group: every layer for attention; the MoE layers
    (:func:`_moe_layer_indices`) for the experts, the others for the dense MLP (all, without
    experts)."""
    n_given = tc.get("num_hidden_layers")
    n = n_given if isinstance(n_given, int) else 0
    experts = tc.get("n_routed_experts") or tc.get("num_experts") or tc.get("num_local_experts") or 0
    moe = set(_moe_layer_indices(tc, n)) if experts else set()
    every = list(range(n))
    sparse = [i for i in every if i in moe]
    return {
        "attention": every,
        "dense_mlp": [i for i in every if i not in moe],
        "shared_experts": sparse,
        "routed_experts": sparse,
        "lm_head": [],
    }


def _attention_order(groups: list[AttentionGroup], kinds: list[str] | None) -> tuple[int, ...]:
    """The group index of each layer from a per-layer kind list (``sliding``/``full``,
    ``mla``/``kda``, ``full``/``gdn``): a KV-sharing group takes the last layers of its kind,
    the owning group the first. () when no list is known or it does not match the groups."""
    if not kinds or len(groups) < 2:
        return ()
    out = [-1] * len(kinds)
    for kv_shared in (True, False):
        for j, g in enumerate(groups):
            if g.kv_shared != kv_shared:
                continue
            free = [i for i, k in enumerate(kinds) if k == g.kind and out[i] < 0]
            if len(free) < g.count:
                return ()
            for i in free[len(free) - g.count :] if kv_shared else free[: g.count]:
                out[i] = j
    return tuple(out) if all(j >= 0 for j in out) else ()


def _sliding_kinds(mtype: str, tc: Mapping[str, Any], n_layers: int, n_slide: int) -> list[str] | None:
    """``sliding``/``full`` per layer where the config or the family fixes the positions
    (:func:`_layer_kinds`; ``sliding_window_pattern`` $p$: full at $(i+1) \\bmod p = 0$; Llama 4:
    the NoPE layer every 4th, $(i+1) \\bmod 4 = 0$, ``no_rope_layers``; Gemma 2: even layers
    slide; Qwen2/3: layers from ``max_window_layers`` slide); None otherwise or when the list
    disagrees with the sliding count."""
    kinds = _layer_kinds(mtype, tc, n_layers)
    if kinds is None:
        rng = range(n_layers)
        if tc.get("sliding_window_pattern"):
            p = tc["sliding_window_pattern"]
            kinds = ["full" if (i + 1) % p == 0 else "sliding" for i in rng]
        elif mtype.startswith("llama4"):
            nope = tc.get("no_rope_layers")
            if isinstance(nope, list) and len(nope) == n_layers:
                kinds = ["sliding" if x else "full" for x in nope]  # 1 = uses RoPE = chunked attention
            else:
                kinds = ["full" if (i + 1) % 4 == 0 else "sliding" for i in rng]
        elif mtype == "gemma2":
            kinds = ["sliding" if i % 2 == 0 else "full" for i in rng]
        elif mtype in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
            kinds = ["full"] * (n_layers - n_slide) + ["sliding"] * n_slide
        else:
            return None
    return kinds if len(kinds) == n_layers and kinds.count("sliding") == n_slide else None


def _quantized_share(patterns: list[Any], tc: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """{group: (layers quantized, layers holding it)} — a group's layers minus those the
    ``patterns`` leave out (a group no layer holds is judged on layer 1, as one layer)."""
    ignored = _ignore_matcher(patterns)
    layers = _group_layers(tc)
    out = {}
    for g in _LINEAR_GROUPS:
        idx = layers[g] or [1]
        kept = sum(1 for i in idx if not any(ignored(m.format(i=i)) for m in _GROUP_MODULES[g]))
        out[g] = (kept, len(idx))
    return out


def _quantized_groups(q: Mapping[str, Any], tc: Mapping[str, Any] | None = None) -> list[str]:
    """Linear-layer groups a checkpoint quantizes in every layer: all of them minus the ignore list."""
    patterns = list(q.get("ignore") or []) + list(q.get("modules_to_not_convert") or [])
    return [g for g, (k, n) in _quantized_share(patterns, tc or {}).items() if k == n]


def _formats_for(body: str, patterns: list[Any], tc: Mapping[str, Any]) -> dict[str, str]:
    """``body`` on every linear group the patterns do not leave out; a group left out in some
    of its layers gets ``body:k/n`` (k of n layers quantized, the rest BF16)."""
    out = {}
    for g, (k, n) in _quantized_share(patterns, tc).items():
        if k == n:
            out[g] = body
        elif k:
            out[g] = f"{body}:{k}/{n}"
    return {**out, "*": "bf16"}


def _group_size(q: Mapping[str, Any], default: int | None) -> str:
    g = q.get("group_size", default)
    return "ch" if g in (None, -1) else str(g)


def _native_formats(cfg: Mapping[str, Any], tc: Mapping[str, Any]) -> dict[str, str]:
    """Native precision per parameter group from ``quantization_config``.

    Method → format (bits per weight in :mod:`k3lib.core.precisions`): ``mxfp4`` (gpt-oss,
    compressed-tensors ``mxfp4-pack-quantized``) on the routed experts; ``fp8`` (per-tensor or
    128×128 blocks); ``fbgemm_fp8`` (``fbgemm-fp8``, FP32 scale per row); ``compressed-tensors``
    integer (``ct-int{b}-g{G}``, ``-asym`` when not symmetric), NVFP4, 8-bit; ``gptq`` / ``awq``
    (``{method}-int{b}-g{G}``; INT4 group 128 keeps the ids ``int4-gptq`` / ``int4-awq``);
    ``bitsandbytes`` 4-bit (``bnb-nf4`` with double quantization, ``bnb-nf4-nodq`` without) and
    8-bit (``bnb-int8``); ModelOpt FP4. Only linear layers are quantized: embeddings, norms and
    routers stay in the checkpoint dtype, and so do the modules a method leaves out —
    ``ignore`` (compressed-tensors), ``modules_to_not_convert`` (fbgemm, AWQ, mxfp4),
    ``llm_int8_skip_modules`` (bitsandbytes; ``lm_head`` when unset), and ``lm_head`` for
    GPTQ, AWQ, fbgemm and bitsandbytes.
    """
    q = tc.get("quantization_config") or cfg.get("quantization_config") or {}
    if not isinstance(q, Mapping):
        return {"*": "bf16"}
    method = str(q.get("quant_method", "")).lower()
    fmt = str(q.get("format", "")).lower()
    listed = list(q.get("ignore") or []) + list(q.get("modules_to_not_convert") or [])
    if method == "mxfp4" or "mxfp4" in fmt:
        groups = _quantized_groups(q, tc) if method == "compressed-tensors" else ["routed_experts"]
        return {**{g: "mxfp4" for g in groups}, "*": "bf16"}
    if method == "fp8":
        block = q.get("weight_block_size")
        body = "fp8-block" if block else "fp8"
        # embeddings, lm_head, norms and routers stay in BF16
        return {"*": body, "embedding": "bf16", "lm_head": "bf16", "norms": "bf16", "moe_other": "bf16"}
    if method == "compressed-tensors":
        weights: Mapping[str, Any] = {}
        for group in (q.get("config_groups") or {}).values():
            if isinstance(group, Mapping) and isinstance(group.get("weights"), Mapping):
                weights = group["weights"]
                break
        bits, kind = weights.get("num_bits"), str(weights.get("type", "int"))
        if "nvfp4" in fmt or (bits == 4 and kind == "float" and weights.get("group_size") == 16):
            body = "nvfp4"
        elif bits == 4:
            grp = "ch" if str(weights.get("strategy", "")).lower() == "channel" else _group_size(weights, 128)
            body = f"ct-int4-g{grp}" + ("" if weights.get("symmetric", True) is not False else "-asym")
        elif bits == 8:
            body = "fp8"  # FP8 or INT8: one byte per weight (per-channel scales: 16/K bits)
        else:
            return {"*": "bf16"}
        return _formats_for(body, listed, tc)
    if method in ("gptq", "awq"):
        bits, grp = q.get("bits", 4), _group_size(q, 128)
        body = f"int4-{method}" if (bits, grp) == (4, "128") else f"{method}-int{bits}-g{grp}"
        return _formats_for(body, listed + ["lm_head"], tc)
    if method == "bitsandbytes" or q.get("load_in_4bit") or q.get("load_in_8bit"):
        skip = q.get("llm_int8_skip_modules")
        patterns = list(skip) if isinstance(skip, list) else ["lm_head"]
        if q.get("load_in_4bit"):
            body = "bnb-nf4" if q.get("bnb_4bit_use_double_quant") else "bnb-nf4-nodq"
        elif q.get("load_in_8bit"):
            body = "bnb-int8"
        else:
            return {"*": "bf16"}
        return _formats_for(body, patterns, tc)
    if method == "fbgemm_fp8":
        return _formats_for("fbgemm-fp8", listed + ["lm_head"], tc)
    if method == "modelopt" and "fp4" in str(q.get("quant_algo", "")).lower():
        return _formats_for("nvfp4", listed + ["lm_head"], tc)
    return {"*": "bf16"}


def _layer_kinds(mtype: str, tc: Mapping[str, Any], n_layers: int) -> list[str] | None:
    """``"sliding"`` / ``"full"`` per layer, in order, when the config or the family fixes
    the positions: ``layer_types``; Gemma-3n's one full layer in five (index 4, 9, …:
    transformers ``Gemma3nTextConfig``); Gemma 4's one in six with the last layer full
    (transformers ``Gemma4TextConfig``). None otherwise."""
    layer_types = tc.get("layer_types")
    if isinstance(layer_types, list):
        return ["sliding" if ("sliding" in str(t) or "chunked" in str(t)) else "full" for t in layer_types]
    if mtype in ("gemma3n", "gemma3n_text"):
        return ["full" if (i + 1) % 5 == 0 else "sliding" for i in range(n_layers)]
    if mtype in ("gemma4", "gemma4_text"):
        kinds = ["sliding" if (i + 1) % 6 else "full" for i in range(n_layers)]
        kinds[-1] = "full"
        return kinds
    return None


def _kv_shared_counts(mtype: str, tc: Mapping[str, Any], n_layers: int, src: str, prefix: str) -> dict[str, int]:
    """{kind: layers of that kind among the last ``num_kv_shared_layers``} (the layers that
    read an earlier layer's cache); empty when the config shares nothing."""
    n_shared = tc.get("num_kv_shared_layers") or 0
    if not n_shared:
        return {}
    kinds = _layer_kinds(mtype, tc, n_layers)
    if kinds is None:
        raise K3InputError(
            prefix + "layer_types",
            f"missing in {src}: num_kv_shared_layers = {n_shared} needs "
            "to know which layers are sliding and which full",
            "a list with one entry per layer",
        )
    out: dict[str, int] = {}
    for kind in kinds[n_layers - n_shared :]:
        out[kind] = out.get(kind, 0) + 1
    return out


def _intermediate(tc: Mapping[str, Any], key: str, n_shared: int) -> int:
    """``intermediate_size`` as one width: a per-layer list (Gemma-3n MatFormer) is
    averaged, rounded; Gemma 4's ``use_double_wide_mlp`` doubles the last ``n_shared``
    (KV-sharing) layers' width (vLLM gemma4.py ``Gemma4DecoderLayer``)."""
    v = tc.get(key)
    if isinstance(v, list):
        widths = [int(x) for x in v]
    elif isinstance(v, int) and not isinstance(v, bool):
        widths = [v] * max(1, tc.get("num_hidden_layers") or 1)
    else:
        return 0
    if tc.get("use_double_wide_mlp") and n_shared:
        widths = widths[: len(widths) - n_shared] + [2 * w for w in widths[len(widths) - n_shared :]]
    return int(round(sum(widths) / len(widths)))


def _sliding_layers(mtype: str, tc: Mapping[str, Any], n_layers: int, window: int, assumed: list[str]) -> int:
    """How many of the ``n_layers`` layers use the sliding (or chunked) window."""
    layer_types = tc.get("layer_types")
    if isinstance(layer_types, list) and window:
        return sum(1 for t in layer_types if "sliding" in str(t) or "chunked" in str(t))
    kinds = _layer_kinds(mtype, tc, n_layers)
    if kinds is not None and window:
        return kinds.count("sliding")
    if tc.get("sliding_window_pattern") and window:
        p = tc["sliding_window_pattern"]
        return n_layers - sum(1 for i in range(n_layers) if (i + 1) % p == 0)
    if not window:
        return 0
    if mtype.startswith("llama4"):
        return n_layers - n_layers // 4  # every 4th layer is global NoPE
    if mtype == "mistral":
        return n_layers
    if mtype == "gemma2":
        return (n_layers + 1) // 2  # even layers (0, 2, …) slide
    if mtype in ("gemma3", "gemma3_text"):
        return n_layers - n_layers // 6  # 5 local : 1 global (sliding_window_pattern = 6)
    if mtype in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        first = tc.get("max_window_layers")
        first = first if isinstance(first, int) and 0 <= first <= n_layers else 0
        return n_layers - first
    if mtype in KNOWN_MODEL_TYPES:
        return 0
    assumed.append(f"sliding_window={window} on every layer (no layer_types or sliding_window_pattern)")
    return n_layers


def architecture_from_hf_config(
    cfg: Mapping[str, Any], *, id: str, name: str | None = None, source: str = ""
) -> Architecture:
    """Build an :class:`Architecture` from a parsed config.json dict."""
    if not isinstance(cfg, Mapping):
        raise K3InputError("config", "must be a JSON object")
    tc = _text_config(cfg)
    prefix = "config.text_config." if tc is not cfg else "config."
    mtype = model_type_of(cfg)
    src = source or "config.json"
    validate_hf_config(cfg, tc, prefix, src)  # types, bounds and cross-field rules first
    assumed: list[str] = []
    unknown = mtype not in KNOWN_MODEL_TYPES
    d = _req(tc, "hidden_size", src, prefix)
    n_layers = _req(tc, "num_hidden_layers", src, prefix)
    # Mamba-2 has no attention: its heads are the SSM's (transformers Mamba2Config.num_heads)
    heads = _req(tc, "num_heads" if mtype == "mamba2" else "num_attention_heads", src, prefix)
    vocab = _req(tc, "vocab_size", src, prefix)
    kv_heads = _opt_int(tc, "num_key_value_heads", src, 0, prefix)
    if not kv_heads:
        kv_heads = heads
        if unknown:
            assumed.append(f"num_key_value_heads = num_attention_heads = {heads} (multi-head attention)")
    head_dim = _opt_int(tc, "head_dim", src, 0, prefix)
    if not head_dim:
        head_dim = d // heads
        if unknown:
            assumed.append(f"head_dim = hidden_size / num_attention_heads = {head_dim}")
        elif mtype not in ("llama", "mistral", "qwen2", "mixtral", "qwen2_moe", "phi3", "lfm2", "") and not tc.get(
            "kv_lora_rank"
        ):
            warnings.warn(
                f"head_dim missing: assumed hidden_size / num_attention_heads = {head_dim}",
                AssumedFieldWarning,
                stacklevel=2,
            )
    max_ctx, ctx_assumed = max_context_from_config(cfg, src)
    if ctx_assumed:
        assumed.append(f"max_position_embeddings = {max_ctx} (the file states no context window)")
    groups: list[AttentionGroup] = []
    attn_kinds: list[str] | None = None
    gqa: dict[str, Any] = dict(
        num_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        qkv_bias=bool(tc.get("attention_bias") or mtype == "qwen2"),
        o_bias=bool(tc.get("attention_bias") and mtype == "gpt_oss"),
        qk_norm=mtype in ("qwen3", "qwen3_moe", "glm4_moe")
        or mtype in _QWEN_NEXT_TYPES
        or mtype in _GEMMA_QK_NORM
        or bool(tc.get("use_qk_norm")),
        sinks=mtype == "gpt_oss",
    )
    if mtype in ("qwen2", "qwen2_moe") and "attention_bias" not in tc:
        gqa["qkv_bias"] = True
    lac = tc.get("linear_attn_config")
    if mtype == "falcon_h1":
        # Falcon-H1 (transformers FalconH1Config): a Mamba-2 mixer beside the attention in every layer;
        # d_inner = mamba_d_ssm, else mamba_expand × hidden_size (convert_hf_to_gguf.py FalconH1Model)
        gqa.update(
            parallel_ssm=True,
            ssm_inner=_opt_int(tc, "mamba_d_ssm", src, 0, prefix) or _opt_int(tc, "mamba_expand", src, 2, prefix) * d,
            ssm_state=_opt_int(tc, "mamba_d_state", src, 256, prefix),
            ssm_groups=_opt_int(tc, "mamba_n_groups", src, 1, prefix),
            ssm_heads=_opt_int(tc, "mamba_n_heads", src, 128, prefix),
            conv_kernel=_opt_int(tc, "mamba_d_conv", src, 4, prefix),
        )
    if mtype == "mamba2":
        # transformers Mamba2Config / Mamba2Mixer: intermediate_size = expand × hidden_size
        groups.append(
            AttentionGroup(
                kind="mamba",
                count=n_layers,
                num_heads=heads,
                ssm_heads=heads,
                ssm_inner=int(float(tc.get("expand") or 2) * d),
                ssm_state=_opt_int(tc, "state_size", src, 128, prefix),
                ssm_groups=_opt_int(tc, "n_groups", src, 8, prefix),
                conv_kernel=_opt_int(tc, "conv_kernel", src, 4, prefix),
            )
        )
    elif mtype == "lfm2":
        # transformers Lfm2Config: layer_types ("conv" / "full_attention"), else full_attn_idxs; the conv
        # layers are gated short convolutions over hidden_size channels with conv_L_cache taps
        types = tc.get("layer_types")
        if not isinstance(types, list) or len(types) != n_layers:
            at = set(tc.get("full_attn_idxs") or [])
            types = ["full_attention" if i in at else "conv" for i in range(n_layers)]
        attn_kinds = ["full" if t == "full_attention" else "shortconv" for t in types]
        n_full = attn_kinds.count("full")
        if n_full:
            groups.append(AttentionGroup(kind="full", count=n_full, **dict(gqa, qk_norm=True)))
        if n_layers - n_full:
            groups.append(
                AttentionGroup(
                    kind="shortconv",
                    count=n_layers - n_full,
                    num_heads=1,
                    ssm_inner=d,
                    conv_kernel=_opt_int(tc, "conv_L_cache", src, 3, prefix),
                )
            )
    elif tc.get("kv_lora_rank"):
        mla = dict(
            kind="mla",
            num_heads=heads,
            q_lora_rank=tc.get("q_lora_rank") or 0,
            kv_lora_rank=_req(tc, "kv_lora_rank", src, prefix),
            qk_nope_head_dim=tc.get("qk_nope_head_dim", 128),
            qk_rope_head_dim=tc.get("qk_rope_head_dim", 64),
            v_head_dim=tc.get("v_head_dim", 128),
            output_gate=bool(tc.get("mla_use_output_gate")),
        )
        if isinstance(lac, Mapping):
            lprefix = prefix + "linear_attn_config."
            n_full = len(lac.get("full_attn_layers") or [])
            n_kda = len(lac.get("kda_layers") or [])
            if n_full + n_kda != n_layers:
                raise K3InputError(
                    prefix + "linear_attn_config",
                    f"kda_layers ({n_kda}) + full_attn_layers ({n_full}) != num_hidden_layers ({n_layers})",
                )
            # the lists are 1-based layer numbers (K3: full 4, 8, …, 92, 93)
            full_at = {i - 1 for i in (lac.get("full_attn_layers") or []) if isinstance(i, int)}
            attn_kinds = ["mla" if i in full_at else "kda" for i in range(n_layers)]
            groups.append(AttentionGroup(count=n_full, **mla))
            groups.append(
                AttentionGroup(
                    kind="kda",
                    count=n_kda,
                    num_heads=_req(lac, "num_heads", src, lprefix),
                    head_dim=_req(lac, "head_dim", src, lprefix),
                    v_head_dim=lac["head_dim"],
                    conv_kernel=_opt_int(lac, "short_conv_kernel_size", src, 4, lprefix),
                    full_rank_gate=bool(lac.get("use_full_rank_gate")),
                )
            )
        else:
            groups.append(AttentionGroup(count=n_layers, **mla))
    elif mtype in _QWEN_NEXT_TYPES or tc.get("full_attention_interval"):
        interval = _opt_int(tc, "full_attention_interval", src, 4, prefix)
        n_full = n_layers // interval
        # transformers Qwen3NextConfig: layer i is full attention when (i+1) % interval == 0
        attn_kinds = ["full" if (i + 1) % interval == 0 else "gdn" for i in range(n_layers)]
        groups.append(AttentionGroup(kind="full", count=n_full, output_gate=True, **gqa))
        groups.append(
            AttentionGroup(
                kind="gdn",
                count=n_layers - n_full,
                num_heads=_req(tc, "linear_num_key_heads", src, prefix),
                linear_value_heads=_req(tc, "linear_num_value_heads", src, prefix),
                head_dim=_req(tc, "linear_key_head_dim", src, prefix),
                v_head_dim=_req(tc, "linear_value_head_dim", src, prefix),
                conv_kernel=_opt_int(tc, "linear_conv_kernel_dim", src, 4, prefix),
            )
        )
    else:
        window = tc.get("sliding_window") or tc.get("attention_chunk_size") or 0
        if mtype in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe") and not tc.get("use_sliding_window"):
            window = 0
        if window and (not isinstance(window, int) or isinstance(window, bool) or window < 0):
            raise K3InputError(prefix + "sliding_window", f"not a positive integer in {src} (got {window!r})")
        n_slide = _sliding_layers(mtype, tc, n_layers, window, assumed)
        attn_kinds = _sliding_kinds(mtype, tc, n_layers, n_slide)
        n_kv_shared = tc.get("num_kv_shared_layers") or 0
        if n_slide in (0, n_layers):  # one kind everywhere: the last N share
            shared = {"sliding" if n_slide else "full": n_kv_shared}
        else:
            shared = _kv_shared_counts(mtype, tc, n_layers, src, prefix)
        full_gqa = dict(gqa)
        if tc.get("global_head_dim"):
            full_gqa["head_dim"] = _req(tc, "global_head_dim", src, prefix)
        if tc.get("attention_k_eq_v") and tc.get("num_global_key_value_heads"):
            full_gqa["kv_heads"] = _req(tc, "num_global_key_value_heads", src, prefix)
        for kind, n, extra in (
            ("sliding", n_slide, dict(window_tokens=window, **gqa)),
            ("full", n_layers - n_slide, full_gqa),
        ):
            n_sh = min(shared.get(kind, 0), n)
            if n - n_sh:
                groups.append(AttentionGroup(kind=kind, count=n - n_sh, **extra))
            if n_sh:
                groups.append(AttentionGroup(kind=kind, count=n_sh, kv_shared=True, **extra))
    # ---- MLP ----
    n_experts = tc.get("n_routed_experts") or tc.get("num_experts") or tc.get("num_local_experts") or 0
    top_k = tc.get("num_experts_per_tok") or tc.get("num_experts_per_token") or tc.get("experts_per_token") or 0
    if n_experts:
        if not top_k:
            raise K3InputError(
                prefix + "num_experts_per_tok",
                f"missing in {src}: a MoE config must say how many experts each token uses",
            )
        moe_at = _moe_layer_indices(tc, n_layers)
        moe_layers = len(moe_at)
        dense_layers = n_layers - moe_layers
        moe_inter = tc.get("moe_intermediate_size") or tc.get("intermediate_size")
        if not moe_inter:
            raise K3InputError(prefix + "moe_intermediate_size", f"missing in {src} (nor intermediate_size)")
        n_shared = tc.get("n_shared_experts") or tc.get("num_shared_experts") or 0
        shared_inter = tc.get("shared_expert_intermediate_size") or tc.get("shared_intermediate_size") or 0
        if mtype.startswith("llama4"):
            n_shared, shared_inter = 1, tc.get("intermediate_size")
        if n_shared and not shared_inter:
            shared_inter = moe_inter
        if (mtype in _QWEN_NEXT_TYPES or mtype == "qwen2_moe") and shared_inter:
            n_shared = n_shared or 1
        dense_inter = tc.get("intermediate_size_mlp") or _intermediate(tc, "intermediate_size", 0)
        if dense_layers and not dense_inter:
            raise K3InputError(prefix + "intermediate_size", f"missing in {src}: needed by the dense layers")
        mlp = MLPSpec(
            dense_layers=dense_layers,
            dense_intermediate=dense_inter if dense_layers else 0,
            moe_layers=moe_layers,
            n_routed_experts=n_experts,
            experts_per_token=top_k,
            moe_intermediate=moe_inter,
            n_shared_experts=n_shared,
            shared_intermediate=shared_inter,
            latent_dim=tc.get("routed_expert_hidden_size") or 0,
            expert_bias=mtype == "gpt_oss",
            router_bias=mtype == "gpt_oss",
            router_score_bias=mtype in ("deepseek_v3", "kimi_k2", "kimi_linear", "kimi_k3", "glm4_moe", "minimax_m2")
            or tc.get("topk_method") == "noaux_tc",
            shared_expert_gate=mtype in _QWEN_NEXT_TYPES or mtype == "qwen2_moe",
        )
    elif mtype == "mamba2":
        mlp = MLPSpec(dense_layers=n_layers, dense_intermediate=0)  # no FFN: the mixer is the layer
        moe_at = ()
    else:
        inter = _intermediate(tc, "intermediate_size", tc.get("num_kv_shared_layers") or 0)
        if mtype == "lfm2" and inter and tc.get("block_auto_adjust_ff_dim"):
            # transformers Lfm2MLP: ⌈mult·⌊2I/3⌋⌉ rounded up to block_multiple_of
            inter = int(2 * inter / 3)
            if tc.get("block_ffn_dim_multiplier") is not None:
                inter = int(float(tc["block_ffn_dim_multiplier"]) * inter)
            mult = int(tc.get("block_multiple_of") or 256)
            inter = mult * ((inter + mult - 1) // mult)
        if not inter:
            _req(tc, "intermediate_size", src, prefix)
        mlp = MLPSpec(dense_layers=n_layers, dense_intermediate=inter)
        moe_at = ()
    tie_default = mtype.startswith(("gemma", "mamba2", "lfm2"))  # these tie input and output embeddings
    tie = bool(tc.get("tie_word_embeddings", cfg.get("tie_word_embeddings", tie_default)))
    if unknown and "tie_word_embeddings" not in tc and "tie_word_embeddings" not in cfg:
        assumed.append("tie_word_embeddings = false (separate lm_head)")
    warn_assumed(
        f"model_type {mtype!r}",
        src,
        assumed,
        unknown=unknown,
        read_as="a dense gated-MLP transformer with full attention from the standard fields",
    )
    return Architecture(
        id=id,
        name=name or id,
        hidden_size=d,
        vocab_size=vocab,
        num_layers=n_layers,
        attention=tuple(groups),
        mlp=mlp,
        max_context_tokens=int(max_ctx),
        tie_word_embeddings=tie,
        native_formats=_native_formats(cfg, tc),
        source=src,
        family=mtype,
        mtp_layers=int(tc.get("num_nextn_predict_layers") or 0),
        norms_per_layer=4 if mtype.startswith(("gemma2", "gemma3", "gemma4")) else 1 if mtype == "mamba2" else 2,
        per_layer_input_dim=int(tc.get("hidden_size_per_layer_input") or 0),
        per_layer_input_vocab=int(tc.get("vocab_size_per_layer_input") or 0)
        if tc.get("hidden_size_per_layer_input")
        else 0,
        layer_attention_groups=_attention_order(groups, attn_kinds),
        moe_layer_indices=moe_at if 0 < len(moe_at) < n_layers else (),
    )


# ---------------------------------------------------------------------------
# Facts outside the Architecture schema that engines need: rotary caches, the
# vision tower, the checkpoint dtype.
# ---------------------------------------------------------------------------


def rope_caches(cfg: Mapping[str, Any]) -> tuple[tuple[int, int], ...]:
    """The rotary cos/sin caches an engine precomputes: ``(positions, rotary_dim)`` each.

    Positions = ``max_position_embeddings``, × the factor for ``linear`` scaling
    (vLLM's ``LinearScalingRotaryEmbedding``), or ``original_max_position_embeddings``
    × factor for YaRN. Rotary dim = ``qk_rope_head_dim`` (MLA), ``rotary_dim``, or
    ``head_dim × partial_rotary_factor``. Gemma 3 keeps two caches (local and global).

    >>> rope_caches({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
    ...              "max_position_embeddings": 131072})
    ((131072, 128),)
    """
    tc = _text_config(cfg)
    mtype = model_type_of(cfg)
    heads = tc.get("num_attention_heads") or 1
    head_dim = tc.get("head_dim") or (tc.get("hidden_size") or 0) // heads
    if tc.get("kv_lora_rank"):
        rot = tc.get("qk_rope_head_dim", 64)
    elif tc.get("rotary_dim"):
        rot = tc["rotary_dim"]
    else:
        rot = int(head_dim * float(tc.get("partial_rotary_factor") or 1.0))
    mpe = tc.get("max_position_embeddings")
    max_pos = mpe if isinstance(mpe, int) and not isinstance(mpe, bool) and mpe > 0 else max_context_from_config(cfg)[0]
    rs = tc.get("rope_scaling") or {}
    kind = str(rs.get("rope_type") or rs.get("type") or "") if isinstance(rs, Mapping) else ""
    positions = max_pos
    if kind == "linear":
        positions = int(max_pos * float(rs.get("factor", 1)))
    elif kind == "yarn" and rs.get("original_max_position_embeddings"):
        positions = int(rs["original_max_position_embeddings"] * float(rs.get("factor", 1)))
    if rot <= 0:
        return ()
    if mtype in _GEMMA_QK_NORM:
        return ((positions, rot), (max_pos, rot))  # global (scaled) + local (rope_local_base_freq)
    return ((positions, rot),)


def _vit_params(v: Mapping[str, Any], *, gated: bool = False, biases: bool = True) -> int:
    """A standard ViT encoder: L × (QKVO + MLP + two norms) + patch embedding."""
    h, i, n = v.get("hidden_size", 0), v.get("intermediate_size", 0), v.get("num_hidden_layers", 0)
    p, c = v.get("patch_size", 14), v.get("num_channels", 3)
    attn = 4 * h * h + (4 * h if biases else 0)
    mlp = (3 * h * i) if gated else (2 * h * i + (i + h if biases else 0))
    norms = 4 * h if biases else 2 * h
    return int(n * (attn + mlp + norms) + c * p * p * h + (h if biases else 0))


def vision_tower_params(cfg: Mapping[str, Any]) -> int:
    """Parameters of a multimodal checkpoint's vision tower and projector (0 for text-only).

    An estimate from ``vision_config`` (standard ViT formula plus each family's
    projector: SigLIP for Gemma 3, Pixtral for Mistral 3, MoonViT for Kimi-VL,
    Llama 4's encoder). Exact counts come from the checkpoint's safetensors header.
    """
    v = cfg.get("vision_config")
    if not isinstance(v, Mapping) or not v.get("hidden_size"):
        return 0
    tc = _text_config(cfg)
    d = tc.get("hidden_size", 0)
    h = v["hidden_size"]
    top = str(cfg.get("model_type") or "")
    vt = str(v.get("model_type") or "")
    if top == "mistral3" or vt == "pixtral":
        merge = cfg.get("spatial_merge_size", 2)
        n = _vit_params(v, gated=True, biases=False) + h  # + ln_pre
        return int(n + h * merge * merge * h + h + h * d + d * d)  # patch merger, norm, 2-layer projector
    if top == "kimi_vl" or vt == "moonvit":
        kh, kw = (v.get("merge_kernel_size") or [2, 2])[:2]
        pos = v.get("init_pos_emb_height", 64) * v.get("init_pos_emb_width", 64) * h
        m = h * kh * kw
        return int(_vit_params(v) + pos + 2 * h + 2 * m + m * m + m + m * d + d)
    if top.startswith("llama4"):
        img, p = v.get("image_size", 336), v.get("patch_size", 14)
        tokens = (img // p) ** 2 + 1
        proj_in, proj_out = v.get("projector_input_dim", 4096), v.get("projector_output_dim", 4096)
        ratio = v.get("pixel_shuffle_ratio", 0.5)
        shuffled = int(h / (ratio * ratio))
        n = _vit_params(v) - h + tokens * h + h + 4 * h  # no patch bias; pos emb, class emb, pre/post norms
        return int(n + shuffled * proj_in + proj_in * proj_out + v.get("vision_output_dim", proj_out) * d)
    # SigLIP (Gemma 3) and other plain ViTs: learned position embedding + post-norm + projector
    img, p = v.get("image_size", 224), v.get("patch_size", 14)
    n = _vit_params(v) + (img // p) ** 2 * h + 2 * h
    return int(n + h * d + h)


def checkpoint_dtype_bytes(cfg: Mapping[str, Any]) -> int:
    """Bytes per element of the checkpoint's unquantized tensors (``torch_dtype``/``dtype``; BF16 if unsaid)."""
    tc = _text_config(cfg)
    dt = str(cfg.get("torch_dtype") or cfg.get("dtype") or tc.get("torch_dtype") or tc.get("dtype") or "bfloat16")
    return 4 if "32" in dt else 2


__all__ = [
    "AssumedFieldWarning",
    "KNOWN_MODEL_TYPES",
    "WRAPPER_MODEL_TYPES",
    "architecture_from_hf_config",
    "model_type_of",
    "max_context_from_config",
    "config_notes",
    "rope_caches",
    "vision_tower_params",
    "checkpoint_dtype_bytes",
]
