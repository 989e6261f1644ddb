"""Rental prices per GPU-hour: a dated, sourced table (``data/prices.csv``).

Each row is one published price: ``gpu_id`` (a ``data/hardware.csv`` id), ``provider``,
``offering`` (``on-demand``, ``marketplace`` — a live marketplace rate such as Vast.ai's —,
``interruptible``, ``reserved`` or ``index`` — a published price index), ``usd_per_gpu_hour``,
``date`` (``YYYY-MM`` or ``YYYY-MM-DD``: when the price held), ``source`` (a URL), and notes.
Prices move every month; every figure :func:`price_per_gpu_hour` returns says which rows
it is the median of, and a price the user gives overrides the table.

>>> q = price_per_gpu_hour("h100")
>>> q.usd_per_gpu_hour > 0 and "median of" in q.basis
True
>>> price_per_gpu_hour("h100", user_price=1.5).basis
'user-supplied price'
>>> price_per_gpu_hour("m4-max-128gb") is None     # nobody rents Macs by the hour in the table
True
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from k3lib.core.data import DATA_DIR, read_csv_file
from k3lib.core.errors import K3InputError

if TYPE_CHECKING:
    from k3lib.core.hardware import GPUSpec

PRICES_CSV = "prices.csv"
CSV_COLUMNS = ("gpu_id", "provider", "offering", "usd_per_gpu_hour", "date", "source", "verification", "notes")
OFFERINGS = ("on-demand", "marketplace", "interruptible", "reserved", "index")
#: what a default estimate is the median of: prices anyone can rent at now, without commitment or preemption
DEFAULT_OFFERINGS = ("on-demand", "marketplace")
VERIFICATION_LEVELS = ("retrieved", "partially retrieved", "recalled - verify")
DATE_RE = re.compile(r"\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?")


@dataclass(frozen=True, kw_only=True)
class PriceRow:
    """One published price per GPU-hour (US dollars)."""

    gpu_id: str
    provider: str
    offering: str
    usd_per_gpu_hour: float
    date: str
    source: str
    verification: str
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("gpu_id", "provider", "source"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise K3InputError(name, f"{value!r} must be a non-empty string")
        if self.offering not in OFFERINGS:
            raise K3InputError("offering", f"{self.offering!r} is not a known offering", ", ".join(OFFERINGS))
        value = self.usd_per_gpu_hour
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise K3InputError("usd_per_gpu_hour", f"{value!r} must be a finite number > 0")
        if not isinstance(self.date, str) or not DATE_RE.fullmatch(self.date):
            raise K3InputError("date", f"{self.date!r} is not a date", "YYYY-MM or YYYY-MM-DD")
        if not self.source.startswith(("http://", "https://")):
            raise K3InputError("source", f"{self.source!r} is not a URL", "http(s)://…")
        if self.verification not in VERIFICATION_LEVELS:
            raise K3InputError(
                "verification", f"{self.verification!r} is not a known level", ", ".join(VERIFICATION_LEVELS)
            )


@dataclass(frozen=True, kw_only=True)
class PriceQuote:
    """A price per GPU-hour with what it rests on.

    ``basis`` is a sentence for a report ("median of 6 on-demand/marketplace prices,
    2026-01 to 2026-06 (aws, lambda, …)" or "user-supplied price"); ``rows`` are the
    table rows behind it (empty for a user's price).
    """

    usd_per_gpu_hour: float
    basis: str
    rows: tuple[PriceRow, ...] = ()


def _from_row(row: dict[str, str], line: int) -> PriceRow:
    label = f"prices.csv[{line}:{row.get('gpu_id') or '?'}]"
    text = row.get("usd_per_gpu_hour", "")
    try:
        usd = float(text)
    except ValueError:
        raise K3InputError(f"{label}.usd_per_gpu_hour", f"{text!r} is not a plain number", "digits only") from None
    try:
        return PriceRow(
            gpu_id=row["gpu_id"],
            provider=row["provider"],
            offering=row["offering"],
            usd_per_gpu_hour=usd,
            date=row["date"],
            source=row["source"],
            verification=row["verification"],
            notes=row["notes"],
        )
    except K3InputError as exc:
        raise K3InputError(f"{label}.{exc.field}", str(exc).split(": ", 1)[-1]) from None


@cache
def _load(path_text: str) -> tuple[PriceRow, ...]:
    rows = read_csv_file(path_text, "prices.csv", CSV_COLUMNS)
    return tuple(_from_row(r, i + 2) for i, r in enumerate(rows))


def load_prices(path: str | Path | None = None) -> tuple[PriceRow, ...]:
    """All rows of ``data/prices.csv`` (or ``path``), in file order (cached).

    A malformed cell raises :class:`K3InputError` naming ``prices.csv[<line>:<gpu_id>].<column>``.
    """
    resolved = Path(path) if path is not None else DATA_DIR / PRICES_CSV
    return _load(str(resolved.resolve()))


def prices_for(
    gpu: GPUSpec | str, provider: str | None = None, *, offerings: tuple[str, ...] = DEFAULT_OFFERINGS
) -> list[PriceRow]:
    """The rows for a GPU (a :class:`~k3lib.core.hardware.GPUSpec`, id or alias), optionally one provider's."""
    from k3lib.core.hardware import GPUSpec, get_gpu

    gpu_id = gpu.id if isinstance(gpu, GPUSpec) else get_gpu(gpu).id
    bad = [o for o in offerings if o not in OFFERINGS]
    if bad:
        raise K3InputError("offerings", f"{bad} are not known offerings", ", ".join(OFFERINGS))
    wanted = None if provider is None else provider.strip().lower()
    return [
        r
        for r in load_prices()
        if r.gpu_id == gpu_id and r.offering in offerings and (wanted is None or r.provider.lower() == wanted)
    ]


def price_per_gpu_hour(
    gpu: GPUSpec | str,
    provider: str | None = None,
    *,
    user_price: float | None = None,
    offerings: tuple[str, ...] = DEFAULT_OFFERINGS,
) -> PriceQuote | None:
    """A rental price per GPU-hour for ``gpu``, with its basis.

    ``user_price`` (dollars per GPU-hour) wins when given. Otherwise the median of the
    table's rows for the GPU — one provider's when ``provider`` is given — over
    ``offerings`` (default: on-demand list prices and marketplace rates; pass e.g.
    ``("reserved",)`` or ``("index",)`` for others). ``None`` when no row matches: the
    caller reports "no price" rather than a guess.
    """
    if user_price is not None:
        if (
            isinstance(user_price, bool)
            or not isinstance(user_price, (int, float))
            or not math.isfinite(user_price)
            or user_price <= 0
        ):
            raise K3InputError(
                "price_per_gpu_hour", f"{user_price!r} must be a finite number > 0", "dollars per GPU-hour"
            )
        return PriceQuote(usd_per_gpu_hour=float(user_price), basis="user-supplied price")
    rows = prices_for(gpu, provider, offerings=offerings)
    if not rows:
        return None
    median = statistics.median(r.usd_per_gpu_hour for r in rows)
    dates = sorted(r.date for r in rows)
    span = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    providers = ", ".join(sorted({r.provider for r in rows}))
    what = "/".join(o for o in offerings if any(r.offering == o for r in rows))
    noun = "price" if len(rows) == 1 else "prices"
    basis = (
        f"median of {len(rows)} dated {what} {noun} per GPU-hour, {span} ({providers}); "
        f"data/prices.csv — prices move, give your own with --price-per-gpu-hour"
    )
    return PriceQuote(usd_per_gpu_hour=float(median), basis=basis, rows=tuple(rows))
