"""``k3plan plan``, ``cheatsheet``, ``offload`` and ``speed``: the commands that read the
studies (the checklist and solver, the cheat sheet, the offload study) and the serving model,
over the same model, layout and engine options as ``estimate`` (:mod:`k3lib.cli`)."""

from __future__ import annotations

import json

from k3lib.cli_args import (
    UNITS,
    add_engine_args,
    add_layout_args,
    add_model_source_args,
    engine_settings_from_args,
    model_from_args,
)
from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB, parse_size_bytes

# ---------------------------------------------------------------- plan / cheatsheet (issue 5)
# `k3plan plan`: guide 000's seven-step checklist, the recommended configuration and its launch
# commands (k3lib.studies.checklist, k3lib.studies.commands). `k3plan cheatsheet`: max context by hardware, from
# the vectorized sweep. Kept in one block: the parsers, the commands, the text rendering.


def add_checklist_parsers(sub) -> None:
    p = sub.add_parser(
        "plan",
        help="the seven-step checklist, the recommended configuration and its commands",
        description="Guide 000's VRAM decision framework for an inventory (GPU × count) and a target "
        "context: each step's answer, the best configuration for these GPUs (or the "
        "cheapest that fits, if none does) and the vllm / llama-server / nvidia-smi "
        "command lines to launch it. Nothing is executed.",
    )
    add_model_source_args(p)
    p.add_argument("--gpu", default="h100-sxm", help="GPU id or alias (see `k3plan gpus`); default h100-sxm")
    p.add_argument("--gpus", default="8", help="number of GPUs you have (default 8)")
    p.add_argument(
        "--nodes", default=None, help="nodes the GPUs are spread over (default: whole nodes of the GPU's node size)"
    )
    p.add_argument("--context", default="256K", help="target context: 131072, 128K, 256k, 1M (K = 1024 tokens)")
    add_engine_args(p)
    p.add_argument(
        "--kv-dtype", default="fp8", help="KV dtype for steps 3-7: bf16, fp8, int4 (default fp8, the guide's step 4)"
    )
    p.add_argument(
        "--overhead-per-gpu",
        default=None,
        help="overhead per GPU (default: the model's rule — 8GiB "
        "for a guide profile, k3lib's measured rule for a real architecture, as `estimate`)",
    )
    p.add_argument(
        "--workload-context",
        default=None,
        help="context your prompts actually need, e.g. 50K: warns when the target is far beyond it",
    )
    p.add_argument(
        "--host",
        default=None,
        help="with --engine llama.cpp: the host (see `k3plan hosts`) whose RAM "
        "bandwidth an offload plan reads, when nothing fits in VRAM",
    )
    p.add_argument("--ram", default=None, help="with --engine llama.cpp: host RAM for an offload plan, e.g. 256GB")
    p.add_argument(
        "--hf-repo",
        default=None,
        help="repository for `vllm serve` (default: the model's own, or the folder of --config/--safetensors)",
    )
    p.add_argument(
        "--gguf-repo",
        default=None,
        help="GGUF for `llama-server -hf`, repo:QUANT (default: by precision; "
        "with --gguf FILE the command loads that file with -m)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes are integers in bytes")
    p.set_defaults(func=_cmd_plan)
    p = sub.add_parser(
        "cheatsheet",
        help="max context by hardware (GPU × count × precision)",
        description="GPU configuration cheat sheet: for each GPU × deployable count (one node, then "
        "whole nodes up to 32 GPUs) and each checkpoint the engine can load, the largest "
        "context (1K-token steps) that fits; empty where the model will not load. "
        "Computed by the vectorized sweep (the same bytes as `estimate`).",
    )
    add_model_source_args(p)
    p.add_argument(
        "--gpu",
        default="h100-sxm,h200-sxm,b200,mi300x",
        help="comma-separated GPU ids (default h100-sxm,h200-sxm,b200,mi300x)",
    )
    p.add_argument("--kv-dtype", default="fp8", help="KV dtype (default fp8)")
    p.add_argument(
        "--overhead-per-gpu", default=None, help="overhead per GPU (default: the model's rule, as `estimate`)"
    )
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

    for name in ("hf_repo", "gguf_repo"):  # names the user gave are checked before anything is planned
        value = getattr(args, name, None)
        if value is not None and not str(value).strip():
            raise K3InputError(name, f"{value!r} is not a repository name", "e.g. moonshotai/Kimi-K3 (or repo:QUANT)")
    model = model_from_args(args)
    eid = default_engine_for(model) if args.engine is None else normalize_engine(args.engine)
    settings = engine_settings_from_args(args, eid) if eid not in ("guide", "generic") else eid
    if eid != "llama.cpp" and (args.host is not None or args.ram is not None):
        raise K3InputError(
            "host" if args.host is not None else "ram", "applies to llama.cpp's offload plan", "--engine llama.cpp"
        )
    c = run_checklist(
        model=model,
        gpu=args.gpu,
        gpus=args.gpus,
        nodes=args.nodes,
        context=args.context,
        kv_dtype=args.kv_dtype,
        engine=settings,
        assumptions=_checklist_assumptions(args),
        host=args.host,
        ram=args.ram,
    )
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
        except K3InputError as exc:  # e.g. no published checkpoint of this model for the engine
            no_cmd = str(exc)
    if vllm_offload is not None and not c.recommended:
        try:
            cmds["vllm (cpu offload, on your GPUs)"] = commands_for(vllm_offload, **_command_sources(args))["vllm"]
        except K3InputError:
            pass
    util = dict(plan.engine.settings).get("gpu_memory_utilization") if plan is not None and plan.engine else None
    warnings = (
        anti_patterns(plan, workload_context_tokens=args.workload_context, gpu_memory_utilization=util) if plan else ()
    )
    if args.json:
        out = c.to_dict()
        out["engine"] = plan.engine_id if plan is not None else eid
        out["chosen"] = (
            "recommended"
            if c.recommended
            else ("offload" if llama_offload is not None else "cheapest" if c.cheapest else None)
        )
        out["offload_plan"] = vllm_offload.to_dict() if vllm_offload is not None else None
        out["no_command"] = no_cmd
        out["plan"] = plan.to_dict() if plan else None
        out["commands"] = {k: {"argv": list(v.argv), "text": v.text, "notes": list(v.notes)} for k, v in cmds.items()}
        out["warnings"] = [{"code": w.code, "message": w.message} for w in warnings]
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"Decision checklist (guide 000) — {c.model} on {c.gpus}× {c.gpu}, target context "
        f"{format_context(c.context_tokens)}, KV {c.kv_dtype}"
    )
    for s in c.steps:
        print(f"{s.step}. {s.title:<22}{s.figure}\n   {s.reason}")
    print()
    basis = f" (verdict by {plan.verdict_basis})" if plan is not None else ""
    if c.recommended:
        print(f"Recommended for {c.gpus}× {c.gpu}{basis}: {c.recommended.label}\n   {c.recommended.reason}")
    elif llama_offload is not None:
        o = c.offload
        print(
            f"Nothing fits on {c.gpus}× {c.gpu} in VRAM at {format_context(c.context_tokens)}; with experts in "
            f"host memory (llama.cpp, the offload study's plan): {o.verdict()}"
        )
        print(f"\n# llama.cpp (offload)\nllama-server {_offload_source(args, o)} {o.llamacpp_flags}")
        for n in o.notes:
            print(f"# note: {n}")
        if c.cheapest:
            print(f"\nWithout offload, the cheapest on {c.gpu}{basis}: {c.cheapest.label}")
    elif c.cheapest:
        print(
            f"Nothing fits on {c.gpus}× {c.gpu} at {format_context(c.context_tokens)}.\n"
            f"Cheapest on {c.gpu}{basis}: {c.cheapest.label}\n   {c.cheapest.reason}"
        )
    if vllm_offload is not None and not c.recommended:
        o = vllm_offload
        gb = dict(o.engine.settings)["cpu_offload_gb"]
        link = o.gpu.host_link_bytes_per_s
        floor = (
            f"; every decode step streams {gb:g} GiB per GPU over the host link: at least "
            f"{gb * GiB / link * 1000:,.0f} ms per step at {link / 1e9:,.0f} GB/s (a theoretical floor)"
            if link
            else ""
        )
        print(f"On your {c.gpus}× {c.gpu} with --cpu-offload-gb {gb:g} (vLLM's own weight offload): {o.reason}{floor}")
    else:
        print(
            f"No deployable configuration of up to {max(32, c.gpus)} {c.gpu} holds "
            f"{format_context(c.context_tokens)}; no command is printed."
        )
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
        raise K3InputError(
            "overhead-per-gpu",
            f"is an assumption of k3lib's generic model; {eid} computes its own",
            "leave it out, or add --engine generic",
        )
    df = cheatsheet(
        model=model, gpus=gpus, kv_dtype=args.kv_dtype, engine=engine, assumptions=_checklist_assumptions(args)
    )
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


