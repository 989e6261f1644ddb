"""Speed, concurrency and cost as tables and charts, read from the serving model
(:func:`k3lib.serving.serving_estimate`) over a plan for an engine — for the report and
notebook 08. Nothing here computes a speed: every number is the serving model's, with its
basis and held-aside error.
"""
from __future__ import annotations

from typing import Any, Sequence

#: the figures of one estimate as they are shown, in order: (key, label, scale, unit shown)
SHOWN = (("decode_tokens_per_s_per_sequence", "decode per sequence", 1, "tokens/s"),
         ("output_tokens_per_s_total", "output, all sequences", 1, "tokens/s"),
         ("output_tokens_per_s_per_gpu", "output per GPU", 1, "tokens/s"),
         ("prefill_tokens_per_s", "prefill (one prompt)", 1, "tokens/s"),
         ("ttft_s", "time to first token", 1000, "ms"),
         ("tpot_s", "time per output token", 1000, "ms"),
         ("max_concurrency", "max concurrency", 1, "requests"),
         ("usd_per_hour", "cost", 1, "US$/hour"),
         ("usd_per_million_output_tokens", "cost per million output tokens", 1, "US$"))


def _label(fig: dict[str, Any]) -> str:
    err = fig.get("expected_error_pct")
    return fig["basis"] + (f", ±{err:.0f} %" if err is not None and fig["basis"] == "fitted model" else "")


def figures_table(estimate) -> "Any":
    """One row per figure: value (in the unit shown), unit, basis with its held-aside error."""
    import pandas as pd

    d = estimate.to_dict()
    rows = []
    for key, label, scale, unit in SHOWN:
        f = d[key]
        v = f["value"]
        rows.append({"figure": label, "value": "—" if v is None else f"{v * scale:,.4g}", "unit": unit,
                     "basis": _label(f)})
    return pd.DataFrame(rows)


def concurrency_table(plan, *, concurrencies: Sequence[int] = (1, 4, 16, 64, 256), input_tokens: int = 1024,
                      output_tokens: int = 256, engine: str | None = None,
                      price_per_gpu_hour: float | None = None) -> "Any":
    """Throughput against latency as concurrency grows, up to what the engine's KV cache and
    ``max_num_seqs`` allow (concurrencies past it are dropped; the limit itself is added):
    one serving estimate per concurrency."""
    import pandas as pd

    from k3lib.serving import serving_estimate

    first = serving_estimate(plan, concurrency=1, input_tokens=input_tokens, output_tokens=output_tokens,
                             engine=engine, price_per_gpu_hour=price_per_gpu_hour)
    cap = first.max_concurrency.value
    levels = sorted({c for c in concurrencies if cap is None or c <= cap} | ({int(cap)} if cap else set()))
    rows = []
    for c in levels:
        e = first if c == 1 else serving_estimate(plan, concurrency=c, input_tokens=input_tokens,
                                                  output_tokens=output_tokens, engine=engine,
                                                  price_per_gpu_hour=price_per_gpu_hour)
        d = e.to_dict()
        v = {k: d[k]["value"] for k in d}
        rows.append({"concurrency": c, "output tokens/s (all)": v["output_tokens_per_s_total"],
                     "output tokens/s per GPU": v["output_tokens_per_s_per_gpu"],
                     "TPOT (ms)": None if v["tpot_s"] is None else v["tpot_s"] * 1000,
                     "TTFT (ms)": None if v["ttft_s"] is None else v["ttft_s"] * 1000,
                     "US$ per M output tokens": v["usd_per_million_output_tokens"],
                     "basis": _label(d["output_tokens_per_s_total"])})
    return pd.DataFrame(rows)


