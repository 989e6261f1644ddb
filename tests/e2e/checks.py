"""Judging "an Altair chart rendered", from HTML text or from a live page.

The workbook renders Altair charts with the offline ``svg`` renderer (vl-convert in the
kernel), so a rendered chart is a Vega SVG (``<svg class="marks">``) whose data marks live in
``<g class="mark-… role-mark">`` groups. It appears inline (nbconvert HTML, reports) or as an
``<img src="data:image/svg+xml,…">`` (JupyterLab renders SVG outputs that way). Vega's own
JavaScript, where it runs, draws into a ``.vega-embed`` element as an SVG or a canvas.

A chart did NOT render when an Altair placeholder (``<div id="altair-viz-…">``, ``.vega-embed``)
holds neither SVG nor canvas: that is what Altair's CDN-loading renderers leave behind
offline. Vega's frame, axes, grid and legends do not count as marks, so an empty chart fails.

Two entry points share one judge:

* :func:`check_chart_html` — static analysis of an HTML string (no browser);
* :func:`check_page_charts` — runs :data:`CHART_PROBE_JS` in a Playwright page (sizes measured
  by the browser, images actually decoded) and judges the result.

>>> svg = ('<svg class="marks" width="40" height="30"><g class="mark-rect role-mark">'
...        '<path d="M0,10h10v20h-10Z"/></g></svg>')
>>> check_chart_html(svg).ok
True
>>> verdict = check_chart_html('<div id="altair-viz-1"></div>'
...                            '<script src="https://cdn.jsdelivr.net/npm/vega@6"></script>')
>>> verdict.ok, verdict.problems[0]
(False, 'chart placeholder #altair-viz-1 is empty: nothing was drawn (its JavaScript did not run or could not load)')
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urlsplit

#: SVG elements that draw something.
SHAPE_TAGS = frozenset({"path", "rect", "circle", "ellipse", "line", "polyline", "polygon", "text", "image"})

#: Text that means a widget did not come alive in JupyterLab.
WIDGET_ERROR_PATTERNS = (
    re.compile(r"Error displaying widget", re.I),
    re.compile(r"model not found", re.I),
    re.compile(r"Failed to load model class", re.I),
    re.compile(r"Loading widget\.\.\.", re.I),
    # ipywidgets' text/plain fallback, shown when no widget manager renders the view:
    re.compile(
        r"^\s*(?:[A-Z]\w*(?:Slider|Dropdown|Box|Output|Buttons?|Text|Select\w*)|VBox|HBox|Tab|Accordion)"
        r"\((?:children|value|options|description|outputs|layout)=",
        re.M,
    ),
)

_URL_IN_TEXT = re.compile(r"""(?P<q>["'(])\s*(?P<url>(?:https?:)?//[^"'()\s]+)""")
_SCHEMA_KEY = re.compile(r"""["']\$schema["']\s*:\s*$""")


def is_local_url(url: str, *, allow_file: bool = False) -> bool:
    """Whether ``url`` stays on this machine: loopback http(s)/ws(s), data:, blob:, about:.

    >>> [is_local_url(u) for u in ("http://127.0.0.1:8888/lab", "ws://localhost:1/api",
    ...                            "https://cdn.jsdelivr.net/npm/vega@6", "data:image/png;base64,AA==")]
    [True, True, False, True]
    >>> is_local_url("file:///tmp/r.html"), is_local_url("file:///tmp/r.html", allow_file=True)
    (False, True)
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("data", "blob", "about", "chrome-error"):
        return True
    if scheme == "file":
        return allow_file
    if scheme in ("http", "https", "ws", "wss"):
        return (parts.hostname or "") in ("127.0.0.1", "localhost", "::1")
    return False


def widget_errors(text: str) -> list[str]:
    """The lines of ``text`` (a page's visible text) that say a widget did not render.

    >>> widget_errors("GPUs 8\\nError displaying widget: model not found")
    ['Error displaying widget: model not found']
    >>> widget_errors("IntSlider(value=8, description='GPUs')")
    ["IntSlider(value=8, description='GPUs')"]
    >>> widget_errors("per GPU: 181.7 GiB")
    []
    """
    found = []
    for line in text.splitlines():
        if any(p.search(line) for p in WIDGET_ERROR_PATTERNS):
            found.append(line.strip())
    return found


# --------------------------------------------------------------------------------------------
# The verdict


@dataclass(frozen=True)
class Chart:
    """One chart found: how it is shown, its data marks and its size in CSS pixels.

    ``width``/``height`` are None where static analysis cannot know them.
    """

    kind: str  # "svg" (inline), "svg-img" (img with an SVG data URI), "canvas"
    marks: int  # data-mark shapes (canvas: 1 if any pixel is drawn, else 0)
    width: float | None = None
    height: float | None = None
    where: str = ""

    @property
    def drawn(self) -> bool:
        size_ok = self.width is None or (self.width > 0 and self.height is not None and self.height > 0)
        return self.marks > 0 and size_ok


@dataclass(frozen=True)
class ChartVerdict:
    """Whether at least ``min_charts`` charts rendered and none failed; why not, if not."""

    ok: bool
    charts: tuple[Chart, ...] = ()
    problems: tuple[str, ...] = ()
    external: tuple[str, ...] = field(default=())

    @property
    def drawn(self) -> int:
        return sum(c.drawn for c in self.charts)

    def summary(self) -> str:
        head = f"{'OK' if self.ok else 'FAIL'}: {self.drawn} chart(s) drawn of {len(self.charts)} found"
        lines = [head] + [f"  problem: {p}" for p in self.problems]
        lines += [f"  needs the network: {u}" for u in self.external[:10]]
        return "\n".join(lines)


def judge(
    charts: list[Chart],
    *,
    placeholders: list[str] = (),
    errors: list[str] = (),
    external: list[str] = (),
    offline: bool = True,
    min_charts: int = 1,
) -> ChartVerdict:
    """The one rule, for static and browser findings alike.

    OK when at least ``min_charts`` charts are drawn (data marks, non-zero size), every chart
    found is drawn, no Altair/Vega placeholder is left empty, no chart error text shows, and
    (``offline``) the page loads nothing from the network.
    """
    problems = []
    for c in charts:
        if not c.drawn:
            size = "" if c.width is None else f", {c.width:g}x{c.height:g} px"
            problems.append(f"{c.kind} chart{' ' + c.where if c.where else ''} is blank: {c.marks} data marks{size}")
    for p in placeholders:
        problems.append(
            f"chart placeholder {p} is empty: nothing was drawn (its JavaScript did not run or could not load)"
        )
    problems += [f"chart error shown: {e}" for e in errors]
    if offline and external:
        problems.append(f"the page loads {len(external)} resource(s) from the network, e.g. {external[0]}")
    drawn = sum(c.drawn for c in charts)
    if drawn < min_charts:
        problems.append(f"{drawn} chart(s) drawn, at least {min_charts} expected")
    return ChartVerdict(ok=not problems, charts=tuple(charts), problems=tuple(problems), external=tuple(external))


# --------------------------------------------------------------------------------------------
# Static analysis of HTML


def decode_data_url(url: str) -> str | None:
    """The text of a ``data:image/svg+xml`` URL (percent-encoded or base64), else None.

    >>> decode_data_url("data:image/svg+xml,%3Csvg%3E%3C%2Fsvg%3E")
    '<svg></svg>'
    >>> decode_data_url("data:image/svg+xml;base64,PHN2Zy8+")
    '<svg/>'
    """
    if not url.startswith("data:image/svg+xml"):
        return None
    head, _, body = url.partition(",")
    if ";base64" in head:
        return base64.b64decode(body).decode("utf-8", "replace")
    return unquote(body)


def _nonzero(value: str | None) -> bool:
    try:
        return value is not None and float(re.sub(r"[a-z%]+$", "", value.strip())) != 0
    except ValueError:
        return bool(value)


def _shape_has_geometry(tag: str, attrs: dict[str, str | None]) -> bool:
    if tag == "path":
        return bool((attrs.get("d") or "").strip())
    if tag == "rect":
        return _nonzero(attrs.get("width")) and _nonzero(attrs.get("height"))
    if tag in ("circle",):
        return _nonzero(attrs.get("r"))
    if tag == "ellipse":
        return _nonzero(attrs.get("rx")) and _nonzero(attrs.get("ry"))
    if tag in ("polyline", "polygon"):
        return bool((attrs.get("points") or "").strip())
    return True  # line, text (checked for content below), image


class _Scanner(HTMLParser):
    """Finds Vega SVGs (inline and in img data URIs), Altair placeholders and remote loads."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.charts: list[Chart] = []
        self.placeholders: list[str] = []
        self.external: list[str] = []
        self.errors: list[str] = []
        self._svg_depth = 0  # nesting of <svg> elements
        self._svg_is_vega = False
        self._svg_marks = 0
        self._stack: list[tuple[str, bool]] = []  # (tag, inside a role-mark group) within the svg
        self._pending_text_mark = False
        self._placeholder: list[tuple[str, int, bool]] = []  # (name, depth, has drawing)
        self._depth = 0
        self._in_script = False
        self._in_style = False
        self._error_div = 0

    # The HTML void elements never get an end tag.
    _VOID = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    )

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = dict(attrs_list)
        self._open(tag, attrs)
        if tag in self._VOID and not self._svg_depth:
            self._close(tag)

    def handle_startendtag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        self._open(tag, dict(attrs_list))
        self._close(tag)

    def _open(self, tag: str, attrs: dict[str, str | None]) -> None:
        classes = (attrs.get("class") or "").split()
        self._depth += 1
        if tag == "svg":
            if self._svg_depth == 0:
                self._svg_is_vega = "marks" in classes
                self._svg_marks = 0
                self._stack = []
                if self._placeholder:  # an SVG inside an Altair placeholder: it was drawn
                    name, depth, _ = self._placeholder[-1]
                    self._placeholder[-1] = (name, depth, True)
            self._svg_depth += 1
        if self._svg_depth:
            in_mark = bool(self._stack and self._stack[-1][1]) or "role-mark" in classes
            if "role-mark" in classes:
                self._svg_is_vega = True
            if in_mark and tag in SHAPE_TAGS and _shape_has_geometry(tag, attrs):
                if tag == "text":
                    self._pending_text_mark = True
                else:
                    self._svg_marks += 1
            self._stack.append((tag, in_mark))
            return
        if tag == "canvas" and self._placeholder:
            name, depth, _ = self._placeholder[-1]
            self._placeholder[-1] = (name, depth, True)
        if tag == "div":
            ident = attrs.get("id") or ""
            if ident.startswith("altair-viz-") or "vega-embed" in classes:
                self._placeholder.append((f"#{ident}" if ident else ".vega-embed", self._depth, False))
            if "error" in classes:
                self._error_div = self._depth
        if tag == "img":
            src = attrs.get("src") or ""
            svg = decode_data_url(src)
            if svg is not None:
                inner = _scan(svg)
                for c in inner.charts:
                    self.charts.append(Chart("svg-img", c.marks, None, None, c.where))
            elif src and not is_local_url(src, allow_file=True) and urlsplit(src).scheme in ("http", "https", ""):
                if src.startswith(("http:", "https:", "//")):
                    self.external.append(src)
        if tag == "script":
            self._in_script = True
            src = attrs.get("src") or ""
            if src.startswith(("http:", "https:", "//")):
                self.external.append(src)
        if tag == "style":
            self._in_style = True
        if tag == "link" and (attrs.get("href") or "").startswith(("http:", "https:", "//")):
            rel = (attrs.get("rel") or "").lower()
            if any(r in rel for r in ("stylesheet", "preload", "modulepreload", "icon", "import")):
                self.external.append(attrs["href"])
        if tag == "iframe" and (attrs.get("src") or "").startswith(("http:", "https:", "//")):
            self.external.append(attrs["src"])

    def handle_endtag(self, tag: str) -> None:
        self._close(tag)

    def _close(self, tag: str) -> None:
        self._depth -= 1
        if self._svg_depth:
            if self._stack:
                self._stack.pop()
            if tag == "svg":
                self._svg_depth -= 1
                if self._svg_depth == 0 and self._svg_is_vega:
                    self.charts.append(Chart("svg", self._svg_marks, None, None, f"#{len(self.charts) + 1}"))
            return
        if tag == "script":
            self._in_script = False
        if tag == "style":
            self._in_style = False
        if self._error_div and self._depth < self._error_div:
            self._error_div = 0
        while self._placeholder and self._depth < self._placeholder[-1][1]:
            name, _depth, drawn = self._placeholder.pop()
            if not drawn:
                self.placeholders.append(name)

    def handle_data(self, data: str) -> None:
        if self._pending_text_mark and data.strip():
            self._svg_marks += 1
        self._pending_text_mark = False
        if self._in_script or self._in_style:
            for m in _URL_IN_TEXT.finditer(data):
                before = data[max(0, m.start() - 40) : m.start()]
                if _SCHEMA_KEY.search(before):
                    continue  # a JSON schema id inside a spec, never fetched
                if self._in_style and m.group("q") != "(":
                    continue
                self.external.append(m.group("url"))
        elif self._error_div and data.strip():
            self.errors.append(data.strip())

    def close(self) -> None:
        super().close()
        while self._placeholder:
            name, _depth, drawn = self._placeholder.pop()
            if not drawn:
                self.placeholders.append(name)


def _scan(html: str) -> _Scanner:
    scanner = _Scanner()
    scanner.feed(html)
    scanner.close()
    return scanner


def check_chart_html(html: str, *, offline: bool = True, min_charts: int = 1) -> ChartVerdict:
    """Static verdict on an HTML page or fragment: would its charts show with networking off?

    Reads the HTML only: inline Vega SVGs and SVG data-URI images count their data marks; an
    Altair placeholder with no SVG or canvas in it is a chart that JavaScript was meant to draw,
    and without a browser run (or, offline, with its scripts on a CDN) it is not drawn.
    """
    s = _scan(html)
    return judge(
        s.charts,
        placeholders=s.placeholders,
        errors=s.errors,
        external=_dedupe(s.external),
        offline=offline,
        min_charts=min_charts,
    )


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --------------------------------------------------------------------------------------------
# In a browser


#: JavaScript for ``page.evaluate(CHART_PROBE_JS, scope_selector)``: what charts the rendered
#: page shows inside ``scope_selector`` (the whole document when null), measured by the browser.
CHART_PROBE_JS = r"""
(scopeSelector) => {
  const scopes = scopeSelector ? [...document.querySelectorAll(scopeSelector)] : [document.documentElement];
  const inScope = (el) => scopes.some((s) => s.contains(el));
  const size = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  const shown = (el) => {
    const st = getComputedStyle(el);
    return st.display !== 'none' && st.visibility !== 'hidden' && Number(st.opacity) !== 0;
  };
  const out = {charts: [], placeholders: [], errors: [], sources: []};
  for (const svg of document.querySelectorAll('svg')) {
    if (!inScope(svg) || svg.parentElement.closest('svg')) continue;
    const markShapes = svg.querySelectorAll(
      '[class~="role-mark"] path, [class~="role-mark"] rect, [class~="role-mark"] circle, ' +
      '[class~="role-mark"] ellipse, [class~="role-mark"] line, [class~="role-mark"] polyline, ' +
      '[class~="role-mark"] polygon, [class~="role-mark"] text, [class~="role-mark"] image');
    const isVega = svg.classList.contains('marks') || svg.querySelector('[class~="role-mark"]') !== null;
    if (!isVega) continue;
    let visible = 0;
    for (const s of markShapes) {
      const [w, h] = size(s);
      if ((w > 0 || h > 0) && shown(s)) visible += 1;
    }
    const [w, h] = size(svg);
    out.charts.push({kind: 'svg', marks: visible, width: w, height: h, shown: shown(svg)});
  }
  for (const img of document.querySelectorAll('img')) {
    if (!inScope(img)) continue;
    const src = img.getAttribute('src') || '';
    if (!src.startsWith('data:image/svg+xml')) continue;
    const [w, h] = size(img);
    out.charts.push({kind: 'svg-img', width: w, height: h, shown: shown(img),
                     decoded: img.complete && img.naturalWidth > 0, src: src});
  }
  for (const c of document.querySelectorAll('canvas')) {
    if (!inScope(c) || !c.closest('.vega-embed, [id^="altair-viz-"]')) continue;
    const [w, h] = size(c);
    let drawn = false;
    try {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (let i = 3; i < px.length; i += 4) { if (px[i] !== 0) { drawn = true; break; } }
    } catch (e) { drawn = null; }
    out.charts.push({kind: 'canvas', marks: drawn === false ? 0 : 1, width: w, height: h, shown: shown(c)});
  }
  for (const p of document.querySelectorAll('.vega-embed, div[id^="altair-viz-"]')) {
    if (!inScope(p)) continue;
    if (!p.querySelector('svg, canvas')) out.placeholders.push(p.id ? '#' + p.id : '.vega-embed');
    for (const e of p.querySelectorAll('.error')) out.errors.push(e.textContent.trim());
  }
  return out;
}
"""


def judge_probe(probe: dict[str, Any], *, min_charts: int = 1, external: list[str] = ()) -> ChartVerdict:
    """Judge what :data:`CHART_PROBE_JS` returned (browser-measured sizes, decoded images).

    ``external`` lists the non-local requests the page attempted (from the browser's request
    log); any makes the verdict fail, as a chart that needs the network is not an offline chart.
    """
    charts = []
    for i, c in enumerate(probe.get("charts", []), 1):
        w, h = float(c.get("width") or 0), float(c.get("height") or 0)
        if not c.get("shown", True):
            w = h = 0.0
        if c["kind"] == "svg-img":
            svg = decode_data_url(c.get("src") or "") or ""
            inner = _scan(svg).charts
            marks = sum(x.marks for x in inner) if c.get("decoded") else 0
            charts.append(Chart("svg-img", marks, w, h, f"#{i}" + ("" if c.get("decoded") else " (image not decoded)")))
        else:
            charts.append(Chart(c["kind"], int(c.get("marks") or 0), w, h, f"#{i}"))
    return judge(
        charts,
        placeholders=list(probe.get("placeholders", [])),
        errors=list(probe.get("errors", [])),
        external=list(external),
        offline=True,
        min_charts=min_charts,
    )


def check_page_charts(
    page: Any, scope_selector: str | None = None, *, min_charts: int = 1, external: list[str] = ()
) -> ChartVerdict:
    """Verdict on the charts a live Playwright ``page`` shows (inside ``scope_selector``)."""
    return judge_probe(page.evaluate(CHART_PROBE_JS, scope_selector), min_charts=min_charts, external=external)
