"""Issue 24's errors a teacher would hand back, and tables that read like debugging output:
each test here failed before its fix. They read the committed notebooks' stored outputs
(``# NBVAL_CHECK_OUTPUT`` cells) or call the k3lib function the notebook calls."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def _cells(stem: str) -> list[dict]:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]


def _output(stem: str, source_start: str, mime: str = "text/plain") -> str:
    """The stored ``mime`` output of the first code cell whose source starts with ``source_start``."""
    for c in _cells(stem):
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] == "code" and src.startswith(source_start):
            for o in c.get("outputs", []):
                data = o.get("data", {})
                if mime in data:
                    v = data[mime]
                    return "".join(v) if isinstance(v, list) else v
            raise AssertionError(f"{stem}: cell {source_start!r} has no stored {mime} output")
    raise AssertionError(f"{stem}: no code cell starts with {source_start!r}")


def _markdown(stem: str) -> str:
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                     for c in _cells(stem) if c["cell_type"] == "markdown")


# ------------------------------------------------------------------ 2. 02's K3 state formula, whole

def test_02_k3_state_formula_is_not_cut_off():
    for mime in ("text/plain", "text/html"):
        shown = _output("02-kv-cache", "k3 = tables.kv_worked_table(", mime)
        assert "69·(96·128·128 + 110,592)·4" in shown, mime
        assert "..." not in shown and "…" not in shown, mime


# ------------------------------------------------------------------ 4. "it will OOM" holds for K3

def test_it_will_oom_holds_for_real_k3():
    from k3lib.guides import audit

    verdicts = {x.claim_id: x for x in audit.audit_all()}
    claims = {c.claim_id: c for c in audit.load_claims()}
    assert "it will OOM" in claims["g000-worked-5x-over"].quote
    v = verdicts["g000-worked-5x-over"]
    assert v.real_value > 1000                          # real K3 on 5 H100: over by ~1,118 GiB, so it OOMs
    assert v.real_verdict == "holds" and v.verdict == "reproduced"
    assert "OOMs" in v.explanation
    # the headroom claim on 6 GPUs still fails for real K3: the one-sided reading is only for "it will OOM"
    assert verdicts["g000-worked-6x-headroom"].real_verdict == "contradicted"


def test_at_least_tolerance_reads_a_deficit_one_way():
    from k3lib.guides.verdicts import AtLeast

    tol = AtLeast(abs=0.5)
    assert tol.ok(15, 15) and tol.ok(15, 1118) and tol.ok(15, 14.6)
    assert not tol.ok(15, 7) and not tol.ok(15, -65)


def test_07_no_longer_lists_it_will_oom_as_contradicted_for_k3():
    from k3lib.guides import audit

    table = audit.audit_table()
    contradicted = audit.filter_claims(table, "all", "contradicted", "real")
    assert "g000-worked-5x-over" not in set(contradicted["claim_id"])
