"""Generate notebooks/03-tensor-parallel.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/03_tensor_parallel.py

Every number in the prose and the folded answers is computed here by calling k3lib (f-strings),
never typed in; tests/test_exercises_03.py derives each answer again by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.hardware import get_gpu
from k3lib.core.layout import Layout
from k3lib.core.memory import NCCL_BYTES_PER_GPU
from k3lib.core.models import get_model
from k3lib.studies import parallel

STEM = "03-tensor-parallel"
CHECK = "# NBVAL_CHECK_OUTPUT"
GiB = 2**30

# ---- worked numbers, from the functions the lesson calls
K3 = get_model("kimi-k3")
H200_GIB = get_gpu("h200").memory_bytes("usable") / GiB
k3_256k = parallel.distribute(
    model="kimi-k3", gpu="h200", tp=8, pp=2, nodes=2, weights="native", kv_dtype="bf16", context="256K"
)
k3_peak = k3_256k.peak.components()
K3_EXPERTS_GIB = k3_peak["routed experts"] / GiB
K3_REPL_GIB = k3_peak["weights replicated"] / GiB
K3_FULLEST_GIB = k3_256k.peak.total_bytes / GiB
LLAMA_TP = parallel.compare_layouts(
    [(f"TP={t}", Layout(tp=t, nodes=1)) for t in (1, 2, 4, 8)],
    model="llama-3.1-70b",
    gpu="h200",
    weights="bf16",
    kv_dtype="bf16",
    context="128K",
)
NCCL = dict(zip(LLAMA_TP["layout"], LLAMA_TP["NCCL buffers (GiB)"]))
KV_TP = parallel.kv_per_gpu_vs_tp(["llama-3.1-70b"], tps=[8, 16], context="128K")
LLAMA_KV = dict(zip(KV_TP["TP"], KV_TP["KV per GPU (GiB)"]))
K3_LATENT_1M_GIB = K3.kv_bytes_per_token(2) * 1_048_576 / GiB
k3_1m_tp16 = parallel.distribute(
    model="kimi-k3", gpu="h200", tp=16, nodes=2, weights="native", kv_dtype="bf16", context="1M"
)
k3_1m_pp2 = parallel.distribute(
    model="kimi-k3", gpu="h200", tp=8, pp=2, nodes=2, weights="native", kv_dtype="bf16", context="1M"
)
K3_NODES = parallel.min_gpus(model="kimi-k3", gpu="h200", weights="native", kv_dtype="bf16", context="256K").nodes
one_node = parallel.distribute(
    model="kimi-k3", gpu="h200", tp=8, nodes=1, weights="native", kv_dtype="bf16", context="256K"
)
ONE_NODE_WEIGHTS_GIB = (
    one_node.peak.components()["weights sharded"]
    + one_node.peak.components()["weights replicated"]
    + one_node.peak.components()["routed experts"]
) / GiB

cells = [
    md(f"""
# 03 · Tensor-parallel distribution

**The question:** when a model is split over several GPUs and nodes, what does each GPU actually hold — and which GPU runs out first?

{nav(STEM)}
"""),
    objectives(
        [
            "Write what one GPU holds under tensor parallelism (TP) and pipeline parallelism (PP): which weights split, which are copied, and which cache does not split.",
            "Explain why a GQA cache stops shrinking at $TP = K$ KV heads and an MLA latent never shrinks with TP.",
            "State the communicator-buffer rule: one flat charge per GPU once it has peers, the same at TP=2 and TP=16.",
            "Find the fullest GPU of a layout and decide whether it fits, for the real Kimi K3, a dense and a hybrid model.",
        ],
        minutes=35,
    ),
    md("""
One GPU rarely holds a large model.
Tensor parallelism cuts every layer's matrices into $TP$ slices, one per GPU of a node; pipeline parallelism gives each of $PP$ stages a run of whole layers, usually one stage per node.
But not every byte splits: some weights are copied to every GPU, some caches cannot be cut by head, and every GPU with peers keeps communication buffers.
This lesson takes the split apart on three real models: **Kimi K3** (MoE, MLA + linear attention), **Llama 3.1 70B** (dense, GQA with 8 KV heads) and **Qwen3-Next 80B** (a hybrid: Gated DeltaNet layers with a few GQA layers).

