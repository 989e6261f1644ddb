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
    precisions = list(
        df.attrs.get("precisions") or [c for c in df.columns if c not in ("config", "gpu", "gpus", "nodes", "tp", "pp")]
    )
    long = df.melt(
        id_vars=["config", "gpu", "gpus", "nodes"],
        value_vars=precisions,
        var_name="precision",
        value_name="max_context_tokens",
    )
    tokens = long["max_context_tokens"].astype("Float64").fillna(0).astype(int)
    long["max_context_tokens"] = tokens
    long["loads"] = tokens > 0
    long["label"] = [format_context(t) if t else "" for t in tokens]
    long["max_context_K"] = tokens / 1024
    return long


def cheatsheet_heatmap(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart:
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
        tooltip=[
            alt.Tooltip("config:N", title="hardware"),
            alt.Tooltip("precision:N"),
            alt.Tooltip("label:N", title="max context"),
        ],
    )
    empty = base.mark_rect(stroke="white", color="#e6e6e6")
    cells = (
        base.transform_filter("datum.loads")
        .mark_rect(stroke="white")
        .encode(
            color=alt.Color(
                "max_context_K:Q", title="max context (K tokens)", scale=alt.Scale(scheme="viridis", type="log")
            )
        )
    )
    text = base.mark_text(fontSize=11).encode(
        text="label:N", color=alt.condition("datum.max_context_K > 300", alt.value("black"), alt.value("white"))
    )
    return (empty + cells + text).properties(title=title, width=max(320, 80 * len(precisions)), height=18 * len(order))


def priority_matrix_chart(matrix: pd.DataFrame, *, per: str = "GPU", title: str | None = None) -> alt.LayerChart:
    """Bars of memory saved per lever (``per`` = ``"GPU"`` or ``"total"``), in the guide's
    order; a range (low–high) where the figure is a claim or an upper bound, coloured by basis."""
    import altair as alt

    if per not in ("GPU", "total"):
        raise K3InputError("per", f"{per!r} is not GPU or total", "GPU, total")
    lo, hi = (
        ("saved per GPU, low (GiB)", "saved per GPU, high (GiB)")
        if per == "GPU"
        else ("saved in total, low (GiB)", "saved in total, high (GiB)")
    )
    _need(matrix, "order", "lever", "basis", lo, hi)
    # the note travels with the bar: it names the cap where a guide claim exceeds what the lever acts on
    cols = ["order", "lever", "basis", lo, hi] + (["note"] if "note" in matrix.columns else [])
    data = matrix[cols].rename(columns={lo: "low_GiB", hi: "high_GiB"})
    data["label"] = [f"{a:,.1f}" if a == b else f"{a:,.1f}–{b:,.1f}" for a, b in zip(data.low_GiB, data.high_GiB)]
    levers = list(data.sort_values("order")["lever"])
    a = matrix.attrs
    title = title or (
        f"What each lever saves {'per GPU' if per == 'GPU' else 'in total'} (GiB = 2^30 bytes): "
        f"{a.get('gpus', '?')}× {a.get('gpu', '?')}, {a.get('model', '?')} {a.get('weights', '')}, "
        f"{a.get('kv_dtype', '')} KV"
    )
    base = alt.Chart(data).encode(y=alt.Y("lever:N", sort=levers, title="lever (the guide's order)"))
    tip = ["lever:N", "basis:N", alt.Tooltip("label:N", title="GiB")] + (["note:N"] if "note" in data.columns else [])
    color = alt.Color("basis:N", title="figure")
    bars = base.mark_bar().encode(
        x=alt.X("low_GiB:Q", title=f"memory saved {'per GPU' if per == 'GPU' else 'in total'} (GiB)"),
        color=color,
        tooltip=tip,
    )
    spread = base.mark_bar(opacity=0.35).encode(x="low_GiB:Q", x2="high_GiB:Q", color=color, tooltip=tip)
    text = base.mark_text(align="left", dx=4).encode(x="high_GiB:Q", text="label:N")
    return (bars + spread + text).properties(title=title, width=420, height=28 * len(levers))


