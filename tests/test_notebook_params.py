"""Notebooks 00–02: papermill parameters change the figures; a bad parameter stops at the
validate cell with one line naming it; the committed notebooks are clean.

Expected figures are worked by hand from guide 000's inputs (Q4 325 GiB, FP8 KV
131,072 B/token, activation 10 GiB, overhead 8 GiB per GPU) and the GPUs' marketed
memory (H100 80 GiB, H200 141 GiB).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbrun import cell_output, run_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SERIES = ["00-vram-anatomy", "01-weights", "02-kv-cache"]
CHECK_TAG = "nbval-check-output"  # nbval checks these cells; no marker or assert in the lesson

papermill = pytest.importorskip("papermill")


_run = run_notebook


_plain_output = cell_output


def _row(table_text: str, name: str) -> list[float]:
    """The numbers on the row of a printed DataFrame whose label is ``name``."""
    for line in table_text.splitlines():
        if line.strip().startswith(name + " "):
            rest = line.strip()[len(name) :].replace(",", "")
            return [float(x) for x in rest.split() if x not in ("True", "False")]
    raise AssertionError(f"no row {name!r} in\n{table_text}")


def test_papermill_h200_x4_changes_the_figures(tmp_path):
    nb = _run(tmp_path, "00-vram-anatomy", model="kimi-k3@guide-000", weights="q4", gpu="h200", gpus=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    table = _plain_output(nb, "tables.plan_table(plan)")
    assert _row(table, "available") == [4 * 141.0, 141.0]
    assert _row(table, "overhead") == [4 * 8.0, 8.0]
    assert _row(table, "total") == [325 + 32 + 10 + 32.0, (325 + 32 + 10 + 32) / 4]  # 399, 99.75
    assert _row(table, "headroom") == [564 - 399.0, 141 - 99.75]
    reason = _plain_output(nb, "plan = notebook.validate(", "text/html")  # the verdict line
    assert "of 141.0 GiB" in reason and "over 4 GPUs" in reason


def test_papermill_bad_gpu_stops_at_validate_with_one_line(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as info:
        _run(tmp_path, "00-vram-anatomy", gpu="nosuch")
    err = info.value
    assert err.ename == "ParameterError"
    assert err.evalue.startswith("parameter gpu: unknown gpu 'nosuch'")
    assert "notebook.validate(" in err.source
    nb = nbformat.read(tmp_path / "00-vram-anatomy-out.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1
    assert errors[0].traceback == ["ParameterError: " + err.evalue]  # one line, no traceback
    # the first cell after the parameters is where it stopped: nothing later ran
    idx = next(i for i, c in enumerate(nb.cells) if "notebook.validate(" in c.source)
    assert all(c.get("execution_count") is None for c in nb.cells[idx + 1 :] if c.cell_type == "code")


# ---------------------------------------------------------------- the committed notebooks


@pytest.fixture(params=SERIES)
def committed(request):
    return request.param, nbformat.read(NOTEBOOKS / f"{request.param}.ipynb", as_version=4)


def test_committed_notebook_is_clean(committed):
    stem, nb = committed
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert "execution" not in cell.metadata
        assert "NBVAL_" not in cell.source and not re.search(r"^assert ", cell.source, re.M), stem
        if CHECK_TAG in cell.metadata.get("tags", ()):
            assert cell.outputs and cell.execution_count, f"{stem}: checked cell has no stored output"
            for o in cell.outputs:
                assert "application/vnd.jupyter.widget-view+json" not in o.get("data", {})
                assert not any(k.startswith(("image/", "application/vnd.vegalite")) for k in o.get("data", {}))
        else:
            assert not cell.outputs and cell.execution_count is None, f"{stem}: unchecked cell keeps output"


def test_parameters_cell_then_validate(committed):
    stem, nb = committed
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    params = code[tagged[0]].source.splitlines()
    names = []
    for line in params:
        m = re.fullmatch(r'(\w+): (str|int) = ("[^"]*"|\d+)  # .+', line)
        assert m, f"{stem}: parameter line {line!r} is not `name: type = literal  # help`"
        names.append(m.group(1))
    assert names == ["model", "weights", "kv_dtype", "context", "batch", "gpu", "gpus"]
    assert 'model: str = "kimi-k3"' in params[0]  # the lessons teach on the real K3
    nxt = code[tagged[0] + 1].source
    assert "plan = notebook.validate(" in nxt
    # papermill --help-notebook reads every parameter, with its type and help
    inspected = papermill.inspect_notebook(str(NOTEBOOKS / f"{stem}.ipynb"))
    assert list(inspected) == names
    assert all(p["help"] and p["inferred_type_name"] in ("str", "int") for p in inspected.values())


def test_series_layout(committed):
    stem, nb = committed
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert nb.cells[0].source.startswith("# ") and "**The question:**" in nb.cells[0].source
    assert "## Summary" in text and "## Exercises" in text and "<details>" in text
    assert "**Takeaway:**" in text
    # the index link opens inside the server root (JupyterLab serves notebooks/): a start page there
    link = re.search(r"\[Series index\]\(([^)#]+)", nb.cells[0].source)
    assert link and not link.group(1).startswith(("..", "/")), nb.cells[0].source
    assert (NOTEBOOKS / link.group(1)).is_file()
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "notebook.setup()" in first_code.source
    sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "charts." in sources
    # the budget explorer once, in 00; 01 and 02 point to it instead of repeating it
    assert ("widgets.explorer(" in sources) == (stem == "00-vram-anatomy")
    # checks live in tests/ (tests/test_lesson_values.py), not in the lesson: no assert, no NBVAL_ marker
    assert not re.search(r"^\s*assert\b", sources, flags=re.M)
    assert "NBVAL_" not in sources
    # no logic defined only in the notebook
    assert not re.search(r"^\s*(def|class|for|while) ", sources, flags=re.M)


# ------------------------------------------------------------------ the whole series (issue 15)

ALL = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
LESSONS = [s for s in ALL if s[:2] in ("00", "01", "02", "03", "04", "05")]


@pytest.mark.parametrize("stem", LESSONS)
def test_lessons_hold_no_checks_and_save_no_widget_state(stem):
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        assert not re.search(r"^\s*assert\b", cell.source, flags=re.M), (stem, cell.source)
        assert "NBVAL_" not in cell.source, (stem, cell.source)
    # nbval compares exactly the tagged cells; every other output is stripped
    assert any("nbval-check-output" in c.metadata.get("tags", []) for c in code)
    assert all(not c.outputs for c in code if "nbval-check-output" not in c.metadata.get("tags", []))
    assert "widgets" not in nb.metadata


def test_start_page_links_every_notebook_and_each_reader():
    page = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    for stem in ALL:
        assert f"({stem}.ipynb)" in page, stem
    for reader in ("Infrastructure engineer", "Report team", "Teacher"):
        assert f"**{reader}**" in page
    assert "GiB" in page and "2^30" in page  # the one default unit, stated once


def test_the_working_copy_the_workbook_opens_is_git_ignored():
    import subprocess

    script = (NOTEBOOKS.parent / "scripts" / "open-workbook.sh").read_text(encoding="utf-8")
    assert "jupyter lab workbook/" in script and "jupyter lab notebooks/" not in script
    probe = subprocess.run(
        ["git", "check-ignore", "-q", "workbook/03-tensor-parallel.ipynb"], cwd=NOTEBOOKS.parent, check=False
    )
    if probe.returncode == 128:
        pytest.skip("not a git checkout (an sdist or a copy): nothing to keep clean")
    assert probe.returncode == 0, "workbook/ is not git-ignored: a JupyterLab session would dirty git status"
