"""``k3plan``: the command-line face of k3lib (also ``python -m k3lib``).

Exit codes: 0 ok (for ``estimate`` and ``offload``: the plan fits), 2 bad input (one line
naming the field, no traceback), 3 the plan was computed and DOES NOT FIT (``estimate``,
``offload``), 1 a report failed.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB, parse_size_bytes

UNITS = {"GiB": GiB, "GB": GB}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like k3lib's own input errors."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _utilization(args: argparse.Namespace) -> float | None:
    """``--gpu-memory-utilization`` as a number: an ASCII decimal fraction in (0, 1] (no ``nan``,
    ``1e0`` or other scripts' digits), else one K3InputError naming the flag's field."""
    text = getattr(args, "gpu_memory_utilization", None)
    return None if text is None else _fraction(text, "gpu_memory_utilization", example="0.9")


def _size(args: argparse.Namespace, name: str) -> int | None:
    value = getattr(args, name)
    return None if value is None else parse_size_bytes(value, name.replace("_", "-"))


def add_model_source_args(p: argparse.ArgumentParser, *, default_model: str = "kimi-k3") -> None:
    """The model options every planning command takes: a built-in id, or the user's own file."""
    source = p.add_mutually_exclusive_group()
    source.add_argument("--model", default=default_model,
                        help=f"built-in model id (see `k3plan models`), or a Hugging Face repository org/name "
                             f"(org/name/FILE.gguf for one GGUF file) read from the local cache; default {default_model}")
    source.add_argument("--config", metavar="PATH", default=None,
                        help="a local Hugging Face config.json (or its folder) instead of --model")
    source.add_argument("--gguf", metavar="FILE", default=None,
                        help="a local .gguf file: architecture from its metadata, weights = its exact tensor bytes")
    source.add_argument("--safetensors", metavar="DIR", default=None,
                        help="a local safetensors checkpoint (folder with config.json): weights = exact tensor bytes")


def model_from_args(args: argparse.Namespace):
    """The model a command plans: the LoadedModel of --config/--gguf/--safetensors (a file the
    user names is the model planned, or a named error) or of a Hugging Face ``--model org/name``,
    else the built-in id of --model."""
    loaded = _loaded_from_args(args)
    return loaded if loaded is not None else args.model


def add_layout_args(p: argparse.ArgumentParser) -> None:
    """The GPUs and their layout: --gpu, --gpus, --nodes, --tp, --pp (estimate, report, speed)."""
    p.add_argument("--gpu", default="h100-sxm", help="GPU id or alias (see `k3plan gpus`); default h100-sxm")
    p.add_argument("--gpus", default="8", help="number of GPUs in total (default 8)")
    p.add_argument("--nodes", default=None, help="nodes the GPUs are spread over (default: one node up to the "
                   "GPU's node size, e.g. 8, then whole nodes)")
    p.add_argument("--tp", default=None, help="tensor-parallel size (default: as wide as the heads allow inside a node)")
    p.add_argument("--pp", default=None, help="pipeline-parallel size (default: the rest, across nodes)")


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    add_model_source_args(p)
    p.add_argument("--weights", default=None, help="weight precision: native, bf16, fp8, q8_0, q6_k, q5_k_m, q4_k_m, "
                   "q3_k_m, q2_k, iq1_s, mxfp4, nvfp4, awq, gptq, or the guides' q8/q4/q2 "
                   "(default: native for architectures, q4 for guide profiles)")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp8, int4, q8_0, q4_0 (default bf16)")
    p.add_argument("--context", default="256K", help="context length: 131072, 128K, 256k, 1M (K = 1024 tokens)")
    p.add_argument("--batch", default="1", help="concurrent sequences (default 1)")
    add_layout_args(p)
    p.add_argument("--activation", default=None,
                   help="override activation memory in total, e.g. 10GiB (GB = 10^9, GiB = 2^30)")
    p.add_argument("--overhead-per-gpu", default=None,
                   help="override runtime overhead per GPU, e.g. 6GiB")
    p.add_argument("--overhead-total", default=None,
                   help="override runtime overhead over all GPUs, e.g. 48GiB (guide-000's worked example)")
    p.add_argument("--memory-basis", choices=("marketed", "usable"), default=None,
                   help="GPU capacity: marketed (80 GiB for an H100) or usable (what the driver exposes); "
                        "default usable for architectures, marketed for guide profiles")
    add_engine_args(p)
    p.add_argument("--unit", choices=tuple(UNITS), default="GiB", help="unit of the printed table (default GiB)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes are integers in bytes")


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """--engine and every engine option; an option the chosen engine does not take is refused."""
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="the engine the plan is for: vllm, sglang, llama.cpp, transformers, or generic (k3lib's "
                        "component model, no engine); default vllm, llama.cpp for --gguf, the guide's own policy "
                        "for a guide profile. Its rules decide the verdict")
    p.add_argument("--gpu-memory-utilization", default=None, metavar="F",
                   help="vLLM: the fraction of GPU memory vLLM may use (vLLM's default 0.9)")
    p.add_argument("--max-num-seqs", default=None, metavar="N",
                   help="vLLM: --max-num-seqs, the sampler's batch in its profiling run (vLLM's default 1024)")
    p.add_argument("--cpu-offload-gb", default=None, metavar="GIB",
                   help="vLLM: --cpu-offload-gb, GiB of weights per GPU kept in CPU memory (streamed every step)")
    p.add_argument("--mem-fraction-static", default=None, metavar="F",
                   help="SGLang: --mem-fraction-static (default: SGLang's rule by GPU size)")
    p.add_argument("--n-gpu-layers", default=None, metavar="N",
                   help="llama.cpp: -ngl, the layers on the GPUs (the last N−1 and the output head; "
                        "-1 = all, the default)")
    p.add_argument("--override-tensor", action="append", default=None, metavar="PATTERN",
                   help="llama.cpp: -ot PATTERN=CPU, tensors kept in system RAM (repeatable; e.g. exps "
                        "for the routed experts)")
    p.add_argument("--flash-attn", default=None, choices=("on", "off"),
                   help="llama.cpp: -fa on/off (default on)")
    p.add_argument("--n-ubatch", default=None, metavar="N", help="llama.cpp: -ub, the physical batch (default 512)")


