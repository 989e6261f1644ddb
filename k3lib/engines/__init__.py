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
from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Mapping

from k3lib.core.data import DATA_DIR
from k3lib.core.architecture import LINEAR_KINDS, AttentionGroup, Architecture
from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.units import GiB, MiB

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
        id="vllm", name="vLLM", version="0.19.0 (V1 engine)", printed_unit="GiB",
        unit_note="vLLM divides by 2^30 and prints 'GiB' ('Model loading took 14.99 GiB'); no conversion needed.",
        sources=("vllm v1/worker/gpu_worker.py (determine_available_memory)", "vllm v1/core/kv_cache_utils.py",
                 "vllm model_executor/layers/quantization/mxfp4.py",
                 "vLLM 0.19.0 logs, llm-d-incubation/llm-d-planner PR #205 (data/measured/)"),
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
        ),
        calibration="87 figures from vLLM 0.19.0 on H100 80GB (data/measured/vllm-0.19-h100-sweep.csv); "
                    "see vllm_calibration()"),
    "llama.cpp": EngineProfile(
        id="llama.cpp", name="llama.cpp", version="b6400-era source (Sept 2025)",
        printed_unit="MiB",
        unit_note="llama.cpp prints binary MiB and labels them MiB ('KV self size = 4096.00 MiB').",
        sources=("ggml-org/llama.cpp src/llama-kv-cache.cpp", "src/llama-kv-cache-iswa.cpp",
                 "src/llama-memory-recurrent.cpp", "src/llama-context.cpp", "ggml/src/ggml-common.h (block sizes)"),
        rules=(
            "weights: the GGUF's exact tensor bytes; with every layer offloaded (-ngl 999) token_embd stays in host "
            "memory, and a tied output head is duplicated onto the GPU",
            "KV cells = context padded to 256 with flash attention (-fa), to 32 without",
            "per-sequence streams when the cache is not unified (--kv-unified off, the server default for -np > 1): "
            "each of n_seq streams holds the padded per-sequence context",
            "sliding-window layers (iSWA cache): min(cells, pad(window × streams-in-cache + n_ubatch)); --swa-full "
            "keeps the full context",
            "K and V rows stored in --cache-type-k/-v: f16 (2 B), q8_0 (34 B per 32), q4_0 (18 B per 32); quantized "
            "V needs flash attention",
            "MLA (deepseek2 GGUFs converted for MLA): K row = kv_lora_rank + rope dim, V row = kv_lora_rank, one KV head",
            "recurrent layers (Gated DeltaNet, KDA, Mamba): conv + recurrent state per sequence in f32",
            "compute buffer ≈ n_ubatch × 4 B × (vocab + 4·hidden + 2·FFN width); without flash attention add the "
            "n_head × n_ubatch × cells f32 score matrix, which grows with context (an approximation, not calibrated)",
        ),
        calibration="not calibrated against measurements; block sizes from ggml-common.h"),
    "sglang": EngineProfile(
        id="sglang", name="SGLang", version="0.5.x source (2025)", printed_unit="GB (meaning GiB)",
        unit_note="SGLang divides by 2^30 but prints 'GB' ('KV Cache is allocated. K size: 10.00 GB'): read its GB as GiB.",
        sources=("sgl-project/sglang python/sglang/srt/server_args.py", "srt/model_executor/model_runner.py",
                 "srt/mem_cache/memory_pool.py"),
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
        calibration="not calibrated against measurements"),
    "transformers": EngineProfile(
        id="transformers", name="Hugging Face transformers", version="4.5x (DynamicCache)", printed_unit="—",
        unit_note="transformers prints no memory figures; torch.cuda reports bytes.",
        sources=("huggingface/transformers src/transformers/cache_utils.py (DynamicCache)",
                 "models/deepseek_v3/modeling_deepseek_v3.py"),
        rules=(
            "weights: every parameter at the model dtype (a quantization_config's format when the checkpoint ships one)",
            "DynamicCache: per layer K and V of [batch, KV heads, tokens, head dim] at the model dtype, grown by "
            "concatenation (no paging, no pre-allocation)",
            "MLA models store expanded keys and values (heads × (nope + rope) and heads × v_head_dim), not the latent",
            "sliding-window layers keep the last window of tokens; linear-attention layers keep conv state at the "
            "model dtype and the recurrent state in fp32",
            "activation: one forward pass over the prompt with SDPA attention (no T² score matrix)",
        ),
        calibration="not calibrated against measurements"),
    "generic": EngineProfile(
        id="generic", name="k3lib generic", version="k3lib 0.1 make_plan rules", printed_unit="GiB",
        unit_note="k3lib prints GiB (2^30) or GB (10^9), always named.",
        sources=("k3lib.core.plan", "k3lib.core.memory"),
        rules=("weights + KV cache + activation + overhead, as k3lib.core.plan.make_plan computes them",),
        calibration="the guides' worked examples", aliases=("k3lib", "default")),
}
_ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp", "hf": "transformers",
                   "huggingface": "transformers", "sgl": "sglang", "k3lib": "generic", "default": "generic"}


def get_engine(name: "str | EngineProfile") -> EngineProfile:
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
    from k3lib.loaders import LoadedModel
    from k3lib.core.models import PublishedProfile, get_model

    if isinstance(model, LoadedModel):
        return model.require_architecture(), model
    spec = get_model(model)
    if isinstance(spec, PublishedProfile):
        raise K3InputError("model", f"{spec.id} is a guide's published profile; engine profiles need an "
                           "architecture", "an architecture id (k3plan models), --config, --gguf or --safetensors")
    return spec, None


def _kv_bytes_per_element(kv_dtype: "str | float", dtype_bytes: int) -> float:
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


# ---------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------

