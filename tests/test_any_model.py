"""k3lib.views.any_model (notebook 06-any-model): tables, charts, the tiny GGUF, the parameter
check, the explorer's callback, and the notebook under papermill.

Expected values are worked by hand from the configs' shapes:

* Llama 3.1 70B: V = 128,256, D = 8,192, L = 80, N_q = 64, K = 8, H = 128, I = 28,672.
* DeepSeek-V3: 61 MLA layers, r_kv = 512, d_rope = 64, 128 heads of nope 128 / v 128.
* Block sizes (ggml-common.h): Q8_0 34 B per 32, Q4_K 144 B per 256, Q6_K 210 B per 256.
* H100 80GB: 79.19 GiB visible; vLLM gpu_memory_utilization 0.9.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbrun import run_notebook

from k3lib.core.errors import K3InputError
from k3lib.views import any_model
from k3lib.views.notebook import ParameterError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "06-any-model.ipynb"
CHECK_TAG = "nbval-check-output"  # nbval checks these cells; no marker or assert in the lesson
H100_GIB = 79.19

# ---- the demo GGUF, by hand (D = 256, 2 layers, 4 heads / 2 KV heads of 64, 8 experts of 256, vocab 512)
EMBD = 256 * 512 // 32 * 34  # 139,264  Q8_0
ATTN_Q = ATTN_O = 256 * 256 // 256 * 144  # 36,864   Q4_K
ATTN_K = 256 * 128 // 256 * 144  # 18,432   Q4_K
ATTN_V = 256 * 128 // 256 * 210  # 26,880   Q6_K
EXP_GATE = EXP_UP = 256 * 256 * 8 // 256 * 144  # 294,912  Q4_K
EXP_DOWN = 256 * 256 * 8 // 256 * 210  # 430,080  Q6_K
ROUTER = 256 * 8 * 4  # 8,192    F32
NORM = 256 * 4  # 1,024    F32
OUTPUT = 256 * 512 // 256 * 210  # 107,520  Q6_K
ATTN_LAYER = ATTN_Q + ATTN_K + ATTN_V + ATTN_O  # 119,040
EXPERT_LAYER = EXP_GATE + EXP_UP + EXP_DOWN  # 1,019,904
TOTAL = EMBD + 2 * (ATTN_LAYER + EXPERT_LAYER + ROUTER + 2 * NORM) + NORM + OUTPUT


def test_hand_worked_gguf_sizes():
    assert (ATTN_LAYER, EXPERT_LAYER, TOTAL) == (119_040, 1_019_904, 2_546_176)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = any_model.write_demo_gguf(tmp_path_factory.mktemp("gguf"))
    return any_model.load_model(path)


# ====================================================================== loading


def test_fixture_names_drop_the_provenance_suffix():
    names = any_model.fixture_configs()
    assert {
        "llama-3.1-70b",
        "deepseek-v3",
        "gemma-3-27b-it",
        "mistral-7b-v0.3",
        "llama-4-scout-17b-16e-instruct",
    } <= set(names)
    assert names["gemma-3-27b-it"].name == "gemma-3-27b-it.maxtext-transcription.json"
    assert all(p.is_file() for p in names.values())


def test_load_model_by_name_path_and_passthrough(tmp_path):
    by_name = any_model.load_model("llama-3.1-70b")
    assert by_name.id == "llama-3.1-70b" and by_name.file_format == "config"
    folder = tmp_path / "my-model"
    folder.mkdir()
    shutil.copy(any_model.fixture_configs()["llama-3.1-8b"], folder / "config.json")
    by_path = any_model.load_model(folder)
    assert by_path.architecture.params_total == 8_030_261_248
    assert any_model.load_model(by_path) is by_path


def test_load_model_unknown_name_names_config():
    with pytest.raises(K3InputError) as exc:
        any_model.load_model("no-such-model")
    assert exc.value.field == "config"
    assert "llama-3.1-70b" in str(exc.value)  # the known names are listed


# ====================================================================== breakdown


def test_summary_table_llama_70b():
    s = any_model.summary_table("llama-3.1-70b").set_index("quantity")["value"]
    assert s["parameters"] == 70_553_706_496
    assert s["KV bytes per token (BF16)"] == 2 * 80 * 8 * 128 * 2 == 327_680
    assert (s["layers"], s["hidden size"], s["KV heads"], s["head dim"]) == (80, 8192, 8, 128)
    assert s["weights (native format)"] == 2 * 70_553_706_496  # BF16
    assert s["weights, GiB"] == round(2 * 70_553_706_496 / 2**30, 2) == 131.42
    assert s["linear-attention state per sequence (FP32)"] == 0


def test_summary_table_mla_shows_the_latent():
    s = any_model.summary_table("deepseek-v3").set_index("quantity")["value"]
    assert (s["KV latent rank"], s["rope key dim"]) == (512, 64)
    assert s["KV bytes per token (BF16)"] == 61 * (512 + 64) * 2 == 70_272
    assert "KV heads" not in s.index


def test_params_worked_table_terms():
    t = any_model.params_worked_table("llama-3.1-70b").set_index("term")["value"]
    assert t["embedding + lm_head"] == 2 * 128_256 * 8_192
    assert t["attention per layer"] == 2 * 8192 * 64 * 128 + 2 * 8192 * 8 * 128 == 150_994_944
    assert t["MLP per layer"] == 3 * 8192 * 28_672
    assert t["norms per layer"] == 2 * 8192
    assert t["all layers"] == 80 * (150_994_944 + 704_643_072 + 16_384)
    assert t["P"] == 70_553_706_496
    for name, published in (
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3.1-405b", 405_853_388_800),
        ("qwen2.5-72b-instruct", 72_706_203_648),
    ):  # Qwen2: q/k/v biases
        assert any_model.params_worked_table(name)["value"].iloc[-1] == published


def test_params_worked_table_refuses_moe_and_mla():
    for name in ("deepseek-v3", "mixtral-8x7b-v0.1", "gemma-3-27b-it"):
        with pytest.raises(K3InputError):
            any_model.params_worked_table(name)


def test_breakdown_table_config():
    df = any_model.breakdown_table("llama-3.1-70b").set_index("group")
    assert df.loc["embedding", "params"] == 128_256 * 8192
    assert df.loc["dense_mlp", "params"] == 80 * 3 * 8192 * 28_672
    assert df.loc["dense_mlp", "weights_B"] == 2 * df.loc["dense_mlp", "params"]
    assert df.loc["total", "params"] == 70_553_706_496
    assert df.loc["total", "weights_B"] == df.drop("total")["weights_B"].sum()
    assert df.loc["total", "share_pct"] == 100.0
    assert df.loc["dense_mlp", "share_pct"] == 79.9  # 56,371,445,760 / 70,553,706,496


def test_breakdown_table_native_formats_and_vision():
    ds = any_model.breakdown_table("deepseek-v3").set_index("group")
    assert ds.loc["routed_experts", "format"] == "fp8-block" and ds.loc["embedding", "format"] == "bf16"
    assert round(ds.loc["total", "params"] / 1e9, 1) == 671.0
    gemma = any_model.breakdown_table("gemma-3-27b-it").set_index("group")
    assert gemma.loc["vision (estimated)", "weights_B"] == 2 * gemma.loc["vision (estimated)", "params"]
    assert "lm_head" not in gemma.index  # tied embeddings


# ====================================================================== the tiny GGUF


def test_write_demo_gguf_is_small_and_readable(tiny):
    path = Path(tiny.source)
    assert path.name == "tiny-moe.gguf" and path.stat().st_size < 3_000_000
    assert tiny.file_format == "gguf" and tiny.exact
    assert tiny.weights_bytes == TOTAL
    arch = tiny.architecture
    assert (arch.num_layers, arch.hidden_size, arch.vocab_size) == (2, 256, 512)
    assert (arch.mlp.n_routed_experts, arch.mlp.experts_per_token, arch.mlp.moe_intermediate) == (8, 2, 256)
    assert arch.kv_bytes_per_token(2) == 2 * 2 * 2 * 64 * 2 == 1024


def test_breakdown_table_gguf_exact_bytes(tiny):
    df = any_model.breakdown_table(tiny, unit="KiB").set_index("group")
    assert df.loc["embedding", "weights_B"] == EMBD
    assert df.loc["attention", "weights_B"] == 2 * ATTN_LAYER
    assert df.loc["routed_experts", "weights_B"] == 2 * EXPERT_LAYER == 2_039_808
    assert df.loc["moe_other", "weights_B"] == 2 * ROUTER
    assert df.loc["norms", "weights_B"] == 5 * NORM
    assert df.loc["lm_head", "weights_B"] == OUTPUT
    assert df.loc["total", "weights_B"] == TOTAL
    assert df.loc["total", "tensors"] == 1 + 2 * 10 + 2
    assert df.loc["total", "weights_KiB"] == round(TOTAL / 1024, 2)
    assert df.loc["routed_experts", "format"] == "Q4_K, Q6_K"
    # the tensors' element count equals the formula's parameter count
    assert df.loc["total", "params"] == tiny.architecture.params_total == 3_806_464


def test_dtype_table_bits_per_weight(tiny):
    df = any_model.dtype_table(tiny).set_index("type")
    assert df["bits_per_weight"].to_dict() == {"Q4_K": 4.5, "Q6_K": 6.5625, "Q8_0": 8.5, "F32": 32.0}
    assert df.loc["Q6_K", "bytes"] == 2 * (ATTN_V + EXP_DOWN) + OUTPUT
    assert df.loc["F32", "tensors"] == 5 + 2
    assert df["bytes"].sum() == TOTAL


def test_layer_bytes_table(tiny):
    df = any_model.layer_bytes_table(tiny).set_index("layer")
    assert df.loc[0, "expert_B"] == EXPERT_LAYER
    assert df.loc[0, "other_B"] == ATTN_LAYER + ROUTER + 2 * NORM == 129_280
    assert df.loc["outside layers", "total_B"] == EMBD + NORM + OUTPUT


def test_dtype_table_needs_a_weight_file():
    with pytest.raises(K3InputError):
        any_model.dtype_table("llama-3.1-70b")
    with pytest.raises(K3InputError):
        any_model.layer_bytes_table("llama-3.1-70b")


# ====================================================================== KV per token


def test_naive_shortcut_by_hand():
    cfg = json.loads(any_model.fixture_configs()["qwen3-next-80b-a3b-instruct"].read_text())
    assert any_model.naive_kv_bytes_per_token(cfg) == 2 * 48 * 2 * (2048 // 16) * 2 == 49_152
    gemma = json.loads(any_model.fixture_configs()["gemma-3-27b-it"].read_text())  # read through text_config
    assert any_model.naive_kv_bytes_per_token(gemma) == 2 * 62 * 16 * (5376 // 32) * 2 == 666_624
    assert (
        any_model.naive_kv_bytes_per_token({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4})
        == 2 * 2 * 4 * 16 * 2
    )  # MHA default
    with pytest.raises(K3InputError):
        any_model.naive_kv_bytes_per_token({"hidden_size": 64})


def test_kv_by_layer_type_by_hand():
    df = any_model.kv_by_layer_type(context="32K").set_index(["model", "layer_type"])
    llama = df.loc[("llama-3.1-70b", "GQA (full)")]
    assert (llama["layers"], llama["per_layer_B"], llama["kv_B_per_token"]) == (80, 2 * 8 * 128 * 2, 327_680)
    assert llama["kv_GiB"] == 327_680 * 32_768 / 2**30 == 10.0
    ds = df.loc[("deepseek-v3", "MLA latent")]
    assert (ds["per_layer_B"], ds["kv_B_per_token"], ds["per_layer_formula"]) == (1152, 61 * 1152, "(512+64)·2")
    sw = df.loc[("gemma-3-27b-it", "sliding window")]
    assert (sw["layers"], sw["per_layer_B"], sw["window_tokens"]) == (52, 2 * 16 * 128 * 2, 1024)
    assert sw["kv_GiB"] == round(52 * 8192 * 1024 / 2**30, 3)  # capped at the window: 0.406
    gdn = df.loc[("qwen3-next-80b-a3b-instruct", "Gated DeltaNet (linear)")]
    # 36 layers × (32 value heads · 128 · 128 recurrent + (2·16·128 + 32·128) · (4 − 1) conv) × 4 B
    assert gdn["kv_B_per_token"] == 0
    assert gdn["state_B_per_seq"] == 36 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 4 == 79_036_416
    assert df.loc[("qwen3-next-80b-a3b-instruct", "GQA (full)"), "kv_B_per_token"] == 12 * 2 * 2 * 256 * 2


def test_kv_by_layer_type_fp8_halves():
    bf16 = any_model.kv_by_layer_type(["llama-3.1-8b"])
    fp8 = any_model.kv_by_layer_type(["llama-3.1-8b"], kv_bytes_per_element=1)
    assert fp8["kv_B_per_token"].iloc[0] * 2 == bf16["kv_B_per_token"].iloc[0] == 131_072


def test_kv_comparison_table_by_hand():
    df = any_model.kv_comparison_table(context="32K").set_index("model")
    assert list(df.index) == list(any_model.KV_COMPARISON_CONFIGS)
    assert df.loc["llama-3.1-70b", ["kv_B_per_token", "naive_B_per_token", "naive_over_kv"]].tolist() == [
        327_680,
        327_680,
        1.0,
    ]
    assert df.loc["deepseek-v3", "naive_B_per_token"] == 2 * 61 * 128 * 56 * 2 == 1_748_992
    assert df.loc["deepseek-v3", "naive_over_kv"] == round(1_748_992 / 70_272, 1) == 24.9
    assert df.loc["qwen3-235b-a22b-fp8", "naive_over_kv"] == 0.5  # head_dim 128, D/N_q = 4096/64 = 64
    assert df.loc["kimi-linear-48b-a3b-instruct", "kv_B_per_token"] == 7 * 576 * 2 == 8064
    assert df.loc["gemma-3-27b-it", ["kv_B_per_token", "sliding_B_per_token"]].tolist() == [10 * 8192, 52 * 8192]
    assert df.loc["qwen3-next-80b-a3b-instruct", "state_MiB_per_seq"] == round(79_036_416 / 2**20, 1) == 75.4
    # 1 sequence of 32K: 10 full layers × 32,768 + 52 sliding × 1,024, at 8,192 B each
    assert df.loc["gemma-3-27b-it", "kv_GiB_32K"] == round(8192 * (10 * 32_768 + 52 * 1024) / 2**30, 2)


def test_kv_comparison_table_of_a_gguf_has_no_shortcut(tiny):
    df = any_model.kv_comparison_table([tiny])
    assert df["kv_B_per_token"].iloc[0] == 1024 and df["naive_B_per_token"].isna().all()


# ====================================================================== engines


def test_side_by_side_llama_70b_on_4_h100():
    df = any_model.engine_side_by_side("llama-3.1-70b", gpu="h100-sxm", gpus=4, context="32K")
    assert list(df.columns) == ["vLLM", "llama.cpp", "SGLang", "Hugging Face transformers"]
    assert df.loc["KV bytes per token per GPU (B)"].tolist() == [327_680 // 4] * 4
    assert df.loc["KV cache for the context (GiB)"].tolist() == [81_920 * 32_768 / 2**30] * 4  # 2.5
    assert df.loc["GPU memory (GiB)"].tolist() == [H100_GIB] * 4
    budget = df.loc["budget the engine sizes from (GiB)"]
    assert budget["vLLM"] == round(0.9 * H100_GIB, 2) == 71.27
    # SGLang: reserved MiB = 512 + 1.5·8,192 + 2·512 + 1,024·4/8 = 14,336 → f = 0.823
    assert round((H100_GIB * 1024 - 14_336) / (H100_GIB * 1024), 3) == 0.823
    assert budget["SGLang"] == round(0.823 * H100_GIB, 2) == 65.17
    assert budget["llama.cpp"] == budget["Hugging Face transformers"] == H100_GIB
    assert df.loc["fits"].tolist() == [True] * 4
    # vLLM's capacity is a whole number of 16-token blocks of 81,920 B
    avail = df.loc["KV memory available (GiB)", "vLLM"]
    assert df.loc["KV capacity (tokens)", "vLLM"] % 16 == 0
    assert abs(df.loc["KV capacity (tokens)", "vLLM"] - avail * 2**30 / 81_920) < 16 + avail * 2**30 * 0.005 / 81_920


def test_side_by_side_mla_differs_in_the_cache():
    df = any_model.engine_side_by_side("deepseek-v3", gpu="h200-sxm", gpus=8, context="32K")
    assert df.loc["KV bytes per token per GPU (B)"].tolist() == [
        61 * 576 * 2,  # vLLM: the latent on every rank
        61 * 576 * 2 // 8,  # llama.cpp@0c1e570: the latent K row only (V is a view), layers split
        61 * 576 * 2,  # SGLang: as vLLM
        61 * 128 * (128 + 64 + 128) * 2 // 8,
    ]  # transformers: expanded K and V, layers split


def test_side_by_side_kv_heads_replicate_beyond_k():
    tp8 = any_model.engine_side_by_side("llama-3.1-70b", engines=["vllm"], gpus=8)
    tp16 = any_model.engine_side_by_side("llama-3.1-70b", engines=["vllm"], gpus=16)
    assert tp8.loc["KV bytes per token per GPU (B)", "vLLM"] == 2 * 80 * 1 * 128 * 2 == 40_960
    assert tp16.loc["KV bytes per token per GPU (B)", "vLLM"] == 40_960  # 8 KV heads over 16 ranks: copied


def test_engine_components_long_adds_up_to_the_gpu():
    df = any_model.engine_components_long("llama-3.1-70b", gpus=4, context="32K")
    assert set(df["component"]) == set(any_model.CHART_COMPONENTS)
    totals = df.groupby("engine")["GiB"].sum()
    assert all(abs(t - H100_GIB) < 0.01 for t in totals)  # it fits: the stack is the whole GPU
    vllm = df[df["engine"] == "vLLM"].set_index("component")["GiB"]
    assert vllm["outside the budget"] == round(H100_GIB - int(0.9 * H100_GIB * 2**30) / 2**30, 3)


def test_engine_rules_table_says_why():
    df = any_model.engine_rules_table("llama-3.1-70b", gpus=4).set_index("engine")
    assert df.loc["vLLM", "KV cache holds"] == "GQA: 2 of 8 KV heads per rank"
    assert df.loc["vLLM", "budget"] == "gpu_memory_utilization 0.90 × 79.19 GiB"
    assert df.loc["SGLang", "budget"] == "mem_fraction_static 0.823 × 79.19 GiB"
    assert df.loc["SGLang", "prints"] == "GB (meaning GiB)"
    assert "token_embd stays in host RAM" in df.loc["llama.cpp", "weights"]
    mla = any_model.engine_rules_table("deepseek-v3", gpu="h200", gpus=8).set_index("engine")
    assert "576-element latent on every rank" in mla.loc["vLLM", "KV cache holds"]
    assert "128·(128+64+128)" in mla.loc["Hugging Face transformers", "KV cache holds"]
    hybrid = any_model.engine_rules_table("qwen3-next-80b-a3b-instruct", gpus=2).set_index("engine")
    assert "linear state" in hybrid.loc["vLLM", "KV cache holds"]
    sliding = any_model.engine_rules_table("gemma-3-27b-it").set_index("engine")
    assert "counted at the full context" in sliding.loc["SGLang", "KV cache holds"]


def test_printed_lines_table():
    df = any_model.printed_lines_table("llama-3.1-70b", gpus=4, context="32K")
    sglang = df[df["engine"] == "SGLang"].set_index("line")["value"]
    assert sglang["mem_fraction_static"] == "0.823"
    assert sglang["Load weight end. mem usage"].endswith(" GB")
    vllm = df[df["engine"] == "vLLM"].set_index("line")["value"]
    assert vllm["GPU KV cache size"].endswith(" tokens")
    llamacpp = df[df["engine"] == "llama.cpp"].set_index("line")["value"]
    # 80 layers × 8 KV heads × 128 × (K + V) × 2 B = 327,680 B per token; 32,768 cells; layers split over 4 GPUs
    assert llamacpp["CUDA0 KV buffer size"] == f"{327_680 * 32_768 / 4 / 2**20:,.2f} MiB"  # 2,560.00 MiB
    assert llamacpp["llama_kv_cache: size (32,768 cells)"].startswith("10,240.00 MiB, K (f16): 5,120.00 MiB")
    assert df[df["engine"] == "Hugging Face transformers"]["line"].tolist() == ["(prints no memory figures)"]


# ====================================================================== calibration


@pytest.fixture(scope="module")
def cal():
    return any_model.calibration_table()


def test_calibration_table_rows_and_signs(cal):
    assert len(cal) == 87 and cal["id"].is_unique
    assert cal["quantity"].value_counts().to_dict() == {
        "weights_memory_per_gpu": 29,
        "kv_cache_memory_per_gpu": 29,
        "kv_cache_tokens": 29,
    }
    row = cal.set_index("id").loc["H108"]  # Llama 3.1 8B TP 1: printed 476,016, predicted 476,032
    assert (row["measured"], row["predicted"], row["error"]) == (476_016, 476_032, 16)
    assert isinstance(row["measured"], int)
    w = cal.set_index("id").loc["H106"]  # "Model loading took 14.99 GiB"
    assert w["measured"] == 14.99 and w["error"] == round(w["predicted"] - 14.99, 4)
    assert w["tolerance_unit"] == "%" and w["error_in_tolerances"] == round(w["error_pct"] / 3, 3)
    # error is always predicted − measured
    for r in cal.itertuples():
        assert abs(float(r.predicted) - float(r.measured) - float(r.error)) < 1e-3
    assert (cal["error_in_tolerances"].abs() <= 1).all()


def test_calibration_summary_counts(cal):
    s = any_model.calibration_summary_table(cal).set_index("quantity")
    assert s.loc["all", "rows"] == 87
    assert s.loc["all", "within"] == int(cal["within"].sum()) == 87
    assert s.loc["weights_memory_per_gpu", "tolerance"] == "3 %"
    assert s.loc["kv_cache_memory_per_gpu", "tolerance"] == "0.5 GiB"
    worst = cal.set_index("id").loc[s.loc["kv_cache_tokens", "worst_row"]]
    assert abs(worst["error"]) == s.loc["kv_cache_tokens", "worst_abs_error"]


def test_calibration_worked_table_by_hand():
    t = any_model.calibration_worked_table("H108").set_index("param")["value"]
    assert t["A"] == 58.11
    assert t["page"] == 16 * 2 * 8 * 128 * 2 == 65_536
    assert t["group"] == 32
    assert t["blocks"] == int(58.11 * 2**30) // (65_536 * 32) == 29_752
    assert t["T_pred"] == 29_752 * 16 == 476_032
    assert t["T_range"] == "475,984 … 476,064"
    assert (t["T_vllm"], t["error"]) == (476_016, 16)
    with pytest.raises(K3InputError):
        any_model.calibration_worked_table("H106")  # a weights row


# ====================================================================== charts


def test_charts_are_valid_specs(cal):
    kv = any_model.kv_naive_chart(any_model.kv_comparison_table()).to_dict()
    assert "shortcut" in kv["title"]
    eng = any_model.engine_chart(any_model.engine_components_long("llama-3.1-70b", gpus=4)).to_dict()
    assert eng["encoding"]["color"]["scale"]["domain"] == list(any_model.CHART_COMPONENTS)
    spec = any_model.calibration_chart(cal).to_dict()
    assert "87 figures" in spec["title"]


def test_charts_refuse_a_frame_without_their_columns():
    bad = pd.DataFrame({"x": [1]})
    for chart in (any_model.kv_naive_chart, any_model.engine_chart, any_model.calibration_chart):
        with pytest.raises(K3InputError):
            chart(bad)


# ====================================================================== parameters and the explorer

GOOD = dict(config="llama-3.1-70b", engine="vllm", gpu="h100-sxm", gpus=4, context="32K")


def test_validate_good_parameters():
    setup = any_model.validate(**GOOD)
    assert setup.context_tokens == 32_768 and setup.gpus == 4 and setup.engine.id == "vllm"
    assert setup.estimate().kv_needed_bytes == 81_920 * 32_768
    assert setup.estimate("sglang").engine == "sglang"


@pytest.mark.parametrize(
    "field,value,start",
    [
        ("config", "nosuch", "parameter config: 'nosuch' is neither"),
        ("engine", "vlm", "parameter engine: unknown engine 'vlm'"),
        ("gpu", "nosuch", "parameter gpu: unknown gpu 'nosuch'"),
        ("gpus", 0, "parameter gpus: 0 must be at least 1"),
        ("gpus", 3, "parameter gpus: llama-3.1-70b cannot be split 3-way"),  # TP 3 does not split the 64 heads
        ("context", "zz", "parameter context: 'zz' is not a context length"),
    ],
)
def test_validate_bad_parameter_is_one_line_naming_it(field, value, start):
    with pytest.raises(ParameterError) as exc:
        any_model.validate(**{**GOOD, field: value})
    assert str(exc.value).startswith(start)
    assert "\n" not in str(exc.value)


def test_validate_bad_config_file(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "llama", "hidden_size": 64,')
    with pytest.raises(ParameterError) as exc:
        any_model.validate(**{**GOOD, "config": str(bad)})
    assert str(exc.value).startswith("parameter config: ") and "invalid JSON" in str(exc.value)


def test_explorer_update_good_and_bad():
    table, message = any_model.explorer_update(**GOOD)
    t = table.set_index("item")
    assert message.startswith("FITS: llama-3.1-70b (config) on 4× h100-sxm, vLLM")
    assert t.loc["KV bytes per token per GPU", "value"] == 81_920
    assert t.loc["budget the engine sizes from", "value"] == 71.27
    assert "prints: GPU KV cache size" in t.index
    table, message = any_model.explorer_update(
        **{**GOOD, "engine": "llama.cpp", "config": "deepseek-v3", "gpu": "h200", "gpus": 8}
    )
    assert table.set_index("item").loc["KV bytes per token per GPU", "value"] == 61 * 576 * 2 // 8  # 8,784
    table, message = any_model.explorer_update(**{**GOOD, "gpus": 1})
    assert message.startswith("DOES NOT FIT")
    table, message = any_model.explorer_update(**{**GOOD, "gpu": "nosuch"})
    assert table is None and message.startswith("parameter gpu:")


def test_explorer_widget_updates_in_place():
    ipywidgets = pytest.importorskip("ipywidgets")
    box = any_model.explorer(**GOOD)
    assert isinstance(box, ipywidgets.VBox) and isinstance(box.children[-1], ipywidgets.Output)
    assert box.last_update[0].set_index("item").loc["KV bytes per token per GPU", "value"] == 81_920
    box.controls["gpus"].value = 8
    assert box.last_update[0].set_index("item").loc["KV bytes per token per GPU", "value"] == 40_960
    box.controls["config"].value = "deepseek-v3"
    box.controls["engine"].value = "transformers"
    box.controls["gpu"].value = "h200-sxm"
    assert box.last_update[0].set_index("item").loc["KV bytes per token per GPU", "value"] == 624_640
    # 128 heads do not split 3 ways under vLLM: the slider offers only deployable counts, re-offered per config
    assert list(box.controls["gpus"].options) == [1, 2, 4, 6, 8, 16] and box.controls["gpus"].value == 8
    box.controls["engine"].value = "vllm"
    table, message = box.last_update
    assert table is not None and message.startswith("FITS: deepseek-v3 (config) on 8× h200-sxm")


def test_explorer_accepts_an_unknown_start_value():
    pytest.importorskip("ipywidgets")
    box = any_model.explorer(**{**GOOD, "config": "nosuch"})
    assert box.last_update[0] is None and box.last_update[1].startswith("parameter config:")


# ====================================================================== the notebook

papermill = pytest.importorskip("papermill")


def test_committed_notebook_is_clean():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3" and "widgets" not in nb.metadata
    checked = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert "execution" not in cell.metadata
        assert not re.search(r"^\s*(def|class|for|while) ", cell.source, re.M), cell.source
        assert "NBVAL_" not in cell.source and not re.search(r"^assert ", cell.source, re.M)
        if CHECK_TAG in cell.metadata.get("tags", ()):
            checked += 1
            assert cell.outputs and cell.execution_count
            for o in cell.outputs:
                assert not any(k.startswith(("image/", "application/vnd")) for k in o.get("data", {}))
        else:
            assert not cell.outputs and cell.execution_count is None
    assert checked >= 8
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "## Summary" in text and "## Exercises" in text and "<details>" in text
    assert "**Takeaway:**" in text and "(05-decision-checklist.ipynb)" in text and "(07-guide-audit.ipynb)" in text
    assert "../shared" not in "\n".join(c.source for c in nb.cells)


def test_parameters_cell_reads_with_help():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    lines = code[tagged[0]].source.splitlines()
    for line in lines:
        assert re.fullmatch(r'(\w+): (str|int) = ("[^"]*"|\d+)  # [^=]+', line), line
    assert "any_model.validate(" in code[tagged[0] + 1].source
    inspected = papermill.inspect_notebook(str(NOTEBOOK))
    assert list(inspected) == ["config", "engine", "gpu", "gpus", "nodes", "context", "model_path"]
    assert all(p["help"] and p["inferred_type_name"] in ("str", "int") for p in inspected.values())


def _run(tmp_path: Path, **parameters):
    run_notebook(tmp_path, "06-any-model", **parameters)
    return tmp_path / "06-any-model-out.ipynb"


def test_papermill_bad_parameter_stops_at_validate_with_one_line(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as info:
        _run(tmp_path, config="nosuch-model")
    err = info.value
    assert err.ename == "ParameterError"
    assert err.evalue.startswith("parameter config: 'nosuch-model' is neither a fixture config nor an existing path")
    assert "any_model.validate(" in err.source
    nb = nbformat.read(tmp_path / "06-any-model-out.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].traceback == ["ParameterError: " + err.evalue]
    idx = next(i for i, c in enumerate(nb.cells) if "any_model.validate(" in c.source)
    assert all(c.get("execution_count") is None for c in nb.cells[idx + 1 :] if c.cell_type == "code")


def test_papermill_a_config_path_and_another_engine(tmp_path):
    out = _run(tmp_path, config="../data/configs/deepseek-v3.json", engine="sglang", gpu="h200", gpus=8)
    nb = nbformat.read(out, as_version=4)
    described = next(c for c in nb.cells if c.cell_type == "code" and "setup.describe()" in c.source)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in described.outputs)
    assert "deepseek-v3 (config) on 8× h200-sxm, SGLang" in text
    side = next(
        c
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith("shown(any_model.engine_side_by_side(model")
    )
    table = "".join(o.get("data", {}).get("text/plain", "") for o in side.outputs)
    assert "70,272" in table and "624,640" in table


def test_figures_reproduced_per_engine_counts_the_public_logs():
    # hand count from tests/test_check_log.py: llama.cpp Mistral log K, V, total (3 predictions); SGLang K and V
    # pools (2); Ollama: the 70B Q4_0 model size (1); vLLM: the 87 sweep rows + 2 weights + 2 V0 block counts + 1 V1 token count that misses (92, 91)
    from k3lib.views.calibration import figures_reproduced_table

    # ik_llama.cpp's DeepSeek log adds its c^KV, kv^T and total (3); the vLLM/SGLang logs added in issue 16's
    # second pass: vLLM 107 figures of which 105 within (the LMCache rank mix-up and PR 10511's V0 activation
    # miss), SGLang 4 of 4 (see tests/test_check_log.py for each)
    t = figures_reproduced_table().set_index("engine")
    # + the Mistral log's output buffer (32,768-token vocabulary × 1 sequence × 4 B = 0.125 MiB, printed 0.12)
    assert (t.loc["llama.cpp", "figures"], t.loc["llama.cpp", "reproduced"]) == (7, 7)
    assert (t.loc["sglang", "figures"], t.loc["sglang", "reproduced"]) == (4, 4)
    assert (t.loc["vllm", "figures"], t.loc["vllm", "reproduced"]) == (107, 105)
    # the Mistral CUDA log's compute buffer is modelled, counted apart: 2,160 vs 2,144 MiB (tests/test_check_log.py)
    assert t.loc["llama.cpp", "compute buffers within the model's band"] == "1 / 1"
    # the real-llama.cpp tier: every non-compute row of its CSV (20 families × 13 settings), all equal
    import csv

    from k3lib.core.data import data_file

    with data_file("measured", "llamacpp-0c1e570-cpu.csv").open(encoding="utf-8", newline="") as fh:
        tier = [r for r in csv.DictReader(fh) if r["kind"] != "compute MiB"]
    row = t.loc["llama.cpp@0c1e570, measured here"]
    assert (row["figures"], row["reproduced"], row["logs read"]) == (len(tier), len(tier), 260) == (2298, 2298, 260)
    with data_file("measured", "llamacpp-0c1e570-cpu.csv").open(encoding="utf-8", newline="") as fh:
        comp = [float(r["error_pct"]) for r in csv.DictReader(fh) if r["kind"] == "compute MiB"]
    assert len(comp) == 258 and max(map(abs, comp)) < 20  # the tier's worst compute error: −17.6 %
    assert row["compute buffers within the model's band"] == "258 / 258"
    # Ollama: the Llama 3.1 70B Q4_0 model size (1 prediction); the partial-offload KV split (1 consistency check)
    assert (t.loc["ollama", "figures"], t.loc["ollama", "reproduced"]) == (1, 1)
    assert t.loc["ollama", "log consistency checks passed"] == 1


def test_check_log_table_in_mib():
    from k3lib.views.calibration import check_log_table, engine_log_path

    t = check_log_table(engine_log_path("llamacpp-mistral-7b-32k.log").read_text(), model="mistral-7b-v0.3")
    k = t.set_index("component").loc["K cache"]
    assert k["unit"] == "MiB" and k["logged"] == 2048.0 and k["predicted"] == 2048.0
