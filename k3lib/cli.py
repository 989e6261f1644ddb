"""``k3plan``: the command-line face of k3lib (also ``python -m k3lib``).

Exit codes: 0 ok (for ``estimate`` and ``offload``: the plan fits), 2 bad input (one line
naming the field, no traceback), 3 the plan was computed and DOES NOT FIT (``estimate``,
``offload``), 1 a report failed. A closed pipe (``k3plan models | head -1``) ends quietly:
no traceback, and not an error status (:func:`main`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from k3lib.cli_args import (
    UNITS,
    _size,
    _utilization,
    add_engine_args,
    add_layout_args,
    add_model_source_args,
    engine_settings_from_args,
    model_from_args,
)
from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like k3lib's own input errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    add_model_source_args(p)
    p.add_argument(
        "--weights",
        default=None,
        help="weight precision: native, bf16, fp8, q8_0, q6_k, q5_k_m, q4_k_m, "
        "q3_k_m, q2_k, iq1_s, mxfp4, nvfp4, awq, gptq, or the guides' q8/q4/q2 "
        "(default: native for architectures, q4 for guide profiles)",
    )
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp8, int4, q8_0, q4_0 (default bf16)")
    p.add_argument("--context", default="256K", help="context length: 131072, 128K, 256k, 1M (K = 1024 tokens)")
    p.add_argument("--batch", default="1", help="concurrent sequences (default 1)")
    add_layout_args(p)
    p.add_argument(
        "--activation", default=None, help="override activation memory in total, e.g. 10GiB (GB = 10^9, GiB = 2^30)"
    )
    p.add_argument("--overhead-per-gpu", default=None, help="override runtime overhead per GPU, e.g. 6GiB")
    p.add_argument(
        "--overhead-total",
        default=None,
        help="override runtime overhead over all GPUs, e.g. 48GiB (guide-000's worked example)",
    )
    p.add_argument(
        "--memory-basis",
        choices=("marketed", "usable"),
        default=None,
        help="GPU capacity: marketed (80 GiB for an H100) or usable (what the driver exposes); "
        "default usable for architectures, marketed for guide profiles",
    )
    add_engine_args(p)
    p.add_argument("--unit", choices=tuple(UNITS), default="GiB", help="unit of the printed table (default GiB)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes are integers in bytes")


def _plan_from_args(args: argparse.Namespace, *, with_limits: bool = True):
    """The plan for an engine that every planning command prints: the model (built-in or the
    user's file), the layout, the engine (``--engine``, default by model) and its settings."""
    from k3lib.core.plan import Assumptions
    from k3lib.engines.deployment import default_engine_for, normalize_engine, plan_for_engine

    model = model_from_args(args)
    engine = getattr(args, "engine", None)
    eid = default_engine_for(model) if engine is None else normalize_engine(engine)
    if eid == "generic" and default_engine_for(model) == "guide":
        eid = "guide"
    settings = engine_settings_from_args(args, eid)
    assumptions = Assumptions(
        activation_bytes=_size(args, "activation"),
        overhead_per_gpu_bytes=_size(args, "overhead_per_gpu"),
        overhead_total_bytes=_size(args, "overhead_total"),
        memory_basis=getattr(args, "memory_basis", None),
    )
    if eid == "llama.cpp" and args.pp is not None:
        raise K3InputError("pp", "llama.cpp splits layers over the GPUs itself", "--gpus, without --pp")
    return plan_for_engine(
        model=model,
        engine=settings,
        gpu=args.gpu,
        gpus=args.gpus,
        weights=args.weights,
        kv_dtype=args.kv_dtype,
        context=args.context,
        batch=args.batch,
        nodes=args.nodes,
        tp=args.tp,
        pp=args.pp,
        assumptions=assumptions,
        with_limits=with_limits,
    )


def render_plan_table(plan, unit: str = "GiB") -> str:
    """A readable breakdown: one row per component, total and per GPU."""
    div = UNITS[unit]
    t, g = plan.total, plan.per_gpu
    rows = [
        ("weights", t.weights_bytes, g.weights_bytes),
        ("KV cache", t.kv_cache_bytes, g.kv_cache_bytes),
        ("activation", t.activation_bytes, g.activation_bytes),
        ("overhead", t.overhead_bytes, g.overhead_bytes),
        ("total", t.total_bytes, g.total_bytes),
        ("available", t.available_bytes, g.available_bytes),
        ("headroom", t.headroom_bytes, g.headroom_bytes),
    ]
    head = (
        f"{plan.model.name} [{plan.model.id}] · weights {plan.weight_format} · KV {plan.kv_dtype} · "
        f"context {plan.context_tokens:,} tokens · batch {plan.batch}\n"
        f"{plan.gpus}× {plan.gpu.name} ({plan.memory_basis} memory) · TP={plan.tp} PP={plan.pp}"
        f"{f' over {plan.nodes} nodes' if plan.nodes > 1 else ''}\n"
    )
    per_label = ("binding GPU" if plan.engine is not None else "fullest GPU") if len(plan.shares) > 1 else "per GPU"
    lines = [f"{'component':<12}{'all GPUs (' + unit + ')':>16}{per_label + ' (' + unit + ')':>20}"]
    for name, tot, per in rows:
        if name == "total":
            lines.append("-" * 48)
        lines.append(f"{name:<12}{tot / div:>16,.1f}{per / div:>20,.1f}")
    if plan.engine is not None and plan.engine.estimate is not None and plan.engine.estimate.stages:
        est = plan.engine.estimate
        lines.append(
            "per stage: "
            + "; ".join(
                f"stage {r['stage']} ({r['layers']} layers) "
                f"{(r['weights_bytes'] + r['activation_bytes'] + r['runtime_bytes'] + est.cuda_graph_bytes + r['kv_needed_bytes']) / div:,.1f}"
                for r in est.stages
            )
        )
    elif len(plan.shares) > 1:
        lines.append(
            "per stage: "
            + "; ".join(
                f"stage {s.stage} ({s.layers} layers, {s.gpus} GPUs) {s.total_bytes / div:,.1f}" for s in plan.shares
            )
        )
    verdict = ("FITS" if plan.fits else "DOES NOT FIT") + " — " + plan.reason
    notes = "".join(f"\nnote: {n}" for n in plan.notes)
    basis = (
        "\nnote: capacity = the marketed figure the guide uses, not what an engine can allocate"
        if plan.memory_basis == "marketed" and plan.engine is None
        else ""
    )
    if plan.policy == "stages" and plan.tp > 1:
        basis += (
            "\nnote: 'all GPUs' sums every GPU's share, so copies held on every TP rank (an MLA latent, "
            "replicated weights) count once per GPU"
        )
    return head + engine_lines(plan, unit, div) + "\n".join(lines) + "\n" + verdict + engine_tail(plan) + notes + basis


def engine_lines(plan, unit: str, div: int) -> str:
    """Whose rules decide the verdict, with the settings the figures were computed with."""
    text = f"verdict by: {plan.verdict_basis}"
    e = plan.engine
    if e is None:
        return text + "\n"
    settings = " ".join(f"{k}={v}" for k, v in e.settings if v not in ((), None))
    text += f" · settings: {settings}\n" if settings else "\n"
    cp = plan.core_per_gpu
    text += (
        f"components below are {e.name}'s (available = its budget); k3lib's stage model gives "
        f"{cp.total_bytes / div:,.1f} {unit} on the fullest GPU\n"
    )
    return text


def engine_tail(plan) -> str:
    """The engine's capacity figures and the lines it would print."""
    e = plan.engine
    if e is None:
        return ""
    mx = f"{e.max_context_tokens:,} tokens" if e.max_context_tokens is not None else "not searched"
    out = (
        f"\nKV capacity {e.kv_capacity_tokens:,} tokens · max concurrency {e.max_concurrency:,.2f}× at "
        f"{plan.context_tokens:,} tokens · max context for batch {plan.batch}: {mx}"
    )
    est = e.estimate
    if est is not None:
        out += "".join(f"\n{e.name} would print: {k}: {v}" for k, v in est.printed.items())
    return out


def _cmd_estimate(args) -> int:
    plan = _plan_from_args(args)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
    else:
        print(render_plan_table(plan, args.unit))
    return 0 if plan.fits else 3


def _cmd_models(args) -> int:
    from k3lib.core.architecture import Architecture
    from k3lib.core.models import list_models

    rows: list[dict[str, Any]] = []
    for m in list_models():
        if isinstance(m, Architecture):
            rows.append(
                {
                    "id": m.id,
                    "kind": m.kind,
                    "name": m.name,
                    "params_total": m.params_total,
                    "params_active": m.params_active,
                    "kv_bytes_per_token_bf16": m.kv_bytes_per_token(2),
                    "max_context_tokens": m.max_context_tokens,
                    "source": m.source,
                }
            )
        else:
            rows.append(
                {
                    "id": m.id,
                    "kind": m.kind,
                    "name": m.name,
                    "params_total": m.params_total,
                    "params_active": m.params_active,
                    "kv_bytes_per_token_bf16": m.kv_bytes_per_token_bf16,
                    "max_context_tokens": m.max_context_tokens,
                    "source": m.file,
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':<22}{'kind':<14}{'params (B)':>12}{'active (B)':>12}{'KV B/token (BF16)':>19}  max context")
    for r in rows:
        act = f"{r['params_active'] / 1e9:,.1f}" if r["params_active"] else "—"
        print(
            f"{r['id']:<22}{r['kind']:<14}{r['params_total'] / 1e9:>12,.1f}{act:>12}"
            f"{r['kv_bytes_per_token_bf16']:>19,}  {r['max_context_tokens']:,}"
        )
    return 0


def _cmd_gpus(args) -> int:
    from k3lib.core.hardware import list_gpus

    gpus = list_gpus()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": g.id,
                        "name": g.name,
                        "aliases": list(g.aliases),
                        "memory_marketed_bytes": g.memory_marketed_bytes,
                        "memory_usable_bytes": g.memory_usable_bytes,
                        "memory_bw_bytes_per_s": g.memory_bw_bytes_per_s,
                        "price_usd": g.price_usd,
                        "vendor": g.vendor,
                        "device_class": g.device_class,
                        "unified_memory": g.unified_memory,
                        "bf16_dense_flops": g.bf16_dense_flops,
                        "fp8_dense_flops": g.fp8_dense_flops,
                        "gpus_per_node": g.gpus_per_node,
                        "scale_up_interconnect": g.scale_up_interconnect,
                        "scale_out_interconnect": g.scale_out_interconnect,
                        "verification": g.verification,
                        "source": g.source,
                    }
                    for g in gpus
                ],
                indent=2,
            )
        )
        return 0
    print(f"{'id':<20}{'memory (GiB)':>13}{'usable (GiB)':>14}{'bandwidth (GB/s)':>18}  name")
    for g in gpus:
        usable = f"{g.memory_usable_bytes / GiB:.2f}" if g.memory_usable_bytes else "—"
        print(
            f"{g.id:<20}{g.memory_marketed_bytes / GiB:>13,.1f}{usable:>14}{g.memory_bw_bytes_per_s / 1e9:>18,.0f}  {g.name}"
        )
    return 0