def add_offload_parser(sub) -> None:
    p = sub.add_parser(
        "offload",
        help="experts in system RAM: VRAM, RAM and tokens/s",
        description="Offload mode: routed experts in system RAM, the rest on the GPU; VRAM and RAM "
        "needed, the decode ceiling of the bandwidth model, and the serving model's "
        "fitted decode tokens/s with its held-aside error.",
    )
    add_model_source_args(p, default_model="kimi-k3")
    p.add_argument(
        "--weights",
        default=None,
        help="weight precision (default q4_k_m; a --gguf/--safetensors file: its exact bytes)",
    )
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (default bf16)")
    p.add_argument("--context", default="8K", help="context length (default 8K; K = 1024 tokens)")
    p.add_argument("--batch", default="1", help="concurrent sequences (default 1)")
    p.add_argument("--gpu", default="rtx-4090-48gb", help="GPU id or alias (default rtx-4090-48gb)")
    p.add_argument("--gpus", default="1", help="GPUs in the machine, layers split over them (default 1)")
    p.add_argument(
        "--expert-layers-on-gpu",
        default="0",
        help="MoE layers whose experts stay on the GPU (default 0), or auto: the most that still fit",
    )
    p.add_argument("--ram", default=None, help="system RAM, e.g. 1536GB (default: report what is needed)")
    p.add_argument(
        "--host",
        default=None,
        help="host platform from data/hosts.csv (e.g. epyc-9005, xeon-5th-gen, "
        "desktop-ddr5-5600): its channels × MT/s give the RAM bandwidth",
    )
    p.add_argument(
        "--ram-bandwidth",
        default=None,
        help="system RAM bandwidth, e.g. 460GB/s (overrides --host; "
        "without either, guide 004's 70GB/s is used and labelled as an assumption)",
    )
    p.add_argument("--unit", choices=tuple(UNITS), default="GB", help="unit of the printed figures (default GB)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes in bytes")
    p.set_defaults(func=_cmd_offload)


