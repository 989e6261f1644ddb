"""Schema tests for ``data/guide_claims.csv``: every numeric claim in the two public guides.

One row per claim. ``value`` is the number as the guide writes it (``1,562GB`` -> 1562,
``256K`` -> 256 with unit ``K tokens``); a range keeps its low end in ``value`` and its high
end in ``value_high`` and has ``claim_kind == "range"``. Rows whose value is a word in the
guide ("halves", "one-tenth", "one more") say ``value written as a word`` in ``notes``.

The quote checks read the guides where they are at hand (``K3_SEEDS_DIR``), and otherwise
compare hashes kept in ``tests/fixtures/guide_quotes.json`` (see ``tests/guide_text.py``): the
guides' texts are not ours to ship, and a fresh clone still checks every quote.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import guide_text
import pytest

REPO = Path(__file__).resolve().parent.parent
CSV_PATH = REPO / "data" / "guide_claims.csv"

COLUMNS = [
    "claim_id",
    "guide",
    "file",
    "section",
    "quote",
    "quantity",
    "value",
    "value_high",
    "unit_as_written",
    "claim_kind",
    "precision",
    "kv_dtype",
    "context_tokens",
    "gpu",
    "gpu_count",
    "batch",
    "device",
    "notes",
]
REQUIRED = ["claim_id", "guide", "file", "section", "quote", "quantity", "value", "unit_as_written", "claim_kind"]
GUIDE_FILES = {
    "guide-000": "000_f2542e372d6ba36c.txt",
    "guide-004": "004_e3f18741f7d3daf2.txt",
}
GUIDE_PREFIX = {"guide-000": "g000-", "guide-004": "g004-"}
CLAIM_KINDS = {
    "component size",
    "total",
    "headroom",
    "GPU count",
    "speed",
    "ratio",
    "range",
    "parameter count",
    "price",
    "context",
}
PRECISIONS = {"", "bf16", "q8", "q4", "q2", "1-bit", "2-bit", "3-bit", "4-bit", "5-bit", "8-bit", "fp16"}
KV_DTYPES = {"", "bf16", "fp8", "int4", "fp16"}
BATCHES = {"", "1", "4"}
WORD_VALUE_MARK = "value written as a word"
MAX_QUOTE_CHARS = 160


def _rows() -> list[dict[str, str]]:
    with open(CSV_PATH, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


ROWS = _rows()
IDS = [r["claim_id"] for r in ROWS]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def test_header_is_exact():
    with open(CSV_PATH, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert header == COLUMNS


def test_every_row_has_every_column():
    with open(CSV_PATH, newline="", encoding="utf-8") as fh:
        for lineno, record in enumerate(csv.reader(fh), start=1):
            assert len(record) == len(COLUMNS), f"line {lineno}: {len(record)} fields"


def test_claim_ids_unique_and_slugs():
    dupes = [cid for cid, n in Counter(IDS).items() if n > 1]
    assert not dupes, dupes
    for row in ROWS:
        cid = row["claim_id"]
        assert re.fullmatch(r"g00[04]-[a-z0-9][a-z0-9.-]*", cid), cid
        assert cid.startswith(GUIDE_PREFIX[row["guide"]]), cid


def test_row_counts():
    per_guide = Counter(r["guide"] for r in ROWS)
    assert len(ROWS) >= 40
    for guide in GUIDE_FILES:
        assert per_guide[guide] >= 10, (guide, per_guide[guide])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_required_fields(row):
    missing = [c for c in REQUIRED if not row[c].strip()]
    assert not missing, missing


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_guide_file_and_enums(row):
    assert row["guide"] in GUIDE_FILES
    assert row["file"] == GUIDE_FILES[row["guide"]]
    assert row["claim_kind"] in CLAIM_KINDS, row["claim_kind"]
    assert row["precision"] in PRECISIONS, row["precision"]
    assert row["kv_dtype"] in KV_DTYPES, row["kv_dtype"]
    assert row["batch"] in BATCHES, row["batch"]
    assert re.fullmatch(r"[a-z0-9_]+", row["quantity"]), row["quantity"]
    assert len(row["quote"]) <= MAX_QUOTE_CHARS, len(row["quote"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_numbers_parse(row):
    assert _is_float(row["value"]), row["value"]
    if row["value_high"]:
        assert _is_float(row["value_high"]), row["value_high"]
        assert float(row["value_high"]) > float(row["value"])
    # A range, and only a range, has a high end.
    assert bool(row["value_high"]) == (row["claim_kind"] == "range")
    for col in ("context_tokens", "gpu_count"):
        if row[col]:
            assert re.fullmatch(r"[1-9][0-9]*", row[col]), (col, row[col])
    if row["context_tokens"]:
        assert int(row["context_tokens"]) % 1024 == 0, row["context_tokens"]  # K = 1024


def _number_in(number: str, text: str) -> bool:
    """Is ``number`` (as in the CSV) written in ``text``, thousands separators ignored?"""
    plain = text.replace(",", "")
    f = float(number)
    forms = {number, str(int(f))} if f.is_integer() else {number}
    return any(re.search(r"(?<![\d.])" + re.escape(s) + r"(?![\d])", plain) for s in forms)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_value_is_written_in_quote(row):
    if WORD_VALUE_MARK in row["notes"]:
        return
    assert _number_in(row["value"], row["quote"]), (row["value"], row["quote"])
    if row["value_high"]:
        assert _number_in(row["value_high"], row["quote"]), (row["value_high"], row["quote"])


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_quote_occurs_in_seed(row):
    quote = _norm(row["quote"])
    if "|" in quote:
        cells = [c.strip() for c in quote.split("|") if c.strip()]
        assert cells, quote
        for cell in cells:
            assert guide_text.contains(row["file"], cell), (cell, quote)
    else:
        assert guide_text.contains(row["file"], quote), quote


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_section_is_a_heading_line_of_seed(row):
    assert guide_text.is_line(row["file"], row["section"]), row["section"]


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r["device"] and r["guide"] == "guide-004"], ids=lambda r: r["claim_id"]
)
def test_device_named_as_written(row):
    assert guide_text.contains_raw(row["file"], row["device"])


def test_an_edited_quote_fails_without_the_guide(monkeypatch, tmp_path):
    """The hash fallback is a real check: a changed quote or section is not in the fixture."""
    monkeypatch.setenv("K3_SEEDS_DIR", str(tmp_path))  # no guide texts here
    guide_text.text_of.cache_clear()
    try:
        row = ROWS[0]
        assert guide_text.contains(row["file"], row["quote"].split("|")[0])
        assert not guide_text.contains(row["file"], row["quote"].split("|")[0] + " (edited)")
        assert not guide_text.is_line(row["file"], row["section"] + " x")
    finally:
        guide_text.text_of.cache_clear()
