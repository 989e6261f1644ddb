"""The chart checker of the browser tests (tests/e2e/checks.py), without a browser.

Its job: say whether "an Altair chart rendered". With networking off, the output of Altair's
CDN-loading renderers (a placeholder div + scripts from cdn.jsdelivr.net) must FAIL; the
workbook's offline "svg" renderer (inline SVG, or an SVG data-URI image as JupyterLab shows it)
must PASS. The same checker runs against live pages in tests/e2e (pytest -m browser).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from e2e.checks import Chart, check_chart_html, decode_data_url, is_local_url, judge, judge_probe, widget_errors

alt = pytest.importorskip("altair")
pd = pytest.importorskip("pandas")


def _bundle(chart, renderer: str) -> dict:
    with alt.renderers.enable(renderer):
        bundle = chart._repr_mimebundle_()
    return bundle[0] if isinstance(bundle, tuple) else bundle


@pytest.fixture(scope="module")
def chart():
    df = pd.DataFrame(
        {"component": ["weights", "KV cache", "activation", "overhead"], "GiB": [325.0, 32.0, 10.0, 48.0]}
    )
    return alt.Chart(df).mark_bar().encode(x="component:N", y="GiB:Q")


@pytest.fixture(scope="module")
def svg_markup(chart) -> str:
    return _bundle(chart, "svg")["image/svg+xml"]


def page(body: str) -> str:
    return f"<!doctype html><html><head><meta charset='utf-8'></head><body>{body}</body></html>"


# -------------------------------------------------------------------- the broken settings fail


def test_html_renderer_output_fails_offline(chart):
    """Altair's "html" renderer: a div and a script that loads vega from a CDN."""
    html = _bundle(chart, "html")["text/html"]
    assert "cdn.jsdelivr.net" in html
    verdict = check_chart_html(page(html))
    assert not verdict.ok
    assert any(p.startswith("chart placeholder #altair-viz-") for p in verdict.problems), verdict.summary()
    assert any("cdn.jsdelivr.net/npm/vega@" in u for u in verdict.external), verdict.external
    assert verdict.drawn == 0


def test_standalone_html_with_cdn_script_tags_fails(chart):
    """``chart.save("x.html")``: ``<script src="https://cdn.jsdelivr.net/npm/vega@…">``."""
    html = chart.to_html()
    assert '<script src="https://cdn.jsdelivr.net/npm/vega@' in html.replace("'", '"') or "cdn.jsdelivr.net" in html
    verdict = check_chart_html(html)
    assert not verdict.ok
    assert verdict.external and all(u.startswith("https://cdn.jsdelivr.net/") for u in verdict.external)


def test_cdn_page_fails_even_online_mode_without_a_browser(chart):
    """Static analysis cannot run JavaScript: an undrawn placeholder fails even with offline=False."""
    verdict = check_chart_html(page(_bundle(chart, "html")["text/html"]), offline=False)
    assert not verdict.ok


# -------------------------------------------------------------------- the workbook's setting passes


def test_svg_renderer_inline_passes(svg_markup):
    verdict = check_chart_html(page(f'<div class="jp-RenderedSVG">{svg_markup}</div>'))
    assert verdict.ok, verdict.summary()
    assert verdict.charts[0].kind == "svg" and verdict.charts[0].marks == 4  # one bar per component


def test_svg_renderer_as_jupyterlab_data_uri_image_passes(svg_markup):
    """JupyterLab shows an image/svg+xml output as <img src="data:image/svg+xml,…">."""
    html = page(f'<img src="data:image/svg+xml,{quote(svg_markup)}">')
    verdict = check_chart_html(html)
    assert verdict.ok, verdict.summary()
    assert verdict.charts[0].kind == "svg-img" and verdict.charts[0].marks == 4


