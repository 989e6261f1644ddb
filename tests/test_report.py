"""Deployment reports: k3lib.report, notebooks/90-deployment-report.ipynb and `k3plan report`.

Three kernel runs make the report tests (one report, a batch of three scenarios with one
invalid, one bad parameter); everything else is in-process. The whole file takes well under
a minute on this machine; benchmarks/bench_report.py times one report end to end.
"""

import contextlib
import dataclasses
import html
import io
import json
import re
import time
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml

from k3lib import report
from k3lib.cli import main
from k3lib.core.errors import K3InputError
from k3lib.core.models import get_model
from k3lib.core.plan import Assumptions, make_plan
from k3lib.views.notebook import ParameterError

GiB = 2**30
ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "<script>alert(1)</script>"
WORKED = dict(
    model="kimi-k3@guide-000",
    weights="q4",
    kv_dtype="fp8",
    context="256K",
    gpu="h100-sxm",
    gpus=6,
    activation="10GiB",
    overhead_total="48GiB",
)
# Anything that would make a browser fetch from the network.
EXTERNAL = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I)


def assert_offline(text: str) -> None:
    assert '<script src="http' not in text.lower()
    assert not EXTERNAL.findall(text)
    assert not re.search(r"url\(\s*[\"']?\s*(?:https?:)?//", text, re.I)
    for cdn in ("cdnjs", "unpkg.com", "jsdelivr", "require.min.js", "MathJax.js", "mathjax@"):
        assert cdn not in text
    assert report.external_references(text) == []


def assert_escaped(text: str) -> None:
    assert "<script>alert(1)" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


# ---------------------------------------------------------------- one report (one kernel run)


@pytest.fixture(scope="module")
def worked(tmp_path_factory):
    """`k3plan report` with the worked example's flags (and --json for its key figures; --keep-notebook
    for the executed notebook, which is written only on request)."""
    out = tmp_path_factory.mktemp("report") / "worked-example.html"
    flags = [
        "--scenario",
        report.NOTEBOOK_DEFAULTS["scenario"],
        "--model",
        "kimi-k3@guide-000",
        "--weights",
        "q4",
        "--kv-dtype",
        "fp8",
        "--context",
        "256K",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "6",
        "--activation",
        "10GiB",
        "--overhead-total",
        "48GiB",
    ]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["report", *flags, "--json", "--keep-notebook", "-o", str(out)]) == 0
    doc = json.loads(printed.getvalue())
    assert doc["html"] == str(out)
    return doc["figures"], out.read_text(encoding="utf-8"), nbformat.read(out.with_suffix(".ipynb"), as_version=4)


def test_worked_example_report_shows_verdict_and_figures(worked):
    figures, text, nb = worked
    assert figures["fits"] and figures["verdict"] == "fits"
    assert figures["total_bytes"] == 415 * GiB and figures["headroom_bytes"] == 65 * GiB
    assert "FITS" in text and "DOES NOT FIT" not in text
    assert "415.0 GiB of 480.0 GiB" in text  # needed / available over all GPUs
    assert "65.0 GiB" in text  # headroom
    assert "69.2 GiB of 80.0 GiB" in text  # per GPU
    assert "793,600 tokens (775K)" in text  # max context: 97 GiB / 131,072 B = 794,624 less the
    # ceil per GPU → the 1K grid point below, 775K
    assert "$180,000 (6 × $30,000, catalogue price)" in text
    # …and MathJax never typesets "$180,000 (6 × $30,000" as math: in the notebook the summary is
    # inside a block MathJax 2 and 3 skip (its dollars also written as &#36;); the HTML loads no MathJax
    summary = [
        o["data"]["text/html"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if "GPU cost" in str(o.get("data", {}).get("text/html", ""))
    ]
    assert len(summary) == 1 and summary[0].startswith('<div class="tex2jax_ignore mathjax_ignore">')
    assert "&#36;180,000 (6 × &#36;30,000" in summary[0] and "$" not in summary[0]
    assert "mathjax" not in re.sub(r'class="tex2jax_ignore mathjax_ignore"', "", text).lower()
    assert html.escape(report.NOTEBOOK_DEFAULTS["scenario"]) in text
    for heading in (
        "The four-component budget",
        "Per-GPU breakdown",
        "The checklist",
        "Alternatives",
        "Offload option",
        "Engine commands",
        "Assumptions and their sources",
    ):
        assert heading in text
    assert "weights = 325 GB" in text  # the guide's quote, as the weights' source


def test_report_is_self_contained_and_hides_code(worked):
    _, text, _ = worked
    assert_offline(text)
    assert "report.configure(" not in text and "report.setup()" not in text  # no code cells
    assert "--help-notebook" not in text  # the how-to cell is dropped
    assert "Series index" not in text  # navigation is dropped


def test_every_chart_is_inline_svg(worked):
    _, text, nb = worked
    charts = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if "image/svg+xml" in o.get("data", {})
    ]
    assert len(charts) >= 2  # the budget and the per-GPU bars
    assert not any(
        "application/vnd.vegalite.v5+json" in o.get("data", {}) or "application/javascript" in o.get("data", {})
        for c in nb.cells
        for o in c.get("outputs", [])
    )
    assert text.count("<svg") == len(charts)
    assert "<img" not in text  # not base64 images: <svg> elements


