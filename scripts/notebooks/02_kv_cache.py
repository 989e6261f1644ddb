"""Generate notebooks/02-kv-cache.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/02_kv_cache.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "02-kv-cache"

cells = [
    md(f"""
# 02 · The KV cache

**The question:** how many bytes does each token of context cost, how does that grow with context, and what does K3 really need?

{nav(STEM)}

The KV cache is the variable part of the budget.
We write its per-token formula for each attention design, compare real models with guide 000's 256 KB per token, and regenerate the guide's KV table, its "GB saved" example and its lost full reference table.
Notation as in [00](00-vram-anatomy.ipynb): $L$ layers, $K$ KV heads, $H$ head dim, $T$ tokens, $B$ batch, $b$ bytes per element; GiB = 2^30 bytes.
"""),
    code("""
import pandas as pd

from k3lib.views import charts, notebook, tables
pd.set_option("display.max_colwidth", None)  # whole formulas: K3's KDA state S is a long one
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults are guide 000's configuration.
"""),
    parameters("""
model: str = "kimi-k3@guide-000"  # model id (`k3plan models`); kimi-k3 is the real architecture
weights: str = "q4"  # weight precision: bf16, q8, q4, q2 for the guide profile; native for kimi-k3
kv_dtype: str = "fp8"  # KV-cache dtype: bf16, fp8, int4
context: str = "256K"  # context length T in tokens, K meaning 1,024: 128K, 256K, 1M
batch: int = 1  # sequences served at once, B
gpu: str = "h100-sxm"  # GPU id or alias (`k3plan gpus`): h100, h200, mi300x
gpus: int = 6  # number of GPUs, G
"""),
    code("""
# NBVAL_CHECK_OUTPUT
plan = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch, gpu=gpu, gpus=gpus)
plan.reason
"""),
    md(r"""
## Bytes per token, by attention design

Each layer keeps something for every token it has seen; what it keeps depends on the attention design.

* **GQA** (grouped-query attention) caches a key and a value per KV head: $kv_{tok} = 2·L·K·H·b$. Take $H$ from the config: it is not always $D$ divided by the query heads.
* **MLA** (multi-head latent attention) caches one compressed latent and a small rope key, shared by all heads: $kv_{tok} = L·(r_{kv} + d_{rope})·b$.
* **Sliding window** layers keep only the last $W$ tokens: $2·L·K·H·b·\min(T, W)$ per sequence, which stops growing at $W$.
* **Hybrid linear attention** (Kimi Delta Attention, Gated DeltaNet): the linear layers keep a constant state $S$ per sequence; only the few full-attention layers grow with $T$.

$$KV = B·\left(T·kv_{tok} + \text{sliding}\right) + B·S$$

A GQA model worked through, Llama 3.1 70B:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
llama = tables.kv_worked_table("llama-3.1-70b", kv_dtype="bf16", context="256K")
llama
"""),
    md("""
And the real K3: 24 MLA layers that grow, 69 KDA layers that hold a fixed state.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
k3 = tables.kv_worked_table("kimi-k3", kv_dtype="bf16", context="256K")
k3
"""),
    md("""
Across real models, at BF16, with guide 000's published 256 KB (262,144 B) per token for K3 in the last row:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
per_token = tables.kv_per_token_table()
per_token
"""),
    code("""
charts.kv_per_token_comparison_chart(per_token)
"""),
    md("""
**Takeaway:** the real K3 caches 27,648 B per token at BF16 (24 layers × 576 × 2 B), 9.5× less than the guide's 262,144, plus a constant 443 MiB of KDA state per sequence.
"""),
    md(r"""
## KV cache vs context

For a fixed design the cache is linear in context and in bytes per element:

$$KV = B·T·kv_{tok}, \qquad kv_{tok}(\text{FP8}) = \tfrac{1}{2}\,kv_{tok}(\text{BF16}), \qquad kv_{tok}(\text{INT4}) = \tfrac{1}{4}\,kv_{tok}(\text{BF16})$$

Worked for the configuration in the parameters cell:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.kv_worked_table(model, kv_dtype=kv_dtype, context=context, batch=batch)
"""),
    md("""
Guide 000's FAQ table ("256 GB at 1M, 128 GB at 512K, 64 GB at 256K, 32 GB at 128K; at FP8 half; at INT4 one quarter"), regenerated:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
kv_table = tables.kv_context_table("kimi-k3@guide-000")
kv_table
"""),
    md("""
The same table for the real K3 (the KDA state, 0.43 GiB in FP32, is included and does not scale with $T$ or the dtype):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.kv_context_table("kimi-k3")
"""),
    code("""
charts.kv_vs_context_chart(tables.kv_context_long(["kimi-k3@guide-000", "kimi-k3"]), log_y=True)
"""),
    md("""
**Takeaway:** every halving of context or of cache precision halves the KV cache; for the real K3 even 1M tokens at BF16 is 27.4 GiB, not 256.
"""),
    md("""
