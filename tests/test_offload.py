"""Tests for k3lib.studies.offload (offload planner and decode bandwidth model).

Expected values are worked by hand from the formula and the inputs: Kimi K3 has 92 MoE
layers of 896 routed experts, 16 active, each expert 3·3584·3072 weights; Q4_K_M is
4.5 bits per weight (144 B per 256); guide 004's RAM runs at 70 GB/s; an RTX 4090 48GB
reads 1,008 GB/s and sits on PCIe 4.0 x16 (32 GB/s).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from nbrun import run_notebook

from k3lib.core.errors import K3InputError
from k3lib.core.memory import weights_bytes_by_group
from k3lib.core.models import get_model
from k3lib.studies.offload import (
    GUIDE004_RAM_BW_BYTES_PER_S,
    HostAssumptions,
    Tier,
    all_gpu_decode_tokens_per_s,
    ddr_bandwidth_bytes_per_s,
    decode_seconds_per_step,
    fit_two_tier_bytes,
    guide004_device_table,
    guide004_memory_table,
    guide004_rows,
    layers_for_vram,
    mac_studio_table,
    moe_bytes,
    offload_curve,
    parse_bandwidth,
    partial_offload_table,
    plan_offload,
    prefill_table,
    ram_platform_table,
    roofline_efficiency_for,
    slowdown_table,
    unified_memory_estimate,
)
from k3lib.views.explorers import offload_figure
from k3lib.views.explorers import offload_validate as validate
from k3lib.views.notebook import ParameterError

GB = 10**9
EXPERT_PARAMS = 3 * 3584 * 3072  # 33,030,144
EXPERT_BYTES = EXPERT_PARAMS * 144 / 256  # Q4_K_M: 18,579,456 B
ACTIVE_EXPERT_BYTES = 92 * 16 * EXPERT_BYTES  # read from RAM per token: 27.35 GB
ROUTED_BYTES = 92 * 896 * EXPERT_BYTES  # 1,531,541,716,992 B
EMBED_ROW = 7168 * 4.5 / 8  # one embedding row, read per token
GiB = 2**30
# the core's activation rule for K3 at batch 1: one 8,192-token chunk through the widest layer
# (16 routed + 2 shared experts of 3,072 = 55,296) in BF16, plus FP32 logits over 163,840 tokens
K3_ACTIVATION = 8192 * 2 * (4 * 7168 + 2 * 55296) + 163840 * 4  # 2,282,356,736 B


def core_overhead(payload):
    """The core's per-GPU overhead at TP 1: 1 GiB CUDA context + ⌊5 % of the payload⌋."""
    return GiB + int(0.05 * payload)


def test_expert_bytes_by_hand():
    parts = moe_bytes("kimi-k3", "q4_k_m")
    assert parts.expert_bytes == EXPERT_BYTES == 18_579_456
    assert parts.routed_bytes == ROUTED_BYTES
    # dense + embedding + routed = every weight
    total = sum(weights_bytes_by_group(get_model("kimi-k3"), "q4_k_m").values())
    assert parts.dense_bytes + parts.embedding_bytes + parts.routed_bytes == pytest.approx(total, abs=8)


def test_decode_time_is_active_experts_over_ram_plus_resident_over_hbm():
    p = plan_offload(model="kimi-k3", weights="q4_k_m", gpu="rtx-4090-48gb", context=8192)
    gpu_read = p.parts.dense_bytes + p.vram_kv_bytes
    ram_read = ACTIVE_EXPERT_BYTES + EMBED_ROW
    expected = ram_read / (70 * GB) + gpu_read / (1008 * GB)
    assert p.decode_seconds_per_step == pytest.approx(expected, rel=1e-12)
    assert p.decode_tokens_per_s == pytest.approx(1 / expected, rel=1e-12)
    gpu_t, ram_t = p.tiers
    assert ram_t.read_bytes_per_step == pytest.approx(ram_read)
    assert 2.36 < p.decode_tokens_per_s < 2.38


def test_only_active_experts_are_read():
    p = plan_offload()
    # 16 of 896 per layer: the RAM read is 16/896 of what RAM holds in experts
    assert p.tiers[1].read_bytes_per_step - EMBED_ROW == pytest.approx(ROUTED_BYTES * 16 / 896)


