"""The student edition (``scripts/nbtool.py student OUTDIR``): answers removed, outputs cleared, the
same parameters, and it runs.

Built into a temporary folder from the committed notebooks; two of its notebooks are executed
with papermill to completion (the way a teacher's class runs them).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import nbtool  # noqa: E402 — scripts/ is not a package: imported after the sys.path line

STEMS = [s for s, _ in nbtool.SERIES]
#: what an answer looks like in a notebook, written out here rather than taken from nbtool
ANSWER_TEXT = re.compile(r"<!-- answer id=|<summary>\s*Answers?\b")


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student-edition")
    written = nbtool.build_student_edition(out)
    assert [p.name for p in written] == [f"{s}.ipynb" for s in STEMS]
    return out


def _read(folder: Path, stem: str):
    return nbformat.read(folder / f"{stem}.ipynb", as_version=4)


@pytest.mark.parametrize("stem", STEMS)
def test_no_answer_and_no_output_remains(edition, stem):
    nb = _read(edition, stem)
    for cell in nb.cells:
        assert not ANSWER_TEXT.search(cell.source), f"{stem}: an answer is left in {cell.source[:80]!r}"
        assert "answer" not in cell.metadata.get("tags", ())
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("stem", STEMS)
def test_questions_and_parameters_are_kept(edition, stem):
    teacher, student = _read(nbtool.NOTEBOOKS, stem), _read(edition, stem)
    params = [[c.source for c in nb.cells if "parameters" in c.metadata.get("tags", ())] for nb in (teacher, student)]
    assert params[0] == params[1]
    if stem != "90-deployment-report":
        assert len(params[0]) == 1, f"{stem} has one parameters cell"
    # every cell but the answers survives, in order: the code and the exercises' questions
    kept = [c.source for c in teacher.cells if "answer" not in c.metadata.get("tags", ()) and c.cell_type == "code"]
    assert [c.source for c in student.cells if c.cell_type == "code"] == kept
    questions = re.compile(r"\*\*Exercise \d\d-\d+\.\*\*")
    assert sum(len(questions.findall(c.source)) for c in teacher.cells) == sum(
        len(questions.findall(c.source)) for c in student.cells
    )


def test_an_answer_marker_is_what_the_edition_removes():
    """A notebook with one exercise (nbtool.exercise) and an old folded block loses both answers
    and keeps both questions; a mutated marker (no tag, no id) would survive, so the check is real."""
    cells = [
        nbtool.md("# t"),
        *nbtool.exercise("99-1", "How many?", "Two.", value=2, unit="GPUs"),
        nbtool.md("## Exercises\n\n1. Why?\n\n<details><summary>Answers</summary>\n\n1. Because.\n\n</details>"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    out = nbtool.student_notebook(nb)
    text = "\n".join(c.source for c in out.cells)
    assert "**Exercise 99-1.** How many?" in text and "1. Why?" in text
    assert "Two." not in text and "Because." not in text and len(out.cells) == 3


@pytest.mark.parametrize("stem", ["00-vram-anatomy", "07-guide-audit"])
def test_student_notebooks_run(edition, stem, tmp_path):
    import papermill

    out = tmp_path / f"{stem}-run.ipynb"
    papermill.execute_notebook(
        str(edition / f"{stem}.ipynb"),
        str(out),
        kernel_name="python3",
        cwd=str(edition),
        execution_timeout=180,
        progress_bar=False,
        log_output=False,
    )
    nb = nbformat.read(out, as_version=4)
    ran = [c for c in nb.cells if c.cell_type == "code"]
    assert ran and all(c.execution_count is not None for c in ran)
    assert not any(o.get("output_type") == "error" for c in ran for o in c.outputs)
