"""Any model, any engine: the tables and charts of notebook ``06-any-model``.

Small pure functions over k3lib's loaders and engine profiles; each returns a
pandas DataFrame (or an Altair chart, never displayed):

* :func:`load_model` — a fixture config by name (``tests/fixtures/configs``), or a
  path to a ``config.json``, a GGUF file or a safetensors checkpoint.
* :func:`summary_table`, :func:`breakdown_table`, :func:`dtype_table` — what the
  file says: shapes, parameters, bytes per group and per quant type.
* :func:`kv_by_layer_type`, :func:`kv_comparison_table` — KV bytes per token per
  layer type, and what the common hidden/heads shortcut would have said.
* :func:`engine_side_by_side`, :func:`engine_rules_table`, :func:`printed_lines_table`
  — the same model on vLLM, llama.cpp, SGLang and transformers.
* :func:`calibration_table`, :func:`calibration_summary_table`,
  :func:`calibration_worked_table` — predicted vs measured over vLLM 0.19's 87 figures.
* :func:`write_demo_gguf` — a tiny Mixtral-style GGUF (2.5 MB) for the demo.
* :func:`explorer_update` / :func:`explorer` — the notebook's widget and its callback.

Notation as in the series: $L$ layers, $D$ hidden size, $V$ vocabulary, $N_q$ query
heads, $K$ KV heads, $H$ head dim, $T$ tokens, $b$ bytes per element; GiB = 2^30 bytes.

>>> s = summary_table(load_model("llama-3.1-70b")).set_index("quantity")
>>> int(s.loc["parameters", "value"]), int(s.loc["KV bytes per token (BF16)", "value"])   # 2·80·8·128·2
(70553706496, 327680)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pandas as pd

from k3lib.views import charts as _charts  # noqa: F401  (importing it keeps jsonschema from building a slow parser)
from k3lib.core.data import DATA_DIR
from k3lib.core.architecture import LINEAR_KINDS, Architecture
from k3lib.core.errors import K3InputError

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from k3lib.engines import EngineEstimate, EngineProfile
    from k3lib.core.hardware import GPUSpec
    from k3lib.loaders import LoadedModel

GiB = 2**30
#: public configs shipped with the repository (copies of shared/reference/configs)
FIXTURE_CONFIGS_DIR = DATA_DIR.parent / "tests" / "fixtures" / "configs"
#: the engines compared side by side
SIDE_BY_SIDE_ENGINES = ("vllm", "llama.cpp", "sglang", "transformers")
#: one config per attention design, for the KV comparison
KV_COMPARISON_CONFIGS = ("llama-3.1-70b", "qwen3-235b-a22b-fp8", "deepseek-v3", "gemma-3-27b-it", "gpt-oss-120b",
                         "llama-4-scout-17b-16e-instruct", "qwen3-next-80b-a3b-instruct",
                         "kimi-linear-48b-a3b-instruct")
CONTEXT_CHOICES = ("4K", "8K", "32K", "128K", "256K", "1M")
KIND_LABELS = {"full": "GQA (full)", "sliding": "sliding window", "mla": "MLA latent", "kda": "KDA (linear)",
               "gdn": "Gated DeltaNet (linear)"}
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_FIXTURE_SUFFIX = re.compile(r"\.(abridged|[a-z]+-transcription)$")


def _size(n_bytes: float, unit: str) -> float:
    if unit not in _UNITS:
        raise K3InputError("unit", f"{unit!r} is not known", ", ".join(_UNITS))
    return round(n_bytes / _UNITS[unit], 2)


# ---------------------------------------------------------------------------------- loading

def fixture_configs() -> dict[str, Path]:
    """{name: path} of the public configs in ``tests/fixtures/configs``; the name drops the
    file's provenance suffix (``gemma-3-27b-it.maxtext-transcription.json`` → ``gemma-3-27b-it``).

    >>> fixture_configs()["llama-3.1-70b"].name
    'llama-3.1-70b.json'
    """
    return {_FIXTURE_SUFFIX.sub("", p.stem): p for p in sorted(FIXTURE_CONFIGS_DIR.glob("*.json"))}


@lru_cache(maxsize=64)
def _load_fixture(name: str) -> "LoadedModel":
    from k3lib.loaders import load_config

    return load_config(fixture_configs()[name], id=name)


def load_model(config: "str | os.PathLike[str] | LoadedModel") -> "LoadedModel":
    """A fixture config by name, or a path to a config.json (or its folder), a ``.gguf`` file
    or a safetensors checkpoint. Nothing is downloaded. A loaded model is returned as is."""
    from k3lib.loaders import LoadedModel, load_path

    if isinstance(config, LoadedModel):
        return config
    text = str(config).strip()
    if text in fixture_configs():
        return _load_fixture(text)
    p = Path(text).expanduser()
    if not p.exists():
        raise K3InputError("config", f"{text!r} is neither a fixture config nor an existing path",
                           "a path, or one of " + ", ".join(fixture_configs()))
    return load_path(p)


def _arch(model: "str | os.PathLike[str] | LoadedModel") -> tuple[Architecture, "LoadedModel"]:
    loaded = load_model(model)
    return loaded.require_architecture(), loaded


# ---------------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class AnyModelSetup:
    """The notebook's validated parameters."""

    config: str
    model: "LoadedModel"
    engine: "EngineProfile"
    gpu: "GPUSpec"
    gpus: int
    context_tokens: int

    def estimate(self, engine: "str | EngineProfile | None" = None) -> "EngineEstimate":
        """This model on ``engine`` (default: the chosen one), one sequence of the context."""
        from k3lib.engines import estimate_for_engine

        return estimate_for_engine(engine or self.engine, model=self.model, gpu=self.gpu, gpus=self.gpus,
                                   context=self.context_tokens)

    def describe(self) -> str:
        """One line: model, file, engine, GPUs, context."""
        return (f"{self.model.id} ({self.model.file_format}) on {self.gpus}× {self.gpu.id}, "
                f"{self.engine.name} {self.engine.version}, {self.context_tokens:,}-token context")


