"""Generate notebooks/05-decision-checklist.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/05_decision_checklist.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.hardware import get_gpu
from k3lib.core.models import get_model
from k3lib.studies import checklist

STEM = "05-decision-checklist"
CHECK = "# NBVAL_CHECK_OUTPUT"
GiB = 2**30

# ---- worked numbers, from the functions the lesson calls
K3 = get_model("kimi-k3")
BUDGET_16_H200 = checklist.step1_budget(
    model="kimi-k3", gpu="h200", gpus=16, assumptions=checklist.checklist_assumptions()
)
K3_NATIVE_GIB = (
    checklist.step2_precision(
        model="kimi-k3", budget=BUDGET_16_H200, assumptions=checklist.checklist_assumptions()
    ).weights_bytes
    / GiB
)
H100_GIB, H200_GIB = (get_gpu(g).memory_bytes("usable") / GiB for g in ("h100-sxm", "h200-sxm"))
K3_KV_FP8 = K3.kv_bytes_per_token(1)
TOKENS_PER_GIB_FP8 = GiB / K3_KV_FP8
RECOMMENDED_40K = checklist.recommended_context_tokens("40K")
SEQ = checklist.step5_test_sequence(target_context_tokens=262_144, predicted_max_context_tokens=204_800)

cells = [
    md(f"""
# 05 · The decision checklist

**The question:** given the GPUs I have and the context I need, which configuration loads — and what command launches it?

{nav(STEM)}
"""),
    objectives(
        [
            "Walk the seven-step checklist as a decision path: budget, precision, context, optimizations, a load test, speed, a spare.",
            "Compute each step's figure for a real model (Kimi K3, then a dense and a hybrid model) and say where the path stops.",
            "Read the engine's own verdict and the serving model's speed, each with its basis, instead of a rule of thumb.",
            "Turn the answer into a `vllm serve` or `llama-server` line that loads, and know why no line is printed when nothing does.",
        ],
        minutes=40,
    ),
    md("""
Sizing a deployment is a short sequence of decisions, each a line of arithmetic: how much memory is left after overhead, which weights fit in it, how many tokens of cache fit in what is left, whether a test at half the target loads, how fast it will run, and how many GPUs to buy.
Guide 000 (“Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3”, a public article) ends with such a seven-step “VRAM decision framework”; this lesson runs it on real architectures with `k3lib.studies.checklist`, one function per step, and [07](07-guide-audit.ipynb) audits the guide's own figures.
A solver then picks the configuration, and `k3lib.studies.commands` writes the command for it.

Notation: $G$ GPUs of $C_{gpu}$ each, overhead $O$ per GPU, weights $W$, activation $A$, KV bytes per token $kv_{tok}$, context $T$ tokens.
Sizes are GiB ($2^{30}$ bytes).
"""),
    code("""
from k3lib.views import notebook, tables
from k3lib.studies import checklist, commands
from k3lib.views import explorers, params
from k3lib.views import charts_checklist as charts
from k3lib.views.charts_parallel import verdict_line, readable
from k3lib.core.plan import make_plan
import pandas as pd
from k3lib.views.table_format import shown  # tables for a reader: no tuples, separators, "—"
pd.set_option("display.max_colwidth", None)  # show whole reasons
notebook.setup()
"""),
    parameters("""
model: str = "kimi-k3"  # built-in model or guide profile, e.g. kimi-k3@guide-000 (see `k3plan models`)
model_path: str = ""  # a config.json, GGUF or safetensors folder; overrides model
gpu: str = "h100-sxm"  # GPU id or alias (see `k3plan gpus`)
gpus: int = 8  # GPUs you have
nodes: int = 0  # nodes they sit in; 0 for automatic (one node up to the GPU's node size, then whole nodes)
context: str = "256K"  # target context; K is 1,024 tokens
weights: str = "native"  # weight precision of the plan in sections 3 and 4: native for an architecture, q4 for a guide profile
kv_dtype: str = "fp8"  # KV-cache dtype: bf16 or fp8 (vLLM), int4
batch: int = 1  # concurrent sequences
overhead_per_gpu: str = ""  # overhead per GPU, e.g. 8GiB (the guide's rule); empty for the model's own rule
"""),
    code("""
model = params.model_source(model, model_path)  # a file you name is the model planned
with notebook.parameter_errors():  # 16 GPUs "in 1 node" of an 8-GPU node is refused, not planned as TP=16
    layout = explorers.node_layout(model=model, gpu=gpu, gpus=gpus, nodes=nodes)
