"""Tiny synthetic models, one per family the llama.cpp profile claims, as GGUF metadata.

Each family is the metadata a converter would write (``general.architecture``, the
``{arch}.*`` hyper-parameters, a 512-token test vocabulary), written with the ``gguf``
package.  llama.cpp itself creates the tensors from that metadata
(``llama_model_init_from_user``, include/llama.h) and saves a complete GGUF
(``llama_model_save_to_file``), so every tensor has exactly the shape llama.cpp expects; the
workbook then reads that file like any user's GGUF.

Sizes are small (≤ 30 MB of F32 weights) but every cache row is a multiple of 32 elements, so
quantized cache types (q8_0, q4_0) apply, and the K-quant recipes have 256-wide rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VOCAB = 512


@dataclass(frozen=True)
class Family:
    """A family: llama.cpp's architecture name and the metadata of its tiny model."""

    name: str  #: what the tests call it
    arch: str  #: general.architecture (llama.cpp's name)
    hparams: dict[str, Any] = field(default_factory=dict)  #: keys without the "{arch}." prefix
    claim: str = ""  #: what the family exercises in the profile


def _base(n_embd: int, n_layer: int, n_head: Any, n_head_kv: Any, n_ff: int) -> dict[str, Any]:
    return {
        "context_length": 65536,
        "embedding_length": n_embd,
        "block_count": n_layer,
        "feed_forward_length": n_ff,
        "attention.head_count": n_head,
        "attention.head_count_kv": n_head_kv,
        "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.freq_base": 10000.0,
        "vocab_size": VOCAB,
    }


