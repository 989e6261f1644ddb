"""``k3plan check-log LOG``: read a vLLM, SGLang, llama.cpp or Ollama log, take its
configuration and every memory line (:mod:`k3lib.engines.logparse`), predict the same quantities
with the engine's profile (the GGUF engines in :mod:`k3lib.engines.logcheck_gguf`, vLLM and SGLang
here), and show logged vs predicted per component with the error and the rule.

Lines that look like memory figures but match no known pattern are listed, never
guessed. A quantity the log does not let us predict (the model is not named, a
setting is missing) is listed with what is missing.

Units as the engines print them: llama.cpp/Ollama "MiB" are 2^20 B; vLLM "GiB" are
2^30 B, and vLLM ≤ 0.6 printed "GB" meaning GiB (``Loading model weights took 14.9888 GB``);
SGLang "GB" are 2^30 B (it divides by 1 << 30).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB, MiB
from k3lib.engines.logcheck_gguf import check_gguf
from k3lib.engines.logcheck_rows import (
    COMPUTE_TOLERANCE_PCT,
    KV_TOLERANCE_PCT,
    WEIGHTS_TOLERANCE_PCT,
    CheckRow,
    check_row,
    figures_named,
)
from k3lib.engines.logparse import ENGINES_READ, Logged, detect_engine, parse_log


@dataclass(frozen=True)
class LogCheck:
    engine: str
    config: dict[str, Any]
    figures: tuple[Logged, ...]
    rows: tuple[CheckRow, ...]
    not_predicted: tuple[str, ...]
    unknown_lines: tuple[str, ...]
    model_id: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def within_count(self) -> int:
        return sum(r.within for r in self.rows)


# ----------------------------------------------------------------------------- predicting


def _resolve(name: str | None, given: Any):
    """An architecture from ``given`` (id, path or LoadedModel) or the log's model name; None if unknown."""
    from k3lib.core.models import get_model
    from k3lib.engines.base import _resolve_model

    if given is not None:
        if isinstance(given, (str, Path)) and Path(str(given)).suffix == ".json":
            from k3lib.core.data import DATA_DIR
            from k3lib.loaders import load_config

            for cand in (Path(str(given)), DATA_DIR.parent / str(given)):  # as given, or from the repository root
                if cand.exists():
                    return load_config(cand)
        if isinstance(given, (str, Path)) and Path(str(given)).exists():
            from k3lib.loaders import load_path  # a .gguf file or a safetensors folder

            return load_path(given)
        return _resolve_model(given)[0] if not isinstance(given, str) else get_model(given)
    if not name:
        return None
    base = name.rstrip("/").split("/")[-1]
    base = re.sub(r"\s+", "-", base.strip())
    for alias in (
        name,
        base,
        re.sub(r"^Meta-", "", base),
        re.sub(r"-(Instruct|Chat|it)$", "", base, flags=re.I),
        re.sub(r"-(Instruct|Chat|it)$", "", re.sub(r"^Meta-", "", base), flags=re.I),
    ):
        try:
            return get_model(alias)
        except K3InputError:
            continue
    return None


def _vllm_version_of(cfg, figs, notes) -> tuple[str, str | None]:
    """The version the log prints, else the oldest one whose lines match the log's format."""
    if cfg.get("vllm_version"):
        return cfg["vllm_version"], cfg.get("vllm_engine")
    fmt = cfg.get("budget_format")
    qs = {f.quantity for f in figs}
    if fmt == "0.6.4":
        v, why = "0.6.4", "the 'Memory profiling results: … kv_cache_size=' line (V0 0.6.4)"
    elif fmt == "0.6.5+":
        v, why = "0.6.6", "the 'model weights take …' budget lines (V0 0.6.5 and later)"
    elif "KV cache blocks" in qs:
        v, why = "0.5.5", "a '# GPU blocks' line with no budget line (V0 up to 0.6.3)"
    elif "KV cache tokens" in qs and "available KV memory" not in qs:
        v, why = "0.8.5", "a 'GPU KV cache size' line without 'Available KV cache memory' (V1 0.8)"
    else:
        from k3lib.engines.vllm import VLLM_DEFAULT_VERSION

        v, why = VLLM_DEFAULT_VERSION, "no version line; the newest rules modelled"
    notes.append(f"vLLM version not printed; rules of {v} taken from {why}")
    return v, ("V0" if fmt else None)