plan = notebook.engine_plan(model=model, weights=weights, kv_dtype=kv_dtype, context=context, batch=batch,
                            gpu=gpu, gpus=gpus, nodes=layout.nodes, overhead_per_gpu=overhead_per_gpu)
print(plan.verdict_basis)  # the engine whose rules decide (vLLM for a real model), as `k3plan estimate`
a = plan.assumptions
verdict_line(plan.verdict())
"""),
    md("""
`plan` is the configuration the parameters name — the real K3 on one node of 8 H100s, which does not load — planned for the engine that would run it, so its verdict is the one `k3plan estimate` prints; `a` carries its assumptions into every step below.

## 1. The path

Each step answers one question; a red step is where this inventory stops (add GPUs, or lower the precision), a green one lets you go on, a grey one informs.
The diagram is drawn from the checklist's own answers for the parameters:
"""),
    code("""
steps = checklist.run_checklist(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes, context=context, kv_dtype=kv_dtype,
                                assumptions=a)
launch = {engine: explorers.launch_choice(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes, context=context,
                                         kv_dtype=kv_dtype, batch=batch, engine=engine, assumptions=a)
          for engine in ("vllm", "llama.cpp")}
charts.decision_path_chart(charts.decision_path(steps, choice=launch["vllm"]))
"""),
    md(f"""
**Predict, then run.** K3's native weights are {K3_NATIVE_GIB:,.1f} GiB. On 8 H100s ({H100_GIB:.1f} GiB each) which step stops the path — and on 16 H200s ({H200_GIB:.1f} GiB each)? Decide, then change `gpu` and `gpus` in the explorer below.

## 2. The seven steps, one at a time

**Step 1 — count your GPUs.**
The real budget is what is left once every GPU has paid its overhead:

$$B = G·C_{{gpu}} - G·O$$
"""),
    code("""
budget = checklist.step1_budget(model=model, gpu=gpu, gpus=gpus, assumptions=a)
shown({"figure": budget.figure, "reason": budget.reason})
"""),
    md("""
**Step 2 — pick a precision.**
Upgrade to full precision when its weights fit in $0.85·B$ (a 15 % reserve), otherwise take the highest precision that loads, $W + A < B$; when none does, the path stops here.
"""),
    code("""
precision = checklist.step2_precision(model=model, budget=budget, assumptions=a)
shown({"figure": precision.figure, "reason": precision.reason})
"""),
    md("""
**Step 3 — set the context length.**
What the weights and activation leave is the KV budget; divide by the bytes per token:

$$T_{max} = \\frac{B - W - A}{kv_{tok}}$$

For a real architecture k3lib uses the engine's per-GPU cache instead: K3's MLA latent ($kv_{tok}$ = 27,648 B at BF16, 13,824 B at FP8) is copied to every tensor-parallel rank, so the linear formula overstates what fits.
"""),
    code("""
ctx = checklist.step3_context(model=model, gpu=gpu, gpus=gpus, weights=precision.weights, budget=budget,
                              target_context=context, assumptions=a)
shown({"figure": ctx.figure, "reason": ctx.reason})
"""),
    md("""
**Step 4 — enable the optimizations.**
FP8 KV is derived: it halves $T·kv_{tok}$.
FlashAttention and PagedAttention savings are the guide's percentages, not derived: k3lib models neither the attention matrix nor contiguous over-allocation.
"""),
    code("""
opts = checklist.step4_optimizations(model=model, gpu=gpu, gpus=gpus, weights=plan.weight_format, context=context,
                                     kv_dtype=kv_dtype, assumptions=a)
shown(pd.DataFrame([(o.name, o.basis, o.reason) for o in opts.items], columns=["optimization", "basis", "reason"]))
"""),
    md("""
**Step 5 — test at 50 %.**
Set `max_model_len` to half the target; if it loads, double it; if it runs out of memory, cut 25 % and retry.
The outcomes are predicted from step 3's maximum at the chosen KV dtype.
"""),
    code("""
seq = checklist.step5_test_sequence(target_context_tokens=plan.context_tokens,
                                    predicted_max_context_tokens=ctx.limit(kv_dtype).max_context_tokens)
shown({"figure": seq.figure, "reason": seq.reason})
"""),
    md("""
**Step 6 — how fast?**
At batch 1 each generated token reads the active weights and the cache once; the GPUs of a tensor-parallel group read in parallel, so the bandwidth gives a ceiling:

$$r \\le \\frac{TP·BW_{HBM}}{W_{active} + KV}$$

