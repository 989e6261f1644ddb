"""Helpers shared by the notebooks: turning a papermill ``parameters`` cell into a
validated plan, with one clear line on bad input.

A notebook's second cell is::

    cfg = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context,
                            batch=batch, gpu=gpu, gpus=gpus)

which returns a :class:`~k3lib.core.plan.Plan` or stops the notebook with a
:class:`ParameterError` whose whole message is ``parameter <name>: <what is wrong>``.
"""
from __future__ import annotations

from typing import Any

from k3lib.core.errors import K3InputError


class ParameterError(Exception):
    """A notebook parameter is invalid. Shown by IPython as one line (no traceback)."""

    def _render_traceback_(self) -> list[str]:  # IPython hook: print only the message
        return [f"ParameterError: {self}"]


def validate(**params: Any):
    """Validate notebook parameters into a :class:`~k3lib.core.plan.Plan`.

    Keys: model, weights, kv_dtype, context, batch, gpu, gpus, and optionally nodes,
    tp, pp, activation, overhead_per_gpu, overhead_total, memory_basis (sizes as
    strings such as ``"10GiB"``).
    """
    from k3lib.core.plan import Assumptions, make_plan
    from k3lib.core.units import parse_size_bytes

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


def skip_slow_iri_checker() -> bool:
    """Keep jsonschema from importing ``rfc3987_syntax``; True if the guard was set.

    Altair and nbformat import jsonschema, which imports ``rfc3987_syntax`` when it is
    installed (Jupyter's ``jsonschema[format-nongpl]`` brings it) to check the ``iri``
    string format; that module builds a parser at import time, 1.6–3 s of CPU on a
    2-core machine — a third of a notebook's run. jsonschema treats it as optional and
    neither Altair's nor nbformat's schemas use that format, so nothing changes.
    ``sys.modules[name] = None`` makes the import raise ImportError, which jsonschema
    expects. Only acts before jsonschema's first import; a no-op afterwards.
    """
    import sys

    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return False
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]
    return True


def setup() -> str:
    """Enable the offline Altair renderer for a notebook session; returns its name."""
    skip_slow_iri_checker()
    import altair as alt

    alt.renderers.enable(ALTAIR_RENDERER)
    return alt.renderers.active
