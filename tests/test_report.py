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
import nbformat
import papermill
import pytest
import yaml

from k3lib import report
from k3lib.cli import main
from k3lib.core.models import get_model
from k3lib.views.notebook import ParameterError
from k3lib.core.plan import Assumptions, make_plan

GiB = 2**30
SCRIPT = "<script>alert(1)</script>"
WORKED = dict(model="kimi-k3@guide-000", weights="q4", kv_dtype="fp8", context="256K", gpu="h100-sxm", gpus=6,
              activation="10GiB", overhead_total="48GiB")
# Anything that would make a browser fetch from the network.
EXTERNAL = re.compile(r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)\s*=\s*[\"']?\s*(?:https?:)?//", re.I)


def assert_offline(text: str) -> None:
    assert "<script src=\"http" not in text.lower()
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
    """`k3plan report` with the worked example's flags (and --json for its key figures)."""
    out = tmp_path_factory.mktemp("report") / "worked-example.html"
    flags = ["--scenario", report.NOTEBOOK_DEFAULTS["scenario"], "--model", "kimi-k3@guide-000", "--weights", "q4",
             "--kv-dtype", "fp8", "--context", "256K", "--gpu", "h100-sxm", "--gpus", "6", "--activation", "10GiB",
             "--overhead-total", "48GiB"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["report", *flags, "--json", "-o", str(out)]) == 0
    doc = json.loads(printed.getvalue())
    assert doc["html"] == str(out)
    return doc["figures"], out.read_text(encoding="utf-8"), nbformat.read(out.with_suffix(".ipynb"), as_version=4)


def test_worked_example_report_shows_verdict_and_figures(worked):
    figures, text, _ = worked
    assert figures["fits"] and figures["verdict"] == "fits"
    assert figures["total_bytes"] == 415 * GiB and figures["headroom_bytes"] == 65 * GiB
    assert "FITS" in text and "DOES NOT FIT" not in text
    assert "415.0 GiB of 480.0 GiB" in text                # needed / available over all GPUs
    assert "65.0 GiB" in text                              # headroom
    assert "69.2 GiB of 80.0 GiB" in text                  # per GPU
    assert "794,623 tokens" in text                        # max context: 97 GiB / 131,072 B
    assert "$180,000" in text                              # 6 × $30,000
    assert html.escape(report.NOTEBOOK_DEFAULTS["scenario"]) in text
    for heading in ("The four-component budget", "Per-GPU breakdown", "The checklist", "Alternatives",
                    "Offload option", "Engine commands", "Assumptions and their sources"):
        assert heading in text
    assert "weights = 325 GB" in text                      # the guide's quote, as the weights' source


def test_report_is_self_contained_and_hides_code(worked):
    _, text, _ = worked
    assert_offline(text)
    assert "report.configure(" not in text and "report.setup()" not in text     # no code cells
    assert "--help-notebook" not in text                                         # the how-to cell is dropped
    assert "Series index" not in text                                           # navigation is dropped


