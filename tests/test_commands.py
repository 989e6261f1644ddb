"""Tests for k3lib.studies.commands: the vLLM, llama.cpp and topology command lines for three
plans, checked flag by flag. Expected values are derived by hand in each test."""

from __future__ import annotations

import math
import shlex

import pytest

from k3lib.core.errors import K3InputError
from k3lib.core.plan import make_plan
from k3lib.studies.checklist import checklist_assumptions
from k3lib.studies.commands import (
    EXPERT_REGEX,
    Command,
    commands_for,
    cpu_moe_layers,
    gpu_memory_utilization,
    llama_server_command,
    topology_command,
    vllm_command,
)

G = 2**30
K = 1024


def plan(**kw):
    kw.setdefault("assumptions", checklist_assumptions())
    return make_plan(**kw)


def flags(cmd: Command) -> dict[str, str | None]:
    """Flag → value, parsed back from the shell text (so quoting is checked too)."""
    argv = shlex.split(cmd.text.replace("\\\n", " "))
    assert tuple(argv) == cmd.argv
    out, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("-"):
            val = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
            out[argv[i]] = val
            i += 2 if val is not None else 1
        else:
            i += 1
    return out


# ------------------------------------------------------------ plan A: guide profile, 6 × H100, Q4, FP8 KV, 256K


@pytest.fixture
def plan_a():
    return plan(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=6, weights="q4", kv_dtype="fp8", context="256K")


def test_plan_a_vllm_flag_by_flag(plan_a):
    cmd = vllm_command(plan_a)
    assert cmd.argv[:3] == ("vllm", "serve", "moonshotai/Kimi-K3")
    f = flags(cmd)
    assert f["--tensor-parallel-size"] == "6"
    assert f["--pipeline-parallel-size"] == "1"
    assert f["--max-model-len"] == "262144"
    assert f["--kv-cache-dtype"] == "fp8"
    # per GPU: 325/6 + 32/6 + 10/6 + 8 = 69.1667 GiB of 79.19 usable → 0.8734 → 0.88
    per_gpu = 325 / 6 + 32 / 6 + 10 / 6 + 8
    assert f["--gpu-memory-utilization"] == f"{math.ceil(per_gpu / 79.19 * 100) / 100:.2f}" == "0.88"
    assert f["--max-num-seqs"] == "1"
    assert "--trust-remote-code" in f
    assert "--distributed-executor-backend" not in f and "--quantization" not in f
    assert any("q4 checkpoint" in n for n in cmd.notes)  # the repo holds native weights
    assert dict(cmd.explanations)["--gpu-memory-utilization"].startswith("(weights 54.2")


def test_plan_a_llama_server_flag_by_flag(plan_a):
    cmd = llama_server_command(plan_a)
    f = flags(cmd)
    assert cmd.argv[0] == "llama-server"
    # no Q4_K_M file of K3 exists: the nearest published 4-bit file is unsloth's UD-Q4_K_XL, and it says so
    assert f["-hf"] == "unsloth/Kimi-K3-GGUF:UD-Q4_K_XL"
    assert any("no q4 GGUF of kimi-k3 is published" in n and "1,508.7 GB" in n for n in cmd.notes)
    assert f["-c"] == "262144" and f["-np"] == "1"
    assert f["-ngl"] == "999"
    assert f["--cache-type-k"] == f["--cache-type-v"] == "q8_0"  # no FP8 cache in llama.cpp
    assert f["--flash-attn"] == "on"  # quantized V needs it
    assert f["--split-mode"] == "layer"
    assert "--n-cpu-moe" not in f and "-ot" not in f


def test_plan_a_topology():
    cmd = topology_command()
    assert cmd.text == "nvidia-smi topo -m"


# ------------------------------------------------------------ plan B: real K3, 2 × 8 H200, native, BF16 KV, 256K


@pytest.fixture
def plan_b():
    return plan(model="kimi-k3", gpu="h200-sxm", gpus=16, nodes=2, context="256K")


def test_plan_b_vllm_flag_by_flag(plan_b):
    cmd = vllm_command(plan_b)
    f = flags(cmd)
    assert cmd.argv[2] == "moonshotai/Kimi-K3"
    assert (f["--tensor-parallel-size"], f["--pipeline-parallel-size"]) == ("8", "2")
    assert f["--max-model-len"] == str(256 * K)
    assert f["--kv-cache-dtype"] == "auto"
    assert f["--distributed-executor-backend"] == "ray"
    assert any("ray start" in n for n in cmd.notes)
    # the latent-MoE projections (92 layers × (2·7168·3584 + 3584) × 2 B = 8.81 GiB) are replicated on every
    # TP rank, so each stage holds its half whole; the rest splits 16 ways; + KV 27,648·262,144/2 B + 8 GiB:
    # (1452.8 − 8.81)/16 + 8.81/2 + 3.375 + 8 = 106.0 of 140.40 → 0.76; the fullest stage (47 of 93 layers
    # and the embedding) holds ~1 GiB more → 0.76–0.78
    latent = 92 * (2 * 7168 * 3584 + 3584) * 2 / G
    est = ((1452.8 - latent) / 16 + latent / 2 + 27_648 * 262_144 / 2 / G + 8) / 140.40
    u = float(f["--gpu-memory-utilization"])
    assert math.ceil(est * 100) / 100 <= u <= math.ceil(est * 100) / 100 + 0.02
    assert u == math.ceil(plan_b.per_gpu.total_bytes / plan_b.gpu.memory_bytes("usable") * 100) / 100
    assert not any("checkpoint" in n for n in cmd.notes)  # native weights: the repo is right


