"""Model architectures in k3lib's own schema, and the formulas that turn them into
parameter counts and KV-cache bytes.

Notation (used across the workbook): hidden size $D$, vocabulary $V$, layers $L$,
query heads $N_q$, KV heads $K$, head dim $H$, tokens $T$, batch $B$.

Attention layer kinds and what each caches per token (elements, before the dtype) — each kind is
one object in :mod:`k3lib.core.kinds`, which owns these formulas, the split under tensor
parallelism and each engine's rule; the groups below ask it (``g.kind_spec``):

* ``full`` (MHA/GQA): $2·K·H$ per layer — keys and values.
* ``sliding``: the same per token, but only the last ``window_tokens`` tokens.
* ``mla`` (multi-head latent attention): $r_{kv} + d_{rope}$ per layer — one
  compressed latent shared by all heads (what vLLM and SGLang cache).
* ``kda`` / ``gdn`` (linear attention: Kimi Delta Attention, Gated DeltaNet):
  nothing per token; a constant state per sequence of
  $N_v·d_k·d_v$ (recurrent) $+ C·(k_{conv}-1)$ (short-convolution) elements.
* ``mamba`` (Mamba-2 SSM, $d_{inner}$ = ``ssm_inner``, $d_{state}$ = ``ssm_state``, $n_g$ =
  ``ssm_groups``): nothing per token; per sequence $d_{state}·d_{inner}$ (SSM state) $+
  (k_{conv}-1)·(d_{inner} + 2·n_g·d_{state})$ (conv history).
* ``rwkv`` (RWKV-6/7 time mix, $N$ heads of size $h$, $D = N·h$): per sequence $D·h$ (the wkv
  state) $+ 2·D$ (the token shifts of time mix and channel mix).
* ``shortconv`` (LFM2's gated short convolution over $C$ = ``ssm_inner`` channels): per
  sequence $C·(k_{conv}-1)$ and no matrix state.

A ``full`` or ``sliding`` group with ``parallel_ssm`` (Falcon-H1) runs a Mamba-2 mixer beside its
attention in every layer: it caches K and V per token *and* holds the ``mamba`` state per
sequence (its ``ssm_*`` fields).

KV-sharing layers (Gemma-3n / Gemma 4 ``num_kv_shared_layers``): a group with
``kv_shared=True`` reads the cache of an earlier layer of the same kind and caches
nothing itself ($0$ elements per token); its weights still count.

MTP (multi-token prediction) modules (DeepSeek-V3 / GLM-4.5 ``num_nextn_predict_layers``)
are kept out of ``num_layers``: :meth:`Architecture.params_total` is the main model (the
figure model cards publish, e.g. DeepSeek-V3's 671B), :meth:`Architecture.params_mtp` the
MTP modules, and no KV cache is allocated for them (engines load and run them only for
speculative decoding).

>>> from k3lib.core.models import get_model
>>> get_model("llama-3.1-70b").kv_bytes_per_token(2)   # 2·80·8·128·2 B
327680
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from k3lib.core.errors import K3InputError
from k3lib.core.kinds import KIND_NAMES, KINDS, STATE_KIND_NAMES, LayerKind, get_kind

#: the layer-kind strings (their objects, formulas and engine rules: :mod:`k3lib.core.kinds`)
ATTENTION_KINDS = KIND_NAMES
#: kinds with no per-token cache, only a state per sequence (recurrent / linear attention)
LINEAR_KINDS = STATE_KIND_NAMES
PARAM_GROUPS = (
    "embedding",
    "lm_head",
    "attention",
    "dense_mlp",
    "shared_experts",
    "routed_experts",
    "moe_other",
    "norms",
)


def _positive(name: str, value: int, allow_zero: bool = False) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or (value == 0 and not allow_zero):
        raise K3InputError(name, f"{value!r} is not a {'non-negative' if allow_zero else 'positive'} integer")


@dataclass(frozen=True)
class AttentionGroup:
    """A set of ``count`` layers that share one attention design.

    GQA fields: ``num_heads``, ``kv_heads``, ``head_dim``, ``v_head_dim``.
    MLA fields: ``q_lora_rank`` (0 = no query LoRA), ``kv_lora_rank``,
    ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``.
    Linear fields: ``num_heads`` (key heads), ``linear_value_heads``,
    ``head_dim`` (key dim), ``v_head_dim``, ``conv_kernel``.
    Mamba-2 fields (``mamba`` groups, and ``full``/``sliding`` groups with ``parallel_ssm``):
    ``ssm_inner`` ($d_{inner}$), ``ssm_state`` ($d_{state}$), ``ssm_groups`` ($n_g$),
    ``ssm_heads``, ``conv_kernel``. RWKV: ``num_heads`` × ``head_dim`` (the wkv head size).
    Short conv: ``ssm_inner`` channels, ``conv_kernel`` (LFM2's ``L_cache``).
    """

    kind: str
    count: int
    num_heads: int
    kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    window_tokens: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    linear_value_heads: int = 0
    conv_kernel: int = 0
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    output_gate: bool = False
    sinks: bool = False
    full_rank_gate: bool = False
    kv_shared: bool = False
    ssm_inner: int = 0
    ssm_state: int = 0
    ssm_groups: int = 0
    ssm_heads: int = 0
    parallel_ssm: bool = False

    def __post_init__(self) -> None:
        spec = get_kind(self.kind)
        _positive("attention.count", self.count)
        _positive("attention.num_heads", self.num_heads)
        if not isinstance(self.kv_shared, bool):
            raise K3InputError("attention.kv_shared", f"{self.kv_shared!r} is not true or false")
        spec.validate(self)  # the fields the kind needs; kv_shared / parallel_ssm only on GQA groups

    @property
    def kind_spec(self) -> LayerKind:
        """The layer kind's object (:mod:`k3lib.core.kinds`): its cache, state, TP split and engine rules."""
        return KINDS[self.kind]

    # ---- cache -----------------------------------------------------------
    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """Elements cached per token per layer: $K·(H + H_v)$ (GQA), $r_{kv} + d_{rope}$ (MLA);
        0 for linear attention and for KV-sharing layers (``kv_shared``: they read an
        earlier layer's cache)."""
        return self.kind_spec.kv_elements_per_token(self)

    @property
    def value_heads(self) -> int:
        return self.linear_value_heads or self.num_heads

    @property
    def has_state(self) -> bool:
        """Whether the layers hold a state per sequence (linear kinds, parallel Mamba mixers)."""
        return self.kind_spec.has_state(self)

    @property
    def recurrent_state_elements_per_layer(self) -> int:
        """The matrix state per sequence: value heads × key dim × value dim (KDA, Gated DeltaNet);
        $d_{state}·d_{inner}$ (Mamba-2, also a ``parallel_ssm`` layer's); $D·h$ (RWKV); 0 (short conv)
        — llama.cpp's ``n_embd_s()`` (src/llama-hparams.cpp @0c1e57098)."""
        return self.kind_spec.recurrent_state_elements(self)

    @property
    def conv_state_elements_per_layer(self) -> int:
        """The rolling history per sequence: conv channels × (kernel − 1) (KDA, Gated DeltaNet, short
        conv; Mamba-2's channels are $d_{inner} + 2·n_g·d_{state}$), RWKV's two token shifts $2·D$ —
        llama.cpp's ``n_embd_r()`` (src/llama-hparams.cpp @0c1e57098)."""
        return self.kind_spec.conv_state_elements(self)

    @property
    def _conv_channels(self) -> int:
        return self.kind_spec.conv_channels(self)

    # ---- parameters ------------------------------------------------------
    def params_per_layer(self, hidden_size: int) -> int:
        """Weights of one attention layer (projections, gates, norms inside attention): the kind's
        :meth:`~k3lib.core.kinds.LayerKind.params_per_layer`."""
        return self.kind_spec.params_per_layer(self, hidden_size)


@dataclass(frozen=True)
class MLPSpec:
    """Feed-forward layers: ``dense_layers`` dense ones and ``moe_layers`` MoE ones.

    A gated MLP of width $I$ holds $3·D·I$ weights. A MoE layer holds
    $E·3·D_e·I_e$ routed-expert weights ($D_e$ = ``latent_dim`` when the experts
    run in a smaller latent space, else $D$), shared experts $3·D·I_s$, and the
    router $E·D$.
    """

    dense_layers: int
    dense_intermediate: int
    moe_layers: int = 0
    n_routed_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    n_shared_experts: int = 0
    shared_intermediate: int = 0
    latent_dim: int = 0
    expert_bias: bool = False
    router_bias: bool = False
    router_score_bias: bool = False
    shared_expert_gate: bool = False

    def __post_init__(self) -> None:
        _positive("mlp.dense_layers", self.dense_layers, allow_zero=True)
        _positive("mlp.moe_layers", self.moe_layers, allow_zero=True)
        if self.moe_layers:
            _positive("mlp.n_routed_experts", self.n_routed_experts)
            _positive("mlp.experts_per_token", self.experts_per_token)
            _positive("mlp.moe_intermediate", self.moe_intermediate)
            if self.experts_per_token > self.n_routed_experts:
                raise K3InputError("mlp.experts_per_token", "more active experts than experts exist")

    def expert_params(self, hidden_size: int) -> int:
        """Weights of one routed expert: 3·D_e·I_e (+ biases)."""
        de = self.latent_dim or hidden_size
        n = 3 * de * self.moe_intermediate
        if self.expert_bias:
            n += 2 * self.moe_intermediate + de
        return n


@dataclass(frozen=True)
class Architecture:
    """A model described by its shapes; every count below is derived from them."""

    id: str
    name: str
    hidden_size: int
    vocab_size: int
    num_layers: int
    attention: tuple[AttentionGroup, ...]
    mlp: MLPSpec
    max_context_tokens: int
    tie_word_embeddings: bool = False
    native_formats: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    notes: str = ""
    family: str = ""
    official_params_total: str = ""
    official_params_active: str = ""
    mtp_layers: int = 0
    per_layer_input_dim: int = 0
    per_layer_input_vocab: int = 0
    #: RMS norms of width D per layer: 2 (before attention and before the MLP), 4 for Gemma 2/3/3n/4,
    #: which also normalise each block's output ("sandwich" norms)
    norms_per_layer: int = 2
    #: the attention group (index into ``attention``) of each layer, in layer order, when the
    #: config lists the positions (``layer_types``, ``linear_attn_config``, …); () = the
    #: family's convention (:func:`attention_group_by_layer`)
    layer_attention_groups: tuple[int, ...] = ()
    #: 0-based indices of the MoE layers when the config fixes them (``interleave_moe_layer_step``,
    #: ``decoder_sparse_step``/``mlp_only_layers``, ``first_k_dense_replace``/``moe_layer_freq``);
    #: () = the family's convention (:func:`moe_layer_flags`)
    moe_layer_indices: tuple[int, ...] = ()

    kind = "architecture"

    def __post_init__(self) -> None:
        _positive("hidden_size", self.hidden_size)
        _positive("vocab_size", self.vocab_size)
        _positive("num_layers", self.num_layers)
        _positive("max_context_tokens", self.max_context_tokens)
        _positive("mtp_layers", self.mtp_layers, allow_zero=True)
        _positive("per_layer_input_dim", self.per_layer_input_dim, allow_zero=True)
        _positive("per_layer_input_vocab", self.per_layer_input_vocab, allow_zero=True)
        if (
            isinstance(self.norms_per_layer, bool)
            or not isinstance(self.norms_per_layer, int)
            or not 1 <= self.norms_per_layer <= 8
        ):
            raise K3InputError("norms_per_layer", f"{self.norms_per_layer!r}", "a whole number from 1 to 8")
        if sum(g.count for g in self.attention) != self.num_layers:
            raise K3InputError(
                "attention",
                f"layer groups cover {sum(g.count for g in self.attention)} layers, the model has {self.num_layers}",
            )
        if self.mlp.dense_layers + self.mlp.moe_layers != self.num_layers:
            raise K3InputError(
                "mlp",
                f"dense + MoE layers = {self.mlp.dense_layers + self.mlp.moe_layers}, the model has {self.num_layers}",
            )
        object.__setattr__(self, "layer_attention_groups", tuple(self.layer_attention_groups or ()))
        object.__setattr__(self, "moe_layer_indices", tuple(self.moe_layer_indices or ()))
        if self.layer_attention_groups:
            order = self.layer_attention_groups
            if len(order) != self.num_layers or any(
                sum(1 for gi in order if gi == j) != g.count for j, g in enumerate(self.attention)
            ):
                raise K3InputError(
                    "layer_attention_groups",
                    f"{len(order)} entries that do not match the attention "
                    f"groups' counts ({', '.join(str(g.count) for g in self.attention)})",
                    f"one group index per layer ({self.num_layers}), each group's count of times",
                )
        if self.moe_layer_indices:
            idx = self.moe_layer_indices
            if (
                len(set(idx)) != len(idx)
                or len(idx) != self.mlp.moe_layers
                or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.num_layers for i in idx)
            ):
                raise K3InputError(
                    "moe_layer_indices",
                    f"{len(idx)} indices for {self.mlp.moe_layers} MoE layers",
                    f"{self.mlp.moe_layers} distinct layer indices in 0…{self.num_layers - 1}",
                )

    # ---- parameters ------------------------------------------------------
    def param_groups(self) -> dict[str, int]:
        """Parameter count per group (text weights; no MTP layers, no vision tower).

        Per-layer embeddings (Gemma-3n / Gemma 4 PLE, ``per_layer_input_dim`` $p$ over a
        vocabulary $V_p$): a table of $V_p·L·p$ counted with the embedding (a lookup), and
        the projections $D·L·p$ (model) $+ L·2·D·p$ (per-layer gate and projection) with
        the dense MLP."""
        d, m = self.hidden_size, self.mlp
        router = m.n_routed_experts * d + (m.n_routed_experts if (m.router_bias or m.router_score_bias) else 0)
        latent = (2 * d * m.latent_dim + m.latent_dim) if m.latent_dim else 0
        gate = d if m.shared_expert_gate else 0
        p, L = self.per_layer_input_dim, self.num_layers
        ple_table = self.per_layer_input_vocab * L * p
        ple_proj = d * L * p + L * 2 * d * p
        return {
            "embedding": self.vocab_size * d + ple_table,
            "lm_head": 0 if self.tie_word_embeddings else self.vocab_size * d,
            "attention": sum(g.count * g.params_per_layer(d) for g in self.attention),
            "dense_mlp": m.dense_layers * 3 * d * m.dense_intermediate + ple_proj,
            "shared_experts": m.moe_layers * 3 * d * m.shared_intermediate * m.n_shared_experts,
            "routed_experts": m.moe_layers * m.n_routed_experts * m.expert_params(d),
            "moe_other": m.moe_layers * (router + latent + gate),
            "norms": (self.norms_per_layer * self.num_layers + 1) * d,
        }

    @property
    def params_total(self) -> int:
        """Σ of :meth:`param_groups` (the main model; MTP modules are :attr:`params_mtp`)."""
        return sum(self.param_groups().values())

    def mtp_param_groups(self) -> dict[str, int]:
        """Parameters of the ``mtp_layers`` multi-token-prediction modules, by group.

        Each module (DeepSeek-V3 ``README_WEIGHTS.md``) is one more decoder layer shaped
        like the model's last one (its attention group, a MoE MLP when the model has MoE
        layers) plus ``enorm``, ``hnorm`` and the shared head's norm ($3D$) and ``eh_proj``
        ($2D·D$). The embedding and output head are shared with the main model, so they
        are not counted here:

        $P_{mtp} = n_{mtp}·(P_{attn} + P_{mlp} + n_{norm}·D + 3D + 2D^2)$ ($n_{norm}$ = the layer's norms, 2)
        """
        if not self.mtp_layers:
            return {}
        d, m, n = self.hidden_size, self.mlp, self.mtp_layers
        attn = self.attention[-1]
        for g in self.attention:  # the last layer of MLA/GQA models: a caching attention kind
            if g.kind_spec.mtp_template:
                attn = g
        out = {
            "attention": n * attn.params_per_layer(d),
            "norms": n * (self.norms_per_layer * d + 3 * d),
            "moe_other": 0,
            "dense_mlp": 0,
            "shared_experts": 0,
            "routed_experts": 0,
            "mtp_proj": n * 2 * d * d,
        }
        if m.moe_layers:
            router = m.n_routed_experts * d + (m.n_routed_experts if (m.router_bias or m.router_score_bias) else 0)
            latent = (2 * d * m.latent_dim + m.latent_dim) if m.latent_dim else 0
            out["shared_experts"] = n * 3 * d * m.shared_intermediate * m.n_shared_experts
            out["routed_experts"] = n * m.n_routed_experts * m.expert_params(d)
            out["moe_other"] = n * (router + latent + (d if m.shared_expert_gate else 0))
        else:
            out["dense_mlp"] = n * 3 * d * m.dense_intermediate
        return out

    @property
    def params_mtp(self) -> int:
        """Σ of :meth:`mtp_param_groups` (0 without MTP modules)."""
        return sum(self.mtp_param_groups().values())

    @property
    def params_checkpoint(self) -> int:
        """Main model + MTP modules: the parameters a checkpoint stores (text tower)."""
        return self.params_total + self.params_mtp

    @property
    def params_active(self) -> int:
        """Parameters touched per token, excluding the input embedding (a lookup):
        total − embedding − routed experts + (k/E)·routed experts."""
        g = self.param_groups()
        m = self.mlp
        active_routed = m.moe_layers * m.experts_per_token * m.expert_params(self.hidden_size)
        return self.params_total - g["embedding"] - g["routed_experts"] + active_routed

    # ---- KV cache --------------------------------------------------------
    def kv_layers(self) -> dict[str, int]:
        """Layers of each attention kind that own a KV cache (KV-sharing layers and linear
        attention own none; MTP modules are not counted)."""
        out: dict[str, int] = {}
        for g in self.attention:
            if not g.kind_spec.caches_kv_per_token:
                continue
            out[g.kind] = out.get(g.kind, 0) + (0 if g.kv_shared else g.count)
        return out

    def kv_elements_per_token(self) -> int:
        """Elements per token over layers whose cache grows with context (KV-owning layers only)."""
        return sum(g.count * g.kv_elements_per_token_per_layer for g in self.attention if not g.kind_spec.windowed)

    def kv_bytes_per_token(self, bytes_per_element: float) -> int:
        """Growing-cache bytes per token = elements per token × bytes per element."""
        return int(round(self.kv_elements_per_token() * bytes_per_element))

    def kv_cache_bytes(
        self, *, context_tokens: int, batch: int, bytes_per_element: float, state_bytes_per_element: float = 4.0
    ) -> int:
        """KV cache for ``batch`` sequences of ``context_tokens``:

        $B·[T·e_{full} + \\min(T, W)·e_{window}]·b + B·S·b_{state}$
        """
        full = self.kv_elements_per_token() * context_tokens
        window = sum(
            g.count * g.kv_elements_per_token_per_layer * min(context_tokens, g.window_tokens)
            for g in self.attention
            if g.kind_spec.windowed
        )
        return int(
            round(
                batch * (full + window) * bytes_per_element
                + batch * self.state_elements_per_sequence() * state_bytes_per_element
            )
        )

    def state_elements_per_sequence(self) -> int:
        """Constant per-sequence state of linear-attention layers (recurrent + conv)."""
        return sum(
            g.count * (g.recurrent_state_elements_per_layer + g.conv_state_elements_per_layer) for g in self.attention
        )

    # ---- weights ---------------------------------------------------------
    def weights_bytes(self, bits_for_group: Mapping[str, float], *, include_mtp: bool = False) -> int:
        """Σ over groups of params × bits / 8; ``bits_for_group`` maps group → bits
        (key ``"*"`` for every group not named). ``include_mtp`` adds the MTP modules
        (their ``eh_proj`` priced like attention): the checkpoint's bytes rather than
        what an engine loads without speculative decoding."""
        total = 0.0
        items = list(self.param_groups().items())
        if include_mtp:
            items += [("attention" if g == "mtp_proj" else g, n) for g, n in self.mtp_param_groups().items()]
        for name, n in items:
            bits = bits_for_group.get(name, bits_for_group.get("*"))
            if bits is None:
                raise K3InputError("weights", f"no precision given for parameter group {name!r}")
            total += n * bits / 8
        return int(math.ceil(total))

    @property
    def attention_heads(self) -> int:
        """Query heads of the full-attention layers (what tensor parallelism splits)."""
        return max(g.num_heads for g in self.attention)

    def head_counts(self) -> tuple[int, ...]:
        """Every head count that a TP size must divide."""
        return tuple(sorted({h for g in self.attention for h in g.kind_spec.head_counts(g)}))

    # ---- layer order -----------------------------------------------------
    def layer_order(self) -> tuple[tuple[int, bool], ...]:
        """(attention group index, is MoE) of each layer, in layer order: the config's
        positions when it lists them, else the family's convention
        (:func:`attention_group_by_layer`, :func:`moe_layer_flags`)."""
        return tuple(zip(attention_group_by_layer(self), moe_layer_flags(self)))


