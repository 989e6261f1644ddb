"""llama.cpp's per-tensor quantization recipe: the bytes a GGUF of a given file type
(Q4_K_M, Q5_K_M, Q4_0, Q8_0…) has, without the file.

A "Q4_K_M" file is not 4.5 bits everywhere: ``llama-quantize`` picks a type per tensor.
Rules read from ggml-org/llama.cpp ``src/llama-quant.cpp`` (``llama_tensor_get_type_impl``,
``tensor_allows_quantization``, ``tensor_type_fallback``) at commit
007dbbf3fd17eefe9b47fee45f48f7ba5e62b714, for GQA transformers (dense or MoE); at 0c1e57098 the recipe
equals ``llama_model_quantize`` on every tensor of ten quantizations (Q2_K … Q8_0, F16) of the test
tier's llama, qwen3 and qwen3moe models (tests/llamacpp):

* 1-D tensors (norms), the MoE router ``ffn_gate_inp`` and ``rope_freqs`` are not quantized (F32);
* ``output`` (or a tied ``token_embd``): Q6_K, unless the file type is Q8_0 (kept) or the row
  does not divide into 256-blocks (Q8_0);
* ``attn_v``: Q4_K_M/Q5_K_M → Q6_K on ``use_more_bits`` layers
  ($i < n/8$ or $i ≥ 7n/8$ or $(i - n/8) \\bmod 3 = 2$); Q4_K_S → Q5_K on the first 4;
  Q3_K_M → Q5_K on the first 2, else Q4_K; Q2_K → Q4_K when $N_q/K ≥ 4$, else Q3_K;
  a "70B" model bumps Q3_K/Q4_K to Q5_K; 8 experts → Q8_0;
* ``attn_k``: 8 experts → Q8_0;
* ``ffn_down`` (and its expert/shared variants, counted together): Q4_K_M/Q5_K_M → Q6_K on
  ``use_more_bits`` layers; Q4_K_S → Q5_K for $i < n/8$; Q3_K_M → Q5_K for $i < n/16$, else Q4_K;
  Q2_K → Q3_K;
* ``attn_output``: Q2_K → Q3_K, Q3_K_M → Q4_K; with 8 experts K-quant mixes → Q5_K;
* a row length not divisible by the block size falls back (Q4_K → Q5_0, Q5_K → Q5_1,
  Q6_K → Q8_0, Q2_K/Q3_K → Q4_0).

Block sizes from ggml/src/ggml-common.h: Q4_0 18 B/32, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34;
Q2_K 84 B/256, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210.

>>> r = gguf_recipe_bytes("llama-3.1-8b", "Q4_K_M")
>>> r["types"]["output.weight"], r["types"]["blk.0.attn_v.weight"], r["types"]["blk.4.attn_v.weight"]
('q6_K', 'q6_K', 'q4_K')
"""

from __future__ import annotations

from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.kinds import kind_of
from k3lib.engines.base import _resolve_model

#: (elements per block, bytes per block) of ggml types (ggml/src/ggml-common.h)
GGML_TYPES = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "q8_0": (32, 34),
    "q2_K": (256, 84),
    "q3_K": (256, 110),
    "q4_K": (256, 144),
    "q5_K": (256, 176),
    "q6_K": (256, 210),
    "iq4_nl": (32, 18),
}
#: the default tensor type of each file type (llama_model_quantize_impl's switch)
FILE_TYPES = {
    "Q4_0": "q4_0",
    "Q4_1": "q4_1",
    "Q5_0": "q5_0",
    "Q5_1": "q5_1",
    "Q8_0": "q8_0",
    "Q2_K": "q2_K",
    "Q3_K_M": "q3_K",
    "Q4_K_S": "q4_K",
    "Q4_K_M": "q4_K",
    "Q5_K_S": "q5_K",
    "Q5_K_M": "q5_K",
    "Q6_K": "q6_K",
    "F16": "f16",
    "BF16": "bf16",
}
_FALLBACK = {"q4_K": "q5_0", "q5_K": "q5_1", "q6_K": "q8_0", "q2_K": "q4_0", "q3_K": "q4_0"}


