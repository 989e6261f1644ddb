"""Issue 21 §3 "One offload model": each test fails on main 040437e and passes after.

Expected values are worked by hand from the inputs (sizes of the machines, the core's
rules written out below), not read back from the function under test:

* core activation at batch 1 (``k3lib.core.memory.activation_bytes``): one 8,192-token chunk
  through the widest MLP in BF16 plus FP32 logits, $A = 8192·2·(4D + 2I_{max}) + 4V$;
* core overhead on one GPU at TP 1: $1\\,GiB + \\lfloor 0.05·P \\rfloor$ of the GPU's payload $P$.
"""

from __future__ import annotations

import json
import math

import pytest

from k3lib.cli import main
from k3lib.core.errors import K3InputError

GB, GiB = 10**9, 2**30
# Kimi K3: D 7,168, V 163,840, widest MLP 16 routed + 2 shared experts of 3,072 = 55,296
K3_ACTIVATION = 8192 * 2 * (4 * 7168 + 2 * 55296) + 163840 * 4  # 2,282,356,736 B
# gpt-oss-120b: D 2,880, V 201,088, widest MLP 4 routed experts of 2,880 = 11,520
GPT_OSS_ACTIVATION = 8192 * 2 * (4 * 2880 + 2 * 11520) + 201088 * 4  # 567,035,392 B
K3_EXPERT_BYTES = 3 * 3584 * 3072 * 144 / 256  # Q4_K_M, one expert
K3_LAYER_BYTES = 896 * K3_EXPERT_BYTES


def overhead(payload: int) -> int:
    return GiB + math.floor(0.05 * payload)


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# ------------------------------------------------------------ the core's overhead and activation


def test_vram_side_uses_the_core_overhead_and_activation():
    """Before: dense + KV + a flat 1 GB (32.95 GB). After: + the core's activation and
    1 GiB + 5 % fragmentation (37.01 GB), as make_plan has them."""
    from k3lib.serving.offload_model import plan_offload

    p = plan_offload(model="kimi-k3", weights="q4_k_m", gpu="rtx-4090-48gb", context=8192)
    payload = p.parts.dense_bytes + p.vram_kv_bytes + K3_ACTIVATION
    assert p.vram_needed_bytes == payload + overhead(payload)
    assert round(p.vram_needed_bytes / GB, 2) == 37.01


def test_offload_activation_is_make_plans():
    from k3lib.core.plan import make_plan
    from k3lib.serving.offload_model import plan_offload

    off = plan_offload(model="gpt-oss-120b", weights="q4_k_m", gpu="rtx-4090", context=8192)
    full = make_plan(model="gpt-oss-120b", weights="q4_k_m", gpu="rtx-4090", gpus=1, context=8192)
    assert off.vram_activation_bytes == GPT_OSS_ACTIVATION == full.peak.activation_bytes


# ------------------------------------------------------------ best_offload_plan + llama.cpp flags


def test_best_offload_plan_keeps_the_most_expert_layers_that_fit():
    """gpt-oss-120b Q4_K_M on one RTX 4090 (24 GiB, no usable figure): the largest N with
    W_dense + N·X + KV + A + 1 GiB + ⌊5 %⌋ ≤ 24 GiB."""
    from k3lib.serving.offload_model import best_offload_plan

    p = best_offload_plan(
        model="gpt-oss-120b", gpu="rtx-4090", weights="q4_k_m", kv_dtype="bf16", context=8192, batch=1
    )
    x, cap = p.parts.layer_experts_bytes, 24 * GiB

    def needed(n):
        payload = p.parts.dense_bytes + math.ceil(n * x) + p.vram_kv_bytes + GPT_OSS_ACTIVATION
        return payload + overhead(payload)

    by_hand = max(n for n in range(37) if needed(n) <= cap)
    assert p.expert_layers_on_gpu == by_hand == 12
    # the printed command carries exactly that: the first 36 − 12 = 24 MoE blocks (0 … 23) in host memory
    assert p.llamacpp_args[:4] == ("-ngl", "999", "--n-cpu-moe", "24")
    assert p.n_cpu_moe == 24 and "-c 8192" in p.llamacpp_flags


def test_best_offload_plan_is_none_when_nothing_loads():
    from k3lib.serving.offload_model import best_offload_plan

    # the dense part alone (31.3 GB) + KV + activation + overhead is more than a 24 GiB card
    assert best_offload_plan(model="kimi-k3", gpu="rtx-4090", weights="q4_k_m", context=8192) is None
    # gpt-oss-120b's maximum context is 131,072 tokens
    assert best_offload_plan(model="gpt-oss-120b", gpu="rtx-4090", weights="q4_k_m", context="256K") is None
    # at the most the card holds (12 layers) RAM keeps 24 of 36 layers' 64.5 GB of experts (43.0 GB)
    # + the embedding (0.3 GB) + 14 GB for the host: 50 GB is short, 64 GB is not
    assert best_offload_plan(model="gpt-oss-120b", gpu="rtx-4090", weights="q4_k_m", ram="50GB") is None
    assert best_offload_plan(model="gpt-oss-120b", gpu="rtx-4090", weights="q4_k_m", ram="64GB").fits


