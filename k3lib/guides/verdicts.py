"""Tolerance and verdict machinery.

Every verdict is a comparison of the claimed value with a computed value under a stated
:class:`Tolerance`, made at run time and made twice:

* **own** — against the guide's own inputs (does the figure follow from what the guide states?);
  ``"stated input"`` where the claim *is* one of those inputs (nothing to derive it from);
* **real** — for the real K3 (real architecture, published files, whole 8-GPU nodes).

Each column is ``"holds"`` when ``|claimed − computed| ≤ max(abs, rel·|computed|)`` (for a
claimed range ``lo–hi``: ``lo − slack ≤ computed ≤ hi + slack``), else ``"contradicted"``;
``"not checkable"`` where nothing can be computed. No check returns a verdict string: it
returns the two computed values and the tolerance, and :func:`judge` compares.

The combined :attr:`Verdict.verdict` (kept for the charts) folds the two columns:
own contradicted → ``contradicted``; own holds (or stated input) and real holds →
``reproduced``; own holds, real contradicted → ``reproduced only under assumption``;
stated input, real contradicted → ``contradicted``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from k3lib.core.errors import K3InputError
from k3lib.guides.claims import BASES, COLUMN_VERDICTS, Claim


@dataclass(frozen=True)
class Figure:
    """One step of a check's working: a named value with the formula that gave it."""

    name: str
    formula: str
    value: float | None  # None: no such figure (e.g. no GPU count up to the search's limit fits)
    unit: str


@dataclass(frozen=True)
class Tolerance:
    """Accept a claimed value when ``|claimed − computed| ≤ max(abs, rel·|computed|)``; a claimed
    range ``lo–hi`` when ``lo − slack ≤ computed ≤ hi + slack`` with the same slack."""

    rel: float = 0.0
    abs: float = 0.0
    text: str = ""

    def slack(self, computed: float) -> float:
        return max(self.abs, self.rel * abs(computed)) + 1e-9

    def ok(self, claimed: float, computed: float, claimed_high: float | None = None) -> bool:
        s = self.slack(computed)
        if claimed_high is None:
            return abs(claimed - computed) <= s
        return claimed - s <= computed <= claimed_high + s


@dataclass(frozen=True)
class AtLeast(Tolerance):
    """A conclusion read one way: accept when ``computed ≥ claimed − slack``. "It is 15 GB
    over — it will OOM" holds wherever the deficit is 15 or more: the configuration OOMs.

    >>> AtLeast(abs=0.5).ok(15, 1118), AtLeast(abs=0.5).ok(15, -65)
    (True, False)
    """

    def ok(self, claimed: float, computed: float, claimed_high: float | None = None) -> bool:
        return computed >= claimed - self.slack(computed)


#: Whole things (GPUs, tokens, a count): equal or not.
EXACT = Tolerance(abs=0.0, text="exact (a count: equal or not)")


def written_tolerance(claim: Claim, *, rel_if_approximate: float = 0.05) -> Tolerance:
    """Half a unit of the last digit written, or ±5% when the guide hedges ('~', 'roughly').

    >>> from k3lib.guides.claims import get_claim
    >>> written_tolerance(get_claim("g000-worked-total")).text
    '±5% (the guide writes ~)'
    >>> written_tolerance(get_claim("g004-weights-4-bit")).abs
    0.05
    """
    decimals = len(claim.value_text.split(".")[1]) if "." in claim.value_text else 0
    half = 0.5 * 10 ** (-decimals)
    if claim.approximate:
        return Tolerance(rel=rel_if_approximate, abs=half, text=f"±{rel_if_approximate:.0%} (the guide writes ~)")
    return Tolerance(abs=half, text=f"±{half:g} (rounding to the digit written)")


def judge(
    claim: Claim, computed: float | None, tol: Tolerance | None, *, stated_input: bool = False, negated: bool = False
) -> str:
    """One column's verdict: the claim's value (or range) against ``computed`` under ``tol``.
    ``negated``: the guide *denies* the value ("nowhere near 5.6 TB"), so the claim holds when the
    computed value is outside the tolerance."""
    if stated_input:
        return "stated input"
    if computed is None or tol is None:
        return "not checkable"
    near = tol.ok(claim.value, computed, claim.value_high)
    return "holds" if near != negated else "contradicted"


def combine(own: str, real: str) -> str:
    """Fold the two columns into the single verdict the charts use (see the module docstring)."""
    if own == "contradicted":
        return "contradicted"
    if own == "not checkable" and real == "not checkable":
        return "not checkable"
    if real == "contradicted":
        return "contradicted" if own in ("stated input", "not checkable") else "reproduced only under assumption"
    return "reproduced"


