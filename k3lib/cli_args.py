"""The options every planning command of ``k3plan`` shares, and their reading into values:
the model (--model, --config, --gguf, --safetensors), the GPUs and their layout (--gpu, --gpus,
--nodes, --tp, --pp) and the engine with its own options (--engine, --gpu-memory-utilization, …).

:mod:`k3lib.cli` (estimate, report) and :mod:`k3lib.cli_studies` (plan, cheatsheet, offload,
speed) both import them from here; neither imports the other's commands back. (Moved unchanged
from ``k3lib.cli``.)
"""

from __future__ import annotations

import argparse
import sys

from k3lib.core.errors import K3InputError
from k3lib.core.units import GB, GiB, parse_size_bytes

UNITS = {"GiB": GiB, "GB": GB}
#: llama.cpp's KV cache types (``-ctk`` / ``-ctv``), as k3lib.engines.llamacpp.LLAMACPP_CACHE_TYPES lists them
LLAMACPP_CACHE_TYPE_NAMES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
#: an engine setting's command-line flag, where it is not ``--`` + its name with ``-``
SETTING_FLAGS = {"type_k": "--cache-type-k", "type_v": "--cache-type-v"}


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
    source.add_argument(
        "--model",
        default=default_model,
        help=f"built-in model id (see `k3plan models`), or a Hugging Face repository org/name "
        f"(org/name/FILE.gguf for one GGUF file) read from the local cache; default {default_model}",
    )
    source.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help="a local Hugging Face config.json (or its folder) instead of --model",
    )
    source.add_argument(
        "--gguf",
        metavar="FILE",
        default=None,
        help="a local .gguf file: architecture from its metadata, weights = its exact tensor bytes",
    )
    source.add_argument(
        "--safetensors",
        metavar="DIR",
        default=None,
        help="a local safetensors checkpoint (folder with config.json): weights = exact tensor bytes",
    )


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
    p.add_argument(
        "--nodes",
        default=None,
        help="nodes the GPUs are spread over (default: one node up to the GPU's node size, e.g. 8, then whole nodes)",
    )
    p.add_argument(
        "--tp", default=None, help="tensor-parallel size (default: as wide as the heads allow inside a node)"
    )
    p.add_argument("--pp", default=None, help="pipeline-parallel size (default: the rest, across nodes)")


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """--engine and every engine option; an option the chosen engine does not take is refused."""
    p.add_argument(
        "--engine",
        default=None,
        metavar="NAME",
        help="the engine the plan is for: vllm, sglang, llama.cpp, transformers, or generic (k3lib's "
        "component model, no engine); default vllm, llama.cpp for --gguf, the guide's own policy "
        "for a guide profile. Its rules decide the verdict",
    )
    p.add_argument(
        "--gpu-memory-utilization",
        default=None,
        metavar="F",
        help="vLLM: the fraction of GPU memory vLLM may use (vLLM's default 0.9)",
    )
    p.add_argument(
        "--max-num-seqs",
        default=None,
        metavar="N",
        help="vLLM: --max-num-seqs, the sampler's batch in its profiling run (vLLM's default 1024)",
    )
    p.add_argument(
        "--cpu-offload-gb",
        default=None,
        metavar="GIB",
        help="vLLM: --cpu-offload-gb, GiB of weights per GPU kept in CPU memory (streamed every step)",
    )
    p.add_argument(
        "--mem-fraction-static",
        default=None,
        metavar="F",
        help="SGLang: --mem-fraction-static (default: SGLang's rule by GPU size)",
    )
    p.add_argument(
        "--n-gpu-layers",
        default=None,
        metavar="N",
        help="llama.cpp: -ngl, the layers on the GPUs (the last N−1 and the output head; -1 = all, the default)",
    )
    p.add_argument(
        "--override-tensor",
        action="append",
        default=None,
        metavar="PATTERN",
        help="llama.cpp: -ot PATTERN=CPU, tensors kept in system RAM (repeatable; e.g. exps for the routed experts)",
    )
    p.add_argument(
        "-fa",
        "--flash-attn",
        default=None,
        choices=("on", "off", "auto"),
        help="llama.cpp: -fa on/off/auto (default on; auto is taken as enabled, as llama.cpp resolves it on GPUs)",
    )
    p.add_argument(
        "-ub",
        "--n-ubatch",
        "--ubatch-size",
        dest="n_ubatch",
        default=None,
        metavar="N",
        help="llama.cpp: -ub, the physical batch (default 512)",
    )
    types = "/".join(LLAMACPP_CACHE_TYPE_NAMES)
    p.add_argument(
        "-ctk",
        "--cache-type-k",
        default=None,
        metavar="TYPE",
        help=f"llama.cpp: the K cache type ({types}; default: --kv-dtype in llama.cpp's spelling)",
    )
    p.add_argument(
        "-ctv",
        "--cache-type-v",
        default=None,
        metavar="TYPE",
        help=f"llama.cpp: the V cache type ({types}; default: --kv-dtype; quantized V needs flash attention)",
    )
    p.add_argument(
        "--swa-full",
        action="store_true",
        default=None,
        help="llama.cpp: sliding-window layers keep the whole context (default: the window + -ub cells)",
    )
    p.add_argument(
        "-kvu",
        "--kv-unified",
        action="store_true",
        default=None,
        help="llama.cpp: one KV stream shared by every sequence (default: a stream per sequence)",
    )
    p.add_argument(
        "-np",
        "--parallel",
        default=None,
        metavar="N",
        help="llama.cpp: -np, the parallel sequences (n_seq_max), each of --context tokens; the same as --batch N",
    )
    p.add_argument(
        "--n-rs-seq",
        default=None,
        metavar="N",
        help="llama.cpp: recurrent-state snapshots per sequence (n_rs_seq; llama-server sets it to the draft's "
        "n_max under speculative decoding); counted for the families that keep them (default 0)",
    )


