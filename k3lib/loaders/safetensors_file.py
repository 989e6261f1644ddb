"""safetensors shards → :class:`~k3lib.loaders.LoadedModel` with exact bytes per
tensor, per dtype and per group (experts vs the rest).

Only the JSON header of each shard is read: 8 bytes (little-endian u64 = header
length N), then N bytes of JSON ``{name: {"dtype", "shape", "data_offsets": [begin, end]}}``.
A tensor's bytes are ``end − begin``, checked against ``prod(shape) × bits(dtype) / 8``.
A folder with ``model.safetensors.index.json`` reads the shards its ``weight_map``
names (and checks every tensor is where the index says); otherwise every
``*.safetensors`` file in the folder. The folder's ``config.json``, when present,
gives the architecture.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.loaders._common import (
    LoadedModel,
    TensorInfo,
    layer_index,
    parse_json_bounded,
    summarise_tensors,
    tensor_group,
    zero_sized_tensors_note,
)
from k3lib.loaders.hf_config import (
    architecture_from_hf_config,
    checkpoint_dtype_bytes,
    config_notes,
    rope_caches,
    vision_tower_params,
)

#: bits per element of each safetensors dtype
DTYPE_BITS = {
    "F64": 64,
    "I64": 64,
    "U64": 64,
    "F32": 32,
    "I32": 32,
    "U32": 32,
    "F16": 16,
    "BF16": 16,
    "I16": 16,
    "U16": 16,
    "I8": 8,
    "U8": 8,
    "BOOL": 8,
    "F8_E4M3": 8,
    "F8_E5M2": 8,
    "F8_E8M0": 8,
    "E8M0": 8,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "F4": 4,
    "C64": 64,
}
#: the format's own limit on the header (safetensors refuses larger ones)
MAX_HEADER_BYTES = 100_000_000
#: an index maps every tensor name to a shard: ~100 bytes × ~100k tensors for the largest checkpoints
MAX_INDEX_BYTES = 64 * 2**20


def _err(path: Path, message: str) -> K3InputError:
    return K3InputError("safetensors", f"{path}: {message}")


def read_safetensors_header(path: str | os.PathLike[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(tensors, __metadata__) of one shard, every field validated against the file size."""
    p = Path(path)
    if not p.is_file():
        raise K3InputError("safetensors", f"{p}: no such file", "a .safetensors file or a folder of shards")
    size = p.stat().st_size
    with open(p, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise _err(p, f"truncated: {size} bytes, shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER_BYTES:
            raise _err(p, f"header length {n:,} exceeds the format's limit of {MAX_HEADER_BYTES:,} bytes")
        if 8 + n > size:
            raise _err(p, f"truncated: the header says {n:,} bytes, the file has {size - 8:,} after the length")
        raw = fh.read(n)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _err(p, f"header is not valid JSON: {exc}") from None
    doc = parse_json_bounded(text, "safetensors", f"{p}: header", max_bytes=MAX_HEADER_BYTES)
    if not isinstance(doc, dict):
        raise _err(p, "header is not a JSON object")
    meta = doc.pop("__metadata__", None) or {}
    data_bytes = size - 8 - n
    out: dict[str, dict[str, Any]] = {}
    for name, info in doc.items():
        if not isinstance(info, dict):
            raise _err(p, f"tensor {name!r}: entry is not an object")
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BITS:
            raise _err(p, f"tensor {name!r}: unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in shape
        ):
            raise _err(p, f"tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
        if (
            not isinstance(offs, list)
            or len(offs) != 2
            or not all(isinstance(x, int) for x in offs)
            or not 0 <= offs[0] <= offs[1]
        ):
            raise _err(p, f"tensor {name!r}: data_offsets {offs!r} is not [begin, end]")
        if offs[1] > data_bytes:
            raise _err(p, f"truncated: tensor {name!r} ends at byte {offs[1]:,} of the data, which has {data_bytes:,}")
        n_el = 1
        for x in shape:
            n_el *= x
        expected = -(-n_el * DTYPE_BITS[dtype] // 8)
        if offs[1] - offs[0] != expected:
            raise _err(
                p, f"tensor {name!r}: {offs[1] - offs[0]:,} bytes stored, {expected:,} expected for {dtype} {shape}"
            )
        out[name] = {"dtype": dtype, "shape": tuple(shape), "n_bytes": offs[1] - offs[0]}
    return out, {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {}


def _shards(p: Path) -> tuple[list[Path], dict[str, str] | None, dict[str, Any]]:
    if p.is_file():
        return [p], None, {}
    if not p.is_dir():
        raise K3InputError("safetensors", f"{p}: no such file or folder", "a .safetensors file or a folder of shards")
    index = p / "model.safetensors.index.json"
    if index.is_file():
        if index.stat().st_size > MAX_INDEX_BYTES:
            raise K3InputError(
                "safetensors",
                f"{index}: {index.stat().st_size:,} bytes is too large for an index",
                f"at most {MAX_INDEX_BYTES:,} bytes",
            )
        doc = parse_json_bounded(index.read_bytes(), "safetensors", index, max_bytes=MAX_INDEX_BYTES)
        wm = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(wm, dict) or not wm:
            raise K3InputError("safetensors.weight_map", f"{index}: missing or empty weight_map")
        files = sorted({str(v) for v in wm.values()})
        for f in files:
            if "/" in f or "\\" in f or f.startswith("."):
                raise K3InputError("safetensors.weight_map", f"{index}: shard name {f!r} is not a file in the folder")
        missing = [f for f in files if not (p / f).is_file()]
        if missing:
            raise K3InputError(
                "safetensors", f"{p}: {len(missing)} shard(s) named in the index are missing: " + ", ".join(missing[:5])
            )
        return [p / f for f in files], {str(k): str(v) for k, v in wm.items()}, doc.get("metadata") or {}
    shard_files = sorted(p.glob("*.safetensors"))
    if not shard_files:
        raise K3InputError("safetensors", f"{p}: no *.safetensors files and no model.safetensors.index.json")
    return shard_files, None, {}


def load_safetensors(
    path: str | os.PathLike[str], *, config: str | os.PathLike[str] | None = None, id: str | None = None
) -> LoadedModel:
    """Read the headers of a safetensors checkpoint (a file or a folder of shards).

    ``config`` names a config.json; by default the folder's own is used, if any.
    """
    from k3lib.loaders.config import read_config_json

    p = Path(path)
    shards, weight_map, index_meta = _shards(p)
    tensors: list[TensorInfo] = []
    seen: dict[str, str] = {}
    cfg: dict[str, Any] | None = None
    cfg_path = Path(config) if config else (p / "config.json" if p.is_dir() else p.parent / "config.json")
    if config or cfg_path.is_file():
        cfg, cfg_path = read_config_json(cfg_path)
    n_layers = None
    if cfg is not None:
        text_config = cfg.get("text_config")
        tc: dict[str, Any] = text_config if isinstance(text_config, dict) else cfg
        n_layers = tc.get("num_hidden_layers") if isinstance(tc.get("num_hidden_layers"), int) else None
    for shard in shards:
        header, _meta = read_safetensors_header(shard)
        for name, info in header.items():
            if name in seen:
                raise _err(shard, f"tensor {name!r} is also in {seen[name]}")
            seen[name] = shard.name
            if weight_map is not None and weight_map.get(name, shard.name) != shard.name:
                raise _err(shard, f"tensor {name!r}: the index puts it in {weight_map[name]}")
            group = tensor_group(name, num_layers=n_layers)
            tensors.append(
                TensorInfo(
                    name=name,
                    dtype=info["dtype"],
                    shape=info["shape"],
                    n_bytes=info["n_bytes"],
                    group=group,
                    layer=layer_index(name),
                    is_expert=group == "routed_experts",
                    file=shard.name,
                )
            )
    notes = []
    if weight_map is not None:
        absent = [n for n in weight_map if n not in seen]
        if absent:
            raise K3InputError(
                "safetensors.weight_map",
                f"{p}: {len(absent)} tensor(s) in the index are in no shard, e.g. {absent[0]!r}",
            )
        total = index_meta.get("total_size") if isinstance(index_meta, dict) else None
        stored = sum(t.n_bytes for t in tensors)
        if isinstance(total, int) and total != stored:
            notes.append(f"index metadata.total_size = {total:,} bytes; the headers sum to {stored:,}")
    by_group, by_dtype, by_layer = summarise_tensors(tensors)
    arch = None
    extra: dict[str, Any] = {}
    if cfg is not None:
        mid = id or (p.name if p.is_dir() else p.stem)
        arch = architecture_from_hf_config(cfg, id=mid, name=mid, source=str(cfg_path))
        extra = dict(
            rope_caches=rope_caches(cfg),
            vision_params=vision_tower_params(cfg),
            dtype_bytes=checkpoint_dtype_bytes(cfg),
        )
        notes.extend(config_notes(cfg, cfg_path))
    else:
        notes.append("no config.json: tensor bytes only, no architecture for the KV cache")
    zero = zero_sized_tensors_note(tensors)
    if zero:
        notes.append(zero)
    notes.insert(0, f"safetensors: {len(shards)} shard(s), {len(tensors):,} tensors, {sum(by_dtype.values()):,} bytes")
    return LoadedModel(
        architecture=arch,
        source=str(p),
        file_format="safetensors",
        weights_bytes_by_group=by_group,
        bytes_by_dtype=by_dtype,
        bytes_by_layer=by_layer,
        tensors=tuple(tensors),
        notes=tuple(notes),
        metadata={"config": cfg} if cfg is not None else {},
        **extra,
    )
