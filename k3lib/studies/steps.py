"""Guide 000's seven-step "VRAM decision framework" as code. Each step is one pure
function that returns a frozen dataclass with its figure (``.figure``) and a one-sentence
``.reason``:

1. :func:`step1_budget` — real budget $B = G·C_{gpu} - G·O_{gpu}$ (8 GiB per GPU by default);
2. :func:`step2_precision` — the guide's "Q4 unless 10+ H100s", generalized by memory;
3. :func:`step3_context` — max context per KV dtype, $T_{max} = (B - W - A) / kv_{tok}$;
4. :func:`step4_optimizations` — FlashAttention, PagedAttention, FP8 KV and what each saves;
5. :func:`step5_test_sequence` — the ``max_model_len`` values to try (half, double, −25 % on OOM);
6. :func:`step6_throughput` — decode tokens/s from HBM bandwidth, and the < 5 tok/s warning;
7. :func:`step7_add_one_gpu` — the fewest deployable GPUs that fit, and the next deployable
   count for production.

>>> b = step1_budget(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=8)
>>> b.budget_bytes / 2**30
576.0
>>> step2_precision(model="kimi-k3@guide-000", budget=b).weights
'q4'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from k3lib.core.checkpoints import resolve_weights
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec
from k3lib.core.memory import activation_bytes, kv_bytes_per_token, weight_bits_by_group, weights_bytes
from k3lib.core.models import ModelSpec, PublishedProfile
from k3lib.core.plan import Assumptions, make_plan, memory_basis_for
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.search import next_gpu_count
from k3lib.core.units import GB, GiB, parse_context_tokens, parse_positive_int
from k3lib.studies.solver import (
    CONTEXT_STEP_TOKENS,
    GUIDE_DEFAULT_WEIGHTS,
    GUIDE_FLASH_ATTENTION_SAVING,
    GUIDE_KV_DTYPES,
    GUIDE_MIN_TOKENS_PER_S,
    GUIDE_PAGED_ATTENTION_SAVING,
    GUIDE_WEIGHT_RESERVE_FRACTION,
    _a,
    _gib,
    _grid,
    _hw,
    _rank_kv,
    _spec,
    capped_claim_bytes,
    context_grid,
    format_context,
    guide004_active_params,
    guide_overhead_per_gpu_bytes,
    min_gpus,
    precision_ladder,
)

if TYPE_CHECKING:
    from k3lib.engines.deployment import EngineSettings
    from k3lib.loaders import LoadedModel


def get_engine_name(engine_id: str) -> str:
    """An engine's display name (vLLM, SGLang, llama.cpp…)."""
    from k3lib.engines.base import get_engine

    return get_engine(engine_id).name


# ----------------------------------------------------------------- step 1


@dataclass(frozen=True)
class Budget:
    """Step 1: total memory minus the per-GPU overhead."""

    gpu: str
    gpus: int
    memory_basis: str
    memory_per_gpu_bytes: int
    overhead_bytes: int
    total_bytes: int
    budget_bytes: int
    reason: str

    step = 1
    title = "Count your GPUs"

    @property
    def figure(self) -> str:
        return f"real budget {_gib(self.budget_bytes)}"


def step1_budget(
    *, model: str | ModelSpec, gpu: str | GPUSpec, gpus: object, assumptions: Assumptions | None = None
) -> Budget:
    """Real budget $B = G·C_{gpu} - O$, with $O = G·8$ GiB unless the assumptions say otherwise.

    >>> step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=4).budget_bytes / 2**30
    288.0
    """
    spec, hw = _spec(model), _hw(gpu)
    a = _a(assumptions, spec)
    n = parse_positive_int(gpus, "gpus")
    basis = memory_basis_for(spec, a)
    cap = hw.memory_bytes(basis)
    if a.overhead_per_gpu_bytes is not None:
        overhead, how = a.overhead_per_gpu_bytes * n, f"{n} × {_gib(a.overhead_per_gpu_bytes)}"
    elif a.overhead_total_bytes is not None:
        overhead, how = a.overhead_total_bytes, f"{_gib(a.overhead_total_bytes)} in total"
    elif isinstance(spec, PublishedProfile) and spec.overhead_per_gpu_bytes is not None:
        overhead, how = spec.overhead_per_gpu_bytes * n, f"{n} × {_gib(spec.overhead_per_gpu_bytes)}"
    else:
        rule = guide_overhead_per_gpu_bytes()
        overhead, how = rule * n, f"{n} × {_gib(rule)} (the guide's rule)"
    total = cap * n
    reason = (
        f"{n} × {_gib(cap)} ({basis} memory of a {hw.id}) = {_gib(total)}, minus {how} of overhead "
        f"= {_gib(total - overhead)}."
    )
    return Budget(hw.id, n, basis, cap, overhead, total, total - overhead, reason)


