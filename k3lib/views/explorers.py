"""The explorers' callbacks: plain, tested functions that turn widget values into a chart or
a table (presentation, on top of :mod:`k3lib.studies`; the studies never import this module).
Bad input raises one :class:`~k3lib.core.errors.K3InputError` naming the field (the explorers
show that line instead of a chart), or a one-row frame naming it (:func:`checklist_frame`).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from k3lib.core.errors import K3InputError
from k3lib.core.layout import Layout, check_tp
from k3lib.core.models import get_model
from k3lib.core.units import GB, GiB, parse_positive_int
from k3lib.studies.checklist import run_checklist
from k3lib.studies.offload import OffloadPlan, plan_offload
from k3lib.studies.parallel import distribute, per_gpu_long
from k3lib.studies.solver import CHEATSHEET_GPUS, checklist_assumptions, format_context
from k3lib.views.charts_parallel import per_gpu_stacked_bar, time_per_token_bar
from k3lib.views.params import parameter_errors


def layout_figure(*, model: str = "kimi-k3", gpu: str = "h200", gpus: int = 8, nodes: int = 1, tp: int = 8,
                  pp: int = 1, ep: int = 1, weights: str = "native", kv_dtype: str = "bf16",
                  context: object = "256K", batch: int = 1):
    """The explorer's callback: a stacked bar per GPU (stage) whose title carries the
    verdict. ``gpus`` must equal TP × PP (× DP where EP > TP)."""
    n = parse_positive_int(gpus, "gpus")
    tp_i = check_tp(get_model(model), tp)
    pp_i = parse_positive_int(pp, "pp")
    if n % (tp_i * pp_i):
        raise K3InputError("gpus", f"{n} GPUs is not a multiple of TP {tp_i} × PP {pp_i}", "TP × PP × DP")
    dp = n // (tp_i * pp_i)
    plan = distribute(model=model, gpu=gpu, layout=Layout(tp=tp_i, pp=pp_i, dp=dp, ep=ep, nodes=nodes),
                      weights=weights, kv_dtype=kv_dtype, context=context, batch=batch)
    return per_gpu_stacked_bar(per_gpu_long(plan), title=plan.verdict())


def offload_figure(*, gpu: str = "rtx-4090-48gb", ram: object = "1536GiB", ram_bandwidth: object = "70GB/s",
                   expert_layers_on_gpu: int = 0, model: str = "kimi-k3", weights: str = "q4_k_m",
                   context: object = 8192, kv_dtype: str = "bf16"):
    """The explorer's callback: a bar of milliseconds per token by device (GPU vs RAM),
    titled with VRAM, RAM and tokens/s."""
    import pandas as pd

    p = plan_offload(model=model, weights=weights, gpu=gpu, ram=ram, ram_bandwidth=ram_bandwidth,
                     expert_layers_on_gpu=expert_layers_on_gpu, context=context, kv_dtype=kv_dtype)
    df = pd.DataFrame([{"where": t.name, "ms per token": t.seconds_per_step * 1e3,
                        "GB read per token": t.read_bytes_per_step / GB} for t in p.tiers])
    return time_per_token_bar(df, title=p.verdict())


def offload_validate(**params: Any) -> OffloadPlan:
    """The notebook's parameter check: :func:`plan_offload`, with a bad value stopping
    the notebook as one line, ``parameter <name>: <what is wrong>``."""
    with parameter_errors():
        return plan_offload(**params)


def checklist_frame(*, model: str, gpu: str, gpus: object, context: object,
                    overhead_per_gpu_gib: "float | None" = None, kv_dtype: str = "fp8", nodes: object = None):
    """The interactive form's callback: inventory in, one row per step out (a DataFrame
    with step, title, figure, reason), plus a row for the recommended configuration.
    Bad input gives a one-row frame naming the field instead of raising.

    >>> checklist_frame(model="kimi-k3@guide-000", gpu="h100", gpus=6, context="256K")["figure"].iloc[0]
    'real budget 432.0 GiB'
    """
    import pandas as pd

    try:
        a = None
        if overhead_per_gpu_gib is not None:
            try:
                oh = float(overhead_per_gpu_gib)
            except (TypeError, ValueError):
                raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} is not a number") from None
            if not math.isfinite(oh) or oh < 0:
                raise K3InputError("overhead_per_gpu_gib", f"{overhead_per_gpu_gib!r} must be ≥ 0")
            a = checklist_assumptions(int(round(oh * GiB)))
        c = run_checklist(model=model, gpu=gpu, gpus=gpus, context=context, nodes=nodes, kv_dtype=kv_dtype,
                          assumptions=a)
    except K3InputError as exc:
        return pd.DataFrame([{"step": 0, "title": "input error", "figure": exc.field, "reason": str(exc)}])
    df = c.to_frame()
    if c.recommended is not None:
        rec = {"step": 8, "title": "Recommended", "figure": c.recommended.label, "reason": c.recommended.reason}
    elif c.cheapest is not None:
        rec = {"step": 8, "title": "Recommended", "figure": c.cheapest.label,
               "reason": f"Nothing fits on {c.gpus} GPUs; {c.cheapest.reason}"}
    else:
        rec = {"step": 8, "title": "Recommended", "figure": "none",
               "reason": f"No deployable configuration up to 32 {c.gpu} holds {format_context(c.context_tokens)}."}
    return pd.concat([df, pd.DataFrame([rec])], ignore_index=True)


def checklist_form(*, model: str = "kimi-k3@guide-000", gpu: str = "h100-sxm", gpus: int = 8,
                   nodes: int = 1, context: str = "256K", overhead_per_gpu_gib: float = 8.0,
                   models: Sequence[str] = ("kimi-k3@guide-000", "kimi-k3"),
                   gpu_choices: Sequence[str] = CHEATSHEET_GPUS,
                   contexts: Sequence[str] = ("32K", "64K", "128K", "256K", "512K", "1M")):
    """An ipywidgets form (thin layer over :func:`checklist_frame`): change any input and
    the table of answers updates. Returns the widget box; ``box.children[-1]`` is the
    HTML output. Needs ipywidgets (imported lazily)."""
    import ipywidgets as w

    style = {"description_width": "9em"}
    inputs = dict(
        model=w.Dropdown(options=list(dict.fromkeys([model, *models])), value=model, description="model", style=style),
        gpu=w.Dropdown(options=list(dict.fromkeys([gpu, *gpu_choices])), value=gpu, description="GPU", style=style),
        gpus=w.IntSlider(value=int(gpus), min=1, max=32, description="GPUs", style=style),
        nodes=w.IntSlider(value=int(nodes), min=1, max=4, description="nodes", style=style),
        context=w.Dropdown(options=list(dict.fromkeys([context, *contexts])), value=context,
                           description="target context", style=style),
        overhead_per_gpu_gib=w.FloatText(value=float(overhead_per_gpu_gib), description="overhead/GPU (GiB)",
                                         style=style),
    )
    out = w.HTML()

    def update(_change=None) -> None:
        values = {k: v.value for k, v in inputs.items()}
        if get_model(values["model"]).kind != "profile":
            values["overhead_per_gpu_gib"] = None   # a real architecture: k3lib's measured rule, as `estimate`
        df = checklist_frame(**values)
        out.value = df.to_html(index=False, escape=True)

    for widget in inputs.values():
        widget.observe(update, names="value")
    update()
    return w.VBox([*inputs.values(), out])
