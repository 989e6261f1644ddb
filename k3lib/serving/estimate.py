"""The public entry: :func:`serving_estimate` — speed, concurrency and cost of a plan, every
figure labelled with its basis and its held-aside error.

**Basis** of a figure: ``measured`` (a row of ``data/measured/speed.csv`` measured exactly this
engine, model, weights, hardware, concurrency and lengths: the figure is that row's value,
``expected_error_pct`` 0), ``fitted model`` (the step-time model with the efficiencies fitted
for the engine × hardware class, :mod:`k3lib.serving.calibration`; ``expected_error_pct`` is the
median held-aside |error| of that engine × class × quantity, pooled when that group has no
held-aside rows), or ``theoretical ceiling`` ($η = 1$, no overheads, no communication:
``mode="ceiling"``, or no measurements to fit; ``expected_error_pct`` None). ``max_concurrency``
is always a ceiling (the most requests the engine's KV cache holds); ``usd_per_hour`` is the
given price times the GPUs (exact: error 0 in the fitted mode); ``usd_per_million_output_tokens``
carries the throughput's basis and error.

**A plan that does not load** (``not plan.fits``) has no speed: :func:`serving_estimate`
raises :class:`PlanDoesNotLoad` (a :class:`~k3lib.core.errors.K3InputError`); the CLI exits 3 on it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.hosts import get_host
from k3lib.serving.calibration import Calibration, FittedConstants, calibration
from k3lib.serving.concurrency import QUANTITIES, QUANTITY_UNITS, max_concurrency, predict
from k3lib.serving.cost import usd_per_hour, usd_per_million_output_tokens
from k3lib.serving.roofline import CEILING, ServingInputs, inputs_from_plan, inputs_on_cpu

BASES = ("measured", "fitted model", "theoretical ceiling")
FIGURES = ("decode_tokens_per_s_per_sequence", "output_tokens_per_s_total", "output_tokens_per_s_per_gpu",
           "prefill_tokens_per_s", "ttft_s", "tpot_s", "max_concurrency", "usd_per_hour",
           "usd_per_million_output_tokens")
MODES = ("fitted", "ceiling")


class PlanDoesNotLoad(K3InputError):
    """The plan does not load, so it has no speed figures (the CLI exits 3)."""


@dataclass(frozen=True)
class Figure:
    """One labelled figure: ``value`` (None when unknown) in ``unit``, its ``basis`` and expected error in %."""

    value: float | None
    unit: str
    basis: str
    expected_error_pct: float | None

    def __post_init__(self) -> None:
        if self.basis not in BASES:
            raise K3InputError("basis", f"{self.basis!r}", ", ".join(BASES))

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "basis": self.basis,
                "expected_error_pct": self.expected_error_pct}


@dataclass(frozen=True)
class ServingEstimate:
    """The figures of :data:`FIGURES` for one plan at one concurrency and request shape."""

    decode_tokens_per_s_per_sequence: Figure
    output_tokens_per_s_total: Figure
    output_tokens_per_s_per_gpu: Figure
    prefill_tokens_per_s: Figure
    ttft_s: Figure
    tpot_s: Figure
    max_concurrency: Figure
    usd_per_hour: Figure
    usd_per_million_output_tokens: Figure
    engine: str = ""
    hardware_class: str = ""
    mode: str = "fitted"
    concurrency: int = 1
    input_tokens: int = 1024
    output_tokens: int = 256
    constants: FittedConstants | None = field(default=None, repr=False)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Exactly the :data:`FIGURES` keys, each ``{value, unit, basis, expected_error_pct}``."""
        return {k: getattr(self, k).to_dict() for k in FIGURES}

    def details(self) -> dict[str, Any]:
        """What the figures were computed with: engine, class, mode, fitted constants, notes."""
        c = self.constants
        return {"engine": self.engine, "hardware_class": self.hardware_class, "mode": self.mode,
                "concurrency": self.concurrency, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "constants": None if c is None else {"group": c.group, "eta_bw": c.eta_bw,
                                                     "eta_compute": c.eta_compute,
                                                     "layer_overhead_s": c.layer_overhead_s, "fit_rows": c.fit_rows},
                "notes": list(self.notes)}


