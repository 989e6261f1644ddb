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

import dataclasses
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

#: Guide 004's RAM bandwidth: "Speed is bound by RAM bandwidth (estimated at 70 GB/s)".
GUIDE004_RAM_BW_BYTES_PER_S = 70 * GB


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
                 ram_bandwidth: object = GUIDE004_RAM_BW_BYTES_PER_S, host: HostAssumptions | None = None
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
    bw = parse_bandwidth(ram_bandwidth, "ram_bandwidth")
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


def validate(**params: Any) -> OffloadPlan:
    """The notebook's parameter check: :func:`plan_offload`, with a bad value stopping
    the notebook as one line, ``parameter <name>: <what is wrong>``."""
    from k3lib.views.notebook import ParameterError

    try:
        return plan_offload(**params)
    except K3InputError as exc:
        raise ParameterError(f"parameter {exc}") from None
    except TypeError as exc:
        raise ParameterError(f"parameter error: {exc}") from None


def layers_for_vram(plan: OffloadPlan, vram_budget_bytes: int) -> int:
    """The most expert layers that fit on the GPU within ``vram_budget_bytes`` (0 if even
    the dense part does not).

    $N = \\lfloor (V - W_{dense} - KV - O_{gpu}) / X_{layer} \\rfloor$, clipped to $[0, L_{moe}]$.
    """
    base = plan.parts.dense_bytes + plan.vram_kv_bytes + plan.host.vram_runtime_bytes
    n = math.floor((vram_budget_bytes - base) / plan.parts.layer_experts_bytes)
    return max(0, min(plan.parts.moe_layers, n))


# ---------------------------------------------------------------- tables and curves


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


def offload_curve(*, model: str = "kimi-k3", weights: str = "q4_k_m", gpus: Sequence[str] = ("rtx-4090-48gb",),
                  ram_bandwidth: object = GUIDE004_RAM_BW_BYTES_PER_S, context: object = 8192,
                  kv_dtype: str = "bf16", batch: object = 1, host: HostAssumptions | None = None):
    """Decode tokens/s against the VRAM it takes, as $N = 0 … L_{moe}$ layers' experts
    move to the GPU, for each GPU's bandwidth (as if it had the VRAM). Columns: ``GPU``,
    ``expert layers on GPU``, ``VRAM needed (GB)``, ``decode tokens/s``."""
    import pandas as pd

    rows = []
    for g in gpus:
        base = plan_offload(model=model, weights=weights, gpu=g, ram_bandwidth=ram_bandwidth, context=context,
                            kv_dtype=kv_dtype, batch=batch, host=host)
        for n in range(base.parts.moe_layers + 1):
            p = dataclasses.replace(base, expert_layers_on_gpu=n)
            rows.append({"GPU": base.gpu.name, "expert layers on GPU": n, "VRAM needed (GB)": p.vram_needed_bytes / GB,
                         "decode tokens/s": p.decode_tokens_per_s})
    return pd.DataFrame(rows)


def partial_offload_table(*, gpus: Sequence[str] = ("rtx-4090-48gb", "rtx-pro-6000", "h200"), model: str = "kimi-k3",
                          weights: str = "q4_k_m", ram_bandwidth: object = GUIDE004_RAM_BW_BYTES_PER_S,
                          context: object = 8192, kv_dtype: str = "bf16", host: HostAssumptions | None = None):
    """For each card: how many layers' experts fit beside the dense part
    (:func:`layers_for_vram` with the card's driver-visible memory), and the decode speed
    with none and with that many kept on the GPU."""
    import pandas as pd

    rows = []
    for g in gpus:
        base = plan_offload(model=model, weights=weights, gpu=g, ram_bandwidth=ram_bandwidth, context=context,
                            kv_dtype=kv_dtype, host=host)
        n = layers_for_vram(base, base.vram_available_bytes)
        best = dataclasses.replace(base, expert_layers_on_gpu=n)
        rows.append({"GPU": base.gpu.name, "VRAM (GB)": round(base.vram_available_bytes / GB, 1),
                     "GPU bandwidth (GB/s)": base.gpu.memory_bw_bytes_per_s / GB,
                     "expert layers that fit": n, "VRAM used (GB)": round(best.vram_needed_bytes / GB, 1),
                     "tokens/s, experts all in RAM": round(base.decode_tokens_per_s, 2),
                     "tokens/s, with those layers on GPU": round(best.decode_tokens_per_s, 2)})
    return pd.DataFrame(rows)


