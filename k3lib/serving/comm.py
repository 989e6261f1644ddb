"""Communication per decode step or prefill chunk: tensor-parallel all-reduce, expert-parallel
all-to-all and pipeline hand-off, from the link of the hardware row.

**Links.** Inside a node the GPUs talk over the row's scale-up link
(``scale_up_link_bytes_per_s``: NVLink/NVSwitch, Infinity Fabric; per GPU per direction);
a board without one (consumer and PCIe cards) talks over its host link
(``host_link_bytes_per_s``, PCIe). A group that spans nodes is bound by the network between
them, :data:`INTER_NODE_BYTES_PER_S` per GPU. Unified-memory machines and CPUs are one device.

**Ring all-reduce** of $M$ bytes over $g$ GPUs (every GPU sends and receives
$2(g-1)/g·M$):

$$t_{AR} = \\frac{2(g-1)}{g}·\\frac{M}{BW} + α$$

Tensor parallelism all-reduces the hidden state twice per layer (after attention and after
the MLP): $M = T·D·2$ bytes for $T$ tokens of BF16 activations.

**Expert-parallel all-to-all**: each token's hidden state goes to its $k$ experts and comes
back (dispatch + combine), the share $(EP-1)/EP$ of them on other GPUs:
$M = 2·T·k·D·2·(EP-1)/EP$ bytes per MoE layer per GPU, $t = M/BW + 2α$.

**Pipeline hand-off**: each of the $PP-1$ stage boundaries sends $T·D·2$ bytes, $t = M/BW + α$.

>>> round(allreduce_seconds(message_bytes=8192 * 2, group=8, link_bytes_per_s=450e9, latency_s=0) * 1e9, 1)   # one token of Llama-70B
63.7
"""

from __future__ import annotations

from dataclasses import dataclass

from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec

#: Per-GPU network bandwidth between nodes: one 400 Gb/s (NDR InfiniBand / ConnectX-7) port per
#: GPU = 50 GB/s per direction, the DGX/HGX H100 and H200 compute fabric (NVIDIA DGX H100 user
#: guide: eight single-port ConnectX-7 400 Gb/s for the compute network). Not in data/hardware.csv.
INTER_NODE_BYTES_PER_S = 50 * 10**9
#: Latency of one small collective (all-reduce, all-to-all, send): 8 µs, the order of NCCL's and
#: vLLM's custom all-reduce for a few KiB inside an NVLink node (nccl-tests small-message rows;
#: recalled, verify). Stated, not fitted: the fitted per-layer cost absorbs what it misses.
COLLECTIVE_LATENCY_S = 8e-6
#: bytes of one activation element on the wire (BF16)
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class Link:
    """The link a GPU group communicates over: bytes/s per GPU per direction and where the figure comes from."""

    bytes_per_s: float
    basis: str


def group_link(gpu: GPUSpec, *, spans_nodes: bool) -> Link:
    """The link of a communicating group of ``gpu``: the network when it ``spans_nodes``,
    else the scale-up link, else the host link (PCIe).

    >>> from k3lib.core.hardware import get_gpu
    >>> group_link(get_gpu("h100"), spans_nodes=False).bytes_per_s, group_link(get_gpu("rtx-4090"), spans_nodes=False).bytes_per_s
    (450000000000, 32000000000)
    """
    if spans_nodes:
        return Link(
            INTER_NODE_BYTES_PER_S,
            f"inter-node network {INTER_NODE_BYTES_PER_S / 1e9:.0f} GB/s per GPU "
            "(400 Gb/s per GPU, k3lib.serving.comm.INTER_NODE_BYTES_PER_S)",
        )
    if gpu.scale_up_link_bytes_per_s:
        return Link(
            gpu.scale_up_link_bytes_per_s,
            f"{gpu.id} scale-up link {gpu.scale_up_link_bytes_per_s / 1e9:.0f} GB/s per direction (hardware.csv)",
        )
    if gpu.host_link_bytes_per_s:
        return Link(
            gpu.host_link_bytes_per_s,
            f"{gpu.id} host link (PCIe) {gpu.host_link_bytes_per_s / 1e9:.0f} GB/s per direction (hardware.csv)",
        )
    return Link(gpu.memory_bw_bytes_per_s, f"{gpu.id}: one device, no link")