def _estimate(inp: ServingInputs, *, concurrency: int, input_tokens: int, output_tokens: int,
              price_per_gpu_hour: float | None, mode: str, cal: Calibration | None, max_conc: int | None,
              measured_key: dict | None, notes: tuple[str, ...]) -> ServingEstimate:
    if mode not in MODES:
        raise K3InputError("mode", f"{mode!r}", ", ".join(MODES))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise K3InputError("concurrency", f"{concurrency!r}", "a whole number ≥ 1")
    if isinstance(output_tokens, bool) or not isinstance(output_tokens, int) or output_tokens < 1:
        raise K3InputError("output_tokens", f"{output_tokens!r}", "a whole number ≥ 1")
    consts = cal.constants_for(inp.engine, inp.hardware_class) if (cal is not None and mode == "fitted") else None
    eff = consts.efficiency if consts is not None else CEILING
    basis = "fitted model" if consts is not None else "theoretical ceiling"
    kw = dict(concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens)
    figs: dict[str, Figure] = {}
    for q in QUANTITIES:
        row = cal.measured(**measured_key, concurrency=concurrency, input_tokens=input_tokens,
                           output_tokens=output_tokens, quantity=q) if (consts and measured_key) else None
        if row is not None:
            figs[q] = Figure(row.value, QUANTITY_UNITS[q], "measured", 0.0)
            continue
        v = predict(inp, q, eff, **kw)
        err = cal.expected_error_pct(inp.engine, inp.hardware_class, q) if consts is not None else None
        figs[q] = Figure(None if v is None else float(v), QUANTITY_UNITS[q], basis, err)
    total = figs["output_tokens_per_s_total"]
    per_gpu = None if total.value is None else total.value / max(1, inp.gpus)
    figs["output_tokens_per_s_per_gpu"] = Figure(per_gpu, QUANTITY_UNITS["output_tokens_per_s_per_gpu"], total.basis,
                                                 total.expected_error_pct)
    figs["max_concurrency"] = Figure(max_conc, "requests", "theoretical ceiling", None)
    usd_h = usd_per_hour(gpus=inp.gpus, price_per_gpu_hour=price_per_gpu_hour)
    figs["usd_per_hour"] = Figure(usd_h, "USD/h", basis, 0.0 if consts is not None else None)
    figs["usd_per_million_output_tokens"] = Figure(
        usd_per_million_output_tokens(usd_per_hour_=usd_h, output_tokens_per_s=total.value), "USD", total.basis,
        total.expected_error_pct)
    return ServingEstimate(**figs, engine=inp.engine, hardware_class=inp.hardware_class, mode=mode,
                           concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens,
                           constants=consts, notes=tuple(inp.notes) + notes)


def serving_estimate(plan, *, concurrency: int = 1, input_tokens: int = 1024, output_tokens: int = 256,
                     price_per_gpu_hour: float | None = None, host: Any = None, engine: str | None = None,
                     mode: str = "fitted", speed_csv: Any = None) -> ServingEstimate:
    """Speed, concurrency and cost of ``plan`` (a plan for an engine) for requests of
    ``input_tokens`` + ``output_tokens`` at ``concurrency`` (see the module docstring).

    ``engine``: the serving engine whose fitted speed applies when it differs from the memory
    profile the plan was made with (``trtllm`` on a vLLM plan; ``ollama`` on a llama.cpp plan).
    ``host``: a hosts.csv id, validated and named in the notes (a GPU plan reads no host memory;
    CPU-only serving is :func:`cpu_serving_estimate`). ``mode``: ``fitted`` or ``ceiling``.
    ``speed_csv``: the measurements to fit (default ``data/measured/speed.csv``). Raises
    :class:`PlanDoesNotLoad` for a plan that does not load.

    >>> from k3lib.engines.deployment import plan_for_engine
    >>> p = plan_for_engine(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context=2048, with_limits=False)
    >>> e = serving_estimate(p, mode="ceiling", concurrency=1, input_tokens=0, output_tokens=1)
    >>> round(e.decode_tokens_per_s_per_sequence.value, 1), e.tpot_s.basis
    (223.2, 'theoretical ceiling')
    """
    if not plan.fits:
        raise PlanDoesNotLoad("plan", f"the plan does not load, so it has no speed ({plan.reason})",
                              "a plan that fits")
    notes: tuple[str, ...] = ()
    if host is not None:
        h = get_host(host)
        notes = (f"host {h.id}: a GPU plan reads no host memory per step",)
    inp = inputs_from_plan(plan, engine=engine)
    cal = calibration(speed_csv) if mode == "fitted" else None
    max_conc = None
    if plan.engine is not None:
        seqs = dict(plan.engine.settings).get("max_num_seqs")
        max_conc = max_concurrency(kv_capacity_tokens=plan.engine.kv_capacity_tokens, input_tokens=input_tokens,
                                   output_tokens=output_tokens, max_num_seqs=seqs)
    key = dict(engine=inp.engine, model=plan.model.id, weights=plan.weight_format, gpu=plan.gpu.id, gpus=plan.gpus)
    return _estimate(inp, concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens,
                     price_per_gpu_hour=price_per_gpu_hour, mode=mode, cal=cal, max_conc=max_conc,
                     measured_key=key, notes=notes)


def cpu_serving_estimate(*, model: Any, weights: str, host: Any, kv_dtype: str = "bf16", engine: str = "llama.cpp",
                         concurrency: int = 1, input_tokens: int = 1024, output_tokens: int = 256,
                         price_per_hour: float | None = None, mode: str = "fitted",
                         speed_csv: Any = None) -> ServingEstimate:
    """CPU-only serving (``--gpus 0 --host ID``): :func:`k3lib.serving.roofline.inputs_on_cpu` with
    the CPU class's fitted efficiencies; ``price_per_hour`` prices the machine. No KV capacity is
    planned here, so ``max_concurrency`` is None."""
    inp = inputs_on_cpu(model=model, weights=weights, kv_dtype=kv_dtype, host=host, engine=engine)
    cal = calibration(speed_csv) if mode == "fitted" else None
    key = dict(engine=inp.engine, model=inp.model.id, weights=weights, gpu="cpu", gpus=0)
    return _estimate(inp, concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens,
                     price_per_gpu_hour=price_per_hour, mode=mode, cal=cal, max_conc=None, measured_key=key,
                     notes=())
