"""One estimate, any engine: :func:`estimate_for_engine` parses the request once into
:class:`~k3lib.engines.base.EstimateInputs` and hands it to the engine's own estimator, each in its
engine's module and each returning an :class:`~k3lib.engines.base.EngineEstimate`:

==============  ===============================================================
engine          estimator
==============  ===============================================================
vLLM            :func:`k3lib.engines.vllm_estimate.vllm_estimate`
SGLang          :func:`k3lib.engines.sglang_estimate.sglang_estimate`
llama.cpp       :func:`k3lib.engines.llamacpp_estimate.llamacpp_estimate`
transformers    :func:`k3lib.engines.transformers.transformers_estimate`
generic         :func:`generic_estimate` (k3lib's component model, no engine)
==============  ===============================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.engines.base import (
    ENGINES,
    EngineEstimate,
    EngineProfile,
    EstimateInputs,
    _hardware,
    _resolve_model,
    get_engine,
)
from k3lib.engines.llamacpp_estimate import llamacpp_estimate
from k3lib.engines.sglang_estimate import sglang_estimate
from k3lib.engines.transformers import transformers_estimate
from k3lib.engines.vllm_estimate import vllm_estimate


def generic_estimate(x: EstimateInputs) -> EngineEstimate:
    """k3lib's own component model (:func:`~k3lib.core.plan.make_plan`) in an engine estimate's shape;
    it takes a guide's published profile too (no architecture needed)."""
    return _generic_estimate(x.model, x.gpu, x.gpus, x.tp, x.context_tokens, x.batch, x.kv_dtype, x.weights)


#: engine id → the estimator that holds that engine's whole estimate
ESTIMATORS: dict[str, Callable[[EstimateInputs], EngineEstimate]] = {
    "vllm": vllm_estimate,
    "sglang": sglang_estimate,
    "llama.cpp": llamacpp_estimate,
    "transformers": transformers_estimate,
    "generic": generic_estimate,
}


def estimate_for_engine(
    engine: str | EngineProfile,
    *,
    model: Any = "kimi-k3",
    gpu: Any = "h100-sxm",
    gpus: int = 1,
    tp: int | None = None,
    context: object = 8192,
    batch: object = 1,
    kv_dtype: str = "auto",
    weights: str = "native",
    gpu_memory_utilization: float | None = None,
    dtype_bytes: int | None = None,
    pp: int = 1,
    **options: Any,
) -> EngineEstimate:
    """Estimate one GPU's memory for ``model`` on ``gpus`` GPUs under ``engine``'s rules.

    ``tp`` defaults to ``gpus ÷ pp`` (vLLM, SGLang), and for llama.cpp and transformers
    the GPUs share the layers (``pp`` is then implied). With ``pp`` > 1 (vLLM, SGLang) every
    stage is costed (:mod:`k3lib.engines.pipeline`) and the estimate is the binding stage's,
    with all stages in ``stages``. Options: vLLM ``estimate_cuda_graphs``, ``max_num_seqs``,
    ``max_num_batched_tokens``, ``vllm_version`` (the rules of that release, :func:`~k3lib.engines.vllm.vllm_rules`;
    default the newest modelled; a V0 release profiles ``context`` tokens as its max_model_len); llama.cpp ``flash_attn``, ``type_k``, ``type_v``,
    ``n_ubatch``, ``swa_full``, ``kv_unified``, ``n_gpu_layers`` (``-ngl``; -1 = all), ``override_tensor``
    (``-ot PATTERN=CPU`` patterns), ``n_rs_seq`` (recurrent snapshots), ``ik_mla`` (ik_llama.cpp's ``-mla``
    mode); SGLang ``mem_fraction_static``.
    """
    from k3lib.core.units import parse_context_tokens, parse_positive_int

    prof = get_engine(engine)
    ctx = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    n_gpus = parse_positive_int(gpus, "gpus")
    pp_i = parse_positive_int(pp, "pp")
    if n_gpus % pp_i:
        raise K3InputError("pp", f"{pp_i} pipeline stages do not divide {n_gpus} GPUs", "a divisor of --gpus")
    tp_i = parse_positive_int(tp, "tp") if tp is not None else n_gpus // pp_i
    if prof.id in ("vllm", "sglang") and n_gpus % (tp_i * pp_i):
        raise K3InputError(
            "tp",
            f"TP={tp_i} × PP={pp_i} does not divide {n_gpus} GPUs",
            "TP × PP = the GPU count (or a divisor of it, the rest as data parallelism)",
        )
    hw = _hardware(gpu)
    arch, loaded = (None, None) if prof.id == "generic" else _resolve_model(model)
    inputs = EstimateInputs(
        profile=prof,
        model=model,
        arch=arch,
        loaded=loaded,
        gpu=hw,
        gpus=n_gpus,
        tp=tp_i,
        pp=pp_i,
        context_tokens=ctx,
        batch=n_batch,
        kv_dtype=kv_dtype,
        weights=weights,
        gpu_memory_utilization=gpu_memory_utilization,
        dtype_bytes=dtype_bytes,
        options=dict(options),
    )
    return ESTIMATORS[prof.id](inputs)


def _generic_estimate(model, hw, n_gpus, tp, ctx, batch, kv_dtype, weights) -> EngineEstimate:
    from k3lib.core.plan import make_plan
    from k3lib.loaders import LoadedModel, plan_for_loaded

    kvd = "bf16" if kv_dtype == "auto" else kv_dtype
    if isinstance(model, LoadedModel):
        plan = plan_for_loaded(
            model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx, batch=batch
        )
    else:
        plan = make_plan(
            model=model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx, batch=batch
        )
    pg = plan.per_gpu
    avail = max(0, pg.available_bytes - pg.weights_bytes - pg.activation_bytes - pg.overhead_bytes)
    per_token = pg.kv_cache_bytes / (ctx * batch)
    prof = ENGINES["generic"]
    return EngineEstimate(
        prof.id,
        prof.version,
        plan.model.id,
        hw.id,
        n_gpus,
        plan.tp,
        ctx,
        batch,
        kvd,
        pg.available_bytes,
        pg.available_bytes,
        pg.weights_bytes,
        pg.activation_bytes,
        pg.overhead_bytes,
        0,
        avail,
        pg.kv_cache_bytes,
        int(avail // per_token) if per_token else 0,
        avail / pg.kv_cache_bytes * batch if pg.kv_cache_bytes else 0.0,
        plan.fits,
        plan.reason,
        {},
        plan.notes,
    )
