"""Offload mode: a MoE model's routed experts in system RAM, everything else on the GPU
(guide 004's mode, llama.cpp's ``-ot exps=CPU``), or the experts of $N$ layers kept on
the GPU too (partial offload).

**Memory** (bytes):

$$VRAM = W_{dense} + N·X_{layer} + KV + O_{gpu} \\qquad RAM = (L_{moe}-N)·X_{layer} + W_{emb} + H$$

$W_{dense}$ is every non-expert weight except the token embedding (attention, shared
experts, dense MLP, routers, norms, LM head); $X_{layer}$ one layer's routed experts;
the embedding stays in RAM (llama.cpp keeps ``token_embd`` on the CPU: one row is read
per token); $H$ is the host's needs beyond weights (:class:`HostAssumptions`).

**Decode** is a bandwidth model: every step reads each device's share once,

$$t_{step} = \\sum_{d} \\frac{\\text{bytes read on } d \\text{ per step}}{BW_d},
\\qquad \\text{tokens/s} = B / t_{step}$$

where only the **active** experts are read: $k$ of $E$ per MoE layer for one sequence,
$E·(1-(1-k/E)^B)$ distinct ones for a batch of $B$. The GPU reads $W_{dense}$, the
resident experts' active share and the KV cache (at full context); RAM reads the
offloaded experts' active share. It is a roofline: real engines reach a fraction of it.

**Prefill** is a different regime. For a micro-batch of $u$ tokens (llama.cpp's
``-ub``, 512) the engine copies the RAM-resident weights to the GPU to multiply them
there, and $u·k \\gg E$ tokens touch almost every expert, so each micro-batch moves
$\\approx (1-(1-k/E)^u)·W_{RAM}$ across the host link (PCIe):
$t_u = \\max(W_{RAM}·f_u / BW_{link},\\ 2·P_{active}·u / F)$, prefill tokens/s $= u/t_u$.
Unified-memory machines have no link to cross; their prefill is compute-bound.

>>> p = plan_offload(model="kimi-k3", weights="q4_k_m", gpu="rtx-4090-48gb", context="8K")
>>> round(p.vram_needed_bytes / 1e9), round(p.ram_weights_bytes / 1e9)
(33, 1532)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from k3lib.core.architecture import Architecture
from k3lib.core.memory import kv_cache_bytes, weight_bits_by_group
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.models import get_model
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import GB, GiB, parse_context_tokens, parse_positive_int, parse_size_bytes

def guide004_ram_bandwidth_bytes_per_s() -> int:
    """Guide 004's "Speed is bound by RAM bandwidth (estimated at 70 GB/s)", read from its
    profile (``data/profiles/kimi-k3@guide-004.json``, ``offload.ram_bandwidth_gb_s``)."""
    return int(round(get_model("kimi-k3@guide-004").raw["offload"]["ram_bandwidth_gb_s"] * GB))


def __getattr__(name: str):   # the old constant's name, read from the profile on use
    if name == "GUIDE004_RAM_BW_BYTES_PER_S":
        return guide004_ram_bandwidth_bytes_per_s()
    raise AttributeError(name)


@dataclass(frozen=True)
class HostAssumptions:
    """What offload mode needs besides the weights — stated assumptions, not measurements.

    * ``os_bytes``: the operating system, services and page tables (8 GB).
    * ``engine_bytes``: the engine process on the CPU side — compute buffers, tokenizer,
      Python (4 GB).
    * ``pinned_staging_bytes``: page-locked buffers for host→GPU copies (2 GB).
    * ``vram_runtime_bytes``: GPU-side runtime overhead; guide 004's "1GB runtime
      overhead" by default.
    * ``ubatch_tokens``: prefill micro-batch (llama.cpp ``-ub`` default 512).
    * ``state_bytes_per_element``: linear-attention state dtype (FP32).
    """

    os_bytes: int = 8 * GB
    engine_bytes: int = 4 * GB
    pinned_staging_bytes: int = 2 * GB
    vram_runtime_bytes: int = 1 * GB
    ubatch_tokens: int = 512
    state_bytes_per_element: float = 4.0

    def __post_init__(self) -> None:
        for name in ("os_bytes", "engine_bytes", "pinned_staging_bytes", "vram_runtime_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise K3InputError(name, f"{v!r} must be a non-negative byte count")
        if isinstance(self.ubatch_tokens, bool) or not isinstance(self.ubatch_tokens, int) or self.ubatch_tokens < 1:
            raise K3InputError("ubatch_tokens", f"{self.ubatch_tokens!r} must be a whole number ≥ 1")

    @property
    def host_extra_bytes(self) -> int:
        """RAM needed beyond the weights: OS + engine + pinned buffers."""
        return self.os_bytes + self.engine_bytes + self.pinned_staging_bytes


@dataclass(frozen=True)
class Tier:
    """One memory device in the decode model: what it holds, what a step reads from it,
    and how fast it reads."""

    name: str
    resident_bytes: int
    read_bytes_per_step: float
    bandwidth_bytes_per_s: int

    def __post_init__(self) -> None:
        if self.bandwidth_bytes_per_s <= 0:
            raise K3InputError(f"{self.name} bandwidth", f"{self.bandwidth_bytes_per_s!r} must be > 0")

    @property
    def seconds_per_step(self) -> float:
        """bytes read per step ÷ bandwidth."""
        return self.read_bytes_per_step / self.bandwidth_bytes_per_s


def decode_seconds_per_step(tiers: Sequence[Tier]) -> float:
    """$t_{step} = \\sum_d \\text{bytes}_d / BW_d$ (the devices take turns within a step).

    >>> decode_seconds_per_step([Tier("GPU", 0, 30e9, 1000 * 10**9), Tier("RAM", 0, 70e9, 70 * 10**9)])
    1.03
    """
    return sum(t.seconds_per_step for t in tiers)


# ---------------------------------------------------------------- the model's pieces


@dataclass(frozen=True)
class MoEBytes:
    """A MoE model's weights split the way offload mode splits them (bytes)."""

    dense_bytes: int               # non-expert weights except the embedding (resident on the GPU)
    embedding_bytes: int           # token embedding (stays in RAM)
    expert_bytes: float            # one routed expert of one layer
    experts_per_layer: int         # E
    active_experts: int            # k
    moe_layers: int                # L_moe
    embedding_row_bytes: float     # one embedding row, read per token

    @property
    def layer_experts_bytes(self) -> float:
        """$X_{layer} = E·$ one expert."""
        return self.experts_per_layer * self.expert_bytes

    @property
    def routed_bytes(self) -> float:
        return self.moe_layers * self.layer_experts_bytes

    def distinct_experts(self, batch: int) -> float:
        """Experts one layer touches in a step of ``batch`` sequences: $E·(1-(1-k/E)^B)$."""
        e, k = self.experts_per_layer, self.active_experts
        return e * (1 - (1 - k / e) ** batch)


