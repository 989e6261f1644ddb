"""Speed, concurrency and cost as tables and charts, read from the serving model
(:func:`k3lib.serving.serving_estimate`) over a plan for an engine — for the report and
notebook 08. Nothing here computes a speed: every number is the serving model's, with its
basis and held-aside error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: the figures of one estimate as they are shown, in order: (key, label, scale, unit shown)
SHOWN = (
    ("decode_tokens_per_s_per_sequence", "decode per sequence", 1, "tokens/s"),
    ("output_tokens_per_s_total", "output, all sequences", 1, "tokens/s"),
    ("output_tokens_per_s_per_gpu", "output per GPU", 1, "tokens/s"),
    ("prefill_tokens_per_s", "prefill (one prompt)", 1, "tokens/s"),
    ("ttft_s", "time to first token", 1000, "ms"),
    ("tpot_s", "time per output token", 1000, "ms"),
    ("max_concurrency", "max concurrency", 1, "requests"),
    ("usd_per_hour", "cost", 1, "US$/hour"),
    ("usd_per_million_output_tokens", "cost per million output tokens", 1, "US$"),
)


#: font size (px) of the speed charts' axis labels, titles and legends, and their width (px):
#: readable beside the lesson's text, wide enough for a notebook cell
FONT_PX = 12
WIDTH_PX = 620


def _styled(chart):
    """Readable labels (:data:`FONT_PX`) on a top-level chart."""
    return (
        chart.configure_axis(labelFontSize=FONT_PX, titleFontSize=FONT_PX)
        .configure_legend(labelFontSize=FONT_PX, titleFontSize=FONT_PX, orient="bottom")
        .configure_title(fontSize=FONT_PX + 1, anchor="start")
    )


def _label(fig: dict[str, Any]) -> str:
    err = fig.get("expected_error_pct")
    return fig["basis"] + (f", ±{err:.0f} %" if err is not None and fig["basis"] == "fitted model" else "")


def _number(x: float) -> str:
    """A figure for a reader: thousands separators from 1,000 up, 4 significant digits below,
    never ``e+`` (a value of :func:`figures_table`).

    >>> _number(12345.6), _number(14.244), _number(0.0123), _number(350.0)
    ('12,346', '14.24', '0.0123', '350')
    """
    import math

    x = float(x)
    if x.is_integer() or abs(x) >= 1000:
        return f"{x:,.0f}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    return f"{x:.{digits}f}".rstrip("0").rstrip(".")


def figures_table(estimate) -> Any:
    """One row per figure: value (in the unit shown), unit, basis with its held-aside error."""
    import pandas as pd

    d = estimate.to_dict()
    rows = []
    for key, label, scale, unit in SHOWN:
        f = d[key]
        v = f["value"]
        rows.append(
            {"figure": label, "value": "—" if v is None else _number(v * scale), "unit": unit, "basis": _label(f)}
        )
    return _shown(pd.DataFrame(rows))


def concurrency_table(
    plan,
    *,
    concurrencies: Sequence[int] = (1, 4, 16, 64, 256),
    input_tokens: int = 1024,
    output_tokens: int = 256,
    engine: str | None = None,
    price_per_gpu_hour: float | None = None,
) -> Any:
    """Throughput against latency as concurrency grows, up to what the engine's KV cache and
    ``max_num_seqs`` allow (concurrencies past it are dropped; the limit itself is added):
    one serving estimate per concurrency."""
    import pandas as pd

    from k3lib.serving import serving_estimate

    first = serving_estimate(
        plan,
        concurrency=1,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        engine=engine,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    cap = first.max_concurrency.value
    levels = sorted({c for c in concurrencies if cap is None or c <= cap} | ({int(cap)} if cap else set()))
    rows = []
    for c in levels:
        e = (
            first
            if c == 1
            else serving_estimate(
                plan,
                concurrency=c,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                engine=engine,
                price_per_gpu_hour=price_per_gpu_hour,
            )
        )
        d = e.to_dict()
        v = {k: d[k]["value"] for k in d}
        rows.append(
            {
                "concurrency": c,
                "output tokens/s (all)": v["output_tokens_per_s_total"],
                "output tokens/s per GPU": v["output_tokens_per_s_per_gpu"],
                "TPOT (ms)": None if v["tpot_s"] is None else v["tpot_s"] * 1000,
                "TTFT (ms)": None if v["ttft_s"] is None else v["ttft_s"] * 1000,
                "US$ per M output tokens": v["usd_per_million_output_tokens"],
                "basis": _label(d["output_tokens_per_s_total"]),
            }
        )
    return pd.DataFrame(rows)


def _with_basis(title: str, frame) -> str:
    """``title`` followed by the basis of the frame's figures (one, or each of several), so a chart
    never shows a bare tokens/s."""
    bases = list(dict.fromkeys(frame["basis"].dropna())) if "basis" in frame else []
    return f"{title} ({'; '.join(bases)})" if bases else title


def throughput_latency_chart(frame, *, title: str = "Throughput against latency"):
    """Output tokens/s (all sequences) against TPOT, one point per concurrency (Altair); the title
    carries the figures' basis."""
    import altair as alt

    title = _with_basis(title, frame)
    data = frame.dropna(subset=["TPOT (ms)", "output tokens/s (all)"])
    base = alt.Chart(data).encode(
        x=alt.X("TPOT (ms):Q", title="time per output token (ms)"),
        y=alt.Y("output tokens/s (all):Q", title="output tokens/s, all sequences"),
        tooltip=["concurrency", "output tokens/s (all)", "TPOT (ms)", "TTFT (ms)", "basis"],
    )
    return _styled(
        (base.mark_line(point=True) + base.mark_text(dy=-10, fontSize=FONT_PX).encode(text="concurrency:Q")).properties(
            title=title, width=WIDTH_PX, height=300
        )
    )


