"""Checkpoint formats a config declares in ``quantization_config``: bits per weight of each
method, which modules stay in the checkpoint dtype, and the totals against real published
checkpoint sizes (each figure's source is named beside it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.memory import weights_bytes
from k3lib.core.precisions import (
    bnb_4bit_bits_per_weight,
    compressed_tensors_int_bits_per_weight,
    get_weight_format,
    gptq_awq_bits_per_weight,
    mxfp4_bits_per_weight,
    row_scaled_8bit_bits_per_weight,
)
from k3lib.loaders.hf_config import architecture_from_hf_config

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "configs"
GiB = 2**30


def _cfg(name: str, **quant) -> dict:
    doc = json.loads((CONFIGS / name).read_text())
    if quant:
        doc["quantization_config"] = quant
    return doc


def _mistral_7b_v01(**quant) -> dict:
    # Mistral-7B-v0.1 differs from the v0.3 fixture only in its 32,000-token vocabulary
    # (https://huggingface.co/mistralai/Mistral-7B-v0.1 config.json: "vocab_size": 32000)
    doc = _cfg("mistral-7b-v0.3.mlc-transcription.json", **quant)
    doc["vocab_size"] = 32000
    return doc


# ---------------------------------------------------------------- bits per weight, by hand


def test_bits_per_weight_formulas_by_hand():
    # GPTQ/AWQ: 4-bit codes + FP16 scale + 4-bit zero per 128 → 4 + 20/128
    assert gptq_awq_bits_per_weight(4, 128) == 4.15625
    assert gptq_awq_bits_per_weight(8, 128) == 8 + 24 / 128
    assert gptq_awq_bits_per_weight(4, -1) == 4
    # compressed-tensors symmetric: scale only; asymmetric adds a 4-bit zero point
    assert compressed_tensors_int_bits_per_weight(4, 128) == 4 + 16 / 128
    assert compressed_tensors_int_bits_per_weight(4, 32, symmetric=False) == 4 + 20 / 32
    # bitsandbytes 4-bit: 64 weights = 32 B + FP32 absmax (36 B) → 4.5; double quant: 32 B + 1 B
    # + 4 B per 256 blocks → (32 + 1 + 4/256) · 8 / 64
    assert bnb_4bit_bits_per_weight(double_quant=False) == 36 * 8 / 64
    assert bnb_4bit_bits_per_weight(double_quant=True) == (32 + 1 + 4 / 256) * 8 / 64
    # one FP32 scale per output row over K = 4096 inputs
    assert row_scaled_8bit_bits_per_weight(4096) == 8 + 32 / 4096
    # MXFP4: 17 bytes per 32 weights
    assert mxfp4_bits_per_weight() == 17 * 8 / 32
    for fmt, bits in (
        ("bnb-nf4", (32 + 1 + 4 / 256) * 8 / 64),
        ("bnb-nf4-nodq", 4.5),
        ("bnb-int8", 8),
        ("fbgemm-fp8", 8),
        ("ct-int4-g128", 4.125),
        ("gptq-int8-g128", 8.1875),
        ("gptq-int4-g32", 4 + 20 / 32),
        ("awq-int4-g64", 4 + 20 / 64),
        ("ct-int4-g32-asym", 4 + 20 / 32),
        ("fbgemm-fp8:124/126", (124 * 8 + 2 * 16) / 126),
    ):
        assert get_weight_format(fmt).bits_per_weight == pytest.approx(bits, abs=1e-12), fmt


# ---------------------------------------------------------------- GPTQ / AWQ vs TheBloke's files

# TheBloke/Mistral-7B-Instruct-v0.1-GPTQ README, "Provided files" table (branch sizes, GB):
# https://huggingface.co/TheBloke/Mistral-7B-Instruct-v0.1-GPTQ
GPTQ_BRANCHES = [(4, 128, 4.16), (4, 32, 4.57), (8, 128, 7.68), (8, 32, 8.17)]
# g_idx: one int32 per input row of each of the 7 linears, 32 layers: q/k/v/o/gate/up have 4,096 inputs, down 14,336
G_IDX_BYTES = 32 * (6 * 4096 + 14336) * 4


@pytest.mark.parametrize("bits, group, published_gb", GPTQ_BRANCHES)
def test_gptq_mistral_7b_matches_thebloke_branch_sizes(bits, group, published_gb):
    arch = architecture_from_hf_config(
        _mistral_7b_v01(quant_method="gptq", bits=bits, group_size=group, desc_act=True, sym=True), id="m7b-gptq"
    )
    predicted = weights_bytes(arch, "native") + G_IDX_BYTES
    # the README rounds to 0.01 GB (±0.12 %); 0.3 % covers it and the tokenizer files it may include
    assert abs(predicted / 1e9 - published_gb) / published_gb < 0.003


def test_awq_mistral_7b_matches_thebloke_size():
    # TheBloke/Mistral-7B-v0.1-AWQ README "Provided files": main, 4 bits, GS 128, 4.15 GB
    # https://huggingface.co/TheBloke/Mistral-7B-v0.1-AWQ
    arch = architecture_from_hf_config(
        _mistral_7b_v01(quant_method="awq", bits=4, group_size=128, version="gemm", zero_point=True), id="m7b-awq"
    )
    assert arch.native_formats["attention"] == "int4-awq" and "lm_head" not in arch.native_formats
    assert abs(weights_bytes(arch, "native") / 1e9 - 4.15) / 4.15 < 0.003


def test_gptq_by_hand_for_mistral_7b_g128():
    # linears: 32 × (q 4096² + k,v 4096·1024 + o 4096² + 3 · 4096 · 14336) = 6,979,321,856 weights
    linear = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    assert linear == 6_979_321_856
    fp16 = 2 * 32000 * 4096 + (2 * 32 + 1) * 4096  # embedding + lm_head + norms, 2 B each
    expected = linear * (4 + 20 / 128) / 8 + fp16 * 2
    arch = architecture_from_hf_config(_mistral_7b_v01(quant_method="gptq", bits=4, group_size=128), id="m")
    assert weights_bytes(arch, "native") == int(expected)


# ---------------------------------------------------------------- compressed-tensors vs llm-compressor


def test_compressed_tensors_w4a16_llama_31_8b_exact_bytes():
    # llm-compressor's W4A16 example on meta-llama/Llama-3.1-8B-Instruct: 5,700,595,200 bytes
    # (model.safetensors.index.json total_size; github.com/vllm-project/llm-compressor issue #1215).
    # W4A16 = INT4 weights, group 128, symmetric, ignore lm_head.
    quant = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "ignore": ["lm_head"],
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "int", "symmetric": True, "group_size": 128, "strategy": "group"},
            }
        },
    }
    arch = architecture_from_hf_config(_cfg("llama-3.1-8b.json", **quant), id="l8-w4a16")
    assert arch.native_formats["attention"] == arch.native_formats["dense_mlp"] == "ct-int4-g128"
    assert "lm_head" not in arch.native_formats
    # by hand: linears 32 × (4096² · 2 + 4096·1024 · 2 + 3 · 4096 · 14336) at 4 + 16/128 bits,
    # embedding and lm_head 128,256 × 4,096 and 65 norms of 4,096 at 2 B
    linear = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    by_hand = linear * 4.125 / 8 + (2 * 128256 * 4096 + 65 * 4096) * 2
    weight_shape = 32 * 7 * 2 * 8  # one int64[2] weight_shape per quantized linear
    assert by_hand + weight_shape == 5_700_595_200
    assert weights_bytes(arch, "native") + weight_shape == 5_700_595_200


def test_compressed_tensors_asymmetric_and_channelwise_ids():
    w = {"num_bits": 4, "type": "int", "symmetric": False, "group_size": 32}
    arch = architecture_from_hf_config(
        _cfg(
            "llama-3.1-8b.json",
            quant_method="compressed-tensors",
            config_groups={"g": {"weights": w}},
            ignore=["lm_head"],
        ),
        id="a",
    )
    assert arch.native_formats["attention"] == "ct-int4-g32-asym"
    w = {"num_bits": 4, "type": "int", "strategy": "channel"}
    arch = architecture_from_hf_config(
        _cfg("llama-3.1-8b.json", quant_method="compressed-tensors", config_groups={"g": {"weights": w}}), id="c"
    )
    assert arch.native_formats["lm_head"] == "ct-int4-gch"  # not ignored: quantized too


# ---------------------------------------------------------------- MXFP4 vs the gpt-oss model card


@pytest.mark.parametrize("name, published_gib", [("gpt-oss-120b.json", 60.8), ("gpt-oss-20b.json", 12.8)])
def test_mxfp4_gpt_oss_matches_model_card_checkpoint_size(name, published_gib):
    # OpenAI gpt-oss model card (https://arxiv.org/abs/2508.10925), Table 1 "Checkpoint Size":
    # 60.8 GiB (120b), 12.8 GiB (20b); experts MXFP4, the rest BF16 (config modules_to_not_convert)
    arch = architecture_from_hf_config(_cfg(name), id=name)
    assert abs(weights_bytes(arch, "native") / GiB - published_gib) / published_gib < 0.003


# ---------------------------------------------------------------- fbgemm FP8: whole layers left out


def test_fbgemm_fp8_llama_405b_module_list():
    # huggingface/transformers@613b59f5 src/transformers/models/llama/quantize_fp8_llama.py: Meta's FP8
    # 405B leaves layers 0 and 125, every self_attn and lm_head unquantized
    mods = ["model.layers.0", "model.layers.125", "lm_head"] + [f"model.layers.{i}.self_attn" for i in range(1, 125)]
    arch = architecture_from_hf_config(
        _cfg("llama-3.1-405b.json", quant_method="fbgemm_fp8", modules_to_not_convert=mods, activation_scale_ub=1200.0),
        id="405-fp8",
    )
    nf = dict(arch.native_formats)
    assert "attention" not in nf and "lm_head" not in nf
    assert nf["dense_mlp"] == "fbgemm-fp8:124/126"
    # by hand: 124 MLPs of 3 · 16,384 · 53,248 at 1 B; everything else (2 MLPs, attention, embeddings,
    # norms) at 2 B
    mlp = 3 * 16384 * 53248
    total = 405_853_388_800  # Llama 3.1 405B parameters (models.csv check figure)
    assert weights_bytes(arch, "native") == pytest.approx(124 * mlp * 1 + (total - 124 * mlp) * 2, abs=16)


# ---------------------------------------------------------------- bitsandbytes


def test_bnb_4bit_tensor_shapes_of_a_published_checkpoint():
    # A saved NF4 checkpoint's tensor list (Gemma 3 1B, github.com/google/gemma.cpp issue #533):
    # mlp.up_proj.weight uint8 [3981312, 1] and .absmax [124416] for 1,152 × 6,912 weights
    n = 1152 * 6912
    assert n // 2 == 3_981_312 and n // 64 == 124_416
    # FP32 absmax (no double quantization): (n/2 + 4 · n/64) bytes = 4.5 bits per weight
    assert (n // 2 + 4 * (n // 64)) * 8 / n == get_weight_format("bnb-nf4-nodq").bits_per_weight


def test_bnb_configs_keep_lm_head_and_embeddings_in_16_bit():
    q = {
        "quant_method": "bitsandbytes",
        "load_in_4bit": True,
        "bnb_4bit_quant_type": "nf4",
        "bnb_4bit_use_double_quant": True,
        "llm_int8_skip_modules": None,
    }
    arch = architecture_from_hf_config(_cfg("llama-3.1-8b.json", **q), id="l8-nf4")
    nf = dict(arch.native_formats)
    assert nf["attention"] == nf["dense_mlp"] == "bnb-nf4" and "lm_head" not in nf and nf["*"] == "bf16"
    linear = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
    by_hand = linear * (32 + 1 + 4 / 256) / 64 + (2 * 128256 * 4096 + 65 * 4096) * 2
    assert weights_bytes(arch, "native") == pytest.approx(by_hand, abs=1)
    q8 = {"quant_method": "bitsandbytes", "load_in_8bit": True, "llm_int8_skip_modules": ["lm_head", "mlp"]}
    arch = architecture_from_hf_config(_cfg("llama-3.1-8b.json", **q8), id="l8-int8")
    # "mlp" names a component of every MLP and expert module: only attention is 8-bit
    assert dict(arch.native_formats) == {"attention": "bnb-int8", "*": "bf16"}


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "quant, field",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 0}, "quantization_config.group_size"),
        ({"quant_method": "gptq", "bits": 4, "group_size": "128"}, "quantization_config.group_size"),
        ({"quant_method": "bitsandbytes", "load_in_4bit": "yes"}, "quantization_config.load_in_4bit"),
        (
            {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "int3"},
            "quantization_config.bnb_4bit_quant_type",
        ),
        (
            {"quant_method": "fbgemm_fp8", "modules_to_not_convert": "lm_head"},
            "quantization_config.modules_to_not_convert",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"weights": {"num_bits": 4, "group_size": -5}}},
            },
            "quantization_config.config_groups.g.weights.group_size",
        ),
    ],
)
def test_bad_quantization_fields_raise_one_named_error(quant, field):
    with pytest.raises(K3InputError) as exc:
        architecture_from_hf_config(_cfg("llama-3.1-8b.json", **quant), id="bad")
    assert exc.value.field == "config." + field


def test_mixed_format_id_is_checked():
    with pytest.raises(K3InputError):
        get_weight_format("fbgemm-fp8:0/126")
    with pytest.raises(K3InputError):
        get_weight_format("native:1/2")
