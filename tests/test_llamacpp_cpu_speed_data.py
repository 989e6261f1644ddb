"""data/measured/llamacpp-cpu-speed.csv and llamacpp-cpu-bandwidth.csv, written by
benchmarks/bench_llamacpp_cpu.py: their schema, and that the speed rows, the bandwidth table and
its predicted/ratio columns agree with one another. Nothing here runs llama.cpp or times anything."""

from __future__ import annotations

import datetime as dt
import math
import re

import pytest

from k3lib.core.data import read_csv_rows

SPEED_COLUMNS = [
    "id",
    "engine",
    "engine_version",
    "model",
    "weights",
    "kv_dtype",
    "gpu",
    "gpus",
    "tp",
    "pp",
    "ep",
    "host",
    "concurrency",
    "input_tokens",
    "output_tokens",
    "quantity",
    "value",
    "unit",
    "split",
    "evidence",
    "source",
    "date",
]
QUANTITIES = {"decode_tokens_per_s_per_sequence", "prefill_tokens_per_s"}
#: bits per weight of each GGUF file type on this model (block formats: F16 2 B, Q8_0 34 B per 32,
#: Q4_0 18 B per 32, Q4_K 144 B per 256 with Q6_K/Q5_K tensors in Q4_K_M; F32 norms): a band, since
#: the output head and norms take other types
BITS = {"F16": (15.9, 16.1), "Q8_0": (8.4, 8.6), "Q4_0": (4.45, 4.7), "Q4_K_M": (4.5, 5.2)}


def _csv(name: str) -> list[dict]:
    return read_csv_rows(f"measured/{name}")


@pytest.fixture(scope="module")
def speed():
    return _csv("llamacpp-cpu-speed.csv")


@pytest.fixture(scope="module")
def bandwidth():
    return _csv("llamacpp-cpu-bandwidth.csv")


def _header(name: str) -> list[str]:
    from k3lib.core.data import read_data_text

    return read_data_text("measured", name).splitlines()[0].split(",")


def test_speed_table_has_the_measured_speed_schema(speed):
    assert _header("llamacpp-cpu-speed.csv") == SPEED_COLUMNS
    assert len(speed) >= 8
    assert len({r["id"] for r in speed}) == len(speed)
    for r in speed:
        assert r["engine"] == "llama.cpp"
        assert r["engine_version"] == "0c1e57098 (llama-cpp-python 0.3.36)"
        assert r["gpu"] == "cpu" and int(r["gpus"]) == 0
        assert (int(r["tp"]), int(r["pp"]), int(r["ep"]), int(r["concurrency"])) == (1, 1, 1, 1)
        assert r["host"] in ("", "this-machine")
        assert r["split"] == "holdout", "this machine's figures are never fitted on"
        assert r["quantity"] in QUANTITIES
        assert r["unit"] == "tokens/s"
        assert re.fullmatch(r"tiny-llama-d\d+-l\d+", r["model"])
        assert r["weights"] in BITS and r["kv_dtype"] == "f16"
        assert float(r["value"]) > 0
        assert r["source"].startswith("benchmarks/bench_llamacpp_cpu.py on the CI machine (2 cores)")
        assert "-O3" in r["source"], "speed rows come from the optimized build, not the tier's -O0 one"
        dt.date.fromisoformat(r["date"])
        if r["quantity"] == "prefill_tokens_per_s":
            assert (int(r["input_tokens"]), int(r["output_tokens"])) == (512, 0)
        else:
            assert int(r["output_tokens"]) > 0


def test_evidence_is_the_benchmarks_line_for_the_value(speed):
    for r in speed:
        ev = r["evidence"]
        m = re.fullmatch(
            r"(\S+) (\S+) (decode|prefill) (\d) thread\(s\): median ([\d.]+) tokens/s of (\d+) "
            r"\(min ([\d.]+), max ([\d.]+)\); loadavg ([\d.]+)",
            ev,
        )
        assert m, ev
        model, weights, what, threads, med, n, lo, hi, _load = m.groups()
        assert (model, weights) == (r["model"], r["weights"])
        assert r["quantity"].startswith(what)
        assert f"threads={threads}" in r["source"]
        assert int(n) >= 5, "medians of at least 5 repeats"
        assert float(lo) <= float(med) <= float(hi)
        assert math.isclose(float(med), float(r["value"]), abs_tol=0.006)


def test_bandwidth_table_matches_the_speed_rows(speed, bandwidth):
    by = {
        (r["model"], r["weights"], r["source"].rsplit("threads=", 1)[1], r["quantity"]): float(r["value"])
        for r in speed
    }
    assert len(bandwidth) * 2 == len(speed)
    for b in bandwidth:
        key = (b["model"], b["weights"], b["threads"])
        assert math.isclose(
            by[key + ("decode_tokens_per_s_per_sequence",)], float(b["decode_tokens_per_s"]), rel_tol=1e-3
        )
        assert math.isclose(by[key + ("prefill_tokens_per_s",)], float(b["prefill_tokens_per_s"]), rel_tol=1e-3)


def test_predicted_decode_is_bandwidth_over_bytes_per_token(bandwidth):
    for b in bandwidth:
        per_tok = int(b["bytes_per_token"])
        assert per_tok == int(b["weight_bytes_read"]) + int(b["kv_bytes_read"])
        assert int(b["kv_bytes_read"]) < 0.01 * per_tok  # a short context: weights dominate
        pred = float(b["read_bandwidth_bytes_per_s"]) / per_tok
        assert math.isclose(pred, float(b["predicted_decode_tokens_per_s"]), rel_tol=2e-3)
        assert math.isclose(float(b["decode_tokens_per_s"]) / pred, float(b["decode_ratio"]), rel_tol=3e-3)
        # a decode step cannot read its weights faster than memory streams them (the model is ≥ 6× the L3)
        assert 0.05 < float(b["decode_ratio"]) < 1.25, b
        assert per_tok > 6 * 32 * 2**20


def test_bytes_per_token_are_the_files_weights(bandwidth):
    """Weight bytes per parameter as the GGUF block formats give them: the table's byte counts are
    the quantized files', not the F16 size."""
    for b in bandwidth:
        bits = 8 * int(b["weight_bytes_read"]) / int(b["params"])
        lo, hi = BITS[b["weights"]]
        assert lo <= bits <= hi, (b["weights"], bits)


def test_prefill_ratio_is_achieved_flops_over_the_sgemm_reference(bandwidth):
    for b in bandwidth:
        flops = float(b["prefill_flops"])
        assert flops >= 2 * int(b["params"]) * 512  # 2·params·tokens, attention added
        achieved = float(b["prefill_tokens_per_s"]) * flops / 512
        assert math.isclose(achieved, float(b["prefill_flops_per_s"]), rel_tol=2e-3)
        assert math.isclose(achieved / float(b["sgemm_flops_per_s"]), float(b["prefill_ratio"]), rel_tol=3e-3)
        assert 0 < float(b["prefill_ratio"]) < 1.5


def test_fewer_bytes_decode_faster(bandwidth):
    """Per thread count, the quantization that reads fewer bytes per token decodes faster (the
    bandwidth model's one qualitative claim; F16 reads ~3.5× the bytes of Q4_0)."""
    for threads in {b["threads"] for b in bandwidth}:
        rows = sorted((b for b in bandwidth if b["threads"] == threads), key=lambda b: int(b["bytes_per_token"]))
        f16 = next(b for b in rows if b["weights"] == "F16")
        assert all(float(b["decode_tokens_per_s"]) > float(f16["decode_tokens_per_s"]) for b in rows if b is not f16)
