"""Engine command lines for a plan: text the user copies; nothing is executed.

* :func:`vllm_command` — ``vllm serve <repo>`` with ``--tensor-parallel-size``,
  ``--pipeline-parallel-size``, ``--max-model-len``, ``--kv-cache-dtype`` and a
  ``--gpu-memory-utilization`` computed from the plan (:func:`gpu_memory_utilization`);
* :func:`llama_server_command` — ``llama-server -hf <repo>:<quant>`` (or ``-m <file>``)
  with ``-c``, ``-ngl``, ``--cache-type-k/-v`` and, for offload plans, ``--n-cpu-moe N``
  or an ``-ot`` expert regex;
* :func:`topology_command` — ``nvidia-smi topo -m`` (guide 000, step 6).

Every user-supplied name is passed through :func:`shlex.quote`.

>>> from k3lib.core.plan import make_plan
>>> from k3lib.studies.checklist import checklist_assumptions
>>> p = make_plan(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", kv_dtype="fp8", context="256K",
...               assumptions=checklist_assumptions())
>>> vllm_command(p).value("--gpu-memory-utilization")
'0.88'
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass

from k3lib.core.architecture import Architecture
from k3lib.core.checkpoints import checkpoints_for, resolve_weights
from k3lib.core.errors import K3InputError
from k3lib.core.memory import weights_bytes, weights_bytes_by_group
from k3lib.core.models import PublishedProfile
from k3lib.core.plan import Plan
from k3lib.core.precisions import get_weight_format
from k3lib.core.units import GiB

#: Hugging Face repositories of built-in models (the models' Hugging Face pages; Kimi K3: guide 004).
HF_REPOS = {
    "kimi-k3": "moonshotai/Kimi-K3",
    "kimi-k2": "moonshotai/Kimi-K2-Instruct",
    "kimi-linear-48b": "moonshotai/Kimi-Linear-48B-A3B-Instruct",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Llama-3.1-405B",
    "llama-4-scout": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "llama-4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3-235b-a22b-fp8": "Qwen/Qwen3-235B-A22B-FP8",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-next-80b": "Qwen/Qwen3-Next-80B-A3B-Instruct",
    "qwen2.5-72b": "Qwen/Qwen2.5-72B-Instruct",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "mistral-7b-v0.3": "mistralai/Mistral-7B-v0.3",
    "gemma-3-27b": "google/gemma-3-27b-it",
}
#: GGUF repositories (guide 004: ``llama-server -hf unsloth/Kimi-K3-GGUF:Q4_K_M``).
GGUF_REPOS = {"kimi-k3": "unsloth/Kimi-K3-GGUF"}
#: k3lib weight format → GGUF quant tag (the guides' Q8/Q4/Q2 tiers read as Q8_0/Q4_K_M/Q2_K).
GGUF_TAGS = {
    "bf16": "BF16",
    "q8": "Q8_0",
    "q8_0": "Q8_0",
    "q6_k": "Q6_K",
    "q5_k_m": "Q5_K_M",
    "q4": "Q4_K_M",
    "q4_k_m": "Q4_K_M",
    "q3_k_m": "Q3_K_M",
    "q2": "Q2_K",
    "q2_k": "Q2_K",
    "iq1_s": "IQ1_S",
}
#: vLLM ``--kv-cache-dtype`` per k3lib KV dtype ("auto" = the model dtype, BF16).
VLLM_KV_DTYPES = {"bf16": "auto", "fp8": "fp8"}
#: llama.cpp ``--cache-type-k/-v`` per k3lib KV dtype; llama.cpp has no FP8 cache, q8_0 is nearest.
LLAMA_CACHE_TYPES = {"bf16": "f16", "fp8": "q8_0", "q8_0": "q8_0", "int4": "q4_0", "q4_0": "q4_0"}
#: llama.cpp's own ``--cpu-moe`` pattern: every routed-expert tensor to CPU.
EXPERT_REGEX = r"\.ffn_(up|down|gate)_exps=CPU"
#: ``--gpu-memory-utilization`` is clipped to this range (vLLM's default is 0.9).
UTILIZATION_RANGE = (0.50, 0.95)


@dataclass(frozen=True)
class Command:
    """A command line as argv, with one explanation per flag and notes."""

    engine: str
    argv: tuple[str, ...]
    explanations: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """Shell text, one flag per line (``\\`` continuations), every token quoted as needed."""
        q = [shlex.quote(t) for t in self.argv]
        if len(" ".join(q)) <= 60:
            return " ".join(q)
        lines: list[str] = []
        cur: list[str] = []
        for raw, tok in zip(self.argv, q):
            if raw.startswith("-") and cur and (lines or len(cur) > 1):  # a program alone keeps its first flag
                lines.append(" ".join(cur))
                cur = []
            cur.append(tok)
        lines.append(" ".join(cur))
        return " \\\n  ".join(lines)

    def value(self, flag: str) -> str | None:
        """The token after ``flag`` (None if the flag is absent or has no value)."""
        if flag not in self.argv:
            return None
        i = self.argv.index(flag)
        nxt = self.argv[i + 1] if i + 1 < len(self.argv) else None
        return None if nxt is None or nxt.startswith("--") else nxt

    def has(self, flag: str) -> bool:
        return flag in self.argv

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle) -> None:  # IPython: a cell ending in a Command shows its text
        p.text(self.text + "".join(f"\n# note: {n}" for n in self.notes))


@dataclass(frozen=True)
class Utilization:
    """``--gpu-memory-utilization`` for a plan, and why."""

    value: float
    needed_fraction: float
    capacity_bytes: int
    clipped: bool
    reason: str


def gpu_memory_utilization(
    plan: Plan, *, low: float = UTILIZATION_RANGE[0], high: float = UTILIZATION_RANGE[1]
) -> Utilization:
    """$u = \\lceil 100·(W + KV + A + O)_{gpu} / C_{usable} \\rceil / 100$, clipped to [``low``, ``high``].

    vLLM gives itself $u·C$ of each GPU (what torch sees: 79.19 GiB on an "80GB" H100)
    for weights, the activation peak, non-torch memory (CUDA context, NCCL buffers),
    CUDA graphs and the KV pool. The plan's per-GPU overhead is the margin that covers
    the middle three. Below ``low`` more memory only buys KV blocks (more concurrent
    sequences), so ``low`` is used; above ``high`` nothing is left outside the engine.
    """
    if not 0 < low < high <= 1:
        raise K3InputError("gpu_memory_utilization", f"range [{low}, {high}] is not inside (0, 1]")
    cap = plan.gpu.memory_bytes("usable")
    pg = plan.per_gpu
    need = pg.total_bytes / cap
    u = math.ceil(round(need * 100, 6)) / 100
    clipped = not low <= u <= high
    value = min(max(u, low), high)
    parts = (
        f"(weights {pg.weights_bytes / GiB:.1f} + KV {pg.kv_cache_bytes / GiB:.1f} + activation "
        f"{pg.activation_bytes / GiB:.1f} + overhead margin {pg.overhead_bytes / GiB:.1f} GiB) ÷ "
        f"{cap / GiB:.2f} GiB = {need:.3f}"
    )
    if u > high:
        reason = (
            f"{parts}: more than {high:.2f} of each GPU, so it is clipped to {high:.2f} and this "
            f"max_model_len will not fit — shorten it or add GPUs."
        )
    elif u < low:
        reason = f"{parts}; raised to {low:.2f}, the extra only becomes KV blocks for more concurrent sequences."
    else:
        reason = f"{parts}, rounded up to {value:.2f}; the rest of each GPU stays outside the engine."
    return Utilization(value, need, cap, clipped, reason)


def base_model_id(plan: Plan) -> str:
    """The architecture id a plan's model stands for (``kimi-k3@guide-000`` → ``kimi-k3``)."""
    return plan.model.id.split("@", 1)[0]


