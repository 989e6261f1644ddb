"""What each engine loads, and what a total leaves out (issue 21 §4): the one per-rank sharding
rule of the core, and :func:`k3lib.core.memory.loaded_parts_notes` — the vision tower, MTP
modules and linear-attention state dtypes, each named with its size. Figures worked by hand
from the configs."""

from __future__ import annotations

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.memory import loaded_parts_notes, params_per_rank_by_group
from k3lib.core.models import get_model

GB, GiB, MiB = 10**9, 2**30, 2**20


# ---------------------------------------------------------------- the sharding rule


def test_qwen3_next_tp4_kv_projection_replicated_past_two_kv_heads():
    """Qwen3-Next's 12 full-attention layers have 2 KV heads of 256: at TP=4 every rank holds one
    KV head's K and V (+ their bias-free rows), 256·2·2048 weights a layer, whole; at TP=2 they split."""
    arch = get_model("qwen3-next-80b")
    gqa_kv = 12 * 1 * (256 + 256) * 2048
    qk_norm = 12 * 2 * 256
    gdn_norm = 36 * 128
    assert params_per_rank_by_group(arch, tp=4)["attention"].whole == gqa_kv + qk_norm + gdn_norm
    assert params_per_rank_by_group(arch, tp=2)["attention"].whole == qk_norm + gdn_norm


# ---------------------------------------------------------------- what the total leaves out


def test_k3_vision_tower_is_named_with_its_size():
    """K3's checkpoint (1,560,855,539,876 B of tensors, vision tower included) holds 0.92 GB
    (0.85 GiB) more than its text weights. By hand from vision_config, the MoonViT blocks alone are
    27 × (4·1024² + 2·1024·4096 + biases and norms) × 2 B ≈ 0.68 GB; with the patch merger and
    projector into 7,168 the tower is 0.8–1.0 GB."""
    blocks = 27 * (4 * 1024 * 1024 + 4 * 1024 + 2 * 1024 * 4096 + 4096 + 1024 + 4 * 1024) * 2
    assert round(blocks / GB, 2) == 0.68
    for engine in ("vllm", "sglang", "generic"):
        notes = [n for n in loaded_parts_notes(get_model("kimi-k3"), engine) if n.startswith("vision tower")]
        assert len(notes) == 1 and "0.92 GB (0.85 GiB)" in notes[0]
    (mm,) = [n for n in loaded_parts_notes(get_model("kimi-k3"), "llama.cpp") if n.startswith("vision tower")]
    assert "--mmproj" in mm


def test_deepseek_v3_mtp_module_is_named_with_its_size():
    """One MTP module = one more decoder layer + eh_proj, by hand: MLA attention
    7168·1536 + 1536 + 1536·128·192 + 7168·576 + 512 + 512·128·256 + 128·128·7168 = 187,107,328;
    256 routed + 1 shared experts of 3·7168·2048; router 256·7168 + 256; norms 5·7168; eh_proj
    2·7168² → 11,610,068,224 parameters, 11.61 GB at FP8 blocks (BF16 router and norms)."""
    attn = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    assert attn == 187_107_328
    params = attn + 257 * 3 * 7168 * 2048 + 256 * 7168 + 256 + 5 * 7168 + 2 * 7168 * 7168
    assert params == 11_610_068_224
    for engine in ("vllm", "sglang", "llama.cpp", "generic"):
        (note,) = [n for n in loaded_parts_notes(get_model("deepseek-v3"), engine) if n.startswith("MTP")]
        assert "11.6 B parameters" in note and "11.61 GB" in note
    assert "speculative decoding" in [n for n in loaded_parts_notes(get_model("deepseek-v3"), "vllm")][0]


def test_k3_state_dtype_vllm_bf16_conv_vs_the_planners_fp32():
    """K3's 69 KDA layers per sequence: recurrent 96·128·128 = 1,572,864 elements (FP32 everywhere),
    conv (3 · 96·128) · (4 − 1) = 110,592 elements — FP32 in the planner (6,733,824 B a layer,
    443.1 MiB) and BF16 in vLLM (6,512,640 B a layer, 428.6 MiB): the planner is +3.4 %."""
    planner, vllm = 69 * (1_572_864 + 110_592) * 4, 69 * (1_572_864 * 4 + 110_592 * 2)
    assert round((planner / vllm - 1) * 100, 1) == 3.4
    (note,) = [n for n in loaded_parts_notes(get_model("kimi-k3"), "vllm") if n.startswith("linear-attention")]
    assert f"{vllm / MiB:,.1f} MiB" in note and f"{planner / MiB:,.1f} MiB" in note and "+3.4 %" in note
    (same,) = [n for n in loaded_parts_notes(get_model("kimi-k3"), "llama.cpp") if n.startswith("linear-attention")]
    assert f"{planner / MiB:,.1f} MiB" in same and "%" not in same


def test_nothing_to_say_for_a_plain_text_model_and_unknown_engines_refused():
    for engine in ("vllm", "sglang", "llama.cpp", "transformers", "generic"):
        assert loaded_parts_notes(get_model("llama-3.1-8b"), engine) == ()
    assert loaded_parts_notes(get_model("kimi-k3@guide-000"), "vllm") == ()
    with pytest.raises(K3InputError, match="^engine"):
        loaded_parts_notes(get_model("kimi-k3"), "tensorrt")