Real engines reach a fraction of it; the step quotes the serving model's fitted speed with its held-aside error beside the ceiling, and gives no speed at all for a precision that does not load.
"""),
    code("""
speed = precision.weights and checklist.step6_throughput(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes,
                                                         weights=precision.weights, kv_dtype=kv_dtype,
                                                         context=context, assumptions=a)
shown({"figure": speed.figure, "reason": speed.reason} if speed else
      {"figure": "—", "reason": f"no tok/s: nothing loads on {gpus}× {gpu} (step 2)"})
"""),
    md("""
**Step 7 — add one GPU.**
The fewest GPUs that hold the target, plus the next count you can deploy for production (one more GPU inside a node, one more node past it).
"""),
    code("""
add = steps.add_one  # step 7 as run_checklist ran it, with the precision step 2 chose
shown({"figure": add.figure, "reason": add.reason})
"""),
    md("""
All seven at once:
"""),
    code("""
shown(steps.to_frame())
"""),
    md("""
The same as an explorer: pick a model, a GPU, a GPU count, a context and the KV dtype, and the path redraws under its verdict.
The GPU menu offers only counts you can deploy for that model (one node where its heads split, then whole nodes), and the context menu only what the model supports.
The callback is `k3lib.views.widgets_checklist.decision_view`, a plain function.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
from k3lib.views.widgets_checklist import checklist_explorer
checklist_explorer()
"""),
    md("""
**Takeaway:** the checklist is four lines of arithmetic — budget, weights, KV per token, bandwidth — and each rule of thumb is one of them with a number filled in.

## 3. Cheat sheet: max context by hardware

