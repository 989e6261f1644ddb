"""Tests for k3lib.loaders: config.json, GGUF and safetensors → LoadedModel.

Byte counts are worked by hand from the block sizes in ggml-common.h
(Q8_0: 34 B per 32 elements, Q4_K: 144 B per 256, Q6_K: 210 B per 256) and from
safetensors dtypes; configs come from data/configs (copies of public
configs), never from outside the repository.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

from k3lib.cli import main
from k3lib.core.errors import K3InputError
from k3lib.core.precisions import get_weight_format
from k3lib.loaders import (
    LoadedModel,
    load_config,
    load_gguf,
    load_path,
    load_safetensors,
    plan_for_loaded,
    tensor_group,
)
from k3lib.loaders.hf_config import AssumedFieldWarning, rope_caches, vision_tower_params

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "configs"


def cfg(name: str) -> LoadedModel:
    return load_config(FIXTURES / name)


# ====================================================================== config.json


@pytest.mark.parametrize(
    "name, total",
    [
        ("llama-3.1-8b.json", 8_030_261_248),
        ("llama-3.1-70b.json", 70_553_706_496),
        ("llama-3.1-405b.json", 405_853_388_800),
        ("kimi-linear-48b-a3b-instruct.json", 49_122_681_728),
        ("qwen2.5-72b-instruct.json", 72_706_203_648),
    ],
)
def test_parameter_totals_match_the_published_counts(name, total):
    assert cfg(name).architecture.params_total == total


def test_deepseek_v3_is_671_0_billion():
    assert round(cfg("deepseek-v3.json").architecture.params_total / 1e9, 1) == 671.0


# (file, kind, layers, KV bytes per token per layer at BF16, window) — worked by hand:
# GQA 2·K·H·2 B, MLA (kv_lora_rank + rope)·2 B
KV_TABLE = [
    ("llama-3.1-8b.json", "full", 32, 2 * 8 * 128 * 2, 0),
    ("llama-3.1-70b.json", "full", 80, 2 * 8 * 128 * 2, 0),
    ("qwen2.5-72b-instruct.json", "full", 80, 2 * 8 * 128 * 2, 0),
    ("qwen3-30b-a3b.json", "full", 48, 2 * 4 * 128 * 2, 0),
    ("mixtral-8x7b-v0.1.json", "full", 32, 2 * 8 * 128 * 2, 0),
    ("mistral-7b-v0.3.mlc-transcription.json", "full", 32, 2 * 8 * 128 * 2, 0),
    ("qwen3-next-80b-a3b-instruct.json", "full", 12, 2 * 2 * 256 * 2, 0),  # head_dim 256, not 2048/16
    ("qwen3-next-80b-a3b-instruct.json", "gdn", 36, 0, 0),
    ("deepseek-v3.json", "mla", 61, (512 + 64) * 2, 0),
    ("kimi-k2-instruct.json", "mla", 61, (512 + 64) * 2, 0),
    ("kimi-linear-48b-a3b-instruct.json", "mla", 7, (512 + 64) * 2, 0),
    ("kimi-linear-48b-a3b-instruct.json", "kda", 20, 0, 0),
    ("gpt-oss-20b.json", "sliding", 12, 2 * 8 * 64 * 2, 128),
    ("gpt-oss-20b.json", "full", 12, 2 * 8 * 64 * 2, 0),
    ("gemma-3-27b-it.maxtext-transcription.json", "sliding", 52, 2 * 16 * 128 * 2, 1024),
    ("gemma-3-27b-it.maxtext-transcription.json", "full", 10, 2 * 16 * 128 * 2, 0),
    ("llama-4-scout-17b-16e-instruct.abridged.json", "sliding", 36, 2 * 8 * 128 * 2, 8192),
    ("llama-4-scout-17b-16e-instruct.abridged.json", "full", 12, 2 * 8 * 128 * 2, 0),
]


@pytest.mark.parametrize("name, kind, layers, per_layer, window", KV_TABLE)
def test_kv_bytes_per_token_per_layer_type(name, kind, layers, per_layer, window):
    arch = cfg(name).architecture
    groups = [g for g in arch.attention if g.kind == kind]
    assert len(groups) == 1
    g = groups[0]
    assert g.count == layers
    assert g.kv_elements_per_token_per_layer * 2 == per_layer
    assert g.window_tokens == window


def test_growing_kv_bytes_per_token_leave_windowed_and_linear_layers_out():
    assert cfg("gpt-oss-20b.json").architecture.kv_bytes_per_token(2) == 12 * 2048
    assert cfg("gemma-3-27b-it.maxtext-transcription.json").architecture.kv_bytes_per_token(2) == 10 * 8192
    assert cfg("deepseek-v3.json").architecture.kv_bytes_per_token(2) == 61 * 1152  # not 2·128·192·61·2


def test_linear_attention_state_per_sequence():
    # Qwen3-Next Gated DeltaNet: 32 value heads × 128 × 128 recurrent + (2·16·128 + 32·128) × (4 − 1) conv
    per_layer = 32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3
    assert cfg("qwen3-next-80b-a3b-instruct.json").architecture.state_elements_per_sequence() == 36 * per_layer
    # Kimi Linear KDA: 32 heads × 128 × 128 + 3 · 32·128 · 3
    kda = 32 * 128 * 128 + 3 * 32 * 128 * 3
    assert cfg("kimi-linear-48b-a3b-instruct.json").architecture.state_elements_per_sequence() == 20 * kda


def test_moe_shapes_from_configs():
    m = cfg("deepseek-v3.json").architecture.mlp
    assert (m.dense_layers, m.moe_layers, m.n_routed_experts, m.experts_per_token, m.n_shared_experts) == (
        3,
        58,
        256,
        8,
        1,
    )
    m = cfg("mixtral-8x7b-v0.1.json").architecture.mlp
    assert (m.moe_layers, m.n_routed_experts, m.experts_per_token) == (32, 8, 2)


def test_native_quantization_from_the_config():
    assert dict(cfg("deepseek-v3.json").architecture.native_formats)["*"] == "fp8-block"
    gpt = dict(cfg("gpt-oss-20b.json").architecture.native_formats)
    assert gpt == {"routed_experts": "mxfp4", "*": "bf16"}
    k3 = dict(cfg("kimi-k3.json").architecture.native_formats)  # compressed-tensors, attention etc. ignored
    assert k3 == {"routed_experts": "mxfp4", "*": "bf16"}


def test_compressed_tensors_int4_keeps_the_ignored_lm_head_in_bf16(tmp_path):
    doc = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
    doc["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}
        },
        "ignore": ["lm_head"],
    }
    (tmp_path / "config.json").write_text(json.dumps(doc))
    nf = dict(load_config(tmp_path).architecture.native_formats)
    # symmetric (compressed-tensors' default): no zero point, 4 + 16/128 = 4.125 bits per weight
    assert nf["attention"] == nf["dense_mlp"] == "ct-int4-g128"
    assert get_weight_format(nf["attention"]).bits_per_weight == 4 + 16 / 128
    assert "lm_head" not in nf and nf["*"] == "bf16"


def test_tied_embeddings_drop_the_lm_head(tmp_path):
    doc = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
    doc["tie_word_embeddings"] = True
    (tmp_path / "config.json").write_text(json.dumps(doc))
    arch = load_config(tmp_path).architecture
    assert arch.param_groups()["lm_head"] == 0
    assert arch.params_total == 8_030_261_248 - 128_256 * 4096


def _write(tmp_path: Path, doc: dict, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


BASE = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


def test_gemma2_alternates_sliding_layers(tmp_path):
    doc = dict(BASE, model_type="gemma2", num_hidden_layers=42, head_dim=64, sliding_window=4096)
    arch = load_config(_write(tmp_path, doc)).architecture
    assert [(g.kind, g.count) for g in arch.attention] == [("sliding", 21), ("full", 21)]
    assert arch.tie_word_embeddings


def test_qwen2_slides_only_from_max_window_layers_when_enabled(tmp_path):
    doc = dict(BASE, model_type="qwen2", num_hidden_layers=28, sliding_window=4096, max_window_layers=21)
    arch = load_config(_write(tmp_path, doc)).architecture
    assert [(g.kind, g.count) for g in arch.attention] == [("full", 28)]
    arch = load_config(_write(tmp_path, dict(doc, use_sliding_window=True))).architecture
    assert [(g.kind, g.count) for g in arch.attention] == [("sliding", 7), ("full", 21)]


def test_layer_types_decide_which_layers_slide(tmp_path):
    doc = dict(
        BASE,
        model_type="gemma3_text",
        head_dim=64,
        sliding_window=512,
        layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention"],
    )
    arch = load_config(_write(tmp_path, doc)).architecture
    assert [(g.kind, g.count) for g in arch.attention] == [("sliding", 3), ("full", 1)]


def test_multimodal_wrapper_reads_text_config_and_estimates_the_vision_tower(tmp_path):
    doc = {
        "model_type": "mistral3",
        "text_config": dict(BASE, model_type="mistral", sliding_window=None),
        "vision_config": {
            "model_type": "pixtral",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "patch_size": 14,
            "num_channels": 3,
        },
    }
    m = load_config(_write(tmp_path, doc))
    assert m.architecture.family == "mistral"
    # 2 × (4·64² + 3·64·128 + 2·64) + 3·14²·64 + 64 (ln_pre) + 64·4·64 + 64 + 64·256 + 256²
    vit = 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 3 * 14 * 14 * 64
    assert m.vision_params == vit + 64 + 64 * 4 * 64 + 64 + 64 * 256 + 256 * 256
    assert vision_tower_params(doc) == m.vision_params


def test_rope_caches_follow_linear_scaling_and_gemma3_keeps_two():
    doc = json.loads((FIXTURES / "gemma-3-27b-it.maxtext-transcription.json").read_text())
    assert rope_caches(doc) == ((163840 * 8, 128), (163840, 128))
    assert rope_caches(json.loads((FIXTURES / "deepseek-v3.json").read_text())) == ((4096 * 40, 64),)


def test_unknown_model_type_works_and_warns_with_the_assumed_fields(tmp_path):
    doc = {
        "model_type": "brand_new",
        "hidden_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "intermediate_size": 1024,
        "vocab_size": 3200,
    }
    with pytest.warns(AssumedFieldWarning) as rec:
        m = load_config(_write(tmp_path, doc))
    text = " ".join(str(w.message) for w in rec)
    for field in ("num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings"):
        assert field in text
    assert m.architecture.attention[0].head_dim == 64
    assert m.architecture.kv_bytes_per_token(2) == 2 * 2 * 8 * 64 * 2


def test_known_model_type_with_every_field_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cfg("llama-3.1-8b.json")


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("num_hidden_layers"), "config.num_hidden_layers"),
        (lambda d: d.pop("hidden_size"), "config.hidden_size"),
        (lambda d: d.update(vocab_size="32000"), "config.vocab_size"),
        (lambda d: d.update(num_key_value_heads=-2), "config.num_key_value_heads"),
        (lambda d: d.pop("intermediate_size"), "config.intermediate_size"),
    ],
)
def test_a_config_missing_a_field_names_the_field_and_the_file(tmp_path, mutate, field):
    doc = json.loads((FIXTURES / "llama-3.1-8b.json").read_text())
    mutate(doc)
    path = _write(tmp_path, doc)
    t0 = time.perf_counter()
    with pytest.raises(K3InputError) as exc:
        load_config(path)
    assert time.perf_counter() - t0 < 1.0
    assert exc.value.field == field
    assert str(path) in str(exc.value)


def test_nested_text_config_fields_are_named_with_their_path(tmp_path):
    doc = {"model_type": "mistral3", "text_config": dict(BASE, model_type="mistral")}
    del doc["text_config"]["num_attention_heads"]
    with pytest.raises(K3InputError) as exc:
        load_config(_write(tmp_path, doc))
    assert exc.value.field == "config.text_config.num_attention_heads"


def test_linear_attention_config_missing_a_field(tmp_path):
    doc = json.loads((FIXTURES / "qwen3-next-80b-a3b-instruct.json").read_text())
    del doc["linear_num_value_heads"]
    with pytest.raises(K3InputError) as exc:
        load_config(_write(tmp_path, doc))
    assert exc.value.field == "config.linear_num_value_heads"


@pytest.mark.parametrize(
    "text, where",
    [
        ('{"model_type": "llama", "hidden_size": 4096,', "line 1"),
        ("[1, 2, 3]", "JSON object"),
        ("", "invalid JSON"),
    ],
)
def test_invalid_json_gives_one_clear_error(tmp_path, text, where):
    p = tmp_path / "config.json"
    p.write_text(text)
    with pytest.raises(K3InputError) as exc:
        load_config(p)
    assert exc.value.field == "config"
    assert where in str(exc.value) and str(p) in str(exc.value)


def test_load_config_accepts_the_folder_and_reports_a_missing_file(tmp_path):
    _write(tmp_path, BASE)
    assert load_config(tmp_path).architecture.num_layers == 4
    with pytest.raises(K3InputError, match="no such file"):
        load_config(tmp_path / "nowhere")


def test_plan_for_a_config_matches_make_plan_for_the_same_architecture():
    from k3lib.core.models import get_model
    from k3lib.core.plan import make_plan

    loaded = cfg("llama-3.1-70b.json")
    a = plan_for_loaded(loaded, gpus=4, context="128K")
    b = make_plan(model=get_model("llama-3.1-70b"), gpus=4, context="128K")
    assert a.per_gpu == b.per_gpu and a.total == b.total


# ====================================================================== GGUF


def _gguf_tensor(w, name: str, ne: tuple[int, ...], qtype) -> None:
    """Add a zero tensor of GGUF shape ``ne`` (ne0 first) in ``qtype``."""
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[qtype]
    shape = tuple(reversed(ne))
    if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        dt = np.float32 if qtype == gguf.GGMLQuantizationType.F32 else np.float16
        w.add_tensor(name, np.zeros(shape, dtype=dt))
    else:
        w.add_tensor(name, np.zeros(shape[:-1] + (shape[-1] // block * size,), dtype=np.uint8), raw_dtype=qtype)


def write_llama_gguf(path: Path, *, tie: bool = False) -> Path:
    """D=256, 2 layers, 4 heads / 2 KV heads (head dim 64), FFN 512, vocab 512."""
    import gguf
    from gguf import GGMLQuantizationType as Q

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(2)
    w.add_embedding_length(256)
    w.add_feed_forward_length(512)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(8192)
    w.add_token_list([b"t"] * 512)
    _gguf_tensor(w, "token_embd.weight", (256, 512), Q.Q8_0)  # 131,072 = 4096 × 32 elements
    for i in range(2):
        _gguf_tensor(w, f"blk.{i}.attn_norm.weight", (256,), Q.F32)
        _gguf_tensor(w, f"blk.{i}.attn_q.weight", (256, 256), Q.Q4_K)
        _gguf_tensor(w, f"blk.{i}.attn_k.weight", (256, 128), Q.Q4_K)
        _gguf_tensor(w, f"blk.{i}.attn_v.weight", (256, 128), Q.Q6_K)
        _gguf_tensor(w, f"blk.{i}.attn_output.weight", (256, 256), Q.Q4_K)
        _gguf_tensor(w, f"blk.{i}.ffn_norm.weight", (256,), Q.F32)
        _gguf_tensor(w, f"blk.{i}.ffn_gate.weight", (256, 512), Q.Q4_K)
        _gguf_tensor(w, f"blk.{i}.ffn_up.weight", (256, 512), Q.Q4_K)
        _gguf_tensor(w, f"blk.{i}.ffn_down.weight", (512, 256), Q.Q6_K)
    _gguf_tensor(w, "output_norm.weight", (256,), Q.F32)
    if not tie:
        _gguf_tensor(w, "output.weight", (256, 512), Q.Q6_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# by hand: Q8_0 34 B / 32, Q4_K 144 B / 256, Q6_K 210 B / 256, F32 4 B
EMBD = 131_072 // 32 * 34  # 139,264
Q_O = 65_536 // 256 * 144  # 36,864 each for attn_q and attn_output
K = 32_768 // 256 * 144  # 18,432
V = 32_768 // 256 * 210  # 26,880
GATE_UP = 131_072 // 256 * 144  # 73,728 each
DOWN = 131_072 // 256 * 210  # 107,520
NORM = 256 * 4  # 1,024
OUTPUT = 131_072 // 256 * 210  # 107,520
LAYER = 2 * Q_O + K + V + 2 * GATE_UP + DOWN + 2 * NORM  # 376,064
TOTAL = EMBD + 2 * LAYER + NORM + OUTPUT  # 999,936


def test_hand_worked_block_sizes():
    assert (EMBD, Q_O, K, V, GATE_UP, DOWN, LAYER, TOTAL) == (
        139_264,
        36_864,
        18_432,
        26_880,
        73_728,
        107_520,
        376_064,
        999_936,
    )


def test_gguf_exact_bytes_per_tensor_type_group_and_layer(tmp_path):
    m = load_gguf(write_llama_gguf(tmp_path / "tiny.gguf"))
    assert m.exact and m.file_format == "gguf"
    assert m.weights_bytes == TOTAL
    sizes = {t.name: t.n_bytes for t in m.tensors}
    assert sizes["token_embd.weight"] == 139_264  # 4096 blocks × 34 B
    assert sizes["blk.1.ffn_down.weight"] == DOWN
    assert dict(m.bytes_by_dtype) == {
        "Q8_0": EMBD,
        "Q4_K": 2 * (2 * Q_O + K + 2 * GATE_UP),
        "Q6_K": 2 * (V + DOWN) + OUTPUT,
        "F32": 2 * 2 * NORM + NORM,
    }
    assert dict(m.weights_bytes_by_group) == {
        "embedding": EMBD,
        "norms": 5 * NORM,
        "attention": 2 * (2 * Q_O + K + V),
        "dense_mlp": 2 * (2 * GATE_UP + DOWN),
        "lm_head": OUTPUT,
    }
    assert dict(m.bytes_by_layer) == {0: LAYER, 1: LAYER}
    assert m.expert_bytes == 0


def test_gguf_architecture_from_metadata(tmp_path):
    arch = load_gguf(write_llama_gguf(tmp_path / "tiny.gguf")).architecture
    assert (arch.hidden_size, arch.num_layers, arch.vocab_size, arch.max_context_tokens) == (256, 2, 512, 8192)
    g = arch.attention[0]
    assert (g.kind, g.num_heads, g.kv_heads, g.head_dim) == ("full", 4, 2, 64)
    assert arch.kv_bytes_per_token(2) == 2 * 2 * 2 * 64 * 2
    assert arch.mlp.dense_intermediate == 512 and not arch.tie_word_embeddings


def test_gguf_tied_output_is_detected(tmp_path):
    m = load_gguf(write_llama_gguf(tmp_path / "tied.gguf", tie=True))
    assert m.architecture.tie_word_embeddings
    assert m.weights_bytes == TOTAL - OUTPUT


def test_gguf_moe_and_mla_metadata(tmp_path):
    import gguf
    from gguf import GGMLQuantizationType as Q

    p = tmp_path / "ds.gguf"
    w = gguf.GGUFWriter(str(p), "deepseek2")
    w.add_block_count(2)
    w.add_leading_dense_block_count(1)
    w.add_embedding_length(256)
    w.add_feed_forward_length(512)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_key_length(96)  # nope 64 + rope 32
    w.add_value_length(64)
    w.add_rope_dimension_count(32)
    w.add_kv_lora_rank(64)
    w.add_context_length(4096)
    w.add_expert_count(4)
    w.add_expert_used_count(2)
    w.add_expert_shared_count(1)
    w.add_expert_feed_forward_length(128)
    _gguf_tensor(w, "token_embd.weight", (256, 512), Q.F16)
    _gguf_tensor(w, "blk.0.ffn_up.weight", (256, 512), Q.F16)
    _gguf_tensor(w, "blk.0.attn_kv_a_mqa.weight", (256, 96), Q.F16)
    _gguf_tensor(w, "blk.1.ffn_gate_inp.weight", (256, 4), Q.F32)
    for name in ("ffn_gate_exps", "ffn_up_exps"):
        _gguf_tensor(w, f"blk.1.{name}.weight", (256, 128, 4), Q.Q8_0)
    _gguf_tensor(w, "blk.1.ffn_down_exps.weight", (128, 256, 4), Q.Q8_0)
    _gguf_tensor(w, "blk.1.ffn_up_shexp.weight", (256, 128), Q.F16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    m = load_gguf(p)
    experts = 3 * (256 * 128 * 4 // 32 * 34)  # 3 × 139,264
    assert m.expert_bytes == experts == 417_792
    assert {t.name for t in m.tensors if t.is_expert} == {
        f"blk.1.{n}.weight" for n in ("ffn_gate_exps", "ffn_up_exps", "ffn_down_exps")
    }
    assert m.weights_bytes_by_group["shared_experts"] == 256 * 128 * 2
    assert m.weights_bytes_by_group["moe_other"] == 256 * 4 * 4
    arch = m.architecture
    g = arch.attention[0]
    assert (g.kind, g.kv_lora_rank, g.qk_rope_head_dim, g.qk_nope_head_dim, g.v_head_dim) == ("mla", 64, 32, 64, 64)
    assert arch.kv_bytes_per_token(2) == 2 * (64 + 32) * 2
    mlp = arch.mlp
    assert (
        mlp.dense_layers,
        mlp.moe_layers,
        mlp.n_routed_experts,
        mlp.experts_per_token,
        mlp.moe_intermediate,
        mlp.n_shared_experts,
    ) == (1, 1, 4, 2, 128, 1)


def _metadata_only_gguf(path: Path, arch: str, **keys) -> Path:
    import gguf
    from gguf import GGMLQuantizationType as Q

    w = gguf.GGUFWriter(str(path), arch)
    for key, value in keys.items():
        getattr(w, f"add_{key}")(value)
    _gguf_tensor(w, "token_embd.weight", (64, 100), Q.F16)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_sliding_window_follows_the_family_pattern(tmp_path):
    p = _metadata_only_gguf(
        tmp_path / "g3.gguf",
        "gemma3",
        block_count=12,
        embedding_length=64,
        feed_forward_length=128,
        head_count=4,
        head_count_kv=2,
        key_length=32,
        value_length=32,
        sliding_window=512,
        context_length=32768,
    )
    arch = load_gguf(p).architecture
    assert [(g.kind, g.count, g.window_tokens) for g in arch.attention] == [("sliding", 10, 512), ("full", 2, 0)]
    assert arch.tie_word_embeddings


def test_gguf_recurrent_layers_from_per_layer_kv_heads(tmp_path):
    p = _metadata_only_gguf(
        tmp_path / "q3n.gguf",
        "qwen3next",
        block_count=4,
        embedding_length=64,
        feed_forward_length=128,
        head_count=4,
        head_count_kv=[0, 0, 0, 2],
        key_length=32,
        context_length=4096,
        ssm_conv_kernel=4,
        ssm_state_size=16,
        ssm_group_count=2,
        ssm_time_step_rank=4,
        ssm_inner_size=64,
    )
    arch = load_gguf(p).architecture
    kinds = {g.kind: g for g in arch.attention}
    assert kinds["full"].count == 1 and kinds["gdn"].count == 3
    gdn = kinds["gdn"]
    # recurrent 4 value heads × 16 × 16; conv (2·2·16 + 4·16) × 3
    assert gdn.recurrent_state_elements_per_layer == 4 * 16 * 16
    assert gdn.conv_state_elements_per_layer == (2 * 2 * 16 + 4 * 16) * 3


def test_gguf_missing_metadata_names_the_key(tmp_path):
    p = _metadata_only_gguf(tmp_path / "bad.gguf", "llama", block_count=2, head_count=4, feed_forward_length=64)
    with pytest.raises(K3InputError) as exc:
        load_gguf(p)
    assert exc.value.field == "gguf.llama.embedding_length"


def _assert_fast_clean_error(path: Path, match: str) -> None:
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(K3InputError, match=match) as exc:
            load_gguf(path)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - t0 < 1.0
    assert peak < 16 * 2**20, f"peak {peak:,} bytes"
    assert exc.value.field == "gguf"


def test_truncated_gguf(tmp_path):
    p = write_llama_gguf(tmp_path / "t.gguf")
    data = p.read_bytes()
    p.write_bytes(data[:-5000])
    _assert_fast_clean_error(p, "truncated")
    p.write_bytes(data[:20])
    _assert_fast_clean_error(p, "truncated")


def test_tensor_count_of_2_to_the_40(tmp_path):
    p = write_llama_gguf(tmp_path / "c.gguf")
    data = bytearray(p.read_bytes())
    data[8:16] = struct.pack("<Q", 2**40)
    p.write_bytes(bytes(data))
    _assert_fast_clean_error(p, "tensor count 1,099,511,627,776 cannot fit")


def test_huge_metadata_count_string_and_array(tmp_path):
    p = write_llama_gguf(tmp_path / "k.gguf")
    good = p.read_bytes()
    data = bytearray(good)
    data[16:24] = struct.pack("<Q", 2**50)
    p.write_bytes(bytes(data))
    _assert_fast_clean_error(p, "metadata count")
    data = bytearray(good)
    data[24:32] = struct.pack("<Q", 2**60)  # length of the first key
    p.write_bytes(bytes(data))
    _assert_fast_clean_error(p, "truncated")
    # the token list is a string array: make its element count absurd
    i = good.index(b"tokenizer.ggml.tokens") + len(b"tokenizer.ggml.tokens") + 4 + 4
    data = bytearray(good)
    data[i : i + 8] = struct.pack("<Q", 2**45)
    p.write_bytes(bytes(data))
    _assert_fast_clean_error(p, "truncated")


def test_not_a_gguf_file(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"GGML" + b"\0" * 64)
    _assert_fast_clean_error(p, "not a GGUF file")
    p.write_bytes(b"GGUF" + struct.pack("<I", 99) + b"\0" * 64)
    _assert_fast_clean_error(p, "version 99")


def test_plan_for_a_gguf_uses_the_exact_bytes(tmp_path):
    m = load_gguf(write_llama_gguf(tmp_path / "tiny.gguf"))
    plan = plan_for_loaded(m, gpus=1, context=4096)
    assert plan.total.weights_bytes == TOTAL == plan.per_gpu.weights_bytes
    assert any("exact bytes of 21 tensors" in n for n in plan.notes)
    # another format re-prices the architecture instead
    assert plan_for_loaded(m, gpus=1, context=4096, weights="bf16").total.weights_bytes != TOTAL


def test_cli_estimate_with_gguf(tmp_path, capsys):
    p = write_llama_gguf(tmp_path / "tiny.gguf")
    assert main(["estimate", "--gguf", str(p), "--gpus", "1", "--context", "4096", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # a GGUF is planned for llama.cpp, which keeps the token embedding in host memory: the GPU holds the
    # file's bytes less the embedding; k3lib's component model (the explanation) counts every byte
    assert out["engine"] == "llama.cpp" and out["model"] == "tiny"
    assert out["weights_bytes"] == TOTAL - EMBD and out["core_per_gpu"]["weights_bytes"] == TOTAL
    assert (
        main(["estimate", "--gguf", str(p), "--gpus", "1", "--context", "4096", "--engine", "generic", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["weights_bytes"] == TOTAL
    assert main(["estimate", "--gguf", str(p), "--gpus", "1", "--context", "4096"]) == 0
    assert "exact bytes of 21 tensors" in capsys.readouterr().out


def test_cli_sources_are_mutually_exclusive_and_errors_are_one_line(tmp_path, capsys):
    p = write_llama_gguf(tmp_path / "tiny.gguf")
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "--gguf", str(p), "--model", "llama-3.1-8b"])
    assert exc.value.code == 2
    capsys.readouterr()
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({k: v for k, v in BASE.items() if k != "num_hidden_layers"}))
    assert main(["estimate", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "config.num_hidden_layers" in err


def test_cli_estimate_with_config(capsys):
    assert (
        main(
            ["estimate", "--config", str(FIXTURES / "llama-3.1-8b.json"), "--gpus", "1", "--context", "8192", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    # planned for vLLM: the BF16 parameters plus vLLM's rotary cos/sin cache at the model dtype
    # (131,072 positions × 128 rotary dims × 2 B); k3lib's component model counts the parameters alone
    assert out["engine"] == "vllm"
    assert out["weights_bytes"] == 8_030_261_248 * 2 + 131_072 * 128 * 2
    assert out["core_per_gpu"]["weights_bytes"] == 8_030_261_248 * 2


# ====================================================================== safetensors


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], *, pad_header: int = 0) -> Path:
    """Write a safetensors file by hand: 8-byte header length, JSON header, zero data."""
    bits = {"BF16": 16, "F16": 16, "F32": 32, "F8_E4M3": 8, "U8": 8, "I32": 32, "F4": 4}
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        n = int(np.prod(shape)) if shape else 1
        size = -(-n * bits[dtype] // 8)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header).encode() + b" " * pad_header
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return path


TINY_MOE = {
    "model_type": "qwen3_moe",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_experts": 2,
    "num_experts_per_tok": 1,
    "vocab_size": 100,
    "tie_word_embeddings": False,
}


def _moe_shards(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(TINY_MOE))
    s1 = {
        "model.embed_tokens.weight": ("BF16", [100, 64]),  # 12,800 B
        "model.layers.0.self_attn.q_proj.weight": ("F8_E4M3", [64, 64]),  # 4,096 B
        "model.layers.0.self_attn.q_proj.weight_scale_inv": ("F32", [1, 1]),  # 4 B
        "model.layers.0.input_layernorm.weight": ("BF16", [64]),  # 128 B
        "model.layers.0.mlp.gate.weight": ("BF16", [2, 64]),
    }  # 256 B
    s2 = {
        f"model.layers.{i}.mlp.experts.{e}.{p}.weight": ("BF16", [32, 64] if p != "down_proj" else [64, 32])
        for i in (0, 1)
        for e in (0, 1)
        for p in ("gate_proj", "up_proj", "down_proj")
    }  # 12 × 4,096 B
    s2["lm_head.weight"] = ("BF16", [100, 64])  # 12,800 B
    s2["model.layers.2.mtp_proj.weight"] = ("BF16", [64, 64])  # MTP layer: 8,192 B
    write_safetensors(folder / "model-00001-of-00002.safetensors", s1)
    write_safetensors(folder / "model-00002-of-00002.safetensors", s2)
    wm = {n: "model-00001-of-00002.safetensors" for n in s1}
    wm.update({n: "model-00002-of-00002.safetensors" for n in s2})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 87_508}, "weight_map": wm})
    )


def test_safetensors_exact_bytes_by_dtype_group_and_experts(tmp_path):
    _moe_shards(tmp_path / "m")
    m = load_safetensors(tmp_path / "m")
    experts = 12 * 32 * 64 * 2
    assert m.expert_bytes == experts == 49_152
    assert m.weights_bytes == 12_800 + 4_096 + 4 + 128 + 256 + experts + 12_800 + 8_192 == 87_428
    assert dict(m.bytes_by_dtype) == {"BF16": 12_800 + 128 + 256 + experts + 12_800 + 8_192, "F8_E4M3": 4_096, "F32": 4}
    assert dict(m.weights_bytes_by_group) == {
        "embedding": 12_800,
        "attention": 4_100,
        "norms": 128,
        "moe_other": 256,
        "routed_experts": experts,
        "lm_head": 12_800,
        "mtp": 8_192,
    }
    assert m.text_weights_bytes() == 87_428 - 8_192
    assert m.bytes_by_layer[1] == 6 * 4_096
    assert sum(t.is_expert for t in m.tensors) == 12
    assert any("total_size = 87,508" in n for n in m.notes)  # the index's figure disagrees: noted
    assert m.architecture.mlp.moe_layers == 2


def test_plan_for_a_checkpoint_leaves_its_mtp_layers_out(tmp_path):
    # the MTP layer (layer 2 of a 2-layer model: 8,192 B) loads only for speculative decoding
    _moe_shards(tmp_path / "m")
    m = load_safetensors(tmp_path / "m")
    kw = dict(gpu="h100-sxm", gpus=1, context="4k")
    plain, with_mtp = plan_for_loaded(m, **kw), plan_for_loaded(m, include_mtp=True, **kw)
    assert with_mtp.total.weights_bytes - plain.total.weights_bytes == 8_192
    assert plain.total.weights_bytes == 87_428 - 8_192
    assert plain.total.kv_cache_bytes == with_mtp.total.kv_cache_bytes
    assert any("MTP" in n for n in plain.notes)


def test_single_safetensors_file_without_config(tmp_path):
    p = write_safetensors(tmp_path / "w.safetensors", {"a": ("F4", [3, 5]), "b": ("U8", [7])})
    m = load_safetensors(p)
    assert m.weights_bytes == 8 + 7  # 15 four-bit values round up to 8 bytes
    assert m.architecture is None
    with pytest.raises(K3InputError) as exc:
        plan_for_loaded(m)
    assert exc.value.field == "config"


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda b: b[:4], "truncated"),
        (lambda b: struct.pack("<Q", 10**12) + b[8:], "exceeds the format's limit"),
        (lambda b: struct.pack("<Q", 10**6) + b[8:], "truncated"),
        (lambda b: b[:8] + b"{" * (len(b) - 8), "invalid JSON"),
        (lambda b: b[:-1], "truncated"),
    ],
)
def test_damaged_safetensors_headers(tmp_path, damage, match):
    p = write_safetensors(tmp_path / "w.safetensors", {"x": ("BF16", [4, 4])})
    p.write_bytes(damage(p.read_bytes()))
    t0 = time.perf_counter()
    with pytest.raises(K3InputError, match=match):
        load_safetensors(p)
    assert time.perf_counter() - t0 < 1.0


def test_safetensors_offsets_must_match_the_shape(tmp_path):
    header = {"x": {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 30]}}
    raw = json.dumps(header).encode()
    p = tmp_path / "w.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 32)
    with pytest.raises(K3InputError, match="30 bytes stored, 32 expected"):
        load_safetensors(p)


def test_safetensors_index_must_match_the_shards(tmp_path):
    _moe_shards(tmp_path / "m")
    (tmp_path / "m" / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(K3InputError, match="missing"):
        load_safetensors(tmp_path / "m")
    _moe_shards(tmp_path / "n")
    idx = json.loads((tmp_path / "n" / "model.safetensors.index.json").read_text())
    idx["weight_map"]["model.layers.9.ghost.weight"] = "model-00001-of-00002.safetensors"
    (tmp_path / "n" / "model.safetensors.index.json").write_text(json.dumps(idx))
    with pytest.raises(K3InputError, match="in no shard"):
        load_safetensors(tmp_path / "n")


def test_plan_and_cli_for_safetensors(tmp_path, capsys):
    _moe_shards(tmp_path / "m")
    plan = plan_for_loaded(load_safetensors(tmp_path / "m"), gpus=1, context=1024)
    assert plan.total.weights_bytes == 87_428 - 8_192  # the file's bytes less its MTP layer
    assert main(["estimate", "--safetensors", str(tmp_path / "m"), "--gpus", "1", "--context", "1024", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "vllm" and out["core_per_gpu"]["weights_bytes"] == 87_428 - 8_192
    assert (
        main(
            [
                "estimate",
                "--safetensors",
                str(tmp_path / "m"),
                "--gpus",
                "1",
                "--context",
                "1024",
                "--engine",
                "generic",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["weights_bytes"] == 87_428 - 8_192


def test_load_path_detects_the_format(tmp_path):
    _moe_shards(tmp_path / "m")
    assert load_path(tmp_path / "m").file_format == "safetensors"
    assert load_path(write_llama_gguf(tmp_path / "t.gguf")).file_format == "gguf"
    assert load_path(FIXTURES / "llama-3.1-8b.json").file_format == "config"


@pytest.mark.parametrize(
    "name, group",
    [
        ("model.layers.3.mlp.experts.17.down_proj.weight", "routed_experts"),
        ("model.layers.3.mlp.shared_experts.up_proj.weight", "shared_experts"),
        ("model.layers.3.mlp.gate.weight", "moe_other"),
        ("model.layers.3.mlp.gate_proj.weight", "dense_mlp"),
        ("model.layers.3.self_attn.kv_a_proj_with_mqa.weight", "attention"),
        ("model.layers.3.self_attn.q_norm.weight", "attention"),
        ("model.layers.3.post_attention_layernorm.weight", "norms"),
        ("model.norm.weight", "norms"),
        ("vision_tower.blocks.0.attn.qkv.weight", "vision"),
        ("blk.5.ffn_gate_inp.weight", "moe_other"),
        ("blk.5.ffn_up_shexp.weight", "shared_experts"),
        ("blk.5.attn_q_norm.weight", "attention"),
        ("blk.5.ssm_conv1d.weight", "attention"),
        ("output_norm.weight", "norms"),
    ],
)
def test_tensor_groups(name, group):
    assert tensor_group(name) == group