def _check_vllm(cfg, figs, arch, rows, missing, notes):
    from k3lib.engines.vllm import (
        vllm_activation_peak_bytes,
        vllm_available_kv_bytes,
        vllm_kv_layout,
        vllm_non_torch_bytes,
        vllm_rules,
        vllm_weights_bytes_per_rank,
    )

    if arch is None:
        missing.append(f"every figure: model {cfg.get('model_name')!r} is not a built-in model (pass --model)")
        return
    version, engine = _vllm_version_of(cfg, figs, notes)
    try:
        rules = vllm_rules(version, engine=engine)
    except K3InputError as exc:
        missing.append(f"every figure: {exc}")
        return
    tp = cfg.get("tp", 1)
    kv = cfg.get("kv_cache_dtype", "auto")
    kv = "auto" if kv in ("auto", "bfloat16", "float16") else kv
    w_pred = vllm_weights_bytes_per_rank(arch, tp=tp)["total"]
    for f in figures_named(figs, "weights"):
        rows.append(
            check_row(
                "weights per rank",
                f.value,
                w_pred,
                "B",
                WEIGHTS_TOLERANCE_PCT,
                f"vLLM weights rule (vocab padded to 64, sharded ÷ TP={tp}, replicated parts whole)",
            )
        )
    hyb = figures_named(figs, "hybrid attention block") + figures_named(figs, "state page padding")
    if hyb:
        hl = vllm_kv_layout(arch, tp=tp, kv_dtype=kv, vllm_version=version, engine=rules.engine)
        for f in hyb:
            block = f.quantity == "hybrid attention block"
            rows.append(
                check_row(
                    f.quantity,
                    f.value,
                    hl.block_tokens if block else round(hl.state_padding_pct, 2),
                    "tokens" if block else "%",
                    KV_TOLERANCE_PCT if block else 1.0,
                    f"{rules.label} HybridAttentionMambaModelConfig: a × ⌈{hl.state_bytes:,} B recurrent state "
                    f"÷ (a × {hl.page_bytes // hl.block_tokens:,} B per token)⌉, a = "
                    f"{hl.hybrid_alignment}" + ("" if block else "; padding = page ÷ state − 1, printed to 2 decimals"),
                )
            )
    avail = figures_named(figs, "available KV memory")
    total, util = cfg.get("total_gpu_memory_bytes"), cfg.get("gpu_memory_utilization")
    for f in avail[-1:]:
        if not (total and util):
            missing.append(
                "available KV memory: needs the GPU's total memory and gpu_memory_utilization, which "
                "the log does not print"
            )
            continue
        w_logged = cfg.get("weights_printed_bytes") or next((x.value for x in figures_named(figs, "weights")), None)
        act, nt, printed = cfg.get("activation_bytes"), cfg.get("non_torch_memory_bytes"), 2
        if act is None and cfg.get("peak_torch_memory_bytes") and w_logged:
            act = cfg["peak_torch_memory_bytes"] - w_logged  # 0.6.4 prints torch's peak with the weights
            printed += 1
        if act is not None:
            a_pred = vllm_activation_peak_bytes(
                arch, tp=tp, vllm_version=version, engine=rules.engine, max_model_len=cfg.get("max_model_len")
            )
            how = (
                "V0: T·(3·I/TP + 3·D)·b over the profiled batch, or the logits of 256 sequences"
                if rules.engine == "V0"
                else "V1: constants fitted to the 0.19 H100 sweep"
            )
            rows.append(
                check_row(
                    "activation peak",
                    act,
                    a_pred,
                    "B",
                    WEIGHTS_TOLERANCE_PCT,
                    f"{rules.label} profiling run, an estimate ({how}); the log's figure is used in the "
                    "budget row below",
                )
            )
        src = "activation and non-torch as the log prints them"
        if act is None or nt is None:
            src = f"activation and non-torch from the profile ({rules.label}; V1 constants fitted to 0.19 on H100)"
            act = (
                act
                if act is not None
                else vllm_activation_peak_bytes(
                    arch, tp=tp, vllm_version=version, engine=rules.engine, max_model_len=cfg.get("max_model_len")
                )
            )
            nt = nt if nt is not None else vllm_non_torch_bytes(tp=tp)
        else:
            printed += 2
        pred: float = vllm_available_kv_bytes(
            total_bytes=total,
            gpu_memory_utilization=util,
            weights_bytes=w_pred,
            activation_bytes=act,
            non_torch_bytes=nt,
            vllm_version=version,
            engine=rules.engine,
        )
        slack = printed * 0.005 * GiB
        rows.append(
            check_row(
                "available KV memory",
                f.value,
                pred,
                "B",
                KV_TOLERANCE_PCT,
                f"{rules.label} budget rule '{rules.budget}': {util:g} × total − weights (predicted) − "
                f"activation − non-torch, {src}; each printed GiB is rounded to 0.01",
                allowed=(pred - slack, pred + slack),
            )
        )
    if not avail:
        if figures_named(figs, "KV cache tokens") or figures_named(figs, "KV cache blocks"):
            missing.append("KV tokens/blocks: the log prints no available KV memory")
        return
    a = avail[-1].value
    lay = vllm_kv_layout(arch, tp=tp, kv_dtype=kv, vllm_version=version, engine=rules.engine)
    lo_b, hi_b = int(a - 0.005 * GiB), int(a + 0.005 * GiB)
    for f in figures_named(figs, "KV cache tokens"):
        pred = lay.tokens(int(a))
        lo, hi = lay.tokens(lo_b), lay.tokens(hi_b)
        rows.append(
            check_row(
                "KV cache tokens",
                f.value,
                pred,
                "tokens",
                KV_TOLERANCE_PCT,
                f"{rules.label}: ⌊available ÷ ({lay.page_bytes:,} B page × {lay.group_size} layers)⌋ ÷ "
                f"{lay.num_groups} group(s) × {lay.block_tokens}; the printed GiB (2 decimals) allows "
                f"{lo:,}–{hi:,}",
                allowed=(lo, hi),
            )
        )
        if tp > 1 and f.value < lo:
            need = f.value / lay.block_tokens * lay.num_groups * lay.bytes_per_block / GiB
            notes.append(
                f"TP={tp}: every rank prints its own 'Available KV cache memory' and vLLM keeps the smallest "
                f"rank's blocks (0.10.2 unify_kv_cache_configs, 0.19.0 get_kv_cache_configs); the printed "
                f"tokens fit a rank with about {need:.2f} GiB, so the excerpt's two lines may come from "
                "different ranks"
            )
    for f in figures_named(figs, "KV cache blocks"):
        pred = lay.num_blocks(int(a))
        blo, bhi = lay.num_blocks(lo_b), lay.num_blocks(hi_b)
        rows.append(
            check_row(
                "KV cache blocks",
                f.value,
                pred,
                "blocks",
                KV_TOLERANCE_PCT,
                f"{rules.label}: ⌊available ÷ ({lay.page_bytes:,} B × {lay.group_size} layers)⌋ (V0 prints "
                f"blocks); the printed GiB allows {blo:,}–{bhi:,}",
                allowed=(blo, bhi),
            )
        )
    L = cfg.get("max_model_len")
    for f in figures_named(figs, "maximum concurrency")[-1:]:
        pred = lay.max_concurrency(int(a), max_model_len=L)
        c_lo, c_hi = lay.max_concurrency(lo_b, max_model_len=L), lay.max_concurrency(hi_b, max_model_len=L)
        rule = (
            "blocks × block ÷ max_model_len"
            if lay.concurrency_rule == "tokens/len"
            else "blocks ÷ Σ over groups of the blocks one max_model_len request needs"
        )
        rows.append(
            check_row(
                "maximum concurrency",
                f.value,
                pred,
                "x",
                KV_TOLERANCE_PCT,
                f"{rules.label}: {rule} (L = {L:,}); printed to 2 decimals, the printed GiB allows "
                f"{c_lo:.3f}–{c_hi:.3f}",
                allowed=(round(c_lo, 2) - 0.005, round(c_hi, 2) + 0.005),
            )
        )