_MLA = {
    "attention.key_length": 576,
    "attention.value_length": 512,
    "rope.dimension_count": 64,
    "attention.key_length_mla": 192,
    "attention.value_length_mla": 128,
    "attention.q_lora_rank": 256,
    "attention.kv_lora_rank": 512,
}
_MOE = {"expert_count": 4, "expert_used_count": 2, "expert_feed_forward_length": 256}
#: a Mamba-2 mixer: d_inner 512 in 8 heads of 64, d_state 64, 2 groups, conv kernel 4
_SSM = {
    "ssm.conv_kernel": 4,
    "ssm.inner_size": 512,
    "ssm.state_size": 64,
    "ssm.time_step_rank": 8,
    "ssm.group_count": 2,
}

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("llama-gqa", "llama", {**_base(256, 4, 4, 2, 512)}, "GQA: K and V rows = KV heads × head dim"),
        Family(
            "qwen3",
            "qwen3",
            {**_base(256, 4, 4, 1, 512), "attention.key_length": 128, "attention.value_length": 128},
            "head dim (128) set apart from embedding ÷ heads (64); one KV head",
        ),
        Family(
            "gemma3-iswa",
            "gemma3",
            {
                **_base(256, 6, 4, 2, 512),
                "attention.key_length": 64,
                "attention.value_length": 64,
                "attention.sliding_window": 256,
            },
            "interleaved sliding window: 5 of 6 layers keep window + ubatch cells",
        ),
        Family(
            "qwen3moe",
            "qwen3moe",
            {**_base(256, 4, 4, 2, 512), "attention.key_length": 64, "attention.value_length": 64, **_MOE},
            "MoE: expert tensors in the model buffer, KV as GQA",
        ),
        Family(
            "deepseek2-mla-moe",
            "deepseek2",
            {
                **_base(256, 3, 2, 1, 512),
                **_MLA,
                **_MOE,
                "expert_shared_count": 1,
                "leading_dense_block_count": 1,
                "expert_weights_scale": 1.0,
                "expert_gating_func": 2,
            },
            "MLA: one latent row (kv_lora + rope) per token and layer (one KV head, as converters write "
            "absorbed MLA); MoE with a shared expert",
        ),
        Family(
            "qwen3next-hybrid",
            "qwen3next",
            {
                **_base(256, 4, 4, 2, 512),
                "attention.key_length": 64,
                "attention.value_length": 64,
                **_MOE,
                "expert_shared_feed_forward_length": 256,
                "full_attention_interval": 4,
                "ssm.conv_kernel": 4,
                "ssm.inner_size": 256,
                "ssm.state_size": 64,
                "ssm.time_step_rank": 4,
                "ssm.group_count": 2,
            },
            "hybrid recurrent (gated delta net): a fixed state per sequence + KV on 1 of 4 layers",
        ),
        Family(
            "kimi-k3-tiny",
            "kimi-k3",
            {
                **_base(256, 4, [2, 0, 0, 2], [1, 0, 0, 1], 512),
                **_MLA,
                **_MOE,
                "expert_shared_count": 1,
                "leading_dense_block_count": 1,
                "expert_weights_scale": 1.0,
                "expert_gating_func": 2,
                "ssm.conv_kernel": 4,
                "kda.head_dim": 128,
                "attn_res.block_size": 2,
                "activation.situ_beta": 4.0,
                "activation.situ_linear_beta": 25.0,
            },
            "Kimi K3's layout in miniature: KDA state layers + MLA latent cache",
        ),
        Family(
            "falcon-h1",
            "falcon-h1",
            {**_base(256, 4, 4, 2, 512), "attention.key_length": 64, "attention.value_length": 64, **_SSM},
            "parallel hybrid: every layer caches K and V and holds a Mamba-2 state (R and S) beside it",
        ),
        Family(
            "mamba2",
            "mamba2",
            {
                "context_length": 65536,
                "embedding_length": 256,
                "block_count": 4,
                "feed_forward_length": 0,
                "attention.head_count": 0,
                "attention.layer_norm_rms_epsilon": 1e-5,
                "vocab_size": VOCAB,
                **_SSM,
            },
            "pure Mamba-2: no KV cache, no FFN; R = (d_conv−1)(d_inner + 2·n_group·d_state), S = d_state·d_inner",
        ),
        Family(
            "mamba1",
            "mamba",
            {
                "context_length": 65536,
                "embedding_length": 256,
                "block_count": 4,
                "feed_forward_length": 0,
                "attention.head_count": 0,
                "attention.layer_norm_rms_epsilon": 1e-5,
                "vocab_size": VOCAB,
                "ssm.conv_kernel": 4,
                "ssm.inner_size": 512,
                "ssm.state_size": 16,
                "ssm.time_step_rank": 16,
            },
            "pure Mamba-1 (no groups, dt rank 16): R = (d_conv−1)·d_inner, S = d_state·d_inner",
        ),
        Family(
            "rwkv7",
            "rwkv7",
            {
                "context_length": 65536,
                "embedding_length": 256,
                "block_count": 4,
                "feed_forward_length": 1024,
                "attention.head_count": 0,
                "attention.layer_norm_epsilon": 1e-5,
                "vocab_size": VOCAB,
                "wkv.head_size": 64,
                "attention.decay_lora_rank": 32,
                "attention.iclr_lora_rank": 32,
                "attention.value_residual_mix_lora_rank": 32,
                "attention.gate_lora_rank": 64,
            },
            "pure RWKV-7: no KV cache; R = 2 token shifts × D, S = D × head size",
        ),
        Family(
            "lfm2-shortconv",
            "lfm2",
            {**_base(256, 6, 4, [0, 0, 2, 0, 0, 2], 512), "shortconv.l_cache": 3},
            "short-conv hybrid (LFM2): 2 attention layers + 4 short-conv layers of state D·(L_cache−1)",
        ),
        Family(
            "granitehybrid",
            "granitehybrid",
            {
                **_base(256, 4, 4, [0, 0, 0, 2], 512),
                **_SSM,
                "attention.scale": 0.125,
                "embedding_scale": 12.0,
                "residual_scale": 0.22,
                "logit_scale": 8.0,
            },
            "serial hybrid: 3 Mamba-2 layers (read as Mamba, not gated delta net) + 1 attention layer",
        ),
        Family(
            "qwen2",
            "qwen2",
            {**_base(256, 4, 4, 2, 512)},
            "Q/K/V projection biases (kept: converted Qwen2 checkpoints carry them)",
        ),
        Family(
            "gemma2-swa",
            "gemma2",
            {
                **_base(256, 4, 4, 2, 512),
                "attention.key_length": 64,
                "attention.value_length": 64,
                "attention.sliding_window": 256,
                "attn_logit_softcapping": 50.0,
                "final_logit_softcapping": 30.0,
            },
            "alternating sliding window (every other layer), sandwich norms",
        ),
        Family(
            "cohere2-swa",
            "cohere2",
            {
                **_base(256, 4, 4, 2, 512),
                "attention.sliding_window": 256,
                "attention.layer_norm_epsilon": 1e-5,
                "logit_scale": 0.25,
            },
            "3 sliding : 1 full layers; one norm per (parallel) block",
        ),
        Family(
            "exaone4",
            "exaone4",
            {
                **_base(256, 4, 4, 2, 512),
                "attention.key_length": 64,
                "attention.value_length": 64,
                "attention.sliding_window": 256,
            },
            "EXAONE-4 below 64 layers: llama.cpp ignores the sliding window, every layer full",
        ),
        Family(
            "llama4-chunked",
            "llama4",
            {
                **_base(256, 4, 4, 2, 512),
                **_MOE,
                "interleave_moe_layer_step": 2,
                "attention.chunk_size": 256,
                "no_rope_layer_step": 4,
                "expert_shared_feed_forward_length": 256,
            },
            "chunked attention (3 chunked : 1 full, llama.cpp's fixed 8,192-token chunks), interleaved MoE",
        ),
        Family(
            "gpt-oss",
            "gpt-oss",
            {
                **_base(256, 4, 4, 2, 512),
                "attention.key_length": 64,
                "attention.value_length": 64,
                "attention.sliding_window": 128,
                **_MOE,
            },
            "attention sinks, alternating 128-token window, expert and attention biases",
        ),
        Family(
            "glm4moe-nextn",
            "glm4moe",
            {
                **_base(256, 4, 4, 2, 768),
                "attention.key_length": 64,
                "attention.value_length": 64,
                **_MOE,
                "expert_shared_count": 1,
                "leading_dense_block_count": 1,
                "nextn_predict_layers": 1,
                "expert_weights_scale": 1.0,
                "expert_gating_func": 2,
                "rope.dimension_count": 32,
            },
            "MTP: the last block is a nextn layer llama.cpp skips (no KV, not in the model buffer)",
        ),
    )
}


