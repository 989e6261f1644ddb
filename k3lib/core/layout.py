"""How GPUs are arranged: tensor (TP), pipeline (PP), data (DP) and expert (EP)
parallelism over nodes — ONE rule for valid TP sizes, stage cuts and deployable layouts.

$G = TP·DP·PP$ GPUs over $N$ nodes of $g$ GPUs each. A layout someone can launch keeps
TP inside a node (NVLink) and puts pipeline stages across nodes:

* **valid TP** — a size that divides every head count of the model and, for a GQA layer
  with $K$ KV heads, divides $K$ or is a multiple of it (vLLM replicates KV heads then);
* **stages** — $L$ layers cut into $PP$ runs of $\\lfloor L/PP \\rfloor$, the remainder
  given one each to the stages just before the last (vLLM's ``get_pp_indices``); each stage
  holds the layers at its indices, with their own attention kind and MLP (the model's layer
  order: Maverick's MoE every 2nd layer, K3's MLA every 4th);
* **deployable** — one node: TP = the widest valid size that divides the GPU count, the
  rest as stages; several nodes: whole nodes only, TP = the widest valid size that divides
  a node, PP across nodes. A layout of TP = 1 with more stages than nodes is not proposed.

>>> from k3lib.core.models import get_model
>>> valid_tp_sizes(get_model("llama-3.1-70b"))
(1, 2, 4, 8, 16, 32, 64)
>>> stage_layer_counts(93, 4)
(23, 23, 24, 23)
>>> deployable_layout(get_model("kimi-k3"), gpus=16, gpus_per_node=8).describe()
'TP=8 × PP=2 over 2 nodes'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from k3lib.core.architecture import Architecture, AttentionGroup
from k3lib.core.errors import DoesNotSplitError, K3InputError
from k3lib.core.kinds import kind_of

if TYPE_CHECKING:
    from k3lib.core.models import ModelSpec

#: GPUs per node when a hardware row does not say (HGX/DGX-class boards hold 8).
DEFAULT_GPUS_PER_NODE = 8
#: the largest TP size considered: far beyond any node (NVL72 racks are 72 GPUs).
MAX_TP = 1024


@dataclass(frozen=True)
class Layout:
    """$G = TP·DP·PP$ GPUs over ``nodes`` nodes; ``ep`` is 1 (experts split by TP) or
    $TP·DP$ (whole experts spread over every GPU of a stage).

    >>> Layout(tp=8, pp=2, nodes=2).gpus
    16
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    nodes: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise K3InputError(name, f"{value!r} is not a whole number ≥ 1")
        if self.ep not in (1, self.tp * self.dp):
            raise K3InputError(
                "ep",
                f"EP={self.ep} with TP={self.tp} × DP={self.dp}",
                f"1 (experts split by TP) or {self.tp * self.dp} (TP × DP: every GPU of a stage)",
            )
        if self.gpus % self.nodes:
            raise K3InputError(
                "nodes",
                f"{self.gpus} GPUs cannot be spread evenly over {self.nodes} nodes",
                "a divisor of TP × DP × PP",
            )

    @property
    def gpus(self) -> int:
        """$G = TP·DP·PP$."""
        return self.tp * self.dp * self.pp

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def stage_gpus(self) -> int:
        """GPUs in one pipeline stage: $TP·DP$."""
        return self.tp * self.dp

    @property
    def comm_group(self) -> int:
        """GPUs in one all-reduce / all-to-all group: TP, or TP·DP when EP spans the stage."""
        return self.tp * self.dp if self.ep > 1 else self.tp

    def describe(self) -> str:
        """``TP=8 × PP=2 over 2 nodes`` and the like."""
        parts = [f"TP={self.tp}"]
        if self.dp > 1:
            parts.append(f"DP={self.dp}")
        if self.pp > 1:
            parts.append(f"PP={self.pp}")
        text = " × ".join(parts)
        if self.ep > 1:
            text += f", EP={self.ep}"
        if self.nodes > 1:
            text += f" over {self.nodes} nodes"
        return text

    def topology_notes(self, gpus_per_node: int | None = None) -> tuple[str, ...]:
        """What makes this layout slow or unusual on nodes of ``gpus_per_node`` GPUs."""
        out = []
        if self.tp > self.gpus_per_node:
            out.append(
                f"TP={self.tp} spans nodes ({self.gpus_per_node} GPUs each): its all-reduces cross "
                "the network, which is far slower than NVLink"
            )
        if gpus_per_node is not None and self.gpus_per_node > gpus_per_node:
            out.append(f"{self.gpus_per_node} GPUs in one node: more than this GPU's nodes hold ({gpus_per_node})")
        return tuple(out)