def _loaded_from_args(args: argparse.Namespace):
    """The LoadedModel named by --config/--gguf/--safetensors, or by a --model that is a Hugging Face
    repository id (``org/name`` or ``org/name/FILE.gguf``, not a built-in id: k3lib.loaders.hub), or
    None for a built-in --model; the loader's warnings go to stderr, one line each."""
    import warnings

    from k3lib.loaders import is_repo_spec, load_hub, load_source

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_source(config=getattr(args, "config", None), gguf=getattr(args, "gguf", None),
                             safetensors=getattr(args, "safetensors", None))
        if loaded is None and is_repo_spec(getattr(args, "model", None)):
            loaded = load_hub(args.model)
    for w in caught:
        print(f"k3plan: warning: {w.message}", file=sys.stderr)
    return loaded


def engine_settings_from_args(args: argparse.Namespace, engine_id: str):
    """The engine options given on the command line, as an EngineSettings for ``engine_id``;
    an option the engine does not take is one K3InputError naming the flag."""
    from k3lib.engines.deployment import ENGINE_OPTIONS, EngineSettings
    from k3lib.core.units import parse_positive_int

    values: dict = {}
    util = _utilization(args)
    if util is not None:
        values["gpu_memory_utilization"] = util
    frac = getattr(args, "mem_fraction_static", None)
    if frac is not None:
        values["mem_fraction_static"] = _fraction(frac, "mem-fraction-static")
    seqs = getattr(args, "max_num_seqs", None)
    if seqs is not None:
        values["max_num_seqs"] = parse_positive_int(seqs, "max-num-seqs")
    ngl = getattr(args, "n_gpu_layers", None)
    if ngl is not None:
        text = str(ngl).strip()
        values["n_gpu_layers"] = int(text) if text in ("-1", "0") else parse_positive_int(
            text, "n-gpu-layers", "a whole number ≥ 0, or -1 for every layer")
    ot = getattr(args, "override_tensor", None)
    if ot:
        import re
        for pat in ot:
            try:
                re.compile(pat)
            except re.error as exc:
                raise K3InputError("override-tensor", f"{pat!r} is not a regular expression ({exc})",
                                   "a pattern of tensor names such as exps or 'blk\\.[0-9]+\\.ffn_.*_exps'") from None
        values["override_tensor"] = tuple(ot)
    off = getattr(args, "cpu_offload_gb", None)
    if off is not None:
        import re
        text = str(off).strip()
        if not re.fullmatch(r"[0-9]{1,5}(\.[0-9]{1,3})?", text):
            raise K3InputError("cpu-offload-gb", f"{off!r} is not a number of GiB", "e.g. 8 or 12.5")
        values["cpu_offload_gb"] = float(text)
    fa = getattr(args, "flash_attn", None)
    if fa is not None:
        values["flash_attn"] = fa == "on"
    ub = getattr(args, "n_ubatch", None)
    if ub is not None:
        values["n_ubatch"] = parse_positive_int(ub, "n-ubatch")
    allowed = ENGINE_OPTIONS[engine_id]
    for name in values:
        if name not in allowed:
            flag = "--" + name.replace("_", "-")
            owner = next(e for e, opts in ENGINE_OPTIONS.items() if name in opts)
            raise K3InputError(name.replace("_", "-"), f"{flag} is a {owner} option; the plan is for {engine_id}",
                               f"--engine {owner}" + (f", or one of {', '.join('--' + a.replace('_', '-') for a in allowed)}"
                                                      if allowed else ""))
    return EngineSettings(engine_id, **values)


def _fraction(text: object, field: str, *, example: str = "0.85") -> float:
    """A fraction in (0, 1] written with ASCII digits (``0.9``, ``.9``, ``1``), else one K3InputError naming ``field``."""
    import re

    s = str(text).strip()
    if not re.fullmatch(r"[0-9]?(\.[0-9]{1,6})?", s) or s in ("", "."):
        raise K3InputError(field, f"{text!r} is not a fraction", f"0 < F ≤ 1, e.g. {example}")
    value = float(s)
    if not 0 < value <= 1:
        raise K3InputError(field, f"{text!r} is outside (0, 1]", f"0 < F ≤ 1, e.g. {example}")
    return value


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
    assumptions = Assumptions(activation_bytes=_size(args, "activation"),
                              overhead_per_gpu_bytes=_size(args, "overhead_per_gpu"),
                              overhead_total_bytes=_size(args, "overhead_total"),
                              memory_basis=getattr(args, "memory_basis", None))
    if eid == "llama.cpp" and args.pp is not None:
        raise K3InputError("pp", "llama.cpp splits layers over the GPUs itself", "--gpus, without --pp")
    return plan_for_engine(model=model, engine=settings, gpu=args.gpu, gpus=args.gpus, weights=args.weights,
                           kv_dtype=args.kv_dtype, context=args.context, batch=args.batch, nodes=args.nodes,
                           tp=args.tp, pp=args.pp, assumptions=assumptions, with_limits=with_limits)


def render_plan_table(plan, unit: str = "GiB") -> str:
    """A readable breakdown: one row per component, total and per GPU."""
    div = UNITS[unit]
    t, g = plan.total, plan.per_gpu
    rows = [("weights", t.weights_bytes, g.weights_bytes), ("KV cache", t.kv_cache_bytes, g.kv_cache_bytes),
            ("activation", t.activation_bytes, g.activation_bytes), ("overhead", t.overhead_bytes, g.overhead_bytes),
            ("total", t.total_bytes, g.total_bytes), ("available", t.available_bytes, g.available_bytes),
            ("headroom", t.headroom_bytes, g.headroom_bytes)]
    head = (f"{plan.model.name} [{plan.model.id}] · weights {plan.weight_format} · KV {plan.kv_dtype} · "
            f"context {plan.context_tokens:,} tokens · batch {plan.batch}\n"
            f"{plan.gpus}× {plan.gpu.name} ({plan.memory_basis} memory) · TP={plan.tp} PP={plan.pp}"
            f"{f' over {plan.nodes} nodes' if plan.nodes > 1 else ''}\n")
    per_label = ("binding GPU" if plan.engine is not None else "fullest GPU") if len(plan.shares) > 1 else "per GPU"
    lines = [f"{'component':<12}{'all GPUs (' + unit + ')':>16}{per_label + ' (' + unit + ')':>20}"]
    for name, tot, per in rows:
        if name == "total":
            lines.append("-" * 48)
        lines.append(f"{name:<12}{tot / div:>16,.1f}{per / div:>20,.1f}")
    if plan.engine is not None and plan.engine.estimate is not None and plan.engine.estimate.stages:
        est = plan.engine.estimate
        lines.append("per stage: " + "; ".join(
            f"stage {r['stage']} ({r['layers']} layers) "
            f"{(r['weights_bytes'] + r['activation_bytes'] + r['runtime_bytes'] + est.cuda_graph_bytes + r['kv_needed_bytes']) / div:,.1f}"
            for r in est.stages))
    elif len(plan.shares) > 1:
        lines.append("per stage: " + "; ".join(
            f"stage {s.stage} ({s.layers} layers, {s.gpus} GPUs) {s.total_bytes / div:,.1f}" for s in plan.shares))
    verdict = ("FITS" if plan.fits else "DOES NOT FIT") + " — " + plan.reason
    notes = "".join(f"\nnote: {n}" for n in plan.notes)
    basis = ("\nnote: capacity = the marketed figure the guide uses, not what an engine can allocate"
             if plan.memory_basis == "marketed" and plan.engine is None else "")
    if plan.policy == "stages" and plan.tp > 1:
        basis += ("\nnote: 'all GPUs' sums every GPU's share, so copies held on every TP rank (an MLA latent, "
                  "replicated weights) count once per GPU")
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
    text += (f"components below are {e.name}'s (available = its budget); k3lib's stage model gives "
             f"{cp.total_bytes / div:,.1f} {unit} on the fullest GPU\n")
    return text