Notation: $TP$ tensor-parallel size, $PP$ pipeline stages, $DP$ attention copies, $EP$ expert-parallel size, $G = TP·DP·PP$ GPUs.
$K$ is the number of KV heads, $T$ the context in tokens, $B$ the batch.
Sizes are GiB ($2^{30}$ bytes).
Guide 000's per-GPU cases (8× and 5× H100) are audited in [07 · What the guides claim](07-guide-audit.ipynb); this lesson works on the real architectures.
"""),
    code("""
from k3lib.views import charts_parallel as charts
from k3lib.views import notebook
from k3lib.views.table_format import shown  # tables for a reader: no index, separators, units in headers
from k3lib.studies import parallel
from k3lib.core.layout import Layout

notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3 on two 8× H200 nodes (vLLM's recipe: TP=8 inside each node, PP=2 across).
Change them here, or from the command line: `papermill -k python3 -p model llama-3.1-70b -p gpus 8 -p nodes 1 -p pp 1 -p weights bf16 notebooks/03-tensor-parallel.ipynb reports/03-llama.ipynb`.
"""),
    parameters("""
model: str = "kimi-k3"  # built-in model id (see `k3plan models`)
gpu: str = "h200"  # GPU id or alias (see `k3plan gpus`)
gpus: int = 16  # GPUs in total
nodes: int = 2  # nodes the GPUs are spread over
tp: int = 8  # tensor-parallel size; must divide the attention heads
pp: int = 2  # pipeline-parallel size: stages of whole layers
weights: str = "native"  # weight precision: native, bf16, fp8, q8_0, q4_k_m, q2_k, or q8/q4/q2
kv_dtype: str = "bf16"  # KV-cache dtype: bf16, fp8, int4
context: str = "256K"  # context length; K is 1,024 tokens
batch: int = 1  # concurrent sequences
"""),
    code("""
plan = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch,
                         gpu=gpu, gpus=gpus, nodes=nodes, tp=tp, pp=pp)
charts.verdict_line(plan.verdict())
"""),
    md(f"""
`plan` is the layout the parameters name, with what an engine (vLLM) puts on each GPU.

## 1. What one GPU holds

Per GPU of pipeline stage $s$:

$$m_{{gpu,s}} = \\frac{{W^{{shard}}_s}}{{TP}} + W^{{rep}}_s + \\frac{{X_s}}{{TP\\ \\text{{or}}\\ EP}} + KV_{{rank,s}} + \\frac{{A}}{{TP}} + [TP > 1]·N_{{nccl}} + O_{{rt}} \\;\\le\\; C_{{gpu}}$$

* $W^{{shard}}$: attention projections, dense MLP, shared experts, embedding and LM head (vocabulary-parallel in vLLM) — split by TP.
* $W^{{rep}}$: norms, MoE routers, MLA's down-projections — **copied to every TP rank**.
* $X$: routed experts — split by TP, or whole experts spread over $EP$ GPUs.
* $KV_{{rank}}$: GQA splits by KV head only up to $K$; an MLA latent does not split at all; linear-attention state splits by head (section 3).
* $A/TP$: activation buffers; every pipeline stage holds its own.
* $[TP > 1]·N_{{nccl}}$: communicator (NCCL) buffers, $N_{{nccl}}$ = {NCCL_BYTES_PER_GPU / GiB:.2f} GiB per GPU once it has peers (section 4).
* $O_{{rt}}$: CUDA context and fragmentation.

Pipeline stages hold whole layers, so an uneven cut makes one stage fuller: **the fullest GPU sets the need**.

