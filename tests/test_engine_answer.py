"""The engine's answer is the answer, on every surface (issue 21).

A grid of scenarios — models built in, a user's config.json and a GGUF the test writes; vLLM,
SGLang, llama.cpp, transformers, k3lib's generic model and a guide's policy; one node and
several; short and maximal contexts; a unified-memory machine — goes through ``k3plan estimate
--json``, ``k3plan plan --json``, the report's data (and, for a few, the report notebook run by
papermill), and every surface must give the same verdict, bytes on the binding GPU, maximum
context, maximum concurrency and launch flags.

Then one test per symptom of the issue, each failing on main 040437e.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from k3lib.cli import main

ROOT = Path(__file__).resolve().parent.parent
G = 2**30


def _cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def user_files(tmp_path_factory):
    """A user's own config.json (Llama 3.1 8B's shapes, another name) and a GGUF written here."""
    d = tmp_path_factory.mktemp("user")
    cfg = json.loads((ROOT / "data" / "configs" / "llama-3.1-8b.json").read_text())
    (d / "my-model").mkdir()
    (d / "my-model" / "config.json").write_text(json.dumps(cfg))
    from tests.test_loaders import write_llama_gguf

    gguf = write_llama_gguf(d / "tiny.gguf")
    return {"config": d / "my-model" / "config.json", "gguf": gguf}


# (label, model flags, gpu, gpus, context, kv, batch, engine or None, weights or None, extra estimate flags)
SCENARIOS = [
    ("k3 16xH200 256K", ["--model", "kimi-k3"], "h200", 16, "256K", "fp8", 1, None, None, []),
    ("k3 16xH200 1M", ["--model", "kimi-k3"], "h200", 16, "1M", "fp8", 1, None, None, []),
    (
        "k3 16xH200 256K util .76",
        ["--model", "kimi-k3"],
        "h200",
        16,
        "256K",
        "fp8",
        1,
        "vllm",
        None,
        ["--gpu-memory-utilization", "0.76"],
    ),
    ("k3 24xH100 256K", ["--model", "kimi-k3"], "h100-sxm", 24, "256K", "fp8", 1, None, None, []),
    ("k3 32xH100 256K", ["--model", "kimi-k3"], "h100-sxm", 32, "256K", "fp8", 1, None, None, []),
    ("k3 8xB200 128K sglang", ["--model", "kimi-k3"], "b200", 8, "128K", "fp8", 1, "sglang", None, []),
    (
        "k3 8xH100 llama.cpp UD-Q2",
        ["--model", "kimi-k3"],
        "h100-sxm",
        8,
        "32K",
        "q8_0",
        1,
        "llama.cpp",
        "ud-q2_k_xl",
        [],
    ),
    ("k3 guide-000 6xH100", ["--model", "kimi-k3@guide-000"], "h100-sxm", 6, "256K", "fp8", 1, None, "q4", []),
    ("k3 guide-000 5xH100", ["--model", "kimi-k3@guide-000"], "h100-sxm", 5, "256K", "fp8", 1, None, "q4", []),
    ("llama70b 2xH100 32K", ["--model", "llama-3.1-70b"], "h100-sxm", 2, "32K", "bf16", 1, None, None, []),
    ("llama70b 4xH100 128K", ["--model", "llama-3.1-70b"], "h100-sxm", 4, "128K", "bf16", 1, None, None, []),
    ("llama70b 8xH100 8K b64", ["--model", "llama-3.1-70b"], "h100-sxm", 8, "8K", "fp8", 64, None, None, []),
    ("llama70b 2xH100 generic", ["--model", "llama-3.1-70b"], "h100-sxm", 2, "32K", "bf16", 1, "generic", None, []),
    ("llama70b 4xH100 sglang", ["--model", "llama-3.1-70b"], "h100-sxm", 4, "32K", "bf16", 1, "sglang", None, []),
    (
        "llama70b 2xH100 transformers",
        ["--model", "llama-3.1-70b"],
        "h100-sxm",
        2,
        "8K",
        "bf16",
        1,
        "transformers",
        None,
        [],
    ),
    ("llama8b 1xH100 8K", ["--model", "llama-3.1-8b"], "h100-sxm", 1, "8K", "bf16", 1, None, None, []),
    ("llama8b 1xH100 128K", ["--model", "llama-3.1-8b"], "h100-sxm", 1, "128K", "bf16", 1, None, None, []),
    ("llama8b 1xH100 256K (past max)", ["--model", "llama-3.1-8b"], "h100-sxm", 1, "256K", "bf16", 1, None, None, []),
    (
        "llama8b 1x4090 llama.cpp q4",
        ["--model", "llama-3.1-8b"],
        "rtx-4090",
        1,
        "32K",
        "q8_0",
        2,
        "llama.cpp",
        "q4_k_m",
        [],
    ),
    (
        "llama8b 1x4090 llama.cpp ngl 20",
        ["--model", "llama-3.1-8b"],
        "rtx-4090",
        1,
        "8K",
        "bf16",
        1,
        "llama.cpp",
        "q4_k_m",
        ["--n-gpu-layers", "20"],
    ),
    ("llama8b 1xL4 sglang", ["--model", "llama-3.1-8b"], "l4", 1, "8K", "bf16", 1, "sglang", None, []),
    ("llama8b dgx-spark (unified)", ["--model", "llama-3.1-8b"], "dgx-spark", 1, "32K", "bf16", 1, None, None, []),
    (
        "llama8b mac m3 ultra llama.cpp",
        ["--model", "llama-3.1-8b"],
        "m3-ultra-512gb",
        1,
        "128K",
        "bf16",
        1,
        "llama.cpp",
        "q8_0",
        [],
    ),
    ("llama405b 16xH100 32K", ["--model", "llama-3.1-405b"], "h100-sxm", 16, "32K", "fp8", 1, None, None, []),
    ("deepseek-v3 8xH200 32K", ["--model", "deepseek-v3"], "h200", 8, "32K", "bf16", 1, None, None, []),
    ("deepseek-v3 16xH100 128K", ["--model", "deepseek-v3"], "h100-sxm", 16, "128K", "fp8", 1, None, None, []),
    ("deepseek-v3 8xH200 sglang", ["--model", "deepseek-v3"], "h200", 8, "32K", "bf16", 1, "sglang", None, []),
    ("qwen3-next 4xH100 256K", ["--model", "qwen3-next-80b"], "h100-sxm", 4, "256K", "bf16", 1, None, None, []),
    (
        "qwen3-next 4xH200 sglang pp b64",
        ["--model", "qwen3-next-80b"],
        "h200",
        4,
        "8K",
        "bf16",
        64,
        "sglang",
        None,
        ["--tp", "2", "--pp", "2"],
    ),
    ("gpt-oss-120b 1xH100", ["--model", "gpt-oss-120b"], "h100-sxm", 1, "128K", "bf16", 1, None, None, []),
    (
        "gpt-oss-120b 1x4090 llama.cpp",
        ["--model", "gpt-oss-120b"],
        "rtx-4090",
        1,
        "8K",
        "bf16",
        1,
        "llama.cpp",
        "q4_k_m",
        [],
    ),
    ("gpt-oss-20b 1x4090", ["--model", "gpt-oss-20b"], "rtx-4090", 1, "32K", "bf16", 4, None, None, []),
    ("gemma-3-27b 1xH100 128K", ["--model", "gemma-3-27b"], "h100-sxm", 1, "128K", "bf16", 1, None, None, []),
    (
        "gemma-3-27b 1x4090 llama.cpp",
        ["--model", "gemma-3-27b"],
        "rtx-4090",
        1,
        "32K",
        "q8_0",
        1,
        "llama.cpp",
        "q4_k_m",
        [],
    ),
    ("maverick 16xH100", ["--model", "llama-4-maverick"], "h100-sxm", 16, "32K", "fp8", 1, None, None, []),
    ("mixtral 2xA100", ["--model", "mixtral-8x7b"], "a100-sxm-80gb", 2, "32K", "bf16", 1, None, None, []),
    ("qwen3-30b 1xL40S", ["--model", "qwen3-30b-a3b"], "l40s", 1, "32K", "fp8", 1, None, None, []),
    ("kimi-linear 1xH200 1M", ["--model", "kimi-linear-48b"], "h200", 1, "1M", "bf16", 1, None, None, []),
    ("mi300x llama70b", ["--model", "llama-3.1-70b"], "mi300x", 1, "128K", "bf16", 1, None, None, []),
    ("user config 1xH100", ["--config", "{config}"], "h100-sxm", 1, "32K", "bf16", 1, None, None, []),
    ("user config 2xL4 sglang", ["--config", "{config}"], "l4", 2, "8K", "bf16", 1, "sglang", None, []),
    ("user gguf 1x4090", ["--gguf", "{gguf}"], "rtx-4090", 1, "4K", "bf16", 1, None, None, []),
    ("user gguf 1xT4 q8 cache", ["--gguf", "{gguf}"], "t4", 1, "8K", "q8_0", 3, None, None, []),
]


def _model_flags(flags, files):
    return [f.format(**{k: str(v) for k, v in files.items()}) for f in flags]


def _estimate(files, model, gpu, gpus, ctx, kv, batch, engine, weights, extra):
    argv = [
        "estimate",
        *_model_flags(model, files),
        "--gpu",
        gpu,
        "--gpus",
        gpus,
        "--context",
        ctx,
        "--kv-dtype",
        kv,
        "--batch",
        batch,
        "--json",
        *extra,
    ]
    argv += ["--engine", engine] if engine else []
    argv += ["--weights", weights] if weights else []
    rc, out, err = _cli(*argv)
    assert rc in (0, 3), err
    return rc, json.loads(out)


def test_the_grid_is_what_the_issue_asks_for():
    models = {m[1] for m in (s[1] for s in SCENARIOS)}
    engines = {s[7] or "default" for s in SCENARIOS}
    assert len(SCENARIOS) >= 40 and len(models) >= 10
    assert {"vllm", "sglang", "llama.cpp", "transformers", "generic", "default"} <= engines
    assert any(s[3] > 8 for s in SCENARIOS) and any(s[3] == 1 for s in SCENARIOS)  # multi- and one-node
    assert any(s[4] == "1M" for s in SCENARIOS) and any(s[4] in ("4K", "8K") for s in SCENARIOS)
    assert any(s[2] in ("dgx-spark", "m3-ultra-512gb") for s in SCENARIOS)  # unified memory


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_every_surface_gives_the_engines_answer(scenario, user_files):
    from k3lib import report

    label, model, gpu, gpus, ctx, kv, batch, engine, weights, extra = scenario
    rc, est = _estimate(user_files, model, gpu, gpus, ctx, kv, batch, engine, weights, extra)
    fits = est["fits"]
    assert rc == (0 if fits else 3)
    assert est["engine"] in ("vllm", "sglang", "llama.cpp", "transformers", "generic", "guide")
    if model[0] == "--gguf":
        assert est["engine"] == "llama.cpp"  # a GGUF is planned for llama.cpp by default
    elif engine is None:
        assert est["engine"] == ("guide" if "@guide" in model[1] else "vllm")
    pg = est["per_gpu"]
    assert (
        pg["total_bytes"] == pg["weights_bytes"] + pg["kv_cache_bytes"] + pg["activation_bytes"] + pg["overhead_bytes"]
    )
    if est["engine"] not in ("guide", "generic") and not est["problems"]:
        e = est["engine_estimate"]
        rows = e["estimate"]["stages"] or [e["estimate"]]  # PP: the binding GPU has the least KV headroom
        spare = min(r["kv_available_bytes"] - r["kv_needed_bytes"] for r in rows)
        assert e["fits"] == fits
        if all(r["kv_available_bytes"] > 0 for r in rows):  # the four components' total is the engine's
            assert pg["headroom_bytes"] == spare

    # the report's data: the same plan
    if not any(f in extra for f in ("--n-gpu-layers",)):
        params = dict(
            model=model[1] if model[0] == "--model" else "kimi-k3",
            model_path="" if model[0] == "--model" else _model_flags(model, user_files)[1],
            gpu=gpu,
            gpus=gpus,
            context=ctx,
            kv_dtype=kv,
            batch=batch,
            engine=engine or "",
            weights=weights or "",
            offload="none",
        )
        if "--gpu-memory-utilization" in extra:
            params["gpu_memory_utilization"] = float(extra[extra.index("--gpu-memory-utilization") + 1])
        for flag, key in (("--tp", "tp"), ("--pp", "pp")):
            if flag in extra:
                params[key] = int(extra[extra.index(flag) + 1])
        cfg = report.configure(**params)
        f = report.key_figures(cfg)
        assert (f["fits"], f["per_gpu_total_bytes"], f["tp"], f["pp"]) == (
            fits,
            pg["total_bytes"],
            est["tp"],
            est["pp"],
        )
        assert f["engine"] == est["engine"]
        if est.get("max_context_tokens") is not None:
            assert f["max_context_tokens"] == est["max_context_tokens"]
            assert f["max_concurrency"] == est["max_concurrency"]

    # `plan` on the same inventory: it recommends this very plan exactly when it loads at the top of the
    # engine's checkpoint ladder (native / the file), with the same bytes and the command's flags its settings
    if est["engine"] in ("vllm", "sglang") and weights is None and not extra and batch == 1:
        rc, out, err = _cli(
            "plan",
            *_model_flags(model, user_files),
            "--gpu",
            gpu,
            "--gpus",
            gpus,
            "--context",
            ctx,
            "--kv-dtype",
            kv,
            "--engine",
            est["engine"],
            "--json",
        )
        assert rc == 0, err
        d = json.loads(out)
        rec = d["recommended"]
        if fits:
            assert rec is not None and rec["weights"] == "native"
            assert d["plan"]["per_gpu"]["total_bytes"] == pg["total_bytes"]
            assert d["plan"]["max_context_tokens"] == est["max_context_tokens"]
            assert d["plan"]["max_concurrency"] == est["max_concurrency"]
            cmd = d["commands"][est["engine"]]["argv"]
            settings = est["engine_settings"]
            if est["engine"] == "vllm":
                assert cmd[cmd.index("--tensor-parallel-size") + 1] == str(est["tp"])
                assert cmd[cmd.index("--pipeline-parallel-size") + 1] == str(est["pp"])
                assert cmd[cmd.index("--max-model-len") + 1] == str(est["context_tokens"])
                assert float(cmd[cmd.index("--gpu-memory-utilization") + 1]) == settings["gpu_memory_utilization"]
                assert int(cmd[cmd.index("--max-num-seqs") + 1]) == settings["max_num_seqs"]
            else:
                assert cmd[cmd.index("--tp-size") + 1] == str(est["tp"])
                assert float(cmd[cmd.index("--mem-fraction-static") + 1]) == settings["mem_fraction_static"]
        else:
            assert rec is None or rec["weights"] != "native"
            assert d["commands"] == {} or d["chosen"] != "recommended" or rec["weights"] != "native"


REPORT_RUNS = ["k3 16xH200 256K util .76", "llama70b 2xH100 32K", "user gguf 1x4090", "k3 guide-000 5xH100"]


@pytest.mark.parametrize("label", REPORT_RUNS)
def test_the_report_notebook_gives_the_same_answer(label, user_files, tmp_path):
    """The notebook surface: papermill runs the report notebook with the scenario's parameters and the
    figures it publishes equal `estimate --json`'s."""
    pytest.importorskip("papermill")
    from k3lib.report import run_report

    label, model, gpu, gpus, ctx, kv, batch, engine, weights, extra = next(s for s in SCENARIOS if s[0] == label)
    rc, est = _estimate(user_files, model, gpu, gpus, ctx, kv, batch, engine, weights, extra)
    params = dict(
        model=model[1] if model[0] == "--model" else "kimi-k3",
        model_path="" if model[0] == "--model" else _model_flags(model, user_files)[1],
        gpu=gpu,
        gpus=gpus,
        context=ctx,
        kv_dtype=kv,
        batch=batch,
        engine=engine or "",
        weights=weights or "",
        offload="none",
        ram_bandwidth="",
    )
    if "--gpu-memory-utilization" in extra:
        params["gpu_memory_utilization"] = float(extra[extra.index("--gpu-memory-utilization") + 1])
    result = run_report(params, tmp_path / "r.html")
    f = result.figures
    assert (f["fits"], f["per_gpu_total_bytes"], f["engine"]) == (
        est["fits"],
        est["per_gpu"]["total_bytes"],
        est["engine"],
    )
    if est.get("max_context_tokens") is not None:
        assert (f["max_context_tokens"], f["max_concurrency"]) == (est["max_context_tokens"], est["max_concurrency"])
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    if est["engine"] == "vllm" and "--gpu-memory-utilization" in extra:
        assert "--gpu-memory-utilization 0.76" in html
    if not est["fits"]:
        assert "vllm serve" not in html and "llama-server" not in html  # no command for a plan that does not load


