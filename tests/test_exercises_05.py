"""Notebook 05's exercises: each folded answer's value, derived here by hand from the rules the
lesson states, data/hardware.csv and Kimi K3's config — never from the function the lesson calls.

H200 SXM: 140.4 GiB usable (data/hardware.csv). K3: 24 MLA layers caching kv_lora_rank 512 + rope
64 elements per token (data/models/kimi-k3.json); FP8: 1 byte per element.
"""

from pathlib import Path

import pytest
from exercises import answers, assert_answered, usable_gib

STEM = "05-decision-checklist"
ROOT = Path(__file__).resolve().parents[1]
GiB = 2**30


def test_at_least_three_exercises_all_answered():
    assert_answered(STEM)


def test_05_1_real_budget():
    # B = G·C − G·O = 16 × 140.4 − 16 × 8 = 2,118.4 GiB
    want = 16 * usable_gib("h200-sxm") - 16 * 8
    value, unit = answers(STEM)["05-1"]
    assert unit == "GiB" and value == pytest.approx(want, abs=0.01) and round(want, 1) == 2118.4


def test_05_2_tokens_per_gib_of_fp8_cache():
    # kv_tok = 24 × (512 + 64) × 1 B = 13,824 B; 2^30 / 13,824 = 77,672.3 tokens
    value, unit = answers(STEM)["05-2"]
    assert unit == "tokens" and value == pytest.approx(GiB / (24 * 576 * 1), rel=1e-9)


def test_05_3_recommended_max_model_len():
    # twice the workload, 2 × 40 × 1,024 = 81,920, rounded up to a power of two: 2^17 = 131,072
    need = 2 * 40 * 1024
    want = 1 << (need - 1).bit_length()
    value, unit = answers(STEM)["05-3"]
    assert want == 131_072 and unit == "tokens" and value == want


def test_05_4_test_at_half_then_double_then_cut():
    # 128K (half of 256K) ≤ 200K loads → 256K > 200K OOM → 256K × 0.75 = 192K ≤ 200K loads: 196,608
    target, predicted = 256 * 1024, 200 * 1024
    half = target // 2
    assert half <= predicted and target > predicted
    want = int(target * 0.75)
    assert want <= predicted
    value, unit = answers(STEM)["05-4"]
    assert unit == "tokens" and value == want == 196_608
