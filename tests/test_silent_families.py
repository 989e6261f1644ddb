"""Families whose llama.cpp figures were silently wrong (issue 23, "Silently wrong"): each expected
value is worked by hand from the llama.cpp rule cited (ggml-org/llama.cpp@0c1e57098)."""
from __future__ import annotations

import pytest

from k3lib.engines.llamacpp import llamacpp_memory
from k3lib.loaders._common import TensorInfo
from k3lib.loaders.gguf_file import architecture_from_gguf

EMB = [TensorInfo("token_embd.weight", "F32", (256, 512), 256 * 512 * 4, "embedding", None, False)]


def _gemma4_meta(**extra):
    # 6 layers, layers 0–4 sliding (window 256), layer 5 full; 2 KV heads; full-layer head 128
    meta = {"general.architecture": "gemma4", "gemma4.embedding_length": 256, "gemma4.block_count": 6,
            "gemma4.attention.head_count": 4, "gemma4.attention.head_count_kv": 2,
            "gemma4.attention.key_length": 128, "gemma4.attention.value_length": 128,
            "gemma4.feed_forward_length": 512, "gemma4.attention.sliding_window": 256, "gemma4.context_length": 8192,
            "gemma4.attention.sliding_window_pattern": [True] * 5 + [False], "tokenizer.ggml.tokens": 512}
    meta.update({f"gemma4.attention.{k}": v for k, v in extra.items()})
    return meta


def test_gemma4_sliding_layers_use_key_length_swa():
    # llama.cpp: a sliding layer's K row is n_head_kv × n_embd_head_k_swa (attention.key_length_swa),
    # its V row n_head_kv × n_embd_head_v_swa (attention.value_length_swa); full layers keep key_length.
    arch = architecture_from_gguf(_gemma4_meta(key_length_swa=64, value_length_swa=64), EMB, id="g4", source="t")
    swa = next(g for g in arch.attention if g.kind == "sliding")
    full = next(g for g in arch.attention if g.kind == "full")
    assert (swa.head_dim, swa.v_head_dim, full.head_dim) == (64, 0, 128)
    m = llamacpp_memory(arch, n_ctx=4096)
    # sliding cells: ⌈min(4096, 256 + 512)⌉₂₅₆ = 768; 5 layers × 768 × (2 × 64) × 2 B
    assert m["swa_k"] == m["swa_v"] == 5 * 768 * 2 * 64 * 2 == 983_040       # was 1,966,080 (+100 %)
    # the full layer: 1 × 4096 cells × (2 × 128) × 2 B
    assert m["k"] == m["v"] == 1 * 4096 * 2 * 128 * 2 == 2_097_152


def test_value_length_swa_defaults_to_the_full_value_length():
    # n_embd_head_v_swa starts as n_embd_head_v_full (value_length), not as key_length_swa
    arch = architecture_from_gguf(_gemma4_meta(key_length_swa=64), EMB, id="g4", source="t")
    swa = next(g for g in arch.attention if g.kind == "sliding")
    assert (swa.head_dim, swa.v_head_dim) == (64, 128)
    m = llamacpp_memory(arch, n_ctx=4096)
    assert m["swa_k"] == 5 * 768 * 2 * 64 * 2
    assert m["swa_v"] == 5 * 768 * 2 * 128 * 2
    # without either key the sliding layers keep the full layers' sizes
    arch = architecture_from_gguf(_gemma4_meta(), EMB, id="g4", source="t")
    assert {g.head_dim for g in arch.attention} == {128}


# ---------------------------------------------------------------- glm4moe: MTP (nextn) layers skipped

