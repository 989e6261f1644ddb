"""Offload mode as a study: tables, curves, guide 004's device table and the unified-memory
case, all read from :class:`~k3lib.serving.offload_model.OffloadPlan` (the memory and speed
model, re-exported here so ``k3lib.studies.offload`` stays the one import).

>>> p = plan_offload(model="kimi-k3", weights="q4_k_m", gpu="rtx-4090-48gb", context="8K")
>>> round(p.vram_needed_bytes / 1e9), round(p.ram_weights_bytes / 1e9)   # guide 004: 33 GB (1 GB runtime, no activation)
(37, 1532)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.memory import weight_bits_by_group
from k3lib.core.precisions import get_weight_format
from k3lib.core.units import GB, GiB, parse_context_tokens, parse_positive_int
from k3lib.serving.offload_model import (  # noqa: F401  (re-exported: the study's one import)
    GUIDE004_GPU_ASSUMPTIONS,
    HostAssumptions,
    MoEBytes,
    OffloadPlan,
    RamBandwidth,
    Tier,
    best_offload_plan,
    decode_seconds_per_step,
    guide004_ram_bandwidth_bytes_per_s,
    layers_for_vram,
    moe_bytes,
    parse_bandwidth,
    plan_offload,
    render_text,
    resolve_ram_bandwidth,
    summary_table,
)

# ---------------------------------------------------------------- tables and curves


def offload_curve(
    *,
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    gpus: Sequence[str] = ("rtx-4090-48gb",),
    ram_bandwidth: object = None,
    context: object = 8192,
    kv_dtype: str = "bf16",
    batch: object = 1,
    host: HostAssumptions | None = None,
):
    """Decode tokens/s against the VRAM it takes, as $N = 0 … L_{moe}$ layers' experts
    move to the GPU, for each GPU's bandwidth (as if it had the VRAM). Columns: ``GPU``,
    ``expert layers on GPU``, ``VRAM needed (GB)``, ``decode tokens/s``."""
    import pandas as pd

    rows = []
    for g in gpus:
        base = plan_offload(
            model=model,
            weights=weights,
            gpu=g,
            ram_bandwidth=ram_bandwidth,
            context=context,
            kv_dtype=kv_dtype,
            batch=batch,
            host_needs=host,
        )
        for n in range(base.parts.moe_layers + 1):
            p = dataclasses.replace(base, expert_layers_on_gpu=n)
            rows.append(
                {
                    "GPU": base.gpu.name,
                    "expert layers on GPU": n,
                    "VRAM needed (GB)": p.vram_needed_bytes / GB,
                    "decode tokens/s": p.decode_tokens_per_s,
                }
            )
    return pd.DataFrame(rows)


def partial_offload_table(
    *,
    gpus: Sequence[str] = ("rtx-4090-48gb", "rtx-pro-6000", "h200"),
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    ram_bandwidth: object = None,
    context: object = 8192,
    kv_dtype: str = "bf16",
    host: HostAssumptions | None = None,
):
    """For each card: how many layers' experts fit beside the dense part
    (:func:`layers_for_vram` with the card's driver-visible memory), and the decode speed
    with none and with that many kept on the GPU."""
    import pandas as pd

    rows = []
    for g in gpus:
        base = plan_offload(
            model=model,
            weights=weights,
            gpu=g,
            ram_bandwidth=ram_bandwidth,
            context=context,
            kv_dtype=kv_dtype,
            host_needs=host,
        )
        n = layers_for_vram(base, base.vram_per_gpu_available_bytes)
        best = dataclasses.replace(base, expert_layers_on_gpu=n)
        rows.append(
            {
                "GPU": base.gpu.name,
                "VRAM (GB)": round(base.vram_available_bytes / GB, 1),
                "GPU bandwidth (GB/s)": base.gpu.memory_bw_bytes_per_s / GB,
                "expert layers that fit": n,
                "VRAM used (GB)": round(best.vram_needed_bytes / GB, 1),
                "tokens/s, experts all in RAM": round(base.decode_tokens_per_s, 2),
                "tokens/s, with those layers on GPU": round(best.decode_tokens_per_s, 2),
            }
        )
    return pd.DataFrame(rows)


def guide004_rows() -> tuple[dict[str, str], ...]:
    """Guide 004's offload table rows from ``data/guide_claims.csv`` (device, t/s, quote)."""
    from k3lib.core.data import read_csv_rows

    return tuple(r for r in read_csv_rows("guide_claims.csv") if r["claim_id"].startswith("g004-offload-tps-"))


def guide004_device_table(
    *,
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    context: object = 8192,
    kv_dtype: str = "bf16",
    ram_bandwidth: object = None,
    host: HostAssumptions | None = None,
):
    """Guide 004's device table recomputed with the guide's own GPU-side arithmetic
    (:data:`GUIDE004_GPU_ASSUMPTIONS`): for each device the model's decode tokens/s at the
    guide's 70 GB/s RAM (GPU part at the device's own bandwidth; the guide uses its RAM figure
    on unified-memory machines too, and so does this table), the guide's figure, their ratio and
    difference, whether the GPU side fits the device (``VRAM fits``, the guide's question)
    and whether the whole plan loads (a unified machine's one pool must hold the experts
    too, so none of them does)."""
    import pandas as pd

    rows = []
    for r in guide004_rows():
        unified = get_gpu(r["device"]).unified_memory
        p = plan_offload(
            model=model,
            weights=weights,
            gpu=r["device"],
            context=context,
            kv_dtype=kv_dtype,
            ram_bandwidth=None if unified else ram_bandwidth,
            host_needs=host,
            assumptions=GUIDE004_GPU_ASSUMPTIONS,
        )
        if unified:  # the guide reads the experts at its RAM figure on every device; so does its table here
            bw = parse_bandwidth(
                guide004_ram_bandwidth_bytes_per_s() if ram_bandwidth is None else ram_bandwidth, "ram_bandwidth"
            )
            p = dataclasses.replace(
                p,
                ram_bandwidth_bytes_per_s=bw,
                ram_bandwidth_basis=f"guide 004's arithmetic: "
                f"{bw / GB:,.0f} GB/s on every device, unified ones included",
            )
        guide = float(r["value"])
        model_tps = p.decode_tokens_per_s
        rows.append(
            {
                "device": r["device"],
                "catalogue id": p.gpu.id,
                "VRAM label": f"{p.gpu.memory_marketed_bytes // GiB}GB",
                "GPU bandwidth (GB/s)": p.gpu.memory_bw_bytes_per_s / GB,
                "unified memory": p.gpu.unified_memory,
                "guide tokens/s": guide,
                "model tokens/s": round(model_tps, 2),
                "model ÷ guide": round(model_tps / guide, 2),
                "model − guide (tokens/s)": round(model_tps - guide, 2),
                "VRAM fits": p.fits_gpu_side,
                "whole plan loads": p.fits,
            }
        )
    return pd.DataFrame(rows)


def fit_two_tier_bytes(table, *, ram_bandwidth: object = None) -> dict[str, float]:
    """What per-token reads would reproduce a table of (GPU bandwidth, tokens/s):
    least squares on $1/\\text{tps} = R/BW_{RAM} + G/BW_{GPU}$ for $R$ and $G$ (bytes).

    Returns ``ram_read_bytes``, ``gpu_read_bytes``, ``rms_error_tokens_per_s`` and
    ``rows_within_0_05`` (rows the fit reproduces to the guide's rounding).
    """
    import numpy as np

    bw = parse_bandwidth(
        guide004_ram_bandwidth_bytes_per_s() if ram_bandwidth is None else ram_bandwidth, "ram_bandwidth"
    )
    gpu_bw = np.asarray(table["GPU bandwidth (GB/s)"], dtype=float) * GB
    tps = np.asarray(table["guide tokens/s"], dtype=float)
    a = np.column_stack([np.full_like(gpu_bw, 1 / bw), 1 / gpu_bw])
    (r, g), *_ = np.linalg.lstsq(a, 1 / tps, rcond=None)
    fitted = 1 / (a @ np.array([r, g]))
    return {
        "ram_read_bytes": float(r),
        "gpu_read_bytes": float(g),
        "rms_error_tokens_per_s": float(np.sqrt(np.mean((fitted - tps) ** 2))),
        "rows_within_0_05": int(np.sum(np.abs(fitted - tps) <= 0.05 + 1e-9)),
        "rows": int(len(tps)),
    }


def slowdown_table(
    plan: OffloadPlan, *, all_gpu_tokens_per_s: float, efficiencies: Sequence[float] = (1.0, 0.5, 0.25, 0.1, 0.05)
):
    """Offload decode against an all-GPU deployment running at a fraction of its
    bandwidth roofline: slowdown $= e·\\text{tps}_{GPU} / \\text{tps}_{offload}$ (the
    offload side at its own roofline)."""
    import pandas as pd

    off = plan.decode_tokens_per_s
    return pd.DataFrame(
        [
            {
                "all-GPU efficiency (share of roofline)": e,
                "all-GPU tokens/s": round(e * all_gpu_tokens_per_s, 1),
                "offload tokens/s": round(off, 2),
                "slowdown (×)": round(e * all_gpu_tokens_per_s / off, 1),
            }
            for e in efficiencies
        ]
    )


def all_gpu_decode_tokens_per_s(parallel_plan) -> float:
    """Bandwidth roofline of a :class:`~k3lib.studies.parallel.ParallelPlan` at batch 1: the
    stages run one after another and the TP ranks of a stage in parallel, so
    $t = \\sum_s (\\text{active bytes}_s / TP) / BW = A_{active} / (TP·BW)$ (replicated
    weights ignored: they are small)."""
    spec = parallel_plan.model
    bits = weight_bits_by_group(spec, get_weight_format(parallel_plan.weight_format))

    def bit(g: str) -> float:
        return bits.get(g, bits.get("*", 16))

    groups = spec.param_groups()
    m = spec.mlp
    routed_active = m.moe_layers * m.experts_per_token * m.expert_params(spec.hidden_size) * bit("routed_experts") / 8
    active = sum(n * bit(g) / 8 for g, n in groups.items() if g not in ("embedding", "routed_experts")) + routed_active
    kv = sum(s.kv_cache_bytes for s in parallel_plan.shares)  # one rank per stage
    t = (active / parallel_plan.layout.tp + kv) / parallel_plan.gpu.memory_bw_bytes_per_s
    return 1 / t


def roofline_efficiency_for(slowdown_at_roofline: float, slowdowns: Sequence[float] = (10, 100)) -> tuple[float, ...]:
    """The share of its roofline an all-GPU deployment must reach for offload to be
    exactly ``slowdowns`` × slower: $e = s / s_{roofline}$.

    >>> roofline_efficiency_for(200.0)
    (0.05, 0.5)
    """
    return tuple(s / slowdown_at_roofline for s in slowdowns)


def ddr_bandwidth_bytes_per_s(*, mt_per_s: int, channels: int) -> int:
    """Peak DRAM bandwidth: transfers/s × 8 bytes per 64-bit channel × channels.

    >>> ddr_bandwidth_bytes_per_s(mt_per_s=4400, channels=2) / 1e9    # dual-channel desktop DDR5-4400
    70.4
    """
    return parse_positive_int(mt_per_s, "mt_per_s") * 10**6 * 8 * parse_positive_int(channels, "channels")


#: Memory platforms for the RAM-bandwidth comparison: (name, MT/s, channels, most RAM it takes (GB)).
#: Capacities are typical board maxima (recalled, not verified per board); bandwidth is the formula above.
RAM_PLATFORMS = (
    ("desktop, 2-channel DDR5-4400", 4400, 2, 256),
    ("workstation, 8-channel DDR5-4800", 4800, 8, 2048),
    ("server, 12-channel DDR5-4800", 4800, 12, 3072),
    ("server, 12-channel DDR5-6000", 6000, 12, 3072),
)


def ram_platform_table(
    *,
    gpu: str = "rtx-4090-48gb",
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    context: object = 8192,
    platforms=RAM_PLATFORMS,
    host: HostAssumptions | None = None,
):
    """Decode tokens/s in offload mode on each RAM platform, and whether it can hold the
    RAM side at all."""
    import pandas as pd

    rows = []
    for name, mts, ch, max_gb in platforms:
        bw = ddr_bandwidth_bytes_per_s(mt_per_s=mts, channels=ch)
        p = plan_offload(
            model=model, weights=weights, gpu=gpu, context=context, ram_bandwidth=bw, ram=max_gb * GB, host_needs=host
        )
        rows.append(
            {
                "platform": name,
                "RAM bandwidth (GB/s)": bw / GB,
                "RAM it takes (GB)": max_gb,
                "RAM needed (GB)": round(p.ram_needed_bytes / GB, 1),
                "holds the experts": bool(p.fits_ram),
                "decode tokens/s": round(p.decode_tokens_per_s, 2),
            }
        )
    return pd.DataFrame(rows)


def guide004_memory_table(
    *,
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    context: object = 8192,
    kv_dtype: str = "bf16",
    host: HostAssumptions | None = None,
):
    """Guide 004's three memory figures next to the model's (GB), with the difference, on the
    guide's own GPU-side arithmetic (1 GB runtime, no activation: :data:`GUIDE004_GPU_ASSUMPTIONS`;
    ``k3plan offload`` uses the core's overhead and activation instead)."""
    import pandas as pd

    p = plan_offload(
        model=model,
        weights=weights,
        gpu="rtx-4090-48gb",
        context=context,
        kv_dtype=kv_dtype,
        host_needs=host,
        assumptions=GUIDE004_GPU_ASSUMPTIONS,
    )
    experts = p.parts.routed_bytes
    rows = [
        (
            "VRAM in offload mode",
            33,
            p.vram_needed_bytes,
            "non-expert weights + KV (8K, FP16) + 1 GB runtime (guide 004's assumption)",
        ),
        ("RAM: the experts", 1531, experts, "92 layers × 896 experts, Q4_K_M at 4.5 bits"),
        ("RAM: experts + embedding", 1531, p.ram_weights_bytes, "llama.cpp keeps the token embedding in RAM"),
        ("RAM: + OS, engine, pinned buffers", 1531, p.ram_needed_bytes, "host needs: assumptions, see HostAssumptions"),
        ("everything on GPUs", 1562, p.all_gpu_bytes, "all weights + KV + 1 GB"),
    ]
    return pd.DataFrame(
        [
            {
                "figure": f,
                "guide (GB)": g,
                "model (GB)": round(m / GB, 1),
                "model − guide (GB)": round(m / GB - g, 1),
                "what the model counts": w,
            }
            for f, g, m, w in rows
        ]
    )


def prefill_table(
    *,
    gpus: Sequence[str] = ("rtx-4090-48gb", "rtx-pro-6000", "m3-ultra-512gb"),
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    prompt_tokens: object = 8192,
    host: HostAssumptions | None = None,
):
    """Prefill in offload mode: the per-micro-batch host-link and compute times, prefill
    tokens/s, and the seconds a ``prompt_tokens`` prompt takes."""
    import pandas as pd

    n_prompt = parse_context_tokens(prompt_tokens, "prompt_tokens")
    rows = []
    for g in gpus:
        p = plan_offload(model=model, weights=weights, gpu=g, context=n_prompt, host_needs=host)
        link, comp, tps = (
            p.prefill_link_seconds_per_ubatch,
            p.prefill_compute_seconds_per_ubatch,
            p.prefill_tokens_per_s,
        )
        rows.append(
            {
                "device": p.gpu.name,
                "host link (GB/s)": None
                if p.gpu.unified_memory or not p.gpu.host_link_bytes_per_s
                else p.gpu.host_link_bytes_per_s / GB,
                "experts touched per micro-batch": round(p.prefill_fraction_touched, 4),
                "link s / micro-batch": None if link is None else round(link, 1),
                "compute s / micro-batch": None if comp is None else round(comp, 2),
                "prefill tokens/s": None if tps is None else round(tps, 1),
                f"{n_prompt:,}-token prompt (s)": None if tps is None else round(n_prompt / tps),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- unified memory + disk


@dataclass(frozen=True)
class UnifiedEstimate:
    """A MoE model on a unified-memory machine whose memory cannot hold it all: what is
    resident is read at the memory's bandwidth, the rest of the active experts stream
    from disk (page cache misses; experts chosen uniformly, so the hit rate is the
    resident share)."""

    device: GPUSpec = field(repr=False)
    usable_bytes: int
    model_bytes: int
    resident_expert_share: float
    memory_read_bytes: float
    disk_read_bytes: float
    disk_bandwidth_bytes_per_s: int

    @property
    def seconds_per_token(self) -> float:
        return decode_seconds_per_step(
            [
                Tier("unified memory", self.usable_bytes, self.memory_read_bytes, self.device.memory_bw_bytes_per_s),
                Tier("disk", 0, self.disk_read_bytes, self.disk_bandwidth_bytes_per_s),
            ]
        )

    @property
    def tokens_per_s(self) -> float:
        return 1 / self.seconds_per_token

    @property
    def fits(self) -> bool:
        return self.disk_read_bytes == 0


def unified_memory_estimate(
    *,
    model: str = "kimi-k3",
    weights: str = "q4_k_m",
    device: str = "m3-ultra-512gb",
    gpu_share: float = 0.75,
    disk_bandwidth: object = "6GB/s",
    context: object = 8192,
    kv_dtype: str = "bf16",
    host: HostAssumptions | None = None,
) -> UnifiedEstimate:
    """Decode on a unified-memory machine: the GPU may wire ``gpu_share`` of the memory
    (macOS defaults to about 75% on large configurations; adjustable), the dense part,
    KV and runtime go there first, then as many experts as fit; the rest of each token's
    active experts are read from disk at ``disk_bandwidth`` (an assumption: a fast
    internal NVMe SSD, about 6 GB/s)."""
    if not 0 < gpu_share <= 1:
        raise K3InputError("gpu_share", f"{gpu_share!r}", "a fraction in (0, 1]")
    p = plan_offload(model=model, weights=weights, gpu=device, context=context, kv_dtype=kv_dtype, host_needs=host)
    parts = p.parts
    usable = int(p.gpu.memory_marketed_bytes * gpu_share)
    base = parts.dense_bytes + parts.embedding_bytes + p.vram_kv_bytes + p.vram_activation_bytes + p.vram_overhead_bytes
    room = max(0.0, usable - base)
    share = min(1.0, room / parts.routed_bytes)
    active = parts.moe_layers * parts.active_experts * parts.expert_bytes
    return UnifiedEstimate(
        device=p.gpu,
        usable_bytes=usable,
        model_bytes=p.all_gpu_bytes,
        resident_expert_share=share,
        memory_read_bytes=parts.dense_bytes + p.vram_kv_bytes + share * active,
        disk_read_bytes=(1 - share) * active,
        disk_bandwidth_bytes_per_s=parse_bandwidth(disk_bandwidth, "disk_bandwidth"),
    )


def mac_studio_table(
    *,
    device: str = "m3-ultra-512gb",
    disk_bandwidth: object = "6GB/s",
    gpu_shares: Sequence[float] = (0.75, 0.95),
    guide_q4_weights_bytes: int = 325 * GiB,
    guide_active_params: int = 104 * 10**9,
    guide_bits_per_weight: float = 4.5,
):
    """Guide 000's FAQ: "a Mac Studio with 512 GB can attempt Q4 … well under 1 tok/s".
    Rows: the real model with the GPU allowed each share of memory (the rest of the
    experts read from disk), and guide 000's own Q4 figure (325, which fits), read at the
    machine's bandwidth with guide 004's 104B active parameters."""
    import pandas as pd

    rows = []
    for share in gpu_shares:
        u = unified_memory_estimate(device=device, gpu_share=share, disk_bandwidth=disk_bandwidth)
        rows.append(
            {
                "case": f"real K3, Q4_K_M, GPU may use {share:.0%} of memory",
                "model size (GB)": round(u.model_bytes / GB),
                "memory for it (GB)": round(u.usable_bytes / GB),
                "experts resident": round(u.resident_expert_share, 3),
                "read from memory per token (GB)": round(u.memory_read_bytes / GB, 1),
                "read from disk per token (GB)": round(u.disk_read_bytes / GB, 1),
                "decode tokens/s": round(u.tokens_per_s, 2),
            }
        )
    dev = get_gpu(device)
    read = guide_active_params * guide_bits_per_weight / 8
    rows.append(
        {
            "case": "guide 000's Q4 figure (325), all resident; guide 004's 104B active",
            "model size (GB)": round(guide_q4_weights_bytes / GB),
            "memory for it (GB)": round(dev.memory_marketed_bytes / GB),
            "experts resident": 1.0,
            "read from memory per token (GB)": round(read / GB, 1),
            "read from disk per token (GB)": 0.0,
            "decode tokens/s": round(dev.memory_bw_bytes_per_s / read, 2),
        }
    )
    return pd.DataFrame(rows)


def __getattr__(name: str):  # the old constant's name, read from guide 004's profile on use
    if name == "GUIDE004_RAM_BW_BYTES_PER_S":
        return guide004_ram_bandwidth_bytes_per_s()
    raise AttributeError(name)
