"""Layer kinds: one object per mixer kind, the one owner of everything that differs by kind.

A layer's kind is a string in data and configs (``AttentionGroup.kind``: ``full``, ``sliding``,
``mla``, ``kda``, ``gdn``, ``mamba``, ``rwkv``, ``shortconv``); :data:`KINDS` maps it to the
object below, and :func:`kind_of` gives a group's. Core, engines, studies and views ask the
object (``kind_of(g).caches_kv_per_token``, ``kind_of(g).kv_elements_per_token(g)``) instead
of comparing strings — as vLLM's ``v1/kv_cache_interface.py`` gives each attention kind one
spec class that owns its page size, and the allocator never switches on a name.

Each kind states (notation of the workbook: KV heads $K$, head dim $H$ ($H_v$ for values),
query heads $N_q$, window $W$, tokens $T$, tensor-parallel size $TP$):

==========  ==============================  =================================  ==================
kind        cached per token per layer      state per sequence per layer       split under TP
==========  ==============================  =================================  ==================
full        $K·(H + H_v)$ (GQA/MHA)         — (+ Mamba-2's with parallel_ssm)  KV heads, ÷min(TP, K)
sliding     $K·(H + H_v)$, last $W$ tokens  — (+ Mamba-2's with parallel_ssm)  KV heads, ÷min(TP, K)
mla         $r_{kv} + d_{rope}$ (latent)    —                                  replicated
kda, gdn    0                               $N_v·d_k·d_v + C·(k_{conv}-1)$      heads, ÷TP
mamba       0                               $d_s·d_i + (k-1)·(d_i + 2n_g d_s)$  heads, ÷TP
rwkv        0                               $D·h + 2·D$                        heads, ÷TP
shortconv   0                               $C·(k_{conv}-1)$                   channels, ÷TP
==========  ==============================  =================================  ==================

Two flags modify a ``full``/``sliding`` group rather than make a kind of their own: ``kv_shared``
(Gemma-3n / Gemma 4 ``num_kv_shared_layers``: the layer reads an earlier layer's cache and caches
nothing, $0$ per token) and ``parallel_ssm`` (Falcon-H1: a Mamba-2 mixer beside the attention in
every layer, so the layer also holds :data:`MAMBA`'s state, :func:`state_kind`).

Engine rules each kind carries, with the source it follows:

* llama.cpp (ggml-org/llama.cpp@0c1e57098): ``llamacpp_cache`` — ``kv`` cells of ``llama_kv_cache``
  (K row $K·H$, V row $K·H_v$; MLA K row $r_{kv} + d_{rope}$, V a view of K), ``swa`` cells of
  ``llama_kv_cache_iswa``, or ``recurrent`` rows of ``llama_memory_recurrent`` (R = ``n_embd_r()``,
  S = ``n_embd_s()``, src/llama-hparams.cpp); ``llamacpp_state_copies``, the F32 states the reserved
  graph holds per sequence (measured on the tier's models).
* vLLM (``v1/kv_cache_interface.py``, 0.10–0.19): ``vllm_spec`` — ``FullAttentionSpec``,
  ``SlidingWindowSpec``, ``MLAAttentionSpec`` or ``MambaSpec`` (one block per request);
  ``vllm_recurrent_fp32`` where the recurrent state stays FP32 (KDA: 0.11.1–0.19.0
  ``mamba_utils.py`` ``kda_state_dtype``; a gated delta net follows ``mamba_ssm_cache_dtype``).
* SGLang (``srt/mem_cache/memory_pool.py``): ``sglang_pool`` — ``MHATokenToKVPool``,
  ``MLATokenToKVPool`` or ``MambaPool`` (hybrid linear models).

>>> from k3lib.core.models import get_model
>>> g = get_model("llama-3.1-70b").attention[0]
>>> kind_of(g).kv_elements_per_token(g)      # 2·K·H = 2·8·128
2048
>>> k3 = get_model("kimi-k3")
>>> [(kind_of(g).name, kind_of(g).kv_elements_per_token(g)) for g in k3.attention]   # MLA r_kv + d_rope
[('mla', 576), ('kda', 0)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, overload

import numpy as np

from k3lib.core.errors import K3InputError

if TYPE_CHECKING:
    import numpy.typing as npt


class LayerGroup(Protocol):
    """What a kind reads of a group of layers: the fields of
    :class:`k3lib.core.architecture.AttentionGroup`, named here because the architecture imports
    this module (a Protocol, not an import back: no circle)."""

    @property
    def kind(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def num_heads(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def v_head_dim(self) -> int: ...
    @property
    def window_tokens(self) -> int: ...
    @property
    def q_lora_rank(self) -> int: ...
    @property
    def kv_lora_rank(self) -> int: ...
    @property
    def qk_nope_head_dim(self) -> int: ...
    @property
    def qk_rope_head_dim(self) -> int: ...
    @property
    def conv_kernel(self) -> int: ...
    @property
    def ssm_inner(self) -> int: ...
    @property
    def ssm_state(self) -> int: ...
    @property
    def ssm_groups(self) -> int: ...
    @property
    def ssm_heads(self) -> int: ...
    @property
    def value_heads(self) -> int: ...
    @property
    def qkv_bias(self) -> bool: ...
    @property
    def o_bias(self) -> bool: ...
    @property
    def qk_norm(self) -> bool: ...
    @property
    def output_gate(self) -> bool: ...
    @property
    def sinks(self) -> bool: ...
    @property
    def full_rank_gate(self) -> bool: ...
    @property
    def kv_shared(self) -> bool: ...
    @property
    def parallel_ssm(self) -> bool: ...


#: RWKV token shifts kept per sequence and layer (time mix and channel mix): llama.cpp's
#: ``token_shift_count`` default (src/llama-hparams.h; n_embd_r() = token_shift_count·n_embd,
#: src/llama-hparams.cpp, ggml-org/llama.cpp@0c1e57098)
RWKV_TOKEN_SHIFTS = 2


def _positive(name: str, value: int, allow_zero: bool = False) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or (value == 0 and not allow_zero):
        raise K3InputError(name, f"{value!r} is not a {'non-negative' if allow_zero else 'positive'} integer")


def _v_dim(g: LayerGroup) -> int:
    return g.v_head_dim or g.head_dim


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads one TP rank holds: $\\max(1, K / TP)$ (replicated once $TP > K$)."""
    return max(1, kv_heads // tp)


def _mamba2_conv_channels(g: LayerGroup) -> int:
    return g.ssm_inner + 2 * g.ssm_groups * g.ssm_state


def _mamba2_params(g: LayerGroup, d: int) -> int:
    """A Mamba-2 mixer (llama.cpp's tensors): ``ssm_in`` $D·(2d_i + 2n_g d_s + n_h)$, ``ssm_conv1d``
    weight and bias $(k+1)·(d_i + 2n_g d_s)$, ``ssm_a``/``ssm_d``/``ssm_dt`` bias $3n_h$, ``ssm_norm``
    $d_i$, ``ssm_out`` $d_i·D$."""
    di, xbc, nh = g.ssm_inner, _mamba2_conv_channels(g), g.ssm_heads
    if not g.ssm_groups:
        # Mamba-1 (no groups; ``ssm_heads`` holds its dt rank r): ``ssm_in`` $D·2d_i$, ``ssm_conv1d``
        # $(k+1)·d_i$, ``ssm_x`` $d_i·(r + 2d_s)$, ``ssm_dt`` $r·d_i + d_i$, ``ssm_a`` $d_s·d_i$, ``ssm_d`` $d_i$,
        # ``ssm_out`` $d_i·D$ (LLM_ARCH_MAMBA, src/llama-model.cpp @0c1e57098)
        ds, r = g.ssm_state, nh
        return 2 * d * di + (g.conv_kernel + 1) * di + di * (r + 2 * ds) + r * di + di + ds * di + di + di * d
    return d * (di + xbc + nh) + (g.conv_kernel + 1) * xbc + 3 * nh + di + di * d


def _validate_mamba2(g: LayerGroup) -> None:
    for name in ("ssm_inner", "ssm_state", "ssm_heads", "conv_kernel"):
        _positive(f"attention.{name}", getattr(g, name))
    _positive("attention.ssm_groups", g.ssm_groups, allow_zero=True)


@dataclass(frozen=True)
class LayerKind:
    """What one mixer kind is, and the rules every part of k3lib applies to it.

    Attributes are facts of the kind; methods take the layer group ``g`` (an
    :class:`~k3lib.core.architecture.AttentionGroup`) for its sizes."""

    name: str  #: the string kept in data and configs
    label: str  #: how tables name it
    short: str  #: the design's short name in prose ("GQA", "MLA", "KDA", …)
    caches_kv_per_token: bool  #: keeps K/V (or a latent) for every token
    grouped_kv: bool = False  #: K and V per KV head (GQA/MHA): split by KV head up to $K$, then replicated
    windowed: bool = False  #: keeps only the last ``window_tokens`` tokens
    latent: bool = False  #: caches one latent shared by every head (MLA): whole on each TP rank
    holds_state: bool = False  #: keeps a constant state per sequence
    tp_split: str = ""  #: how the cache/state splits under TP
    periodic: bool = False  #: placed at a period among the other layers (layer order)
    mtp_template: bool = False  #: an MTP module copies a layer of this kind (a caching kind)
    llamacpp_cache: str = ""  #: ``kv``, ``swa`` or ``recurrent`` (llama.cpp's memory)
    llamacpp_state_copies: float = 0.0  #: F32 states per sequence in llama.cpp's reserved graph
    llamacpp_token_shift_mixes: int = 0  #: per-token activations of $D$ each (RWKV's lerp_fused: 6)
    vllm_spec: str = ""  #: vLLM's KV-cache spec class
    vllm_recurrent_fp32: bool = False  #: vLLM keeps the recurrent state in FP32 whatever the dtype
    sglang_pool: str = ""  #: SGLang's memory pool
    source: str = ""  #: where the formulas come from
    #: bytes per element of the state, (recurrent, conv), by engine (:data:`STATE_DTYPE_RULE`)
    state_dtype_bytes: Mapping[str, tuple[int, int]] = field(default_factory=dict, hash=False, compare=False)

    # ---- checks -------------------------------------------------------------------------------
    def validate(self, g: LayerGroup) -> None:
        """Raise :class:`K3InputError` naming the field a group of this kind lacks."""
        if g.parallel_ssm:
            raise K3InputError(
                "attention.parallel_ssm",
                f"a {self.name!r} group cannot run a parallel Mamba mixer",
                "parallel_ssm only on full or sliding groups",
            )
        if g.kv_shared:
            raise K3InputError(
                "attention.kv_shared",
                f"a {self.name!r} group cannot share another layer's KV cache",
                "kv_shared only on full or sliding groups",
            )

    # ---- cache per token ----------------------------------------------------------------------
    def kv_elements_per_token(self, g: LayerGroup) -> int:
        """Elements one layer caches per token (0 for state kinds and KV-sharing layers)."""
        return 0

    def kv_elements_per_token_per_rank(self, g: LayerGroup, tp: int) -> int:
        """Elements one layer caches per token on one of $TP$ ranks (vLLM, SGLang)."""
        return 0

    def kv_split(self, g: LayerGroup, tp: int) -> int:
        """How many ways $TP$ ranks divide this layer's per-token cache."""
        return 1

    def k_row_elements(self, g: LayerGroup) -> int:
        """Elements of one cell's K row (llama.cpp ``n_embd_k_gqa``; SGLang's K buffer)."""
        return 0

    def v_row_elements(self, g: LayerGroup) -> int:
        """Elements of one cell's V row (llama.cpp ``n_embd_v_gqa``; SGLang's V buffer)."""
        return 0

    @overload
    def cached_tokens(self, g: LayerGroup, context_tokens: int) -> int: ...
    @overload
    def cached_tokens(self, g: LayerGroup, context_tokens: float) -> float: ...
    @overload
    def cached_tokens(self, g: LayerGroup, context_tokens: npt.NDArray[Any]) -> npt.NDArray[Any]: ...
    def cached_tokens(self, g: LayerGroup, context_tokens: float | npt.NDArray[Any]) -> float | npt.NDArray[Any]:
        """Tokens a layer keeps of a context: $T$, or $\\min(T, W)$ for a windowed kind
        (array-aware)."""
        if not self.windowed:
            return context_tokens
        if isinstance(context_tokens, np.ndarray):
            capped: npt.NDArray[Any] = np.minimum(context_tokens, g.window_tokens)
            return capped
        return min(context_tokens, g.window_tokens)

    def kv_heads(self, g: LayerGroup) -> tuple[int, ...]:
        """KV-head counts a TP size meets (GQA's $K$; none for other kinds)."""
        return ()

    # ---- state per sequence -------------------------------------------------------------------
    def has_state(self, g: LayerGroup) -> bool:
        """Whether the layer holds a state per sequence (also a parallel Mamba mixer's)."""
        return self.holds_state

    def recurrent_state_elements(self, g: LayerGroup) -> int:
        """The matrix state per sequence (llama.cpp's ``n_embd_s()``)."""
        return 0

    def conv_channels(self, g: LayerGroup) -> int:
        """Channels of the rolling short-convolution history."""
        return 0

    def conv_state_elements(self, g: LayerGroup) -> int:
        """The rolling history per sequence (llama.cpp's ``n_embd_r()``): channels × (kernel − 1)."""
        return self.conv_channels(g) * (g.conv_kernel - 1) if self.has_state(g) else 0

    def runs_mamba2(self, g: LayerGroup) -> bool:
        """Whether the layer runs a Mamba-2 mixer (its own, or a parallel one)."""
        return False

    # ---- weights ------------------------------------------------------------------------------
    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        """Weights of one layer's mixer (projections, gates, norms inside it)."""
        raise NotImplementedError

    def replicated_params(self, g: LayerGroup, hidden_size: int) -> int:
        """Mixer weights every TP rank holds whole (vLLM's linear layers)."""
        return 0

    def kv_projection_params(self, g: LayerGroup, hidden_size: int, kv_heads: int | None = None) -> int:
        """The K and V projections of one layer for ``kv_heads`` heads (GQA only)."""
        return 0

    def head_counts(self, g: LayerGroup) -> tuple[int, ...]:
        """Head counts a TP size must divide."""
        return (g.num_heads,)

    def rope_dim(self, g: LayerGroup) -> int:
        """Rotary dimensions per head (0: no RoPE cache)."""
        return 0

    def gguf_recipe_tensors(self, g: LayerGroup) -> bool:
        """Whether llama-quantize's per-tensor recipe (:mod:`k3lib.engines.gguf_recipe`) covers it."""
        return False

    # ---- compute ------------------------------------------------------------------------------
    def attention_flops_per_token(self, g: LayerGroup, context_tokens: float) -> float:
        """FLOPs of one token's mixer over ``context_tokens`` earlier tokens, one layer."""
        return 4 * g.value_heads * g.head_dim * _v_dim(g)

    def absorbed_query_latent(self, g: LayerGroup) -> int:
        """Per-token query width carried in a latent space (absorbed MLA: $N_q·r_{kv}$)."""
        return 0

    # ---- engines ------------------------------------------------------------------------------
    def transformers_cache_elements_per_token(self, g: LayerGroup) -> int:
        """Elements transformers' DynamicCache keeps per token and layer."""
        return self.kv_elements_per_token(g)

    def sglang_cell_elements(self, g: LayerGroup, tp: int) -> tuple[int, int]:
        """(K, V) elements of one layer's token slot in SGLang's pool on one of $TP$ ranks."""
        return 0, 0

    def vllm_label(self, g: LayerGroup) -> str:
        """The KV-cache group a layer joins in vLLM (layers of one label share a group)."""
        return "state"


# ---------------------------------------------------------------------------------------- attention
@dataclass(frozen=True)
class GQAKind(LayerKind):
    """Softmax attention over K/V heads (MHA when $K = N_q$), full or sliding-window."""

    def validate(self, g: LayerGroup) -> None:
        _positive("attention.kv_heads", g.kv_heads)
        _positive("attention.head_dim", g.head_dim)
        if self.windowed:
            _positive("attention.window_tokens", g.window_tokens)
        if g.parallel_ssm:
            _validate_mamba2(g)

    def kv_elements_per_token(self, g: LayerGroup) -> int:
        """$K·(H + H_v)$; 0 for a KV-sharing layer."""
        return 0 if g.kv_shared else g.kv_heads * (g.head_dim + _v_dim(g))

    def kv_elements_per_token_per_rank(self, g: LayerGroup, tp: int) -> int:
        """$\\max(1, K/TP)·(H + H_v)$: heads split, replicated once $TP > K$."""
        return 0 if g.kv_shared else kv_heads_per_rank(g.kv_heads, tp) * (g.head_dim + _v_dim(g))

    def kv_split(self, g: LayerGroup, tp: int) -> int:
        """$\\min(TP, K)$."""
        return min(tp, g.kv_heads)

    def k_row_elements(self, g: LayerGroup) -> int:
        return g.kv_heads * g.head_dim

    def v_row_elements(self, g: LayerGroup) -> int:
        return g.kv_heads * _v_dim(g)

    def kv_heads(self, g: LayerGroup) -> tuple[int, ...]:
        return (g.kv_heads,)

    def has_state(self, g: LayerGroup) -> bool:
        return bool(g.parallel_ssm)

    def recurrent_state_elements(self, g: LayerGroup) -> int:
        return MAMBA.recurrent_state_elements(g) if g.parallel_ssm else 0

    def conv_channels(self, g: LayerGroup) -> int:
        return _mamba2_conv_channels(g) if g.parallel_ssm else 0

    def runs_mamba2(self, g: LayerGroup) -> bool:
        return bool(g.parallel_ssm)

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        """$D·N_qH·(1 + gate) + D·KH + D·KH_v + N_qH·D$ (+ biases, QK norms, sinks, a parallel Mamba-2)."""
        d = hidden_size
        hq, hk = g.num_heads * g.head_dim, g.kv_heads * g.head_dim
        hv = g.kv_heads * _v_dim(g)
        q_out = hq * (2 if g.output_gate else 1)
        n = d * q_out + d * hk + d * hv + hq * d
        if g.qkv_bias:
            n += hq + hk + hv
        if g.o_bias:
            n += d
        if g.qk_norm:
            n += 2 * g.head_dim
        if g.sinks:
            n += g.num_heads
        if g.parallel_ssm:
            n += _mamba2_params(g, d)
        return n

    def replicated_params(self, g: LayerGroup, hidden_size: int) -> int:
        """$2H$ with QK-norm, and the output projection's bias $D$ (row-parallel: whole on every rank)."""
        return (2 * g.head_dim if g.qk_norm else 0) + (hidden_size if g.o_bias else 0)

    def kv_projection_params(self, g: LayerGroup, hidden_size: int, kv_heads: int | None = None) -> int:
        """$k·(H + H_v)·(D + [bias])$."""
        k = g.kv_heads if kv_heads is None else kv_heads
        return k * (g.head_dim + _v_dim(g)) * (hidden_size + (1 if g.qkv_bias else 0))

    def rope_dim(self, g: LayerGroup) -> int:
        return g.head_dim

    def gguf_recipe_tensors(self, g: LayerGroup) -> bool:
        return True

    def attention_flops_per_token(self, g: LayerGroup, context_tokens: float) -> float:
        """$2·N_q·(H + H_v)·\\min(T, W)$ (scores and the weighted sum, 2 FLOPs per multiply-add)."""
        return 2 * g.num_heads * (g.head_dim + _v_dim(g)) * self.cached_tokens(g, context_tokens)

    def vllm_label(self, g: LayerGroup) -> str:
        return f"sliding:{g.window_tokens}" if self.windowed else self.name

    def sglang_cell_elements(self, g: LayerGroup, tp: int) -> tuple[int, int]:
        """$(h·H, h·H_v)$ with $h = \\max(1, K/TP)$ (``MHATokenToKVPool``: K and V buffers)."""
        h = kv_heads_per_rank(g.kv_heads, tp)
        return h * g.head_dim, h * _v_dim(g)


@dataclass(frozen=True)
class MLAKind(LayerKind):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi): one compressed latent per token."""

    def validate(self, g: LayerGroup) -> None:
        _positive("attention.kv_lora_rank", g.kv_lora_rank)
        _positive("attention.qk_rope_head_dim", g.qk_rope_head_dim)
        super().validate(g)

    def kv_elements_per_token(self, g: LayerGroup) -> int:
        """$r_{kv} + d_{rope}$ (what vLLM and SGLang cache)."""
        return g.kv_lora_rank + g.qk_rope_head_dim

    def kv_elements_per_token_per_rank(self, g: LayerGroup, tp: int) -> int:
        """$r_{kv} + d_{rope}$ on every rank: the latent is shared by all heads, so replicated."""
        return self.kv_elements_per_token(g)

    def k_row_elements(self, g: LayerGroup) -> int:
        return g.kv_lora_rank + g.qk_rope_head_dim

    def v_row_elements(self, g: LayerGroup) -> int:
        """$r_{kv}$: llama.cpp's V row (a view of K since the 2025 MLA rework; SGLang keeps none)."""
        return g.kv_lora_rank

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        """Query (LoRA or full), KV down-projection $D·(r_{kv}+d_{rope}) + r_{kv}$, up-projection
        $r_{kv}·N_q·(d_{nope} + H_v)$, output $N_q·H_v·D$ (+ output gate)."""
        d = hidden_size
        h, qk = g.num_heads, g.qk_nope_head_dim + g.qk_rope_head_dim
        v = g.v_head_dim
        if g.q_lora_rank:
            q = d * g.q_lora_rank + g.q_lora_rank + g.q_lora_rank * h * qk
        else:
            q = d * h * qk
        kv = d * (g.kv_lora_rank + g.qk_rope_head_dim) + g.kv_lora_rank
        kv += g.kv_lora_rank * h * (g.qk_nope_head_dim + v)
        o = h * v * d
        gate = d * h * v if g.output_gate else 0
        return q + kv + o + gate

    def replicated_params(self, g: LayerGroup, hidden_size: int) -> int:
        """$D·r_q + r_q + D·(r_{kv} + d_{rope}) + r_{kv}$ (down-projections and their norms)."""
        d = hidden_size
        q = d * g.q_lora_rank + g.q_lora_rank if g.q_lora_rank else 0
        return q + d * (g.kv_lora_rank + g.qk_rope_head_dim) + g.kv_lora_rank

    def rope_dim(self, g: LayerGroup) -> int:
        return g.qk_rope_head_dim

    def attention_flops_per_token(self, g: LayerGroup, context_tokens: float) -> float:
        """Absorbed, over the latent: $2·N_q·(2r_{kv} + d_{rope})·T$."""
        return 2 * g.num_heads * (2 * g.kv_lora_rank + g.qk_rope_head_dim) * context_tokens

    def absorbed_query_latent(self, g: LayerGroup) -> int:
        return g.num_heads * g.kv_lora_rank

    def sglang_cell_elements(self, g: LayerGroup, tp: int) -> tuple[int, int]:
        """$(r_{kv} + d_{rope}, 0)$ on every rank (``MLATokenToKVPool``: the latent only)."""
        return g.kv_lora_rank + g.qk_rope_head_dim, 0

    def transformers_cache_elements_per_token(self, g: LayerGroup) -> int:
        """transformers expands the latent: $N_q·(d_{nope} + d_{rope} + H_v)$."""
        return g.num_heads * (g.qk_nope_head_dim + g.qk_rope_head_dim + g.v_head_dim)

    def vllm_label(self, g: LayerGroup) -> str:
        return self.name