def roofline_table(
    plan, *, batches: Sequence[int] = (1, 8, 32, 64, 128, 256, 512, 1024), context_tokens: int = 1024
) -> Any:
    """Why decode is memory-bound: for one decode step of ``batch`` sequences on the plan's binding
    GPU, the time to read its bytes at full bandwidth and the time to do its FLOPs at peak
    (:func:`k3lib.serving.roofline.decode_terms`, the theoretical ceiling: no efficiencies).
    The step is bound by the larger; the batch where compute overtakes memory is where decode
    turns compute-bound."""
    import pandas as pd

    from k3lib.serving.roofline import decode_terms, inputs_from_plan

    inp = inputs_from_plan(plan)
    rows = []
    for b in batches:
        t = decode_terms(inp, concurrency=b, context_tokens=context_tokens)
        mem, comp = t.memory_seconds(), t.compute_seconds()
        rows.append(
            {
                "batch": b,
                "GB read per step": t.bytes_read / 1e9,
                "TFLOP per step": t.flops / 1e12,
                "memory time (ms)": mem * 1000,
                "compute time (ms)": comp * 1000,
                "bound by": "compute" if comp > mem else "memory",
            }
        )
    return pd.DataFrame(rows)


def compute_bound_batch(plan, *, context_tokens: int = 0, limit: int = 1 << 16) -> int | None:
    """The smallest batch whose decode step takes longer to compute than to read (doubling, then
    bisection over :func:`roofline_table`'s terms); None when even ``limit`` sequences stay
    memory-bound (or the device has no compute figure)."""
    from k3lib.serving.roofline import decode_terms, inputs_from_plan

    inp = inputs_from_plan(plan)

    def compute_bound(b: int) -> bool:
        t = decode_terms(inp, concurrency=b, context_tokens=context_tokens)
        return t.peak_flops is not None and t.compute_seconds() > t.memory_seconds()

    hi = 1
    while not compute_bound(hi):
        hi *= 2
        if hi > limit:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return hi


def layouts_curve(
    plans: dict,
    *,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    concurrencies: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
) -> Any:
    """:func:`concurrency_table` for several plans (one per layout), stacked with a ``layout`` column,
    for one throughput-against-latency chart."""
    import pandas as pd

    frames = []
    for name, plan in plans.items():
        f = concurrency_table(plan, concurrencies=concurrencies, input_tokens=input_tokens, output_tokens=output_tokens)
        f.insert(0, "layout", name)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def layouts_chart(frame, *, title: str = "Throughput against latency, per layout"):
    """Output tokens/s per GPU against TPOT, one line per layout, points labelled by concurrency;
    the title carries the figures' basis."""
    import altair as alt

    title = _with_basis(title, frame)
    data = frame.dropna(subset=["TPOT (ms)", "output tokens/s per GPU"])
    base = alt.Chart(data).encode(
        x=alt.X("TPOT (ms):Q", title="time per output token (ms)"),
        y=alt.Y("output tokens/s per GPU:Q", title="output tokens/s per GPU"),
        color=alt.Color("layout:N", legend=alt.Legend(labelLimit=0)),
        tooltip=["layout", "concurrency", "output tokens/s per GPU", "TPOT (ms)", "TTFT (ms)", "basis"],
    )
    return _styled(
        (base.mark_line(point=True) + base.mark_text(dy=-9, fontSize=FONT_PX).encode(text="concurrency:Q")).properties(
            title=title, width=WIDTH_PX, height=320
        )
    )


