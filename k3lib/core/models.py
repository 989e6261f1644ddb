"""The model library: architectures (shapes → counts) and published profiles
(figures a guide prints, each quoted with its source line).

Built-in architectures live in ``data/models/*.json`` and guide profiles in
``data/profiles/*.json``. ``kimi-k3`` is the real architecture; the guides'
versions are ``kimi-k3@guide-000`` and ``kimi-k3@guide-004``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, TypeAlias

from k3lib.core.architecture import Architecture, AttentionGroup, MLPSpec
from k3lib.core.data import data_file, normalise_name
from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.units import GB, GiB

if TYPE_CHECKING:
    from k3lib.core.hardware import MemoryBasis

DEFAULT_MODEL = "kimi-k3"


@dataclass(frozen=True)
class PublishedProfile:
    """A model as a guide publishes it: weight bytes per precision tier, KV bytes
    per token at BF16, activation at batch 1 and overhead — each with its quote.

    Sizes are stored in bytes, converted from the guide's figures in ``unit``
    (``GiB`` or ``GB``: the unit the guide's own formulas imply).
    """

    id: str
    name: str
    guide: str
    file: str
    unit: str
    unit_reason: str
    weights_bytes_by_tier: Mapping[str, int]
    weight_aliases: Mapping[str, str]
    kv_bytes_per_token_bf16: int
    activation_bytes_batch1: int
    overhead_per_gpu_bytes: int | None
    overhead_total_bytes: int | None
    max_context_tokens: int
    params_total: int
    params_active: int | None
    quotes: Mapping[str, str] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    memory_basis: MemoryBasis = "marketed"

    kind = "profile"

    def __post_init__(self) -> None:
        if self.unit not in ("GB", "GiB"):
            raise K3InputError("unit", f"{self.unit!r} is not GB or GiB")
        if self.kv_bytes_per_token_bf16 <= 0:
            raise K3InputError("kv_bytes_per_token_bf16", "must be > 0")
        if self.memory_basis not in ("marketed", "usable"):
            raise K3InputError("memory_basis", f"{self.memory_basis!r} is not known", "marketed, usable")

    @property
    def tiers(self) -> tuple[str, ...]:
        return tuple(self.weights_bytes_by_tier)

    def tier_for(self, weight_format_id: str) -> str:
        """The profile's tier name for a k3lib weight-format id (``q4`` → ``4-bit``)."""
        key = weight_format_id.lower()
        if key in self.weights_bytes_by_tier:
            return key
        if key in self.weight_aliases:
            return self.weight_aliases[key]
        raise K3InputError("weights", f"{self.id} publishes no figure for {weight_format_id!r}", ", ".join(self.tiers))

    def kv_bytes_per_token(self, bytes_per_element: float) -> int:
        """Published BF16 bytes/token × (bytes per element / 2)."""
        return int(round(self.kv_bytes_per_token_bf16 * bytes_per_element / 2))


ModelSpec: TypeAlias = Architecture | PublishedProfile


def architecture_from_dict(doc: Mapping[str, Any]) -> Architecture:
    """Build an :class:`Architecture` from k3lib's JSON schema."""
    try:
        groups = tuple(AttentionGroup(**g) for g in doc["attention"])
        mlp = MLPSpec(**doc["mlp"])
        keys = (
            "id",
            "name",
            "hidden_size",
            "vocab_size",
            "num_layers",
            "max_context_tokens",
            "tie_word_embeddings",
            "native_formats",
            "source",
            "notes",
            "family",
            "official_params_total",
            "official_params_active",
            "mtp_layers",
            "per_layer_input_dim",
            "per_layer_input_vocab",
            "norms_per_layer",
        )
        return Architecture(attention=groups, mlp=mlp, **{k: doc[k] for k in keys if k in doc})
    except (KeyError, TypeError) as exc:
        raise K3InputError("model", f"malformed architecture document: {exc}") from None


def _profile_from_dict(doc: Mapping[str, Any]) -> PublishedProfile:
    unit = doc["unit"]
    scale = GiB if unit == "GiB" else GB

    def to_bytes(v: float | str) -> int:  # a JSON number (or a numeric string)
        return int(round(float(v) * scale))

    quotes = {"weights." + k: v["quote"] for k, v in doc["weights"].items()}
    for key in (
        "kv_bytes_per_token_bf16",
        "activation_bytes_batch1",
        "overhead_per_gpu",
        "overhead_total",
        "max_context_tokens",
        "params_total",
        "params_active",
    ):
        if key in doc:
            quotes[key] = doc[key]["quote"]
    return PublishedProfile(
        id=doc["id"],
        name=doc["name"],
        guide=doc["guide"],
        file=doc["file"],
        unit=unit,
        unit_reason=doc["unit_reason"],
        weights_bytes_by_tier={k: to_bytes(v["value"]) for k, v in doc["weights"].items()},
        weight_aliases=dict(doc.get("weight_aliases", {})),
        kv_bytes_per_token_bf16=int(doc["kv_bytes_per_token_bf16"]["value"]),
        activation_bytes_batch1=to_bytes(doc["activation_bytes_batch1"]["value"]),
        overhead_per_gpu_bytes=to_bytes(doc["overhead_per_gpu"]["value"]) if "overhead_per_gpu" in doc else None,
        overhead_total_bytes=to_bytes(doc["overhead_total"]["value"]) if "overhead_total" in doc else None,
        max_context_tokens=int(doc["max_context_tokens"]["value"]),
        params_total=int(doc["params_total"]["value"]),
        params_active=int(doc["params_active"]["value"]) if "params_active" in doc else None,
        quotes=quotes,
        raw=doc,
        memory_basis=doc.get("memory_basis", "marketed"),
    )


@cache
def builtin_models() -> dict[str, ModelSpec]:
    """Every built-in model keyed by id (architectures first, then profiles)."""
    out: dict[str, ModelSpec] = {}
    for path in sorted((p for p in data_file("models").iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        arch = architecture_from_dict(json.loads(path.read_text(encoding="utf-8")))
        out[arch.id] = arch
    for path in sorted((p for p in data_file("profiles").iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        prof = _profile_from_dict(json.loads(path.read_text(encoding="utf-8")))
        out[prof.id] = prof
    return out


def list_models() -> list[ModelSpec]:
    """Built-in models, the flagship first."""
    models = builtin_models()
    return sorted(models.values(), key=lambda m: (not m.id.startswith(DEFAULT_MODEL), m.kind, m.id))


def get_model(name: str | ModelSpec) -> ModelSpec:
    """Look up a built-in model by id (case-insensitive; ``-``/``_``/spaces ignored)."""
    if isinstance(name, (Architecture, PublishedProfile)):
        return name
    if not isinstance(name, str) or not name.strip():
        raise K3InputError("model", f"{name!r} is not a model name", "a name from `k3plan models`")
    found = _model_index().get(normalise_name(name))
    if found is None:
        raise UnknownNameError("model", name, builtin_models().keys())
    return found


def get_architecture(name: str | ModelSpec) -> Architecture:
    """:func:`get_model` for a model with an architecture (K3InputError naming ``model`` for a guide profile)."""
    spec = get_model(name)
    if not isinstance(spec, Architecture):
        raise K3InputError("model", f"{spec.id} is a guide profile, not an architecture", "an architecture")
    return spec


def get_profile(name: str | ModelSpec) -> PublishedProfile:
    """:func:`get_model` for a guide profile (K3InputError naming ``model`` for an architecture)."""
    spec = get_model(name)
    if not isinstance(spec, PublishedProfile):
        raise K3InputError(
            "model", f"{spec.id} is an architecture, not a guide profile", "a guide profile (id@guide-…)"
        )
    return spec


@cache
def _model_index() -> dict[str, ModelSpec]:
    """Normalised id and display name → model."""
    out: dict[str, ModelSpec] = {}
    for mid, model in builtin_models().items():
        out.setdefault(normalise_name(mid), model)
        out.setdefault(normalise_name(model.name), model)
    return out
