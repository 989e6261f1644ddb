"""The guide audit: every numeric claim in ``data/guide_claims.csv`` checked by code.

The audit is split by concern; this module gathers the public names:

* :mod:`k3lib.guides.claims` — the claims (rows of the CSV) and the guides' constants, read from
  ``data/profiles/*.json``;
* :mod:`k3lib.guides.verdicts` — :class:`Tolerance`, :class:`Verdict` and the comparison that makes
  each verdict: **own** (against the guide's own inputs) and **real** (for the real K3), both
  computed at run time, never stored;
* :mod:`k3lib.guides.registry` — which check answers which claim (the checks register there);
* :mod:`k3lib.guides.runner` — :func:`audit_claim` and :func:`audit_all`: look a claim's check up
  in the registry and run it (it imports the checks; no check imports it);
* :mod:`k3lib.guides.refs` — the references: K3's architecture, its published files
  (``data/measured/kimi-k3-published.csv``), plans on the guides' inputs, whole-node GPU counts;
* :mod:`k3lib.guides.checks_000_facts`, :mod:`~k3lib.guides.checks_000_derived`,
  :mod:`~k3lib.guides.checks_004`, :mod:`~k3lib.guides.checks_extra` — one check per claim;
* the DataFrames, the styled table and the widget of notebook 07 are presentation:
  :mod:`k3lib.views.guide_audit`.

>>> v = audit_claim(get_claim("g000-worked-total"))
>>> v.own_verdict, v.own_value
('holds', 415.0)
>>> audit_claim(get_claim("g000-fp8kv-gpus-after")).own_verdict
'contradicted'
"""

from __future__ import annotations

from k3lib.guides.claims import (
    BASES,
    CLAIMS_CSV,
    COLUMN_VERDICTS,
    EXPECTATIONS_CSV,
    G000_ACTIVATION,
    G000_OVERHEAD_PER_GPU_EXAMPLE,
    G000_OVERHEAD_PER_GPU_RULE,
    G000_OVERHEAD_TOTAL,
    G004_ACTIVE_PARAMS,
    G004_OVERHEAD,
    G004_RAM_BANDWIDTH,
    GUIDE_UNIT,
    GUIDES,
    LONG_CONTEXT,
    VERDICTS,
    Claim,
    claim_from_row,
    get_claim,
    load_claims,
    profile,
    read_expectations,
)
from k3lib.guides.refs import (
    PublishedFile,
    measured_outside_weights_kv_gib,
    nearest_published,
    published_bytes,
    published_files,
    real_kv_bytes,
    real_node_gpus,
    real_state_bytes,
    real_weights_bytes,
)
from k3lib.guides.runner import audit_all, audit_claim, checker_for
from k3lib.guides.verdicts import EXACT, Figure, Tolerance, Verdict, combine, judge, written_tolerance

#: the audit's public names (the checks themselves are found through :func:`checker_for`)
__all__ = [
    "BASES",
    "CLAIMS_CSV",
    "COLUMN_VERDICTS",
    "EXPECTATIONS_CSV",
    "G000_ACTIVATION",
    "G000_OVERHEAD_PER_GPU_EXAMPLE",
    "G000_OVERHEAD_PER_GPU_RULE",
    "G000_OVERHEAD_TOTAL",
    "G004_ACTIVE_PARAMS",
    "G004_OVERHEAD",
    "G004_RAM_BANDWIDTH",
    "GUIDE_UNIT",
    "GUIDES",
    "LONG_CONTEXT",
    "VERDICTS",
    "Claim",
    "claim_from_row",
    "get_claim",
    "load_claims",
    "profile",
    "read_expectations",
    "PublishedFile",
    "measured_outside_weights_kv_gib",
    "nearest_published",
    "published_bytes",
    "published_files",
    "real_kv_bytes",
    "real_node_gpus",
    "real_state_bytes",
    "real_weights_bytes",
    "audit_all",
    "audit_claim",
    "checker_for",
    "EXACT",
    "Figure",
    "Tolerance",
    "Verdict",
    "combine",
    "judge",
    "written_tolerance",
]
