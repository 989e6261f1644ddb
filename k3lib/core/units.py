"""Units and parsing: bytes inside, GB (10^9) or GiB (2^30) only at the edges.

Context strings follow the guides: ``K`` = 1,024 tokens and ``M`` = 1,048,576
tokens, so ``256K`` is 262,144 tokens.

>>> parse_context_tokens("256K")
262144
>>> parse_size_bytes("8GiB")
8589934592
>>> bytes_to_gb(parse_size_bytes("8GB"))
8.0

Every number parser reads text the same way (:func:`_clean_text`): ASCII only, surrounding
whitespace ignored, ``""`` or whitespace only is ``K3InputError(field, "is empty", allowed)``
— an empty option never stands for the default. Counts (:func:`parse_count`,
:func:`parse_positive_int`) take ASCII digits only: no sign, exponent or hex.
"""

from __future__ import annotations

import math
import operator
import re
from fractions import Fraction
from typing import TYPE_CHECKING

from k3lib.core.errors import K3InputError

if TYPE_CHECKING:  # numpy is not imported at run time here
    from typing import TypeAlias

    import numpy as np
    import numpy.typing as npt

    #: Byte or token counts as a NumPy array: the vectorized sweep (:mod:`k3lib.core.sweep`) passes
    #: one through the same functions that compute one plan, which then return arrays too.
    IntArray: TypeAlias = npt.NDArray[np.int64]

GB = 10**9
GiB = 2**30
MB = 10**6
MiB = 2**20
KiB = 2**10

_CONTEXT_SUFFIX = {"": 1, "K": 1024, "M": 1024**2}
_SIZE_SUFFIX = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}