def _check_sglang(cfg, figs, arch, rows, missing, notes):
    if arch is None:
        missing.append(f"every figure: model {cfg.get('model_name')!r} is not a built-in model (pass --model)")
        return
    from k3lib.engines.base import _kv_bytes_per_element

    tp = cfg.get("tp", 1)
    kvd = cfg.get("kv_cache_dtype", "auto")
    kv_b = 1.0 if "float8" in kvd or kvd.startswith("fp8") else _kv_bytes_per_element("auto", 2)
    tokens = cfg.get("pool_tokens")
    if tokens:
        _check_sglang_kv_sizes(figs, arch, tp, kv_b, tokens, rows)
    for f in figures_named(figs, "weights"):
        from k3lib.engines.vllm import vllm_weights_bytes_per_rank

        w = vllm_weights_bytes_per_rank(arch, tp=tp)["total"]
        rows.append(
            check_row(
                "weights per rank",
                f.value,
                w,
                "B",
                WEIGHTS_TOLERANCE_PCT,
                "weights sharded ÷ TP like vLLM (SGLang's mem usage also holds the CUDA context)",
            )
        )
    _check_sglang_pool(cfg, figs, arch, tp, kv_b, rows, missing)


def _check_sglang_kv_sizes(figs, arch, tp, kv_b, tokens, rows):
    """The allocation line's K and V sizes (MHA), or its one KV size (MLA), each against
    :func:`~k3lib.engines.sglang.sglang_kv_sizes_bytes`; SGLang prints GiB to 2 decimals."""
    from k3lib.engines.sglang import SGLANG_MEMORY_POOL_SOURCE, sglang_kv_sizes_bytes

    k_b, v_b = sglang_kv_sizes_bytes(arch, pool_tokens=int(tokens), tp=tp, kv_dtype=kv_b)
    rule = (
        f"{SGLANG_MEMORY_POOL_SOURCE}: (#tokens {tokens:,} + 1 padded slot) × layers × {{what}} × {kv_b:g} B; "
        "printed in GiB to 2 decimals"
    )
    what = {
        "K": f"max(1, KV heads ÷ TP={tp}) × head dim",
        "V": f"max(1, KV heads ÷ TP={tp}) × V head dim",
        "KV": "(kv_lora_rank + qk_rope_head_dim), the MLA latent",
    }
    for q, pred in (("K", k_b), ("V", v_b), ("KV", k_b)):
        for f in figures_named(figs, q):
            rows.append(
                check_row(
                    f"{q} pool",
                    f.value,
                    pred,
                    "B",
                    KV_TOLERANCE_PCT,
                    rule.format(what=what[q]),
                    allowed=(pred - 0.005 * GiB, pred + 0.005 * GiB),
                )
            )


