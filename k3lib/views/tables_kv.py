"""KV-cache tables for the notebooks: bytes per token across real models, the worked formula,
guide 000's lost KV table by context and dtype, and what a shorter context saves.

>>> float(kv_context_table("kimi-k3@guide-000").set_index("context").loc["256K", "fp8_GiB"])
32.0
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import FULL, MLA, kind_of, kinds_in
from k3lib.core.memory import kv_bytes_per_token, kv_cache_bytes
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.precisions import get_kv_dtype
from k3lib.core.units import parse_context_tokens
from k3lib.views.table_format import _label, _size, context_label

GUIDE_000 = "kimi-k3@guide-000"
KV_TABLE_CONTEXTS = ("1M", "512K", "256K", "128K")
KV_TABLE_DTYPES = ("bf16", "fp8", "int4")
KV_COMPARISON_MODELS = (
    "llama-3.1-70b",
    "deepseek-v3",
    "kimi-k2",
    "gpt-oss-120b",
    "gemma-3-27b",
    "qwen3-next-80b",
    "kimi-linear-48b",
    "kimi-k3",
    GUIDE_000,
)


def _attention_kind(spec: ModelSpec) -> str:
    if isinstance(spec, PublishedProfile):
        return "published figure"
    kinds = kinds_in(spec.attention)
    states = [k for k in kinds if k.holds_state]
    if states:
        lin = states[0].short
        full = (MLA if any(k.latent for k in kinds) else FULL).short
        return f"hybrid: {lin} linear + {full}"
    if all(k.latent for k in kinds):
        return "MLA (latent)"
    if any(k.windowed for k in kinds):
        return "sliding window + GQA"
    g = spec.attention[0]
    return "MHA" if g.kv_heads == g.num_heads else "GQA"


def _kv_formula(spec: ModelSpec, b: float) -> str:
    """The growing part of the per-token cache, with the model's numbers."""
    if isinstance(spec, PublishedProfile):
        return f"published: {spec.kv_bytes_per_token_bf16:,} B at BF16 × {b:g}/2"
    terms = []
    for g in spec.attention:
        k = kind_of(g)
        if k.grouped_kv and not k.windowed:
            v = g.v_head_dim or g.head_dim
            inner = f"2·{g.kv_heads}·{g.head_dim}" if v == g.head_dim else f"{g.kv_heads}·({g.head_dim}+{v})"
            terms.append(f"{g.count}·{inner}·{b:g}")
        elif k.latent:
            terms.append(f"{g.count}·({g.kv_lora_rank}+{g.qk_rope_head_dim})·{b:g}")
    return " + ".join(terms) if terms else "0"


def kv_per_token_table(
    models: Sequence[str] = KV_COMPARISON_MODELS, *, kv_dtype: str = "bf16", context: object = "256K", unit: str = "GiB"
) -> pd.DataFrame:
    """KV bytes per token across real attention designs (GQA, MLA, sliding window,
    hybrid linear attention) and guide 000's published 256 KiB.

    ``kv_B_per_token`` counts layers whose cache grows with context; sliding layers stop at
    their window and linear layers keep a constant ``state_MiB_per_seq`` (FP32). The
    ``kv_cache_<unit>_<context>`` column adds both, for one sequence.
    """
    ctx = parse_context_tokens(context)
    kvd = get_kv_dtype(kv_dtype)
    rows = []
    for mid in models:
        spec = get_model(mid)
        tok = kv_bytes_per_token(spec, kvd)
        if isinstance(spec, Architecture):
            growing = sum(g.count for g in spec.attention if kind_of(g).caches_kv_per_token and not kind_of(g).windowed)
            layers = f"{growing} of {spec.num_layers}"
            state = spec.state_elements_per_sequence() * 4
        else:
            layers, state = "—", None  # a profile publishes no state (shown as "—", not NaN)
        rows.append(
            {
                "model": spec.id,
                "attention": _attention_kind(spec),
                "growing_layers": layers,
                "formula": _kv_formula(spec, kvd.bytes_per_element),
                "kv_B_per_token": tok,
                "kv_KiB_per_token": round(tok / 1024, 2),
                "state_MiB_per_seq": "—" if state is None else round(state / 2**20, 1),
                f"kv_cache_{unit}_{context_label(ctx)}": _size(
                    kv_cache_bytes(spec, context_tokens=ctx, batch=1, kv_dtype=kvd), unit
                ),
            }
        )
    return pd.DataFrame(rows)


