"""Altair charts for notebooks 03 (tensor-parallel distribution) and 04 (offload).

Each function takes plain data (a DataFrame from :mod:`k3lib.studies.parallel` or
:mod:`k3lib.studies.offload`) and returns a chart; none displays anything. Test them as specs:
``chart.to_dict()`` validates against the Vega-Lite schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Imported for its guard: k3lib.views.charts keeps jsonschema from importing the slow optional
# ``rfc3987_syntax`` (see notebook.skip_slow_iri_checker), which must happen before Altair loads.
from k3lib.views import charts as _charts  # noqa: F401 — imported for its guard (above)

#: One colour per per-GPU component, fixed across charts (weights blues, KV orange, …).
COMPONENT_COLOURS = {
    "weights sharded": "#1f77b4",
    "weights replicated": "#9ecae1",
    "routed experts": "#9467bd",
    "KV cache": "#ff7f0e",
    "activation": "#2ca02c",
    "NCCL buffers": "#d62728",
    "runtime": "#7f7f7f",
}


def _alt():
    import altair as alt

    return alt


#: label and title size of the lesson charts, in pixels (readable in a notebook cell)
FONT_PX = 12
#: width of a lesson chart's plotting area, in pixels: most of a JupyterLab cell
CELL_WIDTH_PX = 600


def readable(chart, *, width: int = CELL_WIDTH_PX):
    """``chart`` sized to the cell with labels of :data:`FONT_PX` px and the legend below."""
    return (
        chart.properties(width=width)
        .configure_axis(labelFontSize=FONT_PX, titleFontSize=FONT_PX, labelLimit=360)
        .configure_legend(labelFontSize=FONT_PX, titleFontSize=FONT_PX, orient="bottom", labelLimit=0, columns=3)
        .configure_title(fontSize=FONT_PX + 1)
    )


@dataclass(frozen=True)
class Verdict:
    """Verdict lines shown as coloured text above a chart (green: FITS, red: does not), never
    only in a chart title that may clip. Its plain text (``repr``) is the lines themselves."""

    lines: tuple[str, ...]

    def _repr_html_(self) -> str:
        import html

        return "".join(
            f'<p style="color:{"#1a7f37" if ok else "#cf222e"};font-weight:600;margin:0.2em 0">{html.escape(text)}</p>'
            for text, ok in ((t, verdict_ok(t)) for t in self.lines)
        )

    def __repr__(self) -> str:
        return "\n".join(self.lines)


def verdict_ok(text: str) -> bool:
    """True for a verdict that loads: it starts with ``FITS`` (a plan's or an offload plan's
    :meth:`verdict`) or ``LOADS``; False for ``DOES NOT FIT`` and anything else."""
    return text.startswith(("FITS", "LOADS"))


def verdict_line(*texts: str) -> Verdict:
    """One coloured line per verdict text, for display above a chart.

    >>> verdict_line("FITS — 16× H200", "DOES NOT FIT — 8× H100")
    FITS — 16× H200
    DOES NOT FIT — 8× H100
    """
    return Verdict(tuple(str(t) for t in texts))


def layouts_long(table, *, unit: str = "GiB"):
    """:func:`k3lib.studies.parallel.compare_layouts`'s table in :func:`per_gpu_stacked_bar`'s
    long format: one bar per layout (its fullest GPU), stacked by component, with the
    capacity given as ``available`` = fullest GPU + headroom."""
    import pandas as pd

    comps = [c for c in COMPONENT_COLOURS if f"{c} ({unit})" in table.columns and (table[f"{c} ({unit})"] > 0).any()]
    rows = []
    for _, r in table.iterrows():
        cap = r[f"fullest GPU ({unit})"] + r[f"headroom ({unit})"]
        rows += [
            {"GPU": r["layout"], "component": c, "order": i, unit: r[f"{c} ({unit})"], "available": cap}
            for i, c in enumerate(comps)
        ]
    return pd.DataFrame(rows)


def per_gpu_stacked_bar(df, *, unit: str = "GiB", title: str = "", width: int = 420):
    """One horizontal bar per GPU (or pipeline stage), stacked by component, with a tick
    at the GPU's capacity. ``df`` is :func:`k3lib.studies.parallel.per_gpu_long`'s format:
    ``GPU``, ``component``, ``order``, ``{unit}``, ``available``."""
    alt = _alt()
    comps = [c for c in COMPONENT_COLOURS if c in set(df["component"])]
    colour = alt.Color(
        "component:N",
        title="component",
        scale=alt.Scale(domain=comps, range=[COMPONENT_COLOURS[c] for c in comps]),
        sort=comps,
    )
    bars = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("GPU:N", title=None, sort=None),
            x=alt.X(f"sum({unit}):Q", title=f"memory per GPU ({unit})"),
            color=colour,
            order=alt.Order("order:Q"),
            tooltip=["GPU:N", "component:N", alt.Tooltip(f"{unit}:Q", format=",.2f")],
        )
    )
    # the capacity: a black tick across each bar at the GPU's usable memory
    cap = (
        alt.Chart(df)
        .mark_tick(color="black", thickness=3, size=26)
        .encode(
            x="max(available):Q",
            y=alt.Y("GPU:N", sort=None),
            tooltip=[alt.Tooltip("max(available):Q", title=f"usable per GPU ({unit})", format=",.1f")],
        )
    )
    return (bars + cap).properties(title=title, width=width)


def kv_vs_tp_chart(df, *, unit: str = "GiB", title: str = "KV cache per GPU against TP"):
    """Lines of KV per GPU against TP for each model, dashed: the guide's ÷TP rule.
    ``df`` is :func:`k3lib.studies.parallel.kv_per_gpu_vs_tp`'s format."""
    alt = _alt()
    actual = f"KV per GPU ({unit})"
    rule = f"guide rule: total ÷ TP ({unit})"
    long = df.melt(id_vars=["model", "TP"], value_vars=[actual, rule], var_name="how", value_name=unit)
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "TP:Q",
                scale=alt.Scale(type="log", base=2),
                title="tensor-parallel size (TP)",
                axis=alt.Axis(values=sorted(set(long["TP"])), format="d"),
            ),
            y=alt.Y(f"{unit}:Q", title=f"KV cache per GPU ({unit})"),
            color=alt.Color("model:N", legend=alt.Legend(labelLimit=0)),
            # the legend draws each line style as a dashed or solid stroke (not the points' black dot)
            strokeDash=alt.StrokeDash(
                "how:N",
                title=None,
                legend=alt.Legend(
                    symbolType="stroke",
                    symbolStrokeColor="#555",
                    symbolFillColor="transparent",
                    symbolStrokeWidth=2,
                    symbolSize=400,
                    labelLimit=0,
                ),
            ),
            tooltip=["model:N", "TP:Q", "how:N", alt.Tooltip(f"{unit}:Q", format=",.2f")],
        )
        .properties(title=title, width=420)
    )


