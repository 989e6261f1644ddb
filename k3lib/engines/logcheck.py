"""``k3plan check-log LOG``: read a vLLM, SGLang, llama.cpp or Ollama log, take its
configuration and every memory line, predict the same quantities with the engine's
profile, and show logged vs predicted per component with the error and the rule.

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
from typing import Any, Callable

from k3lib.core.memory import kv_heads_per_rank
from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB, MiB

ENGINES_READ = ("vllm", "sglang", "llama.cpp", "ollama")
#: tolerances of the engine rules (issue 16): KV 0.5 %, weights 3 %
KV_TOLERANCE_PCT = 0.5
WEIGHTS_TOLERANCE_PCT = 3.0
#: the compute buffer is modelled, not reproduced: the widest band measured on the real-llama.cpp tier
#: (llamacpp_compute_buffer_bytes; data/measured/llamacpp-0c1e570-cpu.csv)
COMPUTE_TOLERANCE_PCT = 20.0

_NUM = r"([\d][\d,]*(?:\.\d+)?)"
_MEMORY_HINT = re.compile(r"(MiB|GiB|\bGB\b|\bMB\b|KV cache|KV self|buffer size|#tokens|GPU blocks|memory)", re.I)


@dataclass(frozen=True)
class Logged:
    """One figure read from the log: ``quantity`` in ``unit`` (bytes for memory)."""

    quantity: str
    value: float
    unit: str
    line: int
    text: str


@dataclass(frozen=True)
class CheckRow:
    """Logged vs predicted for one component."""

    component: str
    logged: float
    predicted: float
    unit: str
    error_pct: float
    tolerance_pct: float
    within: bool
    rule: str


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


# ----------------------------------------------------------------------------- reading

def detect_engine(text: str) -> str:
    """'ollama', 'llama.cpp', 'sglang' or 'vllm' from tell-tale lines; K3InputError otherwise."""
    if re.search(r"ollama\[\d+\]|source=server\.go|level=INFO source=|ollama-\d", text):
        return "ollama"
    if re.search(r"llama_kv_cache|llama_new_context_with_model|llama_init_from_model|llama_context:|load_tensors:", text):
        return "llama.cpp"
    if re.search(r"KV Cache is allocated|Load weight end|sglang|mem_fraction_static", text):
        return "sglang"
    if re.search(r"Model loading took|Loading model weights took|GPU KV cache size|GPU blocks|vllm", text, re.I):
        return "vllm"
    raise K3InputError("LOG", "no vLLM, SGLang, llama.cpp or Ollama memory line found",
                       "a log printed by one of " + ", ".join(ENGINES_READ))


def _f(s: str) -> float:
    return float(s.replace(",", ""))


# (engine family, compiled pattern, handler(match, config, figures, line_no, text)) -------------
Handler = Callable[[re.Match, dict, list, int, str], None]
_PATTERNS: list[tuple[str, re.Pattern, Handler]] = []


def _rule(family: str, pattern: str):
    def deco(fn: Handler) -> Handler:
        _PATTERNS.append((family, re.compile(pattern), fn))
        return fn
    return deco


def _add(figs, q, v, unit, n, t):
    figs.append(Logged(q, v, unit, n, t.strip()))


# llama.cpp and Ollama (Ollama's runner is llama.cpp)
@_rule("gguf", r"\bn_ctx\s*=\s*(\d+)")
def _n_ctx(m, cfg, figs, n, t):
    cfg.setdefault("n_ctx", int(m.group(1)))


@_rule("gguf", r"\bn_seq_max\s*=\s*(\d+)")
def _n_seq(m, cfg, figs, n, t):
    cfg["n_seq_max"] = int(m.group(1))


@_rule("gguf", r"\bflash_attn\s*=\s*(\w+)")
def _fa(m, cfg, figs, n, t):
    cfg["flash_attn"] = m.group(1).lower() in ("1", "true", "enabled", "on")


@_rule("gguf", r"\bn_ctx_slot=(\d+)")
def _n_ctx_slot(m, cfg, figs, n, t):
    cfg.setdefault("n_ctx", int(m.group(1)))       # llama-server's slot line (one slot: the whole context)


@_rule("gguf", r"\bmla_attn\s*=\s*(\d+)")
def _mla_attn(m, cfg, figs, n, t):
    cfg["ik_mla"] = int(m.group(1))                # ik_llama.cpp's -mla mode


@_rule("gguf", r"layer\s+(\d+): n_embd_head_qk_rope = (\d+), kv_lora_rank = (\d+)")
def _mla_dims(m, cfg, figs, n, t):
    cfg.setdefault("mla_dims", {})[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))


@_rule("gguf", r"KV self size\s*=\s*" + _NUM + r" MiB, c\^KV \((\w+)\):\s*" + _NUM + r" MiB, kv\^T: (not used|"
       + _NUM + " MiB)")
def _kv_self_mla(m, cfg, figs, n, t):
    # ik_llama.cpp's MLA cache: the latent c^KV (K) and, with -mla 1, its transposed copy kv^T (V, F16)
    cfg["type_k"], cfg["type_v"] = m.group(2), "f16"
    cfg["kvt_used"] = m.group(4) != "not used"
    _add(figs, "KV total", _f(m.group(1)) * MiB, "B", n, t)
    _add(figs, "K", _f(m.group(3)) * MiB, "B", n, t)
    _add(figs, "V", _f(m.group(5)) * MiB if cfg["kvt_used"] else 0.0, "B", n, t)


@_rule("gguf", r"\bn_ctx_seq\s*=\s*(\d+)")
def _n_ctx_seq(m, cfg, figs, n, t):
    cfg["n_ctx_seq"] = int(m.group(1))             # printed since llama.cpp's 256-cell padding (PR 17046)


@_rule("gguf", r"\bkv_unified\s*=\s*(\w+)")
def _kv_unified(m, cfg, figs, n, t):
    cfg["kv_unified"] = m.group(1).lower() in ("1", "true")


@_rule("gguf", r"\bn_rs_seq\s*=\s*(\d+)")
def _n_rs_seq(m, cfg, figs, n, t):
    cfg["n_rs_seq"] = int(m.group(1))


@_rule("gguf", r"using full-size SWA cache")
def _swa_full(m, cfg, figs, n, t):
    cfg["swa_full"] = True


@_rule("gguf", r"llama_memory_recurrent: size =\s*" + _NUM + r" MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+) seqs"
       r"\s+(\d+) rs_seq\), R \((\w+)\):\s*" + _NUM + r" MiB, S \((\w+)\):\s*" + _NUM + " MiB")
def _rs_size(m, cfg, figs, n, t):
    cfg["rs_cells"], cfg["n_rs_seq"] = int(m.group(2)), int(m.group(5))
    _add(figs, "R", _f(m.group(7)) * MiB, "B", n, t)
    _add(figs, "S", _f(m.group(9)) * MiB, "B", n, t)


@_rule("gguf", r"\bn_ubatch\s*=\s*(\d+)")
def _ubatch(m, cfg, figs, n, t):
    cfg["n_ubatch"] = int(m.group(1))


@_rule("gguf", r"layer\s+(\d+): n_embd_k_gqa = (\d+), n_embd_v_gqa = (\d+)")
def _layer_dims(m, cfg, figs, n, t):
    cfg.setdefault("layer_dims", {})[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))


@_rule("gguf", r"(?:print_info|llm_load_print_meta): (n_layer|n_embd_k_gqa|n_embd_v_gqa|n_head_kv)\s*=\s*(\d+)\s*$")
def _meta(m, cfg, figs, n, t):
    cfg[m.group(1)] = int(m.group(2))


_FTYPE_NAMES = {"Q4_K - MEDIUM": "Q4_K_M", "Q4_K - SMALL": "Q4_K_S", "Q5_K - MEDIUM": "Q5_K_M", "Q5_K - SMALL": "Q5_K_S",
                "Q3_K - MEDIUM": "Q3_K_M", "Q2_K - MEDIUM": "Q2_K", "Q6_K": "Q6_K"}


@_rule("gguf", r"model ftype\s*=\s*(.+?)\s*$")
def _ftype(m, cfg, figs, n, t):
    raw = m.group(1).upper()
    cfg["ftype"] = _FTYPE_NAMES.get(raw, raw.replace(" ", ""))


@_rule("gguf", r"model size\s*=\s*" + _NUM + r" GiB")
def _msize(m, cfg, figs, n, t):
    _add(figs, "model size", _f(m.group(1)) * GiB, "B", n, t)


@_rule("gguf", r"general\.name\s*=\s*(.+?)\s*$")
def _gname(m, cfg, figs, n, t):
    cfg.setdefault("model_name", m.group(1))


@_rule("gguf", r"(\w+) KV buffer size\s*=\s*" + _NUM + r" MiB")
def _kv_buf(m, cfg, figs, n, t):
    _add(figs, f"KV buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"KV self size\s*=\s*" + _NUM + r" MiB, K \((\w+)\):\s*" + _NUM + r" MiB, V \((\w+)\):\s*" + _NUM + " MiB")
def _kv_self(m, cfg, figs, n, t):
    cfg["type_k"], cfg["type_v"] = m.group(2), m.group(4)
    _add(figs, "KV total", _f(m.group(1)) * MiB, "B", n, t)
    _add(figs, "K", _f(m.group(3)) * MiB, "B", n, t)
    _add(figs, "V", _f(m.group(5)) * MiB, "B", n, t)


@_rule("gguf", r"size =\s*" + _NUM + r" MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/\s*(\d+) seqs\), K \((\w+)\):\s*"
       + _NUM + r" MiB, V \((\w+)\):\s*" + _NUM + " MiB")
def _kv_size(m, cfg, figs, n, t):
    cfg["cells"], cfg["kv_layers"] = int(m.group(2)), int(m.group(3))
    cfg.setdefault("n_seq_max", int(m.group(4)))    # 'n/m seqs': sequences / streams
    cfg["type_k"], cfg["type_v"] = m.group(6), m.group(8)
    _add(figs, "KV total", _f(m.group(1)) * MiB, "B", n, t)
    _add(figs, "K", _f(m.group(7)) * MiB, "B", n, t)
    _add(figs, "V", _f(m.group(9)) * MiB, "B", n, t)


@_rule("gguf", r"(\w+)\s+compute buffer size\s*=\s*" + _NUM + " MiB")
def _compute(m, cfg, figs, n, t):
    _add(figs, f"compute buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"(\w+)\s+output buffer size\s*=\s*" + _NUM + " MiB")
def _output(m, cfg, figs, n, t):
    _add(figs, f"output buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"(\w+)\s+input buffer size\s*=\s*" + _NUM + " MiB")
def _input(m, cfg, figs, n, t):
    _add(figs, f"input buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"(?:load_tensors|llm_load_tensors):\s+(\w+)(?: model)? buffer size\s*=\s*" + _NUM + " MiB")
def _model_buf(m, cfg, figs, n, t):
    _add(figs, f"model buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"offloaded (\d+)/(\d+) layers to GPU")
def _offload(m, cfg, figs, n, t):
    cfg["n_gpu_layers"], cfg["n_layer_total"] = int(m.group(1)), int(m.group(2))


# vLLM
@_rule("vllm", r"(?:Model loading took|Loading model weights took)\s+" + _NUM + r"\s*(GiB|GB)")
def _v_weights(m, cfg, figs, n, t):
    _add(figs, "weights", _f(m.group(1)) * GiB, "B", n, t)        # vLLM's "GB" is GiB (divides by 2^30)


@_rule("vllm", r"Available KV cache memory:\s*" + _NUM + r"\s*GiB")
def _v_avail(m, cfg, figs, n, t):
    _add(figs, "available KV memory", _f(m.group(1)) * GiB, "B", n, t)


@_rule("vllm", r"kv_cache_size=" + _NUM + r"GiB")
def _v_avail0(m, cfg, figs, n, t):
    _add(figs, "available KV memory", _f(m.group(1)) * GiB, "B", n, t)
    cfg.setdefault("budget_format", "0.6.4")


@_rule("vllm", r"GPU KV cache size:\s*" + _NUM + r" tokens")
def _v_tokens(m, cfg, figs, n, t):
    _add(figs, "KV cache tokens", _f(m.group(1)), "tokens", n, t)


@_rule("vllm", r"GPU blocks:\s*(\d+)")
def _v_blocks(m, cfg, figs, n, t):
    _add(figs, "KV cache blocks", _f(m.group(1)), "blocks", n, t)


@_rule("vllm", r"Maximum concurrency for " + _NUM + r" tokens per request:\s*" + _NUM + "x")
def _v_conc(m, cfg, figs, n, t):
    cfg["max_model_len"] = int(_f(m.group(1)))
    _add(figs, "maximum concurrency", _f(m.group(2)), "x", n, t)


@_rule("vllm", r"(?:total_gpu_memory)(?:=|\s+|\s*\()" + _NUM + r"\s*GiB")
def _v_total(m, cfg, figs, n, t):
    cfg["total_gpu_memory_bytes"] = _f(m.group(1)) * GiB


@_rule("vllm", r"(?:vLLM (?:API server )?version|vLLM Version\s*:)\s*v?(\d+\.\d+(?:\.\d+)?[\w.+\-]*)")
def _v_version(m, cfg, figs, n, t):
    cfg.setdefault("vllm_version", m.group(1))


@_rule("vllm", r"Initializing an? (V1 )?LLM engine \(v(\d+\.\d+(?:\.\d+)?[\w.+\-]*)\)")
def _v_engine_version(m, cfg, figs, n, t):
    cfg.setdefault("vllm_version", m.group(2))
    cfg.setdefault("vllm_engine", "V1" if m.group(1) else "V0")


@_rule("vllm", r"model weights take\s+" + _NUM + r"\s*GiB")
def _v_budget_weights(m, cfg, figs, n, t):
    cfg["weights_printed_bytes"] = _f(m.group(1)) * GiB
    if not any(f.quantity == "weights" for f in figs):
        _add(figs, "weights", cfg["weights_printed_bytes"], "B", n, t)
    for key, pat in (("non_torch_memory_bytes", r"non_torch_memory(?: takes)?\s+([\d.]+)\s*GiB"),
                     ("activation_bytes", r"activation peak memory(?: takes)?\s+([\d.]+)\s*GiB")):
        hit = re.search(pat, t)
        if hit:
            cfg[key] = float(hit.group(1)) * GiB
    hit = re.search(r"reserved for KV Cache is\s+([\d.]+)\s*GiB", t)
    if hit:
        _add(figs, "available KV memory", float(hit.group(1)) * GiB, "B", n, t)
        cfg.setdefault("budget_format", "0.6.5+")


@_rule("vllm", r"^\W*(?:\S+\s+)*?(non_torch_memory|PyTorch activation peak memory|available_kv_cache_memory)\s+"
       + _NUM + r"\s*GiB\s*$")
def _v_budget_table(m, cfg, figs, n, t):
    v = _f(m.group(2)) * GiB
    if m.group(1) == "available_kv_cache_memory":
        _add(figs, "available KV memory", v, "B", n, t)
        cfg.setdefault("budget_format", "0.6.5+")
    else:
        cfg["non_torch_memory_bytes" if m.group(1) == "non_torch_memory" else "activation_bytes"] = v


@_rule("vllm", r"(?:non_torch_memory|peak_torch_memory|initial_memory_usage|memory_usage_post_profile)=" + _NUM + "GiB")
def _v_profile(m, cfg, figs, n, t):
    for k, v in re.findall(r"(non_torch_memory|peak_torch_memory)=([\d.]+)GiB", t):
        cfg[k + "_bytes"] = float(v) * GiB


@_rule("vllm", r"Setting attention block size to (\d+) tokens")
def _v_hybrid_block(m, cfg, figs, n, t):
    _add(figs, "hybrid attention block", float(m.group(1)), "tokens", n, t)


@_rule("vllm", r"Padding mamba page size by " + _NUM + "%")
def _v_hybrid_pad(m, cfg, figs, n, t):
    _add(figs, "state page padding", _f(m.group(1)), "%", n, t)


@_rule("vllm", r"gpu[_-]memory[_-]utilization[=:'\" (]+([\d.]+)")
def _v_util(m, cfg, figs, n, t):
    cfg["gpu_memory_utilization"] = float(m.group(1))


@_rule("vllm", r"(?:tensor_parallel_size[=:'\" ]+|--tensor[-_]parallel(?:[-_]size)?[= ]+|--tp(?:-size)?\s+|tp_size=)(\d+)")
def _v_tp(m, cfg, figs, n, t):
    cfg["tp"] = int(m.group(1))


@_rule("vllm", r"(?:pipeline_parallel_size[=:'\" ]+|--pipeline-parallel-size\s+)(\d+)")
def _v_pp(m, cfg, figs, n, t):
    cfg["pp"] = int(m.group(1))


@_rule("vllm", r"kv[_-]cache[_-]dtype[=:'\" ]+(\w+)")
def _v_kvd(m, cfg, figs, n, t):
    cfg["kv_cache_dtype"] = m.group(1)


@_rule("vllm", r"(?:\bmodel=|'model': |--model(?:-path)? |vllm serve |MODEL: )'?\"?([\w./\-]+)")
def _v_model(m, cfg, figs, n, t):
    cfg.setdefault("model_name", m.group(1).rstrip("'\","))


# SGLang
@_rule("sglang", r"Load weight end\..*?avail mem=" + _NUM + r" GB, mem usage=" + _NUM + " GB")
def _s_weights(m, cfg, figs, n, t):
    cfg["avail_after_load_bytes"] = _f(m.group(1)) * GiB
    _add(figs, "weights", _f(m.group(2)) * GiB, "B", n, t)


@_rule("sglang", r"KV Cache is allocated\.(?: dtype: ([\w.]+),)? #tokens: (\d+), K size: " + _NUM + " GB, V size: "
       + _NUM + " GB")
def _s_kv(m, cfg, figs, n, t):
    if m.group(1):
        cfg["kv_cache_dtype"] = m.group(1).replace("torch.", "")
    cfg["pool_tokens"] = int(m.group(2))
    _add(figs, "pool tokens", float(m.group(2)), "tokens", n, t)
    _add(figs, "K", _f(m.group(3)) * GiB, "B", n, t)
    _add(figs, "V", _f(m.group(4)) * GiB, "B", n, t)


@_rule("sglang", r"Load weight begin\. avail mem=" + _NUM + " GB")
def _s_before(m, cfg, figs, n, t):
    cfg.setdefault("avail_before_load_bytes", _f(m.group(1)) * GiB)


@_rule("sglang", r"(?:The available memory for KV cache is\s+" + _NUM + r" GB|initial available_bytes (\d+))")
def _s_budget(m, cfg, figs, n, t):
    v = _f(m.group(1)) * GiB if m.group(1) else float(m.group(2))
    _add(figs, "KV budget", v, "B", n, t)


@_rule("sglang", r"Memory pool end\. avail mem=" + _NUM + " GB")
def _s_pool_end(m, cfg, figs, n, t):
    _add(figs, "free after pool", _f(m.group(1)) * GiB, "B", n, t)


@_rule("sglang", r"mem[_-]fraction[_-]static[= ]+([\d.]+)")
def _s_frac(m, cfg, figs, n, t):
    cfg["mem_fraction_static"] = float(m.group(1))


@_rule("vllm", r"--max[_-]model[_-]len[= ]+(\d+)")
def _v_max_len(m, cfg, figs, n, t):
    cfg.setdefault("max_model_len", int(m.group(1)))


#: handlers that only set configuration (a fixture's "# config:" header line may use them)
_CONFIG_HANDLERS = {"_v_kvd", "_v_max_len", "_v_tp", "_v_pp", "_v_util", "_v_version", "_s_frac", "_n_ctx", "_fa",
                    "_n_seq", "_ubatch"}

_FAMILY = {"ollama": ("gguf",), "llama.cpp": ("gguf",), "vllm": ("vllm",), "sglang": ("sglang", "vllm")}


def parse_log(text: str, engine: str | None = None) -> tuple[str, dict[str, Any], list[Logged], list[str]]:
    """(engine, configuration, memory figures, unknown memory-looking lines) from a log's text."""
    eng = engine or detect_engine(text)
    if eng not in ENGINES_READ:
        raise K3InputError("engine", f"{engine!r} is not an engine check-log reads", ", ".join(ENGINES_READ))
    fams = _FAMILY[eng]
    cfg: dict[str, Any] = {}
    figs: list[Logged] = []
    unknown: list[str] = []
    header = True
    for n, line in enumerate(text.splitlines(), 1):
        if header and line.startswith("#"):
            # a leading comment block (fixtures: the source); a "# config:" line there states settings the source
            # gives in prose (read as configuration, never as a figure)
            if line.startswith("# config:"):
                for fam, pat, fn in _PATTERNS:
                    m = pat.search(line)
                    if fam in fams and m and fn.__name__ in _CONFIG_HANDLERS:
                        fn(m, cfg, [], n, line)
            continue
        header = False
        hit = False
        for fam, pat, fn in _PATTERNS:
            if fam not in fams:
                continue
            m = pat.search(line)
            if m:
                fn(m, cfg, figs, n, line)
                hit = True
        if not hit and _MEMORY_HINT.search(line) and re.search(r"\d", line):
            unknown.append(f"{n}: {line.strip()[:160]}")
    return eng, cfg, figs, unknown


