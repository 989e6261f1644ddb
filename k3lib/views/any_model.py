"""Any model, any engine: the tables and charts of notebook ``06-any-model``.

Small pure functions over k3lib's loaders and engine profiles; each returns a
pandas DataFrame (or an Altair chart, never displayed):

* :func:`load_model` — a shipped config by name (``data/configs``), or a
  path to a ``config.json``, a GGUF file or a safetensors checkpoint (from
  :mod:`k3lib.loaders.by_name`).
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError
from k3lib.core.kinds import KINDS, kind_of
from k3lib.core.units import context_label
from k3lib.loaders.by_name import FIXTURE_CONFIGS_DIR, fixture_configs, load_model
from k3lib.loaders.by_name import load_architecture as _arch
from k3lib.views import charts as _charts  # noqa: F401  (importing it keeps jsonschema from building a slow parser)
from k3lib.views.calibration import (
    calibration_chart,
    calibration_summary_table,
    calibration_table,
    calibration_worked_table,
)
from k3lib.views.demo_gguf import DEMO_GGUF, write_demo_gguf
from k3lib.views.engine_compare import (  # noqa: F401 — re-exported for notebook 06
    _SIDE_ROWS,
    CHART_COMPONENTS,
    SIDE_BY_SIDE_ENGINES,
    engine_chart,
    engine_components_long,
    engine_estimates,
    engine_rules_table,
    engine_side_by_side,
    printed_lines_table,
)

if TYPE_CHECKING:  # pragma: no cover
    import altair as alt

    from k3lib.core.hardware import GPUSpec
    from k3lib.engines import EngineEstimate, EngineProfile
    from k3lib.loaders import LoadedModel

GiB = 2**30
#: the engines compared side by side
#: one config per attention design, for the KV comparison
KV_COMPARISON_CONFIGS = (
    "llama-3.1-70b",
    "qwen3-235b-a22b-fp8",
    "deepseek-v3",
    "gemma-3-27b-it",
    "gpt-oss-120b",
    "llama-4-scout-17b-16e-instruct",
    "qwen3-next-80b-a3b-instruct",
    "kimi-linear-48b-a3b-instruct",
)
CONTEXT_CHOICES = ("4K", "8K", "32K", "128K", "256K", "1M")
#: how tables name each layer kind (the kinds' own labels, :mod:`k3lib.core.kinds`)
KIND_LABELS = {name: k.label for name, k in KINDS.items()}
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _size(n_bytes: float, unit: str) -> float:
    if unit not in _UNITS:
        raise K3InputError("unit", f"{unit!r} is not known", ", ".join(_UNITS))
    return round(n_bytes / _UNITS[unit], 2)


# ---------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class AnyModelSetup:
    """The notebook's validated parameters."""

    config: str
    model: LoadedModel
    engine: EngineProfile
    gpu: GPUSpec
    gpus: int
    context_tokens: int
    layout: Any = None

    def estimate(self, engine: str | EngineProfile | None = None) -> EngineEstimate:
        """This model on ``engine`` (default: the chosen one), one sequence of the context. vLLM
        and SGLang run the layout's TP × PP (the same rule as notebooks 03 and 05:
        :func:`k3lib.core.layout.choose_layout` over the nodes); llama.cpp and transformers
        share the layers over the GPUs."""
        from k3lib.engines import estimate_for_engine, get_engine

        prof = get_engine(engine or self.engine)
        split = {}
        if self.layout is not None and prof.id in ("vllm", "sglang"):
            split = {"tp": self.layout.tp, "pp": self.layout.pp}
        return estimate_for_engine(
            prof, model=self.model, gpu=self.gpu, gpus=self.gpus, context=self.context_tokens, **split
        )

    def describe(self) -> str:
        """One line: model, file, engine, GPUs (and their layout where it has stages or nodes), context."""
        lay = self.layout
        where = f" ({lay.describe()})" if lay is not None and (lay.pp > 1 or lay.nodes > 1) else ""
        return (
            f"{self.model.id} ({self.model.file_format}) on {self.gpus}× {self.gpu.id}{where}, "
            f"{self.engine.name} {self.engine.version}, {self.context_tokens:,}-token context"
        )