def test_plan_b_llama_server(plan_b):
    cmd = llama_server_command(plan_b)
    f = flags(cmd)
    # the published GGUF nearest to the native checkpoint: UD-Q8_K_XL (ggml keeps the experts in MXFP4)
    assert f["-hf"] == "unsloth/Kimi-K3-GGUF:UD-Q8_K_XL"
    assert any("1,561.2 GB" in n for n in cmd.notes) and any("rpc" in n for n in cmd.notes)
    assert f["--cache-type-k"] == f["--cache-type-v"] == "f16"
    assert "--flash-attn" not in f


# ------------------------------------------------------------ plan C: real K3 on 8 × H100 at Q4, 64K: an offload plan


@pytest.fixture
def plan_c():
    return plan(model="kimi-k3", gpu="h100-sxm", gpus=8, weights="q4", kv_dtype="fp8", context="64K")


def test_plan_c_offload_layers(plan_c):
    assert not plan_c.fits
    # routed experts per MoE layer at Q4 (4.5 bits): 896 × 3 × 3,584 × 3,072 × 4.5/8 B = 16,647,192,576 B
    per_layer = 896 * 3 * 3584 * 3072 * 4.5 / 8
    assert per_layer == 16_647_192_576
    over = -plan_c.per_gpu.headroom_bytes * 8
    assert cpu_moe_layers(plan_c) == math.ceil(over / per_layer) == 60


def test_plan_c_llama_server_with_n_cpu_moe(plan_c):
    cmd = llama_server_command(plan_c, n_cpu_moe=cpu_moe_layers(plan_c))
    f = flags(cmd)
    assert f["--n-cpu-moe"] == "60"
    assert f["-c"] == "65536" and f["-ngl"] == "999"
    assert f["--cache-type-k"] == "q8_0"
    assert "-ot" not in f


def test_plan_c_llama_server_with_expert_regex(plan_c):
    cmd = llama_server_command(plan_c, offload_all_experts=True)
    f = flags(cmd)
    assert f["-ot"] == EXPERT_REGEX == r"\.ffn_(up|down|gate)_exps=CPU"
    assert "-ot '\\.ffn_(up|down|gate)_exps=CPU'" in cmd.text  # quoted for the shell
    plain = llama_server_command(plan_c)
    assert any("--n-cpu-moe 60" in n for n in plain.notes)
    with pytest.raises(K3InputError, match="offload"):
        llama_server_command(plan_c, n_cpu_moe=3, offload_all_experts=True)


def test_plan_c_vllm_is_clipped_and_says_so(plan_c):
    u = gpu_memory_utilization(plan_c)
    assert u.clipped and u.value == 0.95 and "will not fit" in u.reason
    # no 4-bit checkpoint of K3 that vLLM can load exists: the command is refused, naming the field
    with pytest.raises(K3InputError, match="weights: no q4 checkpoint of Kimi K3") as e:
        vllm_command(plan_c)
    assert "native, fp8-block" in str(e.value)
    cmd = vllm_command(plan_c, hf_repo="me/my-k3-awq")  # a checkpoint the user has
    assert flags(cmd)["--gpu-memory-utilization"] == "0.95"
    assert any("does not fit" in n for n in cmd.notes)


# ------------------------------------------------------------ details


def test_utilization_floor_and_explicit_value():
    small = plan(model="llama-3.1-8b", gpu="h200-sxm", gpus=1, context="8K")
    u = gpu_memory_utilization(small)
    assert u.value == 0.50 and u.clipped and "more concurrent sequences" in u.reason
    assert flags(vllm_command(small, gpu_memory_utilization_value=0.9))["--gpu-memory-utilization"] == "0.90"
    assert "--trust-remote-code" not in vllm_command(small).argv
    with pytest.raises(K3InputError, match="gpu_memory_utilization"):
        vllm_command(small, gpu_memory_utilization_value=1.2)


def test_user_names_are_shell_quoted(plan_a):
    evil = "me/repo; rm -rf ~"
    cmd = vllm_command(plan_a, hf_repo=evil)
    assert shlex.quote(evil) in cmd.text and shlex.split(cmd.text.replace("\\\n", " "))[2] == evil
    ls = llama_server_command(plan_a, model_path="/models/My K3 $(whoami).gguf")
    assert "'/models/My K3 $(whoami).gguf'" in ls.text
    with pytest.raises(K3InputError, match="hf_repo"):
        vllm_command(plan_a, hf_repo="  ")


def test_unsupported_kv_and_unknown_repos():
    p = plan(model="kimi-k3@guide-000", gpu="h100-sxm", gpus=8, weights="q4", kv_dtype="int4", context="256K")
    with pytest.raises(K3InputError, match="kv_dtype"):
        vllm_command(p)
    assert flags(llama_server_command(p))["--cache-type-k"] == "q4_0"
    cmds = commands_for(p)
    assert set(cmds) == {"llama.cpp", "topology"}  # vLLM cannot express INT4 KV
    llama = plan(model="llama-3.1-70b", gpu="h100-sxm", gpus=2, weights="fp8", context="8K")
    assert flags(vllm_command(llama))["--quantization"] == "fp8"  # online FP8 of a BF16 checkpoint
    with pytest.raises(K3InputError, match="gguf"):
        llama_server_command(llama)


def test_amd_topology_and_batch():
    p = plan(model="kimi-k3@guide-000", gpu="mi300x", gpus=4, weights="q4", kv_dtype="fp8", context="128K", batch=2)
    assert topology_command(p).text == "rocm-smi --showtopo"
    f = flags(llama_server_command(p))
    assert f["-c"] == str(2 * 128 * K) and f["-np"] == "2"
    assert flags(vllm_command(p))["--max-num-seqs"] == "2"
