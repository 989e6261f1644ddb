"""Pipeline parallelism (PP > 1) in vLLM and SGLang: what each stage's GPUs hold.

Rules (vLLM 0.19 source, vllm-project/vllm):

* **layers per stage** — whole layers, $\\lfloor L/PP \\rfloor$ each, the remainder
  one each to the stages just before the last (``vllm/distributed/utils.py``
  ``get_pp_indices``; the same cut as :func:`k3lib.core.layout.stage_layer_counts`);
* **embedding on the first stage, LM head on the last** (``PPMissingLayer`` on the
  others, e.g. ``model_executor/models/deepseek_v2.py``); a tied LM head is a second
  copy of the embedding on the last stage when $PP > 1$; norms, routers and layer
  weights go with their layers; rotary caches and a vision tower (first stage) as at PP=1;
* **activation** — only the last stage runs the sampler in the profiling run
  (``v1/worker/gpu_model_runner.py`` ``profile_run``: ``_dummy_sampler_run`` on the last
  PP rank), so the others drop the sampler's logits term;
* **KV cache** — the layers of every worker are grouped together (``v1/core/kv_cache_utils.py``
  ``get_kv_cache_configs`` merges the workers' specs, then each worker keeps its layers of
  each global group); a worker's blocks are $\\lfloor A_s ÷ (page · g_s) \\rfloor$ with $g_s$
  the most layers it holds of one group, and every worker gets the smallest count over
  all workers. The printed tokens are $\\lfloor blocks ÷ groups \\rfloor$ × block size.

SGLang (sgl-project/sglang ``srt/model_executor/model_runner.py``): each PP rank sizes its
own token pool from its layers (``start_layer``/``end_layer`` by the same even split); the
profile takes the smallest pool, because a request needs a slot on every stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from k3lib.core.architecture import Architecture
from k3lib.core.kinds import kind_of
from k3lib.core.layout import layer_sequence, pipeline_stages, stage_layer_counts
from k3lib.engines.base import _resolve_model
from k3lib.engines.vllm import (
    VLLM_MAX_NUM_BATCHED_TOKENS,
    VLLM_MAX_NUM_SEQS,
    VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB,
    VLLMKVLayout,
    vllm_activation_peak_bytes,
    vllm_kv_layout,
    vllm_weights_bytes_per_rank,
)

#: groups whose parameters live in the layers (they go with their layers' stage)
_LAYER_GROUPS = ("attention", "dense_mlp", "shared_experts", "routed_experts", "moe_other", "norms")


def check_pp(arch: Architecture, pp: int) -> tuple[int, ...]:
    """Layers per stage (:func:`k3lib.core.layout.stage_layer_counts`); a
    :class:`~k3lib.core.errors.DoesNotSplitError` naming ``pp`` when PP > layers."""
    return stage_layer_counts(arch.num_layers, pp)


def stage_weights_bytes_per_rank(
    model: Any, *, tp: int = 1, pp: int = 1, stage: int = 0, weights: str = "native", dtype_bytes: int | None = None
) -> dict[str, int]:
    """Bytes one TP rank of pipeline stage ``stage`` (0-based) loads, by group.

    From :func:`~k3lib.engines.vllm.vllm_weights_bytes_per_rank` (the whole model on one
    rank) times, for each layer group, the stage's share of that group's parameters
    ($P_g^{stage} / P_g$); the embedding on stage 0 only, the LM head on the last only
    (a tied head: the embedding's bytes again there when $PP > 1$); rotary caches on
    every stage, a vision tower on the first.

    >>> w = stage_weights_bytes_per_rank("llama-3.1-8b", pp=2, stage=1)
    >>> w["embedding"], w["lm_head"] > 0
    (0, True)
    """
    arch, _ = _resolve_model(model)
    whole = vllm_weights_bytes_per_rank(model, tp=tp, weights=weights, dtype_bytes=dtype_bytes)
    if pp == 1:
        return whole
    stages = pipeline_stages(arch, pp)
    part, full = stages[stage].param_groups(), arch.param_groups()
    first, last = stage == 0, stage == pp - 1
    out: dict[str, int] = {}
    for g, b in whole.items():
        if g == "total":
            continue
        if g in _LAYER_GROUPS:
            out[g] = int(round(b * part[g] / full[g])) if full.get(g) else 0
        elif g == "embedding":
            out[g] = b if first else 0
        elif g == "lm_head":
            out[g] = (whole.get("embedding", 0) if arch.tie_word_embeddings else b) if last else 0
        elif g == "vision":
            out[g] = b if first else 0
        else:  # rope_cache and anything per rank
            out[g] = b
    if last and arch.tie_word_embeddings and "lm_head" not in out:
        out["lm_head"] = whole.get("embedding", 0)
    out["total"] = sum(out.values())
    return out


def stage_activation_peak_bytes(
    model: Any,
    *,
    tp: int = 1,
    pp: int = 1,
    stage: int = 0,
    dtype_bytes: int = 2,
    max_num_batched_tokens: int = VLLM_MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = VLLM_MAX_NUM_SEQS,
) -> int:
    """The profiling run's activation peak on one stage: the PP = 1 peak
    (:func:`~k3lib.engines.vllm.vllm_activation_peak_bytes`) less the sampler's logits
    ($c_s·S·V$) on every stage but the last."""
    arch, _ = _resolve_model(model)
    a = vllm_activation_peak_bytes(
        model, tp=tp, dtype_bytes=dtype_bytes, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs
    )
    if stage < pp - 1:
        a -= int(VLLM_SAMPLER_BYTES_PER_SEQ_VOCAB * max_num_seqs * arch.vocab_size)
    return a


def _layer_labels(arch: Architecture) -> tuple[str, ...]:
    """vLLM's KV-spec label of each layer (same labels as :func:`vllm_kv_layout`)."""
    out = []
    for gi, _ in layer_sequence(arch):
        g = arch.attention[gi]
        out.append(kind_of(g).vllm_label(g))
    return tuple(out)


@dataclass(frozen=True)
class PipelineKV:
    """vLLM's KV cache over ``pp`` stages: the global layout (page, block, groups) and,
    per stage, $g_s$ — the most layers the stage holds of one global group."""

    layout: VLLMKVLayout
    stage_layers: tuple[int, ...]
    stage_group_size: tuple[int, ...]

    def stage_bytes_per_block(self, stage: int) -> int:
        """$page · g_s$: bytes one block index takes on a worker of ``stage``."""
        return self.layout.page_bytes * self.stage_group_size[stage]

    def blocks(self, available_bytes: tuple[int, ...] | list[int]) -> int:
        """$\\min_s \\lfloor A_s ÷ (page·g_s) \\rfloor$ — every worker gets the smallest count."""
        return min(
            max(0, int(a)) // self.stage_bytes_per_block(s) if self.stage_group_size[s] else 10**18
            for s, a in enumerate(available_bytes)
        )

    def tokens(self, available_bytes: tuple[int, ...] | list[int]) -> int:
        """Printed 'GPU KV cache size': ⌊blocks ÷ groups⌋ × block size."""
        return self.blocks(available_bytes) // self.layout.num_groups * self.layout.block_tokens

    def stage_bytes_for(self, stage: int, *, context_tokens: int, batch: int) -> int:
        """KV bytes ``batch`` requests of ``context_tokens`` hold on one worker of ``stage``."""
        return batch * self.layout.blocks_per_request(context_tokens) * self.stage_bytes_per_block(stage)


def vllm_pipeline_kv(
    model: Any, *, tp: int = 1, pp: int = 1, kv_dtype: str | float = "auto", dtype_bytes: int = 2, **layout_options: Any
) -> PipelineKV:
    """The global KV layout of the whole model and each stage's $g_s$: layers of one spec
    are chunked in layer order into groups of the global group size (vLLM
    ``_get_kv_cache_groups_uniform_page_size``), and $g_s$ counts a stage's layers per chunk.

    >>> kv = vllm_pipeline_kv("llama-3.1-8b", pp=2)     # 32 layers: one group, 16 per stage
    >>> kv.stage_group_size, kv.layout.num_groups
    ((16, 16), 1)
    """
    arch, _ = _resolve_model(model)
    counts = check_pp(arch, pp)
    layout = vllm_kv_layout(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes, **layout_options)
    labels = _layer_labels(arch)
    chunks: list[list[int]] = []
    by_label: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        by_label.setdefault(lab, []).append(i)
    for idx in by_label.values():
        chunks.extend(idx[i : i + layout.group_size] for i in range(0, len(idx), layout.group_size))
    sizes, start = [], 0
    for n in counts:
        stop = start + n
        sizes.append(max((sum(1 for i in c if start <= i < stop) for c in chunks), default=0))
        start = stop
    return PipelineKV(layout, counts, tuple(sizes))


def sglang_stage_architectures(model: Any, pp: int) -> tuple[Architecture, ...]:
    """The model cut into ``pp`` stages of whole layers, as SGLang's PP ranks hold them."""
    arch, _ = _resolve_model(model)
    check_pp(arch, pp)
    return pipeline_stages(arch, pp)


__all__ = [
    "check_pp",
    "stage_weights_bytes_per_rank",
    "stage_activation_peak_bytes",
    "PipelineKV",
    "vllm_pipeline_kv",
    "sglang_stage_architectures",
]
