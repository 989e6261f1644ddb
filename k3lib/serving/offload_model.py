"""Offload mode: a MoE model's routed experts in system RAM, everything else on the GPU
(guide 004's mode, llama.cpp's ``-ot exps=CPU``), or the experts of $N$ layers kept on
the GPU too (partial offload).

**Memory** (bytes):

$$VRAM = W_{dense} + N·X_{layer} + KV + A + O_{gpu} \\qquad RAM = (L_{moe}-N)·X_{layer} + W_{emb} + H$$

$W_{dense}$ is every non-expert weight except the token embedding (attention, shared
experts, dense MLP, routers, norms, LM head); $X_{layer}$ one layer's routed experts;
the embedding stays in RAM (llama.cpp keeps ``token_embd`` on the CPU: one row is read
per token); $A$ and $O_{gpu}$ are the core's activation and per-GPU overhead
(:func:`k3lib.core.memory.activation_bytes`, :func:`k3lib.core.memory.overhead_bytes_per_gpu`
under :class:`k3lib.core.plan.Assumptions`, as :func:`k3lib.core.plan.make_plan` has them);
$H$ is the host's needs beyond weights (:class:`HostAssumptions`).

**Unified memory** (GB10/DGX Spark, Apple M-series, Strix Halo): there is one pool, so
"VRAM" and "RAM" come out of the same memory: the plan loads when
$VRAM + RAM \\le$ the machine's memory, and both tiers read at the pool's bandwidth.

**Host bandwidth** comes from the host (``data/hosts.csv``: channels × MT/s × 8 B), or
``ram_bandwidth``; without either it is guide 004's 70 GB/s, labelled as an assumption
(:attr:`OffloadPlan.ram_bandwidth_basis`).

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
>>> round(p.vram_needed_bytes / 1e9), round(p.ram_weights_bytes / 1e9)   # guide 004: 33 GB (1 GB runtime, no activation)
(37, 1532)
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.hosts import HostSpec, get_host
from k3lib.core.memory import activation_bytes, kv_cache_bytes, overhead_bytes_per_gpu, weight_bits_by_group
from k3lib.core.models import ModelSpec, PublishedProfile, get_model, get_profile
from k3lib.core.plan import Assumptions, fixed_overhead
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import GB, GiB, parse_context_tokens, parse_count, parse_positive_int, parse_size_bytes


def guide004_ram_bandwidth_bytes_per_s() -> int:
    """Guide 004's "Speed is bound by RAM bandwidth (estimated at 70 GB/s)", read from its
    profile (``data/profiles/kimi-k3@guide-004.json``, ``offload.ram_bandwidth_gb_s``)."""
    return int(round(get_profile("kimi-k3@guide-004").raw["offload"]["ram_bandwidth_gb_s"] * GB))


def __getattr__(name: str):  # the old constant's name, read from the profile on use
    if name == "GUIDE004_RAM_BW_BYTES_PER_S":
        return guide004_ram_bandwidth_bytes_per_s()
    raise AttributeError(name)


@dataclass(frozen=True)
class HostAssumptions:
    """What offload mode needs on the host besides the weights — stated assumptions, not
    measurements. (The GPU side's activation and overhead are the core's:
    :class:`k3lib.core.plan.Assumptions`.)

    * ``os_bytes``: the operating system, services and page tables (8 GB).
    * ``engine_bytes``: the engine process on the CPU side — compute buffers, tokenizer,
      Python (4 GB).
    * ``pinned_staging_bytes``: page-locked buffers for host→GPU copies (2 GB).
    * ``ubatch_tokens``: prefill micro-batch (llama.cpp ``-ub`` default 512).
    * ``state_bytes_per_element``: linear-attention state dtype (FP32).
    """

    os_bytes: int = 8 * GB
    engine_bytes: int = 4 * GB
    pinned_staging_bytes: int = 2 * GB
    ubatch_tokens: int = 512
    state_bytes_per_element: float = 4.0

    def __post_init__(self) -> None:
        for name in ("os_bytes", "engine_bytes", "pinned_staging_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise K3InputError(name, f"{v!r} must be a non-negative byte count")
        if isinstance(self.ubatch_tokens, bool) or not isinstance(self.ubatch_tokens, int) or self.ubatch_tokens < 1:
            raise K3InputError("ubatch_tokens", f"{self.ubatch_tokens!r} must be a whole number ≥ 1")

    @property
    def host_extra_bytes(self) -> int:
        """RAM needed beyond the weights: OS + engine + pinned buffers."""
        return self.os_bytes + self.engine_bytes + self.pinned_staging_bytes


#: Guide 004's own GPU-side arithmetic ("+ 1GB runtime overhead", no activation), for the
#: tables that reproduce the guide; every other plan uses the core's rule (``Assumptions()``).
GUIDE004_GPU_ASSUMPTIONS = Assumptions(activation_bytes=0, overhead_per_gpu_bytes=GB)


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

    dense_bytes: int  # non-expert weights except the embedding (resident on the GPU)
    embedding_bytes: int  # token embedding (stays in RAM)
    expert_bytes: float  # one routed expert of one layer
    experts_per_layer: int  # E
    active_experts: int  # k
    moe_layers: int  # L_moe
    embedding_row_bytes: float  # one embedding row, read per token

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


def moe_bytes(model: str | ModelSpec, weights: str) -> MoEBytes:
    """Split ``model``'s weights for offload mode, from
    :meth:`~k3lib.core.architecture.Architecture.param_groups` and the format's bits."""
    spec = get_model(model)
    if not isinstance(spec, Architecture):
        raise K3InputError(
            "model", f"{spec.id} is a guide profile without layer shapes; offload needs an architecture", "e.g. kimi-k3"
        )
    if not spec.mlp.moe_layers:
        raise K3InputError("model", f"{spec.name} is dense: it has no experts to offload", "a MoE model")
    bits = weight_bits_by_group(spec, get_weight_format(weights))

    def bit(g: str) -> float:
        return bits.get(g, bits.get("*", 16))

    groups = spec.param_groups()
    dense = sum(n * bit(g) / 8 for g, n in groups.items() if g not in ("embedding", "routed_experts"))
    m = spec.mlp
    return MoEBytes(
        dense_bytes=int(math.ceil(dense)),
        embedding_bytes=int(math.ceil(groups["embedding"] * bit("embedding") / 8)),
        expert_bytes=m.expert_params(spec.hidden_size) * bit("routed_experts") / 8,
        experts_per_layer=m.n_routed_experts,
        active_experts=m.experts_per_token,
        moe_layers=m.moe_layers,
        embedding_row_bytes=spec.hidden_size * bit("embedding") / 8,
    )