def validate(*, config: object, engine: object, gpu: object, gpus: object, context: object) -> AnyModelSetup:
    """Validate the notebook's parameters; a bad one raises
    :class:`~k3lib.views.notebook.ParameterError` whose message is ``parameter <name>: …``.

    >>> validate(config="llama-3.1-70b", engine="vllm", gpu="h100", gpus=4, context="32K").describe()
    'llama-3.1-70b (config) on 4× h100-sxm, vLLM 0.19.0 (V1 engine), 32,768-token context'
    """
    from k3lib.engines import get_engine
    from k3lib.core.hardware import get_gpu
    from k3lib.views.notebook import ParameterError
    from k3lib.core.units import parse_context_tokens, parse_positive_int

    def fail(name: str, exc: K3InputError, *, drop_field: bool = False) -> ParameterError:
        text = str(exc)
        if exc.field == name or drop_field:
            text = text.split(": ", 1)[1] if text.startswith(f"{exc.field}: ") else text
        return ParameterError(f"parameter {name}: {text}")

    try:
        loaded = load_model(str(config))
        loaded.require_architecture()
    except K3InputError as exc:
        raise fail("config", exc) from None
    checks = (("engine", lambda: get_engine(str(engine))), ("gpu", lambda: get_gpu(str(gpu))),
              ("gpus", lambda: parse_positive_int(gpus, "gpus")),
              ("context", lambda: parse_context_tokens(context, "context")))
    values = {}
    for name, check in checks:
        try:
            values[name] = check()
        except K3InputError as exc:
            raise fail(name, exc) from None
    setup = AnyModelSetup(str(config), loaded, values["engine"], values["gpu"], values["gpus"], values["context"])
    try:
        setup.estimate()
    except K3InputError as exc:   # e.g. a TP size the heads do not split by: the GPU count is the knob
        raise fail("gpus" if exc.field == "tp" else "config", exc, drop_field=exc.field == "tp") from None
    return setup


# ---------------------------------------------------------------------------------- breakdown

def _attention_label(arch: Architecture) -> str:
    """``80 × GQA (full)``, ``52 × sliding window (W 1,024) + 10 × GQA (full)`` …"""
    parts = []
    for g in arch.attention:
        extra = f" (W {g.window_tokens:,})" if g.kind == "sliding" else ""
        parts.append(f"{g.count} × {KIND_LABELS[g.kind]}{extra}")
    return " + ".join(parts)


def _mlp_label(arch: Architecture) -> str:
    m = arch.mlp
    if not m.moe_layers:
        return f"dense, I = {m.dense_intermediate:,}"
    shared = f" + {m.n_shared_experts} shared" if m.n_shared_experts else ""
    dense = f"; {m.dense_layers} dense layers first" if m.dense_layers else ""
    return f"MoE: {m.n_routed_experts} experts{shared}, {m.experts_per_token} active, I_e = {m.moe_intermediate:,}{dense}"


def _weights_bytes(arch: Architecture, loaded: "LoadedModel") -> int:
    from k3lib.core.memory import weights_bytes_by_group

    if loaded.exact:
        return loaded.weights_bytes
    return sum(weights_bytes_by_group(arch, "native").values()) + loaded.vision_params * loaded.dtype_bytes


def summary_table(model: "str | os.PathLike[str] | LoadedModel") -> pd.DataFrame:
    """``quantity | symbol | value | unit``: the shapes the loader read and what they imply.

    Parameters are the formula's count over the text model ($P$); weights are the file's
    exact bytes for a GGUF or safetensors file, else parameters × the native format (plus
    the vision tower at the checkpoint dtype). KV bytes per token counts the layers whose
    cache grows with $T$; linear-attention layers add a constant state $S$ (FP32).
    """
    arch, loaded = _arch(model)
    first = arch.attention[0]
    attn = next((g for g in arch.attention if g.kind in ("full", "sliding", "mla")), first)
    rows: list[tuple[str, str, object, str]] = [
        ("model", "", arch.id, ""), ("file", "", Path(loaded.source).name, loaded.file_format),
        ("layers", "L", arch.num_layers, ""), ("hidden size", "D", arch.hidden_size, ""),
        ("vocabulary", "V", arch.vocab_size, "tokens"), ("attention layers", "", _attention_label(arch), ""),
        ("query heads", "N_q", attn.num_heads, "")]
    if attn.kind == "mla":
        rows += [("KV latent rank", "r_kv", attn.kv_lora_rank, ""), ("rope key dim", "d_rope", attn.qk_rope_head_dim, "")]
    else:
        rows += [("KV heads", "K", attn.kv_heads, ""), ("head dim", "H", attn.head_dim, "")]
    rows += [("feed-forward", "", _mlp_label(arch), ""),
             ("parameters", "P", arch.params_total, "params"),
             ("active parameters", "P_act", arch.params_active, "params")]
    if loaded.vision_params:
        rows.append(("vision tower (estimated)", "", loaded.vision_params, "params"))
    w = _weights_bytes(arch, loaded)
    rows += [("weights" + (" (exact file bytes)" if loaded.exact else " (native format)"), "W", w, "B"),
             ("weights, GiB", "W", round(w / GiB, 2), "GiB"),
             ("KV bytes per token (BF16)", "kv_tok", arch.kv_bytes_per_token(2), "B"),
             ("linear-attention state per sequence (FP32)", "S", arch.state_elements_per_sequence() * 4, "B"),
             ("max context", "T_max", arch.max_context_tokens, "tokens")]
    return pd.DataFrame(rows, columns=["quantity", "symbol", "value", "unit"])


