"""Generate notebooks/02-kv-cache.ipynb, then execute it and keep only the checked outputs.

Every number in the prose and the exercises' answers is computed here by k3lib (f-strings), never typed.

Usage:  .venv/bin/python scripts/notebooks/02_kv_cache.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.memory import kv_bytes_per_token, kv_cache_bytes
from k3lib.core.models import get_model
from k3lib.views.citations import guide_quote

STEM = "02-kv-cache"
GiB = 2**30

K3, LLAMA, QWEN = get_model("kimi-k3"), get_model("llama-3.1-70b"), get_model("qwen3-next-80b")
K3_TOK = kv_bytes_per_token(K3, "bf16")
K3_STATE = kv_cache_bytes(K3, context_tokens=0, batch=1, kv_dtype="bf16")
LLAMA_TOK = kv_bytes_per_token(LLAMA, "bf16")
K3_1M_FP8 = kv_cache_bytes(K3, context_tokens=1_048_576, batch=1, kv_dtype="fp8") / GiB
K3_32K_FP8 = kv_cache_bytes(K3, context_tokens=32_768, batch=1, kv_dtype="fp8")
K3_SEQS_40 = 40 * GiB // K3_32K_FP8
LLAMA_SEQS_40 = 40 * GiB // kv_cache_bytes(LLAMA, context_tokens=32_768, batch=1, kv_dtype="bf16")
LLAMA_READ_128K = kv_cache_bytes(LLAMA, context_tokens=131_072, batch=1, kv_dtype="bf16") / GiB
H200_BW = 4.8e12
SEQS_128K = {
    m.id: 64 * GiB // kv_cache_bytes(m, context_tokens=131_072, batch=1, kv_dtype="bf16") for m in (K3, LLAMA, QWEN)
}

cells = [
    md(f"""
# 02 · The KV cache

**The question:** why does a server keep a cache of keys and values at all, how many bytes does each token of context cost, and how many conversations does a cache budget hold?

{nav(STEM)}

The KV cache is the variable part of the budget: it grows with every token of every sequence.
We start with why it exists (prefill and decode), then write its per-token formula for each attention design, on K3, a dense model (Llama 3.1 70B) and a hybrid (Qwen3-Next 80B), and end with what a budget buys: sequences served at once.
Notation as in [00](00-vram-anatomy.ipynb): $L$ layers, $K$ KV heads, $H$ head dim, $T$ tokens, $B$ batch, $b$ bytes per element; GiB = 2^30 bytes.
"""),
    objectives(
        [
            "Explain prefill and decode, and what each decoded token reads with a cache and recomputes without one.",
            "Compute bytes per token for GQA ($2·L·K·H·b$), MLA ($L·(r_{kv}+d_{rope})·b$) and a hybrid's constant state.",
            "Size one sequence's cache at any context and KV dtype, for K3, a dense and a hybrid model.",
            "Turn a cache budget into the number of sequences served at once.",
        ],
        minutes=35,
    ),
    code("""
import pandas as pd

from k3lib.views import anatomy, charts, kv_growth, notebook, tables
from k3lib.views.charts_parallel import readable  # sized to the cell, 12 px labels
from k3lib.views.table_format import reader_table
pd.set_option("display.max_colwidth", None)  # whole formulas: K3's KDA state S is a long one
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3, FP8 cache, 256K context, on two 8-GPU H200 nodes.
"""),
    parameters("""
model: str = "kimi-k3"  # model id (`k3plan models`): kimi-k3, llama-3.1-70b, qwen3-next-80b, …
weights: str = "native"  # weight precision: native (the checkpoint's own), bf16, fp8, q8_0, q4_k_m, …
kv_dtype: str = "fp8"  # KV-cache dtype: bf16, fp8, int4
context: str = "256K"  # context length T in tokens, K meaning 1,024: 128K, 256K, 1M
batch: int = 1  # sequences served at once, B
gpu: str = "h200-sxm"  # GPU id or alias (`k3plan gpus`): h100, h200, mi300x
gpus: int = 16  # number of GPUs, G (one node up to 8, then whole nodes)
"""),
    code("""
# NBVAL_CHECK_OUTPUT
plan = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch, gpu=gpu, gpus=gpus)
anatomy.verdict_line(plan)
"""),
    md(r"""
## Why the cache exists: prefill, then decode

A model writes its answer one token at a time.
Each new token attends to every token before it: it needs their **keys** and **values**, one pair per layer (per KV head).

* **Prefill** runs the whole prompt of $T_p$ tokens through the model in one pass, computing (and keeping) their keys and values.
* **Decode** then produces one token per step. Step $t$ computes the keys and values of one new token and **reads** those of all $t$ earlier ones.

