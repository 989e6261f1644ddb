"""The glossary (notebooks/glossary.md): the vocabulary issue 24 names, each term pointing to a
notebook of the series that exists, and reachable from the start page."""

import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TERMS = (
    "KV cache",
    "Prefill",
    "Decode",
    "TTFT",
    "TPOT",
    "Concurrency",
    "TP (tensor parallelism)",
    "PP (pipeline parallelism)",
    "EP (expert parallelism)",
    "MoE",
    "MLA",
    "KDA",
    "GQA",
    "Sliding-window",
    "FP8",
    "MXFP4",
    "GGUF",
    "GiB vs GB",
    "Memory-bound vs compute-bound",
    "Offload",
)


def _entries() -> dict[str, str]:
    text = (NOTEBOOKS / "glossary.md").read_text(encoding="utf-8")
    return {
        m["term"]: m["body"] for m in re.finditer(r"^\*\*(?P<term>[^*]+?)\.?\*\*\n(?P<body>(?:.+\n?)+)", text, re.M)
    }


def test_the_vocabulary_is_there():
    entries = _entries()
    missing = [t for t in TERMS if not any(name.startswith(t) or t in name for name in entries)]
    assert not missing, missing


def test_each_term_names_a_notebook_that_exists():
    for term, body in _entries().items():
        links = re.findall(r"\]\(([^)#]+\.ipynb)", body)
        assert links, f"{term}: no notebook named"
        assert all((NOTEBOOKS / link).is_file() for link in links), (term, links)
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", body.split("Taught in")[0].strip()) if s]
        assert 1 <= len(sentences) <= 3, (term, len(sentences))


def test_the_start_page_links_the_glossary():
    assert "(glossary.md)" in (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
