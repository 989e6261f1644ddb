"""The measured side of the speed model: the rows of ``data/measured/speed.csv`` and how each
is planned and predicted — the model a row names (:data:`MODEL_ALIASES`), its serving inputs
(the engine's memory profile, a stated offload), the benchmark's protocol (lock-step waves,
llama-batched-bench's identical sequences), the engine generation it is fitted with, and the
queue its plan admits. :mod:`k3lib.serving.calibration` fits and scores over these.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from k3lib.core.architecture import Architecture
from k3lib.core.data import DATA_DIR
from k3lib.core.errors import K3InputError
from k3lib.core.hardware import get_gpu
from k3lib.serving.concurrency import (
    DECODE_PHASE_TOTAL_ENGINES,
    PREFILL_FIRST_ENGINES,
    QUANTITIES,
    max_concurrency,
    predict,
)
from k3lib.serving.roofline import (
    MEMORY_PROFILE,
    Efficiency,
    ServingInputs,
    inputs_from_plan,
    inputs_on_cpu,
    serving_engine,
    stage_bytes,
)

SPEED_CSV = Path("measured") / "speed.csv"
CONFIGS_DIR = Path("measured") / "configs"


@dataclass(frozen=True)
class ModelAlias:
    """A Hugging Face id of ``speed.csv`` planned as ``target``: a built-in architecture with
    identical shapes, or ``config:<file>`` (a public config.json transcribed in
    ``data/measured/configs/``); ``source`` says where the shapes were read."""

    target: str
    source: str


#: HF ids of measured checkpoints → an architecture with the same shapes. Only sourced shapes:
#: each entry names the file its shapes were compared with (``tests/test_serving.py`` re-checks
#: the ones whose config is in this repository). A fine-tune or re-quantization of a base model
#: keeps the base's shapes; context length and RoPE base may differ and do not enter the speed model.
MODEL_ALIASES: dict[str, ModelAlias] = {
    "meta-llama/Llama-3.3-70B-Instruct": ModelAlias(
        "llama-3.1-70b",
        "data/measured/configs/RedHatAI--Llama-3.3-70B-Instruct-fp8-dynamic.json "
        "(a Llama 3.3 70B config): layers, heads, hidden, MLP and vocabulary equal llama-3.1-70b's",
    ),
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ModelAlias(
        "qwen3-30b-a3b",
        "github.com/ztxz16/fastllm@f8f04c33 Qwen3-Coder-30B-A3B-Instruct/config.json (copy of the "
        "HF config): hidden 2048, 48 layers, 32/4 heads × 128, 128 experts top-8 × 768, vocab 151936, untied — "
        "Qwen3-30B-A3B's shapes (rope_theta and max_position_embeddings differ)",
    ),
    "MiniMaxAI/MiniMax-M2.7": ModelAlias(
        "minimax-m2.5",
        "huggingface.co/amd/MiniMax-M2.7-BF16 config.json: MiniMaxM2ForCausalLM, hidden 3072, "
        "62 layers, 48/8 heads × 128, 256 experts top-8 × 1536, vocab 200064, untied; NVIDIA Megatron Bridge docs "
        "(docs.nvidia.com/nemo/megatron-bridge/nightly/models/minimax/minimax-m2.html): M2.5 and M2.7 'Same "
        "MiniMaxM2ForCausalLM architecture'",
    ),
    "Qwen/Qwen2.5-Coder-7B": ModelAlias(
        "config:Qwen--Qwen2.5-7B-Instruct.json",
        "model card (huggingface.co/Qwen/Qwen2.5-Coder-7B, mirrored in "
        "github.com/ZHUI/paddlenlp_model_readme Qwen/Qwen2.5-Coder-7B/index.md): 7.61B parameters, 6.53B "
        "non-embedding, 28 layers, 28/4 heads, QKV bias — Qwen2.5-7B's figures; the llama-bench row prints "
        "'qwen2 7B Q8_0 7.54 GiB'",
    ),
    "meta-llama/Meta-Llama-3-8B": ModelAlias(
        "llama-3.1-8b",
        "huggingface.co/meta-llama/Meta-Llama-3-8B config.json: LlamaForCausalLM, hidden 4096, 32 "
        "layers, 32/8 heads × 128, intermediate 14336, vocab 128256, untied — llama-3.1-8b's shapes (Llama 3.1 "
        "adds RoPE scaling and a 128K context, which do not enter the speed model)",
    ),
    "meta-llama/Meta-Llama-3-70B": ModelAlias(
        "llama-3.1-70b",
        "huggingface.co/meta-llama/Meta-Llama-3-70B config.json: LlamaForCausalLM, hidden 8192, 80 "
        "layers, 64/8 heads × 128, intermediate 28672, vocab 128256, untied — llama-3.1-70b's shapes (RoPE "
        "scaling and context differ)",
    ),
    "microsoft/phi-4": ModelAlias("config:microsoft--phi-4.json", "its own config.json (data/measured/configs)"),
    "Qwen/Qwen3-8B": ModelAlias("config:Qwen--Qwen3-8B.json", "its own config.json (data/measured/configs)"),
    "Qwen/Qwen2.5-7B-Instruct": ModelAlias(
        "config:Qwen--Qwen2.5-7B-Instruct.json", "its own config.json (data/measured/configs)"
    ),
    "google/gemma-3-4b-it": ModelAlias(
        "config:google--gemma-3-4b-it.json", "its own config.json (data/measured/configs)"
    ),
}


@lru_cache(maxsize=32)
def resolve_model(model: str):
    """The model to plan a row's ``model`` with: a built-in id as is, an alias of
    :data:`MODEL_ALIASES` as its target (a built-in id or a loaded config); anything else
    unchanged (planning then names it as unknown and the row is skipped).

    >>> resolve_model("meta-llama/Llama-3.3-70B-Instruct")
    'llama-3.1-70b'
    """
    alias = MODEL_ALIASES.get(model)
    if alias is None:
        return model
    if alias.target.startswith("config:"):
        from k3lib.loaders.config import load_config

        return load_config(DATA_DIR / CONFIGS_DIR / alias.target[len("config:") :], id=model)
    return alias.target


SPEED_COLUMNS = (
    "id",
    "engine",
    "engine_version",
    "model",
    "weights",
    "kv_dtype",
    "gpu",
    "gpus",
    "tp",
    "pp",
    "ep",
    "host",
    "concurrency",
    "input_tokens",
    "output_tokens",
    "quantity",
    "value",
    "unit",
    "split",
    "evidence",
    "source",
    "date",
)


@dataclass(frozen=True)
class SpeedRow:
    """One measured figure of ``speed.csv``."""

    id: str
    engine: str
    engine_version: str
    model: str
    weights: str
    kv_dtype: str
    gpu: str
    gpus: int
    tp: int
    pp: int
    ep: int
    host: str
    concurrency: int
    input_tokens: int
    output_tokens: int
    quantity: str
    value: float
    unit: str
    split: str
    evidence: str
    source: str
    date: str
    #: optional: partial offload as the row's source states it (``ngl=N``: N of the layers on the
    #: GPUs, the rest in host RAM; ``ot=exps``: every routed expert in host RAM — llama.cpp
    #: ``-ot exps=CPU`` / ``--cpu-moe``, KTransformers' CPU experts); empty: all in VRAM
    offload: str = ""

    @property
    def plan_key(self) -> tuple:
        """What planning the row depends on (not its value or split)."""
        return (
            self.engine,
            self.model,
            self.weights,
            self.kv_dtype,
            self.gpu,
            self.gpus,
            self.tp,
            self.pp,
            self.ep,
            self.host,
            self.input_tokens,
            self.output_tokens,
            self.offload,
        )


def _int(text: str, default: int) -> int:
    text = (text or "").strip()
    return int(float(text)) if text else default


def parse_speed_csv(text: str) -> tuple[SpeedRow, ...]:
    """Rows of a speed CSV (its text); a missing column is a named error."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in SPEED_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise K3InputError("speed.csv", f"missing columns {missing}", ", ".join(SPEED_COLUMNS))
    out = []
    for r in reader:
        r = {k: (v or "").strip() for k, v in r.items() if k}
        out.append(
            SpeedRow(
                id=r["id"],
                engine=r["engine"],
                engine_version=r["engine_version"],
                model=r["model"],
                weights=r["weights"],
                kv_dtype=r["kv_dtype"] or "bf16",
                gpu=r["gpu"],
                gpus=_int(r["gpus"], 1),
                tp=_int(r["tp"], 0),
                pp=_int(r["pp"], 0),
                ep=_int(r["ep"], 1),
                host=r["host"],
                concurrency=_int(r["concurrency"], 1),
                input_tokens=_int(r["input_tokens"], 0),
                output_tokens=_int(r["output_tokens"], 0),
                quantity=r["quantity"],
                value=float(r["value"]),
                unit=r["unit"],
                split=r["split"],
                evidence=r["evidence"],
                source=r["source"],
                date=r["date"],
                offload=r.get("offload", "") or "",
            )
        )
    return tuple(out)


