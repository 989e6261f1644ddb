"""check-log's shared parts: one row of logged vs predicted, the tolerances of the engine rules,
and picking a log's figures by quantity. Both :mod:`k3lib.engines.logcheck` (vLLM, SGLang, the
command) and :mod:`k3lib.engines.logcheck_gguf` (llama.cpp, Ollama) build their rows here.

A row's error is ``100 · (predicted − logged) / logged`` %, reproduced when ``|error| ≤ tolerance``:

>>> check_row("KV", 1024.0, 1029.0, "MiB", KV_TOLERANCE_PCT, "2·L·K·H·b·T").within
True
"""

from __future__ import annotations

from dataclasses import dataclass

from k3lib.engines.logparse import Logged

#: tolerances of the engine rules (issue 16): KV 0.5 %, weights 3 %
KV_TOLERANCE_PCT = 0.5
WEIGHTS_TOLERANCE_PCT = 3.0
#: the compute buffer is modelled, not reproduced: the widest band measured on the real-llama.cpp tier
#: (llamacpp_compute_buffer_bytes; data/measured/llamacpp-0c1e570-cpu.csv)
COMPUTE_TOLERANCE_PCT = 20.0


@dataclass(frozen=True)
class CheckRow:
    """Logged vs predicted for one component."""

    component: str
    logged: float
    predicted: float
    unit: str
    error_pct: float
    tolerance_pct: float
    within: bool
    rule: str


def check_row(
    component: str,
    logged: float,
    predicted: float,
    unit: str,
    tol: float,
    rule: str,
    allowed: tuple[float, float] | None = None,
) -> CheckRow:
    """Logged vs predicted; reproduced when within ``tol`` % or, with ``allowed`` = (lo, hi), when the
    logged figure lies in what the engine's rounded prints leave open (lo ≤ logged ≤ hi)."""
    err = 100.0 * (predicted - logged) / logged if logged else (0.0 if not predicted else 100.0)
    within = abs(err) <= tol or (allowed is not None and allowed[0] <= logged <= allowed[1])
    return CheckRow(component, logged, predicted, unit, round(err, 3), tol, within, rule)


def figures_named(figs: list[Logged], q: str) -> list[Logged]:
    """The figures of ``figs`` whose quantity is ``q``, in log order."""
    return [f for f in figs if f.quantity == q]