def _loaded_from_args(args: argparse.Namespace):
    """The LoadedModel named by --config/--gguf/--safetensors, or by a --model that is a Hugging Face
    repository id (``org/name`` or ``org/name/FILE.gguf``, not a built-in id: k3lib.loaders.hub), or
    None for a built-in --model; the loader's warnings go to stderr, one line each."""
    import warnings

    from k3lib.loaders import is_repo_spec, load_hub, load_source

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_source(
            config=getattr(args, "config", None),
            gguf=getattr(args, "gguf", None),
            safetensors=getattr(args, "safetensors", None),
        )
        if loaded is None and is_repo_spec(getattr(args, "model", None)):
            loaded = load_hub(args.model)
    for w in caught:
        print(f"k3plan: warning: {w.message}", file=sys.stderr)
    return loaded


def engine_settings_from_args(args: argparse.Namespace, engine_id: str):
    """The engine options given on the command line, as an EngineSettings for ``engine_id``;
    an option the engine does not take is one K3InputError naming the flag."""
    from k3lib.core.units import parse_count, parse_positive_int
    from k3lib.engines.deployment import ENGINE_OPTIONS, EngineSettings

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
        values["n_gpu_layers"] = (
            int(text)
            if text in ("-1", "0")
            else parse_positive_int(text, "n-gpu-layers", "a whole number ≥ 0, or -1 for every layer")
        )
    ot = getattr(args, "override_tensor", None)
    if ot:
        import re

        for pat in ot:
            try:
                re.compile(pat)
            except re.error as exc:
                raise K3InputError(
                    "override-tensor",
                    f"{pat!r} is not a regular expression ({exc})",
                    "a pattern of tensor names such as exps or 'blk\\.[0-9]+\\.ffn_.*_exps'",
                ) from None
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
        values["flash_attn"] = "auto" if fa == "auto" else fa == "on"
    ub = getattr(args, "n_ubatch", None)
    if ub is not None:
        values["n_ubatch"] = parse_positive_int(ub, "n-ubatch")
    for name, flag in SETTING_FLAGS.items():
        given = getattr(args, flag[2:].replace("-", "_"), None)
        if given is not None:
            cache_type = str(given).strip().lower()
            if cache_type not in LLAMACPP_CACHE_TYPE_NAMES:
                raise K3InputError(
                    flag[2:], f"{given!r} is not a llama.cpp cache type", ", ".join(LLAMACPP_CACHE_TYPE_NAMES)
                )
            values[name] = cache_type
    for name in ("swa_full", "kv_unified"):
        if getattr(args, name, None):
            values[name] = True
    rs = getattr(args, "n_rs_seq", None)
    if rs is not None:
        values["n_rs_seq"] = parse_count(rs, "n-rs-seq", minimum=0, maximum=256, allowed="a whole number 0 … 256")
    par = getattr(args, "parallel", None)
    if par is not None:
        values["parallel"] = parse_positive_int(par, "parallel")
    allowed = ENGINE_OPTIONS[engine_id]

    def flag_of(name: str) -> str:
        return SETTING_FLAGS.get(name, "--" + name.replace("_", "-"))

    for name in values:
        if name not in allowed:
            flag = flag_of(name)
            owners = [e for e, opts in ENGINE_OPTIONS.items() if name in opts]
            raise K3InputError(
                flag[2:],
                f"{flag} is a {' and '.join(owners)} option; the plan is for {engine_id}",
                f"--engine {owners[0]}" + (f", or one of {', '.join(flag_of(a) for a in allowed)}" if allowed else ""),
            )
    type_v = values.get("type_v")
    if values.get("flash_attn") is False and type_v is not None and type_v not in ("f16", "bf16", "f32"):
        raise K3InputError(
            "cache-type-v",
            f"{type_v} is a quantized V cache, which llama.cpp runs only with flash attention (--flash-attn off)",
            "f16, bf16 or f32, or --flash-attn on/auto",
        )
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