def default_speed_path() -> Path:
    return DATA_DIR / SPEED_CSV


#: per plan key: (KV capacity tokens, max_num_seqs) of the row's plan, filled by :func:`_row_inputs`
_ROW_CAPACITY: dict = {}


@lru_cache(maxsize=4096)
def _row_inputs(key: tuple) -> ServingInputs | str:
    engine, model, weights, kv_dtype, gpu, gpus, tp, pp, ep, host, inp_t, out_t, offload = key
    try:
        eid = serving_engine(engine)
        model = resolve_model(model)
        if gpu.lower() == "cpu":
            return inputs_on_cpu(model=model, weights=weights or "native", kv_dtype=kv_dtype, host=host, engine=eid)
        from k3lib.engines.deployment import plan_for_engine

        plan = plan_for_engine(
            model=model,
            engine=MEMORY_PROFILE[eid],
            gpu=get_gpu(gpu),
            gpus=gpus,
            tp=tp or None,
            pp=pp or None,
            weights=weights or None,
            kv_dtype=kv_dtype,
            context=max(1024, inp_t + out_t),
            batch=1,
            with_limits=False,
        )
        inp = inputs_from_plan(plan, engine=eid)
        if plan.engine is not None:
            _ROW_CAPACITY[key] = (int(plan.engine.kv_capacity_tokens), dict(plan.engine.settings).get("max_num_seqs"))
        if ep > 1 and ep != inp.ep and isinstance(plan.model, Architecture):  # (EP needs an architecture)
            inp = dataclasses.replace(
                inp, ep=ep, stages=stage_bytes(plan.model, plan.weight_format, tp=inp.tp, pp=inp.pp, ep=ep)
            )
        if offload:
            inp = _with_offload(inp, offload, host)
        return inp
    except (K3InputError, ValueError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _with_offload(inp: ServingInputs, offload: str, host: str) -> ServingInputs:
    """``inp`` with the row's stated offload: the host share of each GPU's bytes moved to a host
    tier read at the host's bandwidth (hosts.csv), its PCIe link from the GPU row. A row that
    states offload without a host cannot be planned (a ValueError, the row is skipped)."""
    from k3lib.core.hosts import get_host
    from k3lib.serving.hardware import cpu_peak_flops

    if not host:
        raise ValueError(f"offload {offload!r} is stated but the row names no host to read it from")
    h = get_host(host)
    how, _, val = offload.partition("=")
    stages = list(inp.stages)
    if how == "ngl":
        on_gpu = min(int(val), inp.model.num_layers) / inp.model.num_layers
        dense = sum(s.dense_bytes for s in stages) * (1 - on_gpu)
        routed = sum(s.routed_bytes for s in stages) * (1 - on_gpu)
        stages = [
            dataclasses.replace(s, dense_bytes=s.dense_bytes * on_gpu, routed_bytes=s.routed_bytes * on_gpu)
            for s in stages
        ]
    elif how == "ot" and val == "exps":
        dense, routed = 0.0, sum(s.routed_bytes for s in stages)
        stages = [dataclasses.replace(s, routed_bytes=0.0) for s in stages]
    else:
        raise ValueError(f"offload {offload!r} is not ngl=N or ot=exps")
    gpu = get_gpu(inp.device)
    return dataclasses.replace(
        inp,
        stages=tuple(stages),
        host_dense_bytes=dense,
        host_routed_bytes=routed,
        host_bw_bytes_per_s=h.memory_bw_bytes_per_s,
        host_link_bytes_per_s=gpu.host_link_bytes_per_s or 0.0,
        host_flops=cpu_peak_flops(h),
        notes=inp.notes + (f"offload {offload}: host tier {h.id}",),
    )


def row_inputs(row: SpeedRow) -> ServingInputs | str:
    """The row's :class:`ServingInputs`, or why it cannot be planned (a sentence)."""
    if row.quantity not in QUANTITIES:
        return f"quantity {row.quantity!r} is not one of {', '.join(QUANTITIES)}"
    return _row_inputs(row.plan_key)


#: benchmark sources whose stated command keeps every request the same length, so that a
#: closed loop runs in waves of $c$ prompts, with the number of requests of each run. dstack's
#: README at 209ca6f9 (Deepseek-R1/README.md, "Online Benchmarking Commands"): ``bench_serving.py
#: --dataset-name random --num-prompts 500 --random-input 3200 --random-output 800
#: --random-range-ratio 1 --max-concurrency …`` (range ratio 1: every prompt exactly 3200 in /
#: 800 out; 500 requests per run).
LOCKSTEP_SOURCES = {"github.com/dstackai/benchmarks/": 500}


def keeps_waves(engine: str, engine_version: str) -> bool:
    """Whether the engine keeps a wave of equal requests in lock-step: it prefills every waiting
    prompt before it decodes again, so a wave starts decoding together, ends together, and its
    successors arrive together. SGLang: prefill first (:data:`k3lib.serving.concurrency.PREFILL_FIRST_ENGINES`).
    vLLM before 0.8 (the V0 engine): ``Scheduler._schedule_default`` in ``vllm/core/scheduler.py``
    "batches as many prefill requests as possible. And it schedules decodes" — prefills first when
    chunked prefill is off, as in dstack's runs (their README's launch line has no
    ``--enable-chunked-prefill``; it appears only in the commented prefix-cache variant). vLLM
    0.8+ (V1) and TensorRT-LLM schedule the running decodes first (:data:`MIXED_BATCH_ENGINES`),
    which staggers a wave (``first_burst``).

    >>> keeps_waves("sglang", "0.4.3"), keeps_waves("vllm", "0.7.4.dev181"), keeps_waves("trtllm", "0.17")
    (True, True, False)
    """
    eng = serving_engine(engine)
    if eng in PREFILL_FIRST_ENGINES:
        return True
    if eng == "vllm":
        try:
            major, minor = (int(x) for x in engine_version.split(".")[:2])
        except ValueError:
            return False
        return (major, minor) < (0, 8)
    return False


def row_arrivals(row: SpeedRow) -> tuple[str, int | None]:
    """(arrivals, requests of the run) for a row: a row of :data:`LOCKSTEP_SOURCES` is a
    ``burst`` when its engine :func:`keeps_waves`, else ``first_burst``; any other row ``steady``."""
    for src, prompts in LOCKSTEP_SOURCES.items():
        if src in row.source:
            return ("burst" if keeps_waves(row.engine, row.engine_version) else "first_burst"), prompts
    return "steady", None


#: vLLM's V0 engine (before 0.8): another scheduler (prefills first) and another generation of
#: kernels than V1 (vLLM 0.8.0 made V1 the default: docs.vllm.ai "vLLM V1" / the 0.8.0 release
#: notes); its rows are fitted as their own engine, ``vllm-v0``, so that today's vLLM is
#: predicted from V1 measurements
VLLM_V1_FIRST = (0, 8)


def fit_engine(row: SpeedRow) -> str:
    """The engine whose constants a row is fitted with: :func:`serving_engine`, except vLLM
    before :data:`VLLM_V1_FIRST` (a stated version), which is ``vllm-v0``.

    >>> fit_engine(SpeedRow(*(["x", "vllm", "0.7.4.dev181"] + [""] * 4 + [1, 0, 0, 1, "", 1, 0, 0, "tpot_s", 1.0,
    ...                         "s", "fit", "", "", ""])))
    'vllm-v0'
    """
    eng = serving_engine(row.engine)
    if eng == "vllm" and row.engine_version:
        try:
            version = tuple(int(x) for x in row.engine_version.split(".")[:2])
        except ValueError:
            return eng
        if version < VLLM_V1_FIRST:
            return "vllm-v0"
    return eng


def row_identical_sequences(row: SpeedRow) -> bool:
    """Whether the row's sequences hold identical tokens: the llama.cpp family's
    ``output_tokens_per_s_total`` is ``llama-batched-bench``'s S_TG
    (:data:`k3lib.serving.concurrency.DECODE_PHASE_TOTAL_ENGINES`), and that tool feeds token 0 at
    every position of every sequence, so its B sequences route alike (one token's experts per step)."""
    return row.quantity == "output_tokens_per_s_total" and serving_engine(row.engine) in DECODE_PHASE_TOTAL_ENGINES


def row_capacity(row: SpeedRow) -> int | None:
    """The most requests of the row's lengths the row's plan admits (:func:`max_concurrency` of
    its engine's KV capacity and ``max_num_seqs``), as :func:`k3lib.serving.serving_estimate`
    caps a plan; None for a row planned without an engine profile (CPU)."""
    if isinstance(row_inputs(row), str):
        return None
    cap = _ROW_CAPACITY.get(row.plan_key)
    if cap is None:
        return None
    n = max_concurrency(
        kv_capacity_tokens=cap[0], input_tokens=row.input_tokens, output_tokens=row.output_tokens, max_num_seqs=cap[1]
    )
    return n if n >= 1 else None


def predict_row(row: SpeedRow, eff: Efficiency):
    """The model's figure for ``row`` under ``eff`` (array-aware), None when it cannot be planned.
    A row asking more concurrency than its plan admits (:func:`row_capacity`) is served at the
    capacity and its TTFT carries the queue's wait (:func:`k3lib.serving.concurrency.queue_wait_s`)."""
    inp = row_inputs(row)
    if isinstance(inp, str):
        return None
    arrivals, prompts = row_arrivals(row)
    return predict(
        inp,
        row.quantity,
        eff,
        concurrency=row.concurrency,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        arrivals=arrivals,
        prompts=prompts,
        capacity=row_capacity(row),
        identical_sequences=row_identical_sequences(row),
    )
