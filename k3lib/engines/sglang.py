"""SGLang 0.5.x: the default mem_fraction_static and the token pool's cell size."""

from __future__ import annotations

import math
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.kinds import kind_of
from k3lib.core.units import MiB
from k3lib.engines.base import _kv_bytes_per_element, _resolve_model

# ---------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------


def sglang_mem_fraction_static(
    *,
    gpu_memory_bytes: int,
    tp: int = 1,
    pp: int = 1,
    chunked_prefill_size: int | None = None,
    cuda_graph_max_bs: int | None = None,
) -> float:
    """SGLang's default ``mem_fraction_static`` (0.5.5 ``python/sglang/srt/server_args.py``
    ``_handle_gpu_memory_settings``): (GPU MiB − reserved) ÷ GPU MiB, rounded to 3 decimals, with
    reserved = 512 + 1.5·max(chunk, 2048) + 2·graph bs + 1024·TP·PP/8 (at least 10,240 MiB above
    60 GiB). Chunk and graph batch by GPU size: < 20 GiB 2048 / 8; < 35 GiB 2048 / 24 (80 from
    TP 4); < 60 GiB 4096 / 32 (160); < 160 GiB 8192 / 256 (512); larger 16384 / 512. (No DP
    attention, speculative decoding or vision tower, which reserve more.)

    >>> sglang_mem_fraction_static(gpu_memory_bytes=int(79.19 * 2**30))      # H100, TP=1
    0.834
    """
    mib = gpu_memory_bytes / MiB
    if chunked_prefill_size is None or cuda_graph_max_bs is None:
        big = tp >= 4
        tier = (
            (2048, 8)
            if mib < 20 * 1024
            else (2048, 80 if big else 24)
            if mib < 35 * 1024
            else (4096, 160 if big else 32)
            if mib < 60 * 1024
            else (8192, 512 if big else 256)
            if mib < 160 * 1024
            else (16384, 512)
        )
        chunked_prefill_size = tier[0] if chunked_prefill_size is None else chunked_prefill_size
        cuda_graph_max_bs = tier[1] if cuda_graph_max_bs is None else cuda_graph_max_bs
    reserved = 512 + max(chunked_prefill_size, 2048) * 1.5 + cuda_graph_max_bs * 2 + tp * pp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)


def sglang_cell_bytes(model: Any, *, tp: int = 1, kv_dtype: str | float = "auto", dtype_bytes: int = 2) -> int:
    """Bytes per token slot of SGLang's pool on one rank (MLA: the latent only)."""
    arch, _ = _resolve_model(model)
    kv_b = _kv_bytes_per_element(kv_dtype, dtype_bytes)
    n = 0.0
    for g in arch.attention:
        if g.kv_shared:
            continue  # reads an earlier layer's cache
        n += g.count * kind_of(g).kv_elements_per_token_per_rank(g, tp) * kv_b  # GQA heads split, MLA latent whole
    return int(math.ceil(n))


#: where SGLang's pool and its print are defined (the rule :func:`sglang_kv_sizes_bytes` follows)
SGLANG_MEMORY_POOL_SOURCE = (
    "sgl-project/sglang python/sglang/srt/mem_cache/memory_pool.py @ 000ccdba94d4ed75d4fab7b1dac5f8ebcaaee7e8 "
    "(MHATokenToKVPool._create_buffers / MLATokenToKVPool.__init__, get_kv_size_bytes)"
)


def sglang_kv_sizes_bytes(
    model: Any,
    *,
    pool_tokens: int,
    tp: int = 1,
    kv_dtype: str | float = "auto",
    dtype_bytes: int = 2,
    page_size: int = 1,
) -> tuple[int, int]:
    """(K, V) bytes of SGLang's token pool on one rank, as its allocation line prints them.

    ``MHATokenToKVPool`` allocates, per layer, a K and a V buffer of shape
    ``(size + page_size, head_num, head_dim)`` (the extra page is the padded slot 0) and logs
    "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB" from ``get_kv_size_bytes``;
    ``MLATokenToKVPool`` keeps one latent buffer ``(size + page_size, 1, r_kv + d_rope)`` per layer
    and logs a single "KV size" (returned here as K, with V = 0). Layers that read an earlier
    layer's cache add nothing. Source: :data:`SGLANG_MEMORY_POOL_SOURCE`. Version boundary: the
    older pool (``BaseTokenToKVPool``, e.g. commit 14c3feee) padded exactly one slot and printed no
    sizes; at ``page_size`` 1 (the default) both give the same bytes.

    $K = (N + p)·\\sum_g n_g·h_g·H_g·b$, $V = (N + p)·\\sum_g n_g·h_g·H_{v,g}·b$, $h = \\max(1, K_{heads}/TP)$

    >>> k, v = sglang_kv_sizes_bytes("qwen3-235b-a22b", pool_tokens=367404, tp=4)  # logged 8.23 / 8.23 GB
    >>> round(k / 2**30, 2), round(v / 2**30, 2)
    (8.23, 8.23)
    """
    if pool_tokens < 0:
        raise K3InputError("pool_tokens", f"{pool_tokens!r} is not a token count", "an integer ≥ 0")
    if page_size < 1:
        raise K3InputError("page_size", f"{page_size!r} is not a positive token count", "an integer ≥ 1")
    arch, _ = _resolve_model(model)
    kv_b = _kv_bytes_per_element(kv_dtype, dtype_bytes)
    k_el = v_el = 0
    for g in arch.attention:
        if g.kv_shared:
            continue  # reads an earlier layer's cache
        k, v = kind_of(g).sglang_cell_elements(g, tp)  # GQA: heads per rank; MLA: the latent, no V
        k_el += g.count * k
        v_el += g.count * v
    rows = pool_tokens + page_size
    return int(math.ceil(rows * k_el * kv_b)), int(math.ceil(rows * v_el * kv_b))