def bytes_to_gb(n_bytes: float) -> float:
    """Bytes → decimal gigabytes (10^9)."""
    return n_bytes / GB


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes → binary gibibytes (2^30)."""
    return n_bytes / GiB


def gb_to_bytes(gb: float) -> int:
    """Decimal gigabytes → bytes, rounded to the nearest byte."""
    return int(round(gb * GB))


def gib_to_bytes(gib: float) -> int:
    """Binary gibibytes → bytes, rounded to the nearest byte."""
    return int(round(gib * GiB))


# Physical upper bounds.  A value past these is a typo or hostile input, not a plan: it is
# refused with a named error before any loop or array depends on it.
#
# * GPUs (and tp, pp, dp, ep, nodes): 4,096.  One model replica served over more GPUs than
#   that is beyond any published inference deployment (DeepSeek-V3's decode instances use 320
#   GPUs; the largest NVLink domain announced is 576 GPUs), and per-GPU numbers stop changing
#   long before it; loops over layouts stay cheap.
# * context: 2^24 = 16,777,216 tokens (16M).  The longest published context window is 10M
#   tokens (Llama 4 Scout); 16M leaves headroom while keeping T·layers·width far from int64.
# * batch: 2^16 = 65,536 concurrent sequences.  Engines default to 256–1,024 (vLLM's
#   max_num_seqs).  With the context bound, batch × context ≤ 2^40 tokens, and at ≤ 1 MiB of
#   KV per token (2^20 B, above any published model) every byte count stays below 2^60, so
#   the int64 arrays of the sweep cannot overflow (2^20 × 2^24 × 2^20 would pass 2^63).
# * sizes: 10^16 bytes (10 PB), more than the memory of 4,096 GPUs of 288 GB plus their hosts.
# * any other count: 2^31 − 1.
MAX_GPUS = 4096
MAX_CONTEXT_TOKENS = 2**24
MAX_BATCH = 2**16
MAX_SIZE_BYTES = 10**16
MAX_COUNT = 2**31 - 1
_COUNT_BOUNDS = {
    "gpus": MAX_GPUS,
    "max_gpus": MAX_GPUS,
    "tp": MAX_GPUS,
    "pp": MAX_GPUS,
    "dp": MAX_GPUS,
    "ep": MAX_GPUS,
    "nodes": MAX_GPUS,
    "batch": MAX_BATCH,
}
_MAX_TEXT = 64  # characters: no legitimate number is longer, so nothing longer is converted

_DECIMAL = re.compile(r"([+-]?[0-9]+(?:\.[0-9]+)?)", re.ASCII)


def count_bound(field: str) -> int:
    """The largest value :func:`parse_positive_int` accepts for ``field`` (see the bounds above)."""
    return _COUNT_BOUNDS.get(field.replace("-", "_").lower(), MAX_COUNT)


def nonempty_text(value: str, field: str, allowed: str | None = None) -> str:
    """``value`` without surrounding whitespace; ``""`` or whitespace only is
    ``K3InputError(field, "is empty", allowed)`` — an empty option is a mistake to name,
    never a request for the default (leave the option out for that).

    >>> nonempty_text(" fp8 ", "kv_dtype")
    'fp8'
    """
    text = value.strip()
    if not text:
        raise K3InputError(field, "is empty", allowed)
    return text


def _clean_text(value: str, field: str, what: str, allowed: str) -> str:
    """The one text rule of every number parser here: over-long text and non-ASCII (e.g.
    Arabic-Indic or full-width digits) are refused, surrounding ASCII whitespace is ignored
    (as ``int()`` and argparse users expect: ``" 8 "`` is 8), empty or whitespace-only text is
    "is empty", and thousands separators ``,`` / ``_`` are dropped."""
    if len(value) > _MAX_TEXT:
        raise K3InputError(field, f"{value[:20]!r}… ({len(value)} characters) is not {what}", allowed)
    if not value.isascii():
        raise K3InputError(field, f"{value!r} is not {what}: only ASCII digits 0-9 are read", allowed)
    return nonempty_text(value, field, allowed).replace(",", "").replace("_", "")


def parse_context_tokens(value: object, field: str = "context") -> int:
    """Parse a context length: ``128K``, ``256k``, ``1M``, ``1048576`` or an int.

    ``K`` means 1,024 tokens (256K = 262,144), ``M`` means 1,048,576.  Tokens =
    number × suffix, computed exactly (``Fraction``), must be a whole number in
    1 … ``MAX_CONTEXT_TOKENS`` (2^24).  Zero, negative, fractional-token, non-ASCII,
    too-large and non-numeric values raise :class:`K3InputError` naming ``field``.
    """
    allowed = f"a whole number of tokens from 1 to {MAX_CONTEXT_TOKENS:,} (16M), e.g. 131072, 128K, 256k, 1M"
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a context length", allowed)
    number: Fraction | None
    if isinstance(value, str):
        text = _clean_text(value, field, "a context length", allowed)
        m = re.fullmatch(_DECIMAL.pattern + r"\s*([kKmM]?)", text, re.ASCII)
        if not m:
            raise K3InputError(field, f"{value!r} is not a context length", allowed)
        number = Fraction(m.group(1)) * _CONTEXT_SUFFIX[m.group(2).upper()]
    else:
        number = _exact_number(value)
        if number is None:
            raise K3InputError(field, f"{value!r} is not a context length", allowed)
    if number.denominator != 1:
        raise K3InputError(field, f"{value!r} is not a whole number of tokens", allowed)
    if number <= 0:
        raise K3InputError(field, f"{value!r} must be greater than zero", allowed)
    if number > MAX_CONTEXT_TOKENS:
        raise K3InputError(field, f"{value!r} is more than {MAX_CONTEXT_TOKENS:,} tokens", allowed)
    return int(number)


def _exact_number(value: object) -> Fraction | None:
    """An int, integer-like (numpy) or finite float as an exact Fraction; None otherwise."""
    if isinstance(value, bool):
        return None
    try:
        return Fraction(operator.index(value))  # type: ignore[arg-type]
    except TypeError:
        pass
    if isinstance(value, (float, Fraction)) or type(value).__name__.startswith("float"):
        try:
            f = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return Fraction(f) if math.isfinite(f) else None
    return None


def parse_size_bytes(value: object, field: str = "size") -> int:
    """Parse a memory size: ``8GB`` (8·10^9), ``8GiB`` (8·2^30), ``512MiB`` or bytes.

    A bare number is bytes; bytes = round(number × unit).  Negative, non-finite,
    non-ASCII, non-numeric values and sizes over ``MAX_SIZE_BYTES`` (10^16) raise
    :class:`K3InputError` naming ``field``.
    """
    allowed = "a size with a unit up to 10 PB, e.g. 8GB (10^9 bytes), 8GiB (2^30 bytes), or a byte count"
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a size", allowed)
    n: Fraction | None
    if isinstance(value, str):
        text = _clean_text(value, field, "a size", allowed)
        m = re.fullmatch(_DECIMAL.pattern + r"\s*([a-zA-Z]*)", text, re.ASCII)
        if not m or m.group(2).upper() not in _SIZE_SUFFIX and m.group(2) != "":
            raise K3InputError(field, f"{value!r} is not a size", allowed)
        n = Fraction(m.group(1)) * _SIZE_SUFFIX[m.group(2).upper() or "B"]
    else:
        n = _exact_number(value)
        if n is None:
            raise K3InputError(field, f"{value!r} is not a size", allowed)
    if n < 0:
        raise K3InputError(field, f"{value!r} must not be negative", allowed)
    if n > MAX_SIZE_BYTES:
        raise K3InputError(field, f"{value!r} is more than 10 PB", allowed)
    return int(round(n))


#: a count as text: ASCII digits, optionally ``.0`` (``8.0``); a leading ``-`` is read only to
#: name it ("must be at least …"); ``+``, exponents, hex and inner spaces are not counts
_COUNT = re.compile(r"(-?[0-9]+)(?:\.0+)?", re.ASCII)


def parse_count(
    value: object, field: str, *, minimum: int = 0, maximum: int | None = None, allowed: str | None = None
) -> int:
    """Parse a count that may be 0 (layers kept on the GPU, ``-ngl``): a whole number in
    ``minimum`` … ``maximum`` (default :func:`count_bound` of ``field``).

    Text is ASCII digits only, as for every count: ``3``, ``3.0``, ``1,024`` and surrounding
    whitespace (``" 3 "``) are read; ``""`` (is empty), ``+3``, ``1e3``, ``0x10``, ``３``/``٣``
    and ``2.5`` raise :class:`K3InputError` naming ``field`` and what is allowed. Ints, numpy
    integers and integral floats are taken as numbers; booleans are not.

    >>> parse_count("0", "expert_layers_on_gpu"), parse_count(" 12 ", "n_gpu_layers", maximum=61)
    (0, 12)
    """
    bound = count_bound(field) if maximum is None else maximum
    if allowed is None:
        allowed = f"a whole number from {minimum:,} to {bound:,}, ASCII digits"
    if isinstance(value, bool):
        raise K3InputError(field, f"{value!r} is not a whole number", allowed)
    if isinstance(value, str):
        text = _clean_text(value, field, "a whole number", allowed)
        m = _COUNT.fullmatch(text)
        if m is None and text[:1] == "+":
            raise K3InputError(field, f"{value!r} is not a whole number: a sign is not a digit", allowed)
        number = Fraction(int(m.group(1))) if m else None
        if m and m.group(1)[0] == "-" and minimum >= 0:  # "-0" too
            raise K3InputError(field, f"{value!r} must be at least {minimum:,} (a count has no sign)", allowed)
    else:
        number = _exact_number(value)
    if number is None or number.denominator != 1:
        raise K3InputError(field, f"{value!r} is not a whole number", allowed)
    if number < minimum:
        raise K3InputError(field, f"{value!r} must be at least {minimum:,}", allowed)
    if number > bound:
        raise K3InputError(field, f"{value!r} is more than {bound:,}", allowed)
    return int(number)


def parse_positive_int(value: object, field: str, allowed: str = "a whole number ≥ 1") -> int:
    """Parse a count such as a GPU count or batch size: a whole number in 1 … ``count_bound(field)``
    (:func:`parse_count` with ``minimum=1``, the same text rule).

    Strings must be ASCII decimal digits (``8``, ``8.0``, ``1,024``, ``" 8 "``); ``""``,
    ``+8``, ``1e6``, Unicode digits and values over the field's physical bound (GPUs 4,096,
    batch 2^16, see the module constants) raise :class:`K3InputError` naming ``field``.
    """
    bound = count_bound(field)
    allowed = f"{allowed}, at most {bound:,}" if "at most" not in allowed else allowed
    return parse_count(value, field, minimum=1, maximum=bound, allowed=allowed)


def format_bytes(n_bytes: float, unit: str = "GiB", digits: int = 1) -> str:
    """Format a byte count in GB or GiB, naming the unit."""
    div = {"GB": GB, "GiB": GiB, "MB": MB, "MiB": MiB, "TB": 10**12}[unit]
    return f"{n_bytes / div:,.{digits}f} {unit}"


def context_label(tokens: int) -> str:
    """A context as people write it, K = 1,024 tokens: ``262144`` → ``'256K'``, ``1048576`` →
    ``'1M'``, ``204800`` → ``'200K'``, other counts with thousands separators.

    >>> context_label(131072), context_label(1048576), context_label(1000), context_label(0)
    ('128K', '1M', '1,000', '0')
    """
    tokens = int(tokens)
    if tokens and tokens % 2**20 == 0:
        return f"{tokens // 2**20}M"
    if tokens and tokens % 2**10 == 0:
        return f"{tokens // 2**10:,}K"
    return f"{tokens:,}"
