"""Deployment reports: the report notebook run by papermill and exported to ONE
self-contained HTML file — no code cells, charts as inline SVG, no request to any CDN —
so it opens offline and from an e-mail attachment. One report per scenario, and for a
scenario file an ``index.html`` comparing them side by side.

    k3plan report --model kimi-k3@guide-000 --weights q4 --kv-dtype fp8 --gpus 6 \\
        --activation 10GiB --overhead-total 48GiB -o reports/worked-example.html
    k3plan report --scenarios examples/scenarios.yaml -o reports/

Modules, each usable on its own:

* :mod:`~k3lib.report.parameters` — :data:`PARAMETERS` (the notebook's ``parameters`` cell,
  the CLI flags and the scenario fields are generated from or checked against it) and
  :func:`configure`: parameters → :class:`ReportConfig`, holding the ONE plan that every
  section reads; a bad value raises :class:`~k3lib.views.notebook.ParameterError`, one line.
* :mod:`~k3lib.report.figures` — the key figures (verdict, fullest GPU, max context, cost, tokens/s).
* :mod:`~k3lib.report.sections` and :mod:`~k3lib.report.alternatives` — the notebook's
  cells call them; every piece of user text is escaped (:mod:`~k3lib.report.html`).
* :mod:`~k3lib.report.run` / :mod:`~k3lib.report.export` / :mod:`~k3lib.report.batch` —
  papermill + nbconvert, one report or many; :mod:`~k3lib.report.scenarios` reads
  scenario files with bounds (no YAML alias bombs) and typed fields.
"""

from __future__ import annotations

from k3lib.report.alternatives import Alternative, alternatives, alternatives_html, search_counts
from k3lib.report.batch import run_batch, safe_filename, write_index
from k3lib.report.export import SKIP_IN_REPORT_TAG, export_html, external_references
from k3lib.report.figures import (
    cost_usd,
    decode_tokens_per_s,
    key_figures,
    max_context_tokens,
    offload_plan,
    offload_relevant,
)
from k3lib.report.html import (
    REPORT_CSS,
    context_text,
    describe_plan,
    esc,
    frame_html,
    html_table,
    no_math,
    not_available,
    verdict_badge,
)
from k3lib.report.parameters import (
    CLI_DEFAULTS,
    ENGINES,
    NOTEBOOK_DEFAULTS,
    OFFLOAD_MODES,
    PARAMETER_NAMES,
    PARAMETERS,
    Parameter,
    ReportConfig,
    cli_command,
    coerce_parameter,
    complete_parameters,
    configure,
    parameters_source,
)
from k3lib.report.run import (
    FIGURES_TAG,
    KERNEL,
    REPORT_NOTEBOOK,
    REPORT_STEM,
    ReportError,
    ReportResult,
    figures_from_notebook,
    publish_figures,
    run_report,
)
from k3lib.report.scenarios import (
    MAX_ALIASES,
    ScenarioFileError,
    check_scenario,
    load_scenario_file,
    load_scenarios,
    safe_load_bounded,
)
from k3lib.report.sections import (
    assumptions_html,
    assumptions_table,
    budget_chart,
    budget_table_html,
    chart_or_note,
    checklist_html,
    command_html,
    engine_commands_html,
    engine_view_html,
    engine_view_reason,
    offload_html,
    parameters_html,
    per_gpu_section,
    setup,
    speed_section,
    summary_html,
)

#: every name imported above, and the submodules (which `import *` also brings)
__all__ = [
    "Alternative",
    "alternatives",
    "alternatives_html",
    "search_counts",
    "run_batch",
    "safe_filename",
    "write_index",
    "SKIP_IN_REPORT_TAG",
    "export_html",
    "external_references",
    "cost_usd",
    "decode_tokens_per_s",
    "key_figures",
    "max_context_tokens",
    "offload_plan",
    "offload_relevant",
    "REPORT_CSS",
    "context_text",
    "describe_plan",
    "esc",
    "frame_html",
    "html_table",
    "no_math",
    "not_available",
    "verdict_badge",
    "CLI_DEFAULTS",
    "ENGINES",
    "NOTEBOOK_DEFAULTS",
    "OFFLOAD_MODES",
    "PARAMETER_NAMES",
    "PARAMETERS",
    "Parameter",
    "ReportConfig",
    "cli_command",
    "coerce_parameter",
    "complete_parameters",
    "configure",
    "parameters_source",
    "FIGURES_TAG",
    "KERNEL",
    "REPORT_NOTEBOOK",
    "REPORT_STEM",
    "ReportError",
    "ReportResult",
    "figures_from_notebook",
    "publish_figures",
    "run_report",
    "MAX_ALIASES",
    "ScenarioFileError",
    "check_scenario",
    "load_scenario_file",
    "load_scenarios",
    "safe_load_bounded",
    "assumptions_html",
    "assumptions_table",
    "budget_chart",
    "budget_table_html",
    "chart_or_note",
    "checklist_html",
    "command_html",
    "engine_commands_html",
    "engine_view_html",
    "engine_view_reason",
    "offload_html",
    "parameters_html",
    "per_gpu_section",
    "setup",
    "speed_section",
    "summary_html",
    "batch",
    "export",
    "figures",
    "html",
    "parameters",
    "run",
    "scenarios",
    "sections",
]
