"""Guide 004: its weights/total table, offload split and speeds."""

from __future__ import annotations

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import get_gpu
from k3lib.core.memory import weights_bytes_by_group
from k3lib.core.precisions import get_weight_format
from k3lib.core.units import GB, GiB
from k3lib.guides.claims import (
    G004_ACTIVE_PARAMS,
    G004_OFFLOAD_RAM,
    G004_OFFLOAD_VRAM,
    G004_OVERHEAD,
    G004_RAM_BANDWIDTH,
    Q4_BITS,
    Claim,
    load_claims,
)
from k3lib.guides.refs import _k3, published_bytes, real_kv_bytes, real_state_bytes, real_weights_bytes
from k3lib.guides.registry import check, check_pattern
from k3lib.guides.verdicts import EXACT, Figure, Tolerance, Verdict, make, pct, written_tolerance

# ================================================================= guide 004

TIER_FORMAT = {
    "1-bit": "iq1_s",
    "2-bit": "q2_k",
    "3-bit": "q3_k_m",
    "4-bit": "q4_k_m",
    "5-bit": "q5_k_m",
    "8-bit": "q8_0",
    "fp16": "bf16",
}
#: implied bits per weight a file of each tier can plausibly average (mixes keep some tensors wider)
TIER_BAND = {
    "1-bit": (1.0, 2.5),
    "2-bit": (2.0, 3.5),
    "3-bit": (3.0, 4.5),
    "4-bit": (4.0, 5.5),
    "5-bit": (5.0, 6.5),
    "8-bit": (8.0, 9.5),
    "fp16": (15.0, 17.0),
}


def implied_bits_per_weight(size_gb: float, params: int | None = None) -> float:
    """bits per weight = size × 8 / parameters (K3's 2,779.5B unless given).

    >>> round(implied_bits_per_weight(1561.2), 2)
    4.49
    """
    return size_gb * GB * 8 / (params or _k3().params_total)


def _g004_table_rows(column: str, context_tokens: int = 8192) -> dict[str, float]:
    """Guide 004's table by tier: ``"weights"`` or ``"total"`` (at ``context_tokens``)."""
    if column not in ("weights", "total"):
        raise K3InputError("column", f"{column!r}", "weights, total")
    quantity = "weights" if column == "weights" else "total_vram"
    return {
        c.precision: c.value
        for c in load_claims()
        if c.guide == "guide-004"
        and c.quantity == quantity
        and c.claim_id.startswith(f"g004-{column}-")
        and c.precision in TIER_BAND
        and (column == "weights" or c.context_tokens == context_tokens)
    }


def _est_params() -> float:
    """Parameters implied by the table's 'est.' rows: FP16 estimate / 2 bytes."""
    return _g004_table_rows("weights")["fp16"] * GB / 2


