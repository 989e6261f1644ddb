"""Benchmark: one deployment report end to end (target: under 15 s on this machine).

Times what a user waits for — ``k3plan report`` in a fresh process: Python start-up,
validation, papermill running notebooks/90-deployment-report.ipynb in a new kernel, and
the nbconvert export to one self-contained HTML file — for guide 000's worked example
(Q4 + FP8 KV + 256K on 6× H100). Then one in-process run split into its phases, and the
notebook's slowest cells.

    .venv/bin/python benchmarks/bench_report.py              # 3 runs
    .venv/bin/python benchmarks/bench_report.py --runs 5

Speed claims live here, never in timed tests. The machine's load average is printed with
the figures: on a shared machine it explains most of the spread.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 15.0
ARGS = ["--model", "kimi-k3@guide-000", "--weights", "q4", "--kv-dtype", "fp8", "--context", "256K",
        "--gpu", "h100-sxm", "--gpus", "6", "--activation", "10GiB", "--overhead-total", "48GiB"]


def cli_run(out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "k3lib", "report", *ARGS, "-o", str(out)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="end-to-end runs (default 3)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "worked-example.html"
        load = os.getloadavg()[0]
        times = [cli_run(out) for _ in range(args.runs)]
        size_kib = out.stat().st_size / 1024
        best, median = min(times), statistics.median(times)
        print(f"k3plan report, end to end ({args.runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs): "
              f"best {best:.1f} s, median {median:.1f} s — target < {TARGET_S:.0f} s: "
              f"{'met' if median < TARGET_S else 'NOT met'}; HTML {size_kib:,.0f} KiB")

        import nbformat

        from k3lib import report
        r = report.run_report(report.NOTEBOOK_DEFAULTS, Path(tmp) / "inproc.html")
        phases = ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in r.timings.items())
        print(f"one run in-process: {r.seconds:.1f} s ({phases})")
        nb = nbformat.read(r.notebook_path, as_version=4)
        cells = [(c.metadata.papermill.get("duration") or 0.0, c.source.splitlines()[0][:60])
                 for c in nb.cells if c.cell_type == "code"]
        print("slowest cells: " + "; ".join(f"{d:.2f} s `{src}`" for d, src in sorted(cells, reverse=True)[:3]))


if __name__ == "__main__":
    main()
