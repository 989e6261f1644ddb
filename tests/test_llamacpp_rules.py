"""llama.cpp profile rules without the engine: the hand-worked figures of ik_llama.cpp's MLA modes
and the rule-set switch (the real-engine tier, tests/llamacpp, checks the 0c1e570 rules on a real build)."""

from __future__ import annotations

import pytest

from k3lib.core.errors import K3InputError
from k3lib.engines.llamacpp import llamacpp_cells, llamacpp_memory, supports_rs_rollback
from k3lib.engines.logcheck import check_log
from k3lib.views.calibration import engine_log_path

MiB = 2**20


def test_ik_llama_latent_cache_reproduces_its_log():
    # ik_llama.cpp PR 259: DeepSeek, 61 MLA layers, 32,768 cells, -mla 2, c^KV in q8_0 (576 → 18 blocks × 34 B),
    # printed "c^KV (q8_0): 1166.62 MiB, kv^T: not used"
    m = llamacpp_memory("deepseek-r1", n_ctx=32768, type_k="q8_0", flash_attn=False, ik_mla=2)
    assert m["k"] == 61 * 32768 * (576 // 32 * 34) and m["v"] == 0
    assert f"{m['k'] / MiB:.2f}" == "1166.62"
    chk = check_log(engine_log_path("ik-llama-deepseek-mla2-q8-32k.log").read_text(encoding="utf-8"))
    rows = {r.component: r for r in chk.rows}
    assert rows["K cache"].logged == pytest.approx(1166.62 * MiB) and rows["K cache"].within
    assert rows["V cache"].logged == 0 and rows["V cache"].predicted == 0


def test_ik_llama_mla_1_keeps_a_transposed_f16_copy():
    # -mla 1: c^KV (576, type_k) plus kv^T (512, F16 whatever type_v says: it cannot be quantized)
    m = llamacpp_memory("deepseek-v3", n_ctx=4096, type_k="q8_0", flash_attn=False, ik_mla=1)
    assert m["v"] == 61 * 4096 * 512 * 2
    with pytest.raises(K3InputError) as exc:
        llamacpp_memory("deepseek-v3", n_ctx=4096, ik_mla=4)
    assert exc.value.field == "ik_mla"


def test_rule_sets_differ_where_the_engine_changed():
    # PR 17046 padded every context to 256 cells; before it, 32 without flash attention
    assert llamacpp_cells(n_ctx=1000, flash_attn=False) == (1024, 1)
    assert llamacpp_cells(n_ctx=1000, flash_attn=False, rules="2025") == (1024, 1)  # ⌈1000⌉₃₂ = 1,024 too
    assert llamacpp_cells(n_ctx=1100, flash_attn=False, rules="2025") == (1120, 1)
    assert llamacpp_cells(n_ctx=1100, flash_attn=False) == (1280, 1)
    with pytest.raises(K3InputError):
        llamacpp_cells(n_ctx=0)
    with pytest.raises(K3InputError):
        llamacpp_cells(n_ctx=1000, rules="2024")


def test_recurrent_snapshots_only_for_families_that_roll_back():
    # n_rs_seq = 3 on 4 sequences: Kimi K3 keeps 4 × (1 + 3) rows; Qwen3-Next (no rollback) 4
    k3 = llamacpp_memory("kimi-k3", n_ctx=4096, n_seq=4, n_rs_seq=3)
    qn = llamacpp_memory("qwen3-next-80b", n_ctx=4096, n_seq=4, n_rs_seq=3)
    assert (k3["rs_rows"], qn["rs_rows"]) == (16, 4)
    assert supports_rs_rollback(type("A", (), {"family": "gguf:kimi-k3"})())
    assert not supports_rs_rollback(type("A", (), {"family": "qwen3_next"})())


def test_n_gpu_layers_puts_the_last_layers_and_the_head_on_the_gpu():
    from k3lib.engines.llamacpp import llamacpp_gpu_layers, llamacpp_offload_split

    assert llamacpp_gpu_layers(32, 10) == (range(23, 32), True)  # i ≥ 32 + 1 − 10
    assert llamacpp_gpu_layers(32, 1) == (range(32, 32), True)  # the output layer only
    assert llamacpp_gpu_layers(32, 0) == (range(32, 32), False)
    assert llamacpp_gpu_layers(32, -1) == (range(0, 32), True)  # the default: everything
    # Llama 3.1 8B in BF16, -ngl 10, 8,192 cells: 9 layers of 218,112,000 parameters, the 128,256 × 4,096
    # output head and the final norm on the GPU; 9 of 32 layers' f16 KV (1,024-wide K and V rows)
    s = llamacpp_offload_split("llama-3.1-8b", n_gpu_layers=10, n_ctx=8192, weights="bf16")
    assert s["gpu"]["weights"] == 9 * 218_112_000 * 2 + 128_256 * 4096 * 2 + 4096 * 2
    assert s["gpu"]["kv"] == 9 * 8192 * 2 * 1024 * 2
    assert s["gpu"]["weights"] + s["host"]["weights"] == 8_030_261_248 * 2
    assert s["host"]["kv"] == 23 * 8192 * 2 * 1024 * 2


def test_override_tensor_keeps_the_experts_on_the_host():
    # `-ngl 99 -ot exps=CPU` for Kimi K3 (native: MXFP4 experts): the GPU holds everything but the token
    # embedding and the routed experts, which is the whole checkpoint's split by group
    from k3lib.core.memory import weights_bytes_by_group
    from k3lib.core.models import get_model
    from k3lib.engines.llamacpp import llamacpp_offload_split

    groups = weights_bytes_by_group(get_model("kimi-k3"), "native")
    s = llamacpp_offload_split(
        "kimi-k3", n_gpu_layers=-1, n_ctx=262144, override_tensor=["exps"], type_k="q8_0", type_v="q8_0"
    )
    assert s["host"]["weights"] == groups["embedding"] + groups["routed_experts"]
    assert s["gpu"]["weights"] == sum(groups.values()) - groups["embedding"] - groups["routed_experts"]
    assert s["host"]["kv"] == 0
    with pytest.raises(K3InputError) as exc:
        llamacpp_offload_split("kimi-k3", n_gpu_layers=-1, n_ctx=4096, override_tensor=["attn_q"])
    assert exc.value.field == "override_tensor"


def test_gguf_kv_sharing_layers_own_no_cache():
    # Gemma 4 writes attention.shared_kv_layers; Gemma-3n's llama.cpp fixes n_layer_kv_from_start at 20.
    # 10 layers, every 5th full (4 and 9), the last 4 (6–9) sharing: owning 0–5 = 5 sliding + 1 full; shared 3 + 1.
    from k3lib.loaders._common import TensorInfo
    from k3lib.loaders.gguf_file import architecture_from_gguf

    meta = {
        "general.architecture": "gemma4",
        "gemma4.embedding_length": 256,
        "gemma4.block_count": 10,
        "gemma4.attention.head_count": 4,
        "gemma4.attention.head_count_kv": 2,
        "gemma4.attention.key_length": 64,
        "gemma4.feed_forward_length": 512,
        "gemma4.attention.sliding_window": 256,
        "gemma4.attention.sliding_window_pattern": [i % 5 < 4 for i in range(10)],
        "gemma4.attention.shared_kv_layers": 4,
        "tokenizer.ggml.tokens": 512,
    }
    tensors = [TensorInfo("token_embd.weight", "F32", (256, 512), 256 * 512 * 4, "embedding", None, False)]
    arch = architecture_from_gguf(meta, tensors, id="g4", source="test")
    got = sorted((g.kind, g.count, g.kv_shared) for g in arch.attention)
    assert got == [("full", 1, False), ("full", 1, True), ("sliding", 3, True), ("sliding", 5, False)]
    m = llamacpp_memory(arch, n_ctx=4096)
    assert m["k"] == 1 * 4096 * 2 * 64 * 2  # one owning full layer, f16
    assert m["swa_k"] == 5 * 768 * 2 * 64 * 2  # five owning sliding layers, ⌈256 + 512⌉₂₅₆ cells
    meta["gemma4.attention.shared_kv_layers"] = 10
    with pytest.raises(K3InputError) as exc:
        architecture_from_gguf(meta, tensors, id="g4", source="test")
    assert exc.value.field == "gguf.gemma4.attention.shared_kv_layers"


def test_engine_estimate_and_cli_take_ngl_and_override_tensor(capsys):
    import json

    from k3lib.cli import main
    from k3lib.engines import estimate_for_engine

    est = estimate_for_engine(
        "llama.cpp", model="llama-3.1-8b", gpu="h100", gpus=1, context=8192, weights="bf16", n_gpu_layers=10
    )
    # worked above: 9 layers + head + final norm on the GPU; 9 of 32 layers' KV
    assert est.weights_bytes == 9 * 218_112_000 * 2 + 128_256 * 4096 * 2 + 4096 * 2
    assert est.kv_needed_bytes == 9 * 8192 * 2 * 1024 * 2
    rc = main(
        [
            "estimate",
            "--model",
            "llama-3.1-8b",
            "--engine",
            "llama.cpp",
            "--gpu",
            "h100",
            "--gpus",
            "1",
            "--context",
            "8192",
            "--weights",
            "bf16",
            "--n-gpu-layers",
            "10",
            "--json",
        ]
    )
    assert rc == 0 and json.loads(capsys.readouterr().out)["weights_bytes"] == est.weights_bytes
    for argv, field in (
        (["--engine", "vllm", "--n-gpu-layers", "3"], "n-gpu-layers"),
        (["--engine", "llama.cpp", "--n-gpu-layers", "-2"], "n-gpu-layers"),
        (["--engine", "llama.cpp", "--override-tensor", "("], "override-tensor"),
    ):
        rc = main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", *argv])
        assert rc == 2 and field in capsys.readouterr().err


def test_ggml_block_types_match_the_gguf_package():
    # every GGUF block type the workbook knows has the (weights, bytes) per block of llama.cpp's own gguf-py
    import gguf

    from k3lib.core.data import read_csv_rows
    from k3lib.engines.gguf_recipe import GGML_TYPES

    rows = [r for r in read_csv_rows("weight_formats.csv") if r["kind"] == "ggml block type"]
    assert {"q4_0", "q4_1", "q5_0", "q5_1", "iq4_xs", "iq2_xxs", "iq1_m"} <= {r["id"] for r in rows}
    for r in rows:
        qt = gguf.GGMLQuantizationType[r["id"].upper()]
        assert (int(r["block_weights"]), int(r["block_bytes"])) == gguf.GGML_QUANT_SIZES[qt], r["id"]
        assert float(r["bits_per_weight"]) == 8 * int(r["block_bytes"]) / int(r["block_weights"])
    for name, (per, size) in GGML_TYPES.items():
        assert gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name.upper()]] == (per, size), name