def _request_kv_bytes(plan, context_tokens: int) -> int:
    """The KV cache (and state) of one request at ``context_tokens``, all layers, before any split."""
    from k3lib.core.memory import kv_bytes_per_rank
    from k3lib.core.precisions import get_kv_dtype

    return int(
        kv_bytes_per_rank(
            plan.model,
            context_tokens=int(context_tokens),
            batch=1,
            bytes_per_element=get_kv_dtype(plan.kv_dtype).bytes_per_element,
            tp=1,
            state_bytes_per_element=plan.assumptions.state_bytes_per_element,
        )
    )


def cache_worked_table(plan, *, input_tokens: int = 1024, output_tokens: int = 256, concurrency: int = 16) -> Any:
    r"""Why the KV cache exists, worked on ``plan``: what prefill writes, what one decode step reads
    (the binding GPU's weights once, plus every sequence's cache at the mean context
    $T = I + O/2$), and the FLOPs of the answer with and without a cache. Without one, the
    token at position $t$ reruns the model over all $t$ tokens before it:
    $\sum_{t=I}^{I+O-1} 2·P_{act}·t = 2·P_{act}·O·(I + (O-1)/2)$ FLOPs instead of $2·P_{act}·O$.
    Rows ``quantity | formula | value | unit`` (bytes in GB = 10^9 B, FLOPs in TFLOP = 10^12)."""
    import pandas as pd

    from k3lib.core.memory import kv_bytes_per_token
    from k3lib.serving.roofline import decode_terms, inputs_from_plan

    inp = inputs_from_plan(plan)
    mean_t = input_tokens + output_tokens // 2
    at_zero = decode_terms(inp, concurrency=concurrency, context_tokens=0).bytes_read
    at_t = decode_terms(inp, concurrency=concurrency, context_tokens=mean_t).bytes_read
    p_act = plan.model.params_active
    with_cache = 2 * p_act * output_tokens
    without = 2 * p_act * output_tokens * (input_tokens + (output_tokens - 1) / 2)
    rows = [
        ("KV written per token, all layers", "kv_tok", f"{kv_bytes_per_token(plan.model, plan.kv_dtype):,}", "B"),
        (
            f"prefill writes: K,V of the {input_tokens:,}-token prompt",
            "I · kv_tok",
            _number(_request_kv_bytes(plan, input_tokens) / 1e9),
            "GB",
        ),
        ("a decode step reads: the weights, once", "W", _number(at_zero / 1e9), "GB"),
        (
            f"… and {concurrency} sequences' cache at {mean_t:,} tokens",
            "B · KV_rank(T)",
            _number((at_t - at_zero) / 1e9),
            "GB",
        ),
        (
            f"FLOPs of a {output_tokens:,}-token answer, with cache",
            "2 · P_act · O",
            _number(with_cache / 1e12),
            "TFLOP",
        ),
        ("… without (each step reruns all tokens)", "2 · P_act · O · (I + (O−1)/2)", _number(without / 1e12), "TFLOP"),
    ]
    return _shown(pd.DataFrame(rows, columns=["quantity", "formula", "value", "unit"]))