## KV precision is independent of weight precision

The cache dtype is a serving option (vLLM's `--kv-cache-dtype fp8`), chosen separately from the weights' quantisation.
Guide 000's figures, at 256K, each on the fewest H100 80 GB that hold it (8 GiB overhead per GPU, 10 GiB activation):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
mixes = tables.precision_budget_table(rows=[("q4", "bf16"), ("q4", "fp8"), ("bf16", "fp8"), ("bf16", "bf16")])
mixes
"""),
    md("""
**Takeaway:** switching the cache from BF16 to FP8 frees 32 GiB at 256K without touching the weights; for BF16 weights that saves a GPU.
"""),
    md(r"""
## What lowering `max_model_len` saves

$$\Delta = B·kv_{tok}·(T_{current} - T_{target})$$

Guide 000: "At BF16 (262,144 bytes/token), going from 512K to 128K saves ~100 GB of KV cache."
"""),
    code("""
# NBVAL_CHECK_OUTPUT
saved = tables.context_savings_table("kimi-k3@guide-000", current="512K", target="128K")
saved
"""),
    code("""
# NBVAL_CHECK_OUTPUT
saved_gb = tables.context_savings_table("kimi-k3@guide-000", current="512K", target="128K", unit="GB")
saved_gb
"""),
    md("""
For the real K3 the same cut frees a tenth as much:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.context_savings_table("kimi-k3", current="512K", target="128K")
"""),
    md("""
**Takeaway:** the guide's "~100 GB" is 96 GiB, or 103 GB; for the real K3 the same cut saves 10.1 GiB.
"""),
    md(r"""
## The lost full reference table

Guide 000 announces "the full reference table" of total memory, and its text lost it.
Its summary quotes the two ends: "~291 GB (Q2, 64K) to ~908 GB (BF16, 1M)".

**Assumptions**, chosen because they reproduce both ends exactly:

* $M = W + B·T·kv_{tok} + A + O$ with the worked example's $A$ = 10 GiB and $O$ = 48 GiB in total.
* KV cache BF16 for BF16 weights, FP8 for the quantised tiers (Q2 at 64K with a BF16 cache would be 299 GiB, with INT4 287).
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reference = tables.reference_table()
reference
"""),
    code("""
charts.reference_heatmap(reference)
"""),
    md("""
The same table for the real K3 at its native precision and the quantised tiers, on the GPUs in the parameters cell (overhead and the MLA cache copies follow from the layout):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.reference_table(model="kimi-k3", tiers=("native", "q8", "q4", "q2"), gpu=gpu, gpus=gpus)
"""),
    md("""
**Takeaway:** with the worked example's activation and overhead, guide 000's reference table runs from 291 GiB (Q2, 64K) to 908 GiB (BF16, 1M); for the real K3 the context barely moves a total set by the weights.
"""),
    md("""
## Explore

The budget explorer at the end of [00](00-vram-anatomy.ipynb#Explore) takes the KV dtype and the context: switch the model to `kimi-k3` (weights `native`) to see the real cache.
How the cache splits over GPUs is [03](03-tensor-parallel.ipynb)'s subject.
"""),
    md(r"""
## Summary

* GQA caches $2·L·K·H·b$ bytes per token, MLA $L·(r_{kv} + d_{rope})·b$; sliding layers stop at their window and linear-attention layers keep a constant state.
* The real K3 caches 27,648 B per token at BF16 (24 MLA layers) plus 443 MiB of KDA state per sequence; guide 000 uses 262,144 B, 9.5× more.
* Guide 000's KV table regenerates exactly: 256, 128, 64, 32 GiB at BF16 for 1M, 512K, 256K, 128K; FP8 halves it, INT4 quarters it.
* KV precision is chosen independently of weight precision.
* Lowering `max_model_len` from 512K to 128K at BF16 frees 96 GiB (103 GB) with the guide's figure, 10.1 GiB for the real K3.
* The full reference table, with the worked example's assumptions, spans 291 to 908 GiB.

## Exercises

1. How much KV cache does Llama 3.1 70B need at 128K context in BF16, for one sequence?
2. With guide 000's figure and an FP8 cache, what is the longest context that fits in a 32 GiB KV budget? And for the real K3?
3. What does going from 1M to 256K save at FP8 with the guide's figure?

<details><summary>Answers</summary>

1. 327,680 B × 131,072 / 2^30 = 40 GiB: `tables.kv_context_table("llama-3.1-70b", contexts=["128K"])`.
2. 32 GiB / 131,072 B = 262,144 tokens = 256K. For the real K3, (32 GiB − 0.43 GiB of state) / 13,824 B ≈ 2.45M tokens, more than its 1M maximum.
3. 131,072 B × (1,048,576 − 262,144) / 2^30 = 96 GiB: `tables.context_savings_table("kimi-k3@guide-000", current="1M", target="256K", kv_dtypes=["fp8"])`.

</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