def moe_bytes(model: "str | Architecture", weights: str) -> MoEBytes:
    """Split ``model``'s weights for offload mode, from
    :meth:`~k3lib.core.architecture.Architecture.param_groups` and the format's bits."""
    spec = get_model(model)
    if not isinstance(spec, Architecture):
        raise K3InputError("model", f"{spec.id} is a guide profile without layer shapes; offload needs an "
                           "architecture", "e.g. kimi-k3")
    if not spec.mlp.moe_layers:
        raise K3InputError("model", f"{spec.name} is dense: it has no experts to offload", "a MoE model")
    bits = weight_bits_by_group(spec, get_weight_format(weights))
    bit = lambda g: bits.get(g, bits.get("*", 16))  # noqa: E731
    groups = spec.param_groups()
    dense = sum(n * bit(g) / 8 for g, n in groups.items() if g not in ("embedding", "routed_experts"))
    m = spec.mlp
    return MoEBytes(dense_bytes=int(math.ceil(dense)),
                    embedding_bytes=int(math.ceil(groups["embedding"] * bit("embedding") / 8)),
                    expert_bytes=m.expert_params(spec.hidden_size) * bit("routed_experts") / 8,
                    experts_per_layer=m.n_routed_experts, active_experts=m.experts_per_token,
                    moe_layers=m.moe_layers, embedding_row_bytes=spec.hidden_size * bit("embedding") / 8)


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class OffloadPlan:
    """A MoE model in offload mode on one GPU (or unified-memory machine) plus system RAM.

    Sizes in bytes, bandwidths in bytes/s, times in seconds. ``ram_available_bytes`` is
    None when the RAM size was not given.
    """

    model: Architecture = field(repr=False)
    gpu: GPUSpec = field(repr=False)
    weight_format: str
    kv_dtype: str
    context_tokens: int
    batch: int
    expert_layers_on_gpu: int
    parts: MoEBytes = field(repr=False)
    ram_bandwidth_bytes_per_s: int
    ram_available_bytes: int | None
    host: HostAssumptions
    vram_kv_bytes: int
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.expert_layers_on_gpu <= self.parts.moe_layers:
            raise K3InputError("expert_layers_on_gpu", f"{self.expert_layers_on_gpu!r}",
                               f"0 … {self.parts.moe_layers} (the model's MoE layers)")

    # -- memory
    @property
    def vram_weights_bytes(self) -> int:
        """$W_{dense} + N·X_{layer}$."""
        return int(self.parts.dense_bytes + math.ceil(self.expert_layers_on_gpu * self.parts.layer_experts_bytes))

    @property
    def vram_needed_bytes(self) -> int:
        """Weights on the GPU + KV cache + GPU runtime overhead."""
        return self.vram_weights_bytes + self.vram_kv_bytes + self.host.vram_runtime_bytes

    @property
    def vram_available_bytes(self) -> int:
        """The device's memory (driver-visible where known)."""
        return self.gpu.memory_bytes("usable")

    @property
    def ram_weights_bytes(self) -> int:
        """$(L_{moe}-N)·X_{layer} + W_{emb}$."""
        off = self.parts.moe_layers - self.expert_layers_on_gpu
        return int(math.ceil(off * self.parts.layer_experts_bytes)) + self.parts.embedding_bytes

    @property
    def ram_needed_bytes(self) -> int:
        """RAM weights + :attr:`HostAssumptions.host_extra_bytes`."""
        return self.ram_weights_bytes + self.host.host_extra_bytes

    @property
    def all_gpu_bytes(self) -> int:
        """Everything on GPUs instead: all weights + KV + runtime overhead."""
        return int(self.parts.dense_bytes + self.parts.embedding_bytes + math.ceil(self.parts.routed_bytes)
                   + self.vram_kv_bytes + self.host.vram_runtime_bytes)

    @property
    def fits_vram(self) -> bool:
        return self.vram_needed_bytes <= self.vram_available_bytes

    @property
    def fits_ram(self) -> bool | None:
        return None if self.ram_available_bytes is None else self.ram_needed_bytes <= self.ram_available_bytes

    @property
    def problems(self) -> tuple[str, ...]:
        """What stops this plan from loading (empty when it loads)."""
        out = []
        if self.context_tokens > self.model.max_context_tokens:
            out.append(f"context {self.context_tokens:,} tokens exceeds the model's maximum of "
                       f"{self.model.max_context_tokens:,}")
        if not self.fits_vram:
            out.append(f"VRAM: {self.vram_needed_bytes / GB:,.1f} GB needed, {self.vram_available_bytes / GB:,.1f} GB "
                       "available")
        if self.fits_ram is False:
            out.append(f"RAM: {self.ram_needed_bytes / GB:,.0f} GB needed, {self.ram_available_bytes / GB:,.0f} GB "
                       "available")
        return tuple(out)

    @property
    def fits(self) -> bool:
        """Loads: VRAM and (when given) RAM suffice and the context is within the model's maximum."""
        return not self.problems

    # -- decode
    @property
    def tiers(self) -> tuple[Tier, Tier]:
        """(GPU, RAM) with the bytes each reads per decode step."""
        p, n = self.parts, self.expert_layers_on_gpu
        active = p.distinct_experts(self.batch) * p.expert_bytes
        gpu_read = p.dense_bytes + n * active + self.vram_kv_bytes
        ram_read = (p.moe_layers - n) * active + self.batch * p.embedding_row_bytes
        name = "unified memory" if self.gpu.unified_memory else "GPU memory"
        return (Tier(name, self.vram_weights_bytes + self.vram_kv_bytes, gpu_read, self.gpu.memory_bw_bytes_per_s),
                Tier("system RAM", self.ram_weights_bytes, ram_read, self.ram_bandwidth_bytes_per_s))

    @property
    def decode_seconds_per_step(self) -> float:
        return decode_seconds_per_step(self.tiers)

    @property
    def decode_tokens_per_s(self) -> float:
        """$B / t_{step}$ (tokens/s over the batch)."""
        return self.batch / self.decode_seconds_per_step

    # -- prefill
    @property
    def prefill_fraction_touched(self) -> float:
        """Share of a layer's experts one micro-batch touches: $1-(1-k/E)^u$."""
        p = self.parts
        return 1 - (1 - p.active_experts / p.experts_per_layer) ** self.host.ubatch_tokens

    @property
    def prefill_link_seconds_per_ubatch(self) -> float | None:
        """RAM-resident expert bytes a micro-batch moves ÷ host-link bandwidth (None: no link)."""
        if self.gpu.unified_memory or not self.gpu.host_link_bytes_per_s:
            return None
        off = (self.parts.moe_layers - self.expert_layers_on_gpu) * self.parts.layer_experts_bytes
        return off * self.prefill_fraction_touched / self.gpu.host_link_bytes_per_s

    @property
    def prefill_compute_seconds_per_ubatch(self) -> float | None:
        """$2·P_{active}·u / F$ with the GPU's dense BF16 FLOP/s (None when unknown)."""
        if not self.gpu.bf16_dense_flops:
            return None
        return 2 * self.model.params_active * self.host.ubatch_tokens / self.gpu.bf16_dense_flops

    @property
    def prefill_tokens_per_s(self) -> float | None:
        """$u / \\max(t_{link}, t_{compute})$; None when neither is known."""
        times = [t for t in (self.prefill_link_seconds_per_ubatch, self.prefill_compute_seconds_per_ubatch)
                 if t is not None]
        return self.host.ubatch_tokens / max(times) if times else None

    # -- output
    def verdict(self) -> str:
        """One line: FITS or DOES NOT FIT, VRAM, RAM, and tokens/s only for a plan that loads."""
        ram = "" if self.ram_available_bytes is None else \
            f" of {self.ram_available_bytes / GB:,.0f} GB{'' if self.fits_ram else ' — NOT ENOUGH'}"
        head = (f"{'FITS' if self.fits else 'DOES NOT FIT'} — {self.gpu.name}: VRAM {self.vram_needed_bytes / GB:,.1f} "
                f"GB of {self.vram_available_bytes / GB:,.1f} GB{'' if self.fits_vram else ' — NOT ENOUGH'}, "
                f"RAM {self.ram_needed_bytes / GB:,.0f} GB{ram}")
        if not self.fits:
            return head + "; no tokens/s: the plan cannot load (" + "; ".join(self.problems) + ")"
        return head + f"; decode ≈ {self.decode_tokens_per_s:,.2f} tokens/s"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (bytes, bytes/s, seconds) — what ``k3plan offload --json`` prints."""
        gpu_t, ram_t = self.tiers
        return {
            "model": self.model.id, "gpu": self.gpu.id, "weights": self.weight_format, "kv_dtype": self.kv_dtype,
            "context_tokens": self.context_tokens, "batch": self.batch,
            "expert_layers_on_gpu": self.expert_layers_on_gpu, "moe_layers": self.parts.moe_layers,
            "vram_weights_bytes": self.vram_weights_bytes, "vram_kv_bytes": self.vram_kv_bytes,
            "vram_runtime_bytes": self.host.vram_runtime_bytes, "vram_needed_bytes": self.vram_needed_bytes,
            "vram_available_bytes": self.vram_available_bytes, "fits_vram": self.fits_vram,
            "ram_weights_bytes": self.ram_weights_bytes, "ram_extra_bytes": self.host.host_extra_bytes,
            "ram_needed_bytes": self.ram_needed_bytes, "ram_available_bytes": self.ram_available_bytes,
            "fits_ram": self.fits_ram, "all_gpu_bytes": self.all_gpu_bytes,
            "ram_bandwidth_bytes_per_s": self.ram_bandwidth_bytes_per_s,
            "gpu_bandwidth_bytes_per_s": self.gpu.memory_bw_bytes_per_s,
            "gpu_read_bytes_per_step": gpu_t.read_bytes_per_step, "ram_read_bytes_per_step": ram_t.read_bytes_per_step,
            "decode_seconds_per_step": self.decode_seconds_per_step if self.fits else None,
            "decode_tokens_per_s": self.decode_tokens_per_s if self.fits else None,
            "prefill_tokens_per_s": self.prefill_tokens_per_s if self.fits else None,
            "fits": self.fits, "problems": list(self.problems), "verdict": self.verdict(), "notes": list(self.notes),
        }


def render_text(plan: "OffloadPlan", unit: str = "GB") -> str:
    """A readable report for ``k3plan offload``: the memory split, the per-token reads
    and the decode/prefill speeds (sizes in ``unit``, GB or GiB).

    >>> print(render_text(plan_offload(gpu="rtx-4090-48gb", ram="2TB")).splitlines()[-1])
    decode ≈ 2.37 tokens/s (bandwidth roofline); prefill ≈ 10.7 tokens/s over the host link
    """
    table = summary_table(plan, unit)
    width = max(len(p) for p in table["param"])
    lines = [f"{plan.model.name} · weights {plan.weight_format} · KV {plan.kv_dtype} · "
             f"context {plan.context_tokens:,} tokens · batch {plan.batch} · {plan.gpu.name}",
             f"experts of {plan.expert_layers_on_gpu} of {plan.parts.moe_layers} MoE layers on the GPU; "
             f"RAM bandwidth {plan.ram_bandwidth_bytes_per_s / GB:,.1f} GB/s"]
    lines += [f"{r['param']:<{width}}  {r[f'value ({unit})']:>12,.2f} {unit}" for _, r in table.iterrows()]
    lines.append(plan.verdict())
    lines += [f"note: {n}" for n in plan.notes]
    pre = plan.prefill_tokens_per_s
    if not plan.fits:
        return "\n".join(lines)
    lines.append(f"decode ≈ {plan.decode_tokens_per_s:,.2f} tokens/s (bandwidth roofline); "
                 + (f"prefill ≈ {pre:,.1f} tokens/s over the host link" if pre and plan.prefill_link_seconds_per_ubatch
                    else f"prefill ≈ {pre:,.1f} tokens/s (compute-bound)" if pre else "prefill: not modelled"))
    return "\n".join(lines)


def plan_offload(*, model: "str | Architecture" = "kimi-k3", weights: str = "q4_k_m",
                 gpu: "str | GPUSpec" = "rtx-4090-48gb", kv_dtype: str = "bf16", context: object = 8192,
                 batch: object = 1, expert_layers_on_gpu: object = 0, ram: object = None,
                 ram_bandwidth: object = None, host: HostAssumptions | None = None
                 ) -> OffloadPlan:
    """Validate inputs and build an :class:`OffloadPlan`. Sizes may be strings
    (``"1536GB"``, ``"70GB/s"``); bad input raises :class:`~k3lib.core.errors.K3InputError`
    naming the field."""
    spec = get_model(model)
    parts = moe_bytes(spec, weights)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    fmt = get_weight_format(weights)
    kvd = get_kv_dtype(kv_dtype)
    ctx = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    if isinstance(expert_layers_on_gpu, bool) or not isinstance(expert_layers_on_gpu, (int, str)):
        raise K3InputError("expert_layers_on_gpu", f"{expert_layers_on_gpu!r} is not a whole number",
                           f"0 … {parts.moe_layers}")
    try:
        n = int(expert_layers_on_gpu)
    except ValueError:
        raise K3InputError("expert_layers_on_gpu", f"{expert_layers_on_gpu!r} is not a whole number",
                           f"0 … {parts.moe_layers}") from None
    ram_b = None if ram in (None, "") else parse_size_bytes(ram, "ram")
    bw = parse_bandwidth(guide004_ram_bandwidth_bytes_per_s() if ram_bandwidth in (None, "") else ram_bandwidth,
                         "ram_bandwidth")
    h = host or HostAssumptions()
    kv = kv_cache_bytes(spec, context_tokens=ctx, batch=n_batch, kv_dtype=kvd,
                        state_bytes_per_element=h.state_bytes_per_element)
    notes = []
    if hw.unified_memory:
        notes.append(f"{hw.name} has unified memory: there is no separate RAM pool; its "
                     f"{hw.memory_marketed_bytes / GiB:,.0f} GiB is all the memory it has")
    return OffloadPlan(model=spec, gpu=hw, weight_format=fmt.id, kv_dtype=kvd.id, context_tokens=ctx,
                       batch=n_batch, expert_layers_on_gpu=n, parts=parts, ram_bandwidth_bytes_per_s=bw,
                       ram_available_bytes=ram_b, host=h, vram_kv_bytes=kv, notes=tuple(notes))


def parse_bandwidth(value: object, field: str = "bandwidth") -> int:
    """``"70GB/s"``, ``"70 GB/s"``, ``"70GB"`` or a number of bytes/s → bytes/s (> 0).

    >>> parse_bandwidth("70GB/s")
    70000000000
    """
    text = value.strip().removesuffix("/s").removesuffix("ps") if isinstance(value, str) else value
    bw = parse_size_bytes(text, field)
    if bw <= 0:
        raise K3InputError(field, f"{value!r} must be greater than zero", "e.g. 70GB/s")
    return bw


def layers_for_vram(plan: OffloadPlan, vram_budget_bytes: int) -> int:
    """The most expert layers that fit on the GPU within ``vram_budget_bytes`` (0 if even
    the dense part does not).

    $N = \\lfloor (V - W_{dense} - KV - O_{gpu}) / X_{layer} \\rfloor$, clipped to $[0, L_{moe}]$.
    """
    base = plan.parts.dense_bytes + plan.vram_kv_bytes + plan.host.vram_runtime_bytes
    n = math.floor((vram_budget_bytes - base) / plan.parts.layer_experts_bytes)
    return max(0, min(plan.parts.moe_layers, n))


def summary_table(plan: OffloadPlan, unit: str = "GB"):
    """param | formula | value, for the memory and the decode time."""
    import pandas as pd

    div = GB if unit == "GB" else GiB
    p = plan.parts
    gpu_t, ram_t = plan.tiers
    rows = [
        ("non-expert weights on GPU", "W_dense", p.dense_bytes / div),
        ("experts kept on GPU", f"N·X_layer, N = {plan.expert_layers_on_gpu}",
         plan.expert_layers_on_gpu * p.layer_experts_bytes / div),
        ("KV cache", "B·T·kv_tok", plan.vram_kv_bytes / div),
        ("GPU runtime overhead", "O_gpu", plan.host.vram_runtime_bytes / div),
        ("VRAM needed", "sum of the above", plan.vram_needed_bytes / div),
        ("experts in RAM", f"(L_moe − N)·X_layer, L_moe = {p.moe_layers}",
         (p.moe_layers - plan.expert_layers_on_gpu) * p.layer_experts_bytes / div),
        ("embedding in RAM", "V·D·bits/8", p.embedding_bytes / div),
        ("host needs beyond weights", "OS + engine + pinned", plan.host.host_extra_bytes / div),
        ("RAM needed", "sum of the three above", plan.ram_needed_bytes / div),
        ("read per token on GPU", "W_dense + N·k·x + KV", gpu_t.read_bytes_per_step / div),
        ("read per token from RAM", "(L_moe − N)·k·x", ram_t.read_bytes_per_step / div),
    ]
    return pd.DataFrame([{"param": a, "formula": b, f"value ({unit})": round(c, 2)} for a, b, c in rows])
