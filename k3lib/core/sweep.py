"""Vectorized sweeps: many plans at once with NumPy — the SAME stage functions as
:func:`k3lib.core.plan.make_plan`, called with an array of contexts (bytes on the fullest GPU):

$$m_{gpu} = \\max_s \\big( W_s + KV_{rank,s}(T) + A/TP + O_s \\big) \\le C_{gpu}$$

KV counts only the layers that own a cache (KV-sharing layers and MTP modules add none),
through the same :func:`k3lib.core.memory.kv_bytes_per_rank` that make_plan uses.
Loops run only over the small axes (model × GPU count × KV dtype); the product
with GPUs, precisions and contexts is broadcast. Used by the cheat sheets and
``benchmarks/bench_sweep.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.checkpoints import resolve_weights
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.layout import Layout, choose_layout
from k3lib.core.memory import kv_cache_bytes, weights_bytes
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.plan import (
    Assumptions,
    activation_total_bytes,
    memory_basis_for,
    profile_share_bytes,
    stage_totals_bytes,
    stage_weights,
)
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import parse_context_tokens, parse_positive_int

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd

    from k3lib.core.precisions import KVDtype
    from k3lib.core.units import IntArray


@dataclass(frozen=True)
class SweepResult:
    """Arrays indexed ``[model, gpu, count, weights, kv_dtype, context]``; bytes per GPU.
    ``valid`` is False where a profile publishes no figure for a precision, or where a
    GPU count has no deployable layout (e.g. 12 GPUs on 8-GPU nodes)."""

    models: tuple[str, ...]
    gpus: tuple[str, ...]
    counts: tuple[int, ...]
    weights: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    contexts: tuple[int, ...]
    total_bytes_per_gpu: IntArray
    available_bytes_per_gpu: IntArray
    valid: npt.NDArray[np.bool_]
    within_max_context: npt.NDArray[np.bool_] | None = None

    @property
    def fits(self) -> npt.NDArray[np.bool_]:
        """Loads (valid, context within the model's maximum) and the fullest GPU fits."""
        ok = self.valid & (self.total_bytes_per_gpu <= self.available_bytes_per_gpu)
        return ok if self.within_max_context is None else ok & self.within_max_context

    @property
    def headroom_bytes_per_gpu(self) -> IntArray:
        return self.available_bytes_per_gpu - self.total_bytes_per_gpu

    @property
    def size(self) -> int:
        return int(self.total_bytes_per_gpu.size)

    def to_frame(self) -> pd.DataFrame:
        """Long-format DataFrame, one row per plan."""
        import pandas as pd

        idx = pd.MultiIndex.from_product(
            [self.models, self.gpus, self.counts, self.weights, self.kv_dtypes, self.contexts],
            names=["model", "gpu", "gpus", "weights", "kv_dtype", "context_tokens"],
        )
        return pd.DataFrame(
            {
                "total_bytes_per_gpu": self.total_bytes_per_gpu.ravel(),
                "available_bytes_per_gpu": self.available_bytes_per_gpu.ravel(),
                "fits": self.fits.ravel(),
                "valid": self.valid.ravel(),
            },
            index=idx,
        ).reset_index()


def _weights_id(weights: str) -> str:
    """A weight-format id as make_plan records it, or a checkpoint id (checked per model)."""
    try:
        return get_weight_format(weights).id
    except K3InputError:
        return str(weights).lower()


def _per_gpu_bytes(
    spec: ModelSpec,
    hw: GPUSpec,
    layout: Layout,
    fmts: Sequence[str],
    kvs: Sequence[KVDtype],
    ctx: IntArray,
    *,
    batch: int,
    a: Assumptions,
) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """[P, K, C] fullest-GPU bytes and [P] validity for one layout: the same stage
    arithmetic as :func:`k3lib.core.plan.make_plan`, with the contexts as an array."""
    P, K, C = len(fmts), len(kvs), len(ctx)
    out = np.zeros((P, K, C), dtype=np.int64)
    valid = np.ones(P, dtype=bool)
    act_total = activation_total_bytes(spec, layout, batch, a)
    for pi, name in enumerate(fmts):
        try:
            f, published, _ = resolve_weights(spec, name)
            w_total = published or weights_bytes(spec, f)
        except K3InputError:
            valid[pi] = False
            continue
        if isinstance(spec, PublishedProfile):
            for ki, kv in enumerate(kvs):
                kv_total = kv_cache_bytes(spec, context_tokens=ctx, batch=batch, kv_dtype=kv)
                w, kv_gpu, act, oh = profile_share_bytes(
                    spec,
                    layout,
                    weights_total_bytes=w_total,
                    kv_total_bytes=kv_total,
                    activation_total_bytes=act_total,
                    a=a,
                )
                out[pi, ki] = w + kv_gpu + act + oh
            continue
        scale = published / weights_bytes(spec, f) if published else 1.0
        sw = stage_weights(spec, layout, f, activation_total_bytes=act_total, weights_scale=scale)
        for ki, kv in enumerate(kvs):
            stages = stage_totals_bytes(
                spec, layout, sw, context_tokens=ctx, batch=batch, kv_bytes_per_element=kv.bytes_per_element, a=a
            )
            best = np.zeros(len(ctx), dtype=np.int64)  # every stage's total is ≥ 0
            for st_w, (kv_gpu, nccl, rt) in zip(sw, stages):
                tot = st_w.sharded + st_w.replicated + st_w.routed + st_w.activation + kv_gpu + nccl + rt
                best = np.maximum(best, tot)
            out[pi, ki] = best
    return out, valid


def sweep(
    *,
    models: Sequence[str | ModelSpec],
    gpus: Sequence[str | GPUSpec],
    counts: Sequence[int],
    weights: Sequence[str],
    kv_dtypes: Sequence[str],
    contexts: Sequence[object],
    batch: int = 1,
    nodes: int | None = None,
    assumptions: Assumptions | None = None,
    tp: int | None = None,
    pp: int | None = None,
    dp: int = 1,
    ep: int = 1,
    layout: Layout | None = None,
) -> SweepResult:
    """Evaluate every combination; see :class:`SweepResult`. Each GPU count gets the layout
    :func:`k3lib.core.plan.make_plan` would give it with the same ``nodes``/``tp``/``pp``/``dp``/``ep``
    (:func:`k3lib.core.layout.choose_layout`: with none given, the deployable one on the GPU's
    nodes); ``layout`` fixes the whole layout (a plan's: ``sweep(..., layout=plan.layout)``), and
    a count other than its GPU count is not ``valid``. A count with no such layout is not ``valid``."""
    if layout is not None and (tp is not None or pp is not None or nodes is not None or dp != 1 or ep != 1):
        raise K3InputError("layout", "give a whole layout or its parts (nodes, tp, pp, dp, ep), not both")
    a = assumptions or Assumptions()
    specs = [get_model(m) for m in models]
    hws: list[GPUSpec] = [g if isinstance(g, GPUSpec) else get_gpu(g) for g in gpus]
    fmts = [_weights_id(w) for w in weights]
    kvs = [get_kv_dtype(k) for k in kv_dtypes]
    ctx = np.array([parse_context_tokens(c) for c in contexts], dtype=np.int64)
    counts = [parse_positive_int(n, "gpus") for n in counts]
    M, G, N, P, K, C = len(specs), len(hws), len(counts), len(fmts), len(kvs), len(ctx)
    total = np.zeros((M, G, N, P, K, C), dtype=np.int64)
    avail = np.zeros((M, G, 1, 1, 1, 1), dtype=np.int64)
    valid = np.zeros((M, G, N, P, 1, 1), dtype=bool)
    cache: dict[tuple[int, Layout], tuple[IntArray, npt.NDArray[np.bool_]]] = {}
    within = np.array([ctx <= s.max_context_tokens for s in specs]).reshape(M, 1, 1, 1, 1, C)
    for mi, spec in enumerate(specs):
        basis = memory_basis_for(spec, a)
        for gi, hw in enumerate(hws):
            avail[mi, gi, 0, 0, 0, 0] = hw.memory_bytes(basis)
            per_node = hw.gpus_per_node
            for ni, n in enumerate(counts):
                try:
                    if layout is not None:
                        if n != layout.gpus:
                            continue
                        chosen = layout
                    else:
                        chosen = choose_layout(
                            spec, gpus=n, nodes=nodes, tp=tp, pp=pp, dp=dp, ep=ep, gpus_per_node=per_node
                        )
                    if chosen.ep > 1 and isinstance(spec, Architecture) and not spec.mlp.moe_layers:
                        continue  # make_plan refuses EP for a dense model
                    if chosen.dp > 1 or chosen.ep > 1:
                        if isinstance(spec, PublishedProfile):
                            continue  # make_plan: a profile has TP and PP only
                except K3InputError:
                    continue
                key = (mi, chosen)
                if key not in cache:
                    cache[key] = _per_gpu_bytes(spec, hw, chosen, fmts, kvs, ctx, batch=batch, a=a)
                t, v = cache[key]
                total[mi, gi, ni] = t
                valid[mi, gi, ni, :, 0, 0] = v
    return SweepResult(
        tuple(s.id for s in specs),
        tuple(h.id for h in hws),
        tuple(counts),
        tuple(fmts),
        tuple(k.id for k in kvs),
        tuple(int(c) for c in ctx),
        total,
        np.broadcast_to(avail, total.shape),
        np.broadcast_to(valid, total.shape),
        np.broadcast_to(within, total.shape),
    )
