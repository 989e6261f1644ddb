"""Generate notebooks/04-offload.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/04_offload.py

Every number in the prose and the folded answers is computed here by calling k3lib (f-strings),
never typed in; tests/test_exercises_04.py derives each answer again by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.serving.offload_model import plan_offload

STEM = "04-offload"
CHECK = "# NBVAL_CHECK_OUTPUT"
GB = 10**9

# ---- worked numbers, from the functions the lesson calls (the parameters' defaults)
OFF = plan_offload(gpu="rtx-4090-48gb", ram="1536GiB", ram_bandwidth="70GB/s", context="8K")
P = OFF.parts
GPU_T, RAM_T = OFF.tiers
X_MB = P.expert_bytes / 1e6
LAYER_GB = P.layer_experts_bytes / GB
RAM_READ_GB = RAM_T.read_bytes_per_step / GB
GPU_READ_GB = GPU_T.read_bytes_per_step / GB
CEIL_TPS = OFF.decode_tokens_per_s
EPYC = plan_offload(gpu="rtx-4090-48gb", host="epyc-9005", context="8K")
EPYC_RAM_MS = EPYC.tiers[1].seconds_per_step * 1e3
EPYC_BW = EPYC.tiers[1].bandwidth_bytes_per_s / GB
DISTINCT_4 = P.distinct_experts(4)
HYBRID_RAM_MB = (
    plan_offload(model="qwen3-next-80b", weights="q4_k_m", gpu="rtx-4090", host="desktop-ddr5-5600")
    .tiers[1]
    .read_bytes_per_step
    / 1e6
)

cells = [
    md(f"""
# 04 · Offload mode

**The question:** if a MoE model's experts live in system RAM and only the rest sits on the GPU, how much VRAM and RAM does it take — and how fast does it generate?

{nav(STEM)}
"""),
    objectives(
        [
            "Split a MoE model's memory into what sits in VRAM and what sits in host RAM, and size both.",
            "Derive decode time as bytes read per token ÷ the bandwidth of the memory they sit in, and why only the active experts count.",
            "Tell a bandwidth ceiling from the serving model's fitted speed, and quote each with its basis.",
            "Judge partial offload, host platforms and batching by which bytes they move off the slow tier.",
        ],
        minutes=35,
    ),
    md("""
A mixture-of-experts layer holds $E$ experts but each token uses only $k$ of them.
So the experts — 98 % of Kimi K3's bytes — can stay in host RAM while the attention, the shared experts and the cache sit on the GPU; each token then reads only its $k$ experts per layer from RAM.
llama.cpp does exactly this (`-ngl 999 --n-cpu-moe N`).
A dense model such as Llama 3.1 70B has no experts to leave behind: every weight is read for every token, so its offload is a different (and much slower) trade.

Notation: $L_{moe}$ MoE layers, $E$ experts per layer of which $k$ are active per token, $x$ the bytes of one expert, $N$ layers whose experts stay on the GPU, $B$ the batch.
Sizes are decimal GB ($10^9$ bytes) and bandwidths GB/s, as memory and bus speeds are quoted.
"""),
    code("""
from k3lib.views import charts_parallel as charts
from k3lib.views import notebook
from k3lib.views.table_format import shown  # tables for a reader: no index, separators, units in headers
from k3lib.views.speed import figures_table  # the serving model's figures, each with its basis
from k3lib.serving import offload_serving_estimate, serving_estimate
from k3lib.studies import offload
from k3lib.serving.offload_model import summary_table
from k3lib.views import explorers
from k3lib.core.hardware import get_gpu

notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: the real K3 at Q4_K_M on one 48 GB RTX 4090 with 1.5 TB of RAM read at 70 GB/s (dual-channel desktop DDR5, the figure guide 004 assumes).
Change them here, or from the command line: `papermill -k python3 -p gpu rtx-pro-6000 -p ram_bandwidth 307GB/s notebooks/04-offload.ipynb reports/04-pro6000.ipynb`.
"""),
    parameters("""
