"""Decode and prefill of an offload plan (:class:`k3lib.serving.offload_model.OffloadPlan`:
routed experts in host RAM, the rest on the GPU) on the serving model.

* **Decode** reads each tier's share at that tier's bandwidth, one after the other:
  $t = \\sum_d \\text{bytes}_d / (η_{bw,d}·BW_d) + L·τ$, the GPU tier with the GPU class's fitted
  $η_{bw}$, the host tier (DRAM at the host catalogue's channels × MT/s × 8 B, or
  ``--ram-bandwidth``) with the CPU class's. On a unified-memory machine both tiers are the one pool.
* **Prefill** of a micro-batch of $u$ tokens: when $u \\ge$ :data:`LLAMACPP_OP_OFFLOAD_MIN_BATCH`
  llama.cpp's CUDA backend takes the host-resident matrix multiplications and copies the
  touched experts across the host link (PCIe), $t_u = \\max(W_{RAM}·(1-(1-k/E)^u)/BW_{link},\\
  2·P_{active}·u/(η_c·F))$; below it the CPU multiplies them in place at its bandwidth.
"""

from __future__ import annotations

from k3lib.serving.experts import fraction_of_experts_touched
from k3lib.serving.roofline import CEILING, Efficiency

#: llama.cpp's CUDA backend offloads an op whose weights sit in host memory when its batch is at
#: least 32 tokens (``GGML_OP_OFFLOAD_MIN_BATCH`` overrides it): ``ggml_backend_cuda_device_offload_op``
#: returns ``get_op_batch_size(op) >= dev_ctx->op_offload_min_batch_size``, set from
#: ``getenv("GGML_OP_OFFLOAD_MIN_BATCH") ? atoi(...) : 32`` — ggml-org/llama.cpp
#: ggml/src/ggml-cuda/ggml-cuda.cu at commit 00108827d87949b538ad1821f81a6b111827fcda (older
#: releases: ``const int min_batch_size = 32;`` in the same function).
LLAMACPP_OP_OFFLOAD_MIN_BATCH = 32


def offload_decode_seconds(plan, *, gpu_eff: Efficiency = CEILING, host_eff: Efficiency = CEILING) -> float:
    """One decode step of ``plan.batch`` sequences: GPU tier + host tier + layers × τ (the GPU's)."""
    gpu_t, ram_t = plan.tiers
    t = gpu_t.read_bytes_per_step / (gpu_eff.eta_bw * gpu_t.bandwidth_bytes_per_s)
    t += ram_t.read_bytes_per_step / (host_eff.eta_bw * ram_t.bandwidth_bytes_per_s)
    return t + plan.model.num_layers * gpu_eff.layer_overhead_s


def offload_prefill_tokens_per_s(
    plan, *, gpu_eff: Efficiency = CEILING, host_eff: Efficiency = CEILING
) -> float | None:
    """Prefill tokens/s of one micro-batch of ``plan.host.ubatch_tokens`` (see the module docstring)."""
    u = plan.host.ubatch_tokens
    p = plan.parts
    off = (p.moe_layers - plan.expert_layers_on_gpu) * p.layer_experts_bytes
    flops = plan.gpu.bf16_dense_flops
    compute = 2 * plan.model.params_active * u / (gpu_eff.eta_compute * flops) if flops else None
    if plan.unified or not plan.gpu.host_link_bytes_per_s:
        return u / compute if compute else None
    f = fraction_of_experts_touched(n_experts=p.experts_per_layer, experts_per_token=p.active_experts, tokens=u)
    if u >= LLAMACPP_OP_OFFLOAD_MIN_BATCH:
        moved = off * f / plan.gpu.host_link_bytes_per_s
    else:
        moved = off * f / (host_eff.eta_bw * plan.ram_bandwidth_bytes_per_s)
    return u / max(moved, compute or 0.0)
