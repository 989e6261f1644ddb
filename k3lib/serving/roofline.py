"""The step-time model: decode is a roofline over the bytes and FLOPs of one step, prefill
over the FLOPs of the prompt, both plus communication and a fixed per-layer cost.

**Decode** (one step advances every running sequence by one token). On the binding GPU of
a pipeline stage, for $b$ sequences at context $T$:

$$t_{stage} = \\max\\left(\\frac{W_{dense} + R·(1-(1-k/E)^b) + KV_{rank}(T, b)}{η_{bw}·BW},
             \\frac{F_1}{η_c·F}\\right) + (b - 1)\\frac{F_1}{η_{cd}·F} + t_{TP} + t_{EP} + L_{stage}·τ,
  \\qquad F_1 = (2·P_{active} + A(T))/(TP·PP)$$

* $W_{dense}$: the non-expert weights the GPU holds (read once per step; the token
  embedding is a lookup of $b$ rows and is left out, a tied embedding is read as the LM head);
  $R$ the routed-expert bytes it holds, of which the batch touches the share of
  :func:`k3lib.serving.experts.fraction_of_experts_touched`; $KV_{rank}$ the KV cache of
  $b$ sequences at context $T$ on this GPU (:func:`k3lib.core.memory.kv_bytes_per_rank`:
  GQA heads split by TP, MLA latent replicated, sliding windows capped, linear-attention state);
* $P_{active}$ the parameters a token touches (:attr:`Architecture.params_active`), $A(T)$ the
  attention FLOPs of one token at context $T$ (:func:`attention_flops_per_token`);
* $F_1$ one sequence's FLOPs: its matrix-vector products hide under the weight stream, each
  further sequence adds its share of the step's skinny matrix products at $η_{cd}$, the decode
  step's achieved share of peak FLOP/s (:meth:`StepTerms.seconds`);
* $t_{TP}$, $t_{EP}$: :mod:`k3lib.serving.comm`; $τ$ the per-layer launch cost; $η_{bw}$, $η_c$, $η_{cd}$, $τ$
  are fitted per engine × hardware class (:mod:`k3lib.serving.calibration`); the **ceiling**
  (:data:`CEILING`) is $η = 1$, $τ = 0$ and no communication.

Pipeline parallelism: one token crosses the $PP$ stages in sequence. An engine that keeps
$m = \\min(PP, b)$ micro-batches in flight (vLLM, SGLang) advances every sequence once per
$PP·t_{stage}(\\lceil b/m \\rceil)$ (+ hand-offs); llama.cpp's layer split keeps one ($m = 1$),
so a step costs $PP·t_{stage}(b)$ — the stages' bytes read one after another, the bubble
$1 - m/PP$ of each GPU's time idle.

**Prefill** of $n$ prompts of $I$ tokens runs in chunks of the engine's token budget $C$
(vLLM/SGLang chunked prefill 8,192; llama.cpp its micro-batch ``n_ubatch`` 512):
$N = \\lceil nI/C \\rceil$ chunks, each

$$t_{chunk} = \\max\\left(\\frac{W_{dense} + R·(1-(1-k/E)^{nI/N})}{η_{bw}·BW},
              \\frac{F_{prefill}/N}{η_c·F}\\right) + t_{TP} + t_{EP} + L_{stage}·τ,\\qquad
F_{prefill} = n·(2·P_{active}·I + I·A(I/2))/(TP·PP)$$

($A(I/2)·I$ is the causal attention's quadratic term: token $t$ attends to $t$ earlier ones,
$I/2$ on average), and the $PP$ stages of a chunk run in sequence: $t = N·PP·t_{chunk}$.
KV reads during prefill are left out (the chunk's attention runs from on-chip tiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from k3lib.core.architecture import Architecture
from k3lib.core.checkpoints import resolve_weights
from k3lib.core.errors import K3InputError
from k3lib.core.hosts import HostSpec, get_host
from k3lib.core.kinds import kind_of
from k3lib.core.layout import pipeline_stages
from k3lib.core.memory import (
    DEFAULT_PREFILL_CHUNK_TOKENS,
    kv_bytes_per_rank,
    params_per_rank_by_group,
    weight_bits_by_group,
)
from k3lib.core.models import get_model
from k3lib.core.precisions import get_kv_dtype, get_weight_format
from k3lib.serving.comm import Link, ep_comm_seconds, group_link, pp_handoff_seconds, tp_comm_seconds
from k3lib.serving.experts import routed_bytes_read_per_step
from k3lib.serving.hardware import FP8_COMPUTE_ENGINES, cpu_peak_flops, hardware_class, peak_flops

#: the engines people serve with, and the memory profile k3lib plans each with (an engine
#: without its own profile is planned with the closest one, named)
MEMORY_PROFILE = {
    "vllm": "vllm",
    "sglang": "sglang",
    "trtllm": "vllm",
    "llama.cpp": "llama.cpp",
    "ik_llama.cpp": "llama.cpp",
    "ollama": "llama.cpp",
    "ktransformers": "llama.cpp",
}
SERVING_ENGINES = tuple(MEMORY_PROFILE)
#: engines that split layers over GPUs without keeping several micro-batches in flight
LAYER_SPLIT_ENGINES = ("llama.cpp", "ik_llama.cpp", "ollama", "ktransformers")
#: llama.cpp's default physical micro-batch (``-ub``/``n_ubatch``: common/common.h ``n_ubatch = 512``)
LLAMACPP_UBATCH_TOKENS = 512


def serving_engine(engine: str) -> str:
    """An engine id of :data:`SERVING_ENGINES` from a spelling (``TensorRT-LLM``, ``ik-llama.cpp``, ``llamacpp``).

    >>> serving_engine("TensorRT-LLM"), serving_engine("llamacpp"), serving_engine("ik-llama.cpp")
    ('trtllm', 'llama.cpp', 'ik_llama.cpp')
    """
    key = str(engine).strip().lower().replace("-", "").replace("_", "").replace(".", "")
    aliases = {
        "tensorrtllm": "trtllm",
        "trtllm": "trtllm",
        "llamacpp": "llama.cpp",
        "gguf": "llama.cpp",
        "ikllamacpp": "ik_llama.cpp",
        "vllm": "vllm",
        "sglang": "sglang",
        "ollama": "ollama",
        "ktransformers": "ktransformers",
    }
    if key not in aliases:
        raise K3InputError("engine", f"{engine!r} is not a serving engine", ", ".join(SERVING_ENGINES))
    return aliases[key]


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of the hardware: $η_{bw}$ of the memory bandwidth, $η_c$ of the peak
    FLOP/s in prefill, $τ$ seconds of fixed cost per layer per pass (kernel launches, scheduling),
    and $η_{cd}$ of the peak FLOP/s in a decode step. A decode step multiplies matrices only $b$
    rows tall (one per sequence), which kernels run far below the peak a prefill's thousands of
    rows reach; $η_{cd}$ = None takes $η_c$. ``communication``: whether the collectives' time is
    added (off for the ceiling). Fields may be numpy arrays (a grid of candidates in the fit)."""

    eta_bw: Any = 1.0
    eta_compute: Any = 1.0
    layer_overhead_s: Any = 0.0
    communication: bool = True
    eta_decode_compute: Any = None

    @property
    def decode_compute(self) -> Any:
        """$η_{cd}$, or $η_c$ when it is not set."""
        return self.eta_compute if self.eta_decode_compute is None else self.eta_decode_compute


