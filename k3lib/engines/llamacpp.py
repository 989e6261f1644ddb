"""llama.cpp: KV cells and rows per cache type, recurrent state, compute buffer and
where the weights sit, as rules read from its source."""

from __future__ import annotations

from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.kinds import FULL, state_kind
from k3lib.engines.base import _resolve_model

# ---------------------------------------------------------------------------
# llama.cpp
# ---------------------------------------------------------------------------

#: (elements per block, bytes per block) of llama.cpp cache types
LLAMACPP_CACHE_TYPES = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "q8_0": (32, 34),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "iq4_nl": (32, 18),
}


def _llamacpp_row_bytes(cache_type: str, n: int) -> float:
    key = str(cache_type).lower()
    if key not in LLAMACPP_CACHE_TYPES:
        raise K3InputError(
            "cache_type", f"{cache_type!r} is not a llama.cpp cache type", ", ".join(LLAMACPP_CACHE_TYPES)
        )
    block, size = LLAMACPP_CACHE_TYPES[key]
    if n % block:
        raise K3InputError(
            "cache_type", f"{cache_type} needs rows that are a multiple of {block}; this model's row is {n}"
        )
    return n // block * size


#: llama.cpp rule sets by version: "0c1e570" (ggml-org/llama.cpp@0c1e57098, October 2026, the one
#: llama-cpp-python 0.3.36 vendors and the real-engine test tier builds) and "2025" (releases before
#: PR 17046: cells padded to 256 with flash attention, to 32 without)
LLAMACPP_RULES = ("0c1e570", "2025")


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def llamacpp_cells(
    *, n_ctx: int, n_seq: int = 1, kv_unified: bool = False, flash_attn: bool = True, rules: str = "0c1e570"
) -> tuple[int, int]:
    """(cells per stream, streams) llama.cpp gives a context of ``n_ctx`` tokens for ``n_seq``
    sequences (``n_ctx`` is the whole context, as ``-c`` takes it).

    Rules at ggml-org/llama.cpp@0c1e57098 (src/llama-context.cpp, the constructor):
    $n_{ctx} ← ⌈n_{ctx}⌉_{256}$; unified: one stream of $n_{ctx}$ cells; otherwise $n_{seq}$
    streams of $⌈n_{ctx} ÷ n_{seq}⌉_{256}$ cells (integer division first). Older releases ("2025"):
    one pad of 256 with flash attention, 32 without, and per-stream cells $⌈n_{ctx} ÷ n_{seq}⌉$.

    >>> llamacpp_cells(n_ctx=3000), llamacpp_cells(n_ctx=3000, n_seq=4), llamacpp_cells(n_ctx=3000, n_seq=4, kv_unified=True)
    ((3072, 1), (768, 4), (3072, 1))
    """
    if rules not in LLAMACPP_RULES:
        raise K3InputError("rules", f"{rules!r} is not a llama.cpp rule set", ", ".join(LLAMACPP_RULES))
    if n_ctx <= 0 or n_seq <= 0:
        raise K3InputError("n_ctx", f"n_ctx={n_ctx}, n_seq={n_seq}", "positive whole numbers")
    if rules == "2025":
        pad = 256 if flash_attn else 32
        if kv_unified:
            return _pad(n_ctx, pad), 1
        return _pad(-(-n_ctx // n_seq), pad), n_seq
    n_ctx = _pad(n_ctx, 256)
    if kv_unified:
        return n_ctx, 1
    return _pad(n_ctx // n_seq, 256), n_seq


#: Hugging Face ``model_type`` → llama.cpp architecture name (``general.architecture``), where they
#: differ: the architecture convert_hf_to_gguf.py writes for that config (its ``@ModelBase.register``
#: classes' ``model_arch``), text towers (``*_text``) included. A GGUF's family (``gguf:ARCH``) is
#: already llama.cpp's name; a model_type not listed is taken as its own name.
LLAMACPP_ARCH_BY_HF_MODEL_TYPE = {
    "mistral": "llama",
    "mixtral": "llama",
    "qwen2_moe": "qwen2moe",
    "qwen3_moe": "qwen3moe",
    "qwen3_next": "qwen3next",
    "qwen3_5": "qwen35",
    "qwen3_5_text": "qwen35",
    "qwen3_5_moe": "qwen35moe",
    "qwen3_5_moe_text": "qwen35moe",
    "deepseek_v2": "deepseek2",
    "deepseek_v3": "deepseek2",
    "kimi_k2": "deepseek2",
    "kimi_linear": "kimi-linear",
    "kimi_k3": "kimi-k3",
    "gpt_oss": "gpt-oss",
    "glm4_moe": "glm4moe",
    "minimax_m2": "minimax-m2",
    "gemma3_text": "gemma3",
    "gemma3n_text": "gemma3n",
    "gemma4_text": "gemma4",
    "llama4_text": "llama4",
    "falcon_h1": "falcon-h1",
    "granitemoehybrid": "granitehybrid",
    "nemotron_h": "nemotron_h",
}


def llamacpp_arch_name(arch: Any) -> str:
    """llama.cpp's architecture name for ``arch``: a GGUF's own (``gguf:qwen35`` → ``qwen35``), or
    the one :data:`LLAMACPP_ARCH_BY_HF_MODEL_TYPE` gives a config's ``model_type``
    (``qwen3_5_moe_text`` → ``qwen35moe``).

    >>> from types import SimpleNamespace as NS
    >>> llamacpp_arch_name(NS(family="qwen3_5_text")), llamacpp_arch_name(NS(family="gguf:gpt-oss"))
    ('qwen35', 'gpt-oss')
    """
    fam = str(getattr(arch, "family", "") or "")
    if fam.startswith("gguf:"):
        return fam[len("gguf:") :]
    return LLAMACPP_ARCH_BY_HF_MODEL_TYPE.get(fam, fam)


#: the one EXAONE-4 depth at which llama.cpp applies its sliding window (src/llama-model.cpp,
#: load_hparams, case LLM_ARCH_EXAONE4: ``if (hparams.n_layer == 64)``, ggml-org/llama.cpp@0c1e57098)
EXAONE4_SWA_LAYERS = 64


def llamacpp_view(arch: Any) -> Any:
    """``arch`` as llama.cpp lays out its caches, where a per-family rule of llama.cpp overrides
    what the config says: EXAONE-4 slides only at :data:`EXAONE4_SWA_LAYERS` layers (swa_type
    STANDARD, set_swa_pattern(4)); at any other depth every layer is full attention, whatever
    ``sliding_window`` / ``layer_types`` the config holds. Other architectures are returned as
    they are."""
    from dataclasses import replace

    if (
        llamacpp_arch_name(arch) == "exaone4"
        and arch.num_layers != EXAONE4_SWA_LAYERS
        and any(g.kind_spec.windowed for g in arch.attention)
    ):
        groups = tuple(
            replace(g, kind=FULL.name, window_tokens=0) if g.kind_spec.windowed else g for g in arch.attention
        )
        return replace(arch, attention=groups)
    return arch


#: llama.cpp architectures whose recurrent state keeps ``n_rs_seq`` snapshots per sequence for
#: rollback (``llm_arch_supports_rs_rollback``, src/llama-arch.cpp @0c1e570), names without '-'/'_'
RS_ROLLBACK_FAMILIES = frozenset(
    (
        "kimik3",
        "qwen35",
        "qwen35moe",
        "qwen4exp",
        "deepseek4",
        "glm5next",
        "nemotronh",
        "nemotronhmoe",
        "lfm2",
        "lfm2moe",
        "bailingmoe3",
    )
)


def supports_rs_rollback(arch: Any) -> bool:
    """Whether llama.cpp keeps recurrent-state snapshots (``n_rs_seq``) for ``arch``'s family."""
    fam = llamacpp_arch_name(arch).replace("-", "").replace("_", "").lower()
    return fam in RS_ROLLBACK_FAMILIES


def _recurrent_rows(g) -> tuple[int, int]:
    """(R, S) elements per layer and sequence of a layer with a state in llama.cpp:
    R = the short-conv history, (kernel − 1) × conv channels (Mamba-2: $(d_{conv}-1)·(d_{inner} +
    2·n_g·d_{state})$; LFM2: $D·(L_{cache}-1)$; RWKV: the token shifts $2·D$); S = the recurrent
    matrix state (Mamba-2: $d_{state}·d_{inner}$; RWKV: $D·h$; LFM2: 0) — ``n_embd_r()`` /
    ``n_embd_s()``, src/llama-hparams.cpp, allocated per recurrent layer by
    src/llama-memory-recurrent.cpp (ggml-org/llama.cpp@0c1e57098). A Falcon-H1 layer
    (``parallel_ssm``) has both this state and a KV cache (llama_memory_hybrid)."""
    return g.conv_state_elements_per_layer, g.recurrent_state_elements_per_layer


def llamacpp_memory(
    model: Any,
    *,
    n_ctx: int,
    n_seq: int = 1,
    flash_attn: bool = True,
    type_k: str = "f16",
    type_v: str = "f16",
    n_ubatch: int = 512,
    swa_full: bool = False,
    kv_unified: bool = False,
    n_rs_seq: int = 0,
    rules: str = "0c1e570",
    ik_mla: int | None = None,
) -> dict[str, int]:
    r"""Every KV and state buffer llama.cpp allocates for ``model``, in the engine's own terms
    (``n_ctx`` = the whole context across ``n_seq`` sequences, as ``llama-server -c -np`` take it).

    * cells and streams: :func:`llamacpp_cells`;
    * full-attention and MLA layers: K = layers × streams × cells × row bytes(type_k), V likewise
      (src/llama-kv-cache.cpp). An MLA row is the latent: K = kv_lora + rope dims; at 0c1e570 V is a
      view of K (the 'V (f16): 0.00 MiB' of a DeepSeek or Kimi log), before it ("2025") a kv_lora row;
    * sliding-window layers (src/llama-kv-cache-iswa.cpp): their own cache of
      $⌈\min(cells, W·(n_{seq}\text{ if unified else }1) + n_{ubatch})⌉_{256}$ cells, or all cells with
      ``swa_full``;
    * recurrent layers (src/llama-memory-recurrent.cpp): $\max(1, n_{seq})·(1 + n_{rs\_seq})$ rows of
      R (conv history) and S (state) in F32 per layer (:func:`_recurrent_rows`: gated delta net, KDA,
      Mamba-2, RWKV, LFM2's short conv; a Falcon-H1 layer holds this state beside its K and V); ``n_rs_seq`` (snapshots for rollback, e.g.
      MTP drafts) counts only for the families of :data:`RS_ROLLBACK_FAMILIES`, llama.cpp clamps
      it to 0 for the others;
    * MLA models need ``type_k == type_v`` (V is a view of K): anything else is refused;
    * KV-sharing layers (Gemma-3n/4, ``kv_shared`` groups) own no cache: llama.cpp allocates KV for
      the first ``n_layer_kv_from_start`` layers only (src/llama-kv-cache.cpp);
    * ``ik_mla`` (ikawrakow/ik_llama.cpp's ``-mla`` mode, for that fork): its MLA cache is the latent
      row ``c^KV`` (kv_lora + rope) in ``type_k``, plus with ``-mla 1`` a transposed kv_lora row
      ``kv^T`` kept in F16 (it cannot be quantized; ik_llama.cpp PRs 206 and 235); ``-mla 2``/``3``
      keep no transposed cache. Cells follow the 2025 padding (the fork predates PR 17046).

    Returns bytes for ``k``/``v`` (full + MLA layers), ``swa_k``/``swa_v``, ``r``/``s``, their
    ``total``, and ``cells``, ``swa_cells``, ``streams``, ``rs_rows``.

    >>> m = llamacpp_memory("llama-3.1-8b", n_ctx=8000)          # 32 layers × 8 KV heads × 128, f16
    >>> m["cells"], m["k"] == 32 * 8192 * 1024 * 2, m["total"] // 2**20
    (8192, True, 1024)
    """
    arch, _ = _resolve_model(model)
    return _memory(
        llamacpp_view(arch),
        n_ctx=n_ctx,
        n_seq=n_seq,
        flash_attn=flash_attn,
        type_k=type_k,
        type_v=type_v,
        n_ubatch=n_ubatch,
        swa_full=swa_full,
        kv_unified=kv_unified,
        n_rs_seq=n_rs_seq,
        rules=rules,
        ik_mla=ik_mla,
    )


def _memory(
    arch: Any,
    *,
    n_ctx: int,
    n_seq: int,
    flash_attn: bool,
    type_k: str,
    type_v: str,
    n_ubatch: int,
    swa_full: bool,
    kv_unified: bool,
    n_rs_seq: int,
    rules: str,
    ik_mla: int | None,
) -> dict[str, int]:
    """:func:`llamacpp_memory` of an architecture already in llama.cpp's layout (:func:`llamacpp_view`;
    a pipeline stage of it keeps the whole model's rules)."""
    if not flash_attn and ik_mla is None and str(type_v).lower() not in ("f16", "f32", "bf16"):
        raise K3InputError(
            "type_v", "a quantized V cache needs flash attention in llama.cpp", "f16, or flash_attn=True"
        )
    if n_ubatch <= 0 or n_rs_seq < 0:
        raise K3InputError("n_ubatch", f"n_ubatch={n_ubatch}, n_rs_seq={n_rs_seq}", "n_ubatch > 0, n_rs_seq >= 0")
    if ik_mla is not None:
        if ik_mla not in (1, 2, 3):
            raise K3InputError("ik_mla", f"{ik_mla!r} is not an ik_llama.cpp -mla mode", "1, 2 or 3")
        rules = "2025"
    cells, streams = llamacpp_cells(n_ctx=n_ctx, n_seq=n_seq, kv_unified=kv_unified, flash_attn=flash_attn, rules=rules)
    if (
        rules != "2025"
        and any(g.kind_spec.latent for g in arch.attention)
        and str(type_k).lower() != str(type_v).lower()
    ):
        raise K3InputError(
            "type_v",
            f"{arch.id} has MLA layers, whose V is a view of the K cache: llama.cpp "
            f"refuses K {type_k} with V {type_v} (src/llama-context.cpp, llama_init_from_model)",
            f"type_v = type_k ({type_k})",
        )
    if n_rs_seq and not supports_rs_rollback(arch):
        n_rs_seq = 0  # llama.cpp clamps it to 0 and says so
    out = {
        "cells": cells,
        "streams": streams,
        "swa_cells": 0,
        "k": 0,
        "v": 0,
        "swa_k": 0,
        "swa_v": 0,
        "r": 0,
        "s": 0,
        "rs_rows": max(1, n_seq) * (1 + n_rs_seq),
    }
    for g in arch.attention:
        if g.has_state:
            r, s = _recurrent_rows(g)
            out["r"] += g.count * out["rs_rows"] * r * 4
            out["s"] += g.count * out["rs_rows"] * s * 4
        kind = g.kind_spec
        if g.kv_shared or not kind.caches_kv_per_token:
            continue  # no KV, or an earlier layer's (llama.cpp: n_layer_kv_from_start)
        k_row = _llamacpp_row_bytes(type_k, kind.k_row_elements(g))
        if kind.latent:  # MLA: V is a view of the latent K (a row of its own before the 2025 rework)
            if ik_mla is not None:
                v_row = _llamacpp_row_bytes("f16", kind.v_row_elements(g)) if ik_mla == 1 else 0
            else:
                v_row = _llamacpp_row_bytes(type_v, kind.v_row_elements(g)) if rules == "2025" else 0
        else:
            v_row = _llamacpp_row_bytes(type_v, kind.v_row_elements(g))
        if kind.windowed:  # llama_kv_cache_iswa: the window's cells
            n_cells = cells
            if not swa_full:
                window = g.window_tokens * (n_seq if kv_unified else 1) + n_ubatch
                n_cells = (
                    _pad(min(cells, window), 256)
                    if rules != "2025"
                    else min(cells, _pad(window, 256 if flash_attn else 32))
                )
            out["swa_cells"] = n_cells
            out["swa_k"] += int(g.count * n_cells * streams * k_row)
            out["swa_v"] += int(g.count * n_cells * streams * v_row)
        else:
            out["k"] += int(g.count * cells * streams * k_row)
            out["v"] += int(g.count * cells * streams * v_row)
    out["total"] = out["k"] + out["v"] + out["swa_k"] + out["swa_v"] + out["r"] + out["s"]
    return out


def llamacpp_kv_cache_bytes(
    model: Any,
    *,
    context_tokens: int,
    n_seq: int = 1,
    flash_attn: bool = True,
    type_k: str = "f16",
    type_v: str = "f16",
    n_ubatch: int = 512,
    swa_full: bool = False,
    kv_unified: bool = False,
) -> dict[str, int]:
    """llama.cpp's KV and recurrent-state buffers for ``n_seq`` sequences of ``context_tokens``
    each (the workbook's terms): :func:`llamacpp_memory` with ``n_ctx`` = context × sequences,
    regrouped as ``k``/``v`` (every attention layer, as the 'K (f16): … MiB, V (f16): … MiB'
    lines add up), ``full``/``sliding`` by layer kind, ``state`` (recurrent) and ``total``.

    >>> kv = llamacpp_kv_cache_bytes("llama-3.1-8b", context_tokens=8000)    # padded to 8,192 cells
    >>> kv["cells"], kv["total"] // 2**20                                     # MiB, as llama.cpp prints
    (8192, 1024)
    """
    m = llamacpp_memory(
        model,
        n_ctx=context_tokens * n_seq,
        n_seq=n_seq,
        flash_attn=flash_attn,
        type_k=type_k,
        type_v=type_v,
        n_ubatch=n_ubatch,
        swa_full=swa_full,
        kv_unified=kv_unified,
    )
    out = {
        "cells": m["cells"],
        "streams": m["streams"],
        "full": m["k"] + m["v"],
        "sliding": m["swa_k"] + m["swa_v"],
        "state": m["r"] + m["s"],
        "k": m["k"] + m["swa_k"],
        "v": m["v"] + m["swa_v"],
        "total": m["total"],
    }
    if m["swa_cells"]:
        out["swa_cells"] = m["swa_cells"]
    return out


def llamacpp_compute_buffer_bytes(
    model: Any,
    *,
    context_tokens: int,
    n_seq: int = 1,
    flash_attn: bool = True,
    n_ubatch: int = 512,
    n_ctx: int | None = None,
    swa_full: bool = False,
    kv_unified: bool = False,
) -> int:
    r"""llama.cpp's compute buffer (the scheduler's reserved worst-case graph), approximately.

    The exact figure is the peak of ggml-alloc's plan for the prompt-processing graph, which
    depends on the order of every node; this model keeps the terms that scale:

    * the attention mask, one per cache: $n_{ubatch} · n_{kv}$ × 2 B (F16, flash attention) or
      4 B (F32, without), $n_{kv}$ = the cache's cells (sliding caches: their own cells);
    * without flash attention, the F32 scores of the widest layer: heads × $n_{ubatch}$ × $n_{kv}$ × 4 B
      (for MLA, on top, the latent K converted per head);
    * linear attention: one layer's F32 recurrent state for every sequence (×2 for a gated delta net);
    * the activations: $n_{ubatch}$ × 4 B × ($V + 2F + 3D + H·r_{kv}$) with flash attention (logits,
      the gate/up pair of the widest FFN F = dense width or active experts + shared, three
      residual-width buffers, and for absorbed MLA every head's query in the latent space of rank
      $r_{kv}$), $6D + H·r_{kv}$ without (the scores term then dominates).

    ``n_ctx`` is llama.cpp's whole context (default ``context_tokens × n_seq``). Measured on
    llama.cpp@0c1e570's CPU backend (``tests/llamacpp``, 13 settings per family; figures in
    ``data/measured/llamacpp-0c1e570-cpu.csv``): GQA dense and iSWA models −1.2 … +3.4 %, MoE
    −10 … +1 %, the hybrid gated-delta-net model −7 … −0.5 %, DeepSeek MLA −0.3 … −0.1 % with flash
    attention and −17 % without, Kimi K3's KDA + MLA −18 … +3 % (its attention-residual block
    sums and the non-flash MLA path are not modelled), Falcon-H1 (attention + Mamba-2 in parallel)
    −8.3 … −0.4 %, pure Mamba-2 +2.0 … +8.5 %, RWKV-7 −1.0 … −0.7 %, LFM2's short-conv hybrid
    −0.5 … +1.1 %, pure Mamba-1 +0.3 … +1.3 %, Granite-hybrid (Mamba-2 + attention) −9.6 … +7.7 %,
    Qwen2 −0.5 … +1.1 %, Gemma 2
    −1.0 … −0.1 %, Cohere 2 −16.9 … +3.4 %, EXAONE-4 −0.2 … +10.9 %, Llama 4 (chunked, interleaved MoE)
    −0.5 … +18.8 %, gpt-oss −9.4 … −0.1 %, GLM-4.5 (MoE + shared expert after a dense layer)
    −14.9 … −0.6 %. A model with no KV cache (Mamba-2, RWKV) has no attention to flash: one formula.
    """
    arch, _ = _resolve_model(model)
    m = arch.mlp
    width = max(
        m.dense_intermediate if m.dense_layers else 0,
        m.experts_per_token * m.moe_intermediate + m.n_shared_experts * m.shared_intermediate,
    )
    mem = llamacpp_memory(
        arch,
        n_ctx=n_ctx or context_tokens * n_seq,
        n_seq=n_seq,
        flash_attn=flash_attn,
        n_ubatch=n_ubatch,
        swa_full=swa_full,
        kv_unified=kv_unified,
    )
    kv_cells = [mem["cells"]]
    if mem["swa_cells"]:
        kv_cells.append(mem["swa_cells"])
    if not (mem["k"] or mem["v"]):
        kv_cells = kv_cells[1:]  # no full-attention cache
    mask = sum(n_ubatch * c * (2 if flash_attn else 4) for c in kv_cells)
    d = arch.hidden_size
    # absorbed MLA: every head's query is carried in the latent space (heads × kv_lora per token)
    latent_q = max((g.kind_spec.absorbed_query_latent(g) for g in arch.attention), default=0)
    # linear attention: the graph holds a layer's F32 recurrent state for every sequence — twice for a
    # gated delta net (read and updated), once for KDA, 1.5× for Mamba-2, twice for RWKV-7 (measured on
    # the tier's qwen3next, kimi-k3, mamba2/falcon-h1 and rwkv7 models)
    states = max(
        (
            state_kind(g).llamacpp_state_copies * g.recurrent_state_elements_per_layer * 4 * n_seq
            for g in arch.attention
            if g.has_state
        ),
        default=0,
    )
    mask += states
    # a Mamba-2 mixer's per-token activations: its in-projection (z, xBC, dt) and the conv's input and
    # output (xBC twice); in a parallel hybrid (Falcon-H1) they replace the FFN pair when wider
    ssm_act = max(
        (
            (g.ssm_inner + g._conv_channels + g.ssm_heads) + 2 * g._conv_channels
            for g in arch.attention
            if g.kind_spec.runs_mamba2(g)
        ),
        default=0,
    )
    # RWKV: the six token-shift mixes of the time mix (lerp_fused: 6·D per token)
    rwkv_act = max((g.kind_spec.llamacpp_token_shift_mixes for g in arch.attention), default=0) * d
    if flash_attn or not kv_cells:  # no KV cache: nothing depends on flash attention
        return int(mask + n_ubatch * 4 * (arch.vocab_size + max(2 * width, ssm_act) + 3 * d + latent_q + rwkv_act))
    heads = max((g.num_heads for g in arch.attention if g.kind_spec.caches_kv_per_token), default=0)
    scores = heads * n_ubatch * max(kv_cells, default=0) * 4
    return int(mask + scores + n_ubatch * 4 * (6 * d + latent_q))


def _skipped(t: Any, load_mtp: bool) -> bool:
    """Whether llama.cpp leaves tensor ``t`` unallocated: the MTP ("nextn") layers' tensors — the
    last ``{arch}.nextn_predict_layers`` blocks, which the GGUF loader groups as ``mtp`` — are
    created with TENSOR_SKIP unless the model is loaded for MTP drafting (``ml.load_mtp``, set by
    ``--spec-type draft-mtp``): ``load_arch_tensors`` of glm4moe, deepseek2 and the other MTP
    architectures, ggml-org/llama.cpp@0c1e57098."""
    return not load_mtp and getattr(t, "group", None) == "mtp"


def llamacpp_model_buffer_bytes(model: Any, *, load_mtp: bool = False) -> int:
    """The CPU model buffer llama.cpp allocates for a GGUF read without mmap: Σ over tensors of
    their bytes rounded up to the CPU buffer's 32-byte alignment (ggml/src/ggml-backend.cpp,
    ``TENSOR_ALIGNMENT``); the file's own tensor table gives the bytes (a real GGUF is needed).
    MTP (nextn) layers are left out unless ``load_mtp`` (:func:`_skipped`)."""
    _, loaded = _resolve_model(model)
    if loaded is None or not getattr(loaded, "tensors", None) or loaded.file_format != "gguf":
        raise K3InputError("model", "the model buffer needs the GGUF's tensor table", "a .gguf file")
    return sum(_pad(t.n_bytes, 32) for t in loaded.tensors if not _skipped(t, load_mtp))


def llamacpp_output_buffer_bytes(model: Any, *, n_seq: int = 1) -> int:
    r"""The output (logits) buffer a context reserves: $\max(1, n_{seq})$ outputs × vocabulary × 4 B
    (F32 logits; ``llama_context::output_reserve`` with ``n_outputs_max = n_seq_max``,
    src/llama-context.cpp, ggml-org/llama.cpp@0c1e57098). It grows at decode time when a batch asks for
    more outputs; this is the figure printed at context creation ('output buffer size'). Measured on
    the tier: 0.00, 0.01 and 0.03 MiB for 1, 3–4 and 16 sequences of a 512-token vocabulary.

    >>> llamacpp_output_buffer_bytes("llama-3.1-8b")                    # 128,256 × 4 B
    513024
    """
    arch, _ = _resolve_model(model)
    return max(1, int(n_seq)) * arch.vocab_size * 4


def llamacpp_weights_bytes(model: Any, *, weights: str = "native") -> dict[str, int]:
    """GPU and host weight bytes with every layer offloaded (``-ngl`` −1): the token embedding stays
    on the host, and a tied output head is duplicated onto the GPU (:func:`llamacpp_offload_split`);
    ``total`` is the checkpoint's bytes, counted once."""
    from k3lib.core.memory import weights_bytes_by_group

    arch, loaded = _resolve_model(model)
    split = llamacpp_offload_split(model, n_gpu_layers=-1, n_ctx=256, weights=weights)
    if loaded is not None and loaded.exact and weights == "native":
        total = sum(b for g, b in loaded.weights_bytes_by_group.items() if g not in ("vision",))
    else:
        total = sum(weights_bytes_by_group(arch, weights).values())
    return {"gpu": split["gpu"]["weights"], "host": split["host"]["weights"], "total": total}


def llamacpp_gpu_layers(n_layers: int, n_gpu_layers: int) -> tuple[range, bool]:
    """(repeating layers on the GPU, whether the output layer is) for ``-ngl n_gpu_layers``.

    src/llama-model.cpp @0c1e570 (``load_tensors``): layer $i$ of $L$ (the output layer is
    $i = L$) goes to the GPU when $i ≥ \\max(L + 1 - n_{gl}, 0)$; the input embedding always stays
    on the CPU. So ``-ngl 10`` on a 32-layer model puts layers 23–31 and the output head there,
    and ``-ngl 33`` (or ``-1``, the default) everything.

    >>> llamacpp_gpu_layers(32, 10)
    (range(23, 32), True)
    """
    if n_layers <= 0:
        raise K3InputError("n_layers", f"{n_layers}", "a positive number of layers")
    if n_gpu_layers < 0:
        n_gpu_layers = n_layers + 1
    start = max(n_layers + 1 - n_gpu_layers, 0)
    return range(min(start, n_layers), n_layers), n_gpu_layers >= 1


def llamacpp_offload_split(
    model: Any,
    *,
    n_gpu_layers: int,
    n_ctx: int,
    weights: str = "native",
    override_tensor: tuple[str, ...] | list[str] = (),
    **cache: Any,
) -> dict[str, Any]:
    """Weights and KV/state bytes on the GPU and on the host for ``-ngl n_gpu_layers``.

    Each layer's weights and its KV (or recurrent state) sit on that layer's device
    (:func:`llamacpp_gpu_layers`; llama.cpp allocates the KV per layer on the layer's device,
    src/llama-kv-cache.cpp). The token embedding stays on the host; the output head and final norm
    move with the output layer; a tied output head is a second copy of the embedding there. Per-layer
    weights come from the GGUF's tensor table when ``model``
    is a GGUF, otherwise from the architecture; the order of layer kinds in a hybrid model is the
    workbook's assumed interleave (:func:`k3lib.core.layout.layer_sequence`). ``cache`` takes
    :func:`llamacpp_memory`'s settings (n_seq, type_k, type_v, flash_attn…).

    ``override_tensor``: the patterns of ``-ot PATTERN=CPU`` (llama.cpp matches them with
    ``std::regex_search`` against tensor names, common/arg.cpp): matching tensors stay on the host
    whatever their layer. With a GGUF every tensor is matched by name; without one, only expert
    patterns are understood (``exps`` → the routed experts of every layer).

    Returns ``{"gpu": {"weights", "kv"}, "host": {"weights", "kv"}, "gpu_layers": n}``.
    """
    import re

    from k3lib.core.layout import layer_sequence, stage_architecture
    from k3lib.core.memory import weights_bytes_by_group

    pats = [re.compile(p) for p in override_tensor]
    arch, loaded = _resolve_model(model)
    scale = 1.0
    if not (loaded is not None and getattr(loaded, "exact", False) and weights == "native"):
        # a published GGUF of this model (e.g. K3's UD-Q4_K_XL): its format's proportions, its file's bytes
        from k3lib.core.checkpoints import resolve_weights
        from k3lib.core.memory import weights_bytes

        fmt, published, _ = resolve_weights(arch, weights)
        scale = published / weights_bytes(arch, fmt) if published else 1.0
        weights = fmt.id
    on_gpu, output_on_gpu = llamacpp_gpu_layers(arch.num_layers, n_gpu_layers)
    seq = layer_sequence(arch)
    parts = {"gpu": [seq[i] for i in on_gpu], "host": [seq[i] for i in range(arch.num_layers) if i not in on_gpu]}
    view = llamacpp_view(arch)  # llama.cpp's own per-family layout, for the whole model
    settings: dict[str, Any] = dict(
        n_seq=1,
        flash_attn=True,
        type_k="f16",
        type_v="f16",
        n_ubatch=512,
        swa_full=False,
        kv_unified=False,
        n_rs_seq=0,
        rules="0c1e570",
        ik_mla=None,
    )
    unknown = set(cache) - set(settings)
    if unknown:
        raise TypeError(f"llamacpp_offload_split() got unexpected keyword argument(s) {sorted(unknown)}")
    settings.update(cache)
    kv = {
        side: _memory(stage_architecture(view, layers), n_ctx=n_ctx, **settings)["total"] if layers else 0
        for side, layers in parts.items()
    }
    w = {"gpu": 0, "host": 0}
    if loaded is not None and getattr(loaded, "exact", False) and weights == "native" and loaded.tensors:
        for t in loaded.tensors:  # every tensor on its device, overrides by name
            if t.group == "vision" or _skipped(t, False):
                continue  # MTP (nextn) layers: not loaded (TENSOR_SKIP)
            if any(p.search(t.name) for p in pats) or t.name.startswith("token_embd"):
                side = "host"
            elif t.layer is None or not 0 <= t.layer < arch.num_layers:
                side = "gpu" if output_on_gpu else "host"
            else:
                side = "gpu" if t.layer in on_gpu else "host"
            w[side] += t.n_bytes
    else:
        if pats and not all(p.search("blk.0.ffn_up_exps.weight") for p in pats):
            raise K3InputError(
                "override_tensor",
                f"{list(override_tensor)} without a GGUF's tensor names",
                "a GGUF file as the model, or an expert pattern such as 'exps'",
            )
        groups = weights_bytes_by_group(arch, weights)
        emb = groups.get("embedding", 0)
        head = sum(groups.values()) - emb  # what no layer holds: reduced below to head + final norm
        for side, layers in parts.items():
            if not layers:
                continue
            sub = stage_architecture(arch, layers)
            g = weights_bytes_by_group(sub, weights)
            final_norm = g.get("norms", 0) // (sub.norms_per_layer * sub.num_layers + 1)  # a stage counts one
            w[side] = sum(b for k, b in g.items() if k not in ("embedding", "lm_head")) - final_norm
            head -= w[side]
            if side == "gpu" and pats:  # -ot exps=CPU: the GPU layers' routed experts go home
                experts = g.get("routed_experts", 0)
                w["gpu"] -= experts
                w["host"] += experts
        w["gpu" if output_on_gpu else "host"] += head  # the output head and final norm
        w["host"] += emb
    if arch.tie_word_embeddings and output_on_gpu:
        # a tied output head is the token embedding loaded a second time on the output layer's device
        # (create_tensor(TOKEN_EMBD, …, TENSOR_DUPLICATED), src/models/llama.cpp, gemma3.cpp)
        w["gpu"] += (
            sum(t.n_bytes for t in loaded.tensors if t.name.startswith("token_embd"))
            if loaded is not None and getattr(loaded, "exact", False) and weights == "native" and loaded.tensors
            else weights_bytes_by_group(arch, weights).get("embedding", 0)
        )
    if scale != 1.0:
        w = {side: round(b * scale) for side, b in w.items()}
    return {
        "gpu_layers": len(on_gpu) + int(output_on_gpu),
        "gpu": {"weights": w["gpu"], "kv": kv["gpu"]},
        "host": {"weights": w["host"], "kv": kv["host"]},
    }