# ----------------------------------------------------------------------------- predicting

def _row(component: str, logged: float, predicted: float, unit: str, tol: float, rule: str) -> CheckRow:
    err = 100.0 * (predicted - logged) / logged if logged else (0.0 if not predicted else 100.0)
    return CheckRow(component, logged, predicted, unit, round(err, 3), tol, abs(err) <= tol, rule)


def _resolve(name: str | None, given: Any):
    """An architecture from ``given`` (id, path or LoadedModel) or the log's model name; None if unknown."""
    from k3lib.core.models import get_model
    from k3lib.engines.base import _resolve_model

    if given is not None:
        if isinstance(given, (str, Path)) and Path(str(given)).suffix == ".json":
            from k3lib.core.data import DATA_DIR
            from k3lib.loaders import load_config
            for cand in (Path(str(given)), DATA_DIR.parent / str(given)):   # as given, or from the repository root
                if cand.exists():
                    return load_config(cand)
        if isinstance(given, (str, Path)) and Path(str(given)).exists():
            from k3lib.loaders import load_path        # a .gguf file or a safetensors folder
            return load_path(given)
        return _resolve_model(given)[0] if not isinstance(given, str) else get_model(given)
    if not name:
        return None
    base = name.rstrip("/").split("/")[-1]
    base = re.sub(r"\s+", "-", base.strip())
    for cand in (name, base, re.sub(r"^Meta-", "", base), re.sub(r"-(Instruct|Chat|it)$", "", base, flags=re.I),
                 re.sub(r"-(Instruct|Chat|it)$", "", re.sub(r"^Meta-", "", base), flags=re.I)):
        try:
            return get_model(cand)
        except K3InputError:
            continue
    return None


