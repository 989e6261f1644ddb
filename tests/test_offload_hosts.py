"""Schema of ``data/hosts.csv`` (the host catalogue offload reads its RAM bandwidth from)."""

from __future__ import annotations

import csv
import re

import pytest

from k3lib.core.data import DATA_DIR
from k3lib.core.hardware import get_gpu
from k3lib.core.hosts import HOST_COLUMNS, HOST_PLATFORMS, get_host, load_hosts

ROWS = list(csv.DictReader(open(DATA_DIR / "hosts.csv", newline="", encoding="utf-8")))


def test_columns_and_ids():
    assert tuple(ROWS[0].keys()) == HOST_COLUMNS
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", i) for i in ids)
    assert len(load_hosts()) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_row(row):
    for col in ("memory_channels", "mt_per_s", "bytes_per_transfer", "sockets", "max_memory_gb"):
        assert re.fullmatch(r"[1-9][0-9]*", row[col]), col
    assert row["bytes_per_transfer"] == "8"  # a 64-bit DDR/LPDDR channel
    peak = int(row["memory_channels"]) * int(row["sockets"]) * int(row["mt_per_s"]) * 8 / 1000
    assert float(row["peak_gb_s"]) == pytest.approx(peak, abs=0.05)  # the column restates the formula
    assert get_host(row["id"]).memory_bw_bytes_per_s == round(peak * 10**9)
    assert row["platform"] in HOST_PLATFORMS
    assert row["verification"] in ("retrieved", "partially retrieved", "recalled - verify")
    # a public spec page, never a local path
    assert re.match(r"(www\.)?(amd|intel|apple|nvidia)\.com/|ark\.intel\.com/", row["source"]), row["source"]
    assert not re.search(r"(^|\s)(/|\.\./|~|[A-Z]:\\)", row["source"])
    if row["unified_memory"] == "true":
        assert row["platform"] == "unified" and get_gpu(row["hardware_id"]).unified_memory
        # the machine's own row states (about) the same bandwidth
        assert get_gpu(row["hardware_id"]).memory_bw_bytes_per_s / 1e9 == pytest.approx(peak, abs=0.5)
    else:
        assert row["unified_memory"] == "false" and row["hardware_id"] == ""


def test_aliases_resolve_to_one_host():
    seen = {}
    for h in load_hosts():
        for label in (h.id, *h.aliases):
            assert seen.setdefault(label, h.id) == h.id
            assert get_host(label).id == h.id
