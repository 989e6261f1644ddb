"""Formatting shared by the workbook's tables: one unit per table (GiB by default, or GB),
named in the column; sizes rounded to 2 decimals, percentages to 1; precision labels."""
from __future__ import annotations

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB, context_label  # noqa: F401  (re-exported for the tables)

_UNITS = {"GiB": GiB, "GB": GB}


def _div(unit: str) -> int:
    if unit not in _UNITS:
        raise K3InputError("unit", f"{unit!r} is not a table unit", "GiB, GB")
    return _UNITS[unit]


def _size(n_bytes: float, unit: str) -> float:
    return round(n_bytes / _div(unit), 2)


def _pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 1)


def _label(fmt_or_dtype: str) -> str:
    return {"bf16": "BF16", "fp8": "FP8", "int4": "INT4", "q8": "Q8", "q4": "Q4", "q2": "Q2",
            "native": "native"}.get(fmt_or_dtype, fmt_or_dtype)