def test_llamacpp_flags_count_blocks_past_the_dense_layer():
    """K3's block 0 is dense, MoE blocks are 1 … 92: offloading 2 MoE layers is blocks 1 and 2,
    ``--n-cpu-moe 3`` (llama.cpp counts blocks, and block 0 has no experts)."""
    import dataclasses

    from k3lib.serving.offload_model import plan_offload

    base = plan_offload(model="kimi-k3", gpu="h200", context=8192)
    p = dataclasses.replace(base, expert_layers_on_gpu=90)
    assert p.n_cpu_moe == 3
    assert p.llamacpp_override_tensor == r"blk\.(1|2)\.ffn_(up|down|gate)_exps=CPU"
    all_on_gpu = dataclasses.replace(base, expert_layers_on_gpu=92)
    assert "--n-cpu-moe" not in all_on_gpu.llamacpp_args and all_on_gpu.llamacpp_override_tensor is None
    assert base.n_cpu_moe == 93


# ------------------------------------------------------------ unified memory: one pool


def test_dgx_spark_is_one_pool_and_k3_does_not_fit(capsys):
    """Before: FITS at 1.97 tokens/s with 1,546 GB "in RAM" beside 128 GiB. After: the GPU side
    and the host side come out of one 128 GiB pool, which K3 at Q4_K_M (1.58 TB) overflows."""
    rc, out, _ = run(capsys, "offload", "--gpu", "dgx-spark", "--json")
    doc = json.loads(out)
    assert rc == 3 and doc["fits"] is False and doc["unified_memory"] is True
    assert doc["pool_needed_bytes"] == doc["vram_needed_bytes"] + doc["ram_needed_bytes"]
    assert doc["vram_available_bytes"] == 128 * GiB
    assert doc["decode_tokens_per_s"] is None and doc["prefill_tokens_per_s"] is None
    rc, out, _ = run(capsys, "offload", "--gpu", "dgx-spark")
    assert rc == 3 and "DOES NOT FIT" in out and "tokens/s" not in out.replace("no tokens/s", "")


def test_unified_machine_reads_both_tiers_at_the_pools_bandwidth():
    """gpt-oss-120b on a DGX Spark: both tiers read the one LPDDR5x pool at 273 GB/s (before:
    the experts at a separate 70 GB/s)."""
    from k3lib.serving.offload_model import plan_offload

    p = plan_offload(model="gpt-oss-120b", gpu="dgx-spark", context=8192)
    gpu_t, host_t = p.tiers
    assert p.fits and p.ram_bandwidth_bytes_per_s == 273 * GB
    assert p.decode_tokens_per_s == pytest.approx(273 * GB / (gpu_t.read_bytes_per_step + host_t.read_bytes_per_step))
    assert p.pool_needed_bytes <= 128 * GiB


def test_unified_machine_refuses_a_separate_ram_or_bandwidth():
    from k3lib.serving.offload_model import plan_offload

    for kwargs, field in (
        ({"ram": "1TB"}, "ram"),
        ({"ram_bandwidth": "70GB/s"}, "ram_bandwidth"),
        ({"host": "epyc-9005"}, "host"),
    ):
        with pytest.raises(K3InputError) as err:
            plan_offload(gpu="dgx-spark", **kwargs)
        assert err.value.field == field


# ------------------------------------------------------------ host bandwidth from the host


