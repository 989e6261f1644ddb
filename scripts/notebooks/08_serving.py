"""Generate notebooks/08-serving.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/08_serving.py

The exercises' answers are computed here by k3lib (theoretical-ceiling terms, the engine's KV
capacity, a measured vLLM figure, the cost formula): none depends on the fitted efficiencies, so
they stay right when the speed model is refitted. tests/test_exercises_08.py derives each by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, exercise, md, nav, objectives, parameters

from k3lib.core.hardware import get_gpu
from k3lib.engines.calibration import read_vllm_sweep
from k3lib.engines.deployment import plan_for_engine
from k3lib.serving.concurrency import max_concurrency
from k3lib.serving.cost import usd_per_hour, usd_per_million_output_tokens
from k3lib.serving.roofline import CEILING, decode_terms, inputs_from_plan, prefill_terms
from k3lib.views.speed import compute_bound_batch

STEM = "08-serving"

# ---- the H100's two figures the prose quotes (data/hardware.csv)
H100_F, H100_BW = get_gpu("h100-sxm").bf16_dense_flops, get_gpu("h100-sxm").memory_bw_bytes_per_s

# ---- the exercises' answers, by k3lib (Llama 3.1 8B in BF16 on one H100 SXM under vLLM)
_small = plan_for_engine(model="llama-3.1-8b", gpu="h100-sxm", gpus=1, weights="bf16", context=1280, with_limits=False)
_inp = inputs_from_plan(_small)
_step = decode_terms(_inp, concurrency=1, context_tokens=1024)
EX1_BYTES_GB = _step.bytes_read / 1e9
EX1_KV_GB = (_step.bytes_read - decode_terms(_inp, concurrency=1, context_tokens=0).bytes_read) / 1e9
EX1_RATE = 1 / _step.seconds(CEILING)
EX2_BATCH = compute_bound_batch(_small)
EX2_RATIO = _inp.peak_flops / _inp.memory_bw_bytes_per_s
_pf = prefill_terms(_inp, input_tokens=1024)
EX3_INTENSITY = _pf.flops / _pf.bytes_read
EX3_TFLOP = _pf.flops / 1e12
_row = next(r for r in read_vllm_sweep() if r["id"] == "H108")  # "GPU KV cache size: 476,016 tokens"
EX4_KV_TOKENS = int(float(_row["value"]))
EX4_MAX = max_concurrency(
    kv_capacity_tokens=EX4_KV_TOKENS,
    input_tokens=1024,
    output_tokens=256,
    max_num_seqs=dict(_small.engine.settings).get("max_num_seqs"),
)
EX4_LONG = max_concurrency(kv_capacity_tokens=EX4_KV_TOKENS, input_tokens=8192, output_tokens=1024)
EX5_PER_HOUR = usd_per_hour(gpus=4, price_per_gpu_hour=2.50)
EX5_BUSY = usd_per_million_output_tokens(usd_per_hour_=EX5_PER_HOUR, output_tokens_per_s=2000)
EX5_ALONE = usd_per_million_output_tokens(usd_per_hour_=EX5_PER_HOUR, output_tokens_per_s=40)

cells = [
    md(f"""
# 08 · Serving: speed, concurrency and cost

**The question:** once a deployment loads, how fast does it answer, how many users does it serve at once, and what does a million tokens cost?

{nav(STEM)}
"""),
    objectives(
        [
            "Say why the KV cache exists: prefill writes each prompt token's K and V once; every decode step reads the weights once and every running sequence's cache.",
            "Derive why decode is memory-bound and prefill compute-bound, from arithmetic intensity against the GPU's FLOP per byte.",
            "Find the batch at which decode turns compute-bound: about $F/BW$ sequences at BF16.",
            "Turn an engine's KV capacity into the most requests it serves at once, as vLLM's \"maximum concurrency\".",
            "Read the throughput/latency trade-off per layout, knowing which figures are fitted (with their held-aside error) and which are ceilings.",
        ],
        minutes=45,
    ),
    md(r"""