def _cmd_hosts(args) -> int:
    from k3lib.core.hosts import load_hosts

    hosts = load_hosts()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": h.id,
                        "name": h.name,
                        "aliases": list(h.aliases),
                        "memory_type": h.memory_type,
                        "memory_channels": h.memory_channels,
                        "mt_per_s": h.mt_per_s,
                        "sockets": h.sockets,
                        "bandwidth_bytes_per_s": h.memory_bw_bytes_per_s,
                        "max_memory_bytes": h.max_memory_bytes,
                        "unified_memory": h.unified_memory,
                        "source": h.source,
                    }
                    for h in hosts
                ],
                indent=2,
            )
        )
        return 0
    print(f"{'id':<26}{'channels':>9}{'MT/s':>7}{'sockets':>8}{'bandwidth (GB/s)':>18}  name")
    for h in hosts:
        print(
            f"{h.id:<26}{h.memory_channels:>9}{h.mt_per_s:>7}{h.sockets:>8}"
            f"{h.memory_bw_bytes_per_s / GB:>18,.1f}  {h.name}"
        )
    return 0


def _cmd_formats(args) -> int:
    from k3lib.core.precisions import kv_dtypes, weight_formats

    print("weight formats (bits per weight, incl. block scales):")
    for f in weight_formats():
        bits = f"{f.bits_per_weight:g}" if f.bits_per_weight else "per group"
        print(f"  {f.id:<12}{bits:>10}  {f.name}")
    print("KV-cache dtypes (bytes per element, incl. block scales):")
    for k in kv_dtypes():
        print(f"  {k.id:<12}{k.bytes_per_element:>10g}  {k.name}")
    return 0


