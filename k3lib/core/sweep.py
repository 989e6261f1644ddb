"""Vectorized sweeps: many plans at once with NumPy, the same arithmetic as
:func:`k3lib.core.plan.make_plan` (per GPU, bytes).

$$m_{gpu} = \\lceil W/G \\rceil + KV_{gpu}(T) + \\lceil A/G \\rceil + O_{gpu} \\le C_{gpu}$$

Loops run only over the small axes (model × GPU count × KV dtype); the product
with GPUs, precisions and contexts is broadcast. Used by the cheat sheets and
``benchmarks/bench_sweep.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.memory import activation_bytes, weights_bytes
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import GPUSpec, get_gpu
from k3lib.core.models import ModelSpec, PublishedProfile, get_model
from k3lib.core.plan import Assumptions, choose_layout, fixed_overhead
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.core.units import parse_context_tokens


@dataclass(frozen=True)
class SweepResult:
    """Arrays indexed ``[model, gpu, count, weights, kv_dtype, context]``; bytes per GPU.
    ``valid`` is False where a profile publishes no figure for a precision."""

    models: tuple[str, ...]
    gpus: tuple[str, ...]
    counts: tuple[int, ...]
    weights: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    contexts: tuple[int, ...]
    total_bytes_per_gpu: np.ndarray
    available_bytes_per_gpu: np.ndarray
    valid: np.ndarray

    @property
    def fits(self) -> np.ndarray:
        return self.valid & (self.total_bytes_per_gpu <= self.available_bytes_per_gpu)

    @property
    def headroom_bytes_per_gpu(self) -> np.ndarray:
        return self.available_bytes_per_gpu - self.total_bytes_per_gpu

    @property
    def size(self) -> int:
        return int(self.total_bytes_per_gpu.size)

    def to_frame(self):
        """Long-format DataFrame, one row per plan."""
        import pandas as pd

        idx = pd.MultiIndex.from_product([self.models, self.gpus, self.counts, self.weights, self.kv_dtypes,
                                          self.contexts],
                                         names=["model", "gpu", "gpus", "weights", "kv_dtype", "context_tokens"])
        return pd.DataFrame({"total_bytes_per_gpu": self.total_bytes_per_gpu.ravel(),
                             "available_bytes_per_gpu": self.available_bytes_per_gpu.ravel(),
                             "fits": self.fits.ravel(), "valid": self.valid.ravel()}, index=idx).reset_index()


def _kv_per_gpu_bytes(model: ModelSpec, ctx: np.ndarray, *, batch: int, bpe: float, tp: int, pp: int,
                      state_bpe: float) -> np.ndarray:
    """Vector over contexts of :func:`k3lib.core.plan.kv_bytes_per_gpu`."""
    if isinstance(model, PublishedProfile):
        total = batch * ctx * model.kv_bytes_per_token(bpe)
        return -(-total // (tp * pp))
    out = np.zeros(ctx.shape, dtype=np.float64)
    for g in model.attention:
        tokens = np.minimum(ctx, g.window_tokens) if g.kind == "sliding" else ctx
        elems = g.count * g.kv_elements_per_token_per_layer * tokens * batch * bpe
        if g.kind in ("full", "sliding"):
            elems = elems / min(tp, g.kv_heads)
        state = g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) * batch
        out = out + elems + state * state_bpe / tp
    return np.ceil(out / pp).astype(np.int64)


def sweep(*, models: Sequence[str], gpus: Sequence[str], counts: Sequence[int], weights: Sequence[str],
          kv_dtypes: Sequence[str], contexts: Sequence[object], batch: int = 1, nodes: int = 1,
          assumptions: Assumptions | None = None) -> SweepResult:
    """Evaluate every combination; see :class:`SweepResult`."""
    a = assumptions or Assumptions()
    specs = [get_model(m) for m in models]
    hws: list[GPUSpec] = [get_gpu(g) for g in gpus]
    fmts = [get_weight_format(w) for w in weights]
    kvs = [get_kv_dtype(k) for k in kv_dtypes]
    ctx = np.array([parse_context_tokens(c) for c in contexts], dtype=np.int64)
    counts = [int(n) for n in counts]
    M, G, N, P, K, C = len(specs), len(hws), len(counts), len(fmts), len(kvs), len(ctx)
    total = np.zeros((M, G, N, P, K, C), dtype=np.int64)
    avail = np.zeros((M, G, 1, 1, 1, 1), dtype=np.int64)
    valid = np.ones((M, 1, 1, P, 1, 1), dtype=bool)
    for mi, spec in enumerate(specs):
        basis = a.memory_basis or (spec.memory_basis if isinstance(spec, PublishedProfile) else "usable")
        avail[mi, :, 0, 0, 0, 0] = [hw.memory_bytes(basis) for hw in hws]
        w = np.zeros(P, dtype=np.int64)
        for pi, f in enumerate(fmts):
            try:
                w[pi] = weights_bytes(spec, f)
            except K3InputError:
                valid[mi, 0, 0, pi, 0, 0] = False
        act = a.activation_bytes if a.activation_bytes is not None else activation_bytes(
            spec, batch=batch, prefill_chunk_tokens=a.prefill_chunk_tokens)
        for ni, n in enumerate(counts):
            tp, pp, _ = choose_layout(spec, gpus=n, nodes=nodes if n % nodes == 0 else 1)
            w_gpu = -(-w // n)                      # [P]
            act_gpu = -(-act // n)
            for ki, kv in enumerate(kvs):
                kv_gpu = _kv_per_gpu_bytes(spec, ctx, batch=batch, bpe=kv.bytes_per_element, tp=tp, pp=pp,
                                           state_bpe=a.state_bytes_per_element)   # [C]
                payload = w_gpu[:, None] + kv_gpu[None, :] + act_gpu           # [P, C]
                fixed = fixed_overhead(spec, a, gpus=n)
                if fixed is not None:
                    oh = np.full_like(payload, fixed[0])
                else:
                    oh = np.floor(a.cuda_context_bytes + (tp - 1) * a.nccl_bytes_per_peer
                                  + a.fragmentation_fraction * payload).astype(np.int64)
                total[mi, :, ni, :, ki, :] = (payload + oh)[None, :, :]
    return SweepResult(tuple(s.id for s in specs), tuple(h.id for h in hws), tuple(counts),
                       tuple(f.id for f in fmts), tuple(k.id for k in kvs), tuple(int(c) for c in ctx),
                       total, np.broadcast_to(avail, total.shape), np.broadcast_to(valid, total.shape))
