"""Generate notebooks/01-weights.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/01_weights.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "01-weights"

cells = [
    md(f"""
# 01 · Weights

**The question:** how much memory do K3's weights take at each precision, and why do two guides disagree by almost 10×?

{nav(STEM)}

Weights are the floor of the budget: they do not shrink with a shorter context or a smaller batch.
We work the formula, check guide 000's precision ladder against its own numbers, see why a MoE model keeps every expert in memory, and regenerate the guide's lost "precision-by-precision VRAM budget" table.
Notation as in [00](00-vram-anatomy.ipynb): $P$ parameters, $b_w$ bits per weight, GiB = 2^30 bytes, GB = 10^9 bytes.
"""),
    code("""
from k3lib.views import charts, notebook, tables
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults are guide 000's configuration; `papermill -k python3 -p model kimi-k3 -p weights native ...` runs it for the real architecture.
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
## Parameters × bits

Every weight is stored in $b_w$ bits, block scales included (GGUF Q8_0 keeps 32 weights in 34 bytes: 8.5 bits).

$$W = \frac{P · b_w}{8} \text{ bytes}$$

Worked for the model and precision in the parameters cell:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.weights_worked_table(model, weights)
"""),
    md("""
And for the real K3 as Moonshot ships it: MXFP4 routed experts (4.25 bits with their scales), BF16 everywhere else.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.weights_worked_table("kimi-k3", "native")
"""),
    md("""
**Takeaway:** the real K3 checkpoint is 2,779.5 billion parameters at 4.49 bits on average: 1,452.8 GiB (1.56 TB).
"""),
    md(r"""
## The precision ladder

Guide 000 says each step down cuts the weights by 20–30 %, that Q4 is about 45 % below BF16 and Q2 about 62 %.
Check it against the guide's own four figures (594, 450.4, 325 and 225, read as GiB):

$$\text{saved vs BF16} = 1 - \frac{W_{p}}{W_{BF16}}, \qquad \text{saved vs previous} = 1 - \frac{W_{p}}{W_{p-1}}$$
"""),
    code("""
# NBVAL_CHECK_OUTPUT
ladder = tables.precision_ladder_table("kimi-k3@guide-000")
ladder
"""),
    md("""
The percentages hold (the last step, 30.8 %, is just over 30 %).
But bits alone say something else: 8.5 bits is 47 % below 16, and 4.5 bits 72 %.
The guide's "BF16" figure implies 1.82 bits per parameter of its own 2.8T, so its ladder cannot be bits × parameters.
The real architecture, where every step is bits × parameters:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.precision_ladder_table("kimi-k3")
"""),
    code("""
charts.precision_ladder_chart(tables.precision_ladder_comparison(["kimi-k3@guide-000", "kimi-k3"]))
"""),
    md("""
**Takeaway:** guide 000's percentages match its own figures, but the figures are not parameters × bits; for the real K3 each halving of bits roughly halves the weights.
"""),
    md(r"""
## MoE: total vs active parameters

A mixture-of-experts layer routes each token to $k$ of its $E$ experts.
The parameters a token touches are the active ones:

$$P_{active} = P - P_{embedding} - P_{routed}\left(1 - \frac{k}{E}\right)$$

Active parameters set the compute and the bytes read per token.
Memory is another matter: the router picks different experts for every token and every layer, so over a batch or a long sequence nearly all of them are used, and all must stay resident.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.moe_table()
"""),
    md("""
`if_only_active_GiB` is what the weights would take if only the $k$ experts of one token had to be in memory.
No server can do that: the next token needs other experts, and loading them from host memory is what offload mode (notebook 04) pays for.
Where K3's parameters sit:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
tables.param_groups_table("kimi-k3")
"""),
    md("""
**Takeaway:** 98 % of K3's parameters are routed experts; active parameters (104B) set the speed, total parameters (2,779.5B) set the memory.
"""),
    md("""
## Two guides, almost 10× apart