# ---------------------------------------------------------------- one test per symptom (each red on 040437e)


def test_headline_is_the_engines_answer():
    """Llama 3.1 70B on 2× H100 at 32K: the headline said FITS (1.1 GiB headroom) while vLLM's own rule
    leaves 1.39 GiB for the cache: 0.9 × 79.19 GiB − 65.74 GiB weights − activation − 2.15 GiB NCCL."""
    rc, out, _ = _cli("estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "2", "--context", "32K")
    assert rc == 3 and "DOES NOT FIT" in out and "9,088 tokens" in out
    # a 32K request needs 2·80 layers·8 KV heads/2 ranks·128·2 B per token = 160 KiB → 5.00 GiB per GPU
    assert "need 5.00 GiB" in out


def test_flags_given_are_the_flags_used():
    from k3lib import report

    cfg = report.configure(
        model="kimi-k3", gpu="h200", gpus=16, context="256K", kv_dtype="fp8", gpu_memory_utilization=0.76
    )
    budget = cfg.plan.per_gpu.available_bytes
    assert budget == int(0.76 * cfg.plan.gpu.memory_bytes("usable"))  # not 0.9's
    assert "(gpu_memory_utilization=0.76" in report.engine_view_html(cfg)
    assert "--gpu-memory-utilization 0.76" in report.engine_commands_html(cfg)
    rc, _, err = _cli(
        "estimate", "--model", "llama-3.1-8b", "--gpus", "1", "--engine", "llama.cpp", "--gpu-memory-utilization", "0.5"
    )
    assert rc == 2 and "gpu-memory-utilization" in err and err.count("\n") == 1
    rc, _, err = _cli("estimate", "--model", "llama-3.1-8b", "--gpus", "1", "--max-num-seqs", "8", "--engine", "sglang")
    assert rc == 2 and "max-num-seqs" in err


def test_a_file_the_user_names_is_the_model_planned(user_files, tmp_path):
    gguf = str(user_files["gguf"])
    rc, out, err = _cli(
        "plan", "--gguf", gguf, "--gpu", "rtx-4090", "--gpus", "1", "--context", "4K", "--kv-dtype", "bf16", "--json"
    )
    d = json.loads(out)
    assert rc == 0 and d["model"] == "tiny" and d["engine"] == "llama.cpp"  # was: kimi-k3
    assert d["commands"]["llama.cpp"]["argv"][1:3] == ["-m", str(Path(gguf).resolve())]
    for argv in (
        ["cheatsheet", "--gguf", gguf, "--gpu", "rtx-4090", "--kv-dtype", "bf16"],
        ["offload", "--config", str(ROOT / "data" / "configs" / "qwen3-30b-a3b.json"), "--gpu", "rtx-4090", "--json"],
        [
            "check-log",
            str(ROOT / "tests" / "fixtures" / "logs" / "llamacpp-mistral-7b-32k.log"),
            "--config",
            str(ROOT / "data" / "configs" / "mistral-7b-v0.3.mlc-transcription.json"),
        ],
    ):
        rc, out, err = _cli(*argv)
        assert rc in (0, 3) and "unrecognized" not in err, (argv, err)
    rc, _, err = _cli("plan", "--gguf", str(tmp_path / "missing.gguf"))
    assert rc == 2 and "missing.gguf" in err  # a named error, never K3
    from k3lib.cli import _report_parameters, build_parser

    params = _report_parameters(build_parser().parse_args(["report", "--gguf", gguf]))
    assert params["model_path"] == gguf


def test_offload_is_one_model_in_plan_and_offload():
    """gpt-oss-120b on one RTX 4090 at 8K: `offload` and `plan --engine llama.cpp` give one answer (before:
    FITS at 33 tok/s vs "nothing fits"); the checklist's offload plan is the offload study's own."""
    from k3lib.serving.offload_model import best_offload_plan

    rc, out, _ = _cli(
        "plan",
        "--model",
        "gpt-oss-120b",
        "--gpu",
        "rtx-4090",
        "--gpus",
        "1",
        "--engine",
        "llama.cpp",
        "--context",
        "8K",
        "--kv-dtype",
        "bf16",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["chosen"] == "offload" and d["offload"]["fits"]
    best = best_offload_plan(
        model="gpt-oss-120b", gpu="rtx-4090", weights=d["offload"]["weights"], kv_dtype="bf16", context="8K"
    )
    assert d["offload"]["expert_layers_on_gpu"] == best.expert_layers_on_gpu
    rc, out, _ = _cli("offload", "--gpu", "dgx-spark", "--json")  # K3 in one 128 GiB pool
    assert rc == 3 and json.loads(out)["decode_tokens_per_s"] is None


def test_headroom_has_one_sign():
    """A stage over its GPU while the GPUs together have room printed "over by … (−290.8 GiB over 32 GPUs)"
    (Maverick, 32× RTX 4090, q8 on 040437e). DeepSeek-V3 there by k3lib's model: one sign, words for it."""
    from k3lib.engines.deployment import plan_for_engine

    p = plan_for_engine(model="deepseek-v3", gpu="rtx-4090", gpus=32, weights="q8_0", context="8K", engine="generic")
    assert not p.fits and p.headroom_bytes > 0 > p.per_gpu.headroom_bytes
    assert "−" not in p.reason and " -" not in p.reason
    assert "short by 2.0 GiB on the fullest GPU (though the 32 GPUs together have 4.6 GiB spare" in p.reason
    # and Maverick itself now fits there: its MoE layers alternate with dense ones (interleave_moe_layer_step)
    assert plan_for_engine(
        model="llama-4-maverick", gpu="rtx-4090", gpus=32, weights="q8_0", context="8K", engine="generic"
    ).fits


def test_silent_omissions_are_on_screen():
    rc, out, _ = _cli("estimate", "--gpu", "h200", "--gpus", "16", "--context", "256K", "--kv-dtype", "fp8")
    assert "vision tower not in the weights total: 0.92 GB" in out
    assert "+3.4 %" in out  # vLLM's BF16 conv state vs the planner's FP32
    rc, out, _ = _cli("estimate", "--model", "deepseek-v3", "--gpu", "h200", "--gpus", "8", "--context", "8K")
    assert "MTP left out of the weights" in out


def test_paged_attention_never_saves_more_than_the_cache():
    """Llama 3.1 8B, 8× H100, 8K, FP8: the guide's 5–12 % of VRAM (2.1–5.1 GiB) capped at the 0.5 GiB cache."""
    from k3lib.studies.steps import step4_optimizations

    o = step4_optimizations(model="llama-3.1-8b", gpu="h100", gpus=8, weights="bf16", context="8K", kv_dtype="fp8")
    cache = 32 * 8 * 128 * 2 * 1 * 8192  # layers × KV heads × head dim × (K, V) × 1 B × tokens
    assert max(o.get("PagedAttention").saves_bytes_total) == cache == G // 2


def test_careless_input_is_a_named_error():
    for argv, field in (
        (["estimate", "--weights", ""], "weights"),
        (["estimate", "--kv-dtype", " "], "kv-dtype"),
        (["estimate", "--config", ""], "config"),
        (["offload", "--ram", ""], "ram"),
        (["offload", "--expert-layers-on-gpu", "３"], "expert"),
    ):
        rc, _, err = _cli(*argv)
        assert rc == 2 and field in err and err.count("\n") == 1, (argv, err)


def test_a_closed_pipe_ends_quietly():
    p = subprocess.Popen(
        [sys.executable, "-m", "k3lib", "formats"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    p.stdout.close()  # the reader leaves at once, as `| head -0` does
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0 and "BrokenPipeError" not in err and "Traceback" not in err


def test_no_command_for_a_layout_that_does_not_load():
    rc, out, _ = _cli(
        "plan",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "2",
        "--context",
        "32K",
        "--kv-dtype",
        "bf16",
        "--json",
    )
    d = json.loads(out)
    assert d["recommended"] is None and d["chosen"] == "cheapest" and d["plan"]["fits"]
    assert d["plan"]["gpus"] == 4  # the command is the cheapest plan that loads, and says so
    assert d["commands"]["vllm"]["argv"][d["commands"]["vllm"]["argv"].index("--tensor-parallel-size") + 1] == "4"


def test_a_node_holds_what_the_hardware_says():
    """16 H100 with the nodes control at 1 recommended TP=16 in one node; an H100 node holds 8."""
    rc, _, err = _cli("plan", "--gpus", "16", "--nodes", "1", "--gpu", "h100-sxm")
    assert rc == 2 and err.startswith(
        "k3plan: error: nodes: 16 GPUs in 1 node is 16 per node, but a node of this GPU holds 8"
    )


def test_hosts_lists_ids_and_bandwidth_from_channels():
    """`k3plan hosts --json`: every row's bandwidth is channels × sockets × MT/s × 8 B (an EPYC 9005 socket:
    12 channels of DDR5-6000 = 576 GB/s)."""
    rc, out, _ = _cli("hosts", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert rc == 0 and rows
    for r in rows.values():
        assert r["bandwidth_bytes_per_s"] == r["memory_channels"] * r["sockets"] * r["mt_per_s"] * 10**6 * 8
    epyc = next(r for k, r in rows.items() if k.startswith("epyc-9005") and r["sockets"] == 1)
    assert epyc["bandwidth_bytes_per_s"] == 576 * 10**9


def test_vllm_cpu_offload_is_considered_and_carried_to_the_command():
    """Llama 3.1 70B BF16 on one H100 at 8K: 131.5 GiB of weights in a 0.9 × 79.19 = 71.3 GiB budget. vLLM's
    own answer is --cpu-offload-gb (GiB per GPU in CPU memory): `plan` finds the fewest whole GiB that load
    (65), prints it in the command, and `estimate` with that flag agrees (64 does not load, 65 does)."""
    rc, out, _ = _cli(
        "plan",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "1",
        "--context",
        "8K",
        "--kv-dtype",
        "bf16",
        "--json",
    )
    d = json.loads(out)
    argv = d["commands"]["vllm (cpu offload, on your GPUs)"]["argv"]
    gb = argv[argv.index("--cpu-offload-gb") + 1]
    assert d["chosen"] == "cheapest" and d["offload_plan"]["engine_settings"]["cpu_offload_gb"] == float(gb) == 65
    assert "--cpu-offload-gb" not in d["commands"]["vllm"]["argv"]  # the answer in VRAM: 2 H100
    common = ("estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "1", "--context", "8K")
    assert _cli(*common, "--cpu-offload-gb", "65")[0] == 0
    assert _cli(*common, "--cpu-offload-gb", "64")[0] == 3
    rc, _, err = _cli(*common, "--cpu-offload-gb", "8", "--engine", "llama.cpp")
    assert rc == 2 and "cpu-offload-gb" in err


def test_a_relative_model_path_reaches_the_report_kernel_absolute(tmp_path, monkeypatch, user_files):
    """The report kernel runs in notebooks/: `report --gguf tiny.gguf` from the user's folder, and a
    scenario file's model_path, are made absolute (relative to the cwd / to the scenario file)."""

    from k3lib.cli import _report_parameters, build_parser
    from k3lib.report import ReportResult, run_batch

    shutil.copy(user_files["gguf"], tmp_path / "tiny.gguf")
    monkeypatch.chdir(tmp_path)
    params = _report_parameters(build_parser().parse_args(["report", "--gguf", "tiny.gguf"]))
    assert params["model_path"] == str(tmp_path / "tiny.gguf")
    (tmp_path / "sub").mkdir()
    shutil.copy(user_files["gguf"], tmp_path / "sub" / "m.gguf")
    (tmp_path / "sub" / "s.yaml").write_text("scenarios:\n  - name: mine\n    model_path: m.gguf\n    gpus: 1\n")
    seen = []

    def runner(p, out, notebook=None):
        seen.append(p)
        return ReportResult(scenario=p["scenario"], error="not run")

    monkeypatch.chdir(ROOT)
    run_batch(tmp_path / "sub" / "s.yaml", tmp_path / "out", runner=runner, progress=False)
    assert seen and seen[0]["model_path"] == str(tmp_path / "sub" / "m.gguf")


def test_every_reported_tokens_per_s_says_its_basis():
    """The report's key figures (and the batch index built from them) carry the basis of the decode speed."""
    from k3lib import report
    from k3lib.report.batch import _index_row
    from k3lib.report.run import ReportResult

    cfg = report.configure(model="llama-3.1-8b", gpu="h100-sxm", gpus=1, context="8K")
    f = report.key_figures(cfg)
    assert f["tokens_per_s"] > 0 and (
        f["tokens_per_s_basis"].startswith("fitted model ±") or f["tokens_per_s_basis"] == "theoretical ceiling"
    )
    row = _index_row(ReportResult(scenario="x", figures=f))
    assert f["tokens_per_s_basis"] in row["tokens/s"]
    guide = report.key_figures(report.configure(**report.NOTEBOOK_DEFAULTS))
    assert guide["tokens_per_s_basis"] == "theoretical ceiling"  # a guide profile: no layer shapes
