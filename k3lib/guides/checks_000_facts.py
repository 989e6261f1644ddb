"""Guide 000: checks of its statements about K3 itself and about hardware."""

from __future__ import annotations

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import get_gpu, list_gpus
from k3lib.core.memory import kv_cache_bytes
from k3lib.core.plan import kv_bytes_per_gpu
from k3lib.core.precisions import get_kv_dtype
from k3lib.core.units import GB, GiB
from k3lib.guides.claims import LONG_CONTEXT, Claim
from k3lib.guides.refs import _g000, _k3, published_bytes, real_kv_bytes, real_state_bytes, real_weights_bytes
from k3lib.guides.registry import check, check_pattern
from k3lib.guides.verdicts import EXACT, Figure, Tolerance, Verdict, make, pct, written_tolerance

# ================================================================= guide 000: facts about K3

HEADLINE = Tolerance(rel=0.02, text="±2% (a headline figure)")


@check_pattern(lambda c: c.quantity == "params_total")
def params_total(claim: Claim) -> Verdict:
    """Total parameters: Σ of K3's parameter groups (routed experts 92 × 896 × 3·3584·3072)."""
    scale = {"trillion parameters": 1e12, "T": 1e12, "B params": 1e9}[claim.unit_as_written]
    real = _k3().params_total / scale
    return make(
        claim,
        own=None,
        real=real,
        unit=claim.unit_as_written,
        tol=HEADLINE,
        stated_input=True,
        basis="K3 architecture",
        formula="Σ parameter groups of kimi-k3 (text weights, no MTP/vision)",
        explanation=f"K3's config gives {_k3().params_total / 1e9:,.2f}B parameters "
        f"({pct(claim.value / real - 1)} from the claim); 2,722.7B of them are routed experts.",
    )


@check_pattern(lambda c: c.quantity == "params_active")
def params_active(claim: Claim) -> Verdict:
    """Active parameters per token, excluding the input embedding (a lookup)."""
    real = _k3().params_active / 1e9
    return make(
        claim,
        own=None,
        real=real,
        unit="B params",
        tol=HEADLINE,
        stated_input=True,
        basis="K3 architecture",
        formula="total − embedding − routed + 16/896 × routed",
        explanation=f"K3 activates {real:,.2f}B parameters per token (16 of 896 experts, input embedding "
        f"excluded), {real / (_k3().params_total / 1e9):.2%} of the total.",
    )


@check_pattern(lambda c: c.quantity == "context_max")
def context_max(claim: Claim) -> Verdict:
    """'1M context': max_position_embeddings in M tokens (2^20)."""
    real = _k3().max_context_tokens / 2**20
    return make(
        claim,
        own=None,
        real=real,
        unit="M tokens (2^20)",
        tol=EXACT,
        stated_input=True,
        basis="K3 architecture",
        formula="max_position_embeddings / 2^20",
        explanation=f"K3's config allows {_k3().max_context_tokens:,} tokens (1M with K = 1,024).",
    )


@check("g000-weights-bf16", "g000-faq-weights-bf16")
def bf16_weights(claim: Claim) -> Verdict:
    """594 'GB' at BF16: K3's real BF16 weights are 2,779.5B × 2 B; 594 GB decimal is the
    published UD-IQ1_S GGUF (594,040,923,616 B)."""
    real = real_weights_bytes("bf16") / GiB
    bpw = claim.value * GiB * 8 / _k3().params_total
    iq1s = published_bytes("UD-IQ1_S")
    return make(
        claim,
        own=None,
        real=real,
        unit="GiB",
        tol=HEADLINE,
        stated_input=True,
        basis="K3 architecture",
        formula="params × 16 bits / 8",
        figures=[
            Figure("real_bf16_gib", "2,779.5B × 2 B / 2^30", real, "GiB"),
            Figure("real_bf16_gb", "2,779.5B × 2 B / 10^9", real_weights_bytes("bf16") / GB, "GB"),
            Figure("ud_iq1_s_gb", "published UD-IQ1_S / 10^9", iq1s / GB, "GB"),
            Figure("implied_bits_per_weight", "594 GiB × 8 / params", bpw, "bits"),
        ],
        explanation=f"K3's BF16 weights are {real:,.0f} GiB ({real_weights_bytes('bf16') / GB:,.0f} GB), "
        f"{real / claim.value:.1f}× the claim. 594 GB is, in decimal GB, the size of unsloth's "
        f"1-bit UD-IQ1_S GGUF ({iq1s:,} B = {iq1s / GB:,.2f} GB), not a BF16 figure.",
    )


