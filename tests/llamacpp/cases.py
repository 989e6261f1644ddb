"""The settings each family is loaded with, and what the workbook predicts for each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .engine import Measured, mib

#: llama.cpp settings (its own terms: n_ctx is the whole context across n_seq sequences)
SETTINGS: tuple[dict[str, Any], ...] = (
    {"n_ctx": 4096},
    {"n_ctx": 1000},  # padded to 1,024
    {"n_ctx": 8200, "flash_attn": False},  # padded to 8,448
    {"n_ctx": 4096, "type_k": "q8_0", "type_v": "q8_0"},
    {"n_ctx": 3000, "type_k": "q4_0", "type_v": "q4_0"},
    {"n_ctx": 4096, "type_k": "q8_0", "flash_attn": False},  # quantized K, f16 V
    {"n_ctx": 6000, "n_seq": 3},  # 3 streams of ⌈2,048⌉ cells
    {"n_ctx": 6000, "n_seq": 3, "kv_unified": True},
    {"n_ctx": 4096, "n_ubatch": 128, "n_batch": 512},
    {"n_ctx": 4096, "swa_full": True},
    {"n_ctx": 2048, "n_seq": 16},  # recurrent state: 16 rows
    {"n_ctx": 2048, "n_seq": 4, "n_rs_seq": 3},  # 4 × (1 + 3) snapshot rows
    {"n_ctx": 4096, "flash_attn": "auto"},  # llama.cpp's default: resolved to enabled on CPU
)


def setting_id(s: dict[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in s.items())


def cache_kwargs(s: dict[str, Any]) -> dict[str, Any]:
    """A setting as :func:`~k3lib.engines.llamacpp.llamacpp_memory` takes it (llama.cpp's defaults filled in)."""
    # flash_attn "auto" (llama.cpp's default) resolves to enabled on the CPU backend (src/llama-context.cpp)
    return dict(
        n_ctx=s["n_ctx"],
        n_seq=s.get("n_seq", 1),
        flash_attn=bool(s.get("flash_attn", True)),
        type_k=s.get("type_k", "f16"),
        type_v=s.get("type_v", "f16"),
        n_ubatch=s.get("n_ubatch", 512),
        swa_full=s.get("swa_full", False),
        kv_unified=s.get("kv_unified", False),
        n_rs_seq=s.get("n_rs_seq", 0),
    )


def compute_kwargs(s: dict[str, Any]) -> dict[str, Any]:
    """A setting as :func:`~k3lib.engines.llamacpp.llamacpp_compute_buffer_bytes` takes it."""
    c = cache_kwargs(s)
    return dict(
        context_tokens=c["n_ctx"],
        n_ctx=c["n_ctx"],
        n_seq=c["n_seq"],
        flash_attn=c["flash_attn"],
        n_ubatch=c["n_ubatch"],
        swa_full=c["swa_full"],
        kv_unified=c["kv_unified"],
    )


@dataclass(frozen=True)
class Row:
    """One compared figure: what llama.cpp printed and what the workbook predicts, as printed."""

    family: str
    setting: str
    quantity: str
    logged: str
    predicted: str
    exact: bool  #: an integer (cells, layers, bytes) rather than a 2-decimal MiB print
    tol: float = 0.0  #: allowed |logged − predicted| for a sum of separately rounded prints

    @property
    def match(self) -> bool:
        if self.tol:
            return abs(float(self.logged) - float(self.predicted)) <= self.tol
        return self.logged == self.predicted


def predicted_rows(family: str, loaded: Any, s: dict[str, Any], m: Measured) -> list[Row]:
    """Every KV, SWA, recurrent and model-buffer figure of ``m`` beside the workbook's prediction."""
    from k3lib.core.errors import K3InputError
    from k3lib.engines.llamacpp import llamacpp_memory, llamacpp_model_buffer_bytes

    sid = setting_id(s)
    try:
        mem = llamacpp_memory(loaded, **cache_kwargs(s))
    except K3InputError as exc:  # the workbook refuses: llama.cpp must refuse too
        return [Row(family, sid, f"refused ({exc.field})", str(m.exact["ok"]), "False", True)]
    rows: list[Row] = [Row(family, sid, "context created", str(m.exact["ok"]), "True", True)]

    def add(q: str, logged: Any, predicted: Any, exact: bool = False, tol: float = 0.0) -> None:
        rows.append(Row(family, sid, q, str(logged), str(predicted), exact, tol))

    caches = []
    if mem["k"] or mem["v"]:
        caches.append(("", mem["cells"], mem["k"], mem["v"]))
    if mem["swa_cells"]:
        caches.append(("SWA ", mem["swa_cells"], mem["swa_k"], mem["swa_v"]))
    add("KV caches (lines)", len(m.kv), len(caches), True)
    for (label, cells, k, v), line in zip(caches, m.kv):
        add(f"{label}KV cells per stream", line["cells"], cells, True)
        add(f"{label}K (MiB)", line["k"], mib(k))
        add(f"{label}V (MiB)", line["v"], mib(v))
    if mem["r"] or mem["s"] or m.rs:
        add("recurrent caches (lines)", len(m.rs), 1 if (mem["r"] or mem["s"]) else 0, True)
        for line in m.rs[:1]:
            add("recurrent rows", line["cells"] * (1 + line["rs_seq"]), mem["rs_rows"], True)
            add("R conv state (MiB)", line["r"], mib(mem["r"]))
            add("S recurrent state (MiB)", line["s"], mib(mem["s"]))
    total = sum(float(v) for v in m.model_buffers.values())
    n_lines = len(m.model_buffers)
    pred = llamacpp_model_buffer_bytes(loaded) / 2**20
    # each buffer line (CPU, CPU_REPACK…) is rounded to 0.01 MiB on its own
    add("model buffers (MiB, summed)", f"{total:.2f}", f"{pred:.4f}", tol=0.005 * n_lines + 1e-9)
    add("tensor bytes (llama_model_size)", m.exact["model_size"], sum(t.n_bytes for t in loaded.tensors), True)
    return rows
