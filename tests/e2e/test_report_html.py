"""A generated HTML report, opened from a file:// URL with networking off: its charts render,
and its dollar amounts show as text (no MathJax turns "$180,000 … $30,000" into math).

The report comes from :func:`k3lib.report.run_report` with the report notebook's own defaults
(guide 000's worked example).

Networking off: the browser context is offline and routes every request; anything that is not
file:, data: or blob: is logged, aborted, and fails the test.

The checker is also shown to FAIL, in the same offline browser, on a page Altair's CDN-loading
renderer produced, and to PASS on the svg renderer's page.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .checks import check_chart_html, check_page_charts
from .conftest import ARTIFACTS, missing_browser_reason

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(path of a generated HTML report, how it was made)."""
    reason = missing_browser_reason()
    if reason:  # skip before spending the time to generate it
        pytest.skip(reason)
    from k3lib import report as k3report

    out = tmp_path_factory.mktemp("report") / "report.html"
    k3report.run_report(dict(k3report.NOTEBOOK_DEFAULTS), out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(out, ARTIFACTS / "report.html")
    return out, "k3lib.report.run_report(NOTEBOOK_DEFAULTS)"


def test_report_charts_render_offline(report, offline_page, artifacts):
    path, how = report
    page, net = offline_page
    html = path.read_text(encoding="utf-8")

    static = check_chart_html(html)
    assert static.ok, f"{how}: {static.summary()}"

    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_timeout(500)  # anything a script would draw late
    artifacts.shot(page, "report", full_page=True)
    verdict = check_page_charts(page, external=net.outside())
    assert verdict.ok, f"{how}: {verdict.summary()}"
    # Inline SVG (the report's contract), every chart with a non-zero box.
    assert all(c.kind == "svg" and c.width and c.height for c in verdict.charts), verdict.charts
    # Networking off: nothing but file:/data:/blob: was even attempted.
    assert net.outside() == [], f"{how}: requests left the file: {net.outside()}"
    assert net.blocked == []
    # 6 × $30,000 (data/hardware.csv's H100 price) = $180,000, shown as text, not typeset as math
    assert "$180,000 (6 × $30,000, catalogue price)" in page.inner_text("body")
    assert page.locator("mjx-container, .MathJax, math").count() == 0
    print(f"{how}: {verdict.drawn} charts drawn, {len(net.requests)} requests, all file:/data:")


def _chart_pages(folder: Path) -> dict[str, Path]:
    """The same Altair chart as two standalone pages: the svg renderer's (inline SVG, as the
    workbook makes it) and Altair's default HTML (vega/vega-lite/vega-embed from a CDN)."""
    import altair as alt
    import pandas as pd

    chart = (
        alt.Chart(pd.DataFrame({"component": ["weights", "KV cache"], "GiB": [325.0, 32.0]}))
        .mark_bar()
        .encode(x="component:N", y="GiB:Q")
    )
    with alt.renderers.enable("svg"):
        svg = chart._repr_mimebundle_()
    svg = svg[0] if isinstance(svg, tuple) else svg
    with alt.renderers.enable("html"):
        cdn = chart._repr_mimebundle_()
    cdn = cdn[0] if isinstance(cdn, tuple) else cdn
    pages = {
        "svg-renderer": f"<!doctype html><html><body><div>{svg['image/svg+xml']}</div></body></html>",
        "html-renderer-cdn": f"<!doctype html><html><body>{cdn['text/html']}</body></html>",
        "chart-save-html-cdn": chart.to_html(),
    }
    out = {}
    for name, text in pages.items():
        out[name] = folder / f"{name}.html"
        out[name].write_text(text, encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "name, should_pass", [("svg-renderer", True), ("html-renderer-cdn", False), ("chart-save-html-cdn", False)]
)
def test_chart_checker_in_offline_browser(name, should_pass, offline_page, artifacts, tmp_path):
    """The broken setting (Altair's CDN-loading renderers) must fail the check; svg must pass."""
    page, net = offline_page
    path = _chart_pages(tmp_path)[name]
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_timeout(1000)  # let the CDN loader try, and fail
    artifacts.shot(page, name, full_page=True)
    verdict = check_page_charts(page, external=net.outside())
    assert verdict.ok is should_pass, verdict.summary()
    if should_pass:
        assert net.outside() == []
    else:
        assert any("cdn.jsdelivr.net" in u for u in net.outside()), net.outside()