# ------------------------------------------------------------------------------------------- state
@dataclass(frozen=True)
class DeltaRuleKind(LayerKind):
    """Linear attention with a delta-rule matrix state: KDA (Kimi) and Gated DeltaNet (Qwen3-Next)."""

    def validate(self, g: LayerGroup) -> None:
        _positive("attention.head_dim", g.head_dim)
        _positive("attention.conv_kernel", g.conv_kernel)
        super().validate(g)

    def recurrent_state_elements(self, g: LayerGroup) -> int:
        """$N_v·d_k·d_v$ (value heads × key dim × value dim)."""
        return g.value_heads * g.head_dim * _v_dim(g)

    def conv_channels(self, g: LayerGroup) -> int:
        """q, k (key heads × $d_k$) and v (value heads × $d_v$) each get a short conv."""
        return g.num_heads * g.head_dim * 2 + g.value_heads * _v_dim(g)

    def head_counts(self, g: LayerGroup) -> tuple[int, ...]:
        return (g.num_heads, g.value_heads)

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        d = hidden_size
        if self is KDA:
            nh, dk = g.num_heads, g.head_dim
            inner = nh * dk
            n = 3 * d * inner  # q, k, v
            n += 3 * inner * g.conv_kernel  # short convs
            n += d * dk + dk * inner  # f_a, f_b (decay gate, low rank)
            n += inner + nh  # dt_bias, A_log
            n += nh * d  # b_proj (beta)
            n += d * inner if g.full_rank_gate else d * dk + dk * inner  # output gate
            n += dk  # o_norm
            n += inner * d  # o_proj
            return n
        # Gated DeltaNet (Qwen3-Next)
        nk, nv, dk = g.num_heads, g.value_heads, g.head_dim
        dv = _v_dim(g)
        n = d * (2 * nk * dk + 2 * nv * dv)  # in_proj_qkvz
        n += d * 2 * nv  # in_proj_ba
        n += (2 * nk * dk + nv * dv) * g.conv_kernel
        n += 2 * nv  # dt_bias, A_log
        n += dv  # norm
        n += nv * dv * d  # out_proj
        return n

    def replicated_params(self, g: LayerGroup, hidden_size: int) -> int:
        """KDA $D·d_k + d_k$ (the decay gate's ``f_a``: vLLM replicates it; 120.75 MiB over K3's 69
        layers at TP16, local-inference-lab/vllm#385); Gated DeltaNet its output norm $d_v$."""
        if self is KDA:
            return hidden_size * g.head_dim + g.head_dim
        return _v_dim(g)