# ---------------------------------------------------------------- the user's own file


def moe_bytes_exact(loaded, arch: Architecture) -> MoEBytes:
    """Split a weight file's exact tensor bytes (``LoadedModel.weights_bytes_by_group``) the way
    offload mode does: routed experts, the embedding, and every other group but the vision
    tower and MTP layers as the dense part; one expert = routed ÷ ($L_{moe}·E$)."""
    groups = dict(loaded.weights_bytes_by_group)
    m = arch.mlp
    if not groups.get("routed_experts"):
        raise K3InputError("model", f"{loaded.source}: the file has no routed-expert tensors to offload", "a MoE model")
    emb = groups.get("embedding", 0)
    dense = sum(b for g, b in groups.items() if g not in ("routed_experts", "embedding", "vision", "mtp"))
    return MoEBytes(
        dense_bytes=dense,
        embedding_bytes=emb,
        expert_bytes=groups["routed_experts"] / (m.moe_layers * m.n_routed_experts),
        experts_per_layer=m.n_routed_experts,
        active_experts=m.experts_per_token,
        moe_layers=m.moe_layers,
        embedding_row_bytes=emb / arch.vocab_size,
    )


def model_parts(model: object, weights: str | None) -> tuple[Architecture, MoEBytes, str, tuple[str, ...]]:
    """(architecture, offload split, weight label, notes) for a built-in id, an
    :class:`Architecture`, or a :class:`~k3lib.loaders.LoadedModel` (the user's
    ``config.json``/safetensors/GGUF: its exact file bytes at ``weights`` None/"native")."""
    from k3lib.loaders import LoadedModel

    if isinstance(model, LoadedModel):
        arch = model.require_architecture()
        native = weights is None or str(weights).lower() in ("native", "checkpoint", "auto")
        if native and model.exact:
            if not arch.mlp.moe_layers:
                raise K3InputError("model", f"{arch.name} is dense: it has no experts to offload", "a MoE model")
            return (
                arch,
                moe_bytes_exact(model, arch),
                "native",
                (f"weights: exact bytes of {model.tensor_count:,} tensors in {model.source}",),
            )
        fmt = get_weight_format("native" if weights is None else weights)
        return arch, moe_bytes(arch, fmt.id), fmt.id, ()
    if not isinstance(model, (str, Architecture, PublishedProfile)):
        raise K3InputError("model", f"{model!r} is not a model name", "a name from `k3plan models`, or a loaded file")
    spec = get_model(model)
    fmt = get_weight_format("q4_k_m" if weights is None else weights)
    split = moe_bytes(spec, fmt.id)  # a guide profile (no layer shapes) is refused there
    assert isinstance(spec, Architecture)
    return spec, split, fmt.id, ()


# ---------------------------------------------------------------- host bandwidth


@dataclass(frozen=True)
class RamBandwidth:
    """Where the host tier's bandwidth comes from: ``basis`` is the sentence shown on screen
    and in JSON; ``assumed`` is True only for guide 004's figure used for want of a host."""

    bytes_per_s: int
    basis: str
    assumed: bool


