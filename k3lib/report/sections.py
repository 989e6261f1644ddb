"""The report's sections: each reads the ONE plan of a :class:`ReportConfig` (or the
plan itself) and returns escaped HTML, a chart, or both. The notebook's cells call them.

Every section's HTML is wrapped in :func:`no_math`, so a notebook front end running
MathJax does not typeset dollar amounts (``$180,000 (6 × $30,000, …)``) as math."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB
from k3lib.report.figures import key_figures, offload_plan, offload_relevant
from k3lib.report.html import (
    REPORT_CSS,
    context_text,
    esc,
    frame_html,
    gib_text,
    html_table,
    no_math,
    not_available,
    notes_list,
    usd_text,
    verdict_badge,
)
from k3lib.report.parameters import PARAMETERS, ReportConfig, cli_command


def setup() -> None:
    """Set up the report kernel: :func:`k3lib.views.notebook.skip_slow_iri_checker`, then the
    offline Altair renderer of :func:`k3lib.views.notebook.setup` (SVG through vl-convert)."""
    from k3lib.views.notebook import setup as notebook_setup
    from k3lib.views.notebook import skip_slow_iri_checker

    skip_slow_iri_checker()
    notebook_setup()


def chart_or_note(chart, what: str):
    """``chart`` itself (inline SVG through the notebook's renderer), or an HTML note that there is none."""
    if chart is not None:
        return chart
    from IPython.display import HTML

    return HTML(not_available(what, "no chart for this plan"))


# ---------------------------------------------------------------- summary and budget


def summary_html(cfg: ReportConfig, figures: Mapping[str, Any] | None = None) -> str:
    """Title, verdict badge, the one-sentence reason and the key figures (all escaped)."""
    f = figures or key_figures(cfg)
    plan = cfg.plan
    g = plan.per_gpu
    where = "fullest GPU" if len(plan.shares) > 1 else "per GPU"
    mc = f["max_context_tokens"]
    max_ctx = (
        "nothing fits, not even 1K tokens of context"
        if mc == 0
        else context_text(mc) + (" — the model's maximum" if mc == plan.model.max_context_tokens else "")
    )
    cost = (
        f"{usd_text(f['cost_usd'])} ({plan.gpus} × {usd_text(f['price_usd'])}, catalogue price)"
        if f["cost_usd"] is not None
        else f"not known (no price for {plan.gpu.name} in data/hardware.csv)"
    )
    tps = (
        f"{f['tokens_per_s']:,.1f} tokens/s ({f['tokens_per_s_how']})"
        if f["tokens_per_s"] is not None
        else f"not available — {f['tokens_per_s_how']}"
    )
    layout = f"TP={plan.tp} × PP={plan.pp}" + (f" over {plan.nodes} nodes" if plan.nodes > 1 else "")
    rows = [
        ("model", f"{plan.model.name} [{plan.model.id}]"),
        ("weights · KV cache", f"{plan.weight_format} · {plan.kv_dtype}"),
        ("context · batch", f"{context_text(plan.context_tokens)} · {plan.batch}"),
        (
            "GPUs",
            f"{plan.gpus}× {plan.gpu.name} ({plan.memory_basis} memory: {gib_text(g.available_bytes)} each) · {layout}",
        ),
        (
            "needed / available (all GPUs)",
            f"{gib_text(plan.total.total_bytes)} of {gib_text(plan.total.available_bytes)}",
        ),
        ("headroom (all GPUs)", gib_text(plan.total.headroom_bytes)),
        (f"needed / available ({where})", f"{gib_text(g.total_bytes)} of {gib_text(g.available_bytes)}"),
        (f"headroom ({where})", gib_text(g.headroom_bytes)),
        ("max context that fits", max_ctx),
        ("GPU cost", cost),
        ("decode speed", tps),
        (
            "verdict by",
            plan.verdict_basis
            + (
                " · " + ", ".join(f"{k}={v}" for k, v in plan.engine.settings if v not in ((), None))
                if plan.engine is not None
                else ""
            ),
        ),
    ]
    if plan.engine is not None:
        rows.insert(
            9,
            (
                "max concurrency",
                f"{plan.engine.max_concurrency:,.2f}× requests of "
                f"{context_text(plan.context_tokens)} (KV capacity "
                f"{plan.engine.kv_capacity_tokens:,} tokens)",
            ),
        )
    if offload_relevant(cfg):
        rows.append(("offload (experts in system RAM)", f["offload_verdict"]))
    notes = notes_list(plan.notes)
    return no_math(
        f'<style>{REPORT_CSS}</style><div class="k3-report">'
        f"<h1>{esc(cfg.title)}</h1>"
        f"<p>{verdict_badge(f['verdict'])} &nbsp;{esc(plan.reason)}</p>"
        + html_table([{"": k, "value": v} for k, v in rows], columns=["", "value"])
        + (f"<p>Notes:</p>{notes}" if notes else "")
        + "<p><small>GiB = 2<sup>30</sup> bytes; K = 1,024 tokens.</small></p></div>"
    )


def budget_table_html(plan) -> str:
    """The four components over all GPUs and on the fullest GPU
    (:func:`k3lib.views.tables.plan_table`), with each component's share of the total."""
    from k3lib.views.tables import plan_table

    df = plan_table(plan, unit="GiB").reset_index()
    parts = df["component"].isin(["weights", "KV cache", "activation", "overhead"])
    df["share_of_total_%"] = (100 * df["total_GiB"] / (plan.total.total_bytes / GiB)).round(1).where(parts)
    return no_math(frame_html(df))


def budget_chart(plan):
    """The four-component stacked bar (:func:`k3lib.views.charts.budget_stacked_bar`) over
    all GPUs, with the memory available."""
    from k3lib.views.charts import budget_stacked_bar

    label = f"{plan.gpus}× {plan.gpu.id} · {plan.weight_format} · KV {plan.kv_dtype}"
    return budget_stacked_bar({label: plan}, per="total", unit="GiB")


def per_gpu_section(plan) -> tuple[str, Any]:
    """(HTML table, chart): what one GPU of each pipeline stage holds, read from the plan's
    own shares (:attr:`k3lib.core.plan.Plan.shares`), fullest GPU marked."""
    from k3lib.studies.parallel import per_gpu_long, per_gpu_table
    from k3lib.views.charts_parallel import per_gpu_stacked_bar

    text = f"<p>{esc(plan.verdict())}</p>" + frame_html(per_gpu_table(plan)) + notes_list(plan.problems)
    return no_math(text), per_gpu_stacked_bar(per_gpu_long(plan), title="Memory per GPU (GiB)")


# ---------------------------------------------------------------- checklist, commands, engine view


def checklist_html(cfg: ReportConfig) -> str:
    """Guide 000's seven-step checklist answered for this inventory (GPU type × count,
    target context, KV dtype, the report's assumptions) by :func:`k3lib.studies.checklist.run_checklist`,
    with its recommended and cheapest configurations."""
    from k3lib.engines.deployment import EngineSettings
    from k3lib.studies.checklist import run_checklist

    plan = cfg.plan
    engine = (
        EngineSettings(plan.engine.engine, **{k: v for k, v in plan.engine.settings if k == "gpu_memory_utilization"})
        if plan.engine is not None
        else plan.engine_id
    )
    source = cfg.parameters.get("model_path") or None
    try:
        model = plan.model
        if source:
            from k3lib.loaders import load_path

            model = load_path(source)
        c = run_checklist(
            model=model,
            gpu=plan.gpu,
            gpus=plan.gpus,
            nodes=plan.nodes,
            context=plan.context_tokens,
            kv_dtype=plan.kv_dtype,
            batch=plan.batch,
            engine=engine,
            assumptions=plan.assumptions if plan.engine is None else None,
        )
    except K3InputError as exc:
        return no_math(not_available("checklist answers", f"not computed for this configuration ({exc})"))
    out = frame_html(c.to_frame())
    for label, conf in (("Recommended for these GPUs", c.recommended), ("Cheapest on this GPU type", c.cheapest)):
        out += f"<p><strong>{esc(label)}:</strong> " + (esc(conf.reason) if conf else "none fits.") + "</p>"
    return no_math(out)


def command_html(cmd) -> str:
    """A :class:`k3lib.studies.commands.Command` as copyable text, one line per flag's meaning, and its notes."""
    return (
        f'<pre class="k3-cmd">{esc(cmd.text)}</pre>'
        + (html_table([{"flag": f, "why": w} for f, w in cmd.explanations]) if cmd.explanations else "")
        + notes_list(cmd.notes)
    )


def engine_commands_html(cfg: ReportConfig) -> str:
    """The launch command for the chosen engine and the topology check
    (:mod:`k3lib.studies.commands`), then :func:`engine_view_html`; in offload mode
    llama.cpp keeps every routed expert in RAM."""
    from k3lib.studies import commands

    plan = cfg.plan
    path = cfg.parameters.get("model_path") or None
    makers = {
        "vllm": lambda: commands.vllm_command(plan, hf_repo=_local_repo(path)),
        "sglang": lambda: commands.sglang_command(plan, hf_repo=_local_repo(path)),
        "llama.cpp": lambda: commands.llama_server_command(
            plan,
            offload_all_experts=cfg.offload == "experts",
            model_path=path if path and path.endswith(".gguf") else None,
        ),
    }
    if cfg.engine not in makers:
        out = not_available(
            f"{cfg.engine} command",
            f"the plan is computed by {plan.verdict_basis}, which no engine "
            "launches; choose engine vllm, sglang or llama.cpp for a launch command",
        )
    elif not plan.fits and cfg.offload != "experts":
        out = not_available(
            f"{cfg.engine} command", "no command is printed for a plan that does not load; the alternatives below do"
        )
    else:
        try:
            out = f"<p><strong>{esc(cfg.engine)}</strong></p>" + command_html(makers[cfg.engine]())
        except K3InputError as exc:
            out = not_available(f"{cfg.engine} command", f"not possible for this plan ({exc})")
    return no_math(
        out + "<p><strong>Check the GPU links first</strong></p>" + command_html(commands.topology_command(plan))
    ) + engine_view_html(cfg)


def _local_repo(path: str | None) -> str | None:
    """vLLM and SGLang load a local folder as a repository: the folder of the user's config or checkpoint."""
    if not path or path.endswith(".gguf"):
        return None
    from pathlib import Path

    p = Path(path).resolve()
    return str(p.parent if p.is_file() else p)


def engine_view_reason(cfg: ReportConfig) -> str | None:
    """Why no engine view applies to this report (one sentence), or None when it does."""
    plan = cfg.plan
    if plan.model.kind != "architecture":
        return (
            f"{plan.model.id} is a guide's published profile (totals quoted from {plan.model.guide}, no layer "
            "shapes), so no engine's own memory rules can be applied to it; choose the real architecture "
            f"(e.g. {plan.model.id.split('@')[0]}) for the engine view"
        )
    if cfg.offload == "experts":
        return (
            "the engine profiles place every weight on the GPUs; the offload section above has the memory with "
            "the experts in system RAM"
        )
    return None


def engine_view_html(cfg: ReportConfig) -> str:
    """The binding GPU under the engine's own rules — read from the plan's engine verdict
    (:attr:`k3lib.core.plan.Plan.engine`, computed once with the report's settings): its
    verdict and the lines it would print; for a guide profile or the generic model one line
    saying why no engine view applies."""
    title = f"<p><strong>Memory as {esc(cfg.engine)} sees it</strong></p>"
    why = engine_view_reason(cfg)
    plan = cfg.plan
    if why is None and plan.engine is None:
        why = f"the plan is computed by {plan.verdict_basis}"
    if why is not None:
        return no_math(title + f"<p>No engine view: {esc(why)}.</p>")
    e = plan.engine
    est = e.estimate
    settings = ", ".join(f"{k}={v}" for k, v in e.settings if v not in ((), None))
    printed = html_table([{"the engine prints": k, "value": v} for k, v in est.printed.items()]) if est.printed else ""
    stages = getattr(est, "stages", ()) or ()
    if stages:  # PP > 1: one row per pipeline stage; the estimate's own figures are the binding stage's
        printed += html_table(
            [
                {
                    "stage": s.get("stage"),
                    "layers": s.get("layers"),
                    **{
                        f"{k.removesuffix('_bytes').replace('_', ' ')} (GiB)": f"{s[k] / GiB:,.2f}"
                        for k in (
                            "weights_bytes",
                            "activation_bytes",
                            "runtime_bytes",
                            "kv_available_bytes",
                            "kv_needed_bytes",
                        )
                        if k in s
                    },
                }
                for s in stages
            ]
        )
    return no_math(
        title
        + f"<p>{esc(e.name)} {esc(e.version)} ({esc(settings)}): {esc(e.reason)}</p>"
        + printed
        + notes_list(e.notes)
    )


def speed_section(cfg: ReportConfig) -> tuple[str, Any]:
    """(HTML, chart): speed, concurrency and cost of the plan by the serving model
    (:mod:`k3lib.views.speed` over :func:`k3lib.serving.serving_estimate`), every figure with its
    basis and held-aside error, for requests of 1,024 prompt + 256 output tokens; the catalogue's
    dated median price per GPU-hour when there is one. None for the chart when the plan does not
    load or has no layer shapes (a guide profile)."""
    from k3lib.views.speed import concurrency_table, curve_shown, figures_table, throughput_latency_chart

    plan = cfg.plan
    if plan.model.kind != "architecture":
        return no_math(
            f"<p>No speed figures: {esc(plan.model.id)} is a guide's published profile (no layer "
            "shapes for the serving model).</p>"
        ), None
    if not plan.fits:
        return no_math("<p>No speed figures: the plan does not load.</p>"), None
    from k3lib.core.prices import price_per_gpu_hour
    from k3lib.serving import serving_estimate

    quote = price_per_gpu_hour(plan.gpu.id)
    price = quote.usd_per_gpu_hour if quote is not None else None
    engine = plan.engine_id if plan.engine_id not in ("generic", "guide") else "vllm"
    shape = dict(input_tokens=min(1024, max(0, plan.context_tokens - 256)), output_tokens=256)
    try:
        est = serving_estimate(plan, concurrency=plan.batch, engine=engine, price_per_gpu_hour=price, **shape)
        curve = concurrency_table(plan, engine=engine, price_per_gpu_hour=price, **shape)
    except K3InputError as exc:
        return no_math(not_available("speed figures", str(exc))), None
    text = (
        f"<p>Requests of {shape['input_tokens']:,} prompt + {shape['output_tokens']:,} output tokens on "
        f"{esc(engine)}, {plan.batch} at a time. Each figure says its basis: <em>fitted model</em> (efficiencies "
        "fitted on public measured runs; ± is its median error on runs it was never fitted on), "
        "<em>measured</em>, or <em>theoretical ceiling</em>.</p>"
        + frame_html(figures_table(est))
        + "<p>Throughput against latency as concurrency grows, up to what the KV cache holds:</p>"
        + frame_html(curve_shown(curve))
        + (
            f"<p><small>Price: {esc(quote.basis)}.</small></p>"
            if quote is not None
            else "<p><small>No catalogue price for this GPU: cost figures are empty "
            "(`k3plan speed --price-per-gpu-hour`).</small></p>"
        )
        + notes_list(est.notes)
    )
    return no_math(text), throughput_latency_chart(curve)


def offload_html(cfg: ReportConfig) -> str:
    """Experts in system RAM, the rest on one GPU (:mod:`k3lib.serving.offload_model`)."""
    from k3lib.serving.offload_model import summary_table

    offloaded, why = offload_plan(cfg)
    if offloaded is None:
        if why.startswith("not needed"):
            return no_math(f"<p>{esc(why[0].upper() + why[1:])}.</p>")
        return no_math(not_available("offload option", why))
    prefill = offloaded.prefill_tokens_per_s if offloaded.fits else None  # no speed for what cannot load
    speed = (
        "Decode is a theoretical ceiling (the bandwidth roofline); prefill "
        + (f"≈ {prefill:,.0f} tokens/s" if prefill else "is not estimated")
        + " (a ceiling too: weights crossing the host link)."
        if offloaded.fits
        else "It does not load, so no speed is quoted."
    )
    return no_math(
        f"<p><strong>{esc(offloaded.verdict())}</strong></p>"
        f"<p>Routed experts of {offloaded.parts.moe_layers - offloaded.expert_layers_on_gpu} layers in system "
        f"RAM at {offloaded.ram_bandwidth_bytes_per_s / GB:,.0f} GB/s ({esc(offloaded.ram_bandwidth_basis)}), "
        f"everything else on one {esc(offloaded.gpu.name)}. {speed}"
        "</p>"
        + frame_html(summary_table(offloaded, unit="GB"))
        + notes_list(offloaded.notes)
        + "<p><small>GB = 10<sup>9</sup> bytes.</small></p>"
    )


# ---------------------------------------------------------------- assumptions and parameters


def assumptions_table(plan) -> list[dict[str, str]]:
    """Every assumption behind the figures, its value and where it comes from."""
    from k3lib.core.memory import DEFAULT_PREFILL_CHUNK_TOKENS, kv_bytes_per_token

    m, a, g = plan.model, plan.assumptions, plan.gpu
    profile = m.kind != "architecture"
    pg = plan.per_gpu
    rows = []

    def add(name, value, source):
        rows.append({"assumption": name, "value": value, "source": source})

    if profile:
        tier = m.tier_for(plan.weight_format)
        add(
            "weights",
            gib_text(plan.total.weights_bytes),
            f"{m.guide} ({m.file}), quoted: “{m.quotes.get('weights.' + tier, '')}”; read in {m.unit}: {m.unit_reason}",
        )
        add(
            "KV bytes per token",
            f"{kv_bytes_per_token(m, plan.kv_dtype):,} B at {plan.kv_dtype}",
            f"{m.kv_bytes_per_token_bf16:,} B at BF16, quoted: “{m.quotes.get('kv_bytes_per_token_bf16', '')}”, "
            "scaled by bytes per element",
        )
    else:
        add(
            "weights",
            gib_text(plan.total.weights_bytes),
            f"Σ parameters × bits ÷ 8 over the architecture's parameter groups at {plan.weight_format}; "
            f"shapes from {m.source}",
        )
        add(
            "KV bytes per token",
            f"{kv_bytes_per_token(m, plan.kv_dtype):,} B at {plan.kv_dtype}",
            "computed from the attention layers (GQA heads × head dim, MLA latent, sliding windows capped, "
            "linear-attention state per sequence)",
        )
    if a.activation_bytes is not None:
        add("activation", gib_text(plan.total.activation_bytes), "given as a parameter of this report")
    elif profile:
        add(
            "activation",
            gib_text(plan.total.activation_bytes),
            f"{m.guide} at batch 1 × batch; quoted: “{m.quotes.get('activation_bytes_batch1', '')}”",
        )
    else:
        add(
            "activation",
            gib_text(plan.total.activation_bytes),
            f"rule: one {a.prefill_chunk_tokens or DEFAULT_PREFILL_CHUNK_TOKENS:,}-token prefill chunk in BF16 "
            "through the widest layer, plus FP32 logits (k3lib.core.memory)",
        )
    if a.overhead_per_gpu_bytes is not None:
        add("overhead", f"{gib_text(pg.overhead_bytes)} per GPU", "given per GPU as a parameter of this report")
    elif a.overhead_total_bytes is not None:
        add(
            "overhead",
            f"{gib_text(plan.total.overhead_bytes)} in total ({gib_text(pg.overhead_bytes)} per GPU)",
            "given in total as a parameter of this report",
        )
    elif profile and (m.overhead_per_gpu_bytes is not None or m.overhead_total_bytes is not None):
        key = "overhead_per_gpu" if m.overhead_per_gpu_bytes is not None else "overhead_total"
        add("overhead", f"{gib_text(pg.overhead_bytes)} per GPU", f"{m.guide}, quoted: “{m.quotes.get(key, '')}”")
    else:
        add(
            "overhead",
            f"{gib_text(pg.overhead_bytes)} on the fullest GPU",
            f"rule: CUDA context {gib_text(a.cuda_context_bytes, 2)} + NCCL buffers {gib_text(a.nccl_bytes, 2)} when "
            f"there is more than one GPU + {a.fragmentation_fraction:.0%} fragmentation of the GPU's payload "
            "(k3lib.core.plan)",
        )
    add(
        "GPU memory",
        f"{gib_text(pg.available_bytes)} per GPU ({plan.memory_basis})",
        f"{g.name}: {g.source} [{g.verification}]",
    )
    add(
        "GPU price",
        usd_text(g.price_usd),
        "data/hardware.csv" if g.price_usd is not None else "no price in the catalogue",
    )
    add(
        "layout",
        f"{plan.layout.describe()} ({plan.nodes} node{'s' if plan.nodes > 1 else ''})",
        "TP inside a node where the heads split, pipeline stages of whole layers across nodes "
        "(k3lib.core.layout.choose_layout), unless tp/pp are given",
    )
    add(
        "per-GPU figures",
        "the fullest GPU" if len(plan.shares) > 1 else "every GPU holds the same",
        "the guides' even split (a published profile has no layer shapes)"
        if profile
        else "per pipeline stage: GQA KV ÷ min(TP, KV heads), MLA latent replicated on every TP rank, linear state ÷ TP "
        "(k3lib.core.plan)",
    )
    add("units", "GiB = 2^30 bytes; GB = 10^9 bytes; K = 1,024 tokens", "k3lib.core.units")
    return rows


def assumptions_html(plan) -> str:
    """:func:`assumptions_table` as HTML."""
    return no_math(html_table(assumptions_table(plan)))


def parameters_html(cfg: ReportConfig) -> str:
    """The parameters this report ran with, and the command that reproduces it."""

    def shown(v: object) -> str:  # the value as a reader reads it: no Python quotes, "—" for empty
        return "—" if v == "" or v is None else str(v)

    rows = [
        {"parameter": p.name, "value": shown(cfg.parameters.get(p.name, p.cli_default)), "meaning": p.help}
        for p in PARAMETERS
    ]
    return no_math(
        html_table(rows) + "<p>To produce this report again:</p>"
        f'<pre class="k3-cmd">{esc(cli_command(cfg.parameters))}</pre>'
    )
