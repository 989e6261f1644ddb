"""Facts the generated notebooks state, checked against their sources and the functions they call
(issue 21 "Notebooks", issue 24 §6): each test failed on the notebooks as found at 2894de6."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3lib.core.errors import K3InputError

NB = Path(__file__).resolve().parent.parent / "notebooks"


def _sources(stem: str, kind: str | None = None) -> str:
    cells = json.loads((NB / f"{stem}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if kind is None or c["cell_type"] == kind)


def _outputs(stem: str) -> str:
    cells = json.loads((NB / f"{stem}.ipynb").read_text())["cells"]
    return json.dumps([c.get("outputs", []) for c in cells if c["cell_type"] == "code"])


def _parameters(stem: str) -> str:
    cells = json.loads((NB / f"{stem}.ipynb").read_text())["cells"]
    return next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))


# ---- 05: opens on the real K3; no command for a layout that does not load; nodes refused


def test_05_opens_on_the_real_k3():
    assert 'model: str = "kimi-k3"  #' in _parameters("05-decision-checklist")


def test_05_never_prints_a_command_for_a_layout_that_does_not_load():
    from k3lib.views.explorers import launch_choice

    c = launch_choice(model="kimi-k3", gpu="h100-sxm", gpus=8, context="256K", kv_dtype="fp8", engine="vllm")
    assert c.status == "cheapest" and "Nothing loads on your 8× h100-sxm" in c.headline
    assert c.configuration.gpus >= 24 and c.command.value("--tensor-parallel-size") == "8"
    assert c.configuration.plan().fits
    assert "launch_choice" in _sources("05-decision-checklist", "code")


def test_05_refuses_16_gpus_in_one_8_gpu_node():
    from k3lib.views.explorers import checklist_frame, node_layout

    with pytest.raises(K3InputError, match="node holds 8"):
        node_layout(model="kimi-k3", gpu="h100-sxm", gpus=16, nodes=1)
    df = checklist_frame(model="kimi-k3", gpu="h100-sxm", gpus=16, nodes=1, context="256K")
    assert df["title"].tolist() == ["input error"] and df["figure"].iloc[0] == "nodes"
    assert "TP=16" not in df.to_string()


@pytest.mark.parametrize("stem", ["05-decision-checklist", "06-any-model"])
def test_model_path_parameter(stem):
    assert 'model_path: str = ""  # a config.json, GGUF or safetensors folder; overrides' in _parameters(stem)


def test_model_path_is_the_model_planned():
    from k3lib.views.any_model import fixture_configs, validate
    from k3lib.views.params import ParameterError, model_source

    path = str(fixture_configs()["llama-3.1-8b"])
    assert model_source("kimi-k3", path).id == "llama-3.1-8b"
    assert (
        validate(config="kimi-k3", engine="vllm", gpu="h100", gpus=1, context="8K", model_path=path).model.id
        == "llama-3.1-8b"
    )
    with pytest.raises(ParameterError, match="parameter model_path"):
        model_source("kimi-k3", "/no/such/config.json")


# ---- 06: the explorer has a nodes control wired to the layout rule


def test_06_k3_on_16_h200_fits_as_in_03_and_05():
    from k3lib.views.any_model import explorer_update

    _, message = explorer_update(config="kimi-k3", engine="vllm", gpu="h200-sxm", gpus=16, context="256K")
    assert message.startswith("FITS") and "TP=8 × PP=2 over 2 nodes" in message
    _, refused = explorer_update(config="kimi-k3", engine="vllm", gpu="h200-sxm", gpus=16, context="256K", nodes=1)
    assert refused.startswith("parameter nodes")
    assert "nodes=nodes" in _sources("06-any-model", "code")


# ---- 03: communicator buffers are flat, as the tables show


def test_03_communicator_buffers_flat_in_formula_heading_and_exercise():
    from k3lib.core.memory import NCCL_BYTES_PER_GPU
    from k3lib.studies.parallel import nccl_table

    t = nccl_table((8, 16))
    assert t.iloc[0, 1] == t.iloc[1, 1] == NCCL_BYTES_PER_GPU / 2**30
    text = _sources("03-tensor-parallel", "markdown")
    assert "(TP-1)·N_{peer}" not in text and "7.5 GiB" not in text and "grow with TP" not in text
    assert "[TP > 1]·N_{nccl}" in text and "flat once a GPU has peers" in text
    # the story is told from the table the per-GPU bars draw (compare_layouts → components), and
    # exercise 03-2's answer is that table's TP=8 figure, equal to its TP=2 figure
    from k3lib.core.layout import Layout
    from k3lib.studies.parallel import compare_layouts

    tp = compare_layouts(
        [(f"TP={t}", Layout(tp=t, nodes=1)) for t in (1, 2, 8)],
        model="llama-3.1-70b",
        gpu="h200",
        weights="bf16",
        kv_dtype="bf16",
        context="128K",
    )
    nccl = dict(zip(tp["layout"], tp["NCCL buffers (GiB)"]))
    assert nccl == {"TP=1": 0.0, "TP=2": 2.15, "TP=8": 2.15}
    assert 'llama_tp[["layout", "NCCL buffers (GiB)"]]' in _sources("03-tensor-parallel", "code")
    import exercises

    assert exercises.answers("03-tensor-parallel")["03-2"] == (nccl["TP=8"], "GiB")


# ---- 01: the 1,508.7 GB file is unsloth's UD-Q4_K_XL


def test_01_names_the_4bit_file_correctly():
    from k3lib.core.checkpoints import checkpoints_for

    q4 = next(c for c in checkpoints_for("kimi-k3", "llama.cpp") if c.id == "ud-q4_k_xl")
    assert q4.file_bytes == 1_508_668_683_104
    # the guides' 4-bit file row (the comparison is 07's now) names unsloth's file, never a K3 Q4_K_M
    from k3lib.views import tables

    rows = tables.guide_weights_comparison()["source"].tolist()
    assert any("UD-Q4_K_XL" in r for r in rows) and not any("Q4_K_M" in r for r in rows)
    # 01 uses Q4_K_M only as a format (Llama's, or K3 sized at it), never as a K3 file
    assert "Q4_K_M file" not in _sources("01-weights") + _outputs("01-weights")


# ---- 07: the Mac Studio's speed is 04's, not 0


def test_07_mac_studio_speed_is_04s():
    from k3lib.studies.offload import unified_memory_estimate
    from k3lib.views.guide_audit import biggest_contradictions

    df = biggest_contradictions().set_index("claim_id")
    real = df.loc["g004-offload-tps-mac-studio-m3-ultra-512gb", "real_value"]
    assert real > 0 and real == pytest.approx(unified_memory_estimate(device="m3-ultra-512gb").tokens_per_s)
    assert "nothing runs from RAM" not in _sources("07-guide-audit", "markdown")


# ---- 03/04: verdicts as a coloured line above the chart; no time bar for a plan that cannot load


def test_04_offload_explorer_draws_no_bar_for_a_plan_that_cannot_load():
    from k3lib.views.widgets_parallel import offload_view

    # K3 at Q4_K_M needs ≈ 37 GB of VRAM and ≈ 1,546 GB of RAM: a 24 GB card with 256 GiB cannot load it
    parts = offload_view(gpu="rtx-4090", ram="256GiB")
    assert len(parts) == 1 and repr(parts[0]).startswith("DOES NOT FIT") and "no tokens/s" in repr(parts[0])
    assert "#cf222e" in parts[0]._repr_html_()  # red
    line, chart = offload_view()  # the 48 GB board loads it
    assert repr(line).startswith("FITS") and "tokens/s (bandwidth ceiling)" in repr(line)
    assert "#1a7f37" in line._repr_html_()


def test_03_layout_explorer_puts_the_verdict_above_not_in_the_title():
    from k3lib.views.widgets_parallel import layout_view

    line, chart = layout_view(model="kimi-k3", gpu="h200", gpus=16, nodes=2, tp=8, pp=2)
    assert repr(line).startswith("FITS — 16× NVIDIA H200")
    assert not chart.to_dict().get("title")
