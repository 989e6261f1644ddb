"""Generate notebooks/06-any-model.ipynb, then execute it and keep only the checked outputs.

Usage:  .venv/bin/python scripts/notebooks/06_any_model.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.hardware import get_gpu
from k3lib.engines.calibration import calibration_model
from k3lib.engines.sglang import sglang_mem_fraction_static
from k3lib.engines.vllm import vllm_kv_tokens_interval
from k3lib.views import any_model as _am

STEM = "06-any-model"
CHECK = "# NBVAL_CHECK_OUTPUT"

# ---- the exercises' answers, by k3lib (tests/test_exercises_06.py derives each by hand)
_qn = _am.kv_comparison_table(["qwen3-next-80b-a3b-instruct"], context="32K").iloc[0]
EX1_KV, EX1_NAIVE, EX1_STATE_MIB = int(_qn["kv_B_per_token"]), int(_qn["naive_B_per_token"]), _qn["state_MiB_per_seq"]


def _per_gpu(gpus: int) -> int:
    side = _am.engine_side_by_side("llama-3.1-70b", engines=["vllm"], gpu="h100-sxm", gpus=gpus, context="32K")
    return int(side.loc["KV bytes per token per GPU (B)", "vLLM"])


EX2_TP8, EX2_TP16 = _per_gpu(8), _per_gpu(16)
_h100 = get_gpu("h100-sxm").memory_usable_bytes
EX3_FRACTION = sglang_mem_fraction_static(gpu_memory_bytes=_h100)
EX3_KEPT_GIB = _h100 * (1 - EX3_FRACTION) / 2**30
EX4_LO, EX4_HI = vllm_kv_tokens_interval(
    calibration_model("meta-llama/Llama-3.1-8B-Instruct"), printed_gib=58.11, tp=1, kv_dtype=2.0, dtype_bytes=2
)

cells = [
    md(f"""
# 06 · Any model, any engine

**The question:** what does *my* model — a `config.json` or a GGUF file I have at hand — need on the engine I will serve it with, and why do vLLM, llama.cpp and SGLang give different answers?

{nav(STEM)}

The earlier notebooks worked on K3 and the guides' figures.
Here the model comes from local files: k3lib reads a config's shapes or a GGUF's tensor table (nothing is downloaded).
We look at what the file says, compare the KV cache across attention designs, run the same model through four engines' memory rules, and check those rules against 87 figures vLLM printed.
Notation as in [00](00-vram-anatomy.ipynb): $L$ layers, $D$ hidden size, $V$ vocabulary, $N_q$ query heads, $K$ KV heads, $H$ head dim, $I$ MLP width, $T$ tokens, $b$ bytes per element; GiB = 2^30 bytes.
"""),
    objectives(
        [
            "Count a model's parameters and bytes per group from its `config.json`, and read a GGUF's exact bytes per quant type.",
            "Compute KV bytes per token for GQA, MLA, sliding-window and linear-attention layers, and say why the $2·L·K·(D/N_q)·b$ shortcut misses.",
            "Explain why vLLM, SGLang, llama.cpp and transformers size different KV caches for the same model on the same GPUs.",
            "Check an engine's rules against figures it printed: the vLLM sweep, public logs, and your own log with `check-log`.",
        ],
        minutes=50,
    ),
    code("""
import tempfile

import pandas as pd

from k3lib.views import any_model, notebook
from k3lib.views.lines import Line  # one line of text, shown without quotes
from k3lib.views.table_format import shown  # tables for a reader: separators, "—" for missing
pd.set_option("display.max_rows", 25)  # long tables are shown by their head; the full frame is one call away
pd.set_option("display.max_colwidth", None)  # whole rules and reasons
notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

`config` is a config shipped in `data/configs` (its name without `.json`) or a path, relative to this folder, to a `config.json`, a `.gguf` file or a safetensors folder; `model_path`, when set, names your own file and replaces `config`.
`gpus` and `nodes` give the layout by the rule of notebooks 03 and 05: TP inside a node, pipeline stages (PP) across nodes, whole nodes past one; 16 GPUs in one 8-GPU node is refused.
"""),
    parameters("""
