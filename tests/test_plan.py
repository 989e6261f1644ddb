"""Plans on real architectures: layout, replication and bad input."""

import pytest

from k3lib.core.errors import DoesNotSplitError, K3InputError, UnknownNameError
from k3lib.core.plan import Assumptions, make_plan

GiB = 2**30


def test_k3_default_is_the_real_architecture_with_native_weights():
    p = make_plan(model="kimi-k3", gpu="h200", gpus=16, nodes=2, weights="native", kv_dtype="bf16", context="256K")
    assert p.model.kind == "architecture"
    assert (p.tp, p.pp) == (8, 2)
    # 93 layers cut 47 + 46 by index (vLLM's get_pp_indices); K3's config puts MLA at layers
    # 4, 8, …, 92, 93 (1-based full_attn_layers), so stage 1 (layers 48–93) holds 13 MLA + 33 KDA
    # layers (stage 0: 11 + 36). The MLA latent is replicated on every TP rank; the KDA state
    # (fp32) splits by head over TP. At 256K stage 1's two extra latents make it the fullest.
    latent = 13 * 576 * 2 * 262144
    state = 33 * (96 * 128 * 128 + 3 * 12288 * 3) * 4
    assert [s.layers for s in p.shares] == [47, 46]
    assert p.peak.stage == 1
    assert p.per_gpu.kv_cache_bytes == -(-(latent + state / 8) // 1)


def test_gqa_kv_replicates_beyond_kv_heads():
    """Llama 3.1 70B has 8 KV heads: at TP=16 each rank holds one head (1/8), not 1/16."""
    p = make_plan(
        model="llama-3.1-70b", gpu="h100", gpus=16, kv_dtype="bf16", context="128K", weights="bf16", tp=16
    )  # TP over 2 nodes when asked for; 16 H100 in one node do not exist
    assert p.tp == 16
    assert p.per_gpu.kv_cache_bytes == 327680 * 131072 // 8


def test_no_deployable_layout_for_five_gpus_of_k3():
    """K3's heads do not split 5 ways; TP=1 × PP=5 inside one node is not proposed."""
    with pytest.raises(DoesNotSplitError) as e:
        make_plan(model="kimi-k3", gpu="h200", gpus=5, weights="q4", kv_dtype="fp8", context="128K")
    assert str(e.value).startswith("gpus:")


def test_an_explicit_layout_is_honoured():
    p = make_plan(model="kimi-k3", gpu="h200", gpus=5, tp=1, pp=5, weights="q4", kv_dtype="fp8", context="128K")
    assert (p.tp, p.pp, p.nodes) == (1, 5, 1)


def test_context_above_the_model_maximum_does_not_fit():
    """Llama 3.1 70B's maximum is 131,072 tokens: 1M is DOES NOT FIT whatever the memory."""
    p = make_plan(model="llama-3.1-70b", gpu="h200", gpus=8, weights="bf16", context="1M")
    assert not p.fits and not p.loads
    assert "exceeds the model's maximum of 131,072" in p.reason


def test_whole_node_default_layout_for_k3():
    """16 H200s are two 8-GPU nodes: TP=8 inside each, PP=2 across (vLLM's recipe)."""
    p = make_plan(model="kimi-k3", gpu="h200", gpus=16, weights="native", kv_dtype="fp8", context="256K")
    assert (p.tp, p.pp, p.nodes) == (8, 2, 2)


def test_overhead_larger_than_the_gpu_is_refused():
    with pytest.raises(K3InputError) as e:
        make_plan(
            model="kimi-k3",
            gpu="h100-sxm",
            gpus=8,
            weights="native",
            assumptions=Assumptions(overhead_per_gpu_bytes=200 * GiB),
        )
    assert str(e.value).startswith("overhead_per_gpu:")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(model="kimi-k4"), "model"),
        (dict(gpu="h1000"), "gpu"),
        (dict(context="-5"), "context"),
        (dict(context="abc"), "context"),
        (dict(context=0), "context"),
        (dict(gpus=0), "gpus"),
        (dict(weights="q9"), "weights"),
        (dict(kv_dtype="fp3"), "kv_dtype"),
        (dict(gpus=5, tp=5), "tp"),
        (dict(gpus=8, nodes=3), "nodes"),
        (dict(batch=0), "batch"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(K3InputError) as err:
        make_plan(**kwargs)
    assert str(err.value).startswith(field + ":")
    assert isinstance(err.value, ValueError)


def test_unknown_names_list_close_matches():
    with pytest.raises(UnknownNameError) as err:
        make_plan(model="kimi-k2.5")
    assert "kimi-k2" in err.value.close_matches
    with pytest.raises(UnknownNameError) as err:
        make_plan(gpu="h200-sx")
    assert any("h200" in c for c in err.value.close_matches)


def test_tp_that_cannot_split_lists_allowed_sizes():
    with pytest.raises(DoesNotSplitError) as err:
        make_plan(model="kimi-k3", gpus=5, tp=5)
    assert "96" in str(err.value) and "allowed: TP = 1, 2, 3, 4, 6, 8" in str(err.value)


def test_profile_rejects_native_weights():
    with pytest.raises(K3InputError, match="^weights:"):
        make_plan(model="kimi-k3@guide-000", weights="native")


def test_overhead_given_twice_is_an_error():
    with pytest.raises(K3InputError, match="^overhead:"):
        Assumptions(overhead_per_gpu_bytes=1, overhead_total_bytes=2)


def test_architecture_overhead_is_flat_in_tp():
    """O = 1 GiB + [TP > 1]·2.15 GiB + 5 % of the payload (defaults): the communicator's
    buffers are a constant once a GPU has peers (vLLM 0.19: 2.1–2.2 GiB at TP=2 and TP=4)."""
    p1 = make_plan(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context="8K")
    p8 = make_plan(model="llama-3.1-8b", gpu="h100", gpus=8, weights="bf16", context="8K")
    pay1 = p1.per_gpu.weights_bytes + p1.per_gpu.kv_cache_bytes + p1.per_gpu.activation_bytes
    pay8 = p8.per_gpu.weights_bytes + p8.per_gpu.kv_cache_bytes + p8.per_gpu.activation_bytes
    assert p1.per_gpu.overhead_bytes == int(GiB + 0.05 * pay1)
    assert p8.per_gpu.overhead_bytes == GiB + int(2.15 * GiB) + int(0.05 * pay8)


def test_usable_memory_is_the_default_for_architectures():
    p = make_plan(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context="8K")
    assert p.per_gpu.available_bytes == round(79.19 * GiB)