#: the theoretical ceiling: all of the bandwidth and compute, no overheads, no communication
CEILING = Efficiency(1.0, 1.0, 0.0, communication=False)


@dataclass(frozen=True)
class StageBytes:
    """One GPU of one pipeline stage: the bytes a step reads besides KV, and its layers."""

    stage: Architecture = field(repr=False)
    dense_bytes: float
    routed_bytes: float
    layers: int
    moe_layers: int


@dataclass(frozen=True)
class ServingInputs:
    """What the step-time model reads from a plan (or a CPU host): per-GPU bytes by stage,
    the model's shapes, the layout, and the device's bandwidth, compute and link."""

    engine: str
    hardware_class: str
    device: str
    gpus: int
    tp: int
    pp: int
    dp: int
    ep: int
    nodes: int
    stages: tuple[StageBytes, ...]
    model: Architecture = field(repr=False)
    kv_bytes_per_element: float
    state_bytes_per_element: float
    memory_bw_bytes_per_s: float
    peak_flops: float | None
    link: Link
    pp_link: Link
    prefill_chunk_tokens: int
    notes: tuple[str, ...] = ()
    #: partial offload as the row states it (llama.cpp ``-ngl N`` / ``-ot exps=CPU``, KTransformers'
    #: CPU experts): bytes per GPU-stage kept in host RAM — dense (read whole each pass) and routed
    #: (the touched share) — the host's bandwidth, its link to the GPU (PCIe) and its FLOP/s
    host_dense_bytes: float = 0.0
    host_routed_bytes: float = 0.0
    host_bw_bytes_per_s: float = 0.0
    host_link_bytes_per_s: float = 0.0
    host_flops: float = 0.0

    @property
    def pipelined(self) -> bool:
        """Whether the engine keeps several micro-batches in flight across pipeline stages."""
        return self.engine not in LAYER_SPLIT_ENGINES


