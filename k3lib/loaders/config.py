"""A Hugging Face ``config.json`` (the file, or the folder that holds it) →
:class:`~k3lib.loaders.LoadedModel`.

Malformed JSON and missing fields raise :class:`~k3lib.core.errors.K3InputError`
naming the field (``config.hidden_size``) and the file; an unknown
``model_type`` with the standard fields loads with an
:class:`~k3lib.loaders.hf_config.AssumedFieldWarning` listing what was assumed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.loaders._common import LoadedModel, parse_json_bounded
from k3lib.loaders.hf_config import (
    architecture_from_hf_config,
    checkpoint_dtype_bytes,
    config_notes,
    rope_caches,
    vision_tower_params,
)

#: refuse config files larger than this (a config is a few KiB; a tokenizer.json passed by mistake is MBs)
MAX_CONFIG_BYTES = 16 * 2**20


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    if not p.is_file():
        raise K3InputError("config", f"{p}: no such file", "a config.json file or the folder that holds it")
    return p


def read_config_json(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Path]:
    """Parse a config.json (file or folder) into a dict; errors name the file and the line."""
    p = _resolve(path)
    size = p.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise K3InputError(
            "config", f"{p}: {size:,} bytes is too large for a config.json", f"at most {MAX_CONFIG_BYTES:,} bytes"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise K3InputError("config", f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    cfg = parse_json_bounded(text, "config", p, max_bytes=MAX_CONFIG_BYTES)
    if not isinstance(cfg, dict):
        raise K3InputError("config", f"{p}: the top level must be a JSON object, not {type(cfg).__name__}")
    return cfg, p


def _model_id(cfg: Mapping[str, Any], p: Path) -> str:
    name = cfg.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        return name.strip().rstrip("/").split("/")[-1]
    if p.name == "config.json":
        return p.parent.resolve().name or "config"
    return p.stem


def load_config(path: str | os.PathLike[str], *, id: str | None = None, name: str | None = None) -> LoadedModel:
    """Load ``config.json`` (or its folder) into a :class:`LoadedModel` without weights.

    The architecture gives parameters and KV bytes; the vision tower is estimated
    from ``vision_config``; rotary caches and the checkpoint dtype are kept for
    the engine profiles.
    """
    cfg, p = read_config_json(path)
    mid = id or _model_id(cfg, p)
    arch = architecture_from_hf_config(cfg, id=mid, name=name or mid, source=str(p))
    notes = config_notes(cfg, p)  # assumed fields and an unknown model_type, stated on screen
    vision = vision_tower_params(cfg)
    if vision:
        notes.append(f"vision tower ≈ {vision:,} parameters, estimated from vision_config")
    return LoadedModel(
        architecture=arch,
        source=str(p),
        file_format="config",
        rope_caches=rope_caches(cfg),
        vision_params=vision,
        dtype_bytes=checkpoint_dtype_bytes(cfg),
        metadata={"model_type": cfg.get("model_type"), "config": cfg},
        notes=tuple(notes),
    )
