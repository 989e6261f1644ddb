"""Errors raised for bad input.

Every error names the field that was wrong and what is allowed, so the CLI, the
API and the widgets can show one clear line instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class K3InputError(ValueError):
    """Bad input: names the offending ``field`` and what is ``allowed``."""

    def __init__(self, field: str, message: str, allowed: str | None = None):
        self.field = field
        self.allowed = allowed
        text = f"{field}: {message}"
        if allowed:
            text += f" (allowed: {allowed})"
        super().__init__(text)


class UnknownNameError(K3InputError):
    """A model, GPU or format name that is not in the library."""

    def __init__(self, field: str, name: str, known: Iterable[str]):
        known = sorted(set(known))
        close = difflib.get_close_matches(str(name).lower(), [k.lower() for k in known], n=4, cutoff=0.5)
        lookup = {k.lower(): k for k in known}
        close_names = [lookup[c] for c in close]
        if close_names:
            hint = "did you mean " + ", ".join(close_names) + "?"
        elif len(known) <= 8:
            hint = ", ".join(known)
        else:
            lister = {"gpu": "gpus", "model": "models"}.get(field, "formats")
            hint = f"{len(known)} known; list them with `k3plan {lister}`"
        self.close_matches = tuple(close_names)
        super().__init__(field, f"unknown {field} {name!r}", hint)


class DoesNotSplitError(K3InputError):
    """A parallel layout the model cannot be split by."""
