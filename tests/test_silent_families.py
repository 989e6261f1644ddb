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
