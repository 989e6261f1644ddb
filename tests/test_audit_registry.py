"""The audit's registry and runner (issue 25 §3): the checks register in k3lib.guides.registry, the
runner imports them and runs what is listed, and no check module imports the runner.

Because the runner tries patterns in registration order, that order must not decide anything:
every claim without a check of its own id is matched by exactly one pattern."""

from __future__ import annotations

import ast
from pathlib import Path

from k3lib.guides import registry, runner
from k3lib.guides.claims import load_claims

GUIDES_DIR = Path(__file__).resolve().parents[1] / "k3lib" / "guides"


def test_every_claim_has_exactly_one_check():
    claims = load_claims()
    for claim in claims:
        if claim.claim_id in registry._BY_ID:
            continue
        matching = [name for name, predicate, _ in registry._BY_PATTERN if predicate(claim)]
        assert len(matching) == 1, (claim.claim_id, matching)
    assert len(claims) > 100


def test_the_runner_names_the_check_it_ran():
    name, _ = runner.checker_for(next(c for c in load_claims() if c.claim_id == "g000-worked-total"))
    verdict = runner.audit_claim(next(c for c in load_claims() if c.claim_id == "g000-worked-total"))
    assert verdict.check == name and name != ""


def test_no_check_module_imports_the_runner():
    for path in sorted(GUIDES_DIR.glob("checks_*.py")):
        names = {
            node.module
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom) and node.module
        }
        assert "k3lib.guides.runner" not in names and "k3lib.guides.audit" not in names, path.name
