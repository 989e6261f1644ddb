"""Run a notebook of the series under papermill, for the tests of every notebook.

Every cell has a time limit (``execution_timeout``), so a kernel that stops answering
fails the test instead of hanging the suite.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CELL_TIMEOUT_S = 180


def run_notebook(tmp_path: Path, stem: str, **parameters):
    """Execute ``notebooks/<stem>.ipynb`` with ``parameters`` into ``tmp_path/<stem>-out.ipynb``
    (kernel python3, cwd notebooks/) and return it read back. Raises papermill's
    ``PapermillExecutionError`` when a cell fails; the partial notebook is still written."""
    import papermill

    out = tmp_path / f"{stem}-out.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOKS / f"{stem}.ipynb"),
        str(out),
        parameters=parameters,
        kernel_name="python3",
        cwd=str(NOTEBOOKS),
        execution_timeout=CELL_TIMEOUT_S,
        progress_bar=False,
        log_output=False,
    )
    return nbformat.read(out, as_version=4)


def cell_output(nb, contains: str, mime: str = "text/plain") -> str:
    """The ``mime`` output text of the first code cell whose source contains ``contains``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and contains in cell.source:
            return "".join(o.get("data", {}).get(mime, "") for o in cell.outputs)
    raise AssertionError(f"no cell contains {contains!r}")
