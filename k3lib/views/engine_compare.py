"""The same model under vLLM, llama.cpp, SGLang and transformers: side-by-side tables and the
per-GPU stack chart of notebook ``06-any-model`` (GiB = 2^30 bytes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import kind_of, kinds_in
from k3lib.core.memory import kv_heads_per_rank

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from k3lib.engines import EngineEstimate
    from k3lib.loaders import LoadedModel

GiB = 2**30
#: the engines compared side by side
SIDE_BY_SIDE_ENGINES = ("vllm", "llama.cpp", "sglang", "transformers")


def engine_estimates(
    model: str | LoadedModel,
    *,
    engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
    gpu: str = "h100-sxm",
    gpus: int = 1,
    context: object = "32K",
    batch: int = 1,
) -> dict[str, EngineEstimate]:
    """{engine id: :class:`~k3lib.engines.EngineEstimate`} for one model and GPU set."""
    from k3lib.engines import estimate_for_engine, get_engine
    from k3lib.loaders.by_name import load_model

    loaded = load_model(model)
    return {
        get_engine(e).id: estimate_for_engine(e, model=loaded, gpu=gpu, gpus=gpus, context=context, batch=batch)
        for e in engines
    }


_SIDE_ROWS = (
    ("GPU memory (GiB)", "memory_bytes"),
    ("budget the engine sizes from (GiB)", "budget_bytes"),
    ("weights (GiB)", "weights_bytes"),
    ("activation / compute buffer (GiB)", "activation_bytes"),
    ("runtime: CUDA context, NCCL (GiB)", "runtime_bytes"),
    ("KV memory available (GiB)", "kv_available_bytes"),
    ("KV cache for the context (GiB)", "kv_needed_bytes"),
)


def engine_side_by_side(
    model: str | LoadedModel,
    *,
    engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
    gpu: str = "h100-sxm",
    gpus: int = 1,
    context: object = "32K",
    batch: int = 1,
) -> pd.DataFrame:
    """Rows = what one GPU holds under each engine's rules, columns = engines.

    ``KV bytes per token per GPU`` is the cache for the context ÷ ($T·B$); ``KV capacity``
    is the tokens the available KV memory holds (vLLM: the 'GPU KV cache size' it prints).
    """
    from k3lib.engines import get_engine

    ests = engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context, batch=batch)
    cols = {}
    for eid, est in ests.items():
        col: dict[str, object] = {label: round(getattr(est, attr) / GiB, 2) for label, attr in _SIDE_ROWS}
        col["KV bytes per token per GPU (B)"] = int(round(est.kv_needed_bytes / (est.context_tokens * est.batch)))
        col["KV capacity (tokens)"] = int(est.kv_capacity_tokens)
        col["fits"] = bool(est.fits)
        cols[get_engine(eid).name] = col
    return pd.DataFrame(cols)


_COMPONENTS = (
    ("weights", "weights_bytes"),
    ("activation", "activation_bytes"),
    ("runtime", "runtime_bytes"),
    ("KV cache for the context", "kv_needed_bytes"),
)
#: the chart's stack, bottom to top
CHART_COMPONENTS = tuple(c for c, _ in _COMPONENTS) + ("unused KV memory", "outside the budget")


def engine_components_long(
    model: str | LoadedModel,
    *,
    engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
    gpu: str = "h100-sxm",
    gpus: int = 1,
    context: object = "32K",
    batch: int = 1,
) -> pd.DataFrame:
    """Long frame for :func:`engine_chart`: engine, component (:data:`CHART_COMPONENTS`), GiB per
    GPU. ``unused KV memory`` is what the budget leaves after the cache; ``outside the budget``
    is what the engine keeps back (vLLM: 1 − gpu_memory_utilization; SGLang: 1 − mem_fraction_static)."""
    from k3lib.engines import get_engine

    rows = []
    for eid, est in engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context, batch=batch).items():
        name = get_engine(eid).name
        for label, attr in _COMPONENTS:
            rows.append({"engine": name, "component": label, "GiB": round(getattr(est, attr) / GiB, 3)})
        rows.append(
            {
                "engine": name,
                "component": "unused KV memory",
                "GiB": round(max(0, est.kv_available_bytes - est.kv_needed_bytes) / GiB, 3),
            }
        )
        rows.append(
            {
                "engine": name,
                "component": "outside the budget",
                "GiB": round((est.memory_bytes - est.budget_bytes) / GiB, 3),
            }
        )
    return pd.DataFrame(rows)


def _kv_rule(eid: str, arch: Architecture, tp: int) -> str:
    kinds = kinds_in(arch.attention)
    parts = []
    if any(k.grouped_kv for k in kinds):
        g = next(g for g in arch.attention if kind_of(g).grouped_kv)
        if eid in ("vllm", "sglang"):
            per = kv_heads_per_rank(g.kv_heads, tp)
            rep = " (replicated: TP > K)" if tp > g.kv_heads else ""
            parts.append(f"GQA: {per} of {g.kv_heads} KV heads per rank{rep}")
        else:
            parts.append(f"GQA: all {g.kv_heads} KV heads, layers split over the GPUs")
    if any(k.latent for k in kinds):
        g = next(g for g in arch.attention if kind_of(g).latent)
        lat = g.kv_lora_rank + g.qk_rope_head_dim
        parts.append(
            {
                "vllm": f"MLA: the {lat}-element latent on every rank",
                "sglang": f"MLA: the {lat}-element latent on every rank",
                "llama.cpp": f"MLA: K row {lat}, V row {g.kv_lora_rank}, layers split",
                "transformers": f"MLA expanded: {g.num_heads}·({g.qk_nope_head_dim}+{g.qk_rope_head_dim}+"
                f"{g.v_head_dim}) per layer",
            }.get(eid, "")
        )
    if any(k.windowed for k in kinds):
        parts.append(
            {
                "vllm": "sliding: window blocks, layer groups padded",
                "sglang": "sliding: counted at the full context",
                "llama.cpp": "sliding: window + ubatch cells",
                "transformers": "sliding: the last window",
            }.get(eid, "")
        )
    if any(k.holds_state for k in kinds):
        parts.append(
            {
                "vllm": "linear state: one block per sequence, block size raised to hold it",
                "sglang": "linear state: FP32 per sequence",
                "llama.cpp": "linear state: FP32 per sequence",
                "transformers": "linear state: conv at the dtype, recurrent in FP32",
            }.get(eid, "")
        )
    return "; ".join(p for p in parts if p)


def engine_rules_table(
    model: str | LoadedModel,
    *,
    engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
    gpu: str = "h100-sxm",
    gpus: int = 1,
    context: object = "32K",
) -> pd.DataFrame:
    """Why the engines differ, for this model: budget rule, weights rule, what the KV cache
    holds, and the unit each engine prints."""
    from k3lib.engines import get_engine
    from k3lib.loaders.by_name import load_architecture

    arch, _ = load_architecture(model)
    ests = engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context)
    rows = []
    for eid, est in ests.items():
        prof = get_engine(eid)
        mem = est.memory_bytes / GiB
        budget = {
            "vllm": f"gpu_memory_utilization {est.budget_bytes / est.memory_bytes:.2f} × {mem:.2f} GiB",
            "sglang": f"mem_fraction_static {est.budget_bytes / est.memory_bytes:.3f} × {mem:.2f} GiB",
        }.get(eid, f"all {mem:.2f} GiB (nothing reserved up front)")
        weights = {
            "vllm": f"sharded over TP {est.tp}; vocab padded to 64; rotary cache on every rank",
            "sglang": f"sharded over TP {est.tp}, as vLLM",
            "llama.cpp": f"layers split over {est.gpus} GPU(s); token_embd stays in host RAM",
            "transformers": f"every parameter at the model dtype; device_map='auto' over {est.gpus} GPU(s)",
        }.get(eid, "")
        rows.append(
            {
                "engine": prof.name,
                "version": prof.version,
                "budget": budget,
                "weights": weights,
                "KV cache holds": _kv_rule(eid, arch, est.tp),
                "prints": prof.printed_unit,
                "unit note": prof.unit_note,
            }
        )
    return pd.DataFrame(rows)


def printed_lines_table(
    model: str | LoadedModel,
    *,
    engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
    gpu: str = "h100-sxm",
    gpus: int = 1,
    context: object = "32K",
) -> pd.DataFrame:
    """The lines each engine would print at start-up (as its profile predicts them), with its unit."""
    from k3lib.engines import get_engine

    rows = []
    for eid, est in engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context).items():
        prof = get_engine(eid)
        if not est.printed:
            rows.append({"engine": prof.name, "line": "(prints no memory figures)", "value": ""})
        for line, value in est.printed.items():
            rows.append({"engine": prof.name, "line": line, "value": value})
    return pd.DataFrame(rows)


def engine_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.Chart:
    """One stacked bar per engine: what one GPU holds (GiB = 2^30 bytes).

    ``df``: :func:`engine_components_long`.
    """
    import altair as alt

    for col in ("engine", "component", "GiB"):
        if col not in df.columns:
            raise K3InputError("data", f"missing column {col!r}", ", ".join(map(str, df.columns)))
    order = list(CHART_COMPONENTS)
    colors = ["#4c78a8", "#54a24b", "#9d9d9d", "#f58518", "#fdd0a2", "#e0e0e0"]
    data = df.assign(order=df["component"].map({c: i for i, c in enumerate(order)}))
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("engine:N", sort=None, title=None),
            x=alt.X("sum(GiB):Q", title="per GPU (GiB = 2^30 bytes)"),
            color=alt.Color(
                "component:N",
                sort=order,
                scale=alt.Scale(domain=order, range=colors),
                legend=alt.Legend(orient="bottom", columns=3, title=None),
            ),
            order=alt.Order("order:Q"),
            tooltip=["engine:N", "component:N", alt.Tooltip("GiB:Q", format=",.2f")],
        )
        .properties(title=title or "One GPU under each engine's rules", width=620)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
    )
