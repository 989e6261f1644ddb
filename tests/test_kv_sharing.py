"""KV-sharing layers (Gemma-3n / Gemma 4 ``num_kv_shared_layers``, ``global_head_dim``) and
MTP modules (``num_nextn_predict_layers``): which layers own a cache, and what the weights count.

Every expected figure is worked by hand from the config's numbers (shown beside it) or is
a published figure, never the function's own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.memory import kv_bytes_per_rank, weights_bytes
from k3lib.core.plan import make_plan
from k3lib.core.sweep import sweep
from k3lib.loaders.hf_config import architecture_from_hf_config

CONFIGS = Path(__file__).resolve().parent.parent / "data" / "configs"


def _gemma3n() -> dict:
    return json.loads((CONFIGS / "gemma-3n-e4b.transformers-defaults.json").read_text())


def test_gemma3n_e4b_kv_owning_layers_by_hand():
    # 35 layers, full at i = 4, 9, …, 34 (7 full, 28 sliding); the last 15 (20…34) share.
    # Owning: layers 0…19 → full 4, 9, 14, 19 = 4; sliding 20 − 4 = 16.
    arch = architecture_from_hf_config(_gemma3n(), id="gemma-3n-e4b")
    assert arch.kv_layers() == {"sliding": 16, "full": 4}
    shared = sorted((g.kind, g.count) for g in arch.attention if g.kv_shared)
    assert shared == [("full", 3), ("sliding", 12)]


def test_gemma3n_e4b_kv_bytes_per_token_by_hand():
    arch = architecture_from_hf_config(_gemma3n(), id="gemma-3n-e4b")
    # one layer, one token, BF16: 2 (K and V) × 2 KV heads × 256 head dim × 2 B = 2,048 B
    per_layer = 2 * 2 * 256 * 2
    assert per_layer == 2048
    # growing cache: 4 owning full layers × 2,048 B = 8,192 B per token (7 × 2,048 = 14,336 before)
    assert arch.kv_bytes_per_token(2) == 8192
    # 32,768 tokens, batch 1: 8,192 × 32,768 + 16 sliding layers × 2,048 B × 512-token window
    expected = 8192 * 32768 + 16 * 2048 * 512
    assert expected == 285_212_672
    assert arch.kv_cache_bytes(context_tokens=32768, batch=1, bytes_per_element=2) == expected


def test_gemma3n_without_sharing_allocates_75_percent_more_window_bytes():
    cfg = _gemma3n()
    cfg["text_config"]["num_kv_shared_layers"] = 0
    plain = architecture_from_hf_config(cfg, id="no-sharing")
    shared = architecture_from_hf_config(_gemma3n(), id="sharing")

    def window(a):
        return a.kv_cache_bytes(context_tokens=512, batch=1, bytes_per_element=2) - 512 * a.kv_bytes_per_token(2)

    assert window(shared) == 16 * 2048 * 512
    assert window(plain) == 28 * 2048 * 512  # 28 / 16 = 1.75: the +75 % the issue names


def test_plan_and_sweep_count_only_owning_layers():
    arch = architecture_from_hf_config(_gemma3n(), id="gemma-3n-e4b")
    plan = make_plan(model=arch, gpu="h100-sxm", gpus=1, weights="bf16", kv_dtype="bf16", context="32k")
    assert plan.per_gpu.kv_cache_bytes == 8192 * 32768 + 16 * 2048 * 512
    # TP=2: 2 KV heads split, one per rank → half of each layer's cache
    assert kv_bytes_per_rank(arch, context_tokens=32768, batch=1, bytes_per_element=2, tp=2) == 285_212_672 // 2


def test_gemma4_global_head_dim_and_global_kv_heads():
    # A Gemma-4-shaped config (fields as transformers Gemma4TextConfig and vLLM gemma4.py read them):
    # 12 layers, every 6th full, last 4 share; full layers: head dim 512, 1 KV head (attention_k_eq_v).
    cfg = {
        "model_type": "gemma4_text",
        "hidden_size": 1536,
        "num_hidden_layers": 12,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "global_head_dim": 512,
        "num_global_key_value_heads": 1,
        "attention_k_eq_v": True,
        "intermediate_size": 6144,
        "vocab_size": 262144,
        "sliding_window": 512,
        "num_kv_shared_layers": 4,
        "max_position_embeddings": 131072,
    }
    arch = architecture_from_hf_config(cfg, id="g4")
    # full at 5 and 11 (the last is forced full); first shared = 8 → owning: full {5}, sliding {0-4, 6, 7}
    assert arch.kv_layers() == {"sliding": 7, "full": 1}
    full = [g for g in arch.attention if g.kind == "full"]
    assert {g.head_dim for g in full} == {512} and {g.kv_heads for g in full} == {1}
    # growing: 1 layer × 2 × 1 head × 512 × 2 B = 2,048 B per token
    assert arch.kv_bytes_per_token(2) == 2048
    # sliding: 7 layers × 2 × 2 heads × 256 × 2 B × 512 tokens
    assert arch.kv_cache_bytes(context_tokens=512, batch=1, bytes_per_element=2) == 2048 * 512 + 7 * 2048 * 512


def test_gemma4_double_wide_mlp_widens_shared_layers():
    cfg = {
        "model_type": "gemma4_text",
        "hidden_size": 64,
        "num_hidden_layers": 6,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "intermediate_size": 120,
        "vocab_size": 1000,
        "sliding_window": 16,
        "num_kv_shared_layers": 2,
        "use_double_wide_mlp": True,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    }
    arch = architecture_from_hf_config(cfg, id="g4-small")
    # 4 layers of 120 + 2 of 240 = 960 over 6 layers: the dense MLP holds 3 · 64 · 960 weights
    assert arch.mlp.dense_layers * arch.mlp.dense_intermediate * 3 * 64 == 3 * 64 * 960


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"num_kv_shared_layers": 35}, "num_kv_shared_layers"),
        ({"num_kv_shared_layers": -1}, "num_kv_shared_layers"),
        ({"num_kv_shared_layers": "15"}, "num_kv_shared_layers"),
        ({"intermediate_size": [16384] * 34}, "intermediate_size"),
        ({"global_head_dim": 0}, "global_head_dim"),
    ],
)
def test_bad_sharing_fields_raise_one_named_error(bad, field):
    cfg = _gemma3n()
    cfg["text_config"].update(bad)
    with pytest.raises(K3InputError) as exc:
        architecture_from_hf_config(cfg, id="bad")
    assert field in exc.value.field


def test_sharing_needs_layer_positions_when_kinds_mix():
    cfg = {
        "model_type": "mistral",
        "hidden_size": 64,
        "num_hidden_layers": 4,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "intermediate_size": 128,
        "vocab_size": 100,
        "sliding_window": 8,
        "num_kv_shared_layers": 2,
        "head_dim": 32,
    }
    # mistral slides every layer: positions are known, the last 2 share
    assert architecture_from_hf_config(cfg, id="m").kv_layers() == {"sliding": 2}
    # gemma2 alternates by convention, but k3lib does not place its layers: refused, naming layer_types
    cfg["model_type"] = "gemma2"
    with pytest.raises(K3InputError) as exc:
        architecture_from_hf_config(cfg, id="g2")
    assert exc.value.field == "config.layer_types"


# ---------------------------------------------------------------- MTP modules


def _deepseek() -> dict:
    return json.loads((CONFIGS / "deepseek-v3.json").read_text())


def test_deepseek_v3_main_model_is_the_published_671b():
    # github.com/deepseek-ai/DeepSeek-V3@0b39205a README_WEIGHTS.md: main model 671B (61 layers)
    arch = architecture_from_hf_config(_deepseek(), id="deepseek-v3")
    assert arch.mtp_layers == 1
    assert abs(arch.params_total - 671e9) / 671e9 < 0.001


def test_deepseek_v3_mtp_module_is_the_published_11_5b():
    # README_WEIGHTS.md: the MTP module holds "11.5B unique parameters, excluding the shared
    # 0.9B Embedding and 0.9B output Head" (rounded to 0.1B; 1 % tolerance)
    arch = architecture_from_hf_config(_deepseek(), id="deepseek-v3")
    assert abs(arch.params_mtp - 11.5e9) / 11.5e9 < 0.01
    # the README's top-level note: 685B on Hugging Face = 671B main + 14B MTP, where the HF
    # files repeat the shared embedding and head inside layer 61 (2 × 129,280 × 7,168)
    on_hf = arch.params_checkpoint + 2 * 129280 * 7168
    assert abs(on_hf - 685e9) / 685e9 < 0.005


def test_mtp_allocates_no_kv_and_weights_leave_it_out_by_default():
    cfg = _deepseek()
    with_mtp = architecture_from_hf_config(cfg, id="with")
    cfg["num_nextn_predict_layers"] = 0
    without = architecture_from_hf_config(cfg, id="without")
    # MLA: 61 layers × (512 + 64) elements × 2 B, with or without the MTP module
    assert with_mtp.kv_bytes_per_token(2) == without.kv_bytes_per_token(2) == 61 * 576 * 2
    assert weights_bytes(with_mtp, "bf16") == weights_bytes(without, "bf16")
    # include_mtp adds exactly the MTP parameters at 2 B each
    assert (
        weights_bytes(with_mtp, "bf16", include_mtp=True) - weights_bytes(with_mtp, "bf16") == 2 * with_mtp.params_mtp
    )
    assert without.params_mtp == 0


def test_kimi_k3_declares_no_mtp_module():
    # data/configs/kimi-k3.json: "num_nextn_predict_layers": 0
    arch = architecture_from_hf_config(json.loads((CONFIGS / "kimi-k3.json").read_text()), id="k3")
    assert arch.mtp_layers == 0 and arch.params_mtp == 0


def test_sweep_equals_plan_for_a_kv_sharing_model():
    arch = architecture_from_hf_config(_gemma3n(), id="gemma-3n-e4b-test")
    for gpus, ctx in ((1, "32k"), (2, "4k")):
        res = sweep(
            models=[arch], gpus=["h100-sxm"], counts=[gpus], weights=["bf16"], kv_dtypes=["bf16"], contexts=[ctx]
        )
        plan = make_plan(model=arch, gpu="h100-sxm", gpus=gpus, weights="bf16", kv_dtype="bf16", context=ctx)
        assert int(res.total_bytes_per_gpu.ravel()[0]) == plan.per_gpu.total_bytes
