"""Deployment reports: the report notebook run by papermill and exported to ONE
self-contained HTML file — no code cells, charts as inline SVG, no request to any CDN —
so it opens offline and from an e-mail attachment. One report per scenario, and for a
scenario file an ``index.html`` comparing them side by side.

    k3plan report --model kimi-k3@guide-000 --weights q4 --kv-dtype fp8 --gpus 6 \\
        --activation 10GiB --overhead-total 48GiB -o reports/worked-example.html
    k3plan report --scenarios examples/scenarios.yaml -o reports/

The pieces, each usable on its own:

* :data:`PARAMETERS` — the report's parameters (name, type, notebook default, help, and the
  default for the CLI and scenario files). The notebook's ``parameters`` cell is generated
  from it by ``scripts/notebooks/90_deployment_report.py``, so ``papermill --help-notebook``
  lists the same. The notebook's defaults are guide 000's worked example (Q4 + FP8 KV + 256K
  on 6× H100, activation 10 GiB, overhead 48 GiB); the CLI and scenario files default to
  ``k3plan estimate``'s values and the model's own rules for anything they leave out.
* :func:`configure` — parameters → :class:`ReportConfig` (a validated plan and the report's
  own settings); a bad value raises :class:`~k3lib.views.notebook.ParameterError`, one line.
* section builders (:func:`summary_html`, :func:`budget_table_html`, :func:`alternatives`,
  :func:`assumptions_table` …) — the notebook's cells call them; every piece of user text
  they put into HTML is escaped with :func:`html.escape`.
* :func:`run_report` / :func:`export_html` / :func:`run_batch` — papermill + nbconvert.

Sections backed by modules of other issues (checklist, engine commands, offload, per-GPU
layout) import them lazily and say "not available" when they are absent.
"""
from __future__ import annotations

import functools
import html
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB

ROOT = Path(__file__).resolve().parents[2]
REPORT_STEM = "90-deployment-report"
REPORT_NOTEBOOK = ROOT / "notebooks" / f"{REPORT_STEM}.ipynb"
#: Cells with this tag are in the notebook for readers of the .ipynb (navigation, how to
#: run it) and are dropped from the HTML report.
SKIP_IN_REPORT_TAG = "skip-in-report"
KERNEL = "python3"

ENGINES = ("vllm", "llama.cpp", "sglang", "transformers", "generic")
OFFLOAD_MODES = ("auto", "none", "experts")


# ---------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Parameter:
    """One report parameter: its notebook default (guide 000's worked example) and the
    default the CLI and scenario files use (``k3plan estimate``'s; ``""``/``0`` = the
    model's own rule or automatic)."""

    name: str
    type: type
    default: Any
    help: str
    cli_default: Any

    def literal(self) -> str:
        """``name: type = value  # help`` — one line of the papermill ``parameters`` cell."""
        return f"{self.name}: {self.type.__name__} = {self.default!r}  # {self.help}"


PARAMETERS: tuple[Parameter, ...] = (
    Parameter("scenario", str, "Guide 000 worked example: Q4 + FP8 KV + 256K on 6x H100",
              "scenario name: the report's title (any text; shown escaped)", ""),
    Parameter("model", str, "kimi-k3@guide-000", "model id or name (see `k3plan models`)", "kimi-k3"),
    Parameter("weights", str, "q4", "weight precision, e.g. native, bf16, fp8, q8_0, q4_k_m, q2_k, or the guides' "
              "q8/q4/q2; empty for native (architectures) or q4 (guide profiles)", ""),
    Parameter("kv_dtype", str, "fp8", "KV-cache dtype: bf16, fp8, int4, q8_0, q4_0", "bf16"),
    Parameter("context", str, "256K", "context length in tokens: 131072, 128K, 256K, 1M (K is 1,024 tokens)", "256K"),
    Parameter("batch", int, 1, "concurrent sequences", 1),
    Parameter("gpu", str, "h100-sxm", "GPU id or alias (see `k3plan gpus`)", "h100-sxm"),
    Parameter("gpus", int, 6, "number of GPUs in total", 8),
    Parameter("nodes", int, 0, "nodes the GPUs are spread over; 0 for automatic (one node up to the GPU's node "
              "size, then whole nodes)", 0),
    Parameter("tp", int, 0, "tensor-parallel size; 0 for automatic (GPUs per node, if the heads split)", 0),
    Parameter("pp", int, 0, "pipeline-parallel size; 0 for automatic (GPUs / TP)", 0),
    Parameter("engine", str, "vllm", "engine for the launch commands: " + ", ".join(ENGINES), "vllm"),
    Parameter("offload", str, "auto", "offload section: auto (shown when the plan does not fit), none, "
              "experts (experts in system RAM: guide 004's mode)", "auto"),
    Parameter("ram", str, "", "host RAM for offload, e.g. 1536GB; empty for as much as needed", ""),
    Parameter("ram_bandwidth", str, "70GB/s", "host RAM bandwidth for offload tokens/s, e.g. 70GB/s", "70GB/s"),
    Parameter("activation", str, "10GiB", "activation memory in total, e.g. 10GiB (GB is 10^9 bytes, GiB 2^30); "
              "empty for the model's rule", ""),
    Parameter("overhead_per_gpu", str, "", "runtime overhead per GPU, e.g. 6GiB; empty for the model's rule", ""),
    Parameter("overhead_total", str, "48GiB", "runtime overhead over all GPUs, e.g. 48GiB (guide 000's worked "
              "example); empty for the model's rule", ""),
    Parameter("memory_basis", str, "", "GPU capacity: marketed (80 GiB for an H100) or usable (what the driver "
              "exposes); empty for the model's default", ""),
)
PARAMETER_NAMES = tuple(p.name for p in PARAMETERS)
NOTEBOOK_DEFAULTS = {p.name: p.default for p in PARAMETERS}
CLI_DEFAULTS = {p.name: p.cli_default for p in PARAMETERS}


def parameters_source() -> str:
    """The notebook's ``parameters`` cell: one typed literal per line with a ``# help`` comment."""
    return "\n".join(p.literal() for p in PARAMETERS)


def complete_parameters(given: Mapping[str, Any], *, defaults: Mapping[str, Any] = CLI_DEFAULTS) -> dict[str, Any]:
    """``given`` over ``defaults``; an unknown key raises :class:`K3InputError` naming it."""
    unknown = [k for k in given if k not in PARAMETER_NAMES]
    if unknown:
        raise K3InputError(str(unknown[0]), "is not a report parameter", ", ".join(PARAMETER_NAMES))
    out = dict(defaults)
    out.update({k: ("" if v is None else v) for k, v in given.items()})
    for p in PARAMETERS:  # "8" from a command line → 8, so the notebook gets the annotated type
        v = out[p.name]
        if p.type is int and isinstance(v, str) and v.strip().isdigit():
            out[p.name] = int(v)
        elif p.type is str and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[p.name] = str(v)
    return out