def tokens_per_s_curve(
    df,
    *,
    x: str = "VRAM needed (GB)",
    y: str = "decode tokens/s",
    colour: str = "GPU",
    title: str = "Decode speed as experts move to the GPU",
    marks: Sequence[float] = (),
):
    """tokens/s against VRAM (one line per ``colour`` value); ``marks``: vertical rules
    at given VRAM sizes (e.g. the cards' capacities). ``df`` is
    :func:`k3lib.studies.offload.offload_curve`'s format."""
    alt = _alt()
    line = (
        alt.Chart(df)
        .mark_line()
        .encode(
            x=alt.X(f"{x}:Q", title=x),
            y=alt.Y(f"{y}:Q", title=y, scale=alt.Scale(type="log")),
            color=alt.Color(f"{colour}:N"),
            tooltip=[
                f"{colour}:N",
                "expert layers on GPU:Q",
                alt.Tooltip(f"{x}:Q", format=",.0f"),
                alt.Tooltip(f"{y}:Q", format=",.2f"),
            ],
        )
    )
    chart = line
    if marks:
        import pandas as pd

        rules = alt.Chart(pd.DataFrame({x: list(marks)})).mark_rule(color="gray", strokeDash=[4, 3]).encode(x=f"{x}:Q")
        chart = line + rules
    return chart.properties(title=title, width=460)


