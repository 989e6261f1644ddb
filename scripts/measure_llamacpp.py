"""Measure the real llama.cpp on the tier's synthetic families and write every compared figure to
data/measured/llamacpp-0c1e570-cpu.csv (needs scripts/install-llamacpp.sh first).

    .venv/bin/python scripts/measure_llamacpp.py [--out FILE]
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llamacpp.measure import COLUMNS, measure_rows  # noqa: E402 — tests/ is not a package: after the sys.path line
from llamacpp.models import build_all  # noqa: E402 — tests/ is not a package: after the sys.path line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "measured" / "llamacpp-0c1e570-cpu.csv"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        rows = measure_rows(build_all(d))
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    kinds = {}
    for r in rows:
        k = kinds.setdefault(r["kind"], [0, 0])
        k[0] += 1
        k[1] += bool(r["match"])
    print(f"{args.out}: " + "; ".join(f"{k}: {m} of {n} equal" for k, (n, m) in kinds.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
