"""Notebook 06's exercises: each folded answer's value, derived here by hand from the shipped
configs (data/configs), data/hardware.csv and vLLM's printed figure — never from the function
the lesson calls.
"""

import csv
import json
import math
from pathlib import Path

import pytest
from exercises import answers, assert_answered

STEM = "06-any-model"
ROOT = Path(__file__).resolve().parents[1]
MiB, GiB = 2**20, 2**30


def _config(name: str) -> dict:
    return json.loads((ROOT / "data" / "configs" / f"{name}.json").read_text(encoding="utf-8"))


def _usable_bytes(gpu_id: str) -> float:
    with open(ROOT / "data" / "hardware.csv", newline="", encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == gpu_id)
    return float(row["memory_usable_gib"]) * GiB


def test_at_least_three_exercises_all_answered():
    assert_answered(STEM)


def test_06_1_qwen3_next_kv_per_token():
    # one layer in full_attention_interval is full attention, caching 2·K·H·2 B (BF16); the Gated
    # DeltaNet layers keep a constant state, nothing per token
    c = _config("qwen3-next-80b-a3b-instruct")
    full = c["num_hidden_layers"] // c["full_attention_interval"]  # 48 / 4 = 12
    want = full * 2 * c["num_key_value_heads"] * c["head_dim"] * 2  # 12·2·2·256·2 = 24,576
    value, unit = answers(STEM)["06-1"]
    assert unit == "B" and value == want == 24_576


def test_06_2_llama_70b_kv_per_gpu_stops_shrinking_at_tp_k():
    # vLLM splits the K KV heads over TP ranks up to K, then copies them: per GPU max(1, K/TP) heads
    c = _config("llama-3.1-70b")
    k, layers = c["num_key_value_heads"], c["num_hidden_layers"]
    head_dim = c["hidden_size"] // c["num_attention_heads"]  # no head_dim in the config: 8,192 / 64 = 128

    def per_gpu(tp: int) -> int:
        return 2 * layers * max(1, k // tp) * head_dim * 2

    value, unit = answers(STEM)["06-2"]
    assert unit == "B" and value == per_gpu(16) == per_gpu(8) == 40_960


def test_06_3_sglang_mem_fraction_static_on_one_h100():
    # SGLang 0.5.5: reserved MiB = 512 + 1.5·chunk (8,192) + 2·graph bs (256) + 1,024·TP·PP/8, on a GPU of
    # 60–160 GiB; f = (GPU MiB − reserved) / GPU MiB, rounded to 3 decimals
    gpu_mib = _usable_bytes("h100-sxm") / MiB  # 79.19 GiB = 81,090.56 MiB
    reserved = 512 + 1.5 * 8192 + 2 * 256 + 1024 * 1 / 8  # 13,440 MiB
    value, unit = answers(STEM)["06-3"]
    assert unit == "fraction" and value == round((gpu_mib - reserved) / gpu_mib, 3) == 0.834


def test_06_4_token_interval_from_the_printed_rounding():
    # Llama 3.1 8B at TP 1: a block is 16 tokens × 2·K·H·2 B per layer × L layers = 16·4,096·32 = 2 MiB;
    # vLLM printed 58.11 GiB rounded to 0.01, so the truth is 58.11 ± 0.005 GiB → ⌊A/block⌋·16 at each end
    c = _config("llama-3.1-8b")
    block = (
        16 * 2 * c["num_key_value_heads"] * (c["hidden_size"] // c["num_attention_heads"]) * 2 * c["num_hidden_layers"]
    )
    assert block == 2 * MiB
    lo = math.floor(58.105 * GiB / block) * 16  # 475,984
    hi = math.floor(58.115 * GiB / block) * 16  # 476,064
    value, unit = answers(STEM)["06-4"]
    assert unit == "tokens" and value == hi - lo == 80
    assert lo <= 476_016 <= hi  # what vLLM printed (data/measured/vllm-0.19-h100-sweep.csv, H108)


@pytest.mark.parametrize("ident", ["06-1", "06-2", "06-3", "06-4"])
def test_answer_is_folded(ident):
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / f"{STEM}.ipynb", as_version=4)
    folded = [c for c in nb.cells if c.cell_type == "markdown" and f"answer id={ident} " in c.source]
    assert len(folded) == 1 and folded[0].source.startswith("<details>")
