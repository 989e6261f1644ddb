"""Engine profiles (the documented rules of each engine, with their sources), the
registry :func:`get_engine`, the per-GPU :class:`EngineEstimate`, and helpers the
engine modules share."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.units import GiB

# ---------------------------------------------------------------------------
# profiles: the documented rules of each engine
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineProfile:
    """One engine's memory rules, the version they were read from, and the unit it prints."""

    id: str
    name: str
    version: str
    printed_unit: str
    unit_note: str
    sources: tuple[str, ...]
    rules: tuple[str, ...]
    calibration: str
    aliases: tuple[str, ...] = ()


ENGINES: dict[str, EngineProfile] = {
    "vllm": EngineProfile(
        id="vllm",
        name="vLLM",
        version="0.19.0 (V1 engine)",
        printed_unit="GiB",
        unit_note="vLLM divides by 2^30 and prints 'GiB' ('Model loading took 14.99 GiB'); no conversion needed.",
        sources=(
            "vllm v1/worker/gpu_worker.py (determine_available_memory)",
            "vllm v1/core/kv_cache_utils.py",
            "vllm model_executor/layers/quantization/mxfp4.py",
            "vLLM 0.19.0 logs, llm-d-incubation/llm-d-planner PR #205 (data/measured/)",
        ),
        rules=(
            "budget = gpu_memory_utilization × total GPU memory (total as the driver reports it: 79.19 GiB on H100 80GB)",
            "weights per rank: vocab padded to a multiple of 64 and split over TP; attention heads, MLPs and experts "
            "split over TP; KV heads split while TP ≤ K, else one head per rank (replicated); MLA down-projections, "
            "routers and norms replicated; rotary cos/sin caches (max positions × rotary dim, × the factor for linear "
            "scaling; two caches for Gemma 3) at the model dtype on every rank; MXFP4 experts padded as the Marlin "
            "kernel needs (intermediate per rank to 128, hidden to 256)",
            "activation peak: 0.05 GiB + 14.2 B × max_num_seqs (1,024) × vocabulary (the sampler's fp32 logits) "
            "+ 1.65 × max_num_batched_tokens (8,192) × hidden × dtype bytes + the fused-MoE workspace "
            "+ 0.2 GiB with a vision tower (least-squares fit to the 0.19 sweep; TP-invariant there)",
            "non-torch memory: 0.25 GiB at TP=1; 2.15 GiB per rank at TP ≥ 2 (NCCL and custom all-reduce buffers)",
            "CUDA graphs: 0.19 does not subtract them by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0); the "
            "graph pool (0.5–1.9 GiB) is captured afterwards in the (1 − utilization) slack",
            "available KV = budget − weights − activation peak − non-torch (− graph estimate when enabled)",
            "KV in 16-token blocks; one layer's page = 16 × bytes per token per layer per rank; layers of different "
            "kinds (full, sliding window, chunked, linear-attention state) form groups of the smallest kind's size "
            "(the largest when within 1.25×), padding the last group of each kind",
            "blocks = ⌊available ÷ (page × layers per group)⌋; printed tokens = ⌊blocks ÷ groups⌋ × 16 "
            "(a uniform model: ⌊available ÷ bytes per token per rank ÷ 16⌋ × 16)",
            "MLA caches the latent (kv_lora_rank + rope dim) on every TP rank; fp8 KV halves it; the FlashMLA "
            "'fp8_ds_mla' layout stores 656 B per token per layer",
            "linear-attention (KDA / Gated DeltaNet) state: one block per sequence; the attention block size grows "
            "(in steps of 16 tokens) until one attention page holds a layer's state, then the state page is padded to it",
            "PP > 1 (distributed/utils.py get_pp_indices): whole layers per stage, ⌊L/PP⌋ each, the remainder to the "
            "stages before the last; embedding on the first stage, LM head on the last (a tied head copied there); "
            "only the last stage runs the sampler in the profiling run; every worker gets the smallest KV block "
            "count over the stages (v1/core/kv_cache_utils.py get_kv_cache_configs)",
        ),
        calibration="87 figures from vLLM 0.19.0 on H100 80GB (data/measured/vllm-0.19-h100-sweep.csv); "
        "see vllm_calibration()",
    ),
    "llama.cpp": EngineProfile(
        id="llama.cpp",
        name="llama.cpp",
        version="ggml-org/llama.cpp@0c1e57098 (Oct 2026, vendored by llama-cpp-python 0.3.36)",
        printed_unit="MiB",
        unit_note="llama.cpp prints binary MiB and labels them MiB ('llama_kv_cache: size = 4096.00 MiB').",
        sources=(
            "ggml-org/llama.cpp@0c1e57098 src/llama-kv-cache.cpp",
            "src/llama-kv-cache-iswa.cpp",
            "src/llama-memory-recurrent.cpp",
            "src/llama-context.cpp",
            "src/llama-model.cpp (load_tensors)",
            "src/llama-quant.cpp",
            "ggml/src/ggml-common.h (block sizes)",
        ),
        rules=(
            "weights: the GGUF's exact tensor bytes; the token embedding stays in host memory; -ngl N puts the last "
            "N−1 layers and the output head on the GPUs (layer i when i ≥ L + 1 − N); -ot PATTERN=CPU keeps matching "
            "tensors in host memory",
            "weights without the file (src/llama-quant.cpp llama_tensor_get_type): per-tensor types of a file type — "
            "output Q6_K, attn_v/ffn_down Q6_K on use_more_bits layers for Q4_K_M/Q5_K_M, 8-expert attn_k/attn_v Q8_0, "
            "norms and routers F32 (k3lib.engines.gguf_recipe; equal to llama_model_quantize on every tensor of 10 "
            "test quantizations)",
            "K and V printed separately: K = layers × streams × cells × K row bytes, V likewise",
            "cells: the context padded to 256 (PR 17046); per-sequence streams of ⌈n_ctx ÷ n_seq⌉₂₅₆ cells unless "
            "--kv-unified (before PR 17046: 256 with flash attention, 32 without)",
            "sliding-window layers (iSWA cache): ⌈min(cells, window × (n_seq if unified else 1) + n_ubatch)⌉₂₅₆ "
            "cells; --swa-full keeps the full context; KV-sharing layers (Gemma 3n/4) own no cache",
            "K and V rows stored in --cache-type-k/-v: f16 (2 B), q8_0 (34 B per 32), q4_0 (18 B per 32); quantized "
            "V needs flash attention",
            "MLA: one latent row (kv_lora_rank + rope dim) in the K cache, V a view of it (PR 19067, Jan 2026; "
            "before it a kv_lora_rank V row too); K and V cache types must match; ik_llama.cpp -mla 1 keeps an F16 "
            "transposed copy, -mla 2/3 none",
            "recurrent layers (Gated DeltaNet, KDA, Mamba): max(1, n_seq) × (1 + n_rs_seq) rows of F32 conv history "
            "(R) and state (S) per layer; n_rs_seq (rollback snapshots) only for the families that support it",
            "compute buffer: a model of the worst-case graph — attention mask per cache (F16 with flash attention, "
            "F32 without) + without flash attention the F32 scores + n_ubatch × 4 B × (vocab + 2·FFN width + "
            "3·hidden + heads·kv_lora for MLA); measured −1 … +3 % for GQA, −18 … +3 % elsewhere",
        ),
        calibration="data/measured/llamacpp-0c1e570-cpu.csv: 2,298 figures of a real llama.cpp build (tests/llamacpp), "
        "all reproduced; compute buffers within the stated bands; public logs in data/measured/engine_logs.csv",
    ),
    "sglang": EngineProfile(
        id="sglang",
        name="SGLang",
        version="0.5.x source (2025)",
        printed_unit="GB (meaning GiB)",
        unit_note="SGLang divides by 2^30 but prints 'GB' ('KV Cache is allocated. K size: 10.00 GB'): read its GB as GiB.",
        sources=(
            "sgl-project/sglang python/sglang/srt/server_args.py",
            "srt/model_executor/model_runner.py",
            "srt/mem_cache/memory_pool.py",
        ),
        rules=(
            "mem_fraction_static, when not given: (GPU MiB − reserved) ÷ GPU MiB, reserved MiB = 512 + "
            "1.5 × max(chunked_prefill_size, 2048) + 2 × cuda_graph_max_bs + 1024 × TP × PP / 8",
            "defaults by GPU memory: < 60 GiB chunked prefill 4096, < 160 GiB 8192, else 16384; cuda_graph_max_bs 256 "
            "(512 at TP ≥ 4)",
            "KV pool = mem_fraction_static × total − memory in use after loading (weights + CUDA context)",
            "tokens = ⌊pool ÷ cell size⌋ (page size 1); cell = layers × K × head dim × 2 × bytes per rank for GQA",
            "MLA caches only the latent: layers × (kv_lora_rank + rope dim) × bytes, on every TP rank",
            "sliding-window layers are counted at the full context (the separate SWA pool SGLang uses for some "
            "models is not modeled); linear-attention state is added per sequence in fp32",
        ),
        calibration="not calibrated against measurements",
    ),
    "transformers": EngineProfile(
        id="transformers",
        name="Hugging Face transformers",
        version="4.5x (DynamicCache)",
        printed_unit="—",
        unit_note="transformers prints no memory figures; torch.cuda reports bytes.",
        sources=(
            "huggingface/transformers src/transformers/cache_utils.py (DynamicCache)",
            "models/deepseek_v3/modeling_deepseek_v3.py",
        ),
        rules=(
            "weights: every parameter at the model dtype (a quantization_config's format when the checkpoint ships one)",
            "DynamicCache: per layer K and V of [batch, KV heads, tokens, head dim] at the model dtype, grown by "
            "concatenation (no paging, no pre-allocation)",
            "MLA models store expanded keys and values (heads × (nope + rope) and heads × v_head_dim), not the latent",
            "sliding-window layers keep the last window of tokens; linear-attention layers keep conv state at the "
            "model dtype and the recurrent state in fp32",
            "activation: one forward pass over the prompt with SDPA attention (no T² score matrix)",
        ),
        calibration="not calibrated against measurements",
    ),
    "generic": EngineProfile(
        id="generic",
        name="k3lib generic",
        version="k3lib 0.1 make_plan rules",
        printed_unit="GiB",
        unit_note="k3lib prints GiB (2^30) or GB (10^9), always named.",
        sources=("k3lib.core.plan", "k3lib.core.memory"),
        rules=("weights + KV cache + activation + overhead, as k3lib.core.plan.make_plan computes them",),
        calibration="the guides' worked examples",
        aliases=("k3lib", "default"),
    ),
}
_ENGINE_ALIASES = {
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "llama_cpp": "llama.cpp",
    "hf": "transformers",
    "huggingface": "transformers",
    "sgl": "sglang",
    "k3lib": "generic",
    "default": "generic",
}

