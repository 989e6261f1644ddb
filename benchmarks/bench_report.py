"""Benchmark: one deployment report end to end (target: under 15 s on this machine).

Times what a user waits for — ``k3plan report`` in a fresh process: Python start-up,
validation, papermill running notebooks/90-deployment-report.ipynb in a new kernel, and
the nbconvert export to one self-contained HTML file — for guide 000's worked example
(Q4 + FP8 KV + 256K on 6× H100). Then one in-process run split into its phases, the
notebook's slowest cells, and how many times one report calls ``make_plan``, the vectorized
``sweep`` and parameter validation (the CLI process and the notebook's cells, for the worked
example and for real K3 on 16× H200), by section.

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
REAL_K3 = {"model": "kimi-k3", "weights": "native", "kv_dtype": "fp8", "gpu": "h200", "gpus": 16, "activation": "",
           "overhead_total": "", "scenario": "real K3 on 16x H200"}
ARGS = ["--model", "kimi-k3@guide-000", "--weights", "q4", "--kv-dtype", "fp8", "--context", "256K",
        "--gpu", "h100-sxm", "--gpus", "6", "--activation", "10GiB", "--overhead-total", "48GiB"]


def cli_run(out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "k3lib", "report", *ARGS, "-o", str(out)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


_COUNTS: dict[str, int] = {}


def _install_counters() -> dict[str, int]:
    """Wrap make_plan, sweep and validate wherever a k3lib module holds them (once per process)."""
    import functools
    import sys

    import k3lib.core.plan as core_plan
    import k3lib.core.sweep as core_sweep
    import k3lib.views.notebook as nb_helpers

    if _COUNTS:
        return _COUNTS
    _COUNTS.update({"make_plan": 0, "sweep": 0, "validate": 0})
    originals = {"make_plan": core_plan.make_plan, "sweep": core_sweep.sweep, "validate": nb_helpers.validate}
    for mod in [m for n, m in list(sys.modules.items()) if n.startswith("k3lib") and m is not None]:
        for key, fn in originals.items():
            if getattr(mod, key, None) is fn:
                @functools.wraps(fn)
                def wrapper(*a, _fn=fn, _key=key, **k):
                    _COUNTS[_key] += 1
                    return _fn(*a, **k)
                setattr(mod, key, wrapper)
    return _COUNTS


def count_calls(params: dict) -> list[tuple[str, dict[str, int]]]:
    """(section, {make_plan, sweep, validate: calls}) for one report's Python work, in-process:
    what `k3plan report` does before starting the kernel, then each notebook cell's call."""
    import importlib

    from k3lib import report

    for name in ("k3lib.studies.checklist", "k3lib.studies.steps", "k3lib.studies.commands", "k3lib.core.search",
                 "k3lib.studies.parallel", "k3lib.views.tables", "k3lib.engines"):
        importlib.import_module(name)
    counts = _install_counters()
    out = []

    def phase(label, fn):
        for k in counts:
            counts[k] = 0
        value = fn()
        out.append((label, dict(counts)))
        return value

    phase("CLI process: configure", lambda: report.configure(**params))
    cfg = phase("kernel: configure", lambda: report.configure(**params))
    figures = phase("kernel: key figures", lambda: report.key_figures(cfg))
    plan = cfg.plan
    for label, fn in (("summary", lambda: report.summary_html(cfg, figures)),
                      ("budget", lambda: (report.budget_table_html(plan), report.budget_chart(plan))),
                      ("per-GPU", lambda: report.per_gpu_section(plan)),
                      ("checklist", lambda: report.checklist_html(cfg)),
                      ("alternatives", lambda: report.alternatives_html(plan)),
                      ("offload", lambda: report.offload_html(cfg)),
                      ("commands + engine view", lambda: report.engine_commands_html(cfg)),
                      ("assumptions + parameters", lambda: (report.assumptions_html(plan), report.parameters_html(cfg)))):
        phase("kernel: " + label, fn)
    return out


def print_counts(title: str, params: dict) -> None:
    rows = count_calls(params)
    total = {k: sum(c[k] for _, c in rows) for k in ("make_plan", "sweep", "validate")}
    print(f"{title}: make_plan {total['make_plan']}, sweep {total['sweep']}, validate {total['validate']} per report")
    print("    " + "; ".join(f"{label} {c['make_plan']}/{c['sweep']}/{c['validate']}" for label, c in rows
                             if any(c.values())) + "  (make_plan/sweep/validate)")


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
    print_counts("worked example (guide 000)", dict(report.NOTEBOOK_DEFAULTS))
    print_counts("real K3, 16x H200", REAL_K3)


if __name__ == "__main__":
    main()