def guide004_rows() -> tuple[dict[str, str], ...]:
    """Guide 004's offload table rows from ``data/guide_claims.csv`` (device, t/s, quote)."""
    from k3lib.core.data import read_csv_rows

    return tuple(r for r in read_csv_rows("guide_claims.csv") if r["claim_id"].startswith("g004-offload-tps-"))


def guide004_device_table(*, model: str = "kimi-k3", weights: str = "q4_k_m", context: object = 8192,
                          kv_dtype: str = "bf16", ram_bandwidth: object = GUIDE004_RAM_BW_BYTES_PER_S,
                          host: HostAssumptions | None = None):
    """Guide 004's device table recomputed: for each device the model's decode tokens/s at
    the guide's 70 GB/s RAM (GPU part at the device's own bandwidth), the guide's figure,
    their ratio and difference, and whether the device could hold the RAM side at all."""
    import pandas as pd

    rows = []
    for r in guide004_rows():
        p = plan_offload(model=model, weights=weights, gpu=r["device"], context=context, kv_dtype=kv_dtype,
                         ram_bandwidth=ram_bandwidth, host=host)
        guide = float(r["value"])
        model_tps = p.decode_tokens_per_s
        rows.append({
            "device": r["device"], "catalogue id": p.gpu.id, "VRAM label": f"{p.gpu.memory_marketed_bytes // GiB}GB",
            "GPU bandwidth (GB/s)": p.gpu.memory_bw_bytes_per_s / GB, "unified memory": p.gpu.unified_memory,
            "guide tokens/s": guide, "model tokens/s": round(model_tps, 2),
            "model ÷ guide": round(model_tps / guide, 2), "model − guide (tokens/s)": round(model_tps - guide, 2),
            "VRAM fits": p.fits_vram,
        })
    return pd.DataFrame(rows)


def fit_two_tier_bytes(table, *, ram_bandwidth: object = GUIDE004_RAM_BW_BYTES_PER_S) -> dict[str, float]:
    """What per-token reads would reproduce a table of (GPU bandwidth, tokens/s):
    least squares on $1/\\text{tps} = R/BW_{RAM} + G/BW_{GPU}$ for $R$ and $G$ (bytes).

    Returns ``ram_read_bytes``, ``gpu_read_bytes``, ``rms_error_tokens_per_s`` and
    ``rows_within_0_05`` (rows the fit reproduces to the guide's rounding).
    """
    import numpy as np

    bw = parse_bandwidth(ram_bandwidth, "ram_bandwidth")
    gpu_bw = np.asarray(table["GPU bandwidth (GB/s)"], dtype=float) * GB
    tps = np.asarray(table["guide tokens/s"], dtype=float)
    a = np.column_stack([np.full_like(gpu_bw, 1 / bw), 1 / gpu_bw])
    (r, g), *_ = np.linalg.lstsq(a, 1 / tps, rcond=None)
    fitted = 1 / (a @ np.array([r, g]))
    return {"ram_read_bytes": float(r), "gpu_read_bytes": float(g),
            "rms_error_tokens_per_s": float(np.sqrt(np.mean((fitted - tps) ** 2))),
            "rows_within_0_05": int(np.sum(np.abs(fitted - tps) <= 0.05 + 1e-9)), "rows": int(len(tps))}


def slowdown_table(plan: OffloadPlan, *, all_gpu_tokens_per_s: float,
                   efficiencies: Sequence[float] = (1.0, 0.5, 0.25, 0.1, 0.05)):
    """Offload decode against an all-GPU deployment running at a fraction of its
    bandwidth roofline: slowdown $= e·\\text{tps}_{GPU} / \\text{tps}_{offload}$ (the
    offload side at its own roofline)."""
    import pandas as pd

    off = plan.decode_tokens_per_s
    return pd.DataFrame([{"all-GPU efficiency (share of roofline)": e,
                          "all-GPU tokens/s": round(e * all_gpu_tokens_per_s, 1),
                          "offload tokens/s": round(off, 2),
                          "slowdown (×)": round(e * all_gpu_tokens_per_s / off, 1)} for e in efficiencies])


def all_gpu_decode_tokens_per_s(parallel_plan) -> float:
    """Bandwidth roofline of a :class:`~k3lib.studies.parallel.ParallelPlan` at batch 1: the
    stages run one after another and the TP ranks of a stage in parallel, so
    $t = \\sum_s (\\text{active bytes}_s / TP) / BW = A_{active} / (TP·BW)$ (replicated
    weights ignored: they are small)."""
    spec = parallel_plan.model
    bits = weight_bits_by_group(spec, get_weight_format(parallel_plan.weight_format))
    bit = lambda g: bits.get(g, bits.get("*", 16))  # noqa: E731
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


