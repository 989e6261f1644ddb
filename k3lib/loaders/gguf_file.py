"""A GGUF file → :class:`~k3lib.loaders.LoadedModel` whose weights are the file's
exact tensor bytes.

Only the header and tensor table are read, by k3lib's own bounds-checked scan
(not ``gguf.GGUFReader``, which builds every field, the tokenizer's 152k strings
included); tensor data stays on disk. Long arrays and strings stand as their
length. The scan rejects what would loop or allocate without end: a wrong magic, an
unknown version, a tensor or key count the file cannot hold (2^40 tensors in a
1 KiB file), a string or array longer than the bytes left, more than 4
dimensions, an unknown quantization type, or tensor data past the end of the
file (a truncated download).

Bytes per tensor = elements ÷ block size × bytes per block (``gguf.GGML_QUANT_SIZES``):
a Q8_0 tensor of 4096×32 elements is 4096 blocks of 34 bytes = 139,264 bytes.

The architecture comes from the metadata (``{arch}.block_count``,
``embedding_length``, ``attention.head_count(_kv)``, ``attention.key_length``,
``context_length``, expert counts, MLA ``attention.kv_lora_rank``,
``attention.sliding_window`` …; sliding layers take ``attention.key_length_swa`` /
``value_length_swa`` when given, as llama.cpp does), with tensor shapes filling gaps (the vocabulary
from ``token_embd``, the expert width from ``ffn_up_exps``). A missing
``context_length`` is read as 4,096 tokens with a warning and a note; a 0 is an error
naming the key. An architecture outside :data:`KNOWN_GGUF_ARCHITECTURES` warns, naming
what was assumed, as a config.json of an unknown ``model_type`` does; tensors with a 0 in
their shape are noted.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from k3lib.core.architecture import Architecture, AttentionGroup, MLPSpec
from k3lib.core.errors import K3InputError
from k3lib.loaders._common import (
    ASSUMED_CONTEXT_TOKENS,
    LoadedModel,
    TensorInfo,
    assumed_context_note,
    layer_index,
    summarise_tensors,
    tensor_group,
    zero_sized_tensors_note,
)

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
MAX_DIMS = 4
# GGUFValueType → fixed byte size (strings = 8, arrays = 9 are walked)
_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
_SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_MAX_ARRAY_DEPTH = 4
#: arrays longer than this (the tokenizer's scores and types) are kept as their length only
_MAX_ARRAY_VALUES = 4096
#: string values longer than this (chat templates can be tens of KB) are kept as their length only
_MAX_STRING_VALUE = 1 << 16
#: the architecture numbers :func:`architecture_from_gguf` reads (after ``{arch}.``): each must be a
#: whole number from 0 to 2^31 (or a per-layer list of them)
_ARCH_INT_KEYS = frozenset(
    (
        "attention.head_count",
        "attention.head_count_kv",
        "attention.key_length",
        "attention.key_length_mla",
        "attention.kv_lora_rank",
        "attention.q_lora_rank",
        "attention.sliding_window",
        "attention.sliding_window_pattern",
        "attention.value_length",
        "attention.value_length_mla",
        "block_count",
        "context_length",
        "embedding_length",
        "expert_count",
        "expert_feed_forward_length",
        "expert_shared_count",
        "expert_shared_feed_forward_length",
        "expert_used_count",
        "feed_forward_length",
        "kda.head_dim",
        "kda_head_dim",
        "nextn_predict_layers",
        "rope.dimension_count",
        "ssm.conv_kernel",
        "ssm.group_count",
        "ssm.inner_size",
        "ssm.state_size",
        "ssm.time_step_rank",
        "vocab_size",
        "leading_dense_block_count",
        "attention.recurrent_layers",
        "full_attention_interval",
        "attention.shared_kv_layers",
        "attention.key_length_swa",
        "attention.value_length_swa",
        "wkv.head_size",
        "shortconv.l_cache",
    )
)
#: llama.cpp architectures (``general.architecture``) whose metadata and tensor names this reader
#: has rules or tests for; any other is read from the standard ``{arch}.*`` keys with an
#: :class:`~k3lib.loaders.hf_config.AssumedFieldWarning`, as a config.json of an unknown model_type is
KNOWN_GGUF_ARCHITECTURES = (
    "llama",
    "llama4",
    "qwen2",
    "qwen2moe",
    "qwen3",
    "qwen3moe",
    "qwen3next",
    "qwen35",
    "qwen35moe",
    "deepseek2",
    "gpt-oss",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3n",
    "gemma4",
    "phi3",
    "minimax-m2",
    "glm4moe",
    "kimi-linear",
    "kimi-k3",
    "cohere2",
    "exaone4",
    "mamba",
    "mamba2",
    "falcon-h1",
    "granitehybrid",
    "rwkv6",
    "rwkv6qwen2",
    "rwkv7",
    "arwkv7",
    "lfm2",
    "lfm2moe",
)
#: architectures whose recurrent layers are Mamba(-2) mixers ({arch}.ssm.* keys; llama.cpp's
#: n_embd_r/n_embd_s, src/llama-hparams.cpp): every layer for mamba/mamba2, the layers with no KV
#: heads for the hybrids, and every layer beside its attention for falcon-h1
MAMBA_GGUF_ARCHITECTURES = ("mamba", "mamba2", "jamba", "falcon-h1", "granitehybrid", "plamo2")
#: Falcon-H1: attention and a Mamba-2 mixer in parallel in every layer (src/models/falcon-h1.cpp)
PARALLEL_SSM_GGUF_ARCHITECTURES = ("falcon-h1",)
#: RWKV time-mix layers ({arch}.wkv.head_size): every layer is recurrent
RWKV_GGUF_ARCHITECTURES = ("rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7")
#: LFM2's gated short-convolution layers ({arch}.shortconv.l_cache; the layers with no KV heads)
SHORTCONV_GGUF_ARCHITECTURES = ("lfm2", "lfm2moe")
#: the one EXAONE-4 depth at which llama.cpp applies its sliding window (:func:`_swa_layers`)
EXAONE4_SWA_LAYERS = 64
#: no model has more layers than this (the deepest published LLMs have ~130); more is corrupt
MAX_LAYERS = 10_000


def _err(path: Path, message: str) -> K3InputError:
    return K3InputError("gguf", f"{path}: {message}")


@dataclass(frozen=True)
class _RawTensor:
    name: str
    dims: tuple[int, ...]
    type_id: int
    offset: int


def scan_gguf_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Validate a GGUF header and tensor table with every length checked against
    the file size; returns version, counts, alignment and the data offset.

    Raises :class:`K3InputError` (field ``gguf``) at the first inconsistency, in
    time proportional to the header, never to a count written in it.
    """
    import gguf

    p = Path(path)
    if not p.is_file():
        raise K3InputError("gguf", f"{p}: no such file", "a .gguf file")
    size = p.stat().st_size
    if size < 24:
        raise _err(p, f"truncated: {size} bytes, shorter than a GGUF header (24 bytes)")
    quant_sizes = {int(k): v for k, v in gguf.GGML_QUANT_SIZES.items()}
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        if mm[:4] != GGUF_MAGIC:
            raise _err(p, f"not a GGUF file (magic {bytes(mm[:4])!r}, expected b'GGUF')")
        version = struct.unpack_from("<I", mm, 4)[0]
        if version not in SUPPORTED_VERSIONS:
            raise _err(p, f"GGUF version {version} is not supported (k3lib reads versions 2 and 3)")
        n_tensors, n_kv = struct.unpack_from("<QQ", mm, 8)
        # the smallest key/value is 8 (key length) + 1 (key) + 4 (type) + 1 (uint8) = 14 bytes;
        # the smallest tensor entry is 8 + 1 + 4 (n_dims) + 8 (one dim) + 4 (type) + 8 (offset) = 33 bytes
        if n_kv > (size - 24) // 14:
            raise _err(p, f"metadata count {n_kv:,} cannot fit in a {size:,}-byte file (corrupt header)")
        if n_tensors > (size - 24) // 33:
            raise _err(p, f"tensor count {n_tensors:,} cannot fit in a {size:,}-byte file (corrupt header)")
        pos = 24

        def need(n: int, what: str) -> None:
            if n < 0 or pos + n > size:
                raise _err(p, f"truncated: {what} needs {n:,} bytes at offset {pos:,}, the file has {size:,}")

        def read_str(what: str) -> str:
            nonlocal pos
            need(8, what)
            (length,) = struct.unpack_from("<Q", mm, pos)
            pos += 8
            need(length, what)
            s = bytes(mm[pos : pos + length])
            pos += length
            try:
                return s.decode("utf-8")
            except UnicodeDecodeError:
                raise _err(p, f"{what} is not UTF-8 at offset {pos - length:,}") from None

        def read_value(vtype: int, what: str, depth: int = 0) -> Any:
            """The value at ``pos`` (scalars, strings, short scalar arrays); long or string
            arrays (the tokenizer) are skipped and stand as their length, never materialised."""
            nonlocal pos
            if vtype in _SCALAR_SIZES:
                need(_SCALAR_SIZES[vtype], what)
                (v,) = struct.unpack_from("<" + _SCALAR_FORMATS[vtype], mm, pos)
                pos += _SCALAR_SIZES[vtype]
                return v
            if vtype == _STRING:
                need(8, what)
                (length,) = struct.unpack_from("<Q", mm, pos)
                pos += 8
                need(length, what)
                if length > _MAX_STRING_VALUE:  # a chat template is kilobytes; keep its length only
                    pos += length
                    return _Length(length)
                text = bytes(mm[pos : pos + length]).decode("utf-8", "replace")
                pos += length
                return text
            if vtype == _ARRAY:
                if depth >= _MAX_ARRAY_DEPTH:
                    raise _err(p, f"{what}: arrays nested deeper than {_MAX_ARRAY_DEPTH}")
                need(12, what)
                itype, count = struct.unpack_from("<IQ", mm, pos)
                pos += 12
                if itype in _SCALAR_SIZES:
                    width = _SCALAR_SIZES[itype]
                    need(count * width, f"{what} ({count:,} elements)")
                    if count <= _MAX_ARRAY_VALUES:
                        values = list(struct.unpack_from(f"<{count}{_SCALAR_FORMATS[itype]}", mm, pos))
                        pos += count * width
                        return values
                    pos += count * width
                    return _Length(count)
                if itype == _STRING:
                    need(count * 8, f"{what} ({count:,} elements)")  # every element has at least a length
                    unpack, q = struct.unpack_from, pos
                    for _ in range(count):  # lengths only: 152k tokens in ~0.05 s
                        if q + 8 > size:
                            pos = q
                            need(8, what)
                        q += 8 + unpack("<Q", mm, q)[0]
                    pos = q
                    need(0, what)
                    return _Length(count)
                if itype != _ARRAY:
                    raise _err(p, f"{what}: unknown array element type {itype}")
                need(count * 12, f"{what} ({count:,} elements)")
                for _ in range(count):
                    read_value(itype, what, depth + 1)
                return _Length(count)
            raise _err(p, f"{what}: unknown metadata value type {vtype}")

        alignment = 32
        meta: dict[str, Any] = {}
        for i in range(n_kv):
            key = read_str(f"metadata key #{i}")
            need(4, key)
            (vtype,) = struct.unpack_from("<I", mm, pos)
            pos += 4
            if key == "general.alignment":
                if vtype != 4:
                    raise _err(p, "general.alignment must be a uint32")
                need(4, key)
                alignment = struct.unpack_from("<I", mm, pos)[0]
                if alignment == 0 or alignment & (alignment - 1):
                    raise _err(p, f"general.alignment {alignment} is not a power of two")
                pos += 4
                meta[key] = alignment
            else:
                meta[key] = read_value(vtype, key)
        raw: list[_RawTensor] = []
        for i in range(n_tensors):
            name = read_str(f"tensor #{i} name")
            need(4, name)
            (n_dims,) = struct.unpack_from("<I", mm, pos)
            pos += 4
            if not 1 <= n_dims <= MAX_DIMS:
                raise _err(p, f"tensor {name!r}: {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
            need(8 * n_dims + 12, name)
            dims = struct.unpack_from(f"<{n_dims}Q", mm, pos)
            pos += 8 * n_dims
            type_id, offset = struct.unpack_from("<IQ", mm, pos)
            pos += 12
            if type_id not in quant_sizes:
                raise _err(p, f"tensor {name!r}: unknown GGML type {type_id}")
            raw.append(_RawTensor(name, tuple(int(d) for d in dims), type_id, int(offset)))
        data_start = -(-pos // alignment) * alignment
        tensor_bytes: list[int] = []
        for t in raw:
            block, type_size = quant_sizes[t.type_id]
            n = 1
            for d in t.dims:
                n *= d
            if t.dims[0] % block:
                raise _err(
                    p,
                    f"tensor {t.name!r}: first dimension {t.dims[0]} is not a multiple of the "
                    f"{gguf.GGMLQuantizationType(t.type_id).name} block size {block}",
                )
            nbytes = n // block * type_size
            end = data_start + t.offset + nbytes
            if end > size:
                raise _err(
                    p,
                    f"truncated: tensor {t.name!r} ends at byte {end:,}, the file has {size:,} "
                    "(an incomplete download?)",
                )
            tensor_bytes.append(nbytes)
    return {
        "version": version,
        "tensor_count": n_tensors,
        "kv_count": n_kv,
        "alignment": alignment,
        "data_offset": data_start,
        "file_bytes": size,
        "tensors": raw,
        "tensor_bytes": tensor_bytes,
        "metadata": meta,
    }


# ---------------------------------------------------------------------------
# metadata → Architecture
# ---------------------------------------------------------------------------


class _Length(int):
    """The length of a long array (the tokenizer's token list) instead of its values."""


def _scalar(meta: dict[str, Any], key: str, default: Any = None) -> Any:
    v = meta.get(key, default)
    if isinstance(v, list):
        nz = [x for x in v if x]
        return max(nz) if nz else (v[0] if v else default)
    return v


def _per_layer(meta: dict[str, Any], key: str, n_layers: int, default: int | None) -> list[int | None]:
    v = meta.get(key)
    if isinstance(v, list):
        if len(v) != n_layers:
            raise K3InputError(f"gguf.{key}", f"has {len(v)} entries for {n_layers} layers")
        return [int(x) for x in v]
    return [int(v) if v is not None else default] * n_layers


def _swa_layers(arch: str, meta: dict[str, Any], n_layers: int) -> tuple[int, list[bool]]:
    """(window, which layers slide) from metadata and llama.cpp's per-family rules."""
    window = _scalar(meta, f"{arch}.attention.sliding_window", 0) or 0
    if arch == "llama4":
        window = window or 8192  # chunked attention, 3 chunked : 1 full
        pattern: Any = 4
    elif arch == "exaone4":
        # llama.cpp slides EXAONE-4's layers only when it has 64 layers (the 32B): swa_type STANDARD,
        # n_swa 4096 unless attention.sliding_window says otherwise, set_swa_pattern(4); at any other
        # depth no layer slides, whatever sliding_window / sliding_window_pattern the converter wrote
        # (src/llama-model.cpp, load_hparams, case LLM_ARCH_EXAONE4; ggml-org/llama.cpp@0c1e57098)
        if n_layers != EXAONE4_SWA_LAYERS:
            return 0, [False] * n_layers
        window = window or 4096
        pattern = 4
    else:
        pattern = meta.get(f"{arch}.attention.sliding_window_pattern")
        if pattern is None:
            pattern = {"gemma2": 2, "gemma3": 6, "gpt-oss": 2, "cohere2": 4, "gemma3n": 5}.get(arch)
    if not window or pattern is None:
        return 0, [False] * n_layers
    if isinstance(pattern, list):
        if len(pattern) != n_layers:
            raise K3InputError(
                f"gguf.{arch}.attention.sliding_window_pattern", f"has {len(pattern)} entries for {n_layers} layers"
            )
        return int(window), [bool(x) for x in pattern]
    n = int(pattern)
    return int(window), [n == 0 or (i % n) < n - 1 for i in range(n_layers)]


def _context_tokens(meta: dict[str, Any], arch: str, source: str) -> tuple[int, str | None]:
    """``{arch}.context_length`` and the assumption made (None if none): absent → 4,096 with the
    assumption stated; present as 0 (or a per-layer list of zeros) → :class:`K3InputError` naming the key."""
    key = f"{arch}.context_length"
    if meta.get(key) is None:
        return ASSUMED_CONTEXT_TOKENS, assumed_context_note(f"gguf.{key}", source)
    ctx = _scalar(meta, key)
    if isinstance(ctx, bool) or not ctx:
        raise K3InputError(
            f"gguf.{key}",
            f"{ctx!r} in {source}: a model with no positions holds no context",
            f"a whole number of positions ≥ 1, or no key (then {ASSUMED_CONTEXT_TOKENS:,} is assumed and said)",
        )
    return int(ctx), None


def _mamba_fields(meta: dict[str, Any], arch: str, source: str) -> dict[str, int]:
    """A Mamba(-2) mixer's sizes from ``{arch}.ssm.*``: inner_size ($d_{inner}$), state_size
    ($d_{state}$), group_count ($n_g$; 0 for Mamba-1), time_step_rank (heads) and conv_kernel."""
    out = {}
    for field_, key in (
        ("ssm_inner", "inner_size"),
        ("ssm_state", "state_size"),
        ("ssm_heads", "time_step_rank"),
        ("conv_kernel", "conv_kernel"),
    ):
        v = _scalar(meta, f"{arch}.ssm.{key}")
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise K3InputError(
                f"gguf.{arch}.ssm.{key}",
                f"missing or not a positive integer in {source} (got {v!r})",
                "the Mamba layers' size",
            )
        out[field_] = v
    out["ssm_groups"] = int(_scalar(meta, f"{arch}.ssm.group_count", 0) or 0)
    return out


def _warn_assumed(arch: str, source: str, assumed: list[str]) -> None:
    """One :class:`~k3lib.loaders.hf_config.AssumedFieldWarning`, worded as a config.json's: an
    unknown architecture names what was assumed; a known one with a missing key names that."""
    from k3lib.loaders.hf_config import warn_assumed

    warn_assumed(
        f"general.architecture {arch!r}",
        source,
        assumed,
        unknown=arch not in KNOWN_GGUF_ARCHITECTURES,
        read_as=f"a transformer from the standard {arch}.* keys and tensor names",
    )


def architecture_from_gguf(meta: dict[str, Any], tensors: list[TensorInfo], *, id: str, source: str) -> Architecture:
    """Build an :class:`Architecture` from GGUF metadata and tensor shapes; warns
    (:class:`~k3lib.loaders.hf_config.AssumedFieldWarning`) for an architecture not in
    :data:`KNOWN_GGUF_ARCHITECTURES` and for a missing ``context_length``."""
    out, assumed = _architecture_and_assumptions(meta, tensors, id=id, source=source)
    _warn_assumed(str(meta.get("general.architecture")), source, assumed)
    return out


def _architecture_and_assumptions(
    meta: dict[str, Any], tensors: list[TensorInfo], *, id: str, source: str
) -> tuple[Architecture, list[str]]:
    """(the architecture, the keys assumed: every one for an unknown architecture, the
    context window for any)."""
    arch = meta.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise K3InputError("gguf.general.architecture", f"missing in {source}")
    unknown = arch not in KNOWN_GGUF_ARCHITECTURES
    assumed: list[str] = []

    def req(key: str) -> int:
        v = _scalar(meta, f"{arch}.{key}")
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise K3InputError(f"gguf.{arch}.{key}", f"missing or not a positive integer in {source} (got {v!r})")
        return v

    def ints(key: str, v: Any) -> None:
        """Every architecture number is an int in 0 … 2^31 (a string, float or 2^64 here is corruption)."""
        for x in v if isinstance(v, list) else [v]:
            if x is None or isinstance(x, bool):
                continue
            if not isinstance(x, int) or not 0 <= x < 2**31:
                raise K3InputError(
                    key,
                    f"{x!r} in {source} is not a whole number from 0 to 2^31",
                    "the unsigned integer llama.cpp's converter writes",
                )

    for key, v in meta.items():
        # only the numbers this reader uses: llama.cpp's own saver (llama_model_save_to_file) writes
        # every hyper-parameter, float arrays such as swiglu_clamp_exp included
        if not key.startswith(f"{arch}.") or key[len(arch) + 1 :] not in _ARCH_INT_KEYS:
            continue
        if isinstance(v, list) and key.endswith("sliding_window_pattern") and all(isinstance(x, bool) for x in v):
            continue  # a per-layer true/false pattern
        ints(f"gguf.{key}", v)
    tokens = meta.get("tokenizer.ggml.tokens")
    if tokens is not None and not isinstance(tokens, int):
        raise K3InputError(
            "gguf.tokenizer.ggml.tokens", f"{str(tokens)[:40]!r} in {source} is not a token list", "an array of strings"
        )

    shapes = {t.name: t.shape for t in tensors}
    d = req("embedding_length")
    n_layers = req("block_count")
    if n_layers > MAX_LAYERS:
        raise K3InputError(f"gguf.{arch}.block_count", f"{n_layers:,} layers in {source}", f"at most {MAX_LAYERS:,}")
    nextn = _scalar(meta, f"{arch}.nextn_predict_layers", 0) or 0
    if nextn >= n_layers:
        raise K3InputError(
            f"gguf.{arch}.nextn_predict_layers", f"{nextn} of {n_layers} layers in {source}", "fewer than block_count"
        )
    n_layers_main = n_layers - nextn
    pure_ssm = arch in MAMBA_GGUF_ARCHITECTURES + RWKV_GGUF_ARCHITECTURES and not _scalar(
        meta, f"{arch}.attention.head_count"
    )
    if pure_ssm and arch in RWKV_GGUF_ARCHITECTURES:
        heads = d // req("wkv.head_size")  # RWKV: n_embd ÷ head size wkv heads
    elif pure_ssm:
        heads = req("ssm.time_step_rank") if arch == "mamba2" else 1
    else:
        heads = req("attention.head_count")
    head_count = _per_layer(meta, f"{arch}.attention.head_count", n_layers, heads)[:n_layers_main]
    kv_given = _per_layer(meta, f"{arch}.attention.head_count_kv", n_layers, None)[:n_layers_main]
    if unknown and meta.get(f"{arch}.attention.head_count_kv") is None:
        assumed.append(f"attention.head_count_kv = attention.head_count = {heads} (multi-head attention)")
    kv_list: list[int] = [heads if k is None else k for k in kv_given]
    if pure_ssm:  # Mamba / RWKV: no attention layer at all
        kv_list = [0] * n_layers_main
    if not _scalar(meta, f"{arch}.attention.key_length") and d % heads:
        raise K3InputError(
            f"gguf.{arch}.attention.head_count",
            f"{heads} heads do not divide embedding_length {d} in {source}, and attention.key_length is not given",
            "a divisor of embedding_length",
        )
    key_len = _scalar(meta, f"{arch}.attention.key_length") or d // heads
    if unknown and not _scalar(meta, f"{arch}.attention.key_length"):
        assumed.append(f"attention.key_length = embedding_length / attention.head_count = {key_len}")
    val_len = _scalar(meta, f"{arch}.attention.value_length") or key_len
    if "token_embd.weight" in shapes:
        vocab = shapes["token_embd.weight"][1]
    else:
        vocab = int(meta.get("tokenizer.ggml.tokens") or _scalar(meta, f"{arch}.vocab_size") or 0)
    if vocab <= 0:
        raise K3InputError("gguf.tokenizer.ggml.tokens", f"no vocabulary size in {source} (nor token_embd.weight)")
    ctx, ctx_assumed = _context_tokens(meta, arch, source)
    if ctx_assumed:
        assumed.append(f"context_length = {ctx} (the file states no context window)")
    groups: list[AttentionGroup] = []
    kv_lora = _scalar(meta, f"{arch}.attention.kv_lora_rank")
    # recurrent layers: head_count_kv 0 (Kimi Linear/K3, Jamba…), an explicit attention.recurrent_layers
    # list, or Qwen3-Next/3.5's full_attention_interval (every n-th layer attends, default 4):
    # src/models/qwen3next.cpp, ggml-org/llama.cpp@0c1e57098
    marks = meta.get(f"{arch}.attention.recurrent_layers")
    interval = _scalar(meta, f"{arch}.full_attention_interval")
    if isinstance(marks, list) and len(marks) >= n_layers_main:
        recurrent = [i for i in range(n_layers_main) if marks[i]]
    elif arch in ("qwen3next", "qwen35", "qwen35moe"):
        step = int(interval or 4)
        recurrent = [i for i in range(n_layers_main) if (i + 1) % step]
    else:
        recurrent = [i for i in range(n_layers_main) if kv_list[i] == 0]
    parallel = arch in PARALLEL_SSM_GGUF_ARCHITECTURES
    recur = set(recurrent)
    attn_layers = n_layers_main - len(recurrent)
    if kv_lora:
        rope = _scalar(meta, f"{arch}.rope.dimension_count") or 64
        k_mla = _scalar(meta, f"{arch}.attention.key_length_mla")
        v_mla = _scalar(meta, f"{arch}.attention.value_length_mla")
        qk_head = k_mla or key_len
        v_head = v_mla or val_len
        mla_ids = [i for i in range(n_layers_main) if i not in recur]
        if attn_layers:
            groups.append(
                AttentionGroup(
                    kind="mla",
                    count=attn_layers,
                    num_heads=heads,
                    output_gate=any(f"blk.{i}.attn_gate.weight" in shapes for i in mla_ids),
                    q_lora_rank=_scalar(meta, f"{arch}.attention.q_lora_rank") or 0,
                    kv_lora_rank=int(kv_lora),
                    qk_nope_head_dim=qk_head - rope,
                    qk_rope_head_dim=rope,
                    v_head_dim=v_head,
                )
            )
    elif attn_layers:
        window, slides = _swa_layers(arch, meta, n_layers_main)
        kv_attn = max(kv_list)
        q_heads = max(h for h in head_count if h) if any(head_count) else heads
        first_attn = next((i for i in range(n_layers_main) if i not in recur), 0)
        q_shape = shapes.get(f"blk.{first_attn}.attn_q.weight") or (0, 0)
        gqa: dict[str, Any] = dict(
            num_heads=q_heads,
            kv_heads=kv_attn,
            head_dim=key_len,
            v_head_dim=val_len if val_len != key_len else 0,
            qk_norm=any(n.endswith(".attn_q_norm.weight") for n in shapes),
            qkv_bias=f"blk.{first_attn}.attn_q.bias" in shapes,
            o_bias=f"blk.{first_attn}.attn_output.bias" in shapes,
            sinks=f"blk.{first_attn}.attn_sinks.weight" in shapes,
            output_gate=len(q_shape) > 1 and q_shape[1] == 2 * q_heads * key_len,
        )  # q and its gate fused
        if parallel:  # Falcon-H1: every attention layer also runs a Mamba-2 mixer
            gqa.update(parallel_ssm=True, **_mamba_fields(meta, arch, source))
        # sliding layers' own head sizes (Gemma 4: 256 on sliding layers, 512 on full ones): llama.cpp reads
        # {arch}.attention.key_length_swa / value_length_swa for every architecture, each defaulting to the
        # full layers' size (n_embd_head_k_swa = n_embd_head_k_full, src/llama-model.cpp load_hparams), and
        # sizes a layer's K/V rows by is_swa(il) ? n_embd_head_k_swa : n_embd_head_k_full
        # (llama_hparams::n_embd_head_k, src/llama-hparams.cpp; ggml-org/llama.cpp@0c1e57098)
        key_swa = _scalar(meta, f"{arch}.attention.key_length_swa") or key_len
        val_swa = _scalar(meta, f"{arch}.attention.value_length_swa") or val_len
        swa_gqa = dict(gqa, head_dim=key_swa, v_head_dim=val_swa if val_swa != key_swa else 0)
        # KV-sharing layers: the last ones read an earlier layer's cache (llama.cpp's n_layer_kv_from_start:
        # Gemma-3n fixes it at 20 layers, src/models/gemma3n.cpp; Gemma 4 writes attention.shared_kv_layers)
        shared_n = int(_scalar(meta, f"{arch}.attention.shared_kv_layers", 0) or 0)
        if arch == "gemma3n" and n_layers_main > 20:
            shared_n = n_layers_main - 20
        if not 0 <= shared_n < n_layers_main:
            raise K3InputError(
                f"gguf.{arch}.attention.shared_kv_layers",
                f"{shared_n} of {n_layers_main} layers in {source}",
                "fewer than block_count",
            )
        attending = [i for i in range(n_layers_main) if i not in recur and kv_list[i]]
        for kv_shared in (False, True):
            layers = [i for i in attending if (i >= n_layers_main - shared_n) == kv_shared]
            n_slide = sum(1 for i in layers if slides[i])
            n_full = len(layers) - n_slide
            if n_slide:
                groups.append(
                    AttentionGroup(kind="sliding", count=n_slide, window_tokens=window, kv_shared=kv_shared, **swa_gqa)
                )
            if n_full:
                groups.append(AttentionGroup(kind="full", count=n_full, kv_shared=kv_shared, **gqa))
    if recurrent:
        conv = _scalar(meta, f"{arch}.ssm.conv_kernel") or 4
        state = _scalar(meta, f"{arch}.ssm.state_size")
        if arch in MAMBA_GGUF_ARCHITECTURES:
            m: dict[str, Any] = _mamba_fields(meta, arch, source)
            groups.append(AttentionGroup(kind="mamba", count=len(recurrent), num_heads=m["ssm_heads"], **m))
        elif arch in RWKV_GGUF_ARCHITECTURES:
            hs = req("wkv.head_size")
            groups.append(AttentionGroup(kind="rwkv", count=len(recurrent), num_heads=d // hs, head_dim=hs))
        elif arch in SHORTCONV_GGUF_ARCHITECTURES:
            # LFM2: conv channels = n_embd, history L_cache − 1 (n_embd_r(), src/llama-hparams.cpp)
            groups.append(
                AttentionGroup(
                    kind="shortconv",
                    count=len(recurrent),
                    num_heads=1,
                    ssm_inner=d,
                    conv_kernel=req("shortconv.l_cache"),
                )
            )
        elif arch.startswith("kimi"):
            kda_dim = _scalar(meta, f"{arch}.kda.head_dim") or _scalar(meta, f"{arch}.kda_head_dim") or state
            if not kda_dim:
                raise K3InputError(f"gguf.{arch}.ssm.state_size", f"missing in {source}: the KDA layers' head dim")
            g_shape = shapes.get(f"blk.{recurrent[0]}.ssm_g.weight")
            groups.append(
                AttentionGroup(
                    kind="kda",
                    count=len(recurrent),
                    num_heads=heads,
                    head_dim=int(kda_dim),
                    v_head_dim=int(kda_dim),
                    conv_kernel=int(conv),
                    full_rank_gate=g_shape == (d, heads * int(kda_dim)),
                )
            )
        else:
            nk = _scalar(meta, f"{arch}.ssm.group_count")
            nv = _scalar(meta, f"{arch}.ssm.time_step_rank")
            inner = _scalar(meta, f"{arch}.ssm.inner_size")
            for key, v in (
                ("ssm.group_count", nk),
                ("ssm.time_step_rank", nv),
                ("ssm.inner_size", inner),
                ("ssm.state_size", state),
            ):
                if not v:
                    raise K3InputError(
                        f"gguf.{arch}.{key}", f"missing in {source}: needed for the {len(recurrent)} recurrent layers"
                    )
            groups.append(
                AttentionGroup(
                    kind="gdn",
                    count=len(recurrent),
                    num_heads=int(nk),
                    linear_value_heads=int(nv),
                    head_dim=int(state),
                    v_head_dim=int(inner) // int(nv),
                    conv_kernel=int(conv),
                )
            )
    if not groups:
        raise K3InputError(f"gguf.{arch}.attention.head_count_kv", f"{source}: no attention layers found")
    # ---- MLP ----
    moe_layer_ids = sorted(
        {t.layer for t in tensors if t.group == "routed_experts" and t.layer is not None and t.layer < n_layers_main}
    )
    n_experts = _scalar(meta, f"{arch}.expert_count", 0) or 0
    ffn = _scalar(meta, f"{arch}.feed_forward_length", 0) or 0
    dense_widths = [shapes[n][1] for n in (f"blk.{i}.ffn_up.weight" for i in range(n_layers_main)) if n in shapes]
    if dense_widths:
        ffn = max(dense_widths)
    if n_experts and moe_layer_ids:
        used = _scalar(meta, f"{arch}.expert_used_count")
        if not used:
            raise K3InputError(f"gguf.{arch}.expert_used_count", f"missing in {source}")
        up = shapes.get(f"blk.{moe_layer_ids[0]}.ffn_up_exps.weight") or shapes.get(
            f"blk.{moe_layer_ids[0]}.ffn_gate_exps.weight"
        )
        moe_inter = (up[1] if up else None) or _scalar(meta, f"{arch}.expert_feed_forward_length") or ffn
        shared = _scalar(meta, f"{arch}.expert_shared_count", 0) or 0
        sh_up = shapes.get(f"blk.{moe_layer_ids[0]}.ffn_up_shexp.weight")
        shared_inter = (sh_up[1] if sh_up else 0) or _scalar(meta, f"{arch}.expert_shared_feed_forward_length", 0) or 0
        if sh_up and not shared:
            shared = 1
        if shared and shared_inter and sh_up and shared > 1 and sh_up[1] == shared * moe_inter:
            shared_inter = moe_inter  # DeepSeek stores n shared experts as one wide MLP
        first = moe_layer_ids[0]
        mlp = MLPSpec(
            dense_layers=n_layers_main - len(moe_layer_ids),
            dense_intermediate=ffn,
            moe_layers=len(moe_layer_ids),
            n_routed_experts=int(n_experts),
            experts_per_token=int(used),
            moe_intermediate=int(moe_inter),
            n_shared_experts=int(shared),
            shared_intermediate=int(shared_inter) if shared else 0,
            router_score_bias=f"blk.{first}.exp_probs_b.bias" in shapes,
            expert_bias=f"blk.{first}.ffn_up_exps.bias" in shapes,
            router_bias=f"blk.{first}.ffn_gate_inp.bias" in shapes,
            shared_expert_gate=f"blk.{first}.ffn_gate_inp_shexp.weight" in shapes,
        )
    else:
        no_ffn = pure_ssm and arch in MAMBA_GGUF_ARCHITECTURES and not any(".ffn_" in n for n in shapes)
        if not ffn and not no_ffn:
            raise K3InputError(f"gguf.{arch}.feed_forward_length", f"missing in {source} (nor ffn_up tensors)")
        mlp = MLPSpec(dense_layers=n_layers_main, dense_intermediate=int(ffn))
    tie = "output.weight" not in shapes
    if unknown and tie:
        assumed.append("no output.weight: the output head is the token embedding (tied)")
    # per-layer RMS norms of width D (Gemma's post-attention/post-FFN norms make 4): counted on layer 0
    # (Falcon-H1's pre-FFN norm is written without ".weight"; Cohere 2's parallel block has one norm)
    norms = sum(
        1
        for n in ("attn_norm", "ffn_norm", "post_attention_norm", "post_ffw_norm")
        if shapes.get(f"blk.0.{n}.weight", shapes.get(f"blk.0.{n}")) == (d,)
    )
    one_norm = norms == 1 and (pure_ssm or arch == "cohere2")
    name = meta.get("general.name") if isinstance(meta.get("general.name"), str) else id
    return Architecture(
        id=id,
        name=name or id,
        hidden_size=d,
        vocab_size=int(vocab),
        num_layers=n_layers_main,
        attention=tuple(groups),
        mlp=mlp,
        max_context_tokens=int(ctx),
        tie_word_embeddings=tie,
        native_formats={"*": "bf16"},
        source=source,
        family=f"gguf:{arch}",
        mtp_layers=int(nextn),
        norms_per_layer=norms if 2 < norms <= 8 or one_norm else 2,
    ), assumed


def load_gguf(path: str | os.PathLike[str], *, id: str | None = None) -> LoadedModel:
    """Read a GGUF file's header and tensor table into a :class:`LoadedModel`.

    ``weights_bytes_by_group`` holds the exact bytes of every tensor; the
    architecture comes from the metadata.
    """
    import gguf

    p = Path(path)
    scan = scan_gguf_header(p)
    meta: dict[str, Any] = dict(scan["metadata"])
    arch_name = meta.get("general.architecture") or ""
    n_layers = _scalar(meta, f"{arch_name}.block_count") if arch_name else None
    nextn = (_scalar(meta, f"{arch_name}.nextn_predict_layers", 0) or 0) if arch_name else 0
    main_layers = (n_layers - nextn) if isinstance(n_layers, int) and isinstance(nextn, int) else None
    tensors: list[TensorInfo] = []
    for t, nbytes in zip(scan["tensors"], scan["tensor_bytes"]):
        tensors.append(
            TensorInfo(
                name=t.name,
                dtype=gguf.GGMLQuantizationType(t.type_id).name,
                shape=t.dims,
                n_bytes=nbytes,
                group=tensor_group(t.name, num_layers=main_layers),
                layer=layer_index(t.name),
                is_expert="_exps" in t.name,
                file=p.name,
            )
        )
    mid = id or p.stem
    arch, assumed = _architecture_and_assumptions(meta, tensors, id=mid, source=str(p))
    _warn_assumed(str(arch_name), str(p), assumed)
    by_group, by_dtype, by_layer = summarise_tensors(tensors)
    notes = [
        f"GGUF v{scan['version']}: {len(tensors):,} tensors, {sum(by_dtype.values()):,} bytes of tensor data "
        f"(file {scan['file_bytes']:,} bytes)"
    ]
    if arch_name not in KNOWN_GGUF_ARCHITECTURES:
        notes.append(
            f"general.architecture {arch_name!r} is not one k3lib knows: read from the standard "
            f"{arch_name}.* keys and tensor names"
        )
    ctx_note = _context_tokens(meta, str(arch_name), str(p))[1]
    if ctx_note:
        notes.append(ctx_note)
    mtp_bytes = by_group.get("mtp", 0)
    if nextn and mtp_bytes:
        notes.append(
            f"MTP left out of the weights: {nextn} nextn layer{'s' if nextn > 1 else ''} "
            f"({arch_name}.nextn_predict_layers), {mtp_bytes:,} bytes in the file; llama.cpp skips "
            "them (TENSOR_SKIP) unless loaded for MTP drafting (--spec-type draft-mtp)"
        )
    zero = zero_sized_tensors_note(tensors)
    if zero:
        notes.append(zero)
    rope = _scalar(meta, f"{arch_name}.rope.dimension_count") or (arch.attention[0].head_dim or 0)
    small_meta = {k: v for k, v in meta.items() if not isinstance(v, list) or len(v) <= 256}
    return LoadedModel(
        architecture=arch,
        source=str(p),
        file_format="gguf",
        weights_bytes_by_group=by_group,
        bytes_by_dtype=by_dtype,
        bytes_by_layer=by_layer,
        tensors=tuple(tensors),
        rope_caches=((arch.max_context_tokens, int(rope)),) if rope else (),
        dtype_bytes=2,
        metadata=small_meta,
        notes=tuple(notes),
    )