@check("g000-weights-bf16-mxfp4")
def mxfp4_origin(claim: Claim) -> Verdict:
    """594 GB 'from MXFP4 quantization-aware training': compared with the native checkpoint."""
    native = published_bytes("native (MXFP4 routed experts + BF16 rest + vision tower)") / GiB
    return make(
        claim,
        own=None,
        real=native,
        unit="GiB",
        tol=HEADLINE,
        stated_input=True,
        basis="published files",
        formula="published native checkpoint / 2^30",
        figures=[
            Figure("native_gib", "1,453.74 GiB (96 shards)", native, "GiB"),
            Figure("bf16_gib", "2,779.5B × 2 B", real_weights_bytes("bf16") / GiB, "GiB"),
        ],
        explanation=f"K3's MXFP4 checkpoint (routed experts at 4.25 bits, the rest BF16) is {native:,.0f} GiB; "
        f"unpacked to BF16 it is {real_weights_bytes('bf16') / GiB:,.0f} GiB. Neither is 594.",
    )


@check("g000-weights-not-5.6tb")
def not_5p6_tb(claim: Claim) -> Verdict:
    """'nowhere near 5.6 TB': a denial, so it holds only if K3's weights as loaded (BF16, as the same
    paragraph says they are at load time) are not within ±2% of 5.6 TB."""
    real_tb = real_weights_bytes("bf16") / 10**12
    return make(
        claim,
        own=None,
        real=real_tb,
        unit="TB",
        tol=HEADLINE,
        stated_input=True,
        negated=True,
        basis="K3 architecture",
        formula="params × 2 B / 10^12",
        explanation=f"Unpacked to BF16 — as the same paragraph says the weights are at load time — K3 is "
        f"{real_tb:.2f} TB: near 5.6 TB after all. Only the MXFP4 checkpoint is smaller "
        f"({real_weights_bytes('native') / 10**12:.2f} TB).",
    )


@check("g000-unique-params-one-tenth")
def unique_params(claim: Claim) -> Verdict:
    """'Effective unique parameter count after MoE expert sharing is one-tenth': stored / total."""
    k3 = _k3()
    groups = k3.param_groups()
    stored = 1.0  # routed experts are not shared between layers: every parameter is stored
    non_routed = (k3.params_total - groups["routed_experts"]) / k3.params_total
    active = k3.params_active / k3.params_total
    figs = [
        Figure("stored_fraction", "stored params / total", stored, "fraction"),
        Figure("active_fraction", "104.19B / 2,779.5B", active, "fraction"),
        Figure("non_routed_fraction", "(total − routed experts) / total", non_routed, "fraction"),
    ]
    return make(
        claim,
        own=None,
        real=stored,
        unit="fraction of parameters stored",
        tol=Tolerance(rel=0.2, text="±20%"),
        stated_input=True,
        basis="K3 architecture",
        formula="unique stored parameters / total parameters",
        figures=figs,
        explanation=f"Routed experts are not shared: all {k3.params_total / 1e9:,.1f}B parameters are stored "
        f"(fraction 1.0). What is small is per-token use — {active:.1%} active — and "
        f"the parameters outside routed experts ({non_routed:.1%}); neither is 1/10.",
    )


