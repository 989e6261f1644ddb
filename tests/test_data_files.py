"""Schema checks over data/: every row carries its source; sizes are consistent."""

import csv
import json
from pathlib import Path

import guide_text
import pytest

from k3lib.core.models import builtin_models, get_model

DATA = Path(__file__).resolve().parent.parent / "data"


def rows(name):
    with open(DATA / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_weight_formats_bits_equal_block_bytes():
    for r in rows("weight_formats.csv"):
        assert r["source"], r["id"]
        if r["block_bytes"]:
            assert float(r["bits_per_weight"]) == pytest.approx(float(r["block_bytes"]) * 8 / float(r["block_weights"]))


def test_kv_dtypes_bytes_equal_block_bytes():
    for r in rows("kv_dtypes.csv"):
        assert r["source"], r["id"]
        assert float(r["bytes_per_element"]) == pytest.approx(float(r["block_bytes"]) / float(r["block_elements"]))


def test_required_formats_exist():
    from k3lib.core.precisions import get_kv_dtype, get_weight_format

    for name in [
        "BF16",
        "FP16",
        "FP8",
        "Q8_0",
        "Q6_K",
        "Q5_K_M",
        "Q4_K_M",
        "Q3_K_M",
        "Q2_K",
        "IQ1_S",
        "MXFP4",
        "NVFP4",
        "AWQ",
        "GPTQ",
        "Q8",
        "Q4",
        "Q2",
    ]:
        get_weight_format(name)
    for name in ["BF16", "FP16", "FP8", "INT4", "q8_0", "q4_0"]:
        get_kv_dtype(name)
    assert get_kv_dtype("q8_0").bytes_per_element == 34 / 32
    assert get_kv_dtype("q4_0").bytes_per_element == 18 / 32


def test_every_builtin_model_names_its_source():
    for m in builtin_models().values():
        src = m.source if m.kind == "architecture" else m.file
        assert src, m.id


def test_profile_quotes_are_in_the_guides():
    """Each profile quote is in its guide (the text where at hand, else the hashes in
    tests/fixtures/guide_quotes.json; see tests/guide_text.py)."""
    for pid in ("kimi-k3@guide-000", "kimi-k3@guide-004"):
        prof = get_model(pid)
        name = guide_text.GUIDE_FILE[prof.guide]
        assert prof.quotes, pid
        for key, quote in prof.quotes.items():
            assert guide_text.contains(name, quote), (pid, key, quote)


def test_no_data_file_cites_a_path_only_our_ci_has():
    """Sources a user sees are public origins, never a shared/ folder beside our checkout."""
    for path in [*DATA.glob("*.csv"), *DATA.glob("*.md"), *(DATA / "models").glob("*.json")]:
        assert "shared/" not in path.read_text(encoding="utf-8"), path.name


def test_model_documents_have_the_schema_tag():
    for path in (DATA / "models").glob("*.json"):
        assert json.loads(path.read_text())["schema"] == "k3lib.architecture/1"
