"""Every notebook of the series, executed, shows no debugging output (issue 24, "readable output").

The scanner (tests/output_scan.py) is tested first on strings written by hand — one for each kind
of bad output it must catch, and good ones it must let through — then run over the executed
outputs of every notebook in ``scripts/nbtool.py``'s SERIES. Each notebook is executed once per
session (papermill, its default parameters).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from nbrun import run_notebook
from output_scan import format_problems, notebook_problems, shown_output

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from nbtool import SERIES  # noqa: E402 — scripts/ is not a package: imported after the sys.path line

# ------------------------------------------------------------------ the scanner on strings by hand

BAD = [
    # (text, mime, result?, the kind that must be reported)
    ("kv_GiB\n0   NaN", "text/plain", False, "NaN"),
    ("<td>NaN</td>", "text/html", False, "NaN"),
    ("<td>&lt;NA&gt;</td>", "text/html", False, "<NA>"),
    ("x    <NA>", "text/plain", False, "<NA>"),
    ("<td>2.621e+05</td>", "text/html", False, "e+ notation"),
    ("tokens 1e+06", "text/plain", False, "e+ notation"),
    ("('real budget 576.0 GiB', '8 × (80 − 8)')", "text/plain", True, "tuple"),
    ("(33.33, 2.33)", "text/plain", True, "tuple as the result"),
    ("<td>('a', 'b')</td>", "text/html", False, "tuple shown"),
    ("<k3lib.core.plan.Plan object at 0x7f3a2c>", "text/plain", True, "object repr"),
    ("AuditParameters(guide='all', verdict='contradicted')", "text/plain", True, "object repr"),
    ("'fits on 6 GPUs: 415.0 GiB'", "text/plain", True, "quoted string"),
    ('"fits"', "text/plain", True, "quoted string"),
    ("<td>12345678901</td>", "text/html", False, "integer without separators"),
    ("262144 B per token", "text/plain", False, "integer without separators"),
    ("context - 262144 tokens", "text/plain", False, "integer without separators"),
    ("262144.0", "text/markdown", False, "integer without separators"),
    (
        "<table><thead><tr><th></th><th>x</th></tr></thead><tbody>\n<tr>\n<th>0</th><td>1</td></tr></tbody></table>",
        "text/html",
        False,
        "pandas index shown",
    ),
]

GOOD = [
    ("total 1,506.32 GiB on 16 GPUs; 262,144 B per token; 0.43 GiB", "text/plain", True),
    ("<td>—</td><td>12,345,678,901</td><td>2.62</td>", "text/html", False),
    # years, ids, hex digests, file names, dates, versions, code
    ("guide 2025, recipe @8959cf64, commit 1234567abc, #123456", "text/plain", False),
    ("data/measured/kimi-k3-published.csv row 594040923616.gguf", "text/plain", False),
    ("2026-12-05 v0.19.1 id=k3-1234567", "text/plain", False),
    ("the file is <code>594040923616</code> B", "text/html", False),
    ("run `kv = 27648 * 262144`", "text/markdown", False),
    ("vllm serve moonshotai/Kimi-K3 --max-model-len 262144 -c 131072", "text/plain", True),
    ("<style>#T_123456 td {color: red}</style><td>1</td>", "text/html", False),
    ("<div id='altair-viz-123456789'>chart</div>", "text/html", False),
    # a tuple in prose, a non-default index, words with "nan" inside
    ("Kimi K3 (MoE) has 2,779.5B parameters; nanoseconds; finance", "text/plain", False),
    ("<tbody><tr><th>256K</th><td>7.03</td></tr></tbody>", "text/html", False),
    ("fits on 6 GPUs", "text/plain", False),  # a stream line, not a quoted result
]


@pytest.mark.parametrize("text, mime, result, kind", BAD, ids=[b[3] + "-" + str(i) for i, b in enumerate(BAD)])
def test_scanner_catches_bad_output(text, mime, result, kind):
    problems = format_problems(text, mime, result=result)
    assert any(p.startswith(kind) for p in problems), (text, problems)


@pytest.mark.parametrize("text, mime, result", GOOD, ids=[str(i) for i in range(len(GOOD))])
def test_scanner_passes_good_output(text, mime, result):
    assert format_problems(text, mime, result=result) == []


def test_scanner_reads_what_the_reader_sees():
    # a DataFrame's HTML is what Lab shows, not its text/plain fallback with the index
    frame = {
        "output_type": "execute_result",
        "data": {"text/html": "<td>1,000,000</td>", "text/plain": "   x\n0  1000000"},
    }
    assert shown_output(frame) == ("text/html", "<td>1,000,000</td>")
    # a widget is shown live: its text/plain repr ("VBox(children=…)") is not seen
    widget = {
        "output_type": "display_data",
        "data": {"application/vnd.jupyter.widget-view+json": {}, "text/plain": "VBox(children=(…))"},
    }
    assert shown_output(widget) is None
    stream = {"output_type": "stream", "name": "stdout", "text": "NaN\n"}
    assert shown_output(stream) == ("text/plain", "NaN\n")


# ------------------------------------------------------------------ every executed notebook


@pytest.fixture(scope="session")
def executed(tmp_path_factory):
    """Each notebook executed once per session, on first use."""
    cache: dict[str, object] = {}
    folder = tmp_path_factory.mktemp("output-format")

    def get(stem: str):
        if stem not in cache:
            cache[stem] = run_notebook(folder, stem)
        return cache[stem]

    return get


@pytest.mark.parametrize("stem", [s for s, _ in SERIES])
def test_notebook_outputs_read_cleanly(executed, stem):
    problems = notebook_problems(executed(stem))
    assert not problems, f"{stem}: {len(problems)} output(s) a reader should not see:\n" + "\n".join(problems)


def test_display_layer_output_passes_the_scan():
    """k3lib.views.table_format.reader_table turns a table with every fault the scan knows into one
    that passes it; the same table shown raw by pandas fails it (so the scan can see the faults)."""
    import pandas as pd

    from k3lib.views.table_format import reader_table

    raw = pd.DataFrame(
        {
            "context_tokens": [131072, 1048576],
            "kv_GiB": [3.375, float("nan")],
            "gpus_saved": pd.array([2, None], dtype="Int64"),
            "tokens": [2.621e5, 1e6],
            "tiny": [1.2e-7, 0.5],
        }
    )
    assert format_problems(raw._repr_html_(), "text/html")  # index, separators, NaN, <NA>, e+ …
    table = reader_table(raw)
    assert format_problems(table._repr_html_(), "text/html") == []
    assert format_problems(repr(table), "text/plain", result=True) == []
    # by hand: 2^20 tokens with separators, 3.375 to two places, 2.621e5 as 262,100, 1.2e-7 as 0.00000012
    assert table.frame.iloc[1, 0] == "1,048,576" and table.frame.iloc[0, 1] == "3.38"
    assert table.frame.iloc[0, 3] == "262,100" and table.frame.iloc[0, 4] == "0.00000012"
    assert list(table.frame.columns) == ["context tokens", "kv (GiB)", "gpus saved", "tokens", "tiny"]
