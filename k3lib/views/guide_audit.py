"""The guide audit as notebook 07 shows it: DataFrames over the verdicts, a tinted table, the
claims explorer widget and the notebook's validated parameters (no display here).

The verdicts themselves are made in :mod:`k3lib.guides` (the checks, their registry and the
runner :func:`k3lib.guides.runner.audit_all`); this module only tabulates and draws them.
Run ``python -m k3lib.views.guide_audit`` for the two-column verdict counts."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from k3lib.core.errors import K3InputError
from k3lib.core.memory import kv_cache_bytes, weights_bytes_by_group
from k3lib.core.units import GB, GiB
from k3lib.guides.checks_000_derived import _min_own_gpus
from k3lib.guides.checks_004 import (
    G004_OVERHEAD,
    GGUF_FILE,
    TIER_FORMAT,
    _g004_table_rows,
    _table_kv_gb,
    implied_bits_per_weight,
    table_total_gb,
)
from k3lib.guides.checks_extra import NATIVE
from k3lib.guides.claims import COLUMN_VERDICTS, G000_OVERHEAD_PER_GPU_RULE, GUIDES, VERDICTS, get_claim, load_claims
from k3lib.guides.refs import (
    _g000,
    _k3,
    _unit_bytes,
    published_bytes,
    published_files,
    real_kv_bytes,
    real_node_gpus,
    real_state_bytes,
    real_weights_bytes,
)
from k3lib.guides.runner import audit_all, audit_claim
from k3lib.guides.verdicts import Verdict

if TYPE_CHECKING:  # pragma: no cover
    import pandas


def audit_table(verdicts: Sequence[Verdict] | None = None) -> pandas.DataFrame:
    """One row per claim: what the guide says, both computed values, both verdicts and the combined one."""
    import pandas as pd

    claims = {c.claim_id: c for c in load_claims()}
    verdicts = audit_all() if verdicts is None else verdicts
    rows = []
    for v in verdicts:
        c = claims[v.claim_id]
        rows.append(
            {
                "claim_id": c.claim_id,
                "guide": c.guide,
                "section": c.section,
                "quote": c.quote,
                "quantity": c.quantity,
                "claim_kind": c.claim_kind,
                "claimed": c.value,
                "claimed_high": c.value_high,
                "unit_as_written": c.unit_as_written,
                "own_verdict": v.own_verdict,
                "own_value": v.own_value,
                "real_verdict": v.real_verdict,
                "real_value": v.real_value,
                "unit": v.unit,
                "verdict": v.verdict,
                "computed": v.computed_value,
                "real_k3": v.real_value,
                "tolerance": v.tolerance,
                "tolerance_free": v.tolerance_free,
                "assumption": v.assumption,
                "explanation": v.explanation,
                "formula": v.formula,
                "basis": v.basis,
                "check": v.check,
            }
        )
    return pd.DataFrame(rows)


def verdict_counts(table: pandas.DataFrame | None = None) -> pandas.DataFrame:
    """The two-column summary: claims per verdict, against the guide's own inputs and for the real K3,
    per guide and in all."""
    import pandas as pd

    t = audit_table() if table is None else table
    out = {}
    for guide in (*GUIDES, "all"):
        sub = t if guide == "all" else t[t["guide"] == guide]
        for col, name in (("own_verdict", "own inputs"), ("real_verdict", "real K3")):
            out[(guide, name)] = sub[col].value_counts().reindex(COLUMN_VERDICTS, fill_value=0)
    counts = pd.DataFrame(out)
    counts.loc["total"] = counts.sum(axis=0)
    counts.index.name = "verdict"
    return counts.astype(int)


def combined_counts(table: pandas.DataFrame | None = None) -> pandas.DataFrame:
    """Claims per guide and combined verdict (the folding of :func:`k3lib.guides.verdicts.combine`), with totals."""
    import pandas as pd

    t = audit_table() if table is None else table
    counts = pd.crosstab(t["guide"], pd.Categorical(t["verdict"], categories=VERDICTS), dropna=False)
    counts.columns = list(VERDICTS)
    counts.index.name = "guide"
    counts["total"] = counts.sum(axis=1)
    counts.loc["all"] = counts.sum(axis=0)
    return counts.astype(int)


COLUMNS = ("either", "own", "real")


def filter_claims(
    table: pandas.DataFrame,
    guide: str = "all",
    verdict: str = "all",
    column: str = "either",
    columns: Sequence[str] | None = None,
) -> pandas.DataFrame:
    """Rows of ``table`` for one guide and one column verdict (``"all"`` keeps every value); ``column``
    says which verdict the filter reads: ``own``, ``real`` or ``either``. The notebook widget's callback."""
    if guide != "all" and guide not in GUIDES:
        raise K3InputError("guide", f"{guide!r} is not a guide", "all, " + ", ".join(GUIDES))
    if verdict != "all" and verdict not in COLUMN_VERDICTS:
        raise K3InputError("verdict", f"{verdict!r} is not a verdict", "all, " + ", ".join(COLUMN_VERDICTS))
    if column not in COLUMNS:
        raise K3InputError("column", f"{column!r} is not a column", ", ".join(COLUMNS))
    out = table
    if guide != "all":
        out = out[out["guide"] == guide]
    if verdict != "all":
        own, real = out["own_verdict"] == verdict, out["real_verdict"] == verdict
        out = out[{"own": own, "real": real, "either": own | real}[column]]
    out = out.reset_index(drop=True)
    return out[list(columns)] if columns else out


