"""A model by name or by path: the one loader the notebooks' model box calls.

A name is one of the public Hugging Face configs shipped in ``data/configs`` (the file's name
without its provenance suffix: ``gemma-3-27b-it.maxtext-transcription.json`` →
``gemma-3-27b-it``); anything else is a path to a ``config.json`` (or its folder), a ``.gguf``
file or a safetensors checkpoint, read by :func:`k3lib.loaders.load_path`. Nothing is
downloaded. (Moved unchanged from ``k3lib.views.any_model``, whose views import it from here.)

>>> load_model("llama-3.1-70b").require_architecture().num_layers
80
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from k3lib.core.architecture import Architecture
from k3lib.core.data import DATA_DIR
from k3lib.core.errors import K3InputError
from k3lib.loaders._common import LoadedModel
from k3lib.loaders.config import load_config

#: public configs shipped with the package data (Hugging Face config.json files; see data/configs/README.md)
FIXTURE_CONFIGS_DIR = DATA_DIR / "configs"
_FIXTURE_SUFFIX = re.compile(r"\.(abridged|[a-z]+-transcription)$")


def fixture_configs() -> dict[str, Path]:
    """{name: path} of the public configs in ``data/configs``; the name drops the
    file's provenance suffix (``gemma-3-27b-it.maxtext-transcription.json`` → ``gemma-3-27b-it``).

    >>> fixture_configs()["llama-3.1-70b"].name
    'llama-3.1-70b.json'
    """
    return {_FIXTURE_SUFFIX.sub("", p.stem): p for p in sorted(FIXTURE_CONFIGS_DIR.glob("*.json"))}


@lru_cache(maxsize=64)
def _load_fixture(name: str) -> LoadedModel:
    return load_config(fixture_configs()[name], id=name)


def load_model(config: str | os.PathLike[str] | LoadedModel) -> LoadedModel:
    """A fixture config by name, or a path to a config.json (or its folder), a ``.gguf`` file
    or a safetensors checkpoint. Nothing is downloaded. A loaded model is returned as is."""
    from k3lib.loaders import load_path  # the package's dispatcher over the three file kinds

    if isinstance(config, LoadedModel):
        return config
    text = str(config).strip()
    if text in fixture_configs():
        return _load_fixture(text)
    p = Path(text).expanduser()
    if not p.exists():
        raise K3InputError(
            "config",
            f"{text!r} is neither a fixture config nor an existing path",
            "a path, or one of " + ", ".join(fixture_configs()),
        )
    return load_path(p)


def load_architecture(model: str | os.PathLike[str] | LoadedModel) -> tuple[Architecture, LoadedModel]:
    """``(architecture, loaded model)`` of :func:`load_model`'s model; a file without shapes (a bare
    GGUF tensor table) raises :class:`~k3lib.core.errors.K3InputError`."""
    loaded = load_model(model)
    return loaded.require_architecture(), loaded
