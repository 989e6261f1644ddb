"""Notebook 04's exercises: each folded answer's value, derived here by hand from Kimi K3's config
(data/models/kimi-k3.json) and data/hosts.csv — never from the function the lesson calls.

K3: 92 MoE layers of E = 896 routed experts, k = 16 active per token, each expert 3 · 3,584 (latent
width) · 3,072 weights; vocabulary 163,840 × hidden 7,168. Q4_K_M: 4.5 bits per weight (Q4_K: 144-byte
blocks of 256 weights). EPYC 9005, one socket: 12 channels of DDR5-6000, 8 bytes per transfer.
"""

import pytest
from exercises import answers, assert_answered

STEM = "04-offload"
LAYERS, E, K = 92, 896, 16
EXPERT_WEIGHTS = 3 * 3584 * 3072  # 33,030,144
EXPERT_BYTES = EXPERT_WEIGHTS * 144 / 256  # Q4_K: 4.5 bits → 18,579,456 B
EMBEDDING_ROW_BYTES = 7168 * 4.5 / 8  # one row read from RAM per token: 4,032 B
RAM_READ_BYTES = LAYERS * K * EXPERT_BYTES + EMBEDDING_ROW_BYTES


def test_hand_figures():
    assert EXPERT_BYTES == 18_579_456 and EMBEDDING_ROW_BYTES == 4032


def test_at_least_three_exercises_all_answered():
    assert_answered(STEM)


def test_04_1_ram_bytes_per_token():
    # 92 · 16 · 18,579,456 + 4,032 = 27,348,963,264 B = 27.35 GB
    value, unit = answers(STEM)["04-1"]
    assert unit == "GB" and value == pytest.approx(RAM_READ_BYTES / 1e9, rel=1e-9)


def test_04_2_ram_time_on_a_server_board():
    # 12 channels × 6,000 MT/s × 8 B = 576 GB/s; 27.349 GB / 576 GB/s = 47.48 ms
    bandwidth = 12 * 6000e6 * 8
    value, unit = answers(STEM)["04-2"]
    assert unit == "ms" and value == pytest.approx(RAM_READ_BYTES / bandwidth * 1e3, rel=1e-6)


def test_04_3_vram_per_expert_layer():
    # 896 experts × 18,579,456 B = 16.647 GB per layer kept on the GPU
    value, unit = answers(STEM)["04-3"]
    assert unit == "GB" and value == pytest.approx(E * EXPERT_BYTES / 1e9, rel=1e-9)


def test_04_4_distinct_experts_for_a_batch_of_four():
    # each sequence picks 16 of 896: an expert is missed by all four with probability (1 − 16/896)^4
    want = E * (1 - (1 - K / E) ** 4)  # 62.3
    value, unit = answers(STEM)["04-4"]
    assert unit == "experts" and value == pytest.approx(want, rel=1e-9)