def test_gemma_counts_its_sandwich_norms():
    # Gemma 2/3 normalise before and after attention and the MLP: 4 RMS norms of width D per layer, not 2
    # (the real llama.cpp's n_params for the tier's gemma3 model agrees, tests/llamacpp); Gemma 3 27B:
    # 62 layers × 2 extra norms × 5,376 = 666,624 parameters more than a llama-style count
    import dataclasses

    from k3lib.core.models import get_model

    g = get_model("gemma-3-27b")
    assert g.norms_per_layer == 4 and get_model("llama-3.1-8b").norms_per_layer == 2
    llama_style = dataclasses.replace(g, norms_per_layer=2)
    assert g.params_total - llama_style.params_total == 62 * 2 * 5376
    with pytest.raises(K3InputError) as exc:
        dataclasses.replace(g, norms_per_layer=0)
    assert exc.value.field == "norms_per_layer"


def test_engine_estimate_takes_ik_mla_and_snapshots():
    from k3lib.engines import estimate_for_engine

    # ik_llama.cpp -mla 2, q8_0 latent, 32K on one GPU: PR 259's 1,166.62 MiB c^KV (see above), no kv^T
    est = estimate_for_engine(
        "llama.cpp", model="deepseek-r1", gpu="h200", gpus=1, context=32768, kv_dtype="q8_0", flash_attn=False, ik_mla=2
    )
    assert est.kv_needed_bytes == 61 * 32768 * 612
    # Kimi K3 with 3 rollback snapshots per sequence: the KDA state rows quadruple, the MLA cache does not
    base = estimate_for_engine("llama.cpp", model="kimi-k3", gpu="h200", gpus=8, context=8192)
    snap = estimate_for_engine("llama.cpp", model="kimi-k3", gpu="h200", gpus=8, context=8192, n_rs_seq=3)
    from k3lib.engines.llamacpp import llamacpp_memory

    m = llamacpp_memory("kimi-k3", n_ctx=8192)
    assert (snap.kv_needed_bytes - base.kv_needed_bytes) * 8 == 3 * (m["r"] + m["s"])


def test_offload_split_of_a_model_with_four_norms_per_layer():
    # Gemma 3 27B (4 norms per layer, tied head), -ngl 1: only the output layer on the GPU — the final norm
    # (5,376 × 2 B in BF16) and the tied head, which llama.cpp loads as a second copy of the token embedding
    # (V × 5,376 × 2 B); every layer and the embedding itself stay on the host
    from k3lib.core.memory import weights_bytes_by_group
    from k3lib.core.models import get_model
    from k3lib.engines.llamacpp import llamacpp_offload_split

    g = get_model("gemma-3-27b")
    assert g.tie_word_embeddings and g.norms_per_layer == 4
    s = llamacpp_offload_split("gemma-3-27b", n_gpu_layers=1, n_ctx=4096, weights="bf16")
    assert s["gpu"]["weights"] == 5376 * 2 + g.vocab_size * 5376 * 2
    assert s["host"]["weights"] == sum(weights_bytes_by_group(g, "bf16").values()) - 5376 * 2
