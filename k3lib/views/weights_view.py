"""Lesson 01's views: bytes per parameter by storage format, which tensors of a model are stored
how, and a small explorer over both.

$W = \\sum_g P_g·b_g/8$: each parameter group $g$ (embedding, attention, routed experts, …) at
its format's bits $b_g$, block scales included (MXFP4: 32 four-bit values and one 8-bit scale in
17 bytes, $b$ = 4.25).

>>> t = format_bits_table(("bf16", "mxfp4"))
>>> t["bits per weight"].tolist(), t["GiB per billion params"].tolist()
([16.0, 4.25], [1.86, 0.49])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.memory import weight_bits_by_group, weights_bytes, weights_bytes_by_group
from k3lib.core.models import get_model, list_models
from k3lib.core.precisions import get_weight_format
from k3lib.views.table_format import _size

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

#: the formats lesson 01 compares, widest first
LESSON_FORMATS = ("bf16", "fp8", "q8_0", "q6_k", "q4_k_m", "mxfp4", "q2_k")
#: what the explorer offers: the checkpoint's own mix, then one format everywhere
EXPLORER_FORMATS = ("native", *LESSON_FORMATS)
GROUP_NAMES = {
    "embedding": "embedding",
    "lm_head": "output head",
    "attention": "attention",
    "dense_mlp": "dense MLP",
    "shared_experts": "shared experts",
    "routed_experts": "routed experts",
    "moe_other": "routers, gates",
    "norms": "norms",
}


def format_bits_table(formats: Sequence[str] = LESSON_FORMATS) -> pd.DataFrame:
    """One row per storage format: bits per weight $b$ (block scales included), bytes per
    parameter $b/8$, and GiB per billion parameters $10^9·b/8/2^{30}$, with how a block is made."""
    rows = []
    for f in formats:
        fmt = get_weight_format(f)
        b = fmt.bits
        rows.append(
            {
                "format": fmt.id,
                "name": fmt.name,
                "bits per weight": round(b, 4),
                "bytes per param": round(b / 8, 4),
                "GiB per billion params": round(1e9 * b / 8 / 2**30, 2),
                "how it is stored": fmt.notes or "—",
            }
        )
    return pd.DataFrame(rows)


def architectures() -> list[str]:
    """The ids of the built-in models that have layer shapes (not a guide's published profile)."""
    return [m.id for m in list_models() if isinstance(m, Architecture)]


def tensor_formats_table(model: str = "kimi-k3", weights: str = "native", *, unit: str = "GiB") -> pd.DataFrame:
    """Which tensors are stored how: one row per parameter group of ``model`` with its parameters,
    its format under ``weights`` ("native": the checkpoint's own mix), its bits $b_g$, its bytes
    $P_g·b_g/8$ and its share of the weights."""
    spec = get_model(model)
    if not isinstance(spec, Architecture):
        raise K3InputError("model", f"{spec.id} is a published profile with no tensors", ", ".join(architectures()))
    fmt = get_weight_format(weights)
    bits = weight_bits_by_group(spec, fmt)
    names = spec.native_formats if fmt.is_native else {"*": fmt.id}
    by_group = weights_bytes_by_group(spec, fmt)
    total = sum(by_group.values())
    rows = []
    for g, n in spec.param_groups().items():
        if not n:
            continue
        rows.append(
            {
                "model": spec.id,
                "tensors": GROUP_NAMES.get(g, g),
                "params (billions)": round(n / 1e9, 2),
                "format": names.get(g, names.get("*")),
                "bits per weight": bits.get(g, bits.get("*")),
                f"weights ({unit})": _size(by_group[g], unit),
                "share of weights (%)": round(100 * by_group[g] / total, 1),
            }
        )
    return pd.DataFrame(rows)


def tensors_chart(df: pd.DataFrame, *, unit: str = "GiB", width: int = 600) -> alt.Chart:
    """One horizontal bar per model, split by tensor group, each segment labelled by its format in
    the tooltip; ``df``: :func:`tensor_formats_table` rows of one or more models. Each bar is
    normalised to 100 % so a 2.8T and a 70B model read side by side."""
    import altair as alt

    value = f"weights ({unit})"
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("model:N", title=None, sort=None),
            x=alt.X(
                f"sum({value}):Q", stack="normalize", title="share of the weights' bytes", axis=alt.Axis(format="%")
            ),
            color=alt.Color("tensors:N", title="tensors", legend=alt.Legend(orient="bottom", columns=4)),
            tooltip=[
                "model:N",
                "tensors:N",
                "format:N",
                alt.Tooltip("bits per weight:Q", format=".2f"),
                alt.Tooltip(f"{value}:Q", format=",.2f"),
                "share of weights (%):Q",
            ],
        )
        .properties(title=f"Where the weight bytes are, by tensor group ({unit} = 2^30 bytes)", width=width)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
        .configure_title(fontSize=13)
    )


