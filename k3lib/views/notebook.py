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
from k3lib.views.params import ParameterError, PlanParameters, parameter_error, parameter_errors

__all__ = [
    "ParameterError",
    "PlanParameters",
    "parameter_error",
    "parameter_errors",
    "validate",
    "engine_plan",
    "setup",
    "skip_slow_iri_checker",
    "ALTAIR_RENDERER",
]


def validate(**params: Any):
    """Validate notebook parameters into a :class:`~k3lib.core.plan.Plan`.

    Keys: model, weights, kv_dtype, context, batch, gpu, gpus, and optionally nodes,
    tp, pp, activation, overhead_per_gpu, overhead_total, memory_basis (sizes as
    strings such as ``"10GiB"``). They are checked by
    :class:`~k3lib.views.params.PlanParameters` (ASCII digits, physical bounds, no
    unknown key); any bad value raises one :class:`ParameterError`.
    """
    from k3lib.core.plan import make_plan

    with parameter_errors():
        if "engine" in params or "gpu_memory_utilization" in params:
            raise K3InputError(
                next(k for k in ("engine", "gpu_memory_utilization") if k in params),
                "is not a notebook plan parameter (the plan is engine-neutral)",
                "use k3lib.views.any_model.validate or the report for engine settings",
            )
        p = PlanParameters.parse(**params)
        return make_plan(**p.plan_kwargs())


def engine_plan(*, engine: Any = None, **params: Any):
    """The plan for an engine from notebook parameters (:func:`validate`'s keys; ``model`` may be a
    user's loaded file): :func:`k3lib.engines.deployment.plan_for_engine`, so a notebook's verdict
    is the one ``k3plan estimate`` prints. ``engine`` None: the model's default (vLLM; llama.cpp for a
    GGUF; a guide profile's own policy). Bad input stops the notebook with one ParameterError.

    >>> engine_plan(model="llama-3.1-70b", gpu="h100-sxm", gpus=2, context="32K").engine.kv_capacity_tokens
    9088
    """
    from k3lib.engines.deployment import plan_for_engine

    with parameter_errors():
        model = params.pop("model", "kimi-k3")
        spec = model.require_architecture() if hasattr(model, "require_architecture") else model
        p = PlanParameters.parse(model=spec, **params)
        kwargs = p.plan_kwargs()
        kwargs["model"] = model
        a = kwargs.pop("assumptions")
        given = any(
            v is not None
            for v in (a.activation_bytes, a.overhead_per_gpu_bytes, a.overhead_total_bytes, a.memory_basis)
        )
        return plan_for_engine(engine=engine, assumptions=a if given else None, **kwargs)


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


def setup() -> None:
    """Enable the offline Altair renderer for a notebook session (``alt.renderers.active`` names
    it). Returns nothing, so the set-up cell shows no ``'svg'`` to the reader."""
    skip_slow_iri_checker()
    import altair as alt

    alt.renderers.enable(ALTAIR_RENDERER)