model: str = "kimi-k3"  # a built-in MoE model id
weights: str = "q4_k_m"  # weight precision (a 4-bit GGUF quantization)
gpu: str = "rtx-4090-48gb"  # GPU or unified-memory machine (see `k3plan gpus`)
ram: str = "1536GiB"  # system RAM installed: a 1.5 TB server holds 1,536 GiB (1,649 GB)
ram_bandwidth: str = "70GB/s"  # RAM bandwidth; 70 GB/s is dual-channel DDR5-4400
expert_layers_on_gpu: int = 0  # MoE layers whose experts stay on the GPU; 0 keeps every expert in RAM
kv_dtype: str = "bf16"  # KV-cache dtype
context: str = "8K"  # context length; K is 1,024 tokens
batch: int = 1  # concurrent sequences
"""),
    code("""
plan = notebook.validate(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch,
                         gpu=gpu, gpus=1)
off = explorers.offload_validate(model=model, weights=weights, gpu=gpu, ram=ram, ram_bandwidth=ram_bandwidth,
                       expert_layers_on_gpu=expert_layers_on_gpu, kv_dtype=kv_dtype, context=context, batch=batch)
charts.verdict_line(plan.verdict(), charts.ceiling_labelled(off.verdict()))
"""),
    md(f"""
The first line is the whole model on this one GPU; the second is the same model in offload mode.

## 1. What sits where

$$VRAM = W_{{dense}} + N·X_{{layer}} + KV + A + O_{{gpu}} \\qquad RAM = (L_{{moe}}-N)·X_{{layer}} + W_{{emb}} + H$$

* $W_{{dense}}$: attention, shared experts, the dense first layer, routers, norms and LM head.
* $X_{{layer}} = E·x$: one layer's routed experts.
* $W_{{emb}}$: the token embedding, which llama.cpp keeps in RAM (one row is read per token).
* $H$: the host's needs beyond weights — OS, engine, pinned buffers; assumptions, not measurements.

Worked on K3 at Q4_K_M: one expert is $x$ = {X_MB:.1f} MB, a layer's {P.experts_per_layer} experts $X_{{layer}}$ = {LAYER_GB:.2f} GB, and {P.moe_layers} such layers put {P.moe_layers * LAYER_GB:,.0f} GB in RAM, while the GPU holds {OFF.vram_needed_bytes / GB:.1f} GB.
The diagram: each bar is one memory, labelled with the bandwidth every byte in it is read at.
"""),
    code(f"""
{CHECK}
shown(summary_table(off))
"""),
    code("""
charts.readable(charts.offload_memory_bar(charts.offload_memory_long(off)))
"""),
    md("""
**Takeaway:** offload mode moves almost all of a MoE model's bytes to the slow memory; the GPU keeps only what every token reads in full.

## 2. Decode speed: bytes read ÷ bandwidth

Each generated token reads the dense weights, the cache and the **active** experts once — $k$ of $E$ per layer, not all of them — each from the memory it sits in:

$$t_{token} = \\sum_{d} \\frac{\\text{bytes read on } d}{BW_d} = \\frac{W_{dense} + N·k·x + KV}{BW_{GPU}} + \\frac{(L_{moe}-N)·k·x}{BW_{RAM}}, \\qquad \\text{tokens/s} \\le \\frac{1}{t_{token}}$$
"""),
    md(f"""
Worked on K3: a token reads $92 · 16 · x$ = {RAM_READ_GB:.2f} GB of experts from RAM and {GPU_READ_GB:.2f} GB on the GPU.
At 70 GB/s and {GPU_T.bandwidth_bytes_per_s / GB:,.0f} GB/s that is {RAM_T.seconds_per_step * 1e3:.0f} + {GPU_T.seconds_per_step * 1e3:.0f} ms: a **ceiling** of {CEIL_TPS:.2f} tokens/s, reached only if both memories stream at full speed.
Real engines reach a fraction of it; the serving model (`k3lib.serving`) applies efficiencies fitted on measured runs and says how far off it has been on runs held aside.
Its figures for the parameters' configuration — each with its basis, "fitted model ± the held-aside error" or "theoretical ceiling":
"""),
    code("""