@dataclass(frozen=True)
class Mamba2Kind(LayerKind):
    """Mamba-2 SSM ($d_{inner}$ = ``ssm_inner``, $d_{state}$ = ``ssm_state``, $n_g$ = ``ssm_groups``)."""

    def validate(self, g: LayerGroup) -> None:
        _validate_mamba2(g)
        super().validate(g)

    def recurrent_state_elements(self, g: LayerGroup) -> int:
        """$d_{state}·d_{inner}$."""
        return g.ssm_state * g.ssm_inner

    def conv_channels(self, g: LayerGroup) -> int:
        """$d_{inner} + 2·n_g·d_{state}$."""
        return _mamba2_conv_channels(g)

    def runs_mamba2(self, g: LayerGroup) -> bool:
        return True

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        return _mamba2_params(g, hidden_size)


@dataclass(frozen=True)
class RWKVKind(LayerKind):
    """RWKV-6/7 time mix, $N$ heads of size $h$, $D = N·h$."""

    def validate(self, g: LayerGroup) -> None:
        _positive("attention.head_dim", g.head_dim)
        super().validate(g)

    def recurrent_state_elements(self, g: LayerGroup) -> int:
        """$D·h$ (the wkv state)."""
        return g.num_heads * g.head_dim * g.head_dim

    def conv_state_elements(self, g: LayerGroup) -> int:
        """$2·D$: the token shifts of time mix and channel mix."""
        return RWKV_TOKEN_SHIFTS * g.num_heads * g.head_dim

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        """$4D^2$: the receptance, key, value and output projections only (the low-rank
        decay/gate/iclr adapters and token-shift mixes are not modelled: a stated gap)."""
        return 4 * hidden_size * hidden_size