def _glm4moe_gguf(path, nextn: int):
    """A 3-block glm4moe GGUF (F32): block 0 dense, blocks 1–2 MoE; the last ``nextn`` blocks MTP."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "glm4moe")
    for k, v in (("block_count", 3), ("embedding_length", 64), ("feed_forward_length", 128), ("context_length", 4096),
                 ("attention.head_count", 4), ("attention.head_count_kv", 2), ("attention.key_length", 32),
                 ("attention.value_length", 32), ("expert_count", 4), ("expert_used_count", 2),
                 ("expert_feed_forward_length", 32), ("leading_dense_block_count", 1), ("nextn_predict_layers", nextn)):
        w.add_uint32(f"glm4moe.{k}", v)

    def t(name, *shape):                    # shape as llama.cpp prints it (ne0 first); F32 zeros
        w.add_tensor(name, np.zeros(tuple(reversed(shape)), dtype=np.float32))

    t("token_embd.weight", 64, 100)
    t("output.weight", 64, 100)
    t("output_norm.weight", 64)
    for i in range(3):
        t(f"blk.{i}.attn_norm.weight", 64)
        t(f"blk.{i}.attn_q.weight", 64, 128)
        t(f"blk.{i}.attn_k.weight", 64, 64)
        t(f"blk.{i}.attn_v.weight", 64, 64)
        t(f"blk.{i}.attn_output.weight", 128, 64)
        t(f"blk.{i}.ffn_norm.weight", 64)
        if i == 0:
            t("blk.0.ffn_up.weight", 64, 128)
            t("blk.0.ffn_gate.weight", 64, 128)
            t("blk.0.ffn_down.weight", 128, 64)
        else:
            t(f"blk.{i}.ffn_gate_inp.weight", 64, 4)
            t(f"blk.{i}.ffn_up_exps.weight", 64, 32, 4)
            t(f"blk.{i}.ffn_gate_exps.weight", 64, 32, 4)
            t(f"blk.{i}.ffn_down_exps.weight", 32, 64, 4)
    if nextn:
        t("blk.2.nextn.eh_proj.weight", 128, 64)
        t("blk.2.nextn.enorm.weight", 64)
        t("blk.2.nextn.hnorm.weight", 64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_glm4moe_nextn_layer_is_not_in_the_llamacpp_weights(tmp_path):
    # llama.cpp creates the tensors of blocks ≥ n_layer (the nextn_predict_layers MTP blocks) with
    # TENSOR_SKIP unless loaded for MTP drafting: they are in no buffer.
    from k3lib.engines.llamacpp import llamacpp_model_buffer_bytes, llamacpp_offload_split
    from k3lib.loaders.gguf_file import load_gguf

    m = load_gguf(_glm4moe_gguf(tmp_path / "glm.gguf", nextn=1))
    f32 = 4
    head = (64 * 100 + 64 * 100 + 64) * f32                         # token_embd, output, output_norm
    attn = (64 + 64 * 128 + 64 * 64 * 2 + 128 * 64 + 64) * f32       # norms, q, k, v, o = 24,704 × 4
    dense = 3 * 64 * 128 * f32
    moe = (64 * 4 + 3 * 64 * 32 * 4) * f32
    mtp_extra = (128 * 64 + 64 + 64) * f32                           # eh_proj, enorm, hnorm
    # every size above is a multiple of 32 bytes, so the CPU buffer's alignment adds nothing
    main = head + 2 * attn + dense + moe
    assert m.architecture.num_layers == 2
    assert m.weights_bytes_by_group["mtp"] == attn + moe + mtp_extra
    assert llamacpp_model_buffer_bytes(m) == main == 446_720               # was 678,144 (+52 %)
    assert llamacpp_model_buffer_bytes(m, load_mtp=True) == main + attn + moe + mtp_extra
    split = llamacpp_offload_split(m, n_gpu_layers=-1, n_ctx=256)
    assert split["gpu"]["weights"] == main - 64 * 100 * f32          # the token embedding stays on the host
    assert split["host"]["weights"] == 64 * 100 * f32
    assert any("nextn" in n and "skips" in n for n in m.notes)
    # the same file without the nextn key: block 2 is an ordinary layer and counts
    m0 = load_gguf(_glm4moe_gguf(tmp_path / "glm0.gguf", nextn=0))
    assert llamacpp_model_buffer_bytes(m0) == main + attn + moe
