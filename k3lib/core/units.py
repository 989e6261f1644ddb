"""Units and parsing: bytes inside, GB (10^9) or GiB (2^30) only at the edges.

Context strings follow the guides: ``K`` = 1,024 tokens and ``M`` = 1,048,576
tokens, so ``256K`` is 262,144 tokens.

>>> parse_context_tokens("256K")
262144
>>> parse_size_bytes("8GiB")
8589934592
>>> bytes_to_gb(parse_size_bytes("8GB"))
8.0
"""
from __future__ import annotations

import math
import re

from k3lib.core.errors import K3InputError

GB = 10**9
GiB = 2**30
MB = 10**6
MiB = 2**20
KiB = 2**10

_CONTEXT_SUFFIX = {"": 1, "K": 1024, "M": 1024**2}
_SIZE_SUFFIX = {
    "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
}


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes → decimal gigabytes (10^9)."""
    return n_bytes / GB


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes → binary gibibytes (2^30)."""
    return n_bytes / GiB


def gb_to_bytes(gb: float) -> int:
    """Decimal gigabytes → bytes, rounded to the nearest byte."""
    return int(round(gb * GB))


def gib_to_bytes(gib: float) -> int:
    """Binary gibibytes → bytes, rounded to the nearest byte."""
    return int(round(gib * GiB))


def parse_context_tokens(value: object, field: str = "context") -> int:
    """Parse a context length: ``128K``, ``256k``, ``1M``, ``1048576`` or an int.

    ``K`` means 1,024 tokens (256K = 262,144), ``M`` means 1,048,576.
    Zero, negative, fractional-token and non-numeric values raise
    :class:`K3InputError` naming ``field``.
    """
    allowed = "a positive whole number of tokens, e.g. 131072, 128K, 256k, 1M"
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a context length", allowed)
    if isinstance(value, int):
        tokens = value
    elif isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise K3InputError(field, f"{value!r} is not a whole number of tokens", allowed)
        tokens = int(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        m = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)\s*([kKmM]?)", text)
        if not m:
            raise K3InputError(field, f"{value!r} is not a context length", allowed)
        number = float(m.group(1)) * _CONTEXT_SUFFIX[m.group(2).upper()]
        if number != int(number):
            raise K3InputError(field, f"{value!r} is not a whole number of tokens", allowed)
        tokens = int(number)
    else:
        raise K3InputError(field, f"{value!r} is not a context length", allowed)
    if tokens <= 0:
        raise K3InputError(field, f"{value!r} must be greater than zero", allowed)
    return tokens


def parse_size_bytes(value: object, field: str = "size") -> int:
    """Parse a memory size: ``8GB`` (8·10^9), ``8GiB`` (8·2^30), ``512MiB`` or bytes.

    A bare number is bytes. Negative, non-finite and non-numeric values raise
    :class:`K3InputError` naming ``field``.
    """
    allowed = "a size with a unit, e.g. 8GB (10^9 bytes), 8GiB (2^30 bytes), or a byte count"
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a size", allowed)
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise K3InputError(field, f"{value!r} is not a size", allowed)
        n = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        m = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)\s*([a-zA-Z]*)", text)
        if not m or m.group(2).upper() not in _SIZE_SUFFIX and m.group(2) != "":
            raise K3InputError(field, f"{value!r} is not a size", allowed)
        n = float(m.group(1)) * _SIZE_SUFFIX.get(m.group(2).upper() or "B")
    else:
        raise K3InputError(field, f"{value!r} is not a size", allowed)
    if n < 0:
        raise K3InputError(field, f"{value!r} must not be negative", allowed)
    return int(round(n))


def parse_positive_int(value: object, field: str, allowed: str = "a whole number ≥ 1") -> int:
    """Parse a count such as a GPU count or batch size (≥ 1)."""
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a whole number", allowed)
    try:
        if isinstance(value, str):
            value = value.strip()
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise K3InputError(field, f"{value!r} is not a whole number", allowed) from None
    if not math.isfinite(f) or f != int(f):
        raise K3InputError(field, f"{value!r} is not a whole number", allowed)
    if f < 1:
        raise K3InputError(field, f"{value!r} must be at least 1", allowed)
    return int(f)


def format_bytes(n_bytes: float, unit: str = "GiB", digits: int = 1) -> str:
    """Format a byte count in GB or GiB, naming the unit."""
    div = {"GB": GB, "GiB": GiB, "MB": MB, "MiB": MiB, "TB": 10**12}[unit]
    return f"{n_bytes / div:,.{digits}f} {unit}"