#: keys llama.cpp's model creation from metadata cannot take (its MTP "nextn" blocks are TENSOR_SKIP
#: and get no buffer): the model is built without them, and :func:`strip_optional` writes them back
#: with the nextn blocks' own tensors (eh_proj, enorm, hnorm, shared_head_norm), as a converter writes them
AFTER_BUILD_KEYS = ("nextn_predict_layers",)


def write_metadata(family: Family, path: str | Path, *, for_build: bool = False) -> Path:
    """Write ``family``'s metadata (no tensors) as a GGUF at ``path``; ``for_build`` leaves out
    :data:`AFTER_BUILD_KEYS`."""
    import gguf

    path = Path(path)
    w = gguf.GGUFWriter(str(path), family.arch)
    w.add_name(f"{family.name} (synthetic)")
    for key, value in family.hparams.items():
        if for_build and key in AFTER_BUILD_KEYS:
            continue
        full = f"{family.arch}.{key}"
        if isinstance(value, bool):
            w.add_bool(full, value)
        elif isinstance(value, int):
            w.add_uint32(full, value)
        elif isinstance(value, float):
            w.add_float32(full, value)
        elif isinstance(value, list):
            w.add_array(full, value)
        else:
            w.add_string(full, str(value))
    w.add_tokenizer_model("test")
    w.add_token_list([f"tok_{i}" for i in range(VOCAB)])
    w.add_token_scores([0.0] * VOCAB)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


