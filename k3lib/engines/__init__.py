"""Engine memory profiles: how vLLM, llama.cpp, SGLang and transformers each lay
out one GPU's memory, as documented rules tied to the engine version they were
read from.

The same model needs different memory on different engines, because each one
decides differently what to reserve, how to page the KV cache, what to replicate
under tensor parallelism and which unit to print. :func:`estimate_for_engine`
runs one profile and returns an :class:`EngineEstimate` (bytes per GPU);
:data:`ENGINES` lists the rules of each, and :func:`vllm_calibration` checks the
vLLM profile against the 87 figures vLLM 0.19 printed on H100
(``data/measured/vllm-0.19-h100-sweep.csv``).

vLLM, worked for Llama 3.1 8B (BF16, 1×H100, ``gpu_memory_utilization`` 0.95):
one token costs $2·L·K·H·b$ = 2·32·8·128·2 = 131,072 B, a 16-token block
2 MiB, so the printed 58.11 GiB of KV memory holds
⌊58.11 GiB ÷ 131,072 B ÷ 16⌋ × 16 tokens:

>>> vllm_kv_cache_tokens("llama-3.1-8b", available_bytes=int(58.11 * 2**30))
476032

vLLM printed 476,016: one block fewer, because 58.11 is its available memory
rounded to 0.01 GiB (the true figure lies in [58.105, 58.115) GiB, where the
formula gives 475,984 to 476,064 tokens).
"""

from k3lib.engines.base import ENGINES, EngineEstimate, EngineProfile, get_engine
from k3lib.engines.calibration import (
    CALIBRATION_MODELS_CSV,
    MEASURED_DIR,
    VLLM_SWEEP_CSV,
    CalibrationRow,
    _row_dtypes,
    calibration_model,
    calibration_summary,
    read_vllm_sweep,
    vllm_calibration,
)
from k3lib.engines.estimate import estimate_for_engine
from k3lib.engines.llamacpp import (
    LLAMACPP_CACHE_TYPES,
    llamacpp_compute_buffer_bytes,
    llamacpp_kv_cache_bytes,
    llamacpp_weights_bytes,
)
from k3lib.engines.sglang import sglang_cell_bytes, sglang_mem_fraction_static
from k3lib.engines.transformers import transformers_cache_bytes
from k3lib.engines.vllm import (
    PRINTED_ROUNDING_BYTES,
    VLLM_BLOCK_TOKENS,
    VLLMKVLayout,
    vllm_activation_peak_bytes,
    vllm_kv_cache_tokens,
    vllm_kv_layout,
    vllm_kv_tokens_interval,
    vllm_non_torch_bytes,
    vllm_weights_bytes_per_rank,
)

__all__ = [
    "ENGINES",
    "EngineProfile",
    "EngineEstimate",
    "get_engine",
    "estimate_for_engine",
    "VLLMKVLayout",
    "vllm_kv_layout",
    "vllm_kv_cache_tokens",
    "vllm_weights_bytes_per_rank",
    "vllm_activation_peak_bytes",
    "vllm_non_torch_bytes",
    "vllm_kv_tokens_interval",
    "llamacpp_kv_cache_bytes",
    "llamacpp_compute_buffer_bytes",
    "llamacpp_weights_bytes",
    "sglang_mem_fraction_static",
    "sglang_cell_bytes",
    "transformers_cache_bytes",
    "vllm_calibration",
    "calibration_summary",
    "CalibrationRow",
    "read_vllm_sweep",
    "calibration_model",
    "PRINTED_ROUNDING_BYTES",
    "VLLM_BLOCK_TOKENS",
    "LLAMACPP_CACHE_TYPES",
    "CALIBRATION_MODELS_CSV",
    "MEASURED_DIR",
    "VLLM_SWEEP_CSV",
    "_row_dtypes",
]
