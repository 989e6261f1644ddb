"""Generate notebooks/03-tensor-parallel.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/03_tensor_parallel.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "03-tensor-parallel"
CHECK = "# NBVAL_CHECK_OUTPUT"

cells = [
    md(f"""
# 03 · Tensor-parallel distribution

**The question:** when a model is split over several GPUs and nodes, what does each GPU actually hold — and which GPU runs out first?

{nav(STEM)}
"""),
    md("""
Guide 000 says each GPU holds "1/TP_size of every layer's parameters, plus … the KV cache shard for its attention head range".
That is only true for some of the memory.
Some weights are copied to every GPU, some KV caches do not split at all, and every GPU with peers keeps the same communication buffers however wide the split.
This notebook takes the split apart, regenerates the guide's per-GPU cases, and plans two nodes for 1M tokens of context.

Notation: $TP$ tensor-parallel size, $PP$ pipeline stages, $DP$ attention copies, $EP$ expert-parallel size, $G = TP·DP·PP$ GPUs.
$K$ is the number of KV heads, $T$ the context in tokens, $B$ the batch.
Sizes in this notebook are GiB ($2^{30}$ bytes), as guide 000's own formulas imply.
"""),
    code("""
from k3lib.views import charts_parallel as charts
from k3lib.views import notebook
from k3lib.studies import parallel
from k3lib.core.plan import make_plan

notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3 on two 8× H200 nodes.
Change them here, or from the command line: `papermill -k python3 -p gpu b200 -p gpus 8 -p nodes 1 -p pp 1 notebooks/03-tensor-parallel.ipynb reports/03-b200.ipynb`.
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
plan.reason
"""),
    md("""
`plan` is the even split of the earlier notebooks: every component ÷ $G$.
The rest of this notebook replaces it with what an engine (vLLM) actually puts on each GPU.

## 1. What one GPU holds

The even split divides everything by $G$.
The engine does not.
Per GPU of pipeline stage $s$:

$$m_{gpu} = \\frac{W^{shard}_s}{TP} + W^{rep}_s + \\frac{X_s}{TP\\ \\text{or}\\ EP} + KV_{rank,s} + \\frac{A}{TP} + [TP > 1]·N_{nccl} + O_{rt}$$

* $W^{shard}$: attention projections, dense MLP, shared experts, embedding and LM head (vocabulary-parallel in vLLM) — split by TP.
* $W^{rep}$: norms, MoE routers, MLA's down-projections — **copied to every TP rank**.
* $X$: routed experts — split by TP, or whole experts spread over $EP$ GPUs.
* $KV_{rank}$: GQA splits by KV head only up to $K$; an MLA latent does not split at all; linear-attention state splits by head.
* $A/TP$: activation buffers; every pipeline stage holds its own.
* $[TP > 1]·N_{nccl}$: communicator (NCCL) buffers, $N_{nccl}$ = 2.15 GiB per GPU as soon as it has peers, the same at TP=2 and TP=16 (section 6).
* $O_{rt}$: CUDA context and fragmentation.

Pipeline stages hold whole layers, so an uneven cut makes one stage fuller: **the fullest GPU sets the need**.
"""),
    code("""
split = parallel.from_plan(plan)
parallel.per_gpu_table(split)
"""),
    code("""
charts.per_gpu_stacked_bar(parallel.per_gpu_long(split), title=split.verdict())
"""),
    md("""
**Takeaway:** the routed experts dominate a MoE GPU's memory; replicated weights and the unsplit MLA cache are the parts that more GPUs do not shrink.
"""),
    md("""
## 2. Guide 000, case 1: 8× H100, BF16 weights, 512K

The guide says this "exceeds capacity by ~17 GB per GPU" and offers three fixes at ~88.8, ~78.8 and ~88.8 GB per GPU.
Its per-GPU table is missing from the text, so we rebuild it from the guide's own inputs.
Weights are $594/8 = 74.25$ GiB per GPU and the KV cache $128/8 = 16$ GiB.
Each figure then leaves a remainder for activation + overhead:

$$X = m_{gpu} - \\frac{W}{G} - \\frac{KV}{G}$$
"""),
    code(f"""
{CHECK}
implied = parallel.guide000_implied_table()
implied
"""),
    md("""
The four case-1 figures all leave about 6.5 GiB per GPU.
Which reading of the guide's activation (8–15 GB in total at batch 1) and overhead (5–10 GB per GPU, "at least 8") gives that?
"""),
    code(f"""
{CHECK}
case1 = parallel.guide000_case1_table()
case1
"""),
    md("""