def test_decode_seconds_sum_over_devices():
    tiers = [Tier("GPU", 0, 30e9, 1000 * GB), Tier("RAM", 0, 70e9, 70 * GB)]
    assert decode_seconds_per_step(tiers) == pytest.approx(0.03 + 1.0)
    with pytest.raises(K3InputError):
        Tier("RAM", 0, 1.0, 0)


def test_guide004_memory_figures():
    from k3lib.studies.offload import GUIDE004_GPU_ASSUMPTIONS

    p = plan_offload(
        model="kimi-k3",
        weights="q4_k_m",
        gpu="rtx-4090-48gb",
        context=8192,
        kv_dtype="bf16",
        assumptions=GUIDE004_GPU_ASSUMPTIONS,
    )
    # VRAM: dense weights + KV at 8K (27,648 B/token latent + KDA state in FP32) + 1 GB
    kv = 27648 * 8192 + 69 * (96 * 128 * 128 + (96 * 128 * 2 + 96 * 128) * 3) * 4
    assert p.vram_kv_bytes == kv
    assert p.vram_needed_bytes == p.parts.dense_bytes + kv + GB
    assert round(p.vram_needed_bytes / GB) == 33  # guide: 33 GB
    assert round(ROUTED_BYTES / GB, 1) == 1531.5  # guide: 1,531 GB
    assert p.ram_weights_bytes == pytest.approx(ROUTED_BYTES + p.parts.embedding_bytes, abs=1)
    assert p.ram_needed_bytes == p.ram_weights_bytes + (8 + 4 + 2) * GB
    t = guide004_memory_table()
    assert t["guide (GB)"].tolist() == [33, 1531, 1531, 1531, 1562]
    assert t["model (GB)"].tolist()[1] == 1531.5


def test_partial_offload_moves_n_layers():
    base = plan_offload(context=8192)
    n = 10
    p = dataclasses.replace(base, expert_layers_on_gpu=n)
    # the experts plus the core's 5 % fragmentation on them
    assert p.vram_needed_bytes - base.vram_needed_bytes == pytest.approx(1.05 * n * 896 * EXPERT_BYTES, abs=2)
    assert base.ram_weights_bytes - p.ram_weights_bytes == pytest.approx(n * 896 * EXPERT_BYTES, abs=1)
    assert p.tiers[0].read_bytes_per_step - base.tiers[0].read_bytes_per_step == pytest.approx(n * 16 * EXPERT_BYTES)
    assert base.tiers[1].read_bytes_per_step - p.tiers[1].read_bytes_per_step == pytest.approx(n * 16 * EXPERT_BYTES)
    full = dataclasses.replace(base, expert_layers_on_gpu=92)
    assert full.vram_needed_bytes == pytest.approx(base.all_gpu_bytes - 1.05 * base.parts.embedding_bytes, abs=2)