def throughput_latency_chart(frame, *, title: str = "Throughput against latency"):
    """Output tokens/s (all sequences) against TPOT, one point per concurrency (Altair)."""
    import altair as alt

    data = frame.dropna(subset=["TPOT (ms)", "output tokens/s (all)"])
    base = alt.Chart(data).encode(
        x=alt.X("TPOT (ms):Q", title="time per output token (ms)"),
        y=alt.Y("output tokens/s (all):Q", title="output tokens/s, all sequences"),
        tooltip=["concurrency", "output tokens/s (all)", "TPOT (ms)", "TTFT (ms)", "basis"])
    return (base.mark_line(point=True) + base.mark_text(dy=-10).encode(text="concurrency:Q")).properties(
        title=title, width=520, height=300)


def roofline_table(plan, *, batches: Sequence[int] = (1, 8, 32, 64, 128, 256, 512, 1024),
                   context_tokens: int = 1024) -> "Any":
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
        rows.append({"batch": b, "GB read per step": t.bytes_read / 1e9, "TFLOP per step": t.flops / 1e12,
                     "memory time (ms)": mem * 1000, "compute time (ms)": comp * 1000,
                     "bound by": "compute" if comp > mem else "memory"})
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


def layouts_curve(plans: dict, *, input_tokens: int = 1024, output_tokens: int = 256,
                  concurrencies: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128, 256)) -> "Any":
    """:func:`concurrency_table` for several plans (one per layout), stacked with a ``layout`` column,
    for one throughput-against-latency chart."""
    import pandas as pd

    frames = []
    for name, plan in plans.items():
        f = concurrency_table(plan, concurrencies=concurrencies, input_tokens=input_tokens,
                              output_tokens=output_tokens)
        f.insert(0, "layout", name)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def layouts_chart(frame, *, title: str = "Throughput against latency, per layout"):
    """Output tokens/s per GPU against TPOT, one line per layout, points labelled by concurrency."""
    import altair as alt

    data = frame.dropna(subset=["TPOT (ms)", "output tokens/s per GPU"])
    base = alt.Chart(data).encode(
        x=alt.X("TPOT (ms):Q", title="time per output token (ms)"),
        y=alt.Y("output tokens/s per GPU:Q", title="output tokens/s per GPU"),
        color=alt.Color("layout:N"),
        tooltip=["layout", "concurrency", "output tokens/s per GPU", "TPOT (ms)", "TTFT (ms)", "basis"])
    return (base.mark_line(point=True) + base.mark_text(dy=-9, fontSize=11).encode(text="concurrency:Q")).properties(
        title=title, width=560, height=320)


def speed_explorer(*, model: str = "llama-3.1-70b", gpu: str = "h100-sxm",
                   layouts: Sequence[str] = ("4 GPUs, TP=4", "8 GPUs, TP=8", "8 GPUs, TP=4 × PP=2"),
                   input_tokens: int = 1024, output_tokens: int = 256):
    """An ipywidgets explorer (thin layer over :func:`figures_table`): a layout and a concurrency;
    the figures update. Bad input shows one line naming the field. Needs ipywidgets."""
    import ipywidgets as w

    from k3lib.core.errors import K3InputError
    from k3lib.engines.deployment import plan_for_engine
    from k3lib.serving import serving_estimate

    shapes = {"4 GPUs, TP=4": dict(gpus=4, tp=4), "8 GPUs, TP=8": dict(gpus=8, tp=8),
              "8 GPUs, TP=4 × PP=2": dict(gpus=8, tp=4, pp=2), "2 GPUs, TP=2": dict(gpus=2, tp=2),
              "1 GPU": dict(gpus=1)}
    layout = w.Dropdown(options=[x for x in layouts if x in shapes], description="layout")
    conc = w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=8, description="concurrency")
    out = w.HTML()

    def update(_change=None) -> None:
        try:
            plan = plan_for_engine(model=model, gpu=gpu, context=input_tokens + output_tokens, with_limits=False,
                                   **shapes[layout.value])
            est = serving_estimate(plan, concurrency=conc.value, input_tokens=input_tokens,
                                   output_tokens=output_tokens)
            out.value = figures_table(est).to_html(index=False)
        except K3InputError as exc:
            out.value = f"<p><b>input error</b>: {exc}</p>"

    layout.observe(update, names="value")
    conc.observe(update, names="value")
    update()
    return w.VBox([layout, conc, out])