#: Guide 004's GGUF cells and the unsloth K3 files they match (data/measured/kimi-k3-published.csv).
GGUF_FILE = {"1-bit": "UD-IQ1_M", "2-bit": "UD-Q2_K_XL", "4-bit": "UD-Q4_K_XL", "8-bit": "UD-Q8_K_XL"}
ESTIMATE = Tolerance(rel=0.05, text="±5% (the guide marks it est.)")


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "weights")
def g004_weights(claim: Claim) -> Verdict:
    """A weights cell: a GGUF cell against the published unsloth file of that tier (±0.05 GB, the
    digit written); an 'est.' cell against K3 at the tier's llama.cpp type (±5%)."""
    tier = claim.precision
    bpw = implied_bits_per_weight(claim.value)
    est = "est." in claim.quote
    figs = [Figure("implied_bits_per_weight", "size × 8 / 2,779.5B", bpw, "bits")]
    if not est:
        label = GGUF_FILE[tier]
        real = published_bytes(label) / GB
        figs.append(Figure("published_gb", label, real, "GB"))
        note = (
            " The guide labels this row Q4_K_M; no Q4_K_M file of K3 is published — the 1,508.7 GB file is UD-Q4_K_XL."
            if tier == "4-bit"
            else ""
        )
        if tier == "8-bit":
            note = (
                f" It is {bpw:.2f} bits per weight: the 'lossless' UD-Q8_K_XL keeps the MXFP4 routed experts at "
                f"~4.25 bits and only the rest at 8 bits, so it is barely larger than the 4-bit file."
            )
        return make(
            claim,
            own=None,
            real=real,
            unit="GB",
            tol=written_tolerance(claim),
            stated_input=True,
            basis="published files",
            formula=f"published {label} bytes / 10^9",
            figures=figs,
            explanation=f"unsloth's {label} is {published_bytes(label):,} B = {real:,.2f} GB "
            f"({pct(claim.value / real - 1)}).{note}",
        )
    p = _est_params()
    fmt = get_weight_format(TIER_FORMAT[tier])
    real = real_weights_bytes(TIER_FORMAT[tier]) / GB
    figs.append(Figure("bytes_per_param_est", "size / (5,476.2 GB / 2)", claim.value * GB / p, "B"))
    return make(
        claim,
        own=None,
        real=real,
        unit="GB",
        tol=ESTIMATE,
        stated_input=True,
        basis="K3 architecture",
        formula=f"2,779.5B × {fmt.bits_per_weight:g} bits / 8 ({fmt.name})",
        figures=figs,
        explanation=f"An estimate: {claim.value * GB / p:.2f} bytes per parameter over {p / 1e9:,.1f}B "
        f"parameters (5,476.2 / 2, 1.5% fewer than K3 has). K3 at {fmt.name} "
        f"({fmt.bits_per_weight:g} bits) is {real:,.1f} GB ({pct(claim.value / real - 1)}).",
    )


def _table_kv_gb(context_tokens: int) -> float:
    """The KV term guide 004's table adds: K3's 27,648 B/token (MLA at FP16), counted in GiB."""
    return real_kv_bytes(kv_dtype="bf16", context_tokens=context_tokens, include_state=False) / GiB


def table_total_gb(weights_gb: float, context_tokens: int) -> float:
    """Guide 004's rule: weights (GB) + 27,648 B/token × T (in GiB) + 1 GB.

    >>> round(table_total_gb(1341.7, 131072), 2)
    1346.08
    """
    return weights_gb + _table_kv_gb(context_tokens) + G004_OVERHEAD / GB


def _real_tier_weights_bytes(tier: str) -> int:
    """K3's weights at a tier: the published file where one exists, else the tier's llama.cpp type."""
    return published_bytes(GGUF_FILE[tier]) if tier in GGUF_FILE else real_weights_bytes(TIER_FORMAT[tier])


@check_pattern(
    lambda c: (
        c.guide == "guide-004"
        and c.quantity == "total_vram"
        and c.precision in TIER_BAND
        and c.claim_id.startswith("g004-total-")
        and bool(c.context_tokens)
    )
)
def g004_table_total(claim: Claim) -> Verdict:
    """'Total = weights + KV cache (FP16) + 1GB runtime overhead', cell by cell (±0.1 GB)."""
    weights = _g004_table_rows("weights")[claim.precision]
    rule = table_total_gb(weights, claim.stated_context_tokens)
    kv = _table_kv_gb(claim.stated_context_tokens)
    real = (
        _real_tier_weights_bytes(claim.precision)
        + real_kv_bytes(kv_dtype="bf16", context_tokens=claim.stated_context_tokens)
        + G004_OVERHEAD
    ) / GB
    implied = claim.value - kv - G004_OVERHEAD / GB
    rate = implied * GB / _est_params()
    figs = [
        Figure("weights_cell_gb", "same row", weights, "GB"),
        Figure("kv_gib", "27,648 × T / 2^30", kv, "GiB"),
        Figure("rule_total_gb", "W + KV + 1", rule, "GB"),
        Figure("implied_weights_gb", "total − KV − 1", implied, "GB"),
        Figure("implied_rate_bytes_per_param", "implied weights / 2,738.1B", rate, "B"),
    ]
    return make(
        claim,
        own=rule,
        real=real,
        unit="GB",
        tol=Tolerance(abs=0.1, text="±0.1 GB (cells printed to 0.1)"),
        basis="guide's own numbers",
        formula=f"{weights:,.1f} + 27,648 × {claim.context_tokens:,} / 2^30 + 1",
        figures=figs,
        assumption="the table's weights cell, K3's MLA cache at FP16 (KDA state left out) and 1 GB",
        explanation=f"Its own rule gives {weights:,.1f} + {kv:.2f} + 1 = {rule:,.2f} GB. The cell counts "
        f"{implied:,.1f} GB of weights = {rate:.3f} B/parameter × 2,738.1B (the estimate rate). "
        f"K3 with its real file, KV and KDA state ({real_state_bytes() / GB:.2f} GB) + 1 GB: "
        f"{real:,.1f} GB.",
    )