def request_timeline(plan, *, input_tokens: int = 1024, output_tokens: int = 256) -> Any:
    """One request served alone, at the theoretical ceiling (η = 1, no overheads): the prefill of
    its prompt, then one decode step per output token
    (:func:`k3lib.serving.roofline.prefill_terms`, :func:`~k3lib.serving.roofline.decode_terms`).
    One row per point: ``time (ms)`` since the request arrived, the request's KV cache then
    (``KV cache of the request (MB)``, all layers), ``phase`` and ``tokens`` in the context."""
    import pandas as pd

    from k3lib.serving.roofline import CEILING, decode_terms, inputs_from_plan, prefill_terms

    inp = inputs_from_plan(plan)
    t = prefill_terms(inp, input_tokens=input_tokens).seconds(CEILING) * 1000
    rows = [
        {
            "time (ms)": 0.0,
            "KV cache of the request (MB)": _request_kv_bytes(plan, 0) / 1e6,
            "phase": "prefill",
            "tokens": 0,
        },
        {
            "time (ms)": t,
            "KV cache of the request (MB)": _request_kv_bytes(plan, input_tokens) / 1e6,
            "phase": "prefill",
            "tokens": input_tokens,
        },
    ]
    rows.append({**rows[-1], "phase": "decode"})
    for k in range(1, output_tokens + 1):
        t += decode_terms(inp, concurrency=1, context_tokens=input_tokens + k - 1).seconds(CEILING) * 1000
        rows.append(
            {
                "time (ms)": t,
                "KV cache of the request (MB)": _request_kv_bytes(plan, input_tokens + k) / 1e6,
                "phase": "decode",
                "tokens": input_tokens + k,
            }
        )
    return pd.DataFrame(rows)


def timeline_chart(frame, *, title: str = "One request alone: prefill, then one decode step per token"):
    """The request's KV cache against time, coloured by phase, with the first token marked
    (the frame of :func:`request_timeline`; the basis is the theoretical ceiling)."""
    import altair as alt

    first = float(frame.loc[frame["phase"] == "prefill", "time (ms)"].max())
    scale = alt.Scale(domain=["prefill", "decode"], range=["#f58518", "#4c78a8"])
    line = (
        alt.Chart(frame)
        .mark_line(strokeWidth=3)
        .encode(
            x=alt.X("time (ms):Q", title="time since the request arrived (ms), theoretical ceiling"),
            y=alt.Y("KV cache of the request (MB):Q", title="KV cache of this request (MB)"),
            color=alt.Color("phase:N", scale=scale, title="phase"),
            tooltip=["phase", "tokens", "time (ms)", "KV cache of the request (MB)"],
        )
    )
    mark = alt.Chart(alt.Data(values=[{"t": first, "label": f"first token at {first:,.1f} ms"}]))
    rule = mark.mark_rule(strokeDash=[4, 3], color="#555").encode(x="t:Q")
    text = mark.mark_text(align="left", dx=4, dy=-6, fontSize=FONT_PX, color="#333").encode(
        x="t:Q", y=alt.value(12), text="label:N"
    )
    return _styled((line + rule + text).properties(title=title, width=WIDTH_PX, height=260))


def intensity_table(plan, *, input_tokens: int = 1024, concurrency: int = 16, context_tokens: int = 1152) -> Any:
    """Arithmetic intensity (FLOPs ÷ bytes read) of one pass on the plan's binding GPU, against the
    GPU's own ratio $F/BW$: a pass whose intensity is below $F/BW$ waits on memory, above it on
    compute. Rows: the prefill of one prompt of ``input_tokens``; a decode step of 1 and of
    ``concurrency`` sequences at ``context_tokens`` (theoretical ceiling terms)."""
    import pandas as pd

    from k3lib.serving.roofline import decode_terms, inputs_from_plan, prefill_terms

    inp = inputs_from_plan(plan)
    ratio = inp.peak_flops / inp.memory_bw_bytes_per_s if inp.peak_flops else None
    passes = [
        (
            f"prefill, one prompt of {input_tokens:,} tokens",
            input_tokens,
            prefill_terms(inp, input_tokens=input_tokens),
        ),
        (
            f"decode, 1 sequence at {context_tokens:,} tokens",
            1,
            decode_terms(inp, concurrency=1, context_tokens=context_tokens),
        ),
        (
            f"decode, {concurrency} sequences at {context_tokens:,} tokens",
            concurrency,
            decode_terms(inp, concurrency=concurrency, context_tokens=context_tokens),
        ),
    ]
    rows = []
    for name, tokens, t in passes:
        intensity = t.flops / t.bytes_read
        rows.append(
            {
                "pass": name,
                "tokens per pass": f"{tokens:,}",
                "TFLOP per pass": _number(t.flops / 1e12),
                "GB read per pass": _number(t.bytes_read / 1e9),
                "intensity (FLOP/byte)": _number(intensity),
                "GPU ratio F/BW (FLOP/byte)": "—" if ratio is None else _number(ratio),
                "bound by": "—" if ratio is None else ("compute" if intensity > ratio else "memory"),
            }
        )
    return _shown(pd.DataFrame(rows))