def _cmd_offload(args) -> int:
    from k3lib.studies.offload import best_offload_plan, plan_offload, render_text

    kwargs = dict(
        model=model_from_args(args),
        weights=args.weights,
        gpu=args.gpu,
        gpus=args.gpus,
        kv_dtype=args.kv_dtype,
        context=args.context,
        batch=args.batch,
        ram=args.ram,
        host=args.host,
        ram_bandwidth=args.ram_bandwidth,
    )
    if str(args.expert_layers_on_gpu).strip().lower() == "auto":
        plan = best_offload_plan(**kwargs) or plan_offload(**kwargs)  # none loads: show why, at 0 layers
    else:
        plan = plan_offload(**kwargs, expert_layers_on_gpu=args.expert_layers_on_gpu)
    serving = _offload_serving(args, plan) if plan.fits else None
    if args.json:
        doc = plan.to_dict()
        doc["serving"] = serving.to_dict() if serving is not None else None
        print(json.dumps(doc, indent=2))
    else:
        print(render_text(plan, args.unit))
        if serving is not None:  # the serving model's figure beside the roofline, with its basis and error
            f = serving.decode_tokens_per_s_per_sequence
            err = f", ±{f.expected_error_pct:.0f} % on held-aside runs" if f.expected_error_pct is not None else ""
            print(
                f"serving model (k3lib.serving, llama.cpp): decode ≈ {f.value:,.2f} tokens/s per sequence "
                f"({f.basis}{err}); `k3plan speed --expert-layers-on-gpu {plan.expert_layers_on_gpu}` for all "
                "figures"
            )
    return 0 if plan.fits else 3


def _offload_serving(args, plan):
    """The serving model's estimate for an offload plan that loads (same model, GPUs, host and
    expert split), or None when it cannot say (e.g. no compute figure for the device)."""
    from k3lib import serving

    try:
        return serving.offload_serving_estimate(
            model=model_from_args(args),
            engine="llama.cpp",
            gpu=args.gpu,
            gpus=plan.gpus,
            weights=plan.weight_format,
            kv_dtype=args.kv_dtype,
            input_tokens=0,
            output_tokens=max(1, plan.context_tokens),
            concurrency=plan.batch,
            host=args.host,
            ram=args.ram,
            ram_bandwidth=args.ram_bandwidth,
            expert_layers_on_gpu=plan.expert_layers_on_gpu,
        )
    except K3InputError:
        return None


# ---------------------------------------------------------------- speed (issue 22)
# `k3plan speed`: how fast, how many users, at what cost — the serving model (k3lib.serving) over
# the plan for the engine. Every figure carries its basis and its measured error.