@check("g004-total-vram-q4", "g004-gpus-min-vram-q4km-8k", "g004-multigpu-min-vram", "g004-faq-vram-q4km-8k")
def g004_q4_requirement(claim: Claim) -> Verdict:
    """'At Q4_K_M with an 8K context it needs 1,562 GB': its own table's 4-bit 8K cell, and the
    published UD-Q4_K_XL + real KV + 1 GB (±1%)."""
    own = _g004_table_rows("total")["4-bit"]
    real = (published_bytes("UD-Q4_K_XL") + real_kv_bytes(kv_dtype="bf16", context_tokens=8192) + G004_OVERHEAD) / GB
    return make(
        claim,
        own=own,
        real=real,
        unit="GB",
        tol=Tolerance(rel=0.01, text="±1%"),
        basis="guide's own numbers",
        formula="table cell 4-bit @ 8K; real: UD-Q4_K_XL + KV(8K) + state + 1",
        assumption="the table's 4-bit total (its weights counted at the estimate rate, not the file)",
        figures=[
            Figure("own_table_cell_gb", "4-bit, 8K", own, "GB"),
            Figure("real_total_gb", "1,508.67 + KV + state + 1", real, "GB"),
        ],
        explanation=f"The table's own 4-bit 8K cell is {own:,.1f} GB. No Q4_K_M file of K3 is published; "
        f"the 4-bit file (UD-Q4_K_XL, 1,508.67 GB) with an 8K FP16 cache and 1 GB needs "
        f"{real:,.1f} GB ({pct(claim.value / real - 1)}).",
    )


@check("g004-offload-ram-q4", "g004-offload-ram-min")
def offload_ram(claim: Claim) -> Verdict:
    """1,531 GB of routed experts in RAM: its own 4-bit total less the 33 GB of VRAM; for K3 at
    most the whole published 4-bit file."""
    own = _g004_table_rows("total")["4-bit"] - G004_OFFLOAD_VRAM / GB
    file4 = published_bytes("UD-Q4_K_XL") / GB
    experts = weights_bytes_by_group(_k3(), "q4")["routed_experts"] / GB
    return make(
        claim,
        own=own,
        real=file4,
        unit="GB",
        tol=Tolerance(rel=0.005, text="±0.5%"),
        basis="guide's own numbers",
        formula="table 4-bit 8K total − 33; real: ≤ the whole UD-Q4_K_XL",
        figures=[
            Figure("experts_q4k_gb", "2,722.7B × 4.5 / 8", experts, "GB"),
            Figure("published_4bit_file_gb", "UD-Q4_K_XL", file4, "GB"),
        ],
        explanation=f"1,561.9 − 33 = {own:,.1f} GB on its own table. The experts cannot be larger than the "
        f"whole published 4-bit file ({file4:,.2f} GB); 1,531 GB is K3's 2,722.7B routed-expert "
        f"parameters at a uniform 4.5 bits ({experts:,.1f} GB), not the file.",
    )


