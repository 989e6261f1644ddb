"""Cost: dollars per hour and per million output tokens, from a price per GPU-hour the caller
passes (a rental quote or a price table's row; None gives None).

$$\\$/h = G·p, \\qquad \\$/M_{out} = \\frac{\\$/h}{\\text{output tok/s}·3600}·10^6$$

at the stated concurrency (the throughput that concurrency reaches).

>>> usd_per_hour(gpus=8, price_per_gpu_hour=2.5)
20.0
>>> round(usd_per_million_output_tokens(usd_per_hour_=20.0, output_tokens_per_s=5000), 3)
1.111
"""

from __future__ import annotations

from k3lib.core.errors import K3InputError


def usd_per_hour(*, gpus: int, price_per_gpu_hour: float | None) -> float | None:
    """$G·p$; None without a price. A CPU host (``gpus`` 0) is priced as one machine."""
    if price_per_gpu_hour is None:
        return None
    if (
        isinstance(price_per_gpu_hour, bool)
        or not isinstance(price_per_gpu_hour, (int, float))
        or not price_per_gpu_hour >= 0
    ):
        raise K3InputError("price_per_gpu_hour", f"{price_per_gpu_hour!r}", "US dollars per GPU-hour, ≥ 0")
    return max(1, gpus) * float(price_per_gpu_hour)


def usd_per_million_output_tokens(*, usd_per_hour_: float | None, output_tokens_per_s: float | None) -> float | None:
    """$\\$/h ÷ (\\text{tok/s}·3600) · 10^6$; None without a price or a throughput."""
    if usd_per_hour_ is None or not output_tokens_per_s:
        return None
    return usd_per_hour_ / (output_tokens_per_s * 3600) * 1e6
