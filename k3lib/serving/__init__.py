"""Serving model: decode/prefill step time, communication, concurrency and cost of a plan,
with efficiencies fitted on measurements (:mod:`k3lib.serving.calibration`).

Its own layer: it reads ``k3lib.core``, ``k3lib.engines`` and ``k3lib.loaders``, and holds the offload model
(:mod:`k3lib.serving.offload_model`); the studies (the checklist's throughput step) and the surfaces import it.
Entry points: :func:`serving_estimate` (a plan for an engine),
:func:`offload_serving_estimate` (experts in host RAM, or CPU-only with ``gpus=0``),
:func:`cpu_serving_estimate`; :func:`render_text` prints an estimate; :func:`holdout_table`
gives the held-aside error as a DataFrame.

A plan that does not load has no speed: the estimators raise :class:`PlanDoesNotLoad`
(``exit_code`` 3, the exit status of ``k3plan speed``); an estimate that exists always ``loads``.
"""

from k3lib.serving.calibration import holdout_markdown, holdout_summary, holdout_table
from k3lib.serving.estimate import (
    BASES,
    FIGURES,
    Figure,
    PlanDoesNotLoad,
    ServingEstimate,
    cpu_serving_estimate,
    offload_serving_estimate,
    render_text,
    serving_estimate,
)

__all__ = [
    "BASES",
    "FIGURES",
    "Figure",
    "PlanDoesNotLoad",
    "ServingEstimate",
    "cpu_serving_estimate",
    "holdout_markdown",
    "holdout_summary",
    "holdout_table",
    "offload_serving_estimate",
    "render_text",
    "serving_estimate",
]