@check_pattern(lambda c: c.quantity == "kv_bytes_per_token")
def kv_bytes_per_token(claim: Claim) -> Verdict:
    """KV bytes per token: K3 caches only its 24 MLA layers' 576-element latent; the 69 KDA
    layers keep a constant state instead."""
    per_elem = get_kv_dtype(claim.kv_dtype).bytes_per_element
    real_b = _k3().kv_bytes_per_token(per_elem)
    scale = {"bytes": 1, "KB": 1024}[claim.unit_as_written]
    return make(
        claim,
        own=None,
        real=real_b / scale,
        unit="B" if scale == 1 else "KiB",
        tol=Tolerance(rel=0.05, text="±5%"),
        stated_input=True,
        basis="K3 architecture",
        formula=f"24 MLA layers × (512 + 64) × {per_elem:g} B",
        figures=[
            Figure("real_bytes_per_token", "24 × 576 × bytes/element", real_b, "B"),
            Figure("kda_state_bytes", "116,158,464 × 4 B per sequence", real_state_bytes(), "B"),
        ],
        explanation=f"K3 caches {real_b:,} B per token at {claim.kv_dtype.upper()} (24 MLA layers × 576 "
        f"elements), {claim.value * scale / real_b:.1f}× less than the guide says; its 69 KDA "
        f"layers add a constant {real_state_bytes() / GiB:.2f} GiB per sequence, not per token.",
    )


@check_pattern(lambda c: c.quantity == "kv_cache" and c.guide == "guide-000" and "=" not in c.quote)
def kv_cache_g000(claim: Claim) -> Verdict:
    """KV cache at a context: guide 000's 262,144 B/token × T (÷ GPUs when per GPU) vs K3's MLA + KDA state."""
    prof = _g000()
    gpus = claim.gpu_count or 1
    own = (
        kv_cache_bytes(prof, context_tokens=claim.stated_context_tokens, batch=1, kv_dtype=claim.kv_dtype) / gpus / GiB
    )
    if gpus > 1:
        real = (
            kv_bytes_per_gpu(
                _k3(),
                kv_total_bytes=0,
                context_tokens=claim.stated_context_tokens,
                batch=1,
                kv_dtype=claim.kv_dtype,
                tp=gpus,
                pp=1,
            )
            / GiB
        )
        note = (
            f"K3 under TP={gpus} keeps the whole MLA latent on every GPU ({real:,.2f} GiB per GPU with "
            f"its share of the KDA state), so a per-GPU share is neither 1/{gpus} nor 262,144 B/token."
        )
    else:
        real = real_kv_bytes(kv_dtype=claim.kv_dtype, context_tokens=claim.stated_context_tokens) / GiB
        note = f"K3's real cache is {real:,.2f} GiB (27,648 B/token at BF16 plus the 0.43 GiB KDA state)."
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula=f"{prof.kv_bytes_per_token(2):,} B × bytes/2 × T / 2^30" + (f" / {gpus}" if gpus > 1 else ""),
        assumption="the guide's 262,144 B/token at BF16",
        explanation=f"{own:,.4g} GiB from its own 262,144 B/token. {note}",
    )


@check("g000-worked-kv")
def worked_kv(claim: Claim) -> Verdict:
    """'131,072 bytes × 262,144 / 1024^3 = 32 GB': the arithmetic as written."""
    own = 131072 * 262144 / GiB
    real = real_kv_bytes(kv_dtype="fp8", context_tokens=262144) / GiB
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="arithmetic",
        formula="131,072 × 262,144 / 1024^3",
        assumption="the guide's 131,072 B/token at FP8",
        explanation=f"The arithmetic gives exactly {own:g} GiB. Its input (131,072 B/token at FP8) is not "
        f"K3's: K3 at FP8 and 256K needs {real:.2f} GiB with its KDA state.",
    )