def validate(
    *,
    config: object,
    engine: object,
    gpu: object,
    gpus: object,
    context: object,
    nodes: object = 0,
    model_path: object = "",
) -> AnyModelSetup:
    """Validate the notebook's parameters; a bad one raises
    :class:`~k3lib.views.notebook.ParameterError` whose message is ``parameter <name>: …``.
    ``nodes`` (0: automatic — one node up to the GPU's node size, then whole nodes) sets the
    layout by :func:`k3lib.views.explorers.node_layout`; ``model_path``, when set, replaces
    ``config``.

    >>> validate(config="llama-3.1-70b", engine="vllm", gpu="h100", gpus=4, context="32K").describe()
    'llama-3.1-70b (config) on 4× h100-sxm, vLLM 0.19.0 (V1 engine), 32,768-token context'
    >>> validate(config="kimi-k3", engine="vllm", gpu="h200", gpus=16, context="256K").layout.describe()
    'TP=8 × PP=2 over 2 nodes'
    """
    from k3lib.core.hardware import get_gpu
    from k3lib.core.units import parse_context_tokens, parse_positive_int
    from k3lib.engines import get_engine
    from k3lib.views.notebook import ParameterError

    def fail(name: str, exc: K3InputError, *, drop_field: bool = False) -> ParameterError:
        text = str(exc)
        if exc.field == name or drop_field:
            text = text.split(": ", 1)[1] if text.startswith(f"{exc.field}: ") else text
        return ParameterError(f"parameter {name}: {text}")

    source = "config"
    if model_path is not None and str(model_path).strip():
        config, source = str(model_path).strip(), "model_path"
    try:
        loaded = load_model(str(config))
        loaded.require_architecture()
    except K3InputError as exc:
        raise fail(source, exc) from None
    checks = (
        ("engine", lambda: get_engine(str(engine))),
        ("gpu", lambda: get_gpu(str(gpu))),
        ("gpus", lambda: parse_positive_int(gpus, "gpus")),
        ("context", lambda: parse_context_tokens(context, "context")),
    )
    values: dict[str, Any] = {}
    for name, check in checks:
        try:
            values[name] = check()
        except K3InputError as exc:
            raise fail(name, exc) from None
    from k3lib.views.explorers import node_layout

    auto = nodes in (None, 0, "0", "")
    try:
        layout = node_layout(model=loaded.require_architecture(), gpu=values["gpu"], gpus=values["gpus"], nodes=nodes)
    except K3InputError as exc:
        if auto:  # no deployable layout: the engine's own split decides, and names the problem below
            layout = None
        else:
            raise fail(
                "nodes" if exc.field in ("nodes", "pp") else "gpus", exc, drop_field=exc.field not in ("nodes", "gpus")
            ) from None
    setup = AnyModelSetup(
        str(config), loaded, values["engine"], values["gpu"], values["gpus"], values["context"], layout
    )
    try:
        setup.estimate()
    except K3InputError as exc:  # e.g. a TP size the heads do not split by: the GPU count is the knob
        raise fail("gpus" if exc.field == "tp" else "config", exc, drop_field=exc.field == "tp") from None
    return setup


# ---------------------------------------------------------------------------------- breakdown


def _attention_label(arch: Architecture) -> str:
    """``80 × GQA (full)``, ``52 × sliding window (W 1,024) + 10 × GQA (full)`` …"""
    parts = []
    for g in arch.attention:
        extra = f" (W {g.window_tokens:,})" if kind_of(g).windowed else ""
        parts.append(f"{g.count} × {kind_of(g).label}{extra}")
    return " + ".join(parts)


def _mlp_label(arch: Architecture) -> str:
    m = arch.mlp
    if not m.moe_layers:
        return f"dense, I = {m.dense_intermediate:,}"
    shared = f" + {m.n_shared_experts} shared" if m.n_shared_experts else ""
    dense = f"; {m.dense_layers} dense layers first" if m.dense_layers else ""
    return (
        f"MoE: {m.n_routed_experts} experts{shared}, {m.experts_per_token} active, I_e = {m.moe_intermediate:,}{dense}"
    )


