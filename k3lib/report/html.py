"""HTML building blocks of the report: escaping, tables, the verdict badge, the CSS and
small text formatters. Every piece of user text goes through :func:`esc`."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from k3lib.core.units import GiB

REPORT_CSS = """
.k3-report h1 { font-size: 1.6em; margin: 0 0 .3em 0; }
.k3-verdict { display: inline-block; padding: .25em .7em; border-radius: .3em; font-weight: bold;
              color: white; font-size: 1.2em; }
.k3-fits { background: #2e7d32; } .k3-nofit { background: #c62828; } .k3-offload { background: #ef6c00; }
table.k3-table { border-collapse: collapse; margin: .5em 0 1em 0; font-size: .92em; }
table.k3-table th, table.k3-table td { border: 1px solid #ccc; padding: .25em .6em; vertical-align: top;
                                       text-align: left !important; }
table.k3-table th { background: #f0f0f0; }
p.k3-na { color: #8a6d3b; background: #fcf8e3; padding: .4em .7em; border-radius: .3em; }
pre.k3-cmd { background: #f6f8fa !important; padding: .6em !important; border: 1px solid #ddd;
             white-space: pre-wrap; font-family: monospace; }
""".strip()


def esc(value: object) -> str:
    """HTML-escape any value's text (quotes too). Dollar signs become ``&#36;`` so that a
    notebook front end running MathJax does not typeset ``$180,000 … $30,000`` as math.

    >>> esc('<b> & $5')
    '&lt;b&gt; &amp; &#36;5'
    """
    return html.escape(str(value), quote=True).replace("$", "&#36;")


def gib_text(n_bytes: float, digits: int = 1) -> str:
    """``n_bytes`` in GiB (2^30 bytes), e.g. ``415.0 GiB``."""
    return f"{n_bytes / GiB:,.{digits}f} GiB"


def usd_text(value: float | None) -> str:
    """``$180,000``, or ``—`` when unknown."""
    return "—" if value is None else f"${value:,.0f}"


def context_text(tokens: int) -> str:
    """``262,144 tokens (256K)``; K = 1,024 tokens."""
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens:,} tokens ({tokens // 1024:,}K)"
    return f"{tokens:,} tokens (≈{tokens / 1024:,.0f}K)" if tokens >= 1024 else f"{tokens:,} tokens"


def describe_plan(plan) -> str:
    """``kimi-k3@guide-000 · q4 · KV fp8 · 256K · batch 1 · 6× NVIDIA H100 SXM5 80GB``."""
    ctx = f"{plan.context_tokens // 1024}K" if plan.context_tokens % 1024 == 0 else f"{plan.context_tokens:,}"
    return (
        f"{plan.model.id} · {plan.weight_format} · KV {plan.kv_dtype} · {ctx} · batch {plan.batch} · "
        f"{plan.gpus}× {plan.gpu.name}"
    )


def html_table(
    rows: Sequence[Mapping[str, Any]],
    *,
    columns: Sequence[str] | None = None,
    raw: Iterable[str] = (),
    css_class: str = "k3-table",
) -> str:
    """A plain HTML table; every cell escaped except the columns named in ``raw``
    (which the caller has built from escaped parts)."""
    if not rows:
        return "<p><em>(nothing to show)</em></p>"
    columns = list(columns or rows[0].keys())
    raw = set(raw)
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            text = "—" if v is None else (f"{v:,.2f}" if isinstance(v, float) else str(v))
            cells.append(f"<td>{text if c in raw else esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def frame_html(df) -> str:
    """A DataFrame as an escaped HTML table (no index; a yes/no for a boolean, never True/False;
    snake-case unit suffixes as headers: ``total_GiB`` → ``total (GiB)``)."""
    import numpy as np

    df = (
        df.rename(columns=_header)
        .astype(object)
        .map(lambda x: ("yes" if x else "no") if isinstance(x, (bool, np.bool_)) else x)
    )
    return df.to_html(
        index=False, escape=True, border=0, classes="k3-table", na_rep="—", float_format=lambda v: f"{v:,.2f}"
    ).replace("$", "&#36;")


def _header(name: object) -> object:
    """``total_GiB`` → ``total (GiB)``, ``share_of_total_%`` → ``share of total (%)``; other names unchanged.

    >>> _header("per_gpu_GiB"), _header("share_of_total_%"), _header("fits")
    ('per GPU (GiB)', 'share of total (%)', 'fits')
    """
    import re

    m = re.fullmatch(r"(\w+?)_(GiB|GB|MiB|B|%)", str(name))
    if not m:
        return name
    return m[1].replace("_", " ").replace("per gpu", "per GPU") + f" ({m[2]})"


def not_available(what: str, why: str) -> str:
    """A highlighted one-line note that a section cannot be shown, and why."""
    return f'<p class="k3-na"><strong>{esc(what)}: not available.</strong> {esc(why)}</p>'


def verdict_badge(verdict: str) -> str:
    """A coloured badge for ``fits`` / ``fits with offload`` / ``does not fit`` / ``error``."""
    css = {"fits": "k3-fits", "fits with offload": "k3-offload"}.get(verdict, "k3-nofit")
    return f'<span class="k3-verdict {css}">{esc(verdict.upper())}</span>'


def notes_list(notes: Iterable[str]) -> str:
    """``<ul>`` of escaped notes, or nothing."""
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return f"<ul>{items}</ul>" if items else ""


def no_math(body: str) -> str:
    """``body`` inside a block that MathJax 2 (``tex2jax_ignore``) and 3 (``mathjax_ignore``)
    skip, so a notebook front end does not typeset ``$180,000 (6 × $30,000, …)`` as math."""
    return f'<div class="tex2jax_ignore mathjax_ignore">{body}</div>'