def params_worked_table(model: "str | os.PathLike[str] | LoadedModel" = "llama-3.1-70b") -> pd.DataFrame:
    """``term | formula | value`` for a dense GQA model:
    $P = V·D·(2 - \\text{tied}) + L·(2·D·N_q·H + 2·D·K·H + 3·D·I + 2·D) + D$.

    >>> int(params_worked_table("llama-3.1-8b").iloc[-1]["value"])
    8030261248
    """
    arch, _ = _arch(model)
    g = arch.attention[0]
    if len(arch.attention) != 1 or g.kind != "full" or arch.mlp.moe_layers or g.v_head_dim or g.output_gate:
        raise K3InputError("model", f"{arch.id} is not a plain dense GQA model; see breakdown_table()",
                           "llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, qwen2.5-72b-instruct")
    d, v, n_l, nq, k, h, i = (arch.hidden_size, arch.vocab_size, arch.num_layers, g.num_heads, g.kv_heads,
                              g.head_dim, arch.mlp.dense_intermediate)
    heads = 1 if arch.tie_word_embeddings else 2
    bias = (nq * h + 2 * k * h) if g.qkv_bias else 0
    rows = [("embedding + lm_head", f"{heads}·V·D = {heads}·{v:,}·{d:,}", heads * v * d),
            ("attention per layer", f"2·D·N_q·H + 2·D·K·H = 2·{d:,}·{nq}·{h} + 2·{d:,}·{k}·{h}"
             + (" + biases" if bias else ""), 2 * d * nq * h + 2 * d * k * h + bias),
            ("MLP per layer", f"3·D·I = 3·{d:,}·{i:,}", 3 * d * i),
            ("norms per layer", f"2·D = 2·{d:,}", 2 * d)]
    per_layer = sum(r[2] for r in rows[1:])
    rows += [("all layers", f"L·(…) = {n_l}·{per_layer:,}", n_l * per_layer),
             ("final norm", "D", d),
             ("P", "sum", rows[0][2] + n_l * per_layer + d)]
    return pd.DataFrame(rows, columns=["term", "formula", "value"])


def breakdown_table(model: "str | os.PathLike[str] | LoadedModel", *, unit: str = "GiB") -> pd.DataFrame:
    """Parameters and weight bytes per group, with a total row.

    For a bare config the bytes are parameters × the native format of each group
    (``quantization_config``); for a GGUF or safetensors file they are the tensors'
    exact bytes, and ``format`` lists the tensor types found.
    """
    from k3lib.core.memory import weights_bytes_by_group

    arch, loaded = _arch(model)
    rows = []
    if loaded.exact:
        per: dict[str, dict[str, Any]] = {}
        for t in loaded.tensors:
            r = per.setdefault(t.group, {"tensors": 0, "params": 0, "bytes": 0, "formats": []})
            r["tensors"] += 1
            r["params"] += t.n_elements
            r["bytes"] += t.n_bytes
            if t.dtype not in r["formats"]:
                r["formats"].append(t.dtype)
        for group, r in per.items():
            rows.append({"group": group, "tensors": r["tensors"], "params": r["params"],
                         "format": ", ".join(sorted(r["formats"])), "weights_B": r["bytes"]})
    else:
        params = arch.param_groups()
        wb = weights_bytes_by_group(arch, "native")
        fmts = arch.native_formats
        for group, n in params.items():
            if n:
                rows.append({"group": group, "params": n, "format": fmts.get(group, fmts.get("*", "bf16")),
                             "weights_B": wb[group]})
        if loaded.vision_params:
            rows.append({"group": "vision (estimated)", "params": loaded.vision_params,
                         "format": f"{loaded.dtype_bytes * 8}-bit", "weights_B": loaded.vision_params * loaded.dtype_bytes})
    df = pd.DataFrame(rows)
    total_b = int(df["weights_B"].sum())
    total = {"group": "total", "params": int(df["params"].sum()), "format": "", "weights_B": total_b}
    if "tensors" in df.columns:
        total["tensors"] = int(df["tensors"].sum())
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    df[f"weights_{unit}"] = [_size(b, unit) for b in df["weights_B"]]
    df["share_pct"] = [round(100 * b / total_b, 1) if total_b else 0.0 for b in df["weights_B"]]
    return df


def dtype_table(model: "str | os.PathLike[str] | LoadedModel") -> pd.DataFrame:
    """Per tensor type of a weight file: tensors, elements, exact bytes and the bits per
    weight they imply ($8·\\text{bytes}/\\text{elements}$: Q4_K 144 B per 256 → 4.5)."""
    _, loaded = _arch(model)
    if not loaded.exact:
        raise K3InputError("model", f"{loaded.source} is a bare config: it has no tensors",
                           "a .gguf file or a safetensors checkpoint")
    per: dict[str, list[int]] = {}
    for t in loaded.tensors:
        r = per.setdefault(t.dtype, [0, 0, 0])
        r[0] += 1
        r[1] += t.n_elements
        r[2] += t.n_bytes
    rows = [{"type": k, "tensors": v[0], "params": v[1], "bytes": v[2], "bits_per_weight": round(8 * v[2] / v[1], 4)}
            for k, v in sorted(per.items(), key=lambda kv: -kv[1][2])]
    return pd.DataFrame(rows)


def layer_bytes_table(model: "str | os.PathLike[str] | LoadedModel") -> pd.DataFrame:
    """Exact bytes per layer of a weight file, split into routed experts and the rest."""
    _, loaded = _arch(model)
    if not loaded.exact:
        raise K3InputError("model", f"{loaded.source} is a bare config: it has no tensors",
                           "a .gguf file or a safetensors checkpoint")
    per: dict[object, list[int]] = {}
    for t in loaded.tensors:
        key = t.layer if t.layer is not None else "outside layers"
        r = per.setdefault(key, [0, 0])
        r[0 if t.is_expert or t.group == "routed_experts" else 1] += t.n_bytes
    rows = [{"layer": k, "expert_B": v[0], "other_B": v[1], "total_B": v[0] + v[1]} for k, v in per.items()]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- a tiny GGUF

#: the demo GGUF's shapes: D = 256, 2 layers, 4 query heads and 2 KV heads of 64, 8 experts (2 active)
#: of width 256, vocabulary 512; tensor types as a Q4_K_M file mixes them
DEMO_GGUF = {"hidden": 256, "layers": 2, "heads": 4, "kv_heads": 2, "experts": 8, "experts_used": 2,
             "expert_ffn": 256, "vocab": 512, "context": 32768}


