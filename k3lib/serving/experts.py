"""Routed experts a decode step reads.

**Assumption (stated):** each of the $B$ sequences (tokens) of a step picks its $k$ experts
of a layer's $E$ independently and uniformly (i.i.d. routing; real routers are skewed,
so this over-counts distinct experts a little for a skewed router and is exact in
expectation for a balanced one). One draw of $k$ distinct experts misses a given expert
with probability $1 - k/E$, so $B$ sequences miss it with $(1-k/E)^B$ and the expected
number of distinct experts touched is

$$E_{touched}(B) = E·\\left(1-(1-k/E)^B\\right)$$

— $k$ at $B = 1$, tending to $E$ as $B$ grows.

>>> expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=1)
8.0
>>> round(expected_distinct_experts(n_experts=256, experts_per_token=8, tokens=64), 2)   # 256(1-(1-8/256)^64)
222.44
"""

from __future__ import annotations

from k3lib.core.errors import K3InputError


def fraction_of_experts_touched(*, n_experts: int, experts_per_token: int, tokens: float) -> float:
    """Share of a layer's experts that ``tokens`` i.i.d. draws of $k$ touch: $1-(1-k/E)^B$
    (0 for a dense model, $E = 0$).

    >>> round(fraction_of_experts_touched(n_experts=128, experts_per_token=4, tokens=1), 6)   # gpt-oss-120b: 4/128
    0.03125
    """
    if n_experts <= 0:
        return 0.0
    if not 0 < experts_per_token <= n_experts:
        raise K3InputError("experts_per_token", f"{experts_per_token!r}", f"1 … {n_experts}")
    if tokens < 0:
        raise K3InputError("tokens", f"{tokens!r} must be ≥ 0")
    return 1.0 - (1.0 - experts_per_token / n_experts) ** tokens


def expected_distinct_experts(*, n_experts: int, experts_per_token: int, tokens: float) -> float:
    """$E·(1-(1-k/E)^B)$: expected distinct experts of one layer touched by ``tokens`` sequences
    (see the module docstring for the i.i.d. routing assumption)."""
    return n_experts * fraction_of_experts_touched(
        n_experts=n_experts, experts_per_token=experts_per_token, tokens=tokens
    )


def routed_bytes_read_per_step(
    *, routed_bytes_per_gpu: float, n_experts: int, experts_per_token: int, tokens: float
) -> float:
    """Expert weight bytes one GPU reads in a step of ``tokens`` tokens:
    $R_{gpu}·(1-(1-k/E)^B)$, where $R_{gpu}$ is the routed-expert bytes the GPU holds.

    The same share holds under both splits: with tensor parallelism each GPU holds a $1/TP$
    slice of every expert and reads the slice of each touched expert; with expert parallelism
    it holds $E/EP$ whole experts and, by symmetry of i.i.d. routing, the expected share of
    them touched is the same $1-(1-k/E)^B$.

    DeepSeek-R1 FP8 on 8 GPUs (TP 8): 58 MoE layers × 256 experts × 44,040,192 B ÷ 8 = 81.7 GB
    held per GPU; one sequence reads 8/256 of it (2.55 GB), 64 sequences 86.9 %:

    >>> r = 58 * 256 * 3 * 7168 * 2048 / 8
    >>> round(routed_bytes_read_per_step(routed_bytes_per_gpu=r, n_experts=256, experts_per_token=8, tokens=1) / 1e9, 2)
    2.55
    >>> round(routed_bytes_read_per_step(routed_bytes_per_gpu=r, n_experts=256, experts_per_token=8, tokens=64) / r, 3)
    0.869
    """
    return routed_bytes_per_gpu * fraction_of_experts_touched(
        n_experts=n_experts, experts_per_token=experts_per_token, tokens=tokens
    )
