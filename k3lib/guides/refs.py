"""References the audit compares against: K3's real architecture, its published files, and
plans on the guides' own inputs."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from k3lib.core.data import DATA_DIR
from k3lib.core.errors import K3InputError
from k3lib.core.memory import kv_cache_bytes, weights_bytes
from k3lib.core.models import get_model
from k3lib.core.plan import Assumptions, Plan, make_plan
from k3lib.core.units import GB, GiB
from k3lib.guides.claims import G000_ACTIVATION, G000_OVERHEAD_PER_GPU_RULE

PUBLISHED_CSV = "measured/kimi-k3-published.csv"


@dataclass(frozen=True)
class PublishedFile:
    """One published K3 checkpoint or GGUF and its size in bytes (``data/measured/kimi-k3-published.csv``)."""

    engine: str
    label: str
    bytes: int
    exact: bool
    source: str


@cache
def published_files() -> tuple[PublishedFile, ...]:
    """Every row of ``data/measured/kimi-k3-published.csv``."""
    with open(DATA_DIR / PUBLISHED_CSV, newline="", encoding="utf-8") as fh:
        return tuple(
            PublishedFile(r["engine"], r["label"], int(r["bytes"]), r["precision_note"] == "exact", r["source"])
            for r in csv.DictReader(fh)
        )


def published_bytes(label: str) -> int:
    """The size of one published file by its label (e.g. ``"UD-Q8_K_XL"``)."""
    for f in published_files():
        if f.label == label:
            return f.bytes
    raise K3InputError("label", f"{label!r} is not a published K3 file", ", ".join(f.label for f in published_files()))


def nearest_published(size_bytes: float, *, exact_only: bool = True) -> tuple[PublishedFile, float]:
    """The published file closest to ``size_bytes`` and ``size / file − 1``."""
    cands = [f for f in published_files() if f.exact or not exact_only]
    best = min(cands, key=lambda f: abs(size_bytes / f.bytes - 1))
    return best, size_bytes / best.bytes - 1


def real_node_gpus(*, weights: str, kv_dtype: str, context: int, gpu: str = "h100") -> int | None:
    """GPUs the real K3 needs in whole 8-GPU nodes, TP inside a node (the shared planner,
    :func:`k3lib.studies.parallel.min_gpus`); ``None`` if nothing up to 256 GPUs fits."""
    return _real_node_gpus(weights, kv_dtype, int(context), gpu)


@cache
def _real_node_gpus(weights: str, kv_dtype: str, context: int, gpu: str) -> int | None:
    from k3lib.studies.parallel import min_gpus as planner_min_gpus

    plan = planner_min_gpus(
        model="kimi-k3", gpu=gpu, weights=weights, kv_dtype=kv_dtype, context=context, whole_nodes=True, gpus_per_node=8
    )
    return None if plan is None else plan.gpus


@cache
def _k3():
    return get_model("kimi-k3")


@cache
def _g000():
    return get_model("kimi-k3@guide-000")


def _unit_bytes(unit: str) -> int:
    return {"GiB": GiB, "GB": GB}[unit]


def real_weights_bytes(weight_format: str) -> int:
    """K3's real weight bytes in a format (``native`` = MXFP4 routed experts + BF16 elsewhere).

    >>> round(real_weights_bytes("bf16") / 1e9, 1)
    5559.0
    """
    return weights_bytes(_k3(), weight_format)


def real_kv_bytes(*, kv_dtype: str, context_tokens: int, batch: int = 1, include_state: bool = True) -> int:
    """K3's real KV cache: 24 MLA layers × 576 elements per token, plus (by default) the
    constant KDA state of 116,158,464 FP32 elements per sequence.

    >>> real_kv_bytes(kv_dtype="bf16", context_tokens=1, include_state=False)
    27648
    """
    k3 = _k3()
    if not include_state:
        from k3lib.core.precisions import get_kv_dtype

        return batch * context_tokens * k3.kv_bytes_per_token(get_kv_dtype(kv_dtype).bytes_per_element)
    return kv_cache_bytes(k3, context_tokens=context_tokens, batch=batch, kv_dtype=kv_dtype)


def real_state_bytes() -> int:
    """K3's KDA state per sequence at FP32 (bytes): 116,158,464 elements × 4."""
    return _k3().state_elements_per_sequence() * 4