DISPLAY_COLUMNS = (
    "claim_id",
    "quote",
    "claimed",
    "unit_as_written",
    "own_value",
    "own_verdict",
    "real_value",
    "real_verdict",
    "unit",
)
COLUMN_TINTS = {"holds": "#e8f5e9", "contradicted": "#fde8e8", "stated input": "#eef3fb", "not checkable": "#eeeeee"}
VERDICT_COLORS = {
    "reproduced": "#2e7d32",
    "reproduced only under assumption": "#b7791f",
    "contradicted": "#c62828",
    "not checkable": "#757575",
}
VERDICT_TINTS = {
    "reproduced": "#e8f5e9",
    "reproduced only under assumption": "#fff4d6",
    "contradicted": "#fde8e8",
    "not checkable": "#eeeeee",
}


def _fmt(x) -> str:
    return "" if x is None or x != x else f"{x:,.4g}"


def style_verdicts(table: pandas.DataFrame, columns: Sequence[str] = DISPLAY_COLUMNS):
    """A pandas Styler with each verdict cell tinted (static HTML: renders offline)."""
    t = table[list(columns)] if columns else table

    def tint(cell):
        color = COLUMN_TINTS.get(cell, "") if isinstance(cell, str) else ""
        return f"background-color: {color}" if color else ""

    verdict_cols: list[Hashable] = [c for c in ("own_verdict", "real_verdict") if c in t.columns]
    return (
        t.style.map(tint, subset=verdict_cols)
        .format({"claimed": "{:,.4g}", "own_value": _fmt, "real_value": _fmt}, na_rep="")
        .set_uuid("guide-audit")
        .hide(axis="index")
    )


def claims_explorer(
    table: pandas.DataFrame | None = None, guide: str = "all", verdict: str = "contradicted", column: str = "either"
):
    """Three dropdowns (guide, verdict, which column) over the claims table, starting on
    "contradicted" in either column; the output updates in place via :func:`filter_claims`."""
    import ipywidgets as w
    from IPython.display import display

    t = audit_table() if table is None else table
    g = w.Dropdown(options=["all", *GUIDES], value=guide, description="guide")
    v = w.Dropdown(options=["all", *COLUMN_VERDICTS], value=verdict, description="verdict")
    c = w.Dropdown(options=list(COLUMNS), value=column, description="column")
    out = w.Output()

    def refresh(*_):
        out.clear_output(wait=True)
        with out:
            display(style_verdicts(filter_claims(t, g.value, v.value, c.value)))

    for d in (g, v, c):
        d.observe(refresh, "value")
    refresh()
    return w.VBox([w.HBox([g, v, c]), out])


@dataclass(frozen=True)
class AuditParameters:
    """The notebook's parameters, validated."""

    guide: str = "all"
    verdict: str = "contradicted"
    column: str = "either"
    unit: str = "GB"

    def __post_init__(self) -> None:
        if self.guide != "all" and self.guide not in GUIDES:
            raise K3InputError("guide", f"{self.guide!r} is not a guide", "all, " + ", ".join(GUIDES))
        if self.verdict != "all" and self.verdict not in COLUMN_VERDICTS:
            raise K3InputError("verdict", f"{self.verdict!r} is not a verdict", "all, " + ", ".join(COLUMN_VERDICTS))
        if self.column not in COLUMNS:
            raise K3InputError("column", f"{self.column!r} is not a column", ", ".join(COLUMNS))
        if self.unit not in ("GB", "GiB"):
            raise K3InputError("unit", f"{self.unit!r} is not a unit", "GB, GiB")


