"""A plan is a plan for an engine: :func:`plan_for_engine` builds the
:class:`~k3lib.core.plan.Plan` (k3lib's stage shares, the explanation) and attaches the
engine's verdict (:class:`~k3lib.core.plan.EngineVerdict`) computed by that engine's rules
(:func:`~k3lib.engines.estimate.estimate_for_engine`) on *the plan's own layout*. Every
surface — ``k3plan estimate/plan/report``, the notebooks, the audit — reads this one object.

The engine, when none is named (:func:`default_engine_for`): vLLM for a built-in
architecture, a ``config.json`` or a safetensors checkpoint; llama.cpp for a GGUF file; a
guide profile keeps its guide's own policy (``guide``) and says so. ``generic`` asks for
k3lib's component model with no engine.

The settings a verdict was computed with (:class:`EngineSettings`) are stored in it with
the engine's defaults filled in, so that a printed command can carry exactly them:
vLLM ``gpu_memory_utilization`` (0.9) and ``max_num_seqs`` (1,024); SGLang
``mem_fraction_static`` (its rule by GPU size when not given); llama.cpp ``n_gpu_layers``
(-1 = all), ``override_tensor``, ``flash_attn`` (on, off or auto), ``n_ubatch`` (512), ``type_k`` /
``type_v`` (the KV dtype's cache type), ``swa_full``, ``kv_unified``, ``n_rs_seq`` (0); llama.cpp's
``parallel`` (``-np``, its ``n_seq_max``) is the plan's batch.

>>> p = plan_for_engine(model="llama-3.1-70b", gpu="h100-sxm", gpus=2, context="32K")
>>> p.engine_id, p.fits, p.engine.kv_capacity_tokens
('vllm', False, 9088)
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.models import PublishedProfile, get_model
from k3lib.core.plan import Assumptions, Breakdown, EngineVerdict, Plan, make_plan
from k3lib.core.units import parse_context_tokens
from k3lib.engines.base import EngineEstimate, get_engine
from k3lib.engines.estimate import estimate_for_engine
from k3lib.engines.vllm import VLLM_MAX_NUM_SEQS

#: the engine settings each engine takes (CLI flag names with ``-``); any other is refused for it
ENGINE_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "vllm": ("gpu_memory_utilization", "max_num_seqs", "cpu_offload_gb"),
    "sglang": ("mem_fraction_static",),
    "llama.cpp": (
        "n_gpu_layers",
        "override_tensor",
        "flash_attn",
        "n_ubatch",
        "type_k",
        "type_v",
        "swa_full",
        "kv_unified",
        "n_rs_seq",
        "parallel",
    ),
    "transformers": (),
    "generic": (),
    "guide": (),
}
#: vLLM's default ``--gpu-memory-utilization``
VLLM_DEFAULT_UTILIZATION = 0.9
#: searched contexts lie on this grid (1K tokens), as :func:`k3lib.core.search.max_context_tokens`
CONTEXT_STEP_TOKENS = 1024


@dataclass(frozen=True)
class EngineSettings:
    """An engine and its options, as a user sets them (``None`` = the engine's default).
    Validated here: every value in range, and no option the engine does not take.

    >>> EngineSettings("vllm", gpu_memory_utilization=0.76).options()
    {'gpu_memory_utilization': 0.76}
    >>> EngineSettings("llama.cpp", gpu_memory_utilization=0.5)
    Traceback (most recent call last):
    k3lib.core.errors.K3InputError: gpu_memory_utilization: is a vLLM option; llama.cpp has no such setting (allowed: n_gpu_layers, override_tensor, flash_attn, n_ubatch, type_k, type_v, swa_full, kv_unified, n_rs_seq, parallel)
    >>> EngineSettings("llama.cpp", type_k="q8_0", flash_attn="auto").options()
    {'flash_attn': 'auto', 'type_k': 'q8_0'}
    """

    engine: str
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    mem_fraction_static: float | None = None
    n_gpu_layers: int | None = None
    override_tensor: tuple[str, ...] = ()
    #: llama.cpp ``-fa``: True (on), False (off) or "auto" (llama.cpp's default; resolved as enabled)
    flash_attn: bool | str | None = None
    n_ubatch: int | None = None
    #: vLLM ``--cpu-offload-gb``: GiB of weights per GPU kept in CPU memory
    cpu_offload_gb: float | None = None
    #: llama.cpp ``--cache-type-k`` / ``--cache-type-v`` (``-ctk``/``-ctv``): K and V cache types apart
    #: (default: both the plan's KV dtype, in llama.cpp's spelling)
    type_k: str | None = None
    type_v: str | None = None
    #: llama.cpp ``--swa-full``: sliding-window layers keep the whole context
    swa_full: bool | None = None
    #: llama.cpp ``--kv-unified`` (``-kvu``): one KV stream shared by every sequence
    kv_unified: bool | None = None
    #: llama.cpp ``n_rs_seq``: recurrent-state snapshots per sequence (llama-server sets it to the draft's
    #: n_max under speculative decoding); counted for the families that keep them
    n_rs_seq: int | None = None
    #: llama.cpp ``-np`` (``n_seq_max``): the parallel sequences; the plan's batch
    parallel: int | None = None

    def __post_init__(self) -> None:
        eid = normalize_engine(self.engine)
        object.__setattr__(self, "engine", eid)
        allowed = ENGINE_OPTIONS[eid]
        owner = {o: e for e, opts in ENGINE_OPTIONS.items() for o in opts}
        for name in owner:  # every engine's options, in ENGINE_OPTIONS' order
            value = getattr(self, name)
            if value in (None, ()) or name in allowed:
                continue
            who = get_engine(owner[name]).name
            raise K3InputError(
                name,
                f"is a {who} option; {_engine_name(eid)} has no such setting",
                ", ".join(allowed) or "no engine options",
            )
        for name in ("gpu_memory_utilization", "mem_fraction_static"):
            v = getattr(self, name)
            if v is not None and (
                isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1 or not math.isfinite(v)
            ):
                raise K3InputError(name, f"{v!r} is outside (0, 1]", "0 < F ≤ 1, e.g. 0.9")
        for name, lo in (("max_num_seqs", 1), ("n_ubatch", 1), ("n_gpu_layers", -1), ("n_rs_seq", 0), ("parallel", 1)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
                raise K3InputError(name, f"{v!r}", f"a whole number ≥ {lo}")
        fa = self.flash_attn
        if fa is not None and not isinstance(fa, bool):
            key = str(fa).strip().lower()
            if key != "auto":
                raise K3InputError("flash_attn", f"{fa!r}", "on (True), off (False) or auto")
            object.__setattr__(self, "flash_attn", "auto")
        from k3lib.engines.llamacpp import LLAMACPP_CACHE_TYPES

        for name in ("type_k", "type_v"):
            t = getattr(self, name)
            if t is None:
                continue
            cache_type = str(t).strip().lower() if isinstance(t, str) else None
            if cache_type not in LLAMACPP_CACHE_TYPES:
                raise K3InputError(name, f"{t!r} is not a llama.cpp cache type", ", ".join(LLAMACPP_CACHE_TYPES))
            object.__setattr__(self, name, cache_type)
        for name in ("swa_full", "kv_unified"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise K3InputError(name, f"{getattr(self, name)!r}", "True or False")
        v = self.cpu_offload_gb
        if v is not None and (
            isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 16384
        ):
            raise K3InputError("cpu_offload_gb", f"{v!r}", "GiB per GPU, 0 … 16,384")
        for pat in self.override_tensor:
            try:
                re.compile(pat)
            except re.error as exc:
                raise K3InputError(
                    "override_tensor",
                    f"{pat!r} is not a regular expression ({exc})",
                    "a pattern of tensor names such as exps",
                ) from None

    def options(self) -> dict[str, Any]:
        """The options a user set (engine defaults left out)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "engine" and v not in (None, ())}