def _weights_bytes(arch: Architecture, loaded: LoadedModel) -> int:
    from k3lib.core.memory import weights_bytes_by_group

    if loaded.exact:
        return loaded.weights_bytes
    return sum(weights_bytes_by_group(arch, "native").values()) + loaded.vision_params * loaded.dtype_bytes


def summary_table(model: str | os.PathLike[str] | LoadedModel) -> pd.DataFrame:
    """``quantity | symbol | value | unit``: the shapes the loader read and what they imply.

    Parameters are the formula's count over the text model ($P$); weights are the file's
    exact bytes for a GGUF or safetensors file, else parameters × the native format (plus
    the vision tower at the checkpoint dtype). KV bytes per token counts the layers whose
    cache grows with $T$; linear-attention layers add a constant state $S$ (FP32).
    """
    arch, loaded = _arch(model)
    first = arch.attention[0]
    attn = next((g for g in arch.attention if kind_of(g).caches_kv_per_token), first)
    rows: list[tuple[str, str, object, str]] = [
        ("model", "", arch.id, ""),
        ("file", "", Path(loaded.source).name, loaded.file_format),
        ("layers", "L", arch.num_layers, ""),
        ("hidden size", "D", arch.hidden_size, ""),
        ("vocabulary", "V", arch.vocab_size, "tokens"),
        ("attention layers", "", _attention_label(arch), ""),
        ("query heads", "N_q", attn.num_heads, ""),
    ]
    if kind_of(attn).latent:
        rows += [
            ("KV latent rank", "r_kv", attn.kv_lora_rank, ""),
            ("rope key dim", "d_rope", attn.qk_rope_head_dim, ""),
        ]
    else:
        rows += [("KV heads", "K", attn.kv_heads, ""), ("head dim", "H", attn.head_dim, "")]
    rows += [
        ("feed-forward", "", _mlp_label(arch), ""),
        ("parameters", "P", arch.params_total, "params"),
        ("active parameters", "P_act", arch.params_active, "params"),
    ]
    if loaded.vision_params:
        rows.append(("vision tower (estimated)", "", loaded.vision_params, "params"))
    w = _weights_bytes(arch, loaded)
    rows += [
        ("weights" + (" (exact file bytes)" if loaded.exact else " (native format)"), "W", w, "B"),
        ("weights, GiB", "W", round(w / GiB, 2), "GiB"),
        ("KV bytes per token (BF16)", "kv_tok", arch.kv_bytes_per_token(2), "B"),
        ("linear-attention state per sequence (FP32)", "S", arch.state_elements_per_sequence() * 4, "B"),
        ("max context", "T_max", arch.max_context_tokens, "tokens"),
    ]
    return pd.DataFrame(rows, columns=["quantity", "symbol", "value", "unit"])


def params_worked_table(model: str | os.PathLike[str] | LoadedModel = "llama-3.1-70b") -> pd.DataFrame:
    """``term | formula | value`` for a dense GQA model:
    $P = V·D·(2 - \\text{tied}) + L·(2·D·N_q·H + 2·D·K·H + 3·D·I + 2·D) + D$.

    >>> int(params_worked_table("llama-3.1-8b").iloc[-1]["value"])
    8030261248
    """
    arch, _ = _arch(model)
    g = arch.attention[0]
    if (
        len(arch.attention) != 1
        or not (kind_of(g).grouped_kv and not kind_of(g).windowed)
        or arch.mlp.moe_layers
        or g.v_head_dim
        or g.output_gate
    ):
        raise K3InputError(
            "model",
            f"{arch.id} is not a plain dense GQA model; see breakdown_table()",
            "llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, qwen2.5-72b-instruct",
        )
    d, v, n_l, nq, k, h, i = (
        arch.hidden_size,
        arch.vocab_size,
        arch.num_layers,
        g.num_heads,
        g.kv_heads,
        g.head_dim,
        arch.mlp.dense_intermediate,
    )
    heads = 1 if arch.tie_word_embeddings else 2
    bias = (nq * h + 2 * k * h) if g.qkv_bias else 0
    rows = [
        ("embedding + lm_head", f"{heads}·V·D = {heads}·{v:,}·{d:,}", heads * v * d),
        (
            "attention per layer",
            f"2·D·N_q·H + 2·D·K·H = 2·{d:,}·{nq}·{h} + 2·{d:,}·{k}·{h}" + (" + biases" if bias else ""),
            2 * d * nq * h + 2 * d * k * h + bias,
        ),
        ("MLP per layer", f"3·D·I = 3·{d:,}·{i:,}", 3 * d * i),
        ("norms per layer", f"{arch.norms_per_layer}·D = {arch.norms_per_layer}·{d:,}", arch.norms_per_layer * d),
    ]
    per_layer = sum(r[2] for r in rows[1:])
    rows += [
        ("all layers", f"L·(…) = {n_l}·{per_layer:,}", n_l * per_layer),
        ("final norm", "D", d),
        ("P", "sum", rows[0][2] + n_l * per_layer + d),
    ]
    return pd.DataFrame(rows, columns=["term", "formula", "value"])