# ---------------------------------------------------------------- layer order (which layer is what)

#: families whose MoE layers are interleaved by a step, layer $i$ MoE when $(i+1) \\bmod s = 0$:
#: Llama 4 ``interleave_moe_layer_step`` (transformers ``Llama4TextConfig.moe_layers`` =
#: ``range(s-1, L, s)``), Qwen MoE ``decoder_sparse_step`` (``Qwen2MoeDecoderLayer``)
INTERLEAVED_MOE_FAMILIES = ("llama4", "qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_vl_moe")
#: attention kinds placed at a period (the others fill between them)
PERIODIC_KINDS = tuple(k.name for k in KINDS.values() if k.periodic)


def interleaved_moe_indices(num_layers: int, step: int, *, skip: tuple[int, ...] = ()) -> tuple[int, ...]:
    """MoE layers of an interleaved model: $\\{i : (i+1) \\bmod s = 0,\\ i \\notin skip\\}$ —
    Llama 4 (``interleave_moe_layer_step`` $s$) and Qwen MoE (``decoder_sparse_step`` $s$,
    ``mlp_only_layers`` = ``skip``).

    >>> interleaved_moe_indices(8, 2)
    (1, 3, 5, 7)
    """
    return tuple(i for i in range(num_layers) if (i + 1) % max(1, step) == 0 and i not in skip)


