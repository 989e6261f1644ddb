"""Generate notebooks/90-deployment-report.ipynb, then execute it and keep only the checked outputs.

The report notebook has no widgets: it is run by papermill (``k3plan report``) and exported
to one offline HTML file by :mod:`k3lib.report`. Its ``parameters`` cell is generated from
:data:`k3lib.report.PARAMETERS`, so the CLI, scenario files and ``papermill --help-notebook``
all see the same list.

Usage:  .venv/bin/python scripts/notebooks/90_deployment_report.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from nbtool import build, code, md, nav, parameters

from k3lib.report import PARAMETER_NAMES, SKIP_IN_REPORT_TAG, parameters_source

STEM = "90-deployment-report"


def skip_in_report(cell):
    """Keep the cell in the notebook, drop it from the HTML report."""
    cell.metadata.setdefault("tags", []).append(SKIP_IN_REPORT_TAG)
    return cell


validate_args = ", ".join(f"{n}={n}" for n in PARAMETER_NAMES)

cells = [
    skip_in_report(
        md(f"""
# 90 · Deployment report

**The question:** for one candidate deployment, does it fit, by how much, what are the nearest configurations that do, and how do I launch it?

{nav(STEM)}

This notebook has no widgets: it is a template for reports.
`k3plan report` runs it with papermill for one configuration (or for every scenario of a `scenarios.yaml`) and exports it to one self-contained HTML file, code hidden, charts as inline SVG, that opens offline and from an e-mail attachment.
The defaults below are guide 000's worked example: Q4 weights, FP8 KV cache, 256K context on 6× H100 80 GB, with the guide's activation (10 GiB) and overhead (48 GiB in total).

```bash
.venv/bin/k3plan report --model kimi-k3@guide-000 --weights q4 --kv-dtype fp8 --gpus 6 --activation 10GiB --overhead-total 48GiB -o reports/worked-example.html
.venv/bin/k3plan report --scenarios examples/scenarios.yaml -o reports/
.venv/bin/papermill --help-notebook notebooks/90-deployment-report.ipynb
```
""")
    ),
    parameters(parameters_source()),
    code(f"""
from IPython.display import HTML, display
from k3lib import report
report.setup()  # notebook.setup()'s offline Altair renderer (SVG through vl-convert, no CDN), imported faster
cfg = report.configure({validate_args})  # validated once: the ONE plan every section reads
plan = cfg.plan
figures = report.key_figures(cfg)
"""),
    skip_in_report(code("report.publish_figures(figures)  # read back by `k3plan report` for the index")),
    code("HTML(report.summary_html(cfg, figures))"),
    md("""
## The four-component budget

Weights, KV cache, activation and runtime overhead, over all GPUs and on one GPU; the black tick is the memory the GPUs have.
"""),
    code("HTML(report.budget_table_html(plan))"),
    code("report.chart_or_note(report.budget_chart(plan), 'budget chart')"),
    md("""
## Per-GPU breakdown

What one GPU of each pipeline stage holds, read from the plan itself: whole layers per stage, sharded and replicated weights, the KV cache of the stage's layers. The fullest GPU decides the verdict.
"""),
    code("""
per_gpu_table, per_gpu_chart = report.per_gpu_section(plan)
display(HTML(per_gpu_table))
report.chart_or_note(per_gpu_chart, 'per-GPU chart')
"""),
    md("""
## The checklist

Guide 000's seven-step decision framework, answered for this configuration.
"""),
    code("HTML(report.checklist_html(cfg))"),
    md("""
## Alternatives: the nearest configurations that fit, cheapest first

Fewer or more GPUs, a smaller weight or KV format, a shorter context, or another GPU with a known price; for each, the fewest GPUs that fit.
Cost is GPU count × catalogue price (hardware only).
"""),
    code("HTML(report.alternatives_html(plan))"),
    md("""
## Speed, concurrency and cost

How fast the plan serves, how many requests at once, and what a million output tokens cost: the serving model over this plan, each figure with its basis (fitted on measured runs, with its error on runs it was never fitted on, or a theoretical ceiling).
"""),
    code("""
speed_table, speed_chart = report.speed_section(cfg)
display(HTML(speed_table))
report.chart_or_note(speed_chart, 'throughput-latency chart')
"""),
    md("""
## Offload option

Routed experts in system RAM and everything else on the GPU (guide 004's mode), shown when asked for or when the plan does not fit.
"""),
    code("HTML(report.offload_html(cfg))"),
    md("""
## Engine commands

Command lines to copy; nothing here is executed. Then the memory of the fullest GPU as the engine itself would count it (its own rules and the lines it prints), or one line saying why no engine view applies.
"""),
    code("HTML(report.engine_commands_html(cfg))"),
    md("""
## Assumptions and their sources

Every figure above rests on these; change one with the report's parameters (the table after this one lists them).
"""),
    code("HTML(report.assumptions_html(plan))"),
    code("HTML(report.parameters_html(cfg))"),
]

if __name__ == "__main__":
    build(STEM, cells)
