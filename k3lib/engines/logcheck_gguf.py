"""check-log's llama.cpp and Ollama side: each figure a GGUF engine printed (KV caches, recurrent
state, the GPU's compute buffer, the model size) against the llama.cpp profile
(:mod:`k3lib.engines.llamacpp`), with the rule behind each."""

from __future__ import annotations

import re

from k3lib.core.errors import K3InputError
from k3lib.core.units import MiB
from k3lib.engines.logcheck_rows import (
    COMPUTE_TOLERANCE_PCT,
    KV_TOLERANCE_PCT,
    WEIGHTS_TOLERANCE_PCT,
    check_row,
    figures_named,
)


def _main_compute(figs):
    """The compute buffer of the device that runs the graph: the first one not on the host (CUDA0,
    ROCm0, Metal…), or the CPU's when the log has no other."""
    comp = [f for f in figs if f.quantity.startswith("compute buffer")]
    dev = [f for f in comp if not re.search(r"\((CPU|CUDA_Host|Host)\)", f.quantity)]
    return (dev or comp or [None])[0]


def check_gguf(cfg, figs, arch, rows, missing, notes):
    from k3lib.engines.llamacpp import _llamacpp_row_bytes

    bufs = [f for f in figs if f.quantity.startswith("KV buffer (")]
    prev = 0
    for f in figures_named(figs, "KV total"):  # each cache's buffer lines come just before its size line
        mine = [b for b in bufs if prev < b.line < f.line]
        prev = f.line
        if mine:
            rows.append(
                check_row(
                    "KV buffers summed over devices",
                    f.value,
                    sum(b.value for b in mine),
                    "B",
                    KV_TOLERANCE_PCT,
                    "llama.cpp allocates each layer's K and V on the device of its "
                    "layer (-ngl / partial offload), so the per-device KV buffers add up to the total",
                )
            )
    for f in figs:
        if (
            f.quantity.startswith("compute buffer")
            and f is _main_compute(figs)
            and arch is not None
            and cfg.get("n_ctx")
            and not cfg.get("mla_dims")
        ):
            from k3lib.engines.llamacpp import llamacpp_compute_buffer_bytes

            try:
                pred = llamacpp_compute_buffer_bytes(
                    arch,
                    context_tokens=cfg["n_ctx"],
                    n_ctx=cfg["n_ctx"],
                    n_seq=cfg.get("n_seq_max", 1),
                    flash_attn=cfg.get("flash_attn", True),
                    n_ubatch=cfg.get("n_ubatch", 512),
                    swa_full=cfg.get("swa_full", False),
                    kv_unified=cfg.get("kv_unified", False),
                )
            except K3InputError as exc:
                missing.append(f"{f.quantity}: {exc}")
                continue
            rows.append(
                check_row(
                    f.quantity,
                    f.value,
                    pred,
                    "B",
                    COMPUTE_TOLERANCE_PCT,
                    "a model of llama.cpp's worst-case graph (mask per cache, scores without flash attention, "
                    "logits + widest FFN + 3·hidden): an approximation, measured per family in tests/llamacpp",
                )
            )
        elif f.quantity.startswith("output buffer") and arch is not None:
            from k3lib.engines.llamacpp import llamacpp_output_buffer_bytes

            pred = llamacpp_output_buffer_bytes(arch, n_seq=cfg.get("n_seq_max", 1))
            rows.append(
                check_row(
                    f.quantity,
                    f.value,
                    pred,
                    "B",
                    KV_TOLERANCE_PCT,
                    "llama.cpp src/llama-context.cpp output_reserve: max(1, n_seq) outputs × vocabulary × F32 logits",
                    allowed=(pred - 0.005 * MiB - 1, pred + 0.005 * MiB + 1),
                )
            )
        elif f.quantity.startswith("model buffer") and cfg.get("_gguf") is not None:
            pass  # all model buffer lines together, below
        elif f.quantity.startswith(("compute buffer", "output buffer", "input buffer", "model buffer")):
            missing.append(
                f"{f.quantity} = {f.value / MiB:,.2f} MiB: not predicted from a log (the host side of the "
                "compute graph, and the GGUF's tensor types, are not in it)"
            )
    _check_gguf_file(cfg, figs, arch, rows, missing)
    for f in figures_named(figs, "model size"):
        if arch is None or not cfg.get("ftype"):
            missing.append("model size: needs the model and its file type (model ftype line, --model)")
            continue
        from k3lib.engines.gguf_recipe import gguf_recipe_bytes

        try:
            pred = gguf_recipe_bytes(arch, cfg["ftype"])["total"]
        except K3InputError as exc:
            missing.append(f"model size: {exc}")
            continue
        rows.append(
            check_row(
                "model size (tensor data)",
                f.value,
                pred,
                "B",
                WEIGHTS_TOLERANCE_PCT,
                f"llama.cpp src/llama-quant.cpp llama_tensor_get_type (commit 007dbbf): per-tensor types of "
                f"a {cfg['ftype']} file from {arch.id}'s shapes",
            )
        )
    cells = cfg.get("cells") or cfg.get("n_ctx")
    tk, tv = (cfg.get("type_k") or "f16").lower(), (cfg.get("type_v") or "f16").lower()
    if arch is not None and cfg.get("n_ctx") and not cfg.get("layer_dims"):
        _check_gguf_caches(cfg, figs, arch, rows, missing, tk, tv)
        return
    if cfg.get("mla_dims"):  # ik_llama.cpp: latent rows, kv^T only with -mla 1
        cfg["layer_dims"] = {
            i: (rank + rope, rank if cfg.get("kvt_used", True) else 0) for i, (rope, rank) in cfg["mla_dims"].items()
        }
    dims = cfg.get("layer_dims")
    if dims:
        k_rows = [d[0] for d in dims.values()]
        v_rows = [d[1] for d in dims.values()]
        n_layers = max(dims) + 1
        if len(dims) < n_layers:  # an excerpt: the layers shown repeat one shape
            k_rows = [k_rows[0]] * n_layers
            v_rows = [v_rows[0]] * n_layers
            notes.append(f"{len(dims)} of {n_layers} per-layer lines in the log; the others taken as the same shape")
        source = (
            "the log's per-layer kv_lora_rank + n_embd_head_qk_rope (ik_llama.cpp's latent c^KV; its "
            "transposed kv^T, F16, only with -mla 1)"
            if cfg.get("mla_dims")
            else "the log's per-layer n_embd_k_gqa / n_embd_v_gqa"
        )
    elif cfg.get("n_layer") and cfg.get("n_embd_k_gqa"):
        n_layers = cfg["n_layer"]
        k_rows = [cfg["n_embd_k_gqa"]] * n_layers
        v_rows = [cfg.get("n_embd_v_gqa", cfg["n_embd_k_gqa"])] * n_layers
        source = "the log's n_layer × n_embd_k_gqa"
    elif arch is not None:
        k_rows, v_rows = [], []
        for g in arch.attention:
            if g.kind_spec.caches_kv_per_token:  # llama.cpp's n_embd_k_gqa / n_embd_v_gqa of each layer
                k_rows += [g.kind_spec.k_row_elements(g)] * g.count
                v_rows += [g.kind_spec.v_row_elements(g)] * g.count
        if any(g.kind_spec.windowed for g in arch.attention):
            notes.append("sliding-window layers costed at the full context here (iSWA logs print two caches)")
        source = f"{arch.id}'s architecture"
    else:
        missing.append("K and V: the log names no layer shapes and no known model (pass --model)")
        return
    if not cells:
        missing.append("K and V: the log has no n_ctx or cell count")
        return
    k_pred = sum(cells * _llamacpp_row_bytes(tk, r) for r in k_rows)
    v_pred = sum(cells * _llamacpp_row_bytes(tv, r) for r in v_rows)
    rule = (
        f"llama.cpp src/llama-kv-cache.cpp: cells ({cells:,}) × Σ layers row bytes of {{}} ({{}}), rows from {source}"
    )
    for q, pred, t in (("K", k_pred, tk), ("V", v_pred, tv)):
        for f in figures_named(figs, q):
            rows.append(check_row(f"{q} cache", f.value, pred, "B", KV_TOLERANCE_PCT, rule.format(q, t)))
    for f in figures_named(figs, "KV total"):
        rows.append(check_row("KV total", f.value, k_pred + v_pred, "B", KV_TOLERANCE_PCT, "K + V"))


