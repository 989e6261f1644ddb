"""Generate notebooks/00-vram-anatomy.ipynb, then execute it and keep only the checked outputs.

Every number in the prose and the exercises' answers is computed here by k3lib (f-strings), never typed.

Usage:  .venv/bin/python scripts/notebooks/00_vram_anatomy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.memory import kv_cache_bytes, weights_bytes
from k3lib.core.models import get_model
from k3lib.core.plan import make_plan
from k3lib.views.citations import guide_quote
from k3lib.views.tables import min_gpus, one_copy_bytes

STEM = "00-vram-anatomy"
GiB = 2**30

K3 = get_model("kimi-k3")
DEFAULT = dict(model="kimi-k3", weights="native", kv_dtype="fp8", context="256K", batch=1, gpu="h200-sxm", gpus=16)
k3_plan = make_plan(**DEFAULT)
W_K3 = weights_bytes(K3, "native") / GiB
one_w, one_kv = (b / GiB for b in one_copy_bytes(k3_plan))
KV_K3_FP8_256K = kv_cache_bytes(K3, context_tokens=262_144, batch=1, kv_dtype="fp8") / GiB
USABLE_H200 = k3_plan.per_gpu.available_bytes / GiB
PEAK = k3_plan.per_gpu
LLAMA = get_model("llama-3.1-70b")
W_LLAMA = weights_bytes(LLAMA, "bf16") / GiB
# exercise 3: the MLA latent at FP8, 256K, copied on each of a stage's 8 TP ranks, plus the KDA state (split by head)
KV_SUMMED = k3_plan.total.kv_cache_bytes / GiB
MLA_ONE = 24 * 576 * 1 * 262_144 / GiB
dense = make_plan(model="llama-3.1-70b", weights="bf16", kv_dtype="bf16", context="128K", gpu="h200-sxm", gpus=2)
PEAK_ROUTED = k3_plan.peak.routed_experts_bytes / GiB
batch64_gpus = min_gpus(model="kimi-k3", weights="native", kv_dtype="fp8", context="256K", gpu="h200-sxm", batch=64)

cells = [
    md(f"""
# 00 · The VRAM anatomy

**The question:** where does every byte of GPU memory go when you serve Kimi K3, and does a given set of GPUs hold it?

{nav(STEM)}

