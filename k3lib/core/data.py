"""Locating and reading the project's ``data/`` folder (no import-time I/O)."""
from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


@lru_cache(maxsize=None)
def read_csv_rows(name: str) -> tuple[dict[str, str], ...]:
    """Rows of ``data/<name>`` as dicts of stripped strings (cached)."""
    with open(DATA_DIR / name, newline="", encoding="utf-8") as fh:
        return tuple({k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh))


def normalise_name(name: str) -> str:
    """Lower-case and drop spaces, hyphens, underscores and dots for lookups."""
    return "".join(ch for ch in str(name).lower() if ch not in " -_.")