config: str = "llama-3.1-70b"  # fixture config name, or a path to a config.json, .gguf file or safetensors folder
engine: str = "vllm"  # engine profile: vllm, llama.cpp, sglang, transformers, generic
gpu: str = "h100-sxm"  # GPU id or alias (`k3plan gpus`): h100, h200, mi300x
gpus: int = 4  # number of GPUs; vLLM and SGLang split them as TP inside a node × PP across nodes
nodes: int = 0  # nodes the GPUs sit in; 0 for automatic (one node up to the GPU's node size, then whole nodes)
context: str = "32K"  # context length T in tokens, K meaning 1,024
model_path: str = ""  # a config.json, GGUF or safetensors folder; overrides config
"""),
    code(f"""
{CHECK}
setup = any_model.validate(config=config, engine=engine, gpu=gpu, gpus=gpus, context=context, nodes=nodes,
                           model_path=model_path)
model = setup.model
Line(setup.describe())
"""),
    md(r"""
## 1. A config and its breakdown

A `config.json` gives the shapes; the parameters follow from them.
For a dense GQA model (untied embeddings, gated MLP, two norms per layer):

$$P = 2·V·D + L·(2·D·N_q·H + 2·D·K·H + 3·D·I + 2·D) + D$$

$H$ comes from the config's `head_dim` when it has one, never from $D/N_q$.
Worked for Llama 3.1 70B, whose published total is 70,553,706,496:
"""),
    code(f"""
{CHECK}
llama = any_model.load_model("llama-3.1-70b")
worked = any_model.params_worked_table(llama)
shown(worked)  # 68,452,352,000: separators, no index
"""),
    md("""
The model in the parameters cell, as the loader read it:
"""),
    code("""
shown(any_model.summary_table(model))
"""),
    md("""
Group by group, at the checkpoint's native format (a `quantization_config` makes groups FP8 or MXFP4; a vision tower is estimated from `vision_config`):
"""),
    code("""
shown(any_model.breakdown_table(model))
"""),
    md("""
**Takeaway:** a config is enough for the parameter count and the per-group bytes; for Llama 3.1 70B the MLP is 80 % of the 131.42 GiB.
"""),
    md(r"""
## 2. A GGUF file: exact bytes per quant type

A GGUF header lists every tensor with its type and shape.
k3lib reads the header and the tensor table (no tensor data) with the `gguf` package.
A quant type stores $n_{blk}$ weights in $s_{blk}$ bytes, so

$$\text{bytes} = \frac{n}{n_{blk}}·s_{blk}, \qquad \text{bits per weight} = \frac{8·s_{blk}}{n_{blk}}$$

Q4_K packs 256 weights in 144 B (4.5 bits), Q6_K 256 in 210 B (6.5625), Q8_0 32 in 34 B (8.5).
For a demo, k3lib writes a tiny Mixtral-style file into a temporary folder: $D$ = 256, 2 layers, 8 experts of which 2 are active, its tensor types mixed as in a Q4_K_M file.
"""),
    code(f"""
{CHECK}
workdir = tempfile.TemporaryDirectory()
tiny = any_model.load_model(any_model.write_demo_gguf(workdir.name))
tiny_summary = any_model.summary_table(tiny)
shown(tiny_summary)
"""),
    code(f"""
{CHECK}
types = any_model.dtype_table(tiny)
shown(types, decimals=4)  # bits per weight: 4.5, 6.5625
"""),
    md("""
By group, with the routed experts (`ffn_*_exps`) apart: per layer, gate and up are 256·256·8 weights in Q4_K (294,912 B each), down the same count in Q6_K (430,080 B).
"""),
    code(f"""
{CHECK}
groups = any_model.breakdown_table(tiny, unit="KiB")
shown(groups)
"""),
    md("""
**Takeaway:** a GGUF's bytes are exact, not estimated: each quant type has a fixed bits per weight, and in a MoE file the experts are most of the bytes (80 % here).
"""),
    md(r"""
## 3. KV bytes per token across attention types

What a layer keeps for each token depends on its attention design:

* **GQA** (full attention): $2·K·H·b$ per layer, so $kv_{tok} = 2·L·K·H·b$.
* **MLA** (multi-head latent attention): one latent per token, $(r_{kv} + d_{rope})·b$ per layer.
* **Sliding window**: $2·K·H·b$ per layer, but only for the last $W$ tokens.
* **Linear attention** (KDA, Gated DeltaNet): nothing per token; a constant state $S$ per sequence (FP32).

