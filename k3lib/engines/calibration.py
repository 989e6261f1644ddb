"""The vLLM profile against what vLLM 0.19 printed on H100 (data/measured/vllm-0.19-h100-sweep.csv)."""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from k3lib.core.data import DATA_DIR
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import kind_of, kinds_in
from k3lib.core.units import GiB
from k3lib.engines.vllm import (
    vllm_activation_peak_bytes,
    vllm_kv_layout,
    vllm_kv_tokens_interval,
    vllm_non_torch_bytes,
    vllm_weights_bytes_per_rank,
)

# ---------------------------------------------------------------------------
# calibration against data/measured
# ---------------------------------------------------------------------------

MEASURED_DIR = DATA_DIR / "measured"
VLLM_SWEEP_CSV = MEASURED_DIR / "vllm-0.19-h100-sweep.csv"
CALIBRATION_MODELS_CSV = MEASURED_DIR / "calibration_models.csv"


@dataclass(frozen=True)
class CalibrationRow:
    """One measured figure, the profile's prediction, and the error."""

    id: str
    model: str
    tp: int
    quantity: str
    measured: float
    predicted: float
    unit: str
    error: float
    error_pct: float
    tolerance: float
    within: bool
    kind: str
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@cache
def _calibration_models() -> dict[str, dict[str, str]]:
    with open(CALIBRATION_MODELS_CSV, newline="", encoding="utf-8") as fh:
        return {r["model"]: {k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)}


def read_vllm_sweep() -> list[dict[str, str]]:
    """The 87 rows of ``data/measured/vllm-0.19-h100-sweep.csv``."""
    with open(VLLM_SWEEP_CSV, newline="", encoding="utf-8") as fh:
        return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(fh)]


@cache
def calibration_model(hf_repo: str):
    """The :class:`~k3lib.loaders.LoadedModel` of a sweep model (its config in data/measured/configs)."""
    import warnings

    from k3lib.loaders import load_config

    row = _calibration_models().get(hf_repo)
    if row is None:
        raise K3InputError("model", f"{hf_repo!r} has no config in {CALIBRATION_MODELS_CSV.name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_config(MEASURED_DIR / "configs" / row["config_file"], id=hf_repo.split("/")[-1])


def _row_dtypes(row: Mapping[str, str]) -> tuple[int | None, float, str]:
    """(dtype override bytes, KV bytes per element, kv label) from a sweep row."""
    wd, kd = row["weights_dtype"].lower(), row["kv_dtype"].lower()
    dtype = 4 if wd.startswith("float32") else None
    kv_b = 1.0 if kd.startswith("fp8") else 4.0 if kd.startswith("float32") else 2.0
    return dtype, kv_b, kd.split(" ")[0]


def _utilization(row: Mapping[str, str]) -> float:
    text = row["gpu"]
    i = text.find("gpu_memory_utilization=")
    return float(text[i + len("gpu_memory_utilization=") :].rstrip(")").split(";")[0]) if i >= 0 else 0.9


def vllm_calibration(*, total_memory_bytes: int | None = None) -> tuple[CalibrationRow, ...]:
    """Predict every figure of the vLLM 0.19 sweep and report the error of each.

    * ``kv_cache_tokens``: from the row's printed available memory (so only the
      paging rules are tested). Tolerance: the printed GiB is rounded to 0.01, so
      the prediction is an interval (:func:`vllm_kv_tokens_interval`); ``within`` =
      the printed count lies in it, widened by one block. ``error`` is in tokens
      from the printed figure's value.
    * ``weights_memory_per_gpu``: the weights rule; tolerance 3 %.
    * ``kv_cache_memory_per_gpu``: end to end (budget − weights − activation −
      non-torch); tolerance 0.5 GiB.
    """
    from k3lib.core.hardware import get_gpu

    total = total_memory_bytes or get_gpu("h100-sxm").memory_bytes("usable")
    rows = read_vllm_sweep()
    by_run: dict[str, dict[str, dict[str, str]]] = {}
    for r in rows:
        by_run.setdefault(r["source"], {})[r["quantity"]] = r
    reasons = {m: r.get("notes", "") for m, r in _calibration_models().items()}
    out: list[CalibrationRow] = []
    for r in rows:
        run = by_run[r["source"]]
        model = calibration_model(r["model"])
        arch = model.architecture
        tp = int(r["tp"])
        dtype, kv_b, kv_label = _row_dtypes(r)
        base_b = dtype or model.dtype_bytes
        measured = float(r["value"])
        kind = (
            "hybrid" if len(kinds_in(arch.attention)) > 1 else "mla" if kind_of(arch.attention[0]).latent else "dense"
        )
        if r["quantity"] == "kv_cache_tokens":
            printed = float(run["kv_cache_memory_per_gpu"]["value"])
            layout = vllm_kv_layout(model, tp=tp, kv_dtype=kv_b, dtype_bytes=base_b)
            pred: float = layout.tokens(int(printed * GiB))
            lo, hi = vllm_kv_tokens_interval(model, printed_gib=printed, tp=tp, kv_dtype=kv_b, dtype_bytes=base_b)
            lo, hi = lo - layout.block_tokens, hi + layout.block_tokens
            err = measured - pred
            tol = max(pred - lo, hi - pred)
            within = lo <= measured <= hi
            out.append(
                CalibrationRow(
                    r["id"],
                    r["model"],
                    tp,
                    r["quantity"],
                    measured,
                    pred,
                    "tokens",
                    err,
                    100 * err / measured,
                    tol,
                    within,
                    kind,
                    "" if within else reasons.get(r["model"], ""),
                )
            )
        elif r["quantity"] == "weights_memory_per_gpu":
            pred = vllm_weights_bytes_per_rank(model, tp=tp, dtype_bytes=dtype)["total"] / GiB
            err = pred - measured
            pct = 100 * err / measured
            within = abs(pct) <= 3.0
            out.append(
                CalibrationRow(
                    r["id"],
                    r["model"],
                    tp,
                    r["quantity"],
                    measured,
                    round(pred, 4),
                    "GiB",
                    round(err, 4),
                    round(pct, 3),
                    3.0,
                    within,
                    kind,
                    "" if within else reasons.get(r["model"], ""),
                )
            )
        else:
            util = _utilization(r)
            act = vllm_activation_peak_bytes(model, tp=tp, dtype_bytes=base_b)
            pred_b = (
                util * total
                - vllm_weights_bytes_per_rank(model, tp=tp, dtype_bytes=dtype)["total"]
                - act
                - vllm_non_torch_bytes(tp=tp)
            )
            pred = pred_b / GiB
            err = pred - measured
            within = abs(err) <= 0.5
            out.append(
                CalibrationRow(
                    r["id"],
                    r["model"],
                    tp,
                    r["quantity"],
                    measured,
                    round(pred, 4),
                    "GiB",
                    round(err, 4),
                    round(100 * err / measured, 3),
                    0.5,
                    within,
                    kind,
                    "" if within else reasons.get(r["model"], ""),
                )
            )
    return tuple(out)


def calibration_summary(rows: tuple[CalibrationRow, ...] | None = None) -> dict[str, dict[str, int]]:
    """{quantity: {"rows": n, "within": n}} over :func:`vllm_calibration`."""
    rows = rows if rows is not None else vllm_calibration()
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        s = out.setdefault(r.quantity, {"rows": 0, "within": 0})
        s["rows"] += 1
        s["within"] += int(r.within)
    return out