def _checkpoint(plan: Plan, engine: str):
    """The published checkpoint a plan's weights name for ``engine``, or None."""
    return next((c for c in checkpoints_for(plan.model, engine) if c.id == plan.weight_format and c.repo), None)


def _repo(plan: Plan, hf_repo: str | None) -> str:
    if hf_repo is not None:
        if not isinstance(hf_repo, str) or not hf_repo.strip():
            raise K3InputError("hf_repo", f"{hf_repo!r} is not a repository name", "e.g. moonshotai/Kimi-K3")
        return hf_repo.strip()
    ckpt = _checkpoint(plan, "vllm")
    if ckpt is not None:
        return ckpt.repo
    base = base_model_id(plan)
    if base not in HF_REPOS:
        raise K3InputError("hf_repo", f"no known Hugging Face repository for {plan.model.id}; pass one", "owner/name")
    return HF_REPOS[base]


def vllm_command(
    plan: Plan,
    *,
    hf_repo: str | None = None,
    gpu_memory_utilization_value: float | None = None,
    trust_remote_code: bool | None = None,
) -> Command:
    """``vllm serve`` for a plan. KV dtypes other than BF16/FP8 raise (vLLM has none).

    >>> from k3lib.core.plan import make_plan
    >>> p = make_plan(model="kimi-k3", gpu="h200", gpus=16, nodes=2, context="256K")
    >>> print(vllm_command(p).text)        # doctest: +NORMALIZE_WHITESPACE
    vllm serve moonshotai/Kimi-K3 \\
      --tensor-parallel-size 8 \\
      --pipeline-parallel-size 2 \\
      --max-model-len 262144 \\
      --kv-cache-dtype auto \\
      --gpu-memory-utilization 0.77 \\
      --max-num-seqs 1 \\
      --trust-remote-code \\
      --distributed-executor-backend ray
    """
    if plan.kv_dtype not in VLLM_KV_DTYPES:
        raise K3InputError("kv_dtype", f"vLLM has no {plan.kv_dtype} KV cache", ", ".join(VLLM_KV_DTYPES))
    if isinstance(plan.model, Architecture) and hf_repo is None:
        loadable = [c.id for c in checkpoints_for(plan.model, "vllm")]
        native_bf16 = set(plan.model.native_formats.values()) <= {"bf16"}
        if plan.weight_format not in loadable and not (native_bf16 and plan.weight_format in ("bf16", "fp8")):
            raise K3InputError(
                "weights",
                f"no {plan.weight_format} checkpoint of {plan.model.name} that vLLM can "
                "load is known (pass --hf-repo for one you have)",
                ", ".join(loadable),
            )
    _require_engine(plan, "vllm")
    repo = _repo(plan, hf_repo)
    settings = dict(plan.engine.settings) if plan.engine is not None else {}
    if settings and gpu_memory_utilization_value is None:  # exactly what the plan was computed with
        u = float(settings["gpu_memory_utilization"])
        util = Utilization(
            u,
            plan.per_gpu.total_bytes / plan.gpu.memory_bytes("usable"),
            plan.gpu.memory_bytes("usable"),
            False,
            f"{u:.2f}: the setting the plan's vLLM figures were computed with",
        )
    else:
        util = gpu_memory_utilization(plan)
        u = util.value if gpu_memory_utilization_value is None else float(gpu_memory_utilization_value)
    if not 0 < u <= 1:
        raise K3InputError("gpu_memory_utilization", f"{u!r} must be in (0, 1]")
    max_seqs = int(settings.get("max_num_seqs", plan.batch))
    base = base_model_id(plan)
    trc = base.startswith("kimi") if trust_remote_code is None else bool(trust_remote_code)
    argv = [
        "vllm",
        "serve",
        repo,
        "--tensor-parallel-size",
        str(plan.tp),
        "--pipeline-parallel-size",
        str(plan.pp),
        "--max-model-len",
        str(plan.context_tokens),
        "--kv-cache-dtype",
        VLLM_KV_DTYPES[plan.kv_dtype],
        "--gpu-memory-utilization",
        f"{u:.2f}" if round(u, 2) == u or not settings else f"{u:g}",
        "--max-num-seqs",
        str(max_seqs),
    ]
    expl = [
        (repo, "the checkpoint vLLM downloads and serves"),
        ("--tensor-parallel-size", f"TP={plan.tp}: each layer's weights split {plan.tp} ways inside a node"),
        ("--pipeline-parallel-size", f"PP={plan.pp}: {plan.pp} stage(s) of consecutive layers"),
        ("--max-model-len", f"{plan.context_tokens:,} tokens: the plan's context; the KV pool must hold it"),
        ("--kv-cache-dtype", f"{VLLM_KV_DTYPES[plan.kv_dtype]}: the plan's {plan.kv_dtype} KV cache"),
        (
            "--gpu-memory-utilization",
            util.reason if gpu_memory_utilization_value is None else f"{u:.2f}, given by the caller",
        ),
        (
            "--max-num-seqs",
            f"{max_seqs}: "
            + (
                "the setting the plan's vLLM figures were computed with (vLLM sizes "
                "its sampler's profiling batch by it)"
                if settings
                else "the plan's batch (concurrent sequences)"
            ),
        ),
    ]
    notes = []
    if settings.get("cpu_offload_gb"):
        argv += ["--cpu-offload-gb", f"{float(settings['cpu_offload_gb']):g}"]
        expl.append(
            (
                "--cpu-offload-gb",
                f"{float(settings['cpu_offload_gb']):g} GiB of weights per GPU in CPU memory, "
                "as planned (streamed over the host link every step)",
            )
        )
    if trc:
        argv.append("--trust-remote-code")
        expl.append(("--trust-remote-code", "Kimi checkpoints ship their own model code"))
    if plan.nodes > 1:
        argv += ["--distributed-executor-backend", "ray"]
        expl.append(("--distributed-executor-backend", f"ray: the stages span {plan.nodes} nodes"))
        notes.append(
            f"start a Ray cluster over the {plan.nodes} nodes first (ray start --head on one, "
            f"ray start --address=<head>:6379 on the others), then run this on the head node"
        )
    w = plan.weight_format
    native_bf16 = isinstance(plan.model, Architecture) and set(plan.model.native_formats.values()) <= {"bf16"}
    if (
        hf_repo is None
        and w not in ("native",)
        and _checkpoint(plan, "vllm") is None
        and not (w == "bf16" and (native_bf16 or isinstance(plan.model, PublishedProfile)))
    ):
        if w == "fp8" and native_bf16:
            argv += ["--quantization", "fp8"]
            expl.append(("--quantization", "fp8: vLLM quantizes the BF16 checkpoint to FP8 while loading"))
        else:
            notes.append(
                f"{repo} holds the native weights; the plan assumes {w}: pass the repository of a "
                f"{w} checkpoint vLLM can load (AWQ/GPTQ for 4-bit, FP8 for 8-bit)"
            )
    if not plan.fits:
        notes.append("the plan does not fit: vLLM will refuse this max_model_len — " + plan.reason)
    per_node = plan.gpu.gpus_per_node
    if plan.gpus // plan.nodes > per_node:
        notes.append(
            f"{plan.gpus // plan.nodes} GPUs in one node: a {plan.gpu.id} node holds {per_node}; "
            f"spread them over nodes and plan with that node count"
        )
    return Command("vllm", tuple(argv), tuple(expl), tuple(notes))


