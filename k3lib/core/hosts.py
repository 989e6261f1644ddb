"""Host catalogue: the CPU platforms (and unified-memory machines) whose memory holds the
offloaded weights, read from ``data/hosts.csv``.

Host memory bandwidth is derived, never typed in:

$$BW_{host} = \\text{channels} × \\text{sockets} × \\text{MT/s} × 10^6 × 8\\ \\text{bytes}$$

(a DDR/LPDDR channel is 64 bits wide, 8 bytes per transfer). The CSV's ``peak_gb_s``
column restates it in GB/s for readers; a test checks that the two agree.

>>> h = get_host("epyc-9005")
>>> h.memory_bw_bytes_per_s / 1e9                     # 12 channels × DDR5-6000 × 8 B
576.0
>>> get_host("desktop ddr5-4400").memory_bw_bytes_per_s / 1e9
70.4
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from k3lib.core.data import normalise_name, read_csv_rows
from k3lib.core.errors import K3InputError
from k3lib.core.units import GB

HOSTS_CSV = "hosts.csv"
HOST_COLUMNS = (
    "id",
    "name",
    "aliases",
    "platform",
    "memory_type",
    "memory_channels",
    "mt_per_s",
    "bytes_per_transfer",
    "sockets",
    "peak_gb_s",
    "max_memory_gb",
    "unified_memory",
    "hardware_id",
    "source",
    "verification",
    "notes",
)
HOST_PLATFORMS = ("server", "workstation", "desktop", "unified")


def dram_bandwidth_bytes_per_s(*, channels: int, mt_per_s: int, bytes_per_transfer: int = 8, sockets: int = 1) -> int:
    """Peak DRAM bandwidth in bytes/s: $channels × sockets × MT/s·10^6 × bytes\\ per\\ transfer$.

    >>> dram_bandwidth_bytes_per_s(channels=12, mt_per_s=4800) / 1e9
    460.8
    """
    return channels * sockets * mt_per_s * 10**6 * bytes_per_transfer


@dataclass(frozen=True, kw_only=True)
class HostSpec:
    """One host platform. Counts are whole numbers; ``max_memory_bytes`` is the platform's
    most memory (decimal GB × 10^9, as the vendors state it); ``hardware_id`` names the
    ``data/hardware.csv`` row of a unified-memory machine (CPU and GPU share one pool)."""

    id: str
    name: str
    aliases: tuple[str, ...]
    platform: str
    memory_type: str
    memory_channels: int
    mt_per_s: int
    bytes_per_transfer: int
    sockets: int
    max_memory_bytes: int
    unified_memory: bool
    hardware_id: str
    source: str
    verification: str
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("memory_channels", "mt_per_s", "bytes_per_transfer", "sockets", "max_memory_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise K3InputError(f"hosts.csv[{self.id}].{name}", f"{v!r} must be a whole number ≥ 1")
        if self.platform not in HOST_PLATFORMS:
            raise K3InputError(f"hosts.csv[{self.id}].platform", f"{self.platform!r}", ", ".join(HOST_PLATFORMS))
        if self.unified_memory != bool(self.hardware_id):
            raise K3InputError(
                f"hosts.csv[{self.id}].hardware_id",
                "a unified-memory host names its hardware.csv row, and only it does",
            )

    @property
    def memory_bw_bytes_per_s(self) -> int:
        """:func:`dram_bandwidth_bytes_per_s` of this platform."""
        return dram_bandwidth_bytes_per_s(
            channels=self.memory_channels,
            mt_per_s=self.mt_per_s,
            bytes_per_transfer=self.bytes_per_transfer,
            sockets=self.sockets,
        )

    @property
    def bandwidth_basis(self) -> str:
        """The bandwidth as a sentence with its formula, for screens and JSON."""
        socket = f" × {self.sockets} sockets" if self.sockets > 1 else ""
        return (
            f"host {self.id}: {self.memory_channels} channels{socket} × {self.mt_per_s:,} MT/s × "
            f"{self.bytes_per_transfer} B = {self.memory_bw_bytes_per_s / GB:,.1f} GB/s peak ({self.source})"
        )


def _int_cell(row: dict[str, str], column: str) -> int:
    text = row.get(column, "")
    if not text.isascii() or not text.isdigit():
        raise K3InputError(
            f"hosts.csv[{row.get('id') or '?'}].{column}", f"{text!r} is not a whole number", "ASCII digits"
        )
    return int(text)


def _spec_from_row(row: dict[str, str]) -> HostSpec:
    unified = row["unified_memory"].lower()
    if unified not in ("true", "false"):
        raise K3InputError(f"hosts.csv[{row['id']}].unified_memory", f"{row['unified_memory']!r}", "true, false")
    return HostSpec(
        id=row["id"],
        name=row["name"],
        aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
        platform=row["platform"],
        memory_type=row["memory_type"],
        memory_channels=_int_cell(row, "memory_channels"),
        mt_per_s=_int_cell(row, "mt_per_s"),
        bytes_per_transfer=_int_cell(row, "bytes_per_transfer"),
        sockets=_int_cell(row, "sockets"),
        max_memory_bytes=_int_cell(row, "max_memory_gb") * GB,
        unified_memory=unified == "true",
        hardware_id=row["hardware_id"],
        source=row["source"],
        verification=row["verification"],
        notes=row["notes"],
    )


@lru_cache(maxsize=1)
def load_hosts() -> tuple[HostSpec, ...]:
    """Every row of ``data/hosts.csv`` as a :class:`HostSpec`, in file order."""
    rows = read_csv_rows(HOSTS_CSV)
    if rows and (missing := [c for c in HOST_COLUMNS if c not in rows[0]]):
        raise K3InputError("hosts.csv", f"missing columns {missing}", ", ".join(HOST_COLUMNS))
    return tuple(_spec_from_row(r) for r in rows)


def get_host(name: str | HostSpec) -> HostSpec:
    """A host by id, name or alias (case-insensitive; spaces, hyphens, underscores and dots
    ignored). An unknown name raises :class:`~k3lib.core.errors.K3InputError` listing the ids."""
    if isinstance(name, HostSpec):
        return name
    if not isinstance(name, str) or not name.strip():
        raise K3InputError("host", f"{name!r} is not a host id", "e.g. epyc-9005, xeon-5th-gen, desktop-ddr5-5600")
    hosts = load_hosts()
    key = normalise_name(name.strip().lower())
    for h in hosts:
        if key in {normalise_name(label.lower()) for label in (h.id, h.name, *h.aliases)}:
            return h
    raise K3InputError("host", f"{name!r} is not in data/hosts.csv", ", ".join(h.id for h in hosts))
