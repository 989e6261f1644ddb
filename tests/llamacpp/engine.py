"""Run the real llama.cpp on a synthetic family and read what it allocated."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNER = Path(__file__).with_name("runner.py")
MiB = 2**20


def run(*args: str, timeout: int = 300) -> str:
    """Run ``runner.py`` in a child process; its stdout (llama.cpp's log) or an AssertionError with it."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode:
        raise AssertionError(
            f"llama.cpp runner {args[0]} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        )
    return p.stdout


@dataclass(frozen=True)
class Measured:
    """What llama.cpp printed (MiB to 2 decimals, as text) and reported exactly."""

    log: str
    kv: tuple[dict, ...]  #: each 'llama_kv_cache: size = …' line: cells, layers, k/v type and MiB text
    rs: tuple[dict, ...]  #: each 'llama_memory_recurrent: size = …' line: cells, R/S MiB text
    model_buffers: dict[str, str]  #: buffer name → MiB text
    output_mib: str | None
    compute_mib: dict[str, str]
    exact: dict


_KV = re.compile(
    r"llama_kv_cache: size =\s*([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/\s*(\d+) seqs\), "
    r"K \((\w+)\):\s*([\d.]+) MiB, V \((\w+)\):\s*([\d.]+) MiB"
)
_RS = re.compile(
    r"llama_memory_recurrent: size =\s*([\d.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+) seqs\s+(\d+) "
    r"rs_seq\), R \((\w+)\):\s*([\d.]+) MiB, S \((\w+)\):\s*([\d.]+) MiB"
)
_MODEL = re.compile(r"load_tensors:\s+(\S+) model buffer size =\s*([\d.]+) MiB")
_OUT = re.compile(r"(\S+)\s+output buffer size =\s*([\d.]+) MiB")
_COMPUTE = re.compile(r"(\S+) compute buffer size =\s*([\d.]+) MiB")


def measure(model_path: str | Path, **settings) -> Measured:
    """Load ``model_path`` in llama.cpp with ``settings`` (n_ctx, n_seq, n_ubatch, type_k, type_v,
    flash_attn, swa_full, kv_unified) and return what it allocated."""
    out = run("load", str(model_path), json.dumps(settings))
    log, _, tail = out.rpartition("K3_EXACT ")
    exact = json.loads(tail)
    kv = tuple(
        {
            "mib": m[0],
            "cells": int(m[1]),
            "layers": int(m[2]),
            "seqs": int(m[4]),
            "type_k": m[5],
            "k": m[6],
            "type_v": m[7],
            "v": m[8],
        }
        for m in _KV.findall(log)
    )
    rs = tuple(
        {
            "mib": m[0],
            "cells": int(m[1]),
            "layers": int(m[2]),
            "seqs": int(m[3]),
            "rs_seq": int(m[4]),
            "r": m[6],
            "s": m[8],
        }
        for m in _RS.findall(log)
    )
    return Measured(
        log,
        kv,
        rs,
        dict(_MODEL.findall(log)),
        (_OUT.search(log) or [None, None, None])[2],
        dict(_COMPUTE.findall(log)),
        exact,
    )


def mib(n_bytes: int) -> str:
    """Bytes as llama.cpp prints them ('%.2f' of bytes ÷ 2^20)."""
    return f"{n_bytes / MiB:.2f}"
