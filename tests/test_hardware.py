"""Tests for data/hardware.csv and k3lib.core.hardware.

Expected values are typed in by hand from the sources (guide 004's offload
table, NVIDIA's H100/H200 figures), not computed from the CSV.
"""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

import pytest

from k3lib.core.data import normalise_name
from k3lib.core.errors import K3InputError, UnknownNameError
from k3lib.core.hardware import (
    CSV_COLUMNS,
    DEVICE_CLASSES,
    VERIFICATION_LEVELS,
    GPUSpec,
    get_gpu,
    list_gpus,
    load_hardware,
)

CSV_PATH = Path(__file__).resolve().parent.parent / "data" / "hardware.csv"
GiB_HAND = 1_073_741_824  # 2**30, typed by hand


def _rows() -> list[dict[str, str]]:
    with open(CSV_PATH, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------------ schema of the CSV


def test_csv_header_is_the_documented_schema():
    with open(CSV_PATH, newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert tuple(header) == CSV_COLUMNS


def test_numeric_columns_carry_units_in_their_names():
    numeric = [
        c
        for c in CSV_COLUMNS
        if c.startswith(("memory_marketed_gib", "memory_usable_gib")) or c.endswith(("_gb_s", "_tflops", "_usd"))
    ]
    unit_suffix = re.compile(r"_(gib|gb_s|tflops|usd)$")
    assert len(numeric) == 8
    for column in numeric:
        assert unit_suffix.search(column), column
    # every column that holds numbers in the file is one of those
    for row in _rows():
        for column, value in row.items():
            if column in ("memory_marketed_label", "gpus_per_node"):  # a label; a count of devices
                continue
            if re.fullmatch(r"-?\d+(\.\d+)?", value or "") and column not in numeric:
                pytest.fail(f"{row['id']}.{column} holds a number but has no unit in its name")


def test_every_row_has_id_name_source_and_positive_memory_and_bandwidth():
    rows = _rows()
    assert len(rows) >= 30
    for row in rows:
        for column in ("id", "name", "vendor", "source", "verification", "memory_marketed_label"):
            assert row[column].strip(), f"{row['id']!r}: empty {column}"
        assert re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", row["id"]), row["id"]
        assert float(row["memory_marketed_gib"]) > 0, row["id"]
        assert float(row["memory_bw_gb_s"]) > 0, row["id"]
        assert row["device_class"] in DEVICE_CLASSES, row["id"]
        assert row["verification"] in VERIFICATION_LEVELS, row["id"]
        assert row["unified_memory"] in ("true", "false"), row["id"]


def test_numbers_are_plain():
    numeric = (
        "memory_marketed_gib",
        "memory_usable_gib",
        "memory_bw_gb_s",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "host_link_gb_s",
        "scale_up_link_gb_s",
        "price_usd",
    )
    for row in _rows():
        for column in numeric:
            value = row[column]
            assert value == "" or re.fullmatch(r"\d+(\.\d+)?", value), f"{row['id']}.{column} = {value!r}"


def test_usable_memory_has_a_source_and_does_not_exceed_marketed():
    for row in _rows():
        if row["memory_usable_gib"]:
            assert row["memory_usable_source"].strip(), row["id"]
            assert float(row["memory_usable_gib"]) <= float(row["memory_marketed_gib"]), row["id"]


def test_unified_memory_rows_have_no_host_link_and_prices_have_a_source():
    for row in _rows():
        if row["unified_memory"] == "true":
            assert row["host_link_gb_s"] == "", row["id"]
        if row["price_usd"]:
            assert row["price_source"].strip(), row["id"]


def test_ids_unique():
    ids = [r["id"] for r in _rows()]
    assert len(ids) == len(set(ids))


def test_aliases_lowercase_and_unique_across_rows_even_loosely():
    owner: dict[str, str] = {}
    loose_owner: dict[str, str] = {}
    for row in _rows():
        labels = [row["id"], row["name"].lower()] + [a for a in row["aliases"].split(";") if a]
        for alias in row["aliases"].split(";"):
            assert alias == alias.strip().lower() and alias, f"{row['id']}: alias {alias!r}"
        for label in labels:
            assert owner.setdefault(label, row["id"]) == row["id"], f"{label!r} in {owner[label]} and {row['id']}"
            key = normalise_name(label)
            assert loose_owner.setdefault(key, row["id"]) == row["id"], (
                f"{label!r} collides with {loose_owner[key]} once spaces/hyphens are ignored"
            )


# ------------------------------------------------------------------ loader


def test_load_hardware_converts_units_and_is_cached():
    specs = load_hardware()
    assert len(specs) == len(_rows())
    assert load_hardware() is specs
    assert load_hardware(CSV_PATH) is specs
    assert list_gpus() == list(specs)
    assert all(isinstance(s, GPUSpec) for s in specs)


@pytest.mark.parametrize(
    "name", ["h100", "H100-SXM", "h100 sxm5", "H100 SXM5 80GB", "h100_sxm", "NVIDIA H100", "H100 80 GB"]
)
def test_h100_names_resolve_to_the_sxm_spec(name):
    spec = get_gpu(name)
    assert spec.id == "h100-sxm"
    assert spec.memory_marketed_bytes == 80 * GiB_HAND == 85_899_345_920
    assert spec.memory_bw_bytes_per_s == 3350e9
    assert spec.bf16_dense_flops == pytest.approx(989e12)
    assert spec.host_link_bytes_per_s == 64e9
    assert spec.scale_up_link_bytes_per_s == 450e9
    assert spec.unified_memory is False


def test_h100_usable_memory_from_vllm_logs():
    spec = get_gpu("h100")
    assert spec.memory_bytes("usable") == round(79.19 * GiB_HAND)
    assert spec.memory_bytes("marketed") == 80 * GiB_HAND
    assert spec.has_usable_memory


def test_usable_falls_back_to_marketed_when_unknown():
    spec = get_gpu("h100 pcie")
    assert spec.memory_usable_bytes is None and not spec.has_usable_memory
    assert spec.memory_bytes("usable") == spec.memory_bytes("marketed") == 80 * GiB_HAND


@pytest.mark.parametrize(
    "name, usable_gib, marketed_gib, bw_gb_s",
    [
        ("Tesla T4", 14.58, 16, 320),  # torch on a T4: "a total capacty of 14.58 GiB" (datawhalechina/self-llm#162)
        ("nvidia a10", 22.18, 24, 600),  # torch on an A10: "a total capacity of 22.18 GiB" (OpenBMB/MiniCPM-V#640)
    ],
)
def test_inference_cards_usable_memory_from_public_logs(name, usable_gib, marketed_gib, bw_gb_s):
    spec = get_gpu(name)
    assert spec.memory_bytes("usable") == round(usable_gib * GiB_HAND)
    assert spec.memory_marketed_bytes == marketed_gib * GiB_HAND
    assert spec.memory_bw_bytes_per_s == bw_gb_s * 1e9


def test_a10g_is_its_own_row_without_a_usable_figure():
    a10g, a10 = get_gpu("a10g"), get_gpu("a10")
    assert a10g.id == "a10g" and a10.id == "a10"
    assert a10g.memory_bw_bytes_per_s == a10.memory_bw_bytes_per_s == 600e9
    assert not a10g.has_usable_memory and a10g.gpus_per_node == 8


def test_memory_basis_is_validated():
    with pytest.raises(K3InputError, match="basis"):
        get_gpu("h100").memory_bytes("physical")


def test_h200_marketed_and_usable():
    spec = get_gpu("H200 141 GB")
    assert spec.id == "h200-sxm"
    assert spec.memory_marketed_bytes == 141 * GiB_HAND
    assert spec.memory_bytes("usable") == round(140.4 * GiB_HAND)
    assert spec.memory_bw_bytes_per_s == 4800e9


def test_guide_000_devices_resolve():
    assert get_gpu("H100 80 GB").id == "h100-sxm"
    assert get_gpu("H200 141 GB").id == "h200-sxm"
    mac = get_gpu("Mac Studio 512 GB")
    assert mac.id == "m3-ultra-512gb" and mac.unified_memory
    assert mac.memory_marketed_bytes == 512 * GiB_HAND


def test_gb200_host_link_is_nvlink_c2c():
    assert get_gpu("gb200").host_link_bytes_per_s == 450e9


def test_unknown_gpu_raises_with_suggestion():
    with pytest.raises(UnknownNameError) as info:
        get_gpu("h1000")
    err = info.value
    assert isinstance(err, ValueError)
    assert "gpu" in str(err)
    assert "h100" in str(err)
    assert "h100" in err.close_matches


@pytest.mark.parametrize("bad", ["", "   ", None, 100])
def test_empty_or_non_string_name_is_an_input_error(bad):
    with pytest.raises(K3InputError, match="gpu"):
        get_gpu(bad)


# Guide 004's offload table, typed in as written: (device, VRAM GB, price USD or None).
GUIDE_004_OFFLOAD_TABLE = [
    ("Ryzen AI Max+ 395 128GB", 128, 3913),
    ("DGX Spark 128GB", 128, 8223),
    ("A100 40GB PCIe", 40, None),
    ("CMP 170HX 40GB", 40, None),
    ("GeForce RTX 4090 48GB", 48, None),
    ("Radeon PRO W7900", 48, None),
    ("RTX PRO 5000 Blackwell 48GB", 48, None),
    ("CMP 170HX 64GB", 64, None),
    ("Instinct MI210", 64, None),
    ("RTX PRO 5000 Blackwell 72GB", 72, None),
    ("RTX PRO 6000D", 84, None),
    ("RTX PRO 6000 Blackwell", 96, None),
    ("Mac Studio M4 Max 128GB", 128, None),
    ("Mac Studio M5 Max 128GB", 128, None),
    ("MacBook Pro M4 Max 128GB", 128, None),
    ("MacBook Pro M5 Max 128GB", 128, None),
    ("Mac Studio M3 Ultra 512GB", 512, None),
]


@pytest.mark.parametrize("device, vram_gb, price_usd", GUIDE_004_OFFLOAD_TABLE)
def test_guide_004_offload_table_devices(device, vram_gb, price_usd):
    spec = get_gpu(device)
    assert spec.memory_marketed_bytes == vram_gb * GiB_HAND
    if price_usd is not None:
        assert spec.price_usd == price_usd
    assert any(g.startswith("guide-004") for g in spec.guide_mentions), spec.id


def test_guide_004_devices_are_distinct_rows():
    ids = [get_gpu(device).id for device, _, _ in GUIDE_004_OFFLOAD_TABLE]
    assert len(ids) == len(set(ids)) == 17


def test_modded_and_mining_cards_say_so():
    assert "rework" in get_gpu("GeForce RTX 4090 48GB").notes
    for name in ("CMP 170HX 40GB", "CMP 170HX 64GB"):
        spec = get_gpu(name)
        assert spec.device_class == "mining GPU"
        assert "8 GB" in spec.notes and spec.verification == "guide-only"


# ------------------------------------------------------------------ GPUSpec validation


def _valid_kwargs() -> dict:
    return dict(
        id="test-gpu",
        name="Test GPU",
        vendor="Acme",
        device_class="datacenter GPU",
        memory_marketed_bytes=80 * GiB_HAND,
        memory_bw_bytes_per_s=3_350 * 10**9,
        unified_memory=False,
        source="hand-typed",
        verification="retrieved",
    )


def test_gpuspec_accepts_valid_values_and_is_frozen():
    spec = GPUSpec(**_valid_kwargs())
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "field_name, value",
    [
        ("memory_marketed_bytes", 0),
        ("memory_marketed_bytes", -1),
        ("memory_marketed_bytes", 80.5),
        ("memory_usable_bytes", 0),
        ("memory_usable_bytes", 81 * GiB_HAND),
        ("memory_bw_bytes_per_s", 0),
        ("bf16_dense_flops", -1.0),
        ("bf16_dense_flops", float("nan")),
        ("host_link_bytes_per_s", 0),
        ("scale_up_link_bytes_per_s", -5),
        ("price_usd", 0),
        ("device_class", "toaster"),
        ("verification", "trust me"),
        ("source", ""),
        ("id", "H100 SXM"),
        ("unified_memory", "yes"),
        ("gpus_per_node", 0),
        ("gpus_per_node", 2.5),
        ("gpus_per_node", None),
    ],
)
def test_gpuspec_rejects_bad_values_naming_the_field(field_name, value):
    kwargs = _valid_kwargs() | {field_name: value}
    with pytest.raises(K3InputError) as info:
        GPUSpec(**kwargs)
    assert info.value.field == field_name


def test_bad_csv_cell_names_row_and_column(tmp_path):
    rows = _rows()
    rows[0]["memory_bw_gb_s"] = "~3350"
    path = tmp_path / "hardware.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(K3InputError, match=r"hardware\.csv\[h100-sxm\]\.memory_bw_gb_s"):
        load_hardware(path)


# ------------------------------------------------------------------ GPUs per node (issue 12)


@pytest.mark.parametrize(
    "gpu, per_node",
    [
        ("h100-sxm", 8),  # DGX/HGX H100: 8 SXM5 GPUs per baseboard
        ("h200-sxm", 8),  # HGX H200 8-GPU; MLPerf system "H200-SXM-141GBx8"
        ("b200", 8),  # HGX/DGX B200: 1,440 GB per 8 GPUs
        ("a100-sxm-80gb", 8),
        ("mi300x", 8),  # MLPerf system "8xMI300X_2xEPYC-9374F"
        ("gb200", 4),  # NVL72 compute tray: 2 superchips x 2 GPUs
        ("rtx-4090", 1),  # a desktop card
        ("m3-ultra-512gb", 1),  # a unified-memory computer is one device
        ("dgx-spark", 1),
    ],
)
def test_gpus_per_node_typed_from_the_sources(gpu, per_node):
    assert get_gpu(gpu).gpus_per_node == per_node


def test_every_row_states_gpus_per_node_with_a_source():
    for row in _rows():
        assert re.fullmatch(r"[1-9]\d*", row["gpus_per_node"]), row["id"]
        assert row["gpus_per_node_source"].strip(), row["id"]
        spec = get_gpu(row["id"])
        assert spec.gpus_per_node == int(row["gpus_per_node"])
        assert spec.gpus_per_node_source == row["gpus_per_node_source"]
    # consumer cards and unified-memory machines are one device per machine
    for spec in list_gpus():
        if spec.device_class in ("consumer GPU", "unified memory"):
            assert spec.gpus_per_node == 1, spec.id


def test_no_cell_cites_a_path_that_exists_only_beside_our_checkout():
    for row in _rows():
        for column, value in row.items():
            assert "shared/" not in value, f"{row['id']}.{column}"


@pytest.mark.parametrize("cell", ["8.5", "0", "", "eight"])
def test_bad_gpus_per_node_cell_names_row_and_column(tmp_path, cell):
    rows = _rows()
    rows[0]["gpus_per_node"] = cell
    path = tmp_path / "hardware.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(K3InputError, match=r"hardware\.csv\[h100-sxm\]\.gpus_per_node"):
        load_hardware(path)
