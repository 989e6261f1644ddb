"""Checks of the claims the first audit missed (issue 13): what the guides say about how K3
stores, shards and grows its memory."""

from __future__ import annotations

from k3lib.core.hardware import get_gpu
from k3lib.core.kinds import kind_of
from k3lib.core.memory import kv_cache_bytes
from k3lib.core.plan import kv_bytes_per_gpu
from k3lib.core.units import GB, GiB
from k3lib.guides.claims import Claim
from k3lib.guides.refs import _g000, _k3, published_bytes, real_kv_bytes
from k3lib.guides.registry import check, check_pattern
from k3lib.guides.verdicts import EXACT, Figure, Tolerance, Verdict, make

NATIVE = "native (MXFP4 routed experts + BF16 rest + vision tower)"


@check("g000-extra-loaded-bf16")
def loaded_bits(claim: Claim) -> Verdict:
    """'unpacks to BF16 at load time': bits per weight held after loading. vLLM loads the native
    checkpoint as stored (MXFP4 routed experts kept, compressed-tensors ``mxfp4-pack-quantized``),
    so the bits held are the checkpoint's: bytes × 8 / parameters."""
    held = published_bytes(NATIVE) * 8 / _k3().params_total
    return make(
        claim,
        own=None,
        real=held,
        unit="bits per weight",
        tol=Tolerance(rel=0.05, text="±5%"),
        stated_input=True,
        basis="published files",
        formula="native checkpoint bytes × 8 / 2,779.5B",
        explanation=f"Only the routed experts (98% of the parameters) are MXFP4, and vLLM keeps them so: the "
        f"native checkpoint is {held:.2f} bits per weight ({published_bytes(NATIVE) / GB:,.1f} GB), "
        f"not 16. Unpacked to BF16 it would be {_k3().params_total * 2 / GB:,.0f} GB.",
    )


def naive_kv_bytes_per_token() -> int:
    """Full K and V in every one of K3's 93 layers at BF16: 93 × 96 heads × (192 + 128) × 2 B."""
    mla = next(a for a in _k3().attention if kind_of(a).latent)
    k_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
    return _k3().num_layers * mla.num_heads * (k_dim + mla.v_head_dim) * 2


@check("g000-extra-naive-attention-mb")
def naive_attention(claim: Claim) -> Verdict:
    real = naive_kv_bytes_per_token() / 10**6
    return make(
        claim,
        own=None,
        real=real,
        unit="MB per token",
        tol=Tolerance(abs=0.05, text="±0.05 MB"),
        stated_input=True,
        basis="K3 architecture",
        formula="93 × 96 × (192 + 128) × 2 B / 10^6",
        explanation=f"Uncompressed K and V in all 93 layers would be {naive_kv_bytes_per_token():,} B = "
        f"{real:.2f} MB per token: 'multi-MB' is right. K3 caches 27,648 B (24 MLA layers).",
    )


@check("g000-extra-tp-kv-shard", "g000-extra-faq-tp-kv-share")
def tp_kv_share(claim: Claim) -> Verdict:
    """Share of the KV cache each GPU holds at TP=8: 1/8 on the guide's model; for K3 the MLA latent
    has no head dimension, so every rank keeps all of it (KDA state split by heads)."""
    tp = claim.stated_gpu_count
    total = real_kv_bytes(kv_dtype=claim.kv_dtype, context_tokens=claim.stated_context_tokens)
    per_gpu = kv_bytes_per_gpu(
        _k3(),
        kv_total_bytes=0,
        context_tokens=claim.stated_context_tokens,
        batch=1,
        kv_dtype=claim.kv_dtype,
        tp=tp,
        pp=1,
    )
    return make(
        claim,
        own=1 / tp,
        real=per_gpu / total,
        unit="fraction",
        tol=Tolerance(rel=0.05, text="±5%"),
        basis="K3 architecture",
        formula="KV per GPU at TP / whole KV",
        figures=[
            Figure("kv_per_gpu_gib", "TP=8, 512K", per_gpu / GiB, "GiB"),
            Figure("kv_total_gib", "512K", total / GiB, "GiB"),
        ],
        explanation=f"On the guide's model each GPU holds 1/{tp} of the cache. K3's MLA latent (512 + 64 per "
        f"token) is not split by heads: under TP={tp} every GPU keeps all of it, "
        f"{per_gpu / GiB:.2f} of {total / GiB:.2f} GiB ({per_gpu / total:.0%}).",
    )


