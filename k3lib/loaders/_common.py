"""What every loader returns: a :class:`LoadedModel` (an architecture plus, for
weight files, the exact bytes of every tensor), and :func:`plan_for_loaded`,
which turns it into a :class:`~k3lib.core.plan.Plan` whose weights are those bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from k3lib.core.architecture import Architecture
from k3lib.core.errors import K3InputError

if TYPE_CHECKING:
    from k3lib.core.plan import Plan

#: groups a tensor can fall in: k3lib's parameter groups plus what an architecture does not count
TENSOR_GROUPS = (
    "embedding",
    "lm_head",
    "attention",
    "dense_mlp",
    "shared_experts",
    "routed_experts",
    "moe_other",
    "norms",
    "vision",
    "mtp",
    "other",
)

_LAYER_RE = re.compile(r"(?:^|\.)(?:blk|layers|h|layer|block)\.(\d+)\.")
_VISION_MARKS = (
    "vision_tower",
    "vision_model",
    "visual.",
    "multi_modal_projector",
    "mm_projector",
    "vision_encoder",
    "patch_merger",
    "image_newline",
    "vision_embed",
)
_VISION_PREFIXES = ("v.", "mm.")  # a GGUF mmproj file


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a weight file: its exact size on disk and where it belongs."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    n_bytes: int
    group: str
    layer: int | None
    is_expert: bool
    file: str = ""

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def layer_index(name: str) -> int | None:
    """``blk.12.attn_q.weight`` / ``model.layers.12.mlp…`` → 12."""
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


def tensor_group(name: str, *, num_layers: int | None = None) -> str:
    """The parameter group a tensor's name puts it in (HF or GGUF naming).

    >>> tensor_group("blk.3.ffn_up_exps.weight"), tensor_group("model.layers.3.mlp.experts.7.up_proj.weight")
    ('routed_experts', 'routed_experts')
    >>> tensor_group("blk.0.attn_norm.weight"), tensor_group("token_embd.weight"), tensor_group("output.weight")
    ('norms', 'embedding', 'lm_head')
    """
    n = name.lower()
    if any(mark in n for mark in _VISION_MARKS) or n.startswith(_VISION_PREFIXES):
        return "vision"
    layer = layer_index(n)
    if layer is not None and num_layers is not None and layer >= num_layers:
        return "mtp"
    if "nextn." in n or n.startswith("mtp.") or ".mtp." in n:
        return "mtp"
    parts = n.split(".")
    module = parts[-2] if len(parts) >= 2 else parts[-1]  # "input_layernorm" in "….input_layernorm.weight"
    base = n.split(".", 2)[2] if n.startswith("blk.") and n.count(".") >= 2 else n
    # ---- GGUF names ----
    if n.startswith("token_embd") or n.startswith("token_types") or n.startswith("position_embd"):
        return "embedding"
    if n.startswith("output.") or n == "output":
        return "lm_head"
    if n.startswith("output_norm"):
        return "norms"
    if n.startswith("blk."):
        if "_exps" in base or base.startswith("ffn_gate_up_exps"):
            return "routed_experts"
        if "_shexp" in base and not base.startswith("ffn_gate_inp"):
            return "shared_experts"
        if base.startswith(("ffn_gate_inp", "exp_probs_b", "ffn_exp_probs")):
            return "moe_other"
        if base.startswith(
            (
                "attn_norm",
                "ffn_norm",
                "post_attention_norm",
                "post_ffw_norm",
                "layer_output_norm",
                "attn_post_norm",
                "ffn_post_norm",
            )
        ):
            return "norms"
        if base.startswith(("attn_", "ssm_", "time_mix", "wkv")):
            return "attention"
        if base.startswith("ffn_"):
            return "dense_mlp"
        return "other"
    # ---- Hugging Face names ----
    if "embed_tokens" in n or "word_embeddings" in n or n.endswith("wte.weight") or "tok_embeddings" in n:
        return "embedding"
    if n.startswith("lm_head") or ".lm_head." in n:
        return "lm_head"
    if ("shared_expert" in n) and "shared_expert_gate" not in n:
        return "shared_experts"
    if ".experts." in n or n.endswith(".experts") or "block_sparse_moe.experts" in n:
        return "routed_experts"
    if (
        re.search(r"\.(mlp|block_sparse_moe|feed_forward)\.(gate|router)(\.|$)", n)
        or "e_score_correction_bias" in n
        or "shared_expert_gate" in n
        or ".router." in n
    ):
        return "moe_other"
    if any(k in n for k in ("self_attn", ".attention.", "linear_attn", ".attn.", "mixer.")):
        return "attention"
    if "norm" in module:
        return "norms"
    if any(k in n for k in (".mlp.", "feed_forward", ".ffn.")):
        return "dense_mlp"
    return "other"


def is_expert_tensor(name: str) -> bool:
    """Routed-expert weights: ``ffn_*_exps`` (GGUF) or ``….experts.N.…`` (HF)."""
    return tensor_group(name) == "routed_experts"


@dataclass(frozen=True)
class LoadedModel:
    """A model read from local files.

    ``architecture`` drives the KV cache; ``weights_bytes_by_group`` holds the
    exact bytes of a weight file's tensors (empty for a bare ``config.json``,
    whose weights are then computed from the architecture).
    """

    architecture: Architecture | None
    source: str
    file_format: str
    weights_bytes_by_group: Mapping[str, int] = field(default_factory=dict)
    bytes_by_dtype: Mapping[str, int] = field(default_factory=dict)
    bytes_by_layer: Mapping[int, int] = field(default_factory=dict)
    tensors: tuple[TensorInfo, ...] = field(default=(), repr=False)
    rope_caches: tuple[tuple[int, int], ...] = ()
    vision_params: int = 0
    dtype_bytes: int = 2
    metadata: Mapping[str, Any] = field(default_factory=dict, repr=False)
    notes: tuple[str, ...] = ()

    kind = "loaded"

    def __post_init__(self) -> None:
        if self.file_format not in ("config", "gguf", "safetensors"):
            raise K3InputError("file_format", f"{self.file_format!r} is not known", "config, gguf, safetensors")
        for g, b in self.weights_bytes_by_group.items():
            if g not in TENSOR_GROUPS:
                raise K3InputError("weights_bytes_by_group", f"unknown group {g!r}", ", ".join(TENSOR_GROUPS))
            if not isinstance(b, int) or b < 0:
                raise K3InputError("weights_bytes_by_group", f"{g}: {b!r} is not a byte count")

    @property
    def exact(self) -> bool:
        """True when the weights are a file's exact bytes."""
        return bool(self.weights_bytes_by_group)

    @property
    def weights_bytes(self) -> int:
        """Exact bytes of every tensor in the file(s) (0 for a bare config)."""
        return sum(self.weights_bytes_by_group.values())

    @property
    def expert_bytes(self) -> int:
        """Bytes of routed-expert tensors."""
        return self.weights_bytes_by_group.get("routed_experts", 0)

    @property
    def tensor_count(self) -> int:
        return len(self.tensors)

    @property
    def id(self) -> str:
        return self.architecture.id if self.architecture else self.source

    @property
    def name(self) -> str:
        return self.architecture.name if self.architecture else self.source

    def require_architecture(self) -> Architecture:
        if self.architecture is None:
            raise K3InputError(
                "config",
                f"{self.source}: no architecture (config.json or GGUF metadata) was found; the KV cache needs one",
                "a folder with config.json, or pass config=PATH",
            )
        return self.architecture

    def bytes_by_group_and_dtype(self) -> dict[str, dict[str, int]]:
        """{group: {dtype: bytes}} over every tensor."""
        out: dict[str, dict[str, int]] = {}
        for t in self.tensors:
            out.setdefault(t.group, {}).setdefault(t.dtype, 0)
            out[t.group][t.dtype] += t.n_bytes
        return out

    def text_weights_bytes(self) -> int:
        """Exact bytes of the text model: everything but the vision tower and MTP layers."""
        return sum(b for g, b in self.weights_bytes_by_group.items() if g not in ("vision", "mtp"))

    def summary(self) -> dict[str, Any]:
        """A JSON-ready breakdown (sizes in bytes)."""
        arch = self.architecture
        return {
            "source": self.source,
            "format": self.file_format,
            "exact": self.exact,
            "weights_bytes": self.weights_bytes,
            "expert_bytes": self.expert_bytes,
            "tensor_count": self.tensor_count,
            "weights_bytes_by_group": dict(self.weights_bytes_by_group),
            "bytes_by_dtype": dict(self.bytes_by_dtype),
            "architecture": None
            if arch is None
            else {
                "id": arch.id,
                "family": arch.family,
                "params_total_formula": arch.params_total,
                "kv_bytes_per_token_bf16": arch.kv_bytes_per_token(2),
                "attention": [(g.kind, g.count) for g in arch.attention],
            },
            "vision_params": self.vision_params,
            "notes": list(self.notes),
        }