def _require_engine(plan: Plan, engine: str) -> None:
    """A plan for one engine launches on that engine only: its figures are that engine's."""
    if plan.engine is not None and plan.engine.engine != engine:
        raise K3InputError(
            "engine",
            f"the plan was computed for {plan.engine.name}; a {engine} command would not carry its settings",
            f"plan for --engine {engine}",
        )


def sglang_command(plan: Plan, *, hf_repo: str | None = None) -> Command:
    """``python -m sglang.launch_server`` for a plan for SGLang, with the settings it was computed with.

    >>> from k3lib.engines.deployment import plan_for_engine
    >>> p = plan_for_engine(model="llama-3.1-8b", engine="sglang", gpu="h100", gpus=1, context="32K")
    >>> sglang_command(p).value("--mem-fraction-static")
    '0.834'
    """
    _require_engine(plan, "sglang")
    if plan.kv_dtype not in VLLM_KV_DTYPES:
        raise K3InputError("kv_dtype", f"SGLang has no {plan.kv_dtype} KV cache", ", ".join(VLLM_KV_DTYPES))
    repo = _repo(plan, hf_repo)
    settings = dict(plan.engine.settings) if plan.engine is not None else {}
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        repo,
        "--tp-size",
        str(plan.tp),
        "--pp-size",
        str(plan.pp),
        "--context-length",
        str(plan.context_tokens),
        "--kv-cache-dtype",
        VLLM_KV_DTYPES[plan.kv_dtype],
    ]
    expl = [
        ("--model-path", f"{repo}: the checkpoint SGLang serves"),
        ("--tp-size", f"TP={plan.tp}"),
        ("--pp-size", f"PP={plan.pp}"),
        ("--context-length", f"{plan.context_tokens:,} tokens: the plan's context"),
        ("--kv-cache-dtype", f"{VLLM_KV_DTYPES[plan.kv_dtype]}: the plan's {plan.kv_dtype} KV cache"),
    ]
    if "mem_fraction_static" in settings:
        argv += ["--mem-fraction-static", f"{float(settings['mem_fraction_static']):g}"]
        expl.append(("--mem-fraction-static", "the fraction the plan's SGLang figures were computed with"))
    notes = [] if plan.fits else ["the plan does not fit: " + plan.reason]
    if base_model_id(plan).startswith("kimi"):
        argv.append("--trust-remote-code")
    if plan.nodes > 1:
        notes.append(f"multi-node: add --nnodes {plan.nodes} --node-rank R --dist-init-addr <head>:5000 on each node")
    return Command("sglang", tuple(argv), tuple(expl), tuple(notes))


