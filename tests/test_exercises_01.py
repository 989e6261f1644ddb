"""Notebook 01's exercises: each folded answer's value against one worked by hand from the
models' config numbers (the formula in the comment), not from the function the lesson calls."""

from __future__ import annotations

import pytest
from exercises import answers, exercise_ids

STEM = "01-weights"
GiB = 2**30
ROUTED = 92 * 896 * 3 * 3584 * 3072  # K3: MoE layers × experts × (gate, up, down) × latent 3,584 × width 3,072


def test_at_least_three_exercises_all_answered():
    ids = exercise_ids(STEM)
    assert len(ids) >= 3 and sorted(ids) == sorted(answers(STEM))


def test_01_1_k3_routed_experts_in_mxfp4():
    value, unit = answers(STEM)["01-1"]
    assert unit == "GiB" and value == pytest.approx(ROUTED * (8 * 17 / 32) / 8 / GiB, abs=0.01)  # 1,347.12 GiB


def test_01_2_q4k_instead_of_mxfp4():
    value, unit = answers(STEM)["01-2"]
    extra_bits = 8 * 144 / 256 - 8 * 17 / 32  # 4.5 − 4.25 bits per weight
    assert unit == "GiB" and value == pytest.approx(ROUTED * extra_bits / 8 / GiB, abs=0.01)  # 79.24 GiB


def test_01_3_llama_70b_q4_k_m():
    value, unit = answers(STEM)["01-3"]
    assert unit == "GiB" and value == pytest.approx(70_553_706_496 * 4.5 / 8 / GiB, abs=0.01)  # 36.96 GiB