def test_layers_for_vram():
    p = plan_offload(gpu="h200")
    base = p.parts.dense_bytes + p.vram_kv_bytes + K3_ACTIVATION
    layer = 896 * EXPERT_BYTES
    assert layers_for_vram(p, base + core_overhead(base) - 1) == 0
    assert layers_for_vram(p, base + 3 * layer + core_overhead(base + 3 * layer)) == 3
    assert layers_for_vram(p, 10**15) == 92
    # usable memory: 48 GiB (no figure), 96 GiB, 140.4 GiB; N = ⌊(V − 1 GiB − 1.05·base) / (1.05·X)⌋
    caps = [48 * GiB, 96 * GiB, round(140.4 * GiB)]
    expected = [int((v - GiB - 1.05 * base) // (1.05 * layer)) for v in caps]
    assert expected == [0, 3, 6]
    assert partial_offload_table()["expert layers that fit"].tolist() == expected


def test_batch_reads_distinct_experts():
    parts = moe_bytes("kimi-k3", "q4_k_m")
    assert parts.distinct_experts(1) == pytest.approx(16)
    assert parts.distinct_experts(4) == pytest.approx(896 * (1 - (1 - 16 / 896) ** 4))
    p4 = plan_offload(batch=4)
    assert p4.decode_tokens_per_s == pytest.approx(4 / p4.decode_seconds_per_step)


def test_prefill_crosses_pcie():
    p = plan_offload(gpu="rtx-4090-48gb", context=8192)
    touched = 1 - (1 - 16 / 896) ** 512
    assert p.prefill_fraction_touched == pytest.approx(touched)
    assert p.prefill_link_seconds_per_ubatch == pytest.approx(ROUTED_BYTES * touched / (32 * GB))
    assert p.prefill_tokens_per_s == pytest.approx(512 / p.prefill_link_seconds_per_ubatch)
    mac = plan_offload(gpu="m3-ultra-512gb")
    assert mac.prefill_link_seconds_per_ubatch is None
    assert prefill_table()["link s / micro-batch"].tolist()[:2] == [47.9, 23.9]


def test_unified_memory_machine_is_noted_and_streams_from_disk():
    p = plan_offload(gpu="m3-ultra-512gb")
    assert any("unified memory" in n for n in p.notes)
    u = unified_memory_estimate(device="m3-ultra-512gb", gpu_share=0.75, disk_bandwidth="6GB/s")
    assert u.usable_bytes == int(512 * 2**30 * 0.75)
    assert u.tokens_per_s == pytest.approx(1 / (u.memory_read_bytes / (819 * GB) + u.disk_read_bytes / (6 * GB)))
    assert u.disk_read_bytes == pytest.approx((1 - u.resident_expert_share) * ACTIVE_EXPERT_BYTES)
    assert u.tokens_per_s < 1  # guide 000: "well under 1 tok/s"
    mac = mac_studio_table()
    assert mac["decode tokens/s"].iloc[-1] == round(819 * GB / (104e9 * 4.5 / 8), 2)


def test_guide004_device_table_has_all_17_devices():
    rows = guide004_rows()
    assert len(rows) == 17
    t = guide004_device_table()
    assert t["guide tokens/s"].tolist() == [float(r["value"]) for r in rows]
    assert t["model ÷ guide"].between(1.4, 1.65).all()
    a100 = t.query("device == 'A100 40GB PCIe'")
    expected = 1 / (
        (ACTIVE_EXPERT_BYTES + EMBED_ROW) / (70 * GB)
        + plan_offload(gpu="a100-pcie-40gb").tiers[0].read_bytes_per_step / (1555 * GB)
    )
    assert a100["model tokens/s"].item() == round(expected, 2)


def test_fit_two_tier_recovers_known_reads():
    import pandas as pd

    r, g = 40e9, 50e9
    bws = [256.0, 546.0, 1008.0, 1792.0]
    df = pd.DataFrame({"GPU bandwidth (GB/s)": bws, "guide tokens/s": [1 / (r / 70e9 + g / (b * 1e9)) for b in bws]})
    fit = fit_two_tier_bytes(df)
    assert fit["ram_read_bytes"] == pytest.approx(r) and fit["gpu_read_bytes"] == pytest.approx(g)
    assert fit["rows_within_0_05"] == 4


def test_slowdown_and_roofline():
    from k3lib.studies.parallel import distribute

    pl = distribute(model="kimi-k3", gpu="h200", tp=8, pp=2, nodes=2, weights="q4_k_m", context="8K")
    parts = moe_bytes("kimi-k3", "q4_k_m")
    active = parts.dense_bytes + ACTIVE_EXPERT_BYTES
    kv = sum(s.kv_cache_bytes for s in pl.shares)
    assert all_gpu_decode_tokens_per_s(pl) == pytest.approx(4800 * GB / (active / 8 + kv), rel=1e-6)
    off = plan_offload()
    t = slowdown_table(off, all_gpu_tokens_per_s=600.0, efficiencies=(1.0, 0.1))
    assert t["slowdown (×)"].tolist() == [
        round(600 / off.decode_tokens_per_s, 1),
        round(60 / off.decode_tokens_per_s, 1),
    ]
    assert roofline_efficiency_for(250.0) == (0.04, 0.4)


def test_ram_platforms():
    assert ddr_bandwidth_bytes_per_s(mt_per_s=4400, channels=2) == 70_400_000_000
    assert ddr_bandwidth_bytes_per_s(mt_per_s=4800, channels=12) == 460_800_000_000
    t = ram_platform_table()
    assert t["holds the experts"].tolist() == [False, True, True, True]


def test_input_errors_name_the_field():
    with pytest.raises(K3InputError) as err:
        plan_offload(model="llama-3.1-70b")
    assert err.value.field == "model"
    with pytest.raises(K3InputError) as err:
        plan_offload(model="kimi-k3@guide-004")
    assert err.value.field == "model"
    with pytest.raises(K3InputError) as err:
        plan_offload(expert_layers_on_gpu=93)
    assert err.value.field == "expert_layers_on_gpu"
    with pytest.raises(K3InputError) as err:
        plan_offload(ram_bandwidth="fast")
    assert err.value.field == "ram_bandwidth"
    with pytest.raises(K3InputError) as err:
        plan_offload(ram="-5GB")
    assert err.value.field == "ram"
    with pytest.raises(K3InputError) as err:
        HostAssumptions(os_bytes=-1)
    assert err.value.field == "os_bytes"
    assert parse_bandwidth("70GB/s") == GUIDE004_RAM_BW_BYTES_PER_S == 70 * GB
    assert parse_bandwidth("70 GB/s") == 70 * GB


def test_notebook_validate_gives_one_line():
    with pytest.raises(ParameterError) as err:
        validate(gpu="rtx-4090-48gb", ram_bandwidth="0GB/s")
    assert str(err.value).startswith("parameter ram_bandwidth:")
    assert validate(gpu="rtx-4090-48gb", ram="1536GB").ram_available_bytes == 1536 * GB


def test_ram_fit_counts_host_needs():
    p = plan_offload(ram="1536GB")
    assert p.fits_ram is False  # 1,546 GB needed with the OS and engine
    assert plan_offload(ram="1536GiB").fits_ram is True
    assert plan_offload().fits_ram is None


def test_to_dict_is_json():
    d = plan_offload(ram="2TB").to_dict()
    assert json.loads(json.dumps(d))["decode_tokens_per_s"] == pytest.approx(d["decode_tokens_per_s"])
    assert d["fits_ram"] is True


def test_charts_validate_and_callback_gives_new_figures():
    from k3lib.views import charts_parallel as charts

    charts.tokens_per_s_curve(offload_curve(gpus=["rtx-4090-48gb"]), marks=[51.5]).to_dict()
    charts.device_comparison(guide004_device_table()).to_dict()
    a = offload_figure().to_dict()
    b = offload_figure(expert_layers_on_gpu=20).to_dict()
    c = offload_figure(ram_bandwidth="307GB/s").to_dict()
    assert a != b and a != c and b != c


def test_offload_explorer_builds():
    pytest.importorskip("ipywidgets")
    from k3lib.views.widgets_parallel import offload_explorer

    box = offload_explorer()
    controls = {c.description: c for row in box.children[:-1] for c in row.children}
    controls["RAM BW"].value = "307GB/s"
    controls["expert layers on GPU"].value = 5


# ------------------------------------------------------------------ notebook 04 under papermill


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _papermill(tmp_path, **parameters):
    pytest.importorskip("papermill")
    return run_notebook(tmp_path, "04-offload", **parameters)


def test_notebook_04_papermill_parameters_change_the_speed(tmp_path):
    nb = _papermill(tmp_path, gpu="rtx-pro-6000", ram_bandwidth="307.2GB/s")
    cell = next(c for c in nb.cells if c.cell_type == "code" and "off = explorers.offload_validate(" in c.source)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    # 27.35 GB / 307.2 GB/s + 31.95 GB / 1,792 GB/s = 107 ms → 9.36 tokens/s
    assert "RTX PRO 6000" in text and "decode ≈ 9.36 tokens/s" in text


def test_notebook_04_bad_bandwidth_stops_at_validate_with_one_line(tmp_path):
    papermill = pytest.importorskip("papermill")
    with pytest.raises(papermill.PapermillExecutionError) as info:
        _papermill(tmp_path, ram_bandwidth="fast")
    assert info.value.ename == "ParameterError"
    assert info.value.evalue.startswith("parameter ram_bandwidth:")