* The guide's stated defaults (activation 10, overhead "at least 8" per GPU) give 99.5: 19.5 over, not ~17.
* Its worked example's reading (activation 10, overhead 6 per GPU) gives 97.5 — "~17 over" — but fixes of 89.5 / 79.55 / 89.5, each 0.7 above the guide.
* 6.5 GiB per GPU reproduces all four (96.75 → "~17 over", 88.75, 78.8, 88.75).
  Inside the guide's own ranges that needs activation 8–12 GiB with overhead 5.5–5 GiB per GPU, e.g. 12 + 5.
* The fix-2 weights, 56.3 GiB per GPU, reproduce nothing: it is where the Q8 figure in the profile comes from (56.3 × 8 = 450.4), and a bits-per-weight rule gives 39.45.
"""),
    code(f"""
{CHECK}
tiers = parallel.guide000_tier_check()
tiers
"""),
    md("""
**Takeaway:** the ~17 GB overrun and all three fixes are reproduced with 6.5 GiB per GPU of activation + overhead; no figure the guide states gives that, and its Q8 weight figure does not follow from bits per weight.
"""),
    md("""
## 3. Guide 000, case 2: 5× H100, Q4, 128K

"On an 80 GB card, this leaves ~2.8 GB of headroom."
The guide does not name the KV dtype; its "sweet spot" is Q4 with FP8 KV, so FP8 is the first reading.
"""),
    code(f"""
{CHECK}
case2 = parallel.guide000_case2_table()
case2
"""),
    md("""
With FP8 KV, the headroom is 2.8 GiB when activation + overhead is 9 GiB per GPU: e.g. activation 10 in total (2 per GPU) and overhead 7 per GPU.
That reading gives 98.5 for case 1, not ~97.
Is there one pair — activation $A$ in total, overhead $O$ per GPU — that fits both cases?

$$\\frac{A}{8} + O = 6.5, \\qquad \\frac{A}{5} + O = 9.0$$
"""),
    code(f"""
{CHECK}
activation_gib, overhead_gib = parallel.solve_activation_overhead([(8, 6.5), (5, 9.0)])
round(activation_gib, 2), round(overhead_gib, 2)
"""),
    md("""
**Takeaway:** one pair fits both cases — 33⅓ GiB of activation and 2⅓ GiB of overhead per GPU — but it is the guide's batch-4 activation with an overhead far below its own "at least 8 GB per GPU"; with BF16 KV nothing fits case 2 (5.8 GiB left, below every stated overhead).
"""),
    md("""
## 4. The lost table: optimal GPU counts by precision

The guide's "Optimal GPU Counts by Precision" table is missing; its text keeps the rule: "These numbers assume 8 GB per GPU for overhead and reserve. For production reliability, add one more GPU to each row."
Regenerated from guide 000's profile at 256K (activation 10 GiB, overhead 8 GiB per GPU, 80 GiB cards), counting GPUs one at a time as the guide does:
"""),
    code(f"""
{CHECK}
counts = parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="256K", whole_nodes=False,
                                  rows=[("bf16", "bf16"), ("bf16", "fp8"), ("q8", "fp8"), ("q4", "fp8"),
                                        ("q4", "int4"), ("q2", "int4")])
counts
"""),
    md("""
This agrees with most of the guide's prose: Q4 + FP8 KV needs 6 (its worked example: 5 is 15 over), Q2 fits on 4.
At 512K the same rule is one GPU above the guide's BF16 figures:
"""),
    code(f"""
{CHECK}
counts_512k = parallel.gpu_count_table(model="kimi-k3@guide-000", gpu="h100", context="512K", whole_nodes=False,
                                       rows=[("bf16", "bf16"), ("bf16", "fp8")])
counts_512k
"""),
    md("""
The FAQ's "at least 10× H100" for BF16 at 512K is 11 by the guide's own 8-per-GPU rule, and FP8 KV's "drop from 10 GPUs to 8" is 11 → 10: the 64 GiB it saves is less than one 80 GiB card.
The real K3 architecture (2.78T parameters, 92 MoE layers of 896 experts) is far bigger than the guide's 594 GiB.
Beyond one node GPUs come in whole nodes of 8:
"""),
    code(f"""
{CHECK}
real_counts = parallel.gpu_count_table(model="kimi-k3", gpu=["h100", "h200"], context="256K",
                                       rows=[("native", "bf16"), ("native", "fp8"), ("fp8-block", "fp8"),
                                             ("ud-q4_k_xl", "fp8"), ("ud-q2_k_xl", "fp8")])
real_counts
"""),
    md("""
The real K3's rows use only checkpoints that exist: the native one and RedHat's FP8-BLOCK (what vLLM loads), and unsloth's UD-Q4_K_XL and UD-Q2_K_XL GGUF files (llama.cpp; their published sizes, 1,508.7 and 861.3 GB).
Counts are whole 8-GPU nodes with TP=8 inside each node, and "production" is the next node.