We split the memory of each GPU into four components, write the one equation that adds them up, and draw what each of 16 H200 holds for the real K3.
Then we put a dense model (Llama 3.1 70B) and a hybrid one (Qwen3-Next 80B) beside it: the same equation, a very different balance.
"""),
    objectives(
        [
            "Name the four components of GPU memory (weights, KV cache, activation, overhead) and how each scales.",
            "Write the per-GPU budget $m_{gpu} \\le C$ and say why the fullest GPU decides.",
            "Read a per-GPU diagram: what tensor parallelism splits and what every GPU keeps whole.",
            "Compare the budget of an MoE giant, a dense model and a hybrid model.",
        ],
        minutes=30,
    ),
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
| $G$, $C$ | GPUs, usable memory per GPU | count, GiB |
| $TP$, $PP$ | tensor-parallel and pipeline-parallel sizes, $G = TP·PP$ | count |

Units: the whole series shows sizes in GiB (2^30 bytes); a column or axis that says GB means 10^9 bytes (file sizes, bandwidths in GB/s).
An "80 GB" H100 has 80 GiB of HBM, and an engine can use a little less of it; every table names its unit in its headers.
"""),
    code("""
from k3lib.views import anatomy, charts, notebook, tables, widgets
from k3lib.views.charts_parallel import readable  # sized to the cell, 12 px labels
from k3lib.views.table_format import reader_table
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3 at its native precision (MXFP4 routed experts, BF16 elsewhere), FP8 KV cache, 256K context, on two 8-GPU H200 nodes.
Change them here, or from the command line: `papermill -k python3 -p gpu h100 -p gpus 24 notebooks/00-vram-anatomy.ipynb reports/00-h100.ipynb`.
"""),
    parameters(f"""
model: str = "{DEFAULT["model"]}"  # model id (`k3plan models`): kimi-k3, llama-3.1-70b, qwen3-next-80b, …
weights: str = "{DEFAULT["weights"]}"  # weight precision: native (the checkpoint's own), bf16, fp8, q8_0, q4_k_m, …
kv_dtype: str = "{DEFAULT["kv_dtype"]}"  # KV-cache dtype: bf16, fp8, int4
context: str = "{DEFAULT["context"]}"  # context length T in tokens, K meaning 1,024: 128K, 256K, 1M
batch: int = {DEFAULT["batch"]}  # sequences served at once, B
gpu: str = "{DEFAULT["gpu"]}"  # GPU id or alias (`k3plan gpus`): h100, h200, mi300x
gpus: int = {DEFAULT["gpus"]}  # number of GPUs, G (one node up to 8, then whole nodes)
"""),
    code("""
# NBVAL_CHECK_OUTPUT
plan = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch, gpu=gpu, gpus=gpus)
anatomy.verdict_line(plan)
"""),
    md(r"""
## Four components, one equation

* The **weights** $W = P·b_w/8$ are the floor: loaded once, whatever the context or the batch.
* The **KV cache** is the variable: keys and values kept for every token of every sequence, $KV = B·T·kv_{tok}$ (lesson [02](02-kv-cache.ipynb)).
* **Activation** $A$ holds one forward pass's intermediate tensors; it grows with the batch, not with the context.
* **Overhead** $O$ is per GPU: the CUDA context and runtime, and the communicator (NCCL) buffers once a GPU has peers.

Under tensor parallelism ($TP$ GPUs share every layer) and pipeline parallelism ($PP$ stages of whole layers), one GPU of stage $s$ holds

$$m_{gpu,s} = \frac{W^{shard}_s}{TP} + W^{rep}_s + KV_{rank,s}(T, B) + \frac{A}{TP} + O_{gpu} \;\le\; C$$

where $W^{rep}$ are the weights TP cannot split (norms, routers, small down-projections), which every GPU keeps whole.
The **fullest GPU decides**: a plan fits when every GPU's $m_{gpu}$ stays below the memory $C$ an engine can use.
The budget for the parameters above, over all GPUs and on the fullest one:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.plan_table(plan))
"""),
    md(f"""
## Where every GiB goes, GPU by GPU

The diagram draws one bar per GPU, from the plan itself.
For K3 on 16 H200 the layout is {k3_plan.layout.describe()}: each 8-GPU node is one pipeline stage of about half the {K3.num_layers} layers, and the 8 GPUs of a node split every layer of it.
Purple is the routed experts (MXFP4): {PEAK_ROUTED:,.1f} GiB; with the other weights, {PEAK.weights_bytes / GiB:,.1f} GiB of the {PEAK.total_bytes / GiB:,.1f} GiB on the fullest GPU are weights.
Light blue is what every GPU of a stage keeps whole; orange, the KV cache, is a thin slice.
"""),
    code("""
anatomy.verdict_line(plan)
"""),
    code("""
anatomy.gpu_chart(plan)
"""),
    md(f"""
**Takeaway:** for the real K3 the weights are about {100 * PEAK.weights_bytes / PEAK.total_bytes:.0f} % of every GPU; the cache, the activation and the overhead share the rest.

## One copy, and the copies TP makes

K3's config gives {K3.params_total / 1e9:,.1f} billion parameters; MXFP4 routed experts and BF16 elsewhere make {W_K3:,.1f} GiB of weights, **one copy**.
Its cache at FP8 and 256K is {KV_K3_FP8_256K:,.2f} GiB for one sequence, one copy.
The all-GPU column of the budget above adds what every GPU holds, and under TP two things sit whole on every GPU of a stage: the weights TP cannot split, and the MLA latent cache (one vector per token that all heads share, so every TP rank keeps all of it).
That column therefore counts those parts once per GPU, copies summed, which is why it is above one copy:
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(tables.copies_table(plan))
"""),
    md("""
## A dense and a hybrid model for contrast

Llama 3.1 70B is **dense**: every token uses all its parameters, and its grouped-query cache is large (327,680 B per token at BF16).
Qwen3-Next 80B is a **hybrid**: 36 of its 48 layers are linear attention (Gated DeltaNet) with a fixed state per sequence, and it is an MoE with 3B active parameters.
Each on the GPUs people would give it, at its longest or a long context, batch 1:
"""),
    code("""
contrast = {
    "kimi-k3 (MoE, MLA + KDA)": plan,
    "llama-3.1-70b (dense, GQA)": notebook.validate(model="llama-3.1-70b", weights="bf16", kv_dtype="bf16", context="128K", batch=1, gpu="h200", gpus=2),
    "qwen3-next-80b (hybrid, GQA + DeltaNet)": notebook.validate(model="qwen3-next-80b", weights="fp8", kv_dtype="bf16", context="256K", batch=1, gpu="h200", gpus=1),
}
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(anatomy.anatomy_table(contrast))
"""),
    code("""
readable(charts.budget_stacked_bar(contrast, per="gpu"))
"""),
    md(f"""
**Takeaway:** the same four components in very different proportions: Llama's BF16 cache at 128K is {dense.per_gpu.kv_cache_bytes / GiB:,.1f} GiB per GPU, {100 * dense.per_gpu.kv_cache_bytes / dense.per_gpu.total_bytes:.0f} % of what each GPU holds; the hybrid's linear layers keep its cache small at 256K.

## What a guide says

Public guides work the same sum for K3; guide 000's worked example, for a 4-bit K3 it sizes at 325 GB:

{guide_quote("g000-worked-total", "g000-worked-6x-headroom")}

Its equation is the one above; its weights figure is not the real K3's {W_K3:,.1f} GiB, so its GPU count is not the real one either.

## Predict, then run

K3 fits 16 H200 at 256K with one sequence.
**Predict** before you run the next cell: how many H200 does it need at 1M context, and how many to serve 64 sequences of 256K at once?
"""),
    code("""
# NBVAL_CHECK_OUTPUT
reader_table(anatomy.min_gpus_table(model="kimi-k3", weights="native", kv_dtype=kv_dtype, gpu=gpu))
"""),
    md(f"""
Four times the context is still 16 GPUs: K3's cache is small next to its weights.
Sixty-four sequences multiply the cache by 64, and that takes {batch64_gpus} GPUs: batch, not context, is what moves K3's GPU count.

## Explore

Turn the knobs: the table and the per-GPU bar update in place.
The GPU slider offers only counts the model deploys on (one node up to 8 GPUs where its layers split, then whole nodes); a bad combination shows one line naming the parameter, and no number.
"""),
    code("""
widgets.explorer(model=model, weights=weights, kv_dtype=kv_dtype, context=context, gpu=gpu, gpus=gpus, batch=batch)
"""),
    md(rf"""
## Summary

* GPU memory has four components: weights $W$, KV cache $KV = B·T·kv_{{tok}}$, activation $A$ and per-GPU overhead $O$.
* Per GPU, $m_{{gpu,s}} = W^{{shard}}_s/TP + W^{{rep}}_s + KV_{{rank,s}} + A/TP + O_{{gpu}} \le C$, and the fullest GPU decides.
* The real K3 at its native precision is {W_K3:,.1f} GiB of weights (one copy); on 16 H200 ({k3_plan.layout.describe()}) the fullest GPU holds {PEAK.total_bytes / GiB:,.1f} GiB of {USABLE_H200:,.1f} GiB usable.
* Summed over GPUs the figures count what TP keeps whole on every GPU once per GPU; one copy is what the config gives.
* K3's GPU count is set by its weights and by the batch; a dense model's long-context cache takes a far larger share.
"""),
    md("## Exercises"),
    *exercise(
        "00-1",
        "Llama 3.1 70B in BF16: how many GiB are its weights, and do they alone fit one H200 "
        f"({USABLE_H200:,.1f} GiB usable)? Its config: $D$ = 8,192, $L$ = 80, MLP width 28,672, "
        "64 query heads and 8 KV heads of 128, a vocabulary of 128,256 with separate embedding and output matrices.",
        f"Per layer: attention $2·D·64·128 + 2·D·8·128$ = 150,994,944, MLP $3·D·28,672$ = 704,643,072, two norms $2·D$; "
        f"times 80, plus $2·128,256·D$ for the embedding and the output head and one final norm: "
        f"{LLAMA.params_total:,} parameters. At 2 bytes each that is {W_LLAMA:,.2f} GiB: "
        f"{'it fits' if W_LLAMA < USABLE_H200 else 'it does not fit'} alone, but with {USABLE_H200 - W_LLAMA:,.1f} GiB "
        "left for cache, activation and overhead a long context needs a second GPU "
        '(`reader_table(tables.weights_worked_table("llama-3.1-70b", "bf16"))`).',
        value=round(W_LLAMA, 2),
        unit="GiB",
    ),
    *exercise(
        "00-2",
        "K3 at FP8, 256K context, one sequence: how big is one copy of its KV cache? "
        "It has 24 MLA layers caching a 512-element latent and a 64-element rope key per token, "
        "and 69 KDA layers each holding 96 heads' 128 × 128 state plus 110,592 convolution elements in FP32.",
        f"MLA: $24·(512 + 64)·1$ B = 13,824 B per token, × 262,144 tokens = {MLA_ONE:,.3f} GiB. "
        f"KDA: $69·(96·128·128 + 110,592)·4$ B = 464,633,856 B = 0.433 GiB, whatever the context. "
        f"Together {KV_K3_FP8_256K:,.2f} GiB "
        '(`tables.kv_worked_table("kimi-k3", kv_dtype="fp8", context="256K")`).',
        value=round(KV_K3_FP8_256K, 2),
        unit="GiB",
    ),
    *exercise(
        "00-3",
        "On 16 H200 as TP=8 × PP=2, every GPU of a stage keeps that stage's MLA latent whole, and the KDA state "
        "splits by head. How many GiB of KV cache do the 16 GPUs hold together at FP8, 256K, one sequence?",
        f"The two stages hold all 24 MLA layers between them, and each stage's layers sit whole on its 8 GPUs: "
        f"$8 × {MLA_ONE:,.3f}$ = {8 * MLA_ONE:,.1f} GiB of latent. The state is split, so it is counted once: 0.433 GiB. "
        f"Summed: {KV_SUMMED:,.2f} GiB, the `KV cache` row of `tables.copies_table(plan)` "
        f"against {one_kv:,.2f} GiB for one copy.",
        value=round(KV_SUMMED, 2),
        unit="GiB",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
