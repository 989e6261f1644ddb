"""Generate notebooks/00-vram-anatomy.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/00_vram_anatomy.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "00-vram-anatomy"

cells = [
    md(f"""
# 00 · The VRAM anatomy

**The question:** where does every byte of GPU memory go when you serve Kimi K3, and does a given configuration fit?

{nav(STEM)}

We split the budget into four components, write the one equation that adds them up, and check it against guide 000's worked example (Q4 weights, FP8 KV cache, 256K context, 5 vs 6 H100 80 GB).
Then we put the real K3 architecture next to the guide's figures.
"""),
    md(r"""
## Notation (used in the whole series)

| symbol | meaning | unit |
|---|---|---|
| $P$ | parameters | count |
| $b_w$ | bits per weight, block scales included | bits |
| $L$ | layers | count |
| $D$ | hidden size | elements |
| $K$ | KV heads | count |
| $H$ | head dimension (from the model's config) | elements |
| $T$ | tokens of context (`max_model_len`) | tokens, K = 1,024 |
| $B$ | batch: sequences served at once | count |
| $b$ | bytes per KV-cache element: BF16 2, FP8 1, INT4 0.5 | bytes |
| $kv_{tok}$ | KV-cache bytes per token of context | bytes |
| $W$, $KV$, $A$, $O$ | weights, KV cache, activation, overhead | bytes, shown in GiB |
| $G$, $C$ | GPUs, memory per GPU | count, GiB |
| $M$ | total memory needed | GiB |

Units: the whole series shows sizes in GiB (2^30 bytes); a column or axis that says GB means 10^9 bytes (file sizes, bandwidths in GB/s, guide 004's figures).
Guide 000 writes "GB" but divides by 1024^3 and counts an H100 as 80, so we read its figures as GiB.
Every table names its unit in its column names (`kv_cache_GiB`), and no table mixes units.
"""),
    code("""
from k3lib.views import charts, notebook, tables, widgets
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults are guide 000's configuration.
Change them here, or from the command line: `papermill -k python3 -p gpu h200 -p gpus 4 notebooks/00-vram-anatomy.ipynb reports/00-h200.ipynb`.
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
real = notebook.validate(model="kimi-k3", weights="native", kv_dtype=kv_dtype, context=context, batch=batch, gpu=gpu, gpus=gpus)
plan.reason
"""),
    md(r"""
## Four components, one equation

The **weights** are the floor: $P$ parameters at $b_w$ bits each, loaded once.
The **KV cache** is the variable: keys and values kept for every token of every sequence.
**Activation** buffers hold a forward pass's intermediate tensors.
**Overhead** is per GPU: CUDA context, NCCL buffers, fragmentation.

$$M = \underbrace{P·b_w/8}_{W} + \underbrace{B·T·kv_{tok}}_{KV} + A + \underbrace{G·O_{gpu}}_{O} \le G·C$$

Under tensor parallelism each GPU holds about $M/G$, and it is the per-GPU figure that must stay below $C$.
Here is the budget for the configuration in the parameters cell, over all GPUs and on one GPU.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.plan_table(plan)
"""),
    code("""
charts.budget_stacked_bar(plan, per="gpu")
"""),
    md("""
## The guide's worked example

Guide 000 adds: weights 325 GB (Q4), KV cache 131,072 B × 262,144 / 1024^3 = 32 GB (FP8 at 256K), activation 10 GB, overhead 48 GB.
It gets ~415 GB, 65 GB of headroom on 6× H100 80 GB, and 15 GB over on 5.
The same sum, term by term:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
worked = tables.worked_example_table(tables.guide_000_plan(gpus=6))
worked
"""),
    code("""
# NBVAL_CHECK_OUTPUT
five_vs_six = tables.gpu_count_table(gpus=(5, 6))
five_vs_six
"""),
    md("""
The guide's 48 GB is "8 GPUs × 6 GB", although the example runs on 5 or 6 GPUs.
Its own rule elsewhere is "subtract at least 8 GB per GPU", so overhead should grow with $G$.
With 8 GiB per GPU the verdicts stand: 5 GPUs are 7 GiB over, 6 have 65 GiB to spare.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
per_gpu_rule = tables.gpu_count_table(gpus=(4, 5, 6, 7, 8), assumptions=None)
per_gpu_rule
"""),
    md("""
**Takeaway:** guide 000's 415 GiB is $W + KV + A + O$ = 325 + 32 + 10 + 48; it fits 6 H100 80 GB and not 5, whichever overhead convention you take.
"""),
    md("""
## The real K3 next to the guide

The guide's figures are a profile: numbers it prints, not shapes.
K3's own config gives 2,779.5 billion parameters, MXFP4 routed experts and BF16 elsewhere: 1,452.8 GiB (1.56 TB) of weights as shipped, not 325 or 594.
Its KV cache is 27,648 B per token at BF16, not 262,144.
Those are one copy of the weights and one copy of the cache.

Same KV dtype, context, GPU and count as the parameters cell, on the driver-visible memory of each GPU.
The `total_GiB` column adds up what every GPU holds, and under tensor parallelism some parts sit whole on every GPU: the weights TP cannot split (norms, routers, the MLA and KDA down-projections) and the MLA latent cache (one vector per token that all heads share, so every TP rank keeps all of it).
That column therefore counts those parts once per GPU, copies summed, and its weights figure is above the 1,452.8 GiB of one copy:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.plan_table(real)
"""),
    md("""
One copy next to the copies summed, and the difference: what TP replicates on every GPU (it grows with the GPU count; the per-GPU column above is what decides the fit):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.copies_table(real)
"""),
    code("""
charts.budget_stacked_bar([plan, real])
"""),
    md("""
The fewest of these GPUs that hold the real K3 at its native precision, deployed as people deploy it (one node up to 8 GPUs, then whole 8-GPU nodes with TP inside a node):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.min_gpus(model="kimi-k3", weights="native", kv_dtype=kv_dtype, context=context, gpu=gpu, batch=batch)
"""),
    md("""
**Takeaway:** for the real K3 the weights are nearly the whole budget, and they are about 4.5× the guide's Q4 figure; the KV cache is the small part.
"""),
    md("""
## Explore

Turn the knobs: the table and the per-GPU bar below update in place.
A bad combination (a guide profile with `native` weights, say) shows one line naming the parameter, and no number.
"""),
    code("""
widgets.explorer(model=model, weights=weights, kv_dtype=kv_dtype, context=context, gpu=gpu, gpus=gpus, batch=batch)
"""),
    md(r"""
## Summary

* Memory has four components: weights $W$, KV cache $KV = B·T·kv_{tok}$, activation $A$ and per-GPU overhead $O$.
* A configuration fits when $M = W + KV + A + O \le G·C$, and, per GPU, when each GPU's share fits its memory.
* Guide 000's worked example reproduces exactly: 415 GiB, 65 GiB headroom on 6 H100, 15 GiB over on 5.
* Its 48 GiB overhead is an 8-GPU figure; with its own 8 GiB-per-GPU rule, 5 GPUs are still over (by 7 GiB).
* The real K3 needs 1,452.8 GiB of weights at its native precision: three 8-GPU H100 nodes (24 GPUs) or two H200 nodes (16), not 6 GPUs.

## Exercises

1. With the guide's numbers, what is the total on 6 H100 if the KV cache stays BF16 instead of FP8?
2. With the guide's 8 GiB-per-GPU rule, how many H100 80 GB does Q4 + FP8 KV need at 512K context?
3. Run this notebook with papermill for 4× H200 (`-p gpu h200 -p gpus 4`). What headroom does the guide's configuration have?

<details><summary>Answers</summary>

1. KV doubles to 262,144 B × 262,144 / 2^30 = 64 GiB, so $M$ = 325 + 64 + 10 + 48 = 447 GiB and the headroom is 33 GiB: `tables.worked_example_table(tables.guide_000_plan(gpus=6, kv_dtype="bf16"))`.
2. $W + KV + A$ = 325 + 64 + 10 = 399 GiB must fit in $G·(80 - 8)$ GiB, so $G$ = 6 (432 GiB): `tables.min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="512K")`.
3. 4 × 141 = 564 GiB available, $M$ = 325 + 32 + 10 + 4·8 = 399 GiB, so 165 GiB of headroom.

</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
