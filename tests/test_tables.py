"""Tests for k3lib.views.tables: the regenerated guide tables and the comparisons.

Expected values are worked by hand from the formulas and the guides' own inputs
(594 / 450.4 / 325 / 225 GiB of weights, 262,144 B per token at BF16, 10 GiB of
activation, 8 GiB per GPU or 48 GiB in total of overhead, 80 GiB per H100), or from
model shapes typed in from the published configs — never from the function under test.
"""

from __future__ import annotations

import math

import pytest

from k3lib.core.errors import K3InputError
from k3lib.views import tables

GiB = 2**30  # typed by hand
GB = 10**9
W_GUIDE = {"bf16": 594.0, "q8": 450.4, "q4": 325.0, "q2": 225.0}  # guide 000, GiB
KV_BF16 = 262_144  # guide 000, B per token at BF16
B_PER_ELEMENT = {"bf16": 2, "fp8": 1, "int4": 0.5}
T = {"64K": 65_536, "128K": 131_072, "256K": 262_144, "512K": 524_288, "1M": 1_048_576}


def kv_gib(dtype: str, ctx: str) -> float:
    """Guide 000's KV formula: bytes per token × tokens / 1024^3."""
    return KV_BF16 * B_PER_ELEMENT[dtype] / 2 * T[ctx] / GiB


# ---------------------------------------------------------------- the worked example


def test_plan_table_reproduces_the_guides_415():
    df = tables.plan_table(tables.guide_000_plan(gpus=6))
    assert df.loc["weights", "total_GiB"] == 325.0
    assert df.loc["KV cache", "total_GiB"] == 131_072 * 262_144 / GiB == 32.0
    assert df.loc["activation", "total_GiB"] == 10.0
    assert df.loc["overhead", "total_GiB"] == 48.0
    assert df.loc["total", "total_GiB"] == 325 + 32 + 10 + 48 == 415
    assert df.loc["available", "total_GiB"] == 6 * 80
    assert df.loc["headroom", "total_GiB"] == 480 - 415
    assert df.loc["weights", "per_gpu_GiB"] == round(325 / 6, 2)
    assert df.loc["available", "per_gpu_GiB"] == 80.0


def test_worked_example_table_has_param_formula_value():
    df = tables.worked_example_table(tables.guide_000_plan(gpus=6))
    assert list(df.columns) == ["param", "symbol", "formula", "value", "unit"]
    v = df.set_index("param")["value"]
    assert v["weights"] == 325.0
    assert v["kv_per_token"] == 131_072
    assert v["context"] == 262_144
    assert v["kv_cache"] == 32.0
    assert v["total"] == 415.0
    assert v["available"] == 480.0
    assert v["headroom"] == 65.0
    kv_formula = df.set_index("param").loc["kv_cache", "formula"]
    assert "262,144" in kv_formula and "131,072" in kv_formula and "2^30" in kv_formula


def test_five_vs_six_h100_as_the_guide_says():
    df = tables.gpu_count_table(gpus=(5, 6))
    assert list(df["available_GiB"]) == [400.0, 480.0]
    assert list(df["headroom_GiB"]) == [400 - 415, 480 - 415]
    assert list(df["fits"]) == [False, True]


def test_per_gpu_overhead_rule_grows_with_the_gpu_count():
    df = tables.gpu_count_table(gpus=(4, 5, 6, 8), assumptions=None)
    assert list(df["overhead_GiB"]) == [8 * g for g in (4, 5, 6, 8)]
    assert list(df["total_GiB"]) == [325 + 32 + 10 + 8 * g for g in (4, 5, 6, 8)]
    assert list(df["headroom_GiB"]) == [80 * g - (367 + 8 * g) for g in (4, 5, 6, 8)]


def test_gpu_count_table_for_another_gpu():
    df = tables.gpu_count_table(gpus=(4,), gpu="h200", assumptions=None)
    assert df.loc[0, "available_GiB"] == 4 * 141
    assert df.loc[0, "headroom_GiB"] == 4 * 141 - (367 + 32)


def test_min_gpus_by_hand():
    # Q4 + FP8 at 256K: 367 GiB must fit in G·(80 − 8): G = ceil(367 / 72) = 6
    assert tables.min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K") == 6
    # on H200: G·(141 − 8) ≥ 367 → 3
    assert tables.min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpu="h200") == 3
    # 128K: 351 ≤ 5·72 = 360 → 5
    assert tables.min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="128K") == 5


# ---------------------------------------------------------------- weights


