"""Mutation test of the guide audit (issue 13): every verdict is a comparison that can fail.

For every claim and each of its two columns (own inputs, real K3) that is a comparison
("holds" or "contradicted"): setting the claimed value to the computed value makes the column
hold, and moving it ×3 or ×1/3 away from the computed value makes it contradicted (the reverse
for a figure the guide denies, "nowhere near 5.6 TB"; a one-sided conclusion, "over by at least
15: it will OOM", fails only when the claim is moved above what is computed). A column
that is not a comparison must say why: "stated input" (the guide states the figure; only the
real column compares) or "not checkable" (with an explanation).
"""

from __future__ import annotations

import dataclasses

import pytest

from k3lib.guides import audit

CLAIMS = audit.load_claims()


def _with_value(claim: audit.Claim, value: float) -> audit.Claim:
    """The claim with its value (and the top of a range) moved to ``value``; the written digits,
    hence the tolerance, are kept."""
    return dataclasses.replace(claim, value=value, value_high=value if claim.is_range else None)


def _column(claim: audit.Claim, column: str) -> str:
    return getattr(audit.audit_claim(claim), f"{column}_verdict")


@pytest.fixture(scope="module")
def verdicts() -> dict[str, audit.Verdict]:
    return {v.claim_id: v for v in audit.audit_all()}


def _cases():
    for c in CLAIMS:
        for column in ("own", "real"):
            yield pytest.param(c.claim_id, column, id=f"{c.claim_id}-{column}")


@pytest.mark.parametrize("claim_id,column", list(_cases()))
def test_each_comparison_can_fail_and_can_hold(claim_id, column, verdicts):
    v = verdicts[claim_id]
    claim = audit.get_claim(claim_id)
    verdict = getattr(v, f"{column}_verdict")
    computed = getattr(v, f"{column}_value")
    if verdict == "stated input":
        assert column == "own" and v.tolerance_free, claim_id
        return
    if verdict == "not checkable":
        assert computed is None and v.explanation and v.tolerance_free, claim_id
        return
    assert computed is not None, claim_id
    near, far = ("contradicted", "holds") if v.negated else ("holds", "contradicted")  # a denied figure
    assert _column(_with_value(claim, computed), column) == near, f"{claim_id}: set to {computed!r}"
    one_sided = f"{column}: " in v.tolerance and "at least" in v.tolerance.split(f"{column}: ", 1)[1]
    if computed == 0:
        moved = [claim.value or 1.0]
    elif one_sided:  # a conclusion read one way ("over by at least 15: it OOMs"): only a larger claim fails
        moved = [computed * 3]
        assert _column(_with_value(claim, computed / 3), column) == near, f"{claim_id}: one-sided, at {computed / 3!r}"
    else:
        moved = [computed * 3, computed / 3]
    for value in moved:
        assert _column(_with_value(claim, value), column) == far, f"{claim_id}: moved to {value!r}"


def test_every_row_has_two_verdicts(verdicts):
    assert set(verdicts) == {c.claim_id for c in CLAIMS}
    for v in verdicts.values():
        assert v.own_verdict in audit.COLUMN_VERDICTS and v.real_verdict in audit.COLUMN_VERDICTS
        assert v.verdict == audit.combine(v.own_verdict, v.real_verdict)
