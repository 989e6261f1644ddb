"""The workbook in a real browser: JupyterLab (from .venv) + headless Chromium.

For each notebook: open it, Run → Run All Cells, then check in the rendered page that
* every cell ran, and no traceback shows;
* the widgets are live (widget DOM present; no "Error displaying widget", "model not found",
  or a widget's text repr shown in its place);
* at least one Altair chart is drawn (a Vega SVG with data marks of non-zero size;
  see checks.py);
* turning a widget (the GPU count, the context) changes the figures its cell shows, and the
  new chart is drawn too;
* no request left localhost (every request is logged; any other is aborted and fails the test).

Screenshots of each step: test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from . import lab
from .checks import check_page_charts

pytestmark = pytest.mark.browser

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"


@dataclass(frozen=True)
class Case:
    stem: str
    #: label patterns of the controls to turn; each one found is turned and must change the
    #: figures; ``required`` of them must be found.
    controls: tuple[str, ...]
    required: tuple[str, ...]


#: Widget labels (descriptions), case-insensitive: "GPUs" / "GPU count" (not the "GPU" type
#: dropdown), and "context" / "target context".
GPUS = r"^(GPUs|GPU count|number of GPUs)$"
CONTEXT = r"\bcontext\b"

CASES = [
    # The harness's own notebook (ipywidgets + Altair only): proves the harness whatever the
    # workbook's notebooks look like.
    Case("e2e-fixture-widgets", (GPUS, CONTEXT), required=(GPUS, CONTEXT)),
    Case("05-decision-checklist", (GPUS, CONTEXT), required=(GPUS,)),
    Case("00-vram-anatomy", (CONTEXT, GPUS), required=(CONTEXT,)),  # the series' explorer lives in 00
]


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_notebook_runs_live_in_jupyterlab(case, lab_session, lab_page, artifacts):
    page, net = lab_page
    server = lab_session.server
    if not (server.root_dir / f"{case.stem}.ipynb").exists():
        pytest.skip(f"notebooks/{case.stem}.ipynb does not exist yet")

    lab.open_notebook(page, server, f"{case.stem}.ipynb")
    artifacts.shot(page, "opened")

    state = lab.run_all_cells(page)
    artifacts.shot(page, "ran-all-cells")
    failed = [c for c in state["cells"] if c["errors"]]
    assert not failed, f"cells failed: {[(c['index'], c['errors']) for c in failed]}"
    not_run = [c["index"] for c in state["cells"] if not c["empty"] and c["count"] is None]
    assert not not_run, f"code cells not run: {not_run}"
    assert lab.error_outputs(page) == []

    # Widgets are live.
    page.wait_for_selector(f"{NOTEBOOK} .jupyter-widgets", timeout=30_000)
    n_widgets = page.locator(f"{NOTEBOOK} .jupyter-widgets").count()
    assert n_widgets > 0
    assert lab.widget_problems(page) == [], "widgets did not render"

    # A chart is drawn.
    verdict = check_page_charts(page, NOTEBOOK)
    assert verdict.ok, verdict.summary()

    # Turning a widget changes the figures shown.
    turned = []
    for pattern in case.controls:
        control = lab.find_control(page, pattern)
        if control is None:
            assert pattern not in case.required, (
                f"no widget labelled /{pattern}/ in {case.stem}; controls: {lab.controls(page)}"
            )
            continue
        lab.control_locator(page, control).scroll_into_view_if_needed()
        artifacts.shot(page, f"before-{control.label}")
        before = lab.figures(page, control)
        assert before["text"] or before["charts"], f"the cell of {control} shows nothing"
        new_value = lab.change_control(page, control)
        after = lab.wait_figures_change(page, control, before)
        artifacts.shot(page, f"after-{control.label}={new_value}")
        assert after != before, f"setting {control.label} from {control.value} to {new_value} changed nothing shown"
        assert lab.widget_problems(page) == []
        verdict = check_page_charts(page, NOTEBOOK)
        assert verdict.ok, f"after {control.label}={new_value}: {verdict.summary()}"
        turned.append(
            (
                control.label,
                control.value,
                new_value,
                "text" if after["text"] != before["text"] else "",
                "chart" if after["charts"] != before["charts"] else "",
            )
        )
    print(f"{case.stem}: {n_widgets} widget elements; {verdict.drawn} charts drawn; turned {turned}")

    # Nothing left localhost.
    assert net.outside() == [], f"requests left localhost: {net.outside()}"
    assert any(r["url"].startswith(server.base_url) for r in net.requests)  # the log does record


def test_cdn_renderer_is_caught_in_jupyterlab(lab_session, lab_page, artifacts):
    """The broken setting: Altair's CDN-loading "html" renderer. Offline (every non-loopback
    request aborted) its chart never draws, and the chart check must say so."""
    page, net = lab_page
    lab.open_notebook(page, lab_session.server, "e2e-fixture-cdn-renderer.ipynb")
    lab.run_all_cells(page)
    page.wait_for_timeout(1500)  # give its script the time to try the CDN
    artifacts.shot(page, "cdn-renderer")
    verdict = check_page_charts(page, NOTEBOOK)
    assert not verdict.ok, verdict.summary()
    assert any("placeholder" in p for p in verdict.problems), verdict.summary()
    assert any("cdn.jsdelivr.net" in u for u in net.outside()), net.outside()
