"""Differential test: for every built-in model and a grid of layouts, the single plan
(make_plan) and the vectorized sweep agree byte for byte on the fullest GPU, and both use the
one valid-TP rule; KV per rank follows the per-attention-kind rule worked by hand."""

from __future__ import annotations

import math

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.layout import valid_tp_sizes
from k3lib.core.models import builtin_models
from k3lib.core.plan import make_plan
from k3lib.core.sweep import sweep

MODELS = sorted(builtin_models())
#: (GPUs, nodes): one node of 1–8, two nodes of 8, four nodes of 4, three nodes of 8
LAYOUTS = [(1, 1), (2, 1), (4, 1), (8, 1), (16, 2), (16, 4), (24, 3)]
CONTEXTS = [4096, 131072]


@pytest.mark.parametrize("model", MODELS)
def test_plan_and_sweep_agree_for_every_builtin_model(model):
    weights = ["q4"] if "@" in model else ["native", "fp8"]
    for gpus, nodes in LAYOUTS:
        r = sweep(
            models=[model],
            gpus=["h200"],
            counts=[gpus],
            weights=weights,
            kv_dtypes=["bf16", "fp8"],
            contexts=CONTEXTS,
            nodes=nodes,
        )
        for wi, w in enumerate(weights):
            for ki, kv in enumerate(["bf16", "fp8"]):
                for ci, c in enumerate(CONTEXTS):
                    idx = (0, 0, 0, wi, ki, ci)
                    try:
                        p = make_plan(
                            model=model, gpu="h200", gpus=gpus, nodes=nodes, weights=w, kv_dtype=kv, context=c
                        )
                    except K3InputError:
                        assert not r.valid[idx], (model, gpus, nodes, w)
                        continue
                    assert r.valid[idx]
                    assert int(r.total_bytes_per_gpu[idx]) == p.per_gpu.total_bytes, (model, gpus, nodes, w, kv, c)
                    assert bool(r.fits[idx]) == p.fits


def test_one_valid_tp_rule():
    """MiniMax-M2.5 (48 heads, 8 KV heads): TP=3 divides the heads but neither divides nor is a
    multiple of 8 KV heads, so it is refused everywhere (make_plan, the sweep)."""
    assert 3 not in valid_tp_sizes(builtin_models()["minimax-m2.5"])
    with pytest.raises(K3InputError, match="^tp:"):
        make_plan(model="minimax-m2.5", gpu="h200", gpus=3, tp=3, nodes=1, context="8K")
    # Llama 4 Scout has 40 heads and 8 KV heads: TP=10 divides 40 but not 8 (nor is a multiple)
    assert 10 not in valid_tp_sizes(builtin_models()["llama-4-scout"])
    with pytest.raises(K3InputError, match="^tp:"):
        make_plan(model="llama-4-scout", gpu="h200", gpus=10, tp=10, nodes=1, context="8K")


def test_kv_per_rank_by_attention_kind():
    """GQA splits ÷min(TP, K); an MLA latent is replicated; worked for Llama 3.1 70B (80 layers,
    8 KV heads × 128 × 2) and DeepSeek-V3 (61 layers, latent 512 + 64) at 8K, BF16, TP = 16 on two nodes."""
    llama = make_plan(model="llama-3.1-70b", gpu="h200", gpus=16, tp=16, context=8192, weights="bf16")
    assert llama.per_gpu.kv_cache_bytes == 80 * 8 * 256 * 2 * 8192 // 8
    ds = make_plan(model="deepseek-v3", gpu="h200", gpus=16, context=8192, weights="native")
    assert (ds.tp, ds.pp) == (8, 2)
    stage_layers = [s.layers for s in ds.shares]
    assert stage_layers == [31, 30]
    assert ds.peak.kv_cache_bytes == math.ceil(
        max(stage_layers) * 576 * 2 * 8192
    ) or ds.peak.kv_cache_bytes == math.ceil(min(stage_layers) * 576 * 2 * 8192)


@pytest.mark.parametrize("model", [m for m in MODELS if "@" not in m])
def test_per_gpu_total_does_not_grow_with_tp(model):
    """GPUs = TP (one pool, valid splits only): the fullest GPU never holds more as TP grows past 2.
    From TP=1 to 2 it may rise by at most the communicator buffers (2.15 GiB), which appear once a
    GPU has peers; what does not shrink (an MLA latent, replicated weights) is named in the notes."""
    from k3lib.core.memory import NCCL_BYTES_PER_GPU

    spec = builtin_models()[model]
    totals = {}
    for tp in valid_tp_sizes(spec, 64):
        try:
            p = make_plan(model=model, gpu="b200", gpus=tp, tp=tp, weights="native", context=8192)
        except K3InputError:
            continue
        totals[tp] = p.per_gpu.total_bytes
        if any(g.kind == "mla" for g in spec.attention) and tp > 1:
            assert any("MLA latent cache replicated" in n for n in p.notes)
    tps = sorted(totals)
    for a, b in zip(tps, tps[1:]):
        allowance = NCCL_BYTES_PER_GPU if a == 1 else 0
        assert totals[b] <= totals[a] + allowance, (model, a, b, totals[a], totals[b])