def _own_plan(
    *,
    weights: str,
    kv_dtype: str,
    context: int,
    gpus: int,
    overhead_total: int | None = None,
    overhead_per_gpu: int | None = None,
    activation: int = G000_ACTIVATION,
    gpu: str = "h100",
):
    """A plan on guide 000's own numbers (profile ``kimi-k3@guide-000``), its GPUs one pool (the guide's reading)."""
    return make_plan(
        model="kimi-k3@guide-000",
        gpu=gpu,
        gpus=gpus,
        nodes=1,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        assumptions=Assumptions(
            activation_bytes=activation, overhead_total_bytes=overhead_total, overhead_per_gpu_bytes=overhead_per_gpu
        ),
    )


def _real_plan(
    *,
    weights: str,
    kv_dtype: str,
    context: int,
    gpus: int,
    overhead_per_gpu: int = G000_OVERHEAD_PER_GPU_RULE,
    activation: int = G000_ACTIVATION,
    gpu: str = "h100",
):
    """A plan for K3's real architecture, with guide 000's activation and per-GPU overhead."""
    return make_plan(
        model="kimi-k3",
        gpu=gpu,
        gpus=gpus,
        weights=weights,
        kv_dtype=kv_dtype,
        context=context,
        assumptions=Assumptions(activation_bytes=activation, overhead_per_gpu_bytes=overhead_per_gpu),
    )


def min_gpus(make: Callable[[int], Plan], limit: int = 256, start: int = 1) -> int | None:
    """Smallest GPU count ``n ≥ start`` for which ``make(n)`` is a plan that fits (None if none up to ``limit``)."""
    for n in range(max(1, start), limit + 1):
        try:
            plan = make(n)
        except K3InputError:
            continue
        if plan.fits:
            return n
    return None


# ---------------------------------------------------------------- tolerance


@cache
def measured_outside_weights_kv_gib(utilization: float = 0.95) -> tuple[float, ...]:
    """Per-GPU memory outside weights and KV in each vLLM 0.19 H100 run of
    ``data/measured/vllm-0.19-h100-sweep.csv`` at one ``gpu_memory_utilization`` (0.95, the
    sweep's usual setting; the reserve left outside vLLM's pool depends on it): capacity printed
    per GPU − weights − KV cache (GiB, both as vLLM logs them). The guide's "overhead" (CUDA context, NCCL, activations,
    CUDA graphs and the unused reserve) is what a deployer must leave free besides weights and KV."""
    import re

    from k3lib.engines.calibration import read_vllm_sweep

    runs: dict[str, dict[str, dict[str, str]]] = {}
    for r in read_vllm_sweep():
        runs.setdefault(r["source"], {})[r["quantity"]] = r
    out = []
    for d in runs.values():
        if "weights_memory_per_gpu" in d and "kv_cache_memory_per_gpu" in d:
            gpu = d["weights_memory_per_gpu"]["gpu"]
            m = re.search(r"\(([\d.]+) GiB each", gpu)
            u = re.search(r"gpu_memory_utilization=([\d.]+)", gpu)
            if m and u and float(u.group(1)) == utilization:
                out.append(
                    float(m.group(1))
                    - float(d["weights_memory_per_gpu"]["value"])
                    - float(d["kv_cache_memory_per_gpu"]["value"])
                )
    if not out:
        raise K3InputError("vllm-0.19-h100-sweep.csv", "no run with weights, KV and a printed capacity")
    return tuple(sorted(out))