@dataclass(frozen=True)
class Verdict:
    """The result of checking one claim: two comparisons and what they rest on.

    ``own_value`` is the claim's quantity computed from the guide's own inputs, ``real_value``
    the same for the real K3, both in ``unit`` (``None`` where nothing is computed);
    ``own_verdict`` and ``real_verdict`` compare the claimed value with each under ``tolerance``.
    """

    claim_id: str
    own_verdict: str
    real_verdict: str
    own_value: float | None
    real_value: float | None
    unit: str
    tolerance: str
    assumption: str
    explanation: str
    formula: str = ""
    basis: str = "none"
    check: str = ""
    figures: tuple[Figure, ...] = ()
    tolerance_free: str = ""
    negated: bool = False

    def __post_init__(self) -> None:
        for name in ("own_verdict", "real_verdict"):
            if getattr(self, name) not in COLUMN_VERDICTS:
                raise K3InputError(name, f"{getattr(self, name)!r} is not a verdict", ", ".join(COLUMN_VERDICTS))
        if self.basis not in BASES:
            raise K3InputError("basis", f"{self.basis!r} is not a basis", ", ".join(BASES))
        if not self.explanation:
            raise K3InputError("explanation", f"{self.claim_id}: every verdict needs an explanation")
        for name in ("own_value", "real_value"):
            x = getattr(self, name)
            if x is not None and not math.isfinite(x):
                raise K3InputError(name, f"{self.claim_id}: {x!r} is not finite")

    @property
    def verdict(self) -> str:
        """Both columns in one word (see :func:`combine`)."""
        return combine(self.own_verdict, self.real_verdict)

    @property
    def computed_value(self) -> float | None:
        """The value the combined verdict rests on: the own value, else the real one."""
        return self.own_value if self.own_value is not None else self.real_value

    def figure(self, name: str) -> float | None:
        """The value of the working step called ``name``."""
        for f in self.figures:
            if f.name == name:
                return f.value
        raise KeyError(f"{self.claim_id} has no figure {name!r}; it has {[f.name for f in self.figures]}")


def pct(x: float) -> str:
    return f"{x:+.1%}"


# ---------------------------------------------------------------- building a verdict


def make(
    claim: Claim,
    *,
    own: float | None,
    real: float | None,
    unit: str,
    tol: Tolerance | None,
    explanation: str,
    basis: str,
    stated_input: bool = False,
    assumption: str = "",
    formula: str = "",
    figures: Sequence[Figure] = (),
    tolerance_free: str = "",
    negated: bool = False,
    real_tol: Tolerance | None = None,
) -> Verdict:
    """Compare ``claim`` with ``own`` and ``real`` under ``tol`` and record both verdicts.

    ``stated_input``: the claim is an input the guide states (K3's parameter count, a KV rate), so
    the own column says so and only the real column is a comparison. ``real_tol``: the real
    column's tolerance where it differs from the own column's (stated in ``tolerance`` too).
    """
    own_v = judge(claim, own, tol, stated_input=stated_input, negated=negated)
    real_v = judge(claim, real, real_tol or tol, negated=negated)
    if own_v == "holds" and real_v == "contradicted" and not assumption:
        assumption = "the guide's own inputs"
    if not tolerance_free:
        reasons = []
        if stated_input:
            reasons.append("own: the guide states this figure as an input")
        elif own_v == "not checkable":
            reasons.append("own: nothing computes it from the guide's inputs")
        if real_v == "not checkable":
            reasons.append("real: needs a measurement or a source the repository lacks (see the explanation)")
        tolerance_free = "; ".join(reasons)
    return Verdict(
        claim_id=claim.claim_id,
        own_verdict=own_v,
        real_verdict=real_v,
        own_value=None if own is None else float(own),
        real_value=None if real is None else float(real),
        unit=unit,
        tolerance=(tol.text if tol else "none") + (f"; real: {real_tol.text}" if real_tol else ""),
        assumption=assumption,
        explanation=explanation,
        formula=formula,
        basis=basis,
        figures=tuple(figures),
        tolerance_free=tolerance_free,
        negated=negated,
    )


def not_checkable(
    reason: str, *, computed: Callable[[], float | None] | None = None, unit: str = "", basis: str = "none"
) -> Check:
    """A check for claims no computation settles (advice, a missing table, a measurement)."""

    def fn(claim: Claim) -> Verdict:
        x = computed() if computed else None
        return make(
            claim,
            own=None,
            real=None,
            unit=unit or claim.unit_as_written,
            tol=None,
            explanation=reason,
            basis=basis if computed else "none",
            figures=[Figure("reference", basis, x, unit)] if x is not None else (),
        )

    fn.__name__ = "not_checkable"
    return fn


#: a check: one claim in, its verdict out
Check = Callable[[Claim], Verdict]