Guide 000 says the BF16 weights are ~594 GB.
Guide 004 lists 5,476.2 GB at FP16.
Put in one unit (GB, since guide 004's figures are decimal file sizes), with what each assumes:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
guides = tables.guide_weights_comparison()
guides
"""),
    md("""
Guide 004 counts every parameter at 2 bytes: that is what BF16 means, and the real config agrees (5,559 GB).
Guide 000's 594 is 1.82 bits per parameter; its explanation, that the "effective unique parameter count after MoE expert sharing is roughly one-tenth", does not describe a MoE model: experts are not shared, each is its own weights.
What a server actually loads is neither: the native checkpoint, MXFP4 experts and BF16 elsewhere, is 1,560 GB.

**Takeaway:** guide 004's FP16 figure is about parameters × 2 bytes; guide 000's 594 GB is no precision at all; the real native K3 is 1.56 TB.
"""),
    md("""
## The lost precision-by-precision budget table

Guide 000 announces a table of "the exact per-configuration budget" whose text is lost.
Its note survives: KV cache BF16 for the first two rows, FP8 for the next two, INT4 for the last two, all at 256K.

**Assumptions** (the table itself is lost, so these are ours, stated):

* Six rows from the guide's four published weight tiers, no invented figure: a staircase that moves one knob per row: BF16 + BF16 KV, Q8 + BF16 KV, Q8 + FP8 KV, Q4 + FP8 KV, Q4 + INT4 KV, Q2 + INT4 KV.
* Activation 10 GiB (the guide's worked example) and overhead 8 GiB per GPU (its "subtract at least 8 GB per GPU").
* Each row on the fewest H100 80 GB that hold it.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
budget = tables.precision_budget_table()
budget
"""),
    code("""
charts.budget_stacked_bar(tables.precision_budget_plans(), per="gpu")
"""),
    md("""
The Q4 + FP8 row lands on the worked example's 415 GiB on 6 H100 (with 8 GiB × 6 = 48 GiB of overhead), and at 128K it would fit on 5: the guide's "5–6 H100" sweet spot.

**Takeaway:** with the guide's own rules, Q4 + FP8 KV at 256K needs 6 H100 80 GB and Q2 + INT4 needs 4; BF16 weights need 10 in the guide's one pool of GPUs, 16 as two whole 8-GPU nodes.
"""),
    md("""
## Explore

The budget explorer at the end of [00](00-vram-anatomy.ipynb#Explore) takes every precision above: set `weights` there and watch the weights bar.
For your own hardware and layout, [05](05-decision-checklist.ipynb) picks the precision for you.
"""),
    md(r"""
## Summary

* Weights take $W = P·b_w/8$ bytes, with block scales counted in $b_w$.
* Guide 000's ladder (−24 %, −45 %, −62 % vs BF16) matches its own figures, but they imply 1.82 bits per parameter at "BF16"; for the real K3 every halving of bits roughly halves the weights.
* A MoE model keeps all experts resident: K3 touches 104B parameters per token and holds 2,779.5B.
* Guide 004's 5,476.2 GB is about parameters × 2 bytes; guide 000's 594 GB (637.8 GB) is 8.6× smaller and matches no precision; the native checkpoint is 1,560 GB.
* Regenerated with stated assumptions, guide 000's budget table puts Q4 + FP8 KV at 256K on 6 H100 80 GB (415 GiB).

## Exercises

1. By bits alone, how much should Q4 (4.5 bits) save against BF16? Compare with the guide's 45 %.
2. What would K3's weights take if only one token's experts had to be resident, and why can't a server do that?
3. With guide 000's figures and rules, how many H200 (141 GB) does Q4 + FP8 KV at 256K need?

<details><summary>Answers</summary>

1. 1 − 4.5/16 = 71.9 %, which is what the real architecture shows (`tables.precision_ladder_table("kimi-k3")`); the guide's 45.3 % comes from figures that are not bits × parameters.
2. 129.7 GiB instead of 1,452.8 GiB (`tables.moe_table()`), but the next token routes to other experts in every layer, so all 896 experts per layer must be in memory, or be fetched from the host at every token.
3. 325 + 32 + 10 = 367 GiB must fit in $G·(141 - 8)$, so $G$ = 3 (399 GiB): `tables.min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpu="h200")`.

</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