Without a cache, every decode step would run the whole prefix through the model again to rebuild those keys and values: about $2·P_{active}·T$ FLOPs for the token at context $T$, instead of $2·P_{active}$.
With a cache, it reads $T·kv_{tok} + S$ bytes instead: memory traded for compute, and the reason decode is limited by memory bandwidth (lesson [08](08-serving.ipynb)).

$$\text{per decoded token:}\quad \underbrace{2·P_{active}·T}_{\text{FLOPs without a cache}} \quad\text{vs}\quad \underbrace{2·P_{active}}_{\text{FLOPs with one}} + \underbrace{T·kv_{tok} + S}_{\text{bytes read}}$$

The diagram: one sequence's cache, step by step, for an 8K prompt and an 8K answer at BF16.
"""),
    code("""
kv_growth.timeline_chart(kv_growth.timeline_frame(prompt_tokens=8192, output_tokens=8192, kv_dtype="bf16"))
"""),
    md("""
What one decoded token costs, with the cache and without, at 8K and 128K of context (BF16; FLOPs of the weights' products, GFLOP = 10^9):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(kv_growth.decode_step_table(contexts=("8K", "128K"), kv_dtype="bf16"))
"""),
    md(f"""
**Takeaway:** without a cache, the token at 128K would cost 131,072 times the compute; with it, Llama 3.1 70B reads {LLAMA_READ_128K:,.0f} GiB of cache per token, {LLAMA_READ_128K * GiB / H200_BW * 1e3:,.1f} ms at an H200's 4.8 TB/s for the cache alone.

## Bytes per token, by attention design

What a layer keeps for every token depends on its attention design:

* **GQA** (grouped-query attention) caches a key and a value per KV head: $kv_{{tok}} = 2·L·K·H·b$. Take $H$ from the config: it is not always $D$ divided by the query heads.
* **MLA** (multi-head latent attention, K3's full-attention layers) caches one compressed latent and a small rope key, shared by all heads: $kv_{{tok}} = L·(r_{{kv}} + d_{{rope}})·b$.
* **Sliding window** layers keep only the last $W$ tokens: they stop growing at $W$.
* **Linear attention** (Kimi Delta Attention, Gated DeltaNet) keeps a constant state $S$ per sequence, whatever $T$; in a hybrid only the few full-attention layers grow.

$$KV = B·\\left(T·kv_{{tok}} + \\text{{sliding}}\\right) + B·S$$

The real K3: 24 MLA layers that grow, 69 KDA layers that hold a fixed state.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
k3 = tables.kv_worked_table("kimi-k3", kv_dtype="bf16", context="256K")
reader_table(k3)
"""),
    md("""
A dense GQA model, Llama 3.1 70B, and the hybrid Qwen3-Next 80B (12 GQA layers, 36 Gated DeltaNet layers):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.kv_worked_table("llama-3.1-70b", kv_dtype="bf16", context="128K"))
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.kv_worked_table("qwen3-next-80b", kv_dtype="bf16", context="256K"))
"""),
    md(f"""
**Takeaway:** K3 caches {K3_TOK:,} B per token at BF16 (24 layers × 576 × 2 B), Llama 3.1 70B {LLAMA_TOK:,} B, {LLAMA_TOK / K3_TOK:.1f}× more; K3 adds a constant {K3_STATE / 2**20:,.0f} MiB of KDA state per sequence.

## What a guide says

{guide_quote("g000-kv-bytes-bf16")}

The real K3's figure is {K3_TOK:,} B, {262_144 / K3_TOK:.1f}× less; the guide's tables built on its figure are audited there.

## The cache against context

For a fixed design the growing part is linear in context and in bytes per element (FP8 halves it, INT4 quarters it); the state does not move:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.kv_context_table("kimi-k3", contexts=["32K", "128K", "256K", "1M"]))
"""),
    md("""