def roofline_chart(
    frame,
    *,
    with_cache=None,
    crossover: int | None = None,
    title: str = "One decode step on the binding GPU: read time and compute time",
):
    """The roofline of a decode step against the batch (log–log; ``frame`` from
    :func:`roofline_table`, best at ``context_tokens=0``): the time to read the step's bytes at full
    bandwidth, the time to do its FLOPs at peak, and the step (the larger, dashed).
    ``with_cache``: a second :func:`roofline_table` at a context, whose read time (weights plus every
    sequence's cache) is drawn too. ``crossover``: the batch where compute overtakes the first
    read line (:func:`compute_bound_batch`), marked."""
    import altair as alt
    import pandas as pd

    mem, comp, step, cached = (
        "memory: weights ÷ bandwidth",
        "compute: FLOPs ÷ peak FLOP/s",
        "step: the larger",
        "memory: weights + cache ÷ bandwidth",
    )
    parts = [
        pd.DataFrame({"batch": frame["batch"], "time (ms)": frame["memory time (ms)"], "term": mem}),
        pd.DataFrame({"batch": frame["batch"], "time (ms)": frame["compute time (ms)"], "term": comp}),
        pd.DataFrame(
            {
                "batch": frame["batch"],
                "time (ms)": frame[["memory time (ms)", "compute time (ms)"]].max(axis=1),
                "term": step,
            }
        ),
    ]
    domain, colours = [mem, comp, step], ["#4c78a8", "#e45756", "#333333"]
    if with_cache is not None:
        parts.append(
            pd.DataFrame({"batch": with_cache["batch"], "time (ms)": with_cache["memory time (ms)"], "term": cached})
        )
        domain.append(cached)
        colours.append("#9ecae9")
    long = pd.concat(parts, ignore_index=True)
    lines = (
        alt.Chart(long)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="sequences decoded together (batch)"),
            y=alt.Y("time (ms):Q", scale=alt.Scale(type="log"), title="time per step (ms), theoretical ceiling"),
            color=alt.Color(
                "term:N",
                scale=alt.Scale(domain=domain, range=colours),
                title=None,
                legend=alt.Legend(labelLimit=0, columns=2),
            ),
            strokeDash=alt.condition(alt.datum.term == step, alt.value([6, 3]), alt.value([1, 0])),
            tooltip=["term", "batch", "time (ms)"],
        )
    )
    layers = [lines]
    if crossover is not None:
        mark = alt.Chart(alt.Data(values=[{"b": crossover, "label": f"compute-bound from batch {crossover:,}"}]))
        layers += [
            mark.mark_rule(color="#555", strokeDash=[2, 2]).encode(x="b:Q"),
            mark.mark_text(align="right", dx=-4, dy=-6, fontSize=FONT_PX, color="#333").encode(
                x="b:Q", y=alt.value(12), text="label:N"
            ),
        ]
    return _styled(alt.layer(*layers).properties(title=title, width=WIDTH_PX, height=300))


def concurrency_caps_table(
    plan, *, shapes: Sequence[tuple[int, int]] = ((1024, 256), (4096, 512), (8192, 1024), (32768, 1024))
) -> Any:
    """How the engine's KV capacity caps the requests served at once, per request shape
    ($I$ prompt + $O$ answer tokens): $\\min(\\lfloor KV_{tokens}/(I+O) \rfloor, \text{max\\_num\\_seqs})$
    (:func:`k3lib.serving.concurrency.max_concurrency`)."""
    import pandas as pd

    from k3lib.serving.concurrency import max_concurrency

    cap = plan.engine.kv_capacity_tokens
    seqs = dict(plan.engine.settings).get("max_num_seqs")
    rows = []
    for i, o in shapes:
        n = max_concurrency(kv_capacity_tokens=cap, input_tokens=i, output_tokens=o, max_num_seqs=seqs)
        by_kv = cap // (i + o)
        rows.append(
            {
                "prompt (tokens)": f"{i:,}",
                "answer (tokens)": f"{o:,}",
                "per request (tokens)": f"{i + o:,}",
                "KV capacity (tokens)": f"{cap:,}",
                "max concurrency (requests)": f"{n:,}",
                "limited by": "KV cache" if seqs is None or by_kv <= seqs else f"max_num_seqs ({seqs:,})",
            }
        )
    return _shown(pd.DataFrame(rows))