def _engine_name(eid: str) -> str:
    return {"guide": "a guide profile's policy", "generic": "k3lib's generic model"}.get(eid) or get_engine(eid).name


def normalize_engine(engine: str | None) -> str:
    """An engine id (``vllm``, ``sglang``, ``llama.cpp``, ``transformers``, ``generic``, ``guide``)
    from an id or alias; a named error for anything else."""
    if engine is None:
        raise K3InputError("engine", "is missing", "vllm, sglang, llama.cpp, transformers, generic")
    key = str(engine).strip().lower()
    if key == "guide":
        return "guide"
    if not key:
        raise K3InputError("engine", "is empty", "vllm, sglang, llama.cpp, transformers, generic")
    return get_engine(key).id


def default_engine_for(model: Any) -> str:
    """The engine a plan is for when none is named: llama.cpp for a GGUF file, a guide
    profile's own policy for a guide profile, vLLM for everything else.

    >>> default_engine_for("kimi-k3"), default_engine_for("kimi-k3@guide-000")
    ('vllm', 'guide')
    """
    from k3lib.loaders import LoadedModel

    if isinstance(model, LoadedModel):
        return "llama.cpp" if model.file_format == "gguf" else "vllm"
    return "guide" if isinstance(get_model(model), PublishedProfile) else "vllm"


