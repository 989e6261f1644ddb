"""Lesson 00's views: where every byte sits on each GPU of a plan, a plan's verdict as one
coloured line, and several models' budgets side by side.

A plan's GPUs hold, each, $m_{gpu,s} = W^{shard}_s/TP + W^{rep}_s + KV_{rank,s} + A/TP + O_{gpu}$
(pipeline stage $s$); :func:`per_gpu_frame` lists that sum for every GPU, so a chart can draw
one bar per GPU.

>>> from k3lib.core.plan import make_plan
>>> p = make_plan(model="llama-3.1-70b", gpu="h100-sxm", gpus=2, weights="bf16", kv_dtype="bf16", context="32K")
>>> df = per_gpu_frame(p)
>>> sorted(set(df["GPU"]))
['GPU 0 (node 0)', 'GPU 1 (node 0)']
>>> float(df[(df.GPU == "GPU 0 (node 0)") & (df.component == "KV cache")]["GiB"].iloc[0])  # 2·80·4·128·2 B·32,768
5.0
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.plan import Plan
from k3lib.views.table_format import _size, context_label

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt


def verdict_line(plan: Plan):
    """The plan's verdict (:meth:`Plan.verdict`: FITS or DOES NOT FIT, the layout and why) as one
    coloured line (:func:`k3lib.views.charts_parallel.verdict_line`: green when it fits, red when
    not), shown above a chart so the verdict is never only in a chart title.

    >>> from k3lib.core.plan import make_plan
    >>> verdict_line(make_plan(model="llama-3.1-70b", gpu="h100-sxm", gpus=1, weights="bf16",
    ...                        kv_dtype="bf16", context="8K")).lines[0][:40]
    'DOES NOT FIT — 1× NVIDIA H100 SXM5 80GB,'
    """
    from k3lib.views.charts_parallel import verdict_line as coloured

    return coloured(plan.verdict())


def per_gpu_frame(plan: Plan, *, unit: str = "GiB") -> pd.DataFrame:
    """One row per GPU and component (long form for :func:`gpu_chart`): ``GPU | node | stage |
    component | order | <unit> | available``. Every GPU of pipeline stage ``s`` holds the same
    share (:class:`~k3lib.core.plan.GPUShare`); GPUs are numbered stage by stage, and a node
    holds ``gpus / nodes`` of them."""
    per_node = max(1, plan.gpus // max(1, plan.nodes))
    rows, gpu = [], 0
    for share in plan.shares:
        for _ in range(share.gpus):
            label = f"GPU {gpu} (node {gpu // per_node}" + (f", stage {share.stage})" if plan.pp > 1 else ")")
            for order, (name, n) in enumerate(share.components().items()):
                rows.append(
                    {
                        "GPU": label,
                        "node": gpu // per_node,
                        "stage": share.stage,
                        "component": name,
                        "order": order,
                        unit: _size(n, unit),
                        "available": _size(share.available_bytes, unit),
                    }
                )
            gpu += 1
    return pd.DataFrame(rows)


def gpu_chart(plan: Plan, *, unit: str = "GiB", width: int = 620) -> alt.LayerChart:
    """One bar per GPU, stacked by what it holds (weights TP splits, weights every GPU keeps
    whole, routed experts, KV cache, activation, communicator buffers, CUDA runtime), with a
    dashed rule at what the GPU can use. The title names no verdict: show :func:`verdict_line`
    above it."""
    from k3lib.views.charts_parallel import per_gpu_stacked_bar

    title = (
        f"{plan.model.id} on {plan.gpus}× {plan.gpu.id}, {plan.layout.describe()}: "
        f"memory on each GPU ({unit}); dashed line = usable memory"
    )
    chart = per_gpu_stacked_bar(per_gpu_frame(plan, unit=unit), unit=unit, title=title, width=width)
    return (
        chart.configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12, orient="bottom", columns=4)
        .configure_title(fontSize=13)
    )


def anatomy_table(plans: Mapping[str, Plan], *, unit: str = "GiB") -> pd.DataFrame:
    """One row per named plan: the fullest GPU's weights, KV cache, activation and overhead
    (the four components of $m_{gpu}$), their total $m_{gpu}$, the usable memory $C$, the
    headroom $C - m_{gpu}$ and the weights' share $W_{gpu}/m_{gpu}$ (show it through
    :func:`k3lib.views.table_format.reader_table`)."""
    rows = []
    for name, p in plans.items():
        g = p.per_gpu
        rows.append(
            {
                "model": name,
                "layout": f"{p.gpus}× {p.gpu.id}, {p.layout.describe()}",
                "context": context_label(p.context_tokens),
                f"weights ({unit})": _size(g.weights_bytes, unit),
                f"KV cache ({unit})": _size(g.kv_cache_bytes, unit),
                f"activation ({unit})": _size(g.activation_bytes, unit),
                f"overhead ({unit})": _size(g.overhead_bytes, unit),
                f"total ({unit})": _size(g.total_bytes, unit),
                f"usable ({unit})": _size(g.available_bytes, unit),
                f"headroom ({unit})": _size(g.headroom_bytes, unit),
                "weights share (%)": round(100 * g.weights_bytes / g.total_bytes, 1),
                "fits": p.fits,
            }
        )
    return pd.DataFrame(rows)


def min_gpus_table(
    *,
    model: str,
    weights: str,
    kv_dtype: str,
    gpu: str,
    cases: tuple[tuple[str, int], ...] = (("256K", 1), ("1M", 1), ("256K", 64)),
    unit: str = "GiB",
) -> pd.DataFrame:
    """The fewest deployable GPUs (one node up to 8, then whole nodes) for each (context, batch)
    case, beside one copy of its KV cache $B·(T·kv_{tok} + S)$ — what moves the count."""
    from k3lib.core.memory import kv_cache_bytes
    from k3lib.core.models import get_model
    from k3lib.core.units import parse_context_tokens
    from k3lib.views.tables import min_gpus

    spec = get_model(model)
    rows = []
    for context, batch in cases:
        T = parse_context_tokens(context)
        rows.append(
            {
                "context": context_label(T),
                "batch": batch,
                f"KV cache, one copy ({unit})": _size(
                    kv_cache_bytes(spec, context_tokens=T, batch=batch, kv_dtype=kv_dtype), unit
                ),
                f"fewest {gpu}": min_gpus(
                    model=spec, weights=weights, kv_dtype=kv_dtype, context=T, gpu=gpu, batch=batch
                ),
            }
        )
    return pd.DataFrame(rows)