#: the held-aside table's columns as a reader sees them (a share becomes a percentage)
HOLDOUT_COLUMNS = {
    "engine": "engine",
    "hardware_class": "hardware class",
    "quantity": "quantity",
    "rows": "rows",
    "median_ratio": "median predicted ÷ measured",
    "within_30_pct": "within ±30 % (%)",
    "worst_ratio": "worst predicted ÷ measured",
    "median_abs_error_pct": "median |error| (%)",
}


def holdout_shown(frame) -> Any:
    """:func:`k3lib.serving.calibration.holdout_table` for a reader: columns named with their
    units, the share within ±30 % as a percentage, two decimals, no index."""
    from k3lib.views.table_format import shown

    f = frame.copy()
    if "within_30_pct" in f and f["within_30_pct"].max() <= 1:
        f["within_30_pct"] = f["within_30_pct"] * 100
    labels = {key: f"{label} ({unit})" for key, label, _, unit in SHOWN}
    labels.update(tpot_s="time per output token (s)", ttft_s="time to first token (s)")
    if "quantity" in f:
        f["quantity"] = f["quantity"].map(lambda q: labels.get(q, q))
    f = f.rename(columns=HOLDOUT_COLUMNS)
    f["hardware class"] = f["hardware class"].replace({"*": "all"}) if "hardware class" in f else None
    return shown(f, decimals=2)


def bound_line(plan, *, concurrency: int, context_tokens: int = 0) -> Any:
    """A coloured verdict line for the roofline: whether a decode step of ``concurrency``
    sequences at ``context_tokens`` waits on memory or on compute, and from which batch compute
    binds (:func:`compute_bound_batch`; theoretical ceiling): a :class:`~k3lib.views.lines.Line`."""
    from k3lib.views.lines import DOES_NOT_FIT, STATEMENT, Line

    b = compute_bound_batch(plan, context_tokens=context_tokens)
    memory = b is None or concurrency < b
    where = "never up to 65,536 sequences" if b is None else f"from a batch of {b:,}"
    text = (
        f"Decode of {concurrency:,} sequences at {context_tokens:,} tokens is "
        f"<b>{'memory-bound' if memory else 'compute-bound'}</b> on {plan.gpu.name}; "
        f"it turns compute-bound {where} (theoretical ceiling)."
    )
    return Line(text, STATEMENT if memory else DOES_NOT_FIT)


def timeline_line(frame) -> Any:
    """A coloured line above :func:`timeline_chart`: time to first token, the decode steps and the
    share of the request's time they take (theoretical ceiling): a :class:`~k3lib.views.lines.Line`."""
    from k3lib.views.lines import Line

    first = float(frame.loc[frame["phase"] == "prefill", "time (ms)"].max())
    end = float(frame["time (ms)"].max())
    steps = int((frame["phase"] == "decode").sum() - 1)
    text = (
        f"Prefill of the prompt: <b>{first:,.1f} ms</b>; then <b>{steps:,} decode steps</b> of about "
        f"{(end - first) / max(1, steps):,.1f} ms each: decode is <b>{100 * (end - first) / end:.1f} %</b> "
        "of the request's time (theoretical ceiling)."
    )
    return Line(text)


def _shown(frame, decimals: int = 2):
    from k3lib.views.table_format import shown

    return shown(frame, decimals=decimals)


def curve_shown(frame, *, decimals: int = 1) -> Any:
    """A :func:`concurrency_table`, :func:`layouts_curve` or :func:`roofline_table` for a reader:
    integers with separators, ``decimals`` places, "—" where a figure is missing (no price), no index."""
    return _shown(frame, decimals)


#: layouts the explorer offers by name: GPUs and their split (TP inside a node, PP across stages)
LAYOUTS: dict[str, dict[str, Any]] = {
    "1 GPU": dict(gpus=1),
    "2 GPUs, TP=2": dict(gpus=2, tp=2),
    "4 GPUs, TP=4": dict(gpus=4, tp=4),
    "8 GPUs, TP=8": dict(gpus=8, tp=8),
    "8 GPUs, TP=4 × PP=2": dict(gpus=8, tp=4, pp=2),
}