speed = offload_serving_estimate(model=model, gpu=gpu, weights=weights, ram=ram, ram_bandwidth=ram_bandwidth,
                                 expert_layers_on_gpu=expert_layers_on_gpu, kv_dtype=kv_dtype)
shown(figures_table(speed))
"""),
    md("""
**Predict, then run.** The decode time is dominated by RAM. A 12-channel server board reads DDR5 about 8 times faster than a desktop's two channels — how many tokens/s would you expect there? Then run the cell (a bandwidth ceiling, every row on the same GPU).
"""),
    code(f"""
{CHECK}
shown(offload.ram_platform_table())
"""),
    md(f"""
A desktop board cannot hold 1.5 TB at all; the boards that can have 8–12 channels.

For contrast, a hybrid MoE that fits a desktop: Qwen3-Next 80B (512 experts, 10 active, three of four layers Gated DeltaNet) at Q4_K_M on a 24 GB RTX 4090 with dual-channel DDR5-5600.
Its active experts are {HYBRID_RAM_MB:,.0f} MB per token against K3's {RAM_READ_GB:.1f} GB, so the same formula gives a very different answer:
"""),
    code("""
hybrid = explorers.offload_validate(model="qwen3-next-80b", weights="q4_k_m", gpu="rtx-4090", host="desktop-ddr5-5600")
charts.verdict_line(charts.ceiling_labelled(hybrid.verdict()))
"""),
    md("""
**Takeaway:** decode in offload mode is set by RAM bandwidth ÷ active-expert bytes; where the RAM sits is a bigger lever than the GPU, and a model with few active bytes is fast even on a desktop.

## 3. Against all-GPU serving

All on GPUs, the same model needs two 8× H200 nodes.
The engine's own verdict and the serving model's speed for it, labelled the same way:
"""),
    code("""
all_gpu = notebook.engine_plan(model=model, weights=weights, kv_dtype=kv_dtype, context=context, gpu="h200",
                               gpus=16, nodes=2, engine="llama.cpp")
charts.verdict_line(all_gpu.verdict())
"""),
    code("""
shown(figures_table(serving_estimate(all_gpu)))
"""),
    md("""
Guide 000 (“Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3”, a public article) calls CPU offloading “10–100× slower” and “not a deployment strategy”; compare the "decode per sequence" rows of section 2's table and this one for the workbook's answer (both fitted, each with its error), and see [07](07-guide-audit.ipynb) for the audit of the guides' offload figures.

**Takeaway:** offload trades one or two orders of magnitude of speed for 16 GPUs' worth of VRAM; it is a way to run the model, not to serve it.

## 4. Partial offload: tokens/s against VRAM

Keeping $N$ layers' experts on the GPU moves $N·k·x$ of each token's reads from RAM to the GPU, at $X_{layer}$ of VRAM per layer.
The curve is a bandwidth ceiling for three GPU bandwidths (as if each had the VRAM); the vertical lines mark each card's real memory.
"""),
    code("""
cards = ["rtx-4090-48gb", "rtx-pro-6000", "h200"]
curve = offload.offload_curve(gpus=cards)
vram_gb = [get_gpu(g).memory_bytes("usable") / 1e9 for g in cards]  # each card's real memory
charts.readable(charts.tokens_per_s_curve(curve, title="Decode ceiling as experts move to the GPU", marks=vram_gb))
"""),
    code(f"""
{CHECK}
shown(offload.partial_offload_table())
"""),
    md("""
**Takeaway:** the curve is flat until most experts are on the GPU: a whole H200 holds only a few of 92 layers, and RAM bandwidth, not VRAM, is the lever.

## 5. Prefill is a different regime

Decode reads $k$ experts per layer; a prompt does not.
An engine processes the prompt in micro-batches of $u$ tokens on the GPU, so the RAM-resident experts cross the host link (PCIe), and $u·k$ expert choices over $E$ experts touch almost all of them:

