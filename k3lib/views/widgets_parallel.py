"""ipywidgets explorers for notebooks 03 and 04 — a thin layer: every redraw calls a
plain, tested function (:func:`k3lib.views.explorers.layout_figure`,
:func:`k3lib.views.explorers.offload_figure`) and shows its chart; bad input shows the one-line
error instead, and the next change redraws (an explorer never stays on an error).

The layout explorer offers only consistent choices (:func:`layout_choices`): GPUs are
nodes × the GPU's ``gpus_per_node``, TP divides a node and the model's heads, PP divides
GPUs ÷ TP, EP is 1 or TP × DP; when one control changes, the others are fixed up.

ipywidgets is imported lazily, so importing k3lib never needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from k3lib.core.errors import K3InputError

CONTEXTS = ("8K", "32K", "128K", "256K", "512K", "1M")
LAYOUT_MODELS = ("kimi-k3", "deepseek-v3", "llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b")
LAYOUT_GPUS = ("h100-sxm", "h200-sxm", "b200", "b300", "mi300x", "mi325x", "a100-sxm-80gb", "l40s")
WEIGHTS = ("native", "bf16", "fp8", "q8_0", "q4_k_m", "q2_k")
KV_DTYPES = ("bf16", "fp8", "int4")
OFFLOAD_GPUS = (
    "rtx-4090-48gb",
    "rtx-4090",
    "rtx-5090",
    "rtx-pro-6000",
    "a100-pcie-40gb",
    "l40s",
    "h200-sxm",
    "m3-ultra-512gb",
    "ryzen-ai-max-395-128gb",
)


NODES = (1, 2, 3, 4, 6, 8)
WIDE = {"description_width": "initial"}  # labels shown whole ("expert layers on GPU"), not "expert lay…"


@dataclass(frozen=True)
class LayoutChoices:
    """One consistent layout and the choices that stay consistent around it.

    $G = nodes · n_{node}$ GPUs, $G = TP · PP · DP$; TP divides $n_{node}$ (TP stays
    inside a node) and every head count of the model; EP is 1 or $TP · DP$.
    """

    gpus_per_node: int
    gpus: int
    nodes: int
    tp: int
    pp: int
    dp: int
    ep: int
    tp_options: tuple[int, ...]
    pp_options: tuple[int, ...]
    ep_options: tuple[int, ...]

    def describe(self) -> str:
        """``16 GPUs = 2 nodes × 8; TP 8 × PP 2 × DP 1``."""
        return (
            f"{self.gpus} GPUs = {self.nodes} node{'s' if self.nodes > 1 else ''} × {self.gpus_per_node}; "
            f"TP {self.tp} × PP {self.pp} × DP {self.dp}" + (f", EP {self.ep}" if self.ep > 1 else "")
        )


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(d for d in range(1, n + 1) if n % d == 0)


def layout_choices(*, model: str, gpu: str, nodes: int, tp: int, pp: int, ep: int = 1) -> LayoutChoices:
    """The nearest consistent layout to the one asked for, and the options around it.

    A ``tp`` the node or the model does not allow becomes the largest that is allowed; a ``pp``
    that does not divide $G/TP$ becomes ``nodes`` (one stage per node) where it divides, else
    the largest divisor below it; an ``ep`` other than 1 or $TP·DP$ becomes 1.
    """
    from k3lib.core.hardware import get_gpu
    from k3lib.core.layout import valid_tp_sizes
    from k3lib.core.models import get_model

    per_node = get_gpu(gpu).gpus_per_node
    spec = get_model(model)
    moe = bool(getattr(getattr(spec, "mlp", None), "moe_layers", 0))
    nodes = nodes if nodes in NODES else 1
    gpus = nodes * per_node
    tp_options = tuple(t for t in valid_tp_sizes(spec, per_node) if per_node % t == 0)
    tp = tp if tp in tp_options else max(tp_options)
    pp_options = _divisors(gpus // tp)
    if pp not in pp_options:
        pp = nodes if nodes in pp_options else max(p for p in pp_options if p <= nodes)
    dp = gpus // (tp * pp)
    ep_options = tuple(sorted({1, tp * dp})) if moe else (1,)  # a dense model has no experts to spread
    ep = ep if ep in ep_options else 1
    return LayoutChoices(
        gpus_per_node=per_node,
        gpus=gpus,
        nodes=nodes,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        tp_options=tp_options,
        pp_options=pp_options,
        ep_options=ep_options,
    )


def _redraw(out, figure: Callable[..., Any], values: dict[str, Any]) -> str | None:
    """Replace the output with the figure, or with one line saying what is wrong; any error
    is caught, so the next change draws again. Returns that line, or None when it drew."""
    from IPython.display import display

    with out:
        out.clear_output(wait=True)
        try:
            shown = figure(**values)
            for part in shown if isinstance(shown, tuple) else (shown,):
                display(part)
            return None
        except K3InputError as exc:
            message = str(exc)
        except Exception as exc:  # any error: an explorer must not stay stuck on it
            message = f"cannot draw this configuration: {type(exc).__name__}: {exc}"
        print(message)
        return message


def verdict_first(chart, *, draw_when_not_loading: bool = True) -> tuple:
    """A chart whose title is a verdict → (the verdict as a coloured line, the chart untitled):
    the verdict is read above the chart, never clipped in its title. With
    ``draw_when_not_loading`` False, a plan that does not load shows its verdict only."""
    from k3lib.views.charts_parallel import verdict_line, verdict_ok

    text = str(chart.title)
    if not verdict_ok(text) and not draw_when_not_loading:
        return (verdict_line(text),)
    return verdict_line(text), chart.properties(title="")


def layout_view(**values: Any) -> tuple:
    """:func:`k3lib.views.explorers.layout_figure` with its verdict as a coloured line above the bar
    (an overfull bar is drawn: it shows by how much the fullest GPU is over)."""
    from k3lib.views.charts_parallel import readable
    from k3lib.views.explorers import layout_figure

    verdict, chart = verdict_first(layout_figure(**values))
    return verdict, readable(chart)


def offload_view(**values: Any) -> tuple:
    """:func:`k3lib.views.explorers.offload_figure` with its verdict as a coloured line; the
    time-per-token bar only for a plan that loads (a plan that cannot load has no speed)."""
    from k3lib.views.charts_parallel import ceiling_labelled, readable, verdict_line
    from k3lib.views.explorers import offload_figure

    parts = verdict_first(offload_figure(**values), draw_when_not_loading=False)
    line = verdict_line(ceiling_labelled(parts[0].lines[0]))
    return (line,) if len(parts) == 1 else (line, readable(parts[1]))


def _explorer(controls: dict[str, Any], figure: Callable[..., Any]):
    import ipywidgets as w

    out = w.Output()

    def update(_change=None):
        _redraw(out, figure, {k: c.value for k, c in controls.items()})

    for c in controls.values():
        c.observe(update, names="value")
    update()
    return w.VBox([w.HBox(list(controls.values())[i : i + 3]) for i in range(0, len(controls), 3)] + [out])


def layout_explorer(**initial: Any):
    """Model, GPU, nodes, TP, PP, EP, precision, KV dtype, context → the per-GPU stacked bar
    of :func:`k3lib.views.explorers.layout_figure`. GPUs follow from nodes × GPUs per node;
    TP, PP and EP offer only the values :func:`layout_choices` allows."""
    import ipywidgets as w

    v: dict[str, Any] = {
        "model": "kimi-k3",
        "gpu": "h200-sxm",
        "nodes": 2,
        "tp": 8,
        "pp": 2,
        "ep": 1,
        "weights": "native",
        "kv_dtype": "bf16",
        "context": "256K",
    } | initial
    c = layout_choices(model=v["model"], gpu=v["gpu"], nodes=v["nodes"], tp=v["tp"], pp=v["pp"], ep=v["ep"])
    controls = {
        "model": w.Dropdown(options=LAYOUT_MODELS, value=v["model"], description="model"),
        "gpu": w.Dropdown(options=LAYOUT_GPUS, value=v["gpu"], description="GPU"),
        "nodes": w.Dropdown(options=NODES, value=c.nodes, description="nodes"),
        "tp": w.Dropdown(options=c.tp_options, value=c.tp, description="TP"),
        "pp": w.Dropdown(options=c.pp_options, value=c.pp, description="PP"),
        "ep": w.Dropdown(options=c.ep_options, value=c.ep, description="EP"),
        "weights": w.Dropdown(options=WEIGHTS, value=v["weights"], description="weights"),
        "kv_dtype": w.Dropdown(options=KV_DTYPES, value=v["kv_dtype"], description="KV dtype"),
        "context": w.Dropdown(options=CONTEXTS, value=v["context"], description="context"),
    }
    summary = w.Label(value=c.describe())
    out = w.Output()
    busy = [False]

    def update(_change=None):
        if busy[0]:
            return
        busy[0] = True
        try:
            now = layout_choices(
                model=controls["model"].value,
                gpu=controls["gpu"].value,
                nodes=controls["nodes"].value,
                tp=controls["tp"].value,
                pp=controls["pp"].value,
                ep=controls["ep"].value,
            )
            for name, options, value in (
                ("tp", now.tp_options, now.tp),
                ("pp", now.pp_options, now.pp),
                ("ep", now.ep_options, now.ep),
            ):
                if tuple(controls[name].options) != options:
                    controls[name].options = options
                controls[name].value = value
            summary.value = now.describe()
            values = {k: ctl.value for k, ctl in controls.items()} | {"gpus": now.gpus}
        except Exception as exc:  # any error: say it and stay usable
            summary.value = f"cannot build a layout: {exc}"
            return
        finally:
            busy[0] = False
        box.last_message = _redraw(out, layout_view, values)

    box = w.VBox()
    for ctl in controls.values():
        ctl.observe(update, names="value")
    update()
    names = list(controls)
    box.children = [w.HBox([controls[n] for n in names[i : i + 3]]) for i in range(0, len(names), 3)] + [
        w.HBox([summary]),
        out,
    ]
    box.controls, box.summary, box.output = controls, summary, out
    return box


def offload_explorer(**initial: Any):
    """GPU, RAM size, host platform (data/hosts.csv) or bandwidth, expert layers kept on the
    GPU → the time-per-token bar of :func:`k3lib.views.explorers.offload_figure` (with neither
    host nor bandwidth, guide 004's 70 GB/s, labelled as assumed in the title)."""
    import ipywidgets as w

    from k3lib.core.hosts import load_hosts

    v = {
        "gpu": "rtx-4090-48gb",
        "ram": "1536GiB",
        "ram_bandwidth": None,
        "host": None,
        "expert_layers_on_gpu": 0,
    } | initial
    hosts = [("none: bandwidth assumed", None)] + [(h.id, h.id) for h in load_hosts() if not h.unified_memory]
    controls = {
        "gpu": w.Dropdown(options=OFFLOAD_GPUS, value=v["gpu"], description="GPU"),
        "ram": w.Dropdown(
            options=("256GiB", "512GiB", "1024GiB", "1536GiB", "2048GiB", "3072GiB"), value=v["ram"], description="RAM"
        ),
        "host": w.Dropdown(options=hosts, value=v["host"], description="host"),
        "ram_bandwidth": w.Dropdown(
            options=[("from the host", None), "70GB/s", "140GB/s", "307GB/s", "461GB/s", "576GB/s"],
            value=v["ram_bandwidth"],
            description="RAM BW",
        ),
        "expert_layers_on_gpu": w.IntSlider(
            min=0,
            max=92,
            value=v["expert_layers_on_gpu"],
            style=WIDE,
            description="expert layers on GPU",
            continuous_update=False,
        ),
    }
    return _explorer(controls, offload_view)