#: engines people serve with that have no memory profile of their own here, and the profile that
#: plans their memory: TensorRT-LLM pages its KV cache in blocks out of a fraction of free memory as
#: vLLM does; ik_llama.cpp, Ollama and KTransformers run llama.cpp's ggml buffers (KTransformers: its
#: CPU experts + GPU attention split is llama.cpp's -ot exps=CPU)
SERVING_ENGINES: Mapping[str, str] = {
    "vllm": "vllm",
    "sglang": "sglang",
    "llama.cpp": "llama.cpp",
    "trtllm": "vllm",
    "ik_llama.cpp": "llama.cpp",
    "ollama": "llama.cpp",
    "ktransformers": "llama.cpp",
    "transformers": "transformers",
}
_SERVING_ALIASES = {
    "tensorrt-llm": "trtllm",
    "tensorrt_llm": "trtllm",
    "trt-llm": "trtllm",
    "ik-llama.cpp": "ik_llama.cpp",
    "ik_llamacpp": "ik_llama.cpp",
    "ik-llama": "ik_llama.cpp",
    "kt": "ktransformers",
}


def serving_engine(name: str) -> tuple[str, str]:
    """(the serving engine's id, the memory profile that plans it): an engine without a memory
    profile of its own plans with the closest one, named.

    >>> serving_engine("TensorRT-LLM"), serving_engine("ollama"), serving_engine("vllm")
    (('trtllm', 'vllm'), ('ollama', 'llama.cpp'), ('vllm', 'vllm'))
    """
    key = str(name).strip().lower()
    key = _SERVING_ALIASES.get(key, _ENGINE_ALIASES.get(key, key))
    if key not in SERVING_ENGINES:
        raise UnknownNameError("engine", str(name), SERVING_ENGINES.keys())
    return key, SERVING_ENGINES[key]


