"""Charts as specs (``chart.to_dict()`` validates against Vega-Lite), and the explorer's
callback as a plain function — no browser.

Expected figures are worked by hand from guide 000's inputs: weights 325 GiB (Q4),
KV 262,144 B/token at BF16, activation 10 GiB, overhead 8 GiB per GPU, H100 80 GiB,
H200 141 GiB.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from k3lib.core.errors import K3InputError
from k3lib.views import charts, tables, widgets
from k3lib.views.widgets_parallel import NODES, layout_choices

GiB = 2**30  # typed by hand
GUIDE = dict(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpu="h100-sxm", gpus=6)


def _spec(chart) -> dict:
    spec = chart.to_dict()  # validates against the Vega-Lite schema; raises if invalid
    json.dumps(spec)  # plain JSON, nothing left unserialisable
    return spec


def _titles(spec: dict) -> str:
    """Every title and axis title in a spec, as one string."""
    return json.dumps(spec)


# ---------------------------------------------------------------- charts


def test_budget_stacked_bar_from_plans():
    plans = {"guide": tables.guide_000_plan(gpus=6), "guide on 5": tables.guide_000_plan(gpus=5)}
    spec = _spec(charts.budget_stacked_bar(plans))
    assert "GiB" in spec["title"]
    assert "GiB = 2^30 bytes" in _titles(spec)
    assert len(spec["layer"]) == 2  # bars + capacity ticks
    values = [v for ds in spec["datasets"].values() for v in ds]
    weights = [v for v in values if v.get("component") == "weights"]
    assert [v["value_GiB"] for v in weights] == [325.0, 325.0]
    caps = sorted({v["available_GiB"] for v in values if "available_GiB" in v})
    assert caps == [400.0, 480.0]  # 5 × 80 and 6 × 80


def test_budget_stacked_bar_per_gpu_and_gb():
    plan = tables.guide_000_plan(gpus=6)
    spec = _spec(charts.budget_stacked_bar(plan, per="gpu", unit="GB"))
    assert "GB = 10^9 bytes" in _titles(spec) and "per GPU" in spec["title"]
    values = [v for ds in spec["datasets"].values() for v in ds]
    assert {v["available_GB"] for v in values if "available_GB" in v} == {round(80 * GiB / 1e9, 2)}


def test_budget_stacked_bar_from_a_frame_and_bad_frame():
    df = tables.budget_frame(tables.precision_budget_plans())
    _spec(charts.budget_stacked_bar(df))
    with pytest.raises(K3InputError, match="data"):
        charts.budget_stacked_bar(pd.DataFrame({"config": ["a"], "component": ["weights"], "size": [1.0]}))


def test_precision_ladder_chart():
    spec = _spec(charts.precision_ladder_chart(tables.precision_ladder_comparison()))
    assert "GiB" in spec["title"]
    assert "weights (GiB = 2^30 bytes)" in _titles(spec)
    values = [v for ds in spec["datasets"].values() for v in ds]
    assert "−45.3 %" in {v["label"] for v in values}  # guide 000's Q4 step: 1 − 325/594


def test_kv_vs_context_chart():
    df = tables.kv_context_long(["kimi-k3@guide-000"], kv_dtypes=["bf16"], contexts=["128K", "1M"])
    spec = _spec(charts.kv_vs_context_chart(df, log_y=True))
    assert "GiB = 2^30 bytes" in spec["title"]
    values = [v for ds in spec["datasets"].values() for v in ds]
    assert [v["kv_cache_GiB"] for v in values] == [262_144 * 131_072 / GiB, 262_144 * 1_048_576 / GiB]
    assert spec["encoding"]["x"]["scale"] == {"type": "log", "base": 2}


def test_kv_per_token_comparison_chart():
    spec = _spec(charts.kv_per_token_comparison_chart(tables.kv_per_token_table(["kimi-k3", "kimi-k3@guide-000"])))
    assert "KiB" in spec["title"]
    values = {v["model"]: v["kv_KiB_per_token"] for ds in spec["datasets"].values() for v in ds}
    assert values == {"kimi-k3": 27_648 / 1024, "kimi-k3@guide-000": 262_144 / 1024}


def test_reference_heatmap():
    spec = _spec(charts.reference_heatmap(tables.reference_table(contexts=("64K", "1M"))))
    assert "GiB" in spec["title"]
    values = [v for ds in spec["datasets"].values() for v in ds]
    cells = {(v["row"], v["context"]): v["total"] for v in values}
    assert cells[("Q2 + FP8 KV", "64K")] == 225 + 8 + 10 + 48
    assert cells[("BF16 + BF16 KV", "1M")] == 594 + 256 + 10 + 48


def test_charts_render_offline_to_svg():
    vlc = pytest.importorskip("vl_convert")
    svg = vlc.vegalite_to_svg(charts.budget_stacked_bar(tables.guide_000_plan()).to_dict())
    assert svg.lstrip().startswith("<svg") and "weights" in svg


# ---------------------------------------------------------------- the explorer's callback


def test_explorer_update_default_is_the_guides_415():
    df, chart, message = widgets.explorer_update(**GUIDE)
    assert df.loc["total", "total_GiB"] == 325 + 32 + 10 + 6 * 8
    assert message.startswith("FITS")
    _spec(chart)


def test_explorer_update_kv_follows_new_values():
    df, _, _ = widgets.explorer_update(**{**GUIDE, "kv_dtype": "bf16", "context": "512K"})
    kv = 262_144 * 524_288 / GiB  # 128 GiB
    assert df.loc["KV cache", "total_GiB"] == kv == 128.0
    assert df.loc["total", "total_GiB"] == 325 + kv + 10 + 48
    df, _, _ = widgets.explorer_update(**{**GUIDE, "kv_dtype": "fp8", "context": "256K"})
    assert df.loc["KV cache", "total_GiB"] == 131_072 * 262_144 / GiB == 32.0


def test_explorer_update_gpu_and_count():
    df, chart, message = widgets.explorer_update(**{**GUIDE, "gpu": "h200", "gpus": 4})
    assert df.loc["available", "total_GiB"] == 4 * 141
    assert df.loc["available", "per_gpu_GiB"] == 141.0
    assert df.loc["overhead", "total_GiB"] == 4 * 8
    assert df.loc["headroom", "total_GiB"] == 4 * 141 - (325 + 32 + 10 + 32)
    spec = _spec(chart)
    values = [v for ds in spec["datasets"].values() for v in ds]
    assert {v["available_GiB"] for v in values if "available_GiB" in v} == {141.0}


def test_explorer_update_does_not_fit_on_five_h100():
    df, _, message = widgets.explorer_update(**{**GUIDE, "gpus": 5})
    assert df.loc["headroom", "total_GiB"] == 5 * 80 - (367 + 5 * 8)  # −7
    assert message.startswith("DOES NOT FIT")


def test_explorer_update_batch_scales_kv_and_activation():
    df, _, _ = widgets.explorer_update(**{**GUIDE, "batch": 2})
    assert df.loc["KV cache", "total_GiB"] == 2 * 32
    assert df.loc["activation", "total_GiB"] == 2 * 10


@pytest.mark.parametrize(
    "field, value",
    [
        ("gpu", "nosuch"),
        ("model", "kimi-k9"),
        ("weights", "native"),
        ("context", "lots"),
        ("gpus", 0),
        ("kv_dtype", "fp3"),
    ],
)
def test_explorer_update_bad_input_is_one_line_naming_the_field(field, value):
    df, chart, message = widgets.explorer_update(**{**GUIDE, field: value})
    assert df is None and chart is None  # no number shown
    assert message.startswith(f"parameter {field}:")
    assert "\n" not in message


def test_explorer_widget_updates_in_place():
    ipywidgets = pytest.importorskip("ipywidgets")
    box = widgets.explorer(**GUIDE)
    assert isinstance(box, ipywidgets.VBox)
    assert isinstance(box.children[-1], ipywidgets.Output)
    df, _, _ = box.last_update
    assert df.loc["total", "total_GiB"] == 415.0
    box.controls["gpu"].value = "h200-sxm"
    box.controls["gpus"].value = 4
    df, _, message = box.last_update
    assert df.loc["available", "total_GiB"] == 4 * 141
    box.controls["weights"].value = "native"  # a guide profile has no native figure
    df, chart, message = box.last_update
    assert df is None and message.startswith("parameter weights:")


def test_explorer_widget_accepts_an_unknown_start_value():
    pytest.importorskip("ipywidgets")
    box = widgets.explorer(**{**GUIDE, "gpu": "nosuch"})
    assert box.last_update[2].startswith("parameter gpu:")


# ------------------------------------------------------------------ notebook 03's layout explorer


@pytest.mark.parametrize("model", ["kimi-k3", "llama-3.1-70b", "deepseek-v3"])
@pytest.mark.parametrize("gpu", ["h200-sxm", "mi300x"])
def test_layout_choices_are_always_consistent(model, gpu):
    for nodes in NODES:
        for tp in (1, 2, 3, 4, 8, 16):
            for pp in (1, 2, 3, 4, 5, 6, 8):
                c = layout_choices(model=model, gpu=gpu, nodes=nodes, tp=tp, pp=pp, ep=8)
                assert c.gpus == nodes * 8  # both boards hold 8 GPUs
                assert c.tp * c.pp * c.dp == c.gpus
                assert 8 % c.tp == 0 and c.tp in c.tp_options  # TP stays inside a node
                assert c.pp in c.pp_options and c.ep in c.ep_options
                assert c.ep in (1, c.tp * c.dp)
                if model == "llama-3.1-70b":
                    assert c.ep_options == (1,)  # dense: no experts to spread


def test_layout_choices_keep_a_valid_request_and_fix_an_invalid_one():
    c = layout_choices(model="kimi-k3", gpu="h200-sxm", nodes=2, tp=8, pp=2)
    assert (c.gpus, c.tp, c.pp, c.dp) == (16, 8, 2, 1)  # vLLM's recipe, kept as asked
    c = layout_choices(model="kimi-k3", gpu="h200-sxm", nodes=3, tp=8, pp=2)
    assert (c.gpus, c.tp, c.pp, c.dp) == (24, 8, 3, 1)  # 2 does not divide 24/8 → one stage per node
    c = layout_choices(model="llama-3.1-70b", gpu="h100-sxm", nodes=1, tp=16, pp=1)
    assert c.tp == 8 and 16 not in c.tp_options  # TP 16 would cross a node
    assert c.describe() == "8 GPUs = 1 node × 8; TP 8 × PP 1 × DP 1"


def test_layout_explorer_fixes_the_others_and_never_stays_on_an_error():
    pytest.importorskip("ipywidgets")
    from k3lib.views.widgets_parallel import layout_explorer

    box = layout_explorer()
    ctl = box.controls
    assert box.summary.value == "16 GPUs = 2 nodes × 8; TP 8 × PP 2 × DP 1"
    ctl["nodes"].value = 3  # 24 GPUs: PP 2 no longer divides 24/8
    assert ctl["pp"].value == 3 and box.summary.value.startswith("24 GPUs")
    assert set(ctl["pp"].options) == {1, 3}
    ctl["tp"].value = 4  # PP 3 still divides 24/4: kept, DP becomes 2
    assert box.summary.value == "24 GPUs = 3 nodes × 8; TP 4 × PP 3 × DP 2"
    ctl["ep"].value = 8  # EP = TP × DP
    assert box.last_message is None
    ctl["model"].value = "llama-3.1-70b"  # dense, 8 KV heads: TP 4 stays, EP falls back to 1
    assert ctl["tp"].value == 4 and ctl["ep"].value == 1 and tuple(ctl["ep"].options) == (1,)
    for nodes in (1, 2, 6, 1):
        ctl["nodes"].value = nodes
        assert box.last_message is None, box.last_message  # every change draws a chart


def test_kv_vs_tp_legend_draws_line_styles_not_black_dots():
    from k3lib.studies.parallel import kv_per_gpu_vs_tp
    from k3lib.views.charts_parallel import kv_vs_tp_chart

    spec = kv_vs_tp_chart(kv_per_gpu_vs_tp(["kimi-k3", "llama-3.1-70b"], tps=[1, 2, 4, 8])).to_dict()
    legend = spec["encoding"]["strokeDash"]["legend"]
    assert legend["symbolType"] == "stroke" and legend["symbolFillColor"] == "transparent"
    assert spec["encoding"]["x"]["axis"]["values"] == [1, 2, 4, 8]  # ticks at the TP sizes, not 1.5, 2.5…
