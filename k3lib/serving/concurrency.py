"""Concurrency: how many requests the KV cache holds, and throughput and latency vs concurrency.

**Maximum concurrency** of requests of $I$ input and $O$ output tokens:
$\\min(\\lfloor KV_{tokens} / (I + O) \\rfloor,\\ \\text{max\\_num\\_seqs})$, with the engine's own KV
capacity (:attr:`EngineVerdict.kv_capacity_tokens`) and, where the engine has one, its cap on
running sequences (vLLM ``max_num_seqs``, 1,024 by default in k3lib's profile).

**Serving at concurrency $c$** (a closed loop: $c$ requests in flight, each replaced when it
ends; per data-parallel replica $c_r = c/DP$). Each request needs $O$ decode steps at the mean
context $T = I + O/2$ and one prefill of $I$ tokens, which chunked prefill interleaves with the
running decodes. With $t_d$ the decode step of $c_r$ sequences and $t_p$ one prompt's prefill
(:mod:`k3lib.serving.roofline`):

$$TPOT = t_d + (c_r - 1)·t_p / O, \\qquad \\text{output tok/s} = DP·\\frac{c_r}{t_d + c_r·t_p/O}$$

(during one request's $O$ steps the other $c_r - 1$ are each replaced about once, and their
prefills stall the step). For the llama.cpp family the total is the decode phase alone,
$DP·c_r/t_d$ (:data:`DECODE_PHASE_TOTAL_ENGINES`: what llama-batched-bench's S_TG measures). **TTFT** assumes the $c_r$ requests arrive together and are
prefilled first come, first served under the chunked-prefill budget: the mean request waits
for half the others' prompts, $TTFT = t_{prefill}((c_r + 1)/2 \\text{ prompts of } I)$ — it grows
with concurrency × input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from k3lib.core.errors import K3InputError
from k3lib.serving.roofline import (
    CEILING,
    LAYER_SPLIT_ENGINES,
    Efficiency,
    ServingInputs,
    decode_terms,
    mixed_prefill_terms,
    prefill_terms,
)

#: engines whose published "output tokens/s, all sequences" is the decode phase alone:
#: llama.cpp's ``llama-batched-bench`` processes the B prompts first (T_PP, S_PP) and then times
#: the generation of B × TG tokens on its own, ``S_TG = B·TG / T_TG`` (ggml-org/llama.cpp
#: tools/batched-bench/batched-bench.cpp; the columns ``PP TG B N_KV T_PP S_PP T_TG S_TG T S`` of
#: its tables, e.g. benches/dgx-spark.md at 4c7e9893). For them the total is $DP·c_r/t_d$ with
#: no prefill stall (the prompt time is reported separately).
DECODE_PHASE_TOTAL_ENGINES = LAYER_SPLIT_ENGINES

#: engines whose step mixes the running decodes with (a chunk of) a waiting prompt under one
#: token budget, decodes first. Read in the engines' source:
#:
#: * vLLM V1: vllm-project/vllm ``vllm/v1/core/sched/scheduler.py`` @ 00024d314514900f361ad072af6931e403b7f589,
#:   ``Scheduler.schedule``: ``token_budget = self.max_num_scheduled_tokens``; "First, schedule the
#:   RUNNING requests" (each takes ``min(num_new_tokens, token_budget)``), then "Next, schedule the
#:   WAITING requests" ``while self.waiting and token_budget > 0`` — confirmed as written.
#: * TensorRT-LLM: NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/batch_manager/microBatchScheduler.cpp`` @
#:   0a949d3128bfaf4ddedefb0259125622a9ec830f, ``MicroBatchScheduler::operator()``: one pass over the
#:   active requests **in their order** (running generation requests are older, so they come
#:   first), each generation request taking ``beamWidth`` tokens of ``maxNumTokensRuntime``; a
#:   context request **without chunking** is taken whole while ``batchNumTokens + reqNumTokens <=
#:   maxNumTokens`` (else ``break``), so several whole prompts are packed into one step; with
#:   chunking the contexts share what the generation requests leave. Correction to the earlier
#:   note ("context chunks share max_num_tokens"): chunking is off by default
#:   (``tensorrt_llm/llmapi/llm_args.py`` @ fcd3f31682808ae56118ae43c1d7864a3a945e6f:
#:   ``enable_chunked_prefill: bool = Field(default=False, ...)``), so the prompts are whole and
#:   packed (:data:`PACKED_PREFILL_ENGINES`).
MIXED_BATCH_ENGINES = ("vllm", "trtllm")
#: engines that run a new prefill batch by itself before the running decodes: SGLang
#: ``python/sglang/srt/managers/scheduler.py`` ``Scheduler.get_next_batch_to_run`` —
#: ``new_batch = self.get_new_batch_prefill()``; ``if new_batch: # Run prefill first if possible``,
#: else ``update_running_batch`` (decode); mixing only with ``--enable-mixed-chunk``
#: (``PrefillAdder(..., running_bs if self.is_mixed_chunk else 0)``). Read in the stored copy
#: (find_string id 22144849692: the same code in a JAX port of SGLang's scheduler) and in
#: sgl-project/sglang's scheduler.py as quoted by several studies of it; the exact upstream
#: commit could not be opened here (the repository snapshot is over the fetch limit), so this
#: citation names the file and function, not a commit. Confirmed as written. The same function
#: caps admission: ``if running_bs >= self.max_running_requests: batch_is_full = True`` and
#: ``AddReqResult.NO_TOKEN`` when the KV pool cannot hold the request — the rest stay in
#: ``self.waiting_queue``.
PREFILL_FIRST_ENGINES = ("sglang",)
#: engines that prefill whole prompts packed into one step up to their token budget (no
#: chunking by default): TensorRT-LLM (see :data:`MIXED_BATCH_ENGINES`). A burst of $n$ prompts
#: of $I$ tokens runs in steps of $k = \max(1, \lfloor C/I \rfloor)$ whole prompts, $C$ the
#: budget (``max_num_tokens``; k3lib uses the plan's prefill budget, 8,192 tokens — TensorRT-LLM's
#: default for ``max_num_tokens`` is 8,192 in its LLM API, but the stored source read here,
#: ``tensorrt_llm/builder.py`` @ 14e801da3632eb71367b847e335c4f2b09098651, is an old one with
#: ``max_num_tokens: Optional[int] = None``; a row's own setting, e.g. dstack's
#: ``--max_num_tokens 16384``, is not a column of speed.csv).
PACKED_PREFILL_ENGINES = ("trtllm",)
#: how requests arrive: ``steady`` (a closed loop in its steady state), ``burst`` (every wave of
#: $c$ prompts arrives together: a closed loop of equal-length requests whose engine keeps the
#: waves in lock-step), ``first_burst`` (only the first wave is a burst: an engine that runs the
#: running decodes first staggers the requests of a wave by their prefill order, and since every
#: request generates the same $O$ tokens they finish, and their successors arrive, staggered — so
#: after the first wave the arrivals are spread and TTFT is the steady one). With $N$ requests
#: in the run (``prompts``), the first wave is $c/N$ of them:
#: $TTFT = \frac{c}{N} TTFT_{burst} + (1 - \frac{c}{N}) TTFT_{steady}$.
ARRIVALS = ("steady", "burst", "first_burst")

QUANTITIES = (
    "decode_tokens_per_s_per_sequence",
    "output_tokens_per_s_total",
    "prefill_tokens_per_s",
    "ttft_s",
    "tpot_s",
)
QUANTITY_UNITS = {
    "decode_tokens_per_s_per_sequence": "tokens/s",
    "output_tokens_per_s_total": "tokens/s",
    "output_tokens_per_s_per_gpu": "tokens/s",
    "prefill_tokens_per_s": "tokens/s",
    "ttft_s": "s",
    "tpot_s": "s",
    "max_concurrency": "requests",
    "usd_per_hour": "USD/h",
    "usd_per_million_output_tokens": "USD",
}


def max_concurrency(
    *, kv_capacity_tokens: int, input_tokens: int, output_tokens: int, max_num_seqs: int | None = None
) -> int:
    """$\\min(\\lfloor KV/(I+O) \\rfloor, \\text{max\\_num\\_seqs})$.

    >>> max_concurrency(kv_capacity_tokens=476_016, input_tokens=1024, output_tokens=256, max_num_seqs=1024)
    371
    """
    per = input_tokens + output_tokens
    if per <= 0:
        raise K3InputError("input_tokens", "input + output must be at least one token")
    n = kv_capacity_tokens // per
    return min(n, max_num_seqs) if max_num_seqs else n


def _check(concurrency: float, input_tokens: int, output_tokens: int) -> None:
    if not concurrency >= 1:
        raise K3InputError("concurrency", f"{concurrency!r}", "a number ≥ 1")
    for name, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise K3InputError(name, f"{v!r}", "a whole number ≥ 0")


def queue_wait_s(*, asked: float, capacity: float, time_in_system_s):
    """Mean extra wait of the requests beyond ``capacity`` in a closed loop of ``asked``
    (Little's law). The engine admits at most ``capacity`` requests (the KV cache or
    ``max_num_seqs``: vLLM ``if len(self.running) == self.max_num_running_reqs: break`` and
    ``allocate_slots`` returning None leave the request in ``self.waiting``; SGLang's
    ``max_running_requests`` / ``NO_TOKEN`` leave it in ``waiting_queue``; see
    :data:`MIXED_BATCH_ENGINES`, :data:`PREFILL_FIRST_ENGINES`). The served ones finish at rate
    $X = capacity / T_{sys}$ ($T_{sys}$ = TTFT + O·TPOT of a served request), so the
    $asked - capacity$ queued requests wait $W_q = (asked - capacity)/X$:

    $$W_q = \\frac{asked - capacity}{capacity}·T_{sys}$$

    >>> queue_wait_s(asked=200, capacity=100, time_in_system_s=30.0)
    30.0
    >>> queue_wait_s(asked=50, capacity=100, time_in_system_s=30.0)
    0.0
    """
    if not capacity or capacity < 1 or asked <= capacity:
        return 0.0 * time_in_system_s
    return (asked - capacity) / capacity * time_in_system_s


def predict(
    inp: ServingInputs,
    quantity: str,
    eff: Efficiency = CEILING,
    *,
    concurrency: float = 1,
    input_tokens: int = 1024,
    output_tokens: int = 256,
    arrivals: str = "steady",
    capacity: int | None = None,
    prompts: int | None = None,
    identical_sequences: bool = False,
):
    """One quantity of :data:`QUANTITIES` at ``concurrency`` (array-aware in ``eff``):
    ``decode_tokens_per_s_per_sequence`` $= 1/TPOT$; ``prefill_tokens_per_s`` $= I/t_p$ (one
    prompt); ``output_tokens_per_s_total``, ``ttft_s``, ``tpot_s`` as in the module docstring.
    None when the device has no compute figure and the quantity needs one (prefill).

    ``arrivals``: one of :data:`ARRIVALS`; ``prompts`` the requests of the whole run (needed by
    ``first_burst``). ``identical_sequences``: every sequence holds the same tokens (a synthetic
    benchmark; see :func:`k3lib.serving.roofline.decode_terms`).

    ``capacity``: the most requests the engine admits (:func:`max_concurrency` of the plan);
    when ``concurrency`` exceeds it the engine serves ``capacity`` and the rest wait: every
    figure is the served one's, and ``ttft_s`` adds :func:`queue_wait_s`."""
    _check(concurrency, input_tokens, output_tokens)
    if capacity is not None and capacity >= 1 and concurrency > capacity:
        kw: dict[str, Any] = dict(
            concurrency=capacity,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            arrivals=arrivals,
            prompts=prompts,
            identical_sequences=identical_sequences,
        )
        if quantity != "ttft_s":
            return predict(inp, quantity, eff, **kw)
        ttft = predict(inp, "ttft_s", eff, **kw)
        tpot = predict(inp, "tpot_s", eff, **kw)
        if ttft is None or tpot is None:
            return None
        out = ttft + queue_wait_s(
            asked=concurrency, capacity=capacity, time_in_system_s=ttft + max(1, output_tokens) * tpot
        )
        return float(out) if np.ndim(out) == 0 else out
    c_r = concurrency / inp.dp
    needs_prefill = quantity in ("prefill_tokens_per_s", "ttft_s") or (input_tokens > 0 and concurrency > 1)
    if needs_prefill and input_tokens > 0 and not inp.peak_flops:
        return None
    if quantity == "prefill_tokens_per_s":
        i = max(1, input_tokens)
        return i / prefill_terms(inp, input_tokens=i).seconds(eff)
    t_d = decode_terms(
        inp,
        concurrency=concurrency,
        context_tokens=input_tokens + output_tokens / 2,
        identical_sequences=identical_sequences,
    ).seconds(eff)
    t_p = prefill_terms(inp, input_tokens=input_tokens).seconds(eff) if input_tokens > 0 else 0.0
    o = max(1, output_tokens)
    tpot = t_d + (c_r - 1) * t_p / o
    if quantity == "ttft_s":
        if input_tokens == 0:
            return t_d
        if arrivals not in ARRIVALS:
            raise K3InputError("arrivals", f"{arrivals!r}", ", ".join(ARRIVALS))
        if arrivals == "burst" or inp.engine in LAYER_SPLIT_ENGINES:
            return _burst_ttft(inp, eff, c_r=c_r, input_tokens=input_tokens)
        steady = steady_ttft(inp, eff, c_r=c_r, input_tokens=input_tokens, output_tokens=o, tpot=tpot)
        if arrivals == "steady":
            return steady
        if not prompts or prompts < 1:
            raise K3InputError(
                "prompts", f"{prompts!r}: first_burst needs the requests of the run", "a whole number ≥ 1"
            )
        first = min(1.0, concurrency / prompts)
        out = first * _burst_ttft(inp, eff, c_r=c_r, input_tokens=input_tokens) + (1 - first) * steady
        return float(out) if np.ndim(out) == 0 else out
    if quantity == "tpot_s":
        return tpot
    if quantity == "decode_tokens_per_s_per_sequence":
        return 1.0 / tpot
    if quantity == "output_tokens_per_s_total":
        if inp.engine in DECODE_PHASE_TOTAL_ENGINES:
            return inp.dp * c_r / t_d
        return inp.dp * c_r / (t_d + c_r * t_p / o)
    raise K3InputError("quantity", f"{quantity!r}", ", ".join(QUANTITIES))


