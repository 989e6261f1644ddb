"""The vectorized sweep gives the same per-GPU totals as make_plan, plan by plan."""
import itertools

import pytest

from k3lib.core.plan import Assumptions, make_plan
from k3lib.core.sweep import sweep

GRID = dict(models=["kimi-k3", "kimi-k3@guide-000", "llama-3.1-70b", "gpt-oss-120b", "qwen3-next-80b"],
            gpus=["h100-sxm", "mi300x"], counts=[1, 5, 8], weights=["bf16", "q4", "native"],
            kv_dtypes=["bf16", "fp8", "q4_0"], contexts=["8K", "256K", "1M"])


def test_sweep_matches_make_plan_everywhere():
    r = sweep(**GRID)
    for idx in itertools.product(*(range(len(v)) for v in GRID.values())):
        m, g, n, w, k, c = (list(v)[i] for v, i in zip(GRID.values(), idx))
        if not r.valid[idx]:
            assert m.endswith("guide-000") and w == "native"
            continue
        p = make_plan(model=m, gpu=g, gpus=n, weights=w, kv_dtype=k, context=c)
        assert abs(int(r.total_bytes_per_gpu[idx]) - p.per_gpu.total_bytes) <= 2, (m, g, n, w, k, c)
        assert bool(r.fits[idx]) == p.fits


def test_sweep_worked_example_assumptions():
    a = Assumptions(activation_bytes=10 * 2**30, overhead_total_bytes=48 * 2**30)
    r = sweep(models=["kimi-k3@guide-000"], gpus=["h100"], counts=[5, 6], weights=["q4"], kv_dtypes=["fp8"],
              contexts=["256K"], assumptions=a)
    # 415 GiB spread over 6 GPUs fits 80 GiB each; over 5 it does not.
    assert r.fits.ravel().tolist() == [False, True]
    df = r.to_frame()
    assert len(df) == 2 and set(df.columns) >= {"model", "gpu", "gpus", "fits"}
