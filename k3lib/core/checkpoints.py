"""Checkpoints that exist: which weight files an engine can load for a model, with their
published sizes (``data/checkpoints.csv``, every row with its source).

A recommendation names one of these, never a precision no one has published for that
engine (e.g. no 2-bit checkpoint of Kimi K3 that vLLM can load). Models without rows get
their own checkpoint (``native``) for vLLM/SGLang/transformers, and the GGUF types
llama.cpp's converter writes (``q8_0``, ``q4_k_m``: convert it yourself) for llama.cpp.
A guide profile keeps its published tiers, engine-agnostic.

>>> [c.id for c in checkpoints_for("kimi-k3", "vllm")]
['native', 'fp8-block']
>>> resolve_weights("kimi-k3", "UD-Q4_K_XL")[1]
1508668683104
"""

from __future__ import annotations

from dataclasses import dataclass

from k3lib.core.data import normalise_name, read_csv_rows
from k3lib.core.errors import K3InputError
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.precisions import WeightFormat, get_weight_format

ENGINES = ("vllm", "sglang", "llama.cpp", "transformers")
CHECKPOINTS_CSV = "checkpoints.csv"
#: what llama.cpp's convert + quantize produce from any Hugging Face checkpoint
CONVERTIBLE_GGUF = ("q8_0", "q4_k_m")


@dataclass(frozen=True)
class Checkpoint:
    """A published (or convertible) weight file set for one model and engine."""

    model: str
    engine: str
    id: str
    label: str
    weight_format: str
    file_bytes: int | None
    exact: bool
    repo: str
    source: str
    notes: str = ""

    @property
    def published(self) -> bool:
        return self.file_bytes is not None


def _engine(engine: str) -> str:
    e = normalise_name(engine)
    for known in ENGINES:
        if normalise_name(known) == e or (e in ("llamacpp", "gguf") and known == "llama.cpp"):
            return known
    raise K3InputError("engine", f"{engine!r} is not known", ", ".join(ENGINES))


def _rows() -> tuple[Checkpoint, ...]:
    out = []
    for r in read_csv_rows(CHECKPOINTS_CSV):
        out.append(
            Checkpoint(
                r["model"],
                r["engine"],
                r["id"],
                r["label"],
                r["weight_format"],
                int(r["file_bytes"]) if r["file_bytes"] else None,
                r["exact"] == "true",
                r["repo"],
                r["source"],
                r.get("notes", ""),
            )
        )
    return tuple(out)


def checkpoints_for(model: str | ModelSpec, engine: str = "vllm") -> tuple[Checkpoint, ...]:
    """The checkpoints ``engine`` can load for ``model``, best quality first."""
    spec = get_model(model)
    eng = _engine(engine)
    if isinstance(spec, PublishedProfile):
        return tuple(
            Checkpoint(
                spec.id,
                eng,
                t,
                f"{spec.guide} tier {t}",
                get_weight_format({v: k for k, v in spec.weight_aliases.items()}.get(t, t)).id
                if _known(spec, t)
                else t,
                None,
                False,
                "",
                f"{spec.guide} (published tier)",
            )
            for t in spec.tiers
            if _known(spec, t)
        )
    rows = tuple(c for c in _rows() if c.model == spec.id and c.engine == eng)
    if rows:
        return rows
    if eng == "llama.cpp":
        return tuple(
            Checkpoint(
                spec.id,
                eng,
                f,
                f"GGUF {f.upper()} (convert with llama.cpp)",
                f,
                None,
                False,
                "",
                "derived: llama.cpp convert_hf_to_gguf.py + llama-quantize",
            )
            for f in CONVERTIBLE_GGUF
        )
    return (
        Checkpoint(
            spec.id,
            eng,
            "native",
            f"{spec.name} checkpoint as published",
            "native",
            None,
            False,
            "",
            "the model's own config.json (quantization_config)",
        ),
    )


def _known(spec: PublishedProfile, tier: str) -> bool:
    try:
        get_weight_format({v: k for k, v in spec.weight_aliases.items()}.get(tier, tier))
        return True
    except K3InputError:
        return False


def resolve_weights(model: str | ModelSpec, weights: str) -> tuple[WeightFormat, int | None, Checkpoint | None]:
    """(format for the per-layer proportions, exact bytes or None, the checkpoint or None)
    for a ``weights`` argument that is a weight-format id (``native``, ``q4``…) or a
    published checkpoint id of this model (``UD-Q4_K_XL``, ``fp8-block``…)."""
    spec = get_model(model)
    key = normalise_name(weights)
    if not isinstance(spec, PublishedProfile):
        for c in _rows():
            if c.model == spec.id and normalise_name(c.id) == key and c.id != "native":
                return get_weight_format(c.weight_format), c.file_bytes, c
    return get_weight_format(weights), None, None
