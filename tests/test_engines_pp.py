"""Pipeline parallelism (PP > 1) in the vLLM and SGLang profiles, checked against
figures worked by hand from vLLM's rules (get_pp_indices, embedding first, LM head last,
min blocks over workers)."""

from __future__ import annotations

import pytest

from k3lib.core.errors import K3InputError
from k3lib.engines import estimate_for_engine
from k3lib.engines.pipeline import stage_weights_bytes_per_rank, vllm_pipeline_kv


def test_k3_two_nodes_has_an_engine_view_per_stage():
    # 93 layers over 2 stages: 46 each, the remainder to the stage before the last -> (47, 46)
    est = estimate_for_engine("vllm", model="kimi-k3", gpu="h200", gpus=16, pp=2, context="256K", kv_dtype="fp8")
    assert est.pp == 2 and est.tp == 8
    assert [s["layers"] for s in est.stages] == [47, 46]
    assert "GPU KV cache size" in est.printed
    sg = estimate_for_engine("sglang", model="kimi-k3", gpu="h200", gpus=16, pp=2, context="256K", kv_dtype="fp8")
    assert [s["layers"] for s in sg.stages] == [47, 46]


def test_llama_8b_stage_weights_by_hand():
    # vocab 128,256 (already a multiple of 64) x hidden 4,096 x 2 B = 1,050,673,152 B on stage 0 only;
    # the untied LM head the same on stage 1 only
    emb = 128256 * 4096 * 2
    s0 = stage_weights_bytes_per_rank("llama-3.1-8b", pp=2, stage=0)
    s1 = stage_weights_bytes_per_rank("llama-3.1-8b", pp=2, stage=1)
    assert s0["embedding"] == emb and s0["lm_head"] == 0
    assert s1["embedding"] == 0 and s1["lm_head"] == emb
    # one decoder layer of Llama 3.1 8B: q,o 4096x4096, k,v 4096x1024, MLP 3x4096x14336, 2 norms, in BF16
    layer = (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) * 2
    body0 = s0["attention"] + s0["dense_mlp"] + s0["norms"]
    assert abs(body0 - 16 * layer) <= 16 * 4096 * 2  # within the final norm's share


def test_llama_8b_pp2_kv_blocks_by_hand():
    # 16 layers per stage; a token costs 2 x 8 KV heads x 128 x 2 B = 4,096 B per layer;
    # a block is 16 tokens -> 65,536 B per layer page, x 16 layers = 1 MiB per block index
    kv = vllm_pipeline_kv("llama-3.1-8b", pp=2)
    assert kv.stage_group_size == (16, 16)
    assert kv.stage_bytes_per_block(0) == 2**20
    # workers with 1 GiB and 2 GiB: each gets the smaller count, 1,024 blocks = 16,384 tokens
    assert kv.blocks([2**30, 2 * 2**30]) == 1024
    assert kv.tokens([2**30, 2 * 2**30]) == 16384


def test_pp_must_divide_the_gpus():
    with pytest.raises(K3InputError, match="pp"):
        estimate_for_engine("vllm", model="llama-3.1-8b", gpus=3, pp=2)
    with pytest.raises(K3InputError, match="pp"):
        estimate_for_engine("vllm", model="llama-3.1-8b", gpus=64, tp=1, pp=64)  # 64 stages, 32 layers


def test_sglang_pp_keeps_the_linear_attention_state_per_stage():
    """Qwen3-Next on 4× H200, TP=2 × PP=2, batch 64, 8K: each stage holds 24 layers, 6 of them full
    attention (layer i full when (i+1) % 4 == 0) and 18 Gated DeltaNet. Per stage and GPU:
    cells 6 layers × 1 KV head (2 ÷ TP 2) × (256 + 256) × 2 B = 6,144 B per token, and the GDN state
    18 × [32·128·128 + (2·16·128 + 32·128)·3] × 4 B × 64 sequences ÷ TP 2 = 1,264,582,656 B
    (1.18 GiB) — which PP > 1 left out before, as PP = 1 does not."""
    est = estimate_for_engine("sglang", model="qwen3-next-80b", gpu="h200", gpus=4, tp=2, pp=2, context=8192, batch=64)
    state = 18 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 4 * 64 // 2
    assert state == 1_264_582_656
    cells = 6 * 1 * (256 + 256) * 2 * 8192 * 64
    assert [s["kv_needed_bytes"] for s in est.stages] == [cells + state, cells + state]
    assert est.kv_needed_bytes == cells + state