VLLM_BLOCK_TOKENS = 16
VLLM_VOCAB_PADDING = 64
VLLM_MAX_NUM_BATCHED_TOKENS = 8192
VLLM_MAX_NUM_SEQS = 1024
#: fitted to the 0.19 sweep (see vllm_activation_peak_bytes)
VLLM_ACTIVATION_BASE_BYTES = int(0.05 * GiB)
VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB = 14.2
VLLM_ACTIVATION_HIDDEN_COPIES = 1.65
VLLM_MULTIMODAL_ACTIVATION_BYTES = int(0.2 * GiB)
VLLM_NON_TORCH_BYTES_TP1 = int(0.25 * GiB)
VLLM_NON_TORCH_BYTES_TP = int(2.15 * GiB)
VLLM_CUDA_GRAPH_ESTIMATE_BYTES = int(1.0 * GiB)


@dataclass(frozen=True)
class VLLMKVLayout:
    """How vLLM pages one rank's KV cache.

    ``groups`` lists (layer kind, layers) for each KV-cache group; every group
    draws blocks from one pool, each block holding ``group_size`` layer pages of
    ``page_bytes``.
    """

    block_tokens: int
    page_bytes: int
    group_size: int
    groups: tuple[tuple[str, int], ...]
    window_tokens: Mapping[str, int] = field(default_factory=dict)
    padded_layers: int = 0

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def bytes_per_block(self) -> int:
        """Bytes one block index occupies across the layers of a group."""
        return self.page_bytes * self.group_size

    def num_blocks(self, available_bytes: int) -> int:
        """⌊available ÷ (page × layers per group)⌋."""
        return max(0, int(available_bytes) // self.bytes_per_block)

    def tokens(self, available_bytes: int) -> int:
        """The 'GPU KV cache size' vLLM prints: ⌊blocks ÷ groups⌋ × block size."""
        return self.num_blocks(available_bytes) // self.num_groups * self.block_tokens

    def blocks_per_request(self, context_tokens: int) -> int:
        """Blocks one request of ``context_tokens`` holds across all groups."""
        full = -(-context_tokens // self.block_tokens)
        n = 0
        for kind, _ in self.groups:
            if kind == "state":
                n += 1
            elif kind in self.window_tokens:
                n += min(full, -(-(self.window_tokens[kind] - 1) // self.block_tokens) + 1)
            else:
                n += full
        return n

    def bytes_for(self, *, context_tokens: int, batch: int) -> int:
        """KV memory ``batch`` requests of ``context_tokens`` need on this rank."""
        return batch * self.blocks_per_request(context_tokens) * self.bytes_per_block


def _vllm_tokens_bytes_per_layer(g: AttentionGroup, *, tp: int, kv_b: float, mla_fp8_ds: bool) -> float:
    if g.kind in ("full", "sliding"):
        kvh = max(1, g.kv_heads // tp)
        return kvh * (g.head_dim + (g.v_head_dim or g.head_dim)) * kv_b
    if g.kind == "mla":
        return 656.0 if mla_fp8_ds else (g.kv_lora_rank + g.qk_rope_head_dim) * kv_b
    return 0.0


def vllm_kv_layout(model: Any, *, tp: int = 1, kv_dtype: "str | float" = "auto", dtype_bytes: int = 2,
                   block_tokens: int = VLLM_BLOCK_TOKENS, state_bytes_per_element: float | None = None,
                   mla_fp8_ds: bool = False) -> VLLMKVLayout:
    """vLLM 0.19's paging of one rank's KV cache (see the profile's rules).

    >>> lay = vllm_kv_layout("gemma-3-27b")            # 52 sliding + 10 full layers
    >>> lay.group_size, lay.num_groups, lay.page_bytes  # 7 groups of 10 layers, 16 × 8,192 B pages
    (10, 7, 131072)
    """
    arch, _ = _resolve_model(model)
    kv_b = _kv_bytes_per_element(kv_dtype, dtype_bytes)
    state_b = float(state_bytes_per_element if state_bytes_per_element is not None else dtype_bytes)
    kinds: list[tuple[str, int, float]] = []        # (kind label, layers, bytes per token per layer)
    windows: dict[str, int] = {}
    state_bytes = 0.0
    for g in arch.attention:
        if g.kind in LINEAR_KINDS:
            per_layer = (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) / tp * state_b
            state_bytes = max(state_bytes, per_layer)
            kinds.append(("state", g.count, 0.0))
            continue
        label = g.kind if g.kind != "sliding" else f"sliding:{g.window_tokens}"
        if g.kind == "sliding":
            windows[label] = g.window_tokens
        kinds.append((label, g.count, _vllm_tokens_bytes_per_layer(g, tp=tp, kv_b=kv_b, mla_fp8_ds=mla_fp8_ds)))
    # merge repeated kinds
    merged: dict[str, list] = {}
    for label, count, per_tok in kinds:
        if label in merged:
            merged[label][0] += count
        else:
            merged[label] = [count, per_tok]
    attn_per_tok = max((v[1] for k, v in merged.items() if k != "state"), default=0.0)
    if attn_per_tok <= 0 and state_bytes <= 0:
        raise K3InputError("model", f"{arch.id} has no layer that caches anything")
    block = block_tokens
    if state_bytes and attn_per_tok:
        # attention block grows until one page holds a layer's state (vLLM: HybridAttentionMambaModelConfig)
        block = block_tokens * math.ceil(state_bytes / (block_tokens * attn_per_tok))
    page = int(math.ceil(block * attn_per_tok)) if attn_per_tok else int(math.ceil(state_bytes))
    counts = [v[0] for v in merged.values()]
    if len(counts) == 1:
        group_size = counts[0]
        groups = ((next(iter(merged)), counts[0]),)
        padded = 0
    else:
        lo, hi = min(counts), max(counts)
        group_size = hi if hi < lo * 1.25 else lo
        out: list[tuple[str, int]] = []
        padded = 0
        for label, (count, _) in merged.items():
            n = -(-count // group_size)
            padded += n * group_size - count
            base, extra = divmod(count, n)
            out.extend((label, base + (1 if i < extra else 0)) for i in range(n))
        groups = tuple(out)
    return VLLMKVLayout(block_tokens=block, page_bytes=page, group_size=group_size, groups=groups,
                        window_tokens=windows, padded_layers=padded)


def vllm_kv_cache_tokens(model: Any, *, available_bytes: int, tp: int = 1, kv_dtype: "str | float" = "auto",
                         dtype_bytes: int = 2, **layout_options) -> int:
    """Tokens vLLM prints as 'GPU KV cache size' for ``available_bytes`` of KV memory per rank."""
    return vllm_kv_layout(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes, **layout_options).tokens(
        available_bytes)


def vllm_kv_tokens_interval(model: Any, *, printed_gib: float, tp: int = 1, kv_dtype: "str | float" = "auto",
                            dtype_bytes: int = 2, **layout_options) -> tuple[int, int]:
    """The token counts vLLM can have printed when it printed ``printed_gib`` of
    available KV memory (rounded to 0.01 GiB, so the truth is within ±0.005 GiB).

    >>> vllm_kv_tokens_interval("llama-3.1-8b", printed_gib=58.11)    # vLLM printed 476,016
    (475984, 476064)
    """
    lay = vllm_kv_layout(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes, **layout_options)
    return (lay.tokens(int(printed_gib * GiB - PRINTED_ROUNDING_BYTES)),
            lay.tokens(int(printed_gib * GiB + PRINTED_ROUNDING_BYTES)))


_SHARDED = ("embedding", "lm_head", "attention", "dense_mlp", "shared_experts", "routed_experts", "vision")


def _group_params_per_rank(arch: Architecture, tp: int) -> dict[str, float]:
    """Parameters per TP rank for each group, as vLLM shards them."""
    d = arch.hidden_size
    vocab = _round_up(arch.vocab_size, VLLM_VOCAB_PADDING)
    groups = arch.param_groups()
    attn = 0.0
    for g in arch.attention:
        if g.kind in LINEAR_KINDS:
            attn += g.count * g.params_per_layer(d) / tp
            continue
        heads = max(1, g.num_heads // tp)
        local = dataclasses.replace(g, num_heads=heads, kv_heads=max(1, g.kv_heads // tp) if g.kv_heads else 0,
                                    linear_value_heads=0)
        attn += g.count * local.params_per_layer(d)
    return {
        "embedding": vocab * d / tp,
        "lm_head": 0 if arch.tie_word_embeddings else vocab * d / tp,
        "attention": attn,
        "dense_mlp": groups["dense_mlp"] / tp,
        "shared_experts": groups["shared_experts"] / tp,
        "routed_experts": groups["routed_experts"] / tp,
        "moe_other": groups["moe_other"],
        "norms": groups["norms"],
    }


def _mxfp4_expert_bytes_per_rank(arch: Architecture, tp: int) -> int:
    """MXFP4 experts as vLLM's Marlin MoE kernel stores them on one rank: intermediate
    per rank padded to 128, hidden to 256; E8M0 scales per 32; BF16 biases."""
    m = arch.mlp
    inter = _round_up(-(-m.moe_intermediate // tp), 128)
    hidden = _round_up(m.latent_dim or arch.hidden_size, 256)
    per_expert = (2 * inter * hidden // 2 + 2 * inter * hidden // 32          # w13 weight + scales
                  + hidden * inter // 2 + hidden * inter // 32)               # w2 weight + scales
    if m.expert_bias:
        per_expert += (2 * inter + hidden) * 2
    return m.moe_layers * m.n_routed_experts * per_expert


def vllm_weights_bytes_per_rank(model: Any, *, tp: int = 1, weights: str = "native",
                                dtype_bytes: int | None = None) -> dict[str, int]:
    """Bytes vLLM loads on each TP rank, by group, plus ``rope_cache`` and ``total``.

    A weight file's exact bytes are split the same way (sharded groups ÷ TP).
    ``dtype_bytes`` overrides the unquantized dtype (``--dtype float32`` → 4).
    """
    from k3lib.core.memory import weight_bits_by_group

    arch, loaded = _resolve_model(model)
    base_b = dtype_bytes or (loaded.dtype_bytes if loaded is not None else 2)
    out: dict[str, int] = {}
    if loaded is not None and loaded.exact and weights == "native":
        for g, b in loaded.weights_bytes_by_group.items():
            if g == "mtp":
                continue                              # MTP layers load only for speculative decoding
            out[g] = int(math.ceil(b / tp)) if g in _SHARDED else b
    else:
        bits = weight_bits_by_group(arch, weights)
        params = _group_params_per_rank(arch, tp)
        for g, n in params.items():
            b = bits.get(g, bits.get("*", 16))
            if dtype_bytes and b == 16:
                b = 8 * dtype_bytes
            out[g] = int(math.ceil(n * b / 8))
        if bits.get("routed_experts") == _format_bits("mxfp4") and arch.mlp.moe_layers:
            out["routed_experts"] = _mxfp4_expert_bytes_per_rank(arch, tp)
        if loaded is not None and loaded.vision_params:
            out["vision"] = int(math.ceil(loaded.vision_params * base_b / tp))
    ropes = loaded.rope_caches if loaded is not None and loaded.rope_caches else _default_rope_caches(arch)
    out["rope_cache"] = sum(pos * rot for pos, rot in ropes) * base_b
    out["total"] = sum(out.values())
    return out


def _format_bits(fmt: str) -> float:
    from k3lib.core.precisions import get_weight_format
    return get_weight_format(fmt).bits_per_weight


def _default_rope_caches(arch: Architecture) -> tuple[tuple[int, int], ...]:
    rot = 0
    for g in arch.attention:
        if g.kind == "mla":
            rot = g.qk_rope_head_dim
            break
        if g.kind in ("full", "sliding"):
            rot = g.head_dim
            break
    return ((arch.max_context_tokens, rot),) if rot else ()


def vllm_activation_peak_bytes(model: Any, *, tp: int = 1, dtype_bytes: int = 2,
                               max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
                               max_num_seqs: int = VLLM_MAX_NUM_SEQS) -> int:
    """The activation peak vLLM 0.19's profiling run records (TP-invariant in the sweep).

    $A = A_0 + c_s·S·V + c_h·T·D·b + T·k·(\\max(2I_e/TP, D) + I_e/TP)·2 + A_{mm}$:
    a base ($A_0$ = 0.05 GiB), the sampler's fp32 logits over $S$ = max_num_seqs
    sequences and $V$ vocabulary entries ($c_s$ = 14.2 B, about 3.5 fp32 copies),
    $c_h$ = 1.65 hidden-state copies of the $T$-token batch at $b$ bytes, the
    fused-MoE workspace for $k$ routed experts of width $I_e$, and 0.2 GiB for a
    multimodal encoder pass when the model has a vision tower. The constants are a
    least-squares fit to the 29 runs of the 0.19 sweep (activation + non-torch =
    budget − printed weights − printed KV memory): RMS residual 0.10 GiB, worst
    0.33 GiB (gpt-oss-20b).

    >>> round(vllm_activation_peak_bytes("llama-3.1-8b") / 2**30, 2)   # vLLM's log: 1.89 GiB
    1.89
    """
    arch, loaded = _resolve_model(model)
    m = arch.mlp
    a = VLLM_ACTIVATION_BASE_BYTES
    a += VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB * max_num_seqs * arch.vocab_size
    a += VLLM_ACTIVATION_HIDDEN_COPIES * max_num_batched_tokens * arch.hidden_size * dtype_bytes
    if m.moe_layers:
        ie = -(-m.moe_intermediate // tp)
        a += max_num_batched_tokens * m.experts_per_token * (max(2 * ie, arch.hidden_size) + ie) * 2
    if loaded is not None and loaded.vision_params:
        a += VLLM_MULTIMODAL_ACTIVATION_BYTES
    return int(a)


def vllm_non_torch_bytes(*, tp: int = 1) -> int:
    """CUDA context, NCCL and all-reduce buffers outside PyTorch's allocator (0.19 on H100)."""
    return VLLM_NON_TORCH_BYTES_TP1 if tp == 1 else VLLM_NON_TORCH_BYTES_TP


# ---------------------------------------------------------------------------
# llama.cpp
# ---------------------------------------------------------------------------

#: (elements per block, bytes per block) of llama.cpp cache types
LLAMACPP_CACHE_TYPES = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18),
                        "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "iq4_nl": (32, 18)}


def _llamacpp_row_bytes(cache_type: str, n: int) -> float:
    key = str(cache_type).lower()
    if key not in LLAMACPP_CACHE_TYPES:
        raise K3InputError("cache_type", f"{cache_type!r} is not a llama.cpp cache type",
                           ", ".join(LLAMACPP_CACHE_TYPES))
    block, size = LLAMACPP_CACHE_TYPES[key]
    if n % block:
        raise K3InputError("cache_type", f"{cache_type} needs rows that are a multiple of {block}; this model's "
                           f"row is {n}")
    return n // block * size


def llamacpp_kv_cache_bytes(model: Any, *, context_tokens: int, n_seq: int = 1, flash_attn: bool = True,
                            type_k: str = "f16", type_v: str = "f16", n_ubatch: int = 512, swa_full: bool = False,
                            kv_unified: bool = False) -> dict[str, int]:
    """llama.cpp's KV and recurrent-state buffers for ``n_seq`` sequences of ``context_tokens``.

    >>> kv = llamacpp_kv_cache_bytes("llama-3.1-8b", context_tokens=8000)    # padded to 8,192 cells
    >>> kv["cells"], kv["total"] // 2**20                                     # MiB, as llama.cpp prints
    (8192, 1024)
    """
    arch, _ = _resolve_model(model)
    pad = 256 if flash_attn else 32
    if not flash_attn and str(type_v).lower() not in ("f16", "f32", "bf16"):
        raise K3InputError("type_v", "a quantized V cache needs flash attention in llama.cpp", "f16, or flash_attn=True")
    streams = 1 if kv_unified else n_seq
    ctx_per_stream = context_tokens * n_seq if kv_unified else context_tokens
    cells = _round_up(ctx_per_stream, pad)
    out = {"cells": cells, "streams": streams, "full": 0, "sliding": 0, "state": 0}
    for g in arch.attention:
        if g.kind in LINEAR_KINDS:
            out["state"] += int(g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer)
                                * 4 * n_seq)
            continue
        if g.kind == "mla":
            k_row = _llamacpp_row_bytes(type_k, g.kv_lora_rank + g.qk_rope_head_dim)
            v_row = _llamacpp_row_bytes(type_v, g.kv_lora_rank)
        else:
            k_row = _llamacpp_row_bytes(type_k, g.kv_heads * g.head_dim)
            v_row = _llamacpp_row_bytes(type_v, g.kv_heads * (g.v_head_dim or g.head_dim))
        n_cells = cells
        if g.kind == "sliding" and not swa_full:
            n_cells = min(cells, _round_up(g.window_tokens * (n_seq if kv_unified else 1) + n_ubatch, pad))
        size = int(g.count * n_cells * streams * (k_row + v_row))
        out["sliding" if g.kind == "sliding" else "full"] += size
        if g.kind == "sliding":
            out["swa_cells"] = n_cells
    out["total"] = out["full"] + out["sliding"] + out["state"]
    return out


def llamacpp_compute_buffer_bytes(model: Any, *, context_tokens: int, n_seq: int = 1, flash_attn: bool = True,
                                  n_ubatch: int = 512) -> int:
    """Approximate CUDA compute buffer: n_ubatch × 4 B × (V + 4D + 2·I), plus the
    f32 attention scores (heads × n_ubatch × cells) without flash attention."""
    arch, _ = _resolve_model(model)
    m = arch.mlp
    width = max(m.dense_intermediate if m.dense_layers else 0,
                m.experts_per_token * m.moe_intermediate + m.n_shared_experts * m.shared_intermediate)
    b = n_ubatch * 4 * (arch.vocab_size + 4 * arch.hidden_size + 2 * width)
    if not flash_attn:
        cells = _round_up(context_tokens * n_seq, 32)
        b += arch.attention_heads * n_ubatch * cells * 4
    return int(b)


def llamacpp_weights_bytes(model: Any, *, weights: str = "native") -> dict[str, int]:
    """GPU and host weight bytes with every layer offloaded: token_embd stays on the host."""
    from k3lib.core.memory import weights_bytes_by_group

    arch, loaded = _resolve_model(model)
    if loaded is not None and loaded.exact and weights == "native":
        groups = {g: b for g, b in loaded.weights_bytes_by_group.items() if g not in ("vision",)}
    else:
        groups = weights_bytes_by_group(arch, weights if weights != "native" else "native")
    emb = groups.get("embedding", 0)
    gpu = sum(groups.values()) - emb
    if arch.tie_word_embeddings:
        gpu += emb                                   # the tied output head is duplicated onto the GPU
    return {"gpu": gpu, "host": emb, "total": sum(groups.values())}


# ---------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------

def sglang_mem_fraction_static(*, gpu_memory_bytes: int, tp: int = 1, pp: int = 1,
                               chunked_prefill_size: int | None = None, cuda_graph_max_bs: int | None = None) -> float:
    """SGLang's default ``mem_fraction_static`` (server_args.py, 0.5.x):
    (GPU MiB − reserved) ÷ GPU MiB with reserved = 512 + 1.5·max(chunk, 2048) + 2·graph bs + 1024·TP·PP/8.

    >>> sglang_mem_fraction_static(gpu_memory_bytes=int(79.19 * 2**30))      # H100, TP=1
    0.834
    """
    mib = gpu_memory_bytes / MiB
    gib = gpu_memory_bytes / GiB
    if chunked_prefill_size is None:
        chunked_prefill_size = 2048 if gib < 35 else 4096 if gib < 60 else 8192 if gib < 160 else 16384
    if cuda_graph_max_bs is None:
        cuda_graph_max_bs = 8 if gib < 35 else (256 if tp < 4 else 512)
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 * 1024
    return round((mib - reserved) / mib, 3)


def sglang_cell_bytes(model: Any, *, tp: int = 1, kv_dtype: "str | float" = "auto", dtype_bytes: int = 2) -> int:
    """Bytes per token slot of SGLang's pool on one rank (MLA: the latent only)."""
    arch, _ = _resolve_model(model)
    kv_b = _kv_bytes_per_element(kv_dtype, dtype_bytes)
    n = 0.0
    for g in arch.attention:
        if g.kind == "mla":
            n += g.count * (g.kv_lora_rank + g.qk_rope_head_dim) * kv_b
        elif g.kind in ("full", "sliding"):
            n += g.count * max(1, g.kv_heads // tp) * (g.head_dim + (g.v_head_dim or g.head_dim)) * kv_b
    return int(math.ceil(n))


# ---------------------------------------------------------------------------
# transformers
# ---------------------------------------------------------------------------

def transformers_cache_bytes(model: Any, *, context_tokens: int, batch: int = 1, dtype_bytes: int = 2) -> int:
    """DynamicCache bytes: expanded K/V per layer (MLA too), windowed layers capped,
    linear-attention conv state at the model dtype and recurrent state in fp32."""
    arch, _ = _resolve_model(model)
    n = 0.0
    for g in arch.attention:
        if g.kind == "mla":
            per_tok = g.num_heads * (g.qk_nope_head_dim + g.qk_rope_head_dim + g.v_head_dim)
            n += g.count * per_tok * context_tokens * dtype_bytes
        elif g.kind in ("full", "sliding"):
            tokens = min(context_tokens, g.window_tokens) if g.kind == "sliding" else context_tokens
            n += g.count * g.kv_elements_per_token_per_layer * tokens * dtype_bytes
        else:
            n += g.count * (g.conv_state_elements_per_layer * dtype_bytes + g.recurrent_state_elements_per_layer * 4)
    return int(math.ceil(n * batch))


# ---------------------------------------------------------------------------
# one estimate, any engine
# ---------------------------------------------------------------------------

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

    @property
    def headroom_bytes(self) -> int:
        return self.kv_available_bytes - self.kv_needed_bytes

    def components(self) -> dict[str, int]:
        """Per-GPU rows in order: what the engine holds besides the KV cache, then the cache."""
        return {"weights": self.weights_bytes, "activation": self.activation_bytes,
                "runtime (non-torch, context)": self.runtime_bytes, "CUDA graphs": self.cuda_graph_bytes,
                "KV cache needed": self.kv_needed_bytes}

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["printed"] = dict(self.printed)
        d["notes"] = list(self.notes)
        d["headroom_bytes"] = self.headroom_bytes
        return d


def _hardware(gpu: Any):
    from k3lib.core.hardware import GPUSpec, get_gpu
    return gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)


def estimate_for_engine(engine: "str | EngineProfile", *, model: Any = "kimi-k3", gpu: Any = "h100-sxm",
                        gpus: int = 1, tp: int | None = None, context: object = 8192, batch: object = 1,
                        kv_dtype: str = "auto", weights: str = "native", gpu_memory_utilization: float | None = None,
                        dtype_bytes: int | None = None, **options: Any) -> EngineEstimate:
    """Estimate one GPU's memory for ``model`` on ``gpus`` GPUs under ``engine``'s rules.

    ``tp`` defaults to ``gpus`` (vLLM, SGLang), and for llama.cpp the GPUs share
    the layers. Options: vLLM ``estimate_cuda_graphs``, ``max_num_seqs``,
    ``max_num_batched_tokens``; llama.cpp ``flash_attn``, ``type_k``, ``type_v``,
    ``n_ubatch``, ``swa_full``, ``kv_unified``; SGLang ``mem_fraction_static``.
    """
    from k3lib.core.units import parse_context_tokens, parse_positive_int

    prof = get_engine(engine)
    ctx = parse_context_tokens(context, "context")
    n_batch = parse_positive_int(batch, "batch")
    n_gpus = parse_positive_int(gpus, "gpus")
    tp_i = parse_positive_int(tp, "tp") if tp is not None else n_gpus
    hw = _hardware(gpu)
    if prof.id == "generic":
        return _generic_estimate(model, hw, n_gpus, tp_i, ctx, n_batch, kv_dtype, weights)
    arch, loaded = _resolve_model(model)
    base_b = dtype_bytes or (loaded.dtype_bytes if loaded is not None else 2)
    for head in arch.head_counts():
        if prof.id in ("vllm", "sglang") and head % tp_i:
            raise K3InputError("tp", f"{arch.name} has {head} heads, which {tp_i}-way tensor parallelism cannot split",
                               "a divisor of the head counts")
    total = hw.memory_bytes("usable")
    kv_label = str(kv_dtype)
    notes: list[str] = []
    cg = 0
    if prof.id == "vllm":
        util = 0.9 if gpu_memory_utilization is None else float(gpu_memory_utilization)
        if not 0 < util <= 1:
            raise K3InputError("gpu_memory_utilization", f"{util!r} must be in (0, 1]")
        budget = int(util * total)
        w = vllm_weights_bytes_per_rank(model, tp=tp_i, weights=weights, dtype_bytes=dtype_bytes)["total"]
        act = vllm_activation_peak_bytes(model, tp=tp_i, dtype_bytes=base_b,
                                         max_num_batched_tokens=options.get("max_num_batched_tokens",
                                                                            VLLM_MAX_NUM_BATCHED_TOKENS),
                                         max_num_seqs=options.get("max_num_seqs", VLLM_MAX_NUM_SEQS))
        rt = vllm_non_torch_bytes(tp=tp_i)
        if options.get("estimate_cuda_graphs"):
            cg = int(options.get("cuda_graph_bytes", VLLM_CUDA_GRAPH_ESTIMATE_BYTES))
        else:
            notes.append("CUDA graphs (≈0.5–1.9 GiB) are captured after sizing the cache, in the "
                         f"{1 - util:.0%} left outside gpu_memory_utilization")
        avail = budget - w - act - rt - cg
        layout = vllm_kv_layout(model, tp=tp_i, kv_dtype=kv_dtype, dtype_bytes=base_b,
                                mla_fp8_ds=str(kv_dtype) == "fp8_ds_mla")
        cap = layout.tokens(max(avail, 0))
        need = layout.bytes_for(context_tokens=ctx, batch=n_batch)
        per_req = layout.blocks_per_request(ctx)
        conc = layout.num_blocks(max(avail, 0)) / per_req if per_req else 0.0
        if layout.padded_layers:
            notes.append(f"{layout.padded_layers} padding layer(s) in the KV-cache groups ({layout.num_groups} groups "
                         f"of {layout.group_size} layers)")
        if layout.block_tokens != VLLM_BLOCK_TOKENS:
            notes.append(f"attention block size raised to {layout.block_tokens} tokens to hold the linear-attention state")
        printed = {"Model loading took": _gib(w), "Available KV cache memory": _gib(max(avail, 0)),
                   "GPU KV cache size": f"{cap:,} tokens",
                   f"Maximum concurrency for {ctx:,} tokens per request": f"{conc:.2f}x"}
        fits = avail > 0 and need <= avail
        if avail <= 0:
            reason = (f"no memory left for the KV cache: weights {_gib(w)} + activation {_gib(act)} + non-torch "
                      f"{_gib(rt)} exceed the {util:.2f} × {_gib(total)} budget by {_gib(-avail)}")
        elif fits:
            reason = f"fits: {n_batch} × {ctx:,} tokens need {_gib(need)} of the {_gib(avail)} vLLM gives the KV cache"
        else:
            reason = (f"does not fit: {n_batch} × {ctx:,} tokens need {_gib(need)}, vLLM has {_gib(avail)} for the "
                      f"KV cache ({cap:,} tokens)")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, tp_i, ctx, n_batch, kv_label, total,
                              budget, w, act, rt, cg, max(avail, 0), need, cap, conc, fits, reason, printed,
                              tuple(notes))
    if prof.id == "llama.cpp":
        fa = options.get("flash_attn", True)
        type_k = options.get("type_k") or ("f16" if kv_dtype in ("auto", "bf16", "f16", "fp16") else kv_dtype)
        type_v = options.get("type_v") or type_k
        kv = llamacpp_kv_cache_bytes(model, context_tokens=ctx, n_seq=n_batch, flash_attn=fa, type_k=type_k,
                                     type_v=type_v, n_ubatch=options.get("n_ubatch", 512),
                                     swa_full=options.get("swa_full", False),
                                     kv_unified=options.get("kv_unified", False))
        wts = llamacpp_weights_bytes(model, weights=weights)
        w = -(-wts["gpu"] // n_gpus)
        need = -(-kv["total"] // n_gpus)
        act = llamacpp_compute_buffer_bytes(model, context_tokens=ctx, n_seq=n_batch, flash_attn=fa,
                                            n_ubatch=options.get("n_ubatch", 512))
        rt = int(options.get("cuda_context_bytes", 0.5 * GiB))
        avail = total - w - act - rt
        per_cell = kv["total"] / max(1, kv["cells"] * kv["streams"])
        cap = int(max(avail, 0) * n_gpus // per_cell) if per_cell else 0
        fits = need <= avail
        printed = {"CUDA0 model buffer size": f"{w / MiB:,.2f} MiB", "CPU model buffer size": f"{wts['host'] / MiB:,.2f} MiB",
                   "KV self size": f"{need / MiB:,.2f} MiB", "CUDA0 compute buffer size": f"{act / MiB:,.2f} MiB",
                   "n_ctx (cells per stream)": f"{kv['cells']:,}"}
        notes.append(f"cells = {kv['cells']:,} per stream × {kv['streams']} stream(s)"
                     + (f"; SWA cells {kv['swa_cells']:,}" if "swa_cells" in kv else ""))
        reason = (f"{'fits' if fits else 'does not fit'}: KV {need / MiB:,.0f} MiB needed, "
                  f"{max(avail, 0) / MiB:,.0f} MiB left after weights and buffers")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, n_gpus, ctx, n_batch, f"{type_k}/{type_v}",
                              total, total, w, act, rt, 0, max(avail, 0), need, cap,
                              (max(avail, 0) / need * n_batch) if need else 0.0, fits, reason, printed, tuple(notes))
    if prof.id == "sglang":
        frac = options.get("mem_fraction_static")
        frac = sglang_mem_fraction_static(gpu_memory_bytes=total, tp=tp_i) if frac is None else float(frac)
        budget = int(frac * total)
        w = vllm_weights_bytes_per_rank(model, tp=tp_i, weights=weights, dtype_bytes=dtype_bytes)["total"]
        rt = int(options.get("cuda_context_bytes", (0.5 if tp_i == 1 else 1.5) * GiB))
        avail = budget - w - rt
        cell = sglang_cell_bytes(model, tp=tp_i, kv_dtype=kv_dtype, dtype_bytes=base_b)
        cap = max(0, avail) // cell if cell else 0
        state = sum(g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer)
                    for g in arch.attention) / tp_i * 4 * n_batch
        need = int(cell * ctx * n_batch + state)
        fits = avail > 0 and need <= avail
        printed = {"mem_fraction_static": f"{frac:.3f}", "Load weight end. mem usage": f"{w / GiB:.2f} GB",
                   "KV Cache is allocated. #tokens": f"{cap:,}",
                   "K size + V size": f"{cap * cell / GiB:.2f} GB"}
        reason = (f"{'fits' if fits else 'does not fit'}: {n_batch} × {ctx:,} tokens need {_gib(need)}; "
                  f"the pool holds {cap:,} tokens ({_gib(max(avail, 0))})")
        return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, tp_i, ctx, n_batch, kv_label, total,
                              budget, w, 0, rt, 0, max(avail, 0), need, int(cap),
                              (cap / ctx) if ctx else 0.0, fits, reason, printed, tuple(notes))
    # transformers
    from k3lib.core.memory import activation_bytes, weights_bytes_by_group

    if loaded is not None and loaded.exact and weights == "native":
        w_all = loaded.text_weights_bytes() + loaded.weights_bytes_by_group.get("vision", 0)
    else:
        w_all = sum(weights_bytes_by_group(arch, weights).values())
        if dtype_bytes:
            w_all = w_all * dtype_bytes // 2
        if loaded is not None:
            w_all += loaded.vision_params * base_b
    w = -(-w_all // n_gpus)
    need = -(-transformers_cache_bytes(model, context_tokens=ctx, batch=n_batch, dtype_bytes=base_b) // n_gpus)
    act = -(-activation_bytes(arch, batch=n_batch, prefill_chunk_tokens=ctx) // n_gpus)
    rt = int(0.5 * GiB)
    avail = total - w - act - rt
    fits = need <= avail
    notes.append("device_map='auto' spreads layers over the GPUs; each holds its layers' weights and cache")
    reason = f"{'fits' if fits else 'does not fit'}: DynamicCache {_gib(need)} per GPU, {_gib(max(avail, 0))} left"
    per_tok = need / max(1, ctx * n_batch)
    return EngineEstimate(prof.id, prof.version, arch.id, hw.id, n_gpus, 1, ctx, n_batch, f"model dtype ({base_b} B)",
                          total, total, w, act, rt, 0, max(avail, 0), need,
                          int(max(avail, 0) // per_tok) if per_tok else 0, (max(avail, 0) / need * n_batch) if need else 0.0,
                          fits, reason, {}, tuple(notes))


def _generic_estimate(model, hw, n_gpus, tp, ctx, batch, kv_dtype, weights) -> EngineEstimate:
    from k3lib.loaders import LoadedModel, plan_for_loaded
    from k3lib.core.plan import make_plan

    kvd = "bf16" if kv_dtype == "auto" else kv_dtype
    if isinstance(model, LoadedModel):
        plan = plan_for_loaded(model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx,
                               batch=batch)
    else:
        plan = make_plan(model=model, gpu=hw, gpus=n_gpus, tp=tp, weights=weights, kv_dtype=kvd, context=ctx,
                         batch=batch)
    pg = plan.per_gpu
    avail = max(0, pg.available_bytes - pg.weights_bytes - pg.activation_bytes - pg.overhead_bytes)
    per_token = pg.kv_cache_bytes / (ctx * batch)
    prof = ENGINES["generic"]
    return EngineEstimate(prof.id, prof.version, plan.model.id, hw.id, n_gpus, plan.tp, ctx, batch, kvd,
                          pg.available_bytes, pg.available_bytes, pg.weights_bytes, pg.activation_bytes,
                          pg.overhead_bytes, 0, avail, pg.kv_cache_bytes, int(avail // per_token) if per_token else 0,
                          avail / pg.kv_cache_bytes * batch if pg.kv_cache_bytes else 0.0, plan.fits, plan.reason,
                          {}, plan.notes)


# ---------------------------------------------------------------------------
# calibration against data/measured
# ---------------------------------------------------------------------------

MEASURED_DIR = DATA_DIR / "measured"
VLLM_SWEEP_CSV = MEASURED_DIR / "vllm-0.19-h100-sweep.csv"
CALIBRATION_MODELS_CSV = MEASURED_DIR / "calibration_models.csv"
#: vLLM prints GiB with two decimals: the true figure is within ±0.005 GiB
PRINTED_ROUNDING_BYTES = 0.005 * GiB


@dataclass(frozen=True)
class CalibrationRow:
    """One measured figure, the profile's prediction, and the error."""

    id: str
    model: str
    tp: int
    quantity: str
    measured: float
    predicted: float
    unit: str
    error: float
    error_pct: float
    tolerance: float
    within: bool
    kind: str
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@lru_cache(maxsize=None)
def _calibration_models() -> dict[str, dict[str, str]]:
    with open(CALIBRATION_MODELS_CSV, newline="", encoding="utf-8") as fh:
        return {r["model"]: {k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)}


def read_vllm_sweep() -> list[dict[str, str]]:
    """The 87 rows of ``data/measured/vllm-0.19-h100-sweep.csv``."""
    with open(VLLM_SWEEP_CSV, newline="", encoding="utf-8") as fh:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


@lru_cache(maxsize=None)
def calibration_model(hf_repo: str):
    """The :class:`~k3lib.loaders.LoadedModel` of a sweep model (its config in data/measured/configs)."""
    import warnings

    from k3lib.loaders import load_config

    row = _calibration_models().get(hf_repo)
    if row is None:
        raise K3InputError("model", f"{hf_repo!r} has no config in {CALIBRATION_MODELS_CSV.name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_config(MEASURED_DIR / "configs" / row["config_file"], id=hf_repo.split("/")[-1])


def _row_dtypes(row: Mapping[str, str]) -> tuple[int | None, float, str]:
    """(dtype override bytes, KV bytes per element, kv label) from a sweep row."""
    wd, kd = row["weights_dtype"].lower(), row["kv_dtype"].lower()
    dtype = 4 if wd.startswith("float32") else None
    kv_b = 1.0 if kd.startswith("fp8") else 4.0 if kd.startswith("float32") else 2.0
    return dtype, kv_b, kd.split(" ")[0]


def _utilization(row: Mapping[str, str]) -> float:
    text = row["gpu"]
    i = text.find("gpu_memory_utilization=")
    return float(text[i + len("gpu_memory_utilization="):].rstrip(")").split(";")[0]) if i >= 0 else 0.9


def vllm_calibration(*, total_memory_bytes: int | None = None) -> tuple[CalibrationRow, ...]:
    """Predict every figure of the vLLM 0.19 sweep and report the error of each.

    * ``kv_cache_tokens``: from the row's printed available memory (so only the
      paging rules are tested). Tolerance: the printed GiB is rounded to 0.01, so
      the prediction is an interval (:func:`vllm_kv_tokens_interval`); ``within`` =
      the printed count lies in it, widened by one block. ``error`` is in tokens
      from the printed figure's value.
    * ``weights_memory_per_gpu``: the weights rule; tolerance 3 %.
    * ``kv_cache_memory_per_gpu``: end to end (budget − weights − activation −
      non-torch); tolerance 0.5 GiB.
    """
    from k3lib.core.hardware import get_gpu

    total = total_memory_bytes or get_gpu("h100-sxm").memory_bytes("usable")
    rows = read_vllm_sweep()
    by_run: dict[str, dict[str, dict[str, str]]] = {}
    for r in rows:
        by_run.setdefault(r["source"], {})[r["quantity"]] = r
    reasons = {m: r.get("notes", "") for m, r in _calibration_models().items()}
    out: list[CalibrationRow] = []
    for r in rows:
        run = by_run[r["source"]]
        model = calibration_model(r["model"])
        arch = model.architecture
        tp = int(r["tp"])
        dtype, kv_b, kv_label = _row_dtypes(r)
        base_b = dtype or model.dtype_bytes
        measured = float(r["value"])
        kind = ("hybrid" if len({g.kind for g in arch.attention}) > 1 else
                "mla" if arch.attention[0].kind == "mla" else "dense")
        if r["quantity"] == "kv_cache_tokens":
            printed = float(run["kv_cache_memory_per_gpu"]["value"])
            layout = vllm_kv_layout(model, tp=tp, kv_dtype=kv_b, dtype_bytes=base_b)
            pred = layout.tokens(int(printed * GiB))
            lo, hi = vllm_kv_tokens_interval(model, printed_gib=printed, tp=tp, kv_dtype=kv_b, dtype_bytes=base_b)
            lo, hi = lo - layout.block_tokens, hi + layout.block_tokens
            err = measured - pred
            tol = max(pred - lo, hi - pred)
            within = lo <= measured <= hi
            out.append(CalibrationRow(r["id"], r["model"], tp, r["quantity"], measured, pred, "tokens", err,
                                      100 * err / measured, tol, within, kind,
                                      "" if within else reasons.get(r["model"], "")))
        elif r["quantity"] == "weights_memory_per_gpu":
            pred = vllm_weights_bytes_per_rank(model, tp=tp, dtype_bytes=dtype)["total"] / GiB
            err = pred - measured
            pct = 100 * err / measured
            within = abs(pct) <= 3.0
            out.append(CalibrationRow(r["id"], r["model"], tp, r["quantity"], measured, round(pred, 4), "GiB",
                                      round(err, 4), round(pct, 3), 3.0, within, kind,
                                      "" if within else reasons.get(r["model"], "")))
        else:
            util = _utilization(r)
            act = vllm_activation_peak_bytes(model, tp=tp, dtype_bytes=base_b)
            pred_b = util * total - vllm_weights_bytes_per_rank(model, tp=tp, dtype_bytes=dtype)["total"] \
                - act - vllm_non_torch_bytes(tp=tp)
            pred = pred_b / GiB
            err = pred - measured
            within = abs(err) <= 0.5
            out.append(CalibrationRow(r["id"], r["model"], tp, r["quantity"], measured, round(pred, 4), "GiB",
                                      round(err, 4), round(100 * err / measured, 3), 0.5, within, kind,
                                      "" if within else reasons.get(r["model"], "")))
    return tuple(out)


def calibration_summary(rows: "tuple[CalibrationRow, ...] | None" = None) -> dict[str, dict[str, int]]:
    """{quantity: {"rows": n, "within": n}} over :func:`vllm_calibration`."""
    rows = rows if rows is not None else vllm_calibration()
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        s = out.setdefault(r.quantity, {"rows": 0, "within": 0})
        s["rows"] += 1
        s["within"] += int(r.within)
    return out


__all__ = ["ENGINES", "EngineProfile", "EngineEstimate", "get_engine", "estimate_for_engine",
           "VLLMKVLayout", "vllm_kv_layout", "vllm_kv_cache_tokens", "vllm_weights_bytes_per_rank",
           "vllm_activation_peak_bytes", "vllm_non_torch_bytes", "vllm_kv_tokens_interval", "llamacpp_kv_cache_bytes",
           "llamacpp_compute_buffer_bytes", "llamacpp_weights_bytes", "sglang_mem_fraction_static",
           "sglang_cell_bytes", "transformers_cache_bytes", "vllm_calibration", "calibration_summary",
           "CalibrationRow", "read_vllm_sweep", "calibration_model"]
