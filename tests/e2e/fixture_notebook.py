"""A small notebook the e2e harness runs in JupyterLab and exports to HTML, so the harness
itself is tested whatever state the real notebooks are in.

It mirrors what the workbook's explorers do (a "GPUs" slider and a "context" dropdown above an
Output widget that shows a number and an Altair chart through the offline "svg" renderer),
built from ipywidgets and Altair only, so it does not break when k3lib's widgets change.

It is generated (not committed as .ipynb) so that nbval in scripts/test.sh does not collect it.
"""

from __future__ import annotations

from pathlib import Path

FIXTURE_STEM = "e2e-fixture-widgets"

_SETUP = """\
import altair as alt
import ipywidgets as widgets
import pandas as pd
from IPython.display import display

alt.renderers.enable({renderer!r})
alt.renderers.active"""

_STATIC_CHART = """\
budget = pd.DataFrame({"component": ["weights", "KV cache", "activation", "overhead"],
                       "GiB": [325.0, 32.0, 10.0, 48.0]})
alt.Chart(budget).mark_bar().encode(x="component:N", y="GiB:Q")"""

_EXPLORER = """\
def show(gpus, context):
    tokens = {"8K": 8192, "32K": 32768, "128K": 131072}[context]
    kv_gib = tokens * 27648 / 2**30
    per_gpu = pd.DataFrame({"component": ["weights", "KV cache"],
                            "GiB per GPU": [1452.8 / gpus, kv_gib / gpus]})
    print(f"per GPU: {per_gpu['GiB per GPU'].sum():.1f} GiB on {gpus} GPUs at {context}")
    display(alt.Chart(per_gpu).mark_bar().encode(x="component:N", y="GiB per GPU:Q"))

gpus = widgets.IntSlider(value=8, min=1, max=64, description="GPUs")
context = widgets.Dropdown(options=["8K", "32K", "128K"], value="32K", description="context")
out = widgets.interactive_output(show, {"gpus": gpus, "context": context})
widgets.VBox([widgets.HBox([context, gpus]), out])"""


def build_fixture_notebook(*, renderer: str = "svg"):
    """The fixture notebook (an ``nbformat`` node); ``renderer`` is Altair's renderer name."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [
        new_markdown_cell("# e2e fixture\nA widget explorer and a chart, for the browser tests."),
        new_code_cell(_SETUP.format(renderer=renderer)),
        new_code_cell(_STATIC_CHART),
        new_code_cell(_EXPLORER),
    ]
    return nb


def write_fixture_notebook(folder: Path, *, renderer: str = "svg", stem: str = FIXTURE_STEM) -> Path:
    """Write the fixture notebook into ``folder``; returns its path."""
    import nbformat

    path = Path(folder) / f"{stem}.ipynb"
    nbformat.write(build_fixture_notebook(renderer=renderer), path)
    return path