def _fig(figs: list[Logged], q: str) -> list[Logged]:
    return [f for f in figs if f.quantity == q]


def _main_compute(figs):
    """The compute buffer of the device that runs the graph: the first one not on the host (CUDA0,
    ROCm0, Metal…), or the CPU's when the log has no other."""
    comp = [f for f in figs if f.quantity.startswith("compute buffer")]
    dev = [f for f in comp if not re.search(r"\((CPU|CUDA_Host|Host)\)", f.quantity)]
    return (dev or comp or [None])[0]


def _check_gguf(cfg, figs, arch, rows, missing, notes):
    from k3lib.engines.llamacpp import _llamacpp_row_bytes

    bufs = [f for f in figs if f.quantity.startswith("KV buffer (")]
    prev = 0
    for f in _fig(figs, "KV total"):              # each cache's buffer lines come just before its size line
        mine = [b for b in bufs if prev < b.line < f.line]
        prev = f.line
        if mine:
            rows.append(_row("KV buffers summed over devices", f.value, sum(b.value for b in mine), "B",
                             KV_TOLERANCE_PCT, "llama.cpp allocates each layer's K and V on the device of its "
                             "layer (-ngl / partial offload), so the per-device KV buffers add up to the total"))
    for f in figs:
        if f.quantity.startswith("compute buffer") and f is _main_compute(figs) and arch is not None \
                and cfg.get("n_ctx") and not cfg.get("mla_dims"):
            from k3lib.engines.llamacpp import llamacpp_compute_buffer_bytes
            try:
                pred = llamacpp_compute_buffer_bytes(
                    arch, context_tokens=cfg["n_ctx"], n_ctx=cfg["n_ctx"], n_seq=cfg.get("n_seq_max", 1),
                    flash_attn=cfg.get("flash_attn", True), n_ubatch=cfg.get("n_ubatch", 512),
                    swa_full=cfg.get("swa_full", False), kv_unified=cfg.get("kv_unified", False))
            except K3InputError as exc:
                missing.append(f"{f.quantity}: {exc}")
                continue
            rows.append(_row(f.quantity, f.value, pred, "B", COMPUTE_TOLERANCE_PCT,
                             "a model of llama.cpp's worst-case graph (mask per cache, scores without flash attention, "
                             "logits + widest FFN + 3·hidden): an approximation, measured per family in tests/llamacpp"))
        elif f.quantity.startswith(("compute buffer", "output buffer", "input buffer", "model buffer")):
            missing.append(f"{f.quantity} = {f.value / MiB:,.2f} MiB: not predicted from a log (the host side of the "
                           "compute graph, and the GGUF's tensor types, are not in it)")
    for f in _fig(figs, "model size"):
        if arch is None or not cfg.get("ftype"):
            missing.append("model size: needs the model and its file type (model ftype line, --model)")
            continue
        from k3lib.engines.gguf_recipe import gguf_recipe_bytes
        try:
            pred = gguf_recipe_bytes(arch, cfg["ftype"])["total"]
        except K3InputError as exc:
            missing.append(f"model size: {exc}")
            continue
        rows.append(_row("model size (tensor data)", f.value, pred, "B", WEIGHTS_TOLERANCE_PCT,
                         f"llama.cpp src/llama-quant.cpp llama_tensor_get_type (commit 007dbbf): per-tensor types of "
                         f"a {cfg['ftype']} file from {arch.id}'s shapes"))
    cells = cfg.get("cells") or cfg.get("n_ctx")
    tk, tv = (cfg.get("type_k") or "f16").lower(), (cfg.get("type_v") or "f16").lower()
    if arch is not None and cfg.get("n_ctx") and not cfg.get("layer_dims"):
        _check_gguf_caches(cfg, figs, arch, rows, missing, tk, tv)
        return
    if cfg.get("mla_dims"):                         # ik_llama.cpp: latent rows, kv^T only with -mla 1
        cfg["layer_dims"] = {i: (rank + rope, rank if cfg.get("kvt_used", True) else 0)
                             for i, (rope, rank) in cfg["mla_dims"].items()}
    dims = cfg.get("layer_dims")
    if dims:
        k_rows = [d[0] for d in dims.values()]
        v_rows = [d[1] for d in dims.values()]
        n_layers = max(dims) + 1
        if len(dims) < n_layers:                       # an excerpt: the layers shown repeat one shape
            k_rows = [k_rows[0]] * n_layers
            v_rows = [v_rows[0]] * n_layers
            notes.append(f"{len(dims)} of {n_layers} per-layer lines in the log; the others taken as the same shape")
        source = ("the log's per-layer kv_lora_rank + n_embd_head_qk_rope (ik_llama.cpp's latent c^KV; its "
                  "transposed kv^T, F16, only with -mla 1)" if cfg.get("mla_dims")
                  else "the log's per-layer n_embd_k_gqa / n_embd_v_gqa")
    elif cfg.get("n_layer") and cfg.get("n_embd_k_gqa"):
        n_layers = cfg["n_layer"]
        k_rows = [cfg["n_embd_k_gqa"]] * n_layers
        v_rows = [cfg.get("n_embd_v_gqa", cfg["n_embd_k_gqa"])] * n_layers
        source = "the log's n_layer × n_embd_k_gqa"
    elif arch is not None:
        k_rows, v_rows = [], []
        for g in arch.attention:
            if g.kind in ("full", "sliding"):
                k_rows += [g.kv_heads * g.head_dim] * g.count
                v_rows += [g.kv_heads * (g.v_head_dim or g.head_dim)] * g.count
            elif g.kind == "mla":
                k_rows += [g.kv_lora_rank + g.qk_rope_head_dim] * g.count
                v_rows += [g.kv_lora_rank] * g.count
        if any(g.kind == "sliding" for g in arch.attention):
            notes.append("sliding-window layers costed at the full context here (iSWA logs print two caches)")
        source = f"{arch.id}'s architecture"
    else:
        missing.append("K and V: the log names no layer shapes and no known model (pass --model)")
        return
    if not cells:
        missing.append("K and V: the log has no n_ctx or cell count")
        return
    k_pred = sum(cells * _llamacpp_row_bytes(tk, r) for r in k_rows)
    v_pred = sum(cells * _llamacpp_row_bytes(tv, r) for r in v_rows)
    rule = (f"llama.cpp src/llama-kv-cache.cpp: cells ({cells:,}) × Σ layers row bytes of {{}} ({{}}), rows from "
            f"{source}")
    for q, pred, t in (("K", k_pred, tk), ("V", v_pred, tv)):
        for f in _fig(figs, q):
            rows.append(_row(f"{q} cache", f.value, pred, "B", KV_TOLERANCE_PCT, rule.format(q, t)))
    for f in _fig(figs, "KV total"):
        rows.append(_row("KV total", f.value, k_pred + v_pred, "B", KV_TOLERANCE_PCT, "K + V"))


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