@dataclass(frozen=True)
class ShortConvKind(LayerKind):
    """LFM2's gated short convolution over $C$ = ``ssm_inner`` channels."""

    def validate(self, g: LayerGroup) -> None:
        _positive("attention.conv_kernel", g.conv_kernel)
        _positive("attention.ssm_inner", g.ssm_inner)
        super().validate(g)

    def conv_channels(self, g: LayerGroup) -> int:
        return g.ssm_inner

    def params_per_layer(self, g: LayerGroup, hidden_size: int) -> int:
        """in_proj $D·3C$, depthwise conv $k·C$, out_proj $C·D$."""
        c = g.ssm_inner
        return hidden_size * 3 * c + g.conv_kernel * c + c * hidden_size


_LLAMA = "ggml-org/llama.cpp@0c1e57098 src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp, src/llama-hparams.cpp"
_VLLM = "vllm v1/kv_cache_interface.py (0.10–0.19)"
_SGL = "sglang srt/mem_cache/memory_pool.py"

FULL = GQAKind(
    "full",
    "GQA (full)",
    "GQA",
    caches_kv_per_token=True,
    grouped_kv=True,
    tp_split="KV heads, ÷min(TP, K); replicated past K",
    periodic=True,
    mtp_template=True,
    llamacpp_cache="kv",
    vllm_spec="FullAttentionSpec",
    sglang_pool="MHATokenToKVPool",
    source=f"{_LLAMA}; {_VLLM}; {_SGL}",
)
SLIDING = GQAKind(
    "sliding",
    "sliding window",
    "GQA",
    caches_kv_per_token=True,
    grouped_kv=True,
    windowed=True,
    tp_split="KV heads, ÷min(TP, K); replicated past K",
    llamacpp_cache="swa",
    vllm_spec="SlidingWindowSpec",
    sglang_pool="MHATokenToKVPool",
    source=f"{_LLAMA} (llama_kv_cache_iswa); {_VLLM}; {_SGL}",
)
MLA = MLAKind(
    "mla",
    "MLA latent",
    "MLA",
    caches_kv_per_token=True,
    latent=True,
    tp_split="replicated (one latent for all heads)",
    periodic=True,
    mtp_template=True,
    llamacpp_cache="kv",
    vllm_spec="MLAAttentionSpec",
    sglang_pool="MLATokenToKVPool",
    source=f"DeepSeek-V2 §2.1; {_LLAMA}; {_VLLM}; {_SGL}",
)
#: bytes per element of a state, (recurrent, conv), as each engine keeps it: the planner
#: (``generic``, ``Assumptions.state_bytes_per_element``) and SGLang FP32; llama.cpp's R and S caches
#: F32 (src/llama-memory-recurrent.cpp); vLLM's ``mamba_ssm_cache_dtype`` "auto" and transformers
#: the model dtype (2 B). KDA differs under vLLM 0.11–0.19: its recurrent state FP32
#: (``mamba_utils.py`` ``kda_state_dtype``), its conv state the model dtype.
STATE_DTYPE_RULE: Mapping[str, tuple[int, int]] = {
    "generic": (4, 4),
    "sglang": (4, 4),
    "llama.cpp": (4, 4),
    "vllm": (2, 2),
    "transformers": (2, 2),
}