# ---------------------------------------------------------------- batch (two kernel runs)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch")
    scenarios = folder / "scenarios.yaml"
    scenarios.write_text(
        yaml.safe_dump(
            {
                "defaults": {
                    "model": "kimi-k3@guide-000",
                    "weights": "q4",
                    "kv_dtype": "fp8",
                    "activation": "10GiB",
                    "overhead_total": "48GiB",
                },
                "scenarios": [
                    {"name": SCRIPT, "gpus": 6},
                    {"name": "Worked example on 5x H100", "gpus": 5},
                    {"name": "bad model", "model": SCRIPT, "gpus": 6},
                ],
            }
        )
    )
    out = folder / "reports"
    rc = main(["report", "--scenarios", str(scenarios), "-o", str(out)])
    return rc, out


def test_batch_keeps_going_past_a_bad_scenario(batch):
    rc, out = batch
    assert rc == 1  # one scenario failed
    pages = sorted(p.name for p in out.glob("*.html"))
    assert pages == ["index.html", "script-alert-1-script.html", "worked-example-on-5x-h100.html"]
    assert not list(out.glob("*.ipynb"))  # HTML only: no --keep-notebook
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "bad model" in index and "ERROR" in index
    assert html.escape("parameter model: unknown model '<script>alert(1)</script>'") in index
    assert "2 of 3 scenarios reported" in index
    assert 'href="script-alert-1-script.html"' in index and 'href="worked-example-on-5x-h100.html"' in index
    row_5x = index[index.index("Worked example on 5x H100") :]
    assert "DOES NOT FIT" in row_5x[:2000] and "-15.0" in row_5x[:2000] and "&#36;150,000" in row_5x[:2000]
    assert_offline(index)
    five = (out / "worked-example-on-5x-h100.html").read_text(encoding="utf-8")
    assert "DOES NOT FIT" in five and "15.0 GiB short over all 5 GPUs" in five
    assert_offline(five)


def test_scenario_and_model_names_are_escaped(batch):
    _, out = batch
    titled = (out / "script-alert-1-script.html").read_text(encoding="utf-8")
    assert_escaped(titled)  # the scenario name: title, heading, parameters
    assert f"<title>{html.escape(SCRIPT)}</title>" in titled
    assert_escaped((out / "index.html").read_text(encoding="utf-8"))  # scenario name and bad model name