#: bytes per element of the linear-attention state SGLang keeps (recurrent and conv state; the
#: estimate's rule at PP = 1 and PP > 1 alike)
SGLANG_STATE_BYTES_PER_ELEMENT = 4


def sglang_state_bytes(
    model: Any, *, tp: int = 1, batch: int = 1, state_bytes_per_element: float = SGLANG_STATE_BYTES_PER_ELEMENT
) -> int:
    """Linear-attention state (KDA, Gated DeltaNet) one rank holds for ``batch`` sequences:
    $B · \\sum_g n_g·(S^{rec}_g + S^{conv}_g) · b / TP$ — constant in the context, split by head
    over TP; 0 for a model without linear attention. Pass one pipeline stage as ``model`` for
    that stage's layers.

    >>> sglang_state_bytes("qwen3-next-80b", tp=2, batch=64) / 2**30   # 36 GDN layers
    2.35546875
    """
    arch, _ = _resolve_model(model)
    per_seq = sum(
        g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) for g in arch.attention
    )
    return int(math.ceil(per_seq * state_bytes_per_element * batch / tp))


def sglang_kv_budget_bytes(
    *, available_after_load_bytes: float, total_before_load_bytes: float, mem_fraction_static: float
) -> int:
    """Memory SGLang gives its KV pool: ``rest = free after loading − free before loading × (1 − f)``.

    SGLang 0.5.5 ``python/sglang/srt/model_executor/model_runner.py`` ``profile_max_num_token``
    (the same rule in ``model_runner_kv_cache_mixin.py`` on main, commit 01cc04e2): the "total"
    is the free memory measured once torch.distributed is up (``init_torch_distributed``, the
    minimum over ranks), the available memory is measured again after the weights load; both in
    GiB (``1 << 30``). "Load weight end. … avail mem=A GB, mem usage=U GB" prints the second and
    ``A + U`` = the free memory when loading began (``weight_load_mem_usage`` = before − after).

    >>> round(sglang_kv_budget_bytes(available_after_load_bytes=230.20 * 2**30,
    ...       total_before_load_bytes=(230.20 + 56.98) * 2**30, mem_fraction_static=0.911) / 2**30, 2)
    204.64
    """
    if not 0 < mem_fraction_static < 1:
        raise K3InputError(
            "mem_fraction_static", f"{mem_fraction_static!r} is outside (0, 1)", "a fraction such as 0.88"
        )
    if total_before_load_bytes <= 0 or available_after_load_bytes < 0:
        raise K3InputError(
            "available memory",
            "free memory before/after loading must be positive byte counts",
            "the 'avail mem' figures of the log, in bytes",
        )
    return int(available_after_load_bytes - total_before_load_bytes * (1 - mem_fraction_static))


def sglang_pool_tokens(
    model: Any,
    *,
    budget_bytes: float,
    tp: int = 1,
    kv_dtype: str | float = "auto",
    dtype_bytes: int = 2,
    page_size: int = 1,
) -> int:
    """Token slots of SGLang's pool: ``⌊budget ÷ cell⌋``, floored to the page size
    (``profile_max_num_token`` then ``init_memory_pool``, SGLang 0.5.5 model_runner.py)."""
    if page_size < 1:
        raise K3InputError("page_size", f"{page_size!r} is not a positive token count", "an integer ≥ 1")
    cell = sglang_cell_bytes(model, tp=tp, kv_dtype=kv_dtype, dtype_bytes=dtype_bytes)
    return max(0, int(budget_bytes) // cell) // page_size * page_size
