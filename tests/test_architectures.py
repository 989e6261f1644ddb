"""Real architectures reproduce their known parameter totals and KV bytes per token.

Expected values are derived here by hand, tensor by tensor, from the config shapes,
or taken from published totals (Hugging Face safetensors indexes, which check them
against safetensors listings); they are never the function's own output.
"""

import pytest

from k3lib.core.models import get_model

H, V = 7168, 163840


def k3_params_by_hand():
    """Kimi K3 text weights from the checkpoint's tensor shapes (kimi-k3.json)."""
    inner = 96 * 128  # KDA heads × head dim
    kda = (
        3 * inner * H  # q, k, v
        + 3 * inner * 4  # short convs (kernel 4)
        + 128 * H
        + inner * 128  # f_a, f_b
        + inner
        + 96  # dt_bias, A_log
        + 96 * H  # b_proj
        + inner * H  # g_proj (full-rank gate)
        + 128  # o_norm
        + H * inner
    )  # o_proj
    mla = (
        1536 * H
        + 1536  # q_a_proj + norm
        + 96 * (128 + 64) * 1536  # q_b_proj
        + (512 + 64) * H
        + 512  # kv_a_proj_with_mqa + norm
        + 96 * (128 + 128) * 512  # kv_b_proj
        + H * 96 * 128  # o_proj
        + 96 * 128 * H
    )  # output gate
    expert = 3 * 3072 * 3584  # w1, w3, w2 in the 3584-wide latent space
    moe = (
        896 * H
        + 896  # router + score-correction bias
        + 3 * (2 * 3072) * H  # two shared experts
        + 2 * 3584 * H
        + 3584  # latent down/up projections + norm
        + 896 * expert
    )
    dense = 3 * 33792 * H  # layer 0
    norms = 93 * 2 * H + H
    total = 69 * kda + 24 * mla + 92 * moe + dense + norms + 2 * V * H
    active = total - V * H - 92 * 896 * expert + 92 * 16 * expert
    return total, active


def test_kimi_k3_parameters():
    k3 = get_model("kimi-k3")
    total, active = k3_params_by_hand()
    assert k3.params_total == total
    assert k3.params_active == active
    assert round(k3.params_total / 1e9, 1) == 2779.5  # the issue's ≈2,779.5B
    assert round(k3.params_active / 1e9, 1) == 104.2  # ≈104.2B active, input embedding excluded


def test_kimi_k3_kv_and_state():
    k3 = get_model("kimi-k3")
    assert k3.kv_bytes_per_token(2) == 24 * (512 + 64) * 2 == 27648
    recurrent = 96 * 128 * 128  # heads × d_k × d_v per KDA layer
    conv = 3 * 96 * 128 * (4 - 1)  # q, k, v channels × (kernel − 1)
    assert k3.state_elements_per_sequence() == 69 * (recurrent + conv)


def test_kimi_k3_native_weights_match_the_public_weight_listing():
    from k3lib.core.memory import weights_bytes

    k3 = get_model("kimi-k3")
    # A public weight listing of the checkpoint totals 1,453.66 GiB (a public weight listing of moonshotai/Kimi-K3).
    assert weights_bytes(k3, "native") / 2**30 == pytest.approx(1453.66, rel=0.002)


@pytest.mark.parametrize(
    "model, total, kv_bf16",
    [
        ("llama-3.1-70b", 70_553_706_496, 2 * 80 * 8 * 128 * 2),
        ("llama-3.1-8b", 8_030_261_248, 2 * 32 * 8 * 128 * 2),
        ("llama-3.1-405b", 405_853_388_800, 2 * 126 * 8 * 128 * 2),
        ("deepseek-v3", 671_026_419_200, 61 * (512 + 64) * 2),
        ("kimi-k2", 1_026_408_232_448, 61 * (512 + 64) * 2),
        ("qwen2.5-72b", 72_706_203_648, 2 * 80 * 8 * 128 * 2),
        ("kimi-linear-48b", 49_122_681_728, 7 * (512 + 64) * 2),
        ("gpt-oss-120b", 116_829_156_672, 18 * 2 * 8 * 64 * 2),
        ("qwen3-next-80b", 79_674_391_296, 12 * 2 * 2 * 256 * 2),
        ("mixtral-8x7b", 46_702_792_704, 2 * 32 * 8 * 128 * 2),
    ],
)
def test_known_totals(model, total, kv_bf16):
    m = get_model(model)
    assert m.params_total == total
    assert m.kv_bytes_per_token(2) == kv_bf16


def test_deepseek_v3_is_671b():
    assert round(get_model("deepseek-v3").params_total / 1e9, 1) == 671.0


def test_sliding_window_caps_at_the_window():
    gpt = get_model("gpt-oss-120b")
    # 18 full layers grow; 18 sliding layers hold at most 128 tokens; 2·8·64 elements per layer-token.
    per_layer_token = 2 * 8 * 64 * 2
    expected = 18 * per_layer_token * 100_000 + 18 * per_layer_token * 128
    assert gpt.kv_cache_bytes(context_tokens=100_000, batch=1, bytes_per_element=2) == expected


def test_head_dim_is_explicit_not_hidden_over_heads():
    q = get_model("qwen3-next-80b")
    full = [g for g in q.attention if g.kind == "full"][0]
    assert full.head_dim == 256 and 2048 // 16 == 128