def engine_tail(plan) -> str:
    """The engine's capacity figures and the lines it would print."""
    e = plan.engine
    if e is None:
        return ""
    mx = f"{e.max_context_tokens:,} tokens" if e.max_context_tokens is not None else "not searched"
    out = (f"\nKV capacity {e.kv_capacity_tokens:,} tokens · max concurrency {e.max_concurrency:,.2f}× at "
           f"{plan.context_tokens:,} tokens · max context for batch {plan.batch}: {mx}")
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
    from k3lib.core.models import list_models

    rows = []
    for m in list_models():
        if m.kind == "architecture":
            rows.append({"id": m.id, "kind": m.kind, "name": m.name, "params_total": m.params_total,
                         "params_active": m.params_active, "kv_bytes_per_token_bf16": m.kv_bytes_per_token(2),
                         "max_context_tokens": m.max_context_tokens, "source": m.source})
        else:
            rows.append({"id": m.id, "kind": m.kind, "name": m.name, "params_total": m.params_total,
                         "params_active": m.params_active, "kv_bytes_per_token_bf16": m.kv_bytes_per_token_bf16,
                         "max_context_tokens": m.max_context_tokens, "source": m.file})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'id':<22}{'kind':<14}{'params (B)':>12}{'active (B)':>12}{'KV B/token (BF16)':>19}  max context")
    for r in rows:
        act = f"{r['params_active'] / 1e9:,.1f}" if r["params_active"] else "—"
        print(f"{r['id']:<22}{r['kind']:<14}{r['params_total'] / 1e9:>12,.1f}{act:>12}"
              f"{r['kv_bytes_per_token_bf16']:>19,}  {r['max_context_tokens']:,}")
    return 0


def _cmd_gpus(args) -> int:
    from k3lib.core.hardware import list_gpus

    gpus = list_gpus()
    if args.json:
        print(json.dumps([{"id": g.id, "name": g.name, "aliases": list(g.aliases),
                           "memory_marketed_bytes": g.memory_marketed_bytes,
                           "memory_usable_bytes": g.memory_usable_bytes,
                           "memory_bw_bytes_per_s": g.memory_bw_bytes_per_s, "price_usd": g.price_usd,
                           "vendor": g.vendor, "device_class": g.device_class, "unified_memory": g.unified_memory,
                           "bf16_dense_flops": g.bf16_dense_flops, "fp8_dense_flops": g.fp8_dense_flops,
                           "gpus_per_node": g.gpus_per_node, "scale_up_interconnect": g.scale_up_interconnect,
                           "scale_out_interconnect": g.scale_out_interconnect, "verification": g.verification,
                           "source": g.source} for g in gpus], indent=2))
        return 0
    print(f"{'id':<20}{'memory (GiB)':>13}{'usable (GiB)':>14}{'bandwidth (GB/s)':>18}  name")
    for g in gpus:
        usable = f"{g.memory_usable_bytes / GiB:.2f}" if g.memory_usable_bytes else "—"
        print(f"{g.id:<20}{g.memory_marketed_bytes / GiB:>13,.1f}{usable:>14}{g.memory_bw_bytes_per_s / 1e9:>18,.0f}  {g.name}")
    return 0


def _cmd_hosts(args) -> int:
    from k3lib.core.hosts import load_hosts

    hosts = load_hosts()
    if args.json:
        print(json.dumps([{"id": h.id, "name": h.name, "aliases": list(h.aliases), "memory_type": h.memory_type,
                           "memory_channels": h.memory_channels, "mt_per_s": h.mt_per_s, "sockets": h.sockets,
                           "bandwidth_bytes_per_s": h.memory_bw_bytes_per_s,
                           "max_memory_bytes": h.max_memory_bytes, "unified_memory": h.unified_memory,
                           "source": h.source} for h in hosts], indent=2))
        return 0
    print(f"{'id':<26}{'channels':>9}{'MT/s':>7}{'sockets':>8}{'bandwidth (GB/s)':>18}  name")
    for h in hosts:
        print(f"{h.id:<26}{h.memory_channels:>9}{h.mt_per_s:>7}{h.sockets:>8}"
              f"{h.memory_bw_bytes_per_s / GB:>18,.1f}  {h.name}")
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
    p = sub.add_parser("report", help="deployment report(s) as self-contained offline HTML",
                       description="Run the report notebook (notebooks/90-deployment-report.ipynb) with papermill "
                                   "and export it to one self-contained HTML file (no code, charts as inline SVG, "
                                   "no CDN). With --scenarios, one report per scenario of a YAML file and an "
                                   "index.html comparing them; exit code 1 if any scenario failed (its row in the "
                                   "index says why). Every plan flag is passed on to the report.")
    _add_plan_args(p)
    p.add_argument("--scenario", default="", help="scenario name: the report's title (default: the configuration)")
    p.add_argument("--offload", default="auto", choices=("auto", "none", "experts"),
                   help="offload section: auto (when the plan does not fit), none, experts (guide 004's mode)")
    p.add_argument("--ram", default=None, help="host RAM for offload, e.g. 1536GB (default: as needed)")
    p.add_argument("--ram-bandwidth", default="70GB/s", help="host RAM bandwidth for offload, default 70GB/s")
    p.add_argument("--scenarios", default=None, metavar="YAML",
                   help="run every scenario of a YAML file (see examples/scenarios.yaml); -o is then a folder; "
                        "plan flags then belong in the file (its defaults:), not on the command line")
    p.add_argument("-o", "--output", default=None, help="output HTML file (default reports/<scenario>.html); "
                   "with --scenarios, the output folder (default reports/)")
    p.add_argument("--keep-notebook", action="store_true",
                   help="also keep the executed notebook (.ipynb) next to each HTML report (default: HTML only)")
    # Every flag's default, so that _cmd_report can tell which ones the user gave.
    p.set_defaults(func=_cmd_report, report_flag_defaults={a.dest: a.default for a in p._actions
                                                           if a.option_strings and a.dest != "help"})