# ---------------------------------------------------------------- report (issue 6)
# `k3plan report`: the report notebook run by papermill, exported to one offline HTML file
# (k3lib.report). Kept in one block: the parser, the flags→parameters mapping, the command.


def _add_report_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="deployment report(s) as self-contained offline HTML",
        description="Run the report notebook (notebooks/90-deployment-report.ipynb) with papermill "
        "and export it to one self-contained HTML file (no code, charts as inline SVG, "
        "no CDN). With --scenarios, one report per scenario of a YAML file and an "
        "index.html comparing them; exit code 1 if any scenario failed (its row in the "
        "index says why). Every plan flag is passed on to the report.",
    )
    _add_plan_args(p)
    p.add_argument("--scenario", default="", help="scenario name: the report's title (default: the configuration)")
    p.add_argument(
        "--offload",
        default="auto",
        choices=("auto", "none", "experts"),
        help="offload section: auto (when the plan does not fit), none, experts (guide 004's mode)",
    )
    p.add_argument("--ram", default=None, help="host RAM for offload, e.g. 1536GB (default: as needed)")
    p.add_argument("--ram-bandwidth", default="70GB/s", help="host RAM bandwidth for offload, default 70GB/s")
    p.add_argument(
        "--scenarios",
        default=None,
        metavar="YAML",
        help="run every scenario of a YAML file (see examples/scenarios.yaml); -o is then a folder; "
        "plan flags then belong in the file (its defaults:), not on the command line",
    )
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="output HTML file (default reports/<scenario>.html); "
        "with --scenarios, the output folder (default reports/)",
    )
    p.add_argument(
        "--keep-notebook",
        action="store_true",
        help="also keep the executed notebook (.ipynb) next to each HTML report (default: HTML only)",
    )
    # Every flag's default, so that _cmd_report can tell which ones the user gave.
    p.set_defaults(
        func=_cmd_report,
        report_flag_defaults={a.dest: a.default for a in p._actions if a.option_strings and a.dest != "help"},
    )