@check("g000-extra-batch-multiplies-kv")
def batch_kv(claim: Claim) -> Verdict:
    b = claim.stated_batch
    own = kv_cache_bytes(
        _g000(), context_tokens=claim.stated_context_tokens, batch=b, kv_dtype=claim.kv_dtype
    ) / kv_cache_bytes(_g000(), context_tokens=claim.stated_context_tokens, batch=1, kv_dtype=claim.kv_dtype)
    real = real_kv_bytes(kv_dtype=claim.kv_dtype, context_tokens=claim.stated_context_tokens, batch=b) / real_kv_bytes(
        kv_dtype=claim.kv_dtype, context_tokens=claim.stated_context_tokens
    )
    return make(
        claim,
        own=own,
        real=real,
        unit="ratio",
        tol=Tolerance(rel=0.02, text="±2%"),
        basis="K3 architecture",
        formula=f"KV(batch {b}) / KV(batch 1) at 512K",
        explanation=f"Each sequence has its own MLA cache and KDA state, so batch {b} holds {real:.2f}× the "
        f"KV of batch 1.",
    )


@check("g000-extra-oom-mid-generation")
def oom_at_load(claim: Claim) -> Verdict:
    return make(
        claim,
        own=None,
        real=None,
        unit="M tokens",
        tol=None,
        basis="none",
        explanation="Where an OOM happens is engine behaviour, not a figure. For the record: vLLM reserves "
        "its whole KV block pool at start-up and refuses a max_model_len the pool cannot hold, "
        "so in vLLM a 1M context that does not fit fails at load; no measurement of K3 is at hand.",
    )


def _between(low: float, high: float, what: str) -> tuple[float, Tolerance]:
    """A claim that a figure lies between ``low`` and ``high``: the middle, with half the width as tolerance."""
    return (low + high) / 2, Tolerance(abs=(high - low) / 2, text=f"between {what} ({low:,.1f}–{high:,.1f} GiB)")


@check("g000-extra-budget-q8-not-bf16")
def budget_q8(claim: Claim) -> Verdict:
    """'~540 GB — enough for Q8, not enough for BF16': the budget must lie between the 8-bit and the
    BF16 weights (own: 450.4 and 594; real: the published UD-Q8_K_XL and 2,779.5B × 2 B)."""
    own_q8, own_bf16 = _g000().weights_bytes_by_tier["q8"] / GiB, _g000().weights_bytes_by_tier["bf16"] / GiB
    real_q8, real_bf16 = published_bytes("UD-Q8_K_XL") / GiB, _k3().params_total * 2 / GiB
    own, tol = _between(own_q8, own_bf16, "its Q8 and BF16")
    real, real_tol = _between(real_q8, real_bf16, "UD-Q8_K_XL and BF16")
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=tol,
        real_tol=real_tol,
        basis="guide's own numbers",
        formula="Q8 weights ≤ budget < BF16 weights",
        explanation=f"On its own tiers {own_q8:.1f} ≤ 540 < {own_bf16:g}: it follows. K3's 8-bit file "
        f"(UD-Q8_K_XL) is {real_q8:,.0f} GiB, {real_q8 / claim.value:.1f}× the budget; even its "
        f"smallest file ({published_bytes('UD-Q1_0') / GiB:,.0f} GiB) does not fit.",
    )


@check("g004-extra-vllm-native-vs-gguf")
def native_vs_gguf(claim: Claim) -> Verdict:
    """'far more memory than GGUF': native checkpoint / the 4-bit GGUF its llama.cpp line pulls."""
    ratio = published_bytes(NATIVE) / published_bytes("UD-Q4_K_XL")
    q8 = published_bytes(NATIVE) / published_bytes("UD-Q8_K_XL")
    return make(
        claim,
        own=None,
        real=ratio,
        unit="x",
        tol=Tolerance(rel=0.25, text="±25%"),
        stated_input=True,
        basis="published files",
        formula="native bytes / UD-Q4_K_XL bytes",
        figures=[Figure("native_over_q8_k_xl", "native / UD-Q8_K_XL", q8, "x")],
        explanation=f"The native checkpoint ({published_bytes(NATIVE) / GB:,.1f} GB) is {ratio:.3f}× the "
        f"4-bit GGUF and {q8:.3f}× UD-Q8_K_XL: the same memory, not far more.",
    )


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "available_vram")
def g004_vram_cell(claim: Claim) -> Verdict:
    """A VRAM cell of guide 004's offload table against ``data/hardware.csv``; rows whose only source
    is this guide ('guide-only') cannot confirm it."""
    hw = get_gpu(claim.device)
    cap = hw.memory_marketed_bytes / GiB
    independent = hw.verification != "guide-only"
    return make(
        claim,
        own=None,
        real=cap if independent else None,
        unit="GiB",
        tol=EXACT,
        stated_input=True,
        basis="hardware catalogue",
        formula=f"{hw.id}: memory as marketed",
        explanation=(
            f"{hw.name}: {cap:g} GiB as marketed ({hw.verification})."
            if independent
            else f"{hw.name}: data/hardware.csv has no source but this guide for its memory."
        ),
    )
