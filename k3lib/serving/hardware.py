"""What the serving model reads from the hardware rows, and the few figures those rows lack.

**Hardware classes** (the unit of the fitted efficiencies): ``datacenter GPU`` (a row of
that ``device_class``), ``consumer GPU`` (consumer, workstation and mining cards: a desktop
board on PCIe), ``unified memory`` (one pool: Apple M-series, DGX Spark, Strix Halo) and
``CPU`` (no accelerator: the host's DRAM and cores).

**Peak compute** $F$: the row's dense FP8 FLOP/s for an 8-bit-or-less *floating-point*
checkpoint served by an engine that multiplies in FP8 (vLLM, SGLang, TensorRT-LLM on a GPU
that has FP8), else its dense BF16 FLOP/s (integer/GGUF quantizations dequantize to 16 bits
before the matrix multiply). Rows without a figure fall back to :data:`FLOPS_NOT_IN_CATALOGUE`
(recalled figures, labelled), and CPU hosts to :data:`CPU_DENSE_FLOPS_BY_PLATFORM`: the
host rows give channels and transfer rates, not cores.
"""

from __future__ import annotations

from k3lib.core.hardware import GPUSpec
from k3lib.core.hosts import HostSpec

HARDWARE_CLASSES = ("datacenter GPU", "consumer GPU", "unified memory", "CPU")

#: Dense 16-bit FLOP/s of unified-memory machines whose hardware.csv row has none. Recalled
#: vendor figures (verify): Apple M3 Ultra 80-core GPU 28.4 TFLOPS FP32 (Apple's GPU runs FP16 at
#: the FP32 rate); M4 Max 40-core 18.4 TFLOPS; NVIDIA GB10 (DGX Spark) "1 PFLOP FP4 sparse"
#: = 500 TFLOPS dense FP4 = 125 TFLOPS dense BF16 at Blackwell's 4:1 ratio; Radeon 8060S
#: (Ryzen AI Max+ 395) 40 CUs × 2.9 GHz × 512 FLOP/clk (dual-issue FP16) = 59.4 TFLOPS.
#: They only scale the compute roofline, whose achieved fraction η_c is fitted per class.
FLOPS_NOT_IN_CATALOGUE = {
    "m3-ultra-512gb": 28.4e12,
    "m4-max-128gb": 18.4e12,
    "macbook-pro-m4-max-128gb": 18.4e12,
    "dgx-spark": 125e12,
    "ryzen-ai-max-395-128gb": 59.4e12,
}
#: Dense BF16/FP32-FMA FLOP/s of a CPU host by platform (assumed orders of magnitude, not
#: measurements; data/hosts.csv has no core counts): a 1-socket server (e.g. 64 Zen 4 cores ×
#: 3 GHz × 32 FP32 FLOP/clk ≈ 6 TFLOPS), a workstation (32 cores ≈ 3 TFLOPS), a desktop
#: (8–16 cores ≈ 1 TFLOPS); a second socket doubles it. η_c of the CPU class is fitted on them.
CPU_DENSE_FLOPS_BY_PLATFORM = {"server": 6e12, "workstation": 3e12, "desktop": 1e12, "unified": 1e12}

#: engines that multiply FP8 weights in FP8 on a GPU that has it
FP8_COMPUTE_ENGINES = ("vllm", "sglang", "trtllm")


def hardware_class(gpu: GPUSpec | None) -> str:
    """The class whose fitted efficiencies apply: ``CPU`` for no GPU.

    >>> from k3lib.core.hardware import get_gpu
    >>> hardware_class(get_gpu("h100")), hardware_class(get_gpu("rtx-pro-6000")), hardware_class(get_gpu("dgx-spark"))
    ('datacenter GPU', 'consumer GPU', 'unified memory')
    """
    if gpu is None:
        return "CPU"
    if gpu.unified_memory:
        return "unified memory"
    return "datacenter GPU" if gpu.device_class == "datacenter GPU" else "consumer GPU"


def peak_flops(gpu: GPUSpec, *, fp8: bool) -> float | None:
    """Dense FLOP/s of ``gpu``: FP8 when ``fp8`` and the row has it, else BF16, else
    :data:`FLOPS_NOT_IN_CATALOGUE`; None when nothing is known.

    >>> from k3lib.core.hardware import get_gpu
    >>> peak_flops(get_gpu("h100"), fp8=False), peak_flops(get_gpu("h100"), fp8=True)
    (989000000000000.0, 1979000000000000.0)
    """
    if fp8 and gpu.fp8_dense_flops:
        return gpu.fp8_dense_flops
    return gpu.bf16_dense_flops or FLOPS_NOT_IN_CATALOGUE.get(gpu.id)


def cpu_peak_flops(host: HostSpec) -> float:
    """:data:`CPU_DENSE_FLOPS_BY_PLATFORM` of the host's platform × sockets.

    >>> from k3lib.core.hosts import get_host
    >>> cpu_peak_flops(get_host("epyc-9005-2p"))
    12000000000000.0
    """
    return CPU_DENSE_FLOPS_BY_PLATFORM[host.platform] * host.sockets
