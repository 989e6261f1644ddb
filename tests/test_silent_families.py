"""Families whose llama.cpp figures were silently wrong (issue 23, "Silently wrong"): each expected
value is worked by hand from the llama.cpp rule cited (ggml-org/llama.cpp@0c1e57098)."""

from __future__ import annotations

import pytest

from k3lib.engines.llamacpp import llamacpp_memory
from k3lib.loaders._common import TensorInfo
from k3lib.loaders.gguf_file import architecture_from_gguf

EMB = [TensorInfo("token_embd.weight", "F32", (256, 512), 256 * 512 * 4, "embedding", None, False)]


def _gemma4_meta(**extra):
    # 6 layers, layers 0–4 sliding (window 256), layer 5 full; 2 KV heads; full-layer head 128
    meta = {
        "general.architecture": "gemma4",
        "gemma4.embedding_length": 256,
        "gemma4.block_count": 6,
        "gemma4.attention.head_count": 4,
        "gemma4.attention.head_count_kv": 2,
        "gemma4.attention.key_length": 128,
        "gemma4.attention.value_length": 128,
        "gemma4.feed_forward_length": 512,
        "gemma4.attention.sliding_window": 256,
        "gemma4.context_length": 8192,
        "gemma4.attention.sliding_window_pattern": [True] * 5 + [False],
        "tokenizer.ggml.tokens": 512,
    }
    meta.update({f"gemma4.attention.{k}": v for k, v in extra.items()})
    return meta


def test_gemma4_sliding_layers_use_key_length_swa():
    # llama.cpp: a sliding layer's K row is n_head_kv × n_embd_head_k_swa (attention.key_length_swa),
    # its V row n_head_kv × n_embd_head_v_swa (attention.value_length_swa); full layers keep key_length.
    arch = architecture_from_gguf(_gemma4_meta(key_length_swa=64, value_length_swa=64), EMB, id="g4", source="t")
    swa = next(g for g in arch.attention if g.kind == "sliding")
    full = next(g for g in arch.attention if g.kind == "full")
    assert (swa.head_dim, swa.v_head_dim, full.head_dim) == (64, 0, 128)
    m = llamacpp_memory(arch, n_ctx=4096)
    # sliding cells: ⌈min(4096, 256 + 512)⌉₂₅₆ = 768; 5 layers × 768 × (2 × 64) × 2 B
    assert m["swa_k"] == m["swa_v"] == 5 * 768 * 2 * 64 * 2 == 983_040  # was 1,966,080 (+100 %)
    # the full layer: 1 × 4096 cells × (2 × 128) × 2 B
    assert m["k"] == m["v"] == 1 * 4096 * 2 * 128 * 2 == 2_097_152


def test_value_length_swa_defaults_to_the_full_value_length():
    # n_embd_head_v_swa starts as n_embd_head_v_full (value_length), not as key_length_swa
    arch = architecture_from_gguf(_gemma4_meta(key_length_swa=64), EMB, id="g4", source="t")
    swa = next(g for g in arch.attention if g.kind == "sliding")
    assert (swa.head_dim, swa.v_head_dim) == (64, 128)
    m = llamacpp_memory(arch, n_ctx=4096)
    assert m["swa_k"] == 5 * 768 * 2 * 64 * 2
    assert m["swa_v"] == 5 * 768 * 2 * 128 * 2
    # without either key the sliding layers keep the full layers' sizes
    arch = architecture_from_gguf(_gemma4_meta(), EMB, id="g4", source="t")
    assert {g.head_dim for g in arch.attention} == {128}


# ---------------------------------------------------------------- glm4moe: MTP (nextn) layers skipped


