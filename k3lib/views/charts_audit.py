"""Altair charts for the guide audit (notebook 07). Each function takes plain data
(a DataFrame from :mod:`k3lib.views.guide_audit`) and returns a chart; none displays anything.

>>> from k3lib.views import guide_audit as audit
>>> spec = verdict_bars(audit.audit_table()).to_dict()
>>> spec["mark"]["type"]
'bar'
"""

from __future__ import annotations

from k3lib.guides.claims import COLUMN_VERDICTS, VERDICTS
from k3lib.views.guide_audit import VERDICT_COLORS

#: One colour per column verdict (own inputs / real K3).
COLUMN_COLORS = {"holds": "#2e7d32", "contradicted": "#c62828", "stated input": "#5c7cba", "not checkable": "#9e9e9e"}


def _alt():
    import altair as alt

    return alt


def verdict_scale():
    """One colour per verdict, in the order of :data:`k3lib.guides.claims.VERDICTS`."""
    alt = _alt()
    return alt.Scale(domain=list(VERDICTS), range=[VERDICT_COLORS[v] for v in VERDICTS])


def column_scale():
    """One colour per column verdict, in the order of :data:`k3lib.guides.claims.COLUMN_VERDICTS`."""
    alt = _alt()
    return alt.Scale(domain=list(COLUMN_VERDICTS), range=[COLUMN_COLORS[v] for v in COLUMN_VERDICTS])


def verdict_bars(table, *, width: int = 460):
    """Claims per guide, stacked by verdict, one bar for each question: against the guide's own
    inputs and for the real K3 (``table`` from :func:`k3lib.views.guide_audit.audit_table`)."""
    import pandas as pd

    alt = _alt()
    parts = []
    for col, name in (("own_verdict", "own inputs"), ("real_verdict", "real K3")):
        d = table.groupby(["guide", col]).size().reset_index(name="claims").rename(columns={col: "verdict"})
        parts.append(d.assign(question=name))
    data = pd.concat(parts, ignore_index=True)
    data["order"] = data["verdict"].map({v: i for i, v in enumerate(COLUMN_VERDICTS)})
    data["bar"] = data["guide"] + " · " + data["question"]
    return (
        alt.Chart(data, title="Verdicts per guide: own inputs and real K3")
        .mark_bar()
        .encode(
            y=alt.Y("bar:N", title=None),
            x=alt.X("claims:Q", title="claims"),
            color=alt.Color("verdict:N", scale=column_scale(), legend=alt.Legend(title="verdict")),
            order=alt.Order("order:Q"),
            tooltip=["guide", "question", "verdict", "claims"],
        )
        .properties(width=width, height=150)
    )


def guide_vs_real(use_instead, *, unit: str = "GB", width: int = 520):
    """Each guide's headline size next to K3's real one, log scale (``use_instead`` from
    :func:`k3lib.views.guide_audit.use_instead`)."""
    import pandas as pd

    alt = _alt()
    cols = {f"guide 000 ({unit})": "guide 000", f"guide 004 ({unit})": "guide 004", f"K3 real ({unit})": "K3 real"}
    long = (
        use_instead.rename(columns=cols)
        .melt(id_vars=["quantity"], value_vars=list(cols.values()), var_name="source", value_name="size")
        .dropna(subset=["size"])
    )
    long = long[pd.to_numeric(long["size"]) > 0]
    colors = alt.Scale(domain=["guide 000", "guide 004", "K3 real"], range=["#c62828", "#b7791f", "#1565c0"])
    return (
        alt.Chart(long, title=f"The guides' sizes against K3's ({unit}, log scale)")
        .mark_point(filled=True, size=90)
        .encode(
            y=alt.Y("quantity:N", title=None, sort=list(use_instead["quantity"])),
            x=alt.X("size:Q", scale=alt.Scale(type="log"), title=f"size ({unit})"),
            color=alt.Color("source:N", scale=colors, legend=alt.Legend(title=None)),
            shape=alt.Shape(
                "source:N",
                legend=alt.Legend(title=None),
                scale=alt.Scale(domain=colors.domain, range=["square", "triangle", "circle"]),
            ),
            tooltip=["quantity", "source", alt.Tooltip("size:Q", format=",.1f")],
        )
        .properties(width=width, height=22 * len(use_instead))
    )


def bits_per_weight(gguf, *, width: int = 420):
    """Guide 004's weights column as bits per weight over K3's parameters, against each tier's
    nominal width (``gguf`` from :func:`k3lib.views.guide_audit.gguf_matches`)."""
    alt = _alt()
    nominal = {"1-bit": 1, "2-bit": 2, "3-bit": 3, "4-bit": 4, "5-bit": 5, "8-bit": 8, "fp16": 16}
    data = gguf.assign(nominal=gguf["tier"].map(nominal))
    base = alt.Chart(data, title="Guide 004: bits per weight its sizes imply")
    points = base.mark_circle(size=110).encode(
        x=alt.X("nominal:Q", title="the tier's nominal bits", scale=alt.Scale(domain=[0, 19], nice=False)),
        y=alt.Y("bits per weight:Q", title="bits per weight = size × 8 / 2,779.5B"),
        color=alt.Color("kind:N", legend=alt.Legend(title="weights cell", orient="top-left")),
        tooltip=["tier", "weights (GB)", "bits per weight", "K3 file or type"],
    )
    labels = base.mark_text(dx=9, align="left").encode(x="nominal:Q", y="bits per weight:Q", text="tier:N")
    diagonal = alt.Chart(data).mark_line(strokeDash=[4, 4], color="#9e9e9e").encode(x="nominal:Q", y="nominal:Q")
    return (diagonal + points + labels).properties(width=width, height=300)