def breakdown_table(model: str | os.PathLike[str] | LoadedModel, *, unit: str = "GiB") -> pd.DataFrame:
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
            rows.append(
                {
                    "group": group,
                    "tensors": r["tensors"],
                    "params": r["params"],
                    "format": ", ".join(sorted(r["formats"])),
                    "weights_B": r["bytes"],
                }
            )
    else:
        params = arch.param_groups()
        wb = weights_bytes_by_group(arch, "native")
        fmts = arch.native_formats
        for group, n in params.items():
            if n:
                rows.append(
                    {
                        "group": group,
                        "params": n,
                        "format": fmts.get(group, fmts.get("*", "bf16")),
                        "weights_B": wb[group],
                    }
                )
        if loaded.vision_params:
            rows.append(
                {
                    "group": "vision (estimated)",
                    "params": loaded.vision_params,
                    "format": f"{loaded.dtype_bytes * 8}-bit",
                    "weights_B": loaded.vision_params * loaded.dtype_bytes,
                }
            )
    df = pd.DataFrame(rows)
    total_b = int(df["weights_B"].sum())
    total = {"group": "total", "params": int(df["params"].sum()), "format": "", "weights_B": total_b}
    if "tensors" in df.columns:
        total["tensors"] = int(df["tensors"].sum())
    df = pd.concat([df, pd.DataFrame([total])], ignore_index=True)
    df[f"weights_{unit}"] = [_size(b, unit) for b in df["weights_B"]]
    df["share_pct"] = [round(100 * b / total_b, 1) if total_b else 0.0 for b in df["weights_B"]]
    return df


def dtype_table(model: str | os.PathLike[str] | LoadedModel) -> pd.DataFrame:
    """Per tensor type of a weight file: tensors, elements, exact bytes and the bits per
    weight they imply ($8·\\text{bytes}/\\text{elements}$: Q4_K 144 B per 256 → 4.5)."""
    _, loaded = _arch(model)
    if not loaded.exact:
        raise K3InputError(
            "model", f"{loaded.source} is a bare config: it has no tensors", "a .gguf file or a safetensors checkpoint"
        )
    per: dict[str, list[int]] = {}
    for t in loaded.tensors:
        r = per.setdefault(t.dtype, [0, 0, 0])
        r[0] += 1
        r[1] += t.n_elements
        r[2] += t.n_bytes
    rows = [
        {"type": k, "tensors": v[0], "params": v[1], "bytes": v[2], "bits_per_weight": round(8 * v[2] / v[1], 4)}
        for k, v in sorted(per.items(), key=lambda kv: -kv[1][2])
    ]
    return pd.DataFrame(rows)


def layer_bytes_table(model: str | os.PathLike[str] | LoadedModel) -> pd.DataFrame:
    """Exact bytes per layer of a weight file, split into routed experts and the rest."""
    _, loaded = _arch(model)
    if not loaded.exact:
        raise K3InputError(
            "model", f"{loaded.source} is a bare config: it has no tensors", "a .gguf file or a safetensors checkpoint"
        )
    per: dict[object, list[int]] = {}
    for t in loaded.tensors:
        key = t.layer if t.layer is not None else "outside layers"
        r = per.setdefault(key, [0, 0])
        r[0 if t.is_expert or t.group == "routed_experts" else 1] += t.n_bytes
    rows = [{"layer": k, "expert_B": v[0], "other_B": v[1], "total_B": v[0] + v[1]} for k, v in per.items()]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- KV per token