def _check_sglang_pool(cfg, figs, arch, tp, kv_b, rows, missing):
    """The KV budget and pool size from the log's free-memory figures and mem_fraction_static."""
    from k3lib.engines.sglang import sglang_cell_bytes, sglang_kv_budget_bytes

    after, frac = cfg.get("avail_after_load_bytes"), cfg.get("mem_fraction_static")
    usage = next((f.value for f in figures_named(figs, "weights")), None)
    before = cfg.get("avail_before_load_bytes") or (after + usage if after is not None and usage is not None else None)
    budget_logged = figures_named(figs, "KV budget")
    pred_budget, n_printed = None, 3 if cfg.get("avail_before_load_bytes") else 4
    rule = (
        "SGLang 0.5.5 model_runner.py profile_max_num_token: free after loading − free before loading × "
        f"(1 − mem_fraction_static {frac}); free before = 'Load weight begin' avail mem, or 'Load weight end' "
        "avail mem + mem usage"
    )
    if after is not None and before is not None and frac:
        pred_budget = sglang_kv_budget_bytes(
            available_after_load_bytes=after, total_before_load_bytes=before, mem_fraction_static=frac
        )
        for f in budget_logged[:1]:
            slack = n_printed * 0.005 * GiB
            rows.append(
                check_row(
                    "KV budget (rest memory)",
                    f.value,
                    pred_budget,
                    "B",
                    KV_TOLERANCE_PCT,
                    rule,
                    allowed=(pred_budget - slack, pred_budget + slack),
                )
            )
    cell = sglang_cell_bytes(arch, tp=tp, kv_dtype=kv_b) if arch is not None else 0
    for f in figures_named(figs, "pool tokens"):
        budget = budget_logged[0].value if budget_logged else pred_budget
        if budget is None or not cell:
            missing.append(
                f"pool tokens = {f.value:,.0f}: needs the free memory after loading (Load weight end), "
                "before loading and mem_fraction_static, or a printed KV budget"
            )
            continue
        slack = (0.005 if budget_logged else n_printed * 0.005) * GiB
        pred = int(budget) // cell
        lo, hi = int(budget - slack) // cell, int(budget + slack) // cell
        rows.append(
            check_row(
                "pool tokens",
                f.value,
                pred,
                "tokens",
                KV_TOLERANCE_PCT,
                f"⌊KV budget ÷ {cell:,} B per token slot⌋ ({'printed' if budget_logged else 'predicted'} "
                f"budget; its rounding allows {lo:,}–{hi:,})",
                allowed=(lo, hi),
            )
        )
    for f in figures_named(figs, "free after pool"):
        missing.append(
            f"free after pool = {f.value / GiB:,.2f} GiB: what is left after the pool (activations, "
            "CUDA graphs) is not predicted"
        )


