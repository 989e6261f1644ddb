"""Generate notebooks/05-decision-checklist.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/05_decision_checklist.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "05-decision-checklist"
CHECK = "# NBVAL_CHECK_OUTPUT"

cells = [
    md(f"""
# 05 · The decision checklist

**Question: given the GPUs I have and the context I need, which configuration loads — and what command launches it?**

{nav(STEM)}
"""),
    md("""
Guide 000 ends with a seven-step "VRAM decision framework", a cheat sheet of max context by hardware and an optimization priority matrix.
Its text lost the tables; this notebook regenerates them from the memory model of the earlier notebooks.
Each step becomes a function of `k3lib.studies.checklist` that returns its figure and a one-sentence reason.
A solver then picks the configuration, and `k3lib.studies.commands` writes the `vllm serve` and `llama-server` lines for it.

Notation: $G$ GPUs of $C_{gpu}$ each, overhead $O$ per GPU, weights $W$, activation $A$, KV bytes per token $kv_{tok}$, context $T$ tokens.
Sizes are GiB ($2^{30}$ bytes), as the guide's own formulas imply; an "80 GB" H100 holds 80 GiB.
"""),
    code("""
from k3lib.views import notebook, tables
from k3lib.studies import checklist, commands
from k3lib.views import explorers, params
from k3lib.views import charts_checklist as charts
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
weights: str = "native"  # weight precision of the plan in sections 4 and 5: native for an architecture, q4 for a guide profile
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
plan.reason
"""),
    md("""