ARCHITECTURES = [m for m in MODELS if "@" not in m]


def _marlin_mxfp4_bytes_per_rank(spec, tp: int) -> int:
    """MXFP4 experts as vLLM's Marlin MoE kernel stores them (vllm mxfp4.py): the intermediate per
    rank rounded up to 128, the hidden size to 256; 4-bit weights, one E8M0 scale per 32, BF16 biases."""
    m = spec.mlp
    per_rank = -(-m.moe_intermediate // tp)
    inter = -(-per_rank // 128) * 128
    hidden = -(-(m.latent_dim or spec.hidden_size) // 256) * 256
    per_expert = 3 * inter * hidden // 2 + 3 * inter * hidden // 32
    if m.expert_bias:
        per_expert += (2 * inter + hidden) * 2
    return m.moe_layers * m.n_routed_experts * per_expert


@pytest.mark.parametrize("model", ARCHITECTURES)
def test_vllm_profile_weights_per_rank_are_the_core_rule_plus_named_paddings(model):
    """One sharding rule for EVERY valid TP up to 64: vLLM's per-rank weights = the plan's weights
    on one GPU (K/V projections replicated once TP exceeds the KV heads, KDA's f_a whole), plus only
    what vLLM adds, each named: its rotary cos/sin cache (``rope_cache``), the vocabulary padded
    to a multiple of 64 rows (split over TP, once per untied table), and for MXFP4 experts the
    Marlin kernel's padded matrices in place of the plan's routed experts. (Before: TP ≤ 8 only,
    and Llama 3.1 70B at TP16 was +1.9 % over the core — K/V counted twice over.)"""
    from k3lib.engines import vllm_weights_bytes_per_rank

    spec = builtin_models()[model]
    checked = 0
    for tp in valid_tp_sizes(spec, 64):
        try:
            plan = make_plan(model=model, gpu="b200", gpus=tp, tp=tp, weights="native", context=8192)
        except K3InputError:
            continue
        engine = vllm_weights_bytes_per_rank(spec, tp=tp, weights="native")
        pad_rows = -(-spec.vocab_size // 64) * 64 - spec.vocab_size
        vocab_pad = (1 if spec.tie_word_embeddings else 2) * pad_rows * spec.hidden_size * 2 / tp
        added = engine["rope_cache"] + vocab_pad
        core = plan.peak.weights_bytes
        if spec.native_formats.get("routed_experts") == "mxfp4":
            assert engine["routed_experts"] == _marlin_mxfp4_bytes_per_rank(spec, tp), (model, tp)
            added += engine["routed_experts"] - plan.peak.routed_experts_bytes
        # per-group rounding up (≤ 1 byte per group) is all that may differ
        assert abs(engine["total"] - added - core) <= 16, (model, tp, engine["total"] - added - core)
        checked += 1
    assert checked >= 3


def test_llama_70b_tp16_k_v_projections_replicated_by_hand():
    """Llama 3.1 70B at TP16 (8 KV heads): each rank holds Q and O for 64 ÷ 16 = 4 heads and the K/V
    projections of one whole KV head (16 ÷ 8 = 2 replicas of each), per layer
    8192·(4·128)·2 + 8192·(1·256) = 10,485,760 weights; the plan and vLLM both say so."""
    from k3lib.engines import vllm_weights_bytes_per_rank

    per_layer = 8192 * 4 * 128 * 2 + 8192 * 256
    plan = make_plan(model="llama-3.1-70b", gpu="b200", gpus=16, tp=16, weights="bf16", context=8192)
    engine = vllm_weights_bytes_per_rank("llama-3.1-70b", tp=16, weights="bf16")
    assert engine["attention"] == 80 * per_layer * 2
    assert plan.peak.weights_replicated_bytes == 80 * 8192 * 256 * 2 + (80 * 2 + 1) * 8192 * 2  # K/V head + norms


def test_kda_f_a_is_whole_on_every_rank_in_both_models():
    """Kimi K3's KDA decay gate f_a (7168 × 128 + 128 weights, 69 layers) is replicated by vLLM:
    the per-rank attention of the engine and the plan's replicated bytes both count it whole."""
    from k3lib.core.memory import params_per_rank_by_group

    spec = builtin_models()["kimi-k3"]
    whole = params_per_rank_by_group(spec, tp=8)["attention"].whole
    mla = 24 * (7168 * 1536 + 1536 + 7168 * (512 + 64) + 512)
    assert whole == mla + 69 * (7168 * 128 + 128)


def test_engines_use_the_one_valid_tp_rule():
    from k3lib.engines import estimate_for_engine

    with pytest.raises(K3InputError, match="tp"):
        estimate_for_engine("vllm", model="minimax-m2.5", gpu="h200", gpus=3, tp=3, context=8192)