def concurrency_choices(max_concurrency: int | None, *, top: int = 1024) -> list[int]:
    """The concurrencies a widget offers for a layout: powers of two up to what its KV cache holds,
    and that maximum itself (no choice the engine would cap).

    >>> concurrency_choices(350)
    [1, 2, 4, 8, 16, 32, 64, 128, 256, 350]
    >>> concurrency_choices(None, top=8)
    [1, 2, 4, 8]
    """
    cap = top if max_concurrency is None else max(1, min(int(max_concurrency), top))
    out = [1 << k for k in range(11) if (1 << k) <= cap]
    return out + ([cap] if cap not in out else [])


def loading_layouts(
    *,
    model="llama-3.1-70b",
    gpu: str = "h100-sxm",
    layouts: Sequence[str] = tuple(LAYOUTS),
    input_tokens: int = 1024,
    output_tokens: int = 256,
) -> tuple[dict, dict]:
    """(plans that load by layout name, why each other layout is left out): the explorer and the
    per-layout chart draw nothing for a plan that does not load."""
    from k3lib.core.errors import K3InputError
    from k3lib.engines.deployment import plan_for_engine

    plans: dict[str, Any] = {}
    left: dict[str, str] = {}
    for name in layouts:
        try:
            plan = plan_for_engine(
                model=model, gpu=gpu, context=input_tokens + output_tokens, with_limits=False, **LAYOUTS[name]
            )
        except K3InputError as exc:
            left[name] = str(exc)
            continue
        if plan.fits:
            plans[name] = plan
        else:
            left[name] = "does not load: " + plan.reason
    return plans, left


def layout_name(plan) -> str:
    """A plan's layout as the explorer names it: ``1 GPU``, ``4 GPUs, TP=4``, ``16 GPUs, TP=8 × PP=2``."""
    if plan.gpus == 1:
        return "1 GPU"
    return f"{plan.gpus} GPUs, TP={plan.tp}" + (f" × PP={plan.pp}" if plan.pp > 1 else "")


def require_loads(plan) -> None:
    """Stop a lesson whose plan does not load (it has no speed) with one input error naming
    ``gpus``; inside :func:`k3lib.views.notebook.parameter_errors` it reads as one line."""
    from k3lib.core.errors import K3InputError

    if not plan.fits:
        raise K3InputError(
            "gpus",
            f"{plan.model.id} does not load on {plan.gpus}× {plan.gpu.id}, so it has no speed: {plan.reason}",
            "more GPUs (`k3plan plan` finds the fewest that fit)",
        )


