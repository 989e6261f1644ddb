"""Lesson 02's views: why a KV cache exists, how it grows token by token (prefill, then decode),
what each decoded token reads, and what a cache budget buys (sequences served at once).

* Prefill processes the $T_p$ prompt tokens in one pass and writes their keys and values:
  the cache jumps to $T_p·kv_{tok} + S$. Each decode step adds one token: $+kv_{tok}$.
* A decode step at context $T$ reads the whole cache of its sequence, $T·kv_{tok} + S$ bytes,
  and computes about $2·P_{active}$ FLOPs. Without a cache it would run the whole prefix through
  the model again: about $2·P_{active}·T$ FLOPs, $T$ times more, for every token.
* A cache budget $M_{KV}$ holds $\\lfloor M_{KV} / (T·kv_{tok} + S) \\rfloor$ sequences of $T$ tokens.

>>> t = sequences_table(["llama-3.1-70b"], budget_bytes=40 * 2**30, contexts=["32K"], kv_dtype="bf16")
>>> int(t["sequences that fit"].iloc[0])   # 40 GiB / (327,680 B × 32,768)
4
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.memory import kv_bytes_per_token, kv_cache_bytes
from k3lib.core.models import get_model, list_models
from k3lib.core.precisions import get_kv_dtype, kv_dtypes
from k3lib.core.units import parse_context_tokens
from k3lib.views.table_format import _size, context_label
from k3lib.views.widgets import reoffer

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

LESSON_MODELS = ("kimi-k3", "llama-3.1-70b", "qwen3-next-80b")
CONTEXT_CHOICES = ("4K", "8K", "32K", "64K", "128K", "256K", "512K", "1M")


def timeline_frame(
    models: Sequence[str] = LESSON_MODELS,
    *,
    prompt_tokens: int = 8192,
    output_tokens: int = 8192,
    kv_dtype: str = "bf16",
    points: int = 32,
    unit: str = "GiB",
) -> pd.DataFrame:
    """The cache of one sequence, step by step: ``model | step | phase | tokens in cache |
    kv_cache_<unit>``. Step 0 is before the request; step 1 is the prefill, which writes all
    ``prompt_tokens`` at once; each later step decodes one token (sampled to about ``points``
    rows per model)."""
    if prompt_tokens < 1 or output_tokens < 1:
        raise K3InputError("prompt_tokens", "prompt and output must be at least one token each")
    every = max(1, output_tokens // points)
    rows = []
    for m in models:
        spec = get_model(m)
        steps = [(0, "before", 0), (1, "prefill", prompt_tokens)]
        steps += [(1 + i, "decode", prompt_tokens + i) for i in range(every, output_tokens + 1, every)]
        for step, phase, tokens in steps:
            size = kv_cache_bytes(spec, context_tokens=tokens, batch=1, kv_dtype=kv_dtype) if tokens else 0
            rows.append(
                {
                    "model": spec.id,
                    "step": step,
                    "phase": phase,
                    "tokens in cache": tokens,
                    f"kv_cache_{unit}": _size(size, unit),
                }
            )
    return pd.DataFrame(rows)


def timeline_chart(df: pd.DataFrame, *, width: int = 600) -> alt.LayerChart:
    """The cache against the step (:func:`timeline_frame`): one line per model, the prefill a
    vertical jump at step 1, then one token per decode step."""
    import altair as alt

    value = next(c for c in df.columns if c.startswith("kv_cache_"))
    unit = value.rsplit("_", 1)[1]
    base = alt.Chart(df).encode(
        x=alt.X("step:Q", title="step (1 = prefill of the whole prompt; then one decoded token per step)"),
        y=alt.Y(f"{value}:Q", title=f"KV cache of one sequence ({unit})"),
        color=alt.Color("model:N", title="model", legend=alt.Legend(orient="bottom")),
    )
    line = base.mark_line(strokeWidth=2.5)
    dots = base.mark_point(filled=True, size=40).encode(
        shape=alt.Shape("phase:N", title="phase", sort=["before", "prefill", "decode"]),
        tooltip=[
            "model:N",
            "phase:N",
            alt.Tooltip("tokens in cache:Q", format=","),
            alt.Tooltip(f"{value}:Q", format=",.2f"),
        ],
    )
    return (
        alt.layer(line, dots)
        .properties(
            title=f"Prefill writes the prompt's keys and values at once; each decode step adds one token ({unit})",
            width=width,
        )
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
        .configure_title(fontSize=13)
    )


def decode_step_table(
    models: Sequence[str] = LESSON_MODELS,
    *,
    contexts: Sequence[object] = ("8K", "128K"),
    kv_dtype: str = "bf16",
    unit: str = "GiB",
) -> pd.DataFrame:
    """What one decoded token costs at context $T$, with and without a cache: the cache it reads
    ($T·kv_{tok} + S$), the FLOPs of the weights' matrix products with a cache ($2·P_{active}$)
    and without ($2·P_{active}·T$: the whole prefix again), in GFLOP (10^9)."""
    rows = []
    for m in models:
        spec = get_model(m)
        active = spec.params_active
        if active is None:
            raise K3InputError("models", f"{spec.id} publishes no active parameter count", ", ".join(LESSON_MODELS))
        for c in contexts:
            T = parse_context_tokens(c)
            rows.append(
                {
                    "model": spec.id,
                    "context": context_label(T),
                    "tokens T": T,
                    f"cache read per token ({unit})": _size(
                        kv_cache_bytes(spec, context_tokens=T, batch=1, kv_dtype=kv_dtype), unit
                    ),
                    "GFLOP per token, with cache": round(2 * active / 1e9, 1),
                    "GFLOP per token, without cache": round(2 * active * T / 1e9),
                }
            )
    return pd.DataFrame(rows)


def sequences_table(
    models: Sequence[str] = LESSON_MODELS,
    *,
    budget_bytes: int,
    contexts: Sequence[object],
    kv_dtype: str = "bf16",
    unit: str = "GiB",
) -> pd.DataFrame:
    """How many sequences of each context a cache budget holds:
    $\\lfloor M_{KV} / (T·kv_{tok} + S) \\rfloor$ (one copy of the cache; sliding layers capped); a
    context longer than the model's maximum gives no row."""
    if budget_bytes <= 0:
        raise K3InputError("budget", f"{budget_bytes!r} must be a positive number of bytes")
    rows = []
    for m in models:
        spec = get_model(m)
        for c in contexts:
            T = parse_context_tokens(c)
            if T > spec.max_context_tokens:  # the model cannot serve it: no row
                continue
            per_seq = kv_cache_bytes(spec, context_tokens=T, batch=1, kv_dtype=kv_dtype)
            rows.append(
                {
                    "model": spec.id,
                    "context": context_label(T),
                    "tokens T": T,
                    f"KV per sequence ({unit})": _size(per_seq, unit),
                    f"budget ({unit})": _size(budget_bytes, unit),
                    "sequences that fit": budget_bytes // per_seq,
                }
            )
    return pd.DataFrame(rows)


