"""ipywidgets explorers for notebooks 03 and 04 — a thin layer: every redraw calls a
plain, tested function (:func:`k3lib.views.explorers.layout_figure`,
:func:`k3lib.views.explorers.offload_figure`) and shows its chart; bad input shows the one-line
error instead.

ipywidgets is imported lazily, so importing k3lib never needs it.
"""
from __future__ import annotations

from typing import Any, Callable

from k3lib.core.errors import K3InputError

CONTEXTS = ("8K", "32K", "128K", "256K", "512K", "1M")
LAYOUT_MODELS = ("kimi-k3", "deepseek-v3", "llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b")
LAYOUT_GPUS = ("h100-sxm", "h200-sxm", "b200", "b300", "mi300x", "mi325x", "a100-sxm-80gb", "l40s")
WEIGHTS = ("native", "bf16", "fp8", "q8_0", "q4_k_m", "q2_k")
KV_DTYPES = ("bf16", "fp8", "int4")
OFFLOAD_GPUS = ("rtx-4090-48gb", "rtx-4090", "rtx-5090", "rtx-pro-6000", "a100-pcie-40gb", "l40s", "h200-sxm",
                "m3-ultra-512gb", "ryzen-ai-max-395-128gb")


def _redraw(out, figure: Callable[..., Any], values: dict[str, Any]) -> None:
    from IPython.display import display

    with out:
        out.clear_output(wait=True)
        try:
            display(figure(**values))
        except K3InputError as exc:
            print(exc)


def _explorer(controls: dict[str, Any], figure: Callable[..., Any]):
    import ipywidgets as w

    out = w.Output()

    def update(_change=None):
        _redraw(out, figure, {k: c.value for k, c in controls.items()})

    for c in controls.values():
        c.observe(update, names="value")
    update()
    return w.VBox([w.HBox(list(controls.values())[i:i + 3]) for i in range(0, len(controls), 3)] + [out])


def layout_explorer(**initial: Any):
    """Model, GPU, count, nodes, TP, PP, EP, precision, KV dtype, context → the per-GPU
    stacked bar of :func:`k3lib.views.explorers.layout_figure`."""
    import ipywidgets as w

    from k3lib.views.explorers import layout_figure

    v = {"model": "kimi-k3", "gpu": "h200-sxm", "gpus": 16, "nodes": 2, "tp": 8, "pp": 2, "ep": 1,
         "weights": "native", "kv_dtype": "bf16", "context": "256K"} | initial
    controls = {
        "model": w.Dropdown(options=LAYOUT_MODELS, value=v["model"], description="model"),
        "gpu": w.Dropdown(options=LAYOUT_GPUS, value=v["gpu"], description="GPU"),
        "gpus": w.Dropdown(options=(1, 2, 4, 8, 16, 24, 32, 48, 64), value=v["gpus"], description="GPUs"),
        "nodes": w.Dropdown(options=(1, 2, 3, 4, 6, 8), value=v["nodes"], description="nodes"),
        "tp": w.Dropdown(options=(1, 2, 4, 8, 16), value=v["tp"], description="TP"),
        "pp": w.Dropdown(options=(1, 2, 3, 4, 6, 8), value=v["pp"], description="PP"),
        "ep": w.Dropdown(options=(1, 8, 16, 32, 64), value=v["ep"], description="EP"),
        "weights": w.Dropdown(options=WEIGHTS, value=v["weights"], description="weights"),
        "kv_dtype": w.Dropdown(options=KV_DTYPES, value=v["kv_dtype"], description="KV dtype"),
        "context": w.Dropdown(options=CONTEXTS, value=v["context"], description="context"),
    }
    return _explorer(controls, layout_figure)


def offload_explorer(**initial: Any):
    """GPU, RAM size and bandwidth, expert layers kept on the GPU → the time-per-token bar
    of :func:`k3lib.views.explorers.offload_figure`."""
    import ipywidgets as w

    from k3lib.views.explorers import offload_figure

    v = {"gpu": "rtx-4090-48gb", "ram": "1536GiB", "ram_bandwidth": "70GB/s", "expert_layers_on_gpu": 0} | initial
    controls = {
        "gpu": w.Dropdown(options=OFFLOAD_GPUS, value=v["gpu"], description="GPU"),
        "ram": w.Dropdown(options=("256GiB", "512GiB", "1024GiB", "1536GiB", "2048GiB", "3072GiB"), value=v["ram"],
                          description="RAM"),
        "ram_bandwidth": w.Dropdown(options=("70GB/s", "140GB/s", "307GB/s", "461GB/s", "576GB/s"),
                                    value=v["ram_bandwidth"], description="RAM BW"),
        "expert_layers_on_gpu": w.IntSlider(min=0, max=92, value=v["expert_layers_on_gpu"],
                                            description="expert layers on GPU", continuous_update=False),
    }
    return _explorer(controls, offload_figure)
