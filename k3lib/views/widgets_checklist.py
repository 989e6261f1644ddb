"""The decision-path explorer of notebook 05 — a thin ipywidgets layer over plain functions:
:func:`decision_view` runs the checklist (:func:`k3lib.studies.checklist.run_checklist`) and the
launch choice (:func:`k3lib.views.explorers.launch_choice`) and draws the path
(:func:`k3lib.views.charts_checklist.decision_path_chart`) under a coloured verdict line.

The GPU-count menu offers only counts someone can deploy for the model on that GPU
(:func:`k3lib.core.layout.deployable_gpu_counts`: one node where the heads split, then whole
nodes); it is rebuilt when the model or the GPU changes. ipywidgets is imported lazily.
"""

from __future__ import annotations

from typing import Any

MODELS = ("kimi-k3", "llama-3.1-70b", "qwen3-next-80b")
GPUS = ("h100-sxm", "h200-sxm", "b200", "mi300x")
CONTEXTS = ("32K", "128K", "256K", "512K", "1M")
KV_DTYPES = ("fp8", "bf16")


def gpu_count_options(*, model: str, gpu: str, max_gpus: int = 32) -> tuple[int, ...]:
    """The deployable GPU counts of ``model`` on ``gpu`` up to ``max_gpus``.

    >>> gpu_count_options(model="kimi-k3", gpu="h200-sxm")
    (1, 2, 3, 4, 6, 8, 16, 24, 32)
    """
    from k3lib.core.hardware import get_gpu
    from k3lib.core.layout import deployable_gpu_counts
    from k3lib.core.models import get_model

    return deployable_gpu_counts(get_model(model), gpus_per_node=get_gpu(gpu).gpus_per_node, max_gpus=max_gpus)


def context_options(*, model: str) -> tuple[str, ...]:
    """The contexts of :data:`CONTEXTS` the model supports (Llama 3.1: up to 128K).

    >>> context_options(model="llama-3.1-70b")
    ('32K', '128K')
    """
    from k3lib.core.models import get_model
    from k3lib.core.units import parse_context_tokens

    limit = get_model(model).max_context_tokens
    return tuple(c for c in CONTEXTS if parse_context_tokens(c) <= limit)


def decision_view(*, model: str, gpu: str, gpus: int, context: str, kv_dtype: str = "fp8") -> tuple:
    """(the verdict as a coloured line, the decision-path chart) for an inventory; the layout is
    the deployable one for ``gpus`` (TP inside a node, whole nodes across)."""
    from k3lib.studies.checklist import run_checklist
    from k3lib.views.charts_checklist import decision_path, decision_path_chart
    from k3lib.views.charts_parallel import verdict_line
    from k3lib.views.explorers import launch_choice, node_layout

    nodes = node_layout(model=model, gpu=gpu, gpus=gpus).nodes
    c = run_checklist(model=model, gpu=gpu, gpus=gpus, nodes=nodes, context=context, kv_dtype=kv_dtype)
    choice = launch_choice(
        model=model, gpu=gpu, gpus=gpus, nodes=nodes, context=context, kv_dtype=kv_dtype, engine="vllm"
    )
    head = "FITS" if choice.status == "fits" else "DOES NOT FIT"
    return verdict_line(f"{head} — {choice.headline}"), decision_path_chart(decision_path(c, choice=choice))


def checklist_explorer(**initial: Any):
    """Model, GPU, deployable GPU count, context and KV dtype → :func:`decision_view`."""
    import ipywidgets as w

    from k3lib.views.widgets_parallel import _redraw

    v: dict[str, Any] = {
        "model": "kimi-k3",
        "gpu": "h200-sxm",
        "gpus": 16,
        "context": "256K",
        "kv_dtype": "fp8",
    } | initial
    counts = gpu_count_options(model=v["model"], gpu=v["gpu"])
    controls = {
        "model": w.Dropdown(options=MODELS, value=v["model"], description="model"),
        "gpu": w.Dropdown(options=GPUS, value=v["gpu"], description="GPU"),
        "gpus": w.Dropdown(options=counts, value=v["gpus"] if v["gpus"] in counts else counts[-1], description="GPUs"),
        "context": w.Dropdown(options=context_options(model=v["model"]), value=v["context"], description="context"),
        "kv_dtype": w.Dropdown(options=KV_DTYPES, value=v["kv_dtype"], description="KV dtype"),
    }
    out = w.Output()
    busy = [False]

    def update(_change=None):
        if busy[0]:
            return
        busy[0] = True
        try:
            now = gpu_count_options(model=controls["model"].value, gpu=controls["gpu"].value)
            if tuple(controls["gpus"].options) != now:
                keep = controls["gpus"].value
                controls["gpus"].options = now
                controls["gpus"].value = keep if keep in now else max(n for n in now if n <= max(keep, now[0]))
            ctx = context_options(model=controls["model"].value)
            if tuple(controls["context"].options) != ctx:
                keep = controls["context"].value
                controls["context"].options = ctx
                controls["context"].value = keep if keep in ctx else ctx[-1]
        finally:
            busy[0] = False
        box.last_message = _redraw(out, decision_view, {k: c.value for k, c in controls.items()})

    box = w.VBox()
    for ctl in controls.values():
        ctl.observe(update, names="value")
    names = list(controls)
    box.children = [w.HBox([controls[n] for n in names[i : i + 3]]) for i in range(0, len(names), 3)] + [out]
    box.controls, box.output = controls, out
    update()
    return box