def _check_gguf_caches(cfg, figs, arch, rows, missing, tk, tv):
    """Each KV cache line (full, then sliding) and the recurrent line against
    :func:`~k3lib.engines.llamacpp.llamacpp_memory` with the log's settings; the rule set follows
    the log (an ``n_ctx_seq`` line means llama.cpp@0c1e570's 256-cell padding)."""
    from k3lib.engines.llamacpp import llamacpp_memory

    rules = "0c1e570" if "n_ctx_seq" in cfg else "2025"
    try:
        mem = llamacpp_memory(arch, n_ctx=cfg["n_ctx"], n_seq=cfg.get("n_seq_max", 1),
                              flash_attn=cfg.get("flash_attn", True), type_k=tk, type_v=tv,
                              n_ubatch=cfg.get("n_ubatch", 512), swa_full=cfg.get("swa_full", False),
                              kv_unified=cfg.get("kv_unified", False), n_rs_seq=cfg.get("n_rs_seq", 0), rules=rules)
    except K3InputError as exc:
        missing.append(f"K and V: {exc}")
        return
    caches = []
    if mem["k"] or mem["v"]:
        caches.append(("", mem["cells"], mem["k"], mem["v"]))
    if mem["swa_cells"]:
        caches.append(("sliding-window ", mem["swa_cells"], mem["swa_k"], mem["swa_v"]))
    def row(component, logged, predicted, unit, tol, rule):
        # llama.cpp prints MiB to 2 decimals: a figure within half of its last digit is reproduced
        r = _row(component, logged, predicted, unit, tol, rule)
        return r if r.within or abs(predicted - logged) > 0.005 * MiB + 1 else dataclasses.replace(r, within=True)

    rule = (f"llama.cpp src/llama-kv-cache.cpp (rules {rules}): {{}} cells × Σ {arch.id}'s layers of that cache "
            f"× row bytes of {{}} ({{}})")
    for (label, n_cells, k, v), fk, fv, ft in zip(caches, _fig(figs, "K"), _fig(figs, "V"), _fig(figs, "KV total")):
        rows.append(row(f"{label}K cache", fk.value, k, "B", KV_TOLERANCE_PCT, rule.format(f"{n_cells:,}", "K", tk)))
        if fv.value or v:
            rows.append(row(f"{label}V cache", fv.value, v, "B", KV_TOLERANCE_PCT,
                             rule.format(f"{n_cells:,}", "V", tv)))
        rows.append(row(f"{label}KV total", ft.value, k + v, "B", KV_TOLERANCE_PCT, "K + V"))
    if len(_fig(figs, "K")) != len(caches):
        missing.append(f"the log has {len(_fig(figs, 'K'))} KV cache lines; {arch.id} has {len(caches)} caches")
    for q, pred in (("R", mem["r"]), ("S", mem["s"])):
        for f in _fig(figs, q):
            rows.append(row(f"recurrent {q} ({'conv history' if q == 'R' else 'state'})", f.value, pred, "B",
                             KV_TOLERANCE_PCT, f"llama.cpp src/llama-memory-recurrent.cpp: {mem['rs_rows']} rows "
                             f"(sequences × (1 + n_rs_seq)) × F32 per recurrent layer"))