def resolve_ram_bandwidth(*, gpu: GPUSpec, host: HostSpec | None, ram_bandwidth: object) -> RamBandwidth:
    """The host tier's bandwidth, first match wins: a unified-memory machine's one pool
    (``memory_bw_gb_s`` of its hardware row); ``ram_bandwidth`` as given; the host's
    channels × MT/s × 8 B; else guide 004's 70 GB/s, **labelled as assumed**. Empty text and
    options that do not apply (a bandwidth or a separate host for a unified machine) are
    named errors."""
    if isinstance(ram_bandwidth, str) and not ram_bandwidth.strip():
        raise K3InputError("ram_bandwidth", "is empty", "a bandwidth such as 460GB/s, or leave the option out")
    if gpu.unified_memory:
        if ram_bandwidth is not None:
            raise K3InputError(
                "ram_bandwidth",
                f"{gpu.name} has unified memory: its experts are read at the one "
                f"pool's {gpu.memory_bw_bytes_per_s / GB:,.0f} GB/s",
                "leave --ram-bandwidth out",
            )
        if host is not None and host.hardware_id != gpu.id:
            raise K3InputError(
                "host", f"{gpu.name} has unified memory: it is its own host, not {host.id}", "leave --host out"
            )
        return RamBandwidth(
            gpu.memory_bw_bytes_per_s,
            f"unified memory: the one pool's {gpu.memory_bw_bytes_per_s / GB:,.1f} GB/s ({gpu.id})",
            False,
        )
    if host is not None and host.unified_memory:
        raise K3InputError(
            "host",
            f"{host.id} is a unified-memory machine, not a host for a {gpu.name}",
            f"--gpu {host.hardware_id} (and no --host)",
        )
    if ram_bandwidth is not None:
        bw = parse_bandwidth(ram_bandwidth, "ram_bandwidth")
        peak = f"; host {host.id}'s peak is {host.memory_bw_bytes_per_s / GB:,.1f} GB/s" if host else ""
        return RamBandwidth(bw, f"given: {bw / GB:,.1f} GB/s (--ram-bandwidth){peak}", False)
    if host is not None:
        return RamBandwidth(host.memory_bw_bytes_per_s, host.bandwidth_basis, False)
    bw = guide004_ram_bandwidth_bytes_per_s()
    return RamBandwidth(
        bw,
        f"assumed: guide 004's {bw / GB:,.0f} GB/s (no --host or --ram-bandwidth given; hosts in data/hosts.csv)",
        True,
    )


