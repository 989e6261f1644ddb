"""Configurations near a plan that fit, cheapest first, from two vectorized sweeps (the
same code as the plan): the same GPU with smaller formats or a shorter context, and other
GPUs of the same class. GPU counts are the deployable ones (one node, then whole nodes)."""

from __future__ import annotations

from dataclasses import dataclass

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB
from k3lib.report.figures import cost_usd
from k3lib.report.html import context_text, html_table, no_math, usd_text


@dataclass(frozen=True)
class Alternative:
    """A configuration near the requested one that fits (bytes on its fullest GPU)."""

    gpu: str
    gpu_name: str
    gpus: int
    weights: str
    kv_dtype: str
    context_tokens: int
    total_bytes_per_gpu: int
    available_bytes_per_gpu: int
    cost_usd: float | None
    changes: tuple[str, ...]
    settings_changed: int = 0  # of GPU type, weights, KV dtype, context (the GPU count not counted)
    nodes: int = 1

    @property
    def headroom_bytes_per_gpu(self) -> int:
        return self.available_bytes_per_gpu - self.total_bytes_per_gpu


def _smaller_weight_formats(plan, limit: int = 3) -> list[str]:
    """The plan's weight format, then up to ``limit`` formats with fewer weight bytes
    for this model (distinct sizes, largest first)."""
    from k3lib.core.memory import weights_bytes
    from k3lib.core.precisions import weight_formats

    current = plan.total.weights_bytes
    sizes: dict[int, str] = {}
    for f in weight_formats():
        if f.kind == "checkpoint method":
            continue  # how a checkpoint was quantized, not a format a user picks
        try:
            n = weights_bytes(plan.model, f)
        except K3InputError:
            continue
        if n < current and n not in sizes:
            sizes[n] = f.id
    return [plan.weight_format] + [sizes[n] for n in sorted(sizes, reverse=True)[:limit]]


def _smaller_kv_dtypes(plan) -> list[str]:
    from k3lib.core.precisions import get_kv_dtype, kv_dtypes

    current = get_kv_dtype(plan.kv_dtype).bytes_per_element
    out, seen = [plan.kv_dtype], {current}
    for k in sorted(kv_dtypes(), key=lambda k: -k.bytes_per_element):
        if k.bytes_per_element < current and k.bytes_per_element not in seen:
            seen.add(k.bytes_per_element)
            out.append(k.id)
    return out


def search_counts(plan, *, max_nodes: int = 4) -> tuple[int, ...]:
    """GPU counts to search: 1 … g on one node, then whole nodes of g GPUs (g = the GPU's
    node size) up to max(``max_nodes``, 2 × the plan's nodes) nodes. Counts without a
    deployable layout are dropped by the sweep (``valid`` False).

    >>> from k3lib.core.plan import make_plan
    >>> search_counts(make_plan(model="kimi-k3", gpu="h200", gpus=16, nodes=2))[-3:]
    (16, 24, 32)
    """
    from k3lib.core.search import gpus_per_node_of

    g = gpus_per_node_of(plan.gpu)
    return tuple(range(1, g + 1)) + tuple(k * g for k in range(2, max(max_nodes, 2 * plan.nodes) + 1))


