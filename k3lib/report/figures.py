"""The report's key figures, all read from the ONE plan of a :class:`ReportConfig`:
verdict, per-GPU bytes (the fullest GPU), max context (one sweep over a context grid,
the same code as the plan), cost, decode tokens/s and the offload option."""

from __future__ import annotations

from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.report.parameters import ReportConfig


def cost_usd(plan) -> float | None:
    """GPU count × the catalogue's price per GPU (US$), or None when no price is known."""
    price = plan.gpu.price_usd
    return None if price is None else plan.gpus * price


def max_context_tokens(plan) -> int:
    """The longest context, on a 1,024-token grid up to the model's maximum, that fits
    with everything else of ``plan`` unchanged; 0 when not even 1K fits. One vectorized
    sweep (:func:`k3lib.core.search.max_context_tokens`), the same bytes as the plan.

    >>> from k3lib.core.plan import make_plan, Assumptions
    >>> p = make_plan(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpus=6,
    ...               assumptions=Assumptions(activation_bytes=10 * 2**30, overhead_total_bytes=48 * 2**30))
    >>> max_context_tokens(p)  # (480 - 325 - 10 - 48) GiB / 131,072 B = 794,624 = 776K; ceil per GPU → 775K
    793600
    """
    from k3lib.core.search import max_context_tokens as search_max_context

    if getattr(plan, "engine", None) is not None and plan.engine.max_context_tokens is not None:
        return plan.engine.max_context_tokens  # the engine's own limit (its rules decide)
    return search_max_context(plan)


def offload_relevant(cfg: ReportConfig) -> bool:
    """Offload is shown when asked for (``experts``) or, with ``auto``, when the plan does not fit."""
    return cfg.offload == "experts" or (cfg.offload == "auto" and not cfg.plan.fits)


def offload_plan(cfg: ReportConfig):
    """(:class:`~k3lib.serving.offload_model.OffloadPlan` for this plan on one of its GPUs,
    or None; why not). Built only when :func:`offload_relevant`."""
    from k3lib.serving import offload_model

    if not offload_relevant(cfg):
        why = "offload = none" if cfg.offload == "none" else "the plan fits on the GPUs; offloading would only slow it"
        return None, f"not needed here ({why})"
    plan = cfg.plan
    try:
        return offload_model.plan_offload(
            model=plan.model,
            weights=plan.weight_format,
            gpu=plan.gpu,
            kv_dtype=plan.kv_dtype,
            context=plan.context_tokens,
            batch=plan.batch,
            ram=cfg.ram_bytes,
            ram_bandwidth=cfg.ram_bandwidth_bytes_per_s or None,
            assumptions=plan.assumptions,
        ), ""
    except K3InputError as exc:
        return None, f"not possible for this model ({exc})"


def decode_tokens_per_s(cfg: ReportConfig, offloaded=None) -> tuple[float | None, str, str]:
    """(decode tokens/s, how it was computed, its basis in a few words): the serving model's
    fitted figure from step 6 of the checklist (:func:`k3lib.studies.steps.throughput_for_plan`
    on the report's one plan) when it has one, else the bandwidth ceiling — the offload plan's
    in offload mode; (None, why, "") when it cannot load."""
    from k3lib.studies.steps import throughput_for_plan

    if cfg.offload == "experts" and offloaded is not None:
        if not offloaded.fits:
            return None, "the offload plan does not load, so no speed is quoted", ""
        return (
            offloaded.decode_tokens_per_s,
            "offload mode: bandwidth ceiling over GPU memory and system RAM",
            "theoretical ceiling",
        )
    plan = cfg.plan
    if not plan.fits:
        return None, "the plan does not fit, so no speed is quoted", ""
    try:
        t = throughput_for_plan(plan)
    except K3InputError as exc:
        return None, f"not computed for this configuration ({exc})", ""
    if t.expected_tokens_per_s is not None:
        err = f", ±{t.expected_error_pct:.0f} % on held-aside runs" if t.expected_error_pct is not None else ""
        short = (t.expected_basis or "") + (
            f" ±{t.expected_error_pct:.0f} %" if t.expected_error_pct is not None else ""
        )
        return (
            t.expected_tokens_per_s,
            (f"serving model ({t.expected_basis}{err}) at the full context; bandwidth ceiling {t.tokens_per_s:,.1f}"),
            short,
        )
    return (
        t.tokens_per_s,
        "theoretical ceiling: bandwidth with every weight on the GPUs; real decode is lower",
        "theoretical ceiling",
    )


def key_figures(cfg: ReportConfig) -> dict[str, Any]:
    """The figures the summary and the batch index show (sizes in bytes); per-GPU
    figures are the plan's fullest GPU (``plan.per_gpu``)."""
    plan = cfg.plan
    offloaded, offload_why = offload_plan(cfg)
    tps, tps_how, tps_basis = decode_tokens_per_s(cfg, offloaded)
    fits_offload = offloaded is not None and offloaded.fits
    verdict = (
        "fits" if plan.fits else ("fits with offload" if cfg.offload == "experts" and fits_offload else "does not fit")
    )
    g = plan.per_gpu
    return {
        "scenario": cfg.scenario,
        "title": cfg.title,
        "fits": plan.fits,
        "verdict": verdict,
        "reason": plan.reason,
        "offload_verdict": offloaded.verdict() if offloaded is not None else offload_why,
        "model": plan.model.id,
        "model_name": plan.model.name,
        "weights": plan.weight_format,
        "kv_dtype": plan.kv_dtype,
        "context_tokens": plan.context_tokens,
        "batch": plan.batch,
        "gpu": plan.gpu.id,
        "gpu_name": plan.gpu.name,
        "gpus": plan.gpus,
        "nodes": plan.nodes,
        "tp": plan.tp,
        "pp": plan.pp,
        "total_bytes": plan.total.total_bytes,
        "available_bytes": plan.total.available_bytes,
        "headroom_bytes": plan.headroom_bytes,
        "per_gpu_total_bytes": g.total_bytes,
        "per_gpu_available_bytes": g.available_bytes,
        "per_gpu_headroom_bytes": g.headroom_bytes,
        "max_context_tokens": max_context_tokens(plan),
        "cost_usd": cost_usd(plan),
        "price_usd": plan.gpu.price_usd,
        "tokens_per_s": tps,
        "tokens_per_s_how": tps_how,
        "tokens_per_s_basis": tps_basis,
        "engine": cfg.engine,
        "offload": cfg.offload,
        "verdict_basis": plan.verdict_basis,
        "engine_settings": dict(plan.engine.settings) if plan.engine is not None else {},
        "max_concurrency": plan.engine.max_concurrency if plan.engine is not None else None,
        "kv_capacity_tokens": plan.engine.kv_capacity_tokens if plan.engine is not None else None,
    }
