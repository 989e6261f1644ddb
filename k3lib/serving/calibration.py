"""Achieved efficiencies from measurements: fit $η_{bw}$, $η_c$ and the per-layer cost $τ$ per
engine × hardware class on the ``split == fit`` rows of ``data/measured/speed.csv``, and
report the error on the ``split == holdout`` rows, which the fit never reads.

**Rows.** ``id, engine, engine_version, model, weights, kv_dtype, gpu, gpus, tp, pp, ep, host,
concurrency, input_tokens, output_tokens, quantity, value, unit, split, evidence, source, date``;
``quantity`` one of :data:`k3lib.serving.concurrency.QUANTITIES`; ``gpu`` a hardware id, or
``cpu`` with ``host`` a hosts.csv id. Each row is planned with
:func:`k3lib.engines.deployment.plan_for_engine` under the engine's memory profile
(:data:`k3lib.serving.roofline.MEMORY_PROFILE`: trtllm → vllm; ik_llama.cpp, ollama,
ktransformers → llama.cpp); a row whose model, weights or hardware cannot be planned is
skipped and counted (:attr:`Calibration.skipped`).

**Fit.** For each row, :func:`k3lib.serving.concurrency.predict` over a grid of candidates
(:data:`GRID_ETA_BW` × :data:`GRID_ETA_COMPUTE` × :data:`GRID_LAYER_OVERHEAD_S` ×
:data:`GRID_ETA_DECODE_COMPUTE`), and per group
the candidate that minimizes

$$\\sum_{rows} ρ\\left(\\ln \\frac{\\hat y}{y}\\right) + λ·\\left[(\\ln η_{bw} - \\ln η_{bw}^{p})^2
  + (\\ln η_c - \\ln η_c^{p})^2 + (\\ln(τ + τ_0) - \\ln(τ^{p} + τ_0))^2
  + (\\ln η_{cd} - \\ln η_{cd}^{p})^2\\right]$$

with $ρ$ Huber's loss (:func:`huber`: squared within ±30 %, linear beyond), $λ$ =
:data:`SHRINK` and the parent $p$: the ceiling ($η = 1$, $τ = 0$) for the pooled
fit of all rows, the pooled fit for a hardware class, the class fit for an engine × class. A
constant no row of a group can tell (η_c with only decode rows, say) stays at its parent's.

**Held-aside error** per engine × quantity (and per engine × class × quantity, the
``expected_error_pct`` a figure carries): rows, median predicted ÷ measured, the share within
±30 %, the worst ratio, and the median $|\\hat y / y - 1|$ in percent.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from k3lib.core.errors import K3InputError
from k3lib.serving.roofline import Efficiency, serving_engine
from k3lib.serving.speed_rows import (
    SpeedRow,
    default_speed_path,
    fit_engine,
    parse_speed_csv,
    predict_row,
    row_inputs,
)

GRID_ETA_BW = np.geomspace(0.05, 1.0, 31)
GRID_ETA_COMPUTE = np.geomspace(0.02, 1.0, 31)
#: τ candidates up to 2 ms per layer: the old top (256 µs) was hit by most groups. What τ stands
#: for: per layer per pass, the time no byte or FLOP term explains — kernel launches and
#: the many small kernels of a layer (norms, RoPE, routing, MoE permute/gather, sampling spread over
#: layers), plus for Python-scheduled engines the host-side step overhead divided by layers.
GRID_LAYER_OVERHEAD_S = np.array([0, 1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 2048]) * 1e-6
#: $η_{cd}$ candidates (the decode step's share of peak FLOP/s): 1 % to 100 %, a factor ≈ 1.6 apart
GRID_ETA_DECODE_COMPUTE = np.geomspace(0.01, 1.0, 11)
#: weight of the pull toward the parent fit for a well-populated group (a row 30 % off weighs
#: ln(1.3)² = 0.069)
SHRINK = 0.05
#: The prior of a thin group: its constants are a Gaussian in log space around the parent's,
#: worth :data:`PRIOR_ROWS` pseudo-rows that each sit at the parent — i.e. the pull weighs
#: $λ_n = \max(SHRINK,\ PRIOR\_ROWS·σ_r^2/σ_p^2 / \max(1, n/PRIOR\_ROWS))$ with the row residual
#: scale $σ_r = \ln 1.3$ (the issue's ±30 % band) and the spread between groups $σ_p = \ln 2$
#: (a factor 2 between engines or classes). A group of 1–2 fit rows then moves its constants
#: only as far as its rows pay for, instead of one row setting η = 1.0; a group of ≥ 20 rows
#: gets the plain SHRINK weight.
PRIOR_ROWS = 3
PRIOR_SIGMA_ROW = math.log(1.3)
PRIOR_SIGMA_GROUP = math.log(2.0)
#: τ's offset in the log penalty (τ = 0 is allowed)
TAU0_S = 1e-6
WITHIN = 0.30
#: the fewest held-aside rows whose median error a figure carries as its expected error
MIN_ERROR_ROWS = 3


_GRID = Efficiency(
    GRID_ETA_BW[:, None, None, None],
    GRID_ETA_COMPUTE[None, :, None, None],
    GRID_LAYER_OVERHEAD_S[None, None, :, None],
    eta_decode_compute=GRID_ETA_DECODE_COMPUTE[None, None, None, :],
)
_GRID_SHAPE = (len(GRID_ETA_BW), len(GRID_ETA_COMPUTE), len(GRID_LAYER_OVERHEAD_S), len(GRID_ETA_DECODE_COMPUTE))


def _log_ratio_grid(row: SpeedRow) -> np.ndarray | None:
    """$\\ln(\\hat y/y)$ over the 4-D grid of candidates, float32; a row whose figure does not
    depend on $η_{cd}$ (its decode compute never binds) keeps one slice on that axis (it
    broadcasts), so only batched decode rows hold the whole grid."""
    pred = predict_row(row, _GRID)
    if pred is None:
        return None
    pred = np.broadcast_to(np.asarray(pred, dtype=float), _GRID_SHAPE)
    if np.array_equal(pred[..., 0], pred[..., -1]):
        pred = pred[..., :1]
    return (np.log(pred) - math.log(row.value)).astype(np.float32)


@dataclass(frozen=True)
class FittedConstants:
    """One group's fitted efficiencies: the group (``engine × class``, ``class`` or ``all``) and the rows it saw."""

    group: str
    eta_bw: float
    eta_compute: float
    layer_overhead_s: float
    fit_rows: int
    rms_log_error: float
    eta_decode_compute: float = 1.0

    @property
    def efficiency(self) -> Efficiency:
        return Efficiency(
            self.eta_bw, self.eta_compute, self.layer_overhead_s, eta_decode_compute=self.eta_decode_compute
        )

    @property
    def parent(self) -> tuple[float, float, float, float]:
        """(η_bw, η_c, τ, η_cd): the prior this fit gives its children."""
        return self.eta_bw, self.eta_compute, self.layer_overhead_s, self.eta_decode_compute