def validate_parameters(**params) -> AuditParameters:
    """Validate the notebook's parameters; a bad one stops the notebook with one line naming it."""
    from k3lib.views.params import parameter_errors

    with parameter_errors():
        return AuditParameters(**params)


#: The contradictions that matter to a deployer (they change what to buy or what to load), most first.
DEPLOYER_CONTRADICTIONS = (
    "g000-weights-bf16",
    "g000-kv-bytes-bf16",
    "g000-faq-gpus-bf16-512k",
    "g000-fp8kv-gpus-after",
    "g000-min-viable-gpus",
    "g000-sweetspot-gpus",
    "g000-intro-8xh100-headroom",
    "g000-extra-tp-kv-shard",
    "g000-extra-loaded-bf16",
    "g004-total-vram-q4",
    "g004-total-4-bit-8k",
    "g004-offload-tps-mac-studio-m3-ultra-512gb",
    "g004-extra-vllm-native-vs-gguf",
)
BIGGEST_CONTRADICTIONS = DEPLOYER_CONTRADICTIONS


def biggest_contradictions(verdicts: Sequence[Verdict] | None = None) -> pandas.DataFrame:
    """The claims of :data:`DEPLOYER_CONTRADICTIONS` present in the CSV: claim, both values, both verdicts."""
    import pandas as pd

    by_id = {v.claim_id: v for v in (audit_all() if verdicts is None else verdicts)}
    claims = {c.claim_id: c for c in load_claims()}
    return pd.DataFrame(
        [
            {
                "claim_id": cid,
                "quote": claims[cid].quote,
                "claimed": claims[cid].value,
                "unit_as_written": claims[cid].unit_as_written,
                "own_value": by_id[cid].own_value,
                "own_verdict": by_id[cid].own_verdict,
                "real_value": by_id[cid].real_value,
                "real_verdict": by_id[cid].real_verdict,
                "unit": by_id[cid].unit,
            }
            for cid in DEPLOYER_CONTRADICTIONS
            if cid in by_id
        ]
    )


def working(claim_id: str) -> pandas.DataFrame:
    """The steps of one check as a ``param | formula | value | unit`` table."""
    import pandas as pd

    v = audit_claim(get_claim(claim_id))
    rows = [
        {"param": f.name, "formula": f.formula, "value": None if f.value is None else round(f.value, 4), "unit": f.unit}
        for f in v.figures
    ]
    if v.computed_value is not None and not any(f.value == v.computed_value for f in v.figures):
        rows.append({"param": "computed", "formula": v.formula, "value": round(v.computed_value, 4), "unit": v.unit})
    return pd.DataFrame(rows, columns=["param", "formula", "value", "unit"])


# ---------------------------------------------------------------- reconciliation with K3


def kv_reconciliation() -> pandas.DataFrame:
    """KV bytes per token: guide 000's figures vs K3's MLA latent, per dtype."""
    import pandas as pd

    from k3lib.core.precisions import get_kv_dtype

    rows = []
    for dt in ("bf16", "fp8", "int4"):
        b = get_kv_dtype(dt).bytes_per_element
        guide = _g000().kv_bytes_per_token(b)
        real = _k3().kv_bytes_per_token(b)
        rows.append(
            {
                "kv_dtype": dt.upper(),
                "guide 000 (B/token)": guide,
                "K3 MLA latent (B/token)": real,
                "guide / K3": round(guide / real, 2),
            }
        )
    return pd.DataFrame(rows)


def kv_cache_at_contexts(
    contexts: Sequence[int] = (131072, 262144, 524288, 1048576), unit: str = "GiB"
) -> pandas.DataFrame:
    """BF16 KV cache at each context: guide 000 vs K3 (MLA + KDA state), in ``unit``."""
    import pandas as pd

    s = _unit_bytes(unit)
    rows = []
    for t in contexts:
        rows.append(
            {
                "context (tokens)": t,
                f"guide 000 ({unit})": kv_cache_bytes(_g000(), context_tokens=t, batch=1, kv_dtype="bf16") / s,
                f"K3 MLA ({unit})": real_kv_bytes(kv_dtype="bf16", context_tokens=t, include_state=False) / s,
                f"K3 KDA state ({unit})": real_state_bytes() / s,
                f"K3 total ({unit})": real_kv_bytes(kv_dtype="bf16", context_tokens=t) / s,
            }
        )
    return pd.DataFrame(rows).round(2)


