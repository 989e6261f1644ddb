"""ipywidgets explorers for the notebooks: turn the knobs, watch the budget change.

The callback logic is :func:`explorer_update`, a plain function (no widgets, no
browser) that tests call directly. :func:`explorer` wires it to dropdowns and
sliders; ipywidgets is imported only there.

>>> df, chart, message = explorer_update(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8",
...                                      context="256K", gpu="h100-sxm", gpus=6)
>>> float(df.loc["total", "total_GiB"]), message.split(":")[0]
(415.0, 'FITS')
>>> explorer_update(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K",
...                 gpu="nosuch", gpus=6)[2].split(":")[0]
'parameter gpu'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt
    import pandas as pd

CONTEXT_CHOICES = ("8K", "32K", "64K", "128K", "256K", "512K", "1M")
MAX_GPUS = 64
MAX_BATCH = 16


def explorer_update(
    *,
    model: str,
    weights: str,
    kv_dtype: str,
    context: object,
    gpu: str,
    gpus: object,
    batch: object = 1,
    unit: str = "GiB",
) -> tuple[pd.DataFrame | None, alt.LayerChart | alt.FacetChart | None, str]:
    """One configuration → ``(budget table, per-GPU stacked bar, one-line message)``.

    Bad input never raises and never shows a number: it returns ``(None, None,
    "parameter <field>: ...")``, the same line :func:`k3lib.views.notebook.validate` gives.
    """
    from k3lib.views import charts, tables
    from k3lib.views.notebook import ParameterError, validate

    try:
        plan = validate(
            model=model, weights=weights, kv_dtype=kv_dtype, context=context, gpu=gpu, gpus=gpus, batch=batch
        )
    except ParameterError as exc:
        return None, None, str(exc)
    df = tables.plan_table(plan, unit=unit)
    label = (
        f"{plan.model.id} · {plan.weight_format} · KV {plan.kv_dtype} · "
        f"{tables.context_label(plan.context_tokens)} · {plan.gpus}× {plan.gpu.id}"
    )
    chart = charts.budget_stacked_bar({label: plan}, per="gpu", unit=unit)
    verdict = "FITS" if plan.fits else "DOES NOT FIT"
    message = f"{verdict}: {plan.reason.split(': ', 1)[1]}" + "".join(f" (note: {n})" for n in plan.notes)
    return df, chart, message


def _display_output(obj: object) -> dict:
    """A ``display_data`` output for ``obj``, formatted as the running IPython would
    (an Altair chart becomes SVG with the workbook's renderer); plain text outside IPython."""
    from IPython import get_ipython

    ip = get_ipython()
    if ip is not None:
        data, metadata = ip.display_formatter.format(obj)
    else:
        data, metadata = {"text/plain": repr(obj)}, {}
    return {"output_type": "display_data", "data": data, "metadata": metadata}


def _options(known: list[str], value: Any) -> list[str]:
    """The known choices, with ``value`` added if it is not one (its error then shows)."""
    return known if value in known else [str(value), *known]


def gpu_count_choices(model: object, gpu: object, *, current: object = None, max_gpus: int = MAX_GPUS) -> list[int]:
    """The GPU counts the explorer's slider offers: those with a deployable layout of ``model`` on
    ``gpu`` (:func:`k3lib.core.search.candidate_gpu_counts`: 1…a node where the model splits, then
    whole nodes), up to ``max_gpus``. ``current`` is added if it is not one (its error then shows);
    an unknown model or GPU offers 1…``max_gpus`` (the explorer shows that parameter's error).

    >>> gpu_count_choices("kimi-k3", "h100-sxm", max_gpus=32)
    [1, 2, 3, 4, 6, 8, 16, 24, 32]
    """
    from k3lib.core.errors import K3InputError
    from k3lib.core.models import get_model
    from k3lib.core.search import candidate_gpu_counts

    try:
        counts = list(candidate_gpu_counts(get_model(str(model)), str(gpu), max_gpus=max_gpus))
    except (K3InputError, KeyError, ValueError):
        counts = list(range(1, max_gpus + 1))
    try:
        n = int(current)  # type: ignore[call-overload]  # anything a widget holds; not a count → the list
    except (TypeError, ValueError):
        return counts
    return counts if n in counts else sorted({*counts, n})


def explorer(
    *,
    model: str = "kimi-k3@guide-000",
    weights: str = "q4",
    kv_dtype: str = "fp8",
    context: object = "256K",
    gpu: str = "h100-sxm",
    gpus: int = 6,
    batch: int = 1,
    unit: str = "GiB",
):
    """A widget box: model, weight precision, KV dtype, context, GPU, GPU count and batch,
    above an output area that :func:`explorer_update` refreshes in place.

    The box's ``last_update`` attribute holds the latest ``(table, chart, message)``.
    """
    import ipywidgets as w

    from k3lib.core.hardware import list_gpus
    from k3lib.core.models import list_models
    from k3lib.core.precisions import kv_dtypes, weight_formats

    style = {"description_width": "80px"}
    layout = w.Layout(width="300px")
    controls = {
        "model": w.Dropdown(
            options=_options([m.id for m in list_models()], model),
            value=str(model),
            description="model",
            style=style,
            layout=layout,
        ),
        "weights": w.Dropdown(
            options=_options([f.id for f in weight_formats()], weights),
            value=str(weights),
            description="weights",
            style=style,
            layout=layout,
        ),
        "kv_dtype": w.Dropdown(
            options=_options([d.id for d in kv_dtypes()], kv_dtype),
            value=str(kv_dtype),
            description="KV dtype",
            style=style,
            layout=layout,
        ),
        "context": w.Dropdown(
            options=_options(list(CONTEXT_CHOICES), context),
            value=str(context),
            description="context",
            style=style,
            layout=layout,
        ),
        "gpu": w.Dropdown(
            options=_options([g.id for g in list_gpus()], gpu),
            value=str(gpu),
            description="GPU",
            style=style,
            layout=layout,
        ),
        # only counts the model deploys on (1…a node where it splits, then whole nodes): no slider
        # position that can only print an error
        "gpus": w.SelectionSlider(
            options=gpu_count_choices(model, gpu, current=gpus),
            value=int(gpus),
            description="GPUs",
            style=style,
            layout=layout,
        ),
        "batch": w.IntSlider(
            value=int(batch), min=1, max=max(MAX_BATCH, int(batch)), description="batch", style=style, layout=layout
        ),
    }
    out = w.Output()
    c = controls
    box = w.VBox(
        [
            w.HBox([c["model"], c["weights"], c["kv_dtype"]]),
            w.HBox([c["context"], c["gpu"]]),
            w.HBox([c["gpus"], c["batch"]]),
            out,
        ]
    )

    def recount(_change: object = None) -> None:
        """A new model or GPU: offer its deployable counts, keeping the count (or the next one up)."""
        slider = controls["gpus"]
        counts = gpu_count_choices(controls["model"].value, controls["gpu"].value)
        if list(slider.options) == counts:
            return
        reoffer(box, slider, counts, next((n for n in counts if n >= slider.value), counts[-1]))

    def refresh(_change: object = None) -> None:
        if getattr(box, "recounting", False):
            return
        result = explorer_update(**{k: ctl.value for k, ctl in controls.items()}, unit=unit)
        box.last_update = result
        df, chart, message = result
        # Replace the output area's contents in one trait update, rather than capturing
        # print/display with `with out:`. Captured output makes a headless executor
        # (nbclient, so papermill and nbconvert) echo widget state back over the shell
        # channel while it waits there for the cell's reply, which can stall the cell until
        # its timeout (jupyter/nbclient#312). Here the kernel only sends state.
        shown = [{"output_type": "stream", "name": "stdout", "text": message + "\n"}]
        if df is not None:
            shown += [_display_output(df), _display_output(chart)]
        out.outputs = tuple(shown)

    controls["model"].observe(recount, names="value")
    controls["gpu"].observe(recount, names="value")
    for ctl in controls.values():
        ctl.observe(refresh, names="value")
    box.controls = controls
    refresh()
    return box


def reoffer(box: Any, control: Any, options: list, value: Any) -> None:
    """Give ``control`` new ``options`` and ``value`` as one change the explorer does not redraw
    for twice: ``box.recounting`` is set while the two traits change, and the explorer's
    refresh returns early while it is (it redraws once, for the value the reader sees)."""
    box.recounting = True
    try:
        control.options = options
        control.value = value
    finally:
        box.recounting = False
