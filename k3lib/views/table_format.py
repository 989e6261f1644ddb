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


def shown(data: "object", *, decimals: int = 2, columns: "tuple[str, ...] | None" = None) -> "object":
    """A table for a reader (a DataFrame of strings, default index dropped): integers with
    thousands separators, floats to at most ``decimals`` places (never ``e+``), a missing value
    as "—" (never ``NaN``/``<NA>``). ``data`` is a DataFrame or a mapping ``{item: value}``
    (a step's figure and reason, say) shown as ``item | value`` rows, ``columns`` naming them.

    >>> shown({"budget": "576.0 GiB", "GPUs": 12345678901})["value"].tolist()
    ['576.0 GiB', '12,345,678,901']
    >>> shown(__import__("pandas").DataFrame({"x": [262144.0, None, 0.123456]}))["x"].tolist()
    ['262,144', '—', '0.12']
    """
    import math
    import numbers

    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        data = pd.DataFrame(list(dict(data).items()), columns=list(columns or ("item", "value")))
    df = data.copy()
    if isinstance(df.index, pd.RangeIndex):
        df.index = [""] * len(df)

    def cell(x: object) -> object:
        if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)):
            return "—"
        if isinstance(x, bool):
            return "yes" if x else "no"
        if isinstance(x, numbers.Integral):
            return f"{int(x):,}"
        if isinstance(x, numbers.Real):
            x = float(x)
            if x.is_integer() and abs(x) >= 1000:
                return f"{x:,.0f}"
            return f"{x:,.{decimals}f}"
        return x

    return df.astype(object).apply(lambda col: col.map(cell))