@check("g004-offload-vram-q4", "g004-offload-vram-min")
def offload_vram(claim: Claim) -> Verdict:
    """33 GB of VRAM: everything but the routed experts at Q4_K + the 8K cache (with KDA state) + 1 GB."""
    groups = weights_bytes_by_group(_k3(), "q4")
    rest = (sum(groups.values()) - groups["routed_experts"]) / GB
    own = _g004_table_rows("total")["4-bit"] - G004_OFFLOAD_RAM / GB
    real = rest + real_kv_bytes(kv_dtype="bf16", context_tokens=8192) / GB + G004_OVERHEAD / GB
    return make(
        claim,
        own=own,
        real=real,
        unit="GB",
        tol=Tolerance(rel=0.02, abs=0.5, text="±0.5 GB (rounding)"),
        basis="guide's own numbers",
        formula="table 4-bit 8K total − 1,531; real: 56.7B × 4.5/8 + KV + 1",
        figures=[Figure("non_expert_q4k_gb", "56.7B × 4.5 / 8", rest, "GB")],
        explanation=f"1,561.9 − 1,531 = {own:.1f} GB on its own table. K3's 56.7B parameters outside the "
        f"routed experts at 4.5 bits are {rest:.1f} GB; with the 8K cache, KDA state and 1 GB, "
        f"{real:.1f} GB.",
    )


@check("g004-faq-comfortable-vram")
def comfortable(claim: Claim) -> Verdict:
    """'Comfortable' 1,876 GB: a 20% margin on 1,562 (the guide does not say so)."""
    own = 1.2 * 1562
    real = (
        1.2 * (published_bytes("UD-Q4_K_XL") + real_kv_bytes(kv_dtype="bf16", context_tokens=8192) + G004_OVERHEAD) / GB
    )
    return make(
        claim,
        own=own,
        real=real,
        unit="GB",
        tol=Tolerance(rel=0.01, text="±1%"),
        basis="guide's own numbers",
        formula="1.2 × 1,562; real: 1.2 × (UD-Q4_K_XL + KV + 1)",
        assumption="'comfortable' means a 20% margin",
        explanation=f"1.2 × 1,562 = {own:,.1f} GB; on the published 4-bit file it is {real:,.1f} GB.",
    )


@check("g004-llama-server-context")
def llama_context(claim: Claim) -> Verdict:
    """'-c 8192': the 8K context of the 1,562 GB figure, in tokens."""
    own = 8 * 1024
    return make(
        claim,
        own=own,
        real=own,
        unit="tokens",
        tol=EXACT,
        basis="arithmetic",
        formula="8K = 8 × 1,024",
        explanation="-c 8192 is the 8K context of the 1,562 GB figure.",
    )


@check("g004-runtime-overhead")
def g004_overhead(claim: Claim) -> Verdict:
    return make(
        claim,
        own=None,
        real=None,
        unit="GB",
        tol=None,
        basis="none",
        explanation="Runtime overhead needs a measurement of llama.cpp (CUDA context, compute buffers) "
        "running K3. The table's consistent rows use it as written.",
    )


@check("g004-ram-bandwidth")
def ram_bandwidth(claim: Claim) -> Verdict:
    return make(
        claim,
        own=None,
        real=None,
        unit="GB/s",
        tol=None,
        basis="arithmetic",
        figures=[Figure("ddr5_4400_dual_channel", "2 channels × 8 B × 4.4 GT/s", 2 * 8 * 4.4, "GB/s")],
        explanation="An assumed host RAM bandwidth (it equals dual-channel DDR5-4400, 70.4 GB/s). It is "
        "applied even to unified-memory machines, whose own memory is 256–819 GB/s.",
    )


