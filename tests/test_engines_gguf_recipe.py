"""llama.cpp's per-tensor quantization recipe (src/llama-quant.cpp), checked by hand."""

from __future__ import annotations

import pytest

from k3lib.core.errors import K3InputError
from k3lib.engines.gguf_recipe import gguf_recipe_bytes, tensor_bytes, use_more_bits


def test_use_more_bits_layers_of_a_32_layer_model():
    # i < 4, i >= 28, or (i - 4) % 3 == 2
    assert [i for i in range(32) if use_more_bits(i, 32)] == [0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]


def test_q4_k_m_mixes_types_per_tensor():
    r = gguf_recipe_bytes("llama-3.1-8b", "Q4_K_M")
    t = r["types"]
    assert t["output.weight"] == "q6_K" and t["token_embd.weight"] == "q4_K"
    assert t["blk.6.attn_v.weight"] == "q6_K" and t["blk.7.attn_v.weight"] == "q4_K"
    assert t["blk.9.ffn_down.weight"] == "q6_K" and t["blk.10.ffn_down.weight"] == "q4_K"
    assert t["blk.0.attn_norm.weight"] == "f32"
    # 16 of 32 attn_v at Q6_K: 16 x 4,096 x 1,024 / 256 x 210 B
    assert sum(tensor_bytes("q6_K", (4096, 1024)) for i in range(32) if use_more_bits(i, 32)) == 16 * 4096 * 4 * 210
    # more than a flat 4.5 bits per weight
    assert r["total"] * 8 / 8_030_261_248 > 4.5


def test_eight_experts_get_q8_0_attention_kv():
    t = gguf_recipe_bytes("mixtral-8x7b", "Q4_K_M")["types"]
    assert t["blk.0.attn_k.weight"] == "q8_0" and t["blk.0.attn_v.weight"] == "q8_0"
    assert t["blk.0.ffn_gate_inp.weight"] == "f32"


def test_recipe_refuses_what_it_does_not_cover():
    with pytest.raises(K3InputError, match="ftype"):
        gguf_recipe_bytes("llama-3.1-8b", "IQ2_XXS")
    with pytest.raises(K3InputError, match="model"):
        gguf_recipe_bytes("deepseek-v3", "Q4_K_M")  # MLA: not a GQA transformer