def attention_flops_per_token(arch: Architecture, context_tokens: float) -> float:
    """FLOPs of one token's attention over ``context_tokens`` earlier tokens, summed over layers:
    GQA/sliding $2·N_q·(H + H_v)·\\min(T, W)$ per layer (scores and the weighted sum, 2 FLOPs per
    multiply-add); MLA (absorbed, over the latent) $2·N_q·(2r_{kv} + d_{rope})·T$; linear attention
    a constant $4·N_v·d_k·d_v$ (the state update and read).

    >>> m = get_model("llama-3.1-8b")
    >>> attention_flops_per_token(m, 1000) == 32 * 2 * 32 * 256 * 1000      # 2·2·L·N_q·d·T
    True
    """
    total = 0.0
    for g in arch.attention:
        total += g.count * kind_of(g).attention_flops_per_token(g, context_tokens)
    return total


def _bits(arch: Architecture, weight_format: str) -> dict[str, float]:
    try:
        fmt = resolve_weights(arch, weight_format)[0]
    except (K3InputError, ValueError):
        fmt = get_weight_format("native")
    return weight_bits_by_group(arch, fmt)


def _fp8_compute(arch: Architecture, weight_format: str) -> bool:
    bits = _bits(arch, weight_format)
    try:
        fmt = resolve_weights(arch, weight_format)[0]
    except (K3InputError, ValueError):
        return False
    if fmt.is_native:
        formats = {str(f).lower() for f in arch.native_formats.values()}
        return any("fp8" in f for f in formats)
    return "fp8" in fmt.id and max(bits.values()) <= 8


def stage_bytes(
    arch: Architecture,
    weight_format: str,
    *,
    tp: int,
    pp: int,
    ep: int,
    share_weights_bytes: tuple[int, ...] | None = None,
) -> tuple[StageBytes, ...]:
    """Per stage, one GPU's dense and routed bytes by the plan's own sharding rule
    (:func:`k3lib.core.memory.params_per_rank_by_group` × :func:`weight_bits_by_group`); when the
    plan's per-GPU weight bytes per stage are given (exact checkpoint or GGUF bytes), each stage is
    rescaled to them."""
    bits = _bits(arch, weight_format)

    def bit(g: str) -> float:
        return bits.get(g, bits.get("*", 16))

    out = []
    stages = pipeline_stages(arch, pp)
    for s, st in enumerate(stages):
        first, last = s == 0, s == pp - 1
        groups = params_per_rank_by_group(arch, st, tp=tp, first=first, last=last, pp=pp, ep=ep)
        by = {g: share.per_rank(tp) * bit(g) / 8 for g, share in groups.items()}
        scale = 1.0
        if share_weights_bytes is not None and s < len(share_weights_bytes) and sum(by.values()) > 0:
            scale = share_weights_bytes[s] / sum(by.values())
        dense = sum(v for g, v in by.items() if g not in ("embedding", "routed_experts"))
        if arch.tie_word_embeddings and last and pp == 1:
            dense += by["embedding"]  # the tied embedding is read whole as the LM head
        out.append(StageBytes(st, dense * scale, by["routed_experts"] * scale, st.num_layers, st.mlp.moe_layers))
    return tuple(out)