def _check_vllm(cfg, figs, arch, rows, missing, notes):
    from k3lib.engines.vllm import (vllm_activation_peak_bytes, vllm_available_kv_bytes, vllm_kv_layout,
                                    vllm_non_torch_bytes, vllm_rules, vllm_weights_bytes_per_rank)

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
    for f in _fig(figs, "weights"):
        rows.append(_row("weights per rank", f.value, w_pred, "B", WEIGHTS_TOLERANCE_PCT,
                         f"vLLM weights rule (vocab padded to 64, sharded ÷ TP={tp}, replicated parts whole)"))
    hyb = _fig(figs, "hybrid attention block") + _fig(figs, "state page padding")
    if hyb:
        hl = vllm_kv_layout(arch, tp=tp, kv_dtype=kv, vllm_version=version, engine=rules.engine)
        for f in hyb:
            block = f.quantity == "hybrid attention block"
            rows.append(_row(f.quantity, f.value, hl.block_tokens if block else round(hl.state_padding_pct, 2),
                             "tokens" if block else "%", KV_TOLERANCE_PCT if block else 1.0,
                             f"{rules.label} HybridAttentionMambaModelConfig: a × ⌈{hl.state_bytes:,} B recurrent state "
                             f"÷ (a × {hl.page_bytes // hl.block_tokens:,} B per token)⌉, a = "
                             f"{rules.mla_hybrid_alignment if any(k == 'mla' for k, _ in hl.groups) else 16}"
                             + ("" if block else "; padding = page ÷ state − 1, printed to 2 decimals")))
    avail = _fig(figs, "available KV memory")
    total, util = cfg.get("total_gpu_memory_bytes"), cfg.get("gpu_memory_utilization")
    for f in avail[-1:]:
        if not (total and util):
            missing.append("available KV memory: needs the GPU's total memory and gpu_memory_utilization, which "
                           "the log does not print")
            continue
        w_logged = cfg.get("weights_printed_bytes") or next((x.value for x in _fig(figs, "weights")), None)
        act, nt, printed = cfg.get("activation_bytes"), cfg.get("non_torch_memory_bytes"), 2
        if act is None and cfg.get("peak_torch_memory_bytes") and w_logged:
            act = cfg["peak_torch_memory_bytes"] - w_logged        # 0.6.4 prints torch's peak with the weights
            printed += 1
        if act is not None:
            a_pred = vllm_activation_peak_bytes(arch, tp=tp, vllm_version=version, engine=rules.engine,
                                                max_model_len=cfg.get("max_model_len"))
            how = ("V0: T·(3·I/TP + 3·D)·b over the profiled batch, or the logits of 256 sequences"
                   if rules.engine == "V0" else "V1: constants fitted to the 0.19 H100 sweep")
            rows.append(_row("activation peak", act, a_pred, "B", WEIGHTS_TOLERANCE_PCT,
                             f"{rules.label} profiling run, an estimate ({how}); the log's figure is used in the "
                             "budget row below"))
        src = "activation and non-torch as the log prints them"
        if act is None or nt is None:
            src = f"activation and non-torch from the profile ({rules.label}; V1 constants fitted to 0.19 on H100)"
            act = act if act is not None else vllm_activation_peak_bytes(
                arch, tp=tp, vllm_version=version, engine=rules.engine, max_model_len=cfg.get("max_model_len"))
            nt = nt if nt is not None else vllm_non_torch_bytes(tp=tp)
        else:
            printed += 2
        pred = vllm_available_kv_bytes(total_bytes=total, gpu_memory_utilization=util, weights_bytes=w_pred,
                                       activation_bytes=act, non_torch_bytes=nt, vllm_version=version,
                                       engine=rules.engine)
        r = _row("available KV memory", f.value, pred, "B", KV_TOLERANCE_PCT,
                 f"{rules.label} budget rule '{rules.budget}': {util:g} × total − weights (predicted) − activation − "
                 f"non-torch, {src}; each printed GiB is rounded to 0.01")
        slack = printed * 0.005 * GiB
        rows.append(r if r.within or abs(pred - f.value) > slack else dataclasses.replace(r, within=True))
    if not avail:
        if _fig(figs, "KV cache tokens") or _fig(figs, "KV cache blocks"):
            missing.append("KV tokens/blocks: the log prints no available KV memory")
        return
    a = avail[-1].value
    lay = vllm_kv_layout(arch, tp=tp, kv_dtype=kv, vllm_version=version, engine=rules.engine)
    lo_b, hi_b = int(a - 0.005 * GiB), int(a + 0.005 * GiB)
    for f in _fig(figs, "KV cache tokens"):
        pred = lay.tokens(int(a))
        lo, hi = lay.tokens(lo_b), lay.tokens(hi_b)
        r = _row("KV cache tokens", f.value, pred, "tokens", KV_TOLERANCE_PCT,
                 f"{rules.label}: ⌊available ÷ ({lay.page_bytes:,} B page × {lay.group_size} layers)⌋ ÷ "
                 f"{lay.num_groups} group(s) × {lay.block_tokens}; the printed GiB (2 decimals) allows {lo:,}–{hi:,}")
        rows.append(r if r.within or not (lo <= f.value <= hi) else dataclasses.replace(r, within=True))
        if tp > 1 and f.value < lo:
            need = f.value / lay.block_tokens * lay.num_groups * lay.bytes_per_block / GiB
            notes.append(f"TP={tp}: every rank prints its own 'Available KV cache memory' and vLLM keeps the smallest "
                         f"rank's blocks (0.10.2 unify_kv_cache_configs, 0.19.0 get_kv_cache_configs); the printed "
                         f"tokens fit a rank with about {need:.2f} GiB, so the excerpt's two lines may come from "
                         "different ranks")
    for f in _fig(figs, "KV cache blocks"):
        pred = lay.num_blocks(int(a))
        blo, bhi = lay.num_blocks(lo_b), lay.num_blocks(hi_b)
        r = _row("KV cache blocks", f.value, pred, "blocks", KV_TOLERANCE_PCT,
                 f"{rules.label}: ⌊available ÷ ({lay.page_bytes:,} B × {lay.group_size} layers)⌋ (V0 prints blocks); "
                 f"the printed GiB allows {blo:,}–{bhi:,}")
        rows.append(r if r.within or not (blo <= f.value <= bhi) else dataclasses.replace(r, within=True))
    L = cfg.get("max_model_len")
    for f in _fig(figs, "maximum concurrency")[-1:]:
        pred = lay.max_concurrency(int(a), max_model_len=L)
        lo, hi = lay.max_concurrency(lo_b, max_model_len=L), lay.max_concurrency(hi_b, max_model_len=L)
        rule = ("blocks × block ÷ max_model_len" if lay.concurrency_rule == "tokens/len"
                else "blocks ÷ Σ over groups of the blocks one max_model_len request needs")
        r = _row("maximum concurrency", f.value, pred, "x", KV_TOLERANCE_PCT,
                 f"{rules.label}: {rule} (L = {L:,}); printed to 2 decimals, the printed GiB allows "
                 f"{lo:.3f}–{hi:.3f}")
        ok = round(lo, 2) - 0.005 <= f.value <= round(hi, 2) + 0.005
        rows.append(r if r.within or not ok else dataclasses.replace(r, within=True))