def device_comparison(
    df,
    *,
    model_col: str = "model tokens/s",
    guide_col: str = "guide tokens/s",
    device_col: str = "device",
    title: str = "Offload decode speed: guide 004 vs the model",
):
    """Dot plot, one row per device: the guide's figure and the model's. ``df`` is
    :func:`k3lib.studies.offload.guide004_device_table`'s format."""
    alt = _alt()
    long = df.melt(id_vars=[device_col], value_vars=[guide_col, model_col], var_name="source", value_name="tokens/s")
    order = list(df.sort_values(model_col)[device_col])
    return (
        alt.Chart(long)
        .mark_point(filled=True, size=70)
        .encode(
            y=alt.Y(f"{device_col}:N", sort=order, title=None),
            x=alt.X("tokens/s:Q", title="decode tokens/s"),
            color=alt.Color("source:N", title=None),
            shape=alt.Shape("source:N", title=None),
            tooltip=[f"{device_col}:N", "source:N", alt.Tooltip("tokens/s:Q", format=",.2f")],
        )
        .properties(title=title, width=380)
    )


def time_per_token_bar(df, *, title: str = "", width: int = 420):
    """One bar, stacked by device: milliseconds each device spends reading per decode
    step (the sum is the time per token). ``df`` has ``where``, ``ms per token`` and
    ``GB read per token`` (see :func:`k3lib.views.explorers.offload_figure`)."""
    alt = _alt()
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("sum(ms per token):Q", title="milliseconds per token (bandwidth roofline)"),
            color=alt.Color("where:N", title=None, sort=None),
            order=alt.Order("where:N", sort="descending"),
            tooltip=[
                "where:N",
                alt.Tooltip("ms per token:Q", format=",.1f"),
                alt.Tooltip("GB read per token:Q", format=",.2f"),
            ],
        )
        .properties(title=title, width=width, height=60)
    )


#: the parts of an offload plan's memory, by where they sit (rows of
#: :func:`k3lib.serving.offload_model.summary_table`)
OFFLOAD_PARTS = {
    "GPU memory": (
        "non-expert weights on GPU",
        "experts kept on GPU",
        "KV cache",
        "activation",
        "GPU runtime overhead",
    ),
    "host RAM": ("experts in RAM", "embedding in RAM", "host needs beyond weights"),
}


def offload_memory_long(plan, *, unit: str = "GB"):
    """What sits in VRAM and what in host RAM for an offload plan, one row per part: ``where``
    (the tier, with the bandwidth each of its bytes is read at), ``part``, ``{unit}``, and the
    bytes of that tier read per token (``read per token ({unit})``)."""
    import pandas as pd

    from k3lib.serving.offload_model import summary_table

    table = summary_table(plan, unit=unit).set_index("param")[f"value ({unit})"]
    rows = []
    for (tier, parts), t in zip(OFFLOAD_PARTS.items(), plan.tiers):
        label = f"{tier}: read at {t.bandwidth_bytes_per_s / 1e9:,.0f} GB/s"
        rows += [
            {
                "where": label,
                "part": p,
                unit: float(table[p]),
                f"read per token ({unit})": t.read_bytes_per_step / (1e9 if unit == "GB" else 2**30),
            }
            for p in parts
            if p in table.index and table[p] > 0
        ]
    return pd.DataFrame(rows)


def offload_memory_bar(df, *, unit: str = "GB", width: int = 520):
    """Two stacked bars — GPU memory and host RAM — of what an offload plan keeps in each
    (``df`` from :func:`offload_memory_long`); the tooltip gives the bytes each tier reads per token."""
    alt = _alt()
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("where:N", title=None, sort=None),
            x=alt.X(f"sum({unit}):Q", title=f"resident memory ({unit})"),
            color=alt.Color("part:N", title="part", sort=None),
            tooltip=[
                "where:N",
                "part:N",
                alt.Tooltip(f"{unit}:Q", format=",.1f"),
                alt.Tooltip(f"read per token ({unit}):Q", format=",.2f"),
            ],
        )
        .properties(width=width)
    )


def ceiling_labelled(verdict: str) -> str:
    """An offload verdict whose ``decode ≈ … tokens/s`` names its basis: the bandwidth
    ceiling (bytes read ÷ bandwidth), not a measured or fitted speed.

    >>> ceiling_labelled("FITS — X: VRAM 37.0 GB; decode ≈ 2.37 tokens/s")
    'FITS — X: VRAM 37.0 GB; decode ≈ 2.37 tokens/s (bandwidth ceiling)'
    """
    import re

    return re.sub(r"(decode ≈ [\d,.]+ tokens/s)", r"\1 (bandwidth ceiling)", verdict)