def inputs_from_plan(plan, *, engine: str | None = None) -> ServingInputs:
    """:class:`ServingInputs` of a plan for an engine (:func:`k3lib.engines.deployment.plan_for_engine`).
    ``engine``: the serving engine whose speed applies (default the plan's engine; e.g.
    ``trtllm`` for a plan made with vLLM's memory profile)."""
    arch = plan.model
    if not isinstance(arch, Architecture):
        raise K3InputError(
            "model",
            f"{arch.id} is a guide profile without layer shapes; speed needs an architecture",
            "a built-in architecture, a config.json or a GGUF",
        )
    eid = serving_engine(engine or (plan.engine_id if plan.engine_id not in ("generic", "guide") else "vllm"))
    lay = plan.layout
    gpu = plan.gpu
    shares = tuple(s.weights_bytes for s in plan.shares) if len(plan.shares) == lay.pp else None
    stages = stage_bytes(arch, plan.weight_format, tp=lay.tp, pp=lay.pp, ep=lay.ep, share_weights_bytes=shares)
    stage_nodes = lay.nodes // lay.pp if lay.nodes >= lay.pp else 1
    link = group_link(gpu, spans_nodes=stage_nodes > 1 or lay.comm_group > gpu.gpus_per_node)
    pp_link = group_link(gpu, spans_nodes=lay.nodes > 1)
    settings = dict(plan.engine.settings) if plan.engine is not None else {}
    chunk = (
        int(settings.get("n_ubatch") or LLAMACPP_UBATCH_TOKENS)
        if eid in LAYER_SPLIT_ENGINES
        else plan.assumptions.prefill_chunk_tokens or DEFAULT_PREFILL_CHUNK_TOKENS
    )
    fp8 = eid in FP8_COMPUTE_ENGINES and _fp8_compute(arch, plan.weight_format)
    notes = []
    if peak_flops(gpu, fp8=fp8) is None:
        notes.append(f"{gpu.id} has no compute figure: prefill and the compute bound are not estimated")
    return ServingInputs(
        engine=eid,
        hardware_class=hardware_class(gpu),
        device=gpu.id,
        gpus=lay.gpus,
        tp=lay.tp,
        pp=lay.pp,
        dp=lay.dp,
        ep=lay.ep,
        nodes=lay.nodes,
        stages=stages,
        model=arch,
        kv_bytes_per_element=get_kv_dtype(plan.kv_dtype).bytes_per_element,
        state_bytes_per_element=plan.assumptions.state_bytes_per_element,
        memory_bw_bytes_per_s=gpu.memory_bw_bytes_per_s,
        peak_flops=peak_flops(gpu, fp8=fp8),
        link=link,
        pp_link=pp_link,
        prefill_chunk_tokens=int(chunk),
        notes=tuple(notes),
    )