def test_guide_precision_ladder_matches_its_claims():
    df = tables.precision_ladder_table("kimi-k3@guide-000").set_index("precision")
    assert list(df.index) == ["BF16", "Q8", "Q4", "Q2"]
    assert list(df["weights_GiB"]) == [594.0, 450.4, 325.0, 225.0]
    assert df.loc["Q8", "saved_vs_bf16_pct"] == round(100 * (1 - 450.4 / 594), 1) == 24.2
    assert df.loc["Q4", "saved_vs_bf16_pct"] == round(100 * (1 - 325 / 594), 1) == 45.3  # "~45 %"
    assert df.loc["Q2", "saved_vs_bf16_pct"] == round(100 * (1 - 225 / 594), 1) == 62.1  # "~62 %"
    assert df.loc["Q4", "saved_vs_previous_pct"] == round(100 * (1 - 325 / 450.4), 1) == 27.8
    assert df.loc["Q2", "saved_vs_previous_pct"] == round(100 * (1 - 225 / 325), 1) == 30.8
    # 594 GiB over 2.8T parameters is 1.82 bits each
    assert df.loc["BF16", "bits_per_param"] == round(594 * GiB * 8 / 2.8e12, 2) == 1.82


def test_real_k3_ladder_follows_bits():
    df = tables.precision_ladder_table("kimi-k3").set_index("precision")
    assert list(df["bits_per_param"]) == [16.0, 8.5, 4.5, 2.63]  # BF16, Q8_0, Q4_K, Q2_K (2.625)
    assert df.loc["Q8", "saved_vs_bf16_pct"] == round(100 * (1 - 8.5 / 16), 1)
    assert df.loc["Q4", "saved_vs_bf16_pct"] == round(100 * (1 - 4.5 / 16), 1)
    assert df.loc["Q4", "saved_vs_previous_pct"] == round(100 * (1 - 4.5 / 8.5), 1)
    assert df.loc["Q2", "saved_vs_previous_pct"] == round(100 * (1 - 2.625 / 4.5), 1)


def test_weights_worked_table_for_the_guide_profile():
    v = tables.weights_worked_table("kimi-k3@guide-000", "q4").set_index("param")["value"]
    assert v["P"] == 2800.0
    assert v["W"] == 325.0
    assert v["b_w"] == round(325 * GiB * 8 / 2.8e12, 3)  # about 1 bit per parameter


def test_real_k3_native_weights_sit_between_q4_and_bf16_bits():
    v = tables.weights_worked_table("kimi-k3", "native").set_index("param")["value"]
    assert 4.25 < v["b_w"] < 4.6  # MXFP4 (4.25 bits) for ~98 % of parameters, BF16 for the rest
    assert 1.5e12 < v["W"] * GiB < 1.6e12  # ~1.56 TB as shipped


def test_guide_weights_comparison_in_gb():
    df = tables.guide_weights_comparison().set_index("source")
    g0 = 594 * GiB / GB
    assert df.loc["guide 000: 'BF16 weights ~594 GB'", "weights_GB"] == round(g0, 2) == 637.8
    assert df.loc["guide 004: FP16 row", "weights_GB"] == 5476.2
    assert df.loc["guide 004: FP16 row", "ratio_to_guide_000"] == round(5476.2 / g0, 2) == 8.59
    assert df.loc["headline: 2.8T × 2 B", "weights_GB"] == 5600.0
    assert df.loc["guide 000's own reason: 1/10 of 2.8T at 2 B", "weights_GB"] == 560.0
    assert not any(c.endswith("_GiB") for c in df.columns)  # one unit per table


def test_moe_table_keeps_all_experts_resident():
    df = tables.moe_table().set_index("model")
    assert df.loc["kimi-k3", "experts_E"] == 896 and df.loc["kimi-k3", "per_token_k"] == 16
    assert df.loc["deepseek-v3", "experts_E"] == 256 and df.loc["deepseek-v3", "per_token_k"] == 8
    assert (df["if_only_active_GiB"] < df["resident_GiB"]).all()
    assert (df["routed_share_pct"] > 95).all()
    with pytest.raises(K3InputError, match="models"):
        tables.moe_table(["llama-3.1-70b"])


