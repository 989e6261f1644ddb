"""Every figure the tier compares, as rows for ``data/measured/llamacpp-0c1e570-cpu.csv``
(written by ``scripts/measure_llamacpp.py``; ``test_committed_measurements_are_current`` checks
the committed file against a fresh run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cases import SETTINGS, compute_kwargs, predicted_rows, setting_id
from .engine import measure
from .families import FAMILIES

COLUMNS = ("family", "setting", "quantity", "kind", "logged", "predicted", "match", "error_pct", "source")
SOURCE = (
    "measured: ggml-org/llama.cpp@0c1e57098 (llama-cpp-python 0.3.36 source build, CPU backend) on the "
    "synthetic model in tests/llamacpp/families.py"
)


def measure_rows(paths: dict[str, Path]) -> list[dict[str, Any]]:
    """Rows of every family × setting: KV/SWA/state/model figures (kind 'exact' or 'printed MiB') and
    the compute buffer (kind 'compute MiB', predicted by the approximate model)."""
    from k3lib.engines.llamacpp import llamacpp_compute_buffer_bytes
    from k3lib.loaders import load_gguf

    rows: list[dict[str, Any]] = []
    for family in FAMILIES:
        loaded = load_gguf(paths[family])
        for s in SETTINGS:
            m = measure(paths[family], **s)
            for r in predicted_rows(family, loaded, s, m):
                rows.append(
                    {
                        "family": family,
                        "setting": r.setting,
                        "quantity": r.quantity,
                        "kind": "exact" if r.exact else "printed MiB",
                        "logged": r.logged,
                        "predicted": r.predicted,
                        "match": r.match,
                        "error_pct": "",
                        "source": SOURCE,
                    }
                )
            if m.exact["ok"]:
                pred = llamacpp_compute_buffer_bytes(loaded, **compute_kwargs(s))
                logged = float(m.compute_mib["CPU"])
                rows.append(
                    {
                        "family": family,
                        "setting": setting_id(s),
                        "quantity": "compute buffer (MiB)",
                        "kind": "compute MiB",
                        "logged": f"{logged:.2f}",
                        "predicted": f"{pred / 2**20:.2f}",
                        "match": abs(pred / 2**20 - logged) <= 0.005,
                        "error_pct": f"{100 * (pred / 2**20 - logged) / logged:+.1f}",
                        "source": SOURCE,
                    }
                )
    return rows