def allreduce_seconds(
    *, message_bytes: float, group: int, link_bytes_per_s: float, latency_s: float = COLLECTIVE_LATENCY_S
) -> float:
    """$2(g-1)/g · M/BW + α$; 0 for a group of one."""
    if group < 1 or link_bytes_per_s <= 0:
        raise K3InputError("group", f"{group!r} GPUs over {link_bytes_per_s!r} B/s", "g ≥ 1, BW > 0")
    if group == 1:
        return 0.0
    return 2 * (group - 1) / group * message_bytes / link_bytes_per_s + latency_s


def tp_allreduce_bytes_per_layer(*, tokens: float, hidden_size: int) -> float:
    """Bytes all-reduced per layer (two all-reduces of the hidden state): $2·T·D·2$.

    >>> tp_allreduce_bytes_per_layer(tokens=1, hidden_size=8192)    # Llama-70B, one token
    32768
    """
    return 2 * tokens * hidden_size * ACTIVATION_BYTES


def tp_comm_seconds(
    *,
    tokens: float,
    hidden_size: int,
    layers: int,
    tp: int,
    link_bytes_per_s: float,
    latency_s: float = COLLECTIVE_LATENCY_S,
) -> float:
    """Two ring all-reduces of $T·D·2$ bytes per layer over ``layers`` layers.

    >>> round(tp_comm_seconds(tokens=1, hidden_size=8192, layers=80, tp=8, link_bytes_per_s=450e9) * 1e3, 3)
    1.29
    """
    if tp == 1:
        return 0.0
    one = allreduce_seconds(
        message_bytes=tokens * hidden_size * ACTIVATION_BYTES,
        group=tp,
        link_bytes_per_s=link_bytes_per_s,
        latency_s=latency_s,
    )
    return 2 * layers * one


def ep_alltoall_bytes_per_layer(*, tokens: float, hidden_size: int, experts_per_token: int, ep: int) -> float:
    """Dispatch + combine bytes one GPU sends per MoE layer: $2·T·k·D·2·(EP-1)/EP$.

    >>> ep_alltoall_bytes_per_layer(tokens=1, hidden_size=7168, experts_per_token=8, ep=8)   # DeepSeek-V3
    200704.0
    """
    if ep <= 1:
        return 0.0
    return 2 * tokens * experts_per_token * hidden_size * ACTIVATION_BYTES * (ep - 1) / ep


def ep_comm_seconds(
    *,
    tokens: float,
    hidden_size: int,
    experts_per_token: int,
    ep: int,
    moe_layers: int,
    link_bytes_per_s: float,
    latency_s: float = COLLECTIVE_LATENCY_S,
) -> float:
    """$L_{moe}·(M_{a2a}/BW + 2α)$ (0 without expert parallelism)."""
    if ep <= 1 or moe_layers == 0:
        return 0.0
    m = ep_alltoall_bytes_per_layer(tokens=tokens, hidden_size=hidden_size, experts_per_token=experts_per_token, ep=ep)
    return moe_layers * (m / link_bytes_per_s + 2 * latency_s)


def pp_handoff_seconds(
    *, tokens: float, hidden_size: int, pp: int, link_bytes_per_s: float, latency_s: float = COLLECTIVE_LATENCY_S
) -> float:
    """$(PP-1)·(T·D·2/BW + α)$: the hidden state crossing each stage boundary once."""
    if pp <= 1:
        return 0.0
    return (pp - 1) * (tokens * hidden_size * ACTIVATION_BYTES / link_bytes_per_s + latency_s)