def test_host_catalogue_gives_the_bandwidth(capsys):
    """``--ram 1536GiB --host epyc-9005``: 12 channels × 6,000 MT/s × 8 B = 576 GB/s (before: a
    silent 70 GB/s; ``--host`` did not exist)."""
    rc, out, _ = run(capsys, "offload", "--ram", "1536GiB", "--host", "epyc-9005", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["ram_bandwidth_bytes_per_s"] == 12 * 6000 * 10**6 * 8 == 576 * GB
    assert doc["ram_bandwidth_assumed"] is False and "epyc-9005" in doc["ram_bandwidth_basis"]
    rc, out, _ = run(capsys, "offload", "--host", "epyc-9005", "--ram-bandwidth", "400GB/s", "--json")
    assert json.loads(out)["ram_bandwidth_bytes_per_s"] == 400 * GB


def test_without_a_host_the_70_gb_s_is_stated_as_an_assumption(capsys):
    rc, out, _ = run(capsys, "offload", "--ram", "1536GB", "--json")
    doc = json.loads(out)
    assert doc["ram_bandwidth_bytes_per_s"] == 70 * GB and doc["ram_bandwidth_assumed"] is True
    assert doc["ram_bandwidth_basis"].startswith("assumed: guide 004's 70 GB/s")
    rc, out, _ = run(capsys, "offload", "--ram", "1536GB")
    assert "assumed: guide 004's 70 GB/s" in out


def test_ram_beyond_the_hosts_maximum_is_refused():
    from k3lib.serving.offload_model import plan_offload

    with pytest.raises(K3InputError) as err:  # a desktop board takes 192 GB
        plan_offload(host="desktop-ddr5-5600", ram="1TB")
    assert err.value.field == "ram"


# ------------------------------------------------------------ careless input


@pytest.mark.parametrize("flag, field", [("--ram", "ram"), ("--ram-bandwidth", "ram_bandwidth"), ("--host", "host")])
def test_empty_values_are_named_errors(capsys, flag, field):
    """Before: ``--ram ""`` and ``--ram-bandwidth ""`` fell back to the defaults (exit 0)."""
    rc, _, err = run(capsys, "offload", f"{flag}=")
    assert rc == 2 and err.startswith(f"k3plan: error: {field}:")


@pytest.mark.parametrize("value", ["３", "٣", "1e1", "2.5", "-1"])
def test_expert_layers_take_ascii_digits_only(capsys, value):
    """Before: Python's int() read '３' (full-width) and '٣' (Arabic-Indic) as 3."""
    rc, _, err = run(capsys, "offload", f"--expert-layers-on-gpu={value}")
    assert rc == 2 and err.startswith("k3plan: error: expert_layers_on_gpu:")


@pytest.mark.parametrize("value, n", [("0", 0), ("3", 3), ("1,0", 10), ("auto", 0)])
def test_expert_layers_counts_and_auto(capsys, value, n):
    rc, out, _ = run(capsys, "offload", f"--expert-layers-on-gpu={value}", "--json")
    assert json.loads(out)["expert_layers_on_gpu"] == n


# ------------------------------------------------------------ the user's own model


def test_offload_plans_the_users_gguf(capsys, tmp_path):
    """The demo GGUF (2 layers × 8 experts): routed experts gate/up Q4_K 256·256·8 elements at
    144 B per 256 and down Q6_K at 210 B per 256; the embedding 256·512 at Q8_0 (34 B per 32).
    Before: ``offload --gguf`` was an unrecognized argument."""
    from k3lib.views.demo_gguf import write_demo_gguf

    path = write_demo_gguf(tmp_path)
    n = 256 * 256 * 8
    routed = 2 * (2 * n * 144 // 256 + n * 210 // 256)  # 2,039,808 B
    embedding = 256 * 512 * 34 // 32  # 139,264 B
    rc, out, _ = run(capsys, "offload", "--gguf", str(path), "--gpu", "rtx-4090", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["model"] == "tiny-moe" and doc["weights"] == "native"
    assert doc["ram_weights_bytes"] == routed + embedding
    rc, out, _ = run(
        capsys, "offload", "--gguf", str(path), "--gpu", "rtx-4090", "--expert-layers-on-gpu", "auto", "--json"
    )
    assert json.loads(out)["expert_layers_on_gpu"] == 2


def test_offload_plans_the_users_config(capsys):
    from k3lib.core.data import DATA_DIR

    rc, out, _ = run(
        capsys,
        "offload",
        "--config",
        str(DATA_DIR / "configs" / "qwen3-30b-a3b.json"),
        "--weights",
        "q4_k_m",
        "--gpu",
        "rtx-4090",
        "--json",
    )
    doc = json.loads(out)
    assert rc == 0 and doc["model"] == "qwen3-30b-a3b" and doc["moe_layers"] == 48


def test_best_offload_plan_spreads_layers_over_gpus():
    """2 × RTX 4090: each GPU holds ⌈P/2⌉ + 1 GiB + ⌊5 % of that⌋ ≤ 24 GiB (llama.cpp's layer split,
    no communicator buffers); the command names the split and the blocks left on the CPU."""
    from k3lib.serving.offload_model import best_offload_plan

    p = best_offload_plan(model="gpt-oss-120b", gpu="rtx-4090", gpus=2, weights="q4_k_m", context=8192)
    x = p.parts.layer_experts_bytes

    def per_gpu(n):
        half = -(-(p.parts.dense_bytes + math.ceil(n * x) + p.vram_kv_bytes + GPT_OSS_ACTIVATION) // 2)
        return half + overhead(half)

    by_hand = max(n for n in range(37) if per_gpu(n) <= 24 * GiB)
    assert p.expert_layers_on_gpu == by_hand == 25
    assert p.llamacpp_args == ("-ngl", "999", "--n-cpu-moe", "11", "-c", "8192", "--split-mode", "layer")
