"""The serving model (k3lib.serving): hand-derived figures, the fit's split discipline, refusals."""
from __future__ import annotations

import math
import shutil

import pytest

from k3lib.core.memory import weights_bytes_by_group
from k3lib.core.models import get_model
from k3lib.engines.deployment import plan_for_engine
from k3lib.serving import FIGURES, PlanDoesNotLoad, serving_estimate
from k3lib.serving.calibration import calibration, parse_speed_csv
from k3lib.serving.comm import allreduce_seconds, tp_allreduce_bytes_per_layer, tp_comm_seconds
from k3lib.serving.concurrency import max_concurrency, throughput_curve
from k3lib.serving.cost import usd_per_hour, usd_per_million_output_tokens
from k3lib.serving.experts import expected_distinct_experts
from k3lib.serving.roofline import CEILING, decode_terms, inputs_from_plan

FIXTURE = "tests/fixtures/speed_fixture.csv"


def _plan(**kw):
    args = dict(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context=2048, with_limits=False)
    args.update(kw)
    return plan_for_engine(**args)


def test_distinct_experts_hand_derived():
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=1) == pytest.approx(8)
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=64) == pytest.approx(
        256 * (1 - (1 - 8 / 256) ** 64))
    assert expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=10_000) == pytest.approx(256)


def test_llama8b_bf16_h100_ceiling_is_weights_over_bandwidth():
    groups = weights_bytes_by_group(get_model("llama-3.1-8b"), "bf16")
    read = sum(groups.values()) - groups["embedding"]      # the embedding is a lookup of one row
    t = decode_terms(inputs_from_plan(_plan()), concurrency=1, context_tokens=0)
    assert t.bytes_read == pytest.approx(read, rel=1e-6)
    assert t.seconds(CEILING) == pytest.approx(read / 3.35e12, rel=1e-6)


def test_tp_allreduce_bytes_and_time():
    assert tp_allreduce_bytes_per_layer(tokens=4, hidden_size=8192) == 2 * 4 * 8192 * 2
    one = allreduce_seconds(message_bytes=8192 * 2, group=8, link_bytes_per_s=450e9, latency_s=0)
    assert one == pytest.approx(2 * 7 / 8 * 8192 * 2 / 450e9)
    assert tp_comm_seconds(tokens=1, hidden_size=8192, layers=80, tp=8, link_bytes_per_s=450e9, latency_s=0) == \
        pytest.approx(160 * one)
    assert allreduce_seconds(message_bytes=1e6, group=1, link_bytes_per_s=1e9) == 0


def test_throughput_monotonic_in_concurrency():
    inp = inputs_from_plan(_plan(model="qwen3-30b-a3b", weights="native"))
    pts = throughput_curve(inp, concurrencies=(1, 2, 4, 8, 16, 32, 64, 128, 256))
    totals = [p.output_tokens_per_s_total for p in pts]
    assert totals == sorted(totals)
    tpots = [p.tpot_s for p in pts]
    assert tpots == sorted(tpots)


def test_max_concurrency_and_cost():
    assert max_concurrency(kv_capacity_tokens=10_000, input_tokens=900, output_tokens=100) == 10
    assert max_concurrency(kv_capacity_tokens=10**7, input_tokens=900, output_tokens=100, max_num_seqs=256) == 256
    assert usd_per_hour(gpus=8, price_per_gpu_hour=None) is None
    assert usd_per_million_output_tokens(usd_per_hour_=36.0, output_tokens_per_s=10_000) == pytest.approx(1.0)


def test_fit_never_reads_holdout(tmp_path):
    base = calibration(FIXTURE)
    text = open(FIXTURE, encoding="utf-8").read()
    rows = parse_speed_csv(text)
    hold = next(r for r in rows if r.split == "holdout" and r.gpu == "dgx-spark")
    changed = tmp_path / "speed.csv"
    changed.write_text(text.replace(f",{hold.value:g},", f",{hold.value * 7:g},", 1), encoding="utf-8")
    mutated = calibration(changed)
    assert mutated.rows != base.rows
    assert mutated.constants == base.constants
    assert mutated.holdout != base.holdout


def test_skipped_rows_are_counted():
    cal = calibration(FIXTURE)
    assert {i for i, _ in cal.skipped} >= {"fx-l20-r1-vllm-total", "fx-l20-r1-vllm-tpot"}


def test_plan_that_does_not_fit_has_no_speed():
    p = _plan(model="llama-3.1-70b", context=8192)
    assert not p.fits
    with pytest.raises(PlanDoesNotLoad):
        serving_estimate(p)


def test_estimate_labels_every_figure():
    e = serving_estimate(_plan(), concurrency=4, price_per_gpu_hour=2.0, speed_csv=FIXTURE)
    d = e.to_dict()
    assert tuple(d) == FIGURES
    for k, f in d.items():
        assert set(f) == {"value", "unit", "basis", "expected_error_pct"}
        assert f["basis"] in ("measured", "fitted model", "theoretical ceiling")
    ceiling = serving_estimate(_plan(), concurrency=4, mode="ceiling")
    assert ceiling.tpot_s.basis == "theoretical ceiling" and ceiling.tpot_s.expected_error_pct is None
    assert ceiling.usd_per_million_output_tokens.value is None
    assert e.tpot_s.value >= ceiling.tpot_s.value