def _glm4moe_gguf(path, nextn: int):
    """A 3-block glm4moe GGUF (F32): block 0 dense, blocks 1–2 MoE; the last ``nextn`` blocks MTP."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), "glm4moe")
    for k, v in (
        ("block_count", 3),
        ("embedding_length", 64),
        ("feed_forward_length", 128),
        ("context_length", 4096),
        ("attention.head_count", 4),
        ("attention.head_count_kv", 2),
        ("attention.key_length", 32),
        ("attention.value_length", 32),
        ("expert_count", 4),
        ("expert_used_count", 2),
        ("expert_feed_forward_length", 32),
        ("leading_dense_block_count", 1),
        ("nextn_predict_layers", nextn),
    ):
        w.add_uint32(f"glm4moe.{k}", v)

    def t(name, *shape):  # shape as llama.cpp prints it (ne0 first); F32 zeros
        w.add_tensor(name, np.zeros(tuple(reversed(shape)), dtype=np.float32))

    t("token_embd.weight", 64, 100)
    t("output.weight", 64, 100)
    t("output_norm.weight", 64)
    for i in range(3):
        t(f"blk.{i}.attn_norm.weight", 64)
        t(f"blk.{i}.attn_q.weight", 64, 128)
        t(f"blk.{i}.attn_k.weight", 64, 64)
        t(f"blk.{i}.attn_v.weight", 64, 64)
        t(f"blk.{i}.attn_output.weight", 128, 64)
        t(f"blk.{i}.ffn_norm.weight", 64)
        if i == 0:
            t("blk.0.ffn_up.weight", 64, 128)
            t("blk.0.ffn_gate.weight", 64, 128)
            t("blk.0.ffn_down.weight", 128, 64)
        else:
            t(f"blk.{i}.ffn_gate_inp.weight", 64, 4)
            t(f"blk.{i}.ffn_up_exps.weight", 64, 32, 4)
            t(f"blk.{i}.ffn_gate_exps.weight", 64, 32, 4)
            t(f"blk.{i}.ffn_down_exps.weight", 32, 64, 4)
    if nextn:
        t("blk.2.nextn.eh_proj.weight", 128, 64)
        t("blk.2.nextn.enorm.weight", 64)
        t("blk.2.nextn.hnorm.weight", 64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_glm4moe_nextn_layer_is_not_in_the_llamacpp_weights(tmp_path):
    # llama.cpp creates the tensors of blocks ≥ n_layer (the nextn_predict_layers MTP blocks) with
    # TENSOR_SKIP unless loaded for MTP drafting: they are in no buffer.
    from k3lib.engines.llamacpp import llamacpp_model_buffer_bytes, llamacpp_offload_split
    from k3lib.loaders.gguf_file import load_gguf

    m = load_gguf(_glm4moe_gguf(tmp_path / "glm.gguf", nextn=1))
    f32 = 4
    head = (64 * 100 + 64 * 100 + 64) * f32  # token_embd, output, output_norm
    attn = (64 + 64 * 128 + 64 * 64 * 2 + 128 * 64 + 64) * f32  # norms, q, k, v, o = 24,704 × 4
    dense = 3 * 64 * 128 * f32
    moe = (64 * 4 + 3 * 64 * 32 * 4) * f32
    mtp_extra = (128 * 64 + 64 + 64) * f32  # eh_proj, enorm, hnorm
    # every size above is a multiple of 32 bytes, so the CPU buffer's alignment adds nothing
    main = head + 2 * attn + dense + moe
    assert m.architecture.num_layers == 2
    assert m.weights_bytes_by_group["mtp"] == attn + moe + mtp_extra
    assert llamacpp_model_buffer_bytes(m) == main == 446_720  # was 678,144 (+52 %)
    assert llamacpp_model_buffer_bytes(m, load_mtp=True) == main + attn + moe + mtp_extra
    split = llamacpp_offload_split(m, n_gpu_layers=-1, n_ctx=256)
    assert split["gpu"]["weights"] == main - 64 * 100 * f32  # the token embedding stays on the host
    assert split["host"]["weights"] == 64 * 100 * f32
    assert any("nextn" in n and "skips" in n for n in m.notes)
    # the same file without the nextn key: block 2 is an ordinary layer and counts
    m0 = load_gguf(_glm4moe_gguf(tmp_path / "glm0.gguf", nextn=0))
    assert llamacpp_model_buffer_bytes(m0) == main + attn + moe


# ---------------------------------------------------------------- EXAONE-4: a window only at 64 layers


def _exaone4_meta(n_layers: int, **extra):
    meta = {
        "general.architecture": "exaone4",
        "exaone4.embedding_length": 256,
        "exaone4.block_count": n_layers,
        "exaone4.attention.head_count": 4,
        "exaone4.attention.head_count_kv": 2,
        "exaone4.attention.key_length": 64,
        "exaone4.attention.value_length": 64,
        "exaone4.feed_forward_length": 512,
        "exaone4.context_length": 65536,
        "tokenizer.ggml.tokens": 512,
    }
    meta.update({f"exaone4.{k}": v for k, v in extra.items()})
    return meta


def test_exaone4_slides_only_at_64_layers_gguf():
    # src/llama-model.cpp, case LLM_ARCH_EXAONE4: `if (hparams.n_layer == 64) { swa_type = STANDARD;
    # n_swa = 4096; set_swa_pattern(4); }`, then n_swa from attention.sliding_window if present; the
    # converter's sliding_window_pattern is never read for this architecture.
    row = 2 * 64 * 2  # K (or V) row: 2 KV heads × 64 × f16
    arch = architecture_from_gguf(
        _exaone4_meta(4, **{"attention.sliding_window": 256, "attention.sliding_window_pattern": [True] * 3 + [False]}),
        EMB,
        id="e4",
        source="t",
    )
    assert {g.kind for g in arch.attention} == {"full"}
    m = llamacpp_memory(arch, n_ctx=4096)
    # one cache of 4 layers × 4096 cells (real llama.cpp on this model: 'K (f16): 4.00 MiB', no SWA cache)
    assert (m["k"], m["swa_k"]) == (4 * 4096 * row, 0) == (4_194_304, 0)  # was (1,048,576, 589,824)
    # 64 layers, no sliding_window key, a pattern saying no layer slides: llama.cpp slides 48 (il % 4 < 3)
    arch = architecture_from_gguf(
        _exaone4_meta(64, **{"attention.sliding_window_pattern": [False] * 64}), EMB, id="e4", source="t"
    )
    swa = next(g for g in arch.attention if g.kind == "sliding")
    assert (swa.count, swa.window_tokens) == (48, 4096)
    m = llamacpp_memory(arch, n_ctx=8192)
    # sliding cells ⌈min(8192, 4096 + 512)⌉₂₅₆ = 4608
    assert m["swa_k"] == 48 * 4608 * row == 56_623_104
    assert m["k"] == 16 * 8192 * row == 33_554_432
    # the file's own window wins over 4096
    arch = architecture_from_gguf(_exaone4_meta(64, **{"attention.sliding_window": 1024}), EMB, id="e4", source="t")
    assert next(g for g in arch.attention if g.kind == "sliding").window_tokens == 1024


def test_exaone4_config_slides_in_llamacpp_only_at_64_layers():
    # a config.json with sliding layers: transformers/vLLM slide them; llama.cpp, at 4 layers, does not
    import warnings

    from k3lib.loaders.hf_config import architecture_from_hf_config

    cfg = {
        "model_type": "exaone4",
        "hidden_size": 256,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "intermediate_size": 512,
        "vocab_size": 512,
        "max_position_embeddings": 65536,
        "sliding_window": 256,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arch = architecture_from_hf_config(cfg, id="e4")
    assert sorted((g.kind, g.count) for g in arch.attention) == [("full", 1), ("sliding", 3)]
    m = llamacpp_memory(arch, n_ctx=4096)
    assert (m["k"], m["swa_k"]) == (4 * 4096 * 2 * 64 * 2, 0)
    from k3lib.engines.llamacpp import llamacpp_offload_split

    split = llamacpp_offload_split(arch, n_gpu_layers=3, n_ctx=4096)  # -ngl 3: layers 2, 3 and the output
    assert split["gpu"]["kv"] == 2 * 2 * 4096 * 2 * 64 * 2 and split["host"]["kv"] == split["gpu"]["kv"]
    # 64 layers (EXAONE-4.0-32B: sliding_window 4096, 3 sliding : 1 full): llama.cpp keeps the window
    cfg64 = dict(
        cfg,
        num_hidden_layers=64,
        sliding_window=4096,
        layer_types=(["sliding_attention"] * 3 + ["full_attention"]) * 16,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arch = architecture_from_hf_config(cfg64, id="e4")
    m = llamacpp_memory(arch, n_ctx=8192)
    assert (m["k"], m["swa_k"]) == (16 * 8192 * 256, 48 * 4608 * 256)
    # a 64-layer model split by -ngl keeps its window on both sides (the rule looks at the whole model)
    split = llamacpp_offload_split(arch, n_gpu_layers=33, n_ctx=8192)
    assert split["gpu"]["kv"] + split["host"]["kv"] == m["total"]


# ---------------------------------------------------------------- HF model_type → llama.cpp architecture


@pytest.mark.parametrize(
    "mtype, name",
    [
        ("qwen3_5_text", "qwen35"),
        ("qwen3_5_moe_text", "qwen35moe"),
        ("qwen3_5_moe", "qwen35moe"),
        ("qwen3_next", "qwen3next"),
        ("glm4_moe", "glm4moe"),
        ("deepseek_v3", "deepseek2"),
        ("llama", "llama"),
    ],
)
def test_qwen3_5_text_configs_keep_their_llamacpp_family(mtype, name):
    # a text-tower config (model_type qwen3_5_moe_text) is known and maps to llama.cpp's qwen35moe, whose
    # recurrent state keeps n_rs_seq snapshots (llm_arch_supports_rs_rollback, src/llama-arch.cpp)
    import warnings

    from k3lib.engines.llamacpp import llamacpp_arch_name, supports_rs_rollback
    from k3lib.loaders.hf_config import architecture_from_hf_config, config_notes

    cfg = {
        "model_type": mtype,
        "hidden_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "intermediate_size": 128,
        "vocab_size": 512,
        "max_position_embeddings": 4096,
        "full_attention_interval": 4,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
        "linear_conv_kernel_dim": 4,
    }
    if not mtype.startswith("qwen3_5"):
        from types import SimpleNamespace as NS

        assert llamacpp_arch_name(NS(family=mtype)) == name
        return
    if "moe" in mtype:
        cfg.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # known: no "model type k3lib does not know" warning
        arch = architecture_from_hf_config(cfg, id="q35")
    assert config_notes(cfg) == []
    assert llamacpp_arch_name(arch) == name and supports_rs_rollback(arch)
    gdn = next(g for g in arch.attention if g.kind == "gdn")
    assert gdn.count == 3
    m = llamacpp_memory(arch, n_ctx=4096, n_rs_seq=2)
    # 1 sequence × (1 + 2 snapshots) = 3 rows per layer, F32; S = 4 value heads × 16 × 16,
    # R = (kernel − 1) × (2 · 2 key heads · 16 + 4 · 16) = 3 × 128
    assert m["rs_rows"] == 3
    assert m["s"] == 3 * 3 * 4 * 16 * 16 * 4 == 36_864  # was 12,288 (snapshots dropped)
    assert m["r"] == 3 * 3 * 3 * 128 * 4 == 13_824


# ---------------------------------------------------------------- recurrent states: Mamba-2, Falcon-H1, RWKV, LFM2
# llama.cpp's per-layer, per-sequence F32 rows (src/llama-hparams.cpp n_embd_r / n_embd_s,
# src/llama-memory-recurrent.cpp; ggml-org/llama.cpp@0c1e57098). Figures in the comments are what
# that build printed for the tier's tiny models (tests/llamacpp/families.py) at -c 4096.

_SSM = {
    "ssm.conv_kernel": 4,
    "ssm.inner_size": 512,
    "ssm.state_size": 64,
    "ssm.time_step_rank": 8,
    "ssm.group_count": 2,
}


def _meta(arch: str, **keys):
    return {
        "general.architecture": arch,
        f"{arch}.context_length": 4096,
        "tokenizer.ggml.tokens": 512,
        **{f"{arch}.{k}": v for k, v in keys.items()},
    }


def test_falcon_h1_layers_hold_kv_and_a_mamba2_state():
    # 4 layers, each attention (2 KV heads × 64) AND Mamba-2: d_inner 512, d_state 64, 2 groups, d_conv 4
    meta = _meta(
        "falcon-h1",
        embedding_length=256,
        block_count=4,
        feed_forward_length=512,
        **{
            "attention.head_count": 4,
            "attention.head_count_kv": 2,
            "attention.key_length": 64,
            "attention.value_length": 64,
        },
        **_SSM,
    )
    arch = architecture_from_gguf(meta, EMB, id="fh1", source="t")
    m = llamacpp_memory(arch, n_ctx=4096)
    # R = (4 − 1) × (512 + 2·2·64) = 2,304 elements × 4 B × 4 layers = 36,864 B   (printed 'R (f32): 0.04 MiB')
    # S = 64 × 512 = 32,768 elements × 4 B × 4 layers = 524,288 B                 (printed 'S (f32): 0.50 MiB')
    assert (m["r"], m["s"]) == (36_864, 524_288)  # k3lib said 0 and 0 before
    # and every layer keeps its K and V: 4 layers × 4096 cells × 128 × 2 B      (printed 'K (f16): 4.00 MiB')
    assert m["k"] == m["v"] == 4 * 4096 * 128 * 2
    # 16 sequences: 16 rows each
    assert llamacpp_memory(arch, n_ctx=2048, n_seq=16)["s"] == 16 * 524_288


def test_mamba2_is_planned_not_refused():
    # pure Mamba-2: attention.head_count 0, feed_forward_length 0 (as convert_hf_to_gguf.py writes them)
    meta = _meta(
        "mamba2", embedding_length=256, block_count=4, feed_forward_length=0, **{"attention.head_count": 0}, **_SSM
    )
    arch = architecture_from_gguf(meta, EMB, id="m2", source="t")
    m = llamacpp_memory(arch, n_ctx=4096)
    assert (m["k"], m["v"], m["r"], m["s"]) == (0, 0, 36_864, 524_288)  # printed R 0.04, S 0.50 MiB
    assert arch.mlp.dense_intermediate == 0


def test_rwkv7_state_is_token_shifts_and_wkv():
    # RWKV-7, D = 256, head size 64: R = 2 token shifts × 256 = 512 elements; S = 256 × 64 = 16,384
    meta = _meta(
        "rwkv7",
        embedding_length=256,
        block_count=4,
        feed_forward_length=1024,
        **{"attention.head_count": 0, "wkv.head_size": 64},
    )
    arch = architecture_from_gguf(meta, EMB, id="r7", source="t")
    m = llamacpp_memory(arch, n_ctx=4096)
    assert (m["k"], m["r"], m["s"]) == (0, 4 * 512 * 4, 4 * 16_384 * 4)  # 8,192 B (0.01) and 262,144 B (0.25)


def test_lfm2_short_conv_layers_are_not_gated_delta_net():
    # LFM2: layers with no KV heads are short convs over D = 256 channels, L_cache 3: R = 256 × 2 per layer
    meta = _meta(
        "lfm2",
        embedding_length=256,
        block_count=6,
        feed_forward_length=512,
        **{"attention.head_count": 4, "attention.head_count_kv": [0, 0, 2, 0, 0, 2], "shortconv.l_cache": 3},
    )
    arch = architecture_from_gguf(meta, EMB, id="lfm2", source="t")
    m = llamacpp_memory(arch, n_ctx=4096)
    assert (m["r"], m["s"]) == (4 * 256 * 2 * 4, 0)  # 8,192 B: printed 'R (f32): 0.01 MiB'
    assert m["k"] == 2 * 4096 * 128 * 2  # the 2 attention layers: 'K (f16): 2.00 MiB'
    # lfm2 keeps n_rs_seq snapshots (llm_arch_supports_rs_rollback): 4 sequences × (1 + 3) rows
    assert llamacpp_memory(arch, n_ctx=2048, n_seq=4, n_rs_seq=3)["r"] == 16 * 4 * 256 * 2 * 4


def test_granitehybrid_mamba_layers_are_mamba():
    meta = _meta(
        "granitehybrid",
        embedding_length=256,
        block_count=4,
        feed_forward_length=512,
        **{"attention.head_count": 4, "attention.head_count_kv": [0, 0, 0, 2]},
        **_SSM,
    )
    arch = architecture_from_gguf(meta, EMB, id="gh", source="t")
    assert sorted((g.kind, g.count) for g in arch.attention) == [("full", 1), ("mamba", 3)]
    assert llamacpp_memory(arch, n_ctx=4096)["s"] == 3 * 64 * 512 * 4  # 3 layers × d_state × d_inner × 4 B


# config.json of the same three tiny models: parameters equal llama_model_n_params that llama.cpp@0c1e570
# printed for the tier's GGUF (tests/llamacpp/families.py), states equal its R/S lines
_HF = {
    "falcon_h1": (
        {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 64,
            "intermediate_size": 512,
            "mamba_d_ssm": 512,
            "mamba_n_heads": 8,
            "mamba_n_groups": 2,
            "mamba_d_state": 64,
            "mamba_d_conv": 4,
        },
        4_484_448,
        (36_864, 524_288),
    ),
    "mamba2": (
        {
            "hidden_size": 256,
            "num_hidden_layers": 4,
            "num_heads": 8,
            "head_dim": 64,
            "expand": 2,
            "n_groups": 2,
            "state_size": 64,
            "conv_kernel": 4,
        },
        2_124_128,
        (36_864, 524_288),
    ),
    "lfm2": (
        {
            "hidden_size": 256,
            "num_hidden_layers": 6,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 768,
            "block_auto_adjust_ff_dim": True,
            "block_multiple_of": 256,
            "conv_L_cache": 3,
            "layer_types": ["conv", "conv", "full_attention", "conv", "conv", "full_attention"],
        },
        4_069_888,
        (8_192, 0),
    ),
}


@pytest.mark.parametrize("mtype", sorted(_HF))
def test_state_families_from_config_json(mtype):
    from k3lib.loaders.hf_config import architecture_from_hf_config

    fields, n_params, (r, s) = _HF[mtype]
    cfg = {
        "model_type": mtype,
        "vocab_size": 512,
        "max_position_embeddings": 65536,
        "tie_word_embeddings": False,
        **fields,
    }
    arch = architecture_from_hf_config(cfg, id=mtype)
    assert arch.params_total == n_params
    m = llamacpp_memory(arch, n_ctx=4096)
    assert (m["r"], m["s"]) == (r, s)
    assert arch.num_layers == len(arch.layer_order())


def test_vllm_pages_falcon_h1s_parallel_mamba_state_beside_its_attention():
    """vLLM gives a Falcon-H1 decoder layer two cache entries (attention and a MambaSpec): the
    layout holds a state group, and its state per rank is the Mamba-2 state (conv + SSM)."""
    from k3lib.engines.vllm import vllm_kv_layout

    meta = _meta(
        "falcon-h1",
        embedding_length=256,
        block_count=4,
        feed_forward_length=512,
        **{
            "attention.head_count": 4,
            "attention.head_count_kv": 2,
            "attention.key_length": 64,
            "attention.value_length": 64,
        },
        **_SSM,
    )
    arch = architecture_from_gguf(meta, EMB, id="fh1", source="t")
    lay = vllm_kv_layout(arch, tp=1, dtype_bytes=2)
    # conv (4 − 1) × (512 + 2·2·64) = 2,304 elements + SSM 64 × 512 = 32,768 elements, at 2 B (the model dtype)
    assert lay.state_bytes == (2_304 + 32_768) * 2
