"""Helpers shared by the notebooks: turning a papermill ``parameters`` cell into a
validated plan, with one clear line on bad input.

A notebook's second cell is::

    cfg = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context,
                            batch=batch, gpu=gpu, gpus=gpus)

which returns a :class:`~k3lib.plan.Plan` or stops the notebook with a
:class:`ParameterError` whose whole message is ``parameter <name>: <what is wrong>``.
"""
from __future__ import annotations

from typing import Any

from .errors import K3InputError


class ParameterError(Exception):
    """A notebook parameter is invalid. Shown by IPython as one line (no traceback)."""

    def _render_traceback_(self) -> list[str]:  # IPython hook: print only the message
        return [f"ParameterError: {self}"]


def validate(**params: Any):
    """Validate notebook parameters into a :class:`~k3lib.plan.Plan`.

    Keys: model, weights, kv_dtype, context, batch, gpu, gpus, and optionally nodes,
    tp, pp, activation, overhead_per_gpu, overhead_total, memory_basis (sizes as
    strings such as ``"10GiB"``).
    """
    from .plan import Assumptions, make_plan
    from .units import parse_size_bytes

    sizes = {}
    try:
        for key in ("activation", "overhead_per_gpu", "overhead_total"):
            value = params.pop(key, None)
            if value not in (None, ""):
                sizes[key] = parse_size_bytes(value, key)
        basis = params.pop("memory_basis", None) or None
        assumptions = Assumptions(activation_bytes=sizes.get("activation"),
                                  overhead_per_gpu_bytes=sizes.get("overhead_per_gpu"),
                                  overhead_total_bytes=sizes.get("overhead_total"), memory_basis=basis)
        return make_plan(assumptions=assumptions, **params)
    except K3InputError as exc:
        raise ParameterError(f"parameter {exc}") from None
    except TypeError as exc:
        raise ParameterError(f"parameter error: {exc}") from None


#: The Altair renderer the workbook uses. "svg" renders through vl-convert inside the
#: kernel: no JavaScript and no CDN, so charts show in JupyterLab offline, in nbconvert
#: HTML exports and in e-mailed reports, and the output is deterministic for nbval.
ALTAIR_RENDERER = "svg"


def setup() -> str:
    """Enable the offline Altair renderer for a notebook session; returns its name."""
    import altair as alt

    alt.renderers.enable(ALTAIR_RENDERER)
    return alt.renderers.active