def _check_gguf_file(cfg, figs, arch, rows, missing):
    """With the GGUF itself (``--model FILE.gguf``): the model buffers (summed over their lines) and the
    file size print against its tensor table; the RS buffers against the recurrent state; the layers
    the recurrent cache keeps against the architecture's state layers."""
    loaded = cfg.get("_gguf")
    model = [f for f in figs if f.quantity.startswith("model buffer")]
    if loaded is not None and model:
        from k3lib.engines.llamacpp import llamacpp_model_buffer_bytes

        mapped = any("Mapped" in f.quantity for f in model)
        if mapped:
            missing.append(
                "model buffer: a memory-mapped file (CPU_Mapped) maps the file's tensor range, not "
                "predicted; load with --no-mmap to compare the allocated buffer"
            )
        else:
            pred = llamacpp_model_buffer_bytes(loaded)
            res = 0.005 * MiB * len(model) + 1  # each line rounded to 0.01 MiB on its own
            rows.append(
                check_row(
                    "model buffers summed",
                    sum(f.value for f in model),
                    pred,
                    "B",
                    WEIGHTS_TOLERANCE_PCT,
                    "Σ tensors (MTP/nextn blocks skipped) of their bytes rounded up to the CPU buffer's "
                    "32-byte alignment, from the GGUF's tensor table",
                    allowed=(pred - res, pred + res),
                )
            )
    for f in figures_named(figs, "file size"):
        if loaded is None:
            missing.append("file size: needs the GGUF (--model FILE.gguf)")
            continue
        pred = sum(t.n_bytes for t in loaded.tensors)
        rows.append(
            check_row(
                "file size (tensor bytes)",
                f.value,
                pred,
                "B",
                WEIGHTS_TOLERANCE_PCT,
                "llama_model_loader's n_bytes: Σ bytes of every tensor in the GGUF (skipped ones too)",
                allowed=(pred - 0.005 * MiB - 1, pred + 0.005 * MiB + 1),
            )
        )
    flags = cfg.get("rs_layer_flags")
    if flags and arch is not None:
        kept = sum(flags.values())
        pred = sum(g.count for g in arch.attention if g.has_state)
        rows.append(
            check_row(
                "recurrent layers",
                kept,
                pred,
                "layers",
                0.0,
                "src/llama-memory-recurrent.cpp: one R/S row set per layer with a state (the others 'skipped')",
            )
        )


