"""Executed notebook → ONE self-contained HTML file: no input cells, no prompts, SVG
inline, no script, stylesheet or image loaded from the network."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path

#: Cells with this tag are in the notebook for readers of the .ipynb (navigation, how to
#: run it) and are dropped from the HTML report.
SKIP_IN_REPORT_TAG = "skip-in-report"

_TEMPLATE_NAME = "k3report.html.j2"
# The lab template, minus every script it would load: require.js, MathJax and Mermaid
# (all from a CDN) and the widget manager. Reports carry no widgets and no LaTeX. SVG outputs
# are written inline as <svg> elements (the lab template would wrap them in a base64 <img>).
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg -%}
{%- block extra_css -%}
<style type="text/css">main { max-width: 1100px; margin: 0 auto; }</style>
{%- endblock extra_css -%}
"""

_EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", re.I
)
_CSS_URL = re.compile(r"""(?:@import|url\()\s*["']?\s*(?:https?:)?//""", re.I)


def external_references(text: str) -> list[str]:
    """Every place ``text`` would load something from the network (script/link/img … src
    or href, CSS ``url()``/``@import``): empty for a self-contained report."""
    return [m.group(0) for m in _EXTERNAL.finditer(text)] + [m.group(0) for m in _CSS_URL.finditer(text)]


def _strip_css_comments(text: str) -> str:
    """Drop ``/* … */`` comments inside ``<style>`` blocks (the theme CSS cites URLs there)."""
    return re.sub(
        r"(<style\b[^>]*>)(.*?)(</style>)",
        lambda m: m.group(1) + re.sub(r"/\*.*?\*/", "", m.group(2), flags=re.S) + m.group(3),
        text,
        flags=re.S | re.I,
    )


@functools.lru_cache(maxsize=1)
def _exporter():
    """The HTML exporter, built once per process (its templates take ~0.5 s to compile)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_cell_tags = {SKIP_IN_REPORT_TAG}
    c.HTMLExporter.exclude_input = True
    c.HTMLExporter.exclude_input_prompt = True
    c.HTMLExporter.exclude_output_prompt = True
    c.HTMLExporter.embed_images = True
    exporter = HTMLExporter(config=c, template_name="lab", extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})])
    exporter.template_file = _TEMPLATE_NAME
    return exporter


def export_html(nb, out_path: str | Path, *, title: str = "") -> Path:
    """Export an executed notebook to one self-contained HTML file: no input cells, no
    prompts, cells tagged ``skip-in-report`` dropped, SVG outputs inline, no script loaded
    from anywhere. Raises RuntimeError if the result would still reference the network."""
    nb = copy.deepcopy(nb)
    if title:
        nb.metadata["title"] = title
    nb.metadata.pop("widgets", None)
    body, _ = _exporter().from_notebook_node(nb)
    body = _strip_css_comments(body)
    bad = external_references(body)
    if bad:
        raise RuntimeError(f"the report would load from the network: {bad[:3]}")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out