def check_log(text: str, *, engine: str | None = None, model: Any = None, **overrides: Any) -> LogCheck:
    """Read ``text`` (an engine log) and compare every memory figure with the profile's prediction.

    ``model`` names the model when the log does not (a built-in id, a config.json path);
    ``overrides`` replace configuration read from the log (``tp``, ``n_ctx``, ``type_k``…).
    """
    eng, cfg, figs, unknown = parse_log(text, engine)
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    if not figs:
        raise K3InputError(
            "LOG",
            f"the {eng} log has no memory line check-log knows",
            "a log with its model-loading and KV-cache lines",
        )
    arch = _resolve(cfg.get("model_name"), model)
    if getattr(arch, "file_format", None) == "gguf" and getattr(arch, "tensors", None):
        cfg["_gguf"] = arch  # its tensor table: the model and file-size lines
    if arch is not None and hasattr(arch, "require_architecture"):
        arch = arch.require_architecture()
    rows: list[CheckRow] = []
    missing: list[str] = []
    notes: list[str] = []
    {"ollama": check_gguf, "llama.cpp": check_gguf, "vllm": _check_vllm, "sglang": _check_sglang}[eng](
        cfg, figs, arch, rows, missing, notes
    )
    cfg_out = {k: v for k, v in cfg.items() if k not in ("layer_dims", "_gguf", "rs_layer_flags")}
    if "layer_dims" in cfg:
        cfg_out["layers_in_log"] = len(cfg["layer_dims"])
    return LogCheck(
        eng, cfg_out, tuple(figs), tuple(rows), tuple(missing), tuple(unknown), getattr(arch, "id", None), tuple(notes)
    )


# ----------------------------------------------------------------------------- showing


def _fmt(v: float, unit: str) -> str:
    if unit == "x":
        return f"{v:,.3f}x"
    if unit == "%":
        return f"{v:,.2f} %"
    return f"{v / MiB:,.2f} MiB" if unit == "B" else f"{v:,.0f} {unit}"