def _check_sglang(cfg, figs, arch, rows, missing, notes):
    if arch is None:
        missing.append(f"every figure: model {cfg.get('model_name')!r} is not a built-in model (pass --model)")
        return
    from k3lib.engines.base import _kv_bytes_per_element

    tp = cfg.get("tp", 1)
    kvd = cfg.get("kv_cache_dtype", "auto")
    kv_b = 1.0 if "float8" in kvd or kvd.startswith("fp8") else _kv_bytes_per_element("auto", 2)
    tokens = cfg.get("pool_tokens")
    k_cell = v_cell = 0.0
    for g in arch.attention:
        if g.kind == "mla":
            k_cell += g.count * (g.kv_lora_rank + g.qk_rope_head_dim) * kv_b
        elif g.kind in ("full", "sliding"):
            h = kv_heads_per_rank(g.kv_heads, tp)
            k_cell += g.count * h * g.head_dim * kv_b
            v_cell += g.count * h * (g.v_head_dim or g.head_dim) * kv_b
    rule = (f"SGLang srt/mem_cache/memory_pool.py: #tokens ({tokens:,}) × layers × max(1, KV heads ÷ TP={tp}) × head "
            f"dim × {kv_b:g} B" if tokens else "")
    for q, cell in (("K", k_cell), ("V", v_cell)):
        for f in _fig(figs, q):
            rows.append(_row(f"{q} pool", f.value, tokens * cell, "B", KV_TOLERANCE_PCT, rule))
    for f in _fig(figs, "weights"):
        from k3lib.engines.vllm import vllm_weights_bytes_per_rank
        w = vllm_weights_bytes_per_rank(arch, tp=tp)["total"]
        rows.append(_row("weights per rank", f.value, w, "B", WEIGHTS_TOLERANCE_PCT,
                         "weights sharded ÷ TP like vLLM (SGLang's mem usage also holds the CUDA context)"))
    _check_sglang_pool(cfg, figs, arch, tp, kv_b, rows, missing)