# ----------------------------------------------------------------- step 2


@dataclass(frozen=True)
class PrecisionChoice:
    """Step 2: the weight precision to start with."""

    weights: str | None
    weights_bytes: int | None
    weight_budget_bytes: int
    reserve_fraction: float
    fitting: tuple[str, ...]
    reason: str

    step = 2
    title = "Pick a precision"

    @property
    def figure(self) -> str:
        if self.weights is None or self.weights_bytes is None:
            return "none fits"
        return f"{self.weights} ({_gib(self.weights_bytes)} of weights)"


def step2_precision(
    *,
    model: str | ModelSpec,
    budget: Budget,
    reserve_fraction: float = GUIDE_WEIGHT_RESERVE_FRACTION,
    default: str = GUIDE_DEFAULT_WEIGHTS,
    assumptions: Assumptions | None = None,
) -> PrecisionChoice:
    """The guide's "start with Q4 unless you have 10+ H100s", generalized by memory.

    *Upgrade* to the model's full precision when its weights fit in $(1-r)·B$, the budget
    less the guide's reserve $r$ = 15 % ("Reserve 10-15% for KV cache and overhead"):
    for 10 H100s $0.85 · 720 = 612 ≥ 594$ GiB of BF16, for 9 $0.85 · 648 = 551 < 594$ —
    the guide's threshold falls out. Otherwise *start* with Q4 (the guide's best quality
    per GB) if it loads, i.e. weights + activation $< B$ (5 H100s: $325 + 10 < 360$), or
    with a higher precision that is no larger than Q4 (K3's native MXFP4 experts are
    smaller than a 4.5-bit Q4). Otherwise the highest precision that loads; else none.

    >>> b10 = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=10)
    >>> step2_precision(model="kimi-k3@guide-000", budget=b10).weights
    'bf16'
    >>> b4 = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=4)
    >>> step2_precision(model="kimi-k3@guide-000", budget=b4).weights
    'q2'
    """
    if not 0 <= reserve_fraction < 1:
        raise K3InputError("reserve_fraction", f"{reserve_fraction!r} must be in [0, 1)")
    spec = _spec(model)
    a = _a(assumptions, spec)
    ladder = precision_ladder(spec)
    sizes = {w: _weights_size(spec, w) for w in ladder}
    act = (
        a.activation_bytes
        if a.activation_bytes is not None
        else activation_bytes(spec, batch=1, prefill_chunk_tokens=a.prefill_chunk_tokens)
    )
    limit = int(budget.budget_bytes * (1 - reserve_fraction))
    fitting = tuple(w for w in ladder if sizes[w] <= limit)
    loads = tuple(w for w in ladder if sizes[w] + act < budget.budget_bytes)
    pct = f"{1 - reserve_fraction:.0%}"
    dflt = get_weight_format(default).id
    top = ladder[0]

    def room(x: str) -> str:
        return _gib(budget.budget_bytes - sizes[x] - act)

    if top in fitting:
        w, why = (
            top,
            (
                f"{top} ({_gib(sizes[top])}) fits in {pct} of the budget ({_gib(limit)}), so there is "
                f"memory for full precision"
            ),
        )
    elif dflt in loads:
        better = [x for x in ladder[: ladder.index(dflt)] if sizes[x] <= sizes[dflt]]
        if better:
            w = better[0]
            why = (
                f"{w} ({_gib(sizes[w])}) is no larger than the guide's {dflt} ({_gib(sizes[dflt])}) and loads "
                f"with {room(w)} left for the KV cache"
            )
        else:
            w = dflt
            others = [x for x in fitting if ladder.index(x) < ladder.index(dflt)]
            also = f"; {', '.join(others)} would also fit in {pct}" if others else ""
            why = (
                f"{top} ({_gib(sizes[top])}) does not fit in {pct} of the budget ({_gib(limit)}), so the guide's "
                f"{dflt} ({_gib(sizes[dflt])}, {room(dflt)} left for the KV cache){also}"
            )
    elif loads:
        w = loads[0]
        why = (
            f"{dflt} ({_gib(sizes.get(dflt, 0))}) plus activation does not load in {_gib(budget.budget_bytes)}; "
            f"{w} ({_gib(sizes[w])}) is the highest precision that does, with {room(w)} left for the KV cache"
        )
    else:
        return PrecisionChoice(
            None,
            None,
            limit,
            reserve_fraction,
            (),
            (
                f"even {ladder[-1]} ({_gib(sizes[ladder[-1]])}) plus activation exceeds the real budget "
                f"({_gib(budget.budget_bytes)}): add GPUs."
            ),
        )
    return PrecisionChoice(w, sizes[w], limit, reserve_fraction, fitting, why + ".")