def test_precision_budget_table_six_rows_by_hand():
    df = tables.precision_budget_table()
    rows = [("bf16", "bf16"), ("q8", "bf16"), ("q8", "fp8"), ("q4", "fp8"), ("q4", "int4"), ("q2", "int4")]
    assert list(zip(df["weights"].str.lower(), df["kv_dtype"].str.lower())) == rows
    for i, (w, kv) in enumerate(rows):
        payload = W_GUIDE[w] + kv_gib(kv, "256K") + 10
        pool = math.ceil(payload / (80 - 8))  # the guide's reading: one pool of GPUs
        g = pool if pool <= 8 else 8 * math.ceil(pool / 8)  # deployed: one node, then whole 8-GPU nodes
        assert df.loc[i, "kv_cache_GiB"] == kv_gib(kv, "256K")
        assert (df.loc[i, "gpus_one_pool"], df.loc[i, "gpus"]) == (pool, g)
        assert df.loc[i, "total_GiB"] == pytest.approx(payload + 8 * g, abs=0.01)
        assert df.loc[i, "headroom_GiB"] == pytest.approx(80 * g - payload - 8 * g, abs=0.01)
    assert list(df["gpus_one_pool"]) == [10, 8, 7, 6, 5, 4]
    assert list(df["gpus"]) == [16, 8, 7, 6, 5, 4]
    assert df.loc[3, "total_GiB"] == 415.0  # the worked example again


# ---------------------------------------------------------------- KV cache


def test_kv_table_is_the_guides_faq():
    df = tables.kv_context_table("kimi-k3@guide-000").set_index("context")
    for ctx in ("1M", "512K", "256K", "128K"):
        for d in ("bf16", "fp8", "int4"):
            assert df.loc[ctx, f"{d}_GiB"] == kv_gib(d, ctx)
    assert list(df["bf16_GiB"]) == [256.0, 128.0, 64.0, 32.0]


def test_kv_per_token_across_real_models():
    df = tables.kv_per_token_table().set_index("model")
    expected = {
        "llama-3.1-70b": 2 * 80 * 8 * 128 * 2,  # GQA: 80 layers, 8 KV heads, head dim 128
        "deepseek-v3": 61 * (512 + 64) * 2,  # MLA: 61 layers, latent 512 + rope 64
        "kimi-k2": 61 * (512 + 64) * 2,
        "gpt-oss-120b": 18 * 2 * 8 * 64 * 2,  # 18 full layers (18 more slide over 128 tokens)
        "gemma-3-27b": 10 * 2 * 16 * 128 * 2,  # 10 global layers of 62
        "qwen3-next-80b": 12 * 2 * 2 * 256 * 2,  # 12 full layers of 48, head dim 256
        "kimi-linear-48b": 7 * (512 + 64) * 2,  # 7 MLA layers of 27
        "kimi-k3": 24 * (512 + 64) * 2,  # 24 MLA layers of 93
        "kimi-k3@guide-000": 262_144,  # "At BF16: 262,144 bytes per token."
    }
    for model, b in expected.items():
        assert df.loc[model, "kv_B_per_token"] == b, model
    assert df.loc["kimi-k3", "kv_B_per_token"] == 27_648
    assert df.loc["kimi-k3", "growing_layers"] == "24 of 93"
    # KDA state: 69 layers × (96·128·128 recurrent + (3·96·128)·3 conv) elements × 4 B
    state = 69 * (96 * 128 * 128 + 3 * 96 * 128 * 3) * 4
    assert df.loc["kimi-k3", "state_MiB_per_seq"] == round(state / 2**20, 1) == 443.1
    assert df.loc["kimi-k3@guide-000", "kv_cache_GiB_256K"] == 64.0
    assert df.loc["llama-3.1-70b", "kv_cache_GiB_256K"] == 327_680 * 262_144 / GiB


def test_kv_per_token_fp8_halves():
    df = tables.kv_per_token_table(["kimi-k3", "kimi-k3@guide-000"], kv_dtype="fp8").set_index("model")
    assert df.loc["kimi-k3", "kv_B_per_token"] == 27_648 // 2
    assert df.loc["kimi-k3@guide-000", "kv_B_per_token"] == 131_072


def test_kv_worked_tables():
    llama = tables.kv_worked_table("llama-3.1-70b").set_index("param")["value"]
    assert llama["kv_tok"] == 327_680
    assert llama["KV cache"] == 327_680 * 262_144 / GiB == 80.0
    k3 = tables.kv_worked_table("kimi-k3").set_index("param")["value"]
    assert k3["r_kv + d_rope"] == 576 and k3["kv_tok"] == 27_648
    assert k3["KV cache"] == round((27_648 * 262_144 + 69 * (96 * 128 * 128 + 3 * 96 * 128 * 3) * 4) / GiB, 2)
    guide = tables.kv_worked_table("kimi-k3@guide-000", kv_dtype="fp8").set_index("param")["value"]
    assert guide["kv_tok"] == 131_072 and guide["KV cache"] == 32.0