def layouts_around(plan, *, model, input_tokens: int = 1024, output_tokens: int = 256) -> tuple[dict, dict]:
    """Layouts to compare with ``plan`` for the same ``model`` and GPU: its own, the same GPUs
    with half the TP and twice the pipeline stages, and twice the GPUs (the engine's own split).
    (plans that load by :func:`layout_name`, why each other one is left out) — nothing is drawn
    for a layout that does not load."""
    from k3lib.core.errors import K3InputError
    from k3lib.engines.deployment import plan_for_engine

    shapes = [dict(gpus=plan.gpus, tp=plan.tp, pp=plan.pp)]
    if plan.tp > 1 and plan.tp % 2 == 0:
        shapes.append(dict(gpus=plan.gpus, tp=plan.tp // 2, pp=plan.pp * 2))
    shapes.append(dict(gpus=plan.gpus * 2))
    plans: dict[str, Any] = {}
    left: dict[str, str] = {}
    for shape in shapes:
        try:
            p = plan_for_engine(
                model=model, gpu=plan.gpu.id, context=input_tokens + output_tokens, with_limits=False, **shape
            )
        except K3InputError as exc:
            name = f"{shape['gpus']} GPUs" + (f", TP={shape['tp']} × PP={shape['pp']}" if "tp" in shape else "")
            left[name] = str(exc)
            continue
        if p.fits:
            plans.setdefault(layout_name(p), p)
        else:
            left[layout_name(p)] = "does not load: " + p.reason
    return plans, left


def layouts_table(plans: dict, left_out: dict) -> Any:
    """The layouts of :func:`loading_layouts`: one row each — GPUs, whether it loads, the most
    requests its KV cache holds at the plans' context, or why it is left out."""
    import pandas as pd

    rows = [
        {
            "layout": name,
            "GPUs": p.gpus,
            "loads": "yes",
            "KV capacity (tokens)": f"{p.engine.kv_capacity_tokens:,}" if p.engine is not None else "—",
            "why not": "—",
        }
        for name, p in plans.items()
    ]
    rows += [
        {
            "layout": name,
            "GPUs": "".join(re.findall(r"^\d+", name)) or "—",
            "loads": "no",
            "KV capacity (tokens)": "—",
            "why not": why,
        }
        for name, why in left_out.items()
    ]
    return _shown(pd.DataFrame(rows))


def printed_table(plan) -> Any:
    """What the plan's engine would print at start-up (model loading, KV memory, KV cache size,
    maximum concurrency) as ``the engine prints | value`` rows; empty without an engine estimate."""
    import pandas as pd

    est = plan.engine.estimate if plan.engine is not None else None
    printed = dict(getattr(est, "printed", None) or {})
    return _shown(
        pd.DataFrame(
            list(printed.items()), columns=[f"{plan.engine.name if plan.engine else 'the engine'} prints", "value"]
        )
    )


def speed_explorer(
    *,
    model="llama-3.1-70b",
    gpu: str = "h100-sxm",
    layouts: Sequence[str] = ("4 GPUs, TP=4", "8 GPUs, TP=8", "8 GPUs, TP=4 × PP=2"),
    input_tokens: int = 1024,
    output_tokens: int = 256,
    plans: dict | None = None,
):
    """An ipywidgets explorer (thin layer over :func:`figures_table`): a layout (only those that
    load) and a concurrency (only what that layout's KV cache holds, re-offered when the layout
    changes); the figures, each with its basis, update. Estimates are computed once per choice and
    kept. ``plans``: named plans to offer instead of ``model`` on ``layouts`` (e.g.
    :func:`layouts_around`). Needs ipywidgets."""
    import ipywidgets as w

    from k3lib.serving import serving_estimate

    if plans is None:
        plans, left = loading_layouts(
            model=model, gpu=gpu, layouts=layouts, input_tokens=input_tokens, output_tokens=output_tokens
        )
    else:
        plans, left = (
            {k: p for k, p in plans.items() if p.fits},
            {k: "does not load" for k, p in plans.items() if not p.fits},
        )
    if not plans:
        return w.HTML(
            "<p style='color:#b00020'><b>No layout loads</b>: "
            + "; ".join(f"{k}: {v}" for k, v in left.items())
            + "</p>"
        )
    cache: dict = {}

    def estimate(name: str, c: int):
        if (name, c) not in cache:
            cache[name, c] = serving_estimate(
                plans[name], concurrency=c, input_tokens=input_tokens, output_tokens=output_tokens
            )
        return cache[name, c]

    def cap(name: str) -> int | None:
        return estimate(name, 1).max_concurrency.value

    first = next(iter(plans))
    layout = w.Dropdown(options=list(plans), value=first, description="layout")
    choices = concurrency_choices(cap(first))
    conc = w.SelectionSlider(options=choices, value=8 if 8 in choices else choices[-1], description="concurrency")
    out = w.HTML()
    note = "" if not left else ("<p><small>Not offered (they do not load): " + "; ".join(left) + "</small></p>")

    busy = [False]

    def update(_change=None) -> None:
        if busy[0]:
            return
        est = estimate(layout.value, conc.value)
        out.value = (
            f"<p>{plans[layout.value].gpus}× {plans[layout.value].gpu.name}, {conc.value:,} requests of "
            f"{input_tokens:,} + {output_tokens:,} tokens at once:</p>" + figures_table(est).to_html(index=False) + note
        )

    def relayout(_change=None) -> None:
        opts = concurrency_choices(cap(layout.value))
        keep = (
            conc.value
            if conc.value in opts
            else max(c for c in opts if c <= conc.value)
            if any(c <= conc.value for c in opts)
            else opts[0]
        )
        busy[0] = True
        conc.options = opts
        conc.value = keep
        busy[0] = False
        update()

    layout.observe(relayout, names="value")
    conc.observe(update, names="value")
    update()
    return w.VBox([layout, conc, out])