def ram_platform_table(*, gpu: str = "rtx-4090-48gb", model: str = "kimi-k3", weights: str = "q4_k_m",
                       context: object = 8192, platforms=RAM_PLATFORMS, host: HostAssumptions | None = None):
    """Decode tokens/s in offload mode on each RAM platform, and whether it can hold the
    RAM side at all."""
    import pandas as pd

    rows = []
    for name, mts, ch, max_gb in platforms:
        bw = ddr_bandwidth_bytes_per_s(mt_per_s=mts, channels=ch)
        p = plan_offload(model=model, weights=weights, gpu=gpu, context=context, ram_bandwidth=bw,
                         ram=max_gb * GB, host=host)
        rows.append({"platform": name, "RAM bandwidth (GB/s)": bw / GB, "RAM it takes (GB)": max_gb,
                     "RAM needed (GB)": round(p.ram_needed_bytes / GB, 1), "holds the experts": bool(p.fits_ram),
                     "decode tokens/s": round(p.decode_tokens_per_s, 2)})
    return pd.DataFrame(rows)


def guide004_memory_table(*, model: str = "kimi-k3", weights: str = "q4_k_m", context: object = 8192,
                          kv_dtype: str = "bf16", host: HostAssumptions | None = None):
    """Guide 004's three memory figures next to the model's (GB), with the difference."""
    import pandas as pd

    p = plan_offload(model=model, weights=weights, gpu="rtx-4090-48gb", context=context, kv_dtype=kv_dtype, host=host)
    experts = p.parts.routed_bytes
    rows = [
        ("VRAM in offload mode", 33, p.vram_needed_bytes, "non-expert weights + KV (8K, FP16) + 1 GB runtime"),
        ("RAM: the experts", 1531, experts, "92 layers × 896 experts, Q4_K_M at 4.5 bits"),
        ("RAM: experts + embedding", 1531, p.ram_weights_bytes, "llama.cpp keeps the token embedding in RAM"),
        ("RAM: + OS, engine, pinned buffers", 1531, p.ram_needed_bytes, "host needs: assumptions, see HostAssumptions"),
        ("everything on GPUs", 1562, p.all_gpu_bytes, "all weights + KV + 1 GB"),
    ]
    return pd.DataFrame([{"figure": f, "guide (GB)": g, "model (GB)": round(m / GB, 1),
                          "model − guide (GB)": round(m / GB - g, 1), "what the model counts": w}
                         for f, g, m, w in rows])


def prefill_table(*, gpus: Sequence[str] = ("rtx-4090-48gb", "rtx-pro-6000", "m3-ultra-512gb"),
                  model: str = "kimi-k3", weights: str = "q4_k_m", prompt_tokens: object = 8192,
                  host: HostAssumptions | None = None):
    """Prefill in offload mode: the per-micro-batch host-link and compute times, prefill
    tokens/s, and the seconds a ``prompt_tokens`` prompt takes."""
    import pandas as pd

    n_prompt = parse_context_tokens(prompt_tokens, "prompt_tokens")
    rows = []
    for g in gpus:
        p = plan_offload(model=model, weights=weights, gpu=g, context=n_prompt, host=host)
        link, comp, tps = p.prefill_link_seconds_per_ubatch, p.prefill_compute_seconds_per_ubatch, p.prefill_tokens_per_s
        rows.append({"device": p.gpu.name,
                     "host link (GB/s)": None if p.gpu.unified_memory or not p.gpu.host_link_bytes_per_s
                     else p.gpu.host_link_bytes_per_s / GB,
                     "experts touched per micro-batch": round(p.prefill_fraction_touched, 4),
                     "link s / micro-batch": None if link is None else round(link, 1),
                     "compute s / micro-batch": None if comp is None else round(comp, 2),
                     "prefill tokens/s": None if tps is None else round(tps, 1),
                     f"{n_prompt:,}-token prompt (s)": None if tps is None else round(n_prompt / tps)})
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
        return decode_seconds_per_step([
            Tier("unified memory", self.usable_bytes, self.memory_read_bytes, self.device.memory_bw_bytes_per_s),
            Tier("disk", 0, self.disk_read_bytes, self.disk_bandwidth_bytes_per_s)])

    @property
    def tokens_per_s(self) -> float:
        return 1 / self.seconds_per_token

    @property
    def fits(self) -> bool:
        return self.disk_read_bytes == 0