def cpu_moe_layers(plan: Plan) -> int | None:
    """MoE layers whose experts must move to CPU (``--n-cpu-moe N``) for the plan to fit:
    $N = \\lceil \\text{overflow} / (E_{routed}/L_{moe}) \\rceil$, 0 when it already fits, None
    when the model has no per-layer experts (a profile, a dense model) or even all of them
    are not enough. An estimate: llama.cpp takes layers from the front, so the saving
    lands on the first GPU; rebalance with ``--tensor-split``.
    """
    if plan.fits:
        return 0
    spec = plan.model
    if not isinstance(spec, Architecture) or not spec.mlp.moe_layers:
        return None
    fmt, published, _ = resolve_weights(spec, plan.weight_format)
    scale = published / weights_bytes(spec, fmt) if published else 1.0
    per_layer = weights_bytes_by_group(spec, fmt)["routed_experts"] * scale / spec.mlp.moe_layers
    over = -plan.per_gpu.headroom_bytes * plan.gpus
    n = math.ceil(over / per_layer)
    return n if n <= spec.mlp.moe_layers else None


def _bits(weights: str) -> float:
    """Bits per weight of a format id; ``native`` counts as 16 (a BF16-class checkpoint)."""
    fmt = get_weight_format(weights)
    return 16.0 if fmt.bits_per_weight is None else fmt.bits_per_weight


