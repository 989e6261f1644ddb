"""Notebook 00's exercises: each folded answer's value against one worked by hand from the
models' config numbers (the formula in the comment), not from the function the lesson calls."""

from __future__ import annotations

import pytest
from exercises import answers, exercise_ids

STEM = "00-vram-anatomy"
GiB = 2**30


def test_at_least_three_exercises_all_answered():
    ids = exercise_ids(STEM)
    assert len(ids) >= 3 and sorted(ids) == sorted(answers(STEM))


def test_00_1_llama_70b_bf16_weights():
    D, L, I_mlp, V = 8192, 80, 28672, 128256
    per_layer = 2 * D * 64 * 128 + 2 * D * 8 * 128 + 3 * D * I_mlp + 2 * D  # q, o; k, v; gate, up, down; 2 norms
    params = L * per_layer + 2 * V * D + D  # + embedding, lm_head, final norm
    assert params == 70_553_706_496
    value, unit = answers(STEM)["00-1"]
    assert unit == "GiB" and value == pytest.approx(params * 2 / GiB, abs=0.01)  # 131.42 GiB


def test_00_2_k3_kv_fp8_256k_one_copy():
    mla = 24 * (512 + 64) * 1 * 262_144  # 24 MLA layers × (latent + rope key) × 1 B × T
    kda = 69 * (96 * 128 * 128 + 110_592) * 4  # 69 KDA layers' state and conv in FP32, per sequence
    value, unit = answers(STEM)["00-2"]
    assert unit == "GiB" and value == pytest.approx((mla + kda) / GiB, abs=0.01)  # 3.81 GiB


def test_00_3_k3_kv_copies_summed_on_16_gpus():
    mla_one = 24 * (512 + 64) * 1 * 262_144
    kda = 69 * (96 * 128 * 128 + 110_592) * 4
    value, unit = answers(STEM)["00-3"]
    assert unit == "GiB" and value == pytest.approx((8 * mla_one + kda) / GiB, abs=0.01)  # 27.43 GiB
