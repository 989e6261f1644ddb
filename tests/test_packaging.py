"""The packaging files agree with each other: one dependency list, one test command.

pyproject.toml holds the only dependency list; environment.yml must install the project
from it rather than repeat it, and CI (.ci/run) must run the test command README.md gives.
"""
from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

# Conda packages that environment.yml may name without pyproject.toml listing them:
# the interpreter and the installer themselves.
CONDA_TOOLING = {"python", "pip"}


def _canonical(name: str) -> str:
    """PEP 503 normalised project name: `PyYAML`, `jupyterlab_widgets` -> `pyyaml`, `jupyterlab-widgets`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    """The project name at the start of a requirement string (`altair>=5.0` -> `altair`)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"cannot read a project name from requirement {requirement!r}"
    return _canonical(match.group(1))


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def declared_names(pyproject) -> set[str]:
    project = pyproject["project"]
    names = {_requirement_name(r) for r in project["dependencies"]}
    for extra in project.get("optional-dependencies", {}).values():
        names |= {_requirement_name(r) for r in extra}
    return names


def _conda_deps(environment: dict) -> list[str]:
    return [d for d in environment["dependencies"] if isinstance(d, str)]


def _pip_section(environment: dict) -> list[str]:
    sections = [d["pip"] for d in environment["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(sections) == 1, "environment.yml needs exactly one `pip:` section"
    return sections[0]


def test_environment_uses_conda_forge(environment):
    assert "conda-forge" in environment.get("channels", [])


def test_environment_lists_python_311_and_pip(environment):
    conda = _conda_deps(environment)
    assert any(re.fullmatch(r"python\s*=?=\s*3\.11(\.\*|\.\d+)?", d.strip()) for d in conda), (
        f"environment.yml should pin python=3.11, found {conda}"
    )
    # A `pip:` section without pip itself listed makes conda warn and may use another pip.
    assert any(_requirement_name(d.split("=")[0]) == "pip" for d in conda), "environment.yml must list pip"


def test_environment_installs_the_package_from_pip_metadata(environment, pyproject):
    entries = [e.strip() for e in _pip_section(environment)]
    local = [e for e in entries if re.fullmatch(r"(-e\s+|--editable\s+)?\.(\[[\w,\s-]+\])?", e)]
    assert local, f"environment.yml's pip section must install the project itself (`-e .[test]`), found {entries}"
    assert any(e.startswith(("-e", "--editable")) for e in local), (
        "install the project editable: k3lib finds data/ next to its source folder"
    )
    extras_known = set(pyproject["project"].get("optional-dependencies", {}))
    for entry in local:
        extras = re.search(r"\[(.*)\]", entry)
        for extra in extras.group(1).split(",") if extras else []:
            assert extra.strip() in extras_known, f"environment.yml asks for extra {extra!r}, pyproject has {extras_known}"


def test_environment_names_no_dependency_pyproject_lacks(environment, declared_names):
    """The dependency list lives in pyproject.toml; environment.yml may repeat, never add."""
    named = {_requirement_name(re.split(r"[=<>!~ ]", d, maxsplit=1)[0]) for d in _conda_deps(environment)}
    named |= {
        _requirement_name(e)
        for e in _pip_section(environment)
        if not e.strip().startswith(("-", ".", "/"))
    }
    extra = named - declared_names - CONDA_TOOLING
    assert not extra, f"environment.yml names {sorted(extra)}, which pyproject.toml does not declare"


def test_pyproject_requires_python_311(pyproject):
    spec = pyproject["project"]["requires-python"]
    assert ">=3.11" in spec.replace(" ", ""), spec


def test_dependencies_have_lower_bounds_only(pyproject, declared_names):
    project = pyproject["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    for requirement in requirements:
        spec = requirement.split(";")[0]
        assert ">=" in spec, f"{requirement!r}: give a lower bound"
        assert not re.search(r"<|==|~=|!=", spec), f"{requirement!r}: no upper pins"
    for needed in ("altair", "vl-convert-python", "ipywidgets", "jupyterlab", "jupyterlab-widgets",
                   "papermill", "gguf", "pyyaml", "pytest", "nbval"):
        assert needed in declared_names, f"pyproject.toml should declare {needed}"


def test_k3plan_console_script(pyproject):
    assert pyproject["project"]["scripts"]["k3plan"] == "k3lib.cli:main"


def test_k3plan_entry_point_installed():
    """When k3lib is installed (scripts/setup-env.sh), its metadata carries the same entry point."""
    from importlib import metadata

    try:
        metadata.distribution("k3lib")
    except metadata.PackageNotFoundError:
        pytest.skip("k3lib is not installed; run scripts/setup-env.sh")
    points = {e.name: e.value for e in metadata.entry_points(group="console_scripts")}
    assert points.get("k3plan") == "k3lib.cli:main"


def test_pytest_does_not_force_nbval(pyproject):
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"]
    assert "--nbval" not in options.get("addopts", ""), "scripts/test.sh asks for --nbval explicitly"
    assert any(m.split(":")[0].strip() == "browser" for m in options.get("markers", []))


def _readme_test_command() -> str:
    readme = ROOT / "README.md"
    assert readme.is_file(), "README.md is missing: it must give the test command (`bash scripts/test.sh`)"
    for line in readme.read_text(encoding="utf-8").splitlines():
        if "scripts/test.sh" not in line:
            continue
        # Prefer the command inside backticks; otherwise the code-block line without a `$ ` prompt.
        quoted = [q for q in re.findall(r"`([^`]+)`", line) if "scripts/test.sh" in q]
        command = quoted[0] if quoted else re.sub(r"^\s*\$\s*", "", line)
        return command.strip()
    raise AssertionError("README.md has no line with the test command `bash scripts/test.sh`")


def _ci_commands() -> list[str]:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    return [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_ci_runs_the_readme_test_command():
    readme_command = _readme_test_command()
    assert "scripts/test.sh" in readme_command
    ci = _ci_commands()
    assert any("scripts/test.sh" in c for c in ci), ".ci/run must call scripts/test.sh"
    assert shlex.split(readme_command, comments=True) in [shlex.split(c, comments=True) for c in ci], (
        f"README.md gives `{readme_command}`, .ci/run runs {ci}: they must be the same command"
    )


def test_readme_names_scripts_that_exist():
    readme = ROOT / "README.md"
    assert readme.is_file(), "README.md is missing"
    text = readme.read_text(encoding="utf-8")
    for script in ("scripts/open-workbook.sh", "scripts/test.sh"):
        assert script in text, f"README.md should give `bash {script}`"
    for named in set(re.findall(r"scripts/[\w.-]+\.sh", text)):
        assert (ROOT / named).is_file(), f"README.md names {named}, which does not exist"
