"""Benchmark: the cheat sheets of k3lib.studies.checklist, computed by the vectorized sweep,
against what a per-cell loop over k3lib.core.plan.make_plan would cost for the same grid.

    .venv/bin/python benchmarks/bench_cheatsheet.py              # loop timed on a 3,000-plan sample
    .venv/bin/python benchmarks/bench_cheatsheet.py --sample 0   # skip the loop

The "GPU configuration cheat sheet" evaluates every GPU × deployable count (one node of 1–8,
then whole nodes to 32) × checkpoint × context (1K-token steps to 1M) plan.
Speed claims live here, never in timed tests.
"""
from __future__ import annotations

import argparse
import random

from k3lib.core.models import get_model
from k3lib.core.plan import make_plan
from k3lib.core.search import candidate_gpu_counts
from k3lib.studies.checklist import (CHEATSHEET_GPUS, cheapest_configuration, cheatsheet, context_grid,
                                     optimal_gpu_counts, precision_ladder, run_checklist)
from k3lib.studies.solver import CHEATSHEET_MAX_GPUS, _a
from timing import best_of

MODELS = ("kimi-k3@guide-000", "kimi-k3")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=3000, help="plans in the timed make_plan loop (0: skip)")
    args = parser.parse_args()
    print(f"{'what':<46}{'plans':>10}{'time (s)':>11}")
    for model in MODELS:
        a = _a(None, get_model(model))
        ladder = precision_ladder(model)
        rows = [(g, n) for g in CHEATSHEET_GPUS
                for n in candidate_gpu_counts(get_model(model),
                                              g, max_gpus=CHEATSHEET_MAX_GPUS)]
        ctx = context_grid(model)
        n_plans = len(rows) * len(ladder) * len(ctx)
        t = best_of(lambda: cheatsheet(model=model))
        print(f"{'cheatsheet ' + model:<46}{n_plans:>10,}{t:>11.3f}")
        t = best_of(lambda: optimal_gpu_counts(model=model))
        print(f"{'optimal_gpu_counts ' + model:<46}{64 * len(ladder) * 5:>10,}{t:>11.3f}")
        t = best_of(lambda: cheapest_configuration(model=model, gpu="h100-sxm", context="256K"))
        print(f"{'cheapest_configuration ' + model:<46}{len(rows) // len(CHEATSHEET_GPUS) * len(ladder) * (len(ctx) + 1):>10,}{t:>11.3f}")
        t = best_of(lambda: run_checklist(model=model, gpu="h100-sxm", gpus=8, context="256K"), repeat=3)
        print(f"{'run_checklist (7 steps + solver) ' + model:<46}{'':>10}{t:>11.3f}")
        if args.sample:
            random.seed(0)
            combos = [(g, n, w, c) for g, n in rows for w in ladder for c in ctx]
            sample = random.sample(combos, min(args.sample, len(combos)))

            def loop():
                for g, n, w, c in sample:
                    make_plan(model=model, gpu=g, gpus=n, weights=w, kv_dtype="fp8", context=int(c), assumptions=a)

            t_loop = best_of(loop, repeat=1) * len(combos) / len(sample)
            t_vec = best_of(lambda: cheatsheet(model=model))
            print(f"{'  per-plan make_plan loop, same grid (scaled)':<46}{len(combos):>10,}{t_loop:>11.2f}"
                  f"   → vectorized is {t_loop / t_vec:,.0f}x faster")


if __name__ == "__main__":
    main()
