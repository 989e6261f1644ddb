"""The two public guides, checked without shipping their text.

The guides are articles we quote, not ours to copy:

* guide 000: "Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3";
* guide 004: "How to Deploy Kimi K3 Locally".

``tests/fixtures/guide_quotes.json`` holds, per guide, the SHA-256 of its whole text, the
SHA-256 of each of its lines (whitespace-normalised), and the SHA-256 of every quote, section
and device name in ``data/`` that was found in the text when the fixture was last written.

* With the guide texts at hand (``K3_SEEDS_DIR``, or the seeds folder our CI keeps beside the checkout)
  a check reads the text itself, and also checks the text is the one the
  fixture was written from.
* Without them (a fresh clone) a check compares hashes: a quote edited since it was checked
  against the guide, or a new one never checked, fails.

Rewrite the fixture, with the texts at hand, after adding quotes:
``.venv/bin/python tests/guide_text.py``
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import sys
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "guide_quotes.json"
GUIDES = {
    "000_f2542e372d6ba36c.txt": ("guide-000", "Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3"),
    "004_e3f18741f7d3daf2.txt": ("guide-004", "How to Deploy Kimi K3 Locally"),
}
GUIDE_FILE = {gid: name for name, (gid, _title) in GUIDES.items()}


def norm(text: str) -> str:
    """Whitespace collapsed to single spaces, ends stripped."""
    return re.sub(r"\s+", " ", text).strip()


def sha(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


def seeds_dir() -> Path:
    return Path(os.environ.get("K3_SEEDS_DIR", REPO.parent / "shared" / "seeds"))


@cache
def text_of(name: str) -> str | None:
    """The guide's text where it is at hand, else None."""
    path = seeds_dir() / name
    return path.read_text(encoding="utf-8") if path.is_file() else None


@cache
def fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _check_text_is_the_fixtures(name: str, text: str) -> None:
    assert sha("text", text) == fixture()["guides"][name]["text_sha256"], (
        f"{name} differs from the text the fixture was written from; rewrite it (see tests/guide_text.py)"
    )


def contains(name: str, snippet: str) -> bool:
    """Whether the guide ``name`` contains ``snippet`` (whitespace-normalised on both sides)."""
    text = text_of(name)
    if text is not None:
        _check_text_is_the_fixtures(name, text)
        return norm(snippet) in norm(text)
    return sha("quote", norm(snippet)) in set(fixture()["guides"][name]["quotes"])


def contains_raw(name: str, snippet: str) -> bool:
    """Whether the guide contains ``snippet`` exactly as written (no normalising)."""
    text = text_of(name)
    if text is not None:
        _check_text_is_the_fixtures(name, text)
        return snippet in text
    return sha("raw", snippet) in set(fixture()["guides"][name]["raw"])


def is_line(name: str, line: str) -> bool:
    """Whether ``line`` (normalised) is one whole line of the guide."""
    text = text_of(name)
    if text is not None:
        _check_text_is_the_fixtures(name, text)
        return norm(line) in {norm(x) for x in text.splitlines()}
    return sha("line", norm(line)) in set(fixture()["guides"][name]["lines"])


def _snippets() -> dict[str, tuple[set[str], set[str]]]:
    """Every quote (and quote cell) and device name in data/, per guide file."""
    out = {name: (set(), set()) for name in GUIDES}
    with open(REPO / "data" / "guide_claims.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            quotes, raws = out[row["file"]]
            quotes.add(norm(row["quote"]))
            quotes.update(norm(c) for c in row["quote"].split("|") if c.strip())
            if row["device"]:
                raws.add(row["device"])
    from k3lib.core.models import get_model

    for path in sorted((REPO / "data" / "profiles").glob("*.json")):
        prof = get_model(json.loads(path.read_text(encoding="utf-8"))["id"])
        name = GUIDE_FILE.get(prof.guide)
        if name:
            out[name][0].update(norm(q) for q in prof.quotes.values())
    return out


def write_fixture() -> None:
    doc = {"about": __doc__.split("\n\n")[2].replace("\n", " "), "guides": {}}
    for name, (quotes, raws) in _snippets().items():
        text = text_of(name)
        if text is None:
            sys.exit(f"{seeds_dir() / name} not found: set K3_SEEDS_DIR to the folder holding the guides")
        flat = norm(text)
        gid, title = GUIDES[name]
        doc["guides"][name] = {
            "guide": gid,
            "title": title,
            "text_sha256": sha("text", text),
            "lines": sorted({sha("line", norm(x)) for x in text.splitlines() if x.strip()}),
            "quotes": sorted(sha("quote", q) for q in quotes if q in flat),
            "raw": sorted(sha("raw", r) for r in raws if r in text),
        }
    FIXTURE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    write_fixture()