def inputs_on_cpu(
    *, model: Any, weights: str, kv_dtype: str = "bf16", host: str | HostSpec, engine: str = "llama.cpp"
) -> ServingInputs:
    """:class:`ServingInputs` for CPU-only serving (``--gpus 0 --host ID``): every weight in the
    host's DRAM, read at its bandwidth (:attr:`HostSpec.memory_bw_bytes_per_s`), compute from
    :func:`k3lib.serving.hardware.cpu_peak_flops`.

    >>> inp = inputs_on_cpu(model="llama-3.1-8b", weights="q4_k_m", host="desktop-ddr5-5600")
    >>> inp.hardware_class, inp.memory_bw_bytes_per_s / 1e9
    ('CPU', 89.6)
    """
    arch = model.require_architecture() if hasattr(model, "require_architecture") else get_model(model)
    if not isinstance(arch, Architecture):
        raise K3InputError("model", f"{arch.id} is a guide profile without layer shapes", "an architecture")
    h = get_host(host)
    eid = serving_engine(engine)
    stages = stage_bytes(arch, weights, tp=1, pp=1, ep=1)
    bw = h.memory_bw_bytes_per_s
    one = Link(bw, f"{h.id}: one host, no link")
    return ServingInputs(
        engine=eid,
        hardware_class="CPU",
        device=h.id,
        gpus=0,
        tp=1,
        pp=1,
        dp=1,
        ep=1,
        nodes=1,
        stages=stages,
        model=arch,
        kv_bytes_per_element=get_kv_dtype(kv_dtype).bytes_per_element,
        state_bytes_per_element=4.0,
        memory_bw_bytes_per_s=bw,
        peak_flops=cpu_peak_flops(h),
        link=one,
        pp_link=one,
        prefill_chunk_tokens=LLAMACPP_UBATCH_TOKENS,
        notes=(
            f"CPU compute assumed {cpu_peak_flops(h) / 1e12:.0f} TFLOPS "
            "(k3lib.serving.hardware.CPU_DENSE_FLOPS_BY_PLATFORM)",
        ),
    )


@dataclass(frozen=True)
class StepTerms:
    """One pass on the binding GPU (bytes read, FLOPs, communication seconds, layers) and how
    many passes run in sequence; :meth:`seconds` applies an :class:`Efficiency`."""

    bytes_read: float
    flops: float
    comm_s: float
    layers: int
    passes: float
    handoff_s: float
    memory_bw_bytes_per_s: float
    peak_flops: float | None
    #: seconds per pass of the host tier at full bandwidth (partial offload), read after the GPU tier
    host_read_s: float = 0.0
    #: seconds per pass that do not scale with η: host weights crossing PCIe (llama.cpp prefill)
    fixed_s: float = 0.0
    #: sequences of a decode step (0: not a decode step); see :meth:`seconds`
    decode_batch: int = 0

    def memory_seconds(self, eff: Efficiency = CEILING):
        """bytes ÷ (η_bw · BW) per pass, plus the host tier's read at the same η."""
        return (self.bytes_read / self.memory_bw_bytes_per_s + self.host_read_s) / eff.eta_bw

    def compute_seconds(self, eff: Efficiency = CEILING, *, eta: Any = None, flops: Any = None):
        """FLOPs ÷ (η_c · F) per pass (0 when the device has no compute figure); ``eta`` and
        ``flops`` override η_c and the pass's FLOPs."""
        eta = eff.eta_compute if eta is None else eta
        flops = self.flops if flops is None else flops
        if not self.peak_flops:
            return 0.0 * eta
        return flops / (eta * self.peak_flops)

    def seconds(self, eff: Efficiency = CEILING):
        """$passes·(t_{step} + t_{comm} + L·τ) + t_{hand-off}$ (array-aware in ``eff``), with
        $t_{step} = \\max(t_{mem}, t_{compute})$ for a prefill chunk and, for a decode step of $b$
        sequences of $F_1$ FLOPs each,

        $$t_{step} = \\max\\left(t_{mem}, \\frac{F_1}{η_c F}\\right) + (b - 1)·\\frac{F_1}{η_{cd} F}$$

        — one sequence's matrix-vector products hide under the weight stream, and each further
        sequence adds its share of the step's skinny matrix products at $η_{cd}$
        (:attr:`Efficiency.decode_compute`), so single-stream decode does not depend on $η_{cd}$."""
        comm = (self.comm_s + self.handoff_s / max(self.passes, 1)) if eff.communication else 0.0
        mem = self.memory_seconds(eff)
        if self.decode_batch:
            f1 = self.flops / self.decode_batch
            step = np.maximum(mem, self.compute_seconds(eff, flops=f1)) + (
                self.decode_batch - 1
            ) * self.compute_seconds(eff, eta=eff.decode_compute, flops=f1)
        else:
            step = np.maximum(mem, self.compute_seconds(eff))
        per = step + comm + self.layers * eff.layer_overhead_s + self.fixed_s
        out = self.passes * per
        return float(out) if np.ndim(out) == 0 else out


