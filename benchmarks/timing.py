"""Shared timing helper for the benchmark scripts (run them as ``python benchmarks/NAME.py``,
which puts this folder on ``sys.path``)."""
from __future__ import annotations

import time
from typing import Callable


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """The fastest of ``repeat`` wall-clock runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