def _check_gguf_caches(cfg, figs, arch, rows, missing, tk, tv):
    """Each KV cache line (full, then sliding) and the recurrent line against
    :func:`~k3lib.engines.llamacpp.llamacpp_memory` with the log's settings; the rule set follows
    the log (an ``n_ctx_seq`` line means llama.cpp@0c1e570's 256-cell padding)."""
    from k3lib.engines.llamacpp import llamacpp_memory

    rules = "0c1e570" if "n_ctx_seq" in cfg else "2025"
    try:
        mem = llamacpp_memory(
            arch,
            n_ctx=cfg["n_ctx"],
            n_seq=cfg.get("n_seq_max", 1),
            flash_attn=cfg.get("flash_attn", True),
            type_k=tk,
            type_v=tv,
            n_ubatch=cfg.get("n_ubatch", 512),
            swa_full=cfg.get("swa_full", False),
            kv_unified=cfg.get("kv_unified", False),
            n_rs_seq=cfg.get("n_rs_seq", 0),
            rules=rules,
        )
    except K3InputError as exc:
        missing.append(f"K and V: {exc}")
        return
    caches = []
    if mem["k"] or mem["v"]:
        caches.append(("", mem["cells"], mem["k"], mem["v"]))
    if mem["swa_cells"]:
        caches.append(("sliding-window ", mem["swa_cells"], mem["swa_k"], mem["swa_v"]))

    def row(component, logged, predicted, unit, tol, rule):
        # llama.cpp prints MiB to 2 decimals: a figure within half of its last digit is reproduced
        res = 0.005 * MiB + 1
        return check_row(component, logged, predicted, unit, tol, rule, allowed=(predicted - res, predicted + res))

    rule = (
        f"llama.cpp src/llama-kv-cache.cpp (rules {rules}): {{}} cells × Σ {arch.id}'s layers of that cache "
        f"× row bytes of {{}} ({{}})"
    )
    for (label, n_cells, k, v), fk, fv, ft in zip(
        caches, figures_named(figs, "K"), figures_named(figs, "V"), figures_named(figs, "KV total")
    ):
        rows.append(row(f"{label}K cache", fk.value, k, "B", KV_TOLERANCE_PCT, rule.format(f"{n_cells:,}", "K", tk)))
        if fv.value or v:
            rows.append(
                row(f"{label}V cache", fv.value, v, "B", KV_TOLERANCE_PCT, rule.format(f"{n_cells:,}", "V", tv))
            )
        rows.append(row(f"{label}KV total", ft.value, k + v, "B", KV_TOLERANCE_PCT, "K + V"))
    if len(figures_named(figs, "K")) != len(caches):
        missing.append(
            f"the log has {len(figures_named(figs, 'K'))} KV cache lines; {arch.id} has {len(caches)} caches"
        )
    rs_bufs = [f for f in figs if f.quantity.startswith("RS buffer")]
    if rs_bufs:
        res = 0.005 * MiB * len(rs_bufs) + 1
        rows.append(
            check_row(
                "RS buffers summed",
                sum(f.value for f in rs_bufs),
                mem["r"] + mem["s"],
                "B",
                KV_TOLERANCE_PCT,
                "llama.cpp src/llama-memory-recurrent.cpp: the R and S tensors of every state layer, on "
                "their layers' devices",
                allowed=(mem["r"] + mem["s"] - res, mem["r"] + mem["s"] + res),
            )
        )
    for q, pred in (("R", mem["r"]), ("S", mem["s"])):
        for f in figures_named(figs, q):
            rows.append(
                row(
                    f"recurrent {q} ({'conv history' if q == 'R' else 'state'})",
                    f.value,
                    pred,
                    "B",
                    KV_TOLERANCE_PCT,
                    f"llama.cpp src/llama-memory-recurrent.cpp: {mem['rs_rows']} rows "
                    f"(sequences × (1 + n_rs_seq)) × F32 per recurrent layer",
                )
            )