def _binding(inp: ServingInputs) -> StageBytes:
    return max(inp.stages, key=lambda s: (s.dense_bytes + s.routed_bytes, s.layers))


def _stage_active_params(inp: ServingInputs, st: StageBytes) -> float:
    return inp.model.params_active * st.layers / inp.model.num_layers


def _touched_expert_bytes(inp: ServingInputs, routed_bytes: float, tokens: float) -> float:
    """Of ``routed_bytes`` of routed experts, the bytes ``tokens`` tokens touch in one pass
    (:func:`k3lib.serving.experts.routed_bytes_read_per_step`; 0 without routed experts)."""
    if not routed_bytes:
        return 0.0
    m_ = inp.model.mlp
    return routed_bytes_read_per_step(
        routed_bytes_per_gpu=routed_bytes,
        n_experts=m_.n_routed_experts,
        experts_per_token=m_.experts_per_token or 1,
        tokens=tokens,
    )


def _collective_seconds(inp: ServingInputs, st: StageBytes, tokens: float) -> float:
    """One pass's TP all-reduces and EP all-to-alls for ``tokens`` tokens on the binding stage
    (:func:`k3lib.serving.comm.tp_comm_seconds` + :func:`k3lib.serving.comm.ep_comm_seconds`)."""
    d, link = inp.model.hidden_size, inp.link.bytes_per_s
    tp = tp_comm_seconds(tokens=tokens, hidden_size=d, layers=st.layers, tp=inp.tp, link_bytes_per_s=link)
    ep = ep_comm_seconds(
        tokens=tokens,
        hidden_size=d,
        experts_per_token=inp.model.mlp.experts_per_token,
        ep=inp.ep,
        moe_layers=st.moe_layers,
        link_bytes_per_s=link,
    )
    return tp + ep


def decode_terms(
    inp: ServingInputs, *, concurrency: float, context_tokens: float, identical_sequences: bool = False
) -> StepTerms:
    """The decode step of ``concurrency`` sequences at ``context_tokens`` (see the module docstring).
    ``identical_sequences``: every sequence holds the same tokens, so all of them route to the
    same $k$ experts and the step reads the experts of one token — llama.cpp's
    ``llama-batched-bench`` feeds token 0 at every position of every sequence
    (ggml-org/llama.cpp tools/batched-bench/batched-bench.cpp @ 0a1f01792b77:
    ``common_batch_add(batch, 0, pp + i, { j }, true)``).

    Llama 3.1 8B BF16 on one H100, one sequence at context 0: the bytes are the weights less
    the embedding (16.06 GB − 1.05 GB) and the ceiling is that ÷ 3.35 TB/s:

    >>> from k3lib.engines.deployment import plan_for_engine
    >>> p = plan_for_engine(model="llama-3.1-8b", gpu="h100", gpus=1, weights="bf16", context=1024, with_limits=False)
    >>> t = decode_terms(inputs_from_plan(p), concurrency=1, context_tokens=0)
    >>> round(t.bytes_read / 1e9, 2), round(1 / t.seconds(CEILING), 1)
    (15.01, 223.2)
    """
    c = max(1.0, float(concurrency))
    b_rep = math.ceil(c / inp.dp)
    m = min(inp.pp, b_rep) if inp.pipelined else 1
    b = math.ceil(b_rep / m)
    st = _binding(inp)
    kv = kv_bytes_per_rank(
        st.stage,
        context_tokens=int(context_tokens),
        batch=b,
        bytes_per_element=inp.kv_bytes_per_element,
        tp=inp.tp,
        state_bytes_per_element=inp.state_bytes_per_element,
    )
    routed = _touched_expert_bytes(
        inp, st.routed_bytes, 1 if identical_sequences else b * (inp.dp if inp.ep > 1 else 1)
    )
    flops = b * (2 * _stage_active_params(inp, st) + attention_flops_per_token(st.stage, context_tokens)) / inp.tp
    comm = _collective_seconds(inp, st, b)
    hand = pp_handoff_seconds(
        tokens=b, hidden_size=inp.model.hidden_size, pp=inp.pp, link_bytes_per_s=inp.pp_link.bytes_per_s
    )
    return StepTerms(
        st.dense_bytes + routed + kv,
        flops,
        comm,
        st.layers,
        inp.pp,
        hand,
        inp.memory_bw_bytes_per_s,
        inp.peak_flops,
        host_read_s=_host_read_s(inp, 1 if identical_sequences else b),
        decode_batch=b,
    )


