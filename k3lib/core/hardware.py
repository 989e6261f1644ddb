"""Hardware catalogue: GPUs, accelerators and unified-memory machines.

Read from ``data/hardware.csv`` (one row per hardware variant; see ``data/README.md``).
Units inside the library are bytes, bytes per second and FLOP/s:

* memory: vendors write "80GB", but HBM/GDDR/LPDDR capacities are binary, so an
  "80GB" H100 holds 80 GiB = 80·2^30 = 85,899,345,920 bytes;
* bandwidth: decimal, as marketed, so 3,350 GB/s = 3.35·10^12 bytes/s;
* compute: dense (not 2:4-sparse) tensor FLOP/s, 989 TFLOPS = 9.89·10^14 FLOP/s.

>>> h100 = get_gpu("H100 SXM5")
>>> h100.id, h100.memory_marketed_bytes == 80 * 2**30
('h100-sxm', True)
>>> h100.memory_bw_bytes_per_s
3350000000000
>>> round(h100.memory_bytes("usable") / 2**30, 2)
79.19
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal, overload

from k3lib.core.data import DATA_DIR, csv_number, normalise_name, read_csv_file, unique_by_id
from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.units import GB, GiB

MemoryBasis = Literal["marketed", "usable"]

DEVICE_CLASSES = ("datacenter GPU", "consumer GPU", "workstation GPU", "unified memory", "mining GPU")
VERIFICATION_LEVELS = ("retrieved", "partially retrieved", "recalled - verify", "guide-only")

HARDWARE_CSV = "hardware.csv"
CSV_COLUMNS = (
    "id",
    "name",
    "aliases",
    "vendor",
    "device_class",
    "memory_type",
    "memory_marketed_label",
    "memory_marketed_gib",
    "memory_usable_gib",
    "memory_usable_source",
    "memory_bw_gb_s",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "host_link_gb_s",
    "scale_up_link_gb_s",
    "scale_up_interconnect",
    "scale_out_interconnect",
    "gpus_per_node",
    "gpus_per_node_source",
    "unified_memory",
    "price_usd",
    "price_source",
    "guide_mentions",
    "source",
    "verification",
    "notes",
)

TFLOPS = 10**12
_VENDOR_PREFIXES = ("nvidia", "amd", "apple")


def _check_positive_int(field_name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise K3InputError(field_name, f"{value!r} is not a whole number of units", "an int > 0")
    if value <= 0:
        raise K3InputError(field_name, f"{value!r} must be greater than zero", "an int > 0")


def _check_positive_float(field_name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise K3InputError(field_name, f"{value!r} is not a number", "a finite number > 0")
    if value <= 0:
        raise K3InputError(field_name, f"{value!r} must be greater than zero", "a finite number > 0")


def _check_text(field_name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise K3InputError(field_name, f"{value!r} must be a non-empty string")


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """One hardware variant (SXM and PCIe boards are separate specs).

    Memory is in bytes, bandwidths in bytes per second (decimal, as vendors
    state them), compute in dense FLOP/s, price in US dollars. ``None`` means
    "no figure in the sources", never zero.

    ``memory_usable_bytes`` is what the driver exposes where a source gives a
    figure (e.g. 79.19 GiB for an "80GB" H100 under vLLM), else ``None``.
    ``host_link_bytes_per_s`` is host↔device bandwidth per direction (PCIe
    Gen4 x16 = 32 GB/s, Gen5 x16 = 64 GB/s, NVLink-C2C 450 GB/s); it is
    ``None`` for unified-memory machines. ``scale_up_link_bytes_per_s`` is
    NVLink/Infinity Fabric per GPU per direction, ``None`` when there is none.
    ``gpus_per_node`` is how many of these devices one machine (node) holds as it
    is sold and deployed: 8 on an HGX/DGX-class board or an 8-OAM MI300X platform,
    4 per GB200 NVL72 compute tray, 1 for a desktop card or a unified-memory
    computer; ``gpus_per_node_source`` says where that figure comes from.
    ``scale_up_interconnect`` and ``scale_out_interconnect`` are ids in
    ``data/interconnects.csv``: the link between GPUs of one node (NVLink,
    Infinity Fabric, a bridge, or PCIe when there is none) and between nodes
    (InfiniBand, RoCE, Ethernet, Thunderbolt); ``""`` where a row has none (a
    unified-memory computer has no second GPU inside). See
    :mod:`k3lib.core.interconnects` for the rule that picks the link of a plan.
    """

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    vendor: str
    device_class: str
    memory_type: str = ""
    memory_marketed_bytes: int
    memory_usable_bytes: int | None = None
    memory_bw_bytes_per_s: int
    bf16_dense_flops: float | None = None
    fp8_dense_flops: float | None = None
    host_link_bytes_per_s: int | None = None
    scale_up_link_bytes_per_s: int | None = None
    scale_up_interconnect: str = ""
    scale_out_interconnect: str = ""
    gpus_per_node: int = 8
    gpus_per_node_source: str = ""
    unified_memory: bool
    price_usd: float | None = None
    guide_mentions: tuple[str, ...] = ()
    source: str
    verification: str
    notes: str = ""

    def __post_init__(self) -> None:
        _check_text("id", self.id)
        if self.id != self.id.strip().lower() or " " in self.id:
            raise K3InputError("id", f"{self.id!r} must be a lower-case slug", "e.g. h100-sxm")
        _check_text("name", self.name)
        if isinstance(self.aliases, str) or not all(isinstance(a, str) and a.strip() for a in self.aliases):
            raise K3InputError("aliases", f"{self.aliases!r} must be a tuple of non-empty strings")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "guide_mentions", tuple(self.guide_mentions))
        _check_text("vendor", self.vendor)
        if self.device_class not in DEVICE_CLASSES:
            raise K3InputError("device_class", f"{self.device_class!r} is not a known class", ", ".join(DEVICE_CLASSES))
        _check_positive_int("memory_marketed_bytes", self.memory_marketed_bytes, optional=False)
        _check_positive_int("memory_usable_bytes", self.memory_usable_bytes, optional=True)
        if self.memory_usable_bytes is not None and self.memory_usable_bytes > self.memory_marketed_bytes:
            raise K3InputError(
                "memory_usable_bytes",
                f"{self.memory_usable_bytes} exceeds memory_marketed_bytes {self.memory_marketed_bytes}",
            )
        _check_positive_int("memory_bw_bytes_per_s", self.memory_bw_bytes_per_s, optional=False)
        _check_positive_float("bf16_dense_flops", self.bf16_dense_flops, optional=True)
        _check_positive_float("fp8_dense_flops", self.fp8_dense_flops, optional=True)
        _check_positive_int("host_link_bytes_per_s", self.host_link_bytes_per_s, optional=True)
        _check_positive_int("scale_up_link_bytes_per_s", self.scale_up_link_bytes_per_s, optional=True)
        for name in ("scale_up_interconnect", "scale_out_interconnect"):
            value = getattr(self, name)
            if not isinstance(value, str) or value != value.strip().lower() or " " in value:
                raise K3InputError(name, f"{value!r} must be an interconnect id (a lower-case slug) or ''")
        _check_positive_int("gpus_per_node", self.gpus_per_node, optional=False)
        if not isinstance(self.gpus_per_node_source, str):
            raise K3InputError("gpus_per_node_source", f"{self.gpus_per_node_source!r} must be a string")
        if not isinstance(self.unified_memory, bool):
            raise K3InputError("unified_memory", f"{self.unified_memory!r} is not a bool", "True or False")
        _check_positive_float("price_usd", self.price_usd, optional=True)
        _check_text("source", self.source)
        if self.verification not in VERIFICATION_LEVELS:
            raise K3InputError(
                "verification", f"{self.verification!r} is not a known level", ", ".join(VERIFICATION_LEVELS)
            )
        if not isinstance(self.notes, str):
            raise K3InputError("notes", f"{self.notes!r} must be a string")

    def memory_bytes(self, basis: MemoryBasis = "marketed") -> int:
        """Memory per device in bytes on the given ``basis``.

        ``"marketed"``: the vendor's label read as GiB ("80GB" → 80·2^30 bytes).
        ``"usable"``: the driver-visible figure where the catalogue has one;
        **falls back to the marketed figure when it is unknown** (check
        :attr:`has_usable_memory` to tell the two apart).

        >>> round(get_gpu("h200").memory_bytes("usable") / 2**30, 2)
        140.4
        >>> get_gpu("l4").memory_bytes("usable") == 24 * 2**30   # no usable figure: marketed
        True
        """
        if basis == "marketed":
            return self.memory_marketed_bytes
        if basis == "usable":
            return self.memory_usable_bytes if self.memory_usable_bytes is not None else self.memory_marketed_bytes
        raise K3InputError("basis", f"{basis!r} is not a memory basis", "marketed, usable")

    @property
    def has_usable_memory(self) -> bool:
        """True when a driver-visible memory figure is known (not a fallback)."""
        return self.memory_usable_bytes is not None


# ---------------------------------------------------------------- loading


@overload
def _cell_number(row: dict[str, str], column: str, *, required: Literal[True]) -> float: ...
@overload
def _cell_number(row: dict[str, str], column: str, *, required: bool) -> float | None: ...
def _cell_number(row: dict[str, str], column: str, *, required: bool) -> float | None:
    return csv_number(row, column, "hardware.csv", required=required)


@overload
def _scaled_int(value: float, scale: int) -> int: ...
@overload
def _scaled_int(value: float | None, scale: int) -> int | None: ...
def _scaled_int(value: float | None, scale: int) -> int | None:
    return None if value is None else int(round(value * scale))


def _cell_gpus_per_node(row: dict[str, str]) -> int:
    """The ``gpus_per_node`` cell as a whole number ≥ 1 (required: every row states it)."""
    value = _cell_number(row, "gpus_per_node", required=True)
    if value != int(value) or value < 1:
        raise K3InputError(
            f"hardware.csv[{row['id']}].gpus_per_node", f"{value!r} is not a whole number ≥ 1", "1, 4, 8, …"
        )
    return int(value)


def _spec_from_row(row: dict[str, str]) -> GPUSpec:
    """Convert one CSV row (GiB, GB/s, TFLOPS) into a :class:`GPUSpec` (bytes, bytes/s, FLOP/s)."""
    unified_text = row["unified_memory"].strip().lower()
    if unified_text not in ("true", "false"):
        raise K3InputError(f"hardware.csv[{row['id']}].unified_memory", f"{row['unified_memory']!r}", "true, false")
    bf16 = _cell_number(row, "bf16_dense_tflops", required=False)
    fp8 = _cell_number(row, "fp8_dense_tflops", required=False)
    return GPUSpec(
        id=row["id"],
        name=row["name"],
        aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
        vendor=row["vendor"],
        device_class=row["device_class"],
        memory_type=row["memory_type"],
        memory_marketed_bytes=_scaled_int(_cell_number(row, "memory_marketed_gib", required=True), GiB),
        memory_usable_bytes=_scaled_int(_cell_number(row, "memory_usable_gib", required=False), GiB),
        memory_bw_bytes_per_s=_scaled_int(_cell_number(row, "memory_bw_gb_s", required=True), GB),
        bf16_dense_flops=None if bf16 is None else bf16 * TFLOPS,
        fp8_dense_flops=None if fp8 is None else fp8 * TFLOPS,
        host_link_bytes_per_s=_scaled_int(_cell_number(row, "host_link_gb_s", required=False), GB),
        scale_up_link_bytes_per_s=_scaled_int(_cell_number(row, "scale_up_link_gb_s", required=False), GB),
        scale_up_interconnect=row["scale_up_interconnect"],
        scale_out_interconnect=row["scale_out_interconnect"],
        gpus_per_node=_cell_gpus_per_node(row),
        gpus_per_node_source=row["gpus_per_node_source"],
        unified_memory=unified_text == "true",
        price_usd=_cell_number(row, "price_usd", required=False),
        guide_mentions=tuple(g.strip() for g in row["guide_mentions"].split(";") if g.strip()),
        source=row["source"],
        verification=row["verification"],
        notes=row["notes"],
    )


@cache
def _load(path_text: str) -> tuple[GPUSpec, ...]:
    rows = read_csv_file(path_text, "hardware.csv", CSV_COLUMNS)
    return unique_by_id([_spec_from_row(r) for r in rows], "hardware.csv")


def load_hardware(path: str | Path | None = None) -> tuple[GPUSpec, ...]:
    """All hardware specs from ``data/hardware.csv`` (or ``path``), in file order.

    Cached per resolved path; the CSV's GiB, GB/s and TFLOPS columns become
    bytes, bytes/s and FLOP/s. A malformed cell raises :class:`K3InputError`
    naming ``hardware.csv[<id>].<column>``.
    """
    resolved = Path(path) if path is not None else DATA_DIR / HARDWARE_CSV
    return _load(str(resolved.resolve()))


def list_gpus() -> list[GPUSpec]:
    """Every spec in the default catalogue, in file order."""
    return list(load_hardware())


@cache
def _index(specs: tuple[GPUSpec, ...]) -> tuple[dict[str, GPUSpec], dict[str, GPUSpec], dict[str, tuple[str, ...]]]:
    """Exact (lower-case) and loose (spaces/hyphens/underscores/dots dropped) name maps.

    A loose key that points at two different specs is ambiguous: it is left out
    of the loose map and recorded with the ids it could mean.
    """
    exact: dict[str, GPUSpec] = {}
    loose_candidates: dict[str, set[str]] = {}
    by_id = {s.id: s for s in specs}
    for spec in specs:
        for label in (spec.id, spec.name, *spec.aliases):
            key = label.strip().lower()
            if key in exact and exact[key].id != spec.id:
                raise K3InputError("hardware.csv", f"name {label!r} is used by both {exact[key].id} and {spec.id}")
            exact[key] = spec
            loose_candidates.setdefault(normalise_name(label), set()).add(spec.id)
    loose = {k: by_id[next(iter(ids))] for k, ids in loose_candidates.items() if len(ids) == 1}
    ambiguous = {k: tuple(sorted(ids)) for k, ids in loose_candidates.items() if len(ids) > 1}
    return exact, loose, ambiguous


def get_gpu(name: str) -> GPUSpec:
    """Look up a spec by id, name or alias.

    Matching is case-insensitive and ignores spaces, hyphens, underscores and
    dots where that stays unambiguous ("H100-SXM", "h100 sxm5" and "h100" all
    give ``h100-sxm``); a leading "NVIDIA"/"AMD"/"Apple" is optional. An
    unknown name raises :class:`UnknownNameError` (a ``ValueError``) listing
    close matches.

    >>> get_gpu("DGX Spark 128GB").memory_marketed_bytes // 2**30
    128
    """
    if not isinstance(name, str) or not name.strip():
        raise K3InputError("gpu", f"{name!r} is not a GPU name", "an id or alias such as h100, h200, mi300x")
    specs = load_hardware()
    exact, loose, ambiguous = _index(specs)
    key = name.strip().lower()
    if key in exact:
        return exact[key]
    loose_key = normalise_name(key)
    candidates = [loose_key] + [loose_key[len(p) :] for p in _VENDOR_PREFIXES if loose_key.startswith(p)]
    for candidate in candidates:
        if candidate in loose:
            return loose[candidate]
        if candidate in ambiguous:
            raise K3InputError("gpu", f"{name!r} matches more than one GPU", ", ".join(ambiguous[candidate]))
    known = [s.id for s in specs] + [a for s in specs for a in s.aliases]
    raise UnknownNameError("gpu", name, known)
