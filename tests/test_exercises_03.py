"""Notebook 03's exercises: each folded answer's value, derived here by hand from the models'
configs and data/hardware.csv — never from the function the lesson calls.

Llama 3.1 70B (meta-llama config): L = 80 layers, K = 8 KV heads, H = 128, BF16 (2 B).
Kimi K3 (data/models/kimi-k3.json): 24 MLA layers caching kv_lora_rank 512 + rope 64 elements per
token; 92 MoE layers of 896 routed experts, each 3 · 3,584 (latent) · 3,072 weights, in MXFP4
(4 bits + one 8-bit scale per 32 weights = 4.25 bits). H200 SXM: 140.4 GiB usable, 8 per node.
"""

import math
from pathlib import Path

import pytest
from exercises import answers, assert_answered, usable_gib

STEM = "03-tensor-parallel"
ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def test_at_least_three_exercises_all_answered():
    assert_answered(STEM)


def test_03_1_gqa_cache_stops_splitting_at_k_heads():
    # K and V, 80 layers, 8 heads of 128, 2 B: 327,680 B/token; × 131,072 tokens = 40 GiB;
    # split over min(TP, K) = min(16, 8) = 8 ranks → 5 GiB per GPU
    per_token = 2 * 80 * 8 * 128 * 2
    want = per_token * 131_072 / min(16, 8) / GiB
    value, unit = answers(STEM)["03-1"]
    assert (per_token, want) == (327_680, 5.0)
    assert unit == "GiB" and value == pytest.approx(want)


def test_03_2_communicator_buffers_flat_in_tp():
    # vLLM 0.19 on H100 measured 2.1–2.2 GiB of non-torch memory per GPU at TP=2 and at TP=4; the
    # workbook charges the midpoint, 2.15 GiB, once a GPU has peers — not (TP−1) × a per-peer figure
    value, unit = answers(STEM)["03-2"]
    assert unit == "GiB" and value == pytest.approx(2.15)
    text = (ROOT / "notebooks" / f"{STEM}.ipynb").read_text()
    assert "7.5 GiB" not in text and "grow with TP" not in text


def test_03_3_mla_latent_on_every_tp_rank():
    # 24 layers × (512 + 64) elements × 2 B = 27,648 B/token; × 1,048,576 tokens = 27 GiB, whole on each rank
    want = 24 * (512 + 64) * 2 * 1_048_576 / GiB
    value, unit = answers(STEM)["03-3"]
    assert want == 27.0 and unit == "GiB" and value == pytest.approx(want)


def test_03_4_k3_needs_two_h200_nodes():
    # routed experts alone: 92 · 896 · 3 · 3,584 · 3,072 weights × 4.25 bits / 8 = 1,347.1 GiB,
    # more than one node's 8 × 140.4 = 1,123.2 GiB → at least 2 nodes; on 2 nodes each GPU holds
    # 1,347.1 / 16 = 84.2 GiB of experts, leaving 56 GiB for the rest (non-expert weights ≈ 57B
    # parameters in BF16 = 106 GiB ÷ 16 GPUs ≈ 6.6 GiB, cache, buffers) → 2 suffice
    experts_gib = 92 * 896 * 3 * 3584 * 3072 * 4.25 / 8 / GiB
    usable = usable_gib("h200-sxm")
    assert experts_gib == pytest.approx(1347.1, abs=0.1)
    at_least = math.ceil(experts_gib / (8 * usable))
    value, unit = answers(STEM)["03-4"]
    assert at_least == 2 and experts_gib / 16 < usable - 50
    assert unit == "nodes" and value == at_least
