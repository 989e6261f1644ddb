"""Each committed notebook is what its source script generates: the same cells, in the same
order, with the same source, cell ids and tags (outputs aside: nbval checks those). A notebook
edited by hand, or a script changed without regenerating its notebook, turns this red.
Regenerate with ``.venv/bin/python scripts/notebooks/NN_name.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "scripts" / "notebooks").glob("[0-9][0-9]_*.py"))


def _cells_of(script: Path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(f"nbsource_{script.stem}", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # the script builds only under __main__
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return module.STEM, module.cells


def _shape(cells, stem, *, generated: bool = False):
    """(id, type, source, tags) per cell; a generated cell gets the id nbtool.write_notebook gives it."""
    out = []
    for number, cell in enumerate(cells):
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        cid = f"{stem[:2]}-{number:02d}" if generated else cell.get("id")
        out.append((cid, cell.cell_type, source, sorted(cell.metadata.get("tags", []))))
    return out


def test_every_notebook_has_a_source_script():
    stems = {_cells_of(s)[0] for s in SCRIPTS}
    assert stems == {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_notebook_equals_what_its_source_generates(script):
    stem, cells = _cells_of(script)
    committed = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    assert _shape(committed.cells, stem) == _shape(cells, stem, generated=True), (
        f"notebooks/{stem}.ipynb differs from {script.name}: run `.venv/bin/python {script.relative_to(ROOT)}`"
    )
