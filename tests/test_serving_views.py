"""k3lib.views.speed (notebook 08, the report's speed section): the lesson's tables and diagrams
against figures worked by hand, and their readability (no index, separators, no e+ / NaN).

Llama 3.1 8B in BF16 on one H100 SXM (3.35 TB/s, 989 dense BF16 TFLOP/s, data/hardware.csv):
a decode step reads P = 7,504,924,672 parameters (all but the input embedding, a lookup) = W =
15,009,849,344 B, and 131,072 B of KV per token of context (2·32 layers·8 heads·128·2 B).
"""

import re

import pandas as pd
import pytest

from k3lib.engines.deployment import plan_for_engine
from k3lib.report.html import frame_html
from k3lib.views import speed

P, W, KV, BW, F = 7_504_924_672, 15_009_849_344, 131_072, 3.35e12, 989e12
ATTN = 32 * 2 * 32 * 2 * 128  # attention FLOPs per token per token of context: L·2·N_q·(H + H)
READABLE = re.compile(r"^(—|-?\d{1,3}(,\d{3})*(\.\d+)?)$")  # a number as a reader reads it, or "—"


@pytest.fixture(scope="module")
def small():
    return plan_for_engine(
        model="llama-3.1-8b", gpu="h100-sxm", gpus=1, weights="bf16", context=1280, with_limits=False
    )


def _num(text: str) -> float:
    return float(text.replace(",", ""))


def test_intensity_table_by_hand(small):
    t = speed.intensity_table(small, input_tokens=1024, concurrency=16, context_tokens=1152).set_index("pass")
    prefill = t.loc["prefill, one prompt of 1,024 tokens"]
    # 2·P·I + I·A(I/2) FLOPs for one read of W
    assert _num(prefill["intensity (FLOP/byte)"]) == pytest.approx((2 * P * 1024 + 1024 * ATTN * 512) / W, abs=0.5)
    assert prefill["bound by"] == "compute"
    one = t.loc["decode, 1 sequence at 1,152 tokens"]
    # (2·P + A(1,152)) FLOPs for W + 1,152·kv_tok bytes: 1.03 FLOP/byte
    assert _num(one["intensity (FLOP/byte)"]) == pytest.approx((2 * P + ATTN * 1152) / (W + 1152 * KV), abs=0.005)
    assert one["bound by"] == "memory"
    assert set(t["GPU ratio F/BW (FLOP/byte)"]) == {f"{F / BW:.1f}"}  # 295.2
    assert all(READABLE.match(v) for v in t["GB read per pass"])


def test_cache_worked_table_by_hand(small):
    t = speed.cache_worked_table(small, input_tokens=1024, output_tokens=256, concurrency=16).set_index("formula")
    assert t.loc["kv_tok", "value"] == "131,072"
    assert _num(t.loc["I · kv_tok", "value"]) == pytest.approx(1024 * KV / 1e9, rel=1e-3)  # 0.1342 GB
    assert _num(t.loc["W", "value"]) == pytest.approx(W / 1e9, rel=1e-3)  # 15.01 GB
    assert _num(t.loc["B · KV_rank(T)", "value"]) == pytest.approx(16 * 1152 * KV / 1e9, rel=1e-3)  # 2.416 GB
    # without a cache the token at position t reruns all t tokens: Σ_{t=1024}^{1279} 2·P·t
    without = sum(2 * P * t for t in range(1024, 1280)) / 1e12
    assert _num(t.loc["2 · P_act · O · (I + (O−1)/2)", "value"]) == pytest.approx(without, rel=1e-3)


def test_request_timeline_by_hand(small):
    f = speed.request_timeline(small, input_tokens=1024, output_tokens=4)
    # prefill is compute-bound at the ceiling: (2·P·I + I·A(I/2)) / F; each decode step at context t reads W + t·kv
    prefill_ms = (2 * P * 1024 + 1024 * ATTN * 512) / F * 1000
    assert f["time (ms)"].iloc[1] == pytest.approx(prefill_ms, rel=1e-9)  # 15.82 ms
    steps = [(W + t * KV) / BW * 1000 for t in range(1024, 1028)]
    assert f["time (ms)"].iloc[-1] == pytest.approx(prefill_ms + sum(steps), rel=1e-9)
    assert f["KV cache of the request (MB)"].iloc[-1] == pytest.approx(1028 * KV / 1e6)
    assert list(f["phase"]) == ["prefill", "prefill"] + ["decode"] * 5
    assert speed.timeline_chart(f).to_dict()["layer"]


