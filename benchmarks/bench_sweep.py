"""Benchmark: the vectorized sweep (k3lib.core.sweep) against a plain per-plan loop
(k3lib.core.plan.make_plan), over ≥ 100,000 plans. Prints times and their ratio.

    .venv/bin/python benchmarks/bench_sweep.py            # loop timed on a 5,000-plan sample
    .venv/bin/python benchmarks/bench_sweep.py --full     # loop over every plan (slow)

Speed claims live here, never in timed tests.
"""
from __future__ import annotations

import argparse
import itertools
import random

from k3lib.core.plan import make_plan
from timing import best_of
from k3lib.core.sweep import sweep

GRID = dict(
    models=["kimi-k3", "kimi-k3@guide-000", "kimi-k2", "deepseek-v3", "llama-3.1-70b", "llama-3.1-405b",
            "gpt-oss-120b", "qwen3-next-80b", "qwen3-235b-a22b", "gemma-3-27b"],
    gpus=["h100-sxm", "h200-sxm", "b200", "b300", "mi300x", "mi355x", "a100-sxm-80gb", "l40s"],
    counts=[1, 2, 4, 8, 16],
    weights=["bf16", "fp8", "q8", "q4", "q2"],
    kv_dtypes=["bf16", "fp8", "int4", "q8_0"],
    contexts=["4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M", "2K", "24K", "48K", "96K",
              "192K", "384K", "768K"],
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="time the loop over every plan, not a sample")
    parser.add_argument("--sample", type=int, default=5000, help="plans in the timed loop sample")
    args = parser.parse_args()

    result = sweep(**GRID)
    n = result.size
    t_vec = best_of(lambda: sweep(**GRID))
    combos = list(itertools.product(*GRID.values()))
    assert len(combos) == n
    if not args.full:
        random.seed(0)
        combos = random.sample(combos, min(args.sample, n))

    def loop():
        for m, g, c, w, k, ctx in combos:
            try:
                make_plan(model=m, gpu=g, gpus=c, weights=w, kv_dtype=k, context=ctx)
            except ValueError:
                pass

    t_loop_sample = best_of(loop, repeat=1)
    t_loop = t_loop_sample * n / len(combos)
    print(f"plans in the sweep:         {n:,}")
    print(f"vectorized sweep:           {t_vec:.3f} s  ({t_vec / n * 1e9:,.0f} ns per plan)")
    print(f"per-plan loop:              {t_loop:.2f} s  ({t_loop / n * 1e6:,.1f} µs per plan; "
          f"{'all plans' if args.full else f'timed on {len(combos):,} plans, scaled'})")
    print(f"ratio loop / vectorized:    {t_loop / t_vec:,.0f}x")
    print(f"target: sweep < 0.2 s -> {'met' if t_vec < 0.2 else 'MISSED'}; ratio >= 50x -> "
          f"{'met' if t_loop / t_vec >= 50 else 'MISSED'}")


if __name__ == "__main__":
    main()