def _host_touched_bytes(inp: ServingInputs, tokens: float) -> float:
    return inp.host_dense_bytes + _touched_expert_bytes(inp, inp.host_routed_bytes, tokens)


def _host_read_s(inp: ServingInputs, tokens: float) -> float:
    """Host-tier read per pass at full host bandwidth (0 without offload)."""
    if not inp.host_bw_bytes_per_s:
        return 0.0
    return _host_touched_bytes(inp, tokens) / inp.host_bw_bytes_per_s


def _host_compute_share(inp: ServingInputs) -> float:
    """The share of a token's FLOPs that KTransformers runs on the CPU: its CPU-resident routed
    experts' share of the active bytes (active routed $= R_{host}·k/E$ against all active bytes);
    0 for every other engine (llama.cpp copies host weights to the GPU for a large batch and
    multiplies there; below that batch it reads them on the CPU at decode's rate)."""
    if inp.engine != "ktransformers" or not inp.host_routed_bytes:
        return 0.0
    m_ = inp.model.mlp
    k_e = (m_.experts_per_token or 1) / max(1, m_.n_routed_experts)
    act_routed = inp.host_routed_bytes * k_e
    act_total = act_routed + sum(st.dense_bytes + st.routed_bytes * k_e for st in inp.stages)
    return act_routed / max(1.0, act_total)


def _host_prefill_s(inp: ServingInputs, tokens: float) -> tuple[float, float]:
    """(host read s, fixed s) of one prefill chunk of ``tokens`` with host-resident weights.
    llama.cpp family at a micro-batch ≥ :data:`k3lib.serving.offload.LLAMACPP_OP_OFFLOAD_MIN_BATCH`:
    the CUDA backend copies the host weights the chunk touches across PCIe once per micro-batch
    (fixed seconds, the link's figure); KTransformers multiplies its CPU experts on the CPU:
    max(bytes ÷ host BW, FLOPs ÷ host FLOP/s), also fixed (the GPU's η does not apply)."""
    if not inp.host_bw_bytes_per_s:
        return 0.0, 0.0
    touched = _host_touched_bytes(inp, tokens)
    if inp.engine == "ktransformers":
        flops = 2 * inp.model.params_active * tokens * _host_compute_share(inp)
        return 0.0, max(touched / inp.host_bw_bytes_per_s, flops / inp.host_flops if inp.host_flops else 0.0)
    if tokens >= 32 and inp.host_link_bytes_per_s:
        return 0.0, touched / inp.host_link_bytes_per_s
    return touched / inp.host_bw_bytes_per_s, 0.0


