"""The report's parameters and their validation into ONE :class:`~k3lib.core.plan.Plan`.

:data:`PARAMETERS` is the single list: the notebook's papermill ``parameters`` cell is
generated from it (``scripts/notebooks/90_deployment_report.py``), the CLI maps its flags
onto it (``k3plan report``), and scenario files are type-checked against it
(:mod:`k3lib.report.scenarios`). :func:`configure` validates once and returns a
:class:`ReportConfig` holding the plan that every section reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from k3lib.core.errors import K3InputError

ENGINES = ("vllm", "llama.cpp", "sglang", "transformers", "generic", "guide")
OFFLOAD_MODES = ("auto", "none", "experts")


@dataclass(frozen=True)
class Parameter:
    """One report parameter: its notebook default (guide 000's worked example) and the
    default the CLI and scenario files use (``k3plan estimate``'s; ``""``/``0`` = the
    model's own rule or automatic)."""

    name: str
    type: type
    default: Any
    help: str
    cli_default: Any

    def literal(self) -> str:
        """``name: type = value  # help`` — one line of the papermill ``parameters`` cell."""
        return f"{self.name}: {self.type.__name__} = {self.default!r}  # {self.help}"


PARAMETERS: tuple[Parameter, ...] = (
    Parameter(
        "scenario",
        str,
        "Guide 000 worked example: Q4 + FP8 KV + 256K on 6x H100",
        "scenario name: the report's title (any text; shown escaped)",
        "",
    ),
    Parameter("model", str, "kimi-k3@guide-000", "model id or name (see `k3plan models`)", "kimi-k3"),
    Parameter(
        "model_path",
        str,
        "",
        "a local config.json, GGUF file or safetensors folder to plan instead of model; empty for the built-in model",
        "",
    ),
    Parameter(
        "weights",
        str,
        "q4",
        "weight precision, e.g. native, bf16, fp8, q8_0, q4_k_m, q2_k, or the guides' "
        "q8/q4/q2; empty for native (architectures) or q4 (guide profiles)",
        "",
    ),
    Parameter("kv_dtype", str, "fp8", "KV-cache dtype: bf16, fp8, int4, q8_0, q4_0", "bf16"),
    Parameter(
        "context", str, "256K", "context length: 128K, 256K, 1M (K is 1,024 tokens) or a whole number of tokens", "256K"
    ),
    Parameter("batch", int, 1, "concurrent sequences", 1),
    Parameter("gpu", str, "h100-sxm", "GPU id or alias (see `k3plan gpus`)", "h100-sxm"),
    Parameter("gpus", int, 6, "number of GPUs in total", 8),
    Parameter(
        "nodes",
        int,
        0,
        "nodes the GPUs are spread over; 0 for automatic (one node up to the GPU's node size, then whole nodes)",
        0,
    ),
    Parameter("tp", int, 0, "tensor-parallel size; 0 for automatic (GPUs per node, if the heads split)", 0),
    Parameter("pp", int, 0, "pipeline-parallel size; 0 for automatic (GPUs / TP)", 0),
    Parameter(
        "engine",
        str,
        "",
        "the engine the plan is for (its rules decide the verdict): "
        + ", ".join(ENGINES)
        + "; empty for the model's default (vllm; llama.cpp for a GGUF; the guide's policy for a guide profile)",
        "",
    ),
    Parameter(
        "gpu_memory_utilization",
        float,
        0.0,
        "vLLM's --gpu-memory-utilization: the plan, the engine view and "
        "the vllm command all use it, in (0, 1]; 0 for vLLM's default 0.9",
        0.0,
    ),
    Parameter(
        "offload",
        str,
        "auto",
        "offload section: auto (shown when the plan does not fit), none, "
        "experts (experts in system RAM: guide 004's mode)",
        "auto",
    ),
    Parameter("ram", str, "", "host RAM for offload, e.g. 1536GB; empty for as much as needed", ""),
    Parameter("ram_bandwidth", str, "70GB/s", "host RAM bandwidth for offload tokens/s, e.g. 70GB/s", "70GB/s"),
    Parameter(
        "activation",
        str,
        "10GiB",
        "activation memory in total, e.g. 10GiB (GB is 10^9 bytes, GiB 2^30); empty for the model's rule",
        "",
    ),
    Parameter("overhead_per_gpu", str, "", "runtime overhead per GPU, e.g. 6GiB; empty for the model's rule", ""),
    Parameter(
        "overhead_total",
        str,
        "48GiB",
        "runtime overhead over all GPUs, e.g. 48GiB (guide 000's worked example); empty for the model's rule",
        "",
    ),
    Parameter(
        "memory_basis",
        str,
        "",
        "GPU capacity: marketed (80 GiB for an H100) or usable (what the driver "
        "exposes); empty for the model's default",
        "",
    ),
)
PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
PARAMETERS_BY_NAME = {p.name: p for p in PARAMETERS}
NOTEBOOK_DEFAULTS = {p.name: p.default for p in PARAMETERS}
CLI_DEFAULTS = {p.name: p.cli_default for p in PARAMETERS}


def parameters_source() -> str:
    """The notebook's ``parameters`` cell: one typed literal per line with a ``# help`` comment."""
    return "\n".join(p.literal() for p in PARAMETERS)


def coerce_parameter(p: Parameter, value: Any, field: str | None = None) -> Any:
    """``value`` as ``p.type``: ASCII digits for ints (``"8"`` → 8), a finite number for floats,
    any scalar as text for strings; anything else raises :class:`K3InputError` naming
    ``field`` (default: the parameter's name).

    >>> coerce_parameter(PARAMETERS_BY_NAME["gpus"], "16")
    16
    >>> coerce_parameter(PARAMETERS_BY_NAME["gpus"], [8])
    Traceback (most recent call last):
    ...
    k3lib.core.errors.K3InputError: gpus: [8] is not a whole number (allowed: an integer such as 8)
    """
    name = field or p.name
    if value is None:
        value = ""
    if p.type is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise K3InputError(name, f"{value!r} is not a whole number", "an integer such as 8")
        if isinstance(value, str):
            text = value.strip()
            if text == "":
                return p.cli_default
            if not (text.isascii() and text.isdigit()) or len(text) > 18:
                raise K3InputError(name, f"{value!r} is not a whole number", "ASCII digits such as 8")
            return int(text)
        return value
    if p.type is float:
        if isinstance(value, str):
            text = value.strip()
            if text == "":
                return p.cli_default
            try:
                if not text.isascii():
                    raise ValueError
                value = float(text)
            except ValueError:
                raise K3InputError(name, f"{value!r} is not a number", "a decimal such as 0.9") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise K3InputError(name, f"{value!r} is not a number", "a decimal such as 0.9")
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise K3InputError(name, f"{value!r} is not text", "a string")
    return value if isinstance(value, str) else str(value)


def complete_parameters(given: Mapping[str, Any], *, defaults: Mapping[str, Any] = CLI_DEFAULTS) -> dict[str, Any]:
    """``given`` over ``defaults``, each value coerced to its parameter's type
    (:func:`coerce_parameter`); an unknown key or a wrong type raises :class:`K3InputError`."""
    unknown = [k for k in given if k not in PARAMETER_NAMES]
    if unknown:
        raise K3InputError(str(unknown[0]), "is not a report parameter", ", ".join(PARAMETER_NAMES))
    out = dict(defaults)
    out.update(given)
    return {p.name: coerce_parameter(p, out[p.name]) for p in PARAMETERS}


@dataclass(frozen=True)
class ReportConfig:
    """The validated report: the ONE plan every section reads, and the report's own
    settings (sizes in bytes)."""

    scenario: str
    plan: Any  # k3lib.core.plan.Plan
    engine: str
    offload: str
    ram_bytes: int | None
    ram_bandwidth_bytes_per_s: int | None
    gpu_memory_utilization: float | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def title(self) -> str:
        """The scenario name, or a description of the plan when there is none."""
        from k3lib.report.html import describe_plan

        return self.scenario.strip() or describe_plan(self.plan)


def _auto(value: int) -> int | None:
    return value or None


def configure(**params: Any) -> ReportConfig:
    """Validate the report's parameters (keys of :data:`PARAMETERS`; missing ones take
    :data:`CLI_DEFAULTS`) into a :class:`ReportConfig`: one :func:`k3lib.views.notebook.validate`
    call, so one :func:`~k3lib.core.plan.make_plan`.

    Every bad value raises :class:`~k3lib.views.notebook.ParameterError`, whose whole
    message is ``parameter <name>: <what is wrong>``.

    >>> cfg = configure(**NOTEBOOK_DEFAULTS)
    >>> round(cfg.plan.total.total_bytes / 2**30), round(cfg.plan.headroom_bytes / 2**30)
    (415, 65)
    """
    from k3lib.core.models import get_model
    from k3lib.core.units import parse_size_bytes
    from k3lib.engines.deployment import EngineSettings, default_engine_for, normalize_engine, plan_for_engine
    from k3lib.serving.offload_model import parse_bandwidth
    from k3lib.views.params import PlanParameters, parameter_error

    try:
        p = complete_parameters(params)
        model: Any = p["model"]
        if p["model_path"].strip():
            from k3lib.loaders import load_path

            model = load_path(p["model_path"].strip())
        engine = normalize_engine(p["engine"]) if p["engine"].strip() else default_engine_for(model)
        if engine == "generic" and default_engine_for(model) == "guide":
            engine = "guide"
        offload = p["offload"].strip().lower() or "auto"
        if offload not in OFFLOAD_MODES:
            raise K3InputError("offload", f"{p['offload']!r} is not known", ", ".join(OFFLOAD_MODES))
        util = p["gpu_memory_utilization"] or None
        if util is not None:
            if not 0 < util <= 1:
                raise K3InputError("gpu_memory_utilization", f"{util!r} is outside (0, 1]", "a fraction such as 0.9")
            if engine != "vllm":
                raise K3InputError(
                    "gpu_memory_utilization", f"applies to vllm only, not {engine}", "0 (unset) or engine vllm"
                )
        ram = parse_size_bytes(p["ram"], "ram") if p["ram"] else None
        bandwidth = parse_bandwidth(p["ram_bandwidth"], "ram_bandwidth") if p["ram_bandwidth"] else None
        spec = model.require_architecture() if hasattr(model, "require_architecture") else get_model(model)
        weights = p["weights"].strip() or ("native" if spec.kind == "architecture" else "q4")
        checked = PlanParameters.parse(
            model=spec,
            weights=weights,
            kv_dtype=p["kv_dtype"],
            context=p["context"],
            batch=p["batch"],
            gpu=p["gpu"],
            gpus=p["gpus"],
            nodes=_auto(p["nodes"]),
            tp=_auto(p["tp"]),
            pp=_auto(p["pp"]),
            activation=p["activation"],
            overhead_per_gpu=p["overhead_per_gpu"],
            overhead_total=p["overhead_total"],
            memory_basis=p["memory_basis"],
        )
        kwargs = checked.plan_kwargs()
        kwargs["model"] = model
        settings = EngineSettings(engine, gpu_memory_utilization=util) if engine not in ("guide", "generic") else engine
        plan = plan_for_engine(engine=settings, **kwargs)
    except K3InputError as exc:
        raise parameter_error(exc) from None
    return ReportConfig(
        scenario=p["scenario"],
        plan=plan,
        engine=plan.engine_id,
        offload=offload,
        ram_bytes=ram,
        ram_bandwidth_bytes_per_s=bandwidth,
        gpu_memory_utilization=util,
        parameters=p,
    )


def cli_command(params: Mapping[str, Any], out: str = "reports/report.html") -> str:
    """The ``k3plan report`` command line that reproduces ``params`` (defaults left out)."""
    import shlex

    parts = ["k3plan", "report"]
    for p in PARAMETERS:
        v = params.get(p.name, p.cli_default)
        if v in ("", None) or v == p.cli_default:
            continue
        parts += ["--" + p.name.replace("_", "-"), str(v)]
    return " ".join(shlex.quote(x) for x in parts + ["-o", out])
