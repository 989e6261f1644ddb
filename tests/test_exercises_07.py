"""Notebook 07's exercises: each folded answer's value, derived here by hand from the figures the
guides print — never from the function the notebook calls.

Guide 000 ("Kimi K3 VRAM Requirements"): BF16 weights 594, Q2 225 (read as GiB: its KV formula
divides by 1024^3); 262,144 B of KV per token at BF16, 131,072 at FP8; activation 10 GiB; overhead
48 GiB in its worked example, "at least 8 GB per GPU" as its rule; H100 80 GB; 2.8T parameters.
Guide 004 ("How to Deploy Kimi K3 Locally"): the FP16 row's weights, 5,476.2 GB.
"""

import math

import pytest
from exercises import answers, assert_answered

STEM = "07-guide-audit"
GiB = 2**30


def test_at_least_three_exercises_all_answered():
    assert_answered(STEM)


def test_07_1_fp8_cache_at_512k_needs_ten_gpus():
    # W + KV_fp8(512K) + A ≤ (80 − 8)·G: KV = 131,072 B × 524,288 tokens / 2^30 = 64 GiB;
    # (594 + 64 + 10) / 72 = 9.28 → 10 GPUs (not the FAQ's 8)
    kv_gib = 131_072 * 524_288 / GiB
    want = math.ceil((594 + kv_gib + 10) / (80 - 8))
    value, unit = answers(STEM)["07-1"]
    assert (kv_gib, want) == (64.0, 10)
    assert unit == "GPUs" and value == want


def test_07_2_guide_000_bf16_figure_is_under_two_bits():
    # 594 GiB × 8 bits / 2.8·10^12 parameters = 1.82 bits per parameter
    want = 594 * GiB * 8 / 2.8e12
    value, unit = answers(STEM)["07-2"]
    assert unit == "bits" and value == pytest.approx(want, abs=0.005)


def test_07_3_guide_004_fp16_row_is_two_bytes_per_parameter():
    # 5,476.2 GB × 8 bits / 2.8·10^12 parameters = 15.65 bits (≈ 16: FP16)
    want = 5_476.2e9 * 8 / 2.8e12
    value, unit = answers(STEM)["07-3"]
    assert unit == "bits" and value == pytest.approx(want, abs=0.005)


def test_07_4_activation_that_fits_both_cases():
    # case 1: 78.8 − 594/8 · (Q8: 56.3) − 128/8 = 78.8 − 56.3 − 16 = 6.5 GiB left per GPU on 8 GPUs;
    # case 2: 77.2 − 325/5 − (FP8 KV at 128K: 131,072 × 131,072 / 2^30 = 16) / 5 = 9.0 on 5 GPUs.
    # A/8 + O = 6.5 and A/5 + O = 9.0 → A = 2.5 / (1/5 − 1/8) = 33.33 GiB
    left_1 = 78.8 - 56.3 - 128 / 8
    left_2 = 77.2 - 325 / 5 - 131_072 * 131_072 / GiB / 5
    want = (left_2 - left_1) / (1 / 5 - 1 / 8)
    value, unit = answers(STEM)["07-4"]
    assert left_1 == pytest.approx(6.5) and left_2 == pytest.approx(9.0)
    assert unit == "GiB" and value == pytest.approx(want, abs=0.01)


def test_07_5_reference_table_low_end_is_291():
    # 225 + 131,072 B × 65,536 tokens / 2^30 (= 8) + 10 + 48 = 291 GiB, the guide's "~291 GB (Q2, 64K)"
    want = 225 + 131_072 * 65_536 / GiB + 10 + 48
    value, unit = answers(STEM)["07-5"]
    assert want == 291
    assert unit == "GiB" and value == pytest.approx(want)