Notation (as in [02](02-kv-cache.ipynb)): $P_{act}$ active parameters, $W$ weight bytes one GPU reads per step, $kv_{tok}$ KV bytes per token, $I$ prompt (input) tokens, $O$ answer (output) tokens, $B$ sequences decoded together, $T$ tokens of context, $BW$ memory bandwidth (bytes/s), $F$ peak FLOP/s, $\eta$ the fraction of each an engine achieves, $\tau$ a fixed cost per layer and step.
Speeds are tokens per second, times milliseconds, sizes GB ($10^9$ bytes).
Serving words: **TTFT** (time to first token), **TPOT** (time per output token), **concurrency** (requests in flight).
"""),
    code("""
from k3lib.views import notebook, speed
from k3lib.views.lines import verdict_line  # a verdict as a coloured line
from k3lib.engines.deployment import plan_for_engine
from k3lib.serving import serving_estimate

notebook.setup()  # offline Altair renderer: SVG through vl-convert, no CDN
"""),
    md("""
## Parameters

Defaults: Llama 3.1 70B on 4× H100 under vLLM, prompts of 1,024 tokens and answers of 256.
From the command line: `k3plan speed --model llama-3.1-70b --gpu h100-sxm --gpus 4 --concurrency 16 --json` gives the same figures.
"""),
    parameters("""
model: str = "llama-3.1-70b"  # a built-in model id (see `k3plan models`)
model_path: str = ""  # a config.json, GGUF or safetensors folder of your own; overrides model
gpu: str = "h100-sxm"  # GPU id or alias (see `k3plan gpus`)
gpus: int = 4  # GPUs in total
input_tokens: int = 1024  # prompt tokens per request
output_tokens: int = 256  # generated tokens per request
concurrency: int = 16  # requests served at once
"""),
    code("""
from k3lib.views import params

source = params.model_source(model, model_path)
with notebook.parameter_errors():
    plan = plan_for_engine(model=source, gpu=gpu, gpus=gpus, context=input_tokens + output_tokens, with_limits=False)
    speed.require_loads(plan)  # a plan that does not load has no speed: one line naming gpus
verdict_line(plan.verdict())
"""),
    md(r"""
## 1. Why the cache exists

An engine runs a request in two phases.
**Prefill** reads the prompt: all $I$ tokens go through the model in one pass, and every layer writes each token's key and value into the **KV cache**, once.
**Decode** then writes the answer one token per step: a step reads every weight once for the whole batch, and each running sequence's cache, to produce one token per sequence.

Without a cache, the token at position $t$ would rerun the model over all $t$ tokens before it, so an answer of $O$ tokens would cost

$$\sum_{t=I}^{I+O-1} 2·P_{act}·t = 2·P_{act}·O·\left(I + \tfrac{O-1}{2}\right) \quad\text{FLOPs instead of}\quad 2·P_{act}·O$$

