"""``k3plan``: the command-line face of k3lib (also ``python -m k3lib``).

Exit codes: 0 ok, 2 bad input (one line naming the field, no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from .errors import K3InputError
from .units import GB, GiB, parse_size_bytes

UNITS = {"GiB": GiB, "GB": GB}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like k3lib's own input errors."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _size(args: argparse.Namespace, name: str) -> int | None:
    value = getattr(args, name)
    return None if value is None else parse_size_bytes(value, name.replace("_", "-"))


def _add_plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="kimi-k3", help="built-in model id (see `k3plan models`); default kimi-k3")
    p.add_argument("--weights", default=None, help="weight precision: native, bf16, fp8, q8_0, q6_k, q5_k_m, q4_k_m, "
                   "q3_k_m, q2_k, iq1_s, mxfp4, nvfp4, awq, gptq, or the guides' q8/q4/q2 "
                   "(default: native for architectures, q4 for guide profiles)")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp8, int4, q8_0, q4_0 (default bf16)")
    p.add_argument("--context", default="256K", help="context length: 131072, 128K, 256k, 1M (K = 1024 tokens)")
    p.add_argument("--batch", default="1", help="concurrent sequences (default 1)")
    p.add_argument("--gpu", default="h100-sxm", help="GPU id or alias (see `k3plan gpus`); default h100-sxm")
    p.add_argument("--gpus", default="8", help="number of GPUs in total (default 8)")
    p.add_argument("--nodes", default="1", help="nodes the GPUs are spread over (default 1)")
    p.add_argument("--tp", default=None, help="tensor-parallel size (default: GPUs per node, if the heads split)")
    p.add_argument("--pp", default=None, help="pipeline-parallel size (default: nodes)")
    p.add_argument("--activation", default=None,
                   help="override activation memory in total, e.g. 10GiB (GB = 10^9, GiB = 2^30)")
    p.add_argument("--overhead-per-gpu", default=None,
                   help="override runtime overhead per GPU, e.g. 6GiB")
    p.add_argument("--overhead-total", default=None,
                   help="override runtime overhead over all GPUs, e.g. 48GiB (guide-000's worked example)")
    p.add_argument("--memory-basis", choices=("marketed", "usable"), default=None,
                   help="GPU capacity: marketed (80 GiB for an H100) or usable (what the driver exposes); "
                        "default usable for architectures, marketed for guide profiles")
    p.add_argument("--unit", choices=tuple(UNITS), default="GiB", help="unit of the printed table (default GiB)")
    p.add_argument("--json", action="store_true", help="print one JSON object; sizes are integers in bytes")


def _plan_from_args(args: argparse.Namespace):
    from .models import get_model
    from .plan import Assumptions, make_plan

    model = get_model(args.model)
    weights = args.weights or ("native" if model.kind == "architecture" else "q4")
    assumptions = Assumptions(activation_bytes=_size(args, "activation"),
                              overhead_per_gpu_bytes=_size(args, "overhead_per_gpu"),
                              overhead_total_bytes=_size(args, "overhead_total"), memory_basis=args.memory_basis)
    return make_plan(model=model, gpu=args.gpu, gpus=args.gpus, weights=weights, kv_dtype=args.kv_dtype,
                     context=args.context, batch=args.batch, nodes=args.nodes, tp=args.tp, pp=args.pp,
                     assumptions=assumptions)


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
    lines = [f"{'component':<12}{'total (' + unit + ')':>16}{'per GPU (' + unit + ')':>18}"]
    for name, tot, per in rows:
        if name == "total":
            lines.append("-" * 46)
        lines.append(f"{name:<12}{tot / div:>16,.1f}{per / div:>18,.1f}")
    verdict = ("FITS" if plan.fits else "DOES NOT FIT") + " — " + plan.reason
    notes = "".join(f"\nnote: {n}" for n in plan.notes)
    return head + "\n".join(lines) + "\n" + verdict + notes


def _cmd_estimate(args) -> int:
    plan = _plan_from_args(args)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
    else:
        print(render_plan_table(plan, args.unit))
    return 0


def _cmd_models(args) -> int:
    from .models import list_models

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
    from .hardware import list_gpus

    gpus = list_gpus()
    if args.json:
        print(json.dumps([{"id": g.id, "name": g.name, "aliases": list(g.aliases),
                           "memory_marketed_bytes": g.memory_marketed_bytes,
                           "memory_usable_bytes": g.memory_usable_bytes,
                           "memory_bw_bytes_per_s": g.memory_bw_bytes_per_s, "price_usd": g.price_usd,
                           "source": g.source} for g in gpus], indent=2))
        return 0
    print(f"{'id':<20}{'memory (GiB)':>13}{'usable (GiB)':>14}{'bandwidth (GB/s)':>18}  name")
    for g in gpus:
        usable = f"{g.memory_usable_bytes / GiB:.2f}" if g.memory_usable_bytes else "—"
        print(f"{g.id:<20}{g.memory_marketed_bytes / GiB:>13,.1f}{usable:>14}{g.memory_bw_bytes_per_s / 1e9:>18,.0f}  {g.name}")
    return 0


def _cmd_formats(args) -> int:
    from .precisions import kv_dtypes, weight_formats

    print("weight formats (bits per weight, incl. block scales):")
    for f in weight_formats():
        bits = f"{f.bits_per_weight:g}" if f.bits_per_weight else "per group"
        print(f"  {f.id:<12}{bits:>10}  {f.name}")
    print("KV-cache dtypes (bytes per element, incl. block scales):")
    for k in kv_dtypes():
        print(f"  {k.id:<12}{k.bytes_per_element:>10g}  {k.name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="k3plan", description="How much GPU memory a model needs, and where it goes.")
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
    p = sub.add_parser("formats", help="list weight formats and KV dtypes",
                       description="List weight formats and KV-cache dtypes with their sizes.")
    p.set_defaults(func=_cmd_formats)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except K3InputError as exc:
        print(f"k3plan: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