def sequences_chart(df: pd.DataFrame, *, width: int = 560) -> alt.LayerChart:
    """Sequences that fit against context (:func:`sequences_table`), one line per model, log scales."""
    import altair as alt

    label = "datum.value >= 1048576 ? (datum.value / 1048576) + 'M' : (datum.value / 1024) + 'K'"
    data = df[df["sequences that fit"] > 0]
    base = alt.Chart(data).encode(
        x=alt.X(
            "tokens T:Q",
            scale=alt.Scale(type="log", base=2),
            title="context T (tokens; K = 1,024)",
            axis=alt.Axis(labelExpr=label, values=sorted(set(data["tokens T"]))),
        ),
        y=alt.Y("sequences that fit:Q", scale=alt.Scale(type="log"), title="sequences that fit the budget"),
        color=alt.Color("model:N", title="model", legend=alt.Legend(orient="bottom")),
    )
    return (
        alt.layer(
            base.mark_line(strokeWidth=2.5),
            base.mark_point(filled=True, size=40).encode(
                tooltip=["model:N", "context:N", alt.Tooltip("sequences that fit:Q", format=",")]
            ),
        )
        .properties(title="What a cache budget buys: sequences served at once", width=width)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
        .configure_title(fontSize=13)
    )


def cache_models() -> list[str]:
    """Models with layer shapes (their cache is computed, not published)."""
    return [m.id for m in list_models() if isinstance(m, Architecture)]


