"""Serving model: decode/prefill step time, communication, concurrency and cost of a plan,
with efficiencies fitted on measurements (:mod:`k3lib.serving.calibration`).

Its own layer: it reads ``k3lib.core``, ``k3lib.engines`` and ``k3lib.studies.offload_model``;
only the surfaces import it. The entry point is :func:`serving_estimate`.
"""
from k3lib.serving.estimate import (BASES, FIGURES, Figure, PlanDoesNotLoad, ServingEstimate, cpu_serving_estimate,
                                    serving_estimate)

__all__ = ["BASES", "FIGURES", "Figure", "PlanDoesNotLoad", "ServingEstimate", "cpu_serving_estimate",
           "serving_estimate"]