def bits_chart(df: pd.DataFrame, *, width: int = 560) -> alt.LayerChart:
    """Bits per weight by format (bars, labelled): ``df`` is :func:`format_bits_table`."""
    import altair as alt

    base = alt.Chart(df).encode(
        y=alt.Y("format:N", sort=None, title="format"),
        x=alt.X("bits per weight:Q", title="bits per weight, block scales included"),
    )
    bars = base.mark_bar(color="#4c78a8").encode(
        tooltip=["format:N", "name:N", "bits per weight:Q", "how it is stored:N"]
    )
    text = base.mark_text(align="left", dx=4, fontSize=12).encode(text=alt.Text("bits per weight:Q", format=".3g"))
    return (
        alt.layer(bars, text)
        .properties(title="Bits per weight by storage format", width=width)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_title(fontSize=13)
    )


def weights_update(*, model: str, weights: str, unit: str = "GiB") -> tuple[pd.DataFrame | None, str]:
    """The explorer's answer for one (model, format): its per-group table and one line
    ``<model> in <format>: <P> billion parameters × <b> bits = <W> GiB``; a bad value gives
    ``(None, "parameter <name>: …")`` and no number.

    >>> weights_update(model="llama-3.1-70b", weights="bf16")[1]
    'llama-3.1-70b in bf16: 70.55 billion parameters × 16.00 bits on average = 131.42 GiB (141.11 GB)'
    """
    try:
        spec = get_model(model)
        df = tensor_formats_table(model, weights, unit=unit)
    except K3InputError as exc:
        return None, f"parameter {exc.field}: {exc}" if hasattr(exc, "field") else str(exc)
    n = weights_bytes(spec, weights)
    line = (
        f"{spec.id} in {weights}: {spec.params_total / 1e9:,.2f} billion parameters × "
        f"{n * 8 / spec.params_total:.2f} bits on average = {n / 2**30:,.2f} GiB ({n / 1e9:,.2f} GB)"
    )
    return df, line


def weights_explorer(*, model: str = "kimi-k3", weights: str = "native"):
    """Two dropdowns (a model with layer shapes, a storage format) above the model's per-group
    table and one line with its weight bytes; only valid choices are offered."""
    import ipywidgets as w

    from k3lib.views.table_format import reader_table
    from k3lib.views.widgets import _display_output

    style, layout = {"description_width": "70px"}, w.Layout(width="300px")
    controls = {
        "model": w.Dropdown(options=architectures(), value=model, description="model", style=style, layout=layout),
        "weights": w.Dropdown(
            options=list(EXPLORER_FORMATS), value=weights, description="format", style=style, layout=layout
        ),
    }
    out = w.Output()
    box = w.VBox([w.HBox(list(controls.values())), out])

    def refresh(_change: object = None) -> None:
        df, line = weights_update(model=controls["model"].value, weights=controls["weights"].value)
        box.last_update = (df, line)
        shown = [{"output_type": "stream", "name": "stdout", "text": line + "\n"}]
        if df is not None:
            shown.append(_display_output(reader_table(df.drop(columns="model"))))
        out.outputs = tuple(shown)  # one trait update (see widgets.explorer: no `with out:` capture)

    for ctl in controls.values():
        ctl.observe(refresh, names="value")
    box.controls = controls
    refresh()
    return box
