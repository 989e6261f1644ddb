"""One question, one answer: the same inputs give the same per-GPU bytes on every surface that
computes them — the API (make_plan), `k3plan estimate --json`, `k3plan plan --json`, the solver,
the sweep behind the cheat sheet, and the search behind the GPU counts (issue 12).

The expected figure for the flagship question is worked out by hand from K3's shapes below, so a
surface that drifts (or a rule that changes) turns this red."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

from k3lib.cli import main
from k3lib.core.plan import make_plan
from k3lib.core.search import min_gpus_plan
from k3lib.core.sweep import sweep
from k3lib.studies.checklist import run_checklist

G = 2**30
Q = dict(model="kimi-k3", gpu="h200", gpus=16, weights="native", kv_dtype="fp8", context="256K")


def _cli(*argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(list(argv))
    return rc, out.getvalue()


def test_flagship_question_by_hand():
    """Real K3, native weights, FP8 KV, 256K on 16 H200: 2 nodes, TP=8 × PP=2; stage 0 (47 layers:
    11 MLA + 36 KDA — the config's full_attn_layers 4, 8, …, 44 —, 1 dense + 46 MoE, and the
    embedding) is the fullest GPU."""
    p = make_plan(**Q)
    assert (p.nodes, p.tp, p.pp) == (2, 8, 2)
    s = p.peak
    assert (s.stage, s.layers) == (0, 47)
    # KV: the MLA latent (512 + 64 elements at 1 B) on every TP rank; KDA state fp32 split 8 ways
    latent = 11 * 576 * 1 * 262_144
    state = 36 * (96 * 128 * 128 + 3 * 12_288 * 3) * 4 / 8
    assert s.kv_cache_bytes == math.ceil(latent + state)
    # routed experts: 46 MoE layers × 896 experts × 3·3584·3072 weights (the experts work in a 3,584-wide
    # latent) at MXFP4 (4.25 bits) ÷ TP 8
    assert s.routed_experts_bytes == math.ceil(46 * 896 * 3 * 3584 * 3072 * 4.25 / 8 / 8)
    # overhead: 1 GiB context + 2.15 GiB communicator (TP > 1) + 5 % of the payload
    payload = s.weights_bytes + s.kv_cache_bytes + s.activation_bytes
    assert s.overhead_bytes == G + int(2.15 * G) + int(0.05 * payload)
    assert p.fits and p.per_gpu.total_bytes == s.total_bytes


def test_every_surface_gives_the_same_bytes():
    from k3lib.engines.deployment import plan_for_engine

    p = make_plan(**Q)
    want = p.per_gpu.total_bytes  # k3lib's component model: the explanation
    e = plan_for_engine(**Q)  # the plan for vLLM: the answer every surface prints
    engine_want = e.per_gpu.total_bytes
    assert e.engine_id == "vllm" and e.core_per_gpu.total_bytes == want
    rc, out = _cli(
        "estimate",
        "--model",
        "kimi-k3",
        "--gpu",
        "h200",
        "--gpus",
        "16",
        "--weights",
        "native",
        "--kv-dtype",
        "fp8",
        "--context",
        "256K",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["per_gpu"]["total_bytes"] == engine_want and d["core_per_gpu"]["total_bytes"] == want
    rc, out = _cli(
        "plan",
        "--model",
        "kimi-k3",
        "--gpu",
        "h200",
        "--gpus",
        "16",
        "--kv-dtype",
        "fp8",
        "--context",
        "256K",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["chosen"] == "recommended"
    assert d["plan"]["per_gpu"]["total_bytes"] == engine_want and (d["plan"]["tp"], d["plan"]["pp"]) == (8, 2)
    assert (
        run_checklist(
            model="kimi-k3", gpu="h200", gpus=16, context="256K", kv_dtype="fp8"
        ).recommended.total_bytes_per_gpu
        == engine_want
    )
    r = sweep(models=["kimi-k3"], gpus=["h200"], counts=[16], weights=["native"], kv_dtypes=["fp8"], contexts=["256K"])
    assert int(r.total_bytes_per_gpu.ravel()[0]) == want
    m = min_gpus_plan(model="kimi-k3", gpu="h200", weights="native", kv_dtype="fp8", context="256K")
    assert m.gpus == 16 and m.per_gpu.total_bytes == want
    from k3lib import report
    from k3lib.studies.parallel import per_gpu_table

    cfg = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16, context="256K")
    assert report.key_figures(cfg)["per_gpu_total_bytes"] == engine_want  # the report
    table = per_gpu_table(p)  # notebook 03's per-stage table
    assert table.loc[table["fullest"], "total (GiB)"].item() == round(want / G, 2)


@pytest.mark.parametrize("gpu, n, layout", [("h200", 16, (2, 8, 2)), ("h100-sxm", 24, (3, 8, 3))])
def test_real_k3_needs_whole_nodes(gpu, n, layout):
    """vLLM's recipe deploys K3 as 16 H200 (TP8 × PP2); on H100 three whole nodes (24) are the fewest
    that hold the native checkpoint (1,453.7 GiB over 16 H100 is 90.9 GiB each, over 79.19)."""
    m = min_gpus_plan(model="kimi-k3", gpu=gpu, weights="native", kv_dtype="fp8", context="256K")
    assert m.gpus == n and (m.nodes, m.tp, m.pp) == layout
    assert 1453.66 * G / 16 > 79.19 * G


def test_context_above_the_maximum_does_not_fit_anywhere():
    """Llama 3.1 70B stops at 131,072 tokens: at 1M every surface says DOES NOT FIT (exit 3)."""
    rc, out = _cli(
        "estimate",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "6",
        "--weights",
        "bf16",
        "--context",
        "1M",
    )
    assert rc == 3 and "DOES NOT FIT" in out and "exceeds the model's maximum of 131,072" in out
    r = sweep(
        models=["llama-3.1-70b"], gpus=["h100-sxm"], counts=[8], weights=["bf16"], kv_dtypes=["bf16"], contexts=["1M"]
    )
    assert not r.fits.any()
    assert min_gpus_plan(model="llama-3.1-70b", gpu="h100-sxm", weights="bf16", kv_dtype="bf16", context="1M") is None


def test_offload_that_does_not_fit_exits_3_without_tokens_per_s():
    rc, out = _cli("offload", "--gpu", "h200", "--expert-layers-on-gpu", "20")
    assert rc == 3 and "DOES NOT FIT" in out and "tokens/s" not in out.replace("no tokens/s", "")