def _core_plan(model: Any, **kwargs) -> Plan:
    from k3lib.loaders import LoadedModel, plan_for_loaded

    if isinstance(model, LoadedModel):
        return plan_for_loaded(model, **kwargs)
    return make_plan(model=model, **kwargs)


def _estimate(
    model: Any, plan: Plan, settings: EngineSettings, *, context_tokens: int, weights: str, kv_dtype: str
) -> EngineEstimate:
    """The engine's estimate on the plan's layout (vLLM/SGLang: its TP × PP; llama.cpp and
    transformers spread layers over every GPU themselves)."""
    eid = settings.engine
    opts = settings.options()
    util = opts.pop("gpu_memory_utilization", None)
    opts.pop("parallel", None)  # llama.cpp's -np is the plan's batch (plan_for_engine)
    layout = {"tp": plan.tp, "pp": plan.pp} if eid in ("vllm", "sglang") else {}
    return estimate_for_engine(
        eid,
        model=model,
        gpu=plan.gpu,
        gpus=plan.gpus,
        context=context_tokens,
        batch=plan.batch,
        kv_dtype=engine_kv_dtype(eid, kv_dtype),
        weights=weights,
        gpu_memory_utilization=util,
        **layout,
        **opts,
    )


def effective_settings(settings: EngineSettings, est: EngineEstimate) -> tuple[tuple[str, Any], ...]:
    """The settings with the engine's defaults filled in, as the estimate used them."""
    eid, s = settings.engine, settings
    if eid == "vllm":
        util = s.gpu_memory_utilization if s.gpu_memory_utilization is not None else VLLM_DEFAULT_UTILIZATION
        out = (
            ("gpu_memory_utilization", util),
            ("max_num_seqs", s.max_num_seqs if s.max_num_seqs is not None else VLLM_MAX_NUM_SEQS),
        )
        return out + ((("cpu_offload_gb", s.cpu_offload_gb),) if s.cpu_offload_gb else ())
    if eid == "sglang":
        frac = (
            s.mem_fraction_static
            if s.mem_fraction_static is not None
            else round(est.budget_bytes / est.memory_bytes, 3)
        )
        return (("mem_fraction_static", frac),)
    if eid == "llama.cpp":
        type_k, _, type_v = est.kv_dtype.partition("/")  # the cache types the estimate used ("f16/f16")
        return (
            ("n_gpu_layers", -1 if s.n_gpu_layers is None else s.n_gpu_layers),
            ("override_tensor", tuple(s.override_tensor)),
            ("flash_attn", True if s.flash_attn is None else s.flash_attn),
            ("n_ubatch", 512 if s.n_ubatch is None else s.n_ubatch),
            ("type_k", type_k),
            ("type_v", type_v or type_k),
            ("swa_full", bool(s.swa_full)),
            ("kv_unified", bool(s.kv_unified)),
            ("n_rs_seq", s.n_rs_seq or 0),
        )
    return ()


