"""One estimate, any engine: :func:`estimate_for_engine` runs a profile's rules for
one model, GPU type and GPU count and returns an :class:`~k3lib.engines.base.EngineEstimate`."""
from __future__ import annotations

from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.layout import check_tp
from k3lib.core.units import GiB, MiB
from k3lib.engines.base import ENGINES, EngineEstimate, EngineProfile, _gib, _hardware, _resolve_model, get_engine
from k3lib.engines.llamacpp import llamacpp_compute_buffer_bytes, llamacpp_memory, llamacpp_offload_split
from k3lib.engines.sglang import sglang_cell_bytes, sglang_mem_fraction_static, sglang_state_bytes
from k3lib.engines.transformers import transformers_cache_bytes
from k3lib.engines.vllm import (VLLM_BLOCK_TOKENS, VLLM_CUDA_GRAPH_ESTIMATE_BYTES,
                                VLLM_MAX_NUM_SEQS, VLLM_DEFAULT_VERSION, vllm_activation_peak_bytes, vllm_kv_layout,
                                vllm_non_torch_bytes, vllm_rules, vllm_weights_bytes_per_rank)


def estimate_for_engine(engine: "str | EngineProfile", *, model: Any = "kimi-k3", gpu: Any = "h100-sxm",
                        gpus: int = 1, tp: int | None = None, context: object = 8192, batch: object = 1,
                        kv_dtype: str = "auto", weights: str = "native", gpu_memory_utilization: float | None = None,
                        dtype_bytes: int | None = None, pp: int = 1, **options: Any) -> EngineEstimate:
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
        raise K3InputError("tp", f"TP={tp_i} × PP={pp_i} does not divide {n_gpus} GPUs",
                           "TP × PP = the GPU count (or a divisor of it, the rest as data parallelism)")
    hw = _hardware(gpu)
    if prof.id == "generic":
        return _generic_estimate(model, hw, n_gpus, tp_i, ctx, n_batch, kv_dtype, weights)
    arch, loaded = _resolve_model(model)
    base_b = dtype_bytes or (loaded.dtype_bytes if loaded is not None else 2)
    if prof.id in ("vllm", "sglang"):
        check_tp(arch, tp_i)                         # the core's rule (KV heads replicated when TP > K)
        if pp_i > 1:
            from k3lib.engines.estimate_pp import pipeline_estimate
            return pipeline_estimate(prof, model, hw, n_gpus=n_gpus, tp=tp_i, pp=pp_i, ctx=ctx, batch=n_batch,
                                     kv_dtype=kv_dtype, weights=weights, util=gpu_memory_utilization,
                                     dtype_bytes=dtype_bytes, options=options)
    total = hw.memory_bytes("usable")
    kv_label = str(kv_dtype)
    notes: list[str] = []
    if pp_i > 1:
        notes.append(f"{prof.name} splits the layers over all {n_gpus} GPUs itself; PP={pp_i} is implied")
    cg = 0
    if prof.id == "vllm":
        util = 0.9 if gpu_memory_utilization is None else float(gpu_memory_utilization)
        if not 0 < util <= 1:
            raise K3InputError("gpu_memory_utilization", f"{util!r} must be in (0, 1]")
        budget = int(util * total)
        w = vllm_weights_bytes_per_rank(model, tp=tp_i, weights=weights, dtype_bytes=dtype_bytes)["total"]
        offload = int(float(options.get("cpu_offload_gb") or 0) * GiB)
        if offload:   # --cpu-offload-gb: GiB of weights per GPU held in pinned CPU memory (vllm/config/offload.py,
            # PR 6496's maybe_offload_to_cpu: whole parameters until the budget is spent)
            offload = min(offload, w)
            w -= offload
            notes.append(f"--cpu-offload-gb {options['cpu_offload_gb']:g}: {_gib(offload)} of weights per GPU in CPU "
                         "memory, streamed over the host link at every forward pass (decode slows accordingly)")
        version = options.get("vllm_version", VLLM_DEFAULT_VERSION)
        act = vllm_activation_peak_bytes(model, tp=tp_i, dtype_bytes=base_b,
                                         max_num_batched_tokens=options.get("max_num_batched_tokens"),
                                         max_num_seqs=options.get("max_num_seqs", VLLM_MAX_NUM_SEQS),
                                         vllm_version=version, max_model_len=ctx)
        rt = vllm_non_torch_bytes(tp=tp_i)
        if options.get("estimate_cuda_graphs"):
            cg = int(options.get("cuda_graph_bytes", VLLM_CUDA_GRAPH_ESTIMATE_BYTES))
        else:
            notes.append("CUDA graphs (≈0.5–1.9 GiB) are captured after sizing the cache, in the "
                         f"{1 - util:.0%} left outside gpu_memory_utilization")
        avail = budget - w - act - rt - cg
        layout = vllm_kv_layout(model, tp=tp_i, kv_dtype=kv_dtype, dtype_bytes=base_b,
                                mla_fp8_ds=str(kv_dtype) == "fp8_ds_mla", vllm_version=version)
        if version != VLLM_DEFAULT_VERSION:
            notes.append(f"rules of {vllm_rules(version).label}")
        cap = layout.tokens(max(avail, 0))
        need = layout.bytes_for(context_tokens=ctx, batch=n_batch)
        per_req = layout.blocks_per_request(ctx)
        conc = layout.num_blocks(max(avail, 0)) / per_req if per_req else 0.0
        if layout.padded_layers:
            notes.append(f"{layout.padded_layers} padding layer(s) in the KV-cache groups ({layout.num_groups} groups "
                         f"of {layout.group_size} layers)")
        if layout.block_tokens != VLLM_BLOCK_TOKENS:
            notes.append(f"attention block size raised to {layout.block_tokens} tokens to hold the linear-attention state")
        printed = {"Model loading took": _gib(w), "Available KV cache memory": _gib(max(avail, 0)),
                   "GPU KV cache size": f"{cap:,} tokens",
                   f"Maximum concurrency for {ctx:,} tokens per request": f"{conc:.2f}x"}
        fits = avail > 0 and need <= avail
        if avail <= 0:
            reason = (f"no memory left for the KV cache: weights {_gib(w)} + activation {_gib(act)} + non-torch "
                      f"{_gib(rt)} exceed the {util:.2f} × {_gib(total)} budget by {_gib(-avail)}")
        elif fits:
            reason = f"fits: {n_batch} × {ctx:,} tokens need {_gib(need)} of the {_gib(avail)} vLLM gives the KV cache"
        else:
            reason = (f"does not fit: {n_batch} × {ctx:,} tokens need {_gib(need)}, vLLM has {_gib(avail)} for the "
                      f"KV cache ({cap:,} tokens)")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, tp_i, ctx, n_batch, kv_label, total,
                              budget, w, act, rt, cg, max(avail, 0), need, cap, conc, fits, reason, printed,
                              tuple(notes))
    if prof.id == "llama.cpp":
        fa = options.get("flash_attn", True)
        type_k = options.get("type_k") or ("f16" if kv_dtype in ("auto", "bf16", "f16", "fp16") else kv_dtype)
        type_v = options.get("type_v") or type_k
        ub = options.get("n_ubatch", 512)
        cache = dict(n_seq=n_batch, flash_attn=fa, type_k=type_k, type_v=type_v, n_ubatch=ub,
                     swa_full=options.get("swa_full", False), kv_unified=options.get("kv_unified", False),
                     n_rs_seq=options.get("n_rs_seq", 0), ik_mla=options.get("ik_mla"))
        mem = llamacpp_memory(model, n_ctx=ctx * n_batch, **cache)
        ngl = options.get("n_gpu_layers")
        ot = tuple(options.get("override_tensor") or ())
        if ngl is not None and (isinstance(ngl, bool) or not isinstance(ngl, int) or ngl < -1):
            raise K3InputError("n_gpu_layers", f"{ngl!r}", "a whole number ≥ 0, or -1 for every layer")
        split = llamacpp_offload_split(model, n_gpu_layers=-1 if ngl is None else ngl, n_ctx=ctx * n_batch,
                                       weights=weights, override_tensor=ot, **cache)
        w = -(-split["gpu"]["weights"] // n_gpus)
        need = -(-split["gpu"]["kv"] // n_gpus)
        act = llamacpp_compute_buffer_bytes(model, context_tokens=ctx, n_ctx=ctx * n_batch, n_seq=n_batch,
                                            flash_attn=fa, n_ubatch=ub, swa_full=cache["swa_full"],
                                            kv_unified=cache["kv_unified"])
        rt = int(options.get("cuda_context_bytes", 0.5 * GiB))
        avail = total - w - act - rt
        per_cell = mem["total"] / max(1, mem["cells"] * mem["streams"])
        cap = int(max(avail, 0) * n_gpus // per_cell) if per_cell else 0
        fits = need <= avail
        host = split["host"]["weights"] + split["host"]["kv"]
        printed = {"CUDA0 model buffer size": f"{w / MiB:,.2f} MiB",
                   "CPU model buffer size": f"{split['host']['weights'] / MiB:,.2f} MiB",
                   "CUDA0 KV buffer size": f"{need / MiB:,.2f} MiB",
                   f"llama_kv_cache: size ({mem['cells']:,} cells)":
                       f"{(mem['k'] + mem['v']) / MiB:,.2f} MiB, K ({type_k}): {mem['k'] / MiB:,.2f} MiB, "
                       f"V ({type_v}): {mem['v'] / MiB:,.2f} MiB"}
        if mem["swa_cells"]:
            printed[f"llama_kv_cache: size ({mem['swa_cells']:,} cells, sliding window)"] = (
                f"{(mem['swa_k'] + mem['swa_v']) / MiB:,.2f} MiB")
        if mem["r"] or mem["s"]:
            printed["llama_memory_recurrent: size"] = (f"{(mem['r'] + mem['s']) / MiB:,.2f} MiB, R (f32): "
                                                       f"{mem['r'] / MiB:,.2f} MiB, S (f32): {mem['s'] / MiB:,.2f} MiB")
        printed["CUDA0 compute buffer size"] = f"{act / MiB:,.2f} MiB (modelled; see llamacpp_compute_buffer_bytes)"
        notes.append(f"cells = {mem['cells']:,} per stream × {mem['streams']} stream(s)"
                     + (f"; SWA cells {mem['swa_cells']:,}" if mem["swa_cells"] else "")
                     + " (rules of ggml-org/llama.cpp@0c1e570, checked on a real build by tests/llamacpp)")
        if ngl is not None or ot:
            notes.append(f"-ngl {ngl if ngl is not None else -1}" + "".join(f" -ot {p}=CPU" for p in ot)
                         + f": {split['gpu_layers']} layers on the GPUs; {host / GiB:,.2f} GiB of weights and "
                         "KV stay in system RAM")
        reason = (f"{'fits' if fits else 'does not fit'}: KV {need / MiB:,.0f} MiB needed, "
                  f"{max(avail, 0) / MiB:,.0f} MiB left after weights and buffers")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, n_gpus, ctx, n_batch, f"{type_k}/{type_v}",
                              total, total, w, act, rt, 0, max(avail, 0), need, cap,
                              (max(avail, 0) / need * n_batch) if need else 0.0, fits, reason, printed, tuple(notes))
    if prof.id == "sglang":
        frac = options.get("mem_fraction_static")
        frac = sglang_mem_fraction_static(gpu_memory_bytes=total, tp=tp_i) if frac is None else float(frac)
        budget = int(frac * total)
        w = vllm_weights_bytes_per_rank(model, tp=tp_i, weights=weights, dtype_bytes=dtype_bytes)["total"]
        rt = int(options.get("cuda_context_bytes", (0.5 if tp_i == 1 else 1.5) * GiB))
        avail = budget - w - rt
        cell = sglang_cell_bytes(model, tp=tp_i, kv_dtype=kv_dtype, dtype_bytes=base_b)
        cap = max(0, avail) // cell if cell else 0
        state = sglang_state_bytes(arch, tp=tp_i, batch=n_batch)
        need = int(cell * ctx * n_batch + state)
        fits = avail > 0 and need <= avail
        printed = {"mem_fraction_static": f"{frac:.3f}", "Load weight end. mem usage": f"{w / GiB:.2f} GB",
                   "KV Cache is allocated. #tokens": f"{cap:,}",
                   "K size + V size": f"{cap * cell / GiB:.2f} GB"}
        reason = (f"{'fits' if fits else 'does not fit'}: {n_batch} × {ctx:,} tokens need {_gib(need)}; "
                  f"the pool holds {cap:,} tokens ({_gib(max(avail, 0))})")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, tp_i, ctx, n_batch, kv_label, total,
                              budget, w, 0, rt, 0, max(avail, 0), need, int(cap),
                              (cap / ctx) if ctx else 0.0, fits, reason, printed, tuple(notes))
    # transformers
    from k3lib.core.memory import activation_bytes, weights_bytes_by_group

    if loaded is not None and loaded.exact and weights == "native":
        w_all = loaded.text_weights_bytes() + loaded.weights_bytes_by_group.get("vision", 0)
    else:
        w_all = sum(weights_bytes_by_group(arch, weights).values())
        if dtype_bytes:
            w_all = w_all * dtype_bytes // 2
        if loaded is not None:
            w_all += loaded.vision_params * base_b
    w = -(-w_all // n_gpus)
    need = -(-transformers_cache_bytes(model, context_tokens=ctx, batch=n_batch, dtype_bytes=base_b) // n_gpus)
    act = -(-activation_bytes(arch, batch=n_batch, prefill_chunk_tokens=ctx) // n_gpus)
    rt = int(0.5 * GiB)
    avail = total - w - act - rt
    fits = need <= avail
    notes.append("device_map='auto' spreads layers over the GPUs; each holds its layers' weights and cache")
    reason = f"{'fits' if fits else 'does not fit'}: DynamicCache {_gib(need)} per GPU, {_gib(max(avail, 0))} left"
    per_tok = need / max(1, ctx * n_batch)
    return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, 1, ctx, n_batch, f"model dtype ({base_b} B)",
                          total, total, w, act, rt, 0, max(avail, 0), need,
                          int(max(avail, 0) // per_tok) if per_tok else 0, (max(avail, 0) / need * n_batch) if need else 0.0,
                          fits, reason, {}, tuple(notes))


def _generic_estimate(model, hw, n_gpus, tp, ctx, batch, kv_dtype, weights) -> EngineEstimate:
    from k3lib.loaders import LoadedModel, plan_for_loaded
    from k3lib.core.plan import make_plan

    kvd = "bf16" if kv_dtype == "auto" else kv_dtype
    if isinstance(model, LoadedModel):
        plan = plan_for_loaded(model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx,
                               batch=batch)
    else:
        plan = make_plan(model=model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx,
                         batch=batch)
    pg = plan.per_gpu
    avail = max(0, pg.available_bytes - pg.weights_bytes - pg.activation_bytes - pg.overhead_bytes)
    per_token = pg.kv_cache_bytes / (ctx * batch)
    prof = ENGINES["generic"]
    return EngineEstimate(prof.id, prof.version, plan.model.id, hw.id, n_gpus, plan.tp, ctx, batch, kvd,
                          pg.available_bytes, pg.available_bytes, pg.weights_bytes, pg.activation_bytes,
                          pg.overhead_bytes, 0, avail, pg.kv_cache_bytes, int(avail // per_token) if per_token else 0,
                          avail / pg.kv_cache_bytes * batch if pg.kv_cache_bytes else 0.0, plan.fits, plan.reason,
                          {}, plan.notes)