@dataclass(frozen=True)
class HoldoutError:
    """Held-aside error of one engine × quantity (``hardware_class`` "*" pooled) group."""

    engine: str
    hardware_class: str
    quantity: str
    rows: int
    median_ratio: float
    within_30_pct_share: float
    worst_ratio: float
    median_abs_error_pct: float


def model_kind(arch) -> str:
    """``MoE`` for a model with routed experts, else ``dense``: the two run different kernels
    per layer (a MoE layer adds the router, top-k, token permutation, grouped expert products
    and their combine — and, across GPUs, an all-to-all), so their fixed per-layer cost and
    achieved efficiencies are fitted apart within an engine × class."""
    return "MoE" if getattr(arch.mlp, "n_routed_experts", 0) else "dense"


def most_specific_constants(
    constants: dict, engine: str, hardware_class: str, kind: str | None = None
) -> FittedConstants | None:
    """The most specific fit that exists: engine × class × model kind (:func:`model_kind`),
    else engine × class, else the engine over all classes (its code path: τ and kernel
    efficiencies), else class, else all rows; None without any."""
    keys = ((engine, hardware_class, kind),) if kind else ()
    for key in keys + ((engine, hardware_class), (engine, "*"), ("*", hardware_class), ("*", "*")):
        if key in constants:
            return constants[key]
    return None


def _plannable(rows, split: str, skipped: list):
    """(row, its serving inputs) for the rows of ``split`` that can be planned; the others go to
    ``skipped`` with the reason."""
    for r in rows:
        if r.split != split:
            continue
        inp = row_inputs(r)
        if isinstance(inp, str):
            skipped.append((r.id, inp))
            continue
        yield r, inp