The three designs side by side, up to 128K (Llama 3.1 70B's longest), at BF16: the dense model's line sits an order of magnitude above, and the state lifts K3's and the hybrid's short-context end.
"""),
    code("""
three = tables.kv_context_long(["kimi-k3", "llama-3.1-70b", "qwen3-next-80b"], kv_dtypes=["bf16"],
                               contexts=["4K", "8K", "16K", "32K", "64K", "128K"])
readable(charts.kv_vs_context_chart(three, log_y=True))
"""),
    md(r"""
## What a cache budget buys

Whatever memory is left after the weights, the activation and the overhead is the cache budget $M_{KV}$.
Each sequence of $T$ tokens needs $T·kv_{tok} + S$ of it, so the budget holds

$$N_{seq} = \left\lfloor \frac{M_{KV}}{T·kv_{tok} + S} \right\rfloor$$

sequences at once: that is the server's concurrency, and with it its throughput (lesson [08](08-serving.ipynb)).
With 64 GiB of cache (one copy) at BF16:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
budget = kv_growth.sequences_table(budget_bytes=64 * 2**30, contexts=["8K", "32K", "128K", "256K"], kv_dtype="bf16")
reader_table(budget)
"""),
    code("""
kv_growth.sequences_chart(budget)
"""),
    md(f"""
**Takeaway:** the same 64 GiB holds {SEQS_128K["llama-3.1-70b"]} Llama 3.1 70B conversation at 128K, but {SEQS_128K["kimi-k3"]} of K3 and {SEQS_128K["qwen3-next-80b"]} of the hybrid: the attention design, not the parameter count, sets how many users a cache serves.

## Predict, then run

K3's cache at 1M tokens and BF16 is {kv_cache_bytes(K3, context_tokens=1_048_576, batch=1, kv_dtype="bf16") / GiB:,.2f} GiB per sequence.
**Predict** the figure with an FP8 cache, and then with an INT4 cache: does it halve each time?
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.kv_context_table("kimi-k3", contexts=["1M"], kv_dtypes=["bf16", "fp8", "int4"]))
"""),
    md(f"""
The latent halves (27 → 13.5 → 6.75 GiB), but the KDA state is kept in FP32 whatever the cache dtype, so the total does not quite halve: {K3_1M_FP8:,.2f} GiB at FP8.

## Explore

Pick a model, a KV dtype, a context (only up to the model's maximum) and a cache budget: the table shows one sequence's cache and how many sequences the budget holds.
"""),
    code("""
kv_growth.kv_explorer(model=model if model in kv_growth.cache_models() else "kimi-k3", kv_dtype=kv_dtype, context="128K", budget_gib=64)
"""),
    md(rf"""
## Summary

* Prefill writes the prompt's keys and values in one pass; each decode step adds one token and reads the whole cache, instead of recomputing the prefix ($2·P_{{active}}·T$ FLOPs) every step.
* GQA caches $2·L·K·H·b$ bytes per token, MLA $L·(r_{{kv}} + d_{{rope}})·b$; sliding layers stop at their window and linear-attention layers keep a constant state.
* The real K3 caches {K3_TOK:,} B per token at BF16 (24 MLA layers) plus {K3_STATE / 2**20:,.0f} MiB of KDA state per sequence; Llama 3.1 70B caches {LLAMA_TOK:,} B.
* A cache budget holds $\lfloor M_{{KV}} / (T·kv_{{tok}} + S) \rfloor$ sequences: the server's concurrency.
"""),
    md("## Exercises"),
    *exercise(
        "02-1",
        "How big is one K3 sequence's cache at its full 1M context with an FP8 cache "
        "(24 MLA layers of 512 + 64 elements; 69 KDA layers of 96·128·128 + 110,592 FP32 elements)?",
        f"$24·576·1$ = 13,824 B per token × 1,048,576 = 13.5 GiB, plus the state $69·(96·128·128 + 110,592)·4$ B "
        f"= 0.433 GiB: {K3_1M_FP8:,.2f} GiB "
        '(`tables.kv_context_table("kimi-k3", contexts=["1M"])`).',
        value=round(K3_1M_FP8, 2),
        unit="GiB",
    ),
    *exercise(
        "02-2",
        "A server keeps 40 GiB for the cache. How many 32K-token K3 sequences (FP8 cache) fit, and how many "
        "Llama 3.1 70B sequences (BF16, 327,680 B per token)?",
        f"K3: 13,824 B × 32,768 + 464,633,856 B of state = {K3_32K_FP8:,} B per sequence, so "
        f"⌊40·2^30 / {K3_32K_FP8:,}⌋ = {K3_SEQS_40} sequences. "
        f"Llama: 327,680 × 32,768 = 10 GiB per sequence, so {LLAMA_SEQS_40} "
        '(`kv_growth.sequences_table(["kimi-k3"], budget_bytes=40 * 2**30, contexts=["32K"], kv_dtype="fp8")`).',
        value=K3_SEQS_40,
        unit="sequences",
    ),
    *exercise(
        "02-3",
        "Llama 3.1 70B decodes at 128K of context with a BF16 cache. How many GiB of cache does each decoded token "
        "read, and how long does reading it take at an H200's 4.8 TB/s?",
        f"$2·80·8·128·2$ = 327,680 B per token × 131,072 tokens = {LLAMA_READ_128K:,.0f} GiB per decoded token, "
        f"{LLAMA_READ_128K * GiB / H200_BW * 1e3:,.1f} ms at 4.8·10^12 B/s, before the weights are read: "
        "at long context the cache, not the weights, bounds the speed of one sequence.",
        value=round(LLAMA_READ_128K, 2),
        unit="GiB",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