def _scaling_ratio(kind: str, t: int = LONG_CONTEXT) -> tuple[float, str]:
    """Real K3 ratio for a scaling claim, evaluated at ``t`` tokens (state kept at FP32)."""
    bf16 = real_kv_bytes(kv_dtype="bf16", context_tokens=t)
    if kind == "halve-context":
        return real_kv_bytes(kv_dtype="bf16", context_tokens=t // 2) / bf16, "KV(T/2) / KV(T), T = 512K"
    if kind == "double-context":
        return real_kv_bytes(kv_dtype="bf16", context_tokens=2 * t) / bf16, "KV(2T) / KV(T), T = 512K"
    if kind == "fp8":
        return real_kv_bytes(kv_dtype="fp8", context_tokens=t) / bf16, "KV_FP8(T) / KV_BF16(T), T = 512K"
    if kind == "int4":
        return real_kv_bytes(kv_dtype="int4", context_tokens=t) / bf16, "KV_INT4(T) / KV_BF16(T), T = 512K"
    raise K3InputError("kind", repr(kind), "halve-context, double-context, fp8, int4")


def _scaling_kind(claim: Claim) -> str:
    if "doubl" in claim.unit_as_written:
        return "double-context"
    if claim.kv_dtype == "int4":
        return "int4"
    if claim.kv_dtype == "fp8" or "precision" in claim.quote:
        return "fp8"
    return "halve-context"


@check_pattern(lambda c: c.quantity == "kv_cache_scaling")
def kv_scaling(claim: Claim) -> Verdict:
    """'Halves', 'doubles', 'one quarter': linear in T and in bytes per element on the guide's
    model; for K3 only the MLA part scales, its KDA state is constant (evaluated at 512K)."""
    kind = _scaling_kind(claim)
    own = {"double-context": 2.0, "halve-context": 0.5, "fp8": 0.5, "int4": 0.25}[kind]
    real, formula = _scaling_ratio(kind)
    short = _scaling_ratio(kind, 8192)[0]
    crossover = real_state_bytes() / _k3().kv_bytes_per_token(2)
    return make(
        claim,
        own=own,
        real=real,
        unit="ratio",
        tol=Tolerance(rel=0.10, text="±10% (a rule of thumb)"),
        basis="K3 architecture",
        formula=formula,
        explanation=f"Linear on the guide's model ({own:g}). At 512K K3's ratio is {real:.3f}; at 8K it is "
        f"{short:.2f}: only the MLA latent scales, the KDA state "
        f"({real_state_bytes() / GiB:.2f} GiB per sequence) does not, and equals the MLA cache "
        f"at {crossover:,.0f} tokens.",
    )


@check("g000-worked-weights")
def q4_weights(claim: Claim) -> Verdict:
    """325 GB at Q4: a stated input, against the published UD-Q4_K_XL GGUF."""
    pub = published_bytes("UD-Q4_K_XL") / GiB
    return make(
        claim,
        own=None,
        real=pub,
        unit="GiB",
        tol=HEADLINE,
        stated_input=True,
        basis="published files",
        formula="published UD-Q4_K_XL / 2^30",
        figures=[Figure("q4_k_gib", "2,779.5B × 4.5 / 8", real_weights_bytes("q4") / GiB, "GiB")],
        explanation=f"K3's published 4-bit GGUF (UD-Q4_K_XL) is {pub:,.0f} GiB, {pub / claim.value:.1f}× the "
        f"claim; 325 GiB would be {claim.value * GiB * 8 / _k3().params_total:.2f} bits per weight.",
    )


@check("g000-faq-weights-q2")
def q2_weights(claim: Claim) -> Verdict:
    """225 GB at Q2: a stated input, against the published 2-bit UD-Q2_K_XL."""
    pub = published_bytes("UD-Q2_K_XL") / GiB
    return make(
        claim,
        own=None,
        real=pub,
        unit="GiB",
        tol=HEADLINE,
        stated_input=True,
        basis="published files",
        formula="published UD-Q2_K_XL / 2^30",
        figures=[
            Figure("q2_k_gib", "2,779.5B × 2.625 / 8", real_weights_bytes("q2") / GiB, "GiB"),
            Figure("smallest_published_gib", "UD-Q1_0", published_bytes("UD-Q1_0") / GiB, "GiB"),
        ],
        explanation=f"K3's published 2-bit GGUF (UD-Q2_K_XL) is {pub:,.0f} GiB; even the smallest file "
        f"(UD-Q1_0) is {published_bytes('UD-Q1_0') / GiB:,.0f} GiB. 225 GiB would be "
        f"{claim.value * GiB * 8 / _k3().params_total:.2f} bits per weight.",
    )


@check("g000-fix-q8-weights")
def q8_per_gpu(claim: Claim) -> Verdict:
    """'Quantize to Q8: weights drop to ~56.3 GB per GPU' (8 GPUs): half its own BF16 share."""
    bf16_gpu = _g000().weights_bytes_by_tier["bf16"] / 8 / GiB
    own = bf16_gpu * 8 / 16
    real = published_bytes("UD-Q8_K_XL") / 8 / GiB
    bits = claim.value / bf16_gpu * 16
    return make(
        claim,
        own=own,
        real=real,
        unit="GiB per GPU",
        tol=written_tolerance(claim),
        basis="guide's own numbers",
        formula="(594 / 8) × 8 bits / 16 bits",
        figures=[
            Figure("own_q8_per_gpu", "594 / 8 / 2", own, "GiB"),
            Figure("implied_bits", "56.3 / 74.25 × 16", bits, "bits"),
        ],
        explanation=f"Halving the guide's own BF16 share (74.25 GiB per GPU) gives {own:.1f} GiB at 8 bits; "
        f"56.3 GiB is {bits:.1f} bits per weight. K3's published UD-Q8_K_XL is {real:,.0f} GiB "
        f"per GPU over 8.",
    )


# ---------------------------------------------------------------- hardware


def _hardware(claim: Claim):
    if claim.gpu:
        return get_gpu(claim.gpu)
    try:
        return get_gpu(claim.device)
    except K3InputError:
        return get_gpu(f"{claim.device} {claim.value:g}GB")


@check_pattern(lambda c: c.guide == "guide-000" and c.quantity == "available_vram" and c.device != "Mac Studio")
def hardware_capacity(claim: Claim) -> Verdict:
    """A device's memory × count, from ``data/hardware.csv`` (vendor labels read as GiB)."""
    hw = _hardware(claim)
    n = claim.gpu_count or 1
    cap = hw.memory_marketed_bytes * n / GiB
    return make(
        claim,
        own=cap,
        real=cap,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="hardware catalogue",
        formula=f"{n} × {hw.memory_marketed_bytes / GiB:g} GiB ({hw.id})",
        explanation=f"{n} × {hw.name} = {cap:g} GiB as marketed"
        + (
            f" ({hw.memory_bytes('usable') / GiB * n:,.2f} GiB visible to the driver)." if hw.has_usable_memory else "."
        ),
    )


@check("g000-faq-mac-studio-memory")
def mac_memory(claim: Claim) -> Verdict:
    """'A Mac Studio with 512 GB': the largest Mac Studio's unified memory."""
    cap = get_gpu("mac studio 512gb").memory_marketed_bytes / GiB
    return make(
        claim,
        own=cap,
        real=cap,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="hardware catalogue",
        formula="Mac Studio M3 Ultra 512GB",
        explanation=f"The M3 Ultra Mac Studio tops out at {cap:g} GiB.",
    )


@check("g000-faq-h200-capacity")
def largest_gpu(claim: Claim) -> Verdict:
    """'exceeds even the largest single GPU available (H200 141 GB)': the largest discrete GPU
    of the catalogue, compared with the claimed 141."""
    h200 = get_gpu("h200").memory_marketed_bytes / GiB
    biggest = max((g for g in list_gpus() if not g.unified_memory), key=lambda g: g.memory_marketed_bytes)
    big = biggest.memory_marketed_bytes / GiB
    return make(
        claim,
        own=big,
        real=big,
        unit="GiB",
        tol=written_tolerance(claim),
        basis="hardware catalogue",
        formula="max memory over the catalogue's discrete GPUs",
        figures=[Figure("h200_gib", "H200 SXM", h200, "GiB"), Figure("largest_gib", biggest.id, big, "GiB")],
        explanation=f"The H200 holds {h200:g} GiB, but it is not the largest: {biggest.name} holds {big:g} "
        f"GiB. K3's smallest published file ({published_bytes('UD-Q1_0') / GiB:,.0f} GiB) fits "
        f"no single GPU.",
    )


@check("g000-faq-mac-bandwidth")
def mac_bandwidth(claim: Claim) -> Verdict:
    h100 = get_gpu("h100")
    mac = get_gpu("mac studio 512gb")
    ratio = h100.memory_bw_bytes_per_s / mac.memory_bw_bytes_per_s
    return make(
        claim,
        own=ratio,
        real=ratio,
        unit="x",
        tol=Tolerance(rel=0.05, text="±5% on the range ends"),
        basis="hardware catalogue",
        formula="H100 SXM bandwidth / Mac Studio M3 Ultra bandwidth",
        explanation=f"{h100.memory_bw_bytes_per_s / 1e9:,.0f} GB/s ÷ {mac.memory_bw_bytes_per_s / 1e9:,.0f} "
        f"GB/s = {ratio:.1f}× for the 512 GB Mac Studio (M3 Ultra).",
    )