@dataclass(frozen=True)
class Calibration:
    """The fit of one speed CSV: constants per group, held-aside errors, and skipped rows."""

    source: str
    rows: tuple[SpeedRow, ...]
    constants: dict
    holdout: tuple[HoldoutError, ...]
    holdout_by_class: tuple[HoldoutError, ...]
    skipped: tuple[tuple[str, str], ...]

    def constants_for(self, engine: str, hardware_class: str, kind: str | None = None) -> FittedConstants | None:
        """:func:`most_specific_constants` of this fit."""
        return most_specific_constants(self.constants, engine, hardware_class, kind)

    def expected_error_pct(self, engine: str, hardware_class: str, quantity: str) -> float | None:
        """Median held-aside |ratio − 1| in % for engine × class × quantity, else pooled over
        quantities, else the class's, else all held-aside rows — the first group with at least
        :data:`MIN_ERROR_ROWS` held-aside rows (one row's error is an anecdote, not an error
        estimate); None without any."""
        groups = [
            (h.engine, h.hardware_class, h.quantity, h) for h in self.holdout_by_class if h.rows >= MIN_ERROR_ROWS
        ]
        for match in (
            lambda e, c, q: e == engine and c == hardware_class and q == quantity,
            lambda e, c, q: e == engine and c == hardware_class and q == "*",
            lambda e, c, q: e == "*" and c == hardware_class and q == "*",
            lambda e, c, q: e == "*" and c == "*" and q == "*",
        ):
            for e, c, q, h in groups:
                if match(e, c, q):
                    return h.median_abs_error_pct
        return None

    def measured(
        self,
        *,
        engine: str,
        model: str,
        weights: str,
        gpu: str,
        gpus: int,
        concurrency: int,
        input_tokens: int,
        output_tokens: int,
        quantity: str,
    ) -> SpeedRow | None:
        """A row that measured exactly this figure (either split), or None."""
        for r in self.rows:
            if (
                serving_engine(r.engine) == engine
                and r.model == model
                and r.weights == weights
                and r.gpu == gpu
                and r.gpus == gpus
                and r.concurrency == concurrency
                and r.input_tokens == input_tokens
                and r.output_tokens == output_tokens
                and r.quantity == quantity
            ):
                return r
        return None


def _prior_weight(n_rows: int) -> float:
    """$λ_n$ of :data:`PRIOR_ROWS` (see there): strong for 1–2 rows, :data:`SHRINK` for many.

    >>> round(_prior_weight(1), 2), round(_prior_weight(3), 2), _prior_weight(200) == SHRINK
    (0.43, 0.43, True)
    """
    lam = PRIOR_ROWS * (PRIOR_SIGMA_ROW / PRIOR_SIGMA_GROUP) ** 2 / max(1.0, n_rows / PRIOR_ROWS)
    return max(SHRINK, lam)


def huber(x: np.ndarray, delta: float = PRIOR_SIGMA_ROW) -> np.ndarray:
    """Huber's loss of log errors $x = \\ln(\\hat y / y)$: $x^2$ within $|x| \\le δ$, $2δ|x| - δ^2$
    beyond, with $δ = \\ln 1.3$ (the issue's ±30 % band: the prior's row scale
    :data:`PRIOR_SIGMA_ROW`, taken as is, not tuned). A row off by 10× then weighs
    $(2δ·\\ln 10 - δ^2)/δ^2$ ≈ 17 times a row at the band's edge, not $(\\ln 10/δ)^2$ ≈ 77 times: one
    measurement whose setting the model does not capture (a queue behind a cache limit, a
    warm-up) no longer sets a whole group's constants.

    >>> float(huber(np.array(0.1))) == 0.1 ** 2, round(float(huber(np.array(math.log(10)))), 3)
    (True, 1.139)
    """
    a = np.abs(x)
    return np.where(a <= delta, x * x, 2 * delta * a - delta * delta)


def _fit_group(
    name: str, grids: list[np.ndarray], parent: tuple[float, float, float, float], weight: float
) -> FittedConstants:
    eb = np.log(GRID_ETA_BW)[:, None, None, None]
    ec = np.log(GRID_ETA_COMPUTE)[None, :, None, None]
    tau = np.log(GRID_LAYER_OVERHEAD_S + TAU0_S)[None, None, :, None]
    ecd = np.log(GRID_ETA_DECODE_COMPUTE)[None, None, None, :]
    loss = np.zeros(_GRID_SHAPE) + weight * (
        (eb - math.log(parent[0])) ** 2
        + (ec - math.log(parent[1])) ** 2
        + (tau - math.log(parent[2] + TAU0_S)) ** 2
        + (ecd - math.log(parent[3])) ** 2
    )
    for g in grids:
        loss += huber(g)
    i, j, k, m = np.unravel_index(int(np.argmin(loss)), loss.shape)
    rms = math.sqrt(float(np.mean([g[i, j, k, min(m, g.shape[3] - 1)] ** 2 for g in grids]))) if grids else 0.0
    return FittedConstants(
        name,
        float(GRID_ETA_BW[i]),
        float(GRID_ETA_COMPUTE[j]),
        float(GRID_LAYER_OVERHEAD_S[k]),
        len(grids),
        rms,
        float(GRID_ETA_DECODE_COMPUTE[m]),
    )


