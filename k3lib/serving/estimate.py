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
given price times the GPUs (basis ``price``: no speed in it); ``usd_per_million_output_tokens``
carries the throughput's basis and error.

**A plan that does not load** (``not plan.fits``) has no speed: :func:`serving_estimate`
raises :class:`PlanDoesNotLoad` (a :class:`~k3lib.core.errors.K3InputError`); the CLI exits 3 on it.
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from k3lib.core.errors import K3InputError
from k3lib.core.hosts import get_host
from k3lib.serving.calibration import Calibration, FittedConstants, calibration, model_kind
from k3lib.serving.concurrency import QUANTITIES, QUANTITY_UNITS, max_concurrency, predict
from k3lib.serving.cost import usd_per_hour, usd_per_million_output_tokens
from k3lib.serving.roofline import CEILING, ServingInputs, inputs_from_plan, inputs_on_cpu

BASES = ("measured", "fitted model", "theoretical ceiling", "price")
FIGURES = (
    "decode_tokens_per_s_per_sequence",
    "output_tokens_per_s_total",
    "output_tokens_per_s_per_gpu",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
    "max_concurrency",
    "usd_per_hour",
    "usd_per_million_output_tokens",
)
MODES = ("fitted", "ceiling")


class PlanDoesNotLoad(K3InputError):
    """The plan does not load, so it has no speed figures. Raised by :func:`serving_estimate`
    and :func:`offload_serving_estimate` instead of returning an estimate; a surface catches it
    and reports "does not load" — ``k3plan speed`` exits with :attr:`exit_code` (3) and prints
    ``{"loads": false, "reason": ...}`` under ``--json``. Every :class:`ServingEstimate` that
    exists is of a plan that loads (:attr:`ServingEstimate.loads` is always True)."""

    exit_code = 3


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
        return {
            "value": self.value,
            "unit": self.unit,
            "basis": self.basis,
            "expected_error_pct": self.expected_error_pct,
        }


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
    #: the concurrency the caller asked for (``concurrency`` is the one served: at most ``max_concurrency``)
    concurrency_asked: int | None = None
    #: why ``concurrency`` is what it is (served as asked, or capped by the KV cache / max_num_seqs)
    concurrency_reason: str = ""

    @property
    def loads(self) -> bool:
        """Always True: an estimate exists only for a plan that loads (else :class:`PlanDoesNotLoad`)."""
        return True

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Exactly the :data:`FIGURES` keys, each ``{value, unit, basis, expected_error_pct}``."""
        return {k: getattr(self, k).to_dict() for k in FIGURES}

    def details(self) -> dict[str, Any]:
        """What the figures were computed with: engine, class, mode, fitted constants, notes."""
        c = self.constants
        return {
            "engine": self.engine,
            "hardware_class": self.hardware_class,
            "mode": self.mode,
            "concurrency": self.concurrency,
            "concurrency_asked": self.concurrency if self.concurrency_asked is None else self.concurrency_asked,
            "concurrency_reason": self.concurrency_reason,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "constants": None
            if c is None
            else {
                "group": c.group,
                "eta_bw": c.eta_bw,
                "eta_compute": c.eta_compute,
                "eta_decode_compute": c.eta_decode_compute,
                "layer_overhead_s": c.layer_overhead_s,
                "fit_rows": c.fit_rows,
            },
            "notes": list(self.notes),
        }


def _estimate(
    inp: ServingInputs | types.SimpleNamespace,
    *,
    concurrency: int,
    input_tokens: int,
    output_tokens: int,
    price_per_gpu_hour: float | None,
    mode: str,
    cal: Calibration | None,
    max_conc: int | None,
    measured_key: dict | None,
    notes: tuple[str, ...],
    predictor=None,
    hardware_class: str | None = None,
) -> ServingEstimate:
    """Label the figures. ``predictor(quantity, eff, **kw)`` replaces :func:`predict` over ``inp``
    (the offload model); ``hardware_class`` picks the fitted constants (default ``inp``'s)."""
    if mode not in MODES:
        raise K3InputError("mode", f"{mode!r}", ", ".join(MODES))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise K3InputError("concurrency", f"{concurrency!r}", "a whole number ≥ 1")
    if isinstance(output_tokens, bool) or not isinstance(output_tokens, int) or output_tokens < 1:
        raise K3InputError("output_tokens", f"{output_tokens!r}", "a whole number ≥ 1")
    asked = concurrency
    reason = f"served as asked ({asked})"
    if max_conc is not None and max_conc >= 1 and asked > max_conc:
        concurrency = int(max_conc)
        reason = (
            f"asked {asked}, served {concurrency}: the engine's KV cache (and max_num_seqs) holds at most "
            f"{concurrency} requests of {input_tokens} + {output_tokens} tokens; the rest queue"
        )
    elif max_conc is not None and max_conc < 1:
        reason = f"asked {asked}: the KV cache holds no whole request of {input_tokens} + {output_tokens} tokens"
    elif max_conc is None:
        reason = f"served as asked ({asked}); no KV capacity planned here, so no cap is checked"
    cls = hardware_class or inp.hardware_class
    consts = (
        cal.constants_for(inp.engine, cls, model_kind(inp.model)) if (cal is not None and mode == "fitted") else None
    )
    eff = consts.efficiency if consts is not None else CEILING
    basis = "fitted model" if consts is not None else "theoretical ceiling"
    kw: dict[str, Any] = dict(concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens)
    figs: dict[str, Figure] = {}
    for q in QUANTITIES:
        row = (
            cal.measured(
                **measured_key,
                concurrency=concurrency,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                quantity=q,
            )
            if (cal and consts and measured_key)
            else None
        )
        if row is not None:
            figs[q] = Figure(row.value, QUANTITY_UNITS[q], "measured", 0.0)
            continue
        if predictor is not None:
            v = predictor(q, eff, **kw)
        else:
            assert isinstance(inp, ServingInputs)  # a stand-in namespace comes with its own predictor
            v = predict(inp, q, eff, **kw)
        err = cal.expected_error_pct(inp.engine, cls, q) if (cal is not None and consts is not None) else None
        figs[q] = Figure(None if v is None else float(v), QUANTITY_UNITS[q], basis, err)
    total = figs["output_tokens_per_s_total"]
    per_gpu = None if total.value is None else total.value / max(1, inp.gpus)
    figs["output_tokens_per_s_per_gpu"] = Figure(
        per_gpu, QUANTITY_UNITS["output_tokens_per_s_per_gpu"], total.basis, total.expected_error_pct
    )
    figs["max_concurrency"] = Figure(max_conc, "requests", "theoretical ceiling", None)
    usd_h = usd_per_hour(gpus=inp.gpus, price_per_gpu_hour=price_per_gpu_hour)
    # not a speed: the GPUs times the price given (the user's, or the dated catalogue's median)
    figs["usd_per_hour"] = Figure(usd_h, "USD/h", "price", None)
    figs["usd_per_million_output_tokens"] = Figure(
        usd_per_million_output_tokens(usd_per_hour_=usd_h, output_tokens_per_s=total.value),
        "USD",
        total.basis,
        total.expected_error_pct,
    )
    return ServingEstimate(
        **figs,
        engine=inp.engine,
        hardware_class=cls,
        mode=mode,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        constants=consts,
        notes=tuple(inp.notes) + notes,
        concurrency_asked=asked,
        concurrency_reason=reason,
    )


def serving_estimate(
    plan,
    *,
    concurrency: int = 1,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    price_per_gpu_hour: float | None = None,
    host: Any = None,
    engine: str | None = None,
    mode: str = "fitted",
    speed_csv: Any = None,
) -> ServingEstimate:
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
        raise PlanDoesNotLoad("plan", f"the plan does not load, so it has no speed ({plan.reason})", "a plan that fits")
    notes: tuple[str, ...] = ()
    if host is not None:
        h = get_host(host)
        notes = (f"host {h.id}: a GPU plan reads no host memory per step",)
    inp = inputs_from_plan(plan, engine=engine)
    cal = calibration(speed_csv) if mode == "fitted" else None
    max_conc = None
    if plan.engine is not None:
        seqs = dict(plan.engine.settings).get("max_num_seqs")
        max_conc = max_concurrency(
            kv_capacity_tokens=plan.engine.kv_capacity_tokens,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            max_num_seqs=seqs,
        )
    key = dict(engine=inp.engine, model=plan.model.id, weights=plan.weight_format, gpu=plan.gpu.id, gpus=plan.gpus)
    return _estimate(
        inp,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        price_per_gpu_hour=price_per_gpu_hour,
        mode=mode,
        cal=cal,
        max_conc=max_conc,
        measured_key=key,
        notes=notes,
    )


def cpu_serving_estimate(
    *,
    model: Any,
    weights: str,
    host: Any,
    kv_dtype: str = "bf16",
    engine: str = "llama.cpp",
    concurrency: int = 1,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    price_per_hour: float | None = None,
    mode: str = "fitted",
    speed_csv: Any = None,
) -> ServingEstimate:
    """CPU-only serving (``--gpus 0 --host ID``): :func:`k3lib.serving.roofline.inputs_on_cpu` with
    the CPU class's fitted efficiencies; ``price_per_hour`` prices the machine. No KV capacity is
    planned here, so ``max_concurrency`` is None."""
    inp = inputs_on_cpu(model=model, weights=weights, kv_dtype=kv_dtype, host=host, engine=engine)
    cal = calibration(speed_csv) if mode == "fitted" else None
    key = dict(engine=inp.engine, model=inp.model.id, weights=weights, gpu="cpu", gpus=0)
    return _estimate(
        inp,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        price_per_gpu_hour=price_per_hour,
        mode=mode,
        cal=cal,
        max_conc=None,
        measured_key=key,
        notes=(),
    )


def offload_serving_estimate(
    *,
    model: Any,
    engine: str = "llama.cpp",
    gpu: Any = None,
    gpus: int = 1,
    weights: str | None = None,
    kv_dtype: str = "bf16",
    input_tokens: int = 1024,
    output_tokens: int = 256,
    concurrency: int = 1,
    host: Any = None,
    ram: Any = None,
    ram_bandwidth: Any = None,
    expert_layers_on_gpu: Any = None,
    price_per_gpu_hour: float | None = None,
    mode: str = "fitted",
    speed_csv: Any = None,
) -> ServingEstimate:
    """Speed of a MoE model served with its routed experts in host RAM (llama.cpp ``-ngl 999
    --n-cpu-moe``; :func:`k3lib.serving.offload_model.plan_offload`), on the offload functions of
    :mod:`k3lib.serving.offload`: decode reads the GPU tier at the GPU class's fitted $η_{bw}$ and
    the host tier at the CPU class's; prefill moves the touched experts over PCIe (llama.cpp's
    op-offload batch threshold). ``expert_layers_on_gpu`` None: the most that still loads
    (:func:`best_offload_plan`). ``gpu`` None or ``gpus`` 0: CPU-only serving on ``host``
    (:func:`cpu_serving_estimate`, ``price_per_gpu_hour`` then prices the machine). Raises
    :class:`PlanDoesNotLoad` when no such plan loads. The result has the same
    :meth:`ServingEstimate.to_dict` keys; ``max_concurrency`` is None (the offload plan sizes one
    context per sequence, not the engine's KV pool).

    >>> e = offload_serving_estimate(model="qwen3-30b-a3b", gpu="rtx-4090", gpus=1, weights="q4_k_m",
    ...                              host="desktop-ddr5-5600", expert_layers_on_gpu=0, mode="ceiling",
    ...                              input_tokens=512, output_tokens=128)
    >>> e.decode_tokens_per_s_per_sequence.basis, e.hardware_class
    ('theoretical ceiling', 'consumer GPU')
    """
    from k3lib.serving.hardware import hardware_class as _hw_class
    from k3lib.serving.offload import offload_decode_seconds, offload_prefill_tokens_per_s
    from k3lib.serving.offload_model import best_offload_plan, plan_offload
    from k3lib.serving.roofline import serving_engine

    eid = serving_engine(engine)
    if gpu is None or gpus == 0:
        if host is None:
            raise K3InputError("host", "CPU-only serving needs the host", "a hosts.csv id (`k3plan hosts`)")
        return cpu_serving_estimate(
            model=model,
            weights=weights or "q4_k_m",
            host=host,
            kv_dtype=kv_dtype,
            engine=eid,
            concurrency=concurrency,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            price_per_hour=price_per_gpu_hour,
            mode=mode,
            speed_csv=speed_csv,
        )
    kw = dict(
        model=model,
        weights=weights,
        gpu=gpu,
        gpus=gpus,
        kv_dtype=kv_dtype,
        context=max(1, input_tokens + output_tokens),
        batch=concurrency,
        host=host,
        ram=ram,
        ram_bandwidth=ram_bandwidth,
    )
    if expert_layers_on_gpu is None:
        plan = best_offload_plan(**kw)
        if plan is None:
            raise PlanDoesNotLoad(
                "plan",
                "no offload split loads, not even with every expert in host RAM",
                "a larger GPU, more RAM or a smaller quantization",
            )
    else:
        plan = plan_offload(**kw, expert_layers_on_gpu=expert_layers_on_gpu)
        if not plan.fits:
            raise PlanDoesNotLoad(
                "plan",
                f"the offload plan does not load ({'; '.join(plan.problems)})",
                "fewer expert layers on the GPU, more RAM or a smaller quantization",
            )
    cls = _hw_class(plan.gpu)
    cal = calibration(speed_csv) if mode == "fitted" else None
    host_c = cal.constants_for(eid, "CPU") if cal is not None else None
    host_eff = host_c.efficiency if host_c is not None else CEILING
    n_gpus = max(1, plan.gpus)
    flops = plan.gpu.bf16_dense_flops

    def decode_s(eff, c):
        p = plan if c == plan.batch else dataclasses.replace(plan, batch=int(c))
        t = offload_decode_seconds(p, gpu_eff=eff, host_eff=host_eff)
        if flops:  # the decode step's compute as StepTerms.seconds states it (one sequence under the stream)
            f1 = 2 * plan.model.params_active / flops
            t = np.maximum(t, f1 / eff.eta_compute) + (c - 1) * f1 / eff.decode_compute
        return t

    def predictor(q, eff, *, concurrency, input_tokens, output_tokens):
        tps = offload_prefill_tokens_per_s(plan, gpu_eff=eff, host_eff=host_eff)
        t_p = input_tokens / tps if (tps and input_tokens > 0) else (0.0 if input_tokens == 0 else None)
        if q == "prefill_tokens_per_s":
            return tps
        if t_p is None:
            return None
        t_d = decode_s(eff, concurrency)
        if q == "ttft_s":
            return t_p * (concurrency + 1) / 2 if input_tokens > 0 else t_d
        o = max(1, output_tokens)
        tpot = t_d + (concurrency - 1) * t_p / o
        if q == "tpot_s":
            return tpot
        if q == "decode_tokens_per_s_per_sequence":
            return 1.0 / tpot
        return concurrency / (t_d + concurrency * t_p / o)

    inp = types.SimpleNamespace(
        engine=eid,
        hardware_class=cls,
        gpus=n_gpus,
        model=plan.model,
        notes=tuple(plan.notes)
        + (
            f"offload: {plan.expert_layers_on_gpu} of {plan.parts.moe_layers} MoE layers' experts on the GPU, the rest "
            f"in host RAM read at {plan.ram_bandwidth_bytes_per_s / 1e9:.0f} GB/s ({plan.ram_bandwidth_basis or 'host'})",
            "host tier at the CPU class's fitted η_bw" if host_c is not None else "host tier at its full bandwidth",
        ),
    )
    model_id = getattr(plan.model, "id", str(model))
    key = dict(engine=eid, model=model_id, weights=plan.weight_format, gpu=plan.gpu.id, gpus=plan.gpus)
    return _estimate(
        inp,
        concurrency=concurrency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        price_per_gpu_hour=price_per_gpu_hour,
        mode=mode,
        cal=cal,
        max_conc=None,
        measured_key=key,
        notes=(),
        predictor=predictor,
        hardware_class=cls,
    )


def render_text(estimate: ServingEstimate) -> str:
    """A readable table of ``estimate``: each figure with its value, unit, basis and expected
    error; then the engine, hardware class, the concurrency served (= min(asked,
    max_concurrency)) and why, the fitted constants, and the notes.

    >>> from k3lib.engines.deployment import plan_for_engine
    >>> p = plan_for_engine(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context=2048, with_limits=False)
    >>> print(render_text(serving_estimate(p, mode="ceiling")).splitlines()[0])
    figure                               value  unit      basis                expected error
    """
    names = {
        "decode_tokens_per_s_per_sequence": "decode tokens/s per sequence",
        "output_tokens_per_s_total": "output tokens/s (all sequences)",
        "output_tokens_per_s_per_gpu": "output tokens/s per GPU",
        "prefill_tokens_per_s": "prefill tokens/s",
        "ttft_s": "time to first token",
        "tpot_s": "time per output token",
        "max_concurrency": "max concurrency",
        "usd_per_hour": "cost per hour",
        "usd_per_million_output_tokens": "cost per M output tokens",
    }
    lines = [f"{'figure':<32}{'value':>10}  {'unit':<9} {'basis':<20} expected error"]
    for k in FIGURES:
        f = getattr(estimate, k)
        if f.value is None:
            val = "—"
        elif f.unit == "requests":
            val = f"{int(f.value):,}"
        elif abs(f.value) >= 100:
            val = f"{f.value:,.0f}"
        else:
            val = f"{f.value:.3g}"
        err = "—" if f.expected_error_pct is None else f"±{f.expected_error_pct:.0f} %"
        lines.append(f"{names.get(k, k):<32}{val:>10}  {f.unit:<9} {f.basis:<20} {err}")
    lines.append("")
    lines.append(f"engine: {estimate.engine}; hardware class: {estimate.hardware_class}; mode: {estimate.mode}")
    lines.append(
        f"requests: {estimate.input_tokens} input + {estimate.output_tokens} output tokens; "
        f"concurrency served: {estimate.concurrency} — {estimate.concurrency_reason or 'as asked'}"
    )
    c = estimate.constants
    if c is not None:
        lines.append(
            f"fitted constants ({c.group}, {c.fit_rows} fit rows): η_bw {c.eta_bw:.2f}, "
            f"η_compute {c.eta_compute:.3f} (prefill), {c.eta_decode_compute:.3f} (decode), "
            f"τ {c.layer_overhead_s * 1e6:.0f} µs per layer per pass"
        )
    lines.append(
        "expected error: median held-aside |predicted/measured − 1| of that engine × class × quantity "
        "(data/measured/speed.csv); a ceiling has none"
    )
    for n in estimate.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)