KDA = DeltaRuleKind(
    "kda",
    "KDA (linear)",
    "KDA",
    caches_kv_per_token=False,
    holds_state=True,
    tp_split="heads, ÷TP",
    llamacpp_cache="recurrent",
    llamacpp_state_copies=1,
    vllm_spec="MambaSpec",
    vllm_recurrent_fp32=True,
    sglang_pool="MambaPool",
    state_dtype_bytes={**STATE_DTYPE_RULE, "vllm": (4, 2)},
    source=f"Kimi Linear (arXiv:2510.26692); {_LLAMA}; vllm model_executor/layers/mamba/mamba_utils.py",
)
GDN = DeltaRuleKind(
    "gdn",
    "Gated DeltaNet (linear)",
    "Gated DeltaNet",
    caches_kv_per_token=False,
    holds_state=True,
    tp_split="heads, ÷TP",
    llamacpp_cache="recurrent",
    llamacpp_state_copies=2,
    vllm_spec="MambaSpec",
    sglang_pool="MambaPool",
    source=f"Qwen3-Next modeling_qwen3_next.py; {_LLAMA}; {_VLLM}",
    state_dtype_bytes=STATE_DTYPE_RULE,
)
MAMBA = Mamba2Kind(
    "mamba",
    "Mamba-2 (state)",
    "Mamba-2",
    caches_kv_per_token=False,
    holds_state=True,
    tp_split="heads, ÷TP",
    llamacpp_cache="recurrent",
    llamacpp_state_copies=1.5,
    vllm_spec="MambaSpec",
    sglang_pool="MambaPool",
    source=f"{_LLAMA} (n_embd_r, n_embd_s); {_VLLM}",
    state_dtype_bytes=STATE_DTYPE_RULE,
)
RWKV = RWKVKind(
    "rwkv",
    "RWKV (state)",
    "RWKV",
    caches_kv_per_token=False,
    holds_state=True,
    tp_split="heads, ÷TP",
    llamacpp_cache="recurrent",
    llamacpp_state_copies=2,
    llamacpp_token_shift_mixes=6,
    vllm_spec="MambaSpec",
    sglang_pool="MambaPool",
    source=f"{_LLAMA} (token_shift_count, wkv.head_size)",
    state_dtype_bytes=STATE_DTYPE_RULE,
)
SHORTCONV = ShortConvKind(
    "shortconv",
    "short conv (state)",
    "short conv",
    caches_kv_per_token=False,
    holds_state=True,
    tp_split="channels, ÷TP",
    llamacpp_cache="recurrent",
    llamacpp_state_copies=1,
    vllm_spec="MambaSpec",
    sglang_pool="MambaPool",
    source=f"LFM2 modeling_lfm2.py (conv_L_cache); {_LLAMA} (shortconv.l_cache)",
    state_dtype_bytes=STATE_DTYPE_RULE,
)