#: outcome of a decision on the checklist's path, and its colour
OUTCOME_COLOURS = {"go on": "#1a7f37", "stop here": "#cf222e", "for information": "#8c959f"}


def decision_path(checklist, *, choice=None) -> pd.DataFrame:
    """The checklist as a decision path: one row per step with its question, its answer
    (the step's figure) and its outcome — ``go on``, ``stop here`` (the inventory cannot do
    it: add GPUs or lower the precision) or ``for information``. ``checklist`` is a
    :class:`k3lib.studies.checklist.Checklist`; ``choice`` a
    :func:`k3lib.views.explorers.launch_choice` result, the last row (what to launch) when given.

    Outcomes: step 2 stops when no precision loads; step 3 when the chosen KV dtype's longest
    context is below the target; step 5 when the last trial does not load the target; the
    rest inform.
    """
    c = checklist
    target = c.context_tokens
    limit = c.context.limit(c.kv_dtype).max_context_tokens if c.precision.weights else 0
    seq = c.test_sequence
    rows = [
        (1, "How much memory is there, after overhead?", c.budget.figure, "go on"),
        (2, "Which precision loads?", c.precision.figure, "go on" if c.precision.weights else "stop here"),
        (3, "How long a context fits?", c.context.figure, "go on" if limit >= target else "stop here"),
    ]
    if c.optimizations is not None:
        rows.append((4, "What do the optimizations save?", c.optimizations.figure, "for information"))
    rows.append(
        (
            5,
            "Does half, then all, of the target load?",
            seq.figure,
            "go on" if seq.final_max_model_len >= target else "stop here",
        )
    )
    if c.throughput is not None:
        rows.append((6, "How fast will it decode?", c.throughput.figure, "for information"))
    rows.append((7, "How many GPUs to buy for production?", c.add_one.figure, "for information"))
    frame = pd.DataFrame(rows, columns=["step", "question", "answer", "outcome"])
    if choice is not None:
        cfg = choice.configuration
        answer = {
            "fits": f"on your GPUs: {cfg.label}" if cfg else "",
            "cheapest": f"nothing on your GPUs; the cheapest that loads: {cfg.label}" if cfg else "",
        }.get(choice.status, "nothing loads on this GPU type")
        frame.loc[len(frame)] = [8, "So: what to launch?", answer, "go on" if choice.status == "fits" else "stop here"]
    return frame


def decision_path_chart(path: pd.DataFrame, *, width: int = 600) -> alt.LayerChart:
    """The decision path drawn top to bottom: a dot per step coloured by its outcome, joined
    by a line, with the question and the answer beside it (``path`` from :func:`decision_path`)."""
    import altair as alt

    _need(path, "step", "question", "answer", "outcome")
    data = path.assign(row=range(len(path)), label=[f"{s}. {q}" for s, q in zip(path["step"], path["question"])])
    y = alt.Y("row:O", axis=None)
    base = alt.Chart(data).encode(y=y)
    line = base.mark_rule(color="#d0d7de", strokeWidth=3).encode(x=alt.value(12), y2=alt.Y2Datum(0))
    dots = base.mark_circle(size=260, opacity=1).encode(
        x=alt.value(12),
        color=alt.Color(
            "outcome:N",
            title="outcome",
            scale=alt.Scale(domain=list(OUTCOME_COLOURS), range=list(OUTCOME_COLOURS.values())),
        ),
        tooltip=["question:N", "answer:N", "outcome:N"],
    )
    question = base.mark_text(align="left", dx=0, dy=-8, fontSize=12, fontWeight="bold").encode(
        x=alt.value(32), text="label:N"
    )
    answer = base.mark_text(align="left", dy=8, fontSize=12, limit=width - 40).encode(x=alt.value(32), text="answer:N")
    return (
        (line + dots + question + answer)
        .properties(width=width, height=44 * len(data))
        .configure_view(strokeWidth=0)
        .configure_legend(labelFontSize=12, titleFontSize=12, orient="bottom")
    )