def _check_sglang_pool(cfg, figs, arch, tp, kv_b, rows, missing):
    """The KV budget and pool size from the log's free-memory figures and mem_fraction_static."""
    from k3lib.engines.sglang import sglang_cell_bytes, sglang_kv_budget_bytes

    after, frac = cfg.get("avail_after_load_bytes"), cfg.get("mem_fraction_static")
    usage = next((f.value for f in _fig(figs, "weights")), None)
    before = cfg.get("avail_before_load_bytes") or (after + usage if after is not None and usage is not None else None)
    budget_logged = _fig(figs, "KV budget")
    pred_budget, n_printed = None, 3 if cfg.get("avail_before_load_bytes") else 4
    rule = ("SGLang 0.5.5 model_runner.py profile_max_num_token: free after loading − free before loading × "
            f"(1 − mem_fraction_static {frac}); free before = 'Load weight begin' avail mem, or 'Load weight end' "
            "avail mem + mem usage")
    if after is not None and before is not None and frac:
        pred_budget = sglang_kv_budget_bytes(available_after_load_bytes=after, total_before_load_bytes=before,
                                             mem_fraction_static=frac)
        for f in budget_logged[:1]:
            r = _row("KV budget (rest memory)", f.value, pred_budget, "B", KV_TOLERANCE_PCT, rule)
            ok = abs(pred_budget - f.value) <= n_printed * 0.005 * GiB
            rows.append(r if r.within or not ok else dataclasses.replace(r, within=True))
    cell = sglang_cell_bytes(arch, tp=tp, kv_dtype=kv_b) if arch is not None else 0
    for f in _fig(figs, "pool tokens"):
        budget = budget_logged[0].value if budget_logged else pred_budget
        if budget is None or not cell:
            missing.append(f"pool tokens = {f.value:,.0f}: needs the free memory after loading (Load weight end), "
                           "before loading and mem_fraction_static, or a printed KV budget")
            continue
        slack = (0.005 if budget_logged else n_printed * 0.005) * GiB
        pred = int(budget) // cell
        lo, hi = int(budget - slack) // cell, int(budget + slack) // cell
        r = _row("pool tokens", f.value, pred, "tokens", KV_TOLERANCE_PCT,
                 f"⌊KV budget ÷ {cell:,} B per token slot⌋ ({'printed' if budget_logged else 'predicted'} budget; "
                 f"its rounding allows {lo:,}–{hi:,})")
        rows.append(r if r.within or not (lo <= f.value <= hi) else dataclasses.replace(r, within=True))
    for f in _fig(figs, "free after pool"):
        missing.append(f"free after pool = {f.value / GiB:,.2f} GiB: what is left after the pool (activations, "
                       "CUDA graphs) is not predicted")