@check_pattern(lambda c: c.quantity == "price")
def price(claim: Claim) -> Verdict:
    hw = get_gpu(claim.device)
    return make(
        claim,
        own=None,
        real=None,
        unit="$",
        tol=None,
        basis="hardware catalogue",
        figures=[Figure("catalogue_price", "data/hardware.csv", hw.price_usd, "$")],
        explanation=f"A dated retailer listing; prices move. data/hardware.csv records ${hw.price_usd:,.0f} from "
        f"this guide; makers' launch prices were about half (see its notes).",
    )


def offload_speed_bounds() -> dict[str, float]:
    """Guide 004's 70 GB/s RAM bound on tokens/s: reading all 104B active parameters at 4.5
    bits (``low``) or only K3's 48.6B routed-active ones (``high``) from RAM per token."""
    k3 = _k3()
    m = k3.mlp
    routed_active = m.moe_layers * m.experts_per_token * m.expert_params(k3.hidden_size)
    return {
        "low": G004_RAM_BANDWIDTH / (G004_ACTIVE_PARAMS * Q4_BITS / 8),
        "high": G004_RAM_BANDWIDTH / (routed_active * Q4_BITS / 8),
        "routed_active_params": routed_active,
    }


SPEED = Tolerance(rel=0.5, text="±50% of the bandwidth bound (the guide's speed model is not stated)")


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "tokens_per_s")
def offload_speed(claim: Claim) -> Verdict:
    """An offload-mode speed. Own: 70 GB/s over all 104B active parameters at 4.5 bits. Real: a
    unified-memory machine cannot hold 33 + 1,531 GB, so the experts that do not fit stream from
    the SSD (:func:`k3lib.studies.offload.unified_memory_estimate`, as notebook 04); elsewhere
    70 GB/s over K3's 48.6B routed-active parameters (the rest sits in VRAM)."""
    hw = get_gpu(claim.device)
    b = offload_speed_bounds()
    need = (G004_OFFLOAD_VRAM + G004_OFFLOAD_RAM) / GB
    have = hw.memory_marketed_bytes / GB
    unified = hw.unified_memory and have < need
    figs = [
        Figure("bound_all_active", "70 / (104B × 4.5/8)", b["low"], "tok/s"),
        Figure("bound_routed_active", "70 / (48.6B × 4.5/8)", b["high"], "tok/s"),
        Figure("memory_gb", hw.id, have, "GB"),
        Figure("needed_gb", "33 + 1,531", need, "GB"),
    ]
    if unified:
        # the same function as notebook 04's Mac Studio section: the experts that do not fit the one
        # pool stream from the SSD at every token (k3lib.studies.offload.unified_memory_estimate)
        from k3lib.studies.offload import unified_memory_estimate

        u = unified_memory_estimate(device=hw.id)
        real = u.tokens_per_s
        figs += [
            Figure("read_from_memory_gb", "resident active bytes per token", u.memory_read_bytes / GB, "GB"),
            Figure("read_from_disk_gb", "streamed active bytes per token", u.disk_read_bytes / GB, "GB"),
        ]
        why = (
            f"{hw.name} has one pool of {have:,.0f} GB shared by CPU and GPU: there is no separate RAM for the "
            f"1,531 GB of experts ({need:,.0f} GB in all); the experts that do not fit stream from the SSD at "
            f"every token ({u.disk_read_bytes / GB:.1f} GB per token at "
            f"{u.disk_bandwidth_bytes_per_s / GB:.0f} GB/s), about {real:.2f} tok/s."
        )
    else:
        real = b["high"]
        why = (
            f"With only K3's {b['routed_active_params'] / 1e9:.1f}B routed-active parameters read from RAM the "
            f"bound is {b['high']:.2f} tok/s."
        )
    return make(
        claim,
        own=b["low"],
        real=real,
        unit="tok/s",
        tol=SPEED,
        basis="K3 architecture",
        figures=figs,
        formula="70 GB/s / bytes read from RAM per token",
        explanation=f"Its own 70 GB/s over 104B active at 4.5 bits gives {b['low']:.2f} tok/s. {why}",
    )