def test_context_savings_512k_to_128k():
    df = tables.context_savings_table("kimi-k3@guide-000", current="512K", target="128K").set_index("kv_dtype")
    assert df.loc["BF16", "saved_GiB"] == 262_144 * (524_288 - 131_072) / GiB == 96.0
    assert df.loc["FP8", "saved_GiB"] == 48.0
    gb = tables.context_savings_table("kimi-k3@guide-000", unit="GB").set_index("kv_dtype")
    assert gb.loc["BF16", "saved_GB"] == round(262_144 * 393_216 / GB, 2) == 103.08  # the guide's "~100 GB"
    real = tables.context_savings_table("kimi-k3").set_index("kv_dtype")
    assert real.loc["BF16", "saved_GiB"] == pytest.approx(27_648 * 393_216 / GiB, abs=0.006)  # 10.125
    with pytest.raises(K3InputError, match="target"):
        tables.context_savings_table(current="128K", target="512K")


def test_reference_table_by_hand():
    df = tables.reference_table()
    assert list(df["weights"]) == ["BF16", "Q8", "Q4", "Q2"]
    assert list(df["kv_dtype"]) == ["BF16", "FP8", "FP8", "FP8"]
    for i, w in enumerate(("bf16", "q8", "q4", "q2")):
        kv = "bf16" if w == "bf16" else "fp8"
        for ctx in T:
            expected = W_GUIDE[w] + kv_gib(kv, ctx) + 10 + 48
            assert df.loc[i, f"total_GiB_{ctx}"] == pytest.approx(expected, abs=0.01), (w, ctx)
    # the two ends the guide's summary quotes
    assert df.loc[3, "total_GiB_64K"] == 291.0
    assert df.loc[0, "total_GiB_1M"] == 908.0


def test_reference_table_single_kv_dtype():
    df = tables.reference_table(kv_dtype="int4", contexts=("64K",))
    assert df.loc[3, "total_GiB_64K"] == 225 + 4 + 10 + 48


def test_units_are_in_the_column_names_and_checked():
    df = tables.kv_context_table("kimi-k3@guide-000", unit="GB")
    assert "bf16_GB" in df.columns and not any(c.endswith("_GiB") for c in df.columns)
    assert df.loc[0, "bf16_GB"] == round(262_144 * 1_048_576 / GB, 2)
    with pytest.raises(K3InputError, match="unit"):
        tables.kv_context_table(unit="TB")


def test_context_label():
    assert tables.context_label(262_144) == "256K"
    assert tables.context_label(1_048_576) == "1M"
    assert tables.context_label(1_000) == "1,000"


def test_budget_frame_long_form():
    plan = tables.guide_000_plan(gpus=6)
    df = tables.budget_frame({"guide": plan}, per="gpu")
    assert list(df["component"]) == ["weights", "KV cache", "activation", "overhead"]
    assert df["value_GiB"].sum() == pytest.approx(415 / 6, abs=0.02)
    assert set(df["available_GiB"]) == {80.0}
    with pytest.raises(K3InputError, match="per"):
        tables.budget_frame(plan, per="node")


def test_plan_table_says_when_the_kv_total_sums_tp_copies():
    from k3lib.core.plan import make_plan

    real = make_plan(model="kimi-k3", gpu="h200", gpus=16, nodes=2, weights="native", kv_dtype="bf16", context="1M")
    df = tables.plan_table(real)
    assert "KV cache" not in df.index and "KV cache, copies summed" in df.index
    # one copy of the MLA latent: 24 layers × (512 + 64) × 2 B × 2^20 tokens = 27.0 GiB; TP 8 holds 8 copies
    one_copy_mla_gib = 24 * (512 + 64) * 2 * 2**20 / 2**30
    assert one_copy_mla_gib == 27.0
    assert df.loc["KV cache, copies summed", "total_GiB"] >= 8 * one_copy_mla_gib
    guide = tables.plan_table(tables.guide_000_plan(gpus=6))  # a guide profile splits its KV evenly
    assert guide.loc["KV cache", "total_GiB"] == 32.0


def test_readable_shows_a_dash_for_missing_values():
    import pandas as pd

    df = pd.DataFrame({"link (GB/s)": [32.0, float("nan")], "GPUs saved": pd.array([2, None], dtype="Int64")})
    shown = tables.readable(df)
    assert shown.to_string().count("—") == 2
    assert "NaN" not in shown.to_string() and "<NA>" not in shown.to_string()
    assert shown.iloc[0].tolist() == [32.0, 2]