def test_every_chart_is_inline_svg(worked):
    _, text, nb = worked
    charts = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/svg+xml" in o.get("data", {})]
    assert len(charts) >= 2                                # the budget and the per-GPU bars
    assert not any("application/vnd.vegalite.v5+json" in o.get("data", {}) or "application/javascript" in
                   o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
    assert text.count("<svg") == len(charts)
    assert "<img" not in text                              # not base64 images: <svg> elements


# ---------------------------------------------------------------- batch (two kernel runs)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("batch")
    scenarios = folder / "scenarios.yaml"
    scenarios.write_text(yaml.safe_dump({"defaults": {"model": "kimi-k3@guide-000", "weights": "q4",
                                                      "kv_dtype": "fp8", "activation": "10GiB",
                                                      "overhead_total": "48GiB"},
                                         "scenarios": [{"name": SCRIPT, "gpus": 6},
                                                       {"name": "Worked example on 5x H100", "gpus": 5},
                                                       {"name": "bad model", "model": SCRIPT, "gpus": 6}]}))
    out = folder / "reports"
    rc = main(["report", "--scenarios", str(scenarios), "-o", str(out)])
    return rc, out


def test_batch_keeps_going_past_a_bad_scenario(batch):
    rc, out = batch
    assert rc == 1                                          # one scenario failed
    pages = sorted(p.name for p in out.glob("*.html"))
    assert pages == ["index.html", "script-alert-1-script.html", "worked-example-on-5x-h100.html"]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "bad model" in index and "ERROR" in index
    assert html.escape("parameter model: unknown model '<script>alert(1)</script>'") in index
    assert "2 of 3 scenarios reported" in index
    assert 'href="script-alert-1-script.html"' in index and 'href="worked-example-on-5x-h100.html"' in index
    row_5x = index[index.index("Worked example on 5x H100"):]
    assert "DOES NOT FIT" in row_5x[:2000] and "-15.0" in row_5x[:2000] and "$150,000" in row_5x[:2000]
    assert_offline(index)
    five = (out / "worked-example-on-5x-h100.html").read_text(encoding="utf-8")
    assert "DOES NOT FIT" in five and "15.0 GiB over 5 GPUs" in five
    assert_offline(five)


def test_scenario_and_model_names_are_escaped(batch):
    _, out = batch
    titled = (out / "script-alert-1-script.html").read_text(encoding="utf-8")
    assert_escaped(titled)                                  # the scenario name: title, heading, parameters
    assert f"<title>{html.escape(SCRIPT)}</title>" in titled
    assert_escaped((out / "index.html").read_text(encoding="utf-8"))    # scenario name and bad model name


def test_section_builders_escape_a_model_name():
    """A model whose own name is markup: every section the notebook shows escapes it."""
    evil = dataclasses.replace(get_model("kimi-k3@guide-000"), name=SCRIPT)
    plan = make_plan(model=evil, weights="q4", kv_dtype="fp8", context="256K", gpu="h100", gpus=6,
                     assumptions=Assumptions(activation_bytes=10 * GiB, overhead_total_bytes=48 * GiB))
    cfg = report.ReportConfig(scenario=SCRIPT, plan=plan, engine="vllm", offload="auto", ram_bytes=None,
                              ram_bandwidth_bytes_per_s=None, parameters={"scenario": SCRIPT, "model": SCRIPT})
    parts = [report.summary_html(cfg), report.budget_table_html(plan), report.per_gpu_section(plan)[0],
             report.checklist_html(cfg), report.alternatives_html(plan), report.offload_html(cfg),
             report.engine_commands_html(cfg), report.assumptions_html(plan), report.parameters_html(cfg)]
    text = "".join(parts)
    assert "<script>alert(1)" not in text
    assert html.escape(SCRIPT) in parts[0]                  # title and model row of the summary


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

    res = CliRunner().invoke(papermill_cli, ["--help-notebook", str(report.REPORT_NOTEBOOK)])   # the CLI, in-process
    assert res.exit_code == 0, res.output
    for p in report.PARAMETERS:
        assert re.search(rf"^\s+{p.name}: {p.type.__name__} \(default", res.output, re.M), p.name


def test_exactly_one_parameters_cell_and_validation_next():
    nb = nbformat.read(report.REPORT_NOTEBOOK, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    cell = nb.cells[tagged[0]]
    assert cell.source == report.parameters_source()
    assert all(re.fullmatch(r"\w+: (str|int) = .+  # .+", line) for line in cell.source.splitlines())
    assert "report.configure(" in nb.cells[tagged[0] + 1].source
    assert nb.metadata.kernelspec.name == "python3"
    assert not any("ipywidgets" in c.source or "widgets" in c.source for c in nb.cells if c.cell_type == "code")
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")   # committed clean


def test_bad_parameter_stops_at_the_validation_cell(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(report.REPORT_NOTEBOOK), str(tmp_path / "bad.ipynb"),
                                   parameters={"gpu": "nosuch"}, kernel_name="python3", progress_bar=False,
                                   cwd=str(report.REPORT_NOTEBOOK.parent))
    assert err.value.ename == "ParameterError"
    assert err.value.evalue.startswith("parameter gpu: unknown gpu 'nosuch'")
    nb = nbformat.read(tmp_path / "bad.ipynb", as_version=4)
    failed = [c for c in nb.cells if c.cell_type == "code" and any(o.get("output_type") == "error"
                                                                     for o in c.get("outputs", []))]
    assert len(failed) == 1 and "report.configure(" in failed[0].source
    assert failed[0].outputs[-1]["traceback"] == ["ParameterError: " + err.value.evalue]   # one line


@pytest.mark.parametrize("params, field", [({"gpu": "nosuch"}, "gpu"), ({"context": "-5"}, "context"),
                                           ({"engine": "tgi"}, "engine"), ({"offload": "maybe"}, "offload"),
                                           ({"ram": "lots"}, "ram"), ({"ram_bandwidth": "fast"}, "ram_bandwidth"),
                                           ({"overhead_total": "-1GB"}, "overhead_total"),
                                           ({"colour": "red"}, "colour")])
def test_configure_rejects_bad_values_with_one_line(params, field):
    with pytest.raises(ParameterError) as err:
        report.configure(**{**report.NOTEBOOK_DEFAULTS, **params})
    assert str(err.value).startswith(f"parameter {field}")
    assert "\n" not in str(err.value)


def test_shipped_scenarios_all_configure():
    scenarios = report.load_scenarios(report.ROOT / "examples" / "scenarios.yaml")
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
    offload = figures["Guide 004 offload mode: K3 Q4_K_M on one RTX 4090 48GB + 1.5 TB RAM"]
    assert not offload["fits"] and "VRAM 32.9 GB" in offload["offload_verdict"] and offload["tokens_per_s"] > 1


# ---------------------------------------------------------------- pieces


def test_alternatives_fit_and_come_cheapest_first():
    cfg = report.configure(**{**report.NOTEBOOK_DEFAULTS, "gpus": 5})
    alts = report.alternatives(cfg.plan)
    assert alts and all(a.total_bytes_per_gpu <= a.available_bytes_per_gpu for a in alts)
    costs = [a.cost_usd for a in alts if a.cost_usd is not None]
    assert costs == sorted(costs)
    six = [a for a in alts if a.gpu == "h100-sxm" and a.gpus == 6 and (a.weights, a.kv_dtype) == ("q4", "fp8")]
    assert six and six[0].changes == ("6 GPUs (+1)",)
    for a in alts:                                           # the sweep agrees with make_plan
        p = make_plan(model=cfg.plan.model, gpu=a.gpu, gpus=a.gpus, weights=a.weights, kv_dtype=a.kv_dtype,
                      context=a.context_tokens, assumptions=cfg.plan.assumptions)
        assert p.fits and p.per_gpu.total_bytes == a.total_bytes_per_gpu


def test_alternatives_to_a_plan_that_fits_are_cheaper():
    plan = report.configure(**report.NOTEBOOK_DEFAULTS).plan
    alts = report.alternatives(plan)
    assert alts and all(a.cost_usd < report.cost_usd(plan) for a in alts)
    real = report.configure(model="kimi-k3", weights="native", kv_dtype="fp8", gpu="h200", gpus=16, nodes=2).plan
    assert report.node_groups(real)[1:] == [((16,), 2), ((24,), 3), ((32,), 4)]   # whole 8-GPU nodes


def test_max_context_is_the_largest_that_fits():
    plan = report.configure(**report.NOTEBOOK_DEFAULTS).plan
    n = report.max_context_tokens(plan)
    at = lambda t: make_plan(model=plan.model, gpu=plan.gpu, gpus=6, weights="q4", kv_dtype="fp8", context=t,
                             assumptions=plan.assumptions).fits  # noqa: E731
    assert at(n) and not at(n + 1)


def test_engine_names_match_the_engine_profiles():
    from k3lib import engines
    assert set(report.ENGINES) == set(engines.ENGINES)
    assert report.configure(**{**report.NOTEBOOK_DEFAULTS, "engine": "llamacpp"}).engine == "llama.cpp"


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
    assert not report.external_references('<a href="https://example.com">a link</a>')       # a link is not a load
    assert not report.external_references('<svg xmlns="http://www.w3.org/2000/svg"></svg>')  # nor a namespace


def test_cli_report_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["report", "--gpu", "nosuch", "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("k3plan: error: parameter gpu: unknown gpu 'nosuch'") and err.count("\n") == 1
    assert not (tmp_path / "x.html").exists()
    assert main(["report", "--scenarios", "examples/scenarios.yaml", "-o", str(tmp_path / "x.html")]) == 2


def test_cli_flags_map_to_report_parameters():
    args = __import__("k3lib.cli", fromlist=["build_parser"]).build_parser().parse_args(
        ["report", "--model", "kimi-k3@guide-000", "--weights", "q4", "--kv-dtype", "fp8", "--gpus", "6",
         "--activation", "10GiB", "--overhead-total", "48GiB", "--scenario", "x"])
    from k3lib.cli import _report_parameters

    params = report.complete_parameters(_report_parameters(args))
    assert set(params) == set(report.PARAMETER_NAMES) and params["gpus"] == 6 and params["tp"] == 0
    assert report.configure(**params).plan.total.total_bytes == 415 * GiB
    assert report.cli_command(params).startswith("k3plan report --scenario x --model kimi-k3@guide-000")