# ----------------------------------------------------------------- step 3


@dataclass(frozen=True)
class ContextLimit:
    """The largest context at one KV dtype."""

    kv_dtype: str
    kv_bytes_per_token: int
    kv_budget_bytes: int
    formula_context_tokens: int
    max_context_tokens: int
    method: str


@dataclass(frozen=True)
class ContextChoice:
    """Step 3: max context per KV dtype for the chosen weights."""

    weights: str | None
    limits: tuple[ContextLimit, ...]
    target_context_tokens: int | None
    reason: str

    step = 3
    title = "Set context length"

    def limit(self, kv_dtype: str) -> ContextLimit:
        kid = get_kv_dtype(kv_dtype).id
        for lim in self.limits:
            if lim.kv_dtype == kid:
                return lim
        raise K3InputError("kv_dtype", f"{kv_dtype!r} was not computed", ", ".join(x.kv_dtype for x in self.limits))

    @property
    def figure(self) -> str:
        return ", ".join(f"{x.kv_dtype} {format_context(x.max_context_tokens)}" for x in self.limits)


def step3_context(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    gpus: object,
    weights: str | None,
    budget: Budget,
    nodes: object = None,
    kv_dtypes: Sequence[str] = GUIDE_KV_DTYPES,
    target_context: object | None = None,
    batch: object = 1,
    assumptions: Assumptions | None = None,
    engine: object = None,
    source: object = None,
) -> ContextChoice:
    """Max context per KV dtype: $T_{max} = (B - W - A) / kv_{tok}$, capped at the model's maximum.
    With a real ``engine`` (an id or EngineSettings) the maximum is that engine's, on the
    inventory's layout (:func:`k3lib.engines.deployment.engine_max_context_tokens`); ``source``
    is the user's loaded model when there is one.

    A guide profile uses exactly that linear formula. An architecture uses k3lib's
    per-GPU KV (an MLA latent is replicated on every TP rank, pipeline stages split
    it, linear-attention state is a constant) through one sweep over a 1K-token grid;
    the linear figure is kept alongside in ``formula_context_tokens``.

    >>> b = step1_budget(model="kimi-k3@guide-000", gpu="h100", gpus=6)
    >>> c = step3_context(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", budget=b)
    >>> format_context(c.limit("fp8").max_context_tokens)
    '776K'
    """
    spec, hw = _spec(model), _hw(gpu)
    a = _a(assumptions, spec)
    n = parse_positive_int(gpus, "gpus")
    m = parse_positive_int(nodes, "nodes") if nodes is not None else None
    n_batch = parse_positive_int(batch, "batch")
    target = parse_context_tokens(target_context, "context") if target_context is not None else None
    kvs = _rank_kv(kv_dtypes)
    if weights is None:
        return ContextChoice(
            None,
            tuple(ContextLimit(k, kv_bytes_per_token(spec, k), 0, 0, 0, "none") for k in kvs),
            target,
            "No precision fits, so there is no KV budget.",
        )
    w = weights if not isinstance(spec, PublishedProfile) else get_weight_format(weights).id
    w_bytes = _weights_size(spec, w)
    act = (
        a.activation_bytes
        if a.activation_bytes is not None
        else activation_bytes(spec, batch=n_batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
    )
    kv_budget = budget.budget_bytes - w_bytes - act
    per_tok = {k: kv_bytes_per_token(spec, k) for k in kvs}
    formula = {k: max(0, kv_budget // (per_tok[k] * n_batch)) for k in kvs}
    eid = str(getattr(engine, "engine", engine or "generic")).lower()
    if isinstance(spec, PublishedProfile):
        maxes = {k: min(formula[k], spec.max_context_tokens) for k in kvs}
        method = "guide formula"
    elif eid not in ("generic", "guide"):
        from k3lib.engines.deployment import EngineSettings, engine_max_context_tokens, plan_for_engine

        settings = engine if isinstance(engine, EngineSettings) else EngineSettings(eid)
        maxes = {}
        for k in kvs:
            try:
                p = plan_for_engine(
                    model=source or spec,
                    engine=settings,
                    gpu=hw,
                    gpus=n,
                    nodes=m,
                    weights=w,
                    kv_dtype=k,
                    context=CONTEXT_STEP_TOKENS,
                    batch=n_batch,
                    with_limits=False,
                )
                maxes[k] = engine_max_context_tokens(source or spec, p, settings, weights=w, kv_dtype=k)
            except K3InputError:
                maxes[k] = 0  # a KV dtype this engine has not (vLLM: no int4 cache)
        method = f"{get_engine_name(eid)} rules"
    else:
        grid = _grid(spec, hw, [n], [w], kvs, context_grid(spec), batch=n_batch, assumptions=a, nodes=m)
        mx = grid.max_context()[0, 0]
        maxes = {k: int(mx[i]) for i, k in enumerate(kvs)}
        method = "k3lib per-GPU sweep"
    limits = tuple(ContextLimit(k, per_tok[k], kv_budget, int(formula[k]), int(maxes[k]), method) for k in kvs)
    parts = "; ".join(f"{k}: {per_tok[k]:,} B/token → {format_context(maxes[k])}" for k in kvs)
    if isinstance(spec, PublishedProfile):
        reason = (
            f"KV budget = {_gib(budget.budget_bytes)} − {_gib(w_bytes)} weights − {_gib(act)} activation "
            f"= {_gib(kv_budget)}; {parts} (capped at {format_context(spec.max_context_tokens)})."
        )
    elif method.endswith("rules"):
        reason = (
            f"Longest context {method} allow on {n} GPUs (1K grid; 0 = a KV dtype it has not); {parts} "
            f"(the guide's linear formula on {_gib(kv_budget)} would give {format_context(formula[kvs[0]])} "
            f"at {kvs[0]})."
        )
    else:
        reason = (
            f"Per-GPU KV from k3lib on {n} GPUs (the linear formula on {_gib(kv_budget)} would give "
            f"{format_context(formula[kvs[0]])} at {kvs[0]}); {parts} (1K grid, capped at "
            f"{format_context(spec.max_context_tokens)})."
        )
    return ContextChoice(w, limits, target, reason)


# ----------------------------------------------------------------- step 4


@dataclass(frozen=True)
class Optimization:
    """One optimization and what it saves here (low, high), in total and per GPU."""

    name: str
    saves_bytes_total: tuple[int, int]
    saves_bytes_per_gpu: tuple[int, int]
    basis: str
    how: str
    reason: str


@dataclass(frozen=True)
class Optimizations:
    """Step 4: FlashAttention, PagedAttention, FP8 KV."""

    items: tuple[Optimization, ...]
    reason: str

    step = 4
    title = "Enable optimizations"

    def get(self, name: str) -> Optimization:
        for o in self.items:
            if o.name == name:
                return o
        raise K3InputError("optimization", f"{name!r} is not listed", ", ".join(o.name for o in self.items))

    @property
    def figure(self) -> str:
        return ", ".join(f"{o.name} {_range_gib(o.saves_bytes_total)}" for o in self.items)


def _range_gib(r: tuple[int, int]) -> str:
    lo, hi = r
    if lo == hi:
        return _gib(lo)
    return f"{lo / GiB:,.1f}–{hi / GiB:,.1f} GiB"


def _int_pair(pair: tuple[float, float]) -> tuple[int, int]:
    return int(pair[0]), int(pair[1])


def step4_optimizations(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    gpus: object,
    weights: str,
    context: object,
    kv_dtype: str = "fp8",
    nodes: object = None,
    batch: object = 1,
    assumptions: Assumptions | None = None,
) -> Optimizations:
    """What each of the guide's three optimizations saves in this configuration.

    FP8 KV is derived: $KV_{bf16}(T) - KV_{fp8}(T)$ from k3lib (per GPU, replication
    included). FlashAttention (20–35 % of activation) and PagedAttention (5–12 % of
    total VRAM) are the guide's claims, not derived: k3lib models neither the
    attention matrix nor contiguous over-allocation.

    >>> o = step4_optimizations(model="kimi-k3@guide-000", gpu="h100", gpus=8, weights="q4", context="256K")
    >>> o.get("FP8 KV cache").saves_bytes_total[0] / 2**30
    32.0
    """
    a = _a(assumptions, _spec(model))
    common: dict[str, Any] = dict(
        model=model, gpu=gpu, gpus=gpus, nodes=nodes, weights=weights, context=context, batch=batch, assumptions=a
    )
    bf = make_plan(kv_dtype="bf16", **common)
    f8 = make_plan(kv_dtype="fp8", **common)
    cur = make_plan(kv_dtype=kv_dtype, **common)
    n = cur.gpus
    kv_total = bf.total.kv_cache_bytes - f8.total.kv_cache_bytes
    s = cur.peak.stage  # on the fullest GPU of this plan: the same stage at both dtypes
    kv_gpu = bf.shares[s].kv_cache_bytes - f8.shares[s].kv_cache_bytes
    act = cur.total.activation_bytes
    # a lever saves at most what it acts on: FlashAttention the activation, PagedAttention the KV cache
    fa = _int_pair(capped_claim_bytes(GUIDE_FLASH_ATTENTION_SAVING, act, act))
    kv_cur = cur.total.kv_cache_bytes
    pa = _int_pair(capped_claim_bytes(GUIDE_PAGED_ATTENTION_SAVING, cur.total.total_bytes, kv_cur))
    pa_claim = _int_pair(
        (
            cur.total.total_bytes * GUIDE_PAGED_ATTENTION_SAVING[0],
            cur.total.total_bytes * GUIDE_PAGED_ATTENTION_SAVING[1],
        )
    )
    pa_cap = (
        f"; capped at the whole KV cache ({_gib(kv_cur)}): PagedAttention can save no more than the cache it pages"
        if pa != pa_claim
        else ""
    )
    items = (
        Optimization(
            "FlashAttention",
            fa,
            (-(-fa[0] // n), -(-fa[1] // n)),
            "guide claim",
            "on by default in vLLM; check the attention backend in the startup log",
            f"The guide claims 20–35 % less activation memory; on {_gib(act)} of activation that is "
            f"{_range_gib(fa)} (a claim, not derived).",
        ),
        Optimization(
            "PagedAttention",
            pa,
            (-(-pa[0] // n), -(-pa[1] // n)),
            "guide claim",
            "native in vLLM (its block allocator); nothing to switch on",
            f"The guide claims 5–12 % of total VRAM; on this plan's {_gib(cur.total.total_bytes)} that is "
            f"{_range_gib(pa_claim)}{pa_cap} (a claim, not derived: k3lib already sizes the KV cache "
            "exactly).",
        ),
        Optimization(
            "FP8 KV cache",
            (kv_total, kv_total),
            (kv_gpu, kv_gpu),
            "derived",
            "--kv-cache-dtype fp8 (vLLM); check 'kv_cache_dtype=fp8' in the log",
            f"Halving {_gib(bf.total.kv_cache_bytes)} of BF16 KV at {format_context(cur.context_tokens)} "
            f"saves {_gib(kv_total)} ({_gib(kv_gpu)} per GPU).",
        ),
    )
    reason = (
        "FP8 KV is derived from the model; the FlashAttention and PagedAttention figures are the guide's "
        "percentages applied to this plan."
    )
    return Optimizations(items, reason)


# ----------------------------------------------------------------- step 5


@dataclass(frozen=True)
class Trial:
    max_model_len: int
    loads: bool


@dataclass(frozen=True)
class TestSequence:
    """Step 5: the ``max_model_len`` values to try, with the predicted outcome of each."""

    __test__ = False  # not a pytest test class

    target_context_tokens: int
    predicted_max_context_tokens: int
    trials: tuple[Trial, ...]
    final_max_model_len: int
    reason: str

    step = 5
    title = "Test at 50 %"

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(t.max_model_len for t in self.trials)

    @property
    def figure(self) -> str:
        return " → ".join(f"{format_context(t.max_model_len)} {'loads' if t.loads else 'OOM'}" for t in self.trials)


def step5_test_sequence(
    *,
    target_context_tokens: int,
    predicted_max_context_tokens: int,
    step_tokens: int = CONTEXT_STEP_TOKENS,
    max_trials: int = 16,
) -> TestSequence:
    """The guide's "test at 50 %": start at half the target; if it loads, double (up to
    the target); if it OOMs, reduce by 25 % (rounded down to ``step_tokens``) and retry;
    after an OOM the first load is the answer. Outcomes are predicted from
    ``predicted_max_context_tokens`` (step 3).

    >>> s = step5_test_sequence(target_context_tokens=262144, predicted_max_context_tokens=204800)
    >>> [format_context(v) for v in s.values], format_context(s.final_max_model_len)
    (['128K', '256K', '192K'], '192K')
    """
    target = parse_context_tokens(target_context_tokens, "context")
    pred = int(predicted_max_context_tokens)
    v = max(step_tokens, (target // 2) // step_tokens * step_tokens)
    trials: list[Trial] = []
    oom_seen = False
    if pred < step_tokens:  # nothing loads: one failed try says so
        trials.append(Trial(v, False))
    while pred >= step_tokens and len(trials) < max_trials:
        loads = v <= pred
        trials.append(Trial(v, loads))
        if loads:
            if oom_seen or v >= target:
                break
            v = min(2 * v, target)
        else:
            oom_seen = True
            nv = (v * 3 // 4) // step_tokens * step_tokens
            if nv < step_tokens:
                break
            v = nv
    final = max((t.max_model_len for t in trials if t.loads), default=0)
    if final >= target:
        runs = f"{len(trials)} run{'s' if len(trials) > 1 else ''}"
        reason = f"{format_context(target)} is predicted to load (max {format_context(pred)}); {runs} confirm it."
    elif final:
        reason = (
            f"The prediction caps context at {format_context(pred)}, so the sequence settles at "
            f"{format_context(final)} below the {format_context(target)} target."
        )
    else:
        reason = "Nothing is predicted to load at any tried length: fix the weights or add GPUs first."
    return TestSequence(target, pred, tuple(trials), final, reason)


# ----------------------------------------------------------------- step 6


@dataclass(frozen=True)
class Throughput:
    """Step 6: the bandwidth ceiling on decode speed, and the guide's 5 tok/s check."""

    active_weight_bytes: int
    kv_read_bytes: int
    bytes_per_token: int
    bandwidth_bytes_per_s: int
    tokens_per_s: float
    threshold_tokens_per_s: float
    ceiling_below_threshold: bool
    interconnect: str
    command: str
    reason: str
    #: the serving model's decode speed at this context and batch (:mod:`k3lib.serving`), its basis
    #: ("fitted model": efficiencies fitted on measured runs) and held-aside error; None for a guide
    #: profile (no layer shapes) — then only the ceiling is shown
    expected_tokens_per_s: float | None = None
    expected_basis: str | None = None
    expected_error_pct: float | None = None

    step = 6
    title = "Benchmark throughput"

    @property
    def figure(self) -> str:
        if self.expected_tokens_per_s is None:
            return f"≤ {self.tokens_per_s:,.1f} tok/s (bandwidth ceiling)"
        err = f", ±{self.expected_error_pct:.0f} % on held-aside runs" if self.expected_error_pct is not None else ""
        return (
            f"≈ {self.expected_tokens_per_s:,.1f} tok/s ({self.expected_basis}{err}); ceiling {self.tokens_per_s:,.1f}"
        )


def active_weight_bytes(model: str | ModelSpec, weights: str) -> int:
    """Bytes of weights read per decoded token.

    Architecture: every group but the input embedding (a lookup) and the routed
    experts, plus $k/E$ of the routed experts, each at its own bits. Profile: the
    active parameter count (guide 004's 104B for K3 when the profile has none) × bits/8.

    >>> active_weight_bytes("kimi-k3@guide-000", "q4") / 1e9
    58.5
    """
    spec = _spec(model)
    fmt, published, _ = resolve_weights(spec, weights)
    if isinstance(spec, PublishedProfile):
        if fmt.is_native:
            raise K3InputError("weights", f"{spec.id} publishes per-tier figures; pick one", ", ".join(spec.tiers))
        active = spec.params_active or guide004_active_params()
        return int(round(active * fmt.bits / 8))
    bits = weight_bits_by_group(spec, fmt)
    groups = spec.param_groups()
    m = spec.mlp
    frac = (m.experts_per_token / m.n_routed_experts) if m.n_routed_experts else 0.0
    total = 0.0
    for g, n in groups.items():
        if g == "embedding":
            continue
        b = bits.get(g, bits.get("*", 16))
        total += (n * frac if g == "routed_experts" else n) * b / 8
    if published:  # a published file: the same share of its exact bytes
        total *= published / weights_bytes(spec, fmt)
    return int(math.ceil(total))


def step6_throughput(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    gpus: object,
    weights: str,
    kv_dtype: str,
    context: object,
    nodes: object = None,
    batch: object = 1,
    assumptions: Assumptions | None = None,
) -> Throughput:
    """Decode ceiling $r = B · TP·bw / (W_{active} + KV_{read})$ tokens/s.

    Each token reads the active weights and the whole KV cache once. Under TP the
    ranks read in parallel; pipeline stages run one after another for one sequence,
    so the bandwidth that counts is $TP·bw$. $KV_{read}$ is what all GPUs read,
    replicated copies included. This is a ceiling: real decode is lower.

    >>> t = step6_throughput(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", kv_dtype="fp8",
    ...                      context="256K")
    >>> round(t.tokens_per_s)
    216
    """
    a = _a(assumptions, _spec(model))
    return throughput_for_plan(
        make_plan(
            model=model,
            gpu=gpu,
            gpus=gpus,
            nodes=nodes,
            weights=weights,
            kv_dtype=kv_dtype,
            context=context,
            batch=batch,
            assumptions=a,
        )
    )


def throughput_for_plan(plan) -> Throughput:
    """Step 6 for a :class:`~k3lib.core.plan.Plan` already built (see :func:`step6_throughput`).
    $KV_{read}$ is the cache summed over every GPU (replicated copies included)."""
    w_act = active_weight_bytes(plan.model, plan.weight_format)
    kv_read = plan.total.kv_cache_bytes
    per_tok = w_act + kv_read
    bw = plan.tp * plan.gpu.memory_bw_bytes_per_s
    rate = plan.batch * bw / per_tok
    below = rate < GUIDE_MIN_TOKENS_PER_S
    links = []
    if plan.nodes > 1:
        links.append(f"pipeline stages cross {plan.nodes} nodes over the network")
    if plan.gpu.scale_up_link_bytes_per_s is None and plan.tp > 1:
        links.append(f"{plan.gpu.id} has no NVLink-class link, so TP all-reduces go over PCIe")
    interconnect = "; ".join(links) or "TP inside one NVLink domain"
    pp_note = f" (PP={plan.pp}: stages take turns)" if plan.pp > 1 else ""
    if below:
        reason = (
            f"{w_act / GB:,.1f} GB of active weights + {kv_read / GB:,.1f} GB of KV per token over "
            f"{bw / GB * 1e-3:,.1f} TB/s{pp_note} caps decode at {rate:,.2f} tok/s — below the guide's "
            f"{GUIDE_MIN_TOKENS_PER_S:g} tok/s from bandwidth alone, so the interconnect is not the cause."
        )
    else:
        reason = (
            f"{w_act / GB:,.1f} GB of active weights + {kv_read / GB:,.1f} GB of KV per token over "
            f"{bw / GB * 1e-3:,.1f} TB/s{pp_note} allow at most {rate:,.0f} tok/s; if you measure under "
            f"{GUIDE_MIN_TOKENS_PER_S:g} tok/s, suspect the interconnect ({interconnect}) and run "
            f"nvidia-smi topo -m."
        )
    expected = basis = err = None
    if not isinstance(plan.model, PublishedProfile) and plan.fits:
        from k3lib.serving import serving_estimate  # the serving layer (lazy: it reads the studies)

        engine = plan.engine_id if plan.engine_id not in ("generic", "guide") else "vllm"
        try:
            # the batch decoding through the whole context (no prompt to prefill, so no prefill
            # stalls the steps; the mean context is half the window): the generation rate step 6 asks about
            est = serving_estimate(
                plan, engine=engine, concurrency=plan.batch, input_tokens=0, output_tokens=max(1, plan.context_tokens)
            )
        except K3InputError:
            est = None
        if est is not None and est.decode_tokens_per_s_per_sequence.value is not None:
            f = est.decode_tokens_per_s_per_sequence
            expected, basis, err = f.value * plan.batch, f.basis, f.expected_error_pct
            reason += (
                f" The serving model expects ≈ {expected:,.1f} tok/s here ({basis}"
                + (f", ±{err:.0f} % on runs it was not fitted on" if err is not None else "")
                + f"; {engine}; {plan.batch} sequence(s) generating through the {plan.context_tokens:,}-token "
                f"context), {expected / rate:.0%} of the ceiling."
            )
    return Throughput(
        w_act,
        kv_read,
        per_tok,
        bw,
        rate,
        GUIDE_MIN_TOKENS_PER_S,
        below,
        interconnect,
        "nvidia-smi topo -m",
        reason,
        expected,
        basis,
        err,
    )


# ----------------------------------------------------------------- step 7


@dataclass(frozen=True)
class AddOneGPU:
    """Step 7: the fewest deployable GPUs that fit, and the production count: the guide's
    "add one GPU", read as the next deployable count (past one node: one more node)."""

    weights: str | None
    kv_dtype: str
    context_tokens: int
    needed_gpus: int | None
    recommended_gpus: int | None
    layout: tuple[int, int] | None
    reason: str

    step = 7
    title = "Add one GPU"

    @property
    def figure(self) -> str:
        if self.needed_gpus is None:
            return "no count fits"
        return f"{self.needed_gpus} needed → buy {self.recommended_gpus}"


def step7_add_one_gpu(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec,
    weights: str | None,
    kv_dtype: str,
    context: object,
    batch: object = 1,
    max_gpus: int = 256,
    assumptions: Assumptions | None = None,
    engine: str | EngineSettings | None = None,
    source: str | ModelSpec | LoadedModel | None = None,
) -> AddOneGPU:
    """Fewest deployable GPUs at these precisions and context (:func:`min_gpus`, one sweep),
    then the next deployable count: one more GPU inside a node, one more node past it.

    >>> step7_add_one_gpu(model="kimi-k3@guide-000", gpu="h100", weights="q4", kv_dtype="fp8",
    ...                   context="256K").figure
    '6 needed → buy 7'
    """
    spec, hw = _spec(model), _hw(gpu)
    target = parse_context_tokens(context, "context")
    kid = get_kv_dtype(kv_dtype).id
    if weights is None:
        return AddOneGPU(None, kid, target, None, None, None, "No precision chosen in step 2, so no count to round up.")
    w = weights
    eid = str(getattr(engine, "engine", engine or "generic")).lower()
    if engine is not None and eid not in ("generic", "guide") and not isinstance(spec, PublishedProfile):
        from k3lib.studies.solver import cheapest_configuration

        cheap = cheapest_configuration(
            model=source or spec,
            gpu=hw,
            context=target,
            weights=[w],
            kv_dtypes=[kid],
            batch=batch,
            max_gpus=min(max_gpus, 64),
            engine=engine,
        )
        need = cheap.gpus if cheap is not None else None
        max_gpus = min(max_gpus, 64)
    else:
        need = min_gpus(
            model=spec,
            gpu=hw,
            weights=w,
            kv_dtype=kid,
            context=target,
            max_gpus=max_gpus,
            batch=batch,
            assumptions=assumptions,
        )
    if need is None:
        return AddOneGPU(
            w,
            kid,
            target,
            None,
            None,
            None,
            f"No deployable count up to {max_gpus} {hw.id} holds {w} + {kid} KV at {format_context(target)}.",
        )
    rec = next_gpu_count(spec, hw, at_least=need + 1)
    lay = make_plan(
        model=spec,
        gpu=hw,
        gpus=rec,
        weights=w,
        kv_dtype=kid,
        context=target,
        batch=batch,
        assumptions=_a(assumptions, spec),
    ).layout
    reason = (
        f"{need} {hw.id} hold {w} + {kid} KV at {format_context(target)}; the guide's production rule "
        f"adds one GPU, and the next count you can deploy is {rec} ({lay.describe()})."
    )
    return AddOneGPU(w, kid, target, need, rec, (lay.tp, lay.pp), reason)


def _weights_size(spec: ModelSpec, weights: str) -> int:
    """Weight bytes of a format or a published checkpoint (its file size)."""
    fmt, published, _ = resolve_weights(spec, weights)
    return published or weights_bytes(spec, fmt)
