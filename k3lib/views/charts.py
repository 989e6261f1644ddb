"""Altair charts for the notebooks: functions that take plain data and return a chart.

They never display anything; a notebook shows the returned chart, a test checks
``chart.to_dict()`` (which validates against the Vega-Lite schema). Titles and axes
name their unit, taken from the data's column names (``..._GiB`` or ``..._GB``).

Render them offline with :func:`k3lib.views.notebook.setup` (the ``svg`` renderer, through
vl-convert: no JavaScript, no CDN).

>>> from k3lib.views import tables
>>> spec = kv_vs_context_chart(tables.kv_context_long()).to_dict()
>>> spec["title"]
'KV cache vs context, batch 1 (GiB = 2^30 bytes)'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.errors import K3InputError
from k3lib.views.notebook import skip_slow_iri_checker

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from k3lib.core.plan import Plan


# Done when the notebooks import k3lib.views.charts, before k3lib.views.notebook.setup() imports Altair.
skip_slow_iri_checker()  # see k3lib.views.notebook.skip_slow_iri_checker

COMPONENT_ORDER = ["weights", "KV cache", "activation", "overhead"]
COMPONENT_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#9d9d9d"]
UNIT_NOTE = {"GiB": "GiB = 2^30 bytes", "GB": "GB = 10^9 bytes"}


def _unit_of(df: pd.DataFrame, prefix: str) -> tuple[str, str]:
    """(column, unit) for the first column named ``<prefix>_GiB`` or ``<prefix>_GB``."""
    for unit in ("GiB", "GB"):
        if f"{prefix}_{unit}" in df.columns:
            return f"{prefix}_{unit}", unit
    raise K3InputError("data", f"no column {prefix}_GiB or {prefix}_GB", ", ".join(map(str, df.columns)))


def _need(df: pd.DataFrame, *columns: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise K3InputError("data", f"missing columns {missing}", ", ".join(map(str, df.columns)))


def budget_stacked_bar(
    data: Plan | Sequence[Plan] | Mapping[str, Plan] | pd.DataFrame,
    *,
    per: str = "total",
    unit: str = "GiB",
    title: str | None = None,
) -> alt.LayerChart | alt.FacetChart:
    """One horizontal bar per configuration, stacked by component (weights, KV cache,
    activation, overhead), with a black tick at the memory available.

    ``data``: a plan, a list of plans, a ``{label: plan}`` mapping, or the long frame of
    :func:`k3lib.views.tables.budget_frame`. ``per="gpu"`` shows one GPU's share.
    """
    import altair as alt

    from k3lib.views.tables import budget_frame

    df = data if isinstance(data, pd.DataFrame) else budget_frame(data, per=per, unit=unit)
    _need(df, "config", "component")
    value, unit = _unit_of(df, "value")
    where = "per GPU" if per == "gpu" else "over all GPUs"
    base = alt.Chart(df)
    bars = base.mark_bar().encode(
        y=alt.Y("config:N", title=None, sort=None, axis=alt.Axis(labelLimit=360)),
        x=alt.X(f"sum({value}):Q", title=f"memory {where} ({UNIT_NOTE[unit]})"),
        color=alt.Color(
            "component:N",
            scale=alt.Scale(domain=COMPONENT_ORDER, range=COMPONENT_COLORS),
            legend=alt.Legend(title="component", orient="bottom"),
        ),
        order=alt.Order("order:Q") if "order" in df.columns else alt.Undefined,
        tooltip=["config:N", "component:N", alt.Tooltip(f"{value}:Q", title=f"{unit}", format=",.2f")],
    )
    layers = [bars]
    available = f"available_{unit}"
    if available in df.columns:
        caps = df.drop_duplicates("config")[["config", available]]
        layers.append(
            alt.Chart(caps)
            .mark_tick(color="black", thickness=3, size=24)
            .encode(
                y=alt.Y("config:N", sort=None),
                x=alt.X(f"{available}:Q"),
                tooltip=["config:N", alt.Tooltip(f"{available}:Q", title=f"available ({unit})", format=",.2f")],
            )
        )
    return alt.layer(*layers).properties(
        title=title or f"Memory budget {where} ({unit}); black tick = memory available", width=520
    )


def precision_ladder_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart | alt.FacetChart:
    """Weight bytes per precision (bars), grouped by model, labelled with the saving vs BF16.

    ``df``: :func:`k3lib.views.tables.precision_ladder_table` or ``precision_ladder_comparison``.
    """
    import altair as alt

    _need(df, "precision", "saved_vs_bf16_pct")
    value, unit = _unit_of(df, "weights")
    data = df.copy()
    if "model" not in data.columns:
        data["model"] = ""
    data["label"] = ["" if s == 0 else f"−{s:g} %" for s in data["saved_vs_bf16_pct"]]
    order = list(dict.fromkeys(data["precision"]))
    x = alt.X("precision:N", sort=order, title="weight precision", axis=alt.Axis(labelAngle=0))
    base = alt.Chart(data).encode(x=x, xOffset=alt.XOffset("model:N"))
    bars = base.mark_bar().encode(
        y=alt.Y(f"{value}:Q", title=f"weights ({UNIT_NOTE[unit]})"),
        color=alt.Color("model:N", legend=alt.Legend(title="model", orient="bottom")),
        tooltip=[
            "model:N",
            "precision:N",
            alt.Tooltip(f"{value}:Q", format=",.1f"),
            "saved_vs_bf16_pct:Q",
            "saved_vs_previous_pct:Q",
        ],
    )
    text = base.mark_text(dy=-6, fontSize=10).encode(y=alt.Y(f"{value}:Q"), text="label:N")
    return alt.layer(bars, text).properties(
        title=title or f"Weights by precision ({unit}); labels: saved vs BF16", width=420
    )


def kv_vs_context_chart(df: pd.DataFrame, *, log_y: bool = False, title: str | None = None) -> alt.Chart:
    """KV cache against context length, one line per KV dtype (and dash per model).

    ``df``: :func:`k3lib.views.tables.kv_context_long`. The x axis is log base 2 (each step
    doubles the context); labels read 8K … 1M (K = 1,024 tokens).
    """
    import altair as alt

    _need(df, "context_tokens", "kv_dtype")
    value, unit = _unit_of(df, "kv_cache")
    data = df.copy()
    if "model" not in data.columns:
        data["model"] = ""
    label = "datum.value >= 1048576 ? (datum.value / 1048576) + 'M' : (datum.value / 1024) + 'K'"
    return (
        alt.Chart(data)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X(
                "context_tokens:Q",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(labelExpr=label, values=sorted(set(data["context_tokens"]))),
                title="context T (tokens; K = 1,024)",
            ),
            y=alt.Y(
                f"{value}:Q",
                scale=alt.Scale(type="log") if log_y else alt.Undefined,
                title=f"KV cache ({UNIT_NOTE[unit]})",
            ),
            color=alt.Color("kv_dtype:N", title="KV dtype", sort=["BF16", "FP8", "INT4"]),
            strokeDash=alt.StrokeDash(
                "model:N", title="model", legend=alt.Legend(symbolType="stroke", symbolStrokeColor="#555")
            ),
            tooltip=["model:N", "kv_dtype:N", "context:N", alt.Tooltip(f"{value}:Q", format=",.2f")],
        )
        .properties(title=title or f"KV cache vs context, batch 1 ({UNIT_NOTE[unit]})", width=460)
    )


def kv_per_token_comparison_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart | alt.FacetChart:
    """KV bytes per token across models (bars, KiB = 1,024 bytes), coloured by attention design.

    ``df``: :func:`k3lib.views.tables.kv_per_token_table`.
    """
    import altair as alt

    _need(df, "model", "attention", "kv_KiB_per_token")
    base = alt.Chart(df).encode(
        y=alt.Y("model:N", sort="-x", title=None),
        x=alt.X("kv_KiB_per_token:Q", title="KV cache per token (KiB = 1,024 bytes)"),
    )
    bars = base.mark_bar().encode(
        color=alt.Color(
            "attention:N", legend=alt.Legend(title="attention", orient="bottom", columns=2, labelLimit=300)
        ),
        tooltip=[
            "model:N",
            "attention:N",
            "formula:N" if "formula" in df.columns else "attention:N",
            alt.Tooltip("kv_KiB_per_token:Q", format=",.2f"),
        ],
    )
    text = base.mark_text(align="left", dx=3, fontSize=10).encode(text=alt.Text("kv_KiB_per_token:Q", format=",.1f"))
    return alt.layer(bars, text).properties(title=title or "KV cache per token (KiB), growing layers only", width=420)


def reference_heatmap(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart | alt.FacetChart:
    """The reference table (weights × context → total) as a labelled heatmap.

    ``df``: :func:`k3lib.views.tables.reference_table` (columns ``total_<unit>_<context>``).
    """
    import altair as alt

    _need(df, "weights", "kv_dtype")
    cols = [c for c in df.columns if str(c).startswith("total_")]
    if not cols:
        raise K3InputError("data", "no total_<unit>_<context> columns", ", ".join(map(str, df.columns)))
    unit = cols[0].split("_")[1]
    data = df.assign(row=df["weights"] + " + " + df["kv_dtype"] + " KV").melt(
        id_vars=["row"], value_vars=cols, var_name="context", value_name="total"
    )
    data["context"] = data["context"].str.split("_").str[-1]
    base = alt.Chart(data).encode(
        x=alt.X("context:N", sort=None, title="context (K = 1,024 tokens)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("row:N", sort=None, title=None),
    )
    rect = base.mark_rect().encode(color=alt.Color("total:Q", title=unit, scale=alt.Scale(scheme="blues")))
    text = base.mark_text(fontSize=11).encode(text=alt.Text("total:Q", format=",.0f"), color=alt.value("black"))
    return alt.layer(rect, text).properties(
        title=title or f"Total memory by precision × context ({UNIT_NOTE[unit]})", width=380
    )