#: The context window (tokens) assumed when a config.json or a GGUF states none at all. It is
#: never assumed silently: the loader warns (:class:`~k3lib.loaders.hf_config.AssumedFieldWarning`)
#: and adds :func:`assumed_context_note` to :attr:`LoadedModel.notes`. A field that is present
#: but 0 or null is an error naming it, not this default.
ASSUMED_CONTEXT_TOKENS = 4096


def assumed_context_note(field: str, source: object) -> str:
    """The note and warning text for a file that states no context window.

    >>> assumed_context_note("config.max_position_embeddings", "config.json")
    'config.max_position_embeddings missing in config.json: assumed a context window of 4,096 tokens'
    """
    return f"{field} missing in {source}: assumed a context window of {ASSUMED_CONTEXT_TOKENS:,} tokens"


def zero_sized_tensors_note(tensors: list[TensorInfo] | tuple[TensorInfo, ...]) -> str | None:
    """A note naming the tensors with a 0 dimension (0 elements, 0 bytes), or None when there
    are none. Such a tensor adds nothing to the bytes, but a 0 in a shape is a converter bug or
    a truncated export more often than a design, so it is said rather than counted silently.

    >>> t = TensorInfo("blk.0.attn_q.weight", "F16", (0, 64), 0, "attention", 0, False)
    >>> zero_sized_tensors_note([t])
    "1 zero-sized tensor (a 0 in its shape: 0 bytes, nothing to load): 'blk.0.attn_q.weight' (0, 64)"
    """
    zero = [t for t in tensors if 0 in t.shape]
    if not zero:
        return None
    shown = ", ".join(f"{t.name!r} {tuple(t.shape)}" for t in zero[:5]) + (" …" if len(zero) > 5 else "")
    return (
        f"{len(zero):,} zero-sized tensor{'s' if len(zero) != 1 else ''} "
        f"(a 0 in {'their shapes' if len(zero) != 1 else 'its shape'}: 0 bytes, nothing to load): {shown}"
    )