$$t_u = \\max\\left(\\frac{(1-(1-k/E)^u)·W_{RAM}}{BW_{link}}, \\frac{2·P_{active}·u}{F}\\right), \\qquad \\text{prefill tokens/s} \\le \\frac{u}{t_u}$$
"""),
    code(f"""
{CHECK}
shown(offload.prefill_table())  # "—": a unified-memory machine has no host link to cross
"""),
    md("""
**Takeaway:** over PCIe an 8K prompt takes minutes before the first token (ceilings; the serving model's time to first token is in section 2's table).

## 6. Explore

Pick a GPU, the RAM size, a host platform or a bandwidth, and how many layers' experts stay on the GPU.
The coloured line says whether it loads; the bar, drawn only for a plan that loads, shows where each token's time goes.
The callback is `k3lib.views.widgets_parallel.offload_view`, a plain function.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
from k3lib.views.widgets_parallel import offload_explorer
offload_explorer()
"""),
    md(f"""
## Summary

* In offload mode K3 at Q4_K_M keeps {OFF.vram_needed_bytes / GB:.1f} GB on the GPU and {OFF.ram_needed_bytes / GB:,.0f} GB in RAM (weights plus the host's own needs).
* Decode reads only the active experts: $t = \\sum_d \\text{{bytes}}_d / BW_d$, a ceiling of {CEIL_TPS:.2f} tokens/s at 70 GB/s; the serving model's fitted figure is lower, and says its error.
* The boards that hold 1.5 TB have 8–12 channels and several times the bandwidth.
* Keeping expert layers on the GPU barely helps until most of them fit; prefill moves the offloaded experts over PCIe once per micro-batch.

## Exercises
"""),
    *exercise(
        "04-1",
        "K3 at Q4_K_M (4.5 bits per weight; each routed expert is $3 · 3{,}584 · 3{,}072$ weights) with every expert in RAM: how many GB does one decode step read from RAM?",
        f"""
{RAM_READ_GB:.2f} GB: $92 · 16$ active experts of {X_MB:.2f} MB, plus one {P.embedding_row_bytes:,.0f}-byte embedding row.
That is {RAM_READ_GB / (P.moe_layers * LAYER_GB) * 100:.1f} % of the {P.moe_layers * LAYER_GB:,.0f} GB of experts in RAM.
""",
        value=RAM_READ_GB,
        unit="GB",
    ),
    *exercise(
        "04-2",
        "On a one-socket EPYC 9005 board (12 channels of DDR5-6000), how long does each token spend reading experts from RAM?",
        f"""
{EPYC_RAM_MS:.1f} ms: the board reads $12 · 6{{,}}000 · 10^6 · 8$ B/s = {EPYC_BW:,.0f} GB/s, and {RAM_READ_GB:.2f} GB / {EPYC_BW:,.0f} GB/s = {EPYC_RAM_MS:.1f} ms.
`plan_offload(gpu="rtx-4090-48gb", host="epyc-9005").tiers[1].seconds_per_step`.
""",
        value=EPYC_RAM_MS,
        unit="ms",
    ),
    *exercise(
        "04-3",
        "How much VRAM does one MoE layer's experts take if you keep that layer on the GPU, and how much of a token's RAM reads does it remove?",
        f"""
{LAYER_GB:.2f} GB of VRAM ($896 · x$) to remove only $16 · x$ = {16 * X_MB:.0f} MB of reads per token: 1 / 92 of the RAM time.
That is why section 4's curve is flat.
""",
        value=LAYER_GB,
        unit="GB",
    ),
    *exercise(
        "04-4",
        "Four sequences decode together. How many distinct experts per layer does a step touch, and why does batching help offload so little?",
        f"""
$E·(1-(1-k/E)^B) = 896·(1-(1-16/896)^4)$ = {DISTINCT_4:.1f} experts per layer, against 16 for one sequence.
Each step reads almost 4× the expert bytes from RAM; only the GPU's dense reads are shared by the batch.
""",
        value=DISTINCT_4,
        unit="experts",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