def prefill_terms(inp: ServingInputs, *, input_tokens: int, requests: float = 1.0) -> StepTerms:
    """Prefill of ``requests`` prompts of ``input_tokens`` each, in chunks of the engine's budget
    (see the module docstring); ``requests`` may be fractional (a mean over a queue)."""
    st = _binding(inp)
    total = max(1.0, requests * input_tokens)
    chunks = max(1, math.ceil(total / inp.prefill_chunk_tokens))
    per_chunk = total / chunks
    routed = _touched_expert_bytes(inp, st.routed_bytes, per_chunk)
    # the GPU's FLOPs: KTransformers' CPU experts are multiplied on the host (_host_prefill_s)
    gpu_share = 1.0 - _host_compute_share(inp)
    flops = (
        requests
        * (
            2 * _stage_active_params(inp, st) * input_tokens * gpu_share
            + input_tokens * attention_flops_per_token(st.stage, input_tokens / 2)
        )
        / inp.tp
    )
    comm = _collective_seconds(inp, st, per_chunk)
    hand = chunks * pp_handoff_seconds(
        tokens=per_chunk, hidden_size=inp.model.hidden_size, pp=inp.pp, link_bytes_per_s=inp.pp_link.bytes_per_s
    )
    h_read, h_fixed = _host_prefill_s(inp, per_chunk)
    return StepTerms(
        st.dense_bytes + routed,
        flops / chunks,
        comm,
        st.layers,
        chunks * inp.pp,
        hand,
        inp.memory_bw_bytes_per_s,
        inp.peak_flops,
        host_read_s=h_read,
        fixed_s=h_fixed,
    )


def mixed_prefill_terms(
    inp: ServingInputs, *, input_tokens: int, chunk_tokens: int, decode_batch: float, decode_context: float
) -> StepTerms:
    """One prompt of ``input_tokens`` prefilled in steps of ``chunk_tokens`` prompt tokens, each
    step also carrying the decode token of ``decode_batch`` running sequences at ``decode_context``
    (vLLM V1 / TensorRT-LLM mixed batches; ``decode_batch`` 0 for SGLang's prefill-only batches).
    One step reads the weights once, the experts the step's $p + b$ tokens touch and the $b$
    sequences' KV; its FLOPs are the chunk's share of the prompt's plus the $b$ decode tokens':

    $$t_{step} = \\max\\left(\\frac{W_{dense} + R·(1-(1-k/E)^{p+b}) + KV(T, b)}{η_{bw}·BW},
      \\frac{F_{prefill}/N + b·(2P_{active} + A(T))/TP}{η_c·F}\\right) + t_{comm}(p+b) + L·τ,
      \\quad N = \\lceil I/p \\rceil$$
    """
    st = _binding(inp)
    i = max(1, int(input_tokens))
    p = max(1, min(i, int(chunk_tokens)))
    n = math.ceil(i / p)
    b = max(0.0, float(decode_batch))
    tok = i / n + b
    routed = _touched_expert_bytes(inp, st.routed_bytes, tok)
    kv = (
        kv_bytes_per_rank(
            st.stage,
            context_tokens=int(decode_context),
            batch=int(math.ceil(b)),
            bytes_per_element=inp.kv_bytes_per_element,
            tp=inp.tp,
            state_bytes_per_element=inp.state_bytes_per_element,
        )
        if b >= 1
        else 0.0
    )
    pf = (2 * _stage_active_params(inp, st) * i + i * attention_flops_per_token(st.stage, i / 2)) / inp.tp
    dec = b * (2 * _stage_active_params(inp, st) + attention_flops_per_token(st.stage, decode_context)) / inp.tp
    comm = _collective_seconds(inp, st, tok)
    hand = n * pp_handoff_seconds(
        tokens=tok, hidden_size=inp.model.hidden_size, pp=inp.pp, link_bytes_per_s=inp.pp_link.bytes_per_s
    )
    return StepTerms(
        st.dense_bytes + routed + kv,
        pf / n + dec,
        comm,
        st.layers,
        n * inp.pp,
        hand,
        inp.memory_bw_bytes_per_s,
        inp.peak_flops,
    )
