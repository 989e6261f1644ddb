"""Formatting shared by the workbook's tables: one unit per table (GiB by default, or GB),
named in the column; sizes rounded to 2 decimals, percentages to 1; precision labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB, context_label  # noqa: F401  (re-exported for the tables)

if TYPE_CHECKING:
    import pandas as pd

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
    return {"bf16": "BF16", "fp8": "FP8", "int4": "INT4", "q8": "Q8", "q4": "Q4", "q2": "Q2", "native": "native"}.get(
        fmt_or_dtype, fmt_or_dtype
    )


def shown(
    data: pd.DataFrame | Mapping[str, object], *, decimals: int = 2, columns: tuple[str, ...] | None = None
) -> pd.DataFrame:
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


# ---------------------------------------------------------------- the display layer

#: a column name's trailing unit token and how a header writes it: ``kv_cache_GiB`` → "kv cache (GiB)"
HEADER_UNITS = {
    "GiB": "GiB",
    "GB": "GB",
    "TiB": "TiB",
    "TB": "TB",
    "MiB": "MiB",
    "MB": "MB",
    "KiB": "KiB",
    "B": "B",
    "bytes": "B",
    "pct": "%",
    "percent": "%",
    "s": "s",
    "ms": "ms",
    "W": "W",
    "tok_s": "tokens/s",
    "GBps": "GB/s",
    "USD": "USD",
    "bits": "bits",
}


def reader_header(name: object) -> str:
    """A column name as a header: underscores become spaces and a trailing unit token goes in
    brackets; a header already written for a reader (with a space or a bracket) is kept.

    >>> [reader_header(c) for c in ("kv_cache_GiB", "saved_pct", "decode_tok_s", "link (GB/s)", "gpus")]
    ['kv cache (GiB)', 'saved (%)', 'decode (tokens/s)', 'link (GB/s)', 'gpus']
    """
    text = str(name)
    if " " in text or "(" in text:
        return text
    for token in sorted(HEADER_UNITS, key=len, reverse=True):
        if text.endswith("_" + token) and len(text) > len(token) + 1:
            return f"{text[: -len(token) - 1].replace('_', ' ')} ({HEADER_UNITS[token]})"
    return text.replace("_", " ")


def reader_number(x: object, decimals: int = 2, *, whole: bool = True) -> object:
    """One cell as a reader reads it (strings and other objects unchanged).

    * missing (``None``, ``NaN``, ``<NA>``) → "—"; a bool → "yes"/"no";
    * an integer → thousands separators (``262,144``);
    * a float → ``decimals`` places, separators above 999, no decimals when it is a whole number
      of 1,000 or more (``whole=False`` keeps them, for a column of fractions), and enough places
      for two significant digits when it is smaller than ``decimals`` would show (never
      ``e+``/``e-``); a tuple or list → its items joined by ", ".

    >>> [reader_number(v) for v in (262144, 262144.0, 1506.3249, 0.000123, float("nan"), True, ("a", 2))]
    ['262,144', '262,144', '1,506.32', '0.00012', '—', 'yes', 'a, 2']
    """
    import math
    import numbers

    if isinstance(x, (tuple, list)):
        return ", ".join(str(reader_number(v, decimals, whole=whole)) for v in x)
    if x is None or (isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) and math.isnan(float(x))):
        return "—"
    if type(x).__name__ in ("NAType", "NaTType"):
        return "—"
    if isinstance(x, bool) or type(x).__name__ == "bool_":
        return "yes" if x else "no"
    if isinstance(x, numbers.Integral):
        return f"{int(x):,}"
    if isinstance(x, numbers.Real):
        x = float(x)
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        if x.is_integer() and (abs(x) >= 1000 and whole or decimals == 0):
            return f"{x:,.0f}"
        places = decimals
        if x != 0 and abs(x) < 0.5 * 10**-decimals:
            places = min(12, 1 - math.floor(math.log10(abs(x))))
        return f"{x:,.{places}f}"
    return x


class ReaderTable:
    """A table as a reader sees it: cells formatted by :func:`reader_number`, headers by
    :func:`reader_header`, and **no index**, in JupyterLab (HTML) and as text alike.
    ``frame`` is the formatted DataFrame (all strings) for tests and further use."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    def _repr_html_(self) -> str:
        return self.frame.to_html(index=False, border=0, classes="dataframe k3-table")

    def __repr__(self) -> str:
        return self.frame.to_string(index=False)

    def to_string(self) -> str:
        return repr(self)


def reader_table(
    data: pd.DataFrame | Mapping[str, object],
    *,
    decimals: int = 2,
    headers: bool = True,
    columns: tuple[str, ...] | None = None,
) -> ReaderTable:
    """What a reader should see of ``data`` (a DataFrame, or a mapping ``{item: value}`` shown as
    ``item | value`` rows named by ``columns``): the index hidden (a named, non-default index
    becomes the first column), integers with thousands separators, floats to ``decimals`` places
    (:func:`reader_number`; fewer when every float of a column needs fewer), a missing value as "—", and headers that keep their unit
    (``kv_cache_GiB`` → "kv cache (GiB)"; ``headers=False`` keeps the names as they are).

    >>> import pandas as pd
    >>> t = reader_table(pd.DataFrame({"context_tokens": [131072, 262144], "kv_GiB": [3.375, None]}))
    >>> print(t)
    context tokens kv (GiB)
           131,072     3.38
           262,144        —
    >>> "<th>0</th>" in t._repr_html_() or "NaN" in t._repr_html_()
    False
    >>> reader_table(pd.DataFrame({"total_GiB": [1452.8]}, index=["weights"])).frame.columns.tolist()
    ['', 'total (GiB)']
    >>> cols = pd.MultiIndex.from_tuples([("guide-000", "real K3"), ("all", "real K3")])
    >>> reader_table(pd.DataFrame([[64, 102]], columns=cols, index=pd.Index(["contradicted"], name="verdict"))).frame.columns.tolist()
    ['verdict', 'guide-000 · real K3', 'all · real K3']
    """
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        data = pd.DataFrame(list(dict(data).items()), columns=list(columns or ("item", "value")))
    df = data
    if isinstance(df.columns, pd.MultiIndex):  # ("guide-000", "real K3") → "guide-000 · real K3"
        df = df.copy()
        df.columns = [" · ".join(str(p) for p in c if str(p) != "") for c in df.columns]
    if not isinstance(df.index, pd.RangeIndex) and not all(str(i) == "" for i in df.index):
        names = [n if n is not None else "" for n in df.index.names]
        df = df.rename_axis(names).reset_index()  # row labels ("KV cache", "256K") become a column

    def column(col: pd.Series) -> pd.Series:
        # one number of places per column, the fewest (up to ``decimals``) that show every float in
        # it: none for token or GPU counts stored as floats, 1 for percentages rounded to 0.1, so
        # 1,346.00 sits over 1,343.50 and 24.2 is not written 24.20
        floats = [x for x in col if isinstance(x, float) and x == x and abs(x) != float("inf")]
        places = max(
            (next(d for d in range(decimals + 1) if round(x, d) == round(x, decimals)) for x in floats),
            default=decimals,
        )
        return col.map(lambda x: reader_number(x, places, whole=False))

    df = df.astype(object).apply(column)
    df = df.reset_index(drop=True)
    if headers:
        df.columns = [reader_header(c) for c in df.columns]
    return ReaderTable(df)
