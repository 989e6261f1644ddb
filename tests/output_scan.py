"""The output-format scan: what a reader sees in an executed notebook, checked for debugging output.

:func:`format_problems` is a pure function over one output's text and MIME type; it returns one line
per problem found (empty when the text reads cleanly):

* ``NaN`` / ``nan`` / ``<NA>`` — a missing value shown as pandas prints it (use "—");
* ``e+`` notation — ``2.621e+05`` (write ``262,144``);
* a Python tuple as a result — ``('real budget 576.0 GiB', …)`` or ``(33.33, 2.33)``;
* a raw object repr — ``<k3lib.…>``, ``<pandas.…>``, ``… object at 0x…``, ``Plan(model=…)``;
* a quoted string as a cell's only result — ``'fits on 6 GPUs'`` (print it as markdown or text);
* an integer ≥ 100,000 without thousands separators — ``12345678901`` (write ``12,345,678,901``),
  not counting numbers inside words, ids, hex, file names, dates, code (``<code>``, backticks) or
  a command line's flag values (``--max-model-len 262144``);
* a pandas default index shown in a table (a first row headed ``0``).

Only what JupyterLab renders is scanned: for a rich output, the HTML (or markdown) and not its
``text/plain`` fallback; nothing for a widget, an image or a chart, whose text is not a table.
Tags, ``<style>`` and ``<script>`` bodies and code spans are removed before the scan.

``python tests/output_scan.py notebooks/03-tensor-parallel.ipynb …`` executes the notebooks
(papermill, defaults) and prints every problem; exit status 1 if any.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

#: MIME types shown as a picture or a live widget: their text is not scanned
_VISUAL = (
    "application/vnd.jupyter.widget-view+json",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "application/vnd.vegalite.v5+json",
    "application/vnd.vegalite.v4+json",
    "application/vnd.vega.v5+json",
)

_BLOCKS = re.compile(r"<(style|script|code|pre)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")
_FENCE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
#: a command-line flag and its value (``--max-model-len 262144``): text to copy, not to read
_FLAG_VALUE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:[ =]+[^\s-]\S*)?")
_INDEX_ROW = re.compile(r"<tbody>\s*<tr[^>]*>\s*<th[^>]*>\s*0\s*</th>", re.I)

_CHECKS: tuple[tuple[str, re.Pattern], ...] = (
    ("NaN", re.compile(r"\bNaN\b|(?<![\w.])nan(?![\w.])")),
    ("<NA>", re.compile(r"<NA>")),
    ("e+ notation", re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]\d+\b")),
    ("tuple shown", re.compile(r"\(\s*'[^'\n]*'\s*,|\(\s*\"[^\"\n]*\"\s*,")),
    ("object repr", re.compile(r"<(?:k3lib|pandas|numpy|altair|ipywidgets)\.[\w.]+|\bobject at 0x[0-9a-f]+")),
    # a year, an id, a hex digest, a file name, a date or a version does not count: six or more
    # digits standing alone (not glued to letters, dots of a file name, slashes, dashes or colons)
    ("integer without separators", re.compile(r"(?<![\w.,/#@:\\-])\d{6,}(?:\.\d+)?(?![\w/\\-]|\.[A-Za-z_])")),
)
#: a dataclass / namedtuple repr in a result: ``Name(field=…``
_DATACLASS_REPR = re.compile(r"\b[A-Z]\w*\(\w+=")
_TUPLE_RESULT = re.compile(r"^\(.*,.*\)$", re.S)
_QUOTED_RESULT = re.compile(r"""^(['"]).*\1$""", re.S)


def readable_text(text: str, mime: str) -> str:
    """The words and numbers a reader sees in ``text`` of type ``mime``: for HTML without tags,
    styles, scripts and code; for markdown without code spans; HTML entities decoded.

    >>> readable_text("<p>1 <code>123456</code> <b>GiB</b></p>", "text/html").split()
    ['1', 'GiB']
    """
    if mime == "text/html":
        text = _BLOCKS.sub(" ", text)
        text = _TAG.sub(" ", text)
        return html.unescape(text)
    if mime == "text/markdown":
        text = _FENCE.sub(" ", text)
        text = _BLOCKS.sub(" ", text)
        return html.unescape(_TAG.sub(" ", text))
    return text


def format_problems(text: str, mime: str = "text/plain", *, result: bool = False) -> list[str]:
    """Problems a reader would see in one output: each ``"<kind>: <excerpt>"``; empty if none.

    ``result`` is True for a cell's ``execute_result`` shown as ``text/plain`` (the value of the
    cell's last expression), where a whole tuple, a quoted string or a dataclass repr is the
    entire output.

    >>> format_problems("budget 1,506.32 GiB on 16 GPUs")
    []
    >>> format_problems("262144.0 tokens")
    ['integer without separators: 262144.0']
    """
    found: list[str] = []
    if mime == "text/html" and _INDEX_ROW.search(text):
        found.append("pandas index shown: first row headed 0")
    seen = _FLAG_VALUE.sub(" ", readable_text(text, mime))
    for kind, pattern in _CHECKS:
        for m in pattern.finditer(seen):
            found.append(f"{kind}: {m.group(0)}")
    if result and mime == "text/plain":
        whole = seen.strip()
        if _QUOTED_RESULT.match(whole):
            found.append(f"quoted string as the result: {whole[:60]}")
        elif _TUPLE_RESULT.match(whole) and not any(k.startswith("tuple") for k in found):
            found.append(f"tuple as the result: {whole[:60]}")
        if _DATACLASS_REPR.search(whole):
            found.append(f"object repr: {_DATACLASS_REPR.search(whole).group(0)}")
    return found


def shown_output(output: dict) -> tuple[str, str] | None:
    """``(mime, text)`` of what JupyterLab renders for one nbformat output, or None when it shows
    a widget, a chart or an image (or nothing textual)."""
    kind = output.get("output_type")
    if kind == "stream":
        return "text/plain", "".join(output.get("text", ""))
    if kind not in ("execute_result", "display_data"):
        return None
    data = output.get("data", {})
    if any(m in data for m in _VISUAL) and "text/html" not in data:
        return None
    if "application/vnd.jupyter.widget-view+json" in data:
        return None
    for mime in ("text/html", "text/markdown", "text/plain"):
        if mime in data:
            value = data[mime]
            return mime, value if isinstance(value, str) else "".join(value)
    return None


def notebook_problems(nb) -> list[str]:
    """Every problem in the outputs of an executed notebook (nbformat node), each prefixed with its
    cell number and the cell's first source line."""
    out: list[str] = []
    for number, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", ()):
            shown = shown_output(output)
            if shown is None:
                continue
            mime, text = shown
            result = output.get("output_type") == "execute_result"
            for problem in format_problems(text, mime, result=result):
                first = cell.source.strip().splitlines()[-1][:60] if cell.source.strip() else ""
                out.append(f"cell {number} [{first}]: {problem}")
    return out


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nbrun import run_notebook

    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for arg in sys.argv[1:]:
            stem = Path(arg).stem
            problems = notebook_problems(run_notebook(Path(tmp), stem))
            bad += len(problems)
            print(f"{stem}: {len(problems)} problem(s)")
            for p in problems:
                print("   ", p)
    sys.exit(1 if bad else 0)