#: `k3plan report` flags that are not report parameters: where the output goes and how it is printed.
_REPORT_OUTPUT_FLAGS = ("scenarios", "output", "json", "keep_notebook")


def _report_parameters(args: argparse.Namespace) -> dict:
    """The report notebook's parameters from `k3plan report` flags ("" / 0: the model's rule, automatic).
    Every plan flag maps onto a report parameter; the flags that do not apply to a report
    raise K3InputError (no flag is accepted and ignored)."""
    model_path = ""
    for name in ("config", "gguf", "safetensors"):   # the user's own model: the report's model_path
        value = getattr(args, name, None)
        if value is not None:
            if not str(value).strip():
                raise K3InputError(name, "is empty", "a path to a local file or folder")
            from pathlib import Path
            model_path = str(Path(str(value).strip()).expanduser().resolve())   # the kernel runs elsewhere
    for name in ("max_num_seqs", "cpu_offload_gb", "mem_fraction_static", "n_gpu_layers", "override_tensor", "flash_attn", "n_ubatch"):
        if getattr(args, name, None) not in (None, []):
            raise K3InputError(name.replace("_", "-"), "is not a report parameter (the report plans with the "
                               "engine's default for it)", "leave it out; use `k3plan estimate` for this setting")
    if getattr(args, "unit", "GiB") != "GiB":
        raise K3InputError("unit", "does not apply to `k3plan report` (reports label GiB and GB themselves)",
                           "leave --unit out")
    util = _utilization(args)
    return {"scenario": args.scenario, "model": args.model, "model_path": model_path,
            "weights": args.weights or "", "kv_dtype": args.kv_dtype,
            "context": args.context, "batch": args.batch, "gpu": args.gpu, "gpus": args.gpus, "nodes": args.nodes or 0,
            "tp": args.tp or 0, "pp": args.pp or 0, "engine": getattr(args, "engine", None) or "",
            "gpu_memory_utilization": util if util is not None else 0.0,
            "offload": args.offload, "ram": args.ram or "", "ram_bandwidth": args.ram_bandwidth or "",
            "activation": args.activation or "", "overhead_per_gpu": args.overhead_per_gpu or "",
            "overhead_total": args.overhead_total or "", "memory_basis": args.memory_basis or ""}


def _cmd_report(args) -> int:
    from pathlib import Path

    from k3lib.views.notebook import ParameterError, skip_slow_iri_checker
    from k3lib.report import ReportError, configure, run_batch, run_report, safe_filename

    skip_slow_iri_checker()   # ~3 s of import time this command never needs

    if args.scenarios:
        defaults = getattr(args, "report_flag_defaults", {})
        given = [d for d, v in defaults.items() if d not in _REPORT_OUTPUT_FLAGS and getattr(args, d, v) != v]
        if given:
            raise K3InputError(given[0], "cannot be combined with --scenarios (it would be ignored)",
                               "put it under defaults: in the scenario file")
        out_dir = Path(args.output or "reports")
        if out_dir.suffix.lower() in (".html", ".htm"):
            raise K3InputError("output", f"{out_dir} is a file name; with --scenarios, -o names a folder")
        results = run_batch(args.scenarios, out_dir, keep_notebook=args.keep_notebook)
        if args.json:
            print(json.dumps([{"scenario": r.scenario, "html": str(r.html_path) if r.html_path else None,
                               "error": r.error, "figures": r.figures} for r in results], indent=2))
        else:
            for r in results:
                print(f"ok      {r.html_path}" if r.ok else f"FAILED  {r.scenario}: {r.error}")
            print(f"index   {out_dir / 'index.html'}  ({sum(r.ok for r in results)} of {len(results)} reports)")
        return 0 if all(r.ok for r in results) else 1
    params = _report_parameters(args)
    try:
        cfg = configure(**params)                   # validated once here; the notebook's kernel validates its own
        out = Path(args.output or Path("reports") / f"{safe_filename(cfg.title)}.html")
        result = run_report(params, out, config=cfg, keep_notebook=args.keep_notebook)
    except ParameterError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 2
    except ReportError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"html": str(result.html_path), "figures": result.figures}, indent=2) if args.json
          else result.html_path)
    return 0


# ---------------------------------------------------------------- end of report block


# ---------------------------------------------------------------- plan / cheatsheet (issue 5)
# `k3plan plan`: guide 000's seven-step checklist, the recommended configuration and its launch
# commands (k3lib.studies.checklist, k3lib.studies.commands). `k3plan cheatsheet`: max context by hardware, from
# the vectorized sweep. Kept in one block: the parsers, the commands, the text rendering.


