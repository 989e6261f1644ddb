"""Careless and hostile config.json files (issue 14): each ends in a model or one
K3InputError naming the field, fast, never a TypeError/RecursionError or a silent number."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3lib.core.errors import K3InputError
from k3lib.loaders import load_config, plan_for_loaded

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "configs"
DEEPSEEK = json.loads((FIXTURES / "deepseek-v3.json").read_text())  # 61 layers, 128 heads, MLA
LLAMA = json.loads((FIXTURES / "llama-3.1-70b.json").read_text())  # 80 layers, 64 heads / 8 KV heads


def _write(tmp_path: Path, cfg: dict) -> Path:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize(
    "base, patch, field",
    [
        (DEEPSEEK, {"max_position_embeddings": [32]}, "config.max_position_embeddings"),
        (DEEPSEEK, {"max_position_embeddings": 0}, "config.max_position_embeddings"),  # issue 21: not a silent 4,096
        (LLAMA, {"max_position_embeddings": None}, "config.max_position_embeddings"),
        (LLAMA, {"max_position_embeddings": 2.5e5}, "config.max_position_embeddings"),
        (DEEPSEEK, {"qk_nope_head_dim": None}, "config.qk_nope_head_dim"),
        (DEEPSEEK, {"v_head_dim": [1]}, "config.v_head_dim"),
        (DEEPSEEK, {"first_k_dense_replace": "3"}, "config.first_k_dense_replace"),
        (DEEPSEEK, {"q_lora_rank": "x"}, "config.q_lora_rank"),
        (DEEPSEEK, {"n_shared_experts": "1"}, "config.n_shared_experts"),
        (DEEPSEEK, {"first_k_dense_replace": 1000}, "config.first_k_dense_replace"),  # 1000 dense of 61 layers
        (DEEPSEEK, {"num_experts_per_tok": 257}, "config.num_experts_per_tok"),  # 256 routed experts
        (LLAMA, {"quantization_config": {"quant_method": "gptq", "bits": "4"}}, "config.quantization_config.bits"),
        (LLAMA, {"quantization_config": {"quant_method": "awq", "bits": 5}}, "config.quantization_config.bits"),
        (LLAMA, {"num_key_value_heads": 128}, "config.num_key_value_heads"),  # more KV heads than 64 heads
        (LLAMA, {"num_key_value_heads": 7}, "config.num_key_value_heads"),  # 7 does not divide 64
        (LLAMA, {"layer_types": ["full_attention"] * 79}, "config.layer_types"),  # 79 entries for 80 layers
        (LLAMA, {"num_hidden_layers": 10**9}, "config.num_hidden_layers"),
        (LLAMA, {"hidden_size": True}, "config.hidden_size"),
        (LLAMA, {"vision_config": {"hidden_size": "1152"}}, "config.vision_config.hidden_size"),
        (LLAMA, {"rope_scaling": {"rope_type": "linear", "factor": "8"}}, "config.rope_scaling.factor"),
    ],
)
def test_issue_cases_give_one_named_error(tmp_path, base, patch, field):
    path = _write(tmp_path, {**base, **patch})
    t0 = time.perf_counter()
    with pytest.raises(K3InputError) as err:
        load_config(path)
    assert time.perf_counter() - t0 < 1.0
    assert err.value.field == field, str(err.value)
    assert "\n" not in str(err.value)


def test_gptq_8_bit_is_one_byte_per_weight_not_bf16(tmp_path):
    m = load_config(_write(tmp_path, {**LLAMA, "quantization_config": {"quant_method": "gptq", "bits": 8}}))
    from k3lib.core.precisions import get_weight_format

    # 8-bit GPTQ is 1 byte per weight plus the group-128 fp16 scale and packed zero (24 bits per group)
    assert get_weight_format(m.architecture.native_formats["attention"]).bits_per_weight == 8 + 24 / 128


def test_json_nested_100k_deep_is_a_named_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    with pytest.raises(K3InputError) as err:
        load_config(path)
    assert err.value.field == "config" and "nested" in str(err.value)


def test_good_configs_still_load():
    for cfg in (DEEPSEEK, LLAMA):
        assert load_config(FIXTURES / ("deepseek-v3.json" if cfg is DEEPSEEK else "llama-3.1-70b.json"))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda k: st.lists(k, max_size=3) | st.dictionaries(st.text(max_size=4), k, max_size=3),
    max_leaves=6,
)
FIELDS = sorted(
    set(DEEPSEEK)
    | set(LLAMA)
    | {
        "layer_types",
        "sliding_window",
        "vision_config",
        "linear_attn_config",
        "full_attention_interval",
        "rope_scaling",
        "quantization_config",
    }
)


@settings(max_examples=60, deadline=1000, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.sampled_from([DEEPSEEK, LLAMA]),
    patch=st.dictionaries(st.sampled_from(FIELDS), JSONISH, min_size=1, max_size=3),
)
def test_mutated_configs_give_a_model_or_a_named_error(tmp_path, base, patch):
    path = _write(tmp_path, {**base, **patch})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        try:
            m = load_config(path)
            plan_for_loaded(m, gpu="h100-sxm", gpus=8)
        except K3InputError as exc:
            assert str(exc).startswith("config") or ":" in str(exc)
        assert time.perf_counter() - t0 < 1.0