def head_counts(model: ModelSpec) -> tuple[int, ...]:
    """Every head count a TP size must divide (none for a guide profile)."""
    return model.head_counts() if isinstance(model, Architecture) else ()


@cache
def _valid_tp(counts: tuple[int, ...], kv_heads: tuple[int, ...], limit: int) -> tuple[int, ...]:
    return tuple(
        t
        for t in range(1, limit + 1)
        if all(c % t == 0 for c in counts) and all(k % t == 0 or t % k == 0 for k in kv_heads)
    )


def valid_tp_sizes(model: ModelSpec, limit: int = 128) -> tuple[int, ...]:
    """TP sizes (≤ ``limit``, at most :data:`MAX_TP`) the model can be split by: each
    divides every head count and, for GQA layers with $K$ KV heads, divides $K$ or is a
    multiple of it (vLLM's rule). A guide profile has no heads: any size.

    >>> from k3lib.core.models import get_model
    >>> valid_tp_sizes(get_model("kimi-k3"))[:8]
    (1, 2, 3, 4, 6, 8, 12, 16)
    """
    limit = max(1, min(int(limit), MAX_TP))
    if not isinstance(model, Architecture):
        return tuple(range(1, limit + 1))
    kv = tuple(sorted({k for g in model.attention for k in kind_of(g).kv_heads(g)}))
    return _valid_tp(model.head_counts(), kv, limit)


def check_tp(model: ModelSpec, tp: int) -> int:
    """``tp`` if the model splits that way, else :class:`~k3lib.core.errors.DoesNotSplitError`
    naming ``tp`` and the valid sizes."""
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise K3InputError("tp", f"{tp!r} is not a whole number ≥ 1")
    if tp > MAX_TP:
        raise K3InputError("tp", f"{tp} is more than {MAX_TP}", f"at most {MAX_TP}")
    allowed = valid_tp_sizes(model, max(128, tp))
    if tp not in allowed:
        heads = ", ".join(map(str, head_counts(model)))
        raise DoesNotSplitError(
            "tp",
            f"{model.name} cannot be split {tp}-way by tensor parallelism (heads: {heads})",
            "TP = " + ", ".join(map(str, allowed[:16])),
        )
    return tp


