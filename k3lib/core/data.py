"""Reading the project's data tables (no import-time I/O).

The tables live in the repository's top-level ``data/`` folder, which ``pyproject.toml``
installs as the package ``k3lib.data`` (setuptools ``package-dir``), so a wheel carries
them and an editable install maps the package onto the checkout's folder. Files are read
through :mod:`importlib.resources` (:func:`data_file`); :data:`DATA_DIR` is the folder on
disk for code that globs or writes it (a wheel unpacked in site-packages, or the checkout).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import Literal, Protocol, TypeVar, overload

from k3lib.core.errors import K3InputError

DATA_PACKAGE = "k3lib.data"
#: The checkout's ``data/`` folder: used only when ``k3lib.data`` is not importable
#: (an editable install made before ``data/`` became a package).
CHECKOUT_DATA_DIR = Path(__file__).resolve().parents[2] / "data"


@lru_cache(maxsize=1)
def data_root() -> Traversable:
    """The data tables as an :mod:`importlib.resources` traversable: the installed
    package ``k3lib.data``, else the checkout's ``data/`` folder."""
    try:
        return resources.files(DATA_PACKAGE)
    except ModuleNotFoundError:
        return CHECKOUT_DATA_DIR


def data_file(*parts: str) -> Traversable:
    """One data file, e.g. ``data_file("models", "kimi-k3.json")``."""
    node = data_root()
    for part in parts:
        node = node.joinpath(part)
    return node


def read_data_text(*parts: str) -> str:
    """A data file's text (UTF-8)."""
    return data_file(*parts).read_text(encoding="utf-8")


@cache
def read_csv_rows(name: str) -> tuple[dict[str, str], ...]:
    """Rows of ``data/<name>`` as dicts of stripped strings (cached)."""
    with io.StringIO(read_data_text(*name.split("/")), newline="") as fh:
        return tuple({k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh))


def read_csv_file(path_text: str, label: str, columns: Sequence[str]) -> list[dict[str, str]]:
    """The rows of a data CSV at ``path_text`` as dicts of stripped strings, after checking
    that every one of ``columns`` is there (one K3InputError naming ``label`` otherwise)."""
    with open(path_text, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or ())]
        if missing:
            raise K3InputError(label, f"missing columns {missing}", ", ".join(columns))
        return [{k: (v or "").strip() for k, v in row.items() if k is not None} for row in reader]


@overload
def csv_number(
    row: dict[str, str], column: str, label: str, *, required: Literal[True], positive: bool = False
) -> float: ...
@overload
def csv_number(
    row: dict[str, str], column: str, label: str, *, required: bool, positive: bool = False
) -> float | None: ...
def csv_number(row: dict[str, str], column: str, label: str, *, required: bool, positive: bool = False) -> float | None:
    """A plain number from one cell of a data CSV (``label`` names the file), None when empty and
    not ``required``; anything else (``~80``, ``80GB``, ``nan``, ≤ 0 when ``positive``) is one
    K3InputError naming ``file[row id].column``."""
    import math

    text = row.get(column, "").strip()
    field_name = f"{label}[{row.get('id') or '?'}].{column}"
    if not text:
        if required:
            raise K3InputError(field_name, "is empty", "a plain number")
        return None
    try:
        value = float(text)
    except ValueError:
        raise K3InputError(field_name, f"{text!r} is not a plain number", "digits only, no ~ or units") from None
    if not math.isfinite(value):
        raise K3InputError(field_name, f"{text!r} is not finite")
    if positive and value <= 0:
        raise K3InputError(field_name, f"{text!r} must be a finite number > 0")
    return value


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


_WithId = TypeVar("_WithId", bound=_HasId)


def unique_by_id(items: Iterable[_WithId], label: str) -> tuple[_WithId, ...]:
    """``items`` (each with an ``id``) as a tuple, or one K3InputError naming the first repeated id."""
    items = tuple(items)
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise K3InputError(label, f"duplicate id {item.id!r}")
        seen.add(item.id)
    return items


def _data_dir() -> Path:
    """The data folder on disk (a wheel installs it as a plain folder in site-packages)."""
    root = data_root()
    return root if isinstance(root, Path) else Path(str(root))


def __getattr__(name: str) -> Path:  # DATA_DIR is resolved on first use, not at import
    if name == "DATA_DIR":
        return _data_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def normalise_name(name: str) -> str:
    """Lower-case and drop spaces, hyphens, underscores and dots for lookups."""
    return "".join(ch for ch in str(name).lower() if ch not in " -_.")