def _stage_gpus(plan: Plan, est: EngineEstimate) -> int:
    return plan.gpus // max(1, len(est.stages)) if est.stages else plan.gpus


def verdict_from_estimate(
    plan: Plan, settings: EngineSettings, est: EngineEstimate, max_context: int | None = None
) -> EngineVerdict:
    """The :class:`EngineVerdict` of one estimate: the binding GPU's four components
    (weights, KV needed, activation, runtime + CUDA graphs) against the engine's budget,
    and the totals over every GPU (per stage × the stage's GPUs)."""
    overhead = est.runtime_bytes + est.cuda_graph_bytes
    per = Breakdown(est.weights_bytes, est.kv_needed_bytes, est.activation_bytes, overhead, est.budget_bytes)
    if est.stages:
        n = _stage_gpus(plan, est)
        rows = est.stages
        # the binding GPU: the stage with the least KV headroom (available − needed)
        r = min(rows, key=lambda r: r["kv_available_bytes"] - r["kv_needed_bytes"])
        per = Breakdown(
            r["weights_bytes"],
            r["kv_needed_bytes"],
            r["activation_bytes"],
            r["runtime_bytes"] + est.cuda_graph_bytes,
            est.budget_bytes,
        )
        total = Breakdown(
            sum(r["weights_bytes"] for r in rows) * n,
            sum(r["kv_needed_bytes"] for r in rows) * n,
            sum(r["activation_bytes"] for r in rows) * n,
            sum(r["runtime_bytes"] + est.cuda_graph_bytes for r in rows) * n,
            est.budget_bytes * plan.gpus,
        )
    else:
        g = plan.gpus
        total = Breakdown(
            per.weights_bytes * g,
            per.kv_cache_bytes * g,
            per.activation_bytes * g,
            per.overhead_bytes * g,
            per.available_bytes * g,
        )
    prof = get_engine(settings.engine)
    return EngineVerdict(
        prof.id,
        prof.name,
        prof.version,
        effective_settings(settings, est),
        est.fits,
        est.reason,
        per,
        total,
        est.kv_capacity_tokens,
        est.max_concurrency,
        max_context,
        est.notes,
        est,
    )