def write_demo_gguf(directory: "str | os.PathLike[str]", *, name: str = "tiny-moe.gguf") -> Path:
    """Write a tiny Mixtral-style GGUF (:data:`DEMO_GGUF`; zero-filled tensors, 2,546,176
    bytes of tensor data) into ``directory`` and return its path.

    Tensor types: token_embd Q8_0 (34 B per 32), attention Q4_K (144 B per 256) except
    attn_v Q6_K (210 B per 256), experts gate/up Q4_K and down Q6_K, norms and router F32,
    output Q6_K.
    """
    import gguf
    import numpy as np
    from gguf import GGMLQuantizationType as Q

    c = DEMO_GGUF
    d, e, ie, vocab = c["hidden"], c["experts"], c["expert_ffn"], c["vocab"]
    hd = d // c["heads"]
    path = Path(directory) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-moe (demo)")
    w.add_block_count(c["layers"])
    w.add_embedding_length(d)
    w.add_feed_forward_length(ie)
    w.add_head_count(c["heads"])
    w.add_head_count_kv(c["kv_heads"])
    w.add_context_length(c["context"])
    w.add_expert_count(e)
    w.add_expert_used_count(c["experts_used"])
    w.add_token_list([f"t{i}".encode() for i in range(vocab)])

    def tensor(tname: str, ne: tuple[int, ...], qtype) -> None:
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        shape = tuple(reversed(ne))
        if qtype == Q.F32:
            w.add_tensor(tname, np.zeros(shape, dtype=np.float32))
        else:
            w.add_tensor(tname, np.zeros(shape[:-1] + (shape[-1] // block * size,), dtype=np.uint8), raw_dtype=qtype)

    tensor("token_embd.weight", (d, vocab), Q.Q8_0)
    for i in range(c["layers"]):
        tensor(f"blk.{i}.attn_norm.weight", (d,), Q.F32)
        tensor(f"blk.{i}.attn_q.weight", (d, c["heads"] * hd), Q.Q4_K)
        tensor(f"blk.{i}.attn_k.weight", (d, c["kv_heads"] * hd), Q.Q4_K)
        tensor(f"blk.{i}.attn_v.weight", (d, c["kv_heads"] * hd), Q.Q6_K)
        tensor(f"blk.{i}.attn_output.weight", (c["heads"] * hd, d), Q.Q4_K)
        tensor(f"blk.{i}.ffn_norm.weight", (d,), Q.F32)
        tensor(f"blk.{i}.ffn_gate_inp.weight", (d, e), Q.F32)
        tensor(f"blk.{i}.ffn_gate_exps.weight", (d, ie, e), Q.Q4_K)
        tensor(f"blk.{i}.ffn_up_exps.weight", (d, ie, e), Q.Q4_K)
        tensor(f"blk.{i}.ffn_down_exps.weight", (ie, d, e), Q.Q6_K)
    tensor("output_norm.weight", (d,), Q.F32)
    tensor("output.weight", (d, vocab), Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# ---------------------------------------------------------------------------------- KV per token

def naive_kv_bytes_per_token(config: Mapping[str, Any], *, bytes_per_element: float = 2) -> int:
    """What the common shortcut computes from a config.json: every layer full attention,
    head dim = hidden ÷ query heads, ``num_key_value_heads`` KV heads (MLA read as GQA):
    $2·L·K·(D/N_q)·b$.

    >>> naive_kv_bytes_per_token({"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
    ...                           "num_key_value_heads": 128})            # DeepSeek-V3: 2·61·128·56·2
    1748992
    """
    tc = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else config
    n_l, d, nq = tc.get("num_hidden_layers"), tc.get("hidden_size"), tc.get("num_attention_heads")
    if not all(isinstance(x, int) and x > 0 for x in (n_l, d, nq)):
        raise K3InputError("config", "needs num_hidden_layers, hidden_size and num_attention_heads")
    k = tc.get("num_key_value_heads") or nq
    return int(round(2 * n_l * k * (d // nq) * bytes_per_element))


def _per_layer_formula(g, b: float) -> str:
    if g.kind in ("full", "sliding"):
        vd = g.v_head_dim or g.head_dim
        return f"{g.kv_heads}·({g.head_dim}+{vd})·{b:g}" if g.v_head_dim else f"2·{g.kv_heads}·{g.head_dim}·{b:g}"
    if g.kind == "mla":
        return f"({g.kv_lora_rank}+{g.qk_rope_head_dim})·{b:g}"
    return "0 (constant state)"


def kv_by_layer_type(configs: Iterable["str | LoadedModel"] = KV_COMPARISON_CONFIGS, *, kv_bytes_per_element: float = 2,
                     context: object = "32K") -> pd.DataFrame:
    """One row per model and layer type: layers, what one layer caches per token
    (``per_layer_B``), all such layers per token (``kv_B_per_token``), the window a
    sliding layer stops at, the constant state of linear layers (FP32, per sequence) and
    the cache of one sequence of ``context`` tokens in GiB.

    GQA: $2·K·H·b$ per layer. MLA: $(r_{kv} + d_{rope})·b$. Sliding: the GQA figure for
    at most $W$ tokens. Linear (KDA, Gated DeltaNet): 0 per token, $S$ per sequence.
    """
    from k3lib.core.units import parse_context_tokens

    ctx = parse_context_tokens(context, "context")
    b = float(kv_bytes_per_element)
    rows = []
    for cfg in configs:
        arch, _ = _arch(cfg)
        for g in arch.attention:
            per_layer = g.kv_elements_per_token_per_layer * b
            state = g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) * 4
            tokens = min(ctx, g.window_tokens) if g.kind == "sliding" else ctx
            rows.append({"model": arch.id, "layer_type": KIND_LABELS[g.kind], "layers": g.count,
                         "per_layer_formula": _per_layer_formula(g, b), "per_layer_B": int(per_layer),
                         "kv_B_per_token": int(g.count * per_layer),
                         "window_tokens": g.window_tokens if g.kind == "sliding" else pd.NA,
                         "state_B_per_seq": int(state), "context": _context_label(ctx),
                         "kv_GiB": round((g.count * per_layer * tokens + state) / GiB, 3)})
    df = pd.DataFrame(rows)
    df["window_tokens"] = df["window_tokens"].astype("Int64")
    return df


def kv_comparison_table(configs: Iterable["str | LoadedModel"] = KV_COMPARISON_CONFIGS, *,
                        kv_bytes_per_element: float = 2, context: object = "32K") -> pd.DataFrame:
    """One row per model: the growing cache per token (``kv_B_per_token``: full and MLA
    layers), sliding layers per token while under their window, the linear-attention
    state, the cache of one sequence at ``context``, and the hidden/heads shortcut
    (:func:`naive_kv_bytes_per_token`) with how far off it is."""
    from k3lib.core.units import parse_context_tokens

    ctx = parse_context_tokens(context, "context")
    b = float(kv_bytes_per_element)
    rows = []
    for cfg in configs:
        arch, loaded = _arch(cfg)
        grow = arch.kv_bytes_per_token(b)
        sliding = sum(g.count * g.kv_elements_per_token_per_layer for g in arch.attention if g.kind == "sliding") * b
        cfg_dict = loaded.metadata.get("config") if isinstance(loaded.metadata.get("config"), Mapping) else None
        naive = naive_kv_bytes_per_token(cfg_dict, bytes_per_element=b) if cfg_dict else None
        total = arch.kv_cache_bytes(context_tokens=ctx, batch=1, bytes_per_element=b)
        state_mib = round(arch.state_elements_per_sequence() * 4 / 2**20, 1)
        rows.append({"model": arch.id, "attention": _attention_label(arch), "kv_B_per_token": grow,
                     "sliding_B_per_token": int(sliding), "state_MiB_per_seq": state_mib,
                     f"kv_GiB_{_context_label(ctx)}": round(total / GiB, 2),
                     "naive_B_per_token": naive,
                     "naive_over_kv": round(naive / grow, 1) if naive and grow else None})
    return pd.DataFrame(rows)


def _context_label(tokens: int) -> str:
    if tokens % 2**20 == 0:
        return f"{tokens // 2**20}M"
    if tokens % 1024 == 0:
        return f"{tokens // 1024}K"
    return f"{tokens:,}"


# ---------------------------------------------------------------------------------- engines

def engine_estimates(model: "str | LoadedModel", *, engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
                     gpu: str = "h100-sxm", gpus: int = 1, context: object = "32K",
                     batch: int = 1) -> "dict[str, EngineEstimate]":
    """{engine id: :class:`~k3lib.engines.EngineEstimate`} for one model and GPU set."""
    from k3lib.engines import estimate_for_engine, get_engine

    loaded = load_model(model)
    return {get_engine(e).id: estimate_for_engine(e, model=loaded, gpu=gpu, gpus=gpus, context=context, batch=batch)
            for e in engines}


_SIDE_ROWS = (("GPU memory (GiB)", "memory_bytes"), ("budget the engine sizes from (GiB)", "budget_bytes"),
              ("weights (GiB)", "weights_bytes"), ("activation / compute buffer (GiB)", "activation_bytes"),
              ("runtime: CUDA context, NCCL (GiB)", "runtime_bytes"),
              ("KV memory available (GiB)", "kv_available_bytes"), ("KV cache for the context (GiB)", "kv_needed_bytes"))


def engine_side_by_side(model: "str | LoadedModel", *, engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
                        gpu: str = "h100-sxm", gpus: int = 1, context: object = "32K", batch: int = 1) -> pd.DataFrame:
    """Rows = what one GPU holds under each engine's rules, columns = engines.

    ``KV bytes per token per GPU`` is the cache for the context ÷ ($T·B$); ``KV capacity``
    is the tokens the available KV memory holds (vLLM: the 'GPU KV cache size' it prints).
    """
    from k3lib.engines import get_engine

    ests = engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context, batch=batch)
    cols = {}
    for eid, est in ests.items():
        col: dict[str, object] = {label: round(getattr(est, attr) / GiB, 2) for label, attr in _SIDE_ROWS}
        col["KV bytes per token per GPU (B)"] = int(round(est.kv_needed_bytes / (est.context_tokens * est.batch)))
        col["KV capacity (tokens)"] = int(est.kv_capacity_tokens)
        col["fits"] = bool(est.fits)
        cols[get_engine(eid).name] = col
    return pd.DataFrame(cols)


_COMPONENTS = (("weights", "weights_bytes"), ("activation", "activation_bytes"), ("runtime", "runtime_bytes"),
               ("KV cache for the context", "kv_needed_bytes"))
#: the chart's stack, bottom to top
CHART_COMPONENTS = tuple(c for c, _ in _COMPONENTS) + ("unused KV memory", "outside the budget")


def engine_components_long(model: "str | LoadedModel", *, engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
                           gpu: str = "h100-sxm", gpus: int = 1, context: object = "32K",
                           batch: int = 1) -> pd.DataFrame:
    """Long frame for :func:`engine_chart`: engine, component (:data:`CHART_COMPONENTS`), GiB per
    GPU. ``unused KV memory`` is what the budget leaves after the cache; ``outside the budget``
    is what the engine keeps back (vLLM: 1 − gpu_memory_utilization; SGLang: 1 − mem_fraction_static)."""
    from k3lib.engines import get_engine

    rows = []
    for eid, est in engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context,
                                     batch=batch).items():
        name = get_engine(eid).name
        for label, attr in _COMPONENTS:
            rows.append({"engine": name, "component": label, "GiB": round(getattr(est, attr) / GiB, 3)})
        rows.append({"engine": name, "component": "unused KV memory",
                     "GiB": round(max(0, est.kv_available_bytes - est.kv_needed_bytes) / GiB, 3)})
        rows.append({"engine": name, "component": "outside the budget",
                     "GiB": round((est.memory_bytes - est.budget_bytes) / GiB, 3)})
    return pd.DataFrame(rows)


def _kv_rule(eid: str, arch: Architecture, tp: int) -> str:
    kinds = {g.kind for g in arch.attention}
    parts = []
    if kinds & {"full", "sliding"}:
        g = next(g for g in arch.attention if g.kind in ("full", "sliding"))
        if eid in ("vllm", "sglang"):
            per = max(1, g.kv_heads // tp)
            rep = " (replicated: TP > K)" if tp > g.kv_heads else ""
            parts.append(f"GQA: {per} of {g.kv_heads} KV heads per rank{rep}")
        else:
            parts.append(f"GQA: all {g.kv_heads} KV heads, layers split over the GPUs")
    if "mla" in kinds:
        g = next(g for g in arch.attention if g.kind == "mla")
        lat = g.kv_lora_rank + g.qk_rope_head_dim
        parts.append({"vllm": f"MLA: the {lat}-element latent on every rank",
                      "sglang": f"MLA: the {lat}-element latent on every rank",
                      "llama.cpp": f"MLA: K row {lat}, V row {g.kv_lora_rank}, layers split",
                      "transformers": f"MLA expanded: {g.num_heads}·({g.qk_nope_head_dim}+{g.qk_rope_head_dim}+"
                                      f"{g.v_head_dim}) per layer"}.get(eid, ""))
    if "sliding" in kinds:
        parts.append({"vllm": "sliding: window blocks, layer groups padded",
                      "sglang": "sliding: counted at the full context",
                      "llama.cpp": "sliding: window + ubatch cells",
                      "transformers": "sliding: the last window"}.get(eid, ""))
    if kinds & set(LINEAR_KINDS):
        parts.append({"vllm": "linear state: one block per sequence, block size raised to hold it",
                      "sglang": "linear state: FP32 per sequence",
                      "llama.cpp": "linear state: FP32 per sequence",
                      "transformers": "linear state: conv at the dtype, recurrent in FP32"}.get(eid, ""))
    return "; ".join(p for p in parts if p)


def engine_rules_table(model: "str | LoadedModel", *, engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
                       gpu: str = "h100-sxm", gpus: int = 1, context: object = "32K") -> pd.DataFrame:
    """Why the engines differ, for this model: budget rule, weights rule, what the KV cache
    holds, and the unit each engine prints."""
    from k3lib.engines import get_engine

    arch, _ = _arch(model)
    ests = engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context)
    rows = []
    for eid, est in ests.items():
        prof = get_engine(eid)
        mem = est.memory_bytes / GiB
        budget = {"vllm": f"gpu_memory_utilization {est.budget_bytes / est.memory_bytes:.2f} × {mem:.2f} GiB",
                  "sglang": f"mem_fraction_static {est.budget_bytes / est.memory_bytes:.3f} × {mem:.2f} GiB",
                  }.get(eid, f"all {mem:.2f} GiB (nothing reserved up front)")
        weights = {"vllm": f"sharded over TP {est.tp}; vocab padded to 64; rotary cache on every rank",
                   "sglang": f"sharded over TP {est.tp}, as vLLM",
                   "llama.cpp": f"layers split over {est.gpus} GPU(s); token_embd stays in host RAM",
                   "transformers": f"every parameter at the model dtype; device_map='auto' over {est.gpus} GPU(s)",
                   }.get(eid, "")
        rows.append({"engine": prof.name, "version": prof.version, "budget": budget, "weights": weights,
                     "KV cache holds": _kv_rule(eid, arch, est.tp), "prints": prof.printed_unit,
                     "unit note": prof.unit_note})
    return pd.DataFrame(rows)


def printed_lines_table(model: "str | LoadedModel", *, engines: Sequence[str] = SIDE_BY_SIDE_ENGINES,
                        gpu: str = "h100-sxm", gpus: int = 1, context: object = "32K") -> pd.DataFrame:
    """The lines each engine would print at start-up (as its profile predicts them), with its unit."""
    from k3lib.engines import get_engine

    rows = []
    for eid, est in engine_estimates(model, engines=engines, gpu=gpu, gpus=gpus, context=context).items():
        prof = get_engine(eid)
        if not est.printed:
            rows.append({"engine": prof.name, "line": "(prints no memory figures)", "value": ""})
        for line, value in est.printed.items():
            rows.append({"engine": prof.name, "line": line, "value": value})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- calibration

_TOL_UNIT = {"weights_memory_per_gpu": "%", "kv_cache_memory_per_gpu": "GiB", "kv_cache_tokens": "tokens"}


def calibration_table() -> pd.DataFrame:
    """Every figure of the vLLM 0.19 H100 sweep (``data/measured``): measured, predicted, the
    error (always predicted − measured: GiB, or tokens), the tolerance (weights: 3 %; available
    KV memory: 0.5 GiB; tokens: the interval the printed rounding allows, ± one block), the
    error in units of the tolerance, and whether the row is within.

    >>> row = calibration_table().set_index("id").loc["H108"]      # Llama 3.1 8B, TP 1
    >>> row["measured"], row["predicted"], row["error"], float(row["tolerance"]), bool(row["within"])
    (476016, 476032, 16, 64.0, True)
    """
    from k3lib.engines import vllm_calibration

    def num(x: float, unit: str) -> object:   # whole tokens as int, GiB to 4 decimals (an object column)
        return int(round(x)) if unit == "tokens" else round(float(x), 4)

    rows = []
    for r in vllm_calibration():
        sign = -1 if r.unit == "tokens" else 1    # vllm_calibration reports measured − predicted for tokens
        err, pct = sign * r.error, sign * r.error_pct
        scaled = (pct if r.quantity == "weights_memory_per_gpu" else err) / r.tolerance if r.tolerance else 0.0
        rows.append({"id": r.id, "model": r.model.split("/")[-1], "tp": r.tp, "quantity": r.quantity, "kind": r.kind,
                     "measured": num(r.measured, r.unit), "predicted": num(r.predicted, r.unit), "unit": r.unit,
                     "error": num(err, r.unit), "error_pct": round(pct, 3), "tolerance": r.tolerance,
                     "tolerance_unit": _TOL_UNIT[r.quantity], "error_in_tolerances": round(scaled, 3),
                     "within": bool(r.within), "reason": r.reason})
    df = pd.DataFrame(rows)
    for col in ("measured", "predicted", "error"):    # keep ints as ints next to GiB floats
        df[col] = pd.Series([row[col] for row in rows], dtype=object)
    return df


def calibration_summary_table(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per quantity: rows, rows within tolerance, the tolerance, and the worst |error| (its row id)."""
    df = calibration_table() if df is None else df
    rows = []
    for quantity, g in df.groupby("quantity", sort=False):
        worst = g.loc[g["error"].astype(float).abs().idxmax()]
        tol_unit = g["tolerance_unit"].iloc[0]
        rows.append({"quantity": quantity, "unit": g["unit"].iloc[0], "rows": len(g), "within": int(g["within"].sum()),
                     "tolerance": (f"{g['tolerance'].max():g} {tol_unit}" if tol_unit != "tokens"
                                   else "printed ±0.005 GiB, ± 1 block"),
                     "worst_abs_error": abs(worst["error"]), "worst_row": worst["id"]})
    total = {"quantity": "all", "unit": "", "rows": int(len(df)), "within": int(df["within"].sum()),
             "tolerance": "", "worst_abs_error": "", "worst_row": ""}
    return pd.DataFrame([*rows, total])


def calibration_worked_table(row_id: str = "H108") -> pd.DataFrame:
    """``param | formula | value`` for one ``kv_cache_tokens`` row of the sweep:
    $T = ⌊A ÷ (\\text{page}·\\text{layers per group}) ÷ \\text{groups}⌋ × 16$, from the printed
    available memory $A$.

    >>> t = calibration_worked_table("H108").set_index("param")["value"]
    >>> int(t["T_pred"]), int(t["T_vllm"])
    (476032, 476016)
    """
    from k3lib.engines import (_row_dtypes, calibration_model, read_vllm_sweep, vllm_kv_layout,
                          vllm_kv_tokens_interval)

    rows = {r["id"]: r for r in read_vllm_sweep()}
    if row_id not in rows or rows[row_id]["quantity"] != "kv_cache_tokens":
        raise K3InputError("row_id", f"{row_id!r} is not a kv_cache_tokens row of the sweep")
    r = rows[row_id]
    avail_row = next(x for x in rows.values() if x["source"] == r["source"] and x["quantity"] == "kv_cache_memory_per_gpu")
    model = calibration_model(r["model"])
    tp = int(r["tp"])
    dtype, kv_b, _ = _row_dtypes(r)
    lay = vllm_kv_layout(model, tp=tp, kv_dtype=kv_b, dtype_bytes=dtype or model.dtype_bytes)
    a = float(avail_row["value"])
    blocks = lay.num_blocks(int(a * GiB))
    lo, hi = vllm_kv_tokens_interval(model, printed_gib=a, tp=tp, kv_dtype=kv_b, dtype_bytes=dtype or model.dtype_bytes)
    pred = lay.tokens(int(a * GiB))
    out = [("model", f"{r['model']}, TP {tp}, KV {r['kv_dtype']}", r["model"].split("/")[-1]),
           ("A", "available KV memory vLLM printed (GiB)", a),
           ("page", f"block ({lay.block_tokens} tokens) × bytes per token per layer per rank (B)", lay.page_bytes),
           ("group", f"layers per KV-cache group ({lay.num_groups} group(s))", lay.group_size),
           ("blocks", "⌊A·2^30 ÷ (page × group)⌋", blocks),
           ("T_pred", f"⌊blocks ÷ groups⌋ × {lay.block_tokens}", pred),
           ("T_range", "the same for A ± 0.005 GiB (printing rounds to 0.01)", f"{lo:,} … {hi:,}"),
           ("T_vllm", "the GPU KV cache size vLLM printed", int(float(r["value"]))),
           ("error", "T_pred − T_vllm (tokens)", pred - int(float(r["value"])))]
    return pd.DataFrame(out, columns=["param", "formula", "value"])


# ---------------------------------------------------------------------------------- charts

def kv_naive_chart(df: pd.DataFrame, *, title: str | None = None) -> "alt.LayerChart":
    """KV bytes per token per model: k3lib's figure and the hidden/heads shortcut's, as two
    dots joined by a line (log scale; the longer the line, the worse the shortcut).

    ``df``: :func:`kv_comparison_table`.
    """
    import altair as alt

    for col in ("model", "kv_B_per_token", "naive_B_per_token"):
        if col not in df.columns:
            raise K3InputError("data", f"missing column {col!r}", ", ".join(map(str, df.columns)))
    labels = {"kv_B_per_token": "k3lib (the config's layer types)", "naive_B_per_token": "shortcut 2·L·K·(D/N_q)·b"}
    long = df.melt(id_vars=["model"], value_vars=list(labels), var_name="estimate", value_name="B_per_token").dropna()
    long = long[long["B_per_token"] > 0].assign(estimate=lambda d: d["estimate"].map(labels))
    long["B_per_token"] = long["B_per_token"].astype(float)
    y = alt.Y("model:N", sort=list(df["model"]), title=None)
    x = alt.X("B_per_token:Q", scale=alt.Scale(type="log"), title="KV bytes per token, BF16 (log scale)",
              axis=alt.Axis(values=[10**k for k in range(1, 10)], format=",.0f"))
    line = alt.Chart(long).mark_line(color="#bbbbbb").encode(y=y, x=x, detail="model:N")
    dots = alt.Chart(long).mark_circle(size=90, opacity=1).encode(
        y=y, x=x, color=alt.Color("estimate:N", legend=alt.Legend(orient="bottom", title=None, labelLimit=320)),
        tooltip=["model:N", "estimate:N", alt.Tooltip("B_per_token:Q", format=",.0f")])
    return alt.layer(line, dots).properties(
        title=title or "KV bytes per token of the growing layers: k3lib vs the shortcut", width=420)


def engine_chart(df: pd.DataFrame, *, title: str | None = None) -> "alt.Chart":
    """One stacked bar per engine: what one GPU holds (GiB = 2^30 bytes).

    ``df``: :func:`engine_components_long`.
    """
    import altair as alt

    for col in ("engine", "component", "GiB"):
        if col not in df.columns:
            raise K3InputError("data", f"missing column {col!r}", ", ".join(map(str, df.columns)))
    order = list(CHART_COMPONENTS)
    colors = ["#4c78a8", "#54a24b", "#9d9d9d", "#f58518", "#fdd0a2", "#e0e0e0"]
    data = df.assign(order=df["component"].map({c: i for i, c in enumerate(order)}))
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("engine:N", sort=None, title=None),
        x=alt.X("sum(GiB):Q", title="per GPU (GiB = 2^30 bytes)"),
        color=alt.Color("component:N", sort=order, scale=alt.Scale(domain=order, range=colors),
                        legend=alt.Legend(orient="bottom", columns=3, title=None)),
        order=alt.Order("order:Q"),
        tooltip=["engine:N", "component:N", alt.Tooltip("GiB:Q", format=",.2f")],
    ).properties(title=title or "One GPU under each engine's rules", width=420)


def calibration_chart(df: pd.DataFrame, *, title: str | None = None) -> "alt.LayerChart":
    """Each calibration row's error in units of its tolerance (|x| ≤ 1 is within).

    ``df``: :func:`calibration_table`.
    """
    import altair as alt

    for col in ("id", "quantity", "error", "error_in_tolerances", "kind"):
        if col not in df.columns:
            raise K3InputError("data", f"missing column {col!r}", ", ".join(map(str, df.columns)))
    data = df.assign(measured=df["measured"].astype(float), predicted=df["predicted"].astype(float),
                     error=df["error"].astype(float))
    points = alt.Chart(data).mark_circle(size=45, opacity=0.8).encode(
        x=alt.X("error_in_tolerances:Q", scale=alt.Scale(domain=[-1.2, 1.2]),
                title="error ÷ tolerance (within when between −1 and 1)"),
        y=alt.Y("quantity:N", title=None),
        yOffset=alt.YOffset("kind:N"),
        color=alt.Color("kind:N", legend=alt.Legend(orient="bottom", title="model kind")),
        tooltip=["id:N", "model:N", "tp:Q", "quantity:N", "measured:Q", "predicted:Q", "unit:N", "error:Q"])
    rules = alt.Chart(pd.DataFrame({"x": [-1.0, 1.0]})).mark_rule(strokeDash=[4, 3], color="black").encode(x="x:Q")
    return alt.layer(rules, points).properties(
        title=title or f"vLLM 0.19 on H100: {len(df)} figures, predicted vs measured", width=420)


# ---------------------------------------------------------------------------------- explorer

def explorer_update(*, config: str, engine: str, gpu: str, gpus: object, context: object,
                    ) -> "tuple[pd.DataFrame | None, str]":
    """One choice → ``(table, message)``: what one GPU holds under that engine, and the lines
    it prints. Bad input never raises: ``(None, "parameter <name>: …")``.

    >>> table, message = explorer_update(config="llama-3.1-70b", engine="sglang", gpu="h100", gpus=4, context="32K")
    >>> message.split(":")[0], table.set_index("item").loc["KV bytes per token per GPU", "value"]
    ('FITS', 81920)
    """
    from k3lib.views.notebook import ParameterError

    try:
        setup = validate(config=config, engine=engine, gpu=gpu, gpus=gpus, context=context)
    except ParameterError as exc:
        return None, str(exc)
    est = setup.estimate()
    rows: list[tuple[str, object, str]] = [(label.split(" (")[0], round(getattr(est, attr) / GiB, 2), "GiB")
                                           for label, attr in _SIDE_ROWS]
    rows += [("KV bytes per token per GPU", int(round(est.kv_needed_bytes / (est.context_tokens * est.batch))), "B"),
             ("KV capacity", int(est.kv_capacity_tokens), "tokens")]
    rows += [(f"prints: {line}", value, "") for line, value in est.printed.items()]
    table = pd.DataFrame(rows, columns=["item", "value", "unit"])
    verdict = "FITS" if est.fits else "DOES NOT FIT"
    message = f"{verdict}: {setup.describe()}. {est.reason.split(': ', 1)[-1]}"
    return table, message


def _options(known: Sequence[str], value: object) -> list[str]:
    return list(known) if str(value) in known else [str(value), *known]


def explorer(*, config: str = "llama-3.1-70b", engine: str = "vllm", gpu: str = "h100-sxm", gpus: int = 4,
             context: str = "32K"):
    """Dropdowns for the config, engine, GPU and context and a GPU-count slider, above an
    output that :func:`explorer_update` refreshes in place; ``box.last_update`` holds the
    latest ``(table, message)``."""
    import ipywidgets as w
    from IPython.display import display

    from k3lib.engines import ENGINES
    from k3lib.core.hardware import list_gpus

    style = {"description_width": "70px"}
    layout = w.Layout(width="320px")
    controls = {
        "config": w.Dropdown(options=_options(list(fixture_configs()), config), value=str(config),
                             description="config", style=style, layout=layout),
        "engine": w.Dropdown(options=_options(list(ENGINES), engine), value=str(engine), description="engine",
                             style=style, layout=layout),
        "gpu": w.Dropdown(options=_options([g.id for g in list_gpus()], gpu), value=str(gpu), description="GPU",
                          style=style, layout=layout),
        "gpus": w.IntSlider(value=int(gpus), min=1, max=max(16, int(gpus)), description="GPUs", style=style,
                            layout=layout),
        "context": w.Dropdown(options=_options(CONTEXT_CHOICES, context), value=str(context), description="context",
                              style=style, layout=layout),
    }
    out = w.Output()
    c = controls
    box = w.VBox([w.HBox([c["config"], c["engine"]]), w.HBox([c["gpu"], c["gpus"]]), c["context"], out])

    def refresh(_change: object = None) -> None:
        result = explorer_update(**{k: ctl.value for k, ctl in controls.items()})
        box.last_update = result
        table, message = result
        with out:
            out.clear_output(wait=True)
            print(message)
            if table is not None:
                display(table)

    for ctl in controls.values():
        ctl.observe(refresh, names="value")
    box.controls = controls
    refresh()
    return box


__all__ = ["AnyModelSetup", "CONTEXT_CHOICES", "DEMO_GGUF", "FIXTURE_CONFIGS_DIR", "KV_COMPARISON_CONFIGS",
           "SIDE_BY_SIDE_ENGINES", "breakdown_table", "calibration_chart", "calibration_summary_table",
           "calibration_table", "calibration_worked_table", "dtype_table", "engine_chart", "engine_components_long",
           "engine_estimates", "engine_rules_table", "engine_side_by_side", "explorer", "explorer_update",
           "fixture_configs", "kv_by_layer_type", "kv_comparison_table", "kv_naive_chart", "layer_bytes_table",
           "load_model", "naive_kv_bytes_per_token", "params_worked_table", "printed_lines_table", "summary_table",
           "validate", "write_demo_gguf"]