$$KV(T) = T·kv_{tok} + \min(T, W)·kv_{sw} + S$$

A common shortcut computes $2·L·K·(D/N_q)·b$ from the config: every layer full attention, the head dim as $D/N_q$, MLA read as GQA with `num_key_value_heads`.
Per layer type, at BF16, for one config of each design:
"""),
    code(f"""
{CHECK}
by_type = any_model.kv_by_layer_type(context="32K")
shown(by_type)
"""),
    md("""
Per model, the growing cache per token next to the shortcut's figure:
"""),
    code(f"""
{CHECK}
kv = any_model.kv_comparison_table(context="32K")
shown(kv)
"""),
    code("""
any_model.kv_naive_chart(kv)
"""),
    md("""
**Takeaway:** the shortcut holds only for plain GQA; it is 25× too high for DeepSeek-V3's MLA, 31× for Kimi Linear, 8× for Gemma 3's sliding layers, and half the truth for Qwen3-235B, whose head dim (128) is not $D/N_q$ (64).
"""),
    md(r"""
## 4. The same model on four engines

Each engine sizes its KV cache from a different budget:

* **vLLM**: $A = u·C - W - A_{peak} - R$ with $u$ = `gpu_memory_utilization` (0.9), a profiled activation peak and non-torch memory $R$; then $T = \lfloor A ÷ kv_{tok,rank} ÷ 16 \rfloor × 16$.
* **SGLang**: $A = f·C - W - R$ with $f$ = `mem_fraction_static` $= (C - \text{reserved}) / C$, reserved MiB $= 512 + 1.5·\text{chunk} + 2·\text{graph bs} + 128·TP$.
* **llama.cpp**: all of $C$; the context is padded to 256 cells, `token_embd` stays in host memory, and the GPUs share the layers.
* **transformers**: all of $C$; `DynamicCache` grows token by token, and MLA models store expanded keys and values.

Under tensor parallelism vLLM and SGLang split the KV heads ($K/TP$ per rank) but copy an MLA latent to every rank.
The model in the parameters cell, one GPU under each engine's rules:
"""),
    code("""
shown(any_model.engine_side_by_side(model, gpu=gpu, gpus=gpus, context=context).reset_index(names="quantity"))
"""),
    code("""
any_model.engine_chart(any_model.engine_components_long(model, gpu=gpu, gpus=gpus, context=context))
"""),
    md("""
Why they differ, rule by rule:
"""),
    code("""
shown(any_model.engine_rules_table(model, gpu=gpu, gpus=gpus, context=context))
"""),
    md("""
What each would print at start-up; SGLang divides by 2^30 and prints "GB", so its GB are GiB:
"""),
    code("""
shown(any_model.printed_lines_table(model, gpu=gpu, gpus=gpus, context=context))
"""),
    md(r"""
For Llama 3.1 70B on 4 H100s the four engines agree on the cache per GPU, $327{,}680 / 4 = 81{,}920$ B per token, and differ in the budget: vLLM $0.9 × 79.19 = 71.27$ GiB, SGLang $0.823 × 79.19 = 65.17$ GiB (reserved $512 + 12{,}288 + 1{,}024 + 512 = 14{,}336$ MiB).
For an MLA model the cache itself differs. DeepSeek-V3 on 8 H200s:

| engine | per GPU per token | formula |
|---|---|---|
| vLLM, SGLang | 70,272 B | $61·(512 + 64)·2$, the latent on every rank |
| llama.cpp | 16,592 B | $61·(576 + 512)·2 / 8$, layers split |
| transformers | 624,640 B | $61·128·(128 + 64 + 128)·2 / 8$, expanded |
"""),
    code(f"""
{CHECK}
llama_side = any_model.engine_side_by_side("llama-3.1-70b", gpu="h100-sxm", gpus=4, context="32K")
ds_side = any_model.engine_side_by_side("deepseek-v3", gpu="h200-sxm", gpus=8, context="32K")
per_token = "KV bytes per token per GPU (B)"
shown(ds_side.reset_index(names="quantity"))
"""),
    md("""
