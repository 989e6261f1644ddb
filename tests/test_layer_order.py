"""Stage cuts follow the model's real layer order (issue 21 §4): which layer is MoE and which
attention kind each layer has come from the config (or the family's convention for a built-in
model), and a pipeline stage holds exactly the layers at its indices (vLLM ``get_pp_indices``).

Every expected figure is worked by hand from the config's own fields."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from k3lib.core.layout import pipeline_stages, stage_layer_indices
from k3lib.core.models import get_model
from k3lib.core.plan import make_plan
from k3lib.loaders.hf_config import architecture_from_hf_config

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
GiB = 2**30


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def _maverick_config() -> dict:
    """Llama 4 Maverick's text config: Scout's (same shapes) with 128 experts and
    ``interleave_moe_layer_step`` 2 (the values of data/models/llama-4-maverick.json)."""
    cfg = copy.deepcopy(_config("llama-4-scout-17b-16e-instruct.abridged.json"))
    tc = cfg["text_config"]
    tc.update(num_local_experts=128, interleave_moe_layer_step=2, max_position_embeddings=1048576)
    return cfg


# ---------------------------------------------------------------- which layers are MoE


def test_maverick_moe_layers_alternate_from_index_1():
    """transformers Llama4TextConfig: moe_layers = range(step − 1, L, step) = 1, 3, …, 47."""
    arch = architecture_from_hf_config(_maverick_config(), id="maverick")
    assert arch.moe_layer_indices == tuple(range(1, 48, 2))
    assert [is_moe for _, is_moe in get_model("llama-4-maverick").layer_order()] == [i % 2 == 1 for i in range(48)]


def test_maverick_16_h100_stages_hold_half_the_experts_each():
    """16× H100 → TP=8 × PP=2, 24 layers per stage, 12 of them MoE on each stage. Routed experts
    per GPU: 12 layers × 128 experts × 3·5120·8192 weights × 2 B ÷ TP 8 = 45.0 GiB on both stages
    (before: 0 on stage 0, 90 GiB on stage 1 — every MoE layer assumed last)."""
    p = make_plan(model="llama-4-maverick", gpu="h100-sxm", gpus=16)
    assert (p.tp, p.pp) == (8, 2)
    per_stage = 12 * 128 * 3 * 5120 * 8192 * 2 // 8
    assert [s.routed_experts_bytes for s in p.shares] == [per_stage, per_stage]
    assert per_stage / GiB == 45.0
    # the dense MLPs split the same way: 12 dense layers of 3·5120·16384 on each stage
    stages = pipeline_stages(get_model("llama-4-maverick"), 2)
    assert [(st.mlp.dense_layers, st.mlp.moe_layers) for st in stages] == [(12, 12), (12, 12)]


def test_qwen_moe_decoder_sparse_step_and_mlp_only_layers():
    """Qwen2MoeDecoderLayer: MoE when i ∉ mlp_only_layers and (i+1) % decoder_sparse_step == 0.
    48 layers, step 2, mlp_only_layers [1, 9]: MoE at 3, 5, 7, 11, 13, …, 47 → 22 layers; PP=2 cuts
    0–23 (MoE 3, 5, 7, 11, …, 23: 10) and 24–47 (25, 27, …, 47: 12)."""
    cfg = _config("qwen3-30b-a3b.json")
    cfg.update(decoder_sparse_step=2, mlp_only_layers=[1, 9])
    arch = architecture_from_hf_config(cfg, id="qwen-sparse")
    expected = tuple(i for i in range(48) if (i + 1) % 2 == 0 and i not in (1, 9))
    assert arch.moe_layer_indices == expected and len(expected) == 22
    assert (arch.mlp.dense_layers, arch.mlp.moe_layers) == (26, 22)
    assert [st.mlp.moe_layers for st in pipeline_stages(arch, 2)] == [10, 12]


def test_deepseek_moe_layer_freq_counts_from_layer_0():
    """DeepseekV3DecoderLayer: MoE when i ≥ first_k_dense_replace and i % moe_layer_freq == 0.
    61 layers, first_k 3, freq 2: 4, 6, …, 60 → 29 MoE layers."""
    cfg = _config("deepseek-v3.json")
    cfg.update(moe_layer_freq=2)
    arch = architecture_from_hf_config(cfg, id="ds-freq2")
    assert arch.moe_layer_indices == tuple(range(4, 61, 2))
    assert arch.mlp.moe_layers == 29


# ---------------------------------------------------------------- which attention kind each layer has


def test_k3_attention_kinds_by_index_follow_full_attn_layers():
    """K3's linear_attn_config.full_attn_layers (1-based): 4, 8, …, 92, 93. PP=2 cuts 47 + 46:
    stage 0 (1–47) holds 11 MLA layers, stage 1 (48–93) 13; the built-in model (no list stored)
    follows the same order by the family convention (every 4th and the last)."""
    cfg = _config("kimi-k3.json")
    full = cfg["text_config"]["linear_attn_config"]["full_attn_layers"]
    from_config = architecture_from_hf_config(cfg, id="k3-config")
    builtin = get_model("kimi-k3")
    assert [from_config.attention[g].kind for g, _ in from_config.layer_order()] == [
        "mla" if i + 1 in full else "kda" for i in range(93)
    ]
    assert builtin.layer_order() == from_config.layer_order()
    mla_per_stage = [sum(1 for n in full if n - 1 in idx) for idx in stage_layer_indices(93, 2)]
    assert mla_per_stage == [11, 13]
    stages = pipeline_stages(builtin, 2)
    assert [{g.kind: g.count for g in st.attention} for st in stages] == [
        {"mla": 11, "kda": 36},
        {"mla": 13, "kda": 33},
    ]


@pytest.mark.parametrize(
    "builtin, config",
    [
        ("qwen3-next-80b", "qwen3-next-80b-a3b-instruct.json"),
        ("kimi-linear-48b", "kimi-linear-48b-a3b-instruct.json"),
        ("gpt-oss-120b", "gpt-oss-120b.json"),
        ("gemma-3-27b", "gemma-3-27b-it.maxtext-transcription.json"),
        ("llama-4-scout", "llama-4-scout-17b-16e-instruct.abridged.json"),
        ("deepseek-v3", "deepseek-v3.json"),
    ],
)
def test_builtin_convention_matches_the_config(builtin, config):
    """A built-in model stores no per-layer list; its family convention gives the order its
    config gives."""
    assert get_model(builtin).layer_order() == architecture_from_hf_config(_config(config), id=builtin).layer_order()


def test_qwen3_next_full_attention_every_fourth_layer():
    """Qwen3NextConfig: layer i is full attention when (i+1) % full_attention_interval (4) == 0:
    PP=4 cuts 12 + 12 + 12 + 12, each with 3 full + 9 Gated DeltaNet layers."""
    stages = pipeline_stages(get_model("qwen3-next-80b"), 4)
    assert [{g.kind: g.count for g in st.attention} for st in stages] == [{"full": 3, "gdn": 9}] * 4


def test_stage_slices_keep_their_own_order():
    """A stage is an Architecture whose layer order is the slice of the model's."""
    st = pipeline_stages(get_model("llama-4-maverick"), 2)[1]
    assert st.moe_layer_indices == tuple(range(1, 24, 2))
    assert len(st.layer_attention_groups) == 24


def test_a_layer_list_that_disagrees_with_the_counts_is_refused():
    import dataclasses

    from k3lib.core.errors import K3InputError

    arch = get_model("qwen3-next-80b")
    with pytest.raises(K3InputError, match="^layer_attention_groups"):
        dataclasses.replace(arch, layer_attention_groups=(0,) * 48)
    with pytest.raises(K3InputError, match="^moe_layer_indices"):
        dataclasses.replace(get_model("llama-4-maverick"), moe_layer_indices=(0, 1))
