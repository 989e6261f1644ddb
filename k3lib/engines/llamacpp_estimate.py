"""llama.cpp's whole estimate for one GPU: the layers spread over the GPUs (``-ngl``, ``-ot``), each
GPU holding its share of the weights and of the KV cells (:func:`~k3lib.engines.llamacpp.llamacpp_memory`,
:func:`~k3lib.engines.llamacpp.llamacpp_offload_split`), the compute buffer
(:func:`~k3lib.engines.llamacpp.llamacpp_compute_buffer_bytes`) and the CUDA context:

$$KV_{avail} = C_{gpu} - \\lceil W_{gpu} / N \\rceil - A_{compute} - O$$

(Moved unchanged from ``estimate_for_engine``'s llama.cpp branch.)
"""

from __future__ import annotations

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB, MiB
from k3lib.engines.base import EngineEstimate, EstimateInputs
from k3lib.engines.llamacpp import (
    llamacpp_compute_buffer_bytes,
    llamacpp_memory,
    llamacpp_offload_split,
    supports_rs_rollback,
)


def llamacpp_estimate(x: EstimateInputs) -> EngineEstimate:
    """One GPU under llama.cpp's rules (options: ``flash_attn``, ``type_k``, ``type_v``, ``n_ubatch``,
    ``swa_full``, ``kv_unified``, ``n_rs_seq``, ``ik_mla``, ``n_gpu_layers``, ``override_tensor``,
    ``cuda_context_bytes``)."""
    prof, model, arch, hw, n_gpus = x.profile, x.model, x.arch, x.gpu, x.gpus
    ctx, n_batch, kv_dtype, weights, options = x.context_tokens, x.batch, x.kv_dtype, x.weights, x.options
    total = hw.memory_bytes("usable")
    notes = x.implied_pp_notes()
    fa = options.get("flash_attn", True)
    if isinstance(fa, str) and fa.strip().lower() == "auto":
        # llama.cpp's default: resolved when the graph is first reserved, enabled where the backend runs
        # FLASH_ATTN_EXT for the model's head sizes (src/llama-context.cpp @0c1e570; CUDA and CPU do)
        fa = True
        notes.append("flash attention auto: taken as enabled, as llama.cpp resolves it where the backend runs it")
    elif not isinstance(fa, bool):
        raise K3InputError("flash_attn", f"{fa!r}", "True (on), False (off) or 'auto'")
    # the plan's KV dtype sets both cache types; -ctk / -ctv each replace one (llama.cpp: V stays f16
    # when only -ctk is given)
    base = "f16" if kv_dtype in ("auto", "bf16", "f16", "fp16") else kv_dtype
    type_k = options.get("type_k") or base
    type_v = options.get("type_v") or base
    ub = options.get("n_ubatch", 512)
    cache = dict(
        n_seq=n_batch,
        flash_attn=fa,
        type_k=type_k,
        type_v=type_v,
        n_ubatch=ub,
        swa_full=options.get("swa_full", False),
        kv_unified=options.get("kv_unified", False),
        n_rs_seq=options.get("n_rs_seq", 0),
        ik_mla=options.get("ik_mla"),
    )
    mem = llamacpp_memory(model, n_ctx=ctx * n_batch, **cache)
    if cache["n_rs_seq"] and not supports_rs_rollback(arch):
        notes.append(
            f"n_rs_seq {cache['n_rs_seq']}: {arch.id}'s family keeps no recurrent snapshots; llama.cpp sets it to 0"
        )
    ngl = options.get("n_gpu_layers")
    ot = tuple(options.get("override_tensor") or ())
    if ngl is not None and (isinstance(ngl, bool) or not isinstance(ngl, int) or ngl < -1):
        raise K3InputError("n_gpu_layers", f"{ngl!r}", "a whole number ≥ 0, or -1 for every layer")
    split = llamacpp_offload_split(
        model,
        n_gpu_layers=-1 if ngl is None else ngl,
        n_ctx=ctx * n_batch,
        weights=weights,
        override_tensor=ot,
        **cache,
    )
    w = -(-split["gpu"]["weights"] // n_gpus)
    need = -(-split["gpu"]["kv"] // n_gpus)
    act = llamacpp_compute_buffer_bytes(
        model,
        context_tokens=ctx,
        n_ctx=ctx * n_batch,
        n_seq=n_batch,
        flash_attn=fa,
        n_ubatch=ub,
        swa_full=cache["swa_full"],
        kv_unified=cache["kv_unified"],
    )
    rt = int(options.get("cuda_context_bytes", 0.5 * GiB))
    avail = total - w - act - rt
    per_cell = mem["total"] / max(1, mem["cells"] * mem["streams"])
    cap = int(max(avail, 0) * n_gpus // per_cell) if per_cell else 0
    fits = need <= avail
    host = split["host"]["weights"] + split["host"]["kv"]
    printed = {
        "CUDA0 model buffer size": f"{w / MiB:,.2f} MiB",
        "CPU model buffer size": f"{split['host']['weights'] / MiB:,.2f} MiB",
        "CUDA0 KV buffer size": f"{need / MiB:,.2f} MiB",
        f"llama_kv_cache: size ({mem['cells']:,} cells)": f"{(mem['k'] + mem['v']) / MiB:,.2f} MiB, K ({type_k}): {mem['k'] / MiB:,.2f} MiB, "
        f"V ({type_v}): {mem['v'] / MiB:,.2f} MiB",
    }
    if mem["swa_cells"]:
        printed[f"llama_kv_cache: size ({mem['swa_cells']:,} cells, sliding window)"] = (
            f"{(mem['swa_k'] + mem['swa_v']) / MiB:,.2f} MiB"
        )
    if mem["r"] or mem["s"]:
        printed["llama_memory_recurrent: size"] = (
            f"{(mem['r'] + mem['s']) / MiB:,.2f} MiB, R (f32): "
            f"{mem['r'] / MiB:,.2f} MiB, S (f32): {mem['s'] / MiB:,.2f} MiB"
        )
    printed["CUDA0 compute buffer size"] = f"{act / MiB:,.2f} MiB (modelled; see llamacpp_compute_buffer_bytes)"
    notes.append(
        f"cells = {mem['cells']:,} per stream × {mem['streams']} stream(s)"
        + (f"; SWA cells {mem['swa_cells']:,}" if mem["swa_cells"] else "")
        + " (rules of ggml-org/llama.cpp@0c1e570, checked on a real build by tests/llamacpp)"
    )
    if ngl is not None or ot:
        notes.append(
            f"-ngl {ngl if ngl is not None else -1}"
            + "".join(f" -ot {p}=CPU" for p in ot)
            + f": {split['gpu_layers']} layers on the GPUs; {host / GiB:,.2f} GiB of weights and "
            "KV stay in system RAM"
        )
    reason = (
        f"{'fits' if fits else 'does not fit'}: KV {need / MiB:,.0f} MiB needed, "
        f"{max(avail, 0) / MiB:,.0f} MiB left after weights and buffers"
    )
    return EngineEstimate(
        prof.id,
        prof.version,
        arch.id,
        hw.id,
        n_gpus,
        n_gpus,
        ctx,
        n_batch,
        f"{type_k}/{type_v}",
        total,
        total,
        w,
        act,
        rt,
        0,
        max(avail, 0),
        need,
        cap,
        (max(avail, 0) / need * n_batch) if need else 0.0,
        fits,
        reason,
        printed,
        tuple(notes),
    )