def _nominal_bits(quant: str) -> float:
    """The bit width a GGUF quant name states (``ud-q4_k_xl`` → 4, ``ud-iq1_s`` → 1)."""
    m = re.search(r"q(\d+)", quant.lower())
    return float(m.group(1)) if m else 16.0


def _gguf_ref(plan: Plan, gguf: str | None) -> tuple[str, list[str]]:
    notes: list[str] = []
    if gguf is not None:
        if not isinstance(gguf, str) or not gguf.strip():
            raise K3InputError("gguf", f"{gguf!r} is not a GGUF reference", "repo:QUANT or a .gguf path")
        return gguf.strip(), notes
    ckpt = _checkpoint(plan, "llama.cpp")
    if ckpt is not None:
        return f"{ckpt.repo}:{ckpt.id.upper()}", notes
    base = base_model_id(plan)
    published = [c for c in checkpoints_for(base, "llama.cpp") if c.file_bytes]
    if published:  # the nearest published file: no other GGUF of this model exists
        near = min(
            published, key=lambda c: (abs(_nominal_bits(c.id) - _bits(plan.weight_format)), -(c.file_bytes or 0))
        )
        notes.append(
            f"no {plan.weight_format} GGUF of {base} is published; the nearest published file is "
            f"{near.id.upper()} ({(near.file_bytes or 0) / 1e9:,.1f} GB, {near.repo}) — plan with "
            f"--weights {near.id} for its exact size"
        )
        return f"{near.repo}:{near.id.upper()}", notes
    repo = GGUF_REPOS.get(base)
    tag = GGUF_TAGS.get(plan.weight_format)
    if repo is None or tag is None:
        raise K3InputError(
            "gguf",
            f"no known GGUF repository for {plan.model.id} at {plan.weight_format}; pass one",
            "repo:QUANT or a .gguf path",
        )
    return f"{repo}:{tag}", notes


