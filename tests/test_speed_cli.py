"""`k3plan speed`: the contract other tools script (issue 22) — its JSON keys, each figure's basis and
measured error, exit 3 for a plan that does not load, 2 for bad input."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from k3lib.cli import main

FIGURES = (
    "decode_tokens_per_s_per_sequence",
    "output_tokens_per_s_total",
    "output_tokens_per_s_per_gpu",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "max_concurrency",
    "usd_per_million_output_tokens",
)
BASES = {"measured", "fitted model", "theoretical ceiling"}  # every speed figure; cost per hour is a "price"


def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def test_json_has_every_figure_with_its_basis_and_error():
    rc, out, err = _cli(
        "speed",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "1",
        "--concurrency",
        "8",
        "--input-len",
        "1024",
        "--output-len",
        "256",
        "--price-per-gpu-hour",
        "2.50",
        "--json",
    )
    assert rc == 0, err
    d = json.loads(out)
    assert d["loads"] and d["engine"] == "vllm" and d["price_basis"] == "user-supplied price"
    assert d["usd_per_hour"] == {"value": 2.50, "unit": "USD/h", "basis": "price", "expected_error_pct": None}
    for k in FIGURES:
        f = d[k]
        assert set(f) >= {"value", "unit", "basis", "expected_error_pct"} and f["basis"] in BASES, k
        assert (f["expected_error_pct"] is None) == (f["basis"] == "theoretical ceiling") or f["basis"] == "measured"
    # per GPU = total ÷ GPUs; $/M tokens = $/h ÷ (tokens/s × 3600) × 10^6 at the user's price
    assert d["output_tokens_per_s_per_gpu"]["value"] == pytest.approx(d["output_tokens_per_s_total"]["value"])
    usd_m = 2.50 / (d["output_tokens_per_s_total"]["value"] * 3600) * 1e6
    assert d["usd_per_million_output_tokens"]["value"] == pytest.approx(usd_m, rel=1e-6)


def test_a_plan_that_does_not_load_has_no_speed():
    rc, out, _ = _cli("speed", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "1", "--json")
    d = json.loads(out)
    assert rc == 3 and d["loads"] is False and not any(k in d for k in FIGURES)


def test_an_engine_without_a_memory_profile_names_the_one_it_uses():
    rc, out, _ = _cli(
        "speed", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "--engine", "TensorRT-LLM", "--json"
    )
    d = json.loads(out)
    assert rc == 0 and (d["engine"], d["memory_profile"]) == ("trtllm", "vllm")


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--concurrency", "0"], "concurrency"),
        (["--concurrency", "８"], "concurrency"),
        (["--output-len", ""], "output-len"),
        (["--input-len", "-5"], "input-len"),
        (["--price-per-gpu-hour", "free"], "price-per-gpu-hour"),
        (["--price-per-gpu-hour", "0"], "price-per-gpu-hour"),
        (["--engine", "tgi"], "engine"),
        (["--gpus", "0"], "host"),
        (["--ram", "512GB"], "ram"),
        (["--gpu", ""], "gpu"),
    ],
)
def test_bad_input_is_one_named_line(argv, field):
    rc, out, err = _cli("speed", "--model", "llama-3.1-8b", "--gpus", "1", *argv)
    assert rc == 2 and out == "" and err.count("\n") == 1 and field in err, (argv, err)


def test_offload_and_cpu_only_serving_go_through_the_offload_model():
    rc, out, err = _cli(
        "speed",
        "--model",
        "gpt-oss-120b",
        "--gpu",
        "rtx-4090",
        "--gpus",
        "1",
        "--engine",
        "llama.cpp",
        "--expert-layers-on-gpu",
        "auto",
        "--host",
        "desktop-ddr5-5600",
        "--weights",
        "q4_k_m",
        "--input-len",
        "512",
        "--output-len",
        "128",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0, err
    assert d["decode_tokens_per_s_per_sequence"]["basis"] in BASES and d["max_concurrency"]["value"] is None
    assert any("host desktop-ddr5-5600" in n for n in d["details"]["notes"])
    rc, out, _ = _cli(
        "speed",
        "--model",
        "llama-3.1-8b",
        "--gpus",
        "0",
        "--host",
        "epyc-9004",
        "--engine",
        "llama.cpp",
        "--weights",
        "q4_k_m",
        "--json",
    )
    assert rc == 0 and json.loads(out)["decode_tokens_per_s_per_sequence"]["value"] > 0
