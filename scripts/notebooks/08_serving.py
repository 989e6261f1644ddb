"""Generate notebooks/08-serving.ipynb (then execute it and keep checked outputs).

Usage:  .venv/bin/python scripts/notebooks/08_serving.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nbtool import build, code, md, nav, parameters  # noqa: E402

STEM = "08-serving"

cells = [
    md(f"""
# 08 · Serving: speed, concurrency and cost

**The question:** once a deployment loads, how fast does it answer, how many users does it serve at once, and what does a million tokens cost?

{nav(STEM)}
"""),
    md("""
An engine runs a request in two phases.
**Prefill** reads the prompt: all $I$ prompt tokens go through the model in one pass, so the GPU does $2·P_{act}·I$ FLOPs for one read of the weights.
**Decode** then writes the answer one token at a time: each step reads every weight (and each sequence's KV cache) once to produce one token per sequence.
That is why the KV cache exists: without it every decode step would redo the prefill of everything before it.

Notation: $P_{act}$ active parameters, $W$ weight bytes read per step, $B$ sequences decoded together, $T$ tokens of context, $BW$ memory bandwidth, $F$ peak FLOP/s, $\\eta$ the fraction of each that an engine achieves, $\\tau$ a fixed cost per layer and step.
Speeds are tokens per second; times in milliseconds; sizes in GB ($10^9$ bytes).
"""),
    code("""
from k3lib.views import notebook, speed
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
plan.verdict()
"""),
    md("""
## 1. Decode is memory-bound

One decode step of $B$ sequences reads the weights once and each sequence's cache, and does $2·P_{act}$ FLOPs per sequence:

$$t_{step} = \\max\\left(\\frac{W + B·KV(T)}{\\eta_{bw}·BW},\\ \\frac{2·P_{act}·B}{\\eta_c·F}\\right) + t_{comm} + L·\\tau$$

At $B = 1$ the first term is thousands of times the second: the GPU waits on memory.
The table is the theoretical ceiling ($\\eta = 1$, no communication, $\\tau = 0$) for the binding GPU of the plan, at a context of 1,024 tokens.
"""),
    code("""
speed.roofline_table(plan, batches=(1, 8, 64, 256, 1024)).round(2)
"""),
    md("""
Without the KV cache's reads, compute overtakes memory once $2·P_{act}·B/F > W/BW$, that is at $B^* = \\frac{F·W}{2·P_{act}·BW}$: about $F/BW$ sequences at BF16 (2 bytes per parameter).
Each sequence's cache read grows with its context, so in practice decode stays memory-bound far longer:
"""),
    code("""
{"compute-bound from batch (weights only)": speed.compute_bound_batch(plan),
 "compute-bound from batch (at 1,024 tokens of context)": speed.compute_bound_batch(plan, context_tokens=1024),
 "F / BW (FLOP per byte)": round(plan.gpu.bf16_dense_flops / plan.gpu.memory_bw_bytes_per_s)}
"""),
    md("""
**Takeaway:** decoding more sequences together is almost free until the batch reaches hundreds — which is why servers batch, and why the KV cache, not the weights, decides how many they can hold.

## 2. Prefill is compute-bound

A prompt of $I$ tokens costs $2·P_{act}·I$ FLOPs (plus attention's $\\propto I^2$ term) for one read of the weights, so its time is the compute term: $t_{prefill} \\approx \\frac{2·P_{act}·I}{\\eta_c·F}$.
Time to first token is the prefill of the prompt, plus the wait behind the prompts ahead of it.

## 3. The KV cache caps concurrency

Every request in flight keeps $(I + O)$ tokens of cache.
The engine's budget (here vLLM's `--gpu-memory-utilization` × usable memory, less weights, activation peak and runtime) holds a fixed number of tokens, so the most requests served at once is

$$C_{max} = \\min\\left(\\left\\lfloor \\frac{\\text{KV capacity (tokens)}}{I + O} \\right\\rfloor,\\ \\text{max\\_num\\_seqs}\\right)$$
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
Each figure says its basis.
*Fitted model*: the formula above with $\\eta_{bw}$, $\\eta_c$ and $\\tau$ fitted per engine and hardware class on public measured runs (`data/measured/speed.csv`), and ± its median error on runs it was never fitted on.
*Theoretical ceiling*: the formula with $\\eta = 1$ — a bound, not a prediction.

## 4. Throughput against latency

More requests at once raise the tokens per second of the whole server and slow each one down: every step carries more sequences and more cache.
The curve below follows one layout up to what its KV cache holds.
"""),
    code("""
curve = speed.concurrency_table(plan, input_tokens=input_tokens, output_tokens=output_tokens,
                               price_per_gpu_hour=price)
curve.round(1)
"""),
    code("""
speed.throughput_latency_chart(curve, title=f"{plan.model.name} on {plan.gpus}× {plan.gpu.name}")
"""),
    md("""
The same model on three layouts: wider tensor parallelism shortens each step (more bandwidth per layer) but spends GPUs; pipeline stages keep more memory for the cache but a sequence waits for each stage in turn.
"""),
    code("""
layouts = {"4× TP=4": plan_for_engine(model="llama-3.1-70b", gpu=gpu, gpus=4, context=input_tokens + output_tokens,
                                      with_limits=False),
           "8× TP=8": plan_for_engine(model="llama-3.1-70b", gpu=gpu, gpus=8, context=input_tokens + output_tokens,
                                      with_limits=False),
           "8× TP=4 × PP=2": plan_for_engine(model="llama-3.1-70b", gpu=gpu, gpus=8, tp=4, pp=2,
                                             context=input_tokens + output_tokens, with_limits=False)}
speed.layouts_chart(speed.layouts_curve(layouts, input_tokens=input_tokens, output_tokens=output_tokens))
"""),
    md("""
Try it: a layout and a concurrency (the figures update; the basis of each stays beside it).
"""),
    code("""
speed.speed_explorer(model="llama-3.1-70b", gpu=gpu, input_tokens=input_tokens, output_tokens=output_tokens)
"""),
    md("""
## 5. How good is the model?

The efficiencies are fitted on part of the measurements and the error is reported on the rest, which the fit never saw (per engine and quantity: rows, median predicted ÷ measured, share within ±30 %, worst).
"""),
    code("""
from k3lib.serving.calibration import calibration, holdout_table

holdout_table(calibration())
"""),
    md("""
## Summary

- Decode reads every weight once per step for the whole batch: memory-bound until the batch nears $F/BW$ sequences (about 300 on an H100 at BF16), and further when each sequence's cache is read too.
- Prefill does $2·P_{act}$ FLOPs per prompt token: compute-bound.
- The KV cache's capacity divided by tokens per request bounds the requests served at once.
- More concurrency buys throughput with latency; every figure here says whether it is fitted on measurements (with its held-aside error) or a ceiling.

## Exercises

1. Predict, then run: how does `concurrency` 1 → 64 change the output tokens/s per GPU and the time per output token? Which grows faster?
2. Halve the KV cache with `kv_dtype="fp8"` in `plan_for_engine`: what happens to `max_concurrency`?
3. For Llama 3.1 8B on one H100, at what batch does decode turn compute-bound with weights only? Why is the answer the same at FP8?
4. Compare the 4× TP=4 and 8× TP=8 layouts at equal time per output token: which serves more tokens per GPU?
"""),
]

if __name__ == "__main__":
    build(STEM, cells)
