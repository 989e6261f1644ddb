"""vLLM's whole estimate for one GPU: the budget ``gpu_memory_utilization × memory``, minus the
weights per rank, the profiled activation peak and the non-torch memory (and the CUDA-graph estimate
when enabled), leaves the KV memory, paged in blocks (:func:`~k3lib.engines.vllm.vllm_kv_layout`):

$$KV_{avail} = u · C_{gpu} - W_{rank} - A_{peak} - O_{non\\text{-}torch} \\;(- G_{graphs})$$

With PP > 1 each stage is costed by :func:`~k3lib.engines.estimate_pp.pipeline_estimate`.
(Moved unchanged from ``estimate_for_engine``'s vLLM branch.)
"""

from __future__ import annotations

from k3lib.core.errors import K3InputError
from k3lib.core.layout import check_tp
from k3lib.core.units import GiB
from k3lib.engines.base import EngineEstimate, EstimateInputs, _gib
from k3lib.engines.estimate_pp import staged_estimate
from k3lib.engines.vllm import (
    VLLM_BLOCK_TOKENS,
    VLLM_CUDA_GRAPH_ESTIMATE_BYTES,
    VLLM_DEFAULT_VERSION,
    VLLM_MAX_NUM_SEQS,
    vllm_activation_peak_bytes,
    vllm_kv_layout,
    vllm_non_torch_bytes,
    vllm_rules,
    vllm_weights_bytes_per_rank,
)


def vllm_estimate(x: EstimateInputs) -> EngineEstimate:
    """One GPU under vLLM's rules (options: ``estimate_cuda_graphs``, ``cuda_graph_bytes``, ``max_num_seqs``,
    ``max_num_batched_tokens``, ``cpu_offload_gb``, ``vllm_version``)."""
    prof, model, arch, hw, n_gpus = x.profile, x.model, x.arch, x.gpu, x.gpus
    tp_i, ctx, n_batch, kv_dtype = x.tp, x.context_tokens, x.batch, x.kv_dtype
    weights, dtype_bytes, options, base_b = x.weights, x.dtype_bytes, x.options, x.base_dtype_bytes
    check_tp(arch, tp_i)  # the core's rule (KV heads replicated when TP > K)
    staged = staged_estimate(x)
    if staged is not None:
        return staged
    total = hw.memory_bytes("usable")
    kv_label = str(kv_dtype)
    notes: list[str] = []
    cg = 0
    util = 0.9 if x.gpu_memory_utilization is None else float(x.gpu_memory_utilization)
    if not 0 < util <= 1:
        raise K3InputError("gpu_memory_utilization", f"{util!r} must be in (0, 1]")
    budget = int(util * total)
    w = vllm_weights_bytes_per_rank(model, tp=tp_i, weights=weights, dtype_bytes=dtype_bytes)["total"]
    offload = int(float(options.get("cpu_offload_gb") or 0) * GiB)
    if offload:  # --cpu-offload-gb: GiB of weights per GPU held in pinned CPU memory (vllm/config/offload.py,
        # PR 6496's maybe_offload_to_cpu: whole parameters until the budget is spent)
        offload = min(offload, w)
        w -= offload
        notes.append(
            f"--cpu-offload-gb {options['cpu_offload_gb']:g}: {_gib(offload)} of weights per GPU in CPU "
            "memory, streamed over the host link at every forward pass (decode slows accordingly)"
        )
    version = options.get("vllm_version", VLLM_DEFAULT_VERSION)
    act = vllm_activation_peak_bytes(
        model,
        tp=tp_i,
        dtype_bytes=base_b,
        max_num_batched_tokens=options.get("max_num_batched_tokens"),
        max_num_seqs=options.get("max_num_seqs", VLLM_MAX_NUM_SEQS),
        vllm_version=version,
        max_model_len=ctx,
    )
    rt = vllm_non_torch_bytes(tp=tp_i)
    if options.get("estimate_cuda_graphs"):
        cg = int(options.get("cuda_graph_bytes", VLLM_CUDA_GRAPH_ESTIMATE_BYTES))
    else:
        notes.append(
            "CUDA graphs (≈0.5–1.9 GiB) are captured after sizing the cache, in the "
            f"{1 - util:.0%} left outside gpu_memory_utilization"
        )
    avail = budget - w - act - rt - cg
    layout = vllm_kv_layout(
        model,
        tp=tp_i,
        kv_dtype=kv_dtype,
        dtype_bytes=base_b,
        mla_fp8_ds=str(kv_dtype) == "fp8_ds_mla",
        vllm_version=version,
    )
    if version != VLLM_DEFAULT_VERSION:
        notes.append(f"rules of {vllm_rules(version).label}")
    cap = layout.tokens(max(avail, 0))
    need = layout.bytes_for(context_tokens=ctx, batch=n_batch)
    per_req = layout.blocks_per_request(ctx)
    conc = layout.num_blocks(max(avail, 0)) / per_req if per_req else 0.0
    if layout.padded_layers:
        notes.append(
            f"{layout.padded_layers} padding layer(s) in the KV-cache groups ({layout.num_groups} groups "
            f"of {layout.group_size} layers)"
        )
    if layout.block_tokens != VLLM_BLOCK_TOKENS:
        notes.append(f"attention block size raised to {layout.block_tokens} tokens to hold the linear-attention state")
    printed = {
        "Model loading took": _gib(w),
        "Available KV cache memory": _gib(max(avail, 0)),
        "GPU KV cache size": f"{cap:,} tokens",
        f"Maximum concurrency for {ctx:,} tokens per request": f"{conc:.2f}x",
    }
    fits = avail > 0 and need <= avail
    if avail <= 0:
        reason = (
            f"no memory left for the KV cache: weights {_gib(w)} + activation {_gib(act)} + non-torch "
            f"{_gib(rt)} exceed the {util:.2f} × {_gib(total)} budget by {_gib(-avail)}"
        )
    elif fits:
        reason = f"fits: {n_batch} × {ctx:,} tokens need {_gib(need)} of the {_gib(avail)} vLLM gives the KV cache"
    else:
        reason = (
            f"does not fit: {n_batch} × {ctx:,} tokens need {_gib(need)}, vLLM has {_gib(avail)} for the "
            f"KV cache ({cap:,} tokens)"
        )
    return EngineEstimate(
        prof.id,
        prof.version,
        arch.id,
        hw.id,
        n_gpus,
        tp_i,
        ctx,
        n_batch,
        kv_label,
        total,
        budget,
        w,
        act,
        rt,
        cg,
        max(avail, 0),
        need,
        cap,
        conc,
        fits,
        reason,
        printed,
        tuple(notes),
    )