def get_engine(name: str | EngineProfile) -> EngineProfile:
    """An engine profile by id or alias (``vllm``, ``llama.cpp``/``llamacpp``, ``sglang``, ``transformers``, ``generic``)."""
    if isinstance(name, EngineProfile):
        return name
    key = str(name).strip().lower()
    key = _ENGINE_ALIASES.get(key, key)
    if key in ENGINES:
        return ENGINES[key]
    raise UnknownNameError("engine", str(name), ENGINES.keys())


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------


def _resolve_model(model: Any):
    """(architecture, loaded model or None) for a name, an Architecture or a LoadedModel."""
    from k3lib.core.models import PublishedProfile, get_model
    from k3lib.loaders import LoadedModel

    if isinstance(model, LoadedModel):
        return model.require_architecture(), model
    spec = get_model(model)
    if isinstance(spec, PublishedProfile):
        raise K3InputError(
            "model",
            f"{spec.id} is a guide's published profile; engine profiles need an architecture",
            "an architecture id (k3plan models), --config, --gguf or --safetensors",
        )
    return spec, None


def _kv_bytes_per_element(kv_dtype: str | float, dtype_bytes: int) -> float:
    if isinstance(kv_dtype, (int, float)) and not isinstance(kv_dtype, bool):
        return float(kv_dtype)
    key = str(kv_dtype).strip().lower()
    if key in ("auto", "", "model"):
        return float(dtype_bytes)
    if key in ("fp32", "float32", "f32"):
        return 4.0
    if key == "fp8_ds_mla":
        return 1.0
    from k3lib.core.precisions import get_kv_dtype

    return get_kv_dtype(key).bytes_per_element


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _gib(n: float) -> str:
    return f"{n / GiB:,.2f} GiB"