Worked on K3 at 256K on 2 × 8 H200 (TP=8 × PP=2): each GPU of the fuller stage holds {K3_EXPERTS_GIB:.2f} GiB of routed experts (1/8 of its stage's experts in MXFP4), {K3_REPL_GIB:.2f} GiB of replicated weights, and {K3_FULLEST_GIB:.1f} GiB in all, against {H200_GIB:.1f} GiB usable.
The diagram draws each stage's GPU as one bar; the black tick is what one GPU can use.
"""),
    code(f"""
{CHECK}
shown(parallel.per_gpu_table(plan))
"""),
    code("""
charts.readable(charts.per_gpu_stacked_bar(parallel.per_gpu_long(plan)))
"""),
    md("""
**Takeaway:** the routed experts dominate a MoE GPU's memory; replicated weights and the unsplit MLA cache are the parts more GPUs do not shrink.

## 2. A dense model from TP=1 to TP=8

Llama 3.1 70B in BF16 at 128K on one 8-GPU H200 node.
Each bar is the fullest GPU of one layout: watch what halves with each doubling of TP, and what does not.
"""),
    code(f"""
{CHECK}
llama_tp = parallel.compare_layouts([(f"TP={{t}}", Layout(tp=t, nodes=1)) for t in (1, 2, 4, 8)], model="llama-3.1-70b",
                                    gpu="h200", weights="bf16", kv_dtype="bf16", context="128K")
shown(llama_tp)
"""),
    code("""
charts.readable(charts.per_gpu_stacked_bar(charts.layouts_long(llama_tp)))
"""),
    md(f"""
The weights and the cache halve with each doubling: up to $TP = K = 8$ KV heads the cache still splits.
The red sliver appears at TP=2 and then stays the same width: that is section 4.

**Takeaway:** for a dense GQA model up to $TP = K$, almost everything divides by TP; at TP=1 it does not fit on a {H200_GIB:.1f} GiB H200, at TP=2 it does.

## 3. The KV cache does not always split

For GQA with $K$ KV heads, each TP rank holds $K/TP$ heads — until $TP > K$, when each rank still needs one whole head.
An MLA latent (one vector per token per layer, shared by all heads) is needed whole on every rank.
A linear-attention state (KDA, Gated DeltaNet) is per head and splits:

$$KV_{{rank}} = \\frac{{B·T·kv_{{tok}}}}{{\\min(TP, K)}} \\quad\\text{{(GQA)}}, \\qquad KV_{{rank}} = B·T·L_{{mla}}·(r_{{kv}} + d_{{rope}})·b \\quad\\text{{(MLA, every rank)}}$$

K3's 24 MLA layers cache $r_{{kv}} + d_{{rope}} = 512 + 64 = 576$ elements per token, {K3.kv_bytes_per_token(2):,} B at BF16: at 1M tokens that is {K3_LATENT_1M_GIB:.0f} GiB on **every** GPU of a TP group.
"""),
    md("""
**Predict, then run.** Llama 3.1 70B has 8 KV heads. At 128K its cache is 40 GiB. How much does one GPU hold at TP=16 (two nodes)? Write your guess, then run the cell.
"""),
    code(f"""
{CHECK}
kv_tp = parallel.kv_per_gpu_vs_tp(["kimi-k3", "llama-3.1-70b", "qwen3-next-80b"], tps=[1, 2, 4, 8, 16], context="128K")
shown(kv_tp)
"""),
    code("""
charts.readable(charts.kv_vs_tp_chart(kv_tp))
"""),
    md(f"""
Llama 3.1 70B stops at {LLAMA_KV[16]:.0f} GiB per GPU from TP=8 on: at TP=16 each KV head lives on two GPUs.
K3 barely moves: its cache is the MLA latent, copied to every rank; only the small KDA state splits.
Qwen3-Next's 12 full-attention layers have only 2 KV heads, so its cache stops shrinking at TP=2; its Gated DeltaNet state keeps splitting.

**Takeaway:** past $TP = K$ for GQA, and at any TP for MLA, more GPUs do not shrink the KV cache per GPU.

## 4. Communicator buffers: flat once a GPU has peers

Once a GPU talks to peers, NCCL and the GEMM libraries keep buffers outside the tensors.
Measured by vLLM 0.19 on H100 they are 2.1–2.2 GiB per GPU at TP=2 and at TP=4 (and 0.25 GiB at TP=1): they do not grow with the group.
k3lib charges

$$N_{{gpu}} = [TP > 1]·N_{{nccl}}, \\qquad N_{{nccl}} = {NCCL_BYTES_PER_GPU / GiB:.2f}\\ \\text{{GiB}}$$

the same at TP=2 and TP=16.
Read from the same table as section 2 — the column the per-GPU bars draw in red:
"""),
    code(f"""
{CHECK}
shown(llama_tp[["layout", "NCCL buffers (GiB)"]])
"""),
    md(f"""
Guide 000 (“Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3”, a public article) writes: “At TP=8, NCCL all-reduce can consume 2–5 GB per GPU”.
{NCCL_BYTES_PER_GPU / GiB:.2f} GiB ({NCCL_BYTES_PER_GPU / 1e9:.1f} GB) sits at the low end of that range; [07](07-guide-audit.ipynb) audits the guide's figure.

**Takeaway:** communicator buffers are a per-GPU constant, not a multiple of the peers: {NCCL["TP=2"]:.2f} GiB at TP=2 and {NCCL["TP=8"]:.2f} GiB at TP=8.

## 5. K3: pipeline, wider TP, experts and attention copies

**Predict, then run.** K3 on the same 16 H200s at 256K with 8 sequences: does TP=16 across both nodes (PP=1) hold *less* memory per GPU than TP=8 × PP=2?
Expert parallelism (EP) spreads whole experts over the GPUs instead of slicing each one; attention data parallelism (DP) copies the attention to every GPU, each copy serving $B/DP$ sequences.
"""),
    code(f"""
{CHECK}
ep = parallel.compare_layouts(
    [("TP=8 × PP=2", Layout(tp=8, pp=2, nodes=2)),
     ("TP=8 × PP=2, EP=8", Layout(tp=8, pp=2, ep=8, nodes=2)),
     ("TP=16 across 2 nodes", Layout(tp=16, nodes=2)),
     ("DP=8 × PP=2, EP=8", Layout(tp=1, dp=8, pp=2, ep=8, nodes=2))],
    model="kimi-k3", gpu="h200", weights="native", kv_dtype="bf16", context="256K", batch=8)
shown(ep)
"""),
    code("""
charts.readable(charts.per_gpu_stacked_bar(charts.layouts_long(ep)))
"""),
    md("""
EP keeps exactly the bytes of TP=8: 896 experts over 8 GPUs is 112 whole experts each.
TP=16 halves the sharded weights but copies the MLA latent to 16 GPUs, and every GPU now holds all layers' replicated weights (routers, MLA down-projections).
DP attention cuts the KV per GPU but copies the attention weights to every GPU.

At 1M tokens the same two layouts:
"""),
    code(f"""
{CHECK}
long_context = parallel.compare_layouts([("TP=8 × PP=2", Layout(tp=8, pp=2, nodes=2)),
                                         ("TP=16 across 2 nodes", Layout(tp=16, nodes=2))],
                                        model="kimi-k3", gpu="h200", weights="native", kv_dtype="bf16", context="1M")
shown(long_context)
"""),
    md(f"""
TP=16 puts the whole {K3_LATENT_1M_GIB:.0f} GiB latent on every GPU ({k3_1m_tp16.peak.kv_cache_bytes / GiB:.1f} GiB of KV with the KDA state), PP=2 only its stage's layers ({k3_1m_pp2.peak.kv_cache_bytes / GiB:.1f} GiB).

**Takeaway:** EP moves no bytes off a GPU compared with TP — it changes the communication; for an MLA model wider TP multiplies the KV cache, and pipeline stages are what divide it.

## 6. Explore

Pick a model, GPU, whole nodes and a layout; the bar shows each pipeline stage's GPU and the coloured line says whether the fullest one fits.
The menus offer only layouts that exist: GPUs are whole nodes, TP divides a node and the model's heads, PP divides the rest.
The callback is `k3lib.views.widgets_parallel.layout_view`, a plain function you can call yourself.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
from k3lib.views.widgets_parallel import layout_explorer
layout_explorer()
"""),
    md(f"""
## Summary

* Under TP, each GPU holds $1/TP$ of the sharded weights **plus** everything replicated: norms, routers and MLA's down-projections.
* A GQA cache splits only up to its $K$ KV heads; an MLA latent is copied to every TP rank; linear-attention state splits by head.
* Communicator buffers appear once a GPU has peers and stay flat: {NCCL_BYTES_PER_GPU / GiB:.2f} GiB per GPU at any TP > 1.
* Pipeline stages hold whole layers, so the fullest stage sets the need — and they are what divides K3's latent.
* K3 in its native format needs {K3_NODES} 8-GPU H200 nodes at 256K (TP=8 × PP={K3_NODES}).

## Exercises
"""),
    *exercise(
        "03-1",
        "Llama 3.1 70B in BF16 at 128K (80 layers, 8 KV heads of 128 dimensions): how much KV cache does one GPU hold at TP=16 over two nodes?",
        f"""
{LLAMA_KV[16]:.0f} GiB, the same as at TP=8 ({LLAMA_KV[8]:.0f} GiB).
The cache is $2·80·8·128·2$ = 327,680 B per token, 40 GiB at 131,072 tokens; it splits over at most $K = 8$ ranks, so at TP=16 each KV head is held twice.
`parallel.kv_per_gpu_vs_tp(["llama-3.1-70b"], tps=[8, 16], context="128K")`.
""",
        value=LLAMA_KV[16],
        unit="GiB",
    ),
    *exercise(
        "03-2",
        "Llama 3.1 70B on one H200 node: how much communicator (NCCL) buffer memory does one GPU hold at TP=8, compared with TP=2?",
        f"""
{NCCL["TP=8"]:.2f} GiB per GPU at TP=8 — the same as at TP=2 ({NCCL["TP=2"]:.2f} GiB); only TP=1 has none.
The charge is $[TP > 1]·N_{{nccl}}$: a GPU with peers keeps one set of buffers whatever the number of peers (vLLM 0.19 measured 2.1–2.2 GiB at TP=2 and 4).
`llama_tp[["layout", "NCCL buffers (GiB)"]]` in section 4.
""",
        value=NCCL["TP=8"],
        unit="GiB",
    ),
    *exercise(
        "03-3",
        "K3 at 1M tokens (BF16 cache) on 16 H200s as TP=16 across both nodes: how much of the MLA latent does each GPU hold?",
        f"""
All of it: {K3_LATENT_1M_GIB:.0f} GiB.
$24·(512 + 64)·2$ = {K3.kv_bytes_per_token(2):,} B per token × 1,048,576 tokens, copied to every TP rank.
TP=8 × PP=2 halves it, because each stage caches only its own layers ({k3_1m_pp2.peak.kv_cache_bytes / GiB:.1f} GiB with the KDA state on the fuller stage).
""",
        value=K3_LATENT_1M_GIB,
        unit="GiB",
    ),
    *exercise(
        "03-4",
        "How many 8-GPU H200 nodes does K3 need in its native format at 256K, and why is one node not enough whatever the layout?",
        f"""
{K3_NODES} nodes ({K3_NODES * 8} GPUs, TP=8 × PP={K3_NODES}).
On one node each GPU would hold {ONE_NODE_WEIGHTS_GIB:.1f} GiB of weights alone, more than an H200's {H200_GIB:.1f} GiB usable: the 8 GPUs together hold {8 * H200_GIB:,.1f} GiB, less than the model's weights.
`parallel.min_gpus(model="kimi-k3", gpu="h200", weights="native", kv_dtype="bf16", context="256K")`.
""",
        value=K3_NODES,
        unit="nodes",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