def test_section_builders_escape_a_model_name():
    """A model whose own name is markup: every section the notebook shows escapes it."""
    evil = dataclasses.replace(get_model("kimi-k3@guide-000"), name=SCRIPT)
    plan = make_plan(
        model=evil,
        weights="q4",
        kv_dtype="fp8",
        context="256K",
        gpu="h100",
        gpus=6,
        assumptions=Assumptions(activation_bytes=10 * GiB, overhead_total_bytes=48 * GiB),
    )
    cfg = report.ReportConfig(
        scenario=SCRIPT,
        plan=plan,
        engine="vllm",
        offload="auto",
        ram_bytes=None,
        ram_bandwidth_bytes_per_s=None,
        parameters={"scenario": SCRIPT, "model": SCRIPT},
    )
    parts = [
        report.summary_html(cfg),
        report.budget_table_html(plan),
        report.per_gpu_section(plan)[0],
        report.checklist_html(cfg),
        report.alternatives_html(plan),
        report.offload_html(cfg),
        report.engine_commands_html(cfg),
        report.assumptions_html(plan),
        report.parameters_html(cfg),
    ]
    text = "".join(parts)
    assert "<script>alert(1)" not in text
    assert html.escape(SCRIPT) in parts[0]  # title and model row of the summary


# ---------------------------------------------------------------- parameters


def test_help_notebook_lists_every_parameter_with_type_and_help():
    params = papermill.inspect_notebook(str(report.REPORT_NOTEBOOK))
    assert list(params) == list(report.PARAMETER_NAMES)
    for p in report.PARAMETERS:
        got = params[p.name]
        assert got["inferred_type_name"] == p.type.__name__, p.name
        assert got["help"] == p.help and got["help"], p.name
        assert got["default"] == repr(p.default), p.name
    from click.testing import CliRunner
    from papermill.cli import papermill as papermill_cli

    res = CliRunner().invoke(papermill_cli, ["--help-notebook", str(report.REPORT_NOTEBOOK)])  # the CLI, in-process
    assert res.exit_code == 0, res.output
    for p in report.PARAMETERS:
        assert re.search(rf"^\s+{p.name}: {p.type.__name__} \(default", res.output, re.M), p.name


