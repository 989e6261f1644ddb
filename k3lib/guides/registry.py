"""The audit's registry: which check answers which claim.

A check module registers each of its checks here as it is imported — by claim id
(:func:`check`, :func:`register_not_checkable`) or by a predicate over the claim
(:func:`check_pattern`, tried after every id). The registry only lists; it imports no check and
runs none: :mod:`k3lib.guides.runner` imports the check modules and runs what is listed here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from k3lib.guides.claims import Claim
from k3lib.guides.verdicts import Check, not_checkable

_BY_ID: dict[str, tuple[str, Check]] = {}
_BY_PATTERN: list[tuple[str, Callable[[Claim], bool], Check]] = []


def check(*claim_ids: str):
    """Register a check for these claim ids."""

    def deco(fn: Check) -> Check:
        for cid in claim_ids:
            if cid in _BY_ID:
                raise ValueError(f"two checks registered for {cid}")
            _BY_ID[cid] = (fn.__name__, fn)
        return fn

    return deco


def check_pattern(predicate: Callable[[Claim], bool]):
    """Register a check for every claim that ``predicate`` accepts (after the id checks)."""

    def deco(fn: Check) -> Check:
        _BY_PATTERN.append((fn.__name__, predicate, fn))
        return fn

    return deco


def register_not_checkable(ids: Sequence[str], reason: str, **kw) -> None:
    fn = not_checkable(reason, **kw)
    for cid in ids:
        if cid in _BY_ID:
            raise ValueError(f"two checks registered for {cid}")
        _BY_ID[cid] = ("not_checkable", fn)