def check_log(text: str, *, engine: str | None = None, model: Any = None, **overrides: Any) -> LogCheck:
    """Read ``text`` (an engine log) and compare every memory figure with the profile's prediction.

    ``model`` names the model when the log does not (a built-in id, a config.json path);
    ``overrides`` replace configuration read from the log (``tp``, ``n_ctx``, ``type_k``…).
    """
    eng, cfg, figs, unknown = parse_log(text, engine)
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    if not figs:
        raise K3InputError("LOG", f"the {eng} log has no memory line check-log knows",
                           "a log with its model-loading and KV-cache lines")
    arch = _resolve(cfg.get("model_name"), model)
    if arch is not None and hasattr(arch, "require_architecture"):
        arch = arch.require_architecture()
    rows: list[CheckRow] = []
    missing: list[str] = []
    notes: list[str] = []
    {"ollama": _check_gguf, "llama.cpp": _check_gguf, "vllm": _check_vllm, "sglang": _check_sglang}[eng](
        cfg, figs, arch, rows, missing, notes)
    cfg_out = {k: v for k, v in cfg.items() if k != "layer_dims"}
    if "layer_dims" in cfg:
        cfg_out["layers_in_log"] = len(cfg["layer_dims"])
    return LogCheck(eng, cfg_out, tuple(figs), tuple(rows), tuple(missing), tuple(unknown),
                    getattr(arch, "id", None), tuple(notes))


# ----------------------------------------------------------------------------- showing

def _fmt(v: float, unit: str) -> str:
    if unit == "x":
        return f"{v:,.3f}x"
    if unit == "%":
        return f"{v:,.2f} %"
    return f"{v / MiB:,.2f} MiB" if unit == "B" else f"{v:,.0f} {unit}"


def render_log_check(chk: LogCheck, *, max_unknown: int = 20) -> str:
    """Plain-text report: configuration, logged vs predicted per component, what was not predicted, unknown lines."""
    out = [f"engine: {chk.engine}   model: {chk.model_id or 'not identified'}",
           "configuration read: " + (", ".join(f"{k}={v}" for k, v in chk.config.items()) or "none")]
    if chk.rows:
        out.append(f"{'component':<32}{'logged':>18}{'predicted':>18}{'error':>9}  within")
        for r in chk.rows:
            out.append(f"{r.component:<32}{_fmt(r.logged, r.unit):>18}{_fmt(r.predicted, r.unit):>18}"
                       f"{r.error_pct:>8.2f}%  {'yes' if r.within else 'NO'} (±{r.tolerance_pct:g} %)")
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
    p = sub.add_parser("check-log", help="read an engine log and compare its memory lines with the prediction",
                       description="Read a vLLM, SGLang, llama.cpp or Ollama log: its configuration and every "
                                   "memory line, predicted vs logged per component with the error and the rule. "
                                   "Lines not understood are listed, not guessed.")
    p.add_argument("log", metavar="LOG", help="the log file ('-' for standard input)")
    p.add_argument("--engine", default=None, help="vllm, sglang, llama.cpp or ollama (default: detected)")
    p.add_argument("--model", default=None, help="the model when the log does not name it (a built-in id)")
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
        parse_vllm_version(args.vllm_version)                 # one clear error for a bad version
    chk = check_log(text, engine=args.engine, model=args.model, tp=args.tp, kv_cache_dtype=args.kv_cache_dtype,
                    vllm_version=args.vllm_version, max_model_len=args.max_model_len)
    if args.json:
        print(json.dumps({"engine": chk.engine, "model": chk.model_id, "config": chk.config,
                          "rows": [dataclasses.asdict(r) for r in chk.rows], "not_predicted": list(chk.not_predicted),
                          "unknown_lines": list(chk.unknown_lines), "notes": list(chk.notes)}, indent=2, default=str))
    else:
        print(render_log_check(chk))
    return 0


__all__ = ["check_log", "parse_log", "detect_engine", "render_log_check", "add_check_log_parser", "cmd_check_log",
           "LogCheck", "CheckRow", "Logged", "KV_TOLERANCE_PCT", "WEIGHTS_TOLERANCE_PCT"]