#: tensors llama.cpp creates from metadata alone that a converter writes only for some checkpoints
#: (per-tensor scales, projection biases, llama-3 rope factors): dropped so the file looks like a
#: converted model; a tensor the family needs is kept (llama.cpp refuses to load without it)
_OPTIONAL_SUFFIXES = (
    ".scale",
    ".input_scale",
    "attn_q.bias",
    "attn_k.bias",
    "attn_v.bias",
    "attn_output.bias",
    "ffn_up.bias",
    "ffn_gate.bias",
    "ffn_down.bias",
)
_KEEP_ROPE_FREQS = ("gemma4",)  #: families whose rope_freqs tensor is required (proportional RoPE)
_OPTIONAL_NAMES = ("rope_freqs.weight", "cls.output.weight", "cls.weight", "cls.bias", "cls.output.bias", "output.bias")
#: biases the converted checkpoints of a family carry (Qwen2's Q/K/V, gpt-oss's attention biases): kept
_KEEP_BIASES = {
    "qwen2": ("attn_q.bias", "attn_k.bias", "attn_v.bias"),
    "gpt-oss": ("attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_output.bias"),
}


def strip_optional(src: str | Path, dst: str | Path, meta: str | Path | None = None) -> Path:
    """Copy the GGUF ``src`` to ``dst`` without the optional tensors above; keys of the metadata file
    ``meta`` that llama.cpp's saver does not write back (Gemma 4's shared_kv_layers and per-layer
    input width, its sliding-window pattern) are added from it."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    arch = str(reader.fields["general.architecture"].contents())
    w = gguf.GGUFWriter(str(dst), arch)
    fields = dict(reader.fields)
    if meta is not None:
        for name, f in gguf.GGUFReader(str(meta)).fields.items():
            if name.endswith(AFTER_BUILD_KEYS):
                fields[name] = f  # the saver wrote 0: the family's own value
            fields.setdefault(name, f)
    for name, f in fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = f.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            if not f.data:
                continue  # an empty array (a hyper-parameter left unset)
            w.add_key_value(name, f.contents(), vtype, sub_type=f.types[-1])
        else:
            w.add_key_value(name, f.contents(), vtype)
    # a gated-delta-net layer may be written fused (ssm_in) or split (attn_qkv + attn_gate); llama.cpp
    # created both from the metadata, a converter writes one: keep the fused form
    fused = {t.name.split(".")[1] for t in reader.tensors if t.name.endswith(".ssm_in.weight")}
    for t in reader.tensors:
        if (t.name.endswith(_OPTIONAL_SUFFIXES) and not t.name.endswith(_KEEP_BIASES.get(arch, ()))) or (
            t.name in _OPTIONAL_NAMES and not (arch in _KEEP_ROPE_FREQS and t.name == "rope_freqs.weight")
        ):
            continue
        if (
            t.name.startswith("blk.")
            and t.name.split(".")[1] in fused
            and t.name.endswith((".attn_qkv.weight", ".attn_gate.weight"))
        ):
            continue
        w.add_tensor(t.name, t.data, raw_shape=tuple(int(x) for x in reversed(t.shape)), raw_dtype=t.tensor_type)
    nextn_key = next((n for n in fields if n.endswith(".nextn_predict_layers")), None)
    if nextn_key:  # the MTP blocks' own tensors (zeros, F32)
        import numpy as np

        n_embd = int(fields[f"{arch}.embedding_length"].contents())
        n_block = int(fields[f"{arch}.block_count"].contents())
        for i in range(n_block - int(fields[nextn_key].contents()), n_block):
            w.add_tensor(f"blk.{i}.nextn.eh_proj.weight", np.zeros((n_embd, 2 * n_embd), dtype=np.float32))
            for norm in ("enorm", "hnorm", "shared_head_norm"):
                w.add_tensor(f"blk.{i}.nextn.{norm}.weight", np.zeros((n_embd,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(dst)