def test_workbook_renderer_setting_passes(svg_markup):
    """k3lib.views.notebook.setup() picks the renderer the checker passes."""
    from k3lib.views import notebook

    assert notebook.ALTAIR_RENDERER == "svg"
    assert notebook.setup() is None and alt.renderers.active == "svg"
    try:
        bundle = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q")._repr_mimebundle_()
    finally:
        alt.renderers.enable("default")
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert check_chart_html(page(bundle["image/svg+xml"])).ok


# -------------------------------------------------------------------- blank charts fail


def test_chart_with_no_data_marks_fails():
    df = pd.DataFrame({"component": pd.Series([], dtype=str), "GiB": pd.Series([], dtype=float)})
    empty = alt.Chart(df).mark_bar().encode(x="component:N", y="GiB:Q")
    verdict = check_chart_html(page(_bundle(empty, "svg")["image/svg+xml"]))
    assert not verdict.ok
    assert "blank" in verdict.summary()


def test_non_vega_svg_is_not_a_chart():
    verdict = check_chart_html(page('<svg width="10" height="10"><rect width="5" height="5"/></svg>'))
    assert not verdict.ok and verdict.charts == ()


def test_placeholder_with_svg_inside_counts_as_drawn(svg_markup):
    """What vega-embed leaves when its JavaScript did run: the placeholder holds the SVG."""
    html = page(f'<div id="altair-viz-1" class="vega-embed">{svg_markup}</div>')
    assert check_chart_html(html).ok


def test_error_text_from_the_loader_is_reported(chart):
    html = page(
        '<div id="altair-viz-9"><div class="error" style="color:red;">Error loading script: '
        "https://cdn.jsdelivr.net/npm/vega@6?noext</div></div>"
    )
    verdict = check_chart_html(html)
    assert not verdict.ok
    assert any("Error loading script" in p for p in verdict.problems)


def test_schema_urls_in_a_spec_are_not_network_loads(svg_markup):
    html = page(
        svg_markup
        + '<script type="application/json">{"$schema": "https://vega.github.io/schema/vega-lite/v6.json"}</script>'
    )
    assert check_chart_html(html).ok


# -------------------------------------------------------------------- the browser probe's judge


def test_judge_probe_measured_sizes(svg_markup):
    good = {
        "charts": [{"kind": "svg", "marks": 4, "width": 200, "height": 300, "shown": True}],
        "placeholders": [],
        "errors": [],
    }
    assert judge_probe(good).ok
    zero = {"charts": [{"kind": "svg", "marks": 4, "width": 0, "height": 0, "shown": True}]}
    assert not judge_probe(zero).ok
    hidden = {"charts": [{"kind": "svg", "marks": 4, "width": 200, "height": 300, "shown": False}]}
    assert not judge_probe(hidden).ok
    src = "data:image/svg+xml," + quote(svg_markup)
    img = {"charts": [{"kind": "svg-img", "width": 129, "height": 380, "shown": True, "decoded": True, "src": src}]}
    assert judge_probe(img).ok
    broken = {"charts": [{"kind": "svg-img", "width": 0, "height": 0, "shown": True, "decoded": False, "src": src}]}
    assert not judge_probe(broken).ok
    empty_placeholder = {"charts": [], "placeholders": ["#altair-viz-1"], "errors": []}
    assert not judge_probe(empty_placeholder).ok
    canvas = {"charts": [{"kind": "canvas", "marks": 1, "width": 300, "height": 200, "shown": True}]}
    assert judge_probe(canvas).ok
    assert not judge_probe(good, external=["https://cdn.jsdelivr.net/npm/vega@6"]).ok


def test_judge_needs_min_charts():
    one = [Chart("svg", 3, 10, 10)]
    assert judge(one).ok and not judge(one, min_charts=2).ok


# -------------------------------------------------------------------- helpers


def test_helpers():
    assert decode_data_url("data:image/png;base64,AA==") is None
    assert is_local_url("http://[::1]:8888/api") and not is_local_url("http://example.org/")
    assert not is_local_url("wss://cdn.example/x")
    assert widget_errors("VBox(children=(IntSlider(value=8),))") != []
    assert widget_errors("Loading widget...") != []
