"""Notebook 02's exercises: each folded answer's value against one worked by hand from the
models' config numbers (the formula in the comment), not from the function the lesson calls."""

from __future__ import annotations

import pytest
from exercises import answers, exercise_ids

STEM = "02-kv-cache"
GiB = 2**30
K3_STATE = 69 * (96 * 128 * 128 + 110_592) * 4  # 69 KDA layers: 96 heads' 128×128 state + conv, FP32


def test_at_least_three_exercises_all_answered():
    ids = exercise_ids(STEM)
    assert len(ids) >= 3 and sorted(ids) == sorted(answers(STEM))


def test_02_1_k3_one_sequence_at_1m_fp8():
    value, unit = answers(STEM)["02-1"]
    # 24 MLA layers × (512 + 64) × 1 B × 1,048,576 tokens + the state
    assert unit == "GiB" and value == pytest.approx((24 * 576 * 1 * 1_048_576 + K3_STATE) / GiB, abs=0.01)  # 13.93


def test_02_2_sequences_in_40_gib():
    value, unit = answers(STEM)["02-2"]
    per_seq = 24 * 576 * 1 * 32_768 + K3_STATE  # K3, FP8, 32K: 917,618,688 B
    assert unit == "sequences" and value == 40 * GiB // per_seq == 46
    assert 40 * GiB // (2 * 80 * 8 * 128 * 2 * 32_768) == 4  # Llama 3.1 70B, BF16: 10 GiB each (stated in the answer)


def test_02_3_cache_read_per_decoded_token():
    value, unit = answers(STEM)["02-3"]
    assert unit == "GiB" and value == pytest.approx(2 * 80 * 8 * 128 * 2 * 131_072 / GiB, abs=0.01)  # 40 GiB
