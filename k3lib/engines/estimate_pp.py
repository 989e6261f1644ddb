"""The estimate for PP > 1 (vLLM, SGLang): every stage costed with :mod:`k3lib.engines.pipeline`,
the binding stage reported, all stages kept in :attr:`EngineEstimate.stages`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB
from k3lib.engines.base import EngineEstimate, EngineProfile, EstimateInputs, _gib, _resolve_model
from k3lib.engines.pipeline import (
    sglang_stage_architectures,
    stage_activation_peak_bytes,
    stage_weights_bytes_per_rank,
    vllm_pipeline_kv,
)
from k3lib.engines.sglang import sglang_cell_bytes, sglang_mem_fraction_static, sglang_state_bytes
from k3lib.engines.vllm import (
    VLLM_CUDA_GRAPH_ESTIMATE_BYTES,
    VLLM_MAX_NUM_BATCHED_TOKENS,
    VLLM_MAX_NUM_SEQS,
    vllm_non_torch_bytes,
)


def _stage_row(s: int, layers: int, w: int, act: int, rt: int, avail: int, need: int) -> dict[str, int]:
    return {
        "stage": s,
        "layers": layers,
        "weights_bytes": w,
        "activation_bytes": act,
        "runtime_bytes": rt,
        "kv_available_bytes": max(avail, 0),
        "kv_needed_bytes": need,
    }


def pipeline_estimate(
    prof: EngineProfile,
    model: Any,
    hw,
    *,
    n_gpus: int,
    tp: int,
    pp: int,
    ctx: int,
    batch: int,
    kv_dtype: str,
    weights: str,
    util: float | None,
    dtype_bytes: int | None,
    options: Mapping[str, Any],
) -> EngineEstimate:
    """One estimate per stage; the reported GPU is the binding stage (fewest KV blocks for
    vLLM, smallest pool for SGLang). Runtime memory: vLLM's non-torch rule for a world of
    TP × PP ranks (NCCL buffers as soon as there are two)."""
    arch, loaded = _resolve_model(model)
    base_b = dtype_bytes or (loaded.dtype_bytes if loaded is not None else 2)
    total = hw.memory_bytes("usable")
    notes = [
        f"PP={pp}: whole layers per stage ({', '.join(map(str, _layers(arch, pp)))}), embedding on the first "
        "stage, LM head on the last (vLLM get_pp_indices)"
    ]
    ws = [
        stage_weights_bytes_per_rank(model, tp=tp, pp=pp, stage=s, weights=weights, dtype_bytes=dtype_bytes)["total"]
        for s in range(pp)
    ]
    layers = _layers(arch, pp)
    if prof.id == "vllm":
        util_f = 0.9 if util is None else float(util)
        if not 0 < util_f <= 1:
            raise K3InputError("gpu_memory_utilization", f"{util_f!r} must be in (0, 1]")
        budget = int(util_f * total)
        rt = vllm_non_torch_bytes(tp=tp * pp)
        cg = (
            int(options.get("cuda_graph_bytes", VLLM_CUDA_GRAPH_ESTIMATE_BYTES))
            if options.get("estimate_cuda_graphs")
            else 0
        )
        acts = [
            stage_activation_peak_bytes(
                model,
                tp=tp,
                pp=pp,
                stage=s,
                dtype_bytes=base_b,
                max_num_batched_tokens=options.get("max_num_batched_tokens", VLLM_MAX_NUM_BATCHED_TOKENS),
                max_num_seqs=options.get("max_num_seqs", VLLM_MAX_NUM_SEQS),
            )
            for s in range(pp)
        ]
        avails = [budget - w - a - rt - cg for w, a in zip(ws, acts)]
        kv = vllm_pipeline_kv(
            model, tp=tp, pp=pp, kv_dtype=kv_dtype, dtype_bytes=base_b, mla_fp8_ds=str(kv_dtype) == "fp8_ds_mla"
        )
        blocks = kv.blocks(avails)
        cap = blocks // kv.layout.num_groups * kv.layout.block_tokens
        needs = [kv.stage_bytes_for(s, context_tokens=ctx, batch=batch) for s in range(pp)]
        per_stage_blocks = [max(0, a) // kv.stage_bytes_per_block(s) for s, a in enumerate(avails)]
        b = min(range(pp), key=lambda s: per_stage_blocks[s])
        per_req = kv.layout.blocks_per_request(ctx)
        conc = blocks / per_req if per_req else 0.0
        fits = min(avails) > 0 and per_req * batch <= blocks
        stages = tuple(_stage_row(s, layers[s], ws[s], acts[s], rt, avails[s], needs[s]) for s in range(pp))
        printed = {f"Model loading took (stage {s})": _gib(ws[s]) for s in range(pp)}
        printed.update({f"Available KV cache memory (stage {s})": _gib(max(avails[s], 0)) for s in range(pp)})
        printed["GPU KV cache size"] = f"{cap:,} tokens"
        printed[f"Maximum concurrency for {ctx:,} tokens per request"] = f"{conc:.2f}x"
        notes.append(f"every worker gets the smallest block count ({blocks:,}); stage {b} binds")
        reason = (
            f"{'fits' if fits else 'does not fit'}: {batch} × {ctx:,} tokens need {_gib(needs[b])} on stage "
            f"{b}, vLLM has {_gib(max(avails[b], 0))} for its KV cache ({cap:,} tokens)"
        )
        return EngineEstimate(
            prof.id,
            prof.version,
            arch.id,
            hw.id,
            n_gpus,
            tp,
            ctx,
            batch,
            str(kv_dtype),
            total,
            budget,
            ws[b],
            acts[b],
            rt,
            cg,
            max(avails[b], 0),
            needs[b],
            cap,
            conc,
            fits,
            reason,
            printed,
            tuple(notes),
            pp,
            stages,
        )
    # SGLang
    frac = options.get("mem_fraction_static")
    frac = sglang_mem_fraction_static(gpu_memory_bytes=total, tp=tp, pp=pp) if frac is None else float(frac)
    budget = int(frac * total)
    rt = int(options.get("cuda_context_bytes", 1.5 * GiB))
    avails = [budget - w - rt for w in ws]
    stage_archs = sglang_stage_architectures(model, pp)
    cells = [sglang_cell_bytes(st, tp=tp, kv_dtype=kv_dtype, dtype_bytes=base_b) for st in stage_archs]
    pools = [max(0, a) // c if c else 0 for a, c in zip(avails, cells)]
    b = min(range(pp), key=lambda s: pools[s])
    cap = pools[b]
    # each stage holds the linear-attention state of its own layers (as the PP = 1 estimate does)
    states = [sglang_state_bytes(st, tp=tp, batch=batch) for st in stage_archs]
    needs = [c * ctx * batch + st for c, st in zip(cells, states)]
    fits = min(avails) > 0 and ctx * batch <= cap and all(n <= a for n, a in zip(needs, avails))
    stages = tuple(_stage_row(s, layers[s], ws[s], 0, rt, avails[s], needs[s]) for s in range(pp))
    printed = {"mem_fraction_static": f"{frac:.3f}"}
    printed.update({f"Load weight end (stage {s}). mem usage": f"{ws[s] / GiB:.2f} GB" for s in range(pp)})
    printed["KV Cache is allocated. #tokens"] = f"{cap:,}"
    notes.append(f"the smallest stage pool is taken (stage {b}: {cap:,} tokens)")
    reason = (
        f"{'fits' if fits else 'does not fit'}: {batch} × {ctx:,} tokens need {_gib(needs[b])} on stage {b}; "
        f"the pool holds {cap:,} tokens"
    )
    return EngineEstimate(
        prof.id,
        prof.version,
        arch.id,
        hw.id,
        n_gpus,
        tp,
        ctx,
        batch,
        str(kv_dtype),
        total,
        budget,
        ws[b],
        0,
        rt,
        0,
        max(avails[b], 0),
        needs[b],
        int(cap),
        (cap / ctx) if ctx else 0.0,
        fits,
        reason,
        printed,
        tuple(notes),
        pp,
        stages,
    )


def _layers(arch, pp: int) -> tuple[int, ...]:
    from k3lib.core.layout import stage_layer_counts

    return stage_layer_counts(arch.num_layers, pp)


def staged_estimate(x: EstimateInputs) -> EngineEstimate | None:
    """:func:`pipeline_estimate` of a request with more than one pipeline stage (each stage by the
    engine's own rule), else None: the single-stage engines' shared first step."""
    if x.pp <= 1:
        return None
    return pipeline_estimate(
        x.profile,
        x.model,
        x.gpu,
        n_gpus=x.gpus,
        tp=x.tp,
        pp=x.pp,
        ctx=x.context_tokens,
        batch=x.batch,
        kv_dtype=x.kv_dtype,
        weights=x.weights,
        util=x.gpu_memory_utilization,
        dtype_bytes=x.dtype_bytes,
        options=x.options,
    )
