"""Load a model from local files — nothing is downloaded.

* :func:`load_config` — a Hugging Face ``config.json`` (file or folder) → architecture.
* :func:`load_gguf` — a GGUF file's header and tensor table → architecture from the
  metadata, and the exact bytes of every tensor.
* :func:`load_safetensors` — the JSON headers of safetensors shards (and the index)
  → exact bytes per tensor and dtype; the folder's config.json → architecture.
* :func:`load_path` — any of the three, by what the path is.
* :func:`load_hub` — a Hugging Face repository id (``org/name``, or ``org/name/FILE.gguf``) from
  the local hub cache, else (unless ``HF_HUB_OFFLINE``) config.json and the weight files' headers
  over the network (:mod:`k3lib.loaders.hub`).

Each returns a frozen :class:`LoadedModel`; :func:`plan_for_loaded` makes a
:class:`~k3lib.core.plan.Plan` whose weights are the file's exact bytes.

>>> from k3lib.loaders import tensor_group
>>> tensor_group("blk.7.ffn_down_exps.weight")
'routed_experts'
"""

from __future__ import annotations

import os
from pathlib import Path

from k3lib.core.errors import K3InputError
from k3lib.loaders._common import (
    TENSOR_GROUPS,
    LoadedModel,
    TensorInfo,
    is_expert_tensor,
    plan_for_loaded,
    tensor_group,
)
from k3lib.loaders.config import load_config, read_config_json
from k3lib.loaders.gguf_file import architecture_from_gguf, load_gguf, scan_gguf_header
from k3lib.loaders.hub import is_repo_spec, load_hub
from k3lib.loaders.safetensors_file import DTYPE_BITS, load_safetensors, read_safetensors_header


def load_path(path: str | os.PathLike[str]) -> LoadedModel:
    """Load whatever ``path`` is: a ``.gguf`` file, a ``.safetensors`` file or a folder
    of shards, or a ``config.json`` (or a folder holding only that)."""
    p = Path(path)
    if p.is_file():
        if p.suffix == ".gguf":
            return load_gguf(p)
        if p.suffix == ".safetensors":
            return load_safetensors(p)
        return load_config(p)
    if p.is_dir():
        if (p / "model.safetensors.index.json").is_file() or any(p.glob("*.safetensors")):
            return load_safetensors(p)
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return load_gguf(ggufs[0])
        return load_config(p)
    raise K3InputError("path", f"{p}: no such file or folder")


#: the model options every command takes, and the loader each one names
MODEL_SOURCES = {"config": load_config, "gguf": load_gguf, "safetensors": load_safetensors}


def load_source(*, config: object = None, gguf: object = None, safetensors: object = None) -> LoadedModel | None:
    """The model a ``--config``/``--gguf``/``--safetensors`` option names (at most one given), or None
    when none is: the file the user names is the model planned, or one K3InputError naming the
    option (an empty path included)."""
    given = {k: v for k, v in (("config", config), ("gguf", gguf), ("safetensors", safetensors)) if v is not None}
    if len(given) > 1:
        raise K3InputError(next(iter(given)), "give one model source", "--config, --gguf or --safetensors")
    for name, value in given.items():
        if not str(value).strip():
            raise K3InputError(name, "is empty", "a path to a local file or folder")
        return MODEL_SOURCES[name](str(value).strip())
    return None


__all__ = [
    "LoadedModel",
    "load_source",
    "MODEL_SOURCES",
    "TensorInfo",
    "TENSOR_GROUPS",
    "DTYPE_BITS",
    "load_config",
    "load_gguf",
    "load_safetensors",
    "load_path",
    "load_hub",
    "is_repo_spec",
    "plan_for_loaded",
    "tensor_group",
    "is_expert_tensor",
    "read_config_json",
    "read_safetensors_header",
    "scan_gguf_header",
    "architecture_from_gguf",
]