def _add_checklist_parsers(sub) -> None:
    p = sub.add_parser("plan", help="the seven-step checklist, the recommended configuration and its commands",
                       description="Guide 000's VRAM decision framework for an inventory (GPU × count) and a target "
                                   "context: each step's answer, the best configuration for these GPUs (or the "
                                   "cheapest that fits, if none does) and the vllm / llama-server / nvidia-smi "
                                   "command lines to launch it. Nothing is executed.")
    add_model_source_args(p)
    p.add_argument("--gpu", default="h100-sxm", help="GPU id or alias (see `k3plan gpus`); default h100-sxm")
    p.add_argument("--gpus", default="8", help="number of GPUs you have (default 8)")
    p.add_argument("--nodes", default=None, help="nodes the GPUs are spread over (default: whole nodes of the "
                   "GPU's node size)")
    p.add_argument("--context", default="256K", help="target context: 131072, 128K, 256k, 1M (K = 1024 tokens)")
    add_engine_args(p)
    p.add_argument("--kv-dtype", default="fp8", help="KV dtype for steps 3-7: bf16, fp8, int4 (default fp8, "
                   "the guide's step 4)")
    p.add_argument("--overhead-per-gpu", default=None, help="overhead per GPU (default: the model's rule — 8GiB "
                   "for a guide profile, k3lib's measured rule for a real architecture, as `estimate`)")
    p.add_argument("--workload-context", default=None, help="context your prompts actually need, e.g. 50K: "
                   "warns when the target is far beyond it")
    p.add_argument("--host", default=None, help="with --engine llama.cpp: the host (see `k3plan hosts`) whose RAM "
                   "bandwidth an offload plan reads, when nothing fits in VRAM")
    p.add_argument("--ram", default=None, help="with --engine llama.cpp: host RAM for an offload plan, e.g. 256GB")
    p.add_argument("--hf-repo", default=None, help="repository for `vllm serve` (default: the model's own, or "
                   "the folder of --config/--safetensors)")
    p.add_argument("--gguf-repo", default=None, help="GGUF for `llama-server -hf`, repo:QUANT (default: by precision; "
                   "with --gguf FILE the command loads that file with -m)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes are integers in bytes")
    p.set_defaults(func=_cmd_plan)
    p = sub.add_parser("cheatsheet", help="max context by hardware (GPU × count × precision)",
                       description="GPU configuration cheat sheet: for each GPU × deployable count (one node, then "
                                   "whole nodes up to 32 GPUs) and each checkpoint the engine can load, the largest "
                                   "context (1K-token steps) that fits; empty where the model will not load. "
                                   "Computed by the vectorized sweep (the same bytes as `estimate`).")
    add_model_source_args(p)
    p.add_argument("--gpu", default="h100-sxm,h200-sxm,b200,mi300x", help="comma-separated GPU ids "
                   "(default h100-sxm,h200-sxm,b200,mi300x)")
    p.add_argument("--kv-dtype", default="fp8", help="KV dtype (default fp8)")
    p.add_argument("--overhead-per-gpu", default=None, help="overhead per GPU (default: the model's rule, as `estimate`)")
    add_engine_args(p)
    p.add_argument("--csv", action="store_true", help="print CSV (cells in tokens, empty where it will not load)")
    p.set_defaults(func=_cmd_cheatsheet)


def _checklist_assumptions(args):
    """None (each model's own rule) unless --overhead-per-gpu is given."""
    from k3lib.studies.checklist import checklist_assumptions

    if args.overhead_per_gpu is None:
        return None
    return checklist_assumptions(parse_size_bytes(args.overhead_per_gpu, "overhead-per-gpu"))


def _command_sources(args) -> dict:
    """Where the launch command finds the user's own model: -m FILE for a GGUF, the folder
    for vLLM/SGLang (they load a local folder as a repository)."""
    from pathlib import Path

    out: dict = {"hf_repo": args.hf_repo, "gguf": getattr(args, "gguf_repo", None), "model_path": None}
    if getattr(args, "gguf", None):
        out["model_path"] = str(Path(args.gguf).resolve())
    for name in ("config", "safetensors"):
        path = getattr(args, name, None)
        if path and out["hf_repo"] is None:
            p = Path(path).resolve()
            out["hf_repo"] = str(p.parent if p.is_file() else p)
    return out


def _offload_source(args, offload) -> str:
    """``-m FILE`` for the user's GGUF, else ``-hf repo:QUANT`` of the published file the plan priced."""
    import shlex

    if getattr(args, "gguf", None):
        return "-m " + shlex.quote(args.gguf)
    from k3lib.studies.commands import GGUF_TAGS

    tag = GGUF_TAGS.get(str(offload.weight_format).lower(), str(offload.weight_format).upper())
    repo = getattr(args, "gguf_repo", None) or f"<repo of a {tag} GGUF of {offload.model.name}>"
    return "-hf " + shlex.quote(repo if ":" in repo else f"{repo}")


