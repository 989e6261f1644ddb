"""The guide audit (issue 8): every claim of ``data/guide_claims.csv`` gets a verdict from
code, the verdicts match ``data/audit_expectations.csv``, and the headline verdicts carry
the numbers worked out by hand below from the guides' own inputs.

Hand inputs. Guide 000 (its "GB" are GiB: its KV formula divides by 1024^3): Q4 weights
325, BF16 594, Q2 225; KV 262,144 B/token at BF16, half at FP8; activation 10; overhead
48 = 8 GPUs × 6 GB; H100 = 80. Guide 004: weights cells (GB) and "Total = weights + KV
cache (FP16) + 1GB". K3's MLA cache: 24 layers × (512 + 64) × 2 B = 27,648 B/token.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from k3lib.guides import audit

from k3lib.views import charts_audit
from k3lib.core.errors import K3InputError
from k3lib.views.notebook import ParameterError
from nbrun import run_notebook, cell_output  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GiB = 2**30
K3_KV_BF16 = 24 * (512 + 64) * 2   # 27,648 B/token
K3_PARAMS = 2_779.48e9             # K3's total parameters, from its config


@pytest.fixture(scope="module")
def verdicts() -> dict[str, audit.Verdict]:
    return {v.claim_id: v for v in audit.audit_all()}


def _csv_ids(name: str, column: str = "claim_id") -> list[str]:
    with open(ROOT / "data" / name, newline="", encoding="utf-8") as fh:
        return [r[column] for r in csv.DictReader(fh)]


# ---------------------------------------------------------------- every row, every run


def test_every_claim_row_has_exactly_one_verdict(verdicts):
    ids = _csv_ids("guide_claims.csv")
    assert len(ids) == len(set(ids)) == len(verdicts)
    assert set(ids) == set(verdicts)
    for cid, v in verdicts.items():
        assert v.verdict in audit.VERDICTS, cid
        assert v.explanation, cid
        assert v.check, cid
        if v.verdict == "reproduced only under assumption":
            assert v.assumption, cid


def test_every_claim_has_a_registered_check():
    for claim in audit.load_claims():
        name, fn = audit.checker_for(claim)
        assert callable(fn) and name


def test_stored_expectations_match(verdicts):
    expected = audit.read_expectations()
    assert set(expected) == set(verdicts), "data/audit_expectations.csv and guide_claims.csv list different claims"
    changed = {cid: (expected[cid], v.verdict) for cid, v in verdicts.items() if v.verdict != expected[cid]}
    assert not changed, ("verdicts changed; if deliberate, run `python -m k3lib.guides.audit --write-expectations`: "
                         f"{changed}")


def test_expectations_file_schema():
    with open(ROOT / "data" / "audit_expectations.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["claim_id", "expected_verdict"]
    assert all(r["expected_verdict"] in audit.VERDICTS for r in rows)
    assert [r["claim_id"] for r in rows] == _csv_ids("guide_claims.csv")  # same order as the claims


def test_verdicts_are_recomputed_not_read():
    """A claim with a changed value gets a changed verdict: nothing is looked up."""
    claim = audit.get_claim("g000-worked-total")
    wrong = audit.Claim(**{**claim.__dict__, "value": 450.0, "value_text": "450"})
    assert audit.audit_claim(claim).verdict == "reproduced"
    assert audit.audit_claim(wrong).verdict == "contradicted"


def test_verdict_validation():
    with pytest.raises(K3InputError, match="assumption"):
        audit.Verdict("x", "reproduced only under assumption", 1.0, "GiB", "exact", "", "why")
    with pytest.raises(K3InputError, match="verdict"):
        audit.Verdict("x", "probably", 1.0, "GiB", "exact", "", "why")
    with pytest.raises(K3InputError, match="explanation"):
        audit.Verdict("x", "contradicted", 1.0, "GiB", "exact", "", "")


# ---------------------------------------------------------------- the headline verdicts


def test_worked_example_reproduced_415(verdicts):
    kv = 131_072 * 262_144 / GiB            # "131,072 bytes × 262,144 / 1024^3 = 32 GB"
    total = 325 + kv + 10 + 48
    assert total == 415
    v = verdicts["g000-worked-total"]
    assert v.verdict == "reproduced"
    assert v.computed_value == total
    assert v.figure("kv_gib") == 32 and v.figure("overhead_gib") == 48
    assert verdicts["g000-worked-kv"].verdict == "reproduced"


def test_fp8_kv_does_not_drop_10_gpus_to_8(verdicts):
    kv_fp8_512k = 262_144 / 2 * 524_288 / GiB   # 64
    need = 594 + kv_fp8_512k + 10 + 48
    assert need == 716 and need > 8 * 80
    v = verdicts["g000-fp8kv-gpus-after"]
    assert v.verdict == "contradicted"
    assert v.figure("need_on_8_gib") == 716
    assert v.figure("capacity_8_gib") == 640
    # with 6 GB per GPU: 668 + 6n <= 80n  ->  n >= 9.03  ->  10 GPUs, not 8
    assert v.computed_value == 10
    assert "716" in v.explanation and "640" in v.explanation


def test_guide_004_8bit_weights_contradicted(verdicts):
    bits = 1561.2e9 * 8 / K3_PARAMS
    assert round(bits, 2) == 4.49                 # a 4.5-bit file, not 8-bit
    own_weights_from_total = 2903.6 - K3_KV_BF16 * 8192 / GiB - 1
    v = verdicts["g004-weights-8-bit"]
    assert v.verdict == "contradicted"
    assert v.computed_value == pytest.approx(bits, abs=0.01)
    assert v.figure("row_total_implied_weights_gb") == pytest.approx(own_weights_from_total, abs=0.01)  # 2,902.39
    assert 1561.2 < 1889.3                      # smaller than the 5-bit row of the same table
    assert "5-bit" in v.explanation


def test_guide_004_4bit_8k_total_contradicted(verdicts):
    rule = 1508.7 + K3_KV_BF16 * 8192 / GiB + 1   # the table's own "weights + KV (FP16) + 1GB"
    assert round(rule, 2) == 1509.91
    v = verdicts["g004-total-4-bit-8k"]
    assert v.verdict == "contradicted"
    assert v.computed_value == pytest.approx(rule, abs=1e-6)
    assert v.figure("unexplained_gb") == pytest.approx(1561.9 - rule, abs=1e-6)   # 51.99 GB
    assert round(1561.9 - rule, 1) == 52.0


def test_guide_004_table_rule_holds_for_its_consistent_rows(verdicts):
    """3-bit, 5-bit and FP16 follow W + 27,648·T/2^30 + 1 to the printed digit."""
    for tier, w, cells in [("3-bit", 1341.7, (1342.9, 1343.5, 1346.0)), ("5-bit", 1889.3, (1890.5, 1891.1, 1893.7)),
                           ("fp16", 5476.2, (5477.4, 5478.0, 5480.6))]:
        for ctx, stated in zip(("8k", "32k", "128k"), cells):
            t = {"8k": 8192, "32k": 32768, "128k": 131072}[ctx]
            assert abs(stated - (w + K3_KV_BF16 * t / GiB + 1)) <= 0.1
            assert verdicts[f"g004-total-{tier}-{ctx}"].verdict == "reproduced"


def test_48gb_overhead_reused_for_4_to_6_gpus(verdicts):
    six = verdicts["g000-worked-6x-headroom"]
    assert 6 * 80 - (325 + 32 + 10 + 48) == 65
    assert six.verdict == "reproduced only under assumption" and six.computed_value == 65
    assert "48" in six.assumption and "6 GPUs" in six.assumption

    five = verdicts["g000-worked-5x-over"]
    assert (325 + 32 + 10 + 48) - 5 * 80 == 15
    assert five.verdict == "reproduced only under assumption" and five.computed_value == 15
    assert "5 GPUs" in five.assumption
    # with the example's own 6 GB per GPU it fits: 400 − (325 + 32 + 10 + 30) = 3 GiB spare
    assert five.figure("with_6_per_gpu") == -(400 - (325 + 32 + 10 + 5 * 6)) == -3

    four = verdicts["g000-min-viable-headroom"]
    kv_fp8_64k = 131_072 * 65_536 / GiB            # 8
    assert 4 * 80 - (225 + kv_fp8_64k + 10 + 48) == 29  # "~28"
    assert four.verdict == "reproduced only under assumption" and four.computed_value == 29
    assert "4 GPUs" in four.assumption

    assert verdicts["g000-worked-overhead"].verdict == "reproduced only under assumption"


def test_kv_per_token_contradicted_by_k3(verdicts):
    for cid, claimed, real in [("g000-kv-bytes-bf16", 262_144, K3_KV_BF16), ("g000-kv-bytes-fp8", 131_072, K3_KV_BF16 / 2),
                               ("g000-kv-bytes-int4", 65_536, K3_KV_BF16 / 4)]:
        v = verdicts[cid]
        assert v.verdict == "contradicted" and v.computed_value == real
        assert round(claimed / real, 2) == 9.48
    assert verdicts["g000-kv-bytes-bf16-256kb"].computed_value == 27.0   # 27,648 B = 27 KiB


def test_bf16_594_matches_no_bf16_figure(verdicts):
    v = verdicts["g000-weights-bf16"]
    assert v.verdict == "contradicted"
    assert v.figure("real_bf16_gb") == pytest.approx(K3_PARAMS * 2 / 1e9, rel=1e-5)   # 5,559 GB
    assert v.figure("implied_bits_per_weight") == pytest.approx(594 * GiB * 8 / K3_PARAMS, rel=1e-5)  # 1.84
    assert verdicts["g000-unique-params-one-tenth"].verdict == "contradicted"


def test_offload_split_adds_up_to_q4k_not_to_the_4bit_file(verdicts):
    experts = 92 * 896 * 3 * 3584 * 3072 * 4.5 / 8 / 1e9      # 1,531.5 GB
    ram = verdicts["g004-offload-ram-q4"]
    assert ram.verdict == "reproduced only under assumption"
    assert ram.computed_value == pytest.approx(experts)
    assert 33 + 1531 - 1508.7 == pytest.approx(55.3)            # more than the whole 4-bit weights cell
    split = audit.offload_split()
    assert split.iloc[2]["size (GB)"] == 1564.0
    for cid in ("g004-offload-speed-ryzen", "g004-offload-tps-dgx-spark-128gb", "g004-offload-tps-mac-studio-m3-ultra-512gb"):
        assert verdicts[cid].verdict == "contradicted"   # unified memory is all the RAM there is


def test_not_checkable_rows_say_why(verdicts):
    nc = [v for v in verdicts.values() if v.verdict == "not checkable"]
    assert nc
    assert all(len(v.explanation) > 30 for v in nc)


# ---------------------------------------------------------------- tables, filter, charts


def test_audit_table_and_counts():
    table = audit.audit_table()
    assert len(table) == len(audit.load_claims())
    assert table["verdict"].isin(audit.VERDICTS).all()
    counts = audit.verdict_counts(table)
    assert counts.loc["all", "total"] == len(table)
    assert list(counts.columns) == [*audit.VERDICTS, "total"]
    assert counts.loc["guide-000", "total"] + counts.loc["guide-004", "total"] == len(table)


def test_filter_claims_is_the_widget_callback():
    table = audit.audit_table()
    assert len(audit.filter_claims(table)) == len(table)
    g4 = audit.filter_claims(table, "guide-004")
    assert set(g4["guide"]) == {"guide-004"}
    both = audit.filter_claims(table, "guide-004", "contradicted")
    assert set(both["verdict"]) == {"contradicted"} and "g004-total-4-bit-8k" in set(both["claim_id"])
    cols = audit.filter_claims(table, verdict="reproduced", columns=["claim_id", "verdict"])
    assert list(cols.columns) == ["claim_id", "verdict"]
    with pytest.raises(K3InputError, match="guide"):
        audit.filter_claims(table, "guide-999")
    with pytest.raises(K3InputError, match="verdict"):
        audit.filter_claims(table, verdict="maybe")


def test_style_is_static_and_deterministic():
    table = audit.filter_claims(audit.audit_table(), "guide-000", "contradicted")
    html1 = audit.style_verdicts(table).to_html()
    html2 = audit.style_verdicts(table).to_html()
    assert html1 == html2
    assert audit.VERDICT_TINTS["contradicted"] in html1
    assert "<script" not in html1


def test_explorer_builds_with_dropdowns():
    pytest.importorskip("ipywidgets")
    box = audit.claims_explorer(audit.audit_table(), guide="guide-004")
    g, v = box.children[0].children
    assert g.value == "guide-004" and v.value == "all"
    assert list(v.options) == ["all", *audit.VERDICTS]


def test_validate_parameters():
    assert audit.validate_parameters(guide="guide-000", verdict="contradicted", unit="GiB").unit == "GiB"
    with pytest.raises(ParameterError, match="^parameter guide: 'nosuch'"):
        audit.validate_parameters(guide="nosuch")
    with pytest.raises(ParameterError, match="^parameter unit"):
        audit.validate_parameters(unit="TB")


def test_use_instead_units_agree():
    gb = audit.use_instead("GB").set_index("quantity")
    gib = audit.use_instead("GiB").set_index("quantity")
    assert gb.loc["weights, BF16", "K3 real (GB)"] == 5559.0
    assert gb.loc["weights, BF16", "guide 000 (GB)"] == round(594 * GiB / 1e9, 1)   # 637.8: its GB are GiB
    assert gib.loc["weights, BF16", "guide 000 (GiB)"] == 594.0
    assert gib.loc["KV cache, BF16, 1M", "guide 000 (GiB)"] == 256.0


def test_gguf_matches_and_table_check():
    g = audit.gguf_matches().set_index("tier")
    assert g.loc["4-bit", "nearest K3 file"] == "MXFP4 experts + Q8_0 rest"
    assert g.loc["8-bit", "bits per weight"] == 4.49
    rows = audit.g004_table_check()
    assert len(rows) == 21
    bad = set(rows.loc[rows["stated − rule (GB)"].abs() > 0.1, "tier"])
    assert bad == {"1-bit", "2-bit", "4-bit", "8-bit"}


def test_working_tables():
    w = audit.working("g000-fp8kv-gpus-after")
    assert list(w.columns) == ["param", "formula", "value", "unit"]
    assert w.set_index("param").loc["need_on_8_gib", "value"] == 716


@pytest.mark.parametrize("make", [
    lambda: charts_audit.verdict_bars(audit.audit_table()),
    lambda: charts_audit.guide_vs_real(audit.use_instead("GiB"), unit="GiB"),
    lambda: charts_audit.bits_per_weight(audit.gguf_matches()),
])
def test_charts_are_valid_specs(make):
    spec = make().to_dict()   # validates against the Vega-Lite schema
    assert "$schema" in spec


# ---------------------------------------------------------------- the notebook under papermill

NOTEBOOK = ROOT / "notebooks" / "07-guide-audit.ipynb"


def _run(tmp_path, **parameters):
    pytest.importorskip("papermill")
    return run_notebook(tmp_path, "07-guide-audit", **parameters)


_output = cell_output


def test_papermill_parameters_filter_the_table(tmp_path):
    nb = _run(tmp_path, guide="guide-004", verdict="contradicted", unit="GiB")
    html = _output(nb, "audit.style_verdicts(", "text/html")
    assert "g004-total-4-bit-8k" in html and "g000-" not in html and "reproduced only" not in html
    assert "K3 real (GiB)" in _output(nb, "instead = audit.use_instead(", "text/plain")


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
    assert all(c.get("execution_count") is None for c in nb.cells[idx + 1:] if c.cell_type == "code")
