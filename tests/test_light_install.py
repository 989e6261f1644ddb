"""Issue 25 §1 and §5: the core and the planner commands import no notebook or charting
package; `k3plan --version`; `k3plan report` is quiet, writes only the HTML asked for, and
without the `reports` extra says which extra to install; the batch progress bar shows on a
terminal only. (The bare wheel in a venv without JupyterLab: tests/test_packaging.py.)
"""

import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from k3lib.cli import main

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "logs" / "vllm-v0-llama-3-8b-h100-budget.log"
#: Never imported by `import k3lib`, `import k3lib.cli` or the planner commands.
HEAVY = (
    "jupyter",
    "jupyterlab",
    "jupyter_client",
    "jupyter_core",
    "jupyter_server",
    "ipykernel",
    "ipywidgets",
    "IPython",
    "altair",
    "vl_convert",
    "nbformat",
    "nbconvert",
    "nbclient",
    "papermill",
)
COMMANDS = [
    [
        "estimate",
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
        "--json",
    ],
    ["plan", "--model", "kimi-k3", "--gpu", "h100-sxm", "--gpus", "8", "--context", "256K"],
    ["check-log", str(LOG), "--model", "llama-3.1-8b"],
    ["speed", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1"],
    ["offload", "--model", "kimi-k3"],
    ["cheatsheet", "--model", "kimi-k3"],
]
PROBE = f"""
import contextlib, io, json, sys
HEAVY = {HEAVY!r}
def heavy():
    return sorted({{m.split('.')[0] for m in sys.modules}} & set(HEAVY))
import k3lib, k3lib.cli
seen = {{"import": heavy(), "import_pandas": "pandas" in sys.modules}}
for argv in {COMMANDS!r}:
    with contextlib.redirect_stdout(io.StringIO()):
        rc = k3lib.cli.main(argv)
    seen[argv[0]] = [rc, heavy()]
print(json.dumps(seen))
"""


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def test_core_and_planner_commands_import_no_notebook_or_charting_package(tmp_path):
    res = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    seen = json.loads(res.stdout)
    assert seen.pop("import") == [] and seen.pop("import_pandas") is False  # pandas: only when a table is built
    assert {cmd: mods for cmd, (rc, mods) in seen.items() if mods} == {}
    assert {cmd: rc for cmd, (rc, _) in seen.items()} == {
        "estimate": 0,
        "plan": 0,
        "check-log": 0,
        "speed": 0,
        "offload": 0,
        "cheatsheet": 0,
    }


def test_version_is_the_installed_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"k3plan {importlib.metadata.version('k3lib')}\n"


def test_report_without_the_reports_extra_names_it_in_one_line(monkeypatch, tmp_path, capsys):
    import k3lib.report.run as run

    monkeypatch.setattr(run, "REPORT_MODULES", ("papermill", "k3lib_no_such_module"))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--model", "llama-3.1-8b", "-o", "r.html"]) == 2
    assert main(["report", "--scenarios", str(ROOT / "examples" / "scenarios.yaml"), "-o", "out"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert (
        err
        == [
            "k3plan: error: `k3plan report` needs k3lib_no_such_module, which the base install leaves out: "
            "pip install 'k3lib[reports]'"
        ]
        * 2
    )
    assert list(tmp_path.iterdir()) == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream, shown", [(_Terminal, True), (io.StringIO, False)])
def test_batch_progress_bar_only_on_a_terminal(monkeypatch, tmp_path, stream, shown):
    pytest.importorskip("tqdm")
    from k3lib.report import ReportResult, run_batch

    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    scenarios = [{"name": "a", "model": "llama-3.1-8b", "gpus": 1}, {"name": "b", "model": "llama-3.1-8b", "gpus": 2}]
    results = run_batch(
        scenarios,
        tmp_path / "out",
        runner=lambda p, out, notebook=None: ReportResult(scenario=p["scenario"], error="not run"),
    )
    assert len(results) == 2
    assert ("reports: 100%" in err.getvalue()) is shown, err.getvalue()


def test_report_is_quiet_and_writes_only_the_html(tmp_path):
    """A real kernel run: no "Kernel is running over TCP without encryption" (nor anything else)
    on stderr, and the .ipynb only with --keep-notebook (tests/test_report.py keeps one)."""
    pytest.importorskip("papermill")
    k3plan = Path(sys.executable).with_name("k3plan")
    argv = [str(k3plan)] if k3plan.exists() else [sys.executable, "-m", "k3lib"]
    res = subprocess.run(
        [*argv, "report", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus", "1", "-o", "out/r.html"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == "out/r.html\n" and res.stderr == ""
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.html"]
