"""Tables for the notebooks: pure functions that return pandas DataFrames.

They regenerate the tables guide 000 describes but whose text lost them (the
precision-by-precision budget, the KV table, the full reference table), and the
comparisons the workbook adds (KV per token across real models, the two guides'
weight figures, total vs active parameters).

Conventions:

* Every size column names its unit: ``kv_cache_GiB``, ``weights_GB``. One table
  uses one unit; ``unit="GiB"`` (2^30 bytes, the default) or ``unit="GB"`` (10^9).
* Sizes are rounded to 2 decimals and percentages to 1 decimal for reading; the
  exact bytes are one :func:`k3lib.core.plan.make_plan` call away.
* Guide 000's figures come from the ``kimi-k3@guide-000`` profile, read as GiB
  (its KV formula divides by 1024^3).

>>> float(kv_context_table("kimi-k3@guide-000").set_index("context").loc["256K", "fp8_GiB"])
32.0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.checkpoints import checkpoints_for
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec
from k3lib.core.memory import kv_bytes_per_token, kv_cache_bytes, weights_bytes, weights_bytes_by_group
from k3lib.core.models import ModelSpec, PublishedProfile, get_model, get_profile
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.search import min_gpus_plan
from k3lib.core.units import GB, GiB, parse_context_tokens  # noqa: F401 — re-exported as tables.*
from k3lib.views.table_format import _UNITS, _div, _label, _pct, _size, context_label  # noqa: F401 — re-exported as tables.*
from k3lib.views.tables_kv import (  # noqa: F401 — re-exported as tables.*
    KV_COMPARISON_MODELS,
    KV_TABLE_CONTEXTS,
    KV_TABLE_DTYPES,
    context_savings_table,
    kv_context_long,
    kv_context_table,
    kv_per_token_table,
    kv_worked_table,
)

# ---------------------------------------------------------------- the guide's configuration

#: guide 000's worked example: Q4 weights, FP8 KV cache, 256K context, H100 80 GB
GUIDE_000 = "kimi-k3@guide-000"
GUIDE_000_CONFIG: Mapping[str, Any] = {
    "model": GUIDE_000,
    "weights": "q4",
    "kv_dtype": "fp8",
    "context": "256K",
    "gpu": "h100-sxm",
    "batch": 1,
}
#: the worked example's own numbers: "activation = 10 GB", "overhead = 48 GB (8 GPUs × 6 GB)"
GUIDE_000_WORKED_ASSUMPTIONS = Assumptions(activation_bytes=10 * GiB, overhead_total_bytes=48 * GiB)

#: Six rows for guide 000's lost "precision-by-precision VRAM budget" table. The guide
#: publishes four weight tiers (BF16, Q8, Q4, Q2) and says the KV cache is BF16 for the
#: first two rows, FP8 for the next two and INT4 for the last two. Six rows from four tiers,
#: with no invented weight figure, is a staircase that moves one knob per row:
#: weights BF16 → Q8, then KV BF16 → FP8, weights Q8 → Q4, KV FP8 → INT4, weights Q4 → Q2.
GUIDE_000_BUDGET_ROWS: tuple[tuple[str, str], ...] = (
    ("bf16", "bf16"),
    ("q8", "bf16"),
    ("q8", "fp8"),
    ("q4", "fp8"),
    ("q4", "int4"),
    ("q2", "int4"),
)
REFERENCE_TIERS = ("bf16", "q8", "q4", "q2")
REFERENCE_CONTEXTS = ("64K", "128K", "256K", "512K", "1M")
#: KV dtype per weight tier in the reference table: BF16 weights keep a BF16 cache,
#: quantised weights use FP8. This reproduces both ends the guide's summary quotes
#: (~291 GB for Q2 at 64K, ~908 GB for BF16 at 1M).
REFERENCE_KV_RULE: Mapping[str, str] = {"bf16": "bf16", "native": "bf16", "*": "fp8"}
MOE_MODELS = ("kimi-k3", "kimi-k2", "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b")

# ---------------------------------------------------------------- one plan


def guide_000_plan(
    *, gpus: int = 6, assumptions: Assumptions | None = GUIDE_000_WORKED_ASSUMPTIONS, **overrides: Any
) -> Plan:
    """Guide 000's worked example as a :class:`~k3lib.core.plan.Plan` (Q4, FP8 KV, 256K, H100),
    with its own activation (10 GiB) and overhead (48 GiB in total) unless overridden.

    >>> round(guide_000_plan(gpus=6).total.total_bytes / 2**30, 2)
    415.0
    """
    config = {**GUIDE_000_CONFIG, **overrides}
    return make_plan(gpus=gpus, assumptions=assumptions, **config)


def plan_table(plan: Plan, *, unit: str = "GiB") -> pd.DataFrame:
    """The plan's budget: one row per component, over all GPUs and on one GPU.

    Where tensor parallelism cannot split the cache (MLA's latent: every TP rank holds it
    whole), the all-GPU KV figure counts each copy, and the row says so
    ("KV cache, copies summed"); one copy is :func:`kv_cache_bytes`.
    """
    t, g = plan.total, plan.per_gpu
    one_copy = kv_cache_bytes(
        plan.model,
        context_tokens=plan.context_tokens,
        batch=plan.batch,
        kv_dtype=get_kv_dtype(plan.kv_dtype),
        state_bytes_per_element=plan.assumptions.state_bytes_per_element,
    )
    kv_label = "KV cache, copies summed" if t.kv_cache_bytes > one_copy else "KV cache"
    rows = [
        ("weights", t.weights_bytes, g.weights_bytes),
        (kv_label, t.kv_cache_bytes, g.kv_cache_bytes),
        ("activation", t.activation_bytes, g.activation_bytes),
        ("overhead", t.overhead_bytes, g.overhead_bytes),
        ("total", t.total_bytes, g.total_bytes),
        ("available", t.available_bytes, g.available_bytes),
        ("headroom", t.headroom_bytes, g.headroom_bytes),
    ]
    return pd.DataFrame(
        {
            "component": [r[0] for r in rows],
            f"total_{unit}": [_size(r[1], unit) for r in rows],
            f"per_gpu_{unit}": [_size(r[2], unit) for r in rows],
        }
    ).set_index("component")


def one_copy_bytes(plan: Plan) -> tuple[int, int]:
    """(weights, KV cache) bytes of one copy of the model and of its cache: what the guides and
    the config count. The plan's all-GPU totals add what every GPU holds, so under TP they count
    the parts TP cannot split once per GPU: the replicated weights (norms, routers, MLA/KDA
    down-projections) and an MLA latent cache, which every TP rank holds whole."""
    one_kv = kv_cache_bytes(
        plan.model,
        context_tokens=plan.context_tokens,
        batch=plan.batch,
        kv_dtype=get_kv_dtype(plan.kv_dtype),
        state_bytes_per_element=plan.assumptions.state_bytes_per_element,
    )
    if isinstance(plan.model, PublishedProfile):  # a profile splits its published figures evenly
        return plan.total.weights_bytes, min(one_kv, plan.total.kv_cache_bytes)
    tp, spread = plan.tp, plan.tp * (plan.dp if plan.ep > 1 else 1)
    one_w = sum(
        s.weights_sharded_bytes * tp + s.weights_replicated_bytes + s.routed_experts_bytes * spread for s in plan.shares
    )
    return one_w, min(one_kv, plan.total.kv_cache_bytes)


def copies_table(plan: Plan, *, unit: str = "GiB") -> pd.DataFrame:
    """``component | one_copy | all_GPUs (copies summed) | copies beyond one``: how the all-GPU
    column of :func:`plan_table` relates to the one-copy figures (weights as shipped, the
    cache of :func:`kv_cache_bytes`). The difference is what TP replicates on every GPU.

    >>> from k3lib.core.plan import make_plan
    >>> t = copies_table(make_plan(model="kimi-k3", gpu="h100-sxm", gpus=6, weights="native", kv_dtype="fp8",
    ...                            context="256K"))
    >>> t["one_copy_GiB"].tolist()[0], t["all_GPUs_GiB"].tolist()[0]
    ('1,452.81', '1,506.32')
    """
    one_w, one_kv = one_copy_bytes(plan)
    rows = [("weights", one_w, plan.total.weights_bytes), ("KV cache", one_kv, plan.total.kv_cache_bytes)]
    d = _div(unit)
    return pd.DataFrame(
        {
            "component": [r[0] for r in rows],
            f"one_copy_{unit}": [f"{r[1] / d:,.2f}" for r in rows],
            "GPUs": [f"{plan.gpus:,}"] * len(rows),
            f"all_GPUs_{unit}": [f"{r[2] / d:,.2f}" for r in rows],
            f"copies_beyond_one_{unit}": [f"{(r[2] - r[1]) / d:,.2f}" for r in rows],
        }
    ).set_index("component")


def worked_example_table(plan: Plan, *, unit: str = "GiB") -> pd.DataFrame:
    """``param | symbol | formula | value | unit``: the one equation worked with the plan's numbers.

    $M = W + B·T·kv_{tok} + A + O$ and headroom $= G·C - M$.
    """
    m, t = plan.model, plan.total
    d = _div(unit)
    kvd = get_kv_dtype(plan.kv_dtype)
    kv_tok = kv_bytes_per_token(m, kvd)
    T, B, G = plan.context_tokens, plan.batch, plan.gpus
    cap = plan.per_gpu.available_bytes
    if isinstance(m, PublishedProfile):
        w_formula = f"published {_label(plan.weight_format)} figure ({m.guide})"
        tok_formula = f"{m.kv_bytes_per_token_bf16:,} B (BF16, published) × {kvd.bytes_per_element:g}/2"
        kv_formula = f"B·T·kv_tok / 2^30 = {B}·{T:,}·{kv_tok:,} / 2^30"
    else:
        w_formula = f"Σ params × bits / 8 over parameter groups ({plan.weight_format})"
        tok_formula = f"Σ growing layers × elements per layer × {kvd.bytes_per_element:g} B"
        kv_formula = f"B·(T·kv_tok + S) = {B}·({T:,}·{kv_tok:,} + S)"
        if t.kv_cache_bytes > kv_cache_bytes(
            m, context_tokens=T, batch=B, kv_dtype=kvd, state_bytes_per_element=plan.assumptions.state_bytes_per_element
        ):
            kv_formula += ", replicated where TP cannot split it"
    a = plan.assumptions
    if a.activation_bytes is not None:
        act_formula = "given"
    elif isinstance(m, PublishedProfile):
        act_formula = f"B × {m.activation_bytes_batch1 / d:g} {unit} ({m.guide}, batch 1)"
    else:
        act_formula = "B·C_chunk·2·(4D + 2I) + B·V·4 (one prefill chunk)"
    if a.overhead_total_bytes is not None:
        oh_formula = f"given in total: {a.overhead_total_bytes / d:g} {unit}"
    else:
        oh_formula = f"G × O_gpu = {G} × {plan.per_gpu.overhead_bytes / d:.2f} {unit}"
    rows = [
        ("weights", "W", w_formula, _size(t.weights_bytes, unit), unit),
        ("kv_per_token", "kv_tok", tok_formula, kv_tok, "B/token"),
        ("context", "T", f"{context_label(T)} = {T:,} tokens (K = 1,024)", T, "tokens"),
        ("batch", "B", "sequences served at once", B, "sequences"),
        ("kv_cache", "KV", kv_formula, _size(t.kv_cache_bytes, unit), unit),
        ("activation", "A", act_formula, _size(t.activation_bytes, unit), unit),
        ("overhead", "O", oh_formula, _size(t.overhead_bytes, unit), unit),
        ("total", "M", "W + KV + A + O", _size(t.total_bytes, unit), unit),
        (
            "available",
            "G·C",
            f"{G} × {cap / d:g} {unit} ({plan.gpu.name}, {plan.memory_basis})",
            _size(t.available_bytes, unit),
            unit,
        ),
        ("headroom", "G·C − M", "available − total (negative: over)", _size(t.headroom_bytes, unit), unit),
    ]
    df = pd.DataFrame(rows, columns=["param", "symbol", "formula", "value", "unit"])
    df["value"] = pd.Series([r[3] for r in rows], dtype=object)
    return df


def gpu_count_table(
    *,
    gpus: Iterable[int] = (5, 6),
    assumptions: Assumptions | None = GUIDE_000_WORKED_ASSUMPTIONS,
    unit: str = "GiB",
    **config: Any,
) -> pd.DataFrame:
    """The same configuration on different GPU counts (default: guide 000's 5 vs 6 H100).

    ``config`` overrides :data:`GUIDE_000_CONFIG`; ``assumptions=None`` uses the model's
    own rules (guide 000: 8 GiB of overhead per GPU).
    """
    rows = []
    for n in gpus:
        p = make_plan(gpus=n, assumptions=assumptions, **{**GUIDE_000_CONFIG, **config})
        rows.append(
            {
                "gpus": n,
                f"available_{unit}": _size(p.total.available_bytes, unit),
                f"overhead_{unit}": _size(p.total.overhead_bytes, unit),
                f"total_{unit}": _size(p.total.total_bytes, unit),
                f"headroom_{unit}": _size(p.total.headroom_bytes, unit),
                "fits": p.fits,
            }
        )
    return pd.DataFrame(rows)


def min_gpus(
    *,
    model: str | ModelSpec,
    weights: str,
    kv_dtype: str,
    context: object,
    gpu: str | GPUSpec = "h100-sxm",
    batch: int = 1,
    assumptions: Assumptions | None = None,
    max_gpus: int = 128,
    whole_nodes: bool = True,
) -> int | None:
    """Fewest GPUs on which the plan fits (:func:`k3lib.core.search.min_gpus_plan`: deployable
    counts, or any count in one pool with ``whole_nodes=False``), or ``None`` up to ``max_gpus``.

    >>> min_gpus(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K")
    6
    """
    p = min_gpus_plan(
        model=model,
        gpu=gpu,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        batch=batch,
        max_gpus=max_gpus,
        whole_nodes=whole_nodes,
        assumptions=assumptions,
    )
    return None if p is None else p.gpus


def budget_frame(
    plans: Plan | Sequence[Plan] | Mapping[str, Plan], *, per: str = "total", unit: str = "GiB"
) -> pd.DataFrame:
    """Long form for a stacked bar: ``config | component | value_<unit> | available_<unit>``.

    ``per="total"`` sums over all GPUs, ``per="gpu"`` is one GPU's share.
    """
    if per not in ("total", "gpu"):
        raise K3InputError("per", f"{per!r} is not known", "total, gpu")
    if isinstance(plans, Plan):
        plans = [plans]
    if not isinstance(plans, Mapping):
        plans = {
            f"{p.model.id} · {p.weight_format} · KV {p.kv_dtype} · {context_label(p.context_tokens)} · "
            f"{p.gpus}× {p.gpu.id}": p
            for p in plans
        }
    rows = []
    for label, p in plans.items():
        b = p.total if per == "total" else p.per_gpu
        for order, (comp, n) in enumerate(
            (
                ("weights", b.weights_bytes),
                ("KV cache", b.kv_cache_bytes),
                ("activation", b.activation_bytes),
                ("overhead", b.overhead_bytes),
            )
        ):
            rows.append(
                {
                    "config": label,
                    "component": comp,
                    "order": order,
                    f"value_{unit}": _size(n, unit),
                    f"available_{unit}": _size(b.available_bytes, unit),
                    "fits": p.fits,
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- weights


def precision_ladder_table(
    model: str | ModelSpec = GUIDE_000, *, precisions: Sequence[str] = REFERENCE_TIERS, unit: str = "GiB"
) -> pd.DataFrame:
    """Weight bytes per precision, and what each step saves: vs BF16 and vs the step before.

    ``bits_per_param`` is weight bits ÷ parameter count: for an architecture the format's
    bits (with block scales); for a guide profile what its figure implies.

    >>> float(precision_ladder_table().set_index("precision").loc["Q4", "saved_vs_bf16_pct"])
    45.3
    """
    spec = get_model(model)
    params = spec.params_total
    sizes = [weights_bytes(spec, get_weight_format(p)) for p in precisions]
    bf16 = weights_bytes(spec, get_weight_format("bf16"))
    rows = []
    for i, (p, n) in enumerate(zip(precisions, sizes)):
        rows.append(
            {
                "model": spec.id,
                "precision": _label(get_weight_format(p).id),
                "bits_per_param": round(n * 8 / params, 2),
                f"weights_{unit}": _size(n, unit),
                "saved_vs_bf16_pct": _pct(bf16 - n, bf16),
                "saved_vs_previous_pct": _pct(sizes[i - 1] - n, sizes[i - 1]) if i else 0.0,
            }
        )
    return pd.DataFrame(rows)


def weights_worked_table(
    model: str | ModelSpec = "kimi-k3", weights: str = "native", *, unit: str = "GiB"
) -> pd.DataFrame:
    """``param | formula | value | unit`` for $W = P·b_w/8$.

    For an architecture $b_w$ is the parameter-weighted mean over its groups (K3 native:
    MXFP4 routed experts at 4.25 bits, BF16 elsewhere); for a guide profile it is what
    the published figure implies for the published parameter count.
    """
    spec = get_model(model)
    fmt = get_weight_format(weights)
    n = weights_bytes(spec, fmt)
    P = spec.params_total
    if isinstance(spec, PublishedProfile):
        p_formula = f"published ({spec.guide}): {P / 1e12:g}T"
        b_formula = "implied: W·8/P (the guide prints W, not bits)"
        w_formula = f"published {_label(fmt.id)} figure"
    else:
        p_formula = "Σ parameter groups, from the config's shapes"
        if fmt.is_native:
            mix = sorted({(get_weight_format(f).bits_per_weight, f) for f in spec.native_formats.values()})
            b_formula = "Σ P_g·b_g / P: " + ", ".join(f"{f} {b:g} bits" for b, f in mix)
        else:
            b_formula = f"{fmt.name}, block scales included"
        w_formula = f"P·b_w/8 / {'2^30' if unit == 'GiB' else '10^9'}"
    rows = [
        ("P", p_formula, round(P / 1e9, 2), "10^9 params"),
        ("b_w", b_formula, round(n * 8 / P, 3), "bits/param"),
        ("W", w_formula, _size(n, unit), unit),
    ]
    df = pd.DataFrame(rows, columns=["param", "formula", "value", "unit"])
    df["value"] = pd.Series([r[2] for r in rows], dtype=object)
    return df


def precision_ladder_comparison(
    models: Sequence[str] = (GUIDE_000, "kimi-k3"), *, precisions: Sequence[str] = REFERENCE_TIERS, unit: str = "GiB"
) -> pd.DataFrame:
    """:func:`precision_ladder_table` for several models, stacked (for one chart)."""
    return pd.concat([precision_ladder_table(m, precisions=precisions, unit=unit) for m in models], ignore_index=True)


def param_groups_table(
    model: str | ModelSpec = "kimi-k3", *, weights: str = "native", unit: str = "GiB"
) -> pd.DataFrame:
    """Parameters and weight bytes per group (embedding, attention, experts, ...) of an architecture."""
    spec = get_model(model)
    if not isinstance(spec, Architecture):
        raise K3InputError(
            "model", f"{spec.id} is a published profile with no parameter groups", "an architecture such as kimi-k3"
        )
    groups = spec.param_groups()
    by_group = weights_bytes_by_group(spec, weights)
    total_p, total_b = sum(groups.values()), sum(by_group.values())
    rows = [
        {
            "group": g,
            "params_B": round(n / 1e9, 2),
            "params_pct": _pct(n, total_p),
            f"weights_{unit}": _size(by_group[g], unit),
            "weights_pct": _pct(by_group[g], total_b),
        }
        for g, n in groups.items()
        if n
    ]
    return pd.DataFrame(rows)


def moe_table(models: Sequence[str] = MOE_MODELS, *, unit: str = "GiB") -> pd.DataFrame:
    """Total vs active parameters of MoE models, and the weights that must stay resident.

    ``if_only_active_<unit>`` is what the weights would take if only the $k$ of $E$ routed
    experts a token uses had to be in memory: total − routed·(1 − k/E). The router picks
    different experts for every token, so the full ``resident_<unit>`` is what you load.
    """
    rows = []
    for mid in models:
        spec = get_model(mid)
        if not isinstance(spec, Architecture) or not spec.mlp.moe_layers:
            raise K3InputError("models", f"{mid} is not a MoE architecture")
        m = spec.mlp
        by_group = weights_bytes_by_group(spec, "native")
        resident = sum(by_group.values())
        only_active = resident - by_group["routed_experts"] * (1 - m.experts_per_token / m.n_routed_experts)
        rows.append(
            {
                "model": spec.id,
                "params_total_B": round(spec.params_total / 1e9, 1),
                "params_active_B": round(spec.params_active / 1e9, 1),
                "active_pct": _pct(spec.params_active, spec.params_total),
                "experts_E": m.n_routed_experts,
                "per_token_k": m.experts_per_token,
                "routed_share_pct": _pct(spec.param_groups()["routed_experts"], spec.params_total),
                f"resident_{unit}": _size(resident, unit),
                f"if_only_active_{unit}": _size(only_active, unit),
            }
        )
    return pd.DataFrame(rows)


def guide_weights_comparison() -> pd.DataFrame:
    """Why guide 000 (594 'GB' at BF16) and guide 004 (5,476.2 GB at FP16) disagree ~9×.

    All sizes in GB (10^9 bytes): guide 004's figures are decimal file sizes, and guide
    000's 594 is read as GiB (594·2^30 B = 637.8 GB). ``bits_per_param`` = bits ÷ 2.8T
    (or ÷ the real parameter count for rows computed from K3's config).
    """
    g0, g4, k3 = get_profile(GUIDE_000), get_profile("kimi-k3@guide-004"), get_model("kimi-k3")
    # the 4-bit row's file is unsloth's UD-Q4_K_XL (no Q4_K_M file of K3 exists): named from data/checkpoints.csv
    q4 = next(c for c in checkpoints_for(k3, "llama.cpp") if c.id == "ud-q4_k_xl")
    headline = g0.params_total
    rows = [
        (
            "guide 000: 'BF16 weights ~594 GB'",
            "MXFP4 QAT; 'unique parameters ~1/10 of 2.8T'",
            headline,
            g0.weights_bytes_by_tier["bf16"],
        ),
        (
            "guide 000's own reason: 1/10 of 2.8T at 2 B",
            "280B unique parameters × 2 bytes",
            headline // 10,
            headline // 10 * 2,
        ),
        ("guide 004: FP16 row", "'estimated from bytes per parameter'", headline, g4.weights_bytes_by_tier["fp16"]),
        ("headline: 2.8T × 2 B", "every parameter in BF16", headline, headline * 2),
        ("real K3 config, all BF16", "computed from the shapes", k3.params_total, weights_bytes(k3, "bf16")),
        (
            "real K3 config, native checkpoint",
            "MXFP4 routed experts, BF16 elsewhere",
            k3.params_total,
            weights_bytes(k3, "native"),
        ),
        (
            f"guide 004: 4-bit row ({q4.label}, {q4.file_bytes:,} B)",
            "measured file size",
            headline,
            g4.weights_bytes_by_tier["4-bit"],
        ),
    ]
    ref = g0.weights_bytes_by_tier["bf16"]
    return pd.DataFrame(
        [
            {
                "source": s,
                "assumes": a,
                "params_B": round(p / 1e9, 1),
                "weights_GB": _size(n, "GB"),
                "bits_per_param": round(n * 8 / p, 2),
                "ratio_to_guide_000": round(n / ref, 2),
            }
            for s, a, p, n in rows
        ]
    )


def precision_budget_plans(
    *,
    model: str | ModelSpec = GUIDE_000,
    rows: Sequence[tuple[str, str]] = GUIDE_000_BUDGET_ROWS,
    context: object = "256K",
    gpu: str = "h100-sxm",
    batch: int = 1,
    assumptions: Assumptions | None = None,
) -> dict[str, Plan]:
    """One plan per (weights, KV dtype) row, each on the fewest deployable GPUs it fits on
    (one node up to 8, then whole nodes)."""
    out = {}
    for w, kv in rows:
        n = min_gpus(
            model=model, weights=w, kv_dtype=kv, context=context, gpu=gpu, batch=batch, assumptions=assumptions
        )
        if n is None:
            raise K3InputError("rows", f"{w} + KV {kv} does not fit on up to 128× {gpu}")
        p = make_plan(
            model=model, weights=w, kv_dtype=kv, context=context, gpu=gpu, gpus=n, batch=batch, assumptions=assumptions
        )
        out[f"{_label(p.weight_format)} + {_label(p.kv_dtype)} KV ({n}× {p.gpu.id})"] = p
    return out


def precision_budget_table(
    *,
    model: str | ModelSpec = GUIDE_000,
    rows: Sequence[tuple[str, str]] = GUIDE_000_BUDGET_ROWS,
    context: object = "256K",
    gpu: str = "h100-sxm",
    batch: int = 1,
    assumptions: Assumptions | None = None,
    unit: str = "GiB",
) -> pd.DataFrame:
    """Guide 000's lost "precision-by-precision VRAM budget", regenerated.

    The guide's note: KV BF16 for the first two rows, FP8 for the next two, INT4 for the
    last two, all at 256K. The six rows are :data:`GUIDE_000_BUDGET_ROWS` (an assumption:
    the guide's table is lost). Each row runs on the fewest deployable GPUs that hold it
    (``gpus``: one node up to 8, then whole nodes; ``gpus_one_pool``: the guide's own reading,
    any count in one pool), with the
    guide's rule of 8 GiB overhead per GPU (``assumptions=None``) and its 10 GiB activation.
    """
    plans = precision_budget_plans(
        model=model, rows=rows, context=context, gpu=gpu, batch=batch, assumptions=assumptions
    )
    out = []
    for p in plans.values():
        t = p.total
        pool = min_gpus(
            model=p.model,
            weights=p.weight_format,
            kv_dtype=p.kv_dtype,
            context=p.context_tokens,
            gpu=p.gpu,
            batch=p.batch,
            assumptions=assumptions,
            whole_nodes=False,
        )
        out.append(
            {
                "weights": _label(p.weight_format),
                "kv_dtype": _label(p.kv_dtype),
                f"weights_{unit}": _size(t.weights_bytes, unit),
                f"kv_cache_{unit}": _size(t.kv_cache_bytes, unit),
                f"activation_{unit}": _size(t.activation_bytes, unit),
                "gpus": p.gpus,
                "gpus_one_pool": pool,
                f"overhead_{unit}": _size(t.overhead_bytes, unit),
                f"total_{unit}": _size(t.total_bytes, unit),
                f"available_{unit}": _size(t.available_bytes, unit),
                f"headroom_{unit}": _size(t.headroom_bytes, unit),
            }
        )
    return pd.DataFrame(out)


def reference_table(
    *,
    model: str | ModelSpec = GUIDE_000,
    tiers: Sequence[str] = REFERENCE_TIERS,
    contexts: Sequence[object] = REFERENCE_CONTEXTS,
    kv_dtype: str | None = None,
    gpu: str = "h100-sxm",
    gpus: int = 8,
    batch: int = 1,
    assumptions: Assumptions | None = None,
    unit: str = "GiB",
) -> pd.DataFrame:
    """Guide 000's lost "full reference table": total memory by weight precision × context.

    $M = W + B·T·kv_{tok} + A + O$. ``kv_dtype=None`` applies :data:`REFERENCE_KV_RULE`
    (BF16 cache for BF16 weights, FP8 for quantised ones). For guide 000 the default
    assumptions are its worked example's (10 GiB activation, 48 GiB overhead in total),
    which give the two ends its summary quotes: ~291 (Q2, 64K) and ~908 (BF16, 1M).
    For an architecture the overhead follows from ``gpu`` × ``gpus``.
    """
    spec = get_model(model)
    if assumptions is None and spec.id == GUIDE_000:
        assumptions = GUIDE_000_WORKED_ASSUMPTIONS
    rows = []
    for tier in tiers:
        fmt = get_weight_format(tier).id
        kv = kv_dtype or REFERENCE_KV_RULE.get(fmt, REFERENCE_KV_RULE["*"])
        row: dict[str, object] = {"weights": _label(fmt), "kv_dtype": _label(get_kv_dtype(kv).id)}
        for c in contexts:
            p = make_plan(
                model=spec,
                weights=fmt,
                kv_dtype=kv,
                context=c,
                gpu=gpu,
                gpus=gpus,
                batch=batch,
                assumptions=assumptions,
            )
            row[f"total_{unit}_{context_label(p.context_tokens)}"] = _size(p.total.total_bytes, unit)
        rows.append(row)
    return pd.DataFrame(rows)


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` for a reader: a missing value shows as "—", never ``NaN`` or ``<NA>``.

    >>> readable(pd.DataFrame({"x": [1.5, None]}))["x"].tolist()
    [1.5, '—']
    """
    return df.astype(object).where(df.notna(), "—")
