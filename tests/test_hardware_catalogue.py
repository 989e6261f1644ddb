"""Schema and source checks for data/hardware.csv, data/interconnects.csv, data/prices.csv,
spot checks against vendor figures typed by hand, and the loaders' APIs (issue 22)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from k3lib.cli import main
from k3lib.core.data import normalise_name
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import get_gpu, list_gpus
from k3lib.core.interconnects import (
    CSV_COLUMNS as IC_COLUMNS,
)
from k3lib.core.interconnects import (
    get_interconnect,
    link_between,
    links_for,
    load_interconnects,
)
from k3lib.core.prices import CSV_COLUMNS as PRICE_COLUMNS
from k3lib.core.prices import load_prices, price_per_gpu_hour

DATA = Path(__file__).resolve().parent.parent / "data"
URL = re.compile(r"https?://[^\s;,()]+")


def _rows(name: str) -> list[dict[str, str]]:
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------------ schema and sources


@pytest.mark.parametrize("name", ["hardware.csv", "interconnects.csv", "prices.csv"])
def test_every_row_cites_an_http_source(name):
    for row in _rows(name):
        assert URL.search(row["source"]), f"{name}: {row.get('id') or row.get('gpu_id')} has no http(s) URL"


@pytest.mark.parametrize("name", ["hardware.csv", "interconnects.csv"])
def test_ids_unique_and_aliases_unique_across_rows(name):
    owner: dict[str, str] = {}
    ids = [r["id"] for r in _rows(name)]
    assert len(ids) == len(set(ids))
    for row in _rows(name):
        for label in [row["id"], row["name"].lower()] + [a for a in row["aliases"].split(";") if a]:
            key = normalise_name(label)
            assert owner.setdefault(key, row["id"]) == row["id"], f"{label!r}: {owner[key]} and {row['id']}"


def test_hardware_numbers_positive_and_verification_honest():
    for row in _rows("hardware.csv"):
        assert float(row["memory_bw_gb_s"]) > 0, row["id"]
        for column in ("bf16_dense_tflops", "fp8_dense_tflops", "host_link_gb_s", "scale_up_link_gb_s"):
            assert row[column] == "" or float(row[column]) > 0, f"{row['id']}.{column}"
        # "retrieved" rows cite something other than recollection for every spec value
        if row["verification"] == "retrieved":
            assert URL.search(row["source"]), row["id"]


def test_interconnect_schema_and_numbers():
    with open(DATA / "interconnects.csv", newline="", encoding="utf-8") as fh:
        assert tuple(next(csv.reader(fh))) == IC_COLUMNS
    for row in _rows("interconnects.csv"):
        assert float(row["bandwidth_per_direction_gb_s"]) > 0, row["id"]
        if row["latency_us"]:
            assert float(row["latency_us"]) > 0 and row["latency_source"].strip(), row["id"]
    assert len(load_interconnects()) == len(_rows("interconnects.csv"))


def test_every_hardware_row_maps_to_known_interconnects_consistently():
    links = {r["id"]: r for r in _rows("interconnects.csv")}
    for row in _rows("hardware.csv"):
        up, out = row["scale_up_interconnect"], row["scale_out_interconnect"]
        assert out in links, f"{row['id']}: scale-out {out!r}"
        if row["unified_memory"] == "true":
            assert up == "", row["id"]  # one device: no GPU-to-GPU link inside
            continue
        assert up in links, f"{row['id']}: scale-up {up!r}"
        link_bw = float(links[up]["bandwidth_per_direction_gb_s"])
        if row["scale_up_link_gb_s"]:  # an NVLink / Infinity Fabric / bridge figure: the same number
            assert link_bw == float(row["scale_up_link_gb_s"]), row["id"]
        else:  # no GPU link: PCIe at the card's host-link rate
            assert links[up]["tier"] == "pcie", row["id"]
            assert link_bw == float(row["host_link_gb_s"]), row["id"]


def test_price_schema_dates_and_values():
    with open(DATA / "prices.csv", newline="", encoding="utf-8") as fh:
        assert tuple(next(csv.reader(fh))) == PRICE_COLUMNS
    gpu_ids = {g.id for g in list_gpus()}
    for row in _rows("prices.csv"):
        assert re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?", row["date"]), row
        assert float(row["usd_per_gpu_hour"]) > 0, row
        assert row["gpu_id"] in gpu_ids, row["gpu_id"]
        assert row["source"].startswith(("http://", "https://")), row
    assert len(load_prices()) == len(_rows("prices.csv"))


# ------------------------------------------------------------------ spot checks (typed from vendor pages)


@pytest.mark.parametrize(
    "gpu, bw_gb_s, mem_gib",
    [
        ("h100-sxm", 3350, 80),  # nvidia.com H100: 3.35 TB/s
        ("h200", 4800, 141),  # H200: 4.8 TB/s
        ("b200", 7700, 180),  # HGX B200 per GPU (aiconfigurator b200_sxm.yaml)
        ("rtx 4090", 1008, 24),  # GeForce RTX 4090: 1,008 GB/s
        ("rtx 5090", 1792, 32),
        ("rtx 3060", 360, 12),
        ("rtx 5080", 960, 16),
        ("m4 max", 546, 128),  # Apple: M4 Max up to 546 GB/s
        ("m4 pro", 273, 64),
        ("m2 ultra", 800, 192),
        ("mi300x", 5300, 192),
        ("dgx spark", 273, 128),
        ("arc pro b60", 456, 24),
    ],
)
def test_spot_figures(gpu, bw_gb_s, mem_gib):
    spec = get_gpu(gpu)
    assert spec.memory_bw_bytes_per_s == bw_gb_s * 10**9
    assert spec.memory_marketed_bytes == mem_gib * 2**30


def test_spot_compute_and_links():
    assert get_gpu("h100").fp8_dense_flops == pytest.approx(1979e12)
    assert get_gpu("rtx 6000 ada").bf16_dense_flops == pytest.approx(364e12)
    assert get_gpu("gb300").gpus_per_node == 4
    assert get_gpu("rtx 4060 ti 16gb").host_link_bytes_per_s == 16 * 10**9  # PCIe 4.0 x8
    assert get_interconnect("nvlink4").bandwidth_bytes_per_s == 450 * 10**9
    assert get_interconnect("ib-ndr-400").bandwidth_bytes_per_s == 50 * 10**9
    assert get_interconnect("infinity-fabric-mi300").pair_bandwidth_bytes_per_s == 64 * 10**9


# ------------------------------------------------------------------ the GPUs issue 22 names resolve


ISSUE_22_NAMES = [
    "a100",
    "h100",
    "h200",
    "h20",
    "h800",
    "b200",
    "b300",
    "gb200",
    "l40s",
    "l4",
    "rtx 2070",
    "rtx 2080 ti",
    "rtx 3060",
    "rtx 3070",
    "rtx 3080",
    "rtx 3090",
    "rtx 4060 ti 16gb",
    "rtx 4070",
    "rtx 4080",
    "rtx 4090",
    "rtx 5070",
    "rtx 5080",
    "rtx 5090",
    "rtx 4090 laptop",
    "rtx 5090 laptop",
    "rtx 6000 ada",
    "rtx pro 6000",
    "mi300x",
    "mi325x",
    "mi355x",
    "rx 7900 xtx",
    "radeon 780m",
    "radeon 8060s",
    "arc a770",
    "arc b580",
    "m1",
    "m1 max",
    "m1 ultra",
    "m2",
    "m2 max",
    "m2 ultra",
    "m3",
    "m3 max",
    "m3 ultra",
    "m4",
    "m4 pro",
    "m4 max",
    "dgx spark",
    "4090",
    "5090",
]


@pytest.mark.parametrize("name", ISSUE_22_NAMES)
def test_issue_22_gpu_names_resolve(name):
    assert get_gpu(name).id


# ------------------------------------------------------------------ loaders


def test_link_between_rule():
    assert [link_between("h100", across_nodes=x).id for x in (False, True)] == ["nvlink4", "ib-ndr-400"]
    assert link_between("a100-pcie-80gb", across_nodes=False, group_gpus=2).id == "nvlink-bridge-a100"
    assert link_between("a100-pcie-80gb", across_nodes=False, group_gpus=4).id == "pcie4-x16"
    assert link_between("gb200", across_nodes=True, group_gpus=72).id == "nvlink5-nvl72"
    assert link_between("gb200", across_nodes=True, group_gpus=144).id == "ib-xdr-800"
    assert link_between("rtx 4090", across_nodes=False).id == "pcie4-x16"
    assert link_between("m4 max", across_nodes=False) is None
    assert link_between("m4 max", across_nodes=True).id == "thunderbolt-5"
    assert links_for("mi300x")[0].id == "infinity-fabric-mi300"
    with pytest.raises(K3InputError) as info:
        link_between("h100", across_nodes=False, group_gpus=1)
    assert info.value.field == "group_gpus"


def test_bad_interconnect_cell_names_row_and_column(tmp_path):
    rows = _rows("interconnects.csv")
    rows[0]["bandwidth_per_direction_gb_s"] = "~300"
    path = tmp_path / "interconnects.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=IC_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(K3InputError, match=r"interconnects\.csv\[nvlink3\]\.bandwidth_per_direction_gb_s"):
        load_interconnects(path)


@pytest.mark.parametrize(
    "column, value",
    [
        ("date", "March 2026"),
        ("date", "2026-13"),
        ("usd_per_gpu_hour", "0"),
        ("source", "runpod.io"),
        ("offering", "cheap"),
    ],
)
def test_bad_price_cell_names_the_column(tmp_path, column, value):
    rows = _rows("prices.csv")
    rows[0][column] = value
    path = tmp_path / "prices.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=PRICE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(K3InputError) as info:
        load_prices(path)
    assert info.value.field.endswith(f".{column}")


def test_price_median_provider_and_user_override():
    rows = [
        r for r in _rows("prices.csv") if r["gpu_id"] == "h100-sxm" and r["offering"] in ("on-demand", "marketplace")
    ]
    values = sorted(float(r["usd_per_gpu_hour"]) for r in rows)
    n = len(values)
    expected = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    quote = price_per_gpu_hour("h100")
    assert quote.usd_per_gpu_hour == pytest.approx(expected)
    assert f"median of {n}" in quote.basis and len(quote.rows) == n
    aws = price_per_gpu_hour("h100", "aws")
    assert {r.provider for r in aws.rows} == {"aws"}
    assert price_per_gpu_hour("h100", user_price=2.0).usd_per_gpu_hour == 2.0
    assert price_per_gpu_hour("m4 max") is None
    with pytest.raises(K3InputError):
        price_per_gpu_hour("h100", user_price=-1)


# ------------------------------------------------------------------ CLI


def test_gpus_json_lists_ids_and_aliases(capsys):
    assert main(["gpus", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    by_id = {g["id"]: g for g in listing}
    assert len(by_id) == len(list_gpus())
    assert "4090" in by_id["rtx-4090"]["aliases"]
    assert "m4 max" in by_id["m4-max-128gb"]["aliases"]
    assert by_id["h100-sxm"]["scale_up_interconnect"] == "nvlink4"
