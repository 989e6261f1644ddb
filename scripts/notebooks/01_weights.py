"""Generate notebooks/01-weights.ipynb, then execute it and keep only the checked outputs.

Every number in the prose and the exercises' answers is computed here by k3lib (f-strings), never typed.

Usage:  .venv/bin/python scripts/notebooks/01_weights.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.memory import weights_bytes, weights_bytes_by_group
from k3lib.core.models import get_model
from k3lib.views.citations import guide_quote

STEM = "01-weights"
GiB = 2**30

K3, LLAMA, QWEN = get_model("kimi-k3"), get_model("llama-3.1-70b"), get_model("qwen3-next-80b")
W_K3 = weights_bytes(K3, "native") / GiB
W_K3_BF16 = weights_bytes(K3, "bf16") / GiB
ROUTED_P = K3.param_groups()["routed_experts"]
ROUTED_MXFP4 = weights_bytes_by_group(K3, "native")["routed_experts"] / GiB
ROUTED_Q4K = ROUTED_P * 4.5 / 8 / GiB
W_LLAMA_Q4 = weights_bytes(LLAMA, "q4_k_m") / GiB
W_LLAMA_BF16 = weights_bytes(LLAMA, "bf16") / GiB
USABLE_H200 = 150_753_352_090 / GiB

cells = [
    md(f"""
# 01 · Weights

**The question:** how many bytes do a model's weights take, and why does K3, with {K3.params_total / 1e12:.2f} trillion parameters, fit in {W_K3:,.0f} GiB rather than {W_K3_BF16:,.0f}?

{nav(STEM)}

Weights are the floor of the budget: they do not shrink with a shorter context or a smaller batch.
Their size is parameters × bits, summed over the model's tensors, and a checkpoint does not store every tensor the same way.
Notation as in [00](00-vram-anatomy.ipynb): $P$ parameters, $b_w$ bits per weight, GiB = 2^30 bytes, GB = 10^9 bytes.
"""),
    objectives(
        [
            "Compute $W = P·b_w/8$ with block scales counted in $b_w$ (MXFP4: 4.25 bits, Q4_K: 4.5).",
            "Read which tensors of a checkpoint are quantized and which stay BF16, and what each costs.",
            "Say why an MoE model keeps every expert in memory although a token uses few.",
            "Size the weights of K3, a dense model and a hybrid model at any precision.",
        ],
        minutes=25,
    ),
    code("""
from k3lib.views import anatomy, charts, notebook, tables, weights_view
from k3lib.views.charts_parallel import readable  # sized to the cell, 12 px labels
from k3lib.views.table_format import reader_table
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3 at its native precision; `papermill -k python3 -p model llama-3.1-70b -p weights bf16 -p gpus 2 ...` runs the lesson's plan for another model.
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
## Bytes per parameter

A format stores weights in blocks: a few bits per value and a scale per block, so the bits per weight include the scale.
MXFP4 keeps 32 four-bit values and one 8-bit scale in 17 bytes; GGUF's Q4_K keeps 256 values in 144 bytes:

$$b_w = \frac{8 · \text{block bytes}}{\text{weights per block}}, \qquad \text{MXFP4: } \frac{8·17}{32} = 4.25, \qquad \text{Q4\_K: } \frac{8·144}{256} = 4.5$$

and the weights take

$$W = \sum_g \frac{P_g · b_g}{8} \text{ bytes}$$

over the model's tensor groups $g$, each at its own format.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
formats = weights_view.format_bits_table()
reader_table(formats)
"""),
    code("""
weights_view.bits_chart(formats)
"""),
    md("""
**Takeaway:** a billion parameters is 1.86 GiB in BF16, 0.49 GiB in MXFP4; the scale bits are why "4-bit" is 4.25 or 4.5.

## Which tensors are stored how

A checkpoint quantizes where it pays.
K3 ships its routed experts in MXFP4 and everything else (attention, shared experts, embeddings, routers) in BF16:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
k3_tensors = weights_view.tensor_formats_table("kimi-k3", "native")
reader_table(k3_tensors)
"""),
    md(f"""
The routed experts are {100 * ROUTED_P / K3.params_total:.1f} % of the parameters, so quantizing them alone takes K3 from {W_K3_BF16:,.1f} GiB in BF16 to {W_K3:,.1f} GiB.
The same picture for a dense model (Llama 3.1 70B, all BF16: its MLP is most of it) and a hybrid (Qwen3-Next 80B, BF16: nearly all routed experts):
"""),
    code("""
import pandas as pd
three = pd.concat([weights_view.tensor_formats_table("kimi-k3", "native"),
                   weights_view.tensor_formats_table("llama-3.1-70b", "bf16"),
                   weights_view.tensor_formats_table("qwen3-next-80b", "bf16")])
weights_view.tensors_chart(three)
"""),
    md("""
Worked for K3 as shipped, and for the two others in BF16, $W = P·b_w/8$ with $b_w$ the parameter-weighted mean:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.weights_worked_table("kimi-k3", "native"))
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(pd.concat([tables.weights_worked_table("llama-3.1-70b", "bf16").assign(model="llama-3.1-70b"),
                        tables.weights_worked_table("qwen3-next-80b", "bf16").assign(model="qwen3-next-80b")],
                       ignore_index=True))
"""),
    md(f"""
**Takeaway:** K3 as shipped is {K3.params_total / 1e9:,.1f} billion parameters at {weights_bytes(K3, "native") * 8 / K3.params_total:.2f} bits on average: {W_K3:,.1f} GiB.

## The precision ladder on real models

