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
