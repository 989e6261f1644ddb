"""Regenerate ``data/models/*.json`` (k3lib's architecture schema) from the
maintainers' local copies of the models' public config.json files (a folder beside the
checkout; the user-facing ``source`` of each model is its public origin, kept from the
existing ``data/models/<id>.json``).

Run from the repository root:  python scripts/build_builtin_models.py
The JSON files hold shapes only; parameter counts and KV bytes are computed by
k3lib at load time, so nothing derived is typed into data/.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from k3lib.loaders.hf_config import architecture_from_hf_config  # noqa: E402 — after the sys.path line (a checkout, not installed)

REF = ROOT.parent / "shared" / "reference"

# id → (config file, display name, models.csv row name)
BUILTINS = {
    "kimi-k3": ("kimi-k3.json", "Kimi K3", None),
    "kimi-k2": ("kimi-k2-instruct.json", "Kimi K2 Instruct", "Kimi-K2-Instruct"),
    "kimi-linear-48b": ("kimi-linear-48b-a3b-instruct.json", "Kimi Linear 48B-A3B", "Kimi-Linear-48B-A3B-Instruct"),
    "deepseek-v3": ("deepseek-v3.json", "DeepSeek-V3", "DeepSeek-V3"),
    "deepseek-r1": ("deepseek-r1.json", "DeepSeek-R1", "DeepSeek-R1"),
    "llama-3.1-8b": ("llama-3.1-8b.json", "Llama 3.1 8B", "Llama-3.1-8B"),
    "llama-3.1-70b": ("llama-3.1-70b.json", "Llama 3.1 70B", "Llama-3.1-70B"),
    "llama-3.1-405b": ("llama-3.1-405b.json", "Llama 3.1 405B", "Llama-3.1-405B"),
    "llama-4-scout": (
        "llama-4-scout-17b-16e-instruct.abridged.json",
        "Llama 4 Scout 17B-16E",
        "Llama-4-Scout-17B-16E-Instruct",
    ),
    "llama-4-maverick": (
        "llama-4-maverick-17b-128e-instruct.abridged.json",
        "Llama 4 Maverick 17B-128E",
        "Llama-4-Maverick-17B-128E-Instruct",
    ),
    "qwen3-235b-a22b": ("qwen3-235b-a22b.json", "Qwen3 235B-A22B", "Qwen3-235B-A22B"),
    "qwen3-235b-a22b-fp8": ("qwen3-235b-a22b-fp8.json", "Qwen3 235B-A22B FP8", None),
    "qwen3-30b-a3b": ("qwen3-30b-a3b.json", "Qwen3 30B-A3B", "Qwen3-30B-A3B"),
    "qwen3-next-80b": ("qwen3-next-80b-a3b-instruct.json", "Qwen3-Next 80B-A3B", "Qwen3-Next-80B-A3B-Instruct"),
    "qwen2.5-72b": ("qwen2.5-72b-instruct.json", "Qwen2.5 72B Instruct", "Qwen2.5-72B-Instruct"),
    "gpt-oss-120b": ("gpt-oss-120b.json", "gpt-oss-120b", "gpt-oss-120b"),
    "gpt-oss-20b": ("gpt-oss-20b.json", "gpt-oss-20b", "gpt-oss-20b"),
    "mixtral-8x7b": ("mixtral-8x7b-v0.1.json", "Mixtral 8x7B", "Mixtral-8x7B-v0.1"),
    "mistral-7b-v0.3": ("mistral-7b-v0.3.mlc-transcription.json", "Mistral 7B v0.3", "Mistral-7B-v0.3"),
    "gemma-3-27b": ("gemma-3-27b-it.maxtext-transcription.json", "Gemma 3 27B", "Gemma-3-27B-it"),
    "minimax-m2.5": ("minimax-m2.5.abridged.json", "MiniMax M2.5", None),
}


def main() -> None:
    rows = {r["model"]: r for r in csv.DictReader(open(REF / "models.csv", encoding="utf-8"))}
    out = ROOT / "data" / "models"
    out.mkdir(parents=True, exist_ok=True)
    for mid, (fname, name, row_name) in BUILTINS.items():
        cfg = json.loads((REF / "configs" / fname).read_text())
        existing = out / f"{mid}.json"
        origin = json.loads(existing.read_text())["source"] if existing.exists() else ""
        if not origin or "shared/" in origin:
            raise SystemExit(f"{mid}: give data/models/{mid}.json a public `source` (URL or repo@commit path) first")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arch = architecture_from_hf_config(cfg, id=mid, name=name, source=origin)
        doc = dataclasses.asdict(arch)
        doc["native_formats"] = dict(arch.native_formats)
        row = rows.get(row_name or "", {})
        doc["official_params_total"] = row.get("params_total_official", "")
        doc["official_params_active"] = row.get("params_active_official", "")
        if mid == "kimi-k3":
            doc["official_params_total"] = "2.8T (guide-004: 2,800B)"
            doc["official_params_active"] = "104B (guide-004)"
            doc["max_context_tokens"] = 1048576
        doc["notes"] = (
            "derived: shapes converted from the config by k3lib.loaders.hf_config; "
            + (f"models.csv row '{row_name}'; " if row else "")
            + "parameter counts and KV bytes are computed at load time"
        )
        doc = {"schema": "k3lib.architecture/1", **doc}
        (out / f"{mid}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote data/models/{mid}.json")


if __name__ == "__main__":
    main()