def _cmd_plan(args) -> int:
    from k3lib.engines.deployment import default_engine_for, normalize_engine
    from k3lib.studies.checklist import anti_patterns, format_context, run_checklist
    from k3lib.studies.commands import commands_for

    for name in ("hf_repo", "gguf_repo"):   # names the user gave are checked before anything is planned
        value = getattr(args, name, None)
        if value is not None and not str(value).strip():
            raise K3InputError(name, f"{value!r} is not a repository name", "e.g. moonshotai/Kimi-K3 (or repo:QUANT)")
    model = model_from_args(args)
    eid = default_engine_for(model) if args.engine is None else normalize_engine(args.engine)
    settings = engine_settings_from_args(args, eid) if eid not in ("guide", "generic") else eid
    if eid != "llama.cpp" and (args.host is not None or args.ram is not None):
        raise K3InputError("host" if args.host is not None else "ram", "applies to llama.cpp's offload plan",
                           "--engine llama.cpp")
    c = run_checklist(model=model, gpu=args.gpu, gpus=args.gpus, nodes=args.nodes, context=args.context,
                      kv_dtype=args.kv_dtype, engine=settings, assumptions=_checklist_assumptions(args),
                      host=args.host, ram=args.ram)
    # llama.cpp's expert offload is how people run a MoE that does not fit: it is the answer for these GPUs;
    # vLLM's --cpu-offload-gb is a last resort (every step streams the offloaded weights): shown beside the
    # cheapest configuration that fits in VRAM, which stays the answer
    vllm_offload = c.offload if getattr(c.offload, "engine", None) is not None else None
    llama_offload = c.offload if c.offload is not None and vllm_offload is None else None
    chosen = c.recommended or (None if llama_offload is not None else c.cheapest)
    plan = chosen.plan() if chosen else None
    cmds, no_cmd = {}, None
    if plan is not None and plan.fits:
        try:
            cmds = commands_for(plan, **_command_sources(args))
        except K3InputError as exc:   # e.g. no published checkpoint of this model for the engine
            no_cmd = str(exc)
    if vllm_offload is not None and not c.recommended:
        try:
            cmds["vllm (cpu offload, on your GPUs)"] = commands_for(vllm_offload, **_command_sources(args))["vllm"]
        except K3InputError:
            pass
    util = dict(plan.engine.settings).get("gpu_memory_utilization") if plan is not None and plan.engine else None
    warnings = anti_patterns(plan, workload_context_tokens=args.workload_context,
                             gpu_memory_utilization=util) if plan else ()
    if args.json:
        out = c.to_dict()
        out["engine"] = plan.engine_id if plan is not None else eid
        out["chosen"] = "recommended" if c.recommended else ("offload" if llama_offload is not None else
                                                             "cheapest" if c.cheapest else None)
        out["offload_plan"] = vllm_offload.to_dict() if vllm_offload is not None else None
        out["no_command"] = no_cmd
        out["plan"] = plan.to_dict() if plan else None
        out["commands"] = {k: {"argv": list(v.argv), "text": v.text, "notes": list(v.notes)} for k, v in cmds.items()}
        out["warnings"] = [{"code": w.code, "message": w.message} for w in warnings]
        print(json.dumps(out, indent=2))
        return 0
    print(f"Decision checklist (guide 000) — {c.model} on {c.gpus}× {c.gpu}, target context "
          f"{format_context(c.context_tokens)}, KV {c.kv_dtype}")
    for s in c.steps:
        print(f"{s.step}. {s.title:<22}{s.figure}\n   {s.reason}")
    print()
    basis = f" (verdict by {plan.verdict_basis})" if plan is not None else ""
    if c.recommended:
        print(f"Recommended for {c.gpus}× {c.gpu}{basis}: {c.recommended.label}\n   {c.recommended.reason}")
    elif llama_offload is not None:
        o = c.offload
        print(f"Nothing fits on {c.gpus}× {c.gpu} in VRAM at {format_context(c.context_tokens)}; with experts in "
              f"host memory (llama.cpp, the offload study's plan): {o.verdict()}")
        print(f"\n# llama.cpp (offload)\nllama-server {_offload_source(args, o)} {o.llamacpp_flags}")
        for n in o.notes:
            print(f"# note: {n}")
        if c.cheapest:
            print(f"\nWithout offload, the cheapest on {c.gpu}{basis}: {c.cheapest.label}")
    elif c.cheapest:
        print(f"Nothing fits on {c.gpus}× {c.gpu} at {format_context(c.context_tokens)}.\n"
              f"Cheapest on {c.gpu}{basis}: {c.cheapest.label}\n   {c.cheapest.reason}")
    if vllm_offload is not None and not c.recommended:
        o = vllm_offload
        gb = dict(o.engine.settings)["cpu_offload_gb"]
        link = o.gpu.host_link_bytes_per_s
        floor = (f"; every decode step streams {gb:g} GiB per GPU over the host link: at least "
                 f"{gb * GiB / link * 1000:,.0f} ms per step at {link / 1e9:,.0f} GB/s (a theoretical floor)"
                 if link else "")
        print(f"On your {c.gpus}× {c.gpu} with --cpu-offload-gb {gb:g} (vLLM's own weight offload): "
              f"{o.reason}{floor}")
    else:
        print(f"No deployable configuration of up to {max(32, c.gpus)} {c.gpu} holds "
              f"{format_context(c.context_tokens)}; no command is printed.")
    for w in warnings:
        print(f"warning [{w.code}]: {w.message}")
    if no_cmd:
        print(f"\n# no launch command: {no_cmd}")
    for name, cmd in cmds.items():
        print(f"\n# {name}\n{cmd.text}")
        for n in cmd.notes:
            print(f"# note: {n}")
    return 0


def _cmd_cheatsheet(args) -> int:
    from k3lib.studies.checklist import cheatsheet, cheatsheet_display

    gpus = [g.strip() for g in args.gpu.split(",")]
    if not all(gpus):
        raise K3InputError("gpu", f"{args.gpu!r} has an empty item", "comma-separated ids, e.g. h100-sxm,h200-sxm")
    from k3lib.engines.deployment import default_engine_for, normalize_engine

    model = model_from_args(args)
    eid = default_engine_for(model) if args.engine is None else normalize_engine(args.engine)
    engine = engine_settings_from_args(args, eid) if eid not in ("guide", "generic") else eid
    if args.overhead_per_gpu is not None and eid not in ("guide", "generic"):
        raise K3InputError("overhead-per-gpu", f"is an assumption of k3lib's generic model; {eid} computes its own",
                           "leave it out, or add --engine generic")
    df = cheatsheet(model=model, gpus=gpus, kv_dtype=args.kv_dtype, engine=engine,
                    assumptions=_checklist_assumptions(args))
    if args.csv:
        print(df.to_csv(index=False), end="")
        return 0
    print(f"GPU configuration cheat sheet: {df.attrs['model']} — {df.attrs['note']}")
    print(cheatsheet_display(df).drop(columns=["gpu", "gpus", "nodes"]).to_string(index=False))
    return 0


# ---------------------------------------------------------------- end of plan / cheatsheet block


# ---------------------------------------------------------------- offload (issue 4)
# `k3plan offload`: experts in system RAM, attention + shared experts + KV on the GPU
# (k3lib.studies.offload). Decode tokens/s: the bandwidth ceiling, and the serving model's fitted figure.


def _add_offload_parser(sub) -> None:
    p = sub.add_parser("offload", help="experts in system RAM: VRAM, RAM and tokens/s",
                       description="Offload mode: routed experts in system RAM, the rest on the GPU; VRAM and RAM "
                                   "needed, the decode ceiling of the bandwidth model, and the serving model's "
                                   "fitted decode tokens/s with its held-aside error.")
    add_model_source_args(p, default_model="kimi-k3")
    p.add_argument("--weights", default=None, help="weight precision (default q4_k_m; a --gguf/--safetensors file: "
                   "its exact bytes)")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (default bf16)")
    p.add_argument("--context", default="8K", help="context length (default 8K; K = 1024 tokens)")
    p.add_argument("--batch", default="1", help="concurrent sequences (default 1)")
    p.add_argument("--gpu", default="rtx-4090-48gb", help="GPU id or alias (default rtx-4090-48gb)")
    p.add_argument("--gpus", default="1", help="GPUs in the machine, layers split over them (default 1)")
    p.add_argument("--expert-layers-on-gpu", default="0", help="MoE layers whose experts stay on the GPU (default 0), "
                   "or auto: the most that still fit")
    p.add_argument("--ram", default=None, help="system RAM, e.g. 1536GB (default: report what is needed)")
    p.add_argument("--host", default=None, help="host platform from data/hosts.csv (e.g. epyc-9005, xeon-5th-gen, "
                   "desktop-ddr5-5600): its channels × MT/s give the RAM bandwidth")
    p.add_argument("--ram-bandwidth", default=None, help="system RAM bandwidth, e.g. 460GB/s (overrides --host; "
                   "without either, guide 004's 70GB/s is used and labelled as an assumption)")
    p.add_argument("--unit", choices=tuple(UNITS), default="GB", help="unit of the printed figures (default GB)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes in bytes")
    p.set_defaults(func=_cmd_offload)


