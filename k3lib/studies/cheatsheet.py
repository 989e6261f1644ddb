"""The cheat sheets and the optimization priority matrix, read from the vectorized sweep
(the same bytes as :func:`k3lib.core.plan.make_plan`): max context by hardware and GPU
count (deployable counts only: one node, then whole nodes), the fewest GPUs by precision,
and what each of the guide's levers saves here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec
from k3lib.core.models import ModelSpec, get_architecture, get_model
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.precisions import get_kv_dtype
from k3lib.core.search import candidate_gpu_counts
from k3lib.core.units import GiB, parse_context_tokens, parse_positive_int
from k3lib.studies.solver import (
    CHEATSHEET_GPUS,
    CHEATSHEET_MAX_GPUS,
    CONTEXT_STEP_TOKENS,
    GUIDE_FLASH_ATTENTION_SAVING,
    GUIDE_PAGED_ATTENTION_SAVING,
    _a,
    _gib,
    _grid,
    _hw,
    _spec,
    capped_claim_bytes,
    context_grid,
    format_context,
    min_gpus,
    precision_ladder,
)
from k3lib.studies.steps import _weights_size

# ----------------------------------------------------------------- cheat sheets


def cheatsheet(
    *,
    model: str | ModelSpec,
    gpus: Sequence[str] = CHEATSHEET_GPUS,
    max_gpus: int = CHEATSHEET_MAX_GPUS,
    precisions: Sequence[str] | None = None,
    kv_dtype: str = "fp8",
    engine: str = "vllm",
    batch: object = 1,
    step_tokens: int = CONTEXT_STEP_TOKENS,
    assumptions: Assumptions | None = None,
):
    """ "GPU configuration cheat sheet: max context by hardware": one row per GPU × deployable
    count (one node, then whole nodes, up to ``max_gpus``), one column per checkpoint the
    engine can load; a cell is the largest context (1K-token grid up to the model's maximum)
    that fits, empty (``<NA>``) where the model will not load. One sweep per GPU.

    >>> df = cheatsheet(model="kimi-k3@guide-000", gpus=["h100-sxm"])
    >>> row = df[df.gpus == 6].iloc[0]
    >>> format_context(row["q4"]), bool(df[(df.gpus == 8)]["bf16"].isna().all()), sorted(set(df.gpus))[-3:]
    ('775K', True, [16, 24, 32])
    """
    import pandas as pd

    from k3lib.core.models import PublishedProfile
    from k3lib.studies.solver import _checkpoint_engine, _engine_id, _is_engine

    spec = _spec(model)
    a = _a(assumptions, spec)
    hws = [_hw(g) for g in gpus]
    eid = _engine_id(engine)
    ws = tuple(
        precisions
        or precision_ladder(model if hasattr(model, "require_architecture") else spec, _checkpoint_engine(engine))
    )
    kid = get_kv_dtype(kv_dtype).id
    n_batch = parse_positive_int(batch, "batch")
    ctx = context_grid(spec, step_tokens)
    by_engine = _is_engine(engine) and not isinstance(spec, PublishedProfile)
    frames = []
    for hw in hws:
        counts = candidate_gpu_counts(spec, hw, max_gpus=parse_positive_int(max_gpus, "max_gpus"))
        if not counts:
            continue
        if by_engine:  # the engine's own limit per cell (its rules decide), not k3lib's sweep
            mx, layouts = _engine_max_contexts(model, hw, counts, ws, kid, n_batch, engine, step_tokens)
            part = pd.DataFrame(
                {
                    "gpu": hw.id,
                    "gpus": list(counts),
                    "nodes": [lay.nodes for lay in layouts],
                    "tp": [lay.tp for lay in layouts],
                    "pp": [lay.pp for lay in layouts],
                }
            )
            for pi, w in enumerate(ws):
                col = pd.array(mx[:, pi], dtype="Int64")
                col[col == 0] = pd.NA
                part[w] = col
            frames.append(part)
            continue
        grid = _grid(spec, hw, counts, ws, [kid], ctx, batch=n_batch, assumptions=a)
        mx = grid.max_context()[:, :, 0]  # [N, P]
        part = pd.DataFrame(
            {
                "gpu": hw.id,
                "gpus": list(counts),
                "nodes": [lay.nodes for lay in grid.layouts],
                "tp": [lay.tp for lay in grid.layouts],
                "pp": [lay.pp for lay in grid.layouts],
            }
        )
        for pi, w in enumerate(grid.weights):
            col = pd.array(mx[:, pi], dtype="Int64")
            col[col == 0] = pd.NA
            part[w] = col
        frames.append(part)
    df = pd.concat(frames, ignore_index=True)
    df.insert(
        0, "config", [f"{g} {m}×{n // m}" if m > 1 else f"{g} ×{n}" for g, n, m in zip(df.gpu, df.gpus, df.nodes)]
    )
    basis = f"by {eid}'s rules" if by_engine else "by k3lib's component model"
    df.attrs.update(
        model=spec.id,
        kv_dtype=kid,
        batch=n_batch,
        step_tokens=step_tokens,
        precisions=ws,
        engine=eid,
        note=(
            f"max context (tokens) at {kid} KV, batch {n_batch}, 1K-token grid up to "
            f"{format_context(spec.max_context_tokens)}, {basis}; deployable layouts only (TP inside a "
            f"node, PP across whole nodes); weights the {eid} engine can load; empty = will not load"
        ),
    )
    return df


def _engine_max_contexts(model, hw, counts, ws, kid, batch, engine, step_tokens):
    """[count, weights] → the engine's longest context (0 = does not load), and each count's layout."""
    from k3lib.engines.deployment import EngineSettings, engine_max_context_tokens, plan_for_engine

    settings = engine if isinstance(engine, EngineSettings) else EngineSettings(str(engine))
    out = np.zeros((len(counts), len(ws)), dtype=np.int64)
    layouts = []
    for i, n in enumerate(counts):
        lay = None
        for j, w in enumerate(ws):
            try:
                p = plan_for_engine(
                    model=model,
                    engine=settings,
                    gpu=hw,
                    gpus=n,
                    weights=w,
                    kv_dtype=kid,
                    context=step_tokens,
                    batch=batch,
                    with_limits=False,
                )
            except K3InputError:
                continue
            lay = lay or p.layout
            out[i, j] = engine_max_context_tokens(model, p, settings, weights=w, kv_dtype=kid, step_tokens=step_tokens)
        if lay is None:
            from k3lib.core.layout import choose_layout

            lay = choose_layout(_spec(model), gpus=n, gpus_per_node=hw.gpus_per_node)
        layouts.append(lay)
    return out, layouts


def cheatsheet_gpus(gpu: str | GPUSpec | None = None) -> tuple[str, ...]:
    """The cheat sheet's GPUs, with ``gpu`` first when it is not one of them.

    >>> cheatsheet_gpus("a100")
    ('a100-sxm-80gb', 'h100-sxm', 'h200-sxm', 'b200', 'mi300x')
    """
    first = [_hw(gpu).id] if gpu is not None else []
    return tuple(dict.fromkeys([*first, *CHEATSHEET_GPUS]))


def cheatsheet_display(df, *, gpu: str | GPUSpec | None = None):
    """The cheat sheet with cells as ``256K`` labels and blanks where the model will not load
    (only ``gpu``'s rows when given)."""
    import pandas as pd

    out = df.copy()
    if gpu is not None:
        out = out[out["gpu"] == _hw(gpu).id].reset_index(drop=True)
    for col in df.attrs.get("precisions", ()):
        out[col] = ["" if pd.isna(v) else format_context(v) for v in out[col]]
    return out


def _isna(v) -> bool:
    import pandas as pd

    return bool(pd.isna(v))


def optimal_gpu_counts(
    *,
    model: str | ModelSpec,
    gpu: str | GPUSpec = "h100-sxm",
    contexts: Sequence[object] = ("64K", "128K", "256K", "512K", "1M"),
    kv_dtype: str = "fp8",
    precisions: Sequence[str] | None = None,
    max_gpus: int = 64,
    batch: object = 1,
    assumptions: Assumptions | None = None,
):
    """ "Optimal GPU counts by precision": the fewest deployable GPUs per precision and
    context, and the production count (the next deployable count: the guide's "+1"). One sweep.

    >>> df = optimal_gpu_counts(model="kimi-k3@guide-000", contexts=["256K"])
    >>> int(df.loc["q4", ("256K", "minimum")]), int(df.loc["q4", ("256K", "production (next count)")])
    (6, 7)
    """
    import pandas as pd

    spec, hw = _spec(model), _hw(gpu)
    a = _a(assumptions, spec)
    ws = tuple(precisions or precision_ladder(spec))
    ctx = [parse_context_tokens(c, "contexts") for c in contexts]
    kid = get_kv_dtype(kv_dtype).id
    counts = np.asarray(candidate_gpu_counts(spec, hw, max_gpus=int(max_gpus)))
    grid = _grid(spec, hw, counts.tolist(), ws, [kid], ctx, batch=parse_positive_int(batch, "batch"), assumptions=a)
    fits = grid.fits[:, :, 0, :]  # [N, P, C]
    first = np.argmax(fits, axis=0)  # [P, C]
    has = np.asarray(fits.any(axis=0))
    nxt = np.minimum(first + 1, len(counts) - 1)
    cols, data = [], []
    grid_ctx = list(grid.contexts)
    for c in ctx:
        ci = grid_ctx.index(c)
        for kind, idx in (("minimum", first), ("production (next count)", nxt)):
            cols.append((format_context(c), kind))
            data.append([int(counts[idx[p, ci]]) if has[p, ci] else None for p in range(len(ws))])
    df = pd.DataFrame({col: pd.array(vals, dtype="Int64") for col, vals in zip(cols, data)}, index=list(grid.weights))
    df.columns = pd.MultiIndex.from_tuples(cols, names=["context", "GPUs"])
    df.index.name = "weights"
    df.attrs.update(
        model=spec.id,
        gpu=hw.id,
        kv_dtype=kid,
        note=f"{hw.id}, {kid} KV, deployable counts; empty = more than {max_gpus}",
    )
    return df


# ----------------------------------------------------------------- priority matrix

#: The guide's levers in its recommended order: FlashAttention and PagedAttention (on by
#: default), FP8 KV, then max_model_len, then weight precision; CPU offload and batch 1
#: follow in its list's order ("Optimization Priority Matrix" and "7 Ways").
PRIORITY_LEVERS = (
    ("FlashAttention", "none: on by default in vLLM", "none"),
    ("PagedAttention", "none: vLLM's native allocator", "none"),
    ("FP8 KV cache", "one flag: --kv-cache-dtype fp8", "negligible (guide)"),
    ("shorter context", "one flag: --max-model-len", "none while prompts fit; longer prompts are rejected"),
    ("lower precision", "a new checkpoint to download and validate", "Q8 none, Q4 minor, Q2 significant (guide)"),
    ("CPU offload", "flags; emergency only (guide)", "none in output; 10–100× slower generation (guide)"),
    ("batch 1", "one flag: --max-num-seqs 1", "none; fewer concurrent requests"),
)


def _claim_note(claim: str, fractions: Sequence[float], of_bytes: float, cap_bytes: float, cap_name: str) -> str:
    """The row note of a guide-claim lever; names the cap where the claim is over it."""
    lo, hi = (f * of_bytes for f in fractions)
    if hi <= cap_bytes:
        return f"{claim} (guide)"
    which = "exceeds" if lo > cap_bytes else "at its high end exceeds"
    return (
        f"the guide's {claim} ({lo / GiB:,.2f}–{hi / GiB:,.2f} GiB) {which} the whole {cap_name} here; "
        f"capped at {cap_bytes / GiB:,.2f} GiB (a lever cannot save more than the {cap_name})"
    )


def _lower_precision(spec: ModelSpec, weights: str) -> str | None:
    ladder = precision_ladder(spec)
    w = weights
    size = _weights_size(spec, w)
    below = ladder[ladder.index(w) + 1 :] if w in ladder else ladder
    for x in below:
        if _weights_size(spec, x) < size:
            return x
    return None


def _shorter_context_tokens(context_tokens: int, shorter_context: object | None) -> int:
    """The priority matrix's "shorter context": ``shorter_context`` when given (it must be
    shorter than the plan's context, else :class:`K3InputError` naming ``shorter_context``),
    otherwise half the plan's context, $\\max(1, \\lfloor T/2 \\rfloor)$.

    >>> _shorter_context_tokens(8192, None), _shorter_context_tokens(512, None), _shorter_context_tokens(8192, "2K")
    (4096, 256, 2048)
    """
    if shorter_context is None:
        return max(1, context_tokens // 2)
    short = parse_context_tokens(shorter_context, "shorter_context")
    if short >= context_tokens:
        raise K3InputError(
            "shorter_context",
            f"{shorter_context!r} is not shorter than the plan's context ({context_tokens:,} tokens)",
            f"1 … {context_tokens - 1:,} tokens",
        )
    return short


def _routed_fraction(spec: ModelSpec) -> float:
    """Share of the weights in routed experts (K3's architecture stands in for a profile)."""
    arch = spec if isinstance(spec, Architecture) else get_architecture("kimi-k3")
    g = arch.param_groups()
    return g["routed_experts"] / sum(g.values())


def priority_matrix(plan: Plan, *, shorter_context: object | None = None, max_gpus: int = 64):
    """ "Optimization priority matrix" for one configuration: each lever in the guide's
    order with the memory it saves here (per GPU and in total, GiB; a low–high range
    for the guide's percentage claims), the GPUs it saves (a vectorized :func:`min_gpus`
    per lever), its effort and quality cost, and whether the figure is derived or a claim.

    ``shorter_context`` defaults to half the plan's context. CPU offload's figure is
    the routed-expert weights (all of them moved to RAM), an upper bound.

    No lever saves more than the memory it acts on, and none saves less than zero:
    FlashAttention ≤ the activation, PagedAttention ≤ the KV cache (the guide's "5–12 % of
    total VRAM" is capped there, and the note says so), FP8 KV ≤ half the BF16 cache,
    a shorter context ≤ the KV cache, lower precision and CPU offload ≤ the weights,
    batch 1 ≤ the total.
    """
    import pandas as pd

    plan = plan.core()  # the levers re-plan with make_plan: compare like with like (k3lib's model)
    spec = plan.model
    a = plan.assumptions
    n = plan.gpus
    common: dict[str, Any] = dict(model=spec, gpu=plan.gpu, layout=plan.layout, assumptions=a)
    short = _shorter_context_tokens(plan.context_tokens, shorter_context)

    def need(weights=plan.weight_format, kv=plan.kv_dtype, ctx=plan.context_tokens, batch=plan.batch):
        return min_gpus(
            model=spec,
            gpu=plan.gpu,
            weights=weights,
            kv_dtype=kv,
            context=ctx,
            batch=batch,
            max_gpus=max_gpus,
            assumptions=a,
        )

    base_need = need()

    def saved_gpus(k):
        if base_need is None or k is None:
            return None
        return base_need - k

    rows: list[tuple[str, Sequence[float], str, int | None, str]] = []
    # FlashAttention, PagedAttention: the guide's percentages, capped at what they act on
    # (the activation; the KV cache, whose fragmentation is all PagedAttention can save).
    act, tot, kv = plan.total.activation_bytes, plan.total.total_bytes, plan.total.kv_cache_bytes
    fa = capped_claim_bytes(GUIDE_FLASH_ATTENTION_SAVING, act, act)
    pa = capped_claim_bytes(GUIDE_PAGED_ATTENTION_SAVING, tot, kv)
    rows.append(
        (
            "FlashAttention",
            fa,
            "guide claim",
            None,
            _claim_note("20–35 % of activation", GUIDE_FLASH_ATTENTION_SAVING, act, act, "activation"),
        )
    )
    rows.append(
        (
            "PagedAttention",
            pa,
            "guide claim",
            None,
            _claim_note("5–12 % of total VRAM", GUIDE_PAGED_ATTENTION_SAVING, tot, kv, "KV cache"),
        )
    )
    # FP8 KV: what FP8 saves against BF16 (at most half the BF16 cache), whatever the plan's dtype.
    bf = (
        plan
        if plan.kv_dtype == "bf16"
        else make_plan(
            weights=plan.weight_format, kv_dtype="bf16", context=plan.context_tokens, batch=plan.batch, **common
        )
    )
    f8 = (
        plan
        if plan.kv_dtype == "fp8"
        else make_plan(
            weights=plan.weight_format, kv_dtype="fp8", context=plan.context_tokens, batch=plan.batch, **common
        )
    )
    s = [bf.total.kv_cache_bytes - f8.total.kv_cache_bytes] * 2
    if plan.kv_dtype == "bf16":
        g = saved_gpus(need(kv="fp8"))
        note = f"BF16 → FP8 KV at {format_context(plan.context_tokens)}"
    else:
        k_bf = need(kv="bf16")
        k_f8 = base_need if plan.kv_dtype == "fp8" else need(kv="fp8")
        g = (k_bf - k_f8) if (k_bf is not None and k_f8 is not None) else None
        note = f"already {plan.kv_dtype}; shown: what FP8 saves against BF16 KV"
    rows.append(("FP8 KV cache", s, "derived", g, note))
    # shorter context (a shorter context can only save KV; never a negative saving)
    if short >= plan.context_tokens:
        rows.append(
            (
                "shorter context",
                [0, 0],
                "derived",
                0,
                f"{format_context(plan.context_tokens)} is already the shortest context",
            )
        )
    else:
        sp = make_plan(weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=short, batch=plan.batch, **common)
        rows.append(
            (
                "shorter context",
                [plan.total.kv_cache_bytes - sp.total.kv_cache_bytes] * 2,
                "derived",
                saved_gpus(need(ctx=short)),
                f"{format_context(plan.context_tokens)} → {format_context(short)}",
            )
        )
    # lower precision
    low = _lower_precision(spec, plan.weight_format)
    if low is None:
        rows.append(("lower precision", [0, 0], "derived", 0, f"{plan.weight_format} is already the lowest tier"))
    else:
        ws = _weights_size(spec, plan.weight_format) - _weights_size(spec, low)
        rows.append(
            ("lower precision", [ws, ws], "derived", saved_gpus(need(weights=low)), f"{plan.weight_format} → {low}")
        )
    # CPU offload: routed experts to RAM (upper bound)
    frac = _routed_fraction(spec)
    off = plan.total.weights_bytes * frac
    rows.append(
        (
            "CPU offload",
            [0, off],
            "derived (upper bound)",
            None,
            f"up to all routed experts ({frac:.0%} of the weights) in RAM",
        )
    )
    # batch 1
    if plan.batch > 1:
        b1 = make_plan(
            weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=plan.context_tokens, batch=1, **common
        )
        s = [plan.total.total_bytes - b1.total.total_bytes] * 2
        rows.append(("batch 1", s, "derived", saved_gpus(need(batch=1)), f"batch {plan.batch} → 1"))
    else:
        b4 = make_plan(
            weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=plan.context_tokens, batch=4, **common
        )
        rows.append(
            (
                "batch 1",
                [0, 0],
                "derived",
                0,
                f"already batch 1; batch 4 would add {_gib(b4.total.total_bytes - plan.total.total_bytes)}",
            )
        )
    meta = {name: (effort, quality) for name, effort, quality in PRIORITY_LEVERS}
    out = []
    for order, (name, (lo, hi), basis, g, note) in enumerate(rows, start=1):
        effort, quality = meta[name]
        out.append(
            {
                "order": order,
                "lever": name,
                "saved per GPU, low (GiB)": lo / n / GiB,
                "saved per GPU, high (GiB)": hi / n / GiB,
                "saved in total, low (GiB)": lo / GiB,
                "saved in total, high (GiB)": hi / GiB,
                "GPUs saved": g,
                "basis": basis,
                "effort": effort,
                "quality cost": quality,
                "note": note,
            }
        )
    df = pd.DataFrame(out)
    df["GPUs saved"] = pd.array(df["GPUs saved"].tolist(), dtype="Int64")
    for col in df.columns[2:6]:
        df[col] = df[col].astype(float)
    df.attrs.update(
        model=spec.id,
        gpu=plan.gpu.id,
        gpus=n,
        weights=plan.weight_format,
        kv_dtype=plan.kv_dtype,
        context_tokens=plan.context_tokens,
        per_gpu_total_bytes=plan.per_gpu.total_bytes,
        min_gpus=base_need,
    )
    return df


@dataclass(frozen=True)
class OrderCheck:
    """Does the guide's order (FP8 KV first, precision last) pay off for this model?"""

    holds: bool
    fp8_kv_saved_bytes_per_gpu: float
    fp8_kv_share_of_gpu: float
    fp8_kv_gpus_saved: int | None
    lower_precision_saved_bytes_per_gpu: float
    lower_precision_gpus_saved: int | None
    findings: tuple[str, ...]


def _n_gpus(g: int | None) -> str:
    if g is None:
        return "an unknown number of GPUs"
    return "no GPU" if g == 0 else f"{g} GPU{'s' if abs(g) != 1 else ''}"


def check_priority_order(matrix) -> OrderCheck:
    """The guide calls FP8 KV "the single highest-impact, lowest-effort optimization"
    ("enough to drop from 10 GPUs to 8"). The order holds here when FP8 KV (a free,
    one-flag lever) saves at least one GPU; the findings give the figures either way.
    """
    row = matrix.set_index("lever")
    per_gpu_total = matrix.attrs.get("per_gpu_total_bytes") or 1
    f8 = float(row.loc["FP8 KV cache", "saved per GPU, high (GiB)"]) * GiB
    f8_g = row.loc["FP8 KV cache", "GPUs saved"]
    f8_g = None if _isna(f8_g) else int(f8_g)
    lp = float(row.loc["lower precision", "saved per GPU, high (GiB)"]) * GiB
    lp_g = row.loc["lower precision", "GPUs saved"]
    lp_g = None if _isna(lp_g) else int(lp_g)
    share = f8 / per_gpu_total
    holds = bool(f8_g is not None and f8_g >= 1)
    findings = [
        f"FP8 KV saves {_gib(f8)} per GPU ({share:.1%} of the {_gib(per_gpu_total)} each GPU holds) and "
        f"{_n_gpus(f8_g)}.",
        f"Lower precision saves {_gib(lp)} per GPU and {_n_gpus(lp_g)}.",
    ]
    model = matrix.attrs.get("model", "")
    if not holds:
        spec = get_model(model) if model else None
        if isinstance(spec, Architecture):
            findings.append(
                f"{spec.name}'s KV is only {spec.kv_bytes_per_token(2):,} B/token at BF16, so the weights dominate: "
                f"the guide's order is still the order of effort, but only precision or more GPUs move the fit."
            )
        else:
            findings.append("FP8 KV is still free to switch on, but here it does not change the GPU count.")
    else:
        findings.append("The guide's order holds: the free lever buys a GPU before precision is touched.")
    return OrderCheck(holds, f8, share, f8_g, lp, lp_g, tuple(findings))