**Takeaway:** the weights agree within about 1 GiB per GPU; the engines differ in what they keep back (vLLM 10 %, SGLang 10–18 % by its reserve formula, llama.cpp and transformers nothing) and, for MLA, in what a token costs: 16,592 to 624,640 B per GPU, a 38× range.
"""),
    md(r"""
## 5. Predicted vs measured

`data/measured/vllm-0.19-h100-sweep.csv` holds 87 figures vLLM 0.19 printed on H100s for 29 runs: weights per GPU, available KV memory per GPU, and KV tokens.
Each is predicted from the model's config:

* weights per GPU: the sharding rules, within 3 %;
* available KV memory: $u·C - W - A_{peak} - R$ end to end, within 0.5 GiB;
* KV tokens: from the *printed* available memory, so only the paging is tested; vLLM rounds that figure to 0.01 GiB, so the prediction is an interval, widened by one 16-token block.

One token row worked by hand, Llama 3.1 8B at TP 1 (a page is 16 tokens × $2·8·128·2$ B = 65,536 B per layer):
"""),
    code(f"""
{CHECK}
worked_cal = any_model.calibration_worked_table("H108")
shown(worked_cal)
"""),
    md("""
Every row has its error (predicted − measured, in the row's unit); the first twelve of the 87 (`cal` holds them all):
"""),
    code("""
cal = any_model.calibration_table()
shown(cal.head(12), decimals=3)
"""),
    code(f"""
{CHECK}
cal_summary = any_model.calibration_summary_table(cal)
shown(cal_summary)
"""),
    code("""
any_model.calibration_chart(cal)
"""),
    md("""
The rows that miss their tolerance, with the reason (none at present):
"""),
    code("""
misses = cal[~cal["within"]]
print(f"{len(misses)} of {len(cal)} figures miss their tolerance")
shown(misses, decimals=3) if len(misses) else None
"""),
    md("""
**Takeaway:** all 87 figures are within tolerance: weights within 0.17 GiB, available memory within 0.39 GiB, and every token count within the interval the printed rounding allows.
It is one engine version on one GPU type: agreement is necessary, not sufficient.
"""),
    md(r"""
## Check your own engine log

The best test of these rules is the log of *your* engine on *your* GPU.
`k3plan check-log LOG` (and `check_log` here) reads a vLLM, SGLang, llama.cpp or Ollama log: the configuration it states (context, cache types, flash attention, TP) and every memory line.
It predicts the same quantities with the engine's rules and shows logged vs predicted per component, with the error and the rule.
A line that looks like a memory figure but matches no known pattern is listed, not guessed; a figure the log does not let us predict (the model is not named, the context is missing) is listed with what is missing.

Units as the engines print them: llama.cpp and Ollama "MiB" are 2^20 B; vLLM "GiB" are 2^30 B (vLLM ≤ 0.6 printed "GB" for GiB); SGLang's "GB" are 2^30 B as well.

A real llama.cpp log (Mistral 7B at 32,768 cells, from a public pull request; the source is in the file's first lines).
K per layer is $K·H·2$ B $= 8·128·2$ = 2,048 B per cell, so K is $32·2{,}048·32{,}768$ B = 2,048 MiB:
"""),
    code("""
from k3lib.engines.logcheck import check_log, render_log_check
from k3lib.views import calibration as cal_views

log_text = cal_views.engine_log_path("llamacpp-mistral-7b-32k.log").read_text()
print(render_log_check(check_log(log_text, model="mistral-7b-v0.3")))
"""),
    md("""
The same as a table, for an SGLang log (Qwen3-235B-A22B-FP8 on 4 GPUs: 94 layers, 4 KV heads ÷ TP 4 = 1 per rank, head dim 128, BF16 cache):
"""),
    code(f"""
{CHECK}
sgl_check = cal_views.check_log_table(cal_views.engine_log_path("sglang-qwen3-235b-fp8-tp4.log").read_text())
shown(sgl_check[["component", "unit", "logged", "predicted", "error_pct", "within"]], decimals=3)
"""),
    md("""
Paste your own log into `check_log(text)` (or save it and run `k3plan check-log my.log`); add `model=` when the log does not name the model.
"""),
    md("""
## Figures reproduced, per engine

Every real figure the profiles are compared with: the vLLM 0.19 H100 sweep above, plus every predicted figure of the public engine logs in `data/measured/engine_logs.csv` (each with its source).
A log-consistency check (per-device KV buffers adding up to the total) tests the reading, not a rule, so it is counted apart:
"""),
    code(f"""
{CHECK}
figures = cal_views.figures_reproduced_table()
shown(figures)
"""),
    code("""
log_rows = cal_views.engine_log_rows()
shown(log_rows[["engine", "log", "component", "kind", "error_pct", "within"]], decimals=3)
"""),
    md("""
**Takeaway:** the KV rows of the llama.cpp and SGLang logs match to 0.05 % or better, and vLLM V0's block counts fall inside the interval its two-decimal GiB allows.
One vLLM V1 log (Qwen3-235B with the LMCache connector, July 2025) prints 1.1 % fewer tokens than the rule gives for its available memory: a miss we report, not hide.
One Ollama log names Llama 3.1 70B in Q4_0: llama.cpp's per-tensor recipe (output in Q6_K, norms in F32, the rest Q4_0) gives its 37.22 GiB to 0.01 %; the other names no model, so only its reading is checked.
"""),
    md("""
### The real llama.cpp, measured

The public logs above are what others happened to print.
The test suite also builds llama.cpp itself (ggml-org/llama.cpp@0c1e57098, from llama-cpp-python's source distribution) and loads tiny models of 20 families (GQA, sliding-window, chunked, MLA, MoE, gated delta net, KDA, Mamba 1 and 2, RWKV-7, short convolution, the Falcon-H1 parallel hybrid, MTP blocks), in 13 settings each: flash attention on, off and auto, f16/q8_0/q4_0 caches, several sequences, a unified cache, a smaller micro-batch, a full-size sliding window, recurrent snapshots.
Every KV, sliding-window and recurrent-state line, every cell count and the model buffers must come out as llama.cpp prints them; the compute buffer is a model of the scheduler's worst-case graph, so it gets an error range instead:
"""),
    code(f"""
{CHECK}
shown(cal_views.llamacpp_tier_table())
"""),
    md("""
**Takeaway:** where the rule is a formula of the model's shape (cache rows, cells, padding, state rows), the profile is exact on a real llama.cpp; where the engine plans a graph (the compute buffer), the model says how far it can be off, family by family, and the MLA/KDA families are the ones to leave headroom for.
On a GPU it holds up too: for the public Mistral 7B log above (32K context, no flash attention, CUDA) the model gives 2,160 MiB against the 2,144 MiB printed, almost all of it the 32 heads' attention scores, which flash attention removes.
"""),
    md(r"""
## Two nodes: the engine view per pipeline stage

Real K3 on 16 H200 is launched as TP 8 within a node × PP 2 across nodes.
vLLM cuts the 93 layers into whole layers per stage ($\lfloor 93/2 \rfloor = 46$ each, the remainder to the stage before the last: 47 + 46), puts the embedding on the first stage and the LM head on the last, and gives every worker the smallest KV block count over all stages:
"""),
    code(f"""
{CHECK}
from k3lib.engines import estimate_for_engine

k3_two_nodes = estimate_for_engine("vllm", model="kimi-k3", gpu="h200", gpus=16, pp=2, context="256K", kv_dtype="fp8")
pd.DataFrame(k3_two_nodes.stages).assign(
    weights_GiB=lambda d: (d["weights_bytes"] / 2**30).round(2),
    kv_available_GiB=lambda d: (d["kv_available_bytes"] / 2**30).round(2))[["stage", "layers", "weights_GiB", "kv_available_GiB"]].rename(
    columns={{"weights_GiB": "weights (GiB)", "kv_available_GiB": "KV available (GiB)"}}).pipe(shown)
"""),
    md("""
## Explore

Pick a config, an engine, a GPU, a GPU count, the nodes and a context; the verdict (green when it fits, red when not) and the table below update in place.
The GPU slider offers only the counts with a deployable layout of the chosen config on the chosen GPU (one node where the model splits by TP, then whole nodes).
The layout follows the rule of notebooks 03 and 05 ($G = TP·PP$, TP inside a node, PP across nodes): real K3 on 16 H200 is TP=8 × PP=2 over 2 nodes and fits, as there.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
any_model.explorer(config=setup.config, engine=engine, gpu=gpu, gpus=gpus, context=context, nodes=nodes)
"""),
    md(r"""
## Summary

* A config gives the parameters exactly (Llama 3.1 70B: 70,553,706,496) and, with its `quantization_config`, the bytes per group; a GGUF gives every tensor's exact bytes, 4.5 bits per weight for Q4_K.
* KV bytes per token depend on the layer types: GQA $2·L·K·H·b$ (Llama 3.1 70B: 327,680 B), MLA $L·(r_{kv} + d_{rope})·b$ (DeepSeek-V3: 70,272 B), sliding layers capped at $W$, linear layers a constant state.
* The hidden/heads shortcut is off by 0.5× to 31× for anything but plain GQA.
* Engines differ in their budget (vLLM 0.9 of the GPU, SGLang 0.82–0.90 by its reserve formula, llama.cpp and transformers all of it), and for MLA in the cache itself (latent on every rank, split layers, or expanded heads).
* The vLLM profile reproduces all 87 figures of the 0.19 H100 sweep within tolerance; `check-log` reads vLLM, SGLang, llama.cpp and Ollama logs and reproduces their KV figures within 0.5 % where the log names the model and context (one vLLM V1 log misses by 1.1 %).
* With PP > 1 the vLLM and SGLang views are per stage: whole layers, embedding first, LM head last, the smallest stage's KV pool for all.
"""),
    md("""
## Exercises
"""),
    *exercise(
        "06-1",
        "How many KV bytes per token does Qwen3-Next-80B cache at BF16, and what does the shortcut $2·L·K·(D/N_q)·b$ say?",
        f"""
12 full-attention layers (one in four of 48) of 2 KV heads of 256: $12·2·2·256·2$ = **{EX1_KV:,} B**, plus a {EX1_STATE_MIB:,.1f} MiB Gated DeltaNet state per sequence.
The shortcut counts all 48 layers with head dim $2048/16 = 128$: {EX1_NAIVE:,} B, {EX1_NAIVE / EX1_KV:,.0f}× too much.
`any_model.kv_comparison_table(["qwen3-next-80b-a3b-instruct"])`.
""",
        value=EX1_KV,
        unit="B",
    ),
    *exercise(
        "06-2",
        "Llama 3.1 70B under vLLM: how many KV bytes per token does each GPU hold at TP 8, and at TP 16?",
        f"""
At TP 8 each rank holds $8/8 = 1$ KV head: $2·80·1·128·2$ = {EX2_TP8:,} B.
At TP 16 there are still 8 KV heads, so each is copied to two ranks and each GPU still holds **{EX2_TP16:,} B**: the cache per GPU stops shrinking at $TP = K$.
`any_model.engine_side_by_side("llama-3.1-70b", engines=["vllm"], gpus=16)`.
""",
        value=EX2_TP16,
        unit="B",
    ),
    *exercise(
        "06-3",
        "What `mem_fraction_static` does SGLang choose on one H100 (79.19 GiB), and how much memory does it keep back?",
        f"""
Reserved MiB $= 512 + 1.5·8{{,}}192 + 2·256 + 1{{,}}024·1/8 = 13{{,}}440$; $f = (81{{,}}090.56 - 13{{,}}440) / 81{{,}}090.56$ = **{EX3_FRACTION:.3f}**, so {EX3_KEPT_GIB:,.1f} GiB is kept back ({100 * (1 - EX3_FRACTION):.1f} %).
`k3lib.engines.sglang.sglang_mem_fraction_static(gpu_memory_bytes=...)`.
""",
        value=EX3_FRACTION,
        unit="fraction",
    ),
    *exercise(
        "06-4",
        "For the Llama 3.1 8B row worked above (vLLM printed 58.11 GiB available and 476,016 tokens), how wide is the interval of token counts the printed 58.11 GiB allows, and why?",
        f"""
The truth lies in 58.11 ± 0.005 GiB, ±5,368,709 B; a block is 16 tokens × 131,072 B = 2 MiB, so ±2.56 blocks: {EX4_LO:,} to {EX4_HI:,} tokens, **{EX4_HI - EX4_LO:,} tokens** ({(EX4_HI - EX4_LO) // 16} blocks) wide.
vLLM printed 476,016, inside it.
""",
        value=EX4_HI - EX4_LO,
        unit="tokens",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