@dataclass(frozen=True)
class ReportConfig:
    """The validated report: the plan and the report's own settings (sizes in bytes)."""

    scenario: str
    plan: Any  # k3lib.core.plan.Plan
    engine: str
    offload: str
    ram_bytes: int | None
    ram_bandwidth_bytes_per_s: int | None
    parameters: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def title(self) -> str:
        """The scenario name, or a description of the plan when there is none."""
        return self.scenario.strip() or describe_plan(self.plan)


def configure(**params: Any) -> ReportConfig:
    """Validate the report's parameters (keys of :data:`PARAMETERS`; missing ones take
    :data:`CLI_DEFAULTS`) into a :class:`ReportConfig`.

    The plan goes through :func:`k3lib.views.notebook.validate`; every bad value raises
    :class:`~k3lib.views.notebook.ParameterError`, whose whole message is
    ``parameter <name>: <what is wrong>``.

    >>> cfg = configure(**NOTEBOOK_DEFAULTS)
    >>> round(cfg.plan.total.total_bytes / 2**30), round(cfg.plan.headroom_bytes / 2**30)
    (415, 65)
    """
    from k3lib.core.models import get_model
    from k3lib.views.notebook import ParameterError, validate

    try:
        p = complete_parameters(params)
        scenario = p["scenario"]
        if not isinstance(scenario, str):
            scenario = str(scenario)
        engine = str(p["engine"]).strip().lower() or "vllm"
        engines_module, _ = _optional("engines")
        if engines_module is not None:   # issue 7's profiles: ids and aliases (llamacpp, hf, …)
            engine = engines_module.get_engine(engine).id
        elif engine not in ENGINES:
            raise K3InputError("engine", f"{p['engine']!r} is not known", ", ".join(ENGINES))
        offload = str(p["offload"]).strip().lower() or "auto"
        if offload not in OFFLOAD_MODES:
            raise K3InputError("offload", f"{p['offload']!r} is not known", ", ".join(OFFLOAD_MODES))
        from k3lib.core.units import parse_size_bytes

        ram = parse_size_bytes(p["ram"], "ram") if p["ram"] not in (None, "") else None
        bandwidth = None
        if p["ram_bandwidth"] not in (None, ""):
            offload_module, why = _optional("studies.offload")
            if offload_module is None:
                raise K3InputError("ram_bandwidth", f"cannot be used: {why}")
            bandwidth = offload_module.parse_bandwidth(p["ram_bandwidth"], "ram_bandwidth")
        weights = str(p["weights"]).strip()
        if not weights:
            weights = "native" if get_model(p["model"]).kind == "architecture" else "q4"
        tp = p["tp"] if p["tp"] not in (0, "0", "", None) else None
        pp = p["pp"] if p["pp"] not in (0, "0", "", None) else None
        nodes = p["nodes"] if p["nodes"] not in (0, "0", "", None) else None
    except K3InputError as exc:
        raise ParameterError(f"parameter {exc}") from None
    plan = validate(model=p["model"], weights=weights, kv_dtype=p["kv_dtype"], context=p["context"],
                    batch=p["batch"], gpu=p["gpu"], gpus=p["gpus"], nodes=nodes, tp=tp, pp=pp,
                    activation=p["activation"], overhead_per_gpu=p["overhead_per_gpu"],
                    overhead_total=p["overhead_total"], memory_basis=p["memory_basis"])
    return ReportConfig(scenario=scenario, plan=plan, engine=engine, offload=offload, ram_bytes=ram,
                        ram_bandwidth_bytes_per_s=bandwidth, parameters=p)


# ---------------------------------------------------------------- small formatting helpers


def _gib(n_bytes: float, digits: int = 1) -> str:
    return f"{n_bytes / GiB:,.{digits}f} GiB"


def context_text(tokens: int) -> str:
    """``262,144 tokens (256K)``; K = 1,024 tokens."""
    if tokens >= 1024 and tokens % 1024 == 0:
        return f"{tokens:,} tokens ({tokens // 1024:,}K)"
    return f"{tokens:,} tokens (≈{tokens / 1024:,.0f}K)" if tokens >= 1024 else f"{tokens:,} tokens"


def describe_plan(plan) -> str:
    """``kimi-k3@guide-000 · q4 · KV fp8 · 256K · batch 1 · 6× NVIDIA H100 SXM5 80GB``."""
    ctx = f"{plan.context_tokens // 1024}K" if plan.context_tokens % 1024 == 0 else f"{plan.context_tokens:,}"
    return (f"{plan.model.id} · {plan.weight_format} · KV {plan.kv_dtype} · {ctx} · batch {plan.batch} · "
            f"{plan.gpus}× {plan.gpu.name}")


def cost_usd(plan) -> float | None:
    """GPU count × the catalogue's price per GPU (US$), or None when no price is known."""
    price = plan.gpu.price_usd
    return None if price is None else plan.gpus * price


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.0f}"


def esc(value: object) -> str:
    """HTML-escape any value's text (quotes too)."""
    return html.escape(str(value), quote=True)