#: `k3plan report` flags that are not report parameters: where the output goes and how it is printed.
_REPORT_OUTPUT_FLAGS = ("scenarios", "output", "json", "keep_notebook")


def _report_parameters(args: argparse.Namespace) -> dict:
    """The report notebook's parameters from `k3plan report` flags ("" / 0: the model's rule, automatic).
    Every plan flag maps onto a report parameter; the flags that do not apply to a report
    raise K3InputError (no flag is accepted and ignored)."""
    model_path = ""
    for name in ("config", "gguf", "safetensors"):  # the user's own model: the report's model_path
        value = getattr(args, name, None)
        if value is not None:
            if not str(value).strip():
                raise K3InputError(name, "is empty", "a path to a local file or folder")
            from pathlib import Path

            model_path = str(Path(str(value).strip()).expanduser().resolve())  # the kernel runs elsewhere
    for name in (
        "max_num_seqs",
        "cpu_offload_gb",
        "mem_fraction_static",
        "n_gpu_layers",
        "override_tensor",
        "flash_attn",
        "n_ubatch",
        "cache_type_k",
        "cache_type_v",
        "swa_full",
        "kv_unified",
        "parallel",
        "n_rs_seq",
    ):
        if getattr(args, name, None) not in (None, []):
            raise K3InputError(
                name.replace("_", "-"),
                "is not a report parameter (the report plans with the engine's default for it)",
                "leave it out; use `k3plan estimate` for this setting",
            )
    if getattr(args, "unit", "GiB") != "GiB":
        raise K3InputError(
            "unit", "does not apply to `k3plan report` (reports label GiB and GB themselves)", "leave --unit out"
        )
    util = _utilization(args)
    return {
        "scenario": args.scenario,
        "model": args.model,
        "model_path": model_path,
        "weights": args.weights or "",
        "kv_dtype": args.kv_dtype,
        "context": args.context,
        "batch": args.batch,
        "gpu": args.gpu,
        "gpus": args.gpus,
        "nodes": args.nodes or 0,
        "tp": args.tp or 0,
        "pp": args.pp or 0,
        "engine": getattr(args, "engine", None) or "",
        "gpu_memory_utilization": util if util is not None else 0.0,
        "offload": args.offload,
        "ram": args.ram or "",
        "ram_bandwidth": args.ram_bandwidth or "",
        "activation": args.activation or "",
        "overhead_per_gpu": args.overhead_per_gpu or "",
        "overhead_total": args.overhead_total or "",
        "memory_basis": args.memory_basis or "",
    }


