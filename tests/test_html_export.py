"""An nbconvert HTML export of a notebook shows its formulas with the network off.

nbconvert's default export leaves ``$kv_{tok} = 2·L·K·H·b$`` as text for MathJax to typeset, and
loads MathJax from a CDN, so offline the reader sees raw TeX. ``scripts/nbtool.py`` renders each
formula as MathML at export (browsers draw MathML natively) and drops the CDN script.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import nbtool  # noqa: E402 — scripts/ is not a package: imported after the sys.path line


def test_inline_and_display_formulas_become_mathml():
    out = nbtool.math_to_mathml("Per token $kv_{tok} = 2·L·K·H·b$ bytes.\n\n$$M = W + KV + A + O$$\n")
    assert out.count("<math") == 2
    assert 'display="block"' in out
    assert "$" not in out
    assert "<msub><mi>v</mi><mrow><mi>t</mi><mi>o</mi><mi>k</mi></mrow></msub>" in out  # kv_{tok}


@pytest.mark.parametrize(
    "text",
    [
        "$180,000 (6 × $30,000, at MSRP)",  # two prices: a closing $ after a space is not math
        "costs $30,000 and $32,000",  # a $ followed by a digit does not close a formula
        r"escaped \$5 and \$6 stay text",
        "code `echo $HOME $PATH` is not math",
        "```\nprice=$1 total=$2\n```",
    ],
)
def test_prices_escapes_and_code_stay_text(text):
    assert nbtool.math_to_mathml(text) == text


def test_exported_notebook_has_mathml_and_no_mathjax(tmp_path):
    out = nbtool.export_html(ROOT / "notebooks" / "02-kv-cache.ipynb", tmp_path / "02.html")
    page = out.read_text(encoding="utf-8")
    assert len(re.findall(r"<math\b", page)) >= 20  # 02 has 27 formulas in its markdown
    assert "mathjax" not in page.lower().replace("no mathjax", "")
    body = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    assert "kv_{tok}" not in body and "$kv" not in body  # no raw TeX left for a reader to see
