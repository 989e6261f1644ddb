"""Weight formats and KV-cache dtypes, read from ``data/weight_formats.csv`` and
``data/kv_dtypes.csv``.

Bits per weight include block scales: GGUF Q8_0 stores 32 weights in 34 bytes,
so ``bits_per_weight = 34·8/32 = 8.5``. KV dtypes carry bytes per element the
same way (q8_0: 34/32 = 1.0625 B).

>>> get_weight_format("Q4_K_M").bits_per_weight
4.5
>>> get_kv_dtype("fp8").bytes_per_element
1.0
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from k3lib.core.data import normalise_name, read_csv_rows
from k3lib.core.errors import K3InputError, UnknownNameError


@dataclass(frozen=True)
class WeightFormat:
    """A weight storage format. ``bits_per_weight`` is None only for ``native``."""

    id: str
    name: str
    aliases: tuple[str, ...]
    bits_per_weight: float | None
    kind: str
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        if self.bits_per_weight is not None and not self.bits_per_weight > 0:
            raise K3InputError("bits_per_weight", f"{self.bits_per_weight!r} must be > 0")

    @property
    def bytes_per_weight(self) -> float:
        """Bytes per weight = bits_per_weight / 8."""
        if self.bits_per_weight is None:
            raise K3InputError("weights", "'native' has no single size; ask the model for its native bytes")
        return self.bits_per_weight / 8

    @property
    def is_native(self) -> bool:
        return self.bits_per_weight is None


@dataclass(frozen=True)
class KVDtype:
    """A KV-cache element type; ``bytes_per_element`` includes block scales."""

    id: str
    name: str
    aliases: tuple[str, ...]
    bytes_per_element: float
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.bytes_per_element > 0:
            raise K3InputError("bytes_per_element", f"{self.bytes_per_element!r} must be > 0")


@lru_cache(maxsize=None)
def weight_formats() -> tuple[WeightFormat, ...]:
    """All weight formats in ``data/weight_formats.csv``."""
    return tuple(
        WeightFormat(
            id=r["id"], name=r["name"], aliases=tuple(a for a in r["aliases"].split(";") if a),
            bits_per_weight=float(r["bits_per_weight"]) if r["bits_per_weight"] else None,
            kind=r["kind"], source=r["source"], notes=r["notes"],
        )
        for r in read_csv_rows("weight_formats.csv")
    )


@lru_cache(maxsize=None)
def kv_dtypes() -> tuple[KVDtype, ...]:
    """All KV-cache dtypes in ``data/kv_dtypes.csv``."""
    return tuple(
        KVDtype(
            id=r["id"], name=r["name"], aliases=tuple(a for a in r["aliases"].split(";") if a),
            bytes_per_element=float(r["bytes_per_element"]), source=r["source"], notes=r["notes"],
        )
        for r in read_csv_rows("kv_dtypes.csv")
    )


@lru_cache(maxsize=None)
def _index(items: tuple) -> dict:
    """Normalised id and aliases → item (first row wins)."""
    out: dict = {}
    for item in items:
        for key in (item.id, *item.aliases):
            out.setdefault(normalise_name(key), item)
    return out


def _lookup(items, name, field):
    if isinstance(name, (WeightFormat, KVDtype)):
        return name
    found = _index(items).get(normalise_name(name))
    if found is None:
        raise UnknownNameError(field, str(name), [i.id for i in items])
    return found


def get_weight_format(name: "str | WeightFormat") -> WeightFormat:
    """Look up a weight format by id or alias (case-insensitive)."""
    return _lookup(weight_formats(), name, "weights")


def get_kv_dtype(name: "str | KVDtype") -> KVDtype:
    """Look up a KV-cache dtype by id or alias (case-insensitive)."""
    return _lookup(kv_dtypes(), name, "kv_dtype")