def gguf_matches() -> pandas.DataFrame:
    """Guide 004's weights column against K3's published files (GGUF cells) or K3 at the tier's type ('est.')."""
    import pandas as pd

    by_id = {
        v.claim_id: v
        for v in audit_all([c for c in load_claims() if c.guide == "guide-004" and c.quantity == "weights"])
    }
    rows = []
    for c in load_claims():
        if c.claim_id in by_id:
            v = by_id[c.claim_id]
            rows.append(
                {
                    "tier": c.precision,
                    "weights (GB)": c.value,
                    "kind": "est." if "est." in c.quote else "GGUF",
                    "bits per weight": round(implied_bits_per_weight(c.value), 2),
                    "K3 file or type": GGUF_FILE.get(c.precision, TIER_FORMAT[c.precision]),
                    "K3 (GB)": None if v.real_value is None else round(v.real_value, 2),
                    "difference (%)": None if v.real_value is None else round(100 * (c.value / v.real_value - 1), 2),
                    "real K3": v.real_verdict,
                }
            )
    return pd.DataFrame(rows)


def published_table(unit: str = "GB") -> pandas.DataFrame:
    """``data/measured/kimi-k3-published.csv`` in one ``unit``."""
    import pandas as pd

    s = _unit_bytes(unit)
    return pd.DataFrame(
        [
            {
                "file": f.label,
                f"size ({unit})": round(f.bytes / s, 2),
                "exact": f.exact,
                "bits per weight": round(f.bytes * 8 / _k3().params_total, 2),
            }
            for f in published_files()
        ]
    )


def g004_table_check() -> pandas.DataFrame:
    """Every total cell of guide 004's table against its own rule W + 27,648·T/2^30 + 1."""
    import pandas as pd

    rows = []
    weights = _g004_table_rows("weights")
    for c in load_claims():
        if c.guide == "guide-004" and c.claim_id.startswith("g004-total-") and c.context_tokens:
            rule = table_total_gb(weights[c.precision], c.context_tokens)
            rows.append(
                {
                    "tier": c.precision,
                    "context (tokens)": c.context_tokens,
                    "stated (GB)": c.value,
                    "own rule (GB)": round(rule, 2),
                    "stated − rule (GB)": round(c.value - rule, 1) + 0.0,
                }
            )
    return pd.DataFrame(rows)


def offload_split(unit: str = "GB") -> pandas.DataFrame:
    """Guide 004's offload split (33 GB VRAM + 1,531 GB RAM) against its own table and K3 at Q4_K."""
    import pandas as pd

    s = _unit_bytes(unit)
    groups = weights_bytes_by_group(_k3(), "q4")
    experts = groups["routed_experts"]
    rest = sum(groups.values()) - experts
    kv = real_kv_bytes(kv_dtype="bf16", context_tokens=8192)
    rows = [
        ("guide: VRAM (attention, shared experts, KV)", 33 * GB),
        ("guide: RAM (routed experts)", 1531 * GB),
        ("guide: VRAM + RAM", 1564 * GB),
        ("guide table: 4-bit weights cell", _g004_table_rows("weights")["4-bit"] * GB),
        ("guide table: 4-bit total at 8K", _g004_table_rows("total")["4-bit"] * GB),
        ("K3: routed experts at Q4_K (4.5 bits)", experts),
        ("K3: everything else at Q4_K + 8K KV (with KDA state) + 1 GB", rest + kv + G004_OVERHEAD),
        ("K3: all at Q4_K + 8K KV (with KDA state) + 1 GB", experts + rest + kv + G004_OVERHEAD),
    ]
    return pd.DataFrame([{"item": k, f"size ({unit})": round(v / s, 1)} for k, v in rows])