def _summary(engine: str, cls: str, quantity: str, ratios: list[float]) -> HoldoutError:
    r = np.asarray(ratios)
    worst = float(r[np.argmax(np.abs(np.log(r)))])
    return HoldoutError(
        engine,
        cls,
        quantity,
        len(r),
        float(np.median(r)),
        float(np.mean(np.abs(r - 1) <= WITHIN)),
        worst,
        float(np.median(np.abs(r - 1)) * 100),
    )


def fit_calibration(rows: tuple[SpeedRow, ...], source: str = "") -> Calibration:
    """Fit on the ``fit`` rows, measure on the ``holdout`` rows (see the module docstring)."""
    skipped: list[tuple[str, str]] = []
    fit: list[tuple[SpeedRow, str, np.ndarray]] = []
    kinds: dict[str, str] = {}
    for r, inp in _plannable(rows, "fit", skipped):
        g = _log_ratio_grid(r)
        if g is None:
            skipped.append((r.id, f"{inp.device} has no compute figure for {r.quantity}"))
            continue
        fit.append((r, inp.hardware_class, g))
        kinds[r.id] = model_kind(inp.model)
    constants: dict = {}
    if fit:
        top = _fit_group("all", [g for _, _, g in fit], (1.0, 1.0, 0.0, 1.0), SHRINK / 5)
        constants[("*", "*")] = top
        engine_fit: dict = {}
        for eng in sorted({fit_engine(r) for r, _, _ in fit}):
            eg = [g for r, _, g in fit if fit_engine(r) == eng]
            engine_fit[eng] = _fit_group(f"{eng} (all classes)", eg, top.parent, _prior_weight(len(eg)))
            constants[(eng, "*")] = engine_fit[eng]
        for cls in sorted({c for _, c, _ in fit}):
            cg = [g for _, c, g in fit if c == cls]
            cfit = _fit_group(cls, cg, top.parent, _prior_weight(len(cg)))
            constants[("*", cls)] = cfit
            for eng in sorted({fit_engine(r) for r, c, _ in fit if c == cls}):
                eg = [g for r, c, g in fit if c == cls and fit_engine(r) == eng]
                # parent: the same engine over every class when it has more rows than this group
                # (τ and the kernels' efficiencies belong to the engine's code path), else the class
                par = engine_fit[eng] if engine_fit[eng].fit_rows > len(eg) else cfit
                ec = constants[(eng, cls)] = _fit_group(f"{eng} × {cls}", eg, par.parent, _prior_weight(len(eg)))
                for kind in sorted({kinds[r.id] for r, c, _ in fit if c == cls and fit_engine(r) == eng}):
                    kg = [g for r, c, g in fit if c == cls and fit_engine(r) == eng and kinds[r.id] == kind]
                    constants[(eng, cls, kind)] = _fit_group(
                        f"{eng} × {cls} × {kind}", kg, ec.parent, _prior_weight(len(kg))
                    )
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r, inp in _plannable(rows, "holdout", skipped):
        eng = fit_engine(r)
        c = most_specific_constants(constants, eng, inp.hardware_class, model_kind(inp.model))
        if c is None:
            continue
        pred = predict_row(r, c.efficiency)
        if pred is None:
            skipped.append((r.id, f"{inp.device} has no compute figure for {r.quantity}"))
            continue
        ratios.setdefault((eng, inp.hardware_class, r.quantity), []).append(float(pred) / r.value)
    by_eq: dict[tuple[str, str, str], list[float]] = {}
    by_class: dict[tuple[str, str, str], list[float]] = {}
    for (e, hw_cls, q), rs in ratios.items():
        by_eq.setdefault((e, "*", q), []).extend(rs)
        for key in ((e, hw_cls, q), (e, hw_cls, "*"), ("*", hw_cls, "*"), ("*", "*", "*")):
            by_class.setdefault(key, []).extend(rs)
    return Calibration(
        source,
        tuple(rows),
        constants,
        tuple(_summary(*k, v) for k, v in sorted(by_eq.items())),
        tuple(_summary(*k, v) for k, v in sorted(by_class.items())),
        tuple(skipped),
    )