def render_log_check(chk: LogCheck, *, max_unknown: int = 20) -> str:
    """Plain-text report: configuration, logged vs predicted per component, what was not predicted, unknown lines."""
    out = [
        f"engine: {chk.engine}   model: {chk.model_id or 'not identified'}",
        "configuration read: " + (", ".join(f"{k}={v}" for k, v in chk.config.items()) or "none"),
    ]
    if chk.rows:
        out.append(f"{'component':<32}{'logged':>18}{'predicted':>18}{'error':>9}  within")
        for r in chk.rows:
            out.append(
                f"{r.component:<32}{_fmt(r.logged, r.unit):>18}{_fmt(r.predicted, r.unit):>18}"
                f"{r.error_pct:>8.2f}%  {'yes' if r.within else 'NO'} (±{r.tolerance_pct:g} %)"
            )
            out.append(f"    rule: {r.rule}")
        out.append(f"{chk.within_count} of {len(chk.rows)} figures within tolerance")
    for n in chk.notes:
        out.append(f"note: {n}")
    for m in chk.not_predicted:
        out.append(f"not predicted: {m}")
    if chk.unknown_lines:
        out.append(f"{len(chk.unknown_lines)} memory-looking line(s) not understood (listed, not guessed):")
        out.extend("    " + u for u in chk.unknown_lines[:max_unknown])
        if len(chk.unknown_lines) > max_unknown:
            out.append(f"    … {len(chk.unknown_lines) - max_unknown} more")
    return "\n".join(out)


def add_check_log_parser(sub) -> None:
    """Register ``k3plan check-log LOG`` on an argparse subparsers object (cli.build_parser)."""
    p = sub.add_parser(
        "check-log",
        help="read an engine log and compare its memory lines with the prediction",
        description="Read a vLLM, SGLang, llama.cpp or Ollama log: its configuration and every "
        "memory line, predicted vs logged per component with the error and the rule. "
        "Lines not understood are listed, not guessed.",
    )
    p.add_argument("log", metavar="LOG", help="the log file ('-' for standard input)")
    p.add_argument("--engine", default=None, help="vllm, sglang, llama.cpp or ollama (default: detected)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--model", default=None, help="the model when the log does not name it (a built-in id)")
    source.add_argument(
        "--config", metavar="PATH", default=None, help="the model as a local config.json (or its folder)"
    )
    source.add_argument("--gguf", metavar="FILE", default=None, help="the model as a local .gguf file (exact tensors)")
    source.add_argument(
        "--safetensors",
        metavar="DIR",
        default=None,
        help="the model as a local safetensors checkpoint (folder with config.json)",
    )
    p.add_argument("--tp", type=int, default=None, help="tensor-parallel size when the log does not say")
    p.add_argument("--kv-cache-dtype", default=None, help="KV cache dtype when the log does not say (fp8, auto…)")
    p.add_argument("--vllm-version", default=None, help="vLLM version whose rules apply when the log prints none")
    p.add_argument("--max-model-len", type=int, default=None, help="vLLM max_model_len when the log does not say")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_check_log)


def cmd_check_log(args: argparse.Namespace) -> int:
    import json
    import sys

    if args.log == "-":
        text = sys.stdin.read()
    else:
        path = Path(args.log)
        if not path.is_file():
            raise K3InputError("LOG", f"{args.log!r} is not a readable file", "a path to an engine log, or -")
        text = path.read_text(encoding="utf-8", errors="replace")
    if args.vllm_version is not None:
        from k3lib.engines.vllm import parse_vllm_version

        parse_vllm_version(args.vllm_version)  # one clear error for a bad version
    from k3lib.loaders import load_source

    model = load_source(config=args.config, gguf=args.gguf, safetensors=args.safetensors) or args.model
    chk = check_log(
        text,
        engine=args.engine,
        model=model,
        tp=args.tp,
        kv_cache_dtype=args.kv_cache_dtype,
        vllm_version=args.vllm_version,
        max_model_len=args.max_model_len,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "engine": chk.engine,
                    "model": chk.model_id,
                    "config": chk.config,
                    "rows": [dataclasses.asdict(r) for r in chk.rows],
                    "not_predicted": list(chk.not_predicted),
                    "unknown_lines": list(chk.unknown_lines),
                    "notes": list(chk.notes),
                },
                indent=2,
                default=str,
            )
        )
    else:
        print(render_log_check(chk))
    return 0


__all__ = [
    "check_log",
    "parse_log",
    "detect_engine",
    "render_log_check",
    "add_check_log_parser",
    "cmd_check_log",
    "LogCheck",
    "CheckRow",
    "Logged",
    "ENGINES_READ",
    "KV_TOLERANCE_PCT",
    "WEIGHTS_TOLERANCE_PCT",
    "COMPUTE_TOLERANCE_PCT",
]
