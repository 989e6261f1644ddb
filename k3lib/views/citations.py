"""A guide's sentence quoted in a lesson: the words, the guide's title and where it is public,
and a link to the audit that checks it (notebook 07). The lessons teach on real models; a quote
only illustrates a point, the arithmetic about it lives in 07.

>>> print(guide_quote("g000-kv-bytes-bf16"))  # doctest: +NORMALIZE_WHITESPACE
> “At BF16: 262,144 bytes per token.”
— guide 000, “Kimi K3 VRAM Requirements: How Much Memory You Actually Need to Run K3” (public article),
section “KV Cache: The Variable That Grows With Context”.
What holds of it for the real K3: [07 · the guide audit](07-guide-audit.ipynb).
"""

from __future__ import annotations

from k3lib.guides.claims import get_claim, profile

AUDIT_LINK = "[07 · the guide audit](07-guide-audit.ipynb)"


def guide_source(guide: str) -> str:
    """``guide 000, “<title>” (public article)``: the guide's title and source from its profile."""
    return profile(guide)["file"].replace("guide 000:", "guide 000,").replace("guide 004:", "guide 004,")


def guide_quote(*claim_ids: str) -> str:
    """Markdown: the claims' quotes (one guide, joined with " … "), the guide's title and source,
    the section of the first, and a link to the audit."""
    claims = [get_claim(c) for c in claim_ids]
    if not claims or len({c.guide for c in claims}) != 1:
        raise ValueError("quote one or more claims of one guide")
    words = " … ".join(c.quote.rstrip() for c in claims)
    return (
        f"> “{words}”\n\n— {guide_source(claims[0].guide)},\nsection “{claims[0].section}”.\n"
        f"What holds of it for the real K3: {AUDIT_LINK}."
    )
