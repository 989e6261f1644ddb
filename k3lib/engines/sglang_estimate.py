"""SGLang's whole estimate for one GPU: the static pool ``mem_fraction_static × memory`` (SGLang's
rule by GPU size unless given), minus the weights per rank and the CUDA context, holds the token
cells (:func:`~k3lib.engines.sglang.sglang_cell_bytes`) plus the linear-attention state:

$$tokens = \\lfloor (f · C_{gpu} - W_{rank} - O) / cell \\rfloor$$

The pool's K and V sizes are predicted apart, as SGLang prints them
(:func:`~k3lib.engines.sglang.sglang_kv_sizes_bytes`; one "KV size" for MLA's latent).
With PP > 1 each stage is costed by :func:`~k3lib.engines.estimate_pp.pipeline_estimate`.
(Moved unchanged from ``estimate_for_engine``'s SGLang branch.)
"""

from __future__ import annotations

from k3lib.core.layout import check_tp
from k3lib.core.units import GiB
from k3lib.engines.base import EngineEstimate, EstimateInputs, _gib
from k3lib.engines.estimate_pp import staged_estimate
from k3lib.engines.sglang import (
    sglang_cell_bytes,
    sglang_kv_sizes_bytes,
    sglang_mem_fraction_static,
    sglang_state_bytes,
)
from k3lib.engines.vllm import vllm_weights_bytes_per_rank


def sglang_estimate(x: EstimateInputs) -> EngineEstimate:
    """One GPU under SGLang's rules (options: ``mem_fraction_static``, ``cuda_context_bytes``)."""
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
    printed = {
        "mem_fraction_static": f"{frac:.3f}",
        "Load weight end. mem usage": f"{w / GiB:.2f} GB",
        "KV Cache is allocated. #tokens": f"{cap:,}",
    }
    k_b, v_b = sglang_kv_sizes_bytes(model, pool_tokens=int(cap), tp=tp_i, kv_dtype=kv_dtype, dtype_bytes=base_b)
    if v_b:  # MHATokenToKVPool prints K and V apart
        printed["K size"], printed["V size"] = f"{k_b / GiB:.2f} GB", f"{v_b / GiB:.2f} GB"
    else:  # MLATokenToKVPool prints its one latent buffer
        printed["KV size"] = f"{k_b / GiB:.2f} GB"
    reason = (
        f"{'fits' if fits else 'does not fit'}: {n_batch} × {ctx:,} tokens need {_gib(need)}; "
        f"the pool holds {cap:,} tokens ({_gib(max(avail, 0))})"
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
        0,
        rt,
        0,
        max(avail, 0),
        need,
        int(cap),
        (cap / ctx) if ctx else 0.0,
        fits,
        reason,
        printed,
        tuple(notes),
    )