def stage_layer_counts(num_layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage: $\\lfloor L/PP \\rfloor$ each, the remainder given one
    each to the stages just before the last (vLLM's ``get_pp_indices``; the last stage
    also holds the LM head).

    >>> stage_layer_counts(61, 2)
    (31, 30)
    """
    if pp > num_layers:
        raise DoesNotSplitError("pp", f"{pp} pipeline stages for {num_layers} layers", f"at most {num_layers}")
    counts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        counts[-i % pp] += 1
    return tuple(counts)


def layer_sequence(model: Architecture) -> tuple[tuple[int, bool], ...]:
    """(attention group index, is MoE) for each layer, in the model's own order
    (:meth:`~k3lib.core.architecture.Architecture.layer_order`): the config's positions when
    it lists them, else the family's convention — Llama 4 Maverick's MoE every 2nd layer
    (1, 3, 5, …), K3's MLA every 4th and the last, dense layers first for DeepSeek-style models."""
    return model.layer_order()


def stage_architecture(model: Architecture, layers: Sequence[tuple[int, bool]]) -> Architecture:
    """The slice of ``model`` holding only ``layers`` (from :func:`layer_sequence`), with the
    slice's own layer order (group indices and MoE positions renumbered within the slice)."""
    groups: list[AttentionGroup] = []
    renumber: dict[int, int] = {}
    for j, g in enumerate(model.attention):
        k = sum(1 for gi, _ in layers if gi == j)
        if k:
            renumber[j] = len(groups)
            groups.append(dataclasses.replace(g, count=k))
    moe = sum(1 for _, is_moe in layers if is_moe)
    mlp = dataclasses.replace(model.mlp, dense_layers=len(layers) - moe, moe_layers=moe)
    return dataclasses.replace(
        model,
        num_layers=len(layers),
        attention=tuple(groups),
        mlp=mlp,
        layer_attention_groups=tuple(renumber[gi] for gi, _ in layers),
        moe_layer_indices=tuple(i for i, (_, is_moe) in enumerate(layers) if is_moe),
    )


def stage_layer_indices(num_layers: int, pp: int) -> tuple[range, ...]:
    """The layer indices of each stage: consecutive runs of :func:`stage_layer_counts`
    (vLLM ``get_pp_indices``: stage $s$ holds ``range(start_s, end_s)``).

    >>> stage_layer_indices(10, 3)
    (range(0, 3), range(3, 7), range(7, 10))
    """
    out, start = [], 0
    for n in stage_layer_counts(num_layers, pp):
        out.append(range(start, start + n))
        start += n
    return tuple(out)


_STAGES: dict[tuple[int, int], tuple[Architecture, tuple[Architecture, ...]]] = {}


def pipeline_stages(model: Architecture, pp: int) -> tuple[Architecture, ...]:
    """The model cut into ``pp`` stages of whole layers by index (:func:`stage_layer_indices`),
    each holding the attention kinds and MoE/dense MLPs of its own layers
    (:func:`layer_sequence`). Memoized per model object (an Architecture holds a dict, so it is not hashable)."""
    key = (id(model), pp)
    hit = _STAGES.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    seq = layer_sequence(model)
    out = [stage_architecture(model, [seq[i] for i in idx]) for idx in stage_layer_indices(model.num_layers, pp)]
    if len(_STAGES) > 1024:
        _STAGES.clear()
    _STAGES[key] = (model, tuple(out))
    return tuple(out)


def _widest_tp(model: ModelSpec, gpus: int) -> int:
    return max(t for t in valid_tp_sizes(model, gpus) if gpus % t == 0)


def deployable_layout(model: ModelSpec, *, gpus: int, gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> Layout:
    """The layout a person would launch for ``gpus`` GPUs on nodes of ``gpus_per_node``:
    one node — TP as wide as the model allows, the rest as stages; more — whole nodes,
    TP inside a node, one or more stages per node. Raises
    :class:`~k3lib.core.errors.DoesNotSplitError` naming ``gpus`` when no such layout exists
    (a partial node, or TP = 1 with more stages than nodes).

    >>> from k3lib.core.models import get_model
    >>> deployable_layout(get_model("kimi-k3"), gpus=24).describe()
    'TP=8 × PP=3 over 3 nodes'
    """
    if gpus <= gpus_per_node:
        nodes, per_node = 1, gpus
    else:
        if gpus % gpus_per_node:
            raise DoesNotSplitError(
                "gpus",
                f"{gpus} GPUs are not whole nodes of {gpus_per_node}",
                f"1–{gpus_per_node} in one node, or a multiple of {gpus_per_node}",
            )
        nodes, per_node = gpus // gpus_per_node, gpus_per_node
    tp = _widest_tp(model, per_node)
    pp = gpus // tp
    if tp == 1 and pp > nodes:
        raise DoesNotSplitError(
            "gpus",
            f"{model.name} cannot be split over {per_node} GPUs of a node by tensor "
            "parallelism (it would need TP=1 with a pipeline stage per GPU)",
            "TP = " + ", ".join(map(str, valid_tp_sizes(model, gpus_per_node))),
        )
    if isinstance(model, Architecture) and pp > model.num_layers:
        raise DoesNotSplitError(
            "gpus",
            f"{gpus} GPUs would need {pp} pipeline stages of whole layers; {model.name} has {model.num_layers}",
            f"at most {model.num_layers * tp:,} GPUs for this model at TP={tp}",
        )
    return Layout(tp=tp, pp=pp, nodes=nodes)


def deployable_gpu_counts(
    model: ModelSpec, *, gpus_per_node: int = DEFAULT_GPUS_PER_NODE, max_gpus: int = 256
) -> tuple[int, ...]:
    """GPU counts with a :func:`deployable_layout`: 1…``gpus_per_node`` where the model
    splits, then whole nodes.

    >>> from k3lib.core.models import get_model
    >>> deployable_gpu_counts(get_model("kimi-k3"), max_gpus=32)
    (1, 2, 3, 4, 6, 8, 16, 24, 32)
    """
    out = []
    for n in list(range(1, min(gpus_per_node, max_gpus) + 1)) + list(
        range(2 * gpus_per_node, max_gpus + 1, gpus_per_node)
    ):
        try:
            deployable_layout(model, gpus=n, gpus_per_node=gpus_per_node)
        except K3InputError:
            continue
        out.append(n)
    return tuple(out)


def choose_layout(
    model: ModelSpec,
    *,
    gpus: int,
    nodes: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    dp: int = 1,
    ep: int = 1,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
) -> Layout:
    """The layout of a plan: what the user gave (``tp``/``pp``/``nodes``), completed; with
    nothing given, :func:`deployable_layout`. An explicit layout is checked (valid TP,
    TP × DP × PP = GPUs, stages ≤ layers) but not second-guessed."""
    if tp is None and pp is None and nodes is None and dp == 1 and ep == 1:
        return deployable_layout(model, gpus=gpus, gpus_per_node=gpus_per_node)
    nodes_given = nodes is not None
    if nodes is None:
        nodes = 1 if gpus <= gpus_per_node or gpus % gpus_per_node else gpus // gpus_per_node
    if gpus % nodes:
        raise K3InputError(
            "nodes", f"{gpus} GPUs cannot be spread evenly over {nodes} nodes", "a divisor of the GPU count"
        )
    if gpus % dp:
        raise K3InputError("dp", f"DP {dp} does not divide {gpus} GPUs", "a divisor of --gpus")
    rest = gpus // dp
    if tp is not None:
        check_tp(model, tp)
        if pp is None:
            if rest % tp:
                raise K3InputError("tp", f"TP {tp} does not divide {rest} GPUs", "a divisor of --gpus")
            pp = rest // tp
    elif pp is not None:
        if rest % pp:
            raise K3InputError("pp", f"PP {pp} does not divide {rest} GPUs", "a divisor of --gpus")
        tp = check_tp(model, rest // pp)
    else:
        per_node = max(1, rest // nodes) if rest % nodes == 0 else rest
        tp = _widest_tp(model, per_node)
        pp = rest // tp
    if tp * pp * dp != gpus:
        raise K3InputError("gpus", f"TP {tp} × PP {pp} × DP {dp} = {tp * pp * dp}, not {gpus}", "tp × pp × dp = gpus")
    if isinstance(model, Architecture) and pp > model.num_layers:
        raise DoesNotSplitError(
            "pp", f"{pp} pipeline stages for {model.num_layers} layers", f"at most {model.num_layers}"
        )
    if nodes_given and isinstance(model, Architecture) and gpus // nodes > gpus_per_node:
        # a real deployment: a node holds what the hardware row says (a guide profile keeps the guides'
        # one-pool arithmetic, which the audit reproduces)
        raise K3InputError(
            "nodes",
            f"{gpus} GPUs in {nodes} node{'s' if nodes > 1 else ''} is "
            f"{gpus // nodes} per node, but a node of this GPU holds {gpus_per_node}",
            f"at least {-(-gpus // gpus_per_node)} nodes",
        )
    return Layout(tp=tp, pp=pp, dp=dp, ep=ep, nodes=nodes)
