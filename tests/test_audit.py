"""The guide audit (issues 8 and 13): every claim of ``data/guide_claims.csv`` gets two verdicts
from code (against the guide's own inputs, for the real K3), and the values in
``data/audit_expectations.csv`` — each worked by hand, its arithmetic written in the row — are
what the audit computes. (The mutation test is ``tests/test_audit_mutation.py``.)

Hand inputs. Guide 000 (its "GB" are GiB: its KV formula divides by 1024^3): Q4 weights 325,
BF16 594, Q2 225; KV 262,144 B/token at BF16, half at FP8; activation 10; overhead 48 = 8 GPUs ×
6 GB; H100 = 80. Guide 004: weights cells (GB) and "Total = weights + KV cache (FP16) + 1GB".
K3's MLA cache: 24 layers × (512 + 64) × 2 B = 27,648 B/token; published unsloth GGUF sizes.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from nbrun import cell_output, run_notebook

from k3lib.core.errors import K3InputError
from k3lib.guides import audit
from k3lib.views import charts_audit, guide_audit
from k3lib.views.notebook import ParameterError

ROOT = Path(__file__).resolve().parent.parent
GiB = 2**30


@pytest.fixture(scope="module")
def verdicts() -> dict[str, audit.Verdict]:
    return {v.claim_id: v for v in audit.audit_all()}


def _csv(name: str) -> list[dict[str, str]]:
    with open(ROOT / "data" / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


EXPECTED = _csv("audit_expectations.csv")


@pytest.mark.parametrize("row", EXPECTED, ids=[f"{r['claim_id']}-{r['column']}" for r in EXPECTED])
def test_hand_worked_expectation(row, verdicts):
    v = verdicts[row["claim_id"]]
    value = getattr(v, f"{row['column']}_value")
    assert value == pytest.approx(float(row["expected_value"]), abs=float(row["abs_tolerance"]) + 1e-9), row[
        "arithmetic"
    ]
    assert getattr(v, f"{row['column']}_verdict") == row["expected_verdict"], row["arithmetic"]


def test_expectations_file_shape():
    assert len(EXPECTED) >= 30
    assert list(EXPECTED[0]) == [
        "claim_id",
        "column",
        "expected_value",
        "unit",
        "abs_tolerance",
        "expected_verdict",
        "arithmetic",
    ]
    ids = {r["claim_id"] for r in _csv("guide_claims.csv")}
    for r in EXPECTED:
        assert r["claim_id"] in ids and r["column"] in ("own", "real") and r["arithmetic"]
        assert r["expected_verdict"] in ("holds", "contradicted")


def test_every_claim_row_has_two_verdicts(verdicts):
    ids = [r["claim_id"] for r in _csv("guide_claims.csv")]
    assert len(ids) == len(set(ids)) == len(verdicts)
    for cid, v in verdicts.items():
        assert v.own_verdict in audit.COLUMN_VERDICTS and v.real_verdict in audit.COLUMN_VERDICTS, cid
        assert v.explanation and v.check, cid
        if v.verdict == "reproduced only under assumption":
            assert v.assumption, cid


def test_the_missed_claims_are_present(verdicts):
    for cid in (
        "g000-extra-loaded-bf16",
        "g000-extra-budget-q8-not-bf16",
        "g000-extra-naive-attention-mb",
        "g000-extra-tp-kv-shard",
        "g000-extra-faq-tp-kv-share",
        "g000-extra-batch-multiplies-kv",
        "g000-extra-oom-mid-generation",
        "g004-extra-vllm-native-vs-gguf",
    ):
        assert cid in verdicts
    vram = [c for c in audit.load_claims() if c.guide == "guide-004" and c.quantity == "available_vram"]
    assert len(vram) == 17


def test_constants_come_from_the_profiles():
    assert audit.G000_OVERHEAD_TOTAL == 48 * GiB and audit.G000_OVERHEAD_PER_GPU_RULE == 8 * GiB
    assert audit.G000_ACTIVATION == 10 * GiB and audit.G004_RAM_BANDWIDTH == 70 * 10**9
    assert audit.G004_ACTIVE_PARAMS == 104 * 10**9


def test_published_file_sizes():
    rows = {r["label"]: r for r in _csv("measured/kimi-k3-published.csv")}
    assert int(rows["UD-IQ1_S"]["bytes"]) == 594_040_923_616
    assert audit.published_bytes("UD-Q8_K_XL") == 1_561_157_884_384
    for r in rows.values():
        assert r["source"].startswith("https://") and "shared/" not in r["source"]
        assert int(r["bytes"]) > 0
    with pytest.raises(K3InputError, match="label"):
        audit.published_bytes("Q4_K_M")


def test_real_gpu_counts_are_whole_nodes():
    t = guide_audit.real_gpu_counts()
    assert (t["K3 real (H100s, whole nodes)"] % 8 == 0).all()
    assert (t["K3 real (H200s, whole nodes)"] % 8 == 0).all()


def test_tolerance_and_judge():
    tol = audit.Tolerance(rel=0.05, abs=0.5)
    assert tol.ok(100, 104.9) and not tol.ok(100, 106)
    assert tol.ok(5, 6.2, 6) and not tol.ok(5, 7, 6)  # a range claim
    claim = audit.get_claim("g000-worked-total")
    assert audit.judge(claim, 415, tol) == "holds" and audit.judge(claim, 1245, tol) == "contradicted"
    assert audit.judge(claim, None, tol) == "not checkable"
    assert audit.combine("holds", "contradicted") == "reproduced only under assumption"
    assert audit.combine("stated input", "contradicted") == "contradicted"


# ---------------------------------------------------------------- tables, filter, charts


def test_audit_table_and_counts():
    table = guide_audit.audit_table()
    assert len(table) == len(audit.load_claims())
    counts = guide_audit.verdict_counts(table)
    assert counts.loc["total", ("all", "own inputs")] == len(table)
    assert counts.loc["total", ("all", "real K3")] == len(table)
    assert (counts[("guide-000", "real K3")] + counts[("guide-004", "real K3")] == counts[("all", "real K3")]).all()


def test_filter_claims_is_the_widget_callback():
    table = guide_audit.audit_table()
    assert len(guide_audit.filter_claims(table)) == len(table)
    both = guide_audit.filter_claims(table, "guide-004", "contradicted", "own")
    assert set(both["own_verdict"]) == {"contradicted"} and "g004-total-4-bit-8k" in set(both["claim_id"])
    real = guide_audit.filter_claims(table, verdict="contradicted", column="real")
    assert set(real["real_verdict"]) == {"contradicted"}
    with pytest.raises(K3InputError, match="guide"):
        guide_audit.filter_claims(table, "guide-999")
    with pytest.raises(K3InputError, match="verdict"):
        guide_audit.filter_claims(table, verdict="maybe")
    with pytest.raises(K3InputError, match="column"):
        guide_audit.filter_claims(table, column="both")


def test_style_is_static_and_deterministic():
    table = guide_audit.filter_claims(guide_audit.audit_table(), "guide-000", "contradicted")
    html1 = guide_audit.style_verdicts(table).to_html()
    assert html1 == guide_audit.style_verdicts(table).to_html()
    assert guide_audit.COLUMN_TINTS["contradicted"] in html1 and "<script" not in html1


def test_explorer_starts_on_contradicted():
    pytest.importorskip("ipywidgets")
    box = guide_audit.claims_explorer(guide_audit.audit_table())
    g, v, c = box.children[0].children
    assert (g.value, v.value, c.value) == ("all", "contradicted", "either")


def test_validate_parameters():
    assert guide_audit.validate_parameters(guide="guide-000", verdict="contradicted", unit="GiB").unit == "GiB"
    with pytest.raises(ParameterError, match="^parameter guide: 'nosuch'"):
        guide_audit.validate_parameters(guide="nosuch")
    with pytest.raises(ParameterError, match="^parameter unit"):
        guide_audit.validate_parameters(unit="TB")


def test_use_instead_units_agree():
    gb = guide_audit.use_instead("GB").set_index("quantity")
    gib = guide_audit.use_instead("GiB").set_index("quantity")
    assert gb.loc["weights, BF16", "K3 real (GB)"] == 5559.0
    assert gb.loc["weights, BF16", "guide 000 (GB)"] == round(594 * GiB / 1e9, 1)  # 637.8: its GB are GiB
    assert gib.loc["KV cache, BF16, 1M", "guide 000 (GiB)"] == 256.0


def test_gguf_matches_and_table_check():
    g = guide_audit.gguf_matches().set_index("tier")
    assert g.loc["4-bit", "K3 file or type"] == "UD-Q4_K_XL"
    assert g.loc["8-bit", "bits per weight"] == 4.49  # 1561.2e9 x 8 / 2779.48e9
    rows = guide_audit.g004_table_check()
    assert len(rows) == 21
    bad = set(rows.loc[rows["stated − rule (GB)"].abs() > 0.1, "tier"])
    assert bad == {"1-bit", "2-bit", "4-bit", "8-bit"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: charts_audit.verdict_bars(guide_audit.audit_table()),
        lambda: charts_audit.guide_vs_real(guide_audit.use_instead("GiB"), unit="GiB"),
        lambda: charts_audit.bits_per_weight(guide_audit.gguf_matches()),
    ],
)
def test_charts_are_valid_specs(make):
    spec = make().to_dict()  # validates against the Vega-Lite schema
    assert "$schema" in spec


# ---------------------------------------------------------------- the notebook under papermill

NOTEBOOK = ROOT / "notebooks" / "07-guide-audit.ipynb"


def _run(tmp_path, **parameters):
    pytest.importorskip("papermill")
    return run_notebook(tmp_path, "07-guide-audit", **parameters)


_output = cell_output


def test_papermill_parameters_filter_the_table(tmp_path):
    nb = _run(tmp_path, guide="guide-004", verdict="contradicted", column="own", unit="GiB")
    expected = len(guide_audit.filter_claims(guide_audit.audit_table(), "guide-004", "contradicted", "own"))
    assert _output(nb, "len(audit.filter_claims(") == str(expected)
    assert "K3 real (GiB)" in _output(nb, "instead = audit.use_instead(", "text/plain")
    assert "own inputs" in _output(nb, "counts = audit.verdict_counts(")


def test_papermill_bad_parameter_stops_with_one_line(tmp_path):
    papermill = pytest.importorskip("papermill")
    import nbformat

    with pytest.raises(papermill.PapermillExecutionError) as info:
        _run(tmp_path, guide="guide-999")
    assert info.value.ename == "ParameterError"
    assert info.value.evalue.startswith("parameter guide: 'guide-999' is not a guide")
    nb = nbformat.read(tmp_path / "07-guide-audit-out.ipynb", as_version=4)
    idx = next(i for i, c in enumerate(nb.cells) if "audit.validate_parameters(" in c.source)
    errors = [o for o in nb.cells[idx].outputs if o.output_type == "error"]
    assert errors and errors[0].traceback == ["ParameterError: " + info.value.evalue]
    assert all(c.get("execution_count") is None for c in nb.cells[idx + 1 :] if c.cell_type == "code")