`plan` is the configuration the parameters name — the real K3 on one node of 8 H100s, which does not load — planned for the engine that would run it (vLLM for a real model, the guide's own policy for a guide profile), so its verdict is the one `k3plan estimate` prints; `a` carries its assumptions into every step below.

## 1. The seven steps

**Step 1 — count your GPUs.**
The real budget is what is left once every GPU has paid its overhead:

$$B = G·C_{gpu} - G·O$$

On the guide's terms (80 GiB per H100) 8 H100s give $8·80 - 8·8 = 576$ GiB, its "more like 576 GB usable"; the cell uses the 79.19 GiB the driver exposes.
"""),
    code("""
budget = checklist.step1_budget(model=model, gpu=gpu, gpus=gpus, assumptions=a)
shown({"figure": budget.figure, "reason": budget.reason})
"""),
    md("""
**Step 2 — pick a precision.**
The guide says "start with Q4 unless you have 10+ H100s".
In memory terms: upgrade to full precision when its weights fit in $0.85·B$ (the guide's 15 % reserve), otherwise start with Q4 if $W_{Q4} + A < B$, otherwise go lower.
On the guide's profile, for BF16's 594 GiB: $0.85·720 = 612$ on 10 H100s, $0.85·648 = 551$ on 9 — the guide's threshold of 10 falls out.
"""),
    code("""
precision = checklist.step2_precision(model=model, budget=budget, assumptions=a)
shown({"figure": precision.figure, "reason": precision.reason})
"""),
    md("""
**Step 3 — set the context length.**
What the weights and activation leave is the KV budget; divide by the bytes per token:

$$T_{max} = \\frac{B - W - A}{kv_{tok}}, \\qquad kv_{tok} = 262{,}144 \\text{ (BF16)},\\ 131{,}072 \\text{ (FP8)},\\ 65{,}536 \\text{ (INT4) B}$$

A guide profile uses exactly this line.
A real architecture uses k3lib's per-GPU KV instead: K3's MLA latent is copied to every tensor-parallel rank, so the linear formula overstates it.
"""),
    code("""
ctx = checklist.step3_context(model=model, gpu=gpu, gpus=gpus, weights=precision.weights, budget=budget,
                              target_context=context, assumptions=a)
shown({"figure": ctx.figure, "reason": ctx.reason})
"""),
    md("""
**Step 4 — enable the optimizations.**
FP8 KV is derived: it halves $T·kv_{tok}$.
FlashAttention ("20–35 % less peak memory" of activation) and PagedAttention ("5–12 % of total VRAM") are the guide's percentages, not derived: k3lib models neither the attention matrix nor contiguous over-allocation.
"""),
    code("""
opts = checklist.step4_optimizations(model=model, gpu=gpu, gpus=gpus, weights=plan.weight_format, context=context,
                                     kv_dtype=kv_dtype, assumptions=a)
shown(pd.DataFrame([(o.name, o.basis, o.reason) for o in opts.items], columns=["optimization", "basis", "reason"]))
"""),
    md("""
**Step 5 — test at 50 %.**
Set `max_model_len` to half the target; if it loads, double it; if it runs out of memory, cut 25 % and retry.
The outcomes below are predicted from step 3's maximum at the chosen KV dtype.
"""),
    code("""
seq = checklist.step5_test_sequence(target_context_tokens=plan.context_tokens,
                                    predicted_max_context_tokens=ctx.limit(kv_dtype).max_context_tokens)
shown({"figure": seq.figure, "reason": seq.reason})
"""),
    md("""
**Step 6 — benchmark throughput.**
At batch 1 each generated token reads the active weights and the whole KV cache once; the GPUs of a tensor-parallel group read in parallel:

$$r \\le \\frac{TP·BW_{HBM}}{W_{active} + KV}$$

For a profile $W_{active}$ = 104B active parameters (guide 004) × bits / 8.
This is a ceiling; if a loaded model makes under 5 tokens/s, the guide blames the interconnect: check it with `nvidia-smi topo -m`.
"""),
    code("""
# a tok/s only for a precision that loads on these GPUs (step 2)
speed = precision.weights and checklist.step6_throughput(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes,
                                                         weights=precision.weights, kv_dtype=kv_dtype,
                                                         context=context, assumptions=a)
shown({"figure": speed.figure, "reason": speed.reason} if speed else
      {"figure": "—", "reason": f"no tok/s: nothing loads on {gpus}× {gpu} (step 2)"})
"""),
    md("""
**Step 7 — add one GPU.**
The fewest GPUs that hold the target, plus one for production.
"""),
    code("""
add = checklist.step7_add_one_gpu(model=model, gpu=gpu, weights=plan.weight_format, kv_dtype=kv_dtype,
                                  context=context, assumptions=a)
shown({"figure": add.figure, "reason": add.reason})
"""),
    md("""
All seven at once:
"""),
    code("""
steps = checklist.run_checklist(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes, context=context, kv_dtype=kv_dtype,
                                assumptions=a)
steps.to_frame()
"""),
    md("""
The same as a form: change the inventory and every answer updates.
A node count no one can build (16 H100s "in 1 node": an H100 node holds 8) is refused with a message, not planned as TP=16.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
explorers.checklist_form(model=model if isinstance(model, str) else "kimi-k3", gpu=gpu, gpus=gpus, nodes=layout.nodes,
                         context=context)
"""),
    md("""
**Takeaway:** the checklist is four lines of arithmetic — budget, weights, KV per token, bandwidth — and each guide rule of thumb is one of them with a number filled in.

## 2. The guide's sizing statements, recomputed

The solver takes an inventory and a target context and returns the cheapest configuration someone can launch: fewest GPUs (one node up to the GPU's node size, then whole nodes, TP inside a node), then the best checkpoint the engine can load, then the highest KV precision.
It evaluates every GPU count × precision × KV dtype × context (a 1K-token grid) in one vectorized sweep, with the same bytes as `make_plan`.
Here it checks guide 000's statements on the guide's own profile and rules; where the guide counts GPUs as one pool (10 or 11 H100s), so does this check, and the table says what a whole-node deployment needs instead:
"""),
    code(f"""
{CHECK}
claims = checklist.guide_statement_checks()
claims
"""),
    md("""
Worked by hand, the two that move:

| statement | formula | value |
|---|---|---|
| 4× H100, Q2, FP8, 64K | $320 - (225 + 8 + 10 + 4·8)$ | 45 GiB headroom |
| the same with the worked example's overhead | $320 - (225 + 8 + 10 + 48)$ | 29 GiB (guide: ~28) |
| BF16 + 512K BF16 KV on 10 H100 | $800 - (594 + 128 + 10 + 10·8)$ | −12 GiB: needs 11 |
| the same with FP8 KV | $800 - (594 + 64 + 10 + 80)$ | 52 GiB: 10 suffice |

The guide's headroom and "780 GB" figures charge a 4- or 10-GPU deployment the 48 GiB overhead of an 8-GPU node; with its own 8 GiB per GPU they move by 16–32 GiB.

**Takeaway:** the counts hold (5–6, 4, 8), but BF16 at 512K needs 11 H100s in one pool unless the KV cache is FP8, and FP8 saves one GPU there, not two; deployed on 8-GPU nodes, both are two nodes (16 GPUs).

## 3. Cheat sheet: max context by hardware

Rows are GPU × deployable count: one node of 1–8 (where the model's heads split that way), then whole nodes up to 32; columns are the weights — a guide profile's tiers, or for a real model the checkpoints the engine can load.
A cell is the largest context, in 1K-token steps up to the model's 1M, that fits; an empty cell means the model does not load.
"""),
    code("""
sheet = checklist.cheatsheet(model=model, gpus=checklist.cheatsheet_gpus(gpu), kv_dtype=kv_dtype, assumptions=a)
charts.cheatsheet_heatmap(sheet)
"""),
    code("""
checklist.cheatsheet_display(sheet, gpu=gpu)
"""),
    md("""
Spot checks on the guide's profile, by hand: 4 H100s at Q2 leave $288 - 225 - 10 = 53$ GiB, which at FP8 holds $53·2^{30} / 131{,}072 = 434{,}176$ tokens (424K); 5 at Q4 leave 25 GiB, exactly 200K.
"""),
    code(f"""
{CHECK}
h100 = checklist.cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])
checklist.cheatsheet_display(h100).set_index("config").loc[["h100-sxm ×4", "h100-sxm ×5", "h100-sxm ×6", "h100-sxm 2×8"], ["bf16", "q8", "q4", "q2"]]
"""),
    md("""
The real K3 is another picture. vLLM can load its native checkpoint (MXFP4 experts, 1,453.7 GiB) or RedHat's FP8-BLOCK one (about 2.82 TB); no 2- or 4-bit checkpoint of it exists for vLLM.
The native one needs three 8-GPU H100 nodes (TP=8, PP=3), or two H200 nodes (TP=8, PP=2: vLLM's own recipe).
"""),
    code("""
charts.cheatsheet_heatmap(checklist.cheatsheet(model="kimi-k3", gpus=["h100-sxm", "h200-sxm"]))
"""),
    md("""
**Optimal GPU counts by precision.**
The fewest deployable H100s per precision and context at FP8 KV, and the production count: the guide's "one more GPU", read as the next count you can deploy (one more GPU inside a node, one more node past it):
"""),
    code(f"""
{CHECK}
counts = checklist.optimal_gpu_counts(model="kimi-k3@guide-000", contexts=["64K", "128K", "256K", "512K", "1M"])
counts
"""),
    md("""
**Takeaway:** on the guide's profile 6 H100s carry Q4 to 775K at FP8; the real K3 needs two 8-GPU H200 nodes for its native weights.

## 4. Optimization priority matrix

The guide's order: FlashAttention and PagedAttention (on by default), FP8 KV, a shorter `max_model_len`, and only then a lower weight precision; CPU offload is for emergencies, batch 1 the default.
For the configuration in the parameters, what each lever saves — per GPU, since the fullest GPU decides — and how many GPUs it saves:
"""),
    code("""
matrix = checklist.priority_matrix(plan)
tables.readable(matrix.round(2))  # "—": the guide gives no GPU count for that lever
"""),
    code("""
charts.priority_matrix_chart(matrix)
"""),
    md("""
Does the order hold?
The guide calls FP8 KV "the single highest-impact, lowest-effort optimization" — "enough to drop from 10 GPUs to 8".
The check: does that free lever save at least one GPU?
On the guide's profile (Q4 weights, 512K, BF16 KV on 7 H100s: $325 + 128 + 10 ≤ 72·7$; FP8 KV fits 6) it does; on the real K3 it does not:
"""),
    code(f"""
{CHECK}
guide_case = make_plan(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=7, weights="q4",
                      kv_dtype="bf16", context="512K", assumptions=checklist.checklist_assumptions())
k3_case = checklist.best_configuration(model="kimi-k3", gpu="h200-sxm", gpus=16, nodes=2, context="256K").plan()
order = {{"guide profile": checklist.check_priority_order(checklist.priority_matrix(guide_case)),
         "real K3": checklist.check_priority_order(checklist.priority_matrix(k3_case))}}
{{name: c.findings for name, c in order.items()}}
"""),
    md("""
K3's attention keeps a 576-element latent in 24 of its 93 layers and a constant state in the other 69, so its KV cache is 27,648 B per token at BF16 — a tenth of the guide's 262,144.
At 256K on 2×8 H200 that is 3.4 GiB per GPU next to 96 GiB of weights: FP8 KV frees 1.7 GiB per GPU and no GPU.

**Takeaway:** the guide's order is still the order of effort, and FP8 KV is still free; but for the real K3 only the weight precision or the GPU count moves the fit.

## 5. Anti-patterns

Three mistakes the guide names, checked on `plan`: offloading to CPU although the model fits, a context far beyond what the workload needs (a 50K workload wants 128K), and a `--gpu-memory-utilization` that leaves the engine no reserve.
"""),
    code("""
[(w.code, w.message) for w in checklist.anti_patterns(plan, cpu_offload_bytes=10 * 2**30, workload_context_tokens="50K",
                                                        gpu_memory_utilization=0.99)]
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
launch = {engine: explorers.launch_choice(model=model, gpu=gpu, gpus=gpus, nodes=layout.nodes, context=context,
                                         kv_dtype=kv_dtype, batch=batch, engine=engine, assumptions=a)
          for engine in ("vllm", "llama.cpp")}
print("\\n".join(f"{engine}: {c.headline}" for engine, c in launch.items()))
"""),
    code("""
launch["vllm"].command or "no vLLM command: nothing loads"
"""),
    code("""
launch["llama.cpp"].command or "no llama.cpp command: nothing loads"
"""),
    code("""
commands.topology_command(plan)
"""),
    md("""
For the guide's sweet spot (Q4, FP8 KV, 256K on 6 H100s) the per-GPU sum is $325/6 + 32/6 + 10/6 + 8 = 69.2$ GiB of 79.19: $u$ = 0.88.
"""),
    code(f"""
{CHECK}
sweet = make_plan(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=6, weights="q4", kv_dtype="fp8",
                 context="256K", assumptions=checklist.checklist_assumptions())
line = commands.vllm_command(sweet)
line
"""),
    md("""
Nothing here runs anything: the commands are text to copy.
The same answers come from the command line: `k3plan plan --gpu h100-sxm --gpus 8 --context 256K` and `k3plan cheatsheet`.

## Summary

* The real budget is $G·C_{gpu} - G·O$; the guide's 8 GiB per GPU is the single largest correction to naive sizing.
* The guide's step 2 rule ("Q4 unless 10+ H100s") is the BF16 weights fitting in 85 % of that budget.
* Max context is $(B - W - A)/kv_{tok}$ for the guide's profile; for the real K3 the MLA latent's replication on every TP rank sets it.
* The solver and the cheat sheets sweep every deployable configuration at once; the guide's counts reproduce except BF16 at 512K (11 H100s in one pool, not 10; two 8-GPU nodes as deployed) and FP8's "10 → 8" (one GPU, not two).
* For the real K3 the KV cache is small (27,648 B/token), so FP8 KV and shorter contexts barely move the fit: precision and GPU count do.

## Exercises

1. How many H200s does the guide's profile need for Q8 at 1M context with BF16 KV, and how many to buy?
<details><summary>Answer</summary>

$450.4 + 256 + 10 = 716.4$ GiB must fit in $141G - 8G = 133G$: $G ≥ 5.39$, so 6, and 7 to buy.
`checklist.min_gpus(model="kimi-k3@guide-000", gpu="h200", weights="q8", kv_dtype="bf16", context="1M")` returns 6.
</details>

2. On 5 H100s the guide's step 2 picks Q4 even though Q4's 325 GiB exceed $0.85·360 = 306$ GiB. Why, and what context does it leave at FP8?
<details><summary>Answer</summary>

The 15 % reserve decides only the *upgrade* to full precision; Q4 is the starting point whenever it loads ($325 + 10 < 360$).
It leaves 25 GiB for the KV cache: $25·2^{30}/131{,}072$ = 204,800 tokens, 200K.
</details>

3. Why does the real K3 not load on one node of 8 H200s, and how does two nodes' layout change the KV cache per GPU?
<details><summary>Answer</summary>

Its native weights are 1,453.7 GiB: over 8 GPUs that is about 182 GiB each, more than an H200's 140.4.
Two nodes (TP=8 inside each, PP=2 across) halve the weights per GPU, and each pipeline stage caches only its own layers, so the MLA latent that TP copies to every rank is halved too: `checklist.best_configuration(model="kimi-k3", gpu="h200", gpus=16, context="1M")` fits natively.
</details>

4. A workload's prompts average 40K tokens. What `--max-model-len` does the anti-pattern check suggest, and how much FP8 KV does it free on the guide's profile against 1M?
<details><summary>Answer</summary>

$2 × 40K$ = 80K, rounded up to a power of two: 128K (`checklist.recommended_context_tokens("40K")`).
$(1{,}048{,}576 - 131{,}072) × 131{,}072$ B = 112 GiB.
</details>
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