def unique_params_examined() -> pandas.DataFrame:
    """The 'effective unique parameters ≈ 1/10' claim against K3's parameter groups."""
    import pandas as pd

    k3 = _k3()
    g = k3.param_groups()
    total = k3.params_total
    rows = [
        ("all parameters (stored)", total),
        ("routed experts (92 × 896)", g["routed_experts"]),
        ("everything but routed experts", total - g["routed_experts"]),
        ("active per token (16 of 896 experts)", k3.params_active),
        ("one-tenth of 2.8T, as the guide says", 280 * 10**9),
        ("what 594 GiB holds at 2 B each", 594 * GiB // 2),
    ]
    return pd.DataFrame(
        [
            {"parameters": k, "count (B)": round(v / 1e9, 1), "share of total (%)": round(100 * v / total, 1)}
            for k, v in rows
        ]
    )


def use_instead(unit: str = "GB") -> pandas.DataFrame:
    """The guides' headline sizes next to K3's real ones, in one ``unit`` (guide 000's 'GB' are GiB)."""
    import pandas as pd

    s = _unit_bytes(unit)
    g0 = _g000()
    w4 = {k: v * GB for k, v in _g004_table_rows("weights").items()}
    rows = [
        ("weights, BF16", g0.weights_bytes_by_tier["bf16"], w4["fp16"], real_weights_bytes("bf16"), "2,779.5B × 2 B"),
        ("weights, native checkpoint", None, None, published_bytes(NATIVE), "published: MXFP4 experts + BF16 rest"),
        (
            "weights, 8-bit",
            g0.weights_bytes_by_tier["q8"],
            w4["8-bit"],
            published_bytes("UD-Q8_K_XL"),
            "published UD-Q8_K_XL",
        ),
        (
            "weights, 4-bit",
            g0.weights_bytes_by_tier["q4"],
            w4["4-bit"],
            published_bytes("UD-Q4_K_XL"),
            "published UD-Q4_K_XL",
        ),
        (
            "weights, 2-bit",
            g0.weights_bytes_by_tier["q2"],
            w4["2-bit"],
            published_bytes("UD-Q2_K_XL"),
            "published UD-Q2_K_XL",
        ),
        (
            "KV cache, BF16, 128K",
            kv_cache_bytes(g0, context_tokens=131072, batch=1, kv_dtype="bf16"),
            _table_kv_gb(131072) * GiB,
            real_kv_bytes(kv_dtype="bf16", context_tokens=131072),
            "27,648 B/token + KDA state",
        ),
        (
            "KV cache, BF16, 1M",
            kv_cache_bytes(g0, context_tokens=1048576, batch=1, kv_dtype="bf16"),
            None,
            real_kv_bytes(kv_dtype="bf16", context_tokens=1048576),
            "27,648 B/token + KDA state",
        ),
        ("KDA state per sequence (FP32)", None, None, real_state_bytes(), "116,158,464 × 4 B"),
    ]
    out = [
        {
            "quantity": q,
            f"guide 000 ({unit})": None if a is None else round(a / s, 1),
            f"guide 004 ({unit})": None if b is None else round(b / s, 1),
            f"K3 real ({unit})": round(r / s, 1),
            "how": how,
        }
        for q, a, b, r, how in rows
    ]
    return pd.DataFrame(out)


def real_gpu_counts() -> pandas.DataFrame:
    """GPUs K3 really needs, in whole 8-GPU nodes with TP inside a node (the shared planner), next to
    the guide's own counts (8 GB per GPU, one pool). Published: vLLM's recipe serves K3 on 16× H200
    (TP8×PP2) and needs 32× H100."""
    import pandas as pd

    rows = []
    for fmt, kv, ctx in (
        ("q4", "fp8", 131072),
        ("q4", "fp8", 262144),
        ("q8", "fp8", 262144),
        ("bf16", "bf16", 524288),
        ("native", "bf16", 262144),
    ):
        rows.append(
            {
                "weights": fmt,
                "kv_dtype": kv,
                "context (tokens)": ctx,
                "guide 000 (H100s)": _min_own_gpus(fmt, kv, ctx, G000_OVERHEAD_PER_GPU_RULE)
                if fmt != "native"
                else None,
                "K3 real (H100s, whole nodes)": real_node_gpus(weights=fmt, kv_dtype=kv, context=ctx),
                "K3 real (H200s, whole nodes)": real_node_gpus(weights=fmt, kv_dtype=kv, context=ctx, gpu="h200"),
            }
        )
    return pd.DataFrame(rows).astype(
        {"guide 000 (H100s)": "Int64", "K3 real (H100s, whole nodes)": "Int64", "K3 real (H200s, whole nodes)": "Int64"}
    )


if __name__ == "__main__":  # python -m k3lib.views.guide_audit
    print(verdict_counts().to_string())
