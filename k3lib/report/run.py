"""One report: validate the parameters (once), run the report notebook with papermill in
a fresh kernel, read its key figures back from the executed notebook, export the HTML."""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k3lib.report.export import export_html
from k3lib.report.parameters import ReportConfig, complete_parameters, configure

REPORT_STEM = "90-deployment-report"
KERNEL = "python3"
#: The notebook cell that publishes the key figures (as application/json) carries this tag.
FIGURES_TAG = "k3-figures"
FIGURES_MIME = "application/vnd.k3lib.figures+json"


def _report_notebook() -> Path:
    """notebooks/90-deployment-report.ipynb of the checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "notebooks" / f"{REPORT_STEM}.ipynb"


REPORT_NOTEBOOK = _report_notebook()


def publish_figures(figures: Mapping[str, Any]) -> None:
    """Display ``figures`` as JSON in the notebook, for :func:`run_report` to read back
    (so the figures are computed once, in the kernel). Nothing visible in the HTML."""
    from IPython.display import display

    display({FIGURES_MIME: json.loads(json.dumps(dict(figures), default=str))}, raw=True)


def figures_from_notebook(nb) -> dict[str, Any] | None:
    """The figures :func:`publish_figures` displayed in an executed notebook, or None."""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if FIGURES_MIME in data:
                value = data[FIGURES_MIME]
                return json.loads(value) if isinstance(value, str) else dict(value)
    return None


@dataclass
class ReportResult:
    """One scenario's outcome: its key figures, or the error that stopped it."""

    scenario: str
    html_path: Path | None = None
    notebook_path: Path | None = None
    figures: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


class ReportError(Exception):
    """A report could not be produced (a cell failed)."""


class MissingExtraError(ModuleNotFoundError):
    """An optional dependency is not installed; the message names the extra that brings it."""

    def __init__(self, module: str, extra: str, what: str) -> None:
        super().__init__(
            f"{what} needs {module}, which the base install leaves out: pip install 'k3lib[{extra}]'", name=module
        )
        self.extra = extra


#: What running a report imports beyond the base install (all in the ``reports`` extra).
REPORT_MODULES = ("papermill", "nbformat", "nbconvert", "ipykernel")

#: Arguments for the report's kernel: its own log at ERROR, so the normal path prints nothing
#: (ipykernel warns "Kernel is running over TCP without encryption" on every start; the kernel
#: listens on localhost only and papermill is its only client). Its errors, and every cell's
#: error (read back from the executed notebook), still come through.
KERNEL_ARGUMENTS = ("--IPKernelApp.log_level=ERROR",)


def require_report_modules(what: str = "`k3plan report`") -> None:
    """Raise :class:`MissingExtraError` (one line, naming ``k3lib[reports]``) unless the
    modules a report runs with are installed; imports none of them."""
    for module in REPORT_MODULES:
        if importlib.util.find_spec(module) is None:
            raise MissingExtraError(module, "reports", what)


def _execution_error(exc: Exception) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"{ename}: {evalue}"
    return f"{type(exc).__name__}: {exc}"


def run_report(
    parameters: Mapping[str, Any],
    out_html: str | Path,
    *,
    notebook: str | Path = REPORT_NOTEBOOK,
    timeout_s: int = 300,
    config: ReportConfig | None = None,
    keep_notebook: bool = False,
) -> ReportResult:
    """Run the report notebook for ``parameters`` (missing keys: :data:`CLI_DEFAULTS`) and
    write ``out_html``; with ``keep_notebook``, also the executed notebook next to it (``.ipynb``).

    Parameters are validated here first (unless the caller passes the ``config`` it has
    already validated), so a bad value fails in milliseconds with a
    :class:`~k3lib.views.notebook.ParameterError` and no kernel is started. A cell that
    fails raises :class:`ReportError` naming it (the executed notebook, error marked, is
    written only with ``keep_notebook``). Without the ``reports`` extra installed it raises
    :class:`MissingExtraError` before anything is written.
    """
    require_report_modules()
    import papermill

    t0 = time.perf_counter()
    params = complete_parameters(parameters)
    cfg = config if config is not None else configure(**params)  # ParameterError: one line, no kernel
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_nb = out_html.with_suffix(".ipynb") if keep_notebook else None
    notebook = Path(notebook)
    t1 = time.perf_counter()
    try:  # output_path None: papermill writes no notebook
        nb = papermill.execute_notebook(
            str(notebook),
            str(out_nb) if out_nb else None,
            parameters=params,
            kernel_name=KERNEL,
            cwd=str(notebook.parent),
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout_s,
            extra_arguments=list(KERNEL_ARGUMENTS),
        )
    except Exception as exc:  # papermill's PapermillExecutionError and kernel failures
        where = f" ({out_nb})" if out_nb else " (--keep-notebook keeps the executed notebook)"
        raise ReportError(f"the report notebook failed{where}: {_execution_error(exc)}") from None
    t2 = time.perf_counter()
    figures = figures_from_notebook(nb)
    if figures is None:  # a notebook that does not publish them
        from k3lib.report.figures import key_figures

        figures = key_figures(cfg)
    export_html(nb, out_html, title=cfg.title)
    t3 = time.perf_counter()
    return ReportResult(
        scenario=cfg.title,
        html_path=out_html,
        notebook_path=out_nb,
        figures=figures,
        seconds=t3 - t0,
        timings={"validate_s": t1 - t0, "execute_s": t2 - t1, "export_s": t3 - t2},
    )