Every step down the ladder is parameters × fewer bits, so a model's weights scale with its format's bits:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
ladder = tables.precision_ladder_comparison(["kimi-k3", "llama-3.1-70b", "qwen3-next-80b"], precisions=("bf16", "q8_0", "q4_k_m", "q2_k"))
reader_table(ladder)
"""),
    code("""
readable(charts.precision_ladder_chart(ladder))
"""),
    md(r"""
## MoE: total vs active parameters

A mixture-of-experts layer routes each token to $k$ of its $E$ experts, so a token touches only the active parameters:

$$P_{active} = P - P_{embedding} - P_{routed}\left(1 - \frac{k}{E}\right)$$

Active parameters set the compute and the bytes read per token.
Memory is another matter: the router picks different experts for every token and every layer, so over a batch or a long answer nearly all of them are used, and all must stay resident.
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.moe_table())
"""),
    md(f"""
`if only active` is what the weights would take if only one token's $k$ experts had to be in memory; no server can do that (fetching experts from host memory is what offload, lesson [04](04-offload.ipynb), pays for).

**Takeaway:** active parameters ({K3.params_active / 1e9:,.0f}B for K3) set the speed, total parameters ({K3.params_total / 1e9:,.0f}B) set the memory.

## What a guide says

{guide_quote("g000-weights-bf16")}

At 2 bytes per parameter the real K3's BF16 weights are {W_K3_BF16:,.0f} GiB, and as shipped {W_K3:,.1f} GiB: the guide's figure matches no precision of the real checkpoint.

## Predict, then run

Llama 3.1 70B in BF16 is {W_LLAMA_BF16:,.1f} GiB.
**Predict** its size in Q4_K_M (4.5 bits), and whether K3 with all of its tensors in Q4_K_M would be smaller or larger than as shipped (MXFP4 experts, BF16 elsewhere):
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.precision_ladder_comparison(["llama-3.1-70b", "kimi-k3"], precisions=("bf16", "native", "q4_k_m")))
"""),
    md(f"""
Llama shrinks by 1 − 4.5/16 = 72 %, to {W_LLAMA_Q4:,.1f} GiB.
K3 all in Q4_K_M is {weights_bytes(K3, "q4_k_m") / GiB:,.1f} GiB, {"smaller" if weights_bytes(K3, "q4_k_m") < weights_bytes(K3, "native") else "larger"} than the native {W_K3:,.1f}: its experts grow from 4.25 to 4.5 bits (+{ROUTED_Q4K - ROUTED_MXFP4:,.1f} GiB), while its other tensors shrink from 16 to 4.5 bits (−{(K3.params_total - ROUTED_P) * 11.5 / 8 / GiB:,.1f} GiB).
The ones left in BF16 are few, so the native mix is already about as small as 4-bit gets.

## Explore

Pick a model and a format: the table shows each tensor group's format, bits and bytes, and the line the total.
"""),
    code("""
weights_view.weights_explorer(model=model if model in weights_view.architectures() else "kimi-k3", weights="native")
"""),
    md(r"""
## Summary

* Weights take $W = \sum_g P_g·b_g/8$ bytes, block scales counted in $b_g$ (MXFP4 4.25 bits, Q4_K 4.5, Q8_0 8.5).
* A checkpoint stores tensors differently: K3 keeps its routed experts in MXFP4 and the rest in BF16.
* A MoE model keeps all experts resident: active parameters set the speed, total parameters the memory.
* For K3, a dense model and a hybrid alike, each halving of bits roughly halves the weights.
"""),
    md("## Exercises"),
    *exercise(
        "01-1",
        "K3's routed experts: 92 MoE layers × 896 experts, each three matrices of 3,584 × 3,072. "
        "How many GiB are they in MXFP4?",
        f"$92·896·3·3,584·3,072$ = {ROUTED_P:,} parameters × 4.25 bits / 8 = {ROUTED_MXFP4:,.2f} GiB, "
        f"{100 * ROUTED_MXFP4 / W_K3:.1f} % of the {W_K3:,.1f} GiB checkpoint "
        '(`reader_table(weights_view.tensor_formats_table("kimi-k3"))`).',
        value=round(ROUTED_MXFP4, 2),
        unit="GiB",
    ),
    *exercise(
        "01-2",
        "Had the routed experts been stored in Q4_K (256 weights in 144 bytes) instead of MXFP4 (32 in 17), "
        "how many GiB more would K3 take?",
        f"Q4_K is $8·144/256$ = 4.5 bits and MXFP4 $8·17/32$ = 4.25, so the experts grow by "
        f"{ROUTED_P:,} × 0.25 / 8 bytes = {ROUTED_Q4K - ROUTED_MXFP4:,.2f} GiB, about "
        f"{(ROUTED_Q4K - ROUTED_MXFP4) / (USABLE_H200):.1f} of an H200.",
        value=round(ROUTED_Q4K - ROUTED_MXFP4, 2),
        unit="GiB",
    ),
    *exercise(
        "01-3",
        "Llama 3.1 70B has 70,553,706,496 parameters. How many GiB in Q4_K_M (4.5 bits per weight), "
        "and how many H200 do its weights need at BF16 and at Q4_K_M, by weights alone?",
        f"70,553,706,496 × 4.5 / 8 / 2^30 = {W_LLAMA_Q4:,.2f} GiB: one H200 holds it with room for a long cache. "
        f"At BF16 it is {W_LLAMA_BF16:,.2f} GiB, which also fits one H200's {USABLE_H200:,.1f} GiB by weights "
        "alone, but leaves too little for the cache at 128K (lesson 00 gives it two).",
        value=round(W_LLAMA_Q4, 2),
        unit="GiB",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