def _cmd_report(args) -> int:
    from pathlib import Path

    from k3lib.report import ReportError, configure, run_batch, run_report, safe_filename
    from k3lib.views.notebook import ParameterError, skip_slow_iri_checker

    skip_slow_iri_checker()  # ~3 s of import time this command never needs

    if args.scenarios:
        defaults = getattr(args, "report_flag_defaults", {})
        given = [d for d, v in defaults.items() if d not in _REPORT_OUTPUT_FLAGS and getattr(args, d, v) != v]
        if given:
            raise K3InputError(
                given[0],
                "cannot be combined with --scenarios (it would be ignored)",
                "put it under defaults: in the scenario file",
            )
        out_dir = Path(args.output or "reports")
        if out_dir.suffix.lower() in (".html", ".htm"):
            raise K3InputError("output", f"{out_dir} is a file name; with --scenarios, -o names a folder")
        results = run_batch(args.scenarios, out_dir, keep_notebook=args.keep_notebook)
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "scenario": r.scenario,
                            "html": str(r.html_path) if r.html_path else None,
                            "error": r.error,
                            "figures": r.figures,
                        }
                        for r in results
                    ],
                    indent=2,
                )
            )
        else:
            for r in results:
                print(f"ok      {r.html_path}" if r.ok else f"FAILED  {r.scenario}: {r.error}")
            print(f"index   {out_dir / 'index.html'}  ({sum(r.ok for r in results)} of {len(results)} reports)")
        return 0 if all(r.ok for r in results) else 1
    params = _report_parameters(args)
    try:
        cfg = configure(**params)  # validated once here; the notebook's kernel validates its own
        out = Path(args.output or Path("reports") / f"{safe_filename(cfg.title)}.html")
        result = run_report(params, out, config=cfg, keep_notebook=args.keep_notebook)
    except ParameterError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 2
    except ReportError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 1
    print(
        json.dumps({"html": str(result.html_path), "figures": result.figures}, indent=2)
        if args.json
        else result.html_path
    )
    return 0