@dataclass(frozen=True)
class EngineEstimate:
    """One GPU's memory under an engine's rules (bytes), and whether ``batch``
    sequences of ``context_tokens`` fit."""

    engine: str
    version: str
    model_id: str
    gpu_id: str
    gpus: int
    tp: int
    context_tokens: int
    batch: int
    kv_dtype: str
    memory_bytes: int
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    runtime_bytes: int
    cuda_graph_bytes: int
    kv_available_bytes: int
    kv_needed_bytes: int
    kv_capacity_tokens: int
    max_concurrency: float
    fits: bool
    reason: str
    printed: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    pp: int = 1
    #: per pipeline stage (PP > 1): {"stage", "layers", "weights_bytes", "activation_bytes", "runtime_bytes",
    #: "kv_available_bytes", "kv_needed_bytes"}; the estimate's own figures are the binding stage's
    stages: tuple[Mapping[str, int], ...] = ()

    @property
    def headroom_bytes(self) -> int:
        return self.kv_available_bytes - self.kv_needed_bytes

    def components(self) -> dict[str, int]:
        """Per-GPU rows in order: what the engine holds besides the KV cache, then the cache."""
        return {
            "weights": self.weights_bytes,
            "activation": self.activation_bytes,
            "runtime (non-torch, context)": self.runtime_bytes,
            "CUDA graphs": self.cuda_graph_bytes,
            "KV cache needed": self.kv_needed_bytes,
        }

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["printed"] = dict(self.printed)
        d["notes"] = list(self.notes)
        d["stages"] = [dict(x) for x in self.stages]
        d["headroom_bytes"] = self.headroom_bytes
        return d


@dataclass(frozen=True)
class EstimateInputs:
    """One estimate's inputs, parsed once by :func:`~k3lib.engines.estimate.estimate_for_engine` and
    handed to the engine's own estimator (``vllm_estimate``, ``llamacpp_estimate``, …): counts are
    whole numbers, ``gpu`` a GPUSpec; ``model`` is as the caller gave it (an id, an Architecture or a
    LoadedModel) and ``arch``/``loaded`` its architecture and file (None for the generic plan, which
    takes a guide's profile too)."""

    profile: EngineProfile
    model: Any
    arch: Any
    loaded: Any
    gpu: Any
    gpus: int
    tp: int
    pp: int
    context_tokens: int
    batch: int
    kv_dtype: str
    weights: str
    gpu_memory_utilization: float | None
    dtype_bytes: int | None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def base_dtype_bytes(self) -> int:
        """Bytes per element of the model's own dtype: ``dtype_bytes`` if given, else the file's, else 2 (BF16)."""
        return self.dtype_bytes or (self.loaded.dtype_bytes if self.loaded is not None else 2)

    def implied_pp_notes(self) -> list[str]:
        """The note for an engine that splits the layers over the GPUs itself (llama.cpp, transformers):
        a PP > 1 asked for is implied, not a separate setting."""
        if self.pp > 1:
            return [f"{self.profile.name} splits the layers over all {self.gpus} GPUs itself; PP={self.pp} is implied"]
        return []


def _hardware(gpu: Any):
    from k3lib.core.hardware import GPUSpec, get_gpu

    return gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)