def llama_server_command(
    plan: Plan,
    *,
    gguf: str | None = None,
    model_path: str | None = None,
    n_cpu_moe: int | None = None,
    offload_all_experts: bool = False,
) -> Command:
    """``llama-server`` for a plan: ``-hf repo:QUANT`` (or ``-m file``), ``-c`` = context ×
    batch (llama.cpp shares ``-c`` among ``-np`` slots), ``-ngl 999`` (every layer on GPU),
    ``--cache-type-k/-v``; ``--n-cpu-moe N`` or ``-ot '<expert regex>=CPU'`` for offload.

    >>> from k3lib.core.plan import make_plan
    >>> p = make_plan(model="kimi-k3@guide-000", gpu="h100", gpus=6, weights="q4", kv_dtype="fp8", context="256K")
    >>> llama_server_command(p).argv[:3]
    ('llama-server', '-hf', 'unsloth/Kimi-K3-GGUF:UD-Q4_K_XL')
    """
    _require_engine(plan, "llama.cpp")
    if plan.kv_dtype not in LLAMA_CACHE_TYPES:
        raise K3InputError("kv_dtype", f"llama.cpp has no {plan.kv_dtype} cache", ", ".join(LLAMA_CACHE_TYPES))
    settings = dict(plan.engine.settings) if plan.engine is not None else {}
    if n_cpu_moe is not None and offload_all_experts:
        raise K3InputError("offload", "give --n-cpu-moe or all experts to CPU, not both")
    if model_path is not None:
        if not isinstance(model_path, str) or not model_path.strip():
            raise K3InputError("model_path", f"{model_path!r} is not a file path")
        src, notes = ["-m", model_path.strip()], list[str]()
        src_why = ("-m", "the local GGUF file (first shard of a split file)")
    else:
        ref, notes = _gguf_ref(plan, gguf)
        src = ["-hf", ref]
        src_why = ("-hf", f"{ref}: llama.cpp downloads the GGUF from Hugging Face")
    cache = LLAMA_CACHE_TYPES[plan.kv_dtype]
    # the cache types the verdict used (--cache-type-k/-v apart when the plan set them)
    type_k = str(settings.get("type_k") or cache)
    type_v = str(settings.get("type_v") or cache)
    ctx = plan.context_tokens * plan.batch
    ngl = int(settings.get("n_gpu_layers", -1))
    argv = [
        "llama-server",
        *src,
        "-c",
        str(ctx),
        "-np",
        str(plan.batch),
        "-ngl",
        "999" if ngl < 0 else str(ngl),
        "--cache-type-k",
        type_k,
        "--cache-type-v",
        type_v,
    ]
    expl = [
        src_why,
        ("-c", f"{ctx:,} tokens = context {plan.context_tokens:,} × {plan.batch} slot(s)"),
        ("-np", f"{plan.batch} parallel slot(s): the plan's batch"),
        (
            "-ngl",
            "999 = every layer on the GPUs"
            if ngl < 0
            else f"{ngl}: the last {max(ngl - 1, 0)} layers and the output head on the GPUs, as planned",
        ),
        (
            "--cache-type-k",
            (
                f"{type_k}: the plan's K cache type"
                if type_k != cache
                else f"{cache}: the plan's {plan.kv_dtype} KV"
                + (" (llama.cpp has no FP8 cache; q8_0 is 1.0625 B per element)" if plan.kv_dtype == "fp8" else "")
            ),
        ),
        (
            "--cache-type-v",
            f"{type_v}, the same for values" if type_v == type_k else f"{type_v}: the plan's V cache type",
        ),
    ]
    fa = settings.get("flash_attn", True)
    quant_v = type_v not in ("f16", "f32", "bf16")
    if quant_v and fa is False:
        raise K3InputError(
            "flash_attn", "llama.cpp needs flash attention for a quantized V cache", "on, or an f16 cache"
        )
    if settings or type_k != "f16" or type_v != "f16":
        fa_text = "auto" if fa == "auto" else "on" if fa else "off"
        argv += ["--flash-attn", fa_text]
        expl.append(
            (
                "--flash-attn",
                fa_text + (": llama.cpp needs flash attention for a quantized V cache" if quant_v else ": as planned"),
            )
        )
    if settings.get("swa_full"):
        argv += ["--swa-full"]
        expl.append(("--swa-full", "sliding-window layers keep the whole context, as planned"))
    if settings.get("kv_unified"):
        argv += ["--kv-unified"]
        expl.append(("--kv-unified", f"one KV stream shared by the {plan.batch} slot(s), as planned"))
    if settings.get("n_rs_seq"):
        notes.append(
            f"n_rs_seq {settings['n_rs_seq']} (recurrent snapshots) has no llama-server flag of its own: "
            "llama-server sets it to the draft's n_max under speculative decoding (--spec-draft-n-max); "
            "the plan counts them for the families that keep them"
        )
    ub = int(settings.get("n_ubatch", 512))
    if ub != 512:
        argv += ["-ub", str(ub)]
        expl.append(("-ub", f"{ub}: the physical batch the compute buffer was sized for"))
    for pat in settings.get("override_tensor", ()):
        argv += ["-ot", f"{pat}=CPU"]
        expl.append(("-ot", f"{pat}=CPU: tensors matching it stay in system RAM, as planned"))
    if plan.gpus > 1:
        argv += ["--split-mode", "layer"]
        expl.append(("--split-mode", f"layer: whole layers per GPU over the {plan.gpus} visible GPUs"))
    if n_cpu_moe is not None:
        n = int(n_cpu_moe)
        if n < 0:
            raise K3InputError("n_cpu_moe", f"{n_cpu_moe!r} must be ≥ 0")
        argv += ["--n-cpu-moe", str(n)]
        expl.append(("--n-cpu-moe", f"{n}: the routed experts of the first {n} MoE layers stay in CPU RAM"))
    elif offload_all_experts:
        argv += ["-ot", EXPERT_REGEX]
        expl.append(("-ot", "every routed-expert tensor to CPU RAM; attention, shared experts and KV stay on GPU"))
    elif not plan.fits:
        n_cpu = cpu_moe_layers(plan)
        hint = f"--n-cpu-moe {n_cpu}" if n_cpu else f"-ot {shlex.quote(EXPERT_REGEX)}"
        notes.append(f"the plan does not fit in VRAM; offload experts ({hint}) or add GPUs")
    if plan.nodes > 1:
        notes.append(
            f"llama.cpp reaches GPUs on other nodes through rpc-server and --rpc host:port; "
            f"expect the network to bound speed across {plan.nodes} nodes"
        )
    return Command("llama.cpp", tuple(argv), tuple(expl), tuple(notes))


