"""Notebook 08's exercises: each folded answer's value, derived here by hand from the config,
data/hardware.csv and the measured vLLM file — never from the function the lesson calls.

Llama 3.1 8B (meta-llama/Llama-3.1-8B config): V = 128,256, D = 4,096, L = 32, N_q = 32, K = 8,
H = 128, MLP width 14,336, untied embeddings. H100 SXM (data/hardware.csv): 3,350 GB/s, 989 BF16
dense TFLOP/s. None of these answers depends on the fitted speed constants.
"""

import csv
import math
from pathlib import Path

import pytest
from exercises import answers, exercise_ids

STEM = "08-serving"
ROOT = Path(__file__).resolve().parents[1]

V, D, L, NQ, K, H, MLP = 128_256, 4_096, 32, 32, 8, 128, 14_336


def _hardware(gpu_id: str) -> dict[str, str]:
    with open(ROOT / "data" / "hardware.csv", newline="", encoding="utf-8") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == gpu_id)


H100 = _hardware("h100-sxm")
BW = float(H100["memory_bw_gb_s"]) * 1e9  # bytes/s
F = float(H100["bf16_dense_tflops"]) * 1e12  # FLOP/s

# Parameters a decode step reads: every layer (q, o: D·N_q·H each; k, v: D·K·H each; gate, up, down:
# D·MLP each; two norms of D), the final norm, and the LM head (V·D). The input embedding is a lookup.
PER_LAYER = 2 * D * NQ * H + 2 * D * K * H + 3 * D * MLP + 2 * D
P_READ = L * PER_LAYER + D + V * D  # = 7,504,924,672
W_BYTES = 2 * P_READ  # BF16
KV_PER_TOKEN = 2 * L * K * H * 2  # K and V, BF16: 131,072 B


def test_hand_figures():
    assert P_READ == 7_504_924_672 and KV_PER_TOKEN == 131_072


def test_at_least_three_exercises_all_answered():
    ids = exercise_ids(STEM)
    got = answers(STEM)
    assert len(ids) >= 3 and len(set(ids)) == len(ids)
    assert set(ids) == set(got)


def test_08_1_ceiling_decode_rate():
    # one step at context 1,024 reads W + 1,024·kv_tok bytes; the ceiling rate is BW ÷ that
    want = BW / (W_BYTES + 1024 * KV_PER_TOKEN)  # 3.35e12 / 15,144,067,072 = 221.2 tokens/s
    value, unit = answers(STEM)["08-1"]
    assert unit == "tokens/s"
    assert value == pytest.approx(want, rel=1e-6)


def test_08_2_compute_bound_batch():
    # compute exceeds memory when b·2·P/F > W/BW, i.e. b > F·W/(2·P·BW) = F/BW at BF16 = 295.2
    threshold = F * W_BYTES / (2 * P_READ * BW)
    value, unit = answers(STEM)["08-2"]
    assert unit == "sequences"
    assert value == math.floor(threshold) + 1 == 296


def test_08_3_prefill_intensity():
    # FLOPs: 2·P·I + I·A(I/2), A(T) = L·2·N_q·(H + H)·T (scores and weighted sum); bytes: W once
    i = 1024
    flops = 2 * P_READ * i + i * (L * 2 * NQ * 2 * H * (i / 2))
    want = flops / W_BYTES  # 15,644,963,635,200 / 15,009,849,344 = 1,042.3 FLOP/byte
    value, unit = answers(STEM)["08-3"]
    assert unit == "FLOP/byte"
    assert value == pytest.approx(want, rel=1e-9)
    assert value > F / BW  # compute-bound


def test_08_4_max_concurrency_from_measured_capacity():
    # vLLM printed the KV capacity (row H108); requests of 1,024 + 256 tokens: floor(capacity / 1,280)
    with open(ROOT / "data" / "measured" / "vllm-0.19-h100-sweep.csv", newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "H108")
    assert row["evidence"] == "GPU KV cache size: 476,016 tokens"
    want = min(int(row["value"]) // (1024 + 256), 1024)  # 371, below max_num_seqs
    value, unit = answers(STEM)["08-4"]
    assert unit == "requests"
    assert value == want == 371


def test_08_5_cost_per_million_tokens():
    # 4 GPUs × $2.50 = $10/h; 10^6 tokens at 2,000 tokens/s take 500 s = 0.1389 h
    want = 4 * 2.50 * (1e6 / 2000) / 3600  # $1.389
    value, unit = answers(STEM)["08-5"]
    assert unit == "USD"
    assert value == pytest.approx(want, rel=1e-9)