def kv_worked_table(
    model: str | ModelSpec = "kimi-k3",
    *,
    kv_dtype: str = "bf16",
    context: object = "256K",
    batch: int = 1,
    unit: str = "GiB",
) -> pd.DataFrame:
    """``param | formula | value | unit`` for one model's KV cache, layer group by group.

    GQA: $kv_{tok} = 2·L·K·H·b$. MLA: $kv_{tok} = L·(r_{kv}+d_{rope})·b$. Sliding window:
    $\\min(T, W)$ tokens. Linear attention: a state $S$ per sequence, whatever $T$.
    """
    spec = get_model(model)
    kvd = get_kv_dtype(kv_dtype)
    b = kvd.bytes_per_element
    T = parse_context_tokens(context)
    rows: list[tuple[str, str, object, str]] = [("b", f"bytes per element ({kvd.name})", b, "B")]
    if isinstance(spec, PublishedProfile):
        tok = spec.kv_bytes_per_token(b)
        rows.append(("kv_tok", f"{spec.kv_bytes_per_token_bf16:,} × {b:g}/2 (published at BF16)", tok, "B/token"))
    else:
        for g in spec.attention:
            k = kind_of(g)
            if k.grouped_kv:
                v = g.v_head_dim or g.head_dim
                rows += [
                    (f"L ({g.kind} layers)", "config", g.count, "layers"),
                    ("K", "KV heads", g.kv_heads, "heads"),
                    ("H", "head dim (from the config)", g.head_dim, "elements"),
                ]
                per = g.count * g.kv_heads * (g.head_dim + v) * b
                if not k.windowed:
                    formula = f"2·L·K·H·b = 2·{g.count}·{g.kv_heads}·{g.head_dim}·{b:g}"
                    rows.append((f"kv_tok ({g.kind})", formula, int(per), "B/token"))
                else:
                    rows += [
                        ("W", "window", g.window_tokens, "tokens"),
                        (
                            "sliding cache",
                            f"2·L·K·H·b·min(T, W) = {int(per):,}·{min(T, g.window_tokens):,}",
                            int(per * min(T, g.window_tokens)),
                            "B/sequence",
                        ),
                    ]
            elif k.latent:
                rows += [
                    ("L (MLA layers)", "config", g.count, "layers"),
                    (
                        "r_kv + d_rope",
                        f"latent + rope key = {g.kv_lora_rank} + {g.qk_rope_head_dim}",
                        g.kv_lora_rank + g.qk_rope_head_dim,
                        "elements",
                    ),
                    (
                        "kv_tok (MLA)",
                        f"L·(r_kv + d_rope)·b = {g.count}·{g.kv_lora_rank + g.qk_rope_head_dim}·{b:g}",
                        int(g.count * (g.kv_lora_rank + g.qk_rope_head_dim) * b),
                        "B/token",
                    ),
                ]
            else:
                st = g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) * 4
                rows += [
                    (f"L ({g.kind.upper()} layers)", "config", g.count, "layers"),
                    (
                        "S",
                        f"L·(heads·d_k·d_v + conv)·4 B = {g.count}·({g.value_heads}·{g.head_dim}·"
                        f"{g.v_head_dim or g.head_dim} + {g.conv_state_elements_per_layer:,})·4",
                        round(st / 2**20, 1),
                        "MiB/sequence",
                    ),
                ]
        tok = kv_bytes_per_token(spec, kvd)
        rows.append(("kv_tok", "sum over layers whose cache grows", tok, "B/token"))
    rows += [("T", f"{context_label(T)} (K = 1,024)", T, "tokens"), ("B", "batch", batch, "sequences")]
    total = kv_cache_bytes(spec, context_tokens=T, batch=batch, kv_dtype=kvd)
    formula = "B·T·kv_tok" if isinstance(spec, PublishedProfile) else "(B·(T·kv_tok + sliding) + B·S)"
    rows.append(("KV cache", f"{formula} / {'2^30' if unit == 'GiB' else '10^9'}", _size(total, unit), unit))
    df = pd.DataFrame(rows, columns=["param", "formula", "value", "unit"])
    df["value"] = pd.Series([r[2] for r in rows], dtype=object)
    return df