The cache trades those FLOPs for memory: $kv_{tok}$ bytes per token, kept for as long as the request runs.
Worked on the plan above, for requests of $I$ + $O$ tokens (the decode rows are the binding GPU's, at the mean context $T = I + O/2$):
"""),
    code("""
speed.cache_worked_table(plan, input_tokens=input_tokens, output_tokens=output_tokens, concurrency=concurrency)
"""),
    md("""
One request served alone, drawn from the step-time model at its theoretical ceiling (all of the bandwidth and FLOP/s, no overheads): the prefill writes the prompt's cache in one short pass, then each decode step adds one token's K and V.
"""),
    code("""
timeline = speed.request_timeline(plan, input_tokens=input_tokens, output_tokens=output_tokens)
display(speed.timeline_line(timeline))
speed.timeline_chart(timeline)
"""),
    md(
        r"""
**Takeaway:** the prompt is processed in one pass; the answer takes one pass *per token*, and each pass reads the whole model — that is where a request's time goes.

## 2. Decode waits on memory, prefill on compute

A pass over the model does some FLOPs and reads some bytes.
Its **arithmetic intensity** is their ratio; the GPU's own ratio is its peak FLOP/s over its bandwidth:

$$\text{intensity} = \frac{\text{FLOPs}}{\text{bytes read}}, \qquad \text{GPU ratio} = \frac{F}{BW} \quad(\text{H100: } @F@ \text{ TFLOP/s} ÷ @BW@ \text{ TB/s} ≈ @RATIO@ \text{ FLOP/byte})$$

A pass whose intensity is below the GPU's ratio finishes reading before it could finish computing: it is **memory-bound**; above it, **compute-bound**.
Prefill of $I$ tokens does $2·P_{act}·I$ FLOPs for one read of $W ≈ 2·P_{act}$ bytes (BF16): intensity ≈ $I$.
A decode step of $B$ sequences does $2·P_{act}·B$ FLOPs for at least the same read: intensity ≈ $B$, less once the caches are read too.
On the binding GPU of the plan (theoretical-ceiling terms):
""".replace("@F@", f"{H100_F / 1e12:,.0f}")
        .replace("@BW@", f"{H100_BW / 1e12:,.2f}")
        .replace("@RATIO@", f"{H100_F / H100_BW:,.0f}")
    ),
    code("""
speed.intensity_table(plan, input_tokens=input_tokens, concurrency=concurrency,
                      context_tokens=input_tokens + output_tokens // 2)
"""),
    md(r"""
**Takeaway:** a 1,024-token prompt is far above the GPU's ratio (compute-bound); a decode step, even of a few dozen sequences, is far below it (memory-bound).

## 3. The batch where decode turns compute-bound

One decode step of $B$ sequences on one GPU takes

$$t_{step} = \max\left(\frac{W + B·KV_{rank}(T)}{\eta_{bw}·BW},\ \frac{2·P_{act}·B/TP}{\eta_c·F}\right) + t_{comm} + L·\tau$$

Reading the weights costs the same for 1 sequence or 200: that is why servers batch.
Weights only ($T = 0$), compute overtakes memory where $2·P_{act}·B/(TP·F) = W/BW$:

$$B^* = \frac{TP·F·W}{2·P_{act}·BW} = \frac{F}{BW} \quad\text{at BF16, where each GPU holds } W = 2·P_{act}/TP \text{ bytes}$$

Each sequence's cache read grows with its context, so with caches decode stays memory-bound further (the light line).
The roofline of the plan's binding GPU at the theoretical ceiling:
"""),
    code("""
batches = [2**k for k in range(12)]
weights_only = speed.roofline_table(plan, batches=batches, context_tokens=0)
with_cache = speed.roofline_table(plan, batches=batches, context_tokens=input_tokens + output_tokens // 2)
display(speed.bound_line(plan, concurrency=concurrency))
speed.roofline_chart(weights_only, with_cache=with_cache, crossover=speed.compute_bound_batch(plan))
"""),
    md("""
The same numbers as a table, with the cache of every sequence at the mean context:
"""),
    code("""
speed.curve_shown(with_cache, decimals=2)
"""),
    md(r"""
**Takeaway:** below a batch of a few hundred, decoding more sequences together costs almost nothing per step — so how many sequences a server can hold, which is the KV cache's job, decides its throughput.

## 4. The KV budget caps concurrency

Every request in flight keeps $(I + O)$ tokens of cache.
The engine's budget (here vLLM's `--gpu-memory-utilization` × usable memory, less weights, activation peak and runtime) holds a fixed number of tokens, its **KV capacity**, so the most requests served at once is

$$C_{max} = \min\left(\left\lfloor \frac{\text{KV capacity (tokens)}}{I + O} \right\rfloor,\ \text{max\_num\_seqs}\right)$$

vLLM prints the first term at start-up as "Maximum concurrency for $N$ tokens per request: $x$×". What the plan's engine would print:
"""),
    code("""
speed.printed_table(plan)
"""),
    md("""
The same capacity, for requests of other shapes:
"""),
    code("""
speed.concurrency_caps_table(plan)
"""),
    md("""
**Takeaway:** longer requests mean fewer at once; the KV cache, not the weights, sets how many users one deployment serves.

## 5. Throughput against latency

More requests at once raise the tokens per second of the whole server and slow each one down: every step carries more sequences and more cache, and their prompts' prefills interleave with the decode steps.
Now the figures are the serving model's, each with its basis.
*Fitted model*: the step time above with $\\eta_{bw}$, $\\eta_c$ and $\\tau$ fitted per engine and hardware class on public measured runs (`data/measured/speed.csv`), ± its median error on runs it was never fitted on.
*Theoretical ceiling*: the same formula with $\\eta = 1$ — a bound, not a prediction.
At the concurrency of the parameters cell, priced at the dated catalogue's median rate for the GPU:
"""),
    code("""
from k3lib.core.prices import price_per_gpu_hour

quote = price_per_gpu_hour(plan.gpu.id)  # the dated catalogue's median (data/prices.csv); give your own instead
price = quote.usd_per_gpu_hour if quote else None
est = serving_estimate(plan, concurrency=concurrency, input_tokens=input_tokens, output_tokens=output_tokens,
                       price_per_gpu_hour=price)
speed.figures_table(est)
"""),
    md("""
As concurrency grows, up to what the KV cache holds:
"""),
    code("""
curve = speed.concurrency_table(plan, input_tokens=input_tokens, output_tokens=output_tokens,
                               price_per_gpu_hour=price)
speed.curve_shown(curve)
"""),
    code("""
speed.throughput_latency_chart(curve, title=f"{plan.model.name} on {plan.gpus}× {plan.gpu.name}")
"""),
    md("""
The same model on other layouts of the same GPU: the plan's own, the same GPUs with half the tensor parallelism and twice the pipeline stages, and twice the GPUs.
Wider tensor parallelism shortens each step (more bandwidth per layer) but spends GPUs; pipeline stages keep more memory for the cache but a sequence waits for each stage in turn.
A layout that does not load is left out (it has no speed), and said so:
"""),
    code("""
layouts, left_out = speed.layouts_around(plan, model=source, input_tokens=input_tokens, output_tokens=output_tokens)
speed.layouts_table(layouts, left_out)
"""),
    code("""
speed.layouts_chart(speed.layouts_curve(layouts, input_tokens=input_tokens, output_tokens=output_tokens),
                    title="Throughput per GPU against latency, per layout")
"""),
    md("""
Try it: a layout (only those that load) and a concurrency (only what that layout's KV cache holds); the figures update, each with its basis.
Widgets need a live kernel; in a static export this cell shows nothing.
"""),
    code("""
speed.speed_explorer(plans=layouts, input_tokens=input_tokens, output_tokens=output_tokens)
"""),
    md("""
## 6. How good is the model?

The efficiencies are fitted on part of the measurements and the error is reported on the rest, which the fit never saw (per engine and quantity: rows, median predicted ÷ measured, share within ±30 %, worst, median error).
"""),
    code("""
from k3lib.serving.calibration import calibration, holdout_table

speed.holdout_shown(holdout_table(calibration()))
"""),
    md(f"""
## Summary

- The KV cache exists so that a decode step reads each earlier token's K and V instead of recomputing them: prefill writes the prompt's cache once, each decode step reads the weights once and every sequence's cache.
- Arithmetic intensity decides the bound: prefill ≈ $I$ FLOP per byte (compute-bound), a decode step ≈ $B$ (memory-bound), against the GPU's $F/BW$ (about {H100_F / H100_BW:,.0f} on an H100 at BF16).
- Decode turns compute-bound near $B^* ≈ F/BW$ sequences with weights only, later when each sequence's cache is read too.
- The engine's KV capacity divided by tokens per request bounds the requests served at once (vLLM's "maximum concurrency").
- More concurrency buys throughput with latency; every figure here says whether it is fitted on measurements (with its held-aside error) or a ceiling.
"""),
    *exercise(
        "08-1",
        "Llama 3.1 8B in BF16 on one H100 SXM (3.35 TB/s), one sequence at a context of 1,024 tokens: how many bytes does one decode step read, and what is the ceiling decode rate in tokens/s?",
        f"""
The step reads every weight but the input embedding (a lookup of one row) and the sequence's cache: {EX1_BYTES_GB:,.3f} GB, of which {EX1_KV_GB:,.3f} GB are the cache ($1{{,}}024 × 2·32·8·128·2$ B).
At full bandwidth: $1 / ({EX1_BYTES_GB:,.3f} \\text{{ GB}} ÷ {_inp.memory_bw_bytes_per_s / 1e9:,.0f} \\text{{ GB/s}})$ = **{EX1_RATE:,.1f} tokens/s** — a ceiling; engines reach a fraction of it.
`speed.roofline_table(plan_for_engine(model="llama-3.1-8b", gpu="h100-sxm", gpus=1, weights="bf16", context=1280, with_limits=False), batches=(1,), context_tokens=1024)`.
""",
        value=EX1_RATE,
        unit="tokens/s",
    ),
    *exercise(
        "08-2",
        "Same model and GPU, weights only (no cache): from which batch does a decode step take longer to compute than to read? Predict it from the GPU's two figures before you run `speed.compute_bound_batch`.",
        f"""
$W = 2·P_{{act}}$ bytes at BF16, so $B^* = F·W / (2·P_{{act}}·BW) = F/BW$ = {_inp.peak_flops / 1e12:,.0f} TFLOP/s ÷ {_inp.memory_bw_bytes_per_s / 1e12:,.2f} TB/s = {EX2_RATIO:,.1f}: the first whole batch past it, **{EX2_BATCH:,}** sequences, is compute-bound.
The model's size cancels out: every dense BF16 model on an H100 turns compute-bound near {EX2_BATCH:,} sequences.
""",
        value=EX2_BATCH,
        unit="sequences",
    ),
    *exercise(
        "08-3",
        "Same model and GPU: what is the arithmetic intensity of the prefill of one 1,024-token prompt, and is it memory- or compute-bound?",
        f"""
FLOPs: $2·P_{{act}}·I$ plus causal attention's $I·A(I/2)$ = {EX3_TFLOP:,.2f} TFLOP; bytes: the weights once, {EX1_BYTES_GB - EX1_KV_GB:,.2f} GB.
Intensity = **{EX3_INTENSITY:,.0f} FLOP/byte**, {EX3_INTENSITY / EX2_RATIO:,.1f}× the H100's {EX2_RATIO:,.0f}: compute-bound.
`speed.intensity_table(plan)` shows it beside a decode step's.
""",
        value=EX3_INTENSITY,
        unit="FLOP/byte",
    ),
    *exercise(
        "08-4",
        "vLLM 0.19 printed `GPU KV cache size: 476,016 tokens` for Llama 3.1 8B on one H100 (`data/measured/vllm-0.19-h100-sweep.csv`, row H108). How many requests of 1,024 + 256 tokens can it run at once (its `max_num_seqs` is 1,024)? And of 8,192 + 1,024?",
        f"""
$\\lfloor {EX4_KV_TOKENS:,} / 1{{,}}280 \\rfloor$ = **{EX4_MAX:,}** requests (below `max_num_seqs`, so the cache binds); at 9,216 tokens per request only {EX4_LONG:,}.
`k3lib.serving.concurrency.max_concurrency(kv_capacity_tokens=476016, input_tokens=1024, output_tokens=256)`.
""",
        value=EX4_MAX,
        unit="requests",
    ),
    *exercise(
        "08-5",
        "Four GPUs rented at \\$2.50 per GPU-hour serve 2,000 output tokens/s in all at a high concurrency, and 40 tokens/s serving one request at a time. What does a million output tokens cost in each case?",
        f"""
\\$/h = 4 × 2.50 = \\${EX5_PER_HOUR:,.2f}; a million tokens take $10^6 / 2{{,}}000$ s = 0.139 h, so **\\${EX5_BUSY:,.2f}** per million at 2,000 tokens/s, and \\${EX5_ALONE:,.2f} at 40 tokens/s.
Batching is what makes serving cheap: the same GPUs, {EX5_ALONE / EX5_BUSY:,.0f}× the price per token when they serve one request at a time.
""",
        value=EX5_BUSY,
        unit="USD",
    ),
]

if __name__ == "__main__":
    build(STEM, cells)
