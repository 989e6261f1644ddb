"""The views lessons 00–02 draw with (k3lib.views.anatomy, citations, weights_view, kv_growth):
figures worked by hand from the configs, charts as valid specs, widgets offering only valid values."""

from __future__ import annotations

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.plan import make_plan

GiB = 2**30


# ---------------------------------------------------------------- 00: anatomy


def test_per_gpu_frame_has_every_gpu_and_sums_to_the_plan():
    from k3lib.views import anatomy

    p = make_plan(model="kimi-k3", gpu="h200-sxm", gpus=16, weights="native", kv_dtype="fp8", context="256K")
    df = anatomy.per_gpu_frame(p, unit="GiB")
    assert df["GPU"].nunique() == 16 and sorted(set(df["node"])) == [0, 1] and sorted(set(df["stage"])) == [0, 1]
    kv = df[df.component == "KV cache"].groupby("stage")["GiB"].first()
    # each stage's GPUs hold its MLA layers' latent whole (1 B at FP8) and 1/8 of its KDA layers' state
    per_stage = kv.sum() * 8
    mla, kda = 24 * 576 * 262_144, 69 * (96 * 128 * 128 + 110_592) * 4
    assert per_stage == pytest.approx((8 * mla + kda) / GiB, abs=0.02)
    spec = anatomy.gpu_chart(p).to_dict()
    assert "FIT" not in spec["title"] and spec["config"]["axis"]["labelFontSize"] >= 11


def test_anatomy_table_dense_model_by_hand():
    from k3lib.views import anatomy

    p = make_plan(model="llama-3.1-70b", gpu="h200-sxm", gpus=2, weights="bf16", kv_dtype="bf16", context="128K")
    row = anatomy.anatomy_table({"llama": p}).iloc[0]
    assert row["weights (GiB)"] == pytest.approx(70_553_706_496 * 2 / 2 / GiB, abs=0.5)  # ≈ half of 131.42 each
    assert row["KV cache (GiB)"] == 2 * 80 * 4 * 128 * 2 * 131_072 / GiB == 20.0  # 4 of 8 KV heads per GPU
    assert row["fits"] is True or row["fits"] == True  # noqa: E712 — numpy's True_ is == True but not `is True`


def test_min_gpus_table_names_the_gpu():
    from k3lib.views import anatomy

    small = anatomy.min_gpus_table(
        model="llama-3.1-8b", weights="bf16", kv_dtype="bf16", gpu="h200-sxm", cases=(("8K", 1),)
    )
    assert small["fewest h200-sxm"].tolist() == [1]  # about 15 GiB of weights: one GPU
    hybrid = anatomy.min_gpus_table(
        model="qwen3-next-80b", weights="bf16", kv_dtype="bf16", gpu="h200-sxm", cases=(("8K", 1),)
    )
    assert hybrid["fewest h200-sxm"].tolist() == [2]  # 79.67e9 × 2 B = 148.4 GiB > 140.4 GiB usable: two


def test_guide_quote_names_title_source_and_links_the_audit():
    from k3lib.views.citations import guide_quote

    text = guide_quote("g000-weights-bf16")
    assert text.startswith("> “The BF16 weights are ~594 GB.”")
    assert "Kimi K3 VRAM Requirements" in text and "(public article)" in text
    assert "(07-guide-audit.ipynb)" in text and "shared/" not in text
    with pytest.raises(ValueError):
        guide_quote("g000-weights-bf16", "g004-offload-tps-mac-studio-m3-ultra-512gb")


# ---------------------------------------------------------------- 01: weights


def test_format_bits_are_block_bytes_over_weights():
    from k3lib.views import weights_view

    t = weights_view.format_bits_table(("mxfp4", "q4_k_m", "q8_0", "q2_k")).set_index("format")
    # bits = 8 · block bytes / weights per block
    assert t["bits per weight"].tolist() == [8 * 17 / 32, 8 * 144 / 256, 8 * 34 / 32, 8 * 84 / 256]
    assert t.loc["mxfp4", "GiB per billion params"] == round(1e9 * 4.25 / 8 / GiB, 2)