def kv_context_table(
    model: str | ModelSpec = GUIDE_000,
    *,
    kv_dtypes: Sequence[str] = KV_TABLE_DTYPES,
    contexts: Sequence[object] = KV_TABLE_CONTEXTS,
    batch: int = 1,
    unit: str = "GiB",
) -> pd.DataFrame:
    """KV cache by context (rows) and dtype (columns): guide 000's FAQ table.

    $KV = B·T·kv_{tok}$; for guide 000 at BF16, 262,144 B × 1,048,576 / 2^30 = 256 GiB.
    """
    spec = get_model(model)
    rows = []
    for c in contexts:
        T = parse_context_tokens(c)
        row: dict[str, object] = {"context": context_label(T), "context_tokens": T}
        for d in kv_dtypes:
            row[f"{get_kv_dtype(d).id}_{unit}"] = _size(
                kv_cache_bytes(spec, context_tokens=T, batch=batch, kv_dtype=d), unit
            )
        rows.append(row)
    return pd.DataFrame(rows)


def kv_context_long(
    models: Sequence[str] = (GUIDE_000, "kimi-k3"),
    *,
    kv_dtypes: Sequence[str] = KV_TABLE_DTYPES,
    contexts: Sequence[object] = ("8K", "32K", "64K", "128K", "256K", "512K", "1M"),
    batch: int = 1,
    unit: str = "GiB",
) -> pd.DataFrame:
    """Long form ``model | kv_dtype | context | context_tokens | kv_cache_<unit>`` for a chart."""
    rows = []
    for mid in models:
        spec = get_model(mid)
        for d in kv_dtypes:
            for c in contexts:
                T = parse_context_tokens(c)
                rows.append(
                    {
                        "model": spec.id,
                        "kv_dtype": _label(get_kv_dtype(d).id),
                        "context": context_label(T),
                        "context_tokens": T,
                        f"kv_cache_{unit}": _size(
                            kv_cache_bytes(spec, context_tokens=T, batch=batch, kv_dtype=d), unit
                        ),
                    }
                )
    return pd.DataFrame(rows)


def context_savings_table(
    model: str | ModelSpec = GUIDE_000,
    *,
    current: object = "512K",
    target: object = "128K",
    kv_dtypes: Sequence[str] = KV_TABLE_DTYPES,
    batch: int = 1,
    unit: str = "GiB",
) -> pd.DataFrame:
    """Memory freed by lowering ``max_model_len`` from ``current`` to ``target``:

    $\\Delta = B·kv_{tok}·(T_{current} - T_{target})$ — guide 000's "GB saved" formula.
    """
    spec = get_model(model)
    t0, t1 = parse_context_tokens(current, "current"), parse_context_tokens(target, "target")
    if t1 > t0:
        raise K3InputError(
            "target",
            f"{context_label(t1)} is longer than current {context_label(t0)}",
            "a target context at most the current one",
        )
    rows = []
    for d in kv_dtypes:
        before = kv_cache_bytes(spec, context_tokens=t0, batch=batch, kv_dtype=d)
        after = kv_cache_bytes(spec, context_tokens=t1, batch=batch, kv_dtype=d)
        rows.append(
            {
                "model": spec.id,
                "kv_dtype": _label(get_kv_dtype(d).id),
                "kv_B_per_token": kv_bytes_per_token(spec, d),
                "current": context_label(t0),
                "target": context_label(t1),
                f"kv_current_{unit}": _size(before, unit),
                f"kv_target_{unit}": _size(after, unit),
                f"saved_{unit}": _size(before - after, unit),
            }
        )
    return pd.DataFrame(rows)
