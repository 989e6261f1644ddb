"""The vectorized sweep gives the same per-GPU totals as make_plan, plan by plan."""

import itertools

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.plan import Assumptions, make_plan
from k3lib.core.sweep import sweep

GRID = dict(
    models=["kimi-k3", "kimi-k3@guide-000", "llama-3.1-70b", "gpt-oss-120b", "qwen3-next-80b"],
    gpus=["h100-sxm", "mi300x"],
    counts=[1, 5, 8],
    weights=["bf16", "q4", "native"],
    kv_dtypes=["bf16", "fp8", "q4_0"],
    contexts=["8K", "256K", "1M"],
)


def test_sweep_matches_make_plan_everywhere():
    r = sweep(**GRID)
    for idx in itertools.product(*(range(len(v)) for v in GRID.values())):
        m, g, n, w, k, c = (list(v)[i] for v, i in zip(GRID.values(), idx))
        if not r.valid[idx]:
            # a profile publishes no "native" tier; 5 GPUs of a model whose heads do not split 5 ways
            # has no deployable layout: make_plan refuses both, naming the field
            with pytest.raises(K3InputError) as e:
                make_plan(model=m, gpu=g, gpus=n, weights=w, kv_dtype=k, context=c)
            assert str(e.value).split(":")[0] in ("weights", "gpus")
            continue
        p = make_plan(model=m, gpu=g, gpus=n, weights=w, kv_dtype=k, context=c)
        assert int(r.total_bytes_per_gpu[idx]) == p.per_gpu.total_bytes, (m, g, n, w, k, c)
        assert bool(r.fits[idx]) == p.fits


def test_sweep_worked_example_assumptions():
    a = Assumptions(activation_bytes=10 * 2**30, overhead_total_bytes=48 * 2**30)
    r = sweep(
        models=["kimi-k3@guide-000"],
        gpus=["h100"],
        counts=[5, 6],
        weights=["q4"],
        kv_dtypes=["fp8"],
        contexts=["256K"],
        assumptions=a,
    )
    # 415 GiB spread over 6 GPUs fits 80 GiB each; over 5 it does not.
    assert r.fits.ravel().tolist() == [False, True]
    df = r.to_frame()
    assert len(df) == 2 and set(df.columns) >= {"model", "gpu", "gpus", "fits"}


def test_sweep_equals_make_plan_on_a_random_grid():
    """Random models, GPUs, deployable counts (1–8, then whole nodes), precisions and contexts:
    the sweep's bytes on the fullest GPU equal make_plan's, byte for byte."""
    import random

    rng = random.Random(20261203)
    models = [
        "kimi-k3",
        "deepseek-v3",
        "llama-3.1-70b",
        "gemma-3-27b",
        "qwen3-next-80b",
        "minimax-m2.5",
        "llama-4-scout",
        "kimi-k3@guide-004",
    ]
    for _ in range(40):
        m = rng.choice(models)
        g = rng.choice(["h100-sxm", "h200", "b200", "mi300x"])
        n = rng.choice([1, 2, 4, 8, 16, 24, 32])
        w = rng.choice(["bf16", "fp8", "q4", "native"])
        k = rng.choice(["bf16", "fp8"])
        c = rng.choice([4096, 65536, 131072, 262144])
        r = sweep(models=[m], gpus=[g], counts=[n], weights=[w], kv_dtypes=[k], contexts=[c])
        try:
            p = make_plan(model=m, gpu=g, gpus=n, weights=w, kv_dtype=k, context=c)
        except K3InputError:
            assert not r.valid.ravel()[0]
            continue
        assert int(r.total_bytes_per_gpu.ravel()[0]) == p.per_gpu.total_bytes == p.peak.total_bytes
        assert bool(r.fits.ravel()[0]) == p.fits


# ---------------------------------------------------------------- the plan's layout (issue 21 §4)


def test_max_context_tokens_uses_the_plans_layout():
    """DeepSeek-V3 on 8× H200 at TP=2 × PP=4, batch 8, BF16 KV: each GPU holds the 576-element
    latents of its stage's 15–16 layers only, so the model's whole 163,840-token window fits
    (make_plan says so); the default layout of 8 GPUs (TP=8, all 61 latents on every GPU) holds
    96,256 — the figure max_context_tokens reported before it read the plan's layout."""
    from k3lib.core.search import max_context_tokens

    kw = dict(model="deepseek-v3", gpu="h200", gpus=8, tp=2, pp=4, batch=8, kv_dtype="bf16")
    plan = make_plan(context=8192, **kw)
    assert make_plan(context=163840, **kw).fits
    assert max_context_tokens(plan) == 163840
    default = make_plan(model="deepseek-v3", gpu="h200", gpus=8, batch=8, kv_dtype="bf16", context=8192)
    assert (default.tp, default.pp) == (8, 1)
    assert max_context_tokens(default) == 96256
    # batch 16: the answer is where make_plan (same layout) stops fitting, on the 1K grid
    kw["batch"] = 16
    m = max_context_tokens(make_plan(context=8192, **kw))
    assert make_plan(context=m, **kw).fits and not make_plan(context=m + 1024, **kw).fits


def test_sweep_takes_a_layout_or_its_parts():
    """sweep(tp=, pp=) and sweep(layout=) give make_plan's bytes for that layout; a count the
    layout does not have is not valid; a layout and its parts together are refused."""
    plan = make_plan(model="deepseek-v3", gpu="h200", gpus=8, tp=2, pp=4, context=65536)
    for kw in (dict(tp=2, pp=4), dict(layout=plan.layout)):
        r = sweep(
            models=["deepseek-v3"],
            gpus=["h200"],
            counts=[8, 16],
            weights=["native"],
            kv_dtypes=["bf16"],
            contexts=[65536],
            **kw,
        )
        assert int(r.total_bytes_per_gpu[0, 0, 0, 0, 0, 0]) == plan.per_gpu.total_bytes
        assert bool(r.valid[0, 0, 0, 0, 0, 0])
    assert not r.valid[0, 0, 1, 0, 0, 0]  # 16 GPUs are not the plan's layout
    with pytest.raises(K3InputError, match="^layout"):
        sweep(
            models=["deepseek-v3"],
            gpus=["h200"],
            counts=[8],
            weights=["native"],
            kv_dtypes=["bf16"],
            contexts=[8192],
            layout=plan.layout,
            tp=2,
        )