def unified_memory_estimate(*, model: str = "kimi-k3", weights: str = "q4_k_m", device: str = "m3-ultra-512gb",
                            gpu_share: float = 0.75, disk_bandwidth: object = "6GB/s", context: object = 8192,
                            kv_dtype: str = "bf16", host: HostAssumptions | None = None) -> UnifiedEstimate:
    """Decode on a unified-memory machine: the GPU may wire ``gpu_share`` of the memory
    (macOS defaults to about 75% on large configurations; adjustable), the dense part,
    KV and runtime go there first, then as many experts as fit; the rest of each token's
    active experts are read from disk at ``disk_bandwidth`` (an assumption: a fast
    internal NVMe SSD, about 6 GB/s)."""
    if not 0 < gpu_share <= 1:
        raise K3InputError("gpu_share", f"{gpu_share!r}", "a fraction in (0, 1]")
    p = plan_offload(model=model, weights=weights, gpu=device, context=context, kv_dtype=kv_dtype, host=host)
    parts = p.parts
    usable = int(p.gpu.memory_marketed_bytes * gpu_share)
    base = parts.dense_bytes + parts.embedding_bytes + p.vram_kv_bytes + p.host.vram_runtime_bytes
    room = max(0.0, usable - base)
    share = min(1.0, room / parts.routed_bytes)
    active = parts.moe_layers * parts.active_experts * parts.expert_bytes
    return UnifiedEstimate(device=p.gpu, usable_bytes=usable, model_bytes=p.all_gpu_bytes,
                           resident_expert_share=share,
                           memory_read_bytes=parts.dense_bytes + p.vram_kv_bytes + share * active,
                           disk_read_bytes=(1 - share) * active,
                           disk_bandwidth_bytes_per_s=parse_bandwidth(disk_bandwidth, "disk_bandwidth"))


def mac_studio_table(*, device: str = "m3-ultra-512gb", disk_bandwidth: object = "6GB/s",
                     gpu_shares: Sequence[float] = (0.75, 0.95), guide_q4_weights_bytes: int = 325 * GiB,
                     guide_active_params: int = 104 * 10**9, guide_bits_per_weight: float = 4.5):
    """Guide 000's FAQ: "a Mac Studio with 512 GB can attempt Q4 … well under 1 tok/s".
    Rows: the real model with the GPU allowed each share of memory (the rest of the
    experts read from disk), and guide 000's own Q4 figure (325, which fits), read at the
    machine's bandwidth with guide 004's 104B active parameters."""
    import pandas as pd

    rows = []
    for share in gpu_shares:
        u = unified_memory_estimate(device=device, gpu_share=share, disk_bandwidth=disk_bandwidth)
        rows.append({"case": f"real K3, Q4_K_M, GPU may use {share:.0%} of memory",
                     "model size (GB)": round(u.model_bytes / GB), "memory for it (GB)": round(u.usable_bytes / GB),
                     "experts resident": round(u.resident_expert_share, 3),
                     "read from memory per token (GB)": round(u.memory_read_bytes / GB, 1),
                     "read from disk per token (GB)": round(u.disk_read_bytes / GB, 1),
                     "decode tokens/s": round(u.tokens_per_s, 2)})
    dev = get_gpu(device)
    read = guide_active_params * guide_bits_per_weight / 8
    rows.append({"case": "guide 000's Q4 figure (325), all resident; guide 004's 104B active",
                 "model size (GB)": round(guide_q4_weights_bytes / GB), "memory for it (GB)": round(
                     dev.memory_marketed_bytes / GB), "experts resident": 1.0,
                 "read from memory per token (GB)": round(read / GB, 1), "read from disk per token (GB)": 0.0,
                 "decode tokens/s": round(dev.memory_bw_bytes_per_s / read, 2)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- widget callback


def offload_figure(*, gpu: str = "rtx-4090-48gb", ram: object = "1536GB", ram_bandwidth: object = "70GB/s",
                   expert_layers_on_gpu: int = 0, model: str = "kimi-k3", weights: str = "q4_k_m",
                   context: object = 8192, kv_dtype: str = "bf16"):
    """The explorer's callback: a bar of milliseconds per token by device (GPU vs RAM),
    titled with VRAM, RAM and tokens/s."""
    import pandas as pd

    from k3lib.views.charts_parallel import time_per_token_bar

    p = plan_offload(model=model, weights=weights, gpu=gpu, ram=ram, ram_bandwidth=ram_bandwidth,
                     expert_layers_on_gpu=expert_layers_on_gpu, context=context, kv_dtype=kv_dtype)
    df = pd.DataFrame([{"where": t.name, "ms per token": t.seconds_per_step * 1e3,
                        "GB read per token": t.read_bytes_per_step / GB} for t in p.tiers])
    return time_per_token_bar(df, title=p.verdict())
