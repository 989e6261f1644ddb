"""How many real engine figures the profiles reproduce: the vLLM 0.19 H100 sweep
(``data/measured``) and the public engine logs read by ``k3plan check-log``
(``tests/fixtures/logs``), as tables and a chart for notebook ``06-any-model``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from k3lib.core.errors import K3InputError

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

GiB = 2**30

_TOL_UNIT = {"weights_memory_per_gpu": "%", "kv_cache_memory_per_gpu": "GiB", "kv_cache_tokens": "tokens"}


def calibration_table() -> pd.DataFrame:
    """Every figure of the vLLM 0.19 H100 sweep (``data/measured``): measured, predicted, the
    error (always predicted − measured: GiB, or tokens), the tolerance (weights: 3 %; available
    KV memory: 0.5 GiB; tokens: the interval the printed rounding allows, ± one block), the
    error in units of the tolerance, and whether the row is within.

    >>> row = calibration_table().set_index("id").loc["H108"]      # Llama 3.1 8B, TP 1
    >>> row["measured"], row["predicted"], row["error"], float(row["tolerance"]), bool(row["within"])
    (476016, 476032, 16, 64.0, True)
    """
    from k3lib.engines import vllm_calibration

    def num(x: float, unit: str) -> object:  # whole tokens as int, GiB to 4 decimals (an object column)
        return int(round(x)) if unit == "tokens" else round(float(x), 4)

    rows = []
    for r in vllm_calibration():
        sign = -1 if r.unit == "tokens" else 1  # vllm_calibration reports measured − predicted for tokens
        err, pct = sign * r.error, sign * r.error_pct
        scaled = (pct if r.quantity == "weights_memory_per_gpu" else err) / r.tolerance if r.tolerance else 0.0
        rows.append(
            {
                "id": r.id,
                "model": r.model.split("/")[-1],
                "tp": r.tp,
                "quantity": r.quantity,
                "kind": r.kind,
                "measured": num(r.measured, r.unit),
                "predicted": num(r.predicted, r.unit),
                "unit": r.unit,
                "error": num(err, r.unit),
                "error_pct": round(pct, 3),
                "tolerance": r.tolerance,
                "tolerance_unit": _TOL_UNIT[r.quantity],
                "error_in_tolerances": round(scaled, 3),
                "within": bool(r.within),
                "reason": r.reason,
            }
        )
    df = pd.DataFrame(rows)
    for col in ("measured", "predicted", "error"):  # keep ints as ints next to GiB floats
        df[col] = pd.Series([row[col] for row in rows], dtype=object)
    return df


def calibration_summary_table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per quantity: rows, rows within tolerance, the tolerance, and the worst |error| (its row id)."""
    df = calibration_table() if df is None else df
    rows = []
    for quantity, g in df.groupby("quantity", sort=False):
        worst = g.loc[g["error"].astype(float).abs().idxmax()]  # type: ignore[call-overload]  # pandas-stubs: .loc of idxmax's Hashable label
        tol_unit = g["tolerance_unit"].iloc[0]
        rows.append(
            {
                "quantity": quantity,
                "unit": g["unit"].iloc[0],
                "rows": len(g),
                "within": int(g["within"].sum()),
                "tolerance": (
                    f"{g['tolerance'].max():g} {tol_unit}" if tol_unit != "tokens" else "printed ±0.005 GiB, ± 1 block"
                ),
                "worst_abs_error": abs(worst["error"]),
                "worst_row": worst["id"],
            }
        )
    total = {
        "quantity": "all",
        "unit": "",
        "rows": int(len(df)),
        "within": int(df["within"].sum()),
        "tolerance": "",
        "worst_abs_error": "",
        "worst_row": "",
    }
    return pd.DataFrame([*rows, total])


