"""Build the tier's GGUF files once: each family's F32 model (created and saved by llama.cpp,
optional tensors stripped) and llama.cpp's own quantizations of two of them."""

from __future__ import annotations

from pathlib import Path

from .engine import run
from .families import FAMILIES, strip_optional, write_metadata

#: (family, file type) pairs quantized by llama.cpp's llama_model_quantize
QUANTIZED = (
    ("llama-gqa", "Q8_0"),
    ("llama-gqa", "Q4_0"),
    ("llama-gqa", "Q4_K_M"),
    ("llama-gqa", "Q5_K_M"),
    ("llama-gqa", "Q6_K"),
    ("llama-gqa", "F16"),
    ("qwen3", "Q4_K_M"),
    ("qwen3moe", "Q4_K_M"),
    ("qwen3moe", "Q3_K_M"),
    ("qwen3moe", "Q2_K"),
)


def build_all(directory: str | Path) -> dict[str, Path]:
    """Write every family's GGUF and the quantized variants into ``directory``; name → path
    (``family`` for F32, ``family.FTYPE`` for a quantization)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for name, fam in FAMILIES.items():
        meta, raw, path = d / f"{name}.meta.gguf", d / f"{name}.raw.gguf", d / f"{name}.gguf"
        if not path.exists():
            write_metadata(fam, meta)
            build_meta = d / f"{name}.build.gguf"
            write_metadata(fam, build_meta, for_build=True)
            run("build", str(build_meta), str(raw))
            strip_optional(raw, path, meta)
            raw.unlink()
        out[name] = path
    for name, ftype in QUANTIZED:
        path = d / f"{name}.{ftype}.gguf"
        if not path.exists():
            run("quantize", str(out[name]), str(path), ftype)
        out[f"{name}.{ftype}"] = path
    return out
