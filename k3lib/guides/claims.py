"""Guide claims: the rows of ``data/guide_claims.csv`` as frozen :class:`Claim` objects, and the
guides' constants read from ``data/profiles/*.json``."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from k3lib.core.data import DATA_DIR
from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB

#: The combined verdict (kept for the charts): both columns folded into one word.
VERDICTS = ("reproduced", "reproduced only under assumption", "contradicted", "not checkable")
#: One column's verdict: the claimed value against one computed value.
COLUMN_VERDICTS = ("holds", "contradicted", "stated input", "not checkable")
GUIDES = ("guide-000", "guide-004")
#: The unit each guide's "GB" means: guide 000 divides by 1024^3; guide 004 lists file sizes.
GUIDE_UNIT = {"guide-000": "GiB", "guide-004": "GB"}
BASES = (
    "guide's own numbers",
    "K3 architecture",
    "hardware catalogue",
    "k3lib rule",
    "arithmetic",
    "published files",
    "none",
)
CLAIMS_CSV = "guide_claims.csv"
EXPECTATIONS_CSV = "audit_expectations.csv"


@cache
def profile(guide: str) -> dict:
    """The raw JSON of ``data/profiles/kimi-k3@<guide>.json`` (the guide's stated inputs, with quotes)."""
    if guide not in GUIDES:
        raise K3InputError("guide", f"{guide!r} is not a guide", ", ".join(GUIDES))
    return json.loads((DATA_DIR / "profiles" / f"kimi-k3@{guide}.json").read_text(encoding="utf-8"))


def _g000_value(*keys: str) -> float:
    node: Any = profile("guide-000")
    for k in keys:
        node = node[k]
    return node


# Guide 000 (its GB read as GiB): worked example 'activation = 10 GB', 'overhead = 48 GB (8 GPUs × 6 GB)',
# and the rule 'Subtract at least 8 GB per GPU'. Guide 004 (decimal GB): '+ 1GB runtime overhead',
# 'estimated at 70 GB/s', '104B active per token'. Every figure is read from the profiles.
G000_ACTIVATION = int(_g000_value("worked_example", "activation") * GiB)
G000_OVERHEAD_TOTAL = int(_g000_value("worked_example", "overhead_total") * GiB)
G000_OVERHEAD_PER_GPU_RULE = int(_g000_value("overhead_per_gpu", "value") * GiB)
G000_OVERHEAD_PER_GPU_EXAMPLE = int(_g000_value("worked_example", "overhead_per_gpu") * GiB)
G004_OVERHEAD = int(profile("guide-004")["overhead_total"]["value"] * GB)
G004_RAM_BANDWIDTH = int(profile("guide-004")["offload"]["ram_bandwidth_gb_s"] * GB)
G004_OFFLOAD_VRAM = int(profile("guide-004")["offload"]["vram_gb"] * GB)
G004_OFFLOAD_RAM = int(profile("guide-004")["offload"]["ram_gb"] * GB)
G004_ACTIVE_PARAMS = int(profile("guide-004")["params_active"]["value"])
Q4_BITS = 4.5  # Q4_K, the 4-bit tier k3lib uses (data/weight_formats.csv)
LONG_CONTEXT = 524288  # 512K: where the guide's scaling rules are evaluated


# ---------------------------------------------------------------- data classes


@dataclass(frozen=True)
class Claim:
    """One row of ``data/guide_claims.csv`` with its numbers parsed."""

    claim_id: str
    guide: str
    file: str
    section: str
    quote: str
    quantity: str
    value: float
    value_high: float | None
    unit_as_written: str
    claim_kind: str
    precision: str = ""
    kv_dtype: str = ""
    context_tokens: int | None = None
    gpu: str = ""
    gpu_count: int | None = None
    batch: int | None = None
    device: str = ""
    notes: str = ""
    value_text: str = ""

    def __post_init__(self) -> None:
        if self.guide not in GUIDES:
            raise K3InputError("guide", f"{self.guide!r} is not a known guide", ", ".join(GUIDES))
        if not self.claim_id:
            raise K3InputError("claim_id", "must not be empty")

    @property
    def is_range(self) -> bool:
        return self.value_high is not None

    @property
    def stated_context_tokens(self) -> int:
        """``context_tokens`` of a claim that states a context (K3InputError naming the claim otherwise)."""
        if self.context_tokens is None:
            raise K3InputError(f"{self.claim_id}.context_tokens", "the claim states no context")
        return self.context_tokens

    @property
    def stated_batch(self) -> int:
        """``batch`` of a claim that states one (K3InputError naming the claim otherwise)."""
        if self.batch is None:
            raise K3InputError(f"{self.claim_id}.batch", "the claim states no batch")
        return self.batch

    @property
    def stated_gpu_count(self) -> int:
        """``gpu_count`` of a claim that states one (K3InputError naming the claim otherwise)."""
        if self.gpu_count is None:
            raise K3InputError(f"{self.claim_id}.gpu_count", "the claim states no GPU count")
        return self.gpu_count

    @property
    def approximate(self) -> bool:
        """The guide hedges the number ('~', 'roughly', 'about', 'maybe', 'approximately')."""
        return bool(re.search(r"~|\broughly\b|\babout\b|\bmaybe\b|\bapproximately\b|\bnearly\b", self.quote, re.I))


# ---------------------------------------------------------------- claims


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


def claim_from_row(row: dict[str, str]) -> Claim:
    """Build a :class:`Claim` from one CSV row (strings)."""
    try:
        return Claim(
            claim_id=row["claim_id"],
            guide=row["guide"],
            file=row["file"],
            section=row["section"],
            quote=row["quote"],
            quantity=row["quantity"],
            value=float(row["value"]),
            value_high=float(row["value_high"]) if row.get("value_high", "").strip() else None,
            unit_as_written=row["unit_as_written"],
            claim_kind=row["claim_kind"],
            precision=row.get("precision", ""),
            kv_dtype=row.get("kv_dtype", ""),
            context_tokens=_int_or_none(row.get("context_tokens", "")),
            gpu=row.get("gpu", ""),
            gpu_count=_int_or_none(row.get("gpu_count", "")),
            batch=_int_or_none(row.get("batch", "")),
            device=row.get("device", ""),
            notes=row.get("notes", ""),
            value_text=row["value"].strip(),
        )
    except (KeyError, ValueError) as exc:
        raise K3InputError("guide_claims.csv", f"row {row.get('claim_id', '?')!r}: {exc}") from None


def load_claims(path=None) -> tuple[Claim, ...]:
    """Every claim of ``data/guide_claims.csv`` (or ``path``), in file order (cached per path)."""
    return _load_claims(str(path or DATA_DIR / CLAIMS_CSV))


@lru_cache(maxsize=8)
def _load_claims(path: str) -> tuple[Claim, ...]:
    with open(path, newline="", encoding="utf-8") as fh:
        return tuple(claim_from_row({k: (v or "").strip() for k, v in r.items()}) for r in csv.DictReader(fh))


def get_claim(claim_id: str) -> Claim:
    """The claim with this id."""
    for c in load_claims():
        if c.claim_id == claim_id:
            return c
    raise K3InputError("claim_id", f"no claim {claim_id!r} in {CLAIMS_CSV}")


def read_expectations(path=None) -> list[dict[str, str]]:
    """The hand-worked rows of ``data/audit_expectations.csv`` (claim_id, column, expected value,
    tolerance, expected verdict, arithmetic)."""
    with open(path or DATA_DIR / EXPECTATIONS_CSV, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
