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
        r = sweep(models=[model], gpus=["h200"], counts=[gpus], weights=weights, kv_dtypes=["bf16", "fp8"],
                  contexts=CONTEXTS, nodes=nodes)
        for wi, w in enumerate(weights):
            for ki, kv in enumerate(["bf16", "fp8"]):
                for ci, c in enumerate(CONTEXTS):
                    idx = (0, 0, 0, wi, ki, ci)
                    try:
                        p = make_plan(model=model, gpu="h200", gpus=gpus, nodes=nodes, weights=w, kv_dtype=kv,
                                      context=c)
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
    llama = make_plan(model="llama-3.1-70b", gpu="h200", gpus=16, tp=16, nodes=1, context=8192, weights="bf16")
    assert llama.per_gpu.kv_cache_bytes == 80 * 8 * 256 * 2 * 8192 // 8
    ds = make_plan(model="deepseek-v3", gpu="h200", gpus=16, context=8192, weights="native")
    assert (ds.tp, ds.pp) == (8, 2)
    stage_layers = [s.layers for s in ds.shares]
    assert stage_layers == [31, 30]
    assert ds.peak.kv_cache_bytes == math.ceil(max(stage_layers) * 576 * 2 * 8192) or \
        ds.peak.kv_cache_bytes == math.ceil(min(stage_layers) * 576 * 2 * 8192)


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
            p = make_plan(model=model, gpu="b200", gpus=tp, tp=tp, nodes=1, weights="native", context=8192)
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


@pytest.mark.parametrize("model", ARCHITECTURES)
def test_vllm_profile_weights_per_rank_are_the_core_rule_plus_named_paddings(model):
    """One sharding rule: vLLM's per-rank weights = the plan's weights on one stage, plus paddings
    the engine names — its rotary cos/sin cache (``rope_cache``), the vocabulary padded to 64·TP rows,
    and for MXFP4 experts (gpt-oss) the backend's padded expert matrices (vLLM only adds)."""
    from k3lib.engines import vllm_weights_bytes_per_rank

    spec = builtin_models()[model]
    for tp in [t for t in valid_tp_sizes(spec, 8) if t in (1, 2, 4, 8)]:
        core = make_plan(model=model, gpu="b200", gpus=tp, tp=tp, nodes=1, weights="native",
                         context=8192).per_gpu.weights_bytes
        engine = vllm_weights_bytes_per_rank(spec, tp=tp, weights="native")
        padded = engine["total"] - engine["rope_cache"]
        if model.startswith("gpt-oss"):
            assert core <= padded <= core * 1.15, (model, tp)
        else:
            assert abs(padded - core) <= 0.005 * core, (model, tp, padded - core)


def test_engines_use_the_one_valid_tp_rule():
    from k3lib.engines import estimate_for_engine

    with pytest.raises(K3InputError, match="tp"):
        estimate_for_engine("vllm", model="minimax-m2.5", gpu="h200", gpus=3, tp=3, context=8192)