Rows are GPU × deployable count: one node of 1–8 (where the model's heads split that way), then whole nodes up to 32; columns are the checkpoints the engine can load.
A cell is the largest context, in 1K-token steps up to the model's own limit, that fits; an empty cell means the model does not load.
For K3, vLLM can load its native checkpoint (MXFP4 experts) or RedHat's FP8-BLOCK one:
"""),
    code("""
readable(charts.cheatsheet_heatmap(checklist.cheatsheet(model="kimi-k3", gpus=["h100-sxm", "h200-sxm"])), width=320)
"""),
    md("""
For contrast, a dense model with 8 KV heads (Llama 3.1 70B, up to 128K) and a hybrid (Qwen3-Next 80B, up to 256K) on H100s:
"""),
    code(f"""
{CHECK}
shown(checklist.cheatsheet_display(checklist.cheatsheet(model="llama-3.1-70b", gpus=["h100-sxm"]), gpu="h100-sxm"))
"""),
    code(f"""
{CHECK}
shown(checklist.cheatsheet_display(checklist.cheatsheet(model="qwen3-next-80b", gpus=["h100-sxm"]), gpu="h100-sxm"))
"""),
    md("""
**Takeaway:** a 70B dense model fits one node with its full context; K3 needs two 8-GPU H200 nodes before context is even a question, and on H100s three nodes hold only a short context.

## 4. What each lever saves

The usual order of levers: FlashAttention and PagedAttention (on by default), FP8 KV, a shorter `max_model_len`, and only then a lower weight precision.
For the configuration in the parameters, what each saves per GPU — the fullest GPU decides — and how many GPUs it saves:
"""),
    code("""
matrix = checklist.priority_matrix(plan)
shown(matrix)  # "—": no GPU count for that lever
"""),
    code("""
readable(charts.priority_matrix_chart(matrix, title="What each lever saves per GPU (GiB)"))
"""),
    md("""
Guide 000 calls FP8 KV “the single highest-impact, lowest-effort optimization”.
For the real K3 on the two H200 nodes that load it, does that free lever save a GPU?
"""),
    code(f"""
{CHECK}
k3_case = checklist.best_configuration(model="kimi-k3", gpu="h200-sxm", gpus=16, nodes=2, context="256K").plan()
shown(pd.DataFrame({{"finding": checklist.check_priority_order(checklist.priority_matrix(k3_case)).findings}}))
"""),
    md("""
K3's attention keeps a 576-element latent in 24 of its 93 layers and a constant state in the other 69, so its cache is 27,648 B per token at BF16 — a tenth of a dense 70B's 327,680.
FP8 KV frees a little memory per GPU and no GPU.

**Takeaway:** the order of effort still holds and FP8 KV is still free; but for K3 only the weight precision or the GPU count moves the fit.

## 5. Anti-patterns

Three mistakes checked on `plan`: offloading to CPU although the model fits, a context far beyond what the workload needs (a 50K workload wants 128K), and a `--gpu-memory-utilization` that leaves the engine no reserve.
"""),
    code("""
warnings = checklist.anti_patterns(plan, cpu_offload_bytes=10 * 2**30, workload_context_tokens="50K",
                                   gpu_memory_utilization=0.99)
shown(pd.DataFrame([(w.code, w.message) for w in warnings], columns=["anti-pattern", "what is wrong"]))
"""),
    md("""
## 6. The commands

The best configuration for these GPUs and the line that launches it, per engine.
A command is printed only for a configuration that loads — its plan fits with exactly that layout and, for vLLM, vLLM's own rules at the printed utilization agree.
When nothing loads on your GPUs the line says so and shows the cheapest configuration that does, labelled as not your inventory; the real K3 on 8 H100s is that case.
`--gpu-memory-utilization` is computed, not a fixed 0.9:

$$u = \\left\\lceil 100 · \\frac{W + KV + A + O}{C_{usable}} \\right\\rceil / 100, \\quad 0.50 \\le u \\le 0.95$$

where the sizes are per GPU and $C_{usable}$ is what the driver exposes (79.19 GiB on an H100).
"""),
    code("""
verdict_line(*(f"{'FITS' if c.status == 'fits' else 'DOES NOT FIT'} — {engine}: {c.headline}" for engine, c in launch.items()))
"""),
    code("""
print(launch["vllm"].command or "no vLLM command: nothing loads")
"""),
    code("""
print(launch["llama.cpp"].command or "no llama.cpp command: nothing loads")
"""),
    code("""
print(commands.topology_command(plan))
"""),
    md("""
Nothing here runs anything: the commands are text to copy.
The same answers come from the command line: `k3plan plan --gpu h100-sxm --gpus 8 --context 256K` and `k3plan cheatsheet`.

## Summary

* The real budget is $G·C_{gpu} - G·O$; the overhead per GPU is the largest correction to naive sizing.
* Step 2 picks the highest precision that loads, and full precision only with a 15 % reserve.
* Max context is $(B - W - A)/kv_{tok}$ for a flat cache; for K3 the MLA latent's replication on every TP rank sets it.
* Speed is quoted from the serving model (fitted, with its held-aside error) beside the bandwidth ceiling, and only for a plan that loads.
* For the real K3 the KV cache is small, so FP8 KV and shorter contexts barely move the fit: precision and GPU count do.

## Exercises
"""),
    *exercise(
        "05-1",
        "Step 1 with 8 GiB of overhead per GPU: what is the real budget of 16 H200s (140.4 GiB usable each)?",
        f"""
{BUDGET_16_H200.budget_bytes / GiB:,.1f} GiB: $16 · 140.4 - 16 · 8$.
`checklist.step1_budget(model="kimi-k3", gpu="h200", gpus=16, assumptions=checklist.checklist_assumptions())`.
""",
        value=BUDGET_16_H200.budget_bytes / GiB,
        unit="GiB",
    ),
    *exercise(
        "05-2",
        "Step 3 divides the KV budget by $kv_{tok}$. K3 caches $24 · (512 + 64)$ elements per token; with an FP8 cache, how many tokens does 1 GiB hold?",
        f"""
{TOKENS_PER_GIB_FP8:,.0f} tokens: $kv_{{tok}} = 24 · 576 · 1$ = {K3_KV_FP8:,} B, and $2^{{30}} / {K3_KV_FP8:,}$ = {TOKENS_PER_GIB_FP8:,.1f}.
A dense 70B model at FP8 (163,840 B per token) holds 6,554 in the same GiB.
""",
        value=TOKENS_PER_GIB_FP8,
        unit="tokens",
    ),
    *exercise(
        "05-3",
        "A workload's prompts average 40K tokens. What `--max-model-len` does the anti-pattern check suggest?",
        f"""
{RECOMMENDED_40K:,} tokens (128K): twice the workload, $2 · 40 · 1{{,}}024$ = 81,920, rounded up to a power of two.
`checklist.recommended_context_tokens("40K")`.
""",
        value=RECOMMENDED_40K,
        unit="tokens",
    ),
    *exercise(
        "05-4",
        "Step 5 for a 256K target when step 3 predicts at most 200K: which lengths are tried, and where does it settle?",
        f"""
{SEQ.figure}: half the target (128K) loads, so double to 256K, above 200K: out of memory; cut 25 % to 192K, which loads.
It settles at {SEQ.final_max_model_len:,} tokens.
""",
        value=SEQ.final_max_model_len,
        unit="tokens",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
