"""Notebook 05's decision path and its explorer (issue 24 §1, §3): the path stops where the
inventory cannot go on, the explorer offers only deployable GPU counts and supported contexts,
and every choice it offers draws (never an error)."""

import pytest

from k3lib.studies.checklist import run_checklist
from k3lib.views.charts_checklist import decision_path, decision_path_chart
from k3lib.views.explorers import launch_choice, node_layout
from k3lib.views.widgets_checklist import context_options, gpu_count_options


def _path(model, gpu, gpus, context):
    nodes = node_layout(model=model, gpu=gpu, gpus=gpus).nodes
    c = run_checklist(model=model, gpu=gpu, gpus=gpus, nodes=nodes, context=context, kv_dtype="fp8")
    choice = launch_choice(model=model, gpu=gpu, gpus=gpus, nodes=nodes, context=context, kv_dtype="fp8", engine="vllm")
    return decision_path(c, choice=choice)


def test_k3_on_one_h100_node_stops_at_the_precision():
    # 8 × 79.2 GiB = 633.5 GiB, less than K3's ≈ 1,453 GiB of native weights: step 2 stops the path
    p = _path("kimi-k3", "h100-sxm", 8, "256K").set_index("step")
    assert p.loc[1, "outcome"] == "go on" and p.loc[2, "outcome"] == "stop here"
    assert p.loc[8, "outcome"] == "stop here" and "cheapest that loads" in p.loc[8, "answer"]


def test_k3_on_two_h200_nodes_goes_all_the_way():
    p = _path("kimi-k3", "h200-sxm", 16, "256K")
    assert "stop here" not in set(p["outcome"])
    assert p["answer"].iloc[-1].startswith("on your GPUs: 2 nodes × 8 h200-sxm")
    assert decision_path_chart(p).to_dict()["layer"]


def test_gpu_menu_offers_only_deployable_counts():
    # K3's 96 heads split 1, 2, 3, 4, 6, 8 ways inside a node; past a node only whole nodes
    assert gpu_count_options(model="kimi-k3", gpu="h200-sxm") == (1, 2, 3, 4, 6, 8, 16, 24, 32)
    for model in ("kimi-k3", "llama-3.1-70b", "qwen3-next-80b"):
        counts = gpu_count_options(model=model, gpu="h100-sxm")
        assert 5 not in counts and 12 not in counts
        for n in counts:
            node_layout(model=model, gpu="h100-sxm", gpus=n)  # raises for a count no one can build


def test_context_menu_stops_at_the_models_limit():
    assert context_options(model="llama-3.1-70b") == ("32K", "128K")  # Llama 3.1: 131,072 tokens
    assert context_options(model="kimi-k3")[-1] == "1M"


def test_explorer_never_stays_on_an_error():
    pytest.importorskip("ipywidgets")
    from k3lib.views.widgets_checklist import checklist_explorer

    box = checklist_explorer()
    assert box.last_message is None
    for model, gpu in (("llama-3.1-70b", "h100-sxm"), ("qwen3-next-80b", "mi300x"), ("kimi-k3", "b200")):
        box.controls["model"].value = model
        box.controls["gpu"].value = gpu
        assert box.last_message is None, box.last_message
        assert box.controls["context"].value in context_options(model=model)
        assert box.controls["gpus"].value in gpu_count_options(model=model, gpu=gpu)