def calibration_worked_table(row_id: str = "H108") -> pd.DataFrame:
    """``param | formula | value`` for one ``kv_cache_tokens`` row of the sweep:
    $T = ⌊A ÷ (\\text{page}·\\text{layers per group}) ÷ \\text{groups}⌋ × 16$, from the printed
    available memory $A$.

    >>> t = calibration_worked_table("H108").set_index("param")["value"]
    >>> int(t["T_pred"]), int(t["T_vllm"])
    (476032, 476016)
    """
    from k3lib.engines import _row_dtypes, calibration_model, read_vllm_sweep, vllm_kv_layout, vllm_kv_tokens_interval

    rows = {r["id"]: r for r in read_vllm_sweep()}
    if row_id not in rows or rows[row_id]["quantity"] != "kv_cache_tokens":
        raise K3InputError("row_id", f"{row_id!r} is not a kv_cache_tokens row of the sweep")
    r = rows[row_id]
    avail_row = next(
        x for x in rows.values() if x["source"] == r["source"] and x["quantity"] == "kv_cache_memory_per_gpu"
    )
    model = calibration_model(r["model"])
    tp = int(r["tp"])
    dtype, kv_b, _ = _row_dtypes(r)
    lay = vllm_kv_layout(model, tp=tp, kv_dtype=kv_b, dtype_bytes=dtype or model.dtype_bytes)
    a = float(avail_row["value"])
    blocks = lay.num_blocks(int(a * GiB))
    lo, hi = vllm_kv_tokens_interval(model, printed_gib=a, tp=tp, kv_dtype=kv_b, dtype_bytes=dtype or model.dtype_bytes)
    pred = lay.tokens(int(a * GiB))
    out = [
        ("model", f"{r['model']}, TP {tp}, KV {r['kv_dtype']}", r["model"].split("/")[-1]),
        ("A", "available KV memory vLLM printed (GiB)", a),
        ("page", f"block ({lay.block_tokens} tokens) × bytes per token per layer per rank (B)", lay.page_bytes),
        ("group", f"layers per KV-cache group ({lay.num_groups} group(s))", lay.group_size),
        ("blocks", "⌊A·2^30 ÷ (page × group)⌋", blocks),
        ("T_pred", f"⌊blocks ÷ groups⌋ × {lay.block_tokens}", pred),
        ("T_range", "the same for A ± 0.005 GiB (printing rounds to 0.01)", f"{lo:,} … {hi:,}"),
        ("T_vllm", "the GPU KV cache size vLLM printed", int(float(r["value"]))),
        ("error", "T_pred − T_vllm (tokens)", pred - int(float(r["value"]))),
    ]
    return pd.DataFrame(out, columns=["param", "formula", "value"])


def calibration_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart:
    """Each calibration row's error in units of its tolerance (|x| ≤ 1 is within).

    ``df``: :func:`calibration_table`.
    """
    import altair as alt

    for col in ("id", "quantity", "error", "error_in_tolerances", "kind"):
        if col not in df.columns:
            raise K3InputError("data", f"missing column {col!r}", ", ".join(map(str, df.columns)))
    data = df.assign(
        measured=df["measured"].astype(float), predicted=df["predicted"].astype(float), error=df["error"].astype(float)
    )
    points = (
        alt.Chart(data)
        .mark_circle(size=45, opacity=0.8)
        .encode(
            x=alt.X(
                "error_in_tolerances:Q",
                scale=alt.Scale(domain=[-1.2, 1.2]),
                title="error ÷ tolerance (within when between −1 and 1)",
            ),
            y=alt.Y("quantity:N", title=None),
            yOffset=alt.YOffset("kind:N"),
            color=alt.Color("kind:N", legend=alt.Legend(orient="bottom", title="model kind")),
            tooltip=["id:N", "model:N", "tp:Q", "quantity:N", "measured:Q", "predicted:Q", "unit:N", "error:Q"],
        )
    )
    rules = alt.Chart(pd.DataFrame({"x": [-1.0, 1.0]})).mark_rule(strokeDash=[4, 3], color="black").encode(x="x:Q")
    return (
        alt.layer(rules, points)
        .properties(title=title or f"vLLM 0.19 on H100: {len(df)} figures, predicted vs measured", width=620)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
    )


# ---------------------------------------------------------------------------------- engine logs


def _logs_index():
    import csv

    from k3lib.core.data import DATA_DIR

    with open(DATA_DIR / "measured" / "engine_logs.csv", newline="", encoding="utf-8") as fh:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


def engine_log_path(name: str):
    """The path of a public engine log kept as a test fixture (``tests/fixtures/logs``)."""
    from k3lib.core.data import DATA_DIR

    return DATA_DIR.parent / "tests" / "fixtures" / "logs" / name


def check_log_table(text: str, *, model: object = None) -> pd.DataFrame:
    """``k3plan check-log`` as a table: component, logged and predicted (MiB, or tokens/blocks),
    error %, tolerance %, within, rule (one row per figure the log lets us predict)."""
    from k3lib.engines.logcheck import check_log

    chk = check_log(text, model=model)
    rows = []
    for r in chk.rows:
        scale = 2**20 if r.unit == "B" else 1
        rows.append(
            {
                "component": r.component,
                "unit": "MiB" if r.unit == "B" else r.unit,
                "logged": round(r.logged / scale, 2),
                "predicted": round(r.predicted / scale, 2),
                "error_pct": r.error_pct,
                "tolerance_pct": r.tolerance_pct,
                "within": r.within,
                "rule": r.rule,
            }
        )
    return pd.DataFrame(
        rows, columns=["component", "unit", "logged", "predicted", "error_pct", "tolerance_pct", "within", "rule"]
    )


