"""The guide audit: every numeric claim in ``data/guide_claims.csv`` checked by code.

Each claim row is matched to a *check* — a function registered here, either for its
``claim_id`` or for a pattern of rows (a quantity, a table, a device list). A check
recomputes the claim with k3lib and returns a :class:`Verdict`:

* ``reproduced`` — the computed value is within the stated tolerance of the claim;
* ``reproduced only under assumption`` — it is, but only under an assumption that the
  guide does not state or that K3's real architecture does not satisfy (``assumption``
  says which);
* ``contradicted`` — the computed value is outside the tolerance (``explanation`` says
  why, with the numbers);
* ``not checkable`` — no computation can settle it (advice, a missing table, a figure
  that needs a measurement); ``explanation`` says why.

Verdicts are computed on every call of :func:`audit_all`; nothing is read from a
verdict column. ``data/audit_expectations.csv`` stores the expected verdict per claim so
that a change shows up in a test.

Two references are used, and each verdict says which (``basis``):

* **the guide's own numbers** — guide 000's profile ``kimi-k3@guide-000`` (its "GB" read
  as GiB, because its KV formula divides by 1024^3) and guide 004's table, run through
  :func:`k3lib.core.plan.make_plan`. A claim that does not follow from its own guide's inputs
  is *contradicted*.
* **K3's real architecture** — ``kimi-k3`` (2,779.5B parameters, 27,648 B/token of MLA
  latent at BF16 plus a constant KDA state). An input that the guide asserts about K3
  (its parameter count, a weight size, KV bytes per token) is checked against it. A
  derived figure that follows from the guide's inputs but not from the real model is
  *reproduced only under assumption* — the assumption being the guide's input.

>>> v = audit_claim(get_claim("g000-worked-total"))
>>> v.verdict, v.computed_value
('reproduced', 415.0)
>>> audit_claim(get_claim("g000-fp8kv-gpus-after")).verdict
'contradicted'
"""
from __future__ import annotations

import csv
import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from k3lib.core.data import DATA_DIR
from k3lib.core.memory import kv_cache_bytes, overhead_bytes_per_gpu, weights_bytes, weights_bytes_by_group
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import get_gpu, list_gpus
from k3lib.core.models import get_model
from k3lib.core.plan import Assumptions, kv_bytes_per_gpu, make_plan
from k3lib.core.precisions import get_weight_format
from k3lib.core.units import GB, GiB

VERDICTS = ("reproduced", "reproduced only under assumption", "contradicted", "not checkable")
GUIDES = ("guide-000", "guide-004")
#: The unit each guide's "GB" means: guide 000 divides by 1024^3; guide 004 lists file sizes.
GUIDE_UNIT = {"guide-000": "GiB", "guide-004": "GB"}
BASES = ("guide's own numbers", "K3 architecture", "hardware catalogue", "k3lib rule", "arithmetic", "none")
CLAIMS_CSV = "guide_claims.csv"
EXPECTATIONS_CSV = "audit_expectations.csv"

# Guide 000's worked example: "activation = 10 GB", "overhead = 48 GB (8 GPUs × 6 GB)".
G000_ACTIVATION = 10 * GiB
G000_OVERHEAD_TOTAL = 48 * GiB
G000_OVERHEAD_PER_GPU_RULE = 8 * GiB      # "Subtract at least 8 GB per GPU"
G000_OVERHEAD_PER_GPU_EXAMPLE = 6 * GiB   # "(8 GPUs × 6 GB)"
G004_OVERHEAD = 1 * GB                    # "+ 1GB runtime overhead"
G004_RAM_BANDWIDTH = 70 * GB              # "estimated at 70 GB/s"
G004_ACTIVE_PARAMS = 104 * 10**9          # "104B active per token"
Q4_BITS = 4.5                             # Q4_K, the 4-bit tier k3lib uses (data/weight_formats.csv)
LONG_CONTEXT = 524288                     # 512K: where the guide's scaling rules are evaluated


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
    def approximate(self) -> bool:
        """The guide hedges the number ('~', 'roughly', 'about', 'maybe', 'approximately')."""
        return bool(re.search(r"~|\broughly\b|\babout\b|\bmaybe\b|\bapproximately\b|\bnearly\b",
                              self.quote, re.I))


@dataclass(frozen=True)
class Figure:
    """One step of a check's working: a named value with the formula that gave it."""

    name: str
    formula: str
    value: float
    unit: str


