"""Altair charts for the decision checklist: the cheat-sheet heatmap and the
optimization priority matrix. Functions take plain data (the DataFrames of
:mod:`k3lib.studies.checklist`) and return a chart; they never display.

>>> from k3lib.studies.checklist import cheatsheet
>>> spec = cheatsheet_heatmap(cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])).to_dict()
>>> spec["title"]
'Max context by hardware: kimi-k3@guide-000, fp8 KV (K = 1,024 tokens)'
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.errors import K3InputError

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def _need(df: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise K3InputError("data", f"missing columns {missing}", ", ".join(map(str, df.columns)))


def cheatsheet_long(df: pd.DataFrame) -> pd.DataFrame:
    """The cheat sheet melted to one row per (config, precision): ``max_context_tokens``
    (0 = will not load), ``label`` (``256K`` or empty), ``loads``."""
    from k3lib.studies.checklist import format_context

    _need(df, "config", "gpu", "gpus", "nodes")
    precisions = list(df.attrs.get("precisions") or [c for c in df.columns if c not in
                                                         ("config", "gpu", "gpus", "nodes", "tp", "pp")])
    long = df.melt(id_vars=["config", "gpu", "gpus", "nodes"], value_vars=precisions, var_name="precision",
                   value_name="max_context_tokens")
    tokens = long["max_context_tokens"].astype("Float64").fillna(0).astype(int)
    long["max_context_tokens"] = tokens
    long["loads"] = tokens > 0
    long["label"] = [format_context(t) if t else "" for t in tokens]
    long["max_context_K"] = tokens / 1024
    return long


def cheatsheet_heatmap(df: pd.DataFrame, *, title: str | None = None) -> "alt.LayerChart":
    """Heatmap: rows GPU × count, columns precision, colour and label = max context;
    grey where the model will not load."""
    import altair as alt

    long = cheatsheet_long(df)
    model, kv = df.attrs.get("model", "model"), df.attrs.get("kv_dtype", "?")
    title = title or f"Max context by hardware: {model}, {kv} KV (K = 1,024 tokens)"
    order = list(dict.fromkeys(long["config"]))
    precisions = list(dict.fromkeys(long["precision"]))
    base = alt.Chart(long).encode(
        x=alt.X("precision:N", sort=precisions, title="weight precision", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("config:N", sort=order, title="GPU × count"),
        tooltip=[alt.Tooltip("config:N", title="hardware"), alt.Tooltip("precision:N"),
                 alt.Tooltip("label:N", title="max context")],
    )
    empty = base.mark_rect(stroke="white", color="#e6e6e6")
    cells = base.transform_filter("datum.loads").mark_rect(stroke="white").encode(
        color=alt.Color("max_context_K:Q", title="max context (K tokens)",
                        scale=alt.Scale(scheme="viridis", type="log")))
    text = base.mark_text(fontSize=9).encode(
        text="label:N",
        color=alt.condition("datum.max_context_K > 300", alt.value("black"), alt.value("white")))
    return (empty + cells + text).properties(title=title, width=60 * len(precisions), height=12 * len(order))


def priority_matrix_chart(matrix: pd.DataFrame, *, per: str = "GPU", title: str | None = None) -> "alt.LayerChart":
    """Bars of memory saved per lever (``per`` = ``"GPU"`` or ``"total"``), in the guide's
    order; a range (low–high) where the figure is a claim or an upper bound, coloured by basis."""
    import altair as alt

    if per not in ("GPU", "total"):
        raise K3InputError("per", f"{per!r} is not GPU or total", "GPU, total")
    lo, hi = ("saved per GPU, low (GiB)", "saved per GPU, high (GiB)") if per == "GPU" else \
        ("saved in total, low (GiB)", "saved in total, high (GiB)")
    _need(matrix, "order", "lever", "basis", lo, hi)
    # the note travels with the bar: it names the cap where a guide claim exceeds what the lever acts on
    cols = ["order", "lever", "basis", lo, hi] + (["note"] if "note" in matrix.columns else [])
    data = matrix[cols].rename(columns={lo: "low_GiB", hi: "high_GiB"})
    data["label"] = [f"{a:,.1f}" if a == b else f"{a:,.1f}–{b:,.1f}" for a, b in zip(data.low_GiB, data.high_GiB)]
    levers = list(data.sort_values("order")["lever"])
    a = matrix.attrs
    title = title or (f"What each lever saves {'per GPU' if per == 'GPU' else 'in total'} (GiB = 2^30 bytes): "
                      f"{a.get('gpus', '?')}× {a.get('gpu', '?')}, {a.get('model', '?')} {a.get('weights', '')}, "
                      f"{a.get('kv_dtype', '')} KV")
    base = alt.Chart(data).encode(y=alt.Y("lever:N", sort=levers, title="lever (the guide's order)"))
    tip = ["lever:N", "basis:N", alt.Tooltip("label:N", title="GiB")] + (["note:N"] if "note" in data.columns else [])
    color = alt.Color("basis:N", title="figure")
    bars = base.mark_bar().encode(
        x=alt.X("low_GiB:Q", title=f"memory saved {'per GPU' if per == 'GPU' else 'in total'} (GiB)"),
        color=color, tooltip=tip)
    spread = base.mark_bar(opacity=0.35).encode(x="low_GiB:Q", x2="high_GiB:Q", color=color, tooltip=tip)
    text = base.mark_text(align="left", dx=4).encode(x="high_GiB:Q", text="label:N")
    return (bars + spread + text).properties(title=title, width=420, height=28 * len(levers))