@lru_cache(maxsize=8)
def _calibration_for(digest: str, text: str, source: str) -> Calibration:
    return fit_calibration(parse_speed_csv(text), source)


def calibration(path: str | Path | None = None) -> Calibration | None:
    """The fit of ``path`` (default ``data/measured/speed.csv``), cached by the file's content;
    None when the file does not exist (then every figure is a theoretical ceiling)."""
    p = Path(path) if path is not None else default_speed_path()
    if not p.is_file():
        return None
    text = p.read_text(encoding="utf-8")
    return _calibration_for(hashlib.sha256(text.encode()).hexdigest(), text, str(p))


def holdout_table(cal: Calibration | None = None, *, by: str = "quantity"):
    """The held-aside error as a pandas DataFrame, one row per group: ``by="quantity"`` per
    engine × quantity, ``by="class"`` per engine × hardware class (all quantities), ``by="all"``
    per engine × class × quantity. Columns: engine, hardware_class, quantity, rows,
    median_ratio (predicted ÷ measured), within_30_pct (share), worst_ratio (farthest from 1),
    median_abs_error_pct. ``cal`` defaults to the fit of ``data/measured/speed.csv``.

    >>> t = holdout_table()
    >>> list(t.columns)[:4]
    ['engine', 'hardware_class', 'quantity', 'rows']
    """
    import pandas as pd

    cal = calibration() if cal is None else cal
    if by not in ("quantity", "class", "all"):
        raise K3InputError("by", f"{by!r}", "quantity, class or all")
    cols = [
        "engine",
        "hardware_class",
        "quantity",
        "rows",
        "median_ratio",
        "within_30_pct",
        "worst_ratio",
        "median_abs_error_pct",
    ]
    if cal is None:
        return pd.DataFrame(columns=cols)
    if by == "quantity":
        groups = [h for h in cal.holdout if h.engine != "*"]
    elif by == "class":
        groups = [h for h in cal.holdout_by_class if h.engine != "*" and h.quantity == "*"]
    else:
        groups = [h for h in cal.holdout_by_class if h.engine != "*" and h.quantity != "*"]
    return pd.DataFrame(
        [
            [
                h.engine,
                h.hardware_class,
                h.quantity,
                h.rows,
                h.median_ratio,
                h.within_30_pct_share,
                h.worst_ratio,
                h.median_abs_error_pct,
            ]
            for h in groups
        ],
        columns=cols,
    )


def holdout_summary(cal: Calibration | None = None) -> dict:
    """All held-aside rows pooled: rows, share within ±30 %, and the medians farthest from 1 —
    per engine × class (``worst_class_median``: the issue's bar, no median off by > 1.5×), per
    engine × quantity (``worst_quantity_median``), and the farther of the two (``worst_median``)."""
    cal = calibration() if cal is None else cal
    if cal is None:  # no data/measured/speed.csv: nothing held aside (as holdout_table's empty table)
        return {"rows": 0, "within_30_pct": None, "worst_median": None, "skipped": 0}
    pooled = next(h for h in cal.holdout_by_class if h.engine == "*" and h.hardware_class == "*")
    by_quantity = [h for h in cal.holdout if h.engine != "*"]
    by_class = [h for h in cal.holdout_by_class if h.engine != "*" and h.quantity == "*"]

    def worst(groups):
        w = max(groups, key=lambda h: abs(math.log(h.median_ratio)))
        return w.engine, w.hardware_class, w.quantity, w.median_ratio

    return {
        "rows": pooled.rows,
        "within_30_pct": pooled.within_30_pct_share,
        "worst_median": worst(by_quantity + by_class),
        "worst_class_median": worst(by_class),
        "worst_quantity_median": worst(by_quantity),
        "skipped": len(cal.skipped),
    }


def holdout_markdown(cal: Calibration | None = None, *, by: str = "quantity") -> str:
    """:func:`holdout_table` as a Markdown table (for the README and the report)."""
    t = holdout_table(cal, by=by)
    lines = [
        "| engine | class | quantity | rows | median ratio | within ±30 % | worst |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in t.itertuples():
        lines.append(
            f"| {r.engine} | {r.hardware_class} | {r.quantity} | {r.rows} | {r.median_ratio:.2f} | "
            f"{r.within_30_pct * 100:.0f} % | {r.worst_ratio:.2f} |"
        )
    return "\n".join(lines)