def alternatives(plan, *, limit: int = 8, max_changes: int = 2) -> list[Alternative]:
    """Configurations near ``plan`` that fit, cheapest first (when ``plan`` fits, only
    cheaper ones).

    Two :func:`k3lib.core.sweep.sweep` calls over :func:`search_counts` (each count gets the
    layout the plan's own rule gives it): the same GPU with up to ``max_changes`` of
    {smaller weight format, smaller KV dtype, ½ or ¼ of the context}, and other GPUs of
    the same class with a catalogue price and everything else unchanged. For each setting
    the fewest GPUs that fit is kept; the ``limit`` nearest (fewest changed settings, then
    cheapest) are returned by cost (GPUs × price; unknown prices last, by GPU count).
    """
    from k3lib.core.hardware import list_gpus
    from k3lib.core.search import gpus_per_node_of
    from k3lib.core.sweep import sweep

    weights = _smaller_weight_formats(plan)
    kvs = _smaller_kv_dtypes(plan)
    contexts = [plan.context_tokens] + [plan.context_tokens // d for d in (2, 4) if plan.context_tokens // d >= 4096]
    others = [
        g
        for g in list_gpus()
        if g.id != plan.gpu.id and g.price_usd is not None and g.device_class == plan.gpu.device_class
    ]
    counts = search_counts(plan)
    found: dict[tuple, Alternative] = {}

    def collect(res, gpu_specs) -> None:
        fits, total, avail = res.fits, res.total_bytes_per_gpu, res.available_bytes_per_gpu
        for gi, hw in enumerate(gpu_specs):
            per_node = gpus_per_node_of(hw)
            for wi, w in enumerate(res.weights):
                for ki, k in enumerate(res.kv_dtypes):
                    for ci, c in enumerate(res.contexts):
                        changes = [
                            text
                            for changed, text in (
                                (hw.id != plan.gpu.id, f"GPU {hw.name}"),
                                (w != plan.weight_format, f"weights {w}"),
                                (k != plan.kv_dtype, f"KV {k}"),
                                (c != plan.context_tokens, f"context {c // 1024}K"),
                            )
                            if changed
                        ]
                        if len(changes) > max_changes or (hw.id != plan.gpu.id and len(changes) > 1):
                            continue
                        key = (hw.id, w, k, int(c))
                        for ni, n in enumerate(res.counts):
                            if key in found or not fits[0, gi, ni, wi, ki, ci]:
                                continue
                            if hw.id == plan.gpu.id and n == plan.gpus and not changes:
                                break  # the requested plan itself
                            shown = changes + ([f"{n} GPUs ({n - plan.gpus:+d})"] if n != plan.gpus else [])
                            found[key] = Alternative(
                                gpu=hw.id,
                                gpu_name=hw.name,
                                gpus=n,
                                weights=w,
                                kv_dtype=k,
                                context_tokens=int(c),
                                total_bytes_per_gpu=int(total[0, gi, ni, wi, ki, ci]),
                                available_bytes_per_gpu=int(avail[0, gi, ni, wi, ki, ci]),
                                cost_usd=None if hw.price_usd is None else n * hw.price_usd,
                                changes=tuple(shown),
                                settings_changed=len(changes),
                                nodes=-(-n // per_node),
                            )
                            break

    kw = dict(models=[plan.model], counts=counts, batch=plan.batch, assumptions=plan.assumptions)
    collect(sweep(gpus=[plan.gpu.id], weights=weights, kv_dtypes=kvs, contexts=contexts, **kw), [plan.gpu])
    if others:
        collect(
            sweep(
                gpus=[g.id for g in others],
                weights=[plan.weight_format],
                kv_dtypes=[plan.kv_dtype],
                contexts=[plan.context_tokens],
                **kw,
            ),
            others,
        )

    def cost(a: Alternative):
        return (a.cost_usd is None, a.cost_usd if a.cost_usd is not None else a.gpus)

    options = list(found.values())
    if getattr(plan, "engine", None) is not None:  # the plan's engine decides what fits, here too
        options = [a for a in (_engine_checked(plan, a, counts) for a in options) if a is not None]
    if plan.fits:  # the plan itself already fits: only what is cheaper is an alternative
        here = Alternative(
            plan.gpu.id,
            plan.gpu.name,
            plan.gpus,
            plan.weight_format,
            plan.kv_dtype,
            plan.context_tokens,
            0,
            0,
            cost_usd(plan),
            (),
        )
        options = [a for a in options if cost(a) < cost(here)]
    nearest = sorted(options, key=lambda a: (a.settings_changed, cost(a), -a.context_tokens))[:limit]
    return sorted(nearest, key=lambda a: (cost(a), a.settings_changed, -a.context_tokens))


def _engine_checked(plan, alt: Alternative, counts) -> Alternative | None:
    """``alt`` as the plan's engine sees it: the fewest of ``counts`` (from the sweep's count on)
    at which the engine's own rules load it, with the engine's bytes on the binding GPU; None
    when the engine loads it at none of them."""
    import dataclasses

    from k3lib.engines.deployment import EngineSettings, plan_for_engine

    settings = EngineSettings(
        plan.engine.engine,
        **{
            k: v
            for k, v in plan.engine.settings
            if k in ("gpu_memory_utilization", "max_num_seqs", "mem_fraction_static")
        },
    )
    for n in [c for c in counts if c >= alt.gpus]:
        try:
            p = plan_for_engine(
                model=plan.model,
                engine=settings,
                gpu=alt.gpu,
                gpus=n,
                weights=alt.weights,
                kv_dtype=alt.kv_dtype,
                context=alt.context_tokens,
                batch=plan.batch,
                with_limits=False,
            )
        except K3InputError:
            return None
        if p.fits:
            changes = tuple(c for c in alt.changes if " GPUs (" not in c) + (
                (f"{n} GPUs ({n - plan.gpus:+d})",) if n != plan.gpus else ()
            )
            price = p.gpu.price_usd
            return dataclasses.replace(
                alt,
                gpus=n,
                nodes=p.nodes,
                total_bytes_per_gpu=p.per_gpu.total_bytes,
                available_bytes_per_gpu=p.per_gpu.available_bytes,
                changes=changes,
                cost_usd=None if price is None else n * price,
            )
    return None


def alternatives_html(plan, *, limit: int = 8) -> str:
    """:func:`alternatives` as a table, with what changes in each."""
    alts = alternatives(plan, limit=limit)
    if not alts:
        most = search_counts(plan)[-1]
        what = "cheaper configuration" if plan.fits else "configuration near this one"
        return no_math(
            f"<p>No {what} fits (searched: 1 to {most} GPUs in deployable layouts, smaller weight and "
            "KV formats, ½ and ¼ of the context, other GPUs of the same class with a known price).</p>"
        )
    rows = [
        {
            "#": i + 1,
            "GPUs": f"{a.gpus}× {a.gpu_name}" + (f" ({a.nodes} nodes)" if a.nodes > 1 else ""),
            "weights": a.weights,
            "KV": a.kv_dtype,
            "context": context_text(a.context_tokens),
            "fullest GPU (GiB)": f"{a.total_bytes_per_gpu / GiB:,.1f} of {a.available_bytes_per_gpu / GiB:,.1f}",
            "headroom per GPU (GiB)": f"{a.headroom_bytes_per_gpu / GiB:,.1f}",
            "cost": usd_text(a.cost_usd),
            "what changes": "; ".join(a.changes),
        }
        for i, a in enumerate(alts)
    ]
    return no_math(html_table(rows))