def add_speed_parser(sub) -> None:
    p = sub.add_parser(
        "speed",
        help="decode/prefill speed, concurrency and cost of a deployment",
        description="The serving model over the plan for an engine: decode tokens/s per sequence and "
        "in total, prefill tokens/s, TTFT, TPOT, the largest concurrency the KV cache and "
        "max_num_seqs allow, and $/hour and $/million output tokens. Every figure says "
        "its basis (measured, fitted model with its held-aside error, or theoretical "
        "ceiling). Exit 3 when the plan does not load (no speed figures), 2 bad input.",
    )
    add_model_source_args(p)
    add_layout_args(p)
    p.add_argument("--ep", default=None, help="expert-parallel size (MoE models; default 1)")
    p.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help="vllm, sglang, trtllm, llama.cpp, ik_llama.cpp, ollama or ktransformers (an engine without a "
        "memory profile plans memory with the closest one, named); default as `estimate`",
    )
    p.add_argument("--weights", default=None, help="weight precision or checkpoint (default: native)")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype (default bf16)")
    p.add_argument("--input-len", default="1024", help="prompt tokens per request (default 1024)")
    p.add_argument("--output-len", default="256", help="generated tokens per request (default 256)")
    p.add_argument("--concurrency", default="1", help="concurrent requests (default 1)")
    p.add_argument(
        "--host",
        default=None,
        help="host platform (see `k3plan hosts`): RAM bandwidth for offload and CPU-only serving",
    )
    p.add_argument("--ram-bandwidth", default=None, help="host RAM bandwidth, e.g. 200GB/s (overrides --host)")
    p.add_argument("--ram", default=None, help="host RAM for offload, e.g. 512GB")
    p.add_argument(
        "--expert-layers-on-gpu",
        default=None,
        help="offload: MoE layers whose experts stay on the GPU (the rest in host RAM; auto = most that fit)",
    )
    p.add_argument(
        "--price-per-gpu-hour",
        default=None,
        metavar="USD",
        help="your price per GPU-hour in US$ (default: the dated catalogue's median, when known)",
    )
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
    from k3lib import serving
    from k3lib.core.units import parse_count, parse_positive_int
    from k3lib.engines.base import serving_engine
    from k3lib.engines.deployment import default_engine_for, plan_for_engine

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
        for name in ("ram", "ram_bandwidth"):  # read by the offload model only: refused, not ignored
            if getattr(args, name) is not None:
                raise K3InputError(
                    name.replace("_", "-"),
                    "applies to offload or CPU-only serving",
                    "--expert-layers-on-gpu N or --gpus 0",
                )
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
                raise K3InputError(
                    "expert-layers-on-gpu", "offload speed is not modelled by this version", "leave it out"
                )
            est = serving.offload_serving_estimate(
                model=model,
                engine=served,
                gpu=None if n_gpus == 0 else args.gpu,
                gpus=n_gpus,
                weights=args.weights,
                kv_dtype=args.kv_dtype,
                input_tokens=in_len,
                output_tokens=out_len,
                concurrency=concurrency,
                host=args.host,
                ram=args.ram,
                ram_bandwidth=args.ram_bandwidth,
                expert_layers_on_gpu=None
                if str(args.expert_layers_on_gpu).strip().lower() == "auto"
                else args.expert_layers_on_gpu,
                price_per_gpu_hour=price,
            )
        else:
            ep = parse_positive_int(args.ep, "ep") if args.ep is not None else 1
            plan = plan_for_engine(
                model=model,
                engine=profile,
                gpu=args.gpu,
                gpus=n_gpus,
                weights=args.weights,
                kv_dtype=args.kv_dtype,
                context=in_len + out_len,
                batch=1,
                nodes=args.nodes,
                tp=args.tp,
                pp=args.pp,
                ep=ep,
                with_limits=False,
            )
            est = serving.serving_estimate(
                plan,
                concurrency=concurrency,
                input_tokens=in_len,
                output_tokens=out_len,
                price_per_gpu_hour=price,
                engine=served,
                host=args.host,
            )
    except serving.PlanDoesNotLoad as exc:  # no speed for a plan that does not load
        if args.json:
            print(
                json.dumps({"loads": False, "reason": str(exc), "engine": served, "memory_profile": profile}, indent=2)
            )
        else:
            print(f"DOES NOT LOAD — {exc}; no speed figures")
        return 3
    doc = {
        "loads": True,
        "engine": served,
        "memory_profile": profile,
        "price_basis": price_basis,
        **est.to_dict(),
        "details": est.details(),
    }
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
