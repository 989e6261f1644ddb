"""One line of text as a cell's result: a verdict or a statement above a chart.

A bare ``str`` at the end of a cell shows with Python's quotes, and ``IPython.display.HTML``
shows ``<IPython.core.display.HTML object>`` wherever only the plain text is read (an nbval
comparison, a text export). A :class:`Line` shows its text in both: plain without quotes, and
in HTML as a coloured paragraph (green for a plan that fits, red for one that does not, blue
for a statement), with ``<b>…</b>`` kept only in the HTML.

>>> Line("Decode is <b>memory-bound</b>")
Decode is memory-bound
>>> verdict_line("FITS — 4× H100: fits").colour, verdict_line("DOES NOT FIT — 1× H100").colour
('#1a7f37', '#b00020')
>>> Line("a <b>b</b> & <i>")._repr_html_()
"<p style='color:#1f5fa8;font-size:14px;margin:0.4em 0'>a <b>b</b> &amp; &lt;i&gt;</p>"
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

#: colours of a line: a plan that fits, one that does not, a statement
FITS, DOES_NOT_FIT, STATEMENT = "#1a7f37", "#b00020", "#1f5fa8"
_BOLD = re.compile(r"</?b>")


@dataclass(frozen=True)
class Line:
    """``text`` (``<b>`` allowed, everything else escaped) in ``colour``."""

    text: str
    colour: str = STATEMENT

    def __repr__(self) -> str:
        return _BOLD.sub("", self.text)

    def _repr_html_(self) -> str:
        parts = _BOLD.split(self.text)
        tags = _BOLD.findall(self.text)
        body = html.escape(parts[0]) + "".join(t + html.escape(p) for t, p in zip(tags, parts[1:]))
        return f"<p style='color:{self.colour};font-size:14px;margin:0.4em 0'>{body}</p>"


def verdict_line(verdict: str) -> Line:
    """A plan's verdict (``FITS — …`` / ``DOES NOT FIT — …``) in green or red."""
    return Line(verdict, FITS if verdict.startswith("FITS") else DOES_NOT_FIT)