def _cmd_offload(args) -> int:
    from k3lib.studies.offload import best_offload_plan, plan_offload, render_text

    kwargs = dict(model=model_from_args(args), weights=args.weights, gpu=args.gpu, gpus=args.gpus,
                  kv_dtype=args.kv_dtype, context=args.context, batch=args.batch, ram=args.ram, host=args.host,
                  ram_bandwidth=args.ram_bandwidth)
    if str(args.expert_layers_on_gpu).strip().lower() == "auto":
        plan = best_offload_plan(**kwargs) or plan_offload(**kwargs)   # none loads: show why, at 0 layers
    else:
        plan = plan_offload(**kwargs, expert_layers_on_gpu=args.expert_layers_on_gpu)
    serving = _offload_serving(args, plan) if plan.fits else None
    if args.json:
        doc = plan.to_dict()
        doc["serving"] = serving.to_dict() if serving is not None else None
        print(json.dumps(doc, indent=2))
    else:
        print(render_text(plan, args.unit))
        if serving is not None:   # the serving model's figure beside the roofline, with its basis and error
            f = serving.decode_tokens_per_s_per_sequence
            err = f", ±{f.expected_error_pct:.0f} % on held-aside runs" if f.expected_error_pct is not None else ""
            print(f"serving model (k3lib.serving, llama.cpp): decode ≈ {f.value:,.2f} tokens/s per sequence "
                  f"({f.basis}{err}); `k3plan speed --expert-layers-on-gpu {plan.expert_layers_on_gpu}` for all "
                  "figures")
    return 0 if plan.fits else 3


def _offload_serving(args, plan):
    """The serving model's estimate for an offload plan that loads (same model, GPUs, host and
    expert split), or None when it cannot say (e.g. no compute figure for the device)."""
    from k3lib import serving

    try:
        return serving.offload_serving_estimate(
            model=model_from_args(args), engine="llama.cpp", gpu=args.gpu, gpus=plan.gpus,
            weights=plan.weight_format, kv_dtype=args.kv_dtype, input_tokens=0, output_tokens=max(1, plan.context_tokens),
            concurrency=plan.batch, host=args.host, ram=args.ram, ram_bandwidth=args.ram_bandwidth,
            expert_layers_on_gpu=plan.expert_layers_on_gpu)
    except K3InputError:
        return None


# ---------------------------------------------------------------- speed (issue 22)
# `k3plan speed`: how fast, how many users, at what cost — the serving model (k3lib.serving) over
# the plan for the engine. Every figure carries its basis and its measured error.


def _add_speed_parser(sub) -> None:
    p = sub.add_parser("speed", help="decode/prefill speed, concurrency and cost of a deployment",
                       description="The serving model over the plan for an engine: decode tokens/s per sequence and "
                                   "in total, prefill tokens/s, TTFT, TPOT, the largest concurrency the KV cache and "
                                   "max_num_seqs allow, and $/hour and $/million output tokens. Every figure says "
                                   "its basis (measured, fitted model with its held-aside error, or theoretical "
                                   "ceiling). Exit 3 when the plan does not load (no speed figures), 2 bad input.")
    add_model_source_args(p)
    add_layout_args(p)
    p.add_argument("--ep", default=None, help="expert-parallel size (MoE models; default 1)")
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="vllm, sglang, trtllm, llama.cpp, ik_llama.cpp, ollama or ktransformers (an engine without a "
                        "memory profile plans memory with the closest one, named); default as `estimate`")
    p.add_argument("--weights", default=None, help="weight precision or checkpoint (default: native)")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (default bf16)")
    p.add_argument("--input-len", default="1024", help="prompt tokens per request (default 1024)")
    p.add_argument("--output-len", default="256", help="generated tokens per request (default 256)")
    p.add_argument("--concurrency", default="1", help="concurrent requests (default 1)")
    p.add_argument("--host", default=None, help="host platform (see `k3plan hosts`): RAM bandwidth for offload and "
                   "CPU-only serving")
    p.add_argument("--ram-bandwidth", default=None, help="host RAM bandwidth, e.g. 200GB/s (overrides --host)")
    p.add_argument("--ram", default=None, help="host RAM for offload, e.g. 512GB")
    p.add_argument("--expert-layers-on-gpu", default=None,
                   help="offload: MoE layers whose experts stay on the GPU (the rest in host RAM; auto = most that fit)")
    p.add_argument("--price-per-gpu-hour", default=None, metavar="USD",
                   help="your price per GPU-hour in US$ (default: the dated catalogue's median, when known)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_speed)


def _price(text) -> float | None:
    import re

    if text is None:
        return None
    s = str(text).strip().lstrip("$")
    if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,4})?", s) or float(s) <= 0:
        raise K3InputError("price-per-gpu-hour", f"{text!r} is not a price", "US$ per GPU-hour, e.g. 2.49")
    return float(s)