def engine_log_rows() -> pd.DataFrame:
    """Every predicted figure of every public engine log in ``data/measured/engine_logs.csv``."""
    from k3lib.engines.logcheck import check_log

    rows = []
    for entry in _logs_index():
        chk = check_log(engine_log_path(entry["file"]).read_text(encoding="utf-8"), model=entry["model"] or None)
        for r in chk.rows:
            kind = (
                "log consistency"
                if r.component.startswith("KV buffers summed")
                else "modelled"
                if r.component.startswith("compute buffer")
                else "prediction"
            )
            rows.append(
                {
                    "engine": chk.engine,
                    "log": entry["file"],
                    "component": r.component,
                    "kind": kind,
                    "error_pct": r.error_pct,
                    "within": r.within,
                    "source": entry["source"],
                }
            )
    return pd.DataFrame(rows, columns=["engine", "log", "component", "kind", "error_pct", "within", "source"])


#: figures each engine profile reproduced before issue 16 (the vLLM 0.19 sweep only)
FIGURES_BEFORE = {"vllm": (87, 87), "sglang": (0, 0), "llama.cpp": (0, 0), "ollama": (0, 0)}


def figures_reproduced_table(logs: pd.DataFrame | None = None, calibration: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per engine: real figures compared and reproduced within tolerance — the vLLM 0.19 H100
    sweep (:func:`calibration_table`) plus the public logs (:func:`engine_log_rows`), and the
    real-llama.cpp tier's logs (:data:`LLAMACPP_TIER_CSV`, compute buffers left out: they are
    modelled, see :func:`llamacpp_tier_table`); with the counts before issue 16 for comparison. A log-consistency check (per-device KV buffers adding
    up to the total) is counted apart: it tests the reading, not a prediction."""
    logs = engine_log_rows() if logs is None else logs
    cal = calibration_table() if calibration is None else calibration
    rows = []
    for eng in ("vllm", "sglang", "llama.cpp", "ollama"):
        mine = logs[logs["engine"] == eng]
        g = mine[mine["kind"] == "prediction"]
        n, w = len(g), int(g["within"].sum())
        if eng == "vllm":
            n, w = n + len(cal), w + int(cal["within"].sum())
        before = FIGURES_BEFORE[eng]
        modelled = mine[mine["kind"] == "modelled"]
        rows.append(
            {
                "engine": eng,
                "figures": n,
                "reproduced": w,
                "logs read": int(mine["log"].nunique()),
                "log consistency checks passed": int(mine[mine["kind"] == "log consistency"]["within"].sum()),
                "compute buffers within the model's band": f"{int(modelled['within'].sum())} / {len(modelled)}",
                "before (figures / reproduced)": f"{before[0]} / {before[1]}",
            }
        )
    from k3lib.core.data import read_csv_rows
    from k3lib.engines.logcheck import COMPUTE_TOLERANCE_PCT

    all_rows = read_csv_rows(LLAMACPP_TIER_CSV)
    tier = [r for r in all_rows if r["kind"] != "compute MiB"]
    comp = [abs(float(r["error_pct"])) <= COMPUTE_TOLERANCE_PCT for r in all_rows if r["kind"] == "compute MiB"]
    rows.append(
        {
            "engine": "llama.cpp@0c1e570, measured here",
            "figures": len(tier),
            "reproduced": sum(r["match"] == "True" for r in tier),
            "logs read": len({(r["family"], r["setting"]) for r in tier}),
            "log consistency checks passed": 0,
            "compute buffers within the model's band": f"{sum(comp)} / {len(comp)}",
            "before (figures / reproduced)": "0 / 0",
        }
    )
    return pd.DataFrame(rows)


#: the real-llama.cpp tier's figures (tests/llamacpp; regenerated by scripts/measure_llamacpp.py)
LLAMACPP_TIER_CSV = "measured/llamacpp-0c1e570-cpu.csv"


def llamacpp_tier_table() -> pd.DataFrame:
    """Per synthetic family: the figures llama.cpp@0c1e570 printed (KV, SWA and recurrent caches,
    cells, model buffers, tensor bytes) and how many the profile reproduces exactly, beside the
    compute-buffer model's error range (an approximation, stated as such)."""
    from k3lib.core.data import read_csv_rows

    rows = read_csv_rows(LLAMACPP_TIER_CSV)
    out = []
    for fam in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == fam]
        exact = [r for r in mine if r["kind"] != "compute MiB"]
        comp = [float(r["error_pct"]) for r in mine if r["kind"] == "compute MiB"]
        out.append(
            {
                "family": fam,
                "settings": len({r["setting"] for r in mine}),
                "figures": len(exact),
                "reproduced exactly": sum(r["match"] == "True" for r in exact),
                "compute buffer error (%)": f"{min(comp):+.1f} … {max(comp):+.1f}" if comp else "—",
            }
        )
    return pd.DataFrame(out)