def naive_kv_bytes_per_token(config: Mapping[str, Any], *, bytes_per_element: float = 2) -> int:
    """What the common shortcut computes from a config.json: every layer full attention,
    head dim = hidden ÷ query heads, ``num_key_value_heads`` KV heads (MLA read as GQA):
    $2·L·K·(D/N_q)·b$.

    >>> naive_kv_bytes_per_token({"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
    ...                           "num_key_value_heads": 128})            # DeepSeek-V3: 2·61·128·56·2
    1748992
    """
    text_config = config.get("text_config")
    tc: Mapping[str, Any] = text_config if isinstance(text_config, Mapping) else config
    n_l, d, nq = tc.get("num_hidden_layers"), tc.get("hidden_size"), tc.get("num_attention_heads")
    if not (isinstance(n_l, int) and n_l > 0 and isinstance(d, int) and d > 0 and isinstance(nq, int) and nq > 0):
        raise K3InputError("config", "needs num_hidden_layers, hidden_size and num_attention_heads")
    k = tc.get("num_key_value_heads") or nq
    return int(round(2 * n_l * k * (d // nq) * bytes_per_element))


def _per_layer_formula(g, b: float) -> str:
    if kind_of(g).grouped_kv:
        vd = g.v_head_dim or g.head_dim
        return f"{g.kv_heads}·({g.head_dim}+{vd})·{b:g}" if g.v_head_dim else f"2·{g.kv_heads}·{g.head_dim}·{b:g}"
    if kind_of(g).latent:
        return f"({g.kv_lora_rank}+{g.qk_rope_head_dim})·{b:g}"
    return "0 (constant state)"


def kv_by_layer_type(
    configs: Iterable[str | LoadedModel] = KV_COMPARISON_CONFIGS,
    *,
    kv_bytes_per_element: float = 2,
    context: object = "32K",
) -> pd.DataFrame:
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
            k = kind_of(g)
            tokens = k.cached_tokens(g, ctx)
            rows.append(
                {
                    "model": arch.id,
                    "layer_type": k.label,
                    "layers": g.count,
                    "per_layer_formula": _per_layer_formula(g, b),
                    "per_layer_B": int(per_layer),
                    "kv_B_per_token": int(g.count * per_layer),
                    "window_tokens": g.window_tokens if k.windowed else pd.NA,
                    "state_B_per_seq": int(state),
                    "context": _context_label(ctx),
                    "kv_GiB": round((g.count * per_layer * tokens + state) / GiB, 3),
                }
            )
    df = pd.DataFrame(rows)
    df["window_tokens"] = df["window_tokens"].astype("Int64")
    return df


def kv_comparison_table(
    configs: Iterable[str | LoadedModel] = KV_COMPARISON_CONFIGS,
    *,
    kv_bytes_per_element: float = 2,
    context: object = "32K",
) -> pd.DataFrame:
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
        sliding = sum(g.count * g.kv_elements_per_token_per_layer for g in arch.attention if kind_of(g).windowed) * b
        cfg_dict = loaded.metadata.get("config") if isinstance(loaded.metadata.get("config"), Mapping) else None
        naive = naive_kv_bytes_per_token(cfg_dict, bytes_per_element=b) if cfg_dict else None
        total = arch.kv_cache_bytes(context_tokens=ctx, batch=1, bytes_per_element=b)
        state_mib = round(arch.state_elements_per_sequence() * 4 / 2**20, 1)
        rows.append(
            {
                "model": arch.id,
                "attention": _attention_label(arch),
                "kv_B_per_token": grow,
                "sliding_B_per_token": int(sliding),
                "state_MiB_per_seq": state_mib,
                f"kv_GiB_{_context_label(ctx)}": round(total / GiB, 2),
                "naive_B_per_token": naive,
                "naive_over_kv": round(naive / grow, 1) if naive and grow else None,
            }
        )
    return pd.DataFrame(rows)


_context_label = context_label


# ---------------------------------------------------------------------------------- charts


def kv_naive_chart(df: pd.DataFrame, *, title: str | None = None) -> alt.LayerChart:
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
    x = alt.X(
        "B_per_token:Q",
        scale=alt.Scale(type="log"),
        title="KV bytes per token, BF16 (log scale)",
        axis=alt.Axis(values=[10**k for k in range(1, 10)], format=",.0f"),
    )
    line = alt.Chart(long).mark_line(color="#bbbbbb").encode(y=y, x=x, detail="model:N")
    dots = (
        alt.Chart(long)
        .mark_circle(size=90, opacity=1)
        .encode(
            y=y,
            x=x,
            color=alt.Color("estimate:N", legend=alt.Legend(orient="bottom", title=None, labelLimit=320)),
            tooltip=["model:N", "estimate:N", alt.Tooltip("B_per_token:Q", format=",.0f")],
        )
    )
    return (
        alt.layer(line, dots)
        .properties(title=title or "KV bytes per token of the growing layers: k3lib vs the shortcut", width=620)
        .configure_axis(labelFontSize=12, titleFontSize=12)
        .configure_legend(labelFontSize=12, titleFontSize=12)
    )


# ---------------------------------------------------------------------------------- explorer


def explorer_update(
    *,
    config: str,
    engine: str,
    gpu: str,
    gpus: object,
    context: object,
    nodes: object = 0,
) -> tuple[pd.DataFrame | None, str]:
    """One choice → ``(table, message)``: what one GPU holds under that engine, and the lines
    it prints. Bad input never raises: ``(None, "parameter <name>: …")``.

    >>> table, message = explorer_update(config="llama-3.1-70b", engine="sglang", gpu="h100", gpus=4, context="32K")
    >>> message.split(":")[0], table.set_index("item").loc["KV bytes per token per GPU", "value"]
    ('FITS', 81920)
    """
    from k3lib.views.notebook import ParameterError

    try:
        setup = validate(config=config, engine=engine, gpu=gpu, gpus=gpus, context=context, nodes=nodes)
    except ParameterError as exc:
        return None, str(exc)
    est = setup.estimate()
    rows: list[tuple[str, object, str]] = [
        (label.split(" (")[0], round(getattr(est, attr) / GiB, 2), "GiB") for label, attr in _SIDE_ROWS
    ]
    rows += [
        ("KV bytes per token per GPU", int(round(est.kv_needed_bytes / (est.context_tokens * est.batch))), "B"),
        ("KV capacity", int(est.kv_capacity_tokens), "tokens"),
    ]
    rows += [(f"prints: {line}", value, "") for line, value in est.printed.items()]
    table = pd.DataFrame(rows, columns=["item", "value", "unit"])
    verdict = "FITS" if est.fits else "DOES NOT FIT"
    message = f"{verdict}: {setup.describe()}. {est.reason.split(': ', 1)[-1]}"
    return table, message


def _options(known: Sequence[str], value: object) -> list[str]:
    return list(known) if str(value) in known else [str(value), *known]


def gpu_choices(config: object, gpu: object, *, current: object = None, max_gpus: int = 16) -> list[int]:
    """The GPU counts the explorer offers for ``config`` on ``gpu``: those with a deployable layout
    (:func:`k3lib.core.search.candidate_gpu_counts`: 1…a node where the model splits by TP, then
    whole nodes); ``current`` is added when it is not one (its error then shows); a model or GPU
    that does not load offers 1…``max_gpus``.

    >>> gpu_choices("llama-3.1-70b", "h100-sxm")
    [1, 2, 4, 6, 8, 16]
    """
    from k3lib.core.search import candidate_gpu_counts

    try:
        counts = list(candidate_gpu_counts(load_model(str(config)).require_architecture(), str(gpu), max_gpus=max_gpus))
    except (K3InputError, KeyError, ValueError, OSError):
        counts = list(range(1, max_gpus + 1))
    try:
        n = int(str(current))
    except (TypeError, ValueError):
        return counts
    return counts if n in counts else sorted({*counts, n})


def explorer(
    *,
    config: str = "llama-3.1-70b",
    engine: str = "vllm",
    gpu: str = "h100-sxm",
    gpus: int = 4,
    context: str = "32K",
    nodes: int = 0,
):
    """Dropdowns for the config, engine, GPU and context, a GPU-count slider and a nodes
    control (0: automatic; TP inside a node, PP across nodes, as notebooks 03 and 05), above
    an output that :func:`explorer_update` refreshes in place; ``box.last_update`` holds the
    latest ``(table, message)``."""
    import ipywidgets as w
    from IPython.display import display

    from k3lib.core.hardware import list_gpus
    from k3lib.engines import ENGINES

    style = {"description_width": "70px"}
    layout = w.Layout(width="320px")
    controls = {
        "config": w.Dropdown(
            options=_options(list(fixture_configs()), config),
            value=str(config),
            description="config",
            style=style,
            layout=layout,
        ),
        "engine": w.Dropdown(
            options=_options(list(ENGINES), engine), value=str(engine), description="engine", style=style, layout=layout
        ),
        "gpu": w.Dropdown(
            options=_options([g.id for g in list_gpus()], gpu),
            value=str(gpu),
            description="GPU",
            style=style,
            layout=layout,
        ),
        "gpus": w.SelectionSlider(
            options=gpu_choices(config, gpu, current=gpus),
            value=int(gpus),
            description="GPUs",
            style=style,
            layout=layout,
        ),
        "context": w.Dropdown(
            options=_options(CONTEXT_CHOICES, context),
            value=str(context),
            description="context",
            style=style,
            layout=layout,
        ),
        "nodes": w.Dropdown(
            options=[("auto", 0), *[(str(k), k) for k in (1, 2, 3, 4, 6, 8)]],
            value=int(nodes) if int(nodes) in (0, 1, 2, 3, 4, 6, 8) else 0,
            description="nodes",
            style=style,
            layout=layout,
        ),
    }
    out = w.Output()
    c = controls
    box = w.VBox(
        [w.HBox([c["config"], c["engine"]]), w.HBox([c["gpu"], c["gpus"]]), w.HBox([c["context"], c["nodes"]]), out]
    )

    from k3lib.views.lines import verdict_line
    from k3lib.views.table_format import shown

    busy = [False]

    def refresh(_change: object = None) -> None:
        if busy[0]:
            return
        result = explorer_update(**{k: ctl.value for k, ctl in controls.items()})
        box.last_update = result
        table, message = result
        with out:
            out.clear_output(wait=True)
            display(verdict_line(message))  # green when it fits, red otherwise
            if table is not None:
                display(shown(table))

    def reoffer(_change: object = None) -> None:
        """Only deployable GPU counts for the chosen config and GPU (the nearest one kept)."""
        g, was = c["gpus"], int(c["gpus"].value)
        opts = gpu_choices(c["config"].value, c["gpu"].value)
        busy[0] = True
        g.options = opts
        g.value = was if was in opts else min(opts, key=lambda n: abs(n - was))
        busy[0] = False
        refresh()

    for name, ctl in controls.items():
        ctl.observe(reoffer if name in ("config", "gpu") else refresh, names="value")
    box.controls = controls
    refresh()
    return box


__all__ = [
    "AnyModelSetup",
    "CONTEXT_CHOICES",
    "DEMO_GGUF",
    "FIXTURE_CONFIGS_DIR",
    "KV_COMPARISON_CONFIGS",
    "SIDE_BY_SIDE_ENGINES",
    "breakdown_table",
    "calibration_chart",
    "calibration_summary_table",
    "calibration_table",
    "calibration_worked_table",
    "dtype_table",
    "engine_chart",
    "engine_components_long",
    "engine_estimates",
    "engine_rules_table",
    "engine_side_by_side",
    "explorer",
    "explorer_update",
    "fixture_configs",
    "kv_by_layer_type",
    "kv_comparison_table",
    "kv_naive_chart",
    "layer_bytes_table",
    "load_model",
    "naive_kv_bytes_per_token",
    "params_worked_table",
    "printed_lines_table",
    "summary_table",
    "validate",
    "write_demo_gguf",
]