def _cmd_speed(args) -> int:
    from k3lib.core.units import parse_count, parse_positive_int
    from k3lib.engines.base import serving_engine
    from k3lib.engines.deployment import default_engine_for, plan_for_engine
    from k3lib import serving

    model = model_from_args(args)
    if args.engine is None:
        served, profile = (default_engine_for(model),) * 2
    else:
        served, profile = serving_engine(args.engine)
    n_gpus = parse_count(args.gpus, "gpus", minimum=0)
    concurrency = parse_positive_int(args.concurrency, "concurrency")
    in_len = parse_count(args.input_len, "input-len", minimum=0)
    out_len = parse_positive_int(args.output_len, "output-len")
    user_price = _price(args.price_per_gpu_hour)
    if n_gpus == 0 and args.host is None:
        raise K3InputError("host", "CPU-only serving (--gpus 0) needs the host", "--host ID (see `k3plan hosts`)")
    offload = n_gpus == 0 or args.expert_layers_on_gpu is not None
    if not offload:
        for name in ("ram", "ram_bandwidth"):   # read by the offload model only: refused, not ignored
            if getattr(args, name) is not None:
                raise K3InputError(name.replace("_", "-"), "applies to offload or CPU-only serving",
                                   "--expert-layers-on-gpu N or --gpus 0")
    price, price_basis = user_price, "user-supplied price" if user_price is not None else None
    if price is None and n_gpus > 0:
        from k3lib.core.hardware import get_gpu
        from k3lib.core.prices import price_per_gpu_hour

        quote = price_per_gpu_hour(get_gpu(args.gpu).id)
        if quote is not None:
            price, price_basis = quote.usd_per_gpu_hour, quote.basis
    try:
        if offload:
            if not hasattr(serving, "offload_serving_estimate"):
                raise K3InputError("expert-layers-on-gpu", "offload speed is not modelled by this version",
                                   "leave it out")
            est = serving.offload_serving_estimate(
                model=model, engine=served, gpu=None if n_gpus == 0 else args.gpu, gpus=n_gpus,
                weights=args.weights, kv_dtype=args.kv_dtype, input_tokens=in_len, output_tokens=out_len,
                concurrency=concurrency, host=args.host, ram=args.ram, ram_bandwidth=args.ram_bandwidth,
                expert_layers_on_gpu=None if str(args.expert_layers_on_gpu).strip().lower() == "auto"
                else args.expert_layers_on_gpu, price_per_gpu_hour=price)
        else:
            ep = parse_positive_int(args.ep, "ep") if args.ep is not None else 1
            plan = plan_for_engine(model=model, engine=profile, gpu=args.gpu, gpus=n_gpus, weights=args.weights,
                                   kv_dtype=args.kv_dtype, context=in_len + out_len, batch=1, nodes=args.nodes,
                                   tp=args.tp, pp=args.pp, ep=ep, with_limits=False)
            est = serving.serving_estimate(plan, concurrency=concurrency, input_tokens=in_len,
                                           output_tokens=out_len, price_per_gpu_hour=price, engine=served,
                                           host=args.host)
    except serving.PlanDoesNotLoad as exc:   # no speed for a plan that does not load
        if args.json:
            print(json.dumps({"loads": False, "reason": str(exc), "engine": served, "memory_profile": profile},
                             indent=2))
        else:
            print(f"DOES NOT LOAD — {exc}; no speed figures")
        return 3
    doc = {"loads": True, "engine": served, "memory_profile": profile,
           "price_basis": price_basis, **est.to_dict(), "details": est.details()}
    if args.json:
        print(json.dumps(doc, indent=2, default=str))
    else:
        if hasattr(serving, "render_text"):
            print(serving.render_text(est))
        else:
            for k, f in est.to_dict().items():
                err = f"±{f['expected_error_pct']:.0f} %" if f.get("expected_error_pct") is not None else ""
                val = "—" if f["value"] is None else f"{f['value']:,.4g}"
                print(f"{k:<34}{val:>14} {f['unit']:<12} {f['basis']} {err}")
        if price_basis:
            print(f"price: {price_basis}")
        if served != profile:
            print(f"note: {served} has no memory profile here; its memory is planned with {profile}'s rules")
    return 0


# ---------------------------------------------------------------- end of speed block


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="k3plan", description="How much GPU memory a model needs, and where it goes.")

    class _Version(argparse.Action):   # like action="version", but importlib.metadata (~30 ms) only when asked
        def __call__(self, parser, namespace, values, option_string=None):
            from importlib.metadata import PackageNotFoundError, version

            try:
                v = version("k3lib")   # the installed wheel's or editable install's metadata
            except PackageNotFoundError:   # a checkout that was never installed
                from k3lib import __version__ as v
            print(f"{parser.prog} {v}")   # on stdout, as argparse's own version action does
            parser.exit()

    parser.add_argument("--version", action=_Version, nargs=0, default=argparse.SUPPRESS,
                        help="print k3plan's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    p = sub.add_parser("estimate", help="memory breakdown for one configuration",
                       description="Memory breakdown (weights, KV cache, activation, overhead) in total and per GPU.")
    _add_plan_args(p)
    p.set_defaults(func=_cmd_estimate)
    p = sub.add_parser("models", help="list built-in models", description="List built-in models and guide profiles.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_models)
    p = sub.add_parser("gpus", help="list built-in GPUs", description="List built-in GPUs and unified-memory machines.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_gpus)
    p = sub.add_parser("hosts", help="list host platforms (memory channels, RAM bandwidth)",
                       description="List the host platforms whose RAM bandwidth offload plans read (data/hosts.csv): "
                                   "channels × sockets × MT/s × 8 B.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_hosts)
    p = sub.add_parser("formats", help="list weight formats and KV dtypes",
                       description="List weight formats and KV-cache dtypes with their sizes.")
    p.set_defaults(func=_cmd_formats)
    _add_report_parser(sub)  # issue 6
    _add_checklist_parsers(sub)  # issue 5
    _add_offload_parser(sub)  # issue 4
    _add_speed_parser(sub)  # issue 22
    from k3lib.engines.logcheck import add_check_log_parser
    add_check_log_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except K3InputError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:   # an optional dependency the base install leaves out: name its extra
        extra = getattr(exc, "extra", None) or {
            "papermill": "reports", "nbformat": "reports", "nbconvert": "reports", "nbclient": "reports",
            "ipykernel": "reports", "tqdm": "reports", "altair": "notebooks", "vl_convert": "notebooks",
            "ipywidgets": "notebooks", "IPython": "notebooks", "jupyterlab": "notebooks",
        }.get((exc.name or "").partition(".")[0])
        if extra is not None and args.command == "report":
            extra = "reports"
        if extra is None:
            raise
        msg = str(exc) if getattr(exc, "extra", None) else (
            f"`k3plan {args.command}` needs {exc.name}, which the base install leaves out: "
            f"pip install 'k3lib[{extra}]'")
        print(f"k3plan: error: {msg}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # `k3plan formats | head`: the reader left; end quietly, as Unix tools do
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # Python's own flush at exit would raise again
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