**Takeaway:** by the guide's own numbers (GPUs as one pool), 4–10 H100s; by the real architecture, three 8× H100 nodes or two 8× H200 nodes for the native MXFP4 checkpoint.
"""),
    md("""
## 5. What changes for an MLA model, and for few KV heads

For GQA with $K$ KV heads, each TP rank holds $K/TP$ heads — until $TP > K$, when each rank still needs one whole head:

$$KV_{rank} = \\frac{B·T·kv_{tok}}{\\min(TP, K)} \\quad\\text{(GQA)}, \\qquad KV_{rank} = B·T·L_{mla}·(r_{kv} + d_{rope})·b \\quad\\text{(MLA, every rank)}$$

K3's 24 MLA layers cache one 576-element latent per token, shared by all 96 heads.
Every TP rank needs all of it, so **"each GPU holds the KV for its head range" does not hold for MLA**.
(K3's 69 KDA layers keep a fixed state per sequence that does split by head.)
"""),
    code(f"""
{CHECK}
kv_tp = parallel.kv_per_gpu_vs_tp(["kimi-k3", "deepseek-v3", "llama-3.1-70b"], tps=[1, 2, 4, 8, 16], context="128K")
kv_tp.round(3)
"""),
    code("""
charts.kv_vs_tp_chart(kv_tp)
"""),
    md("""
Llama 3.1 70B has 8 KV heads: at TP=16 each KV head lives on two GPUs, so the cache splits 8 ways, not 16 — twice the guide's rule.
DeepSeek-V3's latent (61 layers × 576) does not shrink at all: at TP=8 each GPU holds 8× what the rule says.

**Takeaway:** past $TP = K$ for GQA, and at any TP for MLA, more GPUs do not shrink the KV cache per GPU.
"""),
    md("""
## 6. Communicator buffers (flat once a GPU has peers), and expert parallelism

Once a GPU talks to peers, NCCL and the GEMM libraries keep buffers outside the tensors: measured by vLLM 0.19 on H100 at 2.1–2.2 GiB per GPU at TP=2 and TP=4 (and 0.25 GiB at TP=1), they do not grow with the group.
k3lib charges $[TP > 1]·N_{nccl}$ with $N_{nccl}$ = 2.15 GiB.
The guide: "At TP=8, NCCL all-reduce can consume 2–5 GB per GPU" — 2.15 GiB (2.3 GB) sits at the low end of that range.
"""),
    code(f"""
{CHECK}
nccl = parallel.nccl_table()
nccl
"""),
    md("""
Expert parallelism (EP) spreads whole experts over the GPUs of a stage instead of slicing each one.
For K3's 896 experts over 8 GPUs that is 112 whole experts each — the same bytes as slicing by TP=8.
Attention data parallelism (DP) instead copies the attention to every GPU, and each copy serves $B/DP$ sequences.
Here K3 native on 16× H200 at 256K with 8 sequences:
"""),
    code(f"""
{CHECK}
ep = parallel.compare_layouts(
    [("TP=8 × PP=2", parallel.Layout(tp=8, pp=2, nodes=2)),
     ("TP=8 × PP=2, EP=8", parallel.Layout(tp=8, pp=2, ep=8, nodes=2)),
     ("TP=16 across 2 nodes", parallel.Layout(tp=16, nodes=2)),
     ("DP=8 × PP=2, EP=8", parallel.Layout(tp=1, dp=8, pp=2, ep=8, nodes=2))],
    model="kimi-k3", gpu="h200", weights="native", kv_dtype="bf16", context="256K", batch=8)
ep
"""),
    md("""
EP keeps exactly the bytes of TP=8: 84.19 GiB of experts per GPU.
TP=16 across both nodes halves the sharded weights but not the MLA latent, which is now copied to 16 GPUs instead of 8 — 54 GiB of KV per GPU — and every GPU now holds all 92 layers' replicated weights (routers, MLA down-projections, the latent-MoE projections: 10.7 GiB); its NCCL buffers stay at 2.15 GiB.
DP attention cuts the KV per GPU to 3.6 GiB but copies the attention weights to every GPU (49 GiB).

**Takeaway:** EP moves no bytes off a GPU compared with TP — it changes the communication; for an MLA model, wider TP multiplies the KV cache, and DP attention trades it for copies of the attention weights.
"""),
    md("""
## 7. Two nodes for BF16 at 1M tokens

Guide 000's upper bound: "~908 GB (BF16, 1M)" $= 594 + 256 + 10 + 48$.
On two 8× H100 nodes (TP=8 within a node, PP=2 across), with the worked example's activation 10 and overhead 6 per GPU:
"""),
    code(f"""
{CHECK}
guide_1m = make_plan(model="kimi-k3@guide-000", gpu="h100", gpus=16, nodes=2, weights="bf16", kv_dtype="bf16",
                     context="1M", assumptions=parallel.guide000_assumption_sets()[1][1])
parallel.per_gpu_table(guide_1m)
"""),
    md("""
With 48 GiB of overhead (8 × 6), the guide's total is 908 GiB; on 16 GPUs the same 6 GiB each is 96, so 956 GiB in all, 59.75 per GPU: it fits.
The real K3 at 1M on two 8× H200 nodes, native MXFP4 experts:
"""),
    code(f"""
{CHECK}
real_1m = parallel.distribute(model="kimi-k3", gpu="h200", tp=8, pp=2, nodes=2, weights="native",
                              kv_dtype="bf16", context="1M")
t = parallel.per_gpu_table(real_1m)
t
"""),
    code("""
charts.per_gpu_stacked_bar(parallel.per_gpu_long(real_1m), title=real_1m.verdict())
"""),
    md("""
93 layers cut in two gives stages of 47 and 46 (vLLM gives the extra layer to the stage before the last); the first stage holds the embedding, the last the same-sized LM head, so the 47-layer stage is the fullest.
The 27 GiB MLA latent at 1M is split only by the pipeline: 13.5 GiB on every GPU, where the guide's rule would put 1.7.
BF16 for every weight is another model size altogether:
"""),
    code(f"""
{CHECK}
bf16_all = parallel.min_gpus(model="kimi-k3", gpu="h200", weights="bf16", kv_dtype="bf16", context="1M")
bf16_all.verdict()
"""),
    md("""
**Takeaway:** the guide's 908 GiB fits on two 8× H100 nodes; the real K3 at 1M needs two 8× H200 nodes in its native format, and six (48 GPUs) if every weight were BF16.
"""),
    md("""
## 8. Explore

Pick a model, GPU, count and layout; the bar shows each pipeline stage's GPU and the title says whether the fullest one fits.
The callback is `k3lib.views.explorers.layout_figure`, a plain function you can call yourself.
"""),
    code("""
from k3lib.views.widgets_parallel import layout_explorer
layout_explorer()
"""),
    md("""
## Summary

* Under TP, each GPU holds $1/TP$ of the sharded weights **plus** everything replicated: norms, routers and MLA's down-projections.
* A GQA cache splits only up to its $K$ KV heads; an MLA latent is copied to every TP rank.
* NCCL buffers appear once a GPU has peers and stay flat: 2.15 GiB per GPU at any TP > 1 (measured 2.1–2.2 GiB).
* Pipeline stages hold whole layers, so the fullest stage sets the need.
* Guide 000's per-GPU cases need 6.5 GiB (case 1) and 9 GiB (case 2, FP8 KV) per GPU of activation + overhead; no single stated figure gives both.
* Its lost GPU-count table comes back as 10 / 9 / 7 / 6 / 5 / 4 H100s counted as one pool; the real architecture needs 24 H100s (3 nodes) or 16 H200s (2 nodes) natively, TP=8 inside each node.

## Exercises

1. Llama 3.1 70B in BF16 at 128K: how much KV cache does one GPU hold at TP=8 and at TP=16?
<details><summary>Answer</summary>

$327{,}680 · 131{,}072 / 8 = 5$ GiB at both: at TP=16 the 8 KV heads are each held twice.
`parallel.kv_per_gpu_vs_tp(["llama-3.1-70b"], tps=[8, 16], context="128K")`.
</details>

2. K3 at 1M on 16× H200: does TP=16 across both nodes (PP=1) need less KV per GPU than TP=8 × PP=2?
<details><summary>Answer</summary>

No — more. The latent is replicated over TP, so TP=16 keeps all 24 MLA layers' latent (27 GiB) on every GPU, while PP=2 halves it to 13.5.
`parallel.distribute(model="kimi-k3", gpu="h200", tp=16, nodes=2, context="1M").peak.kv_cache_bytes / 2**30`.
</details>

3. Which TP sizes can K3 use, and why is TP=5 refused?
<details><summary>Answer</summary>

Those that divide its 96 attention heads: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96.
`parallel.check_tp(get_model("kimi-k3"), 5)` raises an error naming `tp` and these sizes.
</details>

4. Guide 000 says NCCL overhead "is per GPU, not per node — adding more GPUs does not reduce it". What does the model say it does as TP grows from 8 to 16?
<details><summary>Answer</summary>

Nothing: $[TP > 1]·N_{nccl}$ is 2.15 GiB per GPU at TP=8 and at TP=16 (and at TP=2); only TP=1 has none.
The guide is right that more GPUs do not reduce it, and they do not add to it either (`parallel.nccl_table()`).
</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