# ---------------------------------------------------------------- end of report block


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="k3plan", description="How much GPU memory a model needs, and where it goes.")

    class _Version(argparse.Action):  # like action="version", but importlib.metadata (~30 ms) only when asked
        def __call__(self, parser, namespace, values, option_string=None):
            from importlib.metadata import PackageNotFoundError, version

            try:
                v = version("k3lib")  # the installed wheel's or editable install's metadata
            except PackageNotFoundError:  # a checkout that was never installed
                from k3lib import __version__ as v
            print(f"{parser.prog} {v}")  # on stdout, as argparse's own version action does
            parser.exit()

    parser.add_argument(
        "--version", action=_Version, nargs=0, default=argparse.SUPPRESS, help="print k3plan's version and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = sub.add_parser(
        "estimate",
        help="memory breakdown for one configuration",
        description="Memory breakdown (weights, KV cache, activation, overhead) in total and per GPU.",
    )
    _add_plan_args(p)
    p.set_defaults(func=_cmd_estimate)
    p = sub.add_parser("models", help="list built-in models", description="List built-in models and guide profiles.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_models)
    p = sub.add_parser("gpus", help="list built-in GPUs", description="List built-in GPUs and unified-memory machines.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_gpus)
    p = sub.add_parser(
        "hosts",
        help="list host platforms (memory channels, RAM bandwidth)",
        description="List the host platforms whose RAM bandwidth offload plans read (data/hosts.csv): "
        "channels × sockets × MT/s × 8 B.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_hosts)
    p = sub.add_parser(
        "formats",
        help="list weight formats and KV dtypes",
        description="List weight formats and KV-cache dtypes with their sizes.",
    )
    p.set_defaults(func=_cmd_formats)
    _add_report_parser(sub)  # issue 6
    from k3lib.cli_studies import add_checklist_parsers, add_offload_parser, add_speed_parser

    add_checklist_parsers(sub)  # issue 5
    add_offload_parser(sub)  # issue 4
    add_speed_parser(sub)  # issue 22
    from k3lib.engines.logcheck import add_check_log_parser

    add_check_log_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``k3plan``'s entry point; returns the exit status (see the module's docstring).

    A closed pipe (``k3plan models | head -1``: the reader left) is not an error and ends
    quietly: nothing on stderr, and the command's own status when it had finished (0, or 3 for
    a plan that does not fit; its output waited in stdout's buffer), 0 when the pipe closed
    while it was still printing."""
    status: int | None = None
    try:
        try:
            status = _main(argv)
        finally:  # also on argparse's exit (--help, --version): what is still buffered is written here
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()
        return 0 if status is None else status
    return status


def _stdout_to_devnull() -> None:
    """After a closed pipe: point stdout at /dev/null so that Python's own flush at exit, of what
    is still buffered, does not raise again ("Exception ignored ... BrokenPipeError")."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except K3InputError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an optional dependency the base install leaves out: name its extra
        extra = getattr(exc, "extra", None) or {
            "papermill": "reports",
            "nbformat": "reports",
            "nbconvert": "reports",
            "nbclient": "reports",
            "ipykernel": "reports",
            "tqdm": "reports",
            "altair": "notebooks",
            "vl_convert": "notebooks",
            "ipywidgets": "notebooks",
            "IPython": "notebooks",
            "jupyterlab": "notebooks",
        }.get((exc.name or "").partition(".")[0])
        if extra is not None and args.command == "report":
            extra = "reports"
        if extra is None:
            raise
        msg = (
            str(exc)
            if getattr(exc, "extra", None)
            else (
                f"`k3plan {args.command}` needs {exc.name}, which the base install leaves out: "
                f"pip install 'k3lib[{extra}]'"
            )
        )
        print(f"k3plan: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
