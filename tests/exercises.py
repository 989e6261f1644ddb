"""Read the exercises' folded answers from a committed notebook (scripts/nbtool.py ``exercise``).

``answers("02-kv-cache")`` → ``{"02-1": (40.0, "GiB"), …}``: the value and unit each answer
states in its ``<!-- answer id=… value=… unit=… -->`` marker. A test per exercise derives the
value by hand (the formula in a comment) and compares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from nbtool import ANSWER_MARK  # noqa: E402  (scripts/ is not a package)


def answers(stem: str) -> dict[str, tuple[float, str]]:
    """Every answer marker of ``notebooks/<stem>.ipynb`` by exercise id."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    out: dict[str, tuple[float, str]] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for m in ANSWER_MARK.finditer(cell.source):
            if m["id"] in out:
                raise AssertionError(f"{stem}: exercise {m['id']} has two answers")
            out[m["id"]] = (float(m["value"]), m["unit"])
    return out


def exercise_ids(stem: str) -> list[str]:
    """The exercise ids whose question cell the notebook holds (``**Exercise NN-k.**``)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    return [
        m for c in nb.cells if c.cell_type == "markdown" for m in re.findall(r"\*\*Exercise (\d\d-\d+)\.\*\*", c.source)
    ]


def usable_gib(gpu_id: str) -> float:
    """A GPU's usable memory in GiB as data/hardware.csv states it (the figure a lesson's answer reads)."""
    import csv

    with open(ROOT / "data" / "hardware.csv", newline="", encoding="utf-8") as fh:
        return float(next(r for r in csv.DictReader(fh) if r["id"] == gpu_id)["memory_usable_gib"])


def assert_answered(stem: str, at_least: int = 3) -> None:
    """The notebook holds ≥ ``at_least`` exercises, ids unique, each with exactly one folded answer."""
    ids = exercise_ids(stem)
    assert len(ids) >= at_least and len(set(ids)) == len(ids), ids
    assert set(ids) == set(answers(stem))
