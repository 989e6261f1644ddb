"""The k3plan command line: JSON contract, tables, and one-line errors with exit code 2."""

import json
import subprocess
import sys

import pytest

from k3lib.cli import main

GiB = 2**30


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "k3lib", *args], capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_estimate_json_worked_example():
    rc, out, err = run(
        "estimate",
        "--model",
        "kimi-k3@guide-000",
        "--weights",
        "q4",
        "--kv-dtype",
        "fp8",
        "--context",
        "256K",
        "--batch",
        "1",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "6",
        "--activation",
        "10GiB",
        "--overhead-total",
        "48GiB",
        "--json",
    )
    assert rc == 0, err
    doc = json.loads(out)
    for key in (
        "weights_bytes",
        "kv_cache_bytes",
        "activation_bytes",
        "overhead_bytes",
        "total_bytes",
        "available_bytes",
        "headroom_bytes",
    ):
        assert isinstance(doc[key], int) and isinstance(doc["per_gpu"][key], int)
    assert doc["weights_bytes"] == 325 * GiB
    assert doc["kv_cache_bytes"] == 131072 * 262144
    assert doc["total_bytes"] == 415 * GiB
    assert doc["headroom_bytes"] == 65 * GiB
    assert doc["fits"] is True and doc["per_gpu"]["fits"] is True
    assert doc["per_gpu"]["overhead_bytes"] == 8 * GiB


def test_gb_means_ten_to_the_ninth(capsys):
    assert (
        main(
            [
                "estimate",
                "--model",
                "kimi-k3@guide-000",
                "--weights",
                "q4",
                "--gpus",
                "6",
                "--activation",
                "10GB",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["activation_bytes"] == 10 * 10**9


def test_estimate_table_is_readable(capsys):
    assert (
        main(
            [
                "estimate",
                "--model",
                "kimi-k3@guide-000",
                "--weights",
                "q4",
                "--kv-dtype",
                "fp8",
                "--gpus",
                "5",
                "--activation",
                "10GiB",
                "--overhead-total",
                "48GiB",
            ]
        )
        == 3
    )  # 3 = DOES NOT FIT
    out = capsys.readouterr().out
    assert "all GPUs (GiB)" in out and "DOES NOT FIT" in out and "415.0" in out and "-15.0" in out


@pytest.mark.parametrize(
    "args, field",
    [
        (["--model", "nosuch"], "model"),
        (["--gpu", "nosuch"], "gpu"),
        (["--context", "-5"], "context"),
        (["--context", "abc"], "context"),
        (["--context", "0"], "context"),
        (["--gpus", "0"], "gpus"),
        (["--weights", "q9"], "weights"),
        (["--gpus", "5", "--tp", "5"], "tp"),
        (["--activation", "ten"], "activation"),
    ],
)
def test_errors_are_one_line_exit_2(args, field):
    rc, out, err = run("estimate", *args)
    assert rc == 2
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1, err
    assert field in lines[0] and "Traceback" not in err


def test_models_and_gpus_lists():
    rc, out, _ = run("models", "--json")
    ids = {m["id"] for m in json.loads(out)}
    assert {"kimi-k3", "kimi-k3@guide-000", "kimi-k3@guide-004", "llama-3.1-70b", "deepseek-v3"} <= ids
    rc, out, _ = run("gpus")
    assert rc == 0 and "h100-sxm" in out and "h200-sxm" in out


@pytest.mark.parametrize(
    "cmd", [[], ["estimate"], ["models"], ["gpus"], ["formats"], ["plan"], ["cheatsheet"], ["report"], ["offload"]]
)
def test_help_everywhere(cmd):
    rc, out, _ = run(*cmd, "--help")
    assert rc == 0 and "usage: k3plan" in out


def test_offload_command_experts_in_ram(capsys):
    """Q4_K_M (4.5 bpw) routed experts of K3 in RAM: 92 layers × 896 experts × 3·3584·3072 × 4.5/8 B,
    plus the token embedding (163,840 × 7,168 at 4.5 bits), which stays in RAM as llama.cpp keeps it."""
    assert main(["offload", "--model", "kimi-k3", "--weights", "q4_k_m", "--gpu", "rtx-4090-48gb", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    experts = 92 * 896 * 3 * 3584 * 3072 * 4.5 / 8
    embedding = 163840 * 7168 * 4.5 / 8
    assert doc["ram_weights_bytes"] == pytest.approx(experts + embedding, abs=2)
    assert round(experts / 1e9) == 1532  # guide 004: "1,531GB of RAM"


def test_offload_bad_gpu_is_one_line():
    rc, _, err = run("offload", "--gpu", "nosuch")
    assert rc == 2 and err.strip().startswith("k3plan: error: gpu:") and "Traceback" not in err