#: every kind by the string data and configs use
KINDS: Mapping[str, LayerKind] = {k.name: k for k in (FULL, SLIDING, MLA, KDA, GDN, MAMBA, RWKV, SHORTCONV)}
#: the strings, in the order above
KIND_NAMES: tuple[str, ...] = tuple(KINDS)
#: kinds with no per-token cache, only a state per sequence (recurrent / linear attention)
STATE_KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.holds_state)


def get_kind(name: str) -> LayerKind:
    """The kind object for its string; :class:`K3InputError` listing the known ones otherwise."""
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise K3InputError("attention.kind", f"{name!r} is not known", ", ".join(KINDS)) from None


def kind_of(g: LayerGroup) -> LayerKind:
    """A layer group's kind object."""
    return get_kind(g.kind)


def state_kind(g: LayerGroup) -> LayerKind:
    """The kind whose state a layer holds: a parallel Mamba mixer (Falcon-H1) holds :data:`MAMBA`'s."""
    return MAMBA if g.parallel_ssm else kind_of(g)


def kinds_in(groups: Iterable[LayerGroup]) -> tuple[LayerKind, ...]:
    """The distinct kinds of ``groups``, in first-seen order."""
    out: list[LayerKind] = []
    for g in groups:
        k = kind_of(g)
        if k not in out:
            out.append(k)
    return tuple(out)