@dataclass(frozen=True)
class Verdict:
    """The result of checking one claim.

    ``computed_value`` is what the check computed for the claim's quantity, in ``unit``
    (``None`` where nothing can be computed); ``real_value`` is the same quantity for
    K3's real architecture where that differs from the reference the verdict rests on.
    """

    claim_id: str
    verdict: str
    computed_value: float | None
    unit: str
    tolerance: str
    assumption: str
    explanation: str
    formula: str = ""
    basis: str = "none"
    real_value: float | None = None
    check: str = ""
    figures: tuple[Figure, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise K3InputError("verdict", f"{self.verdict!r} is not a verdict", ", ".join(VERDICTS))
        if self.basis not in BASES:
            raise K3InputError("basis", f"{self.basis!r} is not a basis", ", ".join(BASES))
        if self.verdict == "reproduced only under assumption" and not self.assumption:
            raise K3InputError("assumption", f"{self.claim_id}: a conditional verdict must name its assumption")
        if not self.explanation:
            raise K3InputError("explanation", f"{self.claim_id}: every verdict needs an explanation")
        if self.computed_value is not None and not math.isfinite(self.computed_value):
            raise K3InputError("computed_value", f"{self.claim_id}: {self.computed_value!r} is not finite")

    def figure(self, name: str) -> float:
        """The value of the working step called ``name``."""
        for f in self.figures:
            if f.name == name:
                return f.value
        raise KeyError(f"{self.claim_id} has no figure {name!r}; it has {[f.name for f in self.figures]}")


# ---------------------------------------------------------------- claims


def _int_or_none(text: str) -> int | None:
    return int(text) if text.strip() else None


def claim_from_row(row: dict[str, str]) -> Claim:
    """Build a :class:`Claim` from one CSV row (strings)."""
    try:
        return Claim(
            claim_id=row["claim_id"], guide=row["guide"], file=row["file"], section=row["section"],
            quote=row["quote"], quantity=row["quantity"], value=float(row["value"]),
            value_high=float(row["value_high"]) if row.get("value_high", "").strip() else None,
            unit_as_written=row["unit_as_written"], claim_kind=row["claim_kind"],
            precision=row.get("precision", ""), kv_dtype=row.get("kv_dtype", ""),
            context_tokens=_int_or_none(row.get("context_tokens", "")), gpu=row.get("gpu", ""),
            gpu_count=_int_or_none(row.get("gpu_count", "")), batch=_int_or_none(row.get("batch", "")),
            device=row.get("device", ""), notes=row.get("notes", ""), value_text=row["value"].strip(),
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


# ---------------------------------------------------------------- references


@lru_cache(maxsize=None)
def _k3():
    return get_model("kimi-k3")


@lru_cache(maxsize=None)
def _g000():
    return get_model("kimi-k3@guide-000")


def _unit_bytes(unit: str) -> int:
    return {"GiB": GiB, "GB": GB}[unit]


def real_weights_bytes(weight_format: str) -> int:
    """K3's real weight bytes in a format (``native`` = MXFP4 routed experts + BF16 elsewhere).

    >>> round(real_weights_bytes("bf16") / 1e9, 1)
    5559.0
    """
    return weights_bytes(_k3(), weight_format)


def real_kv_bytes(*, kv_dtype: str, context_tokens: int, batch: int = 1, include_state: bool = True) -> int:
    """K3's real KV cache: 24 MLA layers × 576 elements per token, plus (by default) the
    constant KDA state of 116,158,464 FP32 elements per sequence.

    >>> real_kv_bytes(kv_dtype="bf16", context_tokens=1, include_state=False)
    27648
    """
    k3 = _k3()
    if not include_state:
        from k3lib.core.precisions import get_kv_dtype
        return batch * context_tokens * k3.kv_bytes_per_token(get_kv_dtype(kv_dtype).bytes_per_element)
    return kv_cache_bytes(k3, context_tokens=context_tokens, batch=batch, kv_dtype=kv_dtype)


def real_state_bytes() -> int:
    """K3's KDA state per sequence at FP32 (bytes): 116,158,464 elements × 4."""
    return _k3().state_elements_per_sequence() * 4


def _own_plan(*, weights: str, kv_dtype: str, context: int, gpus: int, overhead_total: int | None = None,
              overhead_per_gpu: int | None = None, activation: int = G000_ACTIVATION, gpu: str = "h100"):
    """A plan on guide 000's own numbers (profile ``kimi-k3@guide-000``), its GPUs one pool (the guide's reading)."""
    return make_plan(model="kimi-k3@guide-000", gpu=gpu, gpus=gpus, nodes=1, weights=weights, kv_dtype=kv_dtype,
                     context=context, assumptions=Assumptions(activation_bytes=activation,
                                                              overhead_total_bytes=overhead_total,
                                                              overhead_per_gpu_bytes=overhead_per_gpu))


def _real_plan(*, weights: str, kv_dtype: str, context: int, gpus: int, overhead_per_gpu: int = G000_OVERHEAD_PER_GPU_RULE,
               activation: int = G000_ACTIVATION, gpu: str = "h100"):
    """A plan for K3's real architecture, with guide 000's activation and per-GPU overhead."""
    return make_plan(model="kimi-k3", gpu=gpu, gpus=gpus, weights=weights, kv_dtype=kv_dtype, context=context,
                     assumptions=Assumptions(activation_bytes=activation, overhead_per_gpu_bytes=overhead_per_gpu))


def min_gpus(make: Callable[[int], object], limit: int = 256, start: int = 1) -> int | None:
    """Smallest GPU count ``n ≥ start`` for which ``make(n)`` is a plan that fits (None if none up to ``limit``)."""
    for n in range(max(1, start), limit + 1):
        try:
            plan = make(n)
        except K3InputError:
            continue
        if plan.fits:
            return n
    return None


# ---------------------------------------------------------------- tolerance


@dataclass(frozen=True)
class Tolerance:
    """Accept ``claimed`` when ``|claimed − computed| ≤ max(abs, rel·|computed|)``."""

    rel: float = 0.0
    abs: float = 0.0
    text: str = ""

    def ok(self, claimed: float, computed: float) -> bool:
        return abs(claimed - computed) <= max(self.abs, self.rel * abs(computed)) + 1e-9


def written_tolerance(claim: Claim, *, rel_if_approximate: float = 0.05) -> Tolerance:
    """Half a unit of the last digit written, or ±5% when the guide hedges ('~', 'roughly').

    >>> written_tolerance(get_claim("g000-worked-total")).text
    '±5% (the guide writes ~)'
    >>> written_tolerance(get_claim("g004-weights-4-bit")).abs
    0.05
    """
    decimals = len(claim.value_text.split(".")[1]) if "." in claim.value_text else 0
    half = 0.5 * 10 ** (-decimals)
    if claim.approximate:
        return Tolerance(rel=rel_if_approximate, abs=half, text=f"±{rel_if_approximate:.0%} (the guide writes ~)"
                         )
    return Tolerance(abs=half, text=f"±{half:g} (rounding to the digit written)")


def _pct(x: float) -> str:
    return f"{x:+.1%}"


# ---------------------------------------------------------------- registry

Check = Callable[[Claim], Verdict]
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


def _make(claim: Claim, verdict: str, computed: float | None, unit: str, tol: Tolerance | str, *,
          explanation: str, assumption: str = "", formula: str = "", basis: str = "none",
          real: float | None = None, figures: Sequence[Figure] = ()) -> Verdict:
    return Verdict(claim_id=claim.claim_id, verdict=verdict,
                   computed_value=None if computed is None else float(computed), unit=unit,
                   tolerance=tol.text if isinstance(tol, Tolerance) else tol, assumption=assumption,
                   explanation=explanation, formula=formula, basis=basis,
                   real_value=None if real is None else float(real), figures=tuple(figures))


def _derived(claim: Claim, own: float, unit: str, tol: Tolerance, *, formula: str, guide_inputs: str,
             real: float | None, real_note: str, figures: Sequence[Figure] = (), claimed: float | None = None,
             extra: str = "") -> Verdict:
    """A figure derived from the guide's inputs: contradicted if it does not follow from them;
    reproduced if the real architecture agrees too; else reproduced only under the guide's inputs."""
    claimed = claim.value if claimed is None else claimed
    if not tol.ok(claimed, own):
        return _make(claim, "contradicted", own, unit, tol, basis="guide's own numbers", formula=formula,
                     real=real, figures=figures,
                     explanation=f"Its own inputs give {own:,.4g} {unit}, not {claimed:,.4g}. {extra}".strip())
    if real is None or tol.ok(claimed, real):
        return _make(claim, "reproduced", own, unit, tol, basis="guide's own numbers", formula=formula, real=real,
                     figures=figures, explanation=f"{own:,.4g} {unit} from its own inputs. {real_note} {extra}".strip())
    return _make(claim, "reproduced only under assumption", own, unit, tol, basis="guide's own numbers",
                 formula=formula, real=real, figures=figures, assumption=guide_inputs,
                 explanation=f"Follows from the guide's inputs ({own:,.4g} {unit}); {real_note} {extra}".strip())


def _not_checkable(reason: str, *, computed: Callable[[], float | None] | None = None, unit: str = "",
                   basis: str = "none") -> Check:
    def fn(claim: Claim) -> Verdict:
        return _make(claim, "not checkable", computed() if computed else None, unit or claim.unit_as_written,
                     "none", explanation=reason, basis=basis if computed else "none")
    fn.__name__ = "not_checkable"
    return fn


def _register_not_checkable(ids: Sequence[str], reason: str, **kw) -> None:
    fn = _not_checkable(reason, **kw)
    for cid in ids:
        if cid in _BY_ID:
            raise ValueError(f"two checks registered for {cid}")
        _BY_ID[cid] = ("not_checkable", fn)


# ================================================================= guide 000: facts about K3


@check_pattern(lambda c: c.quantity == "params_total")
def params_total(claim: Claim) -> Verdict:
    """Total parameters: Σ of K3's parameter groups (routed experts 92 × 896 × 3·3584·3072)."""
    scale = {"trillion parameters": 1e12, "T": 1e12, "B params": 1e9}[claim.unit_as_written]
    real = _k3().params_total / scale
    tol = Tolerance(rel=0.02, text="±2% (a headline figure)")
    ok = tol.ok(claim.value, real)
    return _make(claim, "reproduced" if ok else "contradicted", real, claim.unit_as_written, tol,
                 basis="K3 architecture", formula="Σ parameter groups of kimi-k3 (text weights, no MTP/vision)",
                 explanation=f"K3's config gives {_k3().params_total / 1e9:,.2f}B parameters "
                             f"({_pct(claim.value / real - 1)} from the claim); 2,722.7B of them are routed experts.")


@check_pattern(lambda c: c.quantity == "params_active")
def params_active(claim: Claim) -> Verdict:
    """Active parameters per token, excluding the input embedding (a lookup)."""
    real = _k3().params_active / 1e9
    tol = Tolerance(rel=0.02, text="±2%")
    ok = tol.ok(claim.value, real)
    return _make(claim, "reproduced" if ok else "contradicted", real, "B params", tol, basis="K3 architecture",
                 formula="total − embedding − routed + 16/896 × routed",
                 explanation=f"K3 activates {real:,.2f}B parameters per token (16 of 896 experts, input embedding "
                             f"excluded), {real / (_k3().params_total / 1e9):.2%} of the total.")


@check_pattern(lambda c: c.quantity == "context_max")
def context_max(claim: Claim) -> Verdict:
    real = _k3().max_context_tokens
    ok = claim.context_tokens == real
    return _make(claim, "reproduced" if ok else "contradicted", real, "tokens", "exact", basis="K3 architecture",
                 formula="max_position_embeddings of the config",
                 explanation=f"K3's config allows {real:,} tokens (1M with K = 1,024).")


@check("g000-weights-bf16", "g000-faq-weights-bf16")
def bf16_weights(claim: Claim) -> Verdict:
    """594 GB at BF16: K3's real BF16 weights are 2,779.5B × 2 B."""
    real = real_weights_bytes("bf16") / GiB
    bpw = claim.value * GiB * 8 / _k3().params_total
    return _make(claim, "contradicted", real, "GiB", "±2%", basis="K3 architecture",
                 formula="params × 16 bits / 8",
                 figures=[Figure("real_bf16_gib", "2,779.5B × 2 B / 2^30", real, "GiB"),
                          Figure("real_bf16_gb", "2,779.5B × 2 B / 10^9", real_weights_bytes("bf16") / GB, "GB"),
                          Figure("implied_bits_per_weight", "594 GiB × 8 / params", bpw, "bits")],
                 explanation=f"K3's BF16 weights are {real:,.0f} GiB ({real_weights_bytes('bf16') / GB:,.0f} GB), "
                             f"{real / claim.value:.1f}× the claim. 594 GiB over 2,779.5B parameters is "
                             f"{bpw:.2f} bits per weight: no BF16 figure, nor the native checkpoint "
                             f"({real_weights_bytes('native') / GiB:,.0f} GiB).")


@check("g000-weights-bf16-mxfp4")
def mxfp4_origin(claim: Claim) -> Verdict:
    """594 GB 'from MXFP4 quantization-aware training': the native checkpoint's size."""
    native = real_weights_bytes("native") / GiB
    return _make(claim, "contradicted", native, "GiB", "±2%", basis="K3 architecture",
                 formula="routed experts × 4.25 bits (MXFP4) + other params × 16 bits",
                 figures=[Figure("native_gib", "2,722.7B × 4.25/8 + 56.7B × 2 B", native, "GiB"),
                          Figure("bf16_gib", "2,779.5B × 2 B", real_weights_bytes("bf16") / GiB, "GiB")],
                 explanation=f"K3's MXFP4 checkpoint (routed experts at 4.25 bits, the rest BF16) is {native:,.0f} GiB; "
                             f"unpacked to BF16 it is {real_weights_bytes('bf16') / GiB:,.0f} GiB. Neither is 594.")


@check("g000-weights-not-5.6tb")
def not_5p6_tb(claim: Claim) -> Verdict:
    real_tb = real_weights_bytes("bf16") / 10**12
    return _make(claim, "contradicted", real_tb, "TB", "±2%", basis="K3 architecture",
                 formula="params × 2 B / 10^12",
                 explanation=f"Unpacked to BF16 — as the same paragraph says it is at load time — K3's weights are "
                             f"{real_tb:.2f} TB: exactly 'near 5.6 TB'. Only the MXFP4 checkpoint is smaller "
                             f"({real_weights_bytes('native') / 10**12:.2f} TB).")


@check("g000-unique-params-one-tenth")
def unique_params(claim: Claim) -> Verdict:
    """'Effective unique parameter count after MoE expert sharing is one-tenth'."""
    k3 = _k3()
    groups = k3.param_groups()
    non_routed = (k3.params_total - groups["routed_experts"]) / k3.params_total
    active = k3.params_active / k3.params_total
    implied = _g000().weights_bytes_by_tier["bf16"] / 2 / k3.params_total
    figs = [Figure("stored_fraction", "stored params / total", 1.0, "fraction"),
            Figure("active_fraction", "104.19B / 2,779.5B", active, "fraction"),
            Figure("non_routed_fraction", "(total − routed experts) / total", non_routed, "fraction"),
            Figure("bf16_594_fraction", "594 GiB / 2 B / 2,779.5B", implied, "fraction")]
    return _make(claim, "contradicted", 1.0, "fraction of parameters stored", "±20%", basis="K3 architecture",
                 formula="unique stored parameters / total parameters", figures=figs,
                 explanation=f"Routed experts are not shared: all {k3.params_total / 1e9:,.1f}B parameters are stored "
                             f"(fraction 1.0). What is small is per-token use — {active:.1%} active — and "
                             f"the parameters outside routed experts ({non_routed:.1%}); neither is 1/10, and "
                             f"neither sets the memory, which must hold every expert.")


@check_pattern(lambda c: c.quantity == "kv_bytes_per_token")
def kv_bytes_per_token(claim: Claim) -> Verdict:
    """KV bytes per token: K3 caches only its 24 MLA layers' 576-element latent; the 69 KDA
    layers keep a constant state instead."""
    from k3lib.core.precisions import get_kv_dtype
    per_elem = get_kv_dtype(claim.kv_dtype).bytes_per_element
    real_b = _k3().kv_bytes_per_token(per_elem)
    scale = {"bytes": 1, "KB": 1024}[claim.unit_as_written]
    real = real_b / scale
    tol = Tolerance(rel=0.05, text="±5%")
    verdict = "reproduced" if tol.ok(claim.value, real) else "contradicted"
    return _make(claim, verdict, real, claim.unit_as_written if scale == 1 else "KiB", tol, basis="K3 architecture",
                 formula=f"24 MLA layers × (512 + 64) × {per_elem:g} B",
                 figures=[Figure("real_bytes_per_token", "24 × 576 × bytes/element", real_b, "B"),
                          Figure("kda_state_bytes", "116,158,464 × 4 B per sequence", real_state_bytes(), "B")],
                 explanation=f"K3 caches {real_b:,} B per token at {claim.kv_dtype.upper()} (24 MLA layers × 576 elements), "
                             f"{claim.value * scale / real_b:.1f}× less than the guide says; its 69 KDA layers add a "
                             f"constant {real_state_bytes() / GiB:.2f} GiB per sequence, not per token.")


@check_pattern(lambda c: c.quantity == "kv_cache" and c.guide == "guide-000" and "=" not in c.quote)
def kv_cache_g000(claim: Claim) -> Verdict:
    """KV cache at a context: guide 000's 262,144 B/token × T (÷ GPUs when per GPU) vs K3's MLA + KDA state."""
    prof = _g000()
    gpus = claim.gpu_count or 1
    own_total = kv_cache_bytes(prof, context_tokens=claim.context_tokens, batch=1, kv_dtype=claim.kv_dtype)
    own = own_total / gpus / GiB
    if gpus > 1:
        real = kv_bytes_per_gpu(_k3(), kv_total_bytes=0, context_tokens=claim.context_tokens, batch=1,
                                kv_dtype=claim.kv_dtype, tp=gpus, pp=1) / GiB
        note = (f"K3 under TP={gpus} keeps the whole MLA latent on every GPU ({real:,.2f} GiB per GPU with "
                f"its share of the KDA state), so a per-GPU share is neither 1/{gpus} nor 262,144 B/token.")
    else:
        real = real_kv_bytes(kv_dtype=claim.kv_dtype, context_tokens=claim.context_tokens) / GiB
        note = f"K3's real cache is {real:,.2f} GiB (27,648 B/token at BF16 plus the 0.43 GiB KDA state)."
    return _derived(claim, own, "GiB", written_tolerance(claim),
                    formula=f"{prof.kv_bytes_per_token(2):,} B × bytes/2 × T / 2^30" + (f" / {gpus}" if gpus > 1 else ""),
                    guide_inputs="the guide's 262,144 B/token at BF16", real=real, real_note=note)


@check("g000-worked-kv")
def worked_kv(claim: Claim) -> Verdict:
    """'131,072 bytes × 262,144 / 1024^3 = 32 GB': the arithmetic as written."""
    own = 131072 * 262144 / GiB
    real = real_kv_bytes(kv_dtype="fp8", context_tokens=262144) / GiB
    tol = written_tolerance(claim)
    return _make(claim, "reproduced" if tol.ok(claim.value, own) else "contradicted", own, "GiB", tol,
                 basis="arithmetic", formula="131,072 × 262,144 / 1024^3", real=real,
                 explanation=f"The arithmetic gives exactly {own:g} GiB. Its input (131,072 B/token at FP8) is not K3's: "
                             f"K3 at FP8 and 256K needs {real:.2f} GiB with its KDA state.")


def _scaling_ratio(kind: str, t: int = LONG_CONTEXT) -> tuple[float, str]:
    """Real K3 ratio for a scaling claim, evaluated at ``t`` tokens (state kept at FP32)."""
    bf16 = real_kv_bytes(kv_dtype="bf16", context_tokens=t)
    if kind == "halve-context":
        return real_kv_bytes(kv_dtype="bf16", context_tokens=t // 2) / bf16, "KV(T/2) / KV(T), T = 512K"
    if kind == "double-context":
        return real_kv_bytes(kv_dtype="bf16", context_tokens=2 * t) / bf16, "KV(2T) / KV(T), T = 512K"
    if kind == "fp8":
        return real_kv_bytes(kv_dtype="fp8", context_tokens=t) / bf16, "KV_FP8(T) / KV_BF16(T), T = 512K"
    if kind == "int4":
        return real_kv_bytes(kv_dtype="int4", context_tokens=t) / bf16, "KV_INT4(T) / KV_BF16(T), T = 512K"
    raise ValueError(kind)


@check_pattern(lambda c: c.quantity == "kv_cache_scaling")
def kv_scaling(claim: Claim) -> Verdict:
    """'Halves', 'doubles', 'one quarter': linear in T and in bytes per element — for the MLA
    part only; K3's KDA state is constant."""
    if claim.value == 2:
        kind = "double-context"
    elif claim.value == 0.25:
        kind = "int4"
    elif claim.kv_dtype == "fp8" or "precision" in claim.quote:
        kind = "fp8"
    else:
        kind = "halve-context"
    real, formula = _scaling_ratio(kind)
    short = _scaling_ratio(kind, 8192)[0]
    crossover = real_state_bytes() / _k3().kv_bytes_per_token(2)
    tol = Tolerance(rel=0.10, text="±10% (a rule of thumb)")
    if not tol.ok(claim.value, real):
        return _make(claim, "contradicted", real, "ratio", tol, basis="K3 architecture", formula=formula,
                     explanation=f"K3's ratio at 512K is {real:.3f}.")
    return _make(claim, "reproduced only under assumption", real, "ratio", tol, basis="K3 architecture",
                 formula=formula, assumption=f"long contexts: well above {crossover:,.0f} tokens",
                 explanation=f"At 512K K3's ratio is {real:.3f}. Only the MLA latent scales; the KDA state "
                             f"({real_state_bytes() / GiB:.2f} GiB per sequence) does not, and it equals the MLA cache "
                             f"at {crossover:,.0f} tokens, so at short contexts the rule fails: at 8K the ratio is "
                             f"{short:.2f}.")


@check("g000-worked-weights")
def q4_weights(claim: Claim) -> Verdict:
    real = real_weights_bytes("q4") / GiB
    return _make(claim, "contradicted", real, "GiB", "±2%", basis="K3 architecture",
                 formula="2,779.5B × 4.5 bits / 8 (Q4_K)",
                 explanation=f"K3 at 4.5 bits per weight (Q4_K) is {real:,.0f} GiB, {real / claim.value:.1f}× the claim. "
                             f"325 GiB would be {claim.value * GiB * 8 / _k3().params_total:.2f} bits per weight.")


@check("g000-faq-weights-q2")
def q2_weights(claim: Claim) -> Verdict:
    real = real_weights_bytes("q2") / GiB
    return _make(claim, "contradicted", real, "GiB", "±2%", basis="K3 architecture",
                 formula="2,779.5B × 2.625 bits / 8 (Q2_K)",
                 explanation=f"K3 at Q2_K (2.625 bits) is {real:,.0f} GiB; even IQ1_S (1.56 bits) is "
                             f"{real_weights_bytes('iq1_s') / GiB:,.0f} GiB. 225 GiB would be "
                             f"{claim.value * GiB * 8 / _k3().params_total:.2f} bits per weight.")


@check("g000-fix-q8-weights")
def q8_per_gpu(claim: Claim) -> Verdict:
    """'Quantize to Q8: weights drop to ~56.3 GB per GPU' (8 GPUs)."""
    bf16_gpu = _g000().weights_bytes_by_tier["bf16"] / 8 / GiB
    own = bf16_gpu * 8 / 16
    real = real_weights_bytes("q8") / 8 / GiB
    bits = claim.value / bf16_gpu * 16
    return _make(claim, "contradicted", own, "GiB per GPU", written_tolerance(claim), basis="guide's own numbers",
                 formula="(594 / 8) × 8 bits / 16 bits", real=real,
                 figures=[Figure("own_q8_per_gpu", "594 / 8 / 2", own, "GiB"),
                          Figure("implied_bits", "56.3 / 74.25 × 16", bits, "bits")],
                 explanation=f"Halving the guide's own BF16 share (74.25 GiB per GPU) gives {own:.1f} GiB at 8 bits; "
                             f"56.3 GiB is {bits:.1f} bits per weight. K3's real Q8_0 share is {real:,.0f} GiB per GPU.")


# ---------------------------------------------------------------- hardware


def _hardware(claim: Claim):
    if claim.gpu:
        return get_gpu(claim.gpu)
    try:
        return get_gpu(claim.device)
    except K3InputError:
        return get_gpu(f"{claim.device} {claim.value:g}GB")


@check_pattern(lambda c: c.quantity == "available_vram")
def hardware_capacity(claim: Claim) -> Verdict:
    """A device's memory × count, from ``data/hardware.csv`` (vendor labels read as GiB)."""
    hw = _hardware(claim)
    n = claim.gpu_count or 1
    cap = hw.memory_marketed_bytes * n / GiB
    tol = written_tolerance(claim)
    ok = tol.ok(claim.value, cap)
    return _make(claim, "reproduced" if ok else "contradicted", cap, "GiB", tol, basis="hardware catalogue",
                 formula=f"{n} × {hw.memory_marketed_bytes / GiB:g} GiB ({hw.id})",
                 explanation=f"{n} × {hw.name} = {cap:g} GiB as marketed"
                             + (f" ({hw.memory_bytes('usable') / GiB * n:,.2f} GiB visible to the driver)."
                                if hw.has_usable_memory else "."))


@check("g000-faq-h200-capacity")
def largest_gpu(claim: Claim) -> Verdict:
    """'exceeds even the largest single GPU available (H200 141 GB)'."""
    h200 = get_gpu("h200").memory_marketed_bytes / GiB
    biggest = max((g for g in list_gpus() if not g.unified_memory), key=lambda g: g.memory_marketed_bytes)
    big = biggest.memory_marketed_bytes / GiB
    q2 = _g000().weights_bytes_by_tier["q2"] / GiB
    return _make(claim, "contradicted", big, "GiB", "exact", basis="hardware catalogue",
                 formula="max memory over the catalogue's GPUs",
                 figures=[Figure("h200_gib", "H200 SXM", h200, "GiB"), Figure("largest_gib", biggest.id, big, "GiB")],
                 explanation=f"The H200 holds {h200:g} GiB, but it is not the largest: {biggest.name} holds {big:g} GiB, "
                             f"which would fit the guide's own {q2:g} GiB of Q2 weights. K3's real Q2_K weights "
                             f"({real_weights_bytes('q2') / GiB:,.0f} GiB) fit no single GPU.")


@check("g000-faq-mac-bandwidth")
def mac_bandwidth(claim: Claim) -> Verdict:
    h100 = get_gpu("h100")
    mac = get_gpu("mac studio 512gb")
    ratio = h100.memory_bw_bytes_per_s / mac.memory_bw_bytes_per_s
    low, high = claim.value, claim.value_high
    ok = low * 0.95 <= ratio <= high * 1.05
    return _make(claim, "reproduced" if ok else "contradicted", ratio, "x", "±5% on the range ends",
                 basis="hardware catalogue", formula="H100 SXM bandwidth / Mac Studio M3 Ultra bandwidth",
                 explanation=f"{h100.memory_bw_bytes_per_s / 1e9:,.0f} GB/s ÷ {mac.memory_bw_bytes_per_s / 1e9:,.0f} GB/s "
                             f"= {ratio:.1f}× for the 512 GB Mac Studio (M3 Ultra), below the 5–10× claimed.")


# ================================================================= guide 000: derived figures


@check("g000-intro-8xh100-headroom")
def intro_headroom(claim: Claim) -> Verdict:
    plan = _own_plan(weights="bf16", kv_dtype="bf16", context=1048576, gpus=8, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.headroom_bytes / GiB
    no_kv = (640 * GiB - _g000().weights_bytes_by_tier["bf16"] - G000_ACTIVATION - G000_OVERHEAD_TOTAL) / GiB
    return _make(claim, "contradicted", own, "GiB", written_tolerance(claim), basis="guide's own numbers",
                 formula="640 − (594 + 256 + 10 + 48)",
                 figures=[Figure("need_gib", "594 + 256 + 10 + 48", plan.total.total_bytes / GiB, "GiB"),
                          Figure("headroom_gib", "640 − need", own, "GiB"),
                          Figure("headroom_without_kv_gib", "640 − 594 − 10 − 48", no_kv, "GiB")],
                 explanation=f"With its own figures the 8x H100 needs {plan.total.total_bytes / GiB:,.0f} GiB of 640: "
                             f"{-own:,.0f} GiB short, not 20 spare. Even with no KV cache at all it is "
                             f"{-no_kv:,.0f} GiB short.")


@check("g000-weight-budget-8xh100")
def weight_budget(claim: Claim) -> Verdict:
    own = 640 * (1 - 0.15)
    tol = written_tolerance(claim)
    return _make(claim, "reproduced" if tol.ok(claim.value, own) else "contradicted", own, "GiB", tol,
                 basis="arithmetic", formula="640 × (1 − 15%)",
                 explanation=f"640 less the 15% reserve is {own:g} GiB. On its own numbers that fits Q8 "
                             f"({_g000().weights_bytes_by_tier['q8'] / GiB:g}) but not BF16 (594); guide 004's smallest K3 "
                             f"file (1-bit, 648.9 GB = {648.9e9 / GiB:,.0f} GiB) does not fit either.")


@check("g000-usable-8xh100")
def usable_8xh100(claim: Claim) -> Verdict:
    own = 640 - 8 * 8
    return _make(claim, "reproduced" if claim.value == own else "contradicted", own, "GiB", "exact",
                 basis="arithmetic", formula="8 × 80 − 8 × 8", explanation=f"640 − 8 × 8 = {own} GiB.")


@check("g000-activation-batch4")
def activation_batch4(claim: Claim) -> Verdict:
    low, high = 4 * 8, 4 * 15
    ok = (claim.value, claim.value_high) == (low, high)
    return _make(claim, "reproduced" if ok else "contradicted", high, "GiB", "exact", basis="arithmetic",
                 formula="4 × (8–15)", explanation=f"4 × 8–15 = {low}–{high}, the guide's linear rule applied to its "
                                                   f"batch-1 range (which itself is not checkable).")


@check("g000-overhead-8gpu")
def overhead_8gpu(claim: Claim) -> Verdict:
    return _make(claim, "reproduced only under assumption", 80, "GiB", "exact", basis="arithmetic",
                 formula="8 × (5–10)", assumption="the 5–10 GB written 'on a single node' is per GPU",
                 explanation="8 × 5–10 = 40–80. The sentence before calls 5–10 GB the overhead of a single node; "
                             "multiplying by 8 GPUs treats it as per GPU.")


def k3lib_activation_gib() -> float:
    """k3lib's stated activation rule for K3 at batch 1 (GiB): one 8,192-token prefill chunk."""
    from k3lib.core.memory import activation_bytes
    return activation_bytes(_k3(), batch=1) / GiB


def _overhead_rule_model() -> float:
    return overhead_bytes_per_gpu(tp=8, payload_bytes_per_gpu=72 * GiB) / GiB


@check_pattern(lambda c: c.guide == "guide-000" and c.quantity == "overhead" and c.value == 8 and not c.is_range)
def overhead_rule(claim: Claim) -> Verdict:
    """'Subtract 8 GB per GPU': k3lib's overhead rule at TP=8 on a full H100."""
    model = _overhead_rule_model()
    tol = Tolerance(rel=0.05, text="±5%")
    return _make(claim, "reproduced only under assumption", model, "GiB per GPU", tol, basis="k3lib rule",
                 formula="1 GiB CUDA context + 7 × 0.5 GiB NCCL + 5% of a 72 GiB payload",
                 assumption="k3lib's overhead rule at TP=8 (a stated rule, not a measurement of K3)",
                 explanation=f"k3lib's rule gives {model:.1f} GiB per GPU at TP=8 on a full 80 GB card. The guide's own "
                             f"worked example uses 6 GB per GPU, below its 'at least 8'.")


@check("g000-worked-overhead")
def worked_overhead(claim: Claim) -> Verdict:
    return _make(claim, "reproduced only under assumption", 48, "GiB", "exact", basis="guide's own numbers",
                 formula="8 GPUs × 6 GB", assumption="the 8-GPU figure is reused for a 6-GPU (and 5-GPU) deployment",
                 figures=[Figure("per_gpu_example_gib", "8 × 6", 48, "GiB"),
                          Figure("six_gpus_at_6_gib", "6 × 6", 36, "GiB"),
                          Figure("six_gpus_at_8_gib", "6 × 8 (its 'at least 8 GB' rule)", 48, "GiB")],
                 explanation="8 × 6 = 48, but the example then runs on 6 and 5 GPUs (6 × 6 = 36, 5 × 6 = 30), and "
                             "6 GB per GPU is below the guide's own 'at least 8 GB per GPU'.")


@check("g000-worked-total")
def worked_total(claim: Claim) -> Verdict:
    """'Total = 325 + 32 + 10 + 48 = ~415 GB' via make_plan on the guide's profile."""
    plan = _own_plan(weights="q4", kv_dtype="fp8", context=262144, gpus=6, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.total_bytes / GiB
    real = _real_plan(weights="q4", kv_dtype="fp8", context=262144, gpus=6,
                      overhead_per_gpu=G000_OVERHEAD_TOTAL // 6).total.total_bytes / GiB
    tol = written_tolerance(claim)
    return _make(claim, "reproduced" if tol.ok(claim.value, own) else "contradicted", own, "GiB", tol,
                 basis="guide's own numbers", formula="W + T·kv + A + O = 325 + 32 + 10 + 48", real=real,
                 figures=[Figure("weights_gib", "Q4 tier", plan.total.weights_bytes / GiB, "GiB"),
                          Figure("kv_gib", "131,072 × 262,144 / 2^30", plan.total.kv_cache_bytes / GiB, "GiB"),
                          Figure("activation_gib", "worked example", plan.total.activation_bytes / GiB, "GiB"),
                          Figure("overhead_gib", "8 × 6", plan.total.overhead_bytes / GiB, "GiB"),
                          Figure("total_gib", "sum", own, "GiB")],
                 explanation=f"325 + 32 + 10 + 48 = {own:g} GiB: the sum is right. With K3's real Q4_K weights and "
                             f"KV cache (same activation and overhead) it is {real:,.0f} GiB.")


def _worked_on(gpus: int, overhead_total: int | None = None, overhead_per_gpu: int | None = None):
    return _own_plan(weights="q4", kv_dtype="fp8", context=262144, gpus=gpus, overhead_total=overhead_total,
                     overhead_per_gpu=overhead_per_gpu)


@check("g000-worked-6x-headroom", "g000-worked-5x-over")
def worked_headroom(claim: Claim) -> Verdict:
    """Headroom of the worked example on 6 and 5 GPUs: holds only with 48 GB overhead on each."""
    n = claim.gpu_count
    sign = -1 if claim.quantity == "overage" else 1
    reused = sign * _worked_on(n, overhead_total=G000_OVERHEAD_TOTAL).total.headroom_bytes / GiB
    at6 = sign * _worked_on(n, overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE).total.headroom_bytes / GiB
    at8 = sign * _worked_on(n, overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE).total.headroom_bytes / GiB
    tol = written_tolerance(claim)
    word = "over" if sign < 0 else "headroom"
    figs = [Figure("with_48_gib", f"{n} × 80 − (325 + 32 + 10 + 48)", reused, "GiB"),
            Figure("with_6_per_gpu", f"overhead {n} × 6", at6, "GiB"),
            Figure("with_8_per_gpu", f"overhead {n} × 8", at8, "GiB")]
    if not tol.ok(claim.value, reused):
        return _make(claim, "contradicted", reused, "GiB", tol, basis="guide's own numbers", figures=figs,
                     formula=f"{n} × 80 − 415", explanation=f"Its own numbers give {reused:g} GiB {word}.")
    fits6 = "fits" if at6 <= 0 and sign < 0 else ""
    return _make(claim, "reproduced only under assumption", reused, "GiB", tol, basis="guide's own numbers",
                 formula=f"{n} × 80 − (325 + 32 + 10 + 48)", figures=figs,
                 assumption=f"the 48 GB overhead of 8 GPUs is kept on {n} GPUs",
                 explanation=f"{n} × 80 − 415 = {sign * reused:g}. With the example's own 6 GB per GPU "
                             f"({n} × 6 = {6 * n}) it would be {sign * at6:g} GiB "
                             + (f"(it fits: {-at6:g} GiB spare)" if fits6 else f"{word}")
                             + f"; with its 8 GB-per-GPU rule, {sign * at8:g} GiB.")


@check("g000-min-viable-headroom")
def min_viable_headroom(claim: Claim) -> Verdict:
    plan = _own_plan(weights="q2", kv_dtype="fp8", context=65536, gpus=4, overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.headroom_bytes / GiB
    at8 = _own_plan(weights="q2", kv_dtype="fp8", context=65536, gpus=4,
                    overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE).total.headroom_bytes / GiB
    tol = written_tolerance(claim)
    verdict = "reproduced only under assumption" if tol.ok(claim.value, own) else "contradicted"
    return _make(claim, verdict, own, "GiB", tol, basis="guide's own numbers",
                 formula="4 × 80 − (225 + 8 + 10 + 48)",
                 assumption="FP8 KV cache and the 48 GB overhead of 8 GPUs kept on 4 GPUs",
                 figures=[Figure("need_gib", "225 + 8 + 10 + 48", plan.total.total_bytes / GiB, "GiB"),
                          Figure("headroom_at_8_per_gpu", "overhead 4 × 8", at8, "GiB")],
                 explanation=f"225 (Q2) + 8 (FP8 KV at 64K) + 10 + 48 = {plan.total.total_bytes / GiB:g} GiB leaves "
                             f"{own:g} of 320 — the ~28 claimed only with 8 GPUs' overhead on 4 GPUs; its 8 GB-per-GPU "
                             f"rule leaves {at8:g}.")


@check("g000-min-viable-gpus", "g000-faq-min-gpus")
def min_viable_gpus(claim: Claim) -> Verdict:
    """'The minimum viable K3 deployment is 4x H100 with Q2 and 64K context'."""
    at8 = _min_own_gpus("q2", "fp8", 65536, G000_OVERHEAD_PER_GPU_RULE)
    reused = min_gpus(lambda n: _own_plan(weights="q2", kv_dtype="fp8", context=65536, gpus=n,
                                          overhead_total=G000_OVERHEAD_TOTAL))
    real = _min_real_gpus("q2", "fp8", 65536)
    tol = Tolerance(abs=0, text="exact (whole GPUs)")
    return _derived(claim, at8, "GPUs", tol, formula="min n: 225 + 8 + 10 + n × 8 ≤ n × 80",
                    guide_inputs="the guide's 225 GB of Q2 weights and FP8 KV (not stated)", real=real,
                    real_note=f"K3's real Q2_K weights ({real_weights_bytes('q2') / GiB:,.0f} GiB) need {real} H100s.",
                    figures=[Figure("gpus_at_8_per_gpu", "min n", at8, "GPUs"),
                             Figure("gpus_with_48_total", "min n", reused, "GPUs")])


@check("g000-summary-min-q2-64k", "g000-faq-min-total-q2-64k", "g000-summary-max-bf16-1m", "g000-faq-total-bf16-512k")
def own_totals(claim: Claim) -> Verdict:
    """A requirement total: weights + KV + 10 + 48 on the guide's numbers."""
    kv = claim.kv_dtype or "fp8"
    plan = _own_plan(weights=claim.precision, kv_dtype=kv, context=claim.context_tokens, gpus=8,
                     overhead_total=G000_OVERHEAD_TOTAL)
    own = plan.total.total_bytes / GiB
    fmt = {"q2": "q2", "bf16": "bf16"}[claim.precision]
    real = (real_weights_bytes(fmt) + real_kv_bytes(kv_dtype=kv, context_tokens=claim.context_tokens)
            + G000_ACTIVATION + G000_OVERHEAD_TOTAL) / GiB
    w = plan.total.weights_bytes / GiB
    k = plan.total.kv_cache_bytes / GiB
    assume = "the guide's weights and 262,144 B/token KV, plus 10 GB activation and 48 GB overhead"
    if not claim.kv_dtype:
        assume += "; FP8 KV (not stated)"
    return _derived(claim, own, "GiB", written_tolerance(claim), formula=f"{w:g} + {k:g} + 10 + 48",
                    guide_inputs=assume, real=real,
                    real_note=f"with K3's real weights and KV (same activation and overhead) it is {real:,.0f} GiB.",
                    figures=[Figure("weights_gib", claim.precision, w, "GiB"), Figure("kv_gib", kv, k, "GiB"),
                             Figure("total_gib", "sum", own, "GiB")])


@lru_cache(maxsize=None)
def _min_own_gpus(weights: str, kv: str, ctx: int, per_gpu: int) -> int | None:
    return min_gpus(lambda n: _own_plan(weights=weights, kv_dtype=kv, context=ctx, gpus=n, overhead_per_gpu=per_gpu))


@lru_cache(maxsize=None)
def _min_real_gpus(weights: str, kv: str, ctx: int, per_gpu: int = G000_OVERHEAD_PER_GPU_RULE) -> int | None:
    floor = real_weights_bytes(weights) // (80 * GiB)   # the weights alone need more than this many H100s
    return min_gpus(lambda n: _real_plan(weights=weights, kv_dtype=kv, context=ctx, gpus=n, overhead_per_gpu=per_gpu),
                    start=int(floor))


@check("g000-fp8kv-gpus-before", "g000-faq-gpus-bf16-512k", "g000-checklist-10plus-h100")
def bf16_gpu_count(claim: Claim) -> Verdict:
    """GPUs for BF16 weights + BF16 KV at 512K (the FAQ's case)."""
    ctx = claim.context_tokens or LONG_CONTEXT
    at6 = _min_own_gpus("bf16", "bf16", ctx, G000_OVERHEAD_PER_GPU_EXAMPLE)
    at8 = _min_own_gpus("bf16", "bf16", ctx, G000_OVERHEAD_PER_GPU_RULE)
    real = _min_real_gpus("bf16", "bf16", ctx, G000_OVERHEAD_PER_GPU_EXAMPLE)
    tol = Tolerance(abs=0, text="exact (whole GPUs)")
    if claim.claim_id == "g000-checklist-10plus-h100":
        note = "BF16 at 512K is the guide's own 10-GPU case, so '10+ H100s for more than Q4' follows from it. "
    else:
        note = ""
    return _derived(claim, at6, "GPUs", tol, formula="min n: 594 + 128 + 10 + n × 6 ≤ n × 80",
                    guide_inputs="6 GB overhead per GPU, the worked example's rate (its 8 GB rule needs "
                                 f"{at8}); the guide's 594 GB and 262,144 B/token",
                    real=real, real_note=f"{note}K3's real BF16 weights need {real} H100s.",
                    figures=[Figure("gpus_at_6_per_gpu", "min n", at6, "GPUs"),
                             Figure("gpus_at_8_per_gpu", "min n", at8, "GPUs")])


@check("g000-fp8kv-gpus-after")
def fp8_drops_to_8(claim: Claim) -> Verdict:
    """'FP8 KV at 512K saves 64 GB — enough to drop from 10 GPUs to 8'."""
    plan8 = _own_plan(weights="bf16", kv_dtype="fp8", context=LONG_CONTEXT, gpus=8, overhead_total=G000_OVERHEAD_TOTAL)
    need = plan8.total.total_bytes / GiB
    cap = plan8.total.available_bytes / GiB
    at6 = _min_own_gpus("bf16", "fp8", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_EXAMPLE)
    at8 = _min_own_gpus("bf16", "fp8", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_RULE)
    per_gpu = plan8.per_gpu.total_bytes / GiB
    return _make(claim, "contradicted", at6, "GPUs", "exact (whole GPUs)", basis="guide's own numbers",
                 formula="594 + 64 + 10 + 48 ≤ 8 × 80 ?",
                 real=_min_real_gpus("bf16", "fp8", LONG_CONTEXT, G000_OVERHEAD_PER_GPU_EXAMPLE),
                 figures=[Figure("need_on_8_gib", "594 + 64 + 10 + 48", need, "GiB"),
                          Figure("capacity_8_gib", "8 × 80", cap, "GiB"),
                          Figure("per_gpu_on_8_gib", "need / 8", per_gpu, "GiB"),
                          Figure("gpus_at_6_per_gpu", "min n", at6, "GPUs"),
                          Figure("gpus_at_8_per_gpu", "min n", at8, "GPUs"),
                          Figure("saving_in_gpus", "64 / 80", 64 / 80, "GPUs")],
                 explanation=f"On its own numbers BF16 weights with FP8 KV at 512K need {need:g} GiB on 8 GPUs, "
                             f"more than their {cap:g} ({per_gpu:.1f} per 80 GB card). 64 GB is {64 / 80:.1f} of one "
                             f"GPU: the count stays at {at6} (6 GB per GPU) or {at8} (8 GB per GPU).")


@check("g000-fp8kv-saves-512k", "g000-maxlen-savings-512k-128k")
def kv_savings(claim: Claim) -> Verdict:
    prof = _g000()
    if claim.kv_dtype == "fp8":
        own = (kv_cache_bytes(prof, context_tokens=LONG_CONTEXT, batch=1, kv_dtype="bf16")
               - kv_cache_bytes(prof, context_tokens=LONG_CONTEXT, batch=1, kv_dtype="fp8")) / GiB
        real = (real_kv_bytes(kv_dtype="bf16", context_tokens=LONG_CONTEXT)
                - real_kv_bytes(kv_dtype="fp8", context_tokens=LONG_CONTEXT)) / GiB
        formula = "262,144 × 524,288 / 2^30 × (1 − 1/2)"
    else:
        own = 262144 * (LONG_CONTEXT - 131072) / GiB
        real = (real_kv_bytes(kv_dtype="bf16", context_tokens=LONG_CONTEXT)
                - real_kv_bytes(kv_dtype="bf16", context_tokens=131072)) / GiB
        formula = "262,144 × (524,288 − 131,072) / 2^30"
    return _derived(claim, own, "GiB", written_tolerance(claim), formula=formula,
                    guide_inputs="the guide's 262,144 B/token at BF16", real=real,
                    real_note=f"with K3's 27,648 B/token the saving is {real:.2f} GiB.")


def _sweetspot_contexts() -> dict[int, int]:
    """Longest Q4 + FP8 context (tokens, 1K steps) that fits n H100s on the guide's numbers (8 GB/GPU)."""
    out = {}
    w = _g000().weights_bytes_by_tier["q4"]
    per_tok = _g000().kv_bytes_per_token(1.0)
    for n in (5, 6):
        budget = n * 80 * GiB - w - G000_ACTIVATION - n * G000_OVERHEAD_PER_GPU_RULE
        out[n] = min(budget // per_tok // 1024 * 1024, _g000().max_context_tokens)
    return out


@check("g000-sweetspot-gpus", "g000-summary-sweetspot-gpus")
def sweetspot_gpus(claim: Claim) -> Verdict:
    need256 = _min_own_gpus("q4", "fp8", 262144, G000_OVERHEAD_PER_GPU_RULE)
    on5 = _worked_on(5, overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE).total
    real = _min_real_gpus("q4", "fp8", 131072)
    return _make(claim, "contradicted", need256, "GPUs", "exact (whole GPUs)", basis="guide's own numbers",
                 formula="min n: 325 + 32 + 10 + n × 8 ≤ n × 80", real=real,
                 figures=[Figure("need_on_5_gib", "325 + 32 + 10 + 5 × 8", on5.total_bytes / GiB, "GiB"),
                          Figure("gpus_for_256k", "min n", need256, "GPUs")],
                 explanation=f"At 256K its own numbers need {on5.total_bytes / GiB:g} GiB on 5 GPUs (400): "
                             f"{-on5.headroom_bytes / GiB:g} over with 8 GB per GPU — its worked example says 15 over. "
                             f"5 GPUs only reach {_sweetspot_contexts()[5] // 1024}K. K3's real Q4_K weights need "
                             f"{real} H100s even at 128K.")


@check("g000-sweetspot-context", "g000-summary-sweetspot-context")
def sweetspot_context(claim: Claim) -> Verdict:
    ctx = _sweetspot_contexts()
    k5, k6 = ctx[5] / 1024, ctx[6] / 1024
    return _make(claim, "reproduced only under assumption", k6, "K tokens", "range ends",
                 basis="guide's own numbers", formula="(n × 80 − 325 − 10 − n × 8) × 2^30 / 131,072",
                 assumption="6 GPUs (on 5 its own numbers reach only "
                            f"{k5:.0f}K)",
                 figures=[Figure("max_context_5_gpus_k", "5 GPUs", k5, "K tokens"),
                          Figure("max_context_6_gpus_k", "6 GPUs", k6, "K tokens")],
                 explanation=f"With 8 GB per GPU, 6 H100s hold Q4 + FP8 KV up to {k6:.0f}K tokens, so 128K–256K "
                             f"fits; 5 H100s stop at {k5:.0f}K. K3's real Q4_K weights "
                             f"({real_weights_bytes('q4') / GiB:,.0f} GiB) do not fit 5–6 H100s at any context.")


def _per_gpu_case(weights: str, kv: str, ctx: int, weights_per_gpu: float | None = None):
    plan = _own_plan(weights=weights, kv_dtype=kv, context=ctx, gpus=8, overhead_total=G000_OVERHEAD_TOTAL)
    pg = plan.per_gpu
    w = pg.weights_bytes / GiB if weights_per_gpu is None else weights_per_gpu
    total = w + (pg.kv_cache_bytes + pg.activation_bytes + pg.overhead_bytes) / GiB
    return plan, w, total


@check("g000-8xh100-bf16-512k-over", "g000-fix-256k-total", "g000-fix-q8-total", "g000-fix-fp8kv-total")
def per_gpu_totals(claim: Claim) -> Verdict:
    """Per-GPU totals of the 8x H100 BF16 512K case and its three fixes (table missing: W/8 + KV/8 + 10/8 + 6)."""
    weights = "bf16"
    q8 = claim.precision == "q8"
    plan, w, total = _per_gpu_case(weights, claim.kv_dtype, claim.context_tokens,
                                   weights_per_gpu=56.3 if q8 else None)
    real_plan = _real_plan(weights="q8" if q8 else "bf16", kv_dtype=claim.kv_dtype, context=claim.context_tokens,
                           gpus=8, overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE)
    real_total = real_plan.per_gpu.total_bytes / GiB
    over = claim.quantity == "overage"
    own = total - 80 if over else total
    real = real_total - 80 if over else real_total
    kv = plan.per_gpu.kv_cache_bytes / GiB
    formula = f"{w:g} + {kv:g} + 1.25 + 6" + (" − 80" if over else "")
    inputs = "the guide's 594 GB BF16 and 262,144 B/token, split evenly over 8 GPUs, 10 GB activation and 48 GB overhead"
    if q8:
        inputs = "the 56.3 GB of Q8 weights per GPU (themselves contradicted: 8 bits of its 594 GB is 37.1); " + inputs
    extra = ""
    if claim.claim_id == "g000-fix-fp8kv-total":
        extra = f"At {total:.1f} GiB it is still {total - 80:.1f} over an 80 GB card, so it is not a fix on its own."
    elif claim.claim_id == "g000-fix-q8-total":
        extra = f"That leaves {80 - total:.1f} GiB, hardly 'comfortable'; with 37.1 GiB of 8-bit weights it would be {total - w + 37.125:.1f}."
    return _derived(claim, own, "GiB per GPU", written_tolerance(claim), formula=formula, guide_inputs=inputs,
                    real=real, real_note=f"for K3's real weights and KV the per-GPU figure is {real:,.0f} GiB.",
                    extra=extra, figures=[Figure("weights_per_gpu", "W / 8", w, "GiB"),
                                          Figure("kv_per_gpu", "KV / 8", kv, "GiB"),
                                          Figure("total_per_gpu", "sum", total, "GiB")])


@check("g000-faq-tp8-weights")
def tp8_weights(claim: Claim) -> Verdict:
    own = _g000().weights_bytes_by_tier["bf16"] / 8 / GiB
    real = real_weights_bytes("bf16") / 8 / GiB
    return _derived(claim, own, "GiB per GPU", written_tolerance(claim), formula="594 / 8",
                    guide_inputs="the guide's 594 GB of BF16 weights", real=real,
                    real_note=f"K3's real BF16 share is {real:,.0f} GiB per GPU.")


@check("g000-5xh100-q4-128k-headroom")
def five_gpu_headroom(claim: Claim) -> Verdict:
    at8 = 80 - _own_plan(weights="q4", kv_dtype="fp8", context=131072, gpus=5,
                         overhead_per_gpu=G000_OVERHEAD_PER_GPU_RULE).per_gpu.total_bytes / GiB
    at6 = 80 - _own_plan(weights="q4", kv_dtype="fp8", context=131072, gpus=5,
                         overhead_per_gpu=G000_OVERHEAD_PER_GPU_EXAMPLE).per_gpu.total_bytes / GiB
    return _make(claim, "not checkable", at8, "GiB per GPU", "none", basis="guide's own numbers",
                 formula="80 − (325 + 16 + 10) / 5 − overhead",
                 explanation=f"The breakdown table is missing and the KV dtype is not stated. With FP8 KV its own "
                             f"numbers leave {at8:.1f} GiB per GPU (8 GB overhead) or {at6:.1f} (6 GB); 2.8 lies "
                             f"between, so no stated rule gives it.")


@check("g000-faq-q4-saving", "g000-faq-q2-saving")
def precision_saving(claim: Claim) -> Verdict:
    tier = claim.precision
    own = (1 - _g000().weights_bytes_by_tier[tier] / _g000().weights_bytes_by_tier["bf16"]) * 100
    real = (1 - real_weights_bytes(tier) / real_weights_bytes("bf16")) * 100
    bits = get_weight_format(tier).bits_per_weight
    return _derived(claim, own, "%", written_tolerance(claim, rel_if_approximate=0.05),
                    formula=f"1 − {tier.upper()} / BF16", guide_inputs="the guide's 594 / 325 / 225 GB tiers",
                    real=real, real_note=f"at {bits:g} bits against 16, K3's {tier.upper()} is {real:.0f}% smaller.")


@check("g000-precision-step-saving")
def precision_steps(claim: Claim) -> Verdict:
    tiers = ("bf16", "q8", "q4", "q2")
    own_sizes = [_g000().weights_bytes_by_tier[t] for t in tiers]
    real_sizes = [real_weights_bytes(t) for t in tiers]
    own_steps = [100 * (1 - b / a) for a, b in zip(own_sizes, own_sizes[1:])]
    real_steps = [100 * (1 - b / a) for a, b in zip(real_sizes, real_sizes[1:])]
    lo, hi = claim.value, claim.value_high
    own_ok = all(lo * 0.95 <= s <= hi * 1.05 for s in own_steps)
    real_ok = all(lo * 0.95 <= s <= hi * 1.05 for s in real_steps)
    figs = [Figure(f"own_{a}_to_{b}", f"1 − {b} / {a}", s, "%") for a, b, s in zip(tiers, tiers[1:], own_steps)]
    figs += [Figure(f"real_{a}_to_{b}", f"1 − {b} / {a}", s, "%") for a, b, s in zip(tiers, tiers[1:], real_steps)]
    own_mean = sum(own_steps) / 3
    real_mean = sum(real_steps) / 3
    text = (f"On its own tiers (Q8 = 8 × 56.3 = 450.4) the steps are {', '.join(f'{s:.0f}' for s in own_steps)}%; "
            f"at 16 → 8.5 → 4.5 → 2.625 bits they are {', '.join(f'{s:.0f}' for s in real_steps)}%.")
    if not own_ok:
        return _make(claim, "contradicted", own_mean, "%", "±5% on the range ends", basis="guide's own numbers",
                     real=real_mean, figures=figs, formula="1 − next tier / tier", explanation=text)
    verdict = "reproduced" if real_ok else "reproduced only under assumption"
    return _make(claim, verdict, own_mean, "%", "±5% on the range ends", basis="guide's own numbers",
                 real=real_mean, figures=figs, formula="1 − next tier / tier", explanation=text,
                 assumption="the guide's 594 / 450.4 / 325 / 225 GB tiers (each step halves the bits in a real file)")


# ================================================================= guide 000: not checkable

_register_not_checkable(
    ["g000-activation-batch1", "g000-worked-activation"],
    "Activation memory needs a measurement of K3 in an engine, which no source here gives. k3lib's stated "
    "rule (one 8,192-token prefill chunk through the widest layer) gives 2.1 GiB; the guide's 10 GB sits inside "
    "its own 8–15 GB range.",
    computed=lambda: k3lib_activation_gib(), unit="GiB", basis="k3lib rule")
_register_not_checkable(
    ["g000-overhead-node"],
    "Engine overhead per node needs a measurement; the next sentence multiplies this 'single node' figure by "
    "8 GPUs, so the guide itself is unsure what it counts.")
_register_not_checkable(
    ["g000-nccl-tp8"],
    "NCCL buffer sizes depend on the engine and its settings. k3lib's default, 0.5 GiB per TP peer (3.5 GiB at "
    "TP=8), was chosen inside this range, so agreement with it is not evidence.",
    computed=lambda: 7 * 0.5, unit="GiB", basis="k3lib rule")
_register_not_checkable(
    ["g000-reserve-10-15pct"],
    "A rule of thumb. Its own overhead rule (8 GB per GPU) is already 10% of an 80 GB card, leaving 0–5% for "
    "the KV cache.")
_register_not_checkable(
    ["g000-precision-table-context"],
    "The precision-by-precision table this note describes is missing from the guide's text.")
_register_not_checkable(
    ["g000-production-gpus", "g000-faq-usable-gpus"],
    "Advice about production throughput, not a memory figure. (K3's real Q4_K weights alone, 1,456 GiB, "
    "are more than 18 H100s hold.)")
_register_not_checkable(
    ["g000-gpu-table-plus-one", "g000-checklist-plus-one"],
    "Advice (one spare GPU); nothing to compute.")
_register_not_checkable(
    ["g000-flashattention-saving", "g000-pagedattention-saving"],
    "An engine optimisation's saving needs a measurement on K3; none is given or available here.")
_register_not_checkable(
    ["g000-offload-slowdown"],
    "A slowdown range for CPU offload needs a measurement. For scale: an H100's HBM (3,350 GB/s) is 52× a PCIe "
    "Gen5 x16 link (64 GB/s).")
_register_not_checkable(
    ["g000-maxlen-advice-128k", "g000-checklist-test-50pct", "g000-checklist-reduce-25pct"],
    "Procedural advice about choosing max_model_len; it states no figure about K3 to compute.")
_register_not_checkable(
    ["g000-checklist-min-speed"],
    "A diagnostic threshold (under 5 tok/s means the interconnect is the bottleneck) that needs measurements of "
    "the deployment.")


@check("g000-faq-mac-speed")
def mac_speed(claim: Claim) -> Verdict:
    mac = get_gpu("mac studio 512gb")
    bound = mac.memory_bw_bytes_per_s / (G004_ACTIVE_PARAMS * Q4_BITS / 8)
    return _make(claim, "not checkable", bound, "tok/s (bandwidth bound)", "none", basis="hardware catalogue",
                 formula="819 GB/s / (104B × 4.5 bits / 8)",
                 explanation=f"K3's real Q4_K weights ({real_weights_bytes('q4') / GiB:,.0f} GiB) do not fit in 512 GB, "
                             f"so the speed depends on streaming from SSD, which the guide does not describe. If the "
                             f"guide's own 325 GB fitted, the M3 Ultra's bandwidth would allow up to {bound:.0f} tok/s "
                             f"(104B active at 4.5 bits, guide 004's count).")


# ================================================================= guide 004

TIER_FORMAT = {"1-bit": "iq1_s", "2-bit": "q2_k", "3-bit": "q3_k_m", "4-bit": "q4_k_m", "5-bit": "q5_k_m",
               "8-bit": "q8_0", "fp16": "bf16"}
#: implied bits per weight a file of each tier can plausibly average (mixes keep some tensors wider)
TIER_BAND = {"1-bit": (1.0, 2.5), "2-bit": (2.0, 3.5), "3-bit": (3.0, 4.5), "4-bit": (4.0, 5.5),
             "5-bit": (5.0, 6.5), "8-bit": (8.0, 9.5), "fp16": (15.0, 17.0)}


@dataclass(frozen=True)
class FileCandidate:
    """A way K3's weights could be stored: one format everywhere, or routed experts in one
    format and everything else in another."""

    name: str
    tier: str
    bytes: int
    uniform: bool


@lru_cache(maxsize=None)
def gguf_candidates() -> tuple[FileCandidate, ...]:
    """K3 files to match guide 004's sizes against: the llama.cpp type of each tier over all
    2,779.5B parameters, the native MXFP4 checkpoint, and its usual GGUF conversion (MXFP4
    experts kept, the rest at Q8_0)."""
    k3 = _k3()
    out = [FileCandidate(f"{get_weight_format(f).name}", tier, real_weights_bytes(f), True)
           for tier, f in TIER_FORMAT.items()]
    out.append(FileCandidate("native checkpoint: MXFP4 experts + BF16 rest", "4-bit",
                             k3.weights_bytes({"routed_experts": 4.25, "*": 16}), False))
    out.append(FileCandidate("MXFP4 experts + Q8_0 rest", "4-bit", k3.weights_bytes({"routed_experts": 4.25, "*": 8.5}),
                             False))
    return tuple(out)


def implied_bits_per_weight(size_gb: float, params: int | None = None) -> float:
    """bits per weight = size × 8 / parameters (K3's 2,779.5B unless given).

    >>> round(implied_bits_per_weight(1561.2), 2)
    4.49
    """
    return size_gb * GB * 8 / (params or _k3().params_total)


def nearest_file(size_gb: float) -> tuple[FileCandidate, float]:
    """The candidate closest to ``size_gb`` and the relative difference (claim / candidate − 1)."""
    best = min(gguf_candidates(), key=lambda c: abs(size_gb * GB / c.bytes - 1))
    return best, size_gb * GB / best.bytes - 1


def _g004_table_rows(column: str, context_tokens: int = 8192) -> dict[str, float]:
    """Guide 004's table by tier: ``"weights"`` or ``"total"`` (at ``context_tokens``)."""
    if column not in ("weights", "total"):
        raise K3InputError("column", f"{column!r}", "weights, total")
    quantity = "weights" if column == "weights" else "total_vram"
    return {c.precision: c.value for c in load_claims() if c.guide == "guide-004" and c.quantity == quantity
            and c.claim_id.startswith(f"g004-{column}-") and c.precision in TIER_BAND
            and (column == "weights" or c.context_tokens == context_tokens)}


def _est_params() -> float:
    """Parameters implied by the table's 'est.' rows: FP16 estimate / 2 bytes."""
    return _g004_table_rows("weights")["fp16"] * GB / 2


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "weights")
def g004_weights(claim: Claim) -> Verdict:
    """Which K3 file a weights cell matches: implied bits per weight, nearest candidate, tier band."""
    tier = claim.precision
    bpw = implied_bits_per_weight(claim.value)
    cand, diff = nearest_file(claim.value)
    lo, hi = TIER_BAND[tier]
    real = real_weights_bytes(TIER_FORMAT[tier]) / GB
    tier_bits = get_weight_format(TIER_FORMAT[tier]).bits_per_weight
    est = "est." in claim.quote
    figs = [Figure("implied_bits_per_weight", "size × 8 / 2,779.5B", bpw, "bits"),
            Figure("nearest_candidate_gb", cand.name, cand.bytes / GB, "GB"),
            Figure("difference", "claim / candidate − 1", diff, "fraction")]
    est_note = ""
    if est:
        p = _est_params()
        est_note = (f" Its 'est.' rows are the FP16 estimate × bytes/2: {claim.value * GB / p:.2f} bytes per parameter "
                    f"over {p / 1e9:,.1f}B parameters (5,476.2 / 2), 1.5% fewer than K3 has.")
        figs.append(Figure("bytes_per_param_est", "size / (5,476.2 GB / 2)", claim.value * GB / p, "B"))
    tol = Tolerance(rel=0.02, text="±2% against a candidate file")
    base = f"{claim.value:,.1f} GB is {bpw:.2f} bits per weight over K3's 2,779.5B parameters; nearest: {cand.name} " \
           f"({cand.bytes / GB:,.1f} GB, {_pct(diff)})."
    if not lo <= bpw <= hi:
        extra = ""
        if tier == "8-bit":
            rows = _g004_table_rows("weights")
            implied = _g004_table_rows("total")["8-bit"] - _table_kv_gb(8192) - G004_OVERHEAD / GB
            figs.append(Figure("row_total_implied_weights_gb", "2,903.6 − KV(8K) − 1", implied, "GB"))
            extra = (f" An 8-bit file must be larger than the 5-bit one ({rows['5-bit']:,.1f}) and about twice the "
                     f"4-bit one ({rows['4-bit']:,.1f}); its own 8K total implies {implied:,.1f} GB of weights "
                     f"({implied_bits_per_weight(implied):.2f} bits), and K3 at Q8_0 is {real:,.1f} GB.")
        return _make(claim, "contradicted", bpw, "bits per weight", f"{tier} band {lo:g}–{hi:g} bits",
                     basis="K3 architecture", formula="size × 8 / params", real=tier_bits, figures=figs,
                     explanation=f"{base} That is not {'an' if tier in ('8-bit', 'fp16') else 'a'} {tier} file.{extra}")
    if tol.ok(claim.value, cand.bytes / GB) and cand.tier == tier:
        if cand.uniform:
            return _make(claim, "reproduced", cand.bytes / GB, "GB", tol, basis="K3 architecture",
                         formula=f"2,779.5B × {get_weight_format(TIER_FORMAT[tier]).bits_per_weight:g} bits / 8",
                         real=real, figures=figs, explanation=base + est_note)
        return _make(claim, "reproduced only under assumption", cand.bytes / GB, "GB", tol, basis="K3 architecture",
                     formula="routed experts × 4.25 bits + rest × 8.5 bits", real=real, figures=figs,
                     assumption=f"the file is {cand.name}", explanation=base + est_note)
    tier_name = get_weight_format(TIER_FORMAT[tier]).name
    text = (f"{claim.value:,.1f} GB is {bpw:.2f} bits per weight over K3's 2,779.5B parameters, inside the {tier} "
            f"band; K3 at {tier_name} ({tier_bits:g} bits) would be {real:,.1f} GB ({_pct(claim.value / real - 1)}).")
    if est:
        p = _est_params()
        assumption = (f"the table's estimate rate, {claim.value * GB / p:.2f} bytes per parameter "
                      f"({claim.value * GB * 8 / p:.2f} bits) over {p / 1e9:,.1f}B parameters")
    else:
        assumption = f"a {tier} mix averaging {bpw:.2f} bits per weight (some tensors kept wider)"
    return _make(claim, "reproduced only under assumption", bpw, "bits per weight", f"{tier} band {lo:g}–{hi:g} bits",
                 basis="K3 architecture", formula="size × 8 / params", real=tier_bits, figures=figs,
                 assumption=assumption, explanation=text + est_note)


def _table_kv_gb(context_tokens: int) -> float:
    """The KV term guide 004's table adds: K3's 27,648 B/token (MLA at FP16), counted in GiB."""
    return real_kv_bytes(kv_dtype="bf16", context_tokens=context_tokens, include_state=False) / GiB


def table_total_gb(weights_gb: float, context_tokens: int) -> float:
    """Guide 004's rule: weights (GB) + 27,648 B/token × T (in GiB) + 1 GB.

    >>> round(table_total_gb(1341.7, 131072), 2)
    1346.08
    """
    return weights_gb + _table_kv_gb(context_tokens) + G004_OVERHEAD / GB


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "total_vram" and c.precision in TIER_BAND
               and c.claim_id.startswith("g004-total-") and c.context_tokens)
def g004_table_total(claim: Claim) -> Verdict:
    """'Total = weights + KV cache (FP16) + 1GB runtime overhead', cell by cell."""
    weights = _g004_table_rows("weights")[claim.precision]
    rule = table_total_gb(weights, claim.context_tokens)
    kv = _table_kv_gb(claim.context_tokens)
    real = (real_weights_bytes(TIER_FORMAT[claim.precision])
            + real_kv_bytes(kv_dtype="bf16", context_tokens=claim.context_tokens) + G004_OVERHEAD) / GB
    tol = Tolerance(abs=0.1, text="±0.1 GB (weights and total each printed to 0.1 GB)")
    figs = [Figure("weights_cell_gb", "same row", weights, "GB"), Figure("kv_gib", "27,648 × T / 2^30", kv, "GiB"),
            Figure("rule_total_gb", "W + KV + 1", rule, "GB")]
    ctx = f"{claim.context_tokens // 1024}K"
    if tol.ok(claim.value, rule):
        return _make(claim, "reproduced", rule, "GB", tol, basis="guide's own numbers",
                     formula=f"{weights:,.1f} + 27,648 × {claim.context_tokens:,} / 2^30 + 1", real=real, figures=figs,
                     explanation=f"{weights:,.1f} + {kv:.2f} + 1 = {rule:,.2f}. The KV term is exactly K3's MLA cache "
                                 f"(27,648 B/token at FP16) counted in GiB; K3's KDA state "
                                 f"({real_state_bytes() / GB:.2f} GB at FP32) is left out.")
    implied = claim.value - kv - G004_OVERHEAD / GB
    extra = claim.value - rule
    row = [c for c in load_claims() if c.guide == "guide-004" and c.precision == claim.precision
           and c.claim_id.startswith("g004-total-") and c.context_tokens]
    extras = [c.value - table_total_gb(weights, c.context_tokens) for c in row]
    same = max(extras) - min(extras) <= 0.2
    cand, diff = nearest_file(implied)
    near = (f", within {abs(diff):.2%} of {cand.name} ({cand.bytes / GB:,.1f} GB)" if abs(diff) <= 0.02 else "")
    figs += [Figure("unexplained_gb", "total − rule", extra, "GB"),
             Figure("implied_weights_gb", "total − KV − 1", implied, "GB"),
             Figure("implied_bits_per_weight", "implied weights × 8 / 2,779.5B", implied_bits_per_weight(implied), "bits")]
    return _make(claim, "contradicted", rule, "GB", tol, basis="guide's own numbers",
                 formula=f"{weights:,.1f} + 27,648 × {claim.context_tokens:,} / 2^30 + 1", real=real, figures=figs,
                 explanation=f"The table's own rule gives {rule:,.1f} GB at {ctx}; the cell says {claim.value:,.1f}, "
                             f"{extra:,.1f} GB more" + (", as at every context of the row" if same else "")
                             + f". The total counts {implied:,.1f} GB of weights "
                               f"({implied_bits_per_weight(implied):.2f} bits per weight{near}), not the "
                               f"{weights:,.1f} GB in its own weights column.")


def _q4_total_real_gb(context_tokens: int = 8192) -> float:
    return (real_weights_bytes("q4") + real_kv_bytes(kv_dtype="bf16", context_tokens=context_tokens)
            + G004_OVERHEAD) / GB


@check("g004-total-vram-q4", "g004-gpus-min-vram-q4km-8k", "g004-multigpu-min-vram", "g004-faq-vram-q4km-8k")
def g004_q4_requirement(claim: Claim) -> Verdict:
    """'At Q4(_K_M) with an 8K context it needs 1,562 GB': real K3 at 4.5 bits, vs the table's own 4-bit file."""
    real = _q4_total_real_gb()
    own = table_total_gb(_g004_table_rows("weights")["4-bit"], 8192)
    tol = Tolerance(rel=0.01, text="±1%")
    ok = tol.ok(claim.value, real)
    figs = [Figure("real_q4k_total_gb", "2,779.5B × 4.5/8 + KV(8K) + state + 1", real, "GB"),
            Figure("own_rule_total_gb", "1,508.7 + KV(8K) + 1", own, "GB")]
    if not ok:
        return _make(claim, "contradicted", real, "GB", tol, basis="K3 architecture", figures=figs,
                     formula="params × 4.5 / 8 + KV + 1", explanation=f"K3 at Q4_K needs {real:,.1f} GB.")
    return _make(claim, "reproduced only under assumption", real, "GB", tol, basis="K3 architecture", figures=figs,
                 formula="2,779.5B × 4.5 bits / 8 + 27,648 × 8,192 + KDA state + 1 GB",
                 assumption="Q4_K_M averages 4.5 bits over all 2,779.5B parameters (not the table's own 1,508.7 GB file)",
                 explanation=f"K3 at 4.5 bits per weight with an 8K FP16 cache needs {real:,.1f} GB "
                             f"({_pct(claim.value / real - 1)}). The table's own 4-bit file (1,508.7 GB) would need "
                             f"{own:,.1f} GB by its own rule.")


@check("g004-offload-ram-q4", "g004-offload-ram-min")
def offload_ram(claim: Claim) -> Verdict:
    experts = weights_bytes_by_group(_k3(), "q4")["routed_experts"] / GB
    file4 = _g004_table_rows("weights")["4-bit"]
    tol = Tolerance(rel=0.005, text="±0.5%")
    ok = tol.ok(claim.value, experts)
    return _make(claim, "reproduced only under assumption" if ok else "contradicted", experts, "GB",
                 tol, basis="K3 architecture", formula="92 × 896 × 3·3584·3072 × 4.5 bits / 8",
                 assumption="routed experts stored at Q4_K (4.5 bits)",
                 figures=[Figure("experts_q4k_gb", "2,722.7B × 4.5 / 8", experts, "GB"),
                          Figure("table_4bit_file_gb", "weights column", file4, "GB")],
                 explanation=f"K3's 2,722.7B routed-expert parameters at 4.5 bits are {experts:,.1f} GB. That is "
                             f"{experts - file4:,.1f} GB more than the whole 4-bit file in its own table "
                             f"({file4:,.1f} GB), so the split does not come from that file.")


@check("g004-offload-vram-q4", "g004-offload-vram-min")
def offload_vram(claim: Claim) -> Verdict:
    groups = weights_bytes_by_group(_k3(), "q4")
    rest = (sum(groups.values()) - groups["routed_experts"]) / GB
    own = rest + _table_kv_gb(8192) + G004_OVERHEAD / GB
    tol = Tolerance(rel=0.02, abs=0.5, text="±0.5 GB (rounding)")
    ok = tol.ok(claim.value, own)
    return _make(claim, "reproduced only under assumption" if ok else "contradicted", own, "GB", tol,
                 basis="K3 architecture", formula="(params − routed experts) × 4.5 / 8 + KV(8K) + 1",
                 assumption="everything but the routed experts at Q4_K (4.5 bits), an 8K context, and the table's 1 GB",
                 figures=[Figure("non_expert_q4k_gb", "56.7B × 4.5 / 8", rest, "GB"),
                          Figure("split_sum_gb", "33 + 1,531", 33 + 1531, "GB")],
                 explanation=f"K3's 56.7B parameters outside the routed experts (attention, shared experts, "
                             f"embeddings, routers) at 4.5 bits are {rest:.1f} GB; with the 8K cache and 1 GB, "
                             f"{own:.1f} GB. 33 + 1,531 = 1,564 GB: the 4-bit total at 8K (1,561.9) within 0.2%, "
                             f"but 55 GB more than the 4-bit weights cell (1,508.7).")


@check("g004-faq-comfortable-vram")
def comfortable(claim: Claim) -> Verdict:
    own = 1.2 * 1562
    tol = Tolerance(rel=0.01, text="±1%")
    ok = tol.ok(claim.value, own)
    return _make(claim, "reproduced only under assumption" if ok else "contradicted", own, "GB", tol,
                 basis="guide's own numbers", formula="1.2 × 1,562", assumption="'comfortable' means a 20% margin",
                 explanation=f"1.2 × 1,562 = {own:,.1f} GB ({_pct(claim.value / own - 1)}): a 20% margin, "
                             f"which the guide does not state.")


@check("g004-llama-server-context")
def llama_context(claim: Claim) -> Verdict:
    return _make(claim, "reproduced" if claim.value == 8192 else "contradicted", 8192, "tokens", "exact",
                 basis="arithmetic", formula="8K = 8 × 1,024",
                 explanation="-c 8192 is the 8K context of the 1,562 GB figure.")


@check("g004-runtime-overhead")
def g004_overhead(claim: Claim) -> Verdict:
    return _make(claim, "not checkable", None, "GB", "none",
                 explanation="Runtime overhead needs a measurement of llama.cpp (CUDA context, compute buffers) "
                             "running K3. The table's consistent rows use it as written.")


@check("g004-ram-bandwidth")
def ram_bandwidth(claim: Claim) -> Verdict:
    return _make(claim, "not checkable", 2 * 8 * 4.4, "GB/s", "none", basis="arithmetic",
                 formula="2 channels × 8 B × 4.4 GT/s",
                 explanation="An assumed host RAM bandwidth (it equals dual-channel DDR5-4400, 70.4 GB/s). It is "
                             "applied even to unified-memory machines, whose own memory is 256–819 GB/s.")


@check_pattern(lambda c: c.quantity == "price")
def price(claim: Claim) -> Verdict:
    hw = get_gpu(claim.device)
    return _make(claim, "not checkable", hw.price_usd, "$", "none", basis="hardware catalogue",
                 explanation=f"A dated retailer listing; prices move. data/hardware.csv records ${hw.price_usd:,.0f} from "
                             f"this guide; makers' launch prices were about half (see its notes).")


def offload_speed_bounds() -> dict[str, float]:
    """Guide 004's 70 GB/s RAM bound on tokens/s: reading all 104B active parameters at 4.5
    bits (lower) or only K3's 48.6B routed-active ones (upper) from RAM per token."""
    k3 = _k3()
    m = k3.mlp
    routed_active = m.moe_layers * m.experts_per_token * m.expert_params(k3.hidden_size)
    return {"low": G004_RAM_BANDWIDTH / (G004_ACTIVE_PARAMS * Q4_BITS / 8),
            "high": G004_RAM_BANDWIDTH / (routed_active * Q4_BITS / 8),
            "routed_active_params": routed_active}


@check_pattern(lambda c: c.guide == "guide-004" and c.quantity == "tokens_per_s")
def offload_speed(claim: Claim) -> Verdict:
    """An offload-mode speed: impossible on a unified-memory machine (its memory is all the RAM it
    has); elsewhere bounded by the 70 GB/s RAM bandwidth."""
    hw = get_gpu(claim.device)
    need = 33 + 1531
    if hw.unified_memory:
        have = hw.memory_marketed_bytes / GB
        return _make(claim, "contradicted", have, "GB of memory", "none", basis="hardware catalogue",
                     formula="unified memory vs 33 + 1,531 GB",
                     figures=[Figure("memory_gb", hw.id, have, "GB"), Figure("needed_gb", "33 + 1,531", need, "GB")],
                     explanation=f"{hw.name} has one pool of {hw.memory_marketed_bytes / GiB:g} GiB ({have:,.0f} GB) "
                                 f"shared by CPU and GPU, soldered; there is no separate system RAM to hold the "
                                 f"1,531 GB of experts the same table requires ({need:,} GB in all). The row "
                                 f"describes a machine that cannot be built; K3 would have to stream from SSD, far "
                                 f"below the 70 GB/s the estimate assumes.")
    b = offload_speed_bounds()
    figs = [Figure("bound_all_active", "70 / (104B × 4.5/8)", b["low"], "tok/s"),
            Figure("bound_routed_active", "70 / (48.6B × 4.5/8)", b["high"], "tok/s")]
    if claim.value > b["high"] * 1.05:
        return _make(claim, "contradicted", b["high"], "tok/s", "±5%", basis="K3 architecture", figures=figs,
                     formula="70 GB/s / bytes read from RAM per token",
                     explanation=f"Above the 70 GB/s bound of {b['high']:.1f} tok/s.")
    return _make(claim, "not checkable", b["high"], "tok/s (upper bound)", "none", basis="K3 architecture",
                 figures=figs, formula="70 GB/s / bytes read from RAM per token",
                 explanation=f"The guide's speed model is not stated. Its own 70 GB/s bounds the speed between "
                             f"{b['low']:.1f} tok/s (all 104B active read from RAM at 4.5 bits) and {b['high']:.1f} "
                             f"(only K3's {b['routed_active_params'] / 1e9:.1f}B routed-active); {claim.value:g} lies "
                             f"inside, so it is possible but not derivable. {hw.name} has "
                             f"{hw.memory_marketed_bytes / GiB:g} GiB ≥ 33 GB of VRAM.")


# ================================================================= tables for the notebook


def audit_table(verdicts: Sequence[Verdict] | None = None) -> "pandas.DataFrame":
    """One row per claim: what the guide says, what the check computed, and the verdict."""
    import pandas as pd

    claims = {c.claim_id: c for c in load_claims()}
    verdicts = audit_all() if verdicts is None else verdicts
    rows = []
    for v in verdicts:
        c = claims[v.claim_id]
        rows.append({
            "claim_id": c.claim_id, "guide": c.guide, "section": c.section, "quote": c.quote,
            "quantity": c.quantity, "claim_kind": c.claim_kind, "claimed": c.value, "claimed_high": c.value_high,
            "unit_as_written": c.unit_as_written, "verdict": v.verdict, "computed": v.computed_value,
            "unit": v.unit, "real_k3": v.real_value, "tolerance": v.tolerance, "assumption": v.assumption,
            "explanation": v.explanation, "formula": v.formula, "basis": v.basis, "check": v.check,
        })
    return pd.DataFrame(rows)


def verdict_counts(table: "pandas.DataFrame | None" = None) -> "pandas.DataFrame":
    """Claims per guide and verdict, with totals."""
    import pandas as pd

    t = audit_table() if table is None else table
    counts = pd.crosstab(t["guide"], pd.Categorical(t["verdict"], categories=VERDICTS), dropna=False)
    counts.columns = list(VERDICTS)
    counts.index.name = "guide"
    counts["total"] = counts.sum(axis=1)
    counts.loc["all"] = counts.sum(axis=0)
    return counts.astype(int)


def filter_claims(table: "pandas.DataFrame", guide: str = "all", verdict: str = "all",
                  columns: Sequence[str] | None = None) -> "pandas.DataFrame":
    """Rows of ``table`` for one guide and/or one verdict (``"all"`` keeps every value).

    The callback of the notebook's filter widget.
    """
    if guide != "all" and guide not in GUIDES:
        raise K3InputError("guide", f"{guide!r} is not a guide", "all, " + ", ".join(GUIDES))
    if verdict != "all" and verdict not in VERDICTS:
        raise K3InputError("verdict", f"{verdict!r} is not a verdict", "all, " + ", ".join(VERDICTS))
    out = table
    if guide != "all":
        out = out[out["guide"] == guide]
    if verdict != "all":
        out = out[out["verdict"] == verdict]
    out = out.reset_index(drop=True)
    return out[list(columns)] if columns else out


DISPLAY_COLUMNS = ("claim_id", "quote", "claimed", "unit_as_written", "computed", "unit", "real_k3", "verdict")
VERDICT_COLORS = {"reproduced": "#2e7d32", "reproduced only under assumption": "#b7791f",
                  "contradicted": "#c62828", "not checkable": "#757575"}
VERDICT_TINTS = {"reproduced": "#e8f5e9", "reproduced only under assumption": "#fff4d6",
                 "contradicted": "#fde8e8", "not checkable": "#eeeeee"}


def style_verdicts(table: "pandas.DataFrame", columns: Sequence[str] = DISPLAY_COLUMNS):
    """A pandas Styler with each row tinted by its verdict (static HTML: renders offline)."""
    t = table[list(columns)] if columns else table

    def tint(row):
        color = VERDICT_TINTS.get(row.get("verdict", ""), "")
        return [f"background-color: {color}" if color else "" for _ in row]

    return (t.style.apply(tint, axis=1)
            .format({"claimed": "{:,.4g}", "computed": lambda x: "" if x is None or x != x else f"{x:,.4g}",
                     "real_k3": lambda x: "" if x is None or x != x else f"{x:,.4g}"}, na_rep="")
            .set_uuid("guide-audit").hide(axis="index"))


def claims_explorer(table: "pandas.DataFrame | None" = None, guide: str = "all", verdict: str = "all"):
    """Two dropdowns (guide, verdict) over the claims table; the output updates in place via
    :func:`filter_claims`."""
    import ipywidgets as w
    from IPython.display import display

    t = audit_table() if table is None else table
    g = w.Dropdown(options=["all", *GUIDES], value=guide, description="guide")
    v = w.Dropdown(options=["all", *VERDICTS], value=verdict, description="verdict")
    out = w.Output()

    def refresh(*_):
        out.clear_output(wait=True)
        with out:
            display(style_verdicts(filter_claims(t, g.value, v.value)))

    g.observe(refresh, "value")
    v.observe(refresh, "value")
    refresh()
    return w.VBox([w.HBox([g, v]), out])


@dataclass(frozen=True)
class AuditParameters:
    """The notebook's parameters, validated."""

    guide: str = "all"
    verdict: str = "all"
    unit: str = "GB"

    def __post_init__(self) -> None:
        if self.guide != "all" and self.guide not in GUIDES:
            raise K3InputError("guide", f"{self.guide!r} is not a guide", "all, " + ", ".join(GUIDES))
        if self.verdict != "all" and self.verdict not in VERDICTS:
            raise K3InputError("verdict", f"{self.verdict!r} is not a verdict", "all, " + ", ".join(VERDICTS))
        if self.unit not in ("GB", "GiB"):
            raise K3InputError("unit", f"{self.unit!r} is not a unit", "GB, GiB")


def validate_parameters(**params) -> AuditParameters:
    """Validate the notebook's parameters; a bad one stops the notebook with one line naming it."""
    from k3lib.views.notebook import ParameterError

    try:
        return AuditParameters(**params)
    except K3InputError as exc:
        raise ParameterError(f"parameter {exc}") from None
    except TypeError as exc:
        raise ParameterError(f"parameter error: {exc}") from None


#: The contradictions the notebook explains one by one, most consequential first.
BIGGEST_CONTRADICTIONS = (
    "g000-kv-bytes-bf16",
    "g000-weights-bf16",
    "g000-fp8kv-gpus-after",
    "g000-intro-8xh100-headroom",
    "g004-weights-8-bit",
    "g004-total-4-bit-8k",
    "g004-offload-speed-ryzen",
    "g000-fix-q8-weights",
    "g000-unique-params-one-tenth",
)


def biggest_contradictions(verdicts: Sequence[Verdict] | None = None) -> "pandas.DataFrame":
    """The contradictions of :data:`BIGGEST_CONTRADICTIONS`: claim, computed value, why."""
    import pandas as pd

    by_id = {v.claim_id: v for v in (audit_all() if verdicts is None else verdicts)}
    claims = {c.claim_id: c for c in load_claims()}
    return pd.DataFrame([{"claim_id": cid, "quote": claims[cid].quote, "claimed": claims[cid].value,
                          "unit_as_written": claims[cid].unit_as_written, "computed": by_id[cid].computed_value,
                          "unit": by_id[cid].unit, "verdict": by_id[cid].verdict}
                         for cid in BIGGEST_CONTRADICTIONS])


def working(claim_id: str) -> "pandas.DataFrame":
    """The steps of one check as a ``param | formula | value | unit`` table."""
    import pandas as pd

    v = audit_claim(get_claim(claim_id))
    rows = [{"param": f.name, "formula": f.formula, "value": round(f.value, 4), "unit": f.unit} for f in v.figures]
    if v.computed_value is not None and not any(f.value == v.computed_value for f in v.figures):
        rows.append({"param": "computed", "formula": v.formula, "value": round(v.computed_value, 4), "unit": v.unit})
    return pd.DataFrame(rows, columns=["param", "formula", "value", "unit"])


# ---------------------------------------------------------------- reconciliation with K3


def kv_reconciliation() -> "pandas.DataFrame":
    """KV bytes per token: guide 000's figures vs K3's MLA latent, per dtype."""
    import pandas as pd
    from k3lib.core.precisions import get_kv_dtype

    rows = []
    for dt in ("bf16", "fp8", "int4"):
        b = get_kv_dtype(dt).bytes_per_element
        guide = _g000().kv_bytes_per_token(b)
        real = _k3().kv_bytes_per_token(b)
        rows.append({"kv_dtype": dt.upper(), "guide 000 (B/token)": guide, "K3 MLA latent (B/token)": real,
                     "guide / K3": round(guide / real, 2)})
    return pd.DataFrame(rows)


def kv_cache_at_contexts(contexts: Sequence[int] = (131072, 262144, 524288, 1048576), unit: str = "GiB"
                         ) -> "pandas.DataFrame":
    """BF16 KV cache at each context: guide 000 vs K3 (MLA + KDA state), in ``unit``."""
    import pandas as pd

    s = _unit_bytes(unit)
    rows = []
    for t in contexts:
        rows.append({"context (tokens)": t,
                     f"guide 000 ({unit})": kv_cache_bytes(_g000(), context_tokens=t, batch=1, kv_dtype="bf16") / s,
                     f"K3 MLA ({unit})": real_kv_bytes(kv_dtype="bf16", context_tokens=t, include_state=False) / s,
                     f"K3 KDA state ({unit})": real_state_bytes() / s,
                     f"K3 total ({unit})": real_kv_bytes(kv_dtype="bf16", context_tokens=t) / s})
    return pd.DataFrame(rows).round(2)


def gguf_matches() -> "pandas.DataFrame":
    """Guide 004's weights column: implied bits per weight and the nearest K3 file."""
    import pandas as pd

    rows = []
    for c in load_claims():
        if c.guide == "guide-004" and c.quantity == "weights":
            cand, diff = nearest_file(c.value)
            rows.append({"tier": c.precision, "weights (GB)": c.value, "kind": "est." if "est." in c.quote else "GGUF",
                         "bits per weight": round(implied_bits_per_weight(c.value), 2),
                         "nearest K3 file": cand.name, "that file (GB)": round(cand.bytes / GB, 1),
                         "difference (%)": round(100 * diff, 1),
                         "K3 at the tier's type (GB)": round(real_weights_bytes(TIER_FORMAT[c.precision]) / GB, 1)})
    return pd.DataFrame(rows)


def g004_table_check() -> "pandas.DataFrame":
    """Every total cell of guide 004's table against its own rule W + 27,648·T/2^30 + 1."""
    import pandas as pd

    rows = []
    weights = _g004_table_rows("weights")
    for c in load_claims():
        if c.guide == "guide-004" and c.claim_id.startswith("g004-total-") and c.context_tokens:
            rule = table_total_gb(weights[c.precision], c.context_tokens)
            rows.append({"tier": c.precision, "context (tokens)": c.context_tokens, "stated (GB)": c.value,
                         "own rule (GB)": round(rule, 2), "stated − rule (GB)": round(c.value - rule, 1) + 0.0})
    return pd.DataFrame(rows)


def offload_split(unit: str = "GB") -> "pandas.DataFrame":
    """Guide 004's offload split (33 GB VRAM + 1,531 GB RAM) against its own table and K3 at Q4_K."""
    import pandas as pd

    s = _unit_bytes(unit)
    groups = weights_bytes_by_group(_k3(), "q4")
    experts = groups["routed_experts"]
    rest = sum(groups.values()) - experts
    kv = real_kv_bytes(kv_dtype="bf16", context_tokens=8192)
    rows = [
        ("guide: VRAM (attention, shared experts, KV)", 33 * GB),
        ("guide: RAM (routed experts)", 1531 * GB),
        ("guide: VRAM + RAM", 1564 * GB),
        ("guide table: 4-bit weights cell", _g004_table_rows("weights")["4-bit"] * GB),
        ("guide table: 4-bit total at 8K", _g004_table_rows("total")["4-bit"] * GB),
        ("K3: routed experts at Q4_K (4.5 bits)", experts),
        ("K3: everything else at Q4_K + 8K KV (with KDA state) + 1 GB", rest + kv + G004_OVERHEAD),
        ("K3: all at Q4_K + 8K KV (with KDA state) + 1 GB", experts + rest + kv + G004_OVERHEAD),
    ]
    return pd.DataFrame([{"item": k, f"size ({unit})": round(v / s, 1)} for k, v in rows])


def unique_params_examined() -> "pandas.DataFrame":
    """The 'effective unique parameters ≈ 1/10' claim against K3's parameter groups."""
    import pandas as pd

    k3 = _k3()
    g = k3.param_groups()
    total = k3.params_total
    rows = [("all parameters (stored)", total),
            ("routed experts (92 × 896)", g["routed_experts"]),
            ("everything but routed experts", total - g["routed_experts"]),
            ("active per token (16 of 896 experts)", k3.params_active),
            ("one-tenth of 2.8T, as the guide says", 280 * 10**9),
            ("what 594 GiB holds at 2 B each", 594 * GiB // 2)]
    return pd.DataFrame([{"parameters": k, "count (B)": round(v / 1e9, 1), "share of total (%)": round(100 * v / total, 1)}
                         for k, v in rows])


def use_instead(unit: str = "GB") -> "pandas.DataFrame":
    """The guides' headline sizes next to K3's real ones, in one ``unit`` (guide 000's 'GB' are GiB)."""
    import pandas as pd

    s = _unit_bytes(unit)
    g0 = _g000()
    rows = [
        ("weights, BF16", g0.weights_bytes_by_tier["bf16"], 5476.2 * GB, real_weights_bytes("bf16"), "2,779.5B × 2 B"),
        ("weights, native checkpoint", None, None, real_weights_bytes("native"), "MXFP4 experts + BF16 rest"),
        ("weights, 8-bit", g0.weights_bytes_by_tier["q8"], 1561.2 * GB, real_weights_bytes("q8"), "Q8_0, 8.5 bits"),
        ("weights, 4-bit", g0.weights_bytes_by_tier["q4"], 1508.7 * GB, real_weights_bytes("q4"), "Q4_K, 4.5 bits"),
        ("weights, 2-bit", g0.weights_bytes_by_tier["q2"], 861.3 * GB, real_weights_bytes("q2"), "Q2_K, 2.625 bits"),
        ("KV cache, BF16, 128K", kv_cache_bytes(g0, context_tokens=131072, batch=1, kv_dtype="bf16"),
         _table_kv_gb(131072) * GiB, real_kv_bytes(kv_dtype="bf16", context_tokens=131072), "27,648 B/token + KDA state"),
        ("KV cache, BF16, 1M", kv_cache_bytes(g0, context_tokens=1048576, batch=1, kv_dtype="bf16"), None,
         real_kv_bytes(kv_dtype="bf16", context_tokens=1048576), "27,648 B/token + KDA state"),
        ("KDA state per sequence (FP32)", None, None, real_state_bytes(), "116,158,464 × 4 B"),
    ]
    out = [{"quantity": q, f"guide 000 ({unit})": None if a is None else round(a / s, 1),
            f"guide 004 ({unit})": None if b is None else round(b / s, 1), f"K3 real ({unit})": round(r / s, 1),
            "how": how} for q, a, b, r, how in rows]
    return pd.DataFrame(out)


def real_gpu_counts() -> "pandas.DataFrame":
    """H100 80 GB GPUs K3 really needs (guide 000's 10 GiB activation and 8 GiB per GPU kept)."""
    import pandas as pd

    rows = []
    for fmt, kv, ctx in (("q4", "fp8", 131072), ("q4", "fp8", 262144), ("q8", "fp8", 262144),
                         ("bf16", "bf16", 524288), ("native", "fp8", 262144)):
        rows.append({"weights": fmt, "kv_dtype": kv, "context (tokens)": ctx,
                     "guide 000 (H100s)": _min_own_gpus(fmt, kv, ctx, G000_OVERHEAD_PER_GPU_RULE) if fmt != "native" else None,
                     "K3 real (H100s)": _min_real_gpus(fmt, kv, ctx)})
    return pd.DataFrame(rows).astype({"guide 000 (H100s)": "Int64", "K3 real (H100s)": "Int64"})


# ---------------------------------------------------------------- expectations


def read_expectations(path=None) -> dict[str, str]:
    """``claim_id → expected verdict`` from ``data/audit_expectations.csv``."""
    with open(path or DATA_DIR / EXPECTATIONS_CSV, newline="", encoding="utf-8") as fh:
        return {r["claim_id"]: r["expected_verdict"] for r in csv.DictReader(fh)}


def write_expectations(path=None) -> int:
    """Store the current verdicts as expectations (run after a deliberate change); returns rows written."""
    verdicts = audit_all()
    with open(path or DATA_DIR / EXPECTATIONS_CSV, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["claim_id", "expected_verdict"])
        for v in verdicts:
            w.writerow([v.claim_id, v.verdict])
    return len(verdicts)


if __name__ == "__main__":  # python -m k3lib.guides.audit --write-expectations
    import sys

    if "--write-expectations" in sys.argv:
        print(f"wrote {write_expectations()} expectations")
    else:
        print(verdict_counts().to_string())