def summarise_tensors(tensors: list[TensorInfo]) -> tuple[dict[str, int], dict[str, int], dict[int, int]]:
    """(bytes by group, bytes by dtype, bytes by layer)."""
    by_group: dict[str, int] = {}
    by_dtype: dict[str, int] = {}
    by_layer: dict[int, int] = {}
    for t in tensors:
        by_group[t.group] = by_group.get(t.group, 0) + t.n_bytes
        by_dtype[t.dtype] = by_dtype.get(t.dtype, 0) + t.n_bytes
        if t.layer is not None:
            by_layer[t.layer] = by_layer.get(t.layer, 0) + t.n_bytes
    return by_group, by_dtype, dict(sorted(by_layer.items()))


def plan_for_loaded(loaded: LoadedModel, *, include_mtp: bool = False, **make_plan_kwargs: Any) -> Plan:
    """A :func:`~k3lib.core.plan.make_plan` plan for a loaded model (the loader builds no plan
    of its own: it hands make_plan the exact bytes).

    With ``weights="native"`` (the default) a weight file's exact bytes replace the
    formula's weights (``weights_total_bytes``); for a bare config the vision tower, when
    there is one, is added at the checkpoint dtype. Any other ``weights=`` re-prices the
    architecture in that format.

    MTP (multi-token prediction) layers stored in the file are left out unless
    ``include_mtp``: vLLM and SGLang load them only for speculative decoding, and no KV
    cache is planned for them (the same rule as
    :func:`k3lib.core.memory.weights_bytes`).
    """
    from k3lib.core.memory import weights_bytes
    from k3lib.core.plan import make_plan

    arch = loaded.require_architecture()
    weights = make_plan_kwargs.pop("weights", None) or "native"
    native = str(weights).lower() in ("native", "checkpoint", "auto")
    exact: int | None = None
    notes: tuple[str, ...] = ()
    if native and loaded.exact:
        mtp = 0 if include_mtp else loaded.weights_bytes_by_group.get("mtp", 0)
        exact = loaded.weights_bytes - mtp
        notes = (
            f"weights: exact bytes of {loaded.tensor_count:,} tensors in {loaded.source}"
            + (f", less {mtp:,} bytes of MTP layers (loaded only for speculative decoding)" if mtp else ""),
        )
    elif native and loaded.vision_params:
        exact = weights_bytes(arch, "native") + loaded.vision_params * loaded.dtype_bytes
        notes = (
            f"weights: text weights from the architecture + vision tower ≈ {loaded.vision_params:,} "
            f"parameters at {loaded.dtype_bytes} B (estimated from vision_config)",
        )
    if exact is None:
        # the loader's notes (assumed fields, zero-sized tensors) travel with every plan
        return make_plan(model=arch, weights=weights, extra_notes=tuple(loaded.notes), **make_plan_kwargs)
    return make_plan(
        model=arch,
        weights=weights,
        weights_total_bytes=exact,
        extra_notes=notes + tuple(loaded.notes),
        **make_plan_kwargs,
    )


#: JSON nested deeper than this is refused (a config.json is 3–4 levels deep; a safetensors header 2)
MAX_JSON_DEPTH = 64


def json_depth_exceeds(doc: Any, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """True when ``doc`` nests lists/objects deeper than ``max_depth`` (walked without recursion)."""
    stack = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def parse_json_bounded(
    text: str | bytes, field: str, source: object, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """``json.loads`` with a size cap checked before parsing and a nesting cap after it.

    Text over ``max_bytes``, invalid JSON, nesting deeper than ``max_depth`` (or deep enough
    to exhaust the parser's recursion: 10^5 brackets) raise :class:`K3InputError` naming
    ``field`` and ``source``, never ``RecursionError``.
    """
    if len(text) > max_bytes:
        raise K3InputError(field, f"{source}: {len(text):,} bytes of JSON", f"at most {max_bytes:,} bytes")
    try:
        doc = json.loads(text)
    except RecursionError:
        raise K3InputError(field, f"{source}: JSON nested too deep", f"at most {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise K3InputError(field, f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise K3InputError(
            field, f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if json_depth_exceeds(doc, max_depth):
        raise K3InputError(
            field, f"{source}: JSON nested deeper than {max_depth} levels", f"at most {max_depth} levels"
        )
    return doc