def test_tensor_formats_sum_to_the_checkpoint():
    from k3lib.views import weights_view

    t = weights_view.tensor_formats_table("llama-3.1-70b", "bf16")
    assert set(t["format"]) == {"bf16"}
    assert t["weights (GiB)"].sum() == pytest.approx(70_553_706_496 * 2 / GiB, abs=0.05)
    with pytest.raises(K3InputError):
        weights_view.tensor_formats_table("kimi-k3@guide-000")
    spec = weights_view.tensors_chart(t).to_dict()
    assert spec["config"]["axis"]["labelFontSize"] >= 11
    weights_view.bits_chart(weights_view.format_bits_table()).to_dict()


def test_weights_explorer_offers_only_valid_choices():
    pytest.importorskip("ipywidgets")
    from k3lib.views import weights_view

    box = weights_view.weights_explorer()
    models, formats = box.controls["model"].options, box.controls["weights"].options
    assert "kimi-k3@guide-000" not in models and "llama-3.1-70b" in models
    for m in ("kimi-k3", "qwen3-next-80b"):
        for f in formats:
            df, line = weights_view.weights_update(model=m, weights=f)
            assert df is not None and " GiB (" in line, (m, f, line)
    box.controls["model"].value = "llama-3.1-70b"
    box.controls["weights"].value = "q4_k_m"
    assert "36.96 GiB" in box.last_update[1]  # 70,553,706,496 × 4.5 / 8 / 2^30


# ---------------------------------------------------------------- 02: kv growth


def test_decode_step_without_a_cache_costs_t_times_the_flops():
    from k3lib.views import kv_growth

    row = kv_growth.decode_step_table(["kimi-k3"], contexts=["8K"]).iloc[0]
    assert row["cache read per token (GiB)"] == round(
        (24 * 576 * 2 * 8192 + 69 * (96 * 128 * 128 + 110_592) * 4) / GiB, 2
    )
    assert row["GFLOP per token, without cache"] == pytest.approx(8192 * row["GFLOP per token, with cache"], rel=1e-3)


def test_timeline_prefill_jumps_then_decode_adds_one_token():
    from k3lib.views import kv_growth

    df = kv_growth.timeline_frame(["llama-3.1-70b"], prompt_tokens=1024, output_tokens=64, points=64)
    assert df["phase"].tolist()[:3] == ["before", "prefill", "decode"]
    assert df["tokens in cache"].tolist()[:3] == [0, 1024, 1025]
    assert df["kv_cache_GiB"].iloc[1] == round(327_680 * 1024 / GiB, 2)
    with pytest.raises(K3InputError):
        kv_growth.timeline_frame(prompt_tokens=0)
    kv_growth.timeline_chart(df).to_dict()


def test_sequences_table_and_chart():
    from k3lib.views import kv_growth

    t = kv_growth.sequences_table(["qwen3-next-80b"], budget_bytes=64 * GiB, contexts=["32K", "1M"])
    assert t["context"].tolist() == ["32K"]  # 1M is past its 256K maximum
    per_seq = 2 * 12 * 2 * 256 * 2 * 32_768 + 36 * (32 * 128 * 128 + 3 * 8192) * 4
    assert t["sequences that fit"].tolist() == [64 * GiB // per_seq]
    kv_growth.sequences_chart(t).to_dict()


def test_kv_explorer_offers_contexts_the_model_serves():
    pytest.importorskip("ipywidgets")
    from k3lib.views import kv_growth

    box = kv_growth.kv_explorer(model="kimi-k3", context="1M")
    assert box.controls["context"].options[-1] == "1M"
    box.controls["model"].value = "llama-3.1-70b"  # 128K at most: the slider follows
    assert box.controls["context"].options[-1] == "128K" and box.controls["context"].value == "128K"
    assert box.last_update[1].startswith("llama-3.1-70b, BF16 cache, 128K context: 40.00 GiB per sequence")
    for m in kv_growth.cache_models():
        for c in kv_growth.context_choices(m):
            df, line = kv_growth.kv_update(model=m, kv_dtype="fp8", context=c, budget_gib=64)
            assert df is not None and "holds" in line, (m, c)