def test_roofline_chart_and_crossover(small):
    b = [1, 64, 256, 512]
    frame = speed.roofline_table(small, batches=b, context_tokens=0)
    assert speed.compute_bound_batch(small) == 296  # first whole batch past F/BW = 295.2
    spec = speed.roofline_chart(
        frame, with_cache=speed.roofline_table(small, batches=b, context_tokens=1152), crossover=296
    ).to_dict()
    assert spec["config"]["axis"]["labelFontSize"] >= 11


def test_concurrency_caps_table(small):
    t = speed.concurrency_caps_table(small, shapes=((1024, 256), (32768, 1024)))
    cap = small.engine.kv_capacity_tokens
    assert list(t["max concurrency (requests)"]) == [f"{min(cap // 1280, 1024):,}", f"{cap // 33792:,}"]
    assert all(i == "" for i in t.index)


def test_figures_and_curve_are_readable(small):
    from k3lib.serving import serving_estimate

    est = serving_estimate(small, concurrency=256, input_tokens=1024, output_tokens=256)
    assert all(READABLE.match(v) for v in speed.figures_table(est)["value"])
    curve = speed.curve_shown(speed.concurrency_table(small))
    text = curve.to_string()
    assert "NaN" not in text and "e+" not in text and "None" not in text
    assert all(READABLE.match(v) for v in curve["output tokens/s (all)"])


def test_explorer_offers_only_loading_layouts_and_held_concurrencies():
    pytest.importorskip("ipywidgets")
    plans, left = speed.loading_layouts(model="llama-3.1-70b", gpu="h100-sxm", layouts=("1 GPU", "4 GPUs, TP=4"))
    assert list(plans) == ["4 GPUs, TP=4"] and "1 GPU" in left  # 141 GB of BF16 weights on one 80 GB GPU
    assert list(speed.layouts_table(plans, left)["loads"]) == ["yes", "no"]
    box = speed.speed_explorer(model="llama-3.1-70b", layouts=("1 GPU", "4 GPUs, TP=4"))
    layout, conc, _ = box.children
    assert list(layout.options) == ["4 GPUs, TP=4"]
    cap = plans["4 GPUs, TP=4"].engine.kv_capacity_tokens // 1280
    assert max(conc.options) == cap and all(c <= cap for c in conc.options)


def test_holdout_shown_as_percent():
    f = pd.DataFrame(
        {
            "engine": ["vllm"],
            "hardware_class": ["*"],
            "quantity": ["tpot_s"],
            "rows": [6],
            "median_ratio": [1.1446],
            "within_30_pct": [2 / 3],
            "worst_ratio": [2.0115],
            "median_abs_error_pct": [14.4586],
        }
    )
    row = speed.holdout_shown(f).iloc[0]
    assert row["within ±30 % (%)"] == "66.67" and row["hardware class"] == "all"
    assert row["quantity"] == "time per output token (s)"


def test_report_frame_html_reads_as_text():
    text = frame_html(pd.DataFrame({"stage": [0], "total_GiB": [69.17], "share_of_total_%": [78.3], "fits": [True]}))
    assert "total (GiB)" in text and "share of total (%)" in text and ">yes<" in text and "True" not in text


def test_layouts_around_a_plan_and_a_plan_that_does_not_load():
    from k3lib.core.errors import K3InputError

    plan = plan_for_engine(model="llama-3.1-70b", gpu="h100-sxm", gpus=4, context=1280, with_limits=False)
    plans, left = speed.layouts_around(plan, model="llama-3.1-70b")
    # its own TP=4; the same 4 GPUs as TP=2 × PP=2; twice the GPUs, one 8-GPU node as TP=8
    assert list(plans) == ["4 GPUs, TP=4", "4 GPUs, TP=2 × PP=2", "8 GPUs, TP=8"] and left == {}
    assert [(p.gpus, p.tp, p.pp) for p in plans.values()] == [(4, 4, 1), (4, 2, 2), (8, 8, 1)]
    one = plan_for_engine(model="llama-3.1-70b", gpu="h100-sxm", gpus=1, context=1280, with_limits=False)
    with pytest.raises(K3InputError) as exc:
        speed.require_loads(one)  # 141 GB of BF16 weights on one 80 GB GPU
    assert exc.value.field == "gpus"
    speed.require_loads(plan)  # loads: nothing raised


@pytest.mark.parametrize("stem", ["06-any-model", "08-serving", "90-deployment-report"])
def test_markdown_has_no_escape_accidents(stem):
    # a "\t" or "\f" in a non-raw script string turns \text and \frac into a tab and a form feed
    from pathlib import Path

    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / f"{stem}.ipynb", as_version=4)
    for cell in nb.cells:
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\t]", cell.source), cell.source[:80]
