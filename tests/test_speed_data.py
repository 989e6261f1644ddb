"""Schema and split checks for data/measured/speed.csv (public measured serving speeds).

The file is the measured side of the speed model (issue 22): every row is one figure a public source
printed, with the configuration it was measured on, a short verbatim excerpt and the URL. These tests
keep it loadable by the model code (columns, units, ids that resolve through k3lib's own catalogues)
and keep the held-aside split reproducible from the ids alone.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import re
from decimal import Decimal
from pathlib import Path

import pytest

from k3lib.core.hardware import get_gpu
from k3lib.core.hosts import get_host
from k3lib.core.models import builtin_models, get_model
from k3lib.core.precisions import get_kv_dtype, get_weight_format

SPEED_CSV = Path(__file__).resolve().parents[1] / "data" / "measured" / "speed.csv"

COLUMNS = [
    "id",
    "engine",
    "engine_version",
    "model",
    "weights",
    "kv_dtype",
    "gpu",
    "gpus",
    "tp",
    "pp",
    "ep",
    "host",
    "concurrency",
    "input_tokens",
    "output_tokens",
    "quantity",
    "value",
    "unit",
    "split",
    "evidence",
    "source",
    "date",
    "offload",
]
ENGINES = {"vllm", "sglang", "trtllm", "llama.cpp", "ik_llama.cpp", "ollama", "ktransformers"}
UNITS = {
    "decode_tokens_per_s_per_sequence": "tokens/s",
    "output_tokens_per_s_total": "tokens/s",
    "prefill_tokens_per_s": "tokens/s",
    "ttft_s": "s",
    "tpot_s": "s",
}
SPLITS = {"fit", "holdout"}
HOLDOUT_FRACTION_RANGE = (0.22, 0.40)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")


def _rows() -> list[dict[str, str]]:
    with SPEED_CSV.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        return list(reader)


ROWS = _rows()


def hardware_class(gpu: str) -> str:
    """datacenter / consumer / unified / cpu, from the catalogue's device class ('cpu' rows are CPU-only)."""
    if gpu == "cpu":
        return "cpu"
    device_class = get_gpu(gpu).device_class
    return {"datacenter GPU": "datacenter", "unified memory": "unified"}.get(device_class, "consumer")


def id_hash(row_id: str) -> int:
    return int(hashlib.sha256(row_id.encode("utf-8")).hexdigest(), 16)


def expected_splits(rows: list[dict[str, str]]) -> dict[str, str]:
    """The split rule of data/measured/README.md, recomputed from the ids."""
    split = {r["id"]: ("holdout" if id_hash(r["id"]) % 10 < 3 else "fit") for r in rows}
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for r in rows:
        groups[(r["engine"], hardware_class(r["gpu"]))].append(r["id"])
    for ids in groups.values():
        if len(ids) >= 3 and not any(split[i] == "holdout" for i in ids):
            split[min(ids, key=id_hash)] = "holdout"
    return split


def _numbers(text: str) -> list[Decimal]:
    # thousands separators ("1,881", "5,719") are removed before reading numbers
    cleaned = THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    return [Decimal(m) for m in NUMBER.findall(cleaned)]


def _shows(evidence_number: Decimal, value: Decimal) -> bool:
    """True when the evidence number is the value, or the value rounded to the evidence's decimals."""
    exponent = evidence_number.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    half_ulp = Decimal(1).scaleb(-places) / 2
    return abs(evidence_number - value) <= half_ulp


def test_file_has_rows_engines_and_hardware():
    assert len(ROWS) >= 120
    assert len({r["engine"] for r in ROWS}) >= 5
    assert len({(r["gpu"], r["host"]) for r in ROWS}) >= 12


def test_ids_are_unique_and_slug_like():
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids))
    for i in ids:
        assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", i), i


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_row_schema(row):
    assert row["engine"] in ENGINES
    assert row["quantity"] in UNITS
    assert row["unit"] == UNITS[row["quantity"]]
    assert row["split"] in SPLITS
    value = Decimal(row["value"])
    assert value > 0
    assert re.fullmatch(r"https?://\S+", row["source"]), row["source"]
    assert "shared/" not in row["source"] and "/work/" not in row["source"]
    assert row["evidence"].strip() and len(row["evidence"]) <= 200
    assert row["date"] == "" or re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", row["date"])
    # configuration: integers where stated
    assert int(row["concurrency"]) >= 1
    gpus = int(row["gpus"])
    for col in ("tp", "pp", "ep", "input_tokens", "output_tokens"):
        if row[col] != "":
            assert int(row[col]) >= 0, col
    if row["tp"] != "":
        assert 1 <= int(row["tp"]) <= max(gpus, 1)
    if row["quantity"] == "prefill_tokens_per_s" and row["input_tokens"] != "":
        assert int(row["input_tokens"]) > 0


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_evidence_contains_the_number(row):
    value = Decimal(row["value"])
    scales = [Decimal(1)]
    if row["unit"] == "s":
        scales.append(Decimal(1000))  # the sources print TTFT/TPOT in milliseconds
    numbers = _numbers(row["evidence"])
    assert any(_shows(n, value * s) for n in numbers for s in scales), (row["value"], row["evidence"])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_ids_resolve_through_k3lib(row):
    builtins = set(builtin_models())
    if row["model"] in builtins or "/" not in row["model"]:
        # a row that does not name a Hugging Face repo claims to be a built-in model
        assert get_model(row["model"]).id == row["model"]
    else:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["model"]), row["model"]
    get_weight_format(row["weights"])
    if row["kv_dtype"]:
        get_kv_dtype(row["kv_dtype"])
    if row["gpu"] == "cpu":
        assert int(row["gpus"]) == 0
        assert row["host"], "CPU-only rows name their host"
    else:
        assert get_gpu(row["gpu"]).id == row["gpu"]
        assert int(row["gpus"]) >= 1
    if row["host"]:
        assert get_host(row["host"]).id == row["host"]


def test_split_is_reproduced_from_ids():
    expected = expected_splits(ROWS)
    wrong = [r["id"] for r in ROWS if r["split"] != expected[r["id"]]]
    assert not wrong, wrong


def test_holdout_fraction_and_coverage():
    holdout = sum(r["split"] == "holdout" for r in ROWS)
    low, high = HOLDOUT_FRACTION_RANGE
    assert low <= holdout / len(ROWS) <= high
    groups: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for r in ROWS:
        groups[(r["engine"], hardware_class(r["gpu"]))].append(r["split"])
    for key, splits in groups.items():
        if len(splits) >= 3:
            assert "holdout" in splits, key
            assert "fit" in splits, key


def test_moe_on_several_gpus_is_represented():
    multi = [r for r in ROWS if r["model"] in ("deepseek-r1", "deepseek-v3") and int(r["gpus"]) >= 8]
    assert len(multi) >= 40
    assert {"h200-sxm", "mi300x"} <= {r["gpu"] for r in multi}
    assert max(int(r["concurrency"]) for r in multi) >= 128