def use_more_bits(i_layer: int, n_layers: int) -> bool:
    """llama.cpp's ``use_more_bits``: the first and last eighth, and every third layer between."""
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def tensor_bytes(ggml_type: str, shape: tuple[int, ...]) -> int:
    """Rows × ⌈row ÷ block⌉ × block bytes (rows of ``shape[0]`` elements)."""
    per, size = GGML_TYPES[ggml_type]
    n = 1
    for d in shape[1:]:
        n *= d
    return n * (shape[0] // per) * size


def _tensors(arch) -> list[tuple[str, tuple[int, ...], int]]:
    """(name, shape with the row first, layer or -1) of a GQA transformer's GGUF tensors."""
    d, m = arch.hidden_size, arch.mlp
    out = [("token_embd.weight", (d, arch.vocab_size), -1), ("output_norm.weight", (d,), -1)]
    if not arch.tie_word_embeddings:
        out.append(("output.weight", (d, arch.vocab_size), -1))
    layer = 0
    groups = [g for g in arch.attention for _ in range(g.count)]
    for i, g in enumerate(groups):
        if not kind_of(g).gguf_recipe_tensors(g):
            raise K3InputError(
                "model",
                f"{arch.id} has {g.kind} layers; the recipe covers GQA transformers",
                "a dense or MoE model with full/sliding attention, or a real GGUF (--gguf)",
            )
        q, kv = g.num_heads * g.head_dim, g.kv_heads * g.head_dim
        out += [
            (f"blk.{i}.attn_norm.weight", (d,), i),
            (f"blk.{i}.ffn_norm.weight", (d,), i),
            (f"blk.{i}.attn_q.weight", (d, q), i),
            (f"blk.{i}.attn_k.weight", (d, kv), i),
            (f"blk.{i}.attn_v.weight", (d, g.kv_heads * (g.v_head_dim or g.head_dim)), i),
            (f"blk.{i}.attn_output.weight", (q, d), i),
        ]
        if g.qk_norm:  # Qwen3, Gemma 3: per-head RMS norms of q and k
            out += [
                (f"blk.{i}.attn_q_norm.weight", (g.head_dim,), i),
                (f"blk.{i}.attn_k_norm.weight", (g.head_dim,), i),
            ]
        if i < m.dense_layers:
            out += [
                (f"blk.{i}.ffn_gate.weight", (d, m.dense_intermediate), i),
                (f"blk.{i}.ffn_up.weight", (d, m.dense_intermediate), i),
                (f"blk.{i}.ffn_down.weight", (m.dense_intermediate, d), i),
            ]
        else:
            e, w = m.n_routed_experts, m.moe_intermediate
            out += [
                (f"blk.{i}.ffn_gate_inp.weight", (d, e), i),
                (f"blk.{i}.ffn_gate_exps.weight", (d, w, e), i),
                (f"blk.{i}.ffn_up_exps.weight", (d, w, e), i),
                (f"blk.{i}.ffn_down_exps.weight", (w, d, e), i),
            ]
            if m.n_shared_experts:
                s = m.shared_intermediate * m.n_shared_experts
                out += [
                    (f"blk.{i}.ffn_gate_shexp.weight", (d, s), i),
                    (f"blk.{i}.ffn_up_shexp.weight", (d, s), i),
                    (f"blk.{i}.ffn_down_shexp.weight", (s, d), i),
                ]
        layer = i
    del layer
    return out


def tensor_type(
    name: str,
    shape: tuple[int, ...],
    layer: int,
    *,
    ftype: str,
    n_layers: int,
    n_ffn_down: int,
    i_attn_v: int,
    i_ffn_down: int,
    n_expert: int,
    gqa: int,
    is_70b: bool = False,
    tied: bool = False,
) -> str:
    """The type llama-quantize gives one tensor (see the module's rules)."""
    base = FILE_TYPES[ftype]
    if len(shape) < 2 or "_norm" in name or "ffn_gate_inp" in name:
        return "f32"
    if base in ("f16", "bf16"):
        return base
    new = base
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        new = "q8_0" if shape[0] % 256 or base == "q8_0" else "q6_K"
    elif "attn_v" in name:
        if ftype == "Q2_K":
            new = "q4_K" if gqa >= 4 else "q3_K"
        elif ftype == "Q3_K_M":
            new = "q5_K" if i_attn_v < 2 else "q4_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i_attn_v, n_layers):
            new = "q6_K"
        elif ftype == "Q4_K_S" and i_attn_v < 4:
            new = "q5_K"
        if is_70b and new in ("q3_K", "q4_K"):
            new = "q5_K"
        if n_expert == 8:
            new = "q8_0"
    elif "attn_k" in name:
        if n_expert == 8:
            new = "q8_0"
    elif "ffn_down" in name:
        i = layer if n_expert > 1 else i_ffn_down
        n = n_ffn_down
        if ftype == "Q2_K":
            new = "q3_K"
        elif ftype == "Q3_K_M":
            new = "q5_K" if i < n // 16 else "q4_K"
        elif ftype in ("Q4_K_M", "Q5_K_M") and use_more_bits(i, n):
            new = "q6_K"
        elif ftype == "Q4_K_S" and i < n // 8:
            new = "q5_K"
    elif "attn_output" in name:
        if n_expert == 8 and ftype in ("Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M"):
            new = "q5_K"
        elif n_expert != 8 and ftype == "Q2_K":
            new = "q3_K"
        elif n_expert != 8 and ftype == "Q3_K_M":
            new = "q4_K"
    if shape[0] % GGML_TYPES[new][0]:
        new = _FALLBACK.get(new, "f16")
        if shape[0] % GGML_TYPES[new][0]:
            new = "f16"
    return new


def gguf_recipe_bytes(model: Any, ftype: str, *, is_70b: bool | None = None) -> dict[str, Any]:
    """{"total": bytes, "by_type": {type: bytes}, "types": {tensor: type}} of a ``ftype`` GGUF.

    ``is_70b``: llama.cpp's "70B" model-type bump of attn_v (default: 60–80 B parameters).
    """
    key = str(ftype).strip().upper().replace("-", "_")
    if key not in FILE_TYPES:
        raise K3InputError("ftype", f"{ftype!r} is not a llama.cpp file type the recipe covers", ", ".join(FILE_TYPES))
    arch, _ = _resolve_model(model)
    tensors = _tensors(arch)
    if is_70b is None:
        is_70b = 60e9 <= arch.params_total <= 80e9
    g = next(g for g in arch.attention if kind_of(g).grouped_kv)
    gqa = g.num_heads // max(1, g.kv_heads)
    n_expert = arch.mlp.n_routed_experts if arch.mlp.moe_layers else 0
    n_ffn_down = sum(1 for name, _, _ in tensors if "ffn_down" in name)
    i_v = i_down = 0
    types: dict[str, str] = {}
    by_type: dict[str, int] = {}
    total = 0
    for name, shape, layer in tensors:
        t = tensor_type(
            name,
            shape,
            layer,
            ftype=key,
            n_layers=arch.num_layers,
            n_ffn_down=n_ffn_down,
            i_attn_v=i_v,
            i_ffn_down=i_down,
            n_expert=n_expert,
            gqa=gqa,
            is_70b=is_70b,
            tied=arch.tie_word_embeddings,
        )
        if "attn_v" in name:
            i_v += 1
        if "ffn_down" in name:
            i_down += 1
        b = tensor_bytes(t, shape)
        types[name] = t
        by_type[t] = by_type.get(t, 0) + b
        total += b
    return {"total": total, "by_type": by_type, "types": types, "tensors": len(tensors)}


__all__ = ["GGML_TYPES", "FILE_TYPES", "use_more_bits", "tensor_bytes", "tensor_type", "gguf_recipe_bytes"]
