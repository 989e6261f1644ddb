"""The audit's runner: find the check the registry lists for a claim, run it, stamp its name.

It imports the check modules — importing one registers its checks in
:mod:`k3lib.guides.registry` — and the registry; no check imports the runner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from k3lib.core.errors import K3InputError

# importing a check module registers its checks (no claim matches two patterns, so the order is free:
# tests/test_audit_registry.py)
from k3lib.guides import (
    checks_000_derived,  # noqa: F401  (registers)
    checks_000_facts,  # noqa: F401  (registers)
    checks_004,  # noqa: F401  (registers)
    checks_extra,  # noqa: F401  (registers)
)
from k3lib.guides.claims import Claim, load_claims
from k3lib.guides.registry import _BY_ID, _BY_PATTERN
from k3lib.guides.verdicts import Check, Verdict


def checker_for(claim: Claim) -> tuple[str, Check]:
    """The (name, function) that checks ``claim``: its id's check, else the first matching pattern."""
    if claim.claim_id in _BY_ID:
        return _BY_ID[claim.claim_id]
    for name, pred, fn in _BY_PATTERN:
        if pred(claim):
            return name, fn
    raise K3InputError("claim_id", f"no check is registered for {claim.claim_id!r}")


def audit_claim(claim: Claim) -> Verdict:
    """Run the check for one claim and stamp the check's name on the verdict."""
    name, fn = checker_for(claim)
    v = fn(claim)
    if v.claim_id != claim.claim_id:
        raise RuntimeError(f"check {name} answered for {v.claim_id}, asked {claim.claim_id}")
    return dataclasses.replace(v, check=name)


def audit_all(claims: Iterable[Claim] | None = None) -> list[Verdict]:
    """A verdict for every claim (default: every row of ``data/guide_claims.csv``), in order."""
    return [audit_claim(c) for c in (load_claims() if claims is None else claims)]