def test_exactly_one_parameters_cell_and_validation_next():
    nb = nbformat.read(report.REPORT_NOTEBOOK, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    cell = nb.cells[tagged[0]]
    assert cell.source == report.parameters_source()
    assert all(re.fullmatch(r"\w+: (str|int|float) = .+  # .+", line) for line in cell.source.splitlines())
    assert "report.configure(" in nb.cells[tagged[0] + 1].source
    assert nb.metadata.kernelspec.name == "python3"
    assert not any("ipywidgets" in c.source or "widgets" in c.source for c in nb.cells if c.cell_type == "code")
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed clean


def test_bad_parameter_stops_at_the_validation_cell(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(
            str(report.REPORT_NOTEBOOK),
            str(tmp_path / "bad.ipynb"),
            parameters={"gpu": "nosuch"},
            kernel_name="python3",
            progress_bar=False,
            cwd=str(report.REPORT_NOTEBOOK.parent),
        )
    assert err.value.ename == "ParameterError"
    assert err.value.evalue.startswith("parameter gpu: unknown gpu 'nosuch'")
    nb = nbformat.read(tmp_path / "bad.ipynb", as_version=4)
    failed = [
        c
        for c in nb.cells
        if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]
    assert len(failed) == 1 and "report.configure(" in failed[0].source
    assert failed[0].outputs[-1]["traceback"] == ["ParameterError: " + err.value.evalue]  # one line


@pytest.mark.parametrize(
    "params, field",
    [
        ({"gpu": "nosuch"}, "gpu"),
        ({"context": "-5"}, "context"),
        ({"engine": "tgi"}, "engine"),
        ({"offload": "maybe"}, "offload"),
        ({"ram": "lots"}, "ram"),
        ({"ram_bandwidth": "fast"}, "ram_bandwidth"),
        ({"overhead_total": "-1GB"}, "overhead_total"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_configure_rejects_bad_values_with_one_line(params, field):
    with pytest.raises(ParameterError) as err:
        report.configure(**{**report.NOTEBOOK_DEFAULTS, **params})
    assert str(err.value).startswith(f"parameter {field}")
    assert "\n" not in str(err.value)


def test_shipped_scenarios_all_configure():
    scenarios = report.load_scenarios(ROOT / "examples" / "scenarios.yaml")
    assert len(scenarios) == 6
    figures = {}
    for s in scenarios:
        params = {k: v for k, v in s.items() if k != "name"}
        figures[s["name"]] = report.key_figures(report.configure(scenario=s["name"], **params))
    worked = figures["Guide 000 worked example: Q4 + FP8 KV + 256K on 6x H100"]
    assert (worked["total_bytes"], worked["headroom_bytes"]) == (415 * GiB, 65 * GiB)
    assert figures["Guide 000 worked example on 5x H100"]["headroom_bytes"] == -15 * GiB
    assert figures["Guide 000 minimum: 4x H100, Q2 + FP8 KV, 64K"]["headroom_bytes"] == 29 * GiB
    real = figures["Real K3 (native MXFP4) on 16x H200, 2 nodes, FP8 KV, 256K"]
    assert real["fits"] and (real["tp"], real["pp"]) == (8, 2)
    offload = figures["Guide 004 offload mode: K3 Q4_K_M on one RTX 4090 48GB + 2 TB RAM"]
    assert not offload["fits"] and offload["verdict"] == "fits with offload"
    # the GPU side with the core's activation and overhead (one offload model; tests/test_offload_one_model.py
    # works it by hand): 32.9 GB of dense weights + KV + 1 GB under guide 004's flat rule → 37.0 GB
    assert "VRAM 37.0 GB" in offload["offload_verdict"] and offload["tokens_per_s"] > 1
    short = dict(scenarios[-1], ram="1536GB")  # the guide's 1.5 TB host: RAM too small
    short.pop("name")
    f = report.key_figures(report.configure(**short))
    assert f["verdict"] == "does not fit" and f["tokens_per_s"] is None  # no speed for what cannot load


# ---------------------------------------------------------------- pieces


def test_alternatives_fit_and_come_cheapest_first():
    cfg = report.configure(**{**report.NOTEBOOK_DEFAULTS, "gpus": 5})
    alts = report.alternatives(cfg.plan)
    assert alts and all(a.total_bytes_per_gpu <= a.available_bytes_per_gpu for a in alts)
    costs = [a.cost_usd for a in alts if a.cost_usd is not None]
    assert costs == sorted(costs)
    six = [a for a in alts if a.gpu == "h100-sxm" and a.gpus == 6 and (a.weights, a.kv_dtype) == ("q4", "fp8")]
    assert six and six[0].changes == ("6 GPUs (+1)",)
    for a in alts:  # the sweep agrees with make_plan
        p = make_plan(
            model=cfg.plan.model,
            gpu=a.gpu,
            gpus=a.gpus,
            weights=a.weights,
            kv_dtype=a.kv_dtype,
            context=a.context_tokens,
            assumptions=cfg.plan.assumptions,
        )
        assert p.fits and p.per_gpu.total_bytes == a.total_bytes_per_gpu


def test_alternatives_to_a_plan_that_fits_are_cheaper():
    plan = report.configure(**report.NOTEBOOK_DEFAULTS).plan
    alts = report.alternatives(plan)
    assert alts and all(a.cost_usd < report.cost_usd(plan) for a in alts)
    real = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16, nodes=2).plan
    assert report.search_counts(real) == (1, 2, 3, 4, 5, 6, 7, 8, 16, 24, 32)  # one node, then whole 8-GPU nodes


def test_max_context_is_the_largest_that_fits():
    plan = report.configure(**report.NOTEBOOK_DEFAULTS).plan
    n = report.max_context_tokens(plan)

    def at(t: int) -> bool:
        return make_plan(
            model=plan.model,
            gpu=plan.gpu,
            gpus=6,
            weights="q4",
            kv_dtype="fp8",
            context=t,
            assumptions=plan.assumptions,
        ).fits

    assert n % 1024 == 0 and at(n) and not at(n + 1024)  # the largest point of the 1K grid


def test_engine_names_match_the_engine_profiles():
    from k3lib import engines

    assert set(report.ENGINES) == set(engines.ENGINES) | {"guide"}  # a guide profile's own policy
    assert report.configure(model="llama-3.1-8b", gpus=1, context="8K", engine="llamacpp").engine == "llama.cpp"
    # a guide profile has no layer shapes: no engine's rules apply to it, and asking for one is a named error
    from k3lib.views.notebook import ParameterError

    with pytest.raises(ParameterError, match="parameter engine: kimi-k3@guide-000 is a guide's published profile"):
        report.configure(**{**report.NOTEBOOK_DEFAULTS, "engine": "vllm"})


def test_safe_filenames():
    assert report.safe_filename(SCRIPT) == "script-alert-1-script"
    assert report.safe_filename("../../etc/passwd") == "etc-passwd"
    assert report.safe_filename("") == "scenario" and report.safe_filename("index") == "scenario-index"
    assert report.safe_filename("a b", taken={"a-b", "a-b-2"}) == "a-b-3"
    assert re.fullmatch(r"[a-z0-9_-]+", report.safe_filename("Kimi K3 · 16× H200 — 2 nodes"))


def test_external_references_detects_network_loads():
    assert report.external_references('<script src="https://cdn.example/x.js"></script>')
    assert report.external_references("<link rel=stylesheet href='//cdn.example/x.css'>")
    assert report.external_references('<img src="http://example.com/a.png">')
    assert report.external_references("<style>@import url(https://fonts.example/x.css);</style>")
    assert not report.external_references('<a href="https://example.com">a link</a>')  # a link is not a load
    assert not report.external_references('<svg xmlns="http://www.w3.org/2000/svg"></svg>')  # nor a namespace


def test_cli_report_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["report", "--gpu", "nosuch", "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("k3plan: error: parameter gpu: unknown gpu 'nosuch'") and err.count("\n") == 1
    assert not (tmp_path / "x.html").exists()
    assert main(["report", "--scenarios", "examples/scenarios.yaml", "-o", str(tmp_path / "x.html")]) == 2


def test_cli_flags_map_to_report_parameters():
    args = (
        __import__("k3lib.cli", fromlist=["build_parser"])
        .build_parser()
        .parse_args(
            [
                "report",
                "--model",
                "kimi-k3@guide-000",
                "--weights",
                "q4",
                "--kv-dtype",
                "fp8",
                "--gpus",
                "6",
                "--activation",
                "10GiB",
                "--overhead-total",
                "48GiB",
                "--scenario",
                "x",
            ]
        )
    )
    from k3lib.cli import _report_parameters

    params = report.complete_parameters(_report_parameters(args))
    assert set(params) == set(report.PARAMETER_NAMES) and params["gpus"] == 6 and params["tp"] == 0
    assert report.configure(**params).plan.total.total_bytes == 415 * GiB
    assert report.cli_command(params).startswith("k3plan report --scenario x --model kimi-k3@guide-000")


# ---------------------------------------------------------------- every plan flag reaches the report


def _report_args(*flags):
    from k3lib.cli import _report_parameters, build_parser

    return _report_parameters(build_parser().parse_args(["report", *flags]))


def test_every_plan_flag_reaches_the_report_parameters():
    params = _report_args(
        "--model",
        "kimi-k3",
        "--gpu",
        "h200",
        "--gpus",
        "16",
        "--nodes",
        "2",
        "--tp",
        "8",
        "--pp",
        "2",
        "--engine",
        "vllm",
        "--gpu-memory-utilization",
        "0.85",
        "--batch",
        "2",
        "--context",
        "128K",
        "--kv-dtype",
        "fp8",
        "--weights",
        "native",
    )
    cfg = report.configure(**params)
    assert (cfg.plan.nodes, cfg.plan.tp, cfg.plan.pp, cfg.plan.batch) == (2, 8, 2, 2)
    assert cfg.gpu_memory_utilization == 0.85 and dict(cfg.plan.engine.settings)["gpu_memory_utilization"] == 0.85
    # the plan's vLLM budget is the utilization given: 0.85 × 140.4 GiB (the H200's usable memory)
    assert cfg.plan.per_gpu.available_bytes == int(0.85 * cfg.plan.gpu.memory_bytes("usable"))
    assert cfg.plan.context_tokens == 128 * 1024
    assert "--gpu-memory-utilization 0.85" in report.cli_command(cfg.parameters)
    # k3lib's generic model takes the assumptions an engine computes itself
    params = _report_args(
        "--model",
        "kimi-k3",
        "--gpu",
        "h200",
        "--gpus",
        "16",
        "--engine",
        "generic",
        "--memory-basis",
        "usable",
        "--context",
        "128K",
        "--kv-dtype",
        "fp8",
        "--activation",
        "3GiB",
        "--overhead-per-gpu",
        "4GiB",
    )
    cfg = report.configure(**params)
    assert cfg.plan.memory_basis == "usable" and cfg.plan.per_gpu.overhead_bytes == 4 * GiB
    from k3lib.views.notebook import ParameterError

    with pytest.raises(ParameterError, match="parameter activation"):
        report.configure(**{**params, "engine": "vllm"})


def test_gpu_memory_utilization_reaches_the_vllm_command_and_engine_view():
    base = dict(model="llama-3.1-8b", weights="bf16", kv_dtype="bf16", context="8K", gpu="h100-sxm", gpus=1)
    lo = report.configure(**base, gpu_memory_utilization=0.5)
    hi = report.configure(**base, gpu_memory_utilization=0.9)
    assert "--gpu-memory-utilization 0.50" in report.engine_commands_html(lo)
    from k3lib.engines import estimate_for_engine

    est = {
        u: estimate_for_engine(
            "vllm", model=c.plan.model, gpu="h100-sxm", gpus=1, context="8K", gpu_memory_utilization=u
        )
        for u, c in ((0.5, lo), (0.9, hi))
    }
    # vLLM's budget is util × total memory: 0.4 × 79.19 GiB apart (the GPU's usable memory)
    assert est[0.9].budget_bytes - est[0.5].budget_bytes == pytest.approx(0.4 * est[0.9].memory_bytes, abs=2)
    assert est[0.5].printed["Available KV cache memory"] in report.engine_view_html(lo)
    assert est[0.9].printed["Available KV cache memory"] in report.engine_view_html(hi)


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--gpu-memory-utilization", "2"], "gpu_memory_utilization"),
        (["--gpu-memory-utilization", "0.8", "--engine", "llama.cpp"], "gpu_memory_utilization"),
        (["--unit", "GB"], "unit"),
        (["--gpus", "٨"], "gpus"),  # Arabic-Indic digit: ASCII digits only
        (["--engine", "llama.cpp", "--swa-full"], "swa-full"),  # llama.cpp cache settings: estimate only
        (["--engine", "llama.cpp", "-ctk", "q8_0"], "cache-type-k"),
        (["--engine", "llama.cpp", "-np", "4"], "parallel"),
        (["--engine", "llama.cpp", "--kv-unified"], "kv-unified"),
    ],
)
def test_report_flags_that_cannot_apply_are_refused(flags, field, tmp_path, capsys):
    assert main(["report", *flags, "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"k3plan: error: parameter {field}") or err.startswith(f"k3plan: error: {field}"), err
    assert err.count("\n") == 1 and not (tmp_path / "x.html").exists()


def test_plan_flags_with_scenarios_are_refused_not_ignored(tmp_path, capsys):
    assert (
        main(["report", "--scenarios", str(ROOT / "examples" / "scenarios.yaml"), "--gpus", "4", "-o", str(tmp_path)])
        == 2
    )
    assert capsys.readouterr().err.startswith("k3plan: error: gpus: cannot be combined with --scenarios")
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------- one plan per report


def test_the_report_reads_one_plan(monkeypatch):
    """configure builds the one plan; the sections, tokens/s and the alternatives read it (no make_plan
    of their own; max context and alternatives are three sweeps); only the checklist (whose content
    is other plans) builds plans."""
    import k3lib.core.plan as core_plan
    import k3lib.core.sweep as core_sweep

    calls = {"make_plan": 0, "sweep": 0}

    def counted(name, fn):
        def wrapper(*a, **k):
            calls[name] += 1
            return fn(*a, **k)

        return wrapper

    import k3lib.engines.deployment as deployment
    import k3lib.studies.steps as steps

    monkeypatch.setattr(core_plan, "make_plan", counted("make_plan", core_plan.make_plan))
    monkeypatch.setattr(deployment, "make_plan", counted("make_plan", deployment.make_plan))
    monkeypatch.setattr(steps, "make_plan", counted("make_plan", steps.make_plan))
    import k3lib.core.search as core_search

    monkeypatch.setattr(core_search, "sweep", counted("sweep", core_search.sweep))
    monkeypatch.setattr(core_sweep, "sweep", counted("sweep", core_sweep.sweep))
    cfg = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16)
    assert calls == {"make_plan": 1, "sweep": 0}
    plan = cfg.plan
    for section in (
        lambda: report.summary_html(cfg),
        lambda: report.budget_table_html(plan),
        lambda: report.per_gpu_section(plan),
        lambda: report.engine_commands_html(cfg),
        lambda: report.assumptions_html(plan),
        lambda: report.parameters_html(cfg),
    ):
        section()
    assert calls["make_plan"] == 1  # tokens/s reads the same plan (throughput_for_plan)
    before = calls["sweep"]
    alts = report.alternatives(plan)
    # the sweeps propose; the plan's engine (vLLM) decides: each proposal is one plan for the engine
    assert calls["sweep"] - before == 2 and calls["make_plan"] > 1
    from k3lib.engines.deployment import plan_for_engine

    for a in alts:
        p = plan_for_engine(
            model="kimi-k3",
            gpu=a.gpu,
            gpus=a.gpus,
            weights=a.weights,
            kv_dtype=a.kv_dtype,
            context=a.context_tokens,
            with_limits=False,
        )
        assert p.fits and p.per_gpu.total_bytes == a.total_bytes_per_gpu


def test_per_gpu_section_is_the_plans_fullest_gpu():
    cfg = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16)
    text, chart = report.per_gpu_section(cfg.plan)
    fullest = max(cfg.plan.shares, key=lambda s: s.total_bytes)
    assert f"{fullest.total_bytes / GiB:,.2f}" in text and chart is not None
    assert f"{cfg.plan.per_gpu.total_bytes / GiB:,.1f} GiB of" in report.summary_html(cfg)


# ---------------------------------------------------------------- engine view


def test_engine_view_for_a_guide_profile_is_one_line_why():
    cfg = report.configure(**report.NOTEBOOK_DEFAULTS)
    text = report.engine_view_html(cfg)
    assert "No engine view" in text and "published profile" in text and "kimi-k3" in text
    assert text.count("<p>") == 2  # the title and one sentence


def test_engine_view_for_a_real_architecture():
    one_stage = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", context="128K", gpu="h200", gpus=8)
    text = report.engine_view_html(one_stage)
    assert "No engine view" not in text and "Available KV cache memory" in text
    two_nodes = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16)
    assert two_nodes.plan.pp == 2
    text = report.engine_view_html(two_nodes)
    # the engine's own view, or the engine's own refusal, never "guide profile" or silence
    assert "Memory as vllm sees it" in text and "No engine view" not in text
    assert "Available KV cache memory" in text or "not available" in text


# ---------------------------------------------------------------- scenario files (issue 14)


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """The classic alias bomb: each level a list of ``width`` aliases to the one before,
    ``width ** levels`` leaves once expanded (9**9 ≈ 3.9·10^8)."""
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    lines.append(f"scenarios: [{{name: bomb, model: *a{levels}}}]")
    return "\n".join(lines) + "\n"


def test_yaml_alias_bomb_fails_fast_with_a_named_error(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    t0 = time.perf_counter()
    with pytest.raises(report.ScenarioFileError) as err:
        report.run_batch(path, tmp_path / "out", progress=False)
    assert time.perf_counter() - t0 < 1.0
    assert "aliases" in str(err.value) and str(err.value).startswith("scenarios:")
    assert not (tmp_path / "out").exists()


def test_cli_alias_bomb_is_exit_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    assert main(["report", "--scenarios", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("k3plan: error: scenarios:") and "aliases" in err and err.count("\n") == 1


def test_yaml_alias_expansion_is_bounded_below_the_alias_count(tmp_path):
    """Few aliases, wide lists: 5 levels × 6 aliases = 30 aliases (under the bound) but
    1,000 × 6^5 ≈ 7.8 million nodes once expanded — refused on the expanded size."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * 1000) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 6) + "]" for i in range(1, 6)]
    with pytest.raises(report.ScenarioFileError, match="expands to"):
        report.safe_load_bounded("\n".join(lines) + "\nscenarios: []\n")


def test_yaml_deep_nesting_and_size_are_bounded(tmp_path):
    with pytest.raises(report.ScenarioFileError, match="nests deeper"):
        report.safe_load_bounded("scenarios: " + "[" * 10_000 + "]" * 10_000 + "\n")
    big = tmp_path / "big.yaml"
    big.write_text("scenarios: []\n#" + "x" * 1_000_001, encoding="utf-8")
    with pytest.raises(report.ScenarioFileError, match="larger than 1,000,000 bytes"):
        report.load_scenarios(big)


def test_yaml_merge_keys_within_the_bound_still_work(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text(
        "base: &base {model: kimi-k3@guide-000, weights: q4, kv_dtype: fp8}\n"
        "scenarios:\n  - {<<: *base, name: six, gpus: 6}\n  - {<<: *base, name: five, gpus: 5}\n",
        encoding="utf-8",
    )
    with pytest.raises(report.ScenarioFileError, match="base"):  # only scenarios and defaults at the top
        report.load_scenarios(path)
    path.write_text(
        "defaults: &base {model: kimi-k3@guide-000, weights: q4}\n"
        "scenarios:\n  - {<<: *base, name: six, gpus: 6}\n  - {<<: *base, name: five, gpus: '5'}\n",
        encoding="utf-8",
    )
    got = report.load_scenarios(path)
    assert [(s["name"], s["model"], s["gpus"]) for s in got] == [
        ("six", "kimi-k3@guide-000", 6),
        ("five", "kimi-k3@guide-000", 5),
    ]


@pytest.mark.parametrize(
    "field_yaml, field",
    [
        ("gpus: [8]", "scenarios[1].gpus"),
        ("gpus: 8.5", "scenarios[1].gpus"),
        ("nodes: yes", "scenarios[1].nodes"),
        ("gpus: '١٦'", "scenarios[1].gpus"),
        ("gpu_memory_utilization: .nan", "scenarios[1].gpu_memory_utilization"),
        ("model: {a: 1}", "scenarios[1].model"),
        ("colour: red", "scenarios[1].colour"),
        ("name: [x]", "scenarios[1].name"),
        ("1: x", "scenarios[1]"),
    ],
)
def test_every_scenario_field_is_type_checked(field_yaml, field, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"scenarios:\n  - {{{field_yaml}}}\n", encoding="utf-8")
    with pytest.raises(K3InputError) as err:
        report.load_scenarios(path)
    assert str(err.value).startswith(field + ":")
    calls = []
    results = report.run_batch(path, tmp_path / "out", progress=False, runner=lambda *a, **k: calls.append(a))
    assert not calls and results[0].error.startswith(field + ":")  # the batch reports it, runs nothing


def test_scenario_defaults_are_type_checked(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("defaults: {batch: [1]}\nscenarios: [{name: a}]\n", encoding="utf-8")
    with pytest.raises(K3InputError, match=r"^defaults\.batch:"):
        report.load_scenarios(path)