def _burst_ttft(inp: ServingInputs, eff: Efficiency, *, c_r: float, input_tokens: int):
    """Mean TTFT of a wave of $c_r$ prompts arriving together: the prefill of $(c_r + 1)/2$
    prompts (the mean request waits for half the others)."""
    return prefill_terms(_packed(inp, input_tokens), input_tokens=input_tokens, requests=(c_r + 1) / 2).seconds(eff)


def _packed(inp: ServingInputs, input_tokens: int) -> ServingInputs:
    """For :data:`PACKED_PREFILL_ENGINES`: the prefill step holds $k = \\max(1, \\lfloor C/I \\rfloor)$
    whole prompts ($k·I$ tokens) instead of $C$-token chunks; other engines unchanged."""
    if inp.engine not in PACKED_PREFILL_ENGINES or input_tokens <= 0:
        return inp
    import dataclasses

    k = max(1, inp.prefill_chunk_tokens // input_tokens)
    return dataclasses.replace(inp, prefill_chunk_tokens=k * input_tokens)


def steady_ttft(inp: ServingInputs, eff: Efficiency, *, c_r: float, input_tokens: int, output_tokens: int, tpot):
    """Steady-state TTFT (module docstring), array-aware in ``eff`` and ``tpot``."""
    budget = inp.prefill_chunk_tokens
    ctx = input_tokens + output_tokens / 2
    if inp.engine in PREFILL_FIRST_ENGINES:
        b, p = 0.0, budget
    elif inp.engine in PACKED_PREFILL_ENGINES:
        b, p = max(0.0, c_r - 1), max(1, input_tokens)  # whole prompt, no chunking by default
    else:
        b = max(0.0, c_r - 1)
        p = max(1, int(budget - b))
    own_terms = mixed_prefill_terms(inp, input_tokens=input_tokens, chunk_tokens=p, decode_batch=b, decode_context=ctx)
    own = own_terms.seconds(eff)
    step = own / max(own_terms.passes, 1)
    rho = np.minimum(0.95, c_r * own / (own + output_tokens * tpot))
    out = 0.5 * step + rho / (2 * (1 - rho)) * own + own
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class CurvePoint:
    """Throughput and latency at one concurrency (tokens/s, seconds)."""

    concurrency: int
    output_tokens_per_s_total: float
    output_tokens_per_s_per_gpu: float
    decode_tokens_per_s_per_sequence: float
    tpot_s: float
    ttft_s: float | None


def throughput_curve(
    inp: ServingInputs,
    eff: Efficiency = CEILING,
    *,
    concurrencies: Sequence[int] = (),
    input_tokens: int = 1024,
    output_tokens: int = 256,
    max_concurrency_: int | None = None,
) -> list[CurvePoint]:
    """:class:`CurvePoint` per concurrency: ``concurrencies``, or powers of two up to
    ``max_concurrency_`` (default 256). Output tokens/s per GPU divides by the GPUs (1 for a CPU host).

    >>> from k3lib.engines.deployment import plan_for_engine
    >>> from k3lib.serving.roofline import inputs_from_plan
    >>> p = plan_for_engine(model="llama-3.1-8b", gpu="h100", gpus=1, context=2048, with_limits=False)
    >>> pts = throughput_curve(inputs_from_plan(p), concurrencies=(1, 8, 64))
    >>> [round(x.output_tokens_per_s_total) for x in pts] == sorted(round(x.output_tokens_per_s_total) for x in pts)
    True
    """
    cs = list(concurrencies) or [2**i for i in range(0, 20) if 2**i <= (max_concurrency_ or 256)]
    out = []
    for c in cs:
        kw: dict[str, Any] = dict(concurrency=c, input_tokens=input_tokens, output_tokens=output_tokens)
        total = predict(inp, "output_tokens_per_s_total", eff, **kw)
        tpot = predict(inp, "tpot_s", eff, **kw)
        out.append(CurvePoint(c, total, total / max(1, inp.gpus), 1 / tpot, tpot, predict(inp, "ttft_s", eff, **kw)))
    return out


def curve_frame(points: Sequence[CurvePoint]):
    """The curve as a pandas DataFrame, one row per concurrency."""
    import dataclasses

    import pandas as pd

    return pd.DataFrame([dataclasses.asdict(p) for p in points])
