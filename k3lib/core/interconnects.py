"""Interconnects: the links between GPUs inside a node and between nodes.

Read from ``data/interconnects.csv`` (one row per link kind; see ``data/README.md``).
Bandwidths are **per direction**, decimal, as vendors state them, converted to bytes/s
(NVLink 4: 450 GB/s per direction = 900 GB/s bidirectional = 4.5·10^11 bytes/s).

Each ``data/hardware.csv`` row names its ``scale_up_interconnect`` (GPU to GPU inside a
node: NVLink/NVSwitch, Infinity Fabric, a bridge, or PCIe where there is no GPU link) and
its ``scale_out_interconnect`` (node to node: InfiniBand, RoCE, Ethernet, Thunderbolt).
:func:`link_between` applies the rule a serving model needs:

* inside a node, a group of GPUs talks over the scale-up link while the group fits its
  domain (``domain_max_gpus``: 2 for a bridge pair, 8 for an NVSwitch board, 72 for an
  NVL72 rack); a larger group falls back to the PCIe link of the card's host link;
* across nodes, GPUs talk over the scale-out link, except where the scale-up domain is
  larger than a node (GB200/GB300 NVL72: 4 GPUs per tray, 72 per NVLink domain), in which
  case a group of up to ``domain_max_gpus`` stays on NVLink.

>>> link_between("h100", across_nodes=False).id, link_between("h100", across_nodes=True).id
('nvlink4', 'ib-ndr-400')
>>> link_between("h100", across_nodes=False).bandwidth_bytes_per_s
450000000000
>>> link_between("gb200", across_nodes=True, group_gpus=16).id   # trays of one NVL72 rack
'nvlink5-nvl72'
>>> link_between("h100-pcie", across_nodes=False, group_gpus=4).id  # bridge joins pairs only
'pcie5-x16'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from k3lib.core.data import DATA_DIR, csv_number, normalise_name, read_csv_file, unique_by_id
from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.units import GB

if TYPE_CHECKING:
    from k3lib.core.hardware import GPUSpec

INTERCONNECTS_CSV = "interconnects.csv"
CSV_COLUMNS = (
    "id",
    "name",
    "aliases",
    "tier",
    "technology",
    "bandwidth_per_direction_gb_s",
    "per_peer_gb_s",
    "latency_us",
    "latency_source",
    "domain_max_gpus",
    "topology",
    "source",
    "verification",
    "notes",
)
#: scale-up: GPU-to-GPU inside a node (or an NVL72 rack); pcie: host links and the GPU-to-GPU
#: path of cards without a GPU link; scale-out: node to node.
TIERS = ("scale-up", "pcie", "scale-out")
VERIFICATION_LEVELS = ("retrieved", "partially retrieved", "recalled - verify")


@dataclass(frozen=True, kw_only=True)
class Interconnect:
    """One kind of link. Bandwidth in bytes/s per direction, latency in seconds.

    ``per_peer_bytes_per_s`` is what one pair of GPUs gets where it is less than the
    total (AMD's Infinity Fabric mesh gives each peer one link: 64 of 448 GB/s), else
    ``None`` (an NVSwitch gives every pair the full rate). ``latency_s`` is ``None``
    when no source gives a figure; ``domain_max_gpus`` is ``None`` for a switched
    fabric without a size limit.
    """

    id: str
    name: str
    aliases: tuple[str, ...] = ()
    tier: str
    technology: str
    bandwidth_bytes_per_s: int
    per_peer_bytes_per_s: int | None = None
    latency_s: float | None = None
    latency_source: str = ""
    domain_max_gpus: int | None = None
    topology: str = ""
    source: str
    verification: str
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("id", "name", "technology", "source"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise K3InputError(name, f"{value!r} must be a non-empty string")
        if self.id != self.id.strip().lower() or " " in self.id:
            raise K3InputError("id", f"{self.id!r} must be a lower-case slug", "e.g. nvlink4")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        if self.tier not in TIERS:
            raise K3InputError("tier", f"{self.tier!r} is not a known tier", ", ".join(TIERS))
        for name in ("bandwidth_bytes_per_s", "per_peer_bytes_per_s", "domain_max_gpus"):
            value = getattr(self, name)
            if value is None and name != "bandwidth_bytes_per_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise K3InputError(name, f"{value!r} must be a whole number > 0")
        if self.per_peer_bytes_per_s is not None and self.per_peer_bytes_per_s > self.bandwidth_bytes_per_s:
            raise K3InputError(
                "per_peer_bytes_per_s",
                f"{self.per_peer_bytes_per_s} exceeds the link's total {self.bandwidth_bytes_per_s}",
            )
        if self.latency_s is not None:
            if (
                isinstance(self.latency_s, bool)
                or not isinstance(self.latency_s, (int, float))
                or not math.isfinite(self.latency_s)
                or self.latency_s <= 0
            ):
                raise K3InputError("latency_s", f"{self.latency_s!r} must be a finite number > 0")
            if not self.latency_source.strip():
                raise K3InputError("latency_source", "a latency needs its source")
        if self.verification not in VERIFICATION_LEVELS:
            raise K3InputError(
                "verification", f"{self.verification!r} is not a known level", ", ".join(VERIFICATION_LEVELS)
            )

    @property
    def pair_bandwidth_bytes_per_s(self) -> int:
        """What one GPU can send to one peer per second (the per-peer figure where there is one)."""
        return self.per_peer_bytes_per_s if self.per_peer_bytes_per_s is not None else self.bandwidth_bytes_per_s


@overload
def _cell(row: dict[str, str], column: str, *, required: Literal[True]) -> float: ...
@overload
def _cell(row: dict[str, str], column: str, *, required: bool) -> float | None: ...
def _cell(row: dict[str, str], column: str, *, required: bool) -> float | None:
    return csv_number(row, column, "interconnects.csv", required=required, positive=True)


def _from_row(row: dict[str, str]) -> Interconnect:
    rid = row.get("id") or "?"
    bw = _cell(row, "bandwidth_per_direction_gb_s", required=True)
    peer = _cell(row, "per_peer_gb_s", required=False)
    latency = _cell(row, "latency_us", required=False)
    domain = _cell(row, "domain_max_gpus", required=False)
    if domain is not None and domain != int(domain):
        raise K3InputError(f"interconnects.csv[{rid}].domain_max_gpus", f"{domain!r} is not a whole number")
    try:
        return Interconnect(
            id=row["id"],
            name=row["name"],
            aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
            tier=row["tier"],
            technology=row["technology"],
            bandwidth_bytes_per_s=int(round(bw * GB)),
            per_peer_bytes_per_s=None if peer is None else int(round(peer * GB)),
            latency_s=None if latency is None else latency * 1e-6,
            latency_source=row["latency_source"],
            domain_max_gpus=None if domain is None else int(domain),
            topology=row["topology"],
            source=row["source"],
            verification=row["verification"],
            notes=row["notes"],
        )
    except K3InputError as exc:  # name the row and the column
        column = {
            "bandwidth_bytes_per_s": "bandwidth_per_direction_gb_s",
            "per_peer_bytes_per_s": "per_peer_gb_s",
            "latency_s": "latency_us",
        }.get(exc.field, exc.field)
        raise K3InputError(f"interconnects.csv[{rid}].{column}", str(exc).split(": ", 1)[-1]) from None


@cache
def _load(path_text: str) -> tuple[Interconnect, ...]:
    rows = read_csv_file(path_text, "interconnects.csv", CSV_COLUMNS)
    return unique_by_id([_from_row(r) for r in rows], "interconnects.csv")


def load_interconnects(path: str | Path | None = None) -> tuple[Interconnect, ...]:
    """All links from ``data/interconnects.csv`` (or ``path``), in file order (cached).

    A malformed cell raises :class:`K3InputError` naming ``interconnects.csv[<id>].<column>``.
    """
    resolved = Path(path) if path is not None else DATA_DIR / INTERCONNECTS_CSV
    return _load(str(resolved.resolve()))


def list_interconnects() -> list[Interconnect]:
    """Every link in the default table, in file order."""
    return list(load_interconnects())


def get_interconnect(name: str) -> Interconnect:
    """A link by id or alias (case-insensitive; spaces, hyphens, dots ignored).

    >>> get_interconnect("NVLink 4").bandwidth_bytes_per_s
    450000000000
    """
    if not isinstance(name, str) or not name.strip():
        raise K3InputError("interconnect", f"{name!r} is not an interconnect name", "e.g. nvlink4, ib-ndr-400")
    links = load_interconnects()
    key = normalise_name(name)
    for link in links:
        if key in {normalise_name(label) for label in (link.id, link.name, *link.aliases)}:
            return link
    raise UnknownNameError(
        "interconnect", name, [link.id for link in links] + [a for link in links for a in link.aliases]
    )


def _gpu(gpu: GPUSpec | str) -> GPUSpec:
    from k3lib.core.hardware import GPUSpec, get_gpu

    return gpu if isinstance(gpu, GPUSpec) else get_gpu(gpu)


def links_for(gpu: GPUSpec | str) -> tuple[Interconnect | None, Interconnect | None]:
    """``(scale_up, scale_out)`` links of a GPU (a :class:`GPUSpec` or a name); ``None`` where the row has none."""
    spec = _gpu(gpu)
    up = get_interconnect(spec.scale_up_interconnect) if spec.scale_up_interconnect else None
    out = get_interconnect(spec.scale_out_interconnect) if spec.scale_out_interconnect else None
    return up, out


def host_pcie_link(gpu: GPUSpec | str) -> Interconnect | None:
    """The PCIe row whose bandwidth equals the GPU's host link (``None`` when it has none or none matches)."""
    spec = _gpu(gpu)
    if spec.host_link_bytes_per_s is None:
        return None
    for link in load_interconnects():
        if (
            link.tier == "pcie"
            and link.technology == "PCIe"
            and link.bandwidth_bytes_per_s == spec.host_link_bytes_per_s
        ):
            return link
    return None


def link_between(gpu: GPUSpec | str, *, across_nodes: bool, group_gpus: int = 2) -> Interconnect | None:
    """The link a group of ``group_gpus`` GPUs of this type communicates over.

    ``across_nodes=False``: the GPUs share a node (tensor/expert parallel inside a node);
    ``True``: they sit in different nodes (pipeline stages, or TP/EP spanning nodes).
    Returns ``None`` when the hardware has no such link (a unified-memory computer has
    no second GPU inside; a row without a scale-out link). See the module docstring
    for the rule.
    """
    if isinstance(group_gpus, bool) or not isinstance(group_gpus, int) or group_gpus < 2:
        raise K3InputError("group_gpus", f"{group_gpus!r} is not a group of GPUs", "an int >= 2")
    spec = _gpu(gpu)
    up, out = links_for(spec)
    if across_nodes:
        if (
            up is not None
            and up.domain_max_gpus is not None
            and up.domain_max_gpus > spec.gpus_per_node
            and group_gpus <= up.domain_max_gpus
        ):
            return up
        return out
    if up is None:
        return None
    if up.domain_max_gpus is not None and group_gpus > up.domain_max_gpus:
        return host_pcie_link(spec) or up
    return up
