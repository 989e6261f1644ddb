"""Weight formats and KV-cache dtypes, read from ``data/weight_formats.csv`` and
``data/kv_dtypes.csv``.

Bits per weight include block scales: GGUF Q8_0 stores 32 weights in 34 bytes,
so ``bits_per_weight = 34·8/32 = 8.5``. KV dtypes carry bytes per element the
same way (q8_0: 34/32 = 1.0625 B).

>>> get_weight_format("Q4_K_M").bits_per_weight
4.5
>>> get_kv_dtype("fp8").bytes_per_element
1.0
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TypeVar, cast

from k3lib.core.data import normalise_name, read_csv_rows
from k3lib.core.errors import K3InputError, UnknownNameError


@dataclass(frozen=True)
class WeightFormat:
    """A weight storage format. ``bits_per_weight`` is None only for ``native``."""

    id: str
    name: str
    aliases: tuple[str, ...]
    bits_per_weight: float | None
    kind: str
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        if self.bits_per_weight is not None and not self.bits_per_weight > 0:
            raise K3InputError("bits_per_weight", f"{self.bits_per_weight!r} must be > 0")

    @property
    def bytes_per_weight(self) -> float:
        """Bytes per weight = bits_per_weight / 8."""
        if self.bits_per_weight is None:
            raise K3InputError("weights", "'native' has no single size; ask the model for its native bytes")
        return self.bits_per_weight / 8

    @property
    def bits(self) -> float:
        """``bits_per_weight``, for a format that has one (K3InputError for ``native``)."""
        if self.bits_per_weight is None:
            raise K3InputError("weights", "'native' has no single size; ask the model for its native bits")
        return self.bits_per_weight

    @property
    def is_native(self) -> bool:
        return self.bits_per_weight is None


@dataclass(frozen=True)
class KVDtype:
    """A KV-cache element type; ``bytes_per_element`` includes block scales."""

    id: str
    name: str
    aliases: tuple[str, ...]
    bytes_per_element: float
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.bytes_per_element > 0:
            raise K3InputError("bytes_per_element", f"{self.bytes_per_element!r} must be > 0")


@cache
def weight_formats() -> tuple[WeightFormat, ...]:
    """All weight formats in ``data/weight_formats.csv``."""
    return tuple(
        WeightFormat(
            id=r["id"],
            name=r["name"],
            aliases=tuple(a for a in r["aliases"].split(";") if a),
            bits_per_weight=float(r["bits_per_weight"]) if r["bits_per_weight"] else None,
            kind=r["kind"],
            source=r["source"],
            notes=r["notes"],
        )
        for r in read_csv_rows("weight_formats.csv")
    )


@cache
def kv_dtypes() -> tuple[KVDtype, ...]:
    """All KV-cache dtypes in ``data/kv_dtypes.csv``."""
    return tuple(
        KVDtype(
            id=r["id"],
            name=r["name"],
            aliases=tuple(a for a in r["aliases"].split(";") if a),
            bytes_per_element=float(r["bytes_per_element"]),
            source=r["source"],
            notes=r["notes"],
        )
        for r in read_csv_rows("kv_dtypes.csv")
    )


_Named = TypeVar("_Named", WeightFormat, KVDtype)


@cache
def _index(items: tuple[WeightFormat, ...] | tuple[KVDtype, ...]) -> dict[str, WeightFormat | KVDtype]:
    """Normalised id and aliases → item (first row wins)."""
    out: dict[str, WeightFormat | KVDtype] = {}
    for item in items:
        for key in (item.id, *item.aliases):
            out.setdefault(normalise_name(key), item)
    return out


def _lookup(items: tuple[_Named, ...], name: str | _Named, field: str) -> _Named:
    if isinstance(name, (WeightFormat, KVDtype)):
        return name
    found = _index(items).get(normalise_name(name))
    if found is None:
        raise UnknownNameError(field, str(name), [i.id for i in items])
    return cast(_Named, found)  # _index(items) holds only items of the kind given


def get_weight_format(name: str | WeightFormat) -> WeightFormat:
    """Look up a weight format by id or alias (case-insensitive); parametric checkpoint
    formats (:func:`parametric_weight_format`) are built on demand."""
    if isinstance(name, str) and normalise_name(name) not in _index(weight_formats()):
        found = parametric_weight_format(name)
        if found is not None:
            return found
    return _lookup(weight_formats(), name, "weights")


# ---------------------------------------------------------------- checkpoint quantization methods
#
# Bits per weight of the formats a Hugging Face ``quantization_config`` declares, from the
# tensors each method stores per linear layer of $K$ inputs and $N$ outputs. Terms that are
# per row or per tensor rather than per weight ($32/K$ for one FP32 scale per output row,
# $32/N$ for GPTQ's ``g_idx``) are named in each docstring and left out: below 0.01 bit for
# $K, N \ge 4096$.


def _positive_int(field: str, value: object, allowed: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise K3InputError(field, f"{value!r} is not a positive integer", allowed)
    return value


def gptq_awq_bits_per_weight(bits: int, group_size: int | None) -> float:
    """GPTQ and AWQ, ``bits`` $b$ per weight in groups of $G$ inputs:

    $b + (16 + b)/G$ — packed $b$-bit weights (``qweight``), one FP16 scale (``scales``) and
    one packed $b$-bit zero point (``qzeros``) per group and output. GPTQ also stores an
    int32 ``g_idx`` per input row ($32/N$ bits per weight, with or without ``desc_act``),
    left out. ``group_size`` None or $-1$ (one group per column): $b$ (the scale and zero
    add $(16+b)/K$). Source: vLLM vllm/model_executor/layers/quantization/gptq.py @e5dd90be
    and awq.py @92d756e9, ``create_weights`` (the shapes of qweight, qzeros, scales, g_idx).

    >>> gptq_awq_bits_per_weight(4, 128), gptq_awq_bits_per_weight(8, 32)
    (4.15625, 8.75)
    """
    b = _positive_int("quantization_config.bits", bits, "2, 3, 4 or 8")
    if group_size in (None, -1):
        return float(b)
    g = _positive_int("quantization_config.group_size", group_size, "a positive integer or -1")
    return b + (16 + b) / g


def compressed_tensors_int_bits_per_weight(
    bits: int, group_size: int | None, *, symmetric: bool = True, scale_bits: int = 16
) -> float:
    """compressed-tensors ``pack-quantized`` integer weights ($b$ bits, groups of $G$):

    $b + s/G$ (symmetric) or $b + (s + b)/G$ (asymmetric) — ``weight_packed`` (int32 holding
    $32/b$ weights), ``weight_scale`` of $s$ = 16 bits (the model dtype) per group and output,
    and, when asymmetric, a packed $b$-bit ``weight_zero_point``; ``weight_shape`` (two int64)
    is per tensor. Channel-wise (``group_size`` None): $b$ (+ $s/K$). Source: vLLM
    vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16.py
    @519b90d4 ``create_weights``.

    >>> compressed_tensors_int_bits_per_weight(4, 128), compressed_tensors_int_bits_per_weight(4, 32)
    (4.125, 4.5)
    """
    b = _positive_int("quantization_config.config_groups.weights.num_bits", bits, "4 or 8")
    if group_size in (None, -1):
        return float(b)
    g = _positive_int("quantization_config.config_groups.weights.group_size", group_size, "a positive integer")
    return b + (scale_bits + (0 if symmetric else b)) / g


def bnb_4bit_bits_per_weight(*, double_quant: bool, blocksize: int = 64, nested_blocksize: int = 256) -> float:
    """bitsandbytes 4-bit (NF4 or FP4; both are 4-bit codes), blocks of $B$ = 64 weights:

    $4 + 32/B$ = 4.5 — packed nibbles plus one FP32 ``absmax`` per block; with double
    quantization (``bnb_4bit_use_double_quant``) the absmax is itself stored in 8 bits with
    one FP32 scale per 256 blocks: $4 + 8/B + 32/(256·B)$ = 4.126953125. The 16-entry
    ``quant_map``, the 256-entry ``nested_quant_map`` (FP32) and the ``quant_state`` JSON are
    per tensor. Source: bitsandbytes functional.py ``quantize_4bit`` (blocksize 64,
    ``compress_statistics`` → ``quantize_blockwise`` of the absmax in blocks of 256),
    github.com/bitsandbytes-foundation/bitsandbytes; tensor list of a saved checkpoint
    (``.absmax`` of $n/64$ entries, ``.quant_map`` of 16) in github.com/google/gemma.cpp issue #533.

    >>> bnb_4bit_bits_per_weight(double_quant=True), bnb_4bit_bits_per_weight(double_quant=False)
    (4.126953125, 4.5)
    """
    _positive_int("quantization_config.bnb_4bit_blocksize", blocksize, "a positive integer (64)")
    if double_quant:
        return 4 + 8 / blocksize + 32 / (nested_blocksize * blocksize)
    return 4 + 32 / blocksize


def row_scaled_8bit_bits_per_weight(in_features: int | None = None) -> float:
    """8-bit weights with one FP32 scale per output row — bitsandbytes LLM.int8() (int8
    ``weight`` + ``SCB``) and FBGEMM FP8 (``float8_e4m3fn`` weight + ``weight_scale`` of shape
    $[N, 1]$): $8 + 32/K$ bits per weight for $K$ inputs; 8 when $K$ is not given. Sources:
    vLLM vllm/model_executor/layers/quantization/fbgemm_fp8.py @5deacad0 ``create_weights``;
    transformers docs, bitsandbytes 8-bit (https://huggingface.co/docs/transformers/quantization/bitsandbytes).

    >>> row_scaled_8bit_bits_per_weight(4096)
    8.0078125
    """
    if in_features is None:
        return 8.0
    return 8 + 32 / _positive_int("in_features", in_features, "a positive integer")


def mxfp4_bits_per_weight() -> float:
    """MXFP4: 32 FP4 (E2M1) values and one E8M0 scale byte per block: $4 + 8/32$ = 4.25
    (OCP Microscaling Formats v1.0; ggml ``block_mxfp4`` 17 bytes per 32)."""
    return 4 + 8 / 32


_GPTQ_RE = re.compile(r"^(gptq|awq)-int([2348])-g(\d+|ch)$")
_CT_RE = re.compile(r"^ct-int([48])-g(\d+|ch)(-asym)?$")
_MIX_RE = re.compile(r"^(.+):(\d+)/(\d+)$")


@lru_cache(maxsize=1024)
def parametric_weight_format(name: str) -> WeightFormat | None:
    """A checkpoint format whose size follows from its parameters, or None:

    * ``gptq-int4-g64``, ``awq-int4-g32``, ``gptq-int8-gch`` …: :func:`gptq_awq_bits_per_weight`;
    * ``ct-int4-g128``, ``ct-int4-g32-asym``, ``ct-int8-gch``: :func:`compressed_tensors_int_bits_per_weight`;
    * ``FMT:k/n``: ``k`` of a group's ``n`` layers in format FMT and the rest in BF16 (a
      checkpoint whose ignore list leaves whole layers unquantized, e.g. Llama 3.1 405B FP8):
      $(k·b_{FMT} + (n-k)·16)/n$ bits.
    """
    key = str(name).strip().lower()
    m = _MIX_RE.match(key)
    if m:
        inner, k, n = get_weight_format(m.group(1)), int(m.group(2)), int(m.group(3))
        if inner.bits_per_weight is None or not 0 < k <= n:
            raise K3InputError(
                "weights", f"{name!r}: {k} of {n} layers is not a share of a sized format", "FMT:k/n with 0 < k <= n"
            )
        bits = (k * inner.bits_per_weight + (n - k) * 16) / n
        return WeightFormat(
            id=key,
            name=f"{inner.name}, {k} of {n} layers (rest BF16)",
            aliases=(),
            bits_per_weight=bits,
            kind="checkpoint method",
            source=inner.source,
            notes="layers an ignore list leaves out stay BF16",
        )
    m = _GPTQ_RE.match(key)
    if m:
        method, b, g = m.group(1), int(m.group(2)), m.group(3)
        bits = gptq_awq_bits_per_weight(b, None if g == "ch" else int(g))
        return WeightFormat(
            id=key,
            name=f"{method.upper()} INT{b} group {g}",
            aliases=(),
            bits_per_weight=bits,
            kind="checkpoint method",
            source=get_weight_format(f"int4-{method}").source,
            notes="b + (16 + b)/G bits (gptq_awq_bits_per_weight)",
        )
    m = _CT_RE.match(key)
    if m:
        b, g, asym = int(m.group(1)), m.group(2), bool(m.group(3))
        bits = compressed_tensors_int_bits_per_weight(b, None if g == "ch" else int(g), symmetric=not asym)
        return WeightFormat(
            id=key,
            name=f"compressed-tensors INT{b} group {g}{' asymmetric' if asym else ''}",
            aliases=(),
            bits_per_weight=bits,
            kind="checkpoint method",
            source=get_weight_format("ct-int4-g128").source,
            notes="b + (16 [+ b])/G bits (compressed_tensors_int_bits_per_weight)",
        )
    return None


def get_kv_dtype(name: str | KVDtype) -> KVDtype:
    """Look up a KV-cache dtype by id or alias (case-insensitive)."""
    return _lookup(kv_dtypes(), name, "kv_dtype")