def context_choices(model: str) -> list[str]:
    """The contexts the KV explorer offers for ``model``: those up to its maximum context.

    >>> context_choices("llama-3.1-70b")
    ['4K', '8K', '32K', '64K', '128K']
    """
    top = get_model(model).max_context_tokens
    return [c for c in CONTEXT_CHOICES if parse_context_tokens(c) <= top]


def kv_update(
    *, model: str, kv_dtype: str, context: str, budget_gib: float, unit: str = "GiB"
) -> tuple[pd.DataFrame | None, str]:
    """The KV explorer's answer: a one-row table (bytes per token, state, one sequence, the
    budget, sequences that fit) and one line saying how many sequences the budget holds.

    >>> kv_update(model="llama-3.1-70b", kv_dtype="bf16", context="32K", budget_gib=40)[1]
    'llama-3.1-70b, BF16 cache, 32K context: 10.00 GiB per sequence, so 40 GiB holds 4 sequences'
    """
    try:
        spec = get_model(model)
        d = get_kv_dtype(kv_dtype)
        T = parse_context_tokens(context)
    except K3InputError as exc:
        return None, str(exc)
    per_seq = kv_cache_bytes(spec, context_tokens=T, batch=1, kv_dtype=d)
    state = kv_cache_bytes(spec, context_tokens=0, batch=1, kv_dtype=d) if isinstance(spec, Architecture) else 0
    n = int(budget_gib * 2**30) // per_seq
    df = pd.DataFrame(
        [
            {
                "KV B per token": kv_bytes_per_token(spec, d),
                f"state per sequence ({unit})": _size(state, unit),
                f"one sequence ({unit})": _size(per_seq, unit),
                f"budget ({unit})": budget_gib,
                "sequences that fit": n,
            }
        ]
    )
    line = (
        f"{spec.id}, {d.name} cache, {context_label(T)} context: {per_seq / 2**30:,.2f} GiB per sequence, "
        f"so {budget_gib:g} GiB holds {n:,} sequence{'s' if n != 1 else ''}"
    )
    return df, line


def kv_explorer(*, model: str = "kimi-k3", kv_dtype: str = "bf16", context: str = "128K", budget_gib: int = 64):
    """Model, KV dtype, context (only those up to the model's maximum) and a cache budget, above
    the cache of one sequence and how many sequences the budget holds."""
    import ipywidgets as w

    from k3lib.views.table_format import reader_table
    from k3lib.views.widgets import _display_output

    style, layout = {"description_width": "70px"}, w.Layout(width="300px")
    models = cache_models()
    contexts = context_choices(model)
    controls = {
        "model": w.Dropdown(options=models, value=model, description="model", style=style, layout=layout),
        "kv_dtype": w.Dropdown(
            options=[d.id for d in kv_dtypes()], value=kv_dtype, description="KV dtype", style=style, layout=layout
        ),
        "context": w.SelectionSlider(
            options=contexts,
            value=context if context in contexts else contexts[-1],
            description="context",
            style=style,
            layout=layout,
        ),
        "budget_gib": w.IntSlider(
            value=budget_gib, min=8, max=1024, step=8, description="budget GiB", style=style, layout=layout
        ),
    }
    out = w.Output()
    box = w.VBox(
        [w.HBox([controls["model"], controls["kv_dtype"]]), w.HBox([controls["context"], controls["budget_gib"]]), out]
    )

    def recontext(_change: object = None) -> None:
        slider = controls["context"]
        offered = context_choices(controls["model"].value)
        if list(slider.options) != offered:
            reoffer(box, slider, offered, slider.value if slider.value in offered else offered[-1])

    def refresh(_change: object = None) -> None:
        if getattr(box, "recounting", False):
            return
        df, line = kv_update(**{k: c.value for k, c in controls.items()})
        box.last_update = (df, line)
        shown = [{"output_type": "stream", "name": "stdout", "text": line + "\n"}]
        if df is not None:
            shown.append(_display_output(reader_table(df)))
        out.outputs = tuple(shown)  # one trait update (see widgets.explorer: no `with out:` capture)

    controls["model"].observe(recontext, names="value")
    for ctl in controls.values():
        ctl.observe(refresh, names="value")
    box.controls = controls
    refresh()
    return box