def engine_max_context_tokens(
    model: Any,
    plan: Plan,
    settings: EngineSettings,
    *,
    weights: str,
    kv_dtype: str,
    step_tokens: int = CONTEXT_STEP_TOKENS,
) -> int:
    """The longest context on a ``step_tokens`` grid, up to the model's maximum, that the
    plan's ``batch`` sequences hold under the engine's rules (its verdict is monotonic in the
    context: a bisection over the grid); 0 when even ``step_tokens`` does not fit."""
    top = plan.model.max_context_tokens // step_tokens
    seen: dict[int, EngineEstimate] = {}

    def est(k: int) -> EngineEstimate:
        if k not in seen:
            seen[k] = _estimate(
                model, plan, settings, context_tokens=k * step_tokens, weights=weights, kv_dtype=kv_dtype
            )
        return seen[k]

    def ok(k: int) -> bool:
        return est(k).fits

    if top < 1 or not ok(1):
        return 0
    if ok(top):
        return top * step_tokens
    # bracket around the engine's own token capacity (for batch B, about capacity ÷ B), then bisect
    guess = min(top - 1, max(1, est(1).kv_capacity_tokens // max(1, plan.batch) // step_tokens))
    lo, hi = 1, top
    if ok(guess):
        lo = guess
        hi = guess + 1 if not ok(guess + 1) else top
        if hi == top and guess + 1 < top:
            lo = guess + 1
    else:
        hi = guess
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo * step_tokens


def plan_for_engine(
    *,
    model: Any = "kimi-k3",
    engine: str | EngineSettings | None = None,
    gpu: Any = "h100-sxm",
    gpus: object = 8,
    weights: str | None = None,
    kv_dtype: str = "bf16",
    context: object = 262144,
    batch: object = 1,
    nodes: object = None,
    tp: object = None,
    pp: object = None,
    ep: object = 1,
    assumptions: Assumptions | None = None,
    with_limits: bool = True,
) -> Plan:
    """The plan every surface reads: :func:`~k3lib.core.plan.make_plan` (or
    :func:`~k3lib.loaders.plan_for_loaded` for a user's file) with the engine's verdict
    attached. ``engine``: an id, an :class:`EngineSettings` (with options), or None for
    :func:`default_engine_for`. ``with_limits``: also search the engine's maximum context
    (a few dozen estimates; off for solvers that only need the verdict).

    ``assumptions`` (activation, overhead, memory basis) belong to k3lib's generic model and
    a guide's policy; an engine computes its own, so giving them with an engine is refused.
    """
    for name, value in (("weights", weights), ("kv_dtype", kv_dtype), ("gpu", gpu), ("model", model)):
        if isinstance(value, str) and not value.strip():
            raise K3InputError(name.replace("_", "-"), "is empty", "leave the option out for its default")
    settings = (
        engine
        if isinstance(engine, EngineSettings)
        else EngineSettings(default_engine_for(model) if engine is None else engine)
    )
    eid = settings.engine
    if settings.parallel is not None:  # llama.cpp's -np: that many sequences, each of `context` tokens
        from k3lib.core.units import parse_positive_int

        if parse_positive_int(batch, "batch") not in (1, settings.parallel):
            raise K3InputError(
                "parallel",
                f"-np {settings.parallel} is llama.cpp's count of sequences, and the batch says {batch}",
                "give one of --parallel and --batch (or the same number)",
            )
        batch = settings.parallel
    spec = model.require_architecture() if hasattr(model, "require_architecture") else get_model(model)
    if isinstance(spec, PublishedProfile) and eid not in ("guide", "generic"):
        raise K3InputError(
            "engine",
            f"{spec.id} is a guide's published profile (no layer shapes); it is planned by its guide's own policy",
            f"guide (the default) or generic; or the real architecture {spec.id.split('@')[0]}",
        )
    if eid == "guide" and not isinstance(spec, PublishedProfile):
        raise K3InputError(
            "engine", "guide applies to a guide profile only", "vllm, sglang, llama.cpp, transformers, generic"
        )
    a = assumptions or Assumptions()
    if eid not in ("guide", "generic"):
        given = [
            n
            for n in ("activation_bytes", "overhead_per_gpu_bytes", "overhead_total_bytes", "memory_basis")
            if getattr(a, n) is not None
        ]
        if given:
            raise K3InputError(
                given[0].replace("_bytes", "").replace("_", "-"),
                f"is an assumption of k3lib's generic model; {_engine_name(eid)} computes its own",
                "leave it out, or add --engine generic",
            )
    w = weights or ("native" if not isinstance(spec, PublishedProfile) else "q4")
    ctx = parse_context_tokens(context, "context")
    plan = _core_plan(
        model,
        gpu=gpu,
        gpus=gpus,
        weights=w,
        kv_dtype=_core_kv(kv_dtype),
        context=ctx,
        batch=batch,
        nodes=nodes,
        tp=tp,
        pp=pp,
        ep=ep,
        assumptions=assumptions,
    )
    from k3lib.core.memory import loaded_parts_notes

    parts = tuple(
        n for n in loaded_parts_notes(plan.model, "generic" if eid == "guide" else eid) if n not in plan.notes
    )
    if parts:  # what the total leaves out or assumes (vision tower, MTP layers, state dtypes), on screen
        plan = dataclasses.replace(plan, notes=plan.notes + parts)
    if eid in ("guide", "generic"):
        return plan
    check_engine_kv_dtype(eid, kv_dtype)
    # with problems (a context past the model's maximum) the engine's figures are still shown, and the
    # plan does not load whatever they say (Plan.fits needs Plan.loads)
    est = _estimate(model, plan, settings, context_tokens=ctx, weights=w, kv_dtype=kv_dtype)
    mx = engine_max_context_tokens(model, plan, settings, weights=w, kv_dtype=kv_dtype) if with_limits else None
    verdict = verdict_from_estimate(plan, settings, est, mx)
    return dataclasses.replace(
        plan,
        engine=verdict,
        total=verdict.total,
        core_total=plan.total,
        notes=plan.notes + tuple(n for n in est.notes if n not in plan.notes),
    )


#: a KV dtype as each engine spells it (llama.cpp has no FP8 cache: q8_0 is the nearest, 1.0625 B)
ENGINE_KV_DTYPES: Mapping[str, Mapping[str, str]] = {
    "llama.cpp": {"bf16": "f16", "fp16": "f16", "auto": "f16", "fp8": "q8_0", "int4": "q4_0"},
    "vllm": {"f16": "auto", "bf16": "auto", "fp16": "auto"},
    "sglang": {"f16": "auto", "bf16": "auto", "fp16": "auto"},
}


#: the KV-cache dtypes each engine has (k3lib ids and the engine's own spellings)
ENGINE_KV_CHOICES: Mapping[str, tuple[str, ...]] = {
    "vllm": ("auto", "bf16", "f16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"),
    "sglang": ("auto", "bf16", "f16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2"),
    "llama.cpp": (
        "auto",
        "bf16",
        "f16",
        "fp16",
        "fp8",
        "int4",
        "f32",
        "q8_0",
        "q4_0",
        "q4_1",
        "q5_0",
        "q5_1",
        "iq4_nl",
    ),
    "transformers": ("auto", "bf16", "f16", "fp16"),
}


def check_engine_kv_dtype(engine: str, kv_dtype: str) -> None:
    """A KV dtype the engine has, or one K3InputError naming ``kv_dtype`` and the engine's choices
    (vLLM has no int4 or q4_0 cache; transformers' DynamicCache keeps the model dtype).

    >>> check_engine_kv_dtype("vllm", "int4")
    Traceback (most recent call last):
    k3lib.core.errors.K3InputError: kv_dtype: vLLM has no 'int4' KV cache (allowed: auto, bf16, f16, fp16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla)
    """
    choices = ENGINE_KV_CHOICES.get(engine)
    if choices is not None and str(kv_dtype).strip().lower() not in choices:
        raise K3InputError("kv_dtype", f"{get_engine(engine).name} has no {kv_dtype!r} KV cache", ", ".join(choices))


def engine_kv_dtype(engine: str, kv_dtype: str) -> str:
    """The engine's spelling of a KV dtype (``fp8`` → llama.cpp ``q8_0``; ``bf16`` → vLLM ``auto``).

    >>> engine_kv_dtype("llama.cpp", "fp8"), engine_kv_dtype("vllm", "bf16")
    ('q8_0', 'auto')
    """
    key = str(kv_dtype).strip().lower()
    return ENGINE_KV_DTYPES.get(engine, {}).get(key, key)


def _core_kv(kv_dtype: str) -> str:
    """The KV dtype k3lib's component model prices (an engine's own spellings mapped onto it)."""
    key = str(kv_dtype).strip().lower()
    return {
        "auto": "bf16",
        "f16": "bf16",
        "fp16": "bf16",
        "fp8_e4m3": "fp8",
        "fp8_e5m2": "fp8",
        "fp8_ds_mla": "fp8",
        "q8_0": "q8_0",
        "q4_0": "q4_0",
    }.get(key, key)
