"""The static checks (issue 25 §4): ruff and mypy are configured in pyproject.toml, installed by
the test extra and run by scripts/test.sh before pytest; every ``noqa`` left in the code says why.

The checks themselves run in scripts/test.sh (``ruff check``, ``ruff format --check``, ``mypy``);
these tests keep their configuration from drifting: a dropped tool, a global ``strict``, an
``ignore_missing_imports`` that hides a typed package, a bare ``noqa``.
"""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: what ``strict = true`` stands for in mypy 2.4, less the two flags that are global only
#: (warn_unused_configs, warn_redundant_casts: set in [tool.mypy] itself)
STRICT_FLAGS = (
    "disallow_any_generics",
    "disallow_subclassing_any",
    "disallow_untyped_calls",
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "disallow_untyped_decorators",
    "warn_return_any",
    "no_implicit_reexport",
    "strict_equality",
)


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _requirement_name(req: str) -> str:
    return re.split(r"[\s<>=!~\[;]", req.strip(), maxsplit=1)[0].lower()


def test_the_test_extra_installs_the_checkers_and_their_stubs():
    names = {_requirement_name(r) for r in _pyproject()["project"]["optional-dependencies"]["test"]}
    assert {"ruff", "mypy", "pandas-stubs", "types-pyyaml", "types-tqdm"} <= names


def test_ruff_is_configured_like_the_code():
    ruff = _pyproject()["tool"]["ruff"]
    assert ruff["line-length"] == 120 and ruff["target-version"] == "py311"
    assert {"E", "F", "W", "I", "UP", "B", "RUF100"} <= set(ruff["lint"]["select"])
    assert ruff["format"]["quote-style"] == "double"


def test_mypy_is_strict_on_core_and_loaders_and_default_elsewhere():
    mypy = _pyproject()["tool"]["mypy"]
    assert mypy["files"] == ["k3lib"] and mypy["python_version"] == "3.11"
    assert mypy["check_untyped_defs"] is True
    assert "strict" not in mypy
    strict = [o for o in mypy["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1 and sorted(strict[0]["module"]) == ["k3lib.core.*", "k3lib.loaders.*"]
    # `strict = true` in an override would switch strict mode on for every module (mypy reads
    # that key globally), so the override lists the flags it stands for
    assert "strict" not in strict[0]
    assert {flag: strict[0].get(flag) for flag in STRICT_FLAGS} == dict.fromkeys(STRICT_FLAGS, True)


def test_missing_imports_are_ignored_only_for_named_untyped_packages():
    for override in _pyproject()["tool"]["mypy"]["overrides"]:
        if override.get("ignore_missing_imports"):
            modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
            assert modules and all(not m.startswith("k3lib") and m != "*" for m in modules), override


def test_the_test_command_runs_the_static_checks_before_pytest():
    text = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    steps = [
        text.index(s)
        for s in (
            '.venv/bin/ruff check "',
            '.venv/bin/ruff format --check "',
            ".venv/bin/python -m mypy",
            ".venv/bin/python -m pytest",
        )
    ]
    assert steps == sorted(steps)
    assert "static_rc=1" in text and "rc=1" in text  # a failed check fails the run


#: a noqa directive with no codes, or one with codes and the text after them
_NOQA = re.compile(r"#\s*noqa\b(?P<codes>:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)?(?P<why>.*)$")


def _noqa_without_reason(line: str) -> bool:
    m = _NOQA.search(line)
    return m is not None and (not m["codes"] or not m["why"].strip(" —–-:()"))


def test_the_reason_rule_reads_noqa_comments():
    directive = "# " + "noqa"  # spelled apart, so that ruff does not read these strings as directives
    assert _noqa_without_reason(f"import os  {directive}: F401")
    assert _noqa_without_reason(f"import os  {directive}")
    assert not _noqa_without_reason(f"import os  {directive}: F401 — re-exported")
    assert not _noqa_without_reason(f"import os  {directive}: E402, F401  (scripts/ is not a package)")
    assert not _noqa_without_reason("import os")


def test_every_noqa_says_why():
    paths = [
        p
        for top in ("k3lib", "tests", "scripts")
        for p in sorted((ROOT / top).rglob("*.py"))
        if p != Path(__file__).resolve()
    ]
    bare = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in paths
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "noqa" in line and _noqa_without_reason(line)
    ]
    assert not bare, "a noqa that does not say why:\n" + "\n".join(bare)
