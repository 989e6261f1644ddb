"""vLLM (V0 and V1 engines, 0.5 – 0.19): weights per rank, activation peak, non-torch memory,
the KV budget and the paged KV cache (block size, KV-cache groups, the printed token count and
maximum concurrency), as rules read from its source, per version where they changed.

Versions read (PyPI source distributions, file paths inside ``vllm/``):

======================  ======================================================================
0.5.5                   ``worker/worker.py`` ``determine_num_available_blocks``
0.6.4.post1             ``worker/worker.py``; ``executor/gpu_executor.py`` (concurrency line)
0.6.6.post1             ``worker/worker.py``; ``utils.py`` ``memory_profiling``
0.8.5                   ``v1/worker/gpu_worker.py``; ``v1/core/kv_cache_utils.py``
0.9.2, 0.10.2           ``v1/worker/gpu_worker.py``; ``v1/core/kv_cache_utils.py``
0.11.0 – 0.19.0         ``v1/core/kv_cache_utils.py``; ``v1/kv_cache_interface.py``;
(0.11.0, 0.11.1,        ``model_executor/models/config.py`` ``HybridAttentionMambaModelConfig``;
0.11.2, 0.14.0, 0.19.0) ``model_executor/layers/mamba/mamba_utils.py``; ``utils/mem_utils.py`` (0.19)
======================  ======================================================================

A rule is taken to start at the first release read that has it (0.9.0 and 0.9.1 are assumed to
behave like 0.9.2), except V0's ``memory_profiling`` budget, which starts at 0.6.5: it came with
vllm PR 10511 (merged 2024-12-14), whose own sanity-check log is a test fixture.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from k3lib.core.architecture import Architecture, AttentionGroup
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import FULL, MLA, kind_of
from k3lib.core.units import GiB
from k3lib.engines.base import _kv_bytes_per_element, _resolve_model, _round_up

#: vLLM prints GiB with two decimals: the true figure is within ±0.005 GiB
PRINTED_ROUNDING_BYTES = 0.005 * GiB

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
#: the newest vLLM version modelled; every profile function defaults to it
VLLM_DEFAULT_VERSION = "0.19.0"
#: V0's scheduler defaults (vllm 0.6.x ``config.py`` SchedulerConfig): 256 sequences; without chunked
#: prefill a profiling batch of max(max_model_len, 2048) tokens
VLLM_V0_MAX_NUM_SEQS = 256
VLLM_V0_MIN_BATCHED_TOKENS = 2048


def parse_vllm_version(version: str | tuple[int, ...]) -> tuple[int, int, int]:
    """(major, minor, patch) from ``"0.6.4.post1"``, ``"v0.19.0"``, ``"0.11"`` or a tuple."""
    if isinstance(version, tuple) and 2 <= len(version) <= 3 and all(isinstance(v, int) and v >= 0 for v in version):
        return version[0], version[1], version[2] if len(version) == 3 else 0
    import re

    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.+\-]?\w[\w.+\-]*)?", str(version).strip())
    if not m or isinstance(version, bool):
        raise K3InputError(
            "vllm_version",
            f"{version!r} is not a vLLM version",
            "a version string such as '0.6.4', '0.11.0' or '0.19.0'",
        )
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class VLLMRules:
    """The memory rules one vLLM version applies (see :func:`vllm_rules`)."""

    version: tuple[int, int, int]
    engine: str  # "V0" or "V1"
    budget: str  # "free-delta", "torch-peak" or "profiling"
    grouped: bool  # KV-cache groups per layer kind (else one uniform group, windows costed full)
    concurrency: str  # "tokens/len" or "blocks/request"
    mla_hybrid_alignment: int  # block alignment of an MLA + recurrent model's attention block
    prints: tuple[str, ...]  # the KV lines it prints

    @property
    def label(self) -> str:
        return f"vLLM {'.'.join(map(str, self.version))} ({self.engine})"


def vllm_rules(vllm_version: str | tuple[int, ...] = VLLM_DEFAULT_VERSION, *, engine: str | None = None) -> VLLMRules:
    """The rules of one vLLM version, from its source (module docstring lists the files).

    * **budget** (memory left for KV) is always ``gpu_memory_utilization × total`` less what
      profiling saw, but what is counted changed:

      - ``free-delta`` (V0 ≤ 0.6.3, read at 0.5.5): the drop in free memory from worker start to
        after the profiling run, ``init_free − free`` (weights, torch's *reserved* activations,
        non-torch allocations; the CUDA context made before is not counted); prints only
        "# GPU blocks: N".
      - ``torch-peak`` (V0 0.6.4, read at 0.6.4.post1; V1 0.8.x, read at 0.8.5): torch's allocated
        peak (weights + activations) plus *all* GPU memory torch does not own
        (``total − free − torch current``: CUDA context, NCCL, other processes); V0 prints
        "Memory profiling results: … peak_torch_memory=… non_torch_memory=… kv_cache_size=…".
      - ``profiling`` (V0 ≥ 0.6.5, PR 10511, read at 0.6.6.post1; V1 ≥ 0.9, read at 0.9.2, 0.10.2,
        0.19.0):
        ``requested − (weights + torch peak increase + non-torch increase)``, increases measured
        from the snapshot taken when the instance started (``memory_profiling``); V1 prints
        "Available KV cache memory: X GiB". 0.19 also subtracts the CUDA-graph estimate when
        ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`` (off by default).

    * **groups**: V0 and V1 0.8 page every layer alike (0.8.5 ``unify_hybrid_kv_cache_specs``
      costs sliding-window layers as full attention); from 0.9 layers of different kinds form
      KV-cache groups and the printed size is ⌊blocks ÷ groups⌋ × the smallest group block.
    * **concurrency** "Maximum concurrency for L tokens per request": V0 and V1 0.8 print
      ``tokens ÷ L``; from 0.9 (``get_max_concurrency_for_kv_cache_config``) ``blocks ÷ Σ_groups
      blocks one request of L tokens needs`` (full: ⌈L ÷ block⌉; sliding window w:
      ⌈min(w − 1 + max_num_batched_tokens, L) ÷ block⌉ + 1; recurrent state: 1).
    * **hybrid block**: the attention block of a model with recurrent layers grows until one
      attention page holds a recurrent state, ``a × ⌈state ÷ (a × page per token)⌉``; ``a`` = 16
      in 0.11.0 and, from 0.11.1 (read at 0.11.1, 0.11.2, 0.14.0, 0.19.0), 64 when the attention
      is MLA (``kernel_block_alignment_size``; 128 with CUTLASS MLA), 16 otherwise.

    ``engine`` chooses V0 for 0.8–0.10 (``VLLM_USE_V1=0``); V1 is the default from 0.8
    (0.8.5 ``envs.py``), V0 only before, and 0.11.0's tree no longer has V0's ``worker/worker.py``.

    >>> vllm_rules("0.6.4").budget, vllm_rules("0.19.0").mla_hybrid_alignment
    ('torch-peak', 64)
    """
    v = parse_vllm_version(vllm_version)
    if v < (0, 5, 0):
        raise K3InputError(
            "vllm_version", f"{'.'.join(map(str, v))} is older than any version modelled", "vLLM 0.5.0 or newer"
        )
    if engine is None:
        engine = "V1" if v >= (0, 8, 0) else "V0"
    engine = str(engine).upper()
    if engine not in ("V0", "V1"):
        raise K3InputError("engine", f"{engine!r} is not a vLLM engine", "'V0' or 'V1'")
    if engine == "V1" and v < (0, 8, 0):
        raise K3InputError("engine", f"V1 is modelled from vLLM 0.8 (it was experimental before); got {v}", "'V0'")
    if engine == "V0" and v >= (0, 11, 0):
        raise K3InputError("engine", f"vLLM {'.'.join(map(str, v))} has no V0 engine", "'V1'")
    if engine == "V0":
        budget = "free-delta" if v < (0, 6, 4) else "torch-peak" if v < (0, 6, 5) else "profiling"
        prints = ("GPU blocks",) if budget == "free-delta" else ("GPU blocks", "budget line")
        return VLLMRules(v, "V0", budget, False, "tokens/len", 16, prints)
    if v < (0, 9, 0):
        return VLLMRules(v, "V1", "torch-peak", False, "tokens/len", 16, ("KV cache tokens",))
    return VLLMRules(
        v,
        "V1",
        "profiling",
        True,
        "blocks/request",
        64 if v >= (0, 11, 1) else 16,
        ("available KV memory", "KV cache tokens"),
    )


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
    concurrency_rule: str = "blocks/request"
    state_bytes: int = 0  # one recurrent layer's state per rank, before padding to the page
    #: tokens the hybrid attention block is a multiple of (``a`` of HybridAttentionMambaModelConfig:
    #: the MLA alignment with a latent-caching layer, else the block size)
    hybrid_alignment: int = 16

    @property
    def state_padding_pct(self) -> float:
        """The "Padding mamba page size by X%" vLLM prints: (page − state) ÷ state × 100."""
        return 100.0 * (self.page_bytes - self.state_bytes) / self.state_bytes if self.state_bytes else 0.0

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
        for label, _ in self.groups:
            if label == "state":
                n += 1
            elif label in self.window_tokens:
                n += min(full, -(-(self.window_tokens[label] - 1) // self.block_tokens) + 1)
            else:
                n += full
        return n

    def bytes_for(self, *, context_tokens: int, batch: int) -> int:
        """KV memory ``batch`` requests of ``context_tokens`` need on this rank."""
        return batch * self.blocks_per_request(context_tokens) * self.bytes_per_block

    def max_concurrency(
        self, available_bytes: int, *, max_model_len: int, max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS
    ) -> float:
        """The "Maximum concurrency for L tokens per request" vLLM prints (rule per version,
        :func:`vllm_rules`): ``tokens ÷ L`` (V0, V1 0.8) or ``blocks ÷ Σ_groups ⌈blocks one
        request needs⌉`` (V1 ≥ 0.9; sliding window ⌈min(w − 1 + batched tokens, L) ÷ block⌉ + 1,
        recurrent state 1 block)."""
        if max_model_len <= 0:
            raise K3InputError("max_model_len", f"{max_model_len!r} is not a positive token count", "an integer ≥ 1")
        blocks = self.num_blocks(available_bytes)
        if self.concurrency_rule == "tokens/len":
            return blocks * self.block_tokens / max_model_len
        need = 0
        for label, _ in self.groups:
            if label == "state":
                need += 1
            elif label in self.window_tokens:
                n = min(self.window_tokens[label] - 1 + max_num_batched_tokens, max_model_len)
                need += -(-n // self.block_tokens) + 1
            else:
                need += -(-max_model_len // self.block_tokens)
        return blocks / need


def _vllm_tokens_bytes_per_layer(g: AttentionGroup, *, tp: int, kv_b: float, mla_fp8_ds: bool) -> float:
    k = kind_of(g)
    if k.latent and mla_fp8_ds:
        return 656.0  # FlashMLA's fp8_ds_mla entry: 512 fp8 + 4 scales + 64 bf16 rope
    return k.kv_elements_per_token_per_rank(g, tp) * kv_b


def vllm_kv_layout(
    model: Any,
    *,
    tp: int = 1,
    kv_dtype: str | float = "auto",
    dtype_bytes: int = 2,
    block_tokens: int = VLLM_BLOCK_TOKENS,
    state_bytes_per_element: float | None = None,
    mla_fp8_ds: bool = False,
    vllm_version: str | tuple[int, ...] = VLLM_DEFAULT_VERSION,
    engine: str | None = None,
) -> VLLMKVLayout:
    """vLLM's paging of one rank's KV cache for ``vllm_version`` (rules: :func:`vllm_rules`).

    Page = block × bytes per token of one layer; layers of one kind share a KV-cache group,
    groups are cut to a common size (padding layers) and every group draws pages from one pool
    (``v1/core/kv_cache_utils.py``, 0.10.2–0.19.0). Before 0.9 (and in V0) all layers form one
    uniform group and sliding-window layers are paged like full ones. With recurrent layers the
    attention block becomes ``a × ⌈state ÷ (a × page per token)⌉`` (``a`` = 16, or 64 for MLA
    from 0.11.1: ``HybridAttentionMambaModelConfig``); a KDA layer's recurrent state is float32.

    >>> lay = vllm_kv_layout("gemma-3-27b")            # 52 sliding + 10 full layers
    >>> lay.group_size, lay.num_groups, lay.page_bytes  # 7 groups of 10 layers, 16 × 8,192 B pages
    (10, 7, 131072)
    >>> vllm_kv_layout("gemma-3-27b", vllm_version="0.8.5").groups   # 0.8: one group, windows costed full
    (('full', 62),)
    """
    rules = vllm_rules(vllm_version, engine=engine)
    arch, _ = _resolve_model(model)
    kv_b = _kv_bytes_per_element(kv_dtype, dtype_bytes)
    state_b = float(state_bytes_per_element if state_bytes_per_element is not None else dtype_bytes)
    kinds: list[tuple[str, int, float]] = []  # (kind label, layers, bytes per token per layer)
    windows: dict[str, int] = {}
    state_bytes = 0.0
    has_latent = False
    for g in arch.attention:
        if g.kv_shared:
            continue  # Gemma-3n/4: kv_sharing_target_layer_name, no cache of its own
        k = kind_of(g)
        if not k.caches_kv_per_token:
            # KDA keeps its recurrent state in float32 (0.11.1–0.19.0 mamba_utils.py kda_state_dtype); GDN's
            # follows mamba_ssm_cache_dtype ("auto" = the model dtype)
            rec_b = 4.0 if k.vllm_recurrent_fp32 and state_bytes_per_element is None else state_b
            per_layer = (g.recurrent_state_elements_per_layer * rec_b + g.conv_state_elements_per_layer * state_b) / tp
            state_bytes = max(state_bytes, per_layer)
            kinds.append(("state", g.count, 0.0))
            continue
        if g.has_state:
            # Falcon-H1: each decoder layer holds its attention and a Mamba-2 mixer, two cache
            # entries to vLLM (an attention spec and a MambaSpec; model_executor/models/falcon_h1.py)
            per_layer = (
                g.recurrent_state_elements_per_layer * state_b + g.conv_state_elements_per_layer * state_b
            ) / tp
            state_bytes = max(state_bytes, per_layer)
            kinds.append(("state", g.count, 0.0))
        has_latent = has_latent or k.latent
        label = k.vllm_label(g)
        if k.windowed and not rules.grouped:
            label = FULL.name  # 0.8.5 unify_hybrid_kv_cache_specs; V0 pages all alike
        elif k.windowed:
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
    align = rules.mla_hybrid_alignment if has_latent else block_tokens
    if state_bytes and attn_per_tok:
        # attention block grows until one page holds a layer's state (vLLM: HybridAttentionMambaModelConfig)
        block = max(block_tokens, align * math.ceil(state_bytes / (align * attn_per_tok)))
    page = int(math.ceil(block * attn_per_tok)) if attn_per_tok else int(math.ceil(state_bytes))
    counts = [v[0] for v in merged.values()]
    if not rules.grouped and "state" not in merged:
        counts = [sum(counts)]
        merged = {(MLA if has_latent else FULL).name: [counts[0], attn_per_tok]}
    if len(counts) == 1:
        group_size = counts[0]
        groups: tuple[tuple[str, int], ...] = ((next(iter(merged)), counts[0]),)
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
    return VLLMKVLayout(
        block_tokens=block,
        page_bytes=page,
        group_size=group_size,
        groups=groups,
        window_tokens=windows,
        padded_layers=padded,
        concurrency_rule=rules.concurrency,
        state_bytes=int(math.ceil(state_bytes)),
        hybrid_alignment=align,
    )


def vllm_kv_cache_tokens(
    model: Any,
    *,
    available_bytes: int,
    tp: int = 1,
    kv_dtype: str | float = "auto",
    dtype_bytes: int = 2,
    **layout_options,
) -> int:
    """Tokens vLLM prints as 'GPU KV cache size' for ``available_bytes`` of KV memory per rank."""
    return vllm_kv_layout(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes, **layout_options).tokens(
        available_bytes
    )


def vllm_kv_tokens_interval(
    model: Any,
    *,
    printed_gib: float,
    tp: int = 1,
    kv_dtype: str | float = "auto",
    dtype_bytes: int = 2,
    **layout_options,
) -> tuple[int, int]:
    """The token counts vLLM can have printed when it printed ``printed_gib`` of
    available KV memory (rounded to 0.01 GiB, so the truth is within ±0.005 GiB).

    >>> vllm_kv_tokens_interval("llama-3.1-8b", printed_gib=58.11)    # vLLM printed 476,016
    (475984, 476064)
    """
    lay = vllm_kv_layout(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes, **layout_options)
    return (
        lay.tokens(int(printed_gib * GiB - PRINTED_ROUNDING_BYTES)),
        lay.tokens(int(printed_gib * GiB + PRINTED_ROUNDING_BYTES)),
    )


#: groups of a weight file that vLLM splits over the TP ranks as a whole (no core group to follow)
_SHARDED_FILE_GROUPS = ("vision",)


def vllm_vocab_padding_params(arch: Architecture) -> int:
    """Rows vLLM adds to a vocabulary-parallel table, times the hidden size: the vocabulary
    padded to a multiple of :data:`VLLM_VOCAB_PADDING` (``VocabParallelEmbedding``
    ``pad_vocab_size``), $(\\lceil V/64 \\rceil·64 - V)·D$ per table (embedding; an untied LM head)."""
    return (_round_up(arch.vocab_size, VLLM_VOCAB_PADDING) - arch.vocab_size) * arch.hidden_size


def _group_params_per_rank(arch: Architecture, tp: int) -> dict[str, float]:
    """Parameters per TP rank for each group: the core's sharding rule
    (:func:`k3lib.core.memory.params_per_rank_by_group`, whole model on one rank) plus vLLM's
    vocabulary padding (:func:`vllm_vocab_padding_params`) on the embedding and an untied head."""
    from k3lib.core.memory import params_per_rank_by_group

    out = {g: sh.per_rank(tp) for g, sh in params_per_rank_by_group(arch, tp=tp).items()}
    pad = vllm_vocab_padding_params(arch) / tp
    out["embedding"] += pad
    if not arch.tie_word_embeddings:
        out["lm_head"] += pad
    return out


def _file_group_fraction_per_rank(arch: Architecture, tp: int) -> dict[str, float]:
    """The share of each group's bytes one TP rank holds under the core's rule:
    $P^{rank}_g / P_g$ (a weight file's exact bytes are split in those proportions)."""
    from k3lib.core.memory import params_per_rank_by_group

    full = arch.param_groups()
    full["lm_head"] = full["lm_head"] or 0
    return {
        g: (sh.per_rank(tp) / full[g] if full.get(g) else 1.0 / tp)
        for g, sh in params_per_rank_by_group(arch, tp=tp).items()
    }


def _mxfp4_expert_bytes_per_rank(arch: Architecture, tp: int) -> int:
    """MXFP4 experts as vLLM's Marlin MoE kernel stores them on one rank: intermediate
    per rank padded to 128, hidden to 256; E8M0 scales per 32; BF16 biases."""
    m = arch.mlp
    inter = _round_up(-(-m.moe_intermediate // tp), 128)
    hidden = _round_up(m.latent_dim or arch.hidden_size, 256)
    per_expert = (
        2 * inter * hidden // 2
        + 2 * inter * hidden // 32  # w13 weight + scales
        + hidden * inter // 2
        + hidden * inter // 32
    )  # w2 weight + scales
    if m.expert_bias:
        per_expert += (2 * inter + hidden) * 2
    return m.moe_layers * m.n_routed_experts * per_expert


def vllm_weights_bytes_per_rank(
    model: Any, *, tp: int = 1, weights: str = "native", dtype_bytes: int | None = None
) -> dict[str, int]:
    """Bytes vLLM loads on each TP rank, by group, plus ``rope_cache`` and ``total``.

    The core's sharding rule (:func:`k3lib.core.memory.params_per_rank_by_group`: K/V
    projections replicated once TP exceeds the KV heads, MLA/KDA down-projections whole), plus
    what only vLLM adds, as data over it: the vocabulary padded to 64 rows
    (:func:`vllm_vocab_padding_params`), its rotary cos/sin cache (``rope_cache``), MXFP4
    experts as the Marlin kernel pads them (:func:`_mxfp4_expert_bytes_per_rank`), and a
    loaded model's vision tower. A weight file's exact bytes are split in the core rule's
    proportions per group. ``dtype_bytes`` overrides the unquantized dtype (``--dtype float32`` → 4).
    """
    from k3lib.core.memory import weight_bits_by_group

    arch, loaded = _resolve_model(model)
    base_b = dtype_bytes or (loaded.dtype_bytes if loaded is not None else 2)
    out: dict[str, int] = {}
    if loaded is not None and loaded.exact and weights == "native":
        frac = _file_group_fraction_per_rank(arch, tp)
        for g, b in loaded.weights_bytes_by_group.items():
            if g == "mtp":
                continue  # MTP layers load only for speculative decoding
            if g in frac:
                out[g] = int(math.ceil(b * frac[g]))  # the core's rule, in the file's proportions
            else:
                out[g] = int(math.ceil(b / tp)) if g in _SHARDED_FILE_GROUPS else b
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

    return get_weight_format(fmt).bits


def _default_rope_caches(arch: Architecture) -> tuple[tuple[int, int], ...]:
    rot = 0
    for g in arch.attention:  # the first layer with a per-token cache gives the rotary width
        if kind_of(g).caches_kv_per_token:
            rot = kind_of(g).rope_dim(g)
            break
    return ((arch.max_context_tokens, rot),) if rot else ()


def vllm_v0_batched_tokens(
    model: Any, *, max_model_len: int | None = None, vllm_version: str | tuple[int, ...] = "0.6.4"
) -> int:
    """Tokens a V0 engine's profiling run pushes through the model (its default
    ``max_num_batched_tokens``): max(max_model_len, 2048), unless chunked prefill is on, which V0
    turns on by itself above 32,768 tokens for a model without sliding windows
    (``engine/arg_utils.py`` ``use_long_context``); then 512 (``config.py`` SchedulerConfig, read at
    0.5.5 and 0.6.4.post1) or 2048 (read at 0.6.6.post1)."""
    arch, _ = _resolve_model(model)
    v = parse_vllm_version(vllm_version)
    length = int(max_model_len or arch.max_context_tokens)
    if length > 32768 and not any(kind_of(g).windowed for g in arch.attention):
        return 512 if v < (0, 6, 6) else 2048
    return max(length, VLLM_V0_MIN_BATCHED_TOKENS)


def vllm_activation_peak_bytes(
    model: Any,
    *,
    tp: int = 1,
    dtype_bytes: int = 2,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int = VLLM_MAX_NUM_SEQS,
    vllm_version: str | tuple[int, ...] = VLLM_DEFAULT_VERSION,
    engine: str | None = None,
    max_model_len: int | None = None,
) -> int:
    """The activation peak vLLM's profiling run records.

    **V0** (any 0.5–0.10 V0 engine): the profiling batch is ``max_num_batched_tokens`` tokens,
    by default :func:`vllm_v0_batched_tokens` (max(max_model_len, 2048), or the chunked-prefill
    batch above 32K tokens), and
    the peak is the MLP's live tensors: the gate/up output (2·I), its activated half (I) and three
    hidden-size tensors (residual, normed input, layer output), ``T·(3·I/TP + 3·D)·b``; MoE
    layers count ``k·I_e``; or, when larger (a short chunked-prefill batch), the logits of the
    profiled sequences, ``min(S, T)·V·b`` with S = 256 (V0's max_num_seqs). Checked on Llama 3.1
    8B (vllm issue 10517, 0.6.4 on an RTX 3090): 20,000 and 29,000 profiled tokens give 2.06 and
    2.99 GiB, and the 35,000-token run (chunked prefill, 512 tokens) 256 × 128,256 × 2 B =
    0.06 GiB; vLLM printed peak_torch_memory − weights = 17.06 − 14.99 = 2.07, 17.98 − 14.99 =
    2.99 and 15.05 − 14.99 = 0.06 GiB.

    **V1** (0.8 and later; fitted to 0.19, TP-invariant in the sweep):

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
    rules = vllm_rules(vllm_version, engine=engine)
    arch, loaded = _resolve_model(model)
    m = arch.mlp
    if rules.engine == "V0":
        if max_num_batched_tokens is None:
            max_num_batched_tokens = vllm_v0_batched_tokens(
                arch, max_model_len=max_model_len, vllm_version=vllm_version
            )
        inter = (
            m.experts_per_token * m.moe_intermediate if m.moe_layers and not m.dense_layers else m.dense_intermediate
        )
        mlp = max_num_batched_tokens * (3 * -(-inter // tp) + 3 * arch.hidden_size) * dtype_bytes
        seqs = min(VLLM_V0_MAX_NUM_SEQS if max_num_seqs == VLLM_MAX_NUM_SEQS else max_num_seqs, max_num_batched_tokens)
        return int(max(mlp, seqs * arch.vocab_size * dtype_bytes))
    if max_num_batched_tokens is None:
        max_num_batched_tokens = VLLM_MAX_NUM_BATCHED_TOKENS
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


def vllm_available_kv_bytes(
    *,
    total_bytes: float,
    gpu_memory_utilization: float,
    weights_bytes: float,
    activation_bytes: float,
    non_torch_bytes: float,
    cudagraph_bytes: float = 0,
    vllm_version: str | tuple[int, ...] = VLLM_DEFAULT_VERSION,
    engine: str | None = None,
) -> int:
    """Memory vLLM leaves for the KV cache: ``u × total − weights − activation − non-torch``
    (``− CUDA-graph estimate`` in 0.19 with ``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1``).

    The formula has one shape in every version; what each term holds is the version's rule
    (:func:`vllm_rules` ``budget``): ``free-delta`` (≤ 0.6.3) counts torch's reserved activations
    and the non-torch growth since the worker started; ``torch-peak`` (V0 0.6.4, V1 0.8) counts
    *all* non-torch memory on the GPU (CUDA context, other processes); ``profiling`` (≥ 0.6.5 V0,
    ≥ 0.9 V1) the increases since the instance's start snapshot. Pass the terms in that sense.

    >>> round(vllm_available_kv_bytes(total_bytes=23.58 * 2**30, gpu_memory_utilization=0.9,
    ...       weights_bytes=14.9888 * 2**30, activation_bytes=(17.06 - 14.9888) * 2**30,
    ...       non_torch_bytes=0.35 * 2**30, vllm_version="0.6.4") / 2**30, 2)   # vLLM printed 3.81
    3.81
    """
    rules = vllm_rules(vllm_version, engine=engine)
    if not 0 < gpu_memory_utilization <= 1:
        raise K3InputError(
            "gpu_memory_utilization", f"{gpu_memory_utilization!r} is outside (0, 1]", "a fraction such as 0.9"
        )
    if total_bytes <= 0:
        raise K3InputError("total_bytes", f"{total_bytes!r} is not a positive byte count", "the GPU's total bytes")
    cg = cudagraph_bytes if rules.version >= (0, 19, 0) else 0
    return int(gpu_memory_utilization * total_bytes - weights_bytes - activation_bytes - non_torch_bytes - cg)