def parse_expert_layers(value: object, moe_layers: int) -> int:
    """``--expert-layers-on-gpu`` as a count: ASCII digits like every other count, 0 allowed,
    at most ``moe_layers`` (:func:`k3lib.core.units.parse_count`)."""
    return parse_count(
        value,
        "expert_layers_on_gpu",
        minimum=0,
        maximum=moe_layers,
        allowed=f"a whole number from 0 to {moe_layers} (the model's MoE layers), ASCII digits",
    )


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class OffloadPlan:
    """A MoE model in offload mode on ``gpus`` GPUs (llama.cpp's layer split) or one
    unified-memory machine, plus host memory.

    Sizes in bytes, bandwidths in bytes/s, times in seconds. ``ram_available_bytes`` is
    None when the RAM size was not given (and on a unified-memory machine, whose one pool
    is ``vram_available_bytes``).
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
    assumptions: Assumptions = field(default_factory=Assumptions, repr=False)
    vram_activation_bytes: int = 0
    gpus: int = 1
    ram_bandwidth_basis: str = ""
    ram_bandwidth_assumed: bool = False
    host_platform: HostSpec | None = field(default=None, repr=False)
    moe_block_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.expert_layers_on_gpu <= self.parts.moe_layers:
            raise K3InputError(
                "expert_layers_on_gpu",
                f"{self.expert_layers_on_gpu!r}",
                f"0 … {self.parts.moe_layers} (the model's MoE layers)",
            )

    # -- memory
    @property
    def unified(self) -> bool:
        """One pool: the GPU side and the host side share the machine's memory."""
        return self.gpu.unified_memory

    @property
    def vram_weights_bytes(self) -> int:
        """$W_{dense} + N·X_{layer}$."""
        return int(self.parts.dense_bytes + math.ceil(self.expert_layers_on_gpu * self.parts.layer_experts_bytes))

    @property
    def vram_payload_bytes(self) -> int:
        """What the GPUs hold besides the runtime: $W_{dense} + N·X_{layer} + KV + A$."""
        return self.vram_weights_bytes + self.vram_kv_bytes + self.vram_activation_bytes

    @property
    def vram_overhead_per_gpu_bytes(self) -> int:
        """The core's per-GPU overhead (:func:`k3lib.core.memory.overhead_bytes_per_gpu`):
        $C_{ctx} + \\lfloor f·\\lceil P/G \\rceil \\rfloor$ (no communicator buffers: llama.cpp's
        layer split does not all-reduce), or an assumption's fixed figure."""
        fixed = fixed_overhead(self.model, self.assumptions, gpus=self.gpus)
        if fixed is not None:
            return fixed[0]
        a = self.assumptions
        return overhead_bytes_per_gpu(
            tp=1,
            payload_bytes_per_gpu=-(-self.vram_payload_bytes // self.gpus),
            cuda_context_bytes=a.cuda_context_bytes,
            fragmentation_fraction=a.fragmentation_fraction,
        )

    @property
    def vram_overhead_bytes(self) -> int:
        """Overhead over all the GPUs: $G·O_{gpu}$."""
        return self.gpus * self.vram_overhead_per_gpu_bytes

    @property
    def vram_needed_bytes(self) -> int:
        """Weights on the GPUs + KV cache + activation + runtime overhead (all GPUs)."""
        return self.vram_payload_bytes + self.vram_overhead_bytes

    @property
    def vram_per_gpu_bytes(self) -> int:
        """One GPU's share: $\\lceil P/G \\rceil + O_{gpu}$ (layers spread evenly)."""
        return -(-self.vram_payload_bytes // self.gpus) + self.vram_overhead_per_gpu_bytes

    @property
    def vram_per_gpu_available_bytes(self) -> int:
        """One device's memory on the plan's basis (driver-visible where known)."""
        return self.gpu.memory_bytes(self.assumptions.memory_basis or "usable")

    @property
    def vram_available_bytes(self) -> int:
        """The GPUs' memory together (a unified machine: its one pool)."""
        return self.gpus * self.vram_per_gpu_available_bytes

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
    def pool_needed_bytes(self) -> int:
        """Unified memory: both sides from one pool, $VRAM + RAM$."""
        return self.vram_needed_bytes + self.ram_needed_bytes

    @property
    def all_gpu_bytes(self) -> int:
        """Everything on one GPU instead: all weights + KV + activation + the core's overhead."""
        payload = int(
            self.parts.dense_bytes
            + self.parts.embedding_bytes
            + math.ceil(self.parts.routed_bytes)
            + self.vram_kv_bytes
            + self.vram_activation_bytes
        )
        fixed = fixed_overhead(self.model, self.assumptions, gpus=1)
        a = self.assumptions
        oh = (
            fixed[0]
            if fixed is not None
            else overhead_bytes_per_gpu(
                tp=1,
                payload_bytes_per_gpu=payload,
                cuda_context_bytes=a.cuda_context_bytes,
                fragmentation_fraction=a.fragmentation_fraction,
            )
        )
        return payload + oh

    @property
    def fits_gpu_side(self) -> bool:
        """The GPU side alone fits one device's memory (on a unified machine this ignores
        that the host side shares the pool: see :attr:`fits_vram`)."""
        return self.vram_per_gpu_bytes <= self.vram_per_gpu_available_bytes

    @property
    def fits_vram(self) -> bool:
        """Discrete GPUs: each GPU's share fits. Unified memory: $VRAM + RAM$ fits the one pool."""
        if self.unified:
            return self.pool_needed_bytes <= self.vram_available_bytes
        return self.fits_gpu_side

    @property
    def fits_ram(self) -> bool | None:
        """None when no RAM size was given or there is no separate RAM (unified memory)."""
        return None if self.ram_available_bytes is None else self.ram_needed_bytes <= self.ram_available_bytes

    @property
    def problems(self) -> tuple[str, ...]:
        """What stops this plan from loading (empty when it loads)."""
        out = []
        if self.context_tokens > self.model.max_context_tokens:
            out.append(
                f"context {self.context_tokens:,} tokens exceeds the model's maximum of "
                f"{self.model.max_context_tokens:,}"
            )
        if self.unified and not self.fits_vram:
            out.append(
                f"unified memory: {self.pool_needed_bytes / GB:,.1f} GB needed in one pool "
                f"({self.vram_needed_bytes / GB:,.1f} GB GPU side + {self.ram_needed_bytes / GB:,.1f} GB "
                f"host side), {self.vram_available_bytes / GB:,.1f} GB in the machine"
            )
        elif not self.fits_vram:
            each = f" per GPU ({self.gpus} GPUs)" if self.gpus > 1 else ""
            out.append(
                f"VRAM: {self.vram_per_gpu_bytes / GB:,.1f} GB needed{each}, "
                f"{self.vram_per_gpu_available_bytes / GB:,.1f} GB available"
            )
        if self.fits_ram is False and self.ram_available_bytes is not None:
            out.append(
                f"RAM: {self.ram_needed_bytes / GB:,.0f} GB needed, {self.ram_available_bytes / GB:,.0f} GB available"
            )
        return tuple(out)

    @property
    def fits(self) -> bool:
        """Loads: VRAM (or the one pool) and, when given, RAM suffice and the context is
        within the model's maximum."""
        return not self.problems

    # -- decode
    @property
    def tiers(self) -> tuple[Tier, Tier]:
        """(GPU, host) with the bytes each reads per decode step; on a unified machine both
        read the one pool at its bandwidth."""
        p, n = self.parts, self.expert_layers_on_gpu
        active = p.distinct_experts(self.batch) * p.expert_bytes
        gpu_read = p.dense_bytes + n * active + self.vram_kv_bytes
        ram_read = (p.moe_layers - n) * active + self.batch * p.embedding_row_bytes
        name = "unified memory" if self.unified else "GPU memory"
        host_name = "unified memory (host side)" if self.unified else "system RAM"
        return (
            Tier(name, self.vram_weights_bytes + self.vram_kv_bytes, gpu_read, self.gpu.memory_bw_bytes_per_s),
            Tier(host_name, self.ram_weights_bytes, ram_read, self.ram_bandwidth_bytes_per_s),
        )

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
        if self.unified or not self.gpu.host_link_bytes_per_s:
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
        times = [
            t for t in (self.prefill_link_seconds_per_ubatch, self.prefill_compute_seconds_per_ubatch) if t is not None
        ]
        return self.host.ubatch_tokens / max(times) if times else None

    # -- llama.cpp flags
    @property
    def cpu_moe_layers(self) -> int:
        """MoE layers whose routed experts stay in host memory: $L_{moe} - N$."""
        return self.parts.moe_layers - self.expert_layers_on_gpu

    @property
    def cpu_moe_block_ids(self) -> tuple[int, ...]:
        """llama.cpp block indices (``blk.i``) of those layers: the first $L_{moe}-N$ MoE
        blocks, as ``--n-cpu-moe`` takes them from the front."""
        return self.moe_block_ids[: self.cpu_moe_layers]

    @property
    def n_cpu_moe(self) -> int:
        """``--n-cpu-moe K``: llama.cpp keeps ``ffn_*_exps`` of blocks 0 … K−1 on the CPU, so
        $K$ = (last offloaded MoE block) + 1 (dense blocks among them have no experts); 0 when
        every expert is on the GPU."""
        ids = self.cpu_moe_block_ids
        return ids[-1] + 1 if ids else 0

    @property
    def llamacpp_override_tensor(self) -> str | None:
        """The same placement as one ``-ot`` pattern naming the blocks:
        ``blk\\.(i|j|…)\\.ffn_(up|down|gate)_exps=CPU``; None when nothing is offloaded."""
        ids = self.cpu_moe_block_ids
        if not ids:
            return None
        return "blk\\.(" + "|".join(str(i) for i in ids) + ")\\.ffn_(up|down|gate)_exps=CPU"

    @property
    def llamacpp_args(self) -> tuple[str, ...]:
        """The llama.cpp flags this plan was computed with: ``-ngl 999`` (every layer on the
        GPU), ``--n-cpu-moe K`` for the experts in host memory, ``-c`` = context × batch shared
        by ``-np`` batch slots, ``--split-mode layer`` over several GPUs."""
        args = ["-ngl", "999"]
        if self.n_cpu_moe:
            args += ["--n-cpu-moe", str(self.n_cpu_moe)]
        args += ["-c", str(self.context_tokens * self.batch)]
        if self.batch > 1:
            args += ["-np", str(self.batch)]
        if self.gpus > 1:
            args += ["--split-mode", "layer"]
        return tuple(args)

    @property
    def llamacpp_flags(self) -> str:
        """:attr:`llamacpp_args` as shell text."""
        return " ".join(shlex.quote(a) for a in self.llamacpp_args)

    # -- output
    def verdict(self) -> str:
        """One line: FITS or DOES NOT FIT, VRAM, RAM, and tokens/s only for a plan that loads."""
        if self.unified:
            head = (
                f"{'FITS' if self.fits else 'DOES NOT FIT'} — {self.gpu.name} (unified memory, one pool): "
                f"{self.pool_needed_bytes / GB:,.1f} GB of {self.vram_available_bytes / GB:,.1f} GB"
                f"{'' if self.fits_vram else ' — NOT ENOUGH'} (GPU side {self.vram_needed_bytes / GB:,.1f} GB, "
                f"host side {self.ram_needed_bytes / GB:,.1f} GB)"
            )
        else:
            ram = (
                ""
                if self.ram_available_bytes is None
                else f" of {self.ram_available_bytes / GB:,.0f} GB{'' if self.fits_ram else ' — NOT ENOUGH'}"
            )
            gpus = f"{self.gpus} × " if self.gpus > 1 else ""
            head = (
                f"{'FITS' if self.fits else 'DOES NOT FIT'} — {gpus}{self.gpu.name}: VRAM "
                f"{self.vram_needed_bytes / GB:,.1f} GB of {self.vram_available_bytes / GB:,.1f} GB"
                f"{'' if self.fits_vram else ' — NOT ENOUGH'}, RAM {self.ram_needed_bytes / GB:,.0f} GB{ram}"
            )
        if not self.fits:
            return head + "; no tokens/s: the plan cannot load (" + "; ".join(self.problems) + ")"
        return head + f"; decode ≈ {self.decode_tokens_per_s:,.2f} tokens/s"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (bytes, bytes/s, seconds) — what ``k3plan offload --json`` prints. Speeds
        and times are null for a plan that does not load."""
        gpu_t, ram_t = self.tiers
        fits = self.fits
        return {
            "model": self.model.id,
            "gpu": self.gpu.id,
            "gpus": self.gpus,
            "weights": self.weight_format,
            "kv_dtype": self.kv_dtype,
            "context_tokens": self.context_tokens,
            "batch": self.batch,
            "expert_layers_on_gpu": self.expert_layers_on_gpu,
            "moe_layers": self.parts.moe_layers,
            "unified_memory": self.unified,
            "vram_weights_bytes": self.vram_weights_bytes,
            "vram_kv_bytes": self.vram_kv_bytes,
            "vram_activation_bytes": self.vram_activation_bytes,
            "vram_overhead_bytes": self.vram_overhead_bytes,
            "vram_needed_bytes": self.vram_needed_bytes,
            "vram_per_gpu_bytes": self.vram_per_gpu_bytes,
            "vram_available_bytes": self.vram_available_bytes,
            "fits_vram": self.fits_vram,
            "ram_weights_bytes": self.ram_weights_bytes,
            "ram_extra_bytes": self.host.host_extra_bytes,
            "ram_needed_bytes": self.ram_needed_bytes,
            "ram_available_bytes": self.ram_available_bytes,
            "pool_needed_bytes": self.pool_needed_bytes if self.unified else None,
            "fits_ram": self.fits_ram,
            "all_gpu_bytes": self.all_gpu_bytes,
            "host": self.host_platform.id if self.host_platform else None,
            "ram_bandwidth_bytes_per_s": self.ram_bandwidth_bytes_per_s,
            "ram_bandwidth_basis": self.ram_bandwidth_basis,
            "ram_bandwidth_assumed": self.ram_bandwidth_assumed,
            "gpu_bandwidth_bytes_per_s": self.gpu.memory_bw_bytes_per_s,
            "gpu_read_bytes_per_step": gpu_t.read_bytes_per_step,
            "ram_read_bytes_per_step": ram_t.read_bytes_per_step,
            "decode_seconds_per_step": self.decode_seconds_per_step if fits else None,
            "decode_tokens_per_s": self.decode_tokens_per_s if fits else None,
            "prefill_tokens_per_s": self.prefill_tokens_per_s if fits else None,
            "llamacpp_args": list(self.llamacpp_args),
            "n_cpu_moe": self.n_cpu_moe,
            "llamacpp_override_tensor": self.llamacpp_override_tensor,
            "fits": fits,
            "problems": list(self.problems),
            "verdict": self.verdict(),
            "notes": list(self.notes),
        }


def render_text(plan: OffloadPlan, unit: str = "GB") -> str:
    """A readable report for ``k3plan offload``: the memory split, the per-token reads, the
    host bandwidth and where it comes from, and the decode/prefill speeds (only for a plan
    that loads; sizes in ``unit``, GB or GiB).

    >>> print(render_text(plan_offload(gpu="rtx-4090-48gb", ram="2TB", host="xeon-5th-gen")).splitlines()[-1])
    decode ≈ 9.26 tokens/s (theoretical ceiling: the bandwidth roofline); prefill ≈ 10.7 tokens/s over the host link
    """
    table = summary_table(plan, unit)
    width = max(len(p) for p in table["param"])
    gpus = f"{plan.gpus} × " if plan.gpus > 1 else ""
    lines = [
        f"{plan.model.name} · weights {plan.weight_format} · KV {plan.kv_dtype} · "
        f"context {plan.context_tokens:,} tokens · batch {plan.batch} · {gpus}{plan.gpu.name}",
        f"experts of {plan.expert_layers_on_gpu} of {plan.parts.moe_layers} MoE layers on the GPU; "
        f"host memory bandwidth {plan.ram_bandwidth_bytes_per_s / GB:,.1f} GB/s — {plan.ram_bandwidth_basis}",
    ]
    lines += [f"{r['param']:<{width}}  {r[f'value ({unit})']:>12,.2f} {unit}" for _, r in table.iterrows()]
    lines.append(plan.verdict())
    lines += [f"note: {n}" for n in plan.notes]
    if not plan.fits:
        return "\n".join(lines)
    lines.append(f"llama.cpp: llama-server {plan.llamacpp_flags}")
    pre = plan.prefill_tokens_per_s
    lines.append(
        f"decode ≈ {plan.decode_tokens_per_s:,.2f} tokens/s (theoretical ceiling: the bandwidth roofline); "
        + (
            f"prefill ≈ {pre:,.1f} tokens/s over the host link"
            if pre and plan.prefill_link_seconds_per_ubatch
            else f"prefill ≈ {pre:,.1f} tokens/s (compute-bound)"
            if pre
            else "prefill: not modelled"
        )
    )
    return "\n".join(lines)


def _host_args(host: object, host_needs: HostAssumptions | None) -> tuple[HostSpec | None, HostAssumptions]:
    """``host`` is a catalogue host (id or :class:`HostSpec`) or, as older callers pass it,
    a :class:`HostAssumptions`; ``host_needs`` names the latter explicitly."""
    if isinstance(host, HostAssumptions):
        if host_needs is not None:
            raise K3InputError("host", "give the host's needs once (host_needs)")
        return None, host
    if host is not None and not isinstance(host, (str, HostSpec)):
        raise K3InputError("host", f"{host!r} is not a host", "an id from data/hosts.csv")
    return (None if host is None else get_host(host)), host_needs or HostAssumptions()


def moe_block_ids(spec: Architecture) -> tuple[int, ...]:
    """llama.cpp block indices of the MoE layers: the architecture's own list where it has
    one (``moe_layer_indices``), else dense layers first (``first_k_dense_replace``)."""
    ids = getattr(spec, "moe_layer_indices", None)
    if ids:
        return tuple(ids)
    return tuple(range(spec.mlp.dense_layers, spec.mlp.dense_layers + spec.mlp.moe_layers))


def plan_offload(
    *,
    model: object = "kimi-k3",
    weights: str | None = "q4_k_m",
    gpu: str | GPUSpec = "rtx-4090-48gb",
    kv_dtype: str = "bf16",
    context: object = 8192,
    batch: object = 1,
    expert_layers_on_gpu: object = 0,
    ram: object = None,
    ram_bandwidth: object = None,
    host: object = None,
    gpus: object = 1,
    assumptions: Assumptions | None = None,
    host_needs: HostAssumptions | None = None,
) -> OffloadPlan:
    """Validate inputs and build an :class:`OffloadPlan`. ``model`` is a built-in id, an
    :class:`Architecture` or a :class:`~k3lib.loaders.LoadedModel` (``weights`` None or
    "native": the file's exact bytes). ``host`` is a ``data/hosts.csv`` id (its bandwidth
    is the RAM tier's unless ``ram_bandwidth`` is given). Sizes may be strings
    (``"1536GB"``, ``"70GB/s"``); empty text and bad input raise
    :class:`~k3lib.core.errors.K3InputError` naming the field."""
    spec, parts, weight_id, notes0 = model_parts(model, weights)
    hw = gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
    kvd = get_kv_dtype(kv_dtype)
    ctx = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    n_gpus = parse_positive_int(gpus, "gpus")
    if hw.unified_memory and n_gpus != 1:
        raise K3InputError("gpus", f"{n_gpus}: {hw.name} is one unified-memory machine", "1")
    n = parse_expert_layers(expert_layers_on_gpu, parts.moe_layers)
    platform, needs = _host_args(host, host_needs)
    if isinstance(ram, str) and not ram.strip():
        raise K3InputError("ram", "is empty", "a size such as 1536GB, or leave the option out")
    ram_b = None if ram is None else parse_size_bytes(ram, "ram")
    if ram_b is not None and hw.unified_memory:
        raise K3InputError(
            "ram",
            f"{hw.name} has unified memory: its {hw.memory_marketed_bytes / GiB:,.0f} GiB is "
            "the one pool for both sides",
            "leave --ram out",
        )
    if ram_b is not None and platform is not None and ram_b > platform.max_memory_bytes:
        raise K3InputError(
            "ram",
            f"{ram_b / GB:,.0f} GB is more than {platform.name} takes ({platform.max_memory_bytes / GB:,.0f} GB)",
            f"at most {platform.max_memory_bytes / GB:,.0f}GB",
        )
    bw = resolve_ram_bandwidth(gpu=hw, host=platform, ram_bandwidth=ram_bandwidth)
    a = assumptions or Assumptions(state_bytes_per_element=needs.state_bytes_per_element)
    kv = kv_cache_bytes(
        spec, context_tokens=ctx, batch=n_batch, kv_dtype=kvd, state_bytes_per_element=a.state_bytes_per_element
    )
    act = (
        a.activation_bytes
        if a.activation_bytes is not None
        else activation_bytes(spec, batch=n_batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
    )
    notes = list(notes0)
    if hw.unified_memory:
        notes.append(
            f"{hw.name} has unified memory: one pool of {hw.memory_marketed_bytes / GiB:,.0f} GiB holds the "
            "GPU side and the host side together"
        )
    if n_gpus > 1:
        notes.append(
            f"layers spread evenly over {n_gpus} GPUs (llama.cpp --split-mode layer); per-layer "
            "granularity is not modelled"
        )
    return OffloadPlan(
        model=spec,
        gpu=hw,
        weight_format=weight_id,
        kv_dtype=kvd.id,
        context_tokens=ctx,
        batch=n_batch,
        expert_layers_on_gpu=n,
        parts=parts,
        ram_bandwidth_bytes_per_s=bw.bytes_per_s,
        ram_available_bytes=ram_b,
        host=needs,
        vram_kv_bytes=kv,
        notes=tuple(notes),
        assumptions=a,
        vram_activation_bytes=act,
        gpus=n_gpus,
        ram_bandwidth_basis=bw.basis,
        ram_bandwidth_assumed=bw.assumed,
        host_platform=platform,
        moe_block_ids=moe_block_ids(spec),
    )


def best_offload_plan(
    *,
    model: object,
    gpu: str | GPUSpec,
    gpus: object = 1,
    weights: str | None = None,
    kv_dtype: str = "bf16",
    context: object = 8192,
    batch: object = 1,
    host: object = None,
    ram: object = None,
    ram_bandwidth: object = None,
    assumptions: Assumptions | None = None,
) -> OffloadPlan | None:
    """The offload plan that keeps the most MoE layers' experts on the GPUs and still loads
    (llama.cpp ``-ngl 999 --n-cpu-moe K``), or None when none does (even with every expert
    in host memory: the dense part, KV and runtime overflow the GPUs, the RAM is short,
    the one pool of a unified machine is short, or the context is past the model's).

    VRAM grows and RAM shrinks with $N$, so the plans that load are a run of $N$; this
    returns its top: the largest $N \\le L_{moe}$ with :attr:`OffloadPlan.fits`.
    ``weights`` None: the file's exact bytes for a loaded model, else Q4_K_M."""
    import dataclasses

    base = plan_offload(
        model=model,
        weights=weights,
        gpu=gpu,
        gpus=gpus,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
        host=host,
        ram=ram,
        ram_bandwidth=ram_bandwidth,
        assumptions=assumptions,
    )
    for n in range(base.parts.moe_layers, -1, -1):
        p = dataclasses.replace(base, expert_layers_on_gpu=n)
        if p.fits:
            return p
    return None


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
    """The most expert layers that fit on the GPU within ``vram_budget_bytes`` per GPU (0 if
    even the dense part does not): the largest $N \\in [0, L_{moe}]$ with
    $\\lceil (W_{dense} + N·X_{layer} + KV + A)/G \\rceil + O_{gpu} \\le V$."""
    import dataclasses

    for n in range(plan.parts.moe_layers, -1, -1):
        if dataclasses.replace(plan, expert_layers_on_gpu=n).vram_per_gpu_bytes <= vram_budget_bytes:
            return n
    return 0


def summary_table(plan: OffloadPlan, unit: str = "GB"):
    """param | formula | value, for the memory and the decode time."""
    import pandas as pd

    div = GB if unit == "GB" else GiB
    p = plan.parts
    gpu_t, ram_t = plan.tiers
    rows = [
        ("non-expert weights on GPU", "W_dense", p.dense_bytes / div),
        (
            "experts kept on GPU",
            f"N·X_layer, N = {plan.expert_layers_on_gpu}",
            plan.expert_layers_on_gpu * p.layer_experts_bytes / div,
        ),
        ("KV cache", "B·T·kv_tok", plan.vram_kv_bytes / div),
        ("activation", "A (core rule)", plan.vram_activation_bytes / div),
        ("GPU runtime overhead", f"O_gpu × {plan.gpus} (core rule)", plan.vram_overhead_bytes / div),
        ("VRAM needed", "sum of the above", plan.vram_needed_bytes / div),
        (
            "experts in RAM",
            f"(L_moe − N)·X_layer, L_moe = {p.moe_layers}",
            (p.moe_layers - plan.expert_layers_on_gpu) * p.layer_experts_bytes / div,
        ),
        ("embedding in RAM", "V·D·bits/8", p.embedding_bytes / div),
        ("host needs beyond weights", "OS + engine + pinned", plan.host.host_extra_bytes / div),
        ("RAM needed", "sum of the three above", plan.ram_needed_bytes / div),
    ]
    if plan.unified:
        rows.append(("one pool needed (unified memory)", "VRAM + RAM", plan.pool_needed_bytes / div))
    rows += [
        ("read per token on GPU", "W_dense + N·k·x + KV", gpu_t.read_bytes_per_step / div),
        ("read per token from RAM", "(L_moe − N)·k·x", ram_t.read_bytes_per_step / div),
    ]
    return pd.DataFrame([{"param": a, "formula": b, f"value ({unit})": round(c, 2)} for a, b, c in rows])