def html_table(rows: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None,
               raw: Iterable[str] = (), css_class: str = "k3-table") -> str:
    """A plain HTML table; every cell escaped except the columns named in ``raw``
    (which the caller has built from escaped parts)."""
    if not rows:
        return "<p><em>(nothing to show)</em></p>"
    columns = list(columns or rows[0].keys())
    raw = set(raw)
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            text = "—" if v is None else (f"{v:,.2f}" if isinstance(v, float) else str(v))
            cells.append(f"<td>{text if c in raw else esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def frame_html(df) -> str:
    """A DataFrame as an escaped HTML table (no index)."""
    return df.to_html(index=False, escape=True, border=0, classes="k3-table", na_rep="—",
                      float_format=lambda v: f"{v:,.2f}")


def _optional(module: str):
    """Import ``k3lib.<module>`` or return the reason it is not available."""
    import importlib

    try:
        return importlib.import_module(f"k3lib.{module}"), None
    except ImportError as exc:
        return None, f"k3lib.{module} is not available ({exc})"


def not_available(what: str, why: str) -> str:
    return f'<p class="k3-na"><strong>{esc(what)}: not available.</strong> {esc(why)}</p>'


# ---------------------------------------------------------------- key figures


def max_context_tokens(plan) -> int:
    """The longest context that fits with everything else of ``plan`` unchanged (tokens,
    at most the model's maximum); 0 when not even one token fits. Binary search over
    :func:`k3lib.core.plan.make_plan`, so it uses exactly the plan's own rules.

    >>> from k3lib.core.plan import make_plan, Assumptions
    >>> p = make_plan(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpus=6,
    ...               assumptions=Assumptions(activation_bytes=10 * 2**30, overhead_total_bytes=48 * 2**30))
    >>> max_context_tokens(p)  # (480 - 325 - 10 - 48) GiB / 131,072 B = 794,624, less 1 for rounding up per GPU
    794623
    """
    from k3lib.core.plan import make_plan

    def fits(tokens: int) -> bool:
        return make_plan(model=plan.model, gpu=plan.gpu, gpus=plan.gpus, nodes=plan.nodes, tp=plan.tp, pp=plan.pp,
                         weights=plan.weight_format, kv_dtype=plan.kv_dtype, context=tokens, batch=plan.batch,
                         assumptions=plan.assumptions).fits

    hi = plan.model.max_context_tokens
    if fits(hi):
        return hi
    if not fits(1):
        return 0
    lo = 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def offload_plan(cfg: ReportConfig):
    """(issue 4's :class:`~k3lib.studies.offload.OffloadPlan` for this plan on one of its GPUs, or
    None; why not). Built when the offload section is relevant (:func:`offload_relevant`)."""
    if not offload_relevant(cfg):
        why = "offload = none" if cfg.offload == "none" else "the plan fits on the GPUs; offloading would only slow it"
        return None, f"not needed here ({why})"
    offload, why = _optional("studies.offload")
    if offload is None:
        return None, why
    plan = cfg.plan
    try:
        return offload.plan_offload(model=plan.model, weights=plan.weight_format, gpu=plan.gpu,
                                    kv_dtype=plan.kv_dtype, context=plan.context_tokens, batch=plan.batch,
                                    ram=cfg.ram_bytes, ram_bandwidth=cfg.ram_bandwidth_bytes_per_s
                                    or offload.GUIDE004_RAM_BW_BYTES_PER_S), ""
    except K3InputError as exc:
        return None, f"not possible for this model ({exc})"


def decode_tokens_per_s(cfg: ReportConfig, offloaded=None) -> tuple[float | None, str]:
    """(decode tokens/s, how it was computed): a bandwidth ceiling at the plan's batch —
    the offload plan's in offload mode (``offload="experts"``), else step 6 of issue 5's
    checklist (:func:`k3lib.studies.checklist.step6_throughput`); (None, why) when unavailable."""
    if cfg.offload == "experts" and offloaded is not None:
        return offloaded.decode_tokens_per_s, "offload mode: bandwidth ceiling over GPU memory and system RAM"
    checklist, why = _optional("studies.checklist")
    if checklist is None:
        return None, why
    plan = cfg.plan
    try:
        t = checklist.step6_throughput(model=plan.model, gpu=plan.gpu, gpus=plan.gpus, nodes=plan.nodes,
                                       weights=plan.weight_format, kv_dtype=plan.kv_dtype,
                                       context=plan.context_tokens, batch=plan.batch, assumptions=plan.assumptions)
    except K3InputError as exc:
        return None, f"not computed for this configuration ({exc})"
    return t.tokens_per_s, "bandwidth ceiling with every weight on the GPUs; real decode is lower"


def key_figures(cfg: ReportConfig) -> dict[str, Any]:
    """The figures the summary and the batch index show (sizes in bytes)."""
    plan = cfg.plan
    offloaded, offload_why = offload_plan(cfg)
    tps, tps_how = decode_tokens_per_s(cfg, offloaded)
    fits_offload = offloaded is not None and offloaded.fits_vram and offloaded.fits_ram is not False
    verdict = "fits" if plan.fits else ("fits with offload" if cfg.offload == "experts" and fits_offload
                                        else "does not fit")
    return {
        "scenario": cfg.scenario, "title": cfg.title, "fits": plan.fits, "verdict": verdict,
        "reason": plan.reason, "offload_verdict": offloaded.verdict() if offloaded is not None else offload_why,
        "model": plan.model.id, "model_name": plan.model.name, "weights": plan.weight_format,
        "kv_dtype": plan.kv_dtype, "context_tokens": plan.context_tokens, "batch": plan.batch,
        "gpu": plan.gpu.id, "gpu_name": plan.gpu.name, "gpus": plan.gpus, "nodes": plan.nodes, "tp": plan.tp,
        "pp": plan.pp, "total_bytes": plan.total.total_bytes, "available_bytes": plan.total.available_bytes,
        "headroom_bytes": plan.headroom_bytes, "per_gpu_total_bytes": plan.per_gpu.total_bytes,
        "per_gpu_available_bytes": plan.per_gpu.available_bytes,
        "per_gpu_headroom_bytes": plan.per_gpu.headroom_bytes,
        "max_context_tokens": max_context_tokens(plan), "cost_usd": cost_usd(plan),
        "price_usd": plan.gpu.price_usd, "tokens_per_s": tps, "tokens_per_s_how": tps_how,
        "engine": cfg.engine, "offload": cfg.offload,
    }


# ---------------------------------------------------------------- sections

REPORT_CSS = """
.k3-report h1 { font-size: 1.6em; margin: 0 0 .3em 0; }
.k3-verdict { display: inline-block; padding: .25em .7em; border-radius: .3em; font-weight: bold;
              color: white; font-size: 1.2em; }
.k3-fits { background: #2e7d32; } .k3-nofit { background: #c62828; } .k3-offload { background: #ef6c00; }
table.k3-table { border-collapse: collapse; margin: .5em 0 1em 0; font-size: .92em; }
table.k3-table th, table.k3-table td { border: 1px solid #ccc; padding: .25em .6em; vertical-align: top;
                                       text-align: left !important; }
table.k3-table th { background: #f0f0f0; }
p.k3-na { color: #8a6d3b; background: #fcf8e3; padding: .4em .7em; border-radius: .3em; }
pre.k3-cmd { background: #f6f8fa !important; padding: .6em !important; border: 1px solid #ddd;
             white-space: pre-wrap; font-family: monospace; }
""".strip()


def verdict_badge(verdict: str) -> str:
    """A coloured badge for ``fits`` / ``fits with offload`` / ``does not fit`` / ``error``."""
    css = {"fits": "k3-fits", "fits with offload": "k3-offload"}.get(verdict, "k3-nofit")
    return f'<span class="k3-verdict {css}">{esc(verdict.upper())}</span>'


def summary_html(cfg: ReportConfig, figures: Mapping[str, Any] | None = None) -> str:
    """Title, verdict badge, the one-sentence reason and the key figures (all escaped)."""
    f = figures or key_figures(cfg)
    plan = cfg.plan
    badge = verdict_badge(f["verdict"])
    mc = f["max_context_tokens"]
    max_ctx = ("nothing fits, not even one token of context" if mc == 0 else context_text(mc)
               + (" — the model's maximum" if mc == plan.model.max_context_tokens else ""))
    cost = (f"{_usd(f['cost_usd'])} ({plan.gpus} × {_usd(f['price_usd'])}, catalogue price)"
            if f["cost_usd"] is not None else f"not known (no price for {plan.gpu.name} in data/hardware.csv)")
    tps = (f"{f['tokens_per_s']:,.1f} tokens/s ({f['tokens_per_s_how']})" if f["tokens_per_s"] is not None
           else f"not available — {f['tokens_per_s_how']}")
    layout = f"TP={plan.tp} × PP={plan.pp}" + (f" over {plan.nodes} nodes" if plan.nodes > 1 else "")
    rows = [
        ("model", f"{plan.model.name} [{plan.model.id}]"),
        ("weights · KV cache", f"{plan.weight_format} · {plan.kv_dtype}"),
        ("context · batch", f"{context_text(plan.context_tokens)} · {plan.batch}"),
        ("GPUs", f"{plan.gpus}× {plan.gpu.name} ({plan.memory_basis} memory: {_gib(plan.per_gpu.available_bytes)} "
                 f"each) · {layout}"),
        ("needed / available (all GPUs)", f"{_gib(plan.total.total_bytes)} of {_gib(plan.total.available_bytes)}"),
        ("headroom (all GPUs)", _gib(plan.total.headroom_bytes)),
        ("needed / available (per GPU)", f"{_gib(plan.per_gpu.total_bytes)} of {_gib(plan.per_gpu.available_bytes)}"),
        ("headroom (per GPU)", _gib(plan.per_gpu.headroom_bytes)),
        ("max context that fits", max_ctx),
        ("GPU cost", cost),
        ("decode speed", tps),
        ("engine", cfg.engine),
    ]
    if offload_relevant(cfg):
        rows.append(("offload (experts in system RAM)", f["offload_verdict"]))
    notes = "".join(f"<li>{esc(n)}</li>" for n in plan.notes)
    return (f'<style>{REPORT_CSS}</style><div class="k3-report">'
            f"<h1>{esc(cfg.title)}</h1>"
            f"<p>{badge} &nbsp;{esc(plan.reason)}</p>"
            + html_table([{"": k, "value": v} for k, v in rows], columns=["", "value"])
            + (f"<p>Notes:</p><ul>{notes}</ul>" if notes else "")
            + "<p><small>GiB = 2<sup>30</sup> bytes; K = 1,024 tokens.</small></p></div>")


def budget_table_html(plan) -> str:
    """The four components over all GPUs and on one GPU (issue 3's
    :func:`k3lib.views.tables.plan_table`), with each component's share of the total."""
    tables, why = _optional("views.tables")
    if tables is None:
        return not_available("budget table", why)
    df = tables.plan_table(plan, unit="GiB").reset_index()
    parts = df["component"].isin(["weights", "KV cache", "activation", "overhead"])
    df["share_of_total_%"] = (100 * df["total_GiB"] / (plan.total.total_bytes / GiB)).round(1).where(parts)
    return frame_html(df)


def budget_chart(plan):
    """The four-component stacked bar (issue 3's :func:`k3lib.views.charts.budget_stacked_bar`),
    over all GPUs, with the memory available; None when k3lib.views.charts is absent."""
    charts, _ = _optional("views.charts")
    if charts is None:
        return None
    label = f"{plan.gpus}× {plan.gpu.id} · {plan.weight_format} · KV {plan.kv_dtype}"
    return charts.budget_stacked_bar({label: plan}, per="total", unit="GiB")


def per_gpu_section(plan) -> tuple[str, Any]:
    """(HTML table, chart or None): what each GPU holds, by issue 4's :mod:`k3lib.studies.parallel`
    (per pipeline stage, replication rules), or the plan's even split without it."""
    parallel, why = _optional("studies.parallel")
    if parallel is None:
        g = plan.per_gpu
        rows = [{"GPUs": plan.gpus, "weights (GiB)": f"{g.weights_bytes / GiB:,.2f}",
                 "KV cache (GiB)": f"{g.kv_cache_bytes / GiB:,.2f}",
                 "activation (GiB)": f"{g.activation_bytes / GiB:,.2f}",
                 "overhead (GiB)": f"{g.overhead_bytes / GiB:,.2f}", "total (GiB)": f"{g.total_bytes / GiB:,.2f}",
                 "available (GiB)": f"{g.available_bytes / GiB:,.2f}",
                 "headroom (GiB)": f"{g.headroom_bytes / GiB:,.2f}"}]
        return (html_table(rows) + not_available("per-stage layout", why)), None
    pplan = parallel.from_plan(plan)
    table = frame_html(parallel.per_gpu_table(pplan))
    notes = "".join(f"<li>{esc(n)}</li>" for n in pplan.notes)
    text = f"<p>{esc(pplan.verdict())}</p>" + table + (f"<ul>{notes}</ul>" if notes else "")
    if pplan.fits != plan.fits:
        text += ("<p><strong>Note:</strong> the layout rules (replication under TP, whole layers per stage) "
                 f"give a different verdict from the even split above: {'fits' if pplan.fits else 'does not fit'} "
                 "on the fullest GPU.</p>")
    charts_parallel, _ = _optional("views.charts_parallel")
    chart = None
    if charts_parallel is not None:
        chart = charts_parallel.per_gpu_stacked_bar(parallel.per_gpu_long(pplan), title="Memory per GPU (GiB)")
    return text, chart


# ---------------------------------------------------------------- alternatives


@dataclass(frozen=True)
class Alternative:
    """A configuration near the requested one that fits (bytes per GPU)."""

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
    settings_changed: int = 0   # of GPU type, weights, KV dtype, context (the GPU count not counted)
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


def node_groups(plan, *, max_nodes: int = 4) -> list[tuple[tuple[int, ...], int]]:
    """GPU counts to search, grouped by node count: 1 … g on one node, then whole nodes
    of g GPUs (g = the plan's GPUs per node, at least 8 on one node) up to
    max(``max_nodes``, 2 × the plan's nodes).

    >>> from k3lib.core.plan import make_plan
    >>> node_groups(make_plan(model="kimi-k3", gpu="h200", gpus=16, nodes=2))[1:]
    [((16,), 2), ((24,), 3), ((32,), 4)]
    """
    per_node = plan.gpus // plan.nodes if plan.nodes > 1 else max(8, plan.gpus)
    groups = [(tuple(range(1, per_node + 1)), 1)]
    groups += [((k * per_node,), k) for k in range(2, max(max_nodes, 2 * plan.nodes) + 1)]
    return groups


def alternatives(plan, *, limit: int = 8, max_changes: int = 2) -> list[Alternative]:
    """Configurations near ``plan`` that fit, cheapest first (when ``plan`` fits, only
    cheaper ones).

    Searched with the vectorized :func:`k3lib.core.sweep.sweep` (same rules as the plan) over
    the GPU counts of :func:`node_groups`: the same GPU with up to ``max_changes`` of
    {smaller weight format, smaller KV dtype, ½ or ¼ of the context}, and other GPUs of
    the same class (datacenter, consumer …) with a catalogue price and everything else
    unchanged. For each setting the fewest GPUs that fit is kept. The ``limit`` nearest
    are kept (fewest changed settings, the GPU count aside, then cheapest) and ordered by
    cost (GPUs × price; unknown prices last, by GPU count).
    """
    from k3lib.core.hardware import list_gpus
    from k3lib.core.sweep import sweep

    weights = _smaller_weight_formats(plan)
    kvs = _smaller_kv_dtypes(plan)
    contexts = [plan.context_tokens] + [plan.context_tokens // d for d in (2, 4) if plan.context_tokens // d >= 4096]
    others = [g for g in list_gpus() if g.id != plan.gpu.id and g.price_usd is not None
              and g.device_class == plan.gpu.device_class]
    found: dict[tuple, Alternative] = {}

    def collect(res, gpu_specs, nodes: int) -> None:
        fits, total, avail = res.fits, res.total_bytes_per_gpu, res.available_bytes_per_gpu
        for gi, hw in enumerate(gpu_specs):
            for wi, w in enumerate(res.weights):
                for ki, k in enumerate(res.kv_dtypes):
                    for ci, c in enumerate(res.contexts):
                        changes = [text for changed, text in (
                            (hw.id != plan.gpu.id, f"GPU {hw.name}"), (w != plan.weight_format, f"weights {w}"),
                            (k != plan.kv_dtype, f"KV {k}"), (c != plan.context_tokens, f"context {c // 1024}K"))
                            if changed]
                        if len(changes) > max_changes or (hw.id != plan.gpu.id and len(changes) > 1):
                            continue
                        key = (hw.id, w, k, int(c))
                        for ni, n in enumerate(res.counts):
                            if not fits[0, gi, ni, wi, ki, ci] or key in found:
                                continue
                            if hw.id == plan.gpu.id and n == plan.gpus and not changes:
                                break  # the requested plan itself
                            shown = changes + ([f"{n} GPUs ({n - plan.gpus:+d})"] if n != plan.gpus else [])
                            found[key] = Alternative(
                                gpu=hw.id, gpu_name=hw.name, gpus=n, weights=w, kv_dtype=k, context_tokens=int(c),
                                total_bytes_per_gpu=int(total[0, gi, ni, wi, ki, ci]),
                                available_bytes_per_gpu=int(avail[0, gi, ni, wi, ki, ci]),
                                cost_usd=None if hw.price_usd is None else n * hw.price_usd, changes=tuple(shown),
                                settings_changed=len(changes), nodes=nodes)
                            break

    for counts, nodes in node_groups(plan):   # fewest GPUs first: the first group that fits wins
        kw = dict(models=[plan.model], counts=counts, batch=plan.batch, nodes=nodes, assumptions=plan.assumptions)
        collect(sweep(gpus=[plan.gpu.id], weights=weights, kv_dtypes=kvs, contexts=contexts, **kw), [plan.gpu], nodes)
        if others:
            collect(sweep(gpus=[g.id for g in others], weights=[plan.weight_format], kv_dtypes=[plan.kv_dtype],
                          contexts=[plan.context_tokens], **kw), others, nodes)

    def cost(a: Alternative):
        return (a.cost_usd is None, a.cost_usd if a.cost_usd is not None else a.gpus)

    options = list(found.values())
    if plan.fits:   # the plan itself already fits: only what is cheaper is an alternative
        here = Alternative(plan.gpu.id, plan.gpu.name, plan.gpus, plan.weight_format, plan.kv_dtype,
                           plan.context_tokens, 0, 0, cost_usd(plan), ())
        options = [a for a in options if cost(a) < cost(here)]
    nearest = sorted(options, key=lambda a: (a.settings_changed, cost(a), -a.context_tokens))[:limit]
    return sorted(nearest, key=lambda a: (cost(a), a.settings_changed, -a.context_tokens))


def alternatives_html(plan, *, limit: int = 8) -> str:
    """:func:`alternatives` as a table, with what changes in each."""
    alts = alternatives(plan, limit=limit)
    if not alts:
        most = node_groups(plan)[-1][0][-1]
        what = "cheaper configuration" if plan.fits else "configuration near this one"
        return (f"<p>No {what} fits (searched: 1 to {most} GPUs, smaller weight and KV formats, ½ and ¼ of the "
                "context, other GPUs of the same class with a known price).</p>")
    rows = [{"#": i + 1, "GPUs": f"{a.gpus}× {a.gpu_name}" + (f" ({a.nodes} nodes)" if a.nodes > 1 else ""),
             "weights": a.weights, "KV": a.kv_dtype,
             "context": context_text(a.context_tokens),
             "per GPU (GiB)": f"{a.total_bytes_per_gpu / GiB:,.1f} of {a.available_bytes_per_gpu / GiB:,.1f}",
             "headroom per GPU (GiB)": f"{a.headroom_bytes_per_gpu / GiB:,.1f}", "cost": _usd(a.cost_usd),
             "what changes": "; ".join(a.changes)} for i, a in enumerate(alts)]
    return html_table(rows)


# ---------------------------------------------------------------- sections from other modules


def checklist_html(cfg: ReportConfig) -> str:
    """Guide 000's seven-step checklist answered for this inventory (GPU type × count,
    target context, KV dtype, the report's assumptions), by issue 5's :mod:`k3lib.studies.checklist`,
    with its recommended and cheapest configurations."""
    checklist, why = _optional("studies.checklist")
    if checklist is None:
        return not_available("checklist answers", why)
    plan = cfg.plan
    try:
        c = checklist.run_checklist(model=plan.model, gpu=plan.gpu, gpus=plan.gpus, nodes=plan.nodes,
                                    context=plan.context_tokens, kv_dtype=plan.kv_dtype, batch=plan.batch,
                                    assumptions=plan.assumptions)
    except K3InputError as exc:
        return not_available("checklist answers", f"not computed for this configuration ({exc})")
    out = frame_html(c.to_frame())
    for label, conf in (("Recommended for these GPUs", c.recommended), ("Cheapest on this GPU type", c.cheapest)):
        out += f"<p><strong>{esc(label)}:</strong> " + (esc(conf.reason) if conf else "none fits.") + "</p>"
    return out


def command_html(cmd) -> str:
    """A :class:`k3lib.studies.commands.Command` as copyable text, one line per flag's meaning, and its notes."""
    notes = "".join(f"<li>{esc(n)}</li>" for n in cmd.notes)
    return (f'<pre class="k3-cmd">{esc(cmd.text)}</pre>'
            + (html_table([{"flag": f, "why": w} for f, w in cmd.explanations]) if cmd.explanations else "")
            + (f"<ul>{notes}</ul>" if notes else ""))


def engine_commands_html(cfg: ReportConfig) -> str:
    """The launch command for the chosen engine and the topology check (issue 5's
    :mod:`k3lib.studies.commands`); in offload mode llama.cpp keeps every routed expert in RAM."""
    commands, why = _optional("studies.commands")
    if commands is None:
        return not_available(f"{cfg.engine} command", why)
    plan = cfg.plan
    makers = {"vllm": lambda: commands.vllm_command(plan),
              "llama.cpp": lambda: commands.llama_server_command(plan, offload_all_experts=cfg.offload == "experts")}
    if cfg.engine not in makers:
        out = not_available(f"{cfg.engine} command", "k3lib.studies.commands writes vllm and llama.cpp command lines; "
                            "set engine to one of those")
    else:
        try:
            out = f"<p><strong>{esc(cfg.engine)}</strong></p>" + command_html(makers[cfg.engine]())
        except K3InputError as exc:
            out = not_available(f"{cfg.engine} command", f"not possible for this plan ({exc})")
    return (out + "<p><strong>Check the GPU links first</strong></p>" + command_html(commands.topology_command(plan))
            + engine_view_html(cfg))


def engine_view_html(cfg: ReportConfig) -> str:
    """One GPU's memory under the engine's own rules (issue 7's :func:`k3lib.engines.estimate_for_engine`):
    its verdict and the lines it would print."""
    engines, why = _optional("engines")
    title = f"<p><strong>Memory as {esc(cfg.engine)} sees it</strong></p>"
    if engines is None:
        return title + not_available("engine profile", why)
    plan = cfg.plan
    if cfg.offload == "experts":
        return title + "<p>The engine profiles place every weight on the GPUs; the offload section above has " \
                       "the memory with the experts in system RAM.</p>"
    if plan.pp > 1:
        return title + not_available("engine profile", f"k3lib.engines models one pipeline stage; this plan has "
                                     f"PP={plan.pp}")
    kv = "auto" if plan.kv_dtype == "bf16" else plan.kv_dtype
    if cfg.engine == "llama.cpp":
        commands, _ = _optional("studies.commands")
        kv = commands.LLAMA_CACHE_TYPES.get(plan.kv_dtype, kv) if commands is not None else kv
    try:
        est = engines.estimate_for_engine(cfg.engine, model=plan.model, gpu=plan.gpu, gpus=plan.gpus, tp=plan.tp,
                                          context=plan.context_tokens, batch=plan.batch, kv_dtype=kv,
                                          weights=plan.weight_format)
    except K3InputError as exc:
        return title + not_available("engine profile", f"not possible for this plan ({exc})")
    notes = "".join(f"<li>{esc(n)}</li>" for n in est.notes)
    printed = html_table([{"the engine prints": k, "value": v} for k, v in est.printed.items()]) if est.printed else ""
    return (title + f"<p>{esc(est.engine)} {esc(est.version)}: {esc(est.reason)}</p>" + printed
            + (f"<ul>{notes}</ul>" if notes else ""))


def offload_relevant(cfg: ReportConfig) -> bool:
    """Offload is shown when asked for (``experts``) or, with ``auto``, when the plan does not fit."""
    return cfg.offload == "experts" or (cfg.offload == "auto" and not cfg.plan.fits)


def offload_html(cfg: ReportConfig) -> str:
    """Experts in system RAM, the rest on one GPU (issue 4's :mod:`k3lib.studies.offload`)."""
    offloaded, why = offload_plan(cfg)
    if offloaded is None:
        if why.startswith("not needed"):
            return f"<p>{esc(why[0].upper() + why[1:])}.</p>"
        return not_available("offload option", why)
    offload, _ = _optional("studies.offload")
    notes = "".join(f"<li>{esc(n)}</li>" for n in offloaded.notes)
    prefill = offloaded.prefill_tokens_per_s
    return (f"<p><strong>{esc(offloaded.verdict())}</strong></p>"
            f"<p>Routed experts of {offloaded.parts.moe_layers - offloaded.expert_layers_on_gpu} layers in system "
            f"RAM at {offloaded.ram_bandwidth_bytes_per_s / GB:,.0f} GB/s, everything else on one "
            f"{esc(offloaded.gpu.name)}. Decode is a bandwidth roofline; prefill "
            + (f"≈ {prefill:,.0f} tokens/s" if prefill else "is not estimated") + " (weights crossing the host link)."
            "</p>" + frame_html(offload.summary_table(offloaded, unit="GB"))
            + (f"<ul>{notes}</ul>" if notes else "") + "<p><small>GB = 10<sup>9</sup> bytes.</small></p>")


# ---------------------------------------------------------------- assumptions


def assumptions_table(plan) -> list[dict[str, str]]:
    """Every assumption behind the figures, its value and where it comes from."""
    from k3lib.core.memory import DEFAULT_PREFILL_CHUNK_TOKENS, kv_bytes_per_token
    from k3lib.core.models import PublishedProfile

    m, a, g = plan.model, plan.assumptions, plan.gpu
    profile = isinstance(m, PublishedProfile)
    rows = []

    def add(name, value, source):
        rows.append({"assumption": name, "value": value, "source": source})

    if profile:
        tier = m.tier_for(plan.weight_format)
        add("weights", _gib(plan.total.weights_bytes),
            f"{m.guide} ({m.file}), quoted: “{m.quotes.get('weights.' + tier, '')}”; "
            f"read in {m.unit}: {m.unit_reason}")
        add("KV bytes per token", f"{kv_bytes_per_token(m, plan.kv_dtype):,} B at {plan.kv_dtype}",
            f"{m.kv_bytes_per_token_bf16:,} B at BF16, quoted: “{m.quotes.get('kv_bytes_per_token_bf16', '')}”, "
            "scaled by bytes per element")
    else:
        add("weights", _gib(plan.total.weights_bytes),
            f"Σ parameters × bits ÷ 8 over the architecture's parameter groups at {plan.weight_format}; "
            f"shapes from {m.source}")
        add("KV bytes per token", f"{kv_bytes_per_token(m, plan.kv_dtype):,} B at {plan.kv_dtype}",
            "computed from the attention layers (GQA heads × head dim, MLA latent, sliding windows capped, "
            "linear-attention state per sequence)")
    if a.activation_bytes is not None:
        add("activation", _gib(plan.total.activation_bytes), "given as a parameter of this report")
    elif profile:
        add("activation", _gib(plan.total.activation_bytes),
            f"{m.guide} at batch 1 × batch; quoted: “{m.quotes.get('activation_bytes_batch1', '')}”")
    else:
        add("activation", _gib(plan.total.activation_bytes),
            f"rule: one {a.prefill_chunk_tokens or DEFAULT_PREFILL_CHUNK_TOKENS:,}-token prefill chunk in BF16 "
            "through the widest layer, plus FP32 logits (k3lib.core.memory.activation_bytes)")
    if a.overhead_per_gpu_bytes is not None:
        add("overhead", f"{_gib(plan.per_gpu.overhead_bytes)} per GPU", "given per GPU as a parameter of this report")
    elif a.overhead_total_bytes is not None:
        add("overhead", f"{_gib(plan.total.overhead_bytes)} in total ({_gib(plan.per_gpu.overhead_bytes)} per GPU)",
            "given in total as a parameter of this report")
    elif profile and (m.overhead_per_gpu_bytes is not None or m.overhead_total_bytes is not None):
        key = "overhead_per_gpu" if m.overhead_per_gpu_bytes is not None else "overhead_total"
        add("overhead", f"{_gib(plan.per_gpu.overhead_bytes)} per GPU",
            f"{m.guide}, quoted: “{m.quotes.get(key, '')}”")
    else:
        add("overhead", f"{_gib(plan.per_gpu.overhead_bytes)} per GPU",
            f"rule: CUDA context {_gib(a.cuda_context_bytes)} + NCCL {_gib(a.nccl_bytes_per_peer)} × (TP − 1) + "
            f"{a.fragmentation_fraction:.0%} fragmentation of the GPU's payload")
    add("GPU memory", f"{_gib(plan.per_gpu.available_bytes)} per GPU ({plan.memory_basis})",
        f"{g.name}: {g.source} [{g.verification}]")
    add("GPU price", _usd(g.price_usd), "data/hardware.csv" if g.price_usd is not None else "no price in the catalogue")
    add("layout", f"TP={plan.tp} × PP={plan.pp}, {plan.nodes} node(s)",
        "TP inside a node where the heads split, pipeline stages for the rest (k3lib.core.plan.choose_layout), "
        "unless tp/pp are given")
    add("KV split over GPUs", "even split over TP × PP" if profile else
        "GQA ÷ min(TP, KV heads), MLA latent replicated on every TP rank, linear state ÷ TP, all ÷ PP",
        "k3lib.core.plan.kv_bytes_per_gpu")
    add("units", "GiB = 2^30 bytes; GB = 10^9 bytes; K = 1,024 tokens", "k3lib.core.units")
    return rows


def assumptions_html(plan) -> str:
    return html_table(assumptions_table(plan))


def cli_command(params: Mapping[str, Any], out: str = "reports/report.html") -> str:
    """The ``k3plan report`` command line that reproduces ``params`` (empty values left out)."""
    import shlex

    flag = {"scenario": "--scenario"}
    parts = ["k3plan", "report"]
    for p in PARAMETERS:
        v = params.get(p.name, p.cli_default)
        if v in ("", None) or (p.name in ("tp", "pp") and v in (0, "0")) or v == p.cli_default:
            continue
        parts += [flag.get(p.name, "--" + p.name.replace("_", "-")), str(v)]
    return " ".join(shlex.quote(x) for x in parts + ["-o", out])


def parameters_html(cfg: ReportConfig) -> str:
    """The parameters this report ran with, and the command that reproduces it."""
    rows = [{"parameter": p.name, "value": repr(cfg.parameters.get(p.name, p.cli_default)), "meaning": p.help}
            for p in PARAMETERS]
    return (html_table(rows) + "<p>To produce this report again:</p>"
            f'<pre class="k3-cmd">{esc(cli_command(cfg.parameters))}</pre>')


def setup() -> str:
    """Set up the report kernel: :func:`k3lib.views.notebook.skip_slow_iri_checker`, then the offline Altair
    renderer of :func:`k3lib.views.notebook.setup` (SVG through vl-convert). Returns its name."""
    from k3lib.views.notebook import setup as notebook_setup

    from k3lib.views.notebook import skip_slow_iri_checker

    skip_slow_iri_checker()
    return notebook_setup()


def chart_or_note(chart, what: str):
    """``chart`` itself (rendered as inline SVG by the notebook's renderer), or an HTML
    note that it is not available."""
    if chart is not None:
        return chart
    from IPython.display import HTML

    return HTML(not_available(what, "the chart module is not available in this installation"))


# ---------------------------------------------------------------- papermill + nbconvert

_TEMPLATE_NAME = "k3report.html.j2"
# The lab template, minus every script it would load: require.js, MathJax and Mermaid
# (all from a CDN) and the widget manager. Reports carry no widgets and no LaTeX. SVG outputs
# are written inline as <svg> elements (the lab template would wrap them in a base64 <img>).
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block data_svg scoped -%}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
{{ output.data['image/svg+xml'] }}
</div>
{%- endblock data_svg -%}
{%- block extra_css -%}
<style type="text/css">main { max-width: 1100px; margin: 0 auto; }</style>
{%- endblock extra_css -%}
"""

_EXTERNAL = re.compile(
    r"""<(?:script|link|img|iframe|source|video|audio|embed)\b[^>]*?\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""",
    re.I)
_CSS_URL = re.compile(r"""(?:@import|url\()\s*["']?\s*(?:https?:)?//""", re.I)


def external_references(text: str) -> list[str]:
    """Every place ``text`` would load something from the network (script/link/img … src
    or href, CSS ``url()``/``@import``): empty for a self-contained report."""
    return [m.group(0) for m in _EXTERNAL.finditer(text)] + [m.group(0) for m in _CSS_URL.finditer(text)]


def _strip_css_comments(text: str) -> str:
    """Drop ``/* … */`` comments inside ``<style>`` blocks (the theme CSS cites URLs there)."""
    return re.sub(r"(<style\b[^>]*>)(.*?)(</style>)",
                  lambda m: m.group(1) + re.sub(r"/\*.*?\*/", "", m.group(2), flags=re.S) + m.group(3),
                  text, flags=re.S | re.I)


@functools.lru_cache(maxsize=1)
def _exporter():
    """The HTML exporter, built once per process (its templates take ~0.5 s to compile)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    c = Config()
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_cell_tags = {SKIP_IN_REPORT_TAG}
    c.HTMLExporter.exclude_input = True
    c.HTMLExporter.exclude_input_prompt = True
    c.HTMLExporter.exclude_output_prompt = True
    c.HTMLExporter.embed_images = True
    exporter = HTMLExporter(config=c, template_name="lab", extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})])
    exporter.template_file = _TEMPLATE_NAME
    return exporter


def export_html(nb, out_path: str | Path, *, title: str = "") -> Path:
    """Export an executed notebook to one self-contained HTML file: no input cells, no
    prompts, cells tagged ``skip-in-report`` dropped, SVG outputs inline, no script loaded
    from anywhere. Raises RuntimeError if the result would still reference the network."""
    import copy

    nb = copy.deepcopy(nb)
    if title:
        nb.metadata["title"] = title
    nb.metadata.pop("widgets", None)
    exporter = _exporter()
    body, _ = exporter.from_notebook_node(nb)
    body = _strip_css_comments(body)
    bad = external_references(body)
    if bad:
        raise RuntimeError(f"the report would load from the network: {bad[:3]}")
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body, encoding="utf-8")
    return out


@dataclass
class ReportResult:
    """One scenario's outcome: its key figures, or the error that stopped it."""

    scenario: str
    html_path: Path | None = None
    notebook_path: Path | None = None
    figures: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


class ReportError(Exception):
    """A report could not be produced (bad parameter, or a cell failed)."""


def _execution_error(exc: Exception) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    if ename:
        return f"{ename}: {evalue}"
    return f"{type(exc).__name__}: {exc}"


def run_report(parameters: Mapping[str, Any], out_html: str | Path, *, notebook: str | Path = REPORT_NOTEBOOK,
               timeout_s: int = 300) -> ReportResult:
    """Run the report notebook for ``parameters`` (missing keys: :data:`CLI_DEFAULTS`) and
    write ``out_html`` (and the executed notebook next to it, ``.ipynb``).

    Parameters are validated here first, so a bad value fails in milliseconds with a
    :class:`~k3lib.views.notebook.ParameterError` and no kernel is started. A cell that fails
    raises :class:`ReportError` naming it; the executed notebook is kept for inspection.
    """
    import papermill

    t0 = time.perf_counter()
    params = complete_parameters(parameters)
    cfg = configure(**params)                       # ParameterError: one line, no kernel
    figures = key_figures(cfg)
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    out_nb = out_html.with_suffix(".ipynb")
    notebook = Path(notebook)
    t1 = time.perf_counter()
    try:
        nb = papermill.execute_notebook(str(notebook), str(out_nb), parameters=params, kernel_name=KERNEL,
                                        cwd=str(notebook.parent), progress_bar=False, log_output=False,
                                        execution_timeout=timeout_s)
    except Exception as exc:  # papermill's PapermillExecutionError and kernel failures
        raise ReportError(f"the report notebook failed ({out_nb}): {_execution_error(exc)}") from None
    t2 = time.perf_counter()
    export_html(nb, out_html, title=cfg.title)
    t3 = time.perf_counter()
    return ReportResult(scenario=cfg.title, html_path=out_html, notebook_path=out_nb, figures=figures,
                        seconds=t3 - t0, timings={"validate_s": t1 - t0, "execute_s": t2 - t1, "export_s": t3 - t2})


# ---------------------------------------------------------------- batch


def safe_filename(name: str, *, taken: Iterable[str] = (), max_len: int = 60) -> str:
    """A file stem from any text: ASCII letters, digits, ``-`` and ``_`` only; never empty,
    never one of ``taken`` (``-2``, ``-3`` … appended).

    >>> safe_filename("<script>alert(1)</script>")
    'script-alert-1-script'
    >>> safe_filename("Guide 000: 6× H100", taken={"guide-000-6-h100"})
    'guide-000-6-h100-2'
    """
    import unicodedata

    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii").lower()
    stem = re.sub(r"[^a-z0-9_]+", "-", text).strip("-_")[:max_len].strip("-_") or "scenario"
    if stem in {"index", "con", "prn", "aux", "nul"}:
        stem = f"scenario-{stem}"
    taken = set(taken)
    out, i = stem, 1
    while out in taken:
        i += 1
        out = f"{stem}-{i}"
    return out


def load_scenarios(path: str | Path) -> list[dict[str, Any]]:
    """Scenarios from a YAML file: ``scenarios:`` (a list of mappings, each with a ``name``
    and any report parameters) and optional ``defaults:`` shared by all of them. A
    malformed file raises :class:`K3InputError`; a malformed *scenario* is returned as is
    and fails on its own in :func:`run_batch`."""
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise K3InputError("scenarios", f"cannot read {path}: {exc}") from None
    if isinstance(doc, list):
        doc = {"scenarios": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("scenarios"), list):
        raise K3InputError("scenarios", f"{path} has no 'scenarios:' list", "scenarios: [{name: ..., model: ...}, ...]")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise K3InputError("defaults", "must be a mapping of report parameters")
    out = []
    for i, s in enumerate(doc["scenarios"], 1):
        if isinstance(s, dict):
            s = {**defaults, **s}
            s.setdefault("name", f"scenario {i}")
        out.append(s)
    return out


def run_batch(scenarios: "str | Path | Sequence[Mapping[str, Any]]", out_dir: str | Path, *,
              progress: bool = True, notebook: str | Path = REPORT_NOTEBOOK,
              runner: Callable[..., ReportResult] | None = None) -> list[ReportResult]:
    """One report per scenario into ``out_dir``, then ``out_dir/index.html`` comparing them.

    A scenario that fails (bad parameter, failing cell) gets a row saying why; the others
    still get their reports. Returns one :class:`ReportResult` per scenario, in order.
    """
    from tqdm.auto import tqdm

    from k3lib.views.notebook import ParameterError

    items = load_scenarios(scenarios) if isinstance(scenarios, (str, Path)) else list(scenarios)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    runner = runner or run_report
    results: list[ReportResult] = []
    taken: set[str] = {"index"}
    bar = tqdm(items, desc="reports", unit="scenario", disable=not progress)
    for i, item in enumerate(bar, 1):
        t0 = time.perf_counter()
        if not isinstance(item, Mapping):
            results.append(ReportResult(scenario=f"scenario {i}", error=f"scenario {i}: not a mapping: {item!r}"))
            continue
        params = dict(item)
        name = str(params.pop("name", "") or params.get("scenario", "") or f"scenario {i}")
        params["scenario"] = name
        stem = safe_filename(name, taken=taken)
        taken.add(stem)
        bar.set_postfix_str(stem[:30])
        try:
            res = runner(params, out_dir / f"{stem}.html", notebook=notebook)
            res.scenario = name
        except (ParameterError, K3InputError, ReportError) as exc:
            res = ReportResult(scenario=name, error=str(exc))
        res.seconds = time.perf_counter() - t0
        results.append(res)
    write_index(results, out_dir / "index.html")
    return results


def write_index(results: Sequence[ReportResult], path: str | Path) -> Path:
    """``index.html``: the scenarios side by side (verdict, GPUs, cost, max context,
    tokens/s), each linked to its report; a failed scenario's row says why."""
    path = Path(path)
    rows = []
    for r in results:
        f = r.figures or {}
        link = (f'<a href="{esc(r.html_path.name)}">{esc(r.scenario)}</a>' if r.html_path
                else esc(r.scenario))
        if r.error:
            verdict = verdict_badge("error")
            rows.append({"scenario": link, "verdict": verdict, "configuration": "", "GPUs": "", "cost": "",
                         "needed / available (GiB)": "", "headroom (GiB)": "", "max context": "", "tokens/s": "",
                         "notes": f"<strong>error:</strong> {esc(r.error)}"})
            continue
        verdict = verdict_badge(f["verdict"])
        ctx = f["context_tokens"]
        rows.append({
            "scenario": link, "verdict": verdict,
            "configuration": esc(f"{f['model']} · {f['weights']} · KV {f['kv_dtype']} · "
                                 f"{ctx // 1024 if ctx % 1024 == 0 else ctx}{'K' if ctx % 1024 == 0 else ''}"
                                 f" · batch {f['batch']}"),
            "GPUs": esc(f"{f['gpus']}× {f['gpu_name']}" + (f" ({f['nodes']} nodes)" if f["nodes"] > 1 else "")),
            "cost": esc(_usd(f["cost_usd"])),
            "needed / available (GiB)": esc(f"{f['total_bytes'] / GiB:,.1f} / {f['available_bytes'] / GiB:,.1f}"),
            "headroom (GiB)": esc(f"{f['headroom_bytes'] / GiB:,.1f}"),
            "max context": esc(context_text(f["max_context_tokens"]) if f["max_context_tokens"] else "none fits"),
            "tokens/s": esc(f"{f['tokens_per_s']:,.1f}" if f["tokens_per_s"] is not None else "not available"),
            "notes": esc(f["reason"]),
        })
    table = html_table(rows, raw=rows[0].keys() if rows else ())
    ok = sum(1 for r in results if r.ok)
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Deployment reports</title>
<style>body {{ font-family: system-ui, sans-serif; margin: 2em; }} {REPORT_CSS}</style></head>
<body><h1>Deployment reports</h1>
<p>{ok} of {len(results)} scenarios reported. GiB = 2<sup>30</sup> bytes; K = 1,024 tokens;
cost = GPU count × catalogue price (data/hardware.csv), “—” where no price is known.</p>
{table}
</body></html>
"""
    path.write_text(doc, encoding="utf-8")
    return path
