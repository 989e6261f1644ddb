"""Reading an engine log for ``k3plan check-log``: which engine wrote it, the configuration it
states and every memory figure it prints (:func:`parse_log`), one regular-expression rule per
line shape and engine family; :mod:`k3lib.engines.logcheck` predicts and compares them.

Units as the engines print them: llama.cpp/Ollama "MiB" are 2^20 B; vLLM "GiB" are
2^30 B, and vLLM ≤ 0.6 printed "GB" meaning GiB (``Loading model weights took 14.9888 GB``);
SGLang "GB" are 2^30 B (it divides by 1 << 30).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.core.units import GiB, MiB

ENGINES_READ = ("vllm", "sglang", "llama.cpp", "ollama")

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


def detect_engine(text: str) -> str:
    """'ollama', 'llama.cpp', 'sglang' or 'vllm' from tell-tale lines; K3InputError otherwise."""
    if re.search(r"ollama\[\d+\]|source=server\.go|level=INFO source=|ollama-\d", text):
        return "ollama"
    if re.search(
        r"llama_kv_cache|llama_new_context_with_model|llama_init_from_model|llama_context:|load_tensors:", text
    ):
        return "llama.cpp"
    if re.search(r"KV Cache is allocated|Load weight end|sglang|mem_fraction_static", text):
        return "sglang"
    if re.search(r"Model loading took|Loading model weights took|GPU KV cache size|GPU blocks|vllm", text, re.I):
        return "vllm"
    raise K3InputError(
        "LOG",
        "no vLLM, SGLang, llama.cpp or Ollama memory line found",
        "a log printed by one of " + ", ".join(ENGINES_READ),
    )


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
    v = m.group(1).lower()
    if v == "auto":
        # llama.cpp@0c1e570 (src/llama-context.cpp): auto is resolved when the graph is first reserved —
        # enabled where the backend runs FLASH_ATTN_EXT for this model (every CPU build does) — and said
        # on a later line ('Flash Attention enabled/disabled', read below); until then taken as enabled
        cfg.setdefault("flash_attn", True)
        cfg["flash_attn_auto"] = True
        return
    cfg["flash_attn"] = v in ("1", "true", "enabled", "on")


@_rule("gguf", r"Flash Attention (?:was auto, set to )?(enabled|disabled)")
def _fa_resolved(m, cfg, figs, n, t):
    cfg["flash_attn"] = m.group(1) == "enabled"


@_rule("gguf", r"\bn_ctx_slot=(\d+)")
def _n_ctx_slot(m, cfg, figs, n, t):
    cfg.setdefault("n_ctx", int(m.group(1)))  # llama-server's slot line (one slot: the whole context)


@_rule("gguf", r"\bmla_attn\s*=\s*(\d+)")
def _mla_attn(m, cfg, figs, n, t):
    cfg["ik_mla"] = int(m.group(1))  # ik_llama.cpp's -mla mode


@_rule("gguf", r"layer\s+(\d+): n_embd_head_qk_rope = (\d+), kv_lora_rank = (\d+)")
def _mla_dims(m, cfg, figs, n, t):
    cfg.setdefault("mla_dims", {})[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))


@_rule(
    "gguf",
    r"KV self size\s*=\s*" + _NUM + r" MiB, c\^KV \((\w+)\):\s*" + _NUM + r" MiB, kv\^T: (not used|" + _NUM + " MiB)",
)
def _kv_self_mla(m, cfg, figs, n, t):
    # ik_llama.cpp's MLA cache: the latent c^KV (K) and, with -mla 1, its transposed copy kv^T (V, F16)
    cfg["type_k"], cfg["type_v"] = m.group(2), "f16"
    cfg["kvt_used"] = m.group(4) != "not used"
    _add(figs, "KV total", _f(m.group(1)) * MiB, "B", n, t)
    _add(figs, "K", _f(m.group(3)) * MiB, "B", n, t)
    _add(figs, "V", _f(m.group(5)) * MiB if cfg["kvt_used"] else 0.0, "B", n, t)


@_rule("gguf", r"\bn_ctx_seq\s*=\s*(\d+)")
def _n_ctx_seq(m, cfg, figs, n, t):
    cfg["n_ctx_seq"] = int(m.group(1))  # printed since llama.cpp's 256-cell padding (PR 17046)


@_rule("gguf", r"\bkv_unified\s*=\s*(\w+)")
def _kv_unified(m, cfg, figs, n, t):
    cfg["kv_unified"] = m.group(1).lower() in ("1", "true")


@_rule("gguf", r"\bn_rs_seq\s*=\s*(\d+)")
def _n_rs_seq(m, cfg, figs, n, t):
    cfg["n_rs_seq"] = int(m.group(1))


@_rule("gguf", r"using full-size SWA cache")
def _swa_full(m, cfg, figs, n, t):
    cfg["swa_full"] = True


@_rule(
    "gguf",
    r"llama_memory_recurrent: size =\s*" + _NUM + r" MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+) seqs"
    r"\s+(\d+) rs_seq\), R \((\w+)\):\s*" + _NUM + r" MiB, S \((\w+)\):\s*" + _NUM + " MiB",
)
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


_FTYPE_NAMES = {
    "Q4_K - MEDIUM": "Q4_K_M",
    "Q4_K - SMALL": "Q4_K_S",
    "Q5_K - MEDIUM": "Q5_K_M",
    "Q5_K - SMALL": "Q5_K_S",
    "Q3_K - MEDIUM": "Q3_K_M",
    "Q2_K - MEDIUM": "Q2_K",
    "Q6_K": "Q6_K",
}


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


@_rule(
    "gguf", r"KV self size\s*=\s*" + _NUM + r" MiB, K \((\w+)\):\s*" + _NUM + r" MiB, V \((\w+)\):\s*" + _NUM + " MiB"
)
def _kv_self(m, cfg, figs, n, t):
    cfg["type_k"], cfg["type_v"] = m.group(2), m.group(4)
    _add(figs, "KV total", _f(m.group(1)) * MiB, "B", n, t)
    _add(figs, "K", _f(m.group(3)) * MiB, "B", n, t)
    _add(figs, "V", _f(m.group(5)) * MiB, "B", n, t)


@_rule(
    "gguf",
    r"size =\s*"
    + _NUM
    + r" MiB \(\s*(\d+) cells,\s*(\d+) layers,\s*(\d+)/\s*(\d+) seqs\), K \((\w+)\):\s*"
    + _NUM
    + r" MiB, V \((\w+)\):\s*"
    + _NUM
    + " MiB",
)
def _kv_size(m, cfg, figs, n, t):
    cfg["cells"], cfg["kv_layers"] = int(m.group(2)), int(m.group(3))
    cfg.setdefault("n_seq_max", int(m.group(4)))  # 'n/m seqs': sequences / streams
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


@_rule("gguf", r"(\w+) RS buffer size\s*=\s*" + _NUM + r" MiB")
def _rs_buf(m, cfg, figs, n, t):
    _add(figs, f"RS buffer ({m.group(1)})", _f(m.group(2)) * MiB, "B", n, t)


@_rule("gguf", r"llama_memory_recurrent[,:]\s+layer\s+(\d+): (?:dev = (\w+)|(skipped))")
def _rs_layer(m, cfg, figs, n, t):
    # which layers hold a recurrent state (src/llama-memory-recurrent.cpp: 'skipped' = no state)
    cfg.setdefault("rs_layer_flags", {})[int(m.group(1))] = m.group(3) is None


@_rule("gguf", r"print_info: file size\s*=\s*" + _NUM + r" (MiB|GiB)")
def _file_size(m, cfg, figs, n, t):
    _add(figs, "file size", _f(m.group(1)) * (MiB if m.group(2) == "MiB" else GiB), "B", n, t)


#: lines that look like memory but are read on purpose as nothing (each with why), so that every line of
#: a llama.cpp@0c1e570 load log is either read or listed here
IGNORED_BY_DESIGN = {
    "tokenizer piece cache": (r"load: token to piece cache size", "the tokenizer's host-side cache, not a buffer"),
    "teardown compute check": (
        r"~llama_context:\s+\w+ compute buffer size is",
        "the same compute buffer, printed again when the context is freed",
    ),
    "iSWA cache creation": (
        r"llama_kv_cache_iswa: creating\s+(?:non-)?SWA KV cache, size = \d+ cells",
        "announces the cache whose 'size = … cells' line follows and is read",
    ),
}


def _ignored(m, cfg, figs, n, t):
    cfg["ignored_lines"] = cfg.get("ignored_lines", 0) + 1


for _name, (_pat, _why) in IGNORED_BY_DESIGN.items():
    _rule("gguf", _pat)(_ignored)


@_rule("gguf", r"offloaded (\d+)/(\d+) layers to GPU")
def _offload(m, cfg, figs, n, t):
    cfg["n_gpu_layers"], cfg["n_layer_total"] = int(m.group(1)), int(m.group(2))


# vLLM
@_rule("vllm", r"(?:Model loading took|Loading model weights took)\s+" + _NUM + r"\s*(GiB|GB)")
def _v_weights(m, cfg, figs, n, t):
    _add(figs, "weights", _f(m.group(1)) * GiB, "B", n, t)  # vLLM's "GB" is GiB (divides by 2^30)


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
    for key, pat in (
        ("non_torch_memory_bytes", r"non_torch_memory(?: takes)?\s+([\d.]+)\s*GiB"),
        ("activation_bytes", r"activation peak memory(?: takes)?\s+([\d.]+)\s*GiB"),
    ):
        hit = re.search(pat, t)
        if hit:
            cfg[key] = float(hit.group(1)) * GiB
    hit = re.search(r"reserved for KV Cache is\s+([\d.]+)\s*GiB", t)
    if hit:
        _add(figs, "available KV memory", float(hit.group(1)) * GiB, "B", n, t)
        cfg.setdefault("budget_format", "0.6.5+")


@_rule(
    "vllm",
    r"^\W*(?:\S+\s+)*?(non_torch_memory|PyTorch activation peak memory|available_kv_cache_memory)\s+"
    + _NUM
    + r"\s*GiB\s*$",
)
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


@_rule(
    "vllm", r"(?:tensor_parallel_size[=:'\" ]+|--tensor[-_]parallel(?:[-_]size)?[= ]+|--tp(?:-size)?\s+|tp_size=)(\d+)"
)
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


@_rule(
    "sglang",
    r"KV Cache is allocated\.(?: dtype: ([\w.]+),)? #tokens: (\d+), K size: " + _NUM + " GB, V size: " + _NUM + " GB",
)
def _s_kv(m, cfg, figs, n, t):
    if m.group(1):
        cfg["kv_cache_dtype"] = m.group(1).replace("torch.", "")
    cfg["pool_tokens"] = int(m.group(2))
    _add(figs, "pool tokens", float(m.group(2)), "tokens", n, t)
    _add(figs, "K", _f(m.group(3)) * GiB, "B", n, t)
    _add(figs, "V", _f(m.group(4)) * GiB, "B", n, t)


@_rule("sglang", r"KV Cache is allocated\.(?: dtype: ([\w.]+),)? #tokens: (\d+), KV size: " + _NUM + " GB")
def _s_kv_mla(m, cfg, figs, n, t):
    """MLATokenToKVPool's line: one latent buffer, one size (memory_pool.py @ 000ccdba)."""
    if m.group(1):
        cfg["kv_cache_dtype"] = m.group(1).replace("torch.", "")
    cfg["pool_tokens"] = int(m.group(2))
    _add(figs, "pool tokens", float(m.group(2)), "tokens", n, t)
    _add(figs, "KV", _f(m.group(3)) * GiB, "B", n, t)


@_rule("sglang", r"Using KV cache dtype: (?:torch\.)?([\w.]+)")
def _s_kv_dtype(m, cfg, figs, n, t):
    cfg.setdefault("kv_cache_dtype", m.group(1))


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
_CONFIG_HANDLERS = {
    "_v_kvd",
    "_v_max_len",
    "_v_tp",
    "_v_pp",
    "_v_util",
    "_v_version",
    "_s_frac",
    "_n_ctx",
    "_fa",
    "_n_seq",
    "_ubatch",
}

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


__all__ = ["ENGINES_READ", "IGNORED_BY_DESIGN", "Logged", "detect_engine", "parse_log"]