def topology_command(plan: Plan | None = None) -> Command:
    """``nvidia-smi topo -m`` (``rocm-smi --showtopo`` on AMD): check the GPU links (guide step 6)."""
    if plan is not None and plan.gpu.vendor.upper() == "AMD":
        return Command(
            "rocm-smi",
            ("rocm-smi", "--showtopo"),
            (("--showtopo", "XGMI between every pair = Infinity Fabric; PCIE = the slow path"),),
        )
    return Command(
        "nvidia-smi",
        ("nvidia-smi", "topo", "-m"),
        (
            (
                "-m",
                "the GPU-to-GPU matrix: NV# = NVLink; PIX/PXB/PHB/NODE/SYS = PCIe or CPU hops, "
                "where tensor-parallel all-reduces crawl",
            ),
        ),
    )


def commands_for(
    plan: Plan, *, hf_repo: str | None = None, gguf: str | None = None, model_path: str | None = None
) -> dict[str, Command]:
    """The commands for a plan: for a plan for an engine, that engine's command (with the
    settings the plan was computed with) and the topology check; otherwise vLLM's and
    llama.cpp's, leaving out an engine that cannot express the plan (a KV dtype it lacks, no
    known repository). Names the user gave are validated first; ``model_path``: the user's
    GGUF file (``-m``)."""
    if hf_repo is not None:
        _repo(plan, hf_repo)
    if gguf is not None:
        _gguf_ref(plan, gguf)
    out: dict[str, Command] = {}
    makers = {
        "vllm": lambda: vllm_command(plan, hf_repo=hf_repo),
        "sglang": lambda: sglang_command(plan, hf_repo=hf_repo),
        "llama.cpp": lambda: llama_server_command(plan, gguf=gguf, model_path=model_path),
    }
    if plan.engine is not None:  # a plan for an engine launches on that engine, with its settings
        if plan.engine.engine in makers:
            out[plan.engine.engine] = makers[plan.engine.engine]()
        out["topology"] = topology_command(plan)
        return out
    for name in ("vllm", "llama.cpp"):
        try:
            out[name] = makers[name]()
        except K3InputError:
            continue
    out["topology"] = topology_command(plan)
    return out