def first_dense_moe_indices(num_layers: int, first_dense: int, freq: int = 1) -> tuple[int, ...]:
    """MoE layers of a DeepSeek-style model: $\\{i \\ge k : i \\bmod f = 0\\}$ with $k$ =
    ``first_k_dense_replace`` and $f$ = ``moe_layer_freq`` (transformers ``DeepseekV3DecoderLayer``).

    >>> first_dense_moe_indices(6, 2)
    (2, 3, 4, 5)
    """
    return tuple(i for i in range(num_layers) if i >= first_dense and i % max(1, freq) == 0)


def moe_layer_flags(arch: Architecture) -> tuple[bool, ...]:
    """Whether each layer's MLP is MoE: ``arch.moe_layer_indices`` when set; else, for an
    interleaved family (:data:`INTERLEAVED_MOE_FAMILIES`) whose layers divide evenly,
    :func:`interleaved_moe_indices` with step $s = L / n_{moe}$ (Llama 4 Maverick: 48 / 24 = 2,
    MoE at 1, 3, 5, …); otherwise the dense layers first (``first_k_dense_replace``)."""
    L, m = arch.num_layers, arch.mlp
    if arch.moe_layer_indices:
        moe = set(arch.moe_layer_indices)
        return tuple(i in moe for i in range(L))
    if m.moe_layers and m.dense_layers and arch.family.startswith(INTERLEAVED_MOE_FAMILIES) and L % m.moe_layers == 0:
        moe = set(interleaved_moe_indices(L, L // m.moe_layers))
        return tuple(i in moe for i in range(L))
    return tuple(i >= m.dense_layers for i in range(L))


def periodic_positions(num_layers: int, count: int) -> tuple[int, ...]:
    """Where ``count`` layers of a periodic kind sit among ``num_layers``: every $p$-th layer
    ($(i+1) \\bmod p = 0$) for the smallest $p$ with $\\lfloor L/p \\rfloor \\le n$, the rest of the
    $n$ at the last layers. This is each config's own pattern: Qwen3-Next
    ``full_attention_interval`` 4, Llama 4's NoPE layer every 4th, Gemma 3's
    ``sliding_window_pattern`` 6, gpt-oss's alternating ``layer_types``, Kimi K3 / Kimi
    Linear's ``full_attn_layers`` (every 4th and the last: K3 1-based 4, 8, …, 92, 93).

    >>> periodic_positions(93, 24)[-3:], periodic_positions(48, 12)[:3]
    ((87, 91, 92), (3, 7, 11))
    """
    if count <= 0:
        return ()
    p = next(p for p in range(1, num_layers + 2) if num_layers // p <= count)
    at = [i for i in range(num_layers) if (i + 1) % p == 0]
    for i in range(num_layers - 1, -1, -1):
        if len(at) >= count:
            break
        if i not in at:
            at.append(i)
    return tuple(sorted(at))


def _largest_remainder_order(counts: list[int], n: int) -> list[int]:
    assigned = [0] * len(counts)
    out = []
    for i in range(n):
        deficit = [c * (i + 1) / n - a for c, a in zip(counts, assigned)]
        g = max(range(len(counts)), key=lambda j: (round(deficit[j], 9), counts[j]))
        assigned[g] += 1
        out.append(g)
    return out


def attention_group_by_layer(arch: Architecture) -> tuple[int, ...]:
    """The attention group of each layer, in order: ``arch.layer_attention_groups`` when set;
    else, for two kinds of which one is periodic (:data:`PERIODIC_KINDS`: full or MLA between
    sliding or linear layers), :func:`periodic_positions`; KV-sharing groups (Gemma-3n /
    Gemma 4) take the last layers of their kind; otherwise the kinds evenly interleaved
    (largest remainder)."""
    if arch.layer_attention_groups:
        return arch.layer_attention_groups
    groups, L = arch.attention, arch.num_layers
    if len(groups) == 1:
        return (0,) * L
    kinds: dict[str, int] = {}
    for g in groups:
        kinds[g.kind] = kinds.get(g.kind, 0) + g.count
    periodic = [k for k in kinds if get_kind(k).periodic]
    if len(kinds) == 2 and len(periodic) == 1:
        pk = periodic[0]
        at = set(periodic_positions(L, kinds[pk]))
        kind_of = [pk if i in at else next(k for k in kinds if k != pk) for i in range(L)]
        out: list[int] = [-1] * L
        # KV-sharing groups take the last layers of their kind; the owning groups the first
        for kv_shared in (True, False):
            for j, g in enumerate(groups):
                if g.kv_shared != kv_shared:
                    continue
                free = [i for i in range(L) if kind_of[i] == g.kind and out[i] < 0]
                for i in free[len(free) - g.count :] if kv_shared else free[: g.count]:
                    out[i] = j
        if all(j >= 0 for j in out):
            return tuple(out)
    return tuple(_largest_remainder_order([g.count for g in groups], L))
