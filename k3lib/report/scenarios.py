"""Scenario files (YAML) for ``k3plan report --scenarios``: bounded parsing and typed fields.

A scenario file is untrusted input. :func:`safe_load_bounded` parses it with PyYAML's
safe loader and stops, before building anything, at any of: a file over
:data:`MAX_FILE_BYTES`, more than :data:`MAX_ALIASES` aliases (``*name``), nesting deeper
than :data:`MAX_DEPTH`, or a document that would expand (aliases followed) to more than
:data:`MAX_EXPANDED_NODES` nodes — so a "billion laughs" file fails in milliseconds with
:class:`ScenarioFileError` instead of growing for a minute. Every scenario field is then
checked against :data:`k3lib.report.parameters.PARAMETERS` (:func:`check_scenario`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from k3lib.core.errors import K3InputError
from k3lib.report.parameters import PARAMETERS_BY_NAME, coerce_parameter

MAX_FILE_BYTES = 1_000_000  # a scenario file of 1 MB is already ~10,000 scenarios
MAX_ALIASES = 32  # enough for `<<: *defaults` in every scenario of a normal file
MAX_DEPTH = 16  # defaults → scenarios → list → mapping is depth 4
MAX_EXPANDED_NODES = 100_000  # nodes once every alias is expanded
MAX_SCENARIOS = 1_000
TOP_LEVEL_KEYS = ("scenarios", "defaults")


class ScenarioFileError(K3InputError):
    """A scenario file that cannot be read, is too large or too nested, uses too many
    YAML aliases, or does not have the expected shape."""


def _bounded_loader(path_label: str):
    import yaml

    class BoundedSafeLoader(yaml.SafeLoader):
        """The safe loader, counting aliases and depth while composing the node tree."""

        def __init__(self, stream):
            super().__init__(stream)
            self._aliases = 0
            self._depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    raise ScenarioFileError(
                        "scenarios",
                        f"{path_label} uses more than {MAX_ALIASES} YAML aliases "
                        "(*name); refused as a possible alias bomb",
                        f"at most {MAX_ALIASES} aliases",
                    )
                return super().compose_node(parent, index)
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise ScenarioFileError(
                        "scenarios", f"{path_label} nests deeper than {MAX_DEPTH} levels", f"at most {MAX_DEPTH} levels"
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return BoundedSafeLoader


def expanded_nodes(node, _memo: dict | None = None) -> int:
    """Nodes of a composed YAML tree with every alias expanded: $n(x) = 1 + \\sum_c n(c)$,
    memoised per node object (an alias is the same object), so the count itself is linear
    in the file while its value may be exponential."""
    import yaml

    memo = {} if _memo is None else _memo
    key = id(node)
    if key in memo:
        return memo[key]
    if isinstance(node, yaml.SequenceNode):
        n = 1 + sum(expanded_nodes(c, memo) for c in node.value)
    elif isinstance(node, yaml.MappingNode):
        n = 1 + sum(expanded_nodes(k, memo) + expanded_nodes(v, memo) for k, v in node.value)
    else:
        n = 1
    memo[key] = n
    return n


def safe_load_bounded(text: str, *, label: str = "the scenario file") -> Any:
    """Parse one YAML document within the bounds of this module (see its docstring)."""
    import yaml

    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ScenarioFileError(
            "scenarios", f"{label} is larger than {MAX_FILE_BYTES:,} bytes", f"at most {MAX_FILE_BYTES:,} bytes"
        )
    loader = _bounded_loader(label)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        n = expanded_nodes(node)
        if n > MAX_EXPANDED_NODES:
            raise ScenarioFileError(
                "scenarios",
                f"{label} expands to {n:,} YAML nodes once its aliases are followed; refused as an alias bomb",
                f"at most {MAX_EXPANDED_NODES:,}",
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ScenarioFileError("scenarios", f"{label} is not valid YAML: {str(exc).splitlines()[0]}") from None
    finally:
        loader.dispose()


def _check_fields(item: Mapping[Any, Any], where: str, *, allow_name: bool) -> dict[str, Any]:
    """Every key a known parameter (or ``name``), every value of its parameter's type."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        if not isinstance(key, str):
            raise K3InputError(f"{where}", f"key {key!r} is not text", "report parameter names")
        if key == "name" and allow_name:
            if isinstance(value, (dict, list)) or isinstance(value, bool):
                raise K3InputError(f"{where}.name", f"{value!r} is not text", "a string")
            out["name"] = "" if value is None else str(value)
            continue
        p = PARAMETERS_BY_NAME.get(key)
        if p is None:
            allowed = ", ".join((["name"] if allow_name else []) + list(PARAMETERS_BY_NAME))
            raise K3InputError(f"{where}.{key}", "is not a report parameter", allowed)
        out[key] = coerce_parameter(p, value, f"{where}.{key}")
    return out


def check_scenario(item: Any, index: int, defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Scenario ``index`` (1-based) type-checked and merged over ``defaults``: a dict of
    report parameters plus ``name``. Raises :class:`K3InputError` naming
    ``scenarios[i].field``."""
    where = f"scenarios[{index}]"
    if not isinstance(item, Mapping):
        raise K3InputError(where, f"is not a mapping: {item!r}"[:200], "name: ..., model: ..., gpus: ...")
    checked = _check_fields(item, where, allow_name=True)
    out = {**(defaults or {}), **checked}
    out.setdefault("name", f"scenario {index}")
    out["name"] = out["name"] or f"scenario {index}"
    return out


def load_scenario_file(path: str | Path) -> tuple[dict[str, Any], list[Any]]:
    """(defaults, raw scenarios) of a scenario file: bounded parsing, the top-level shape
    and the defaults checked; each scenario is checked on its own by :func:`check_scenario`
    so one bad scenario does not stop the others."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioFileError(
                "scenarios", f"{path} is larger than {MAX_FILE_BYTES:,} bytes", f"at most {MAX_FILE_BYTES:,} bytes"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioFileError("scenarios", f"cannot read {path}: {exc}") from None
    doc = safe_load_bounded(text, label=str(path))
    if isinstance(doc, list):
        doc = {"scenarios": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("scenarios"), list):
        raise ScenarioFileError("scenarios", f"{path} has no 'scenarios:' list", "scenarios: [{name: ..., model: ...}]")
    extra = [k for k in doc if k not in TOP_LEVEL_KEYS]
    if extra:
        raise ScenarioFileError(str(extra[0]), f"is not a top-level key of {path}", ", ".join(TOP_LEVEL_KEYS))
    if len(doc["scenarios"]) > MAX_SCENARIOS:
        raise ScenarioFileError(
            "scenarios", f"{path} has {len(doc['scenarios']):,} scenarios", f"at most {MAX_SCENARIOS:,}"
        )
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ScenarioFileError("defaults", "must be a mapping of report parameters")
    return _check_fields(defaults, "defaults", allow_name=False), list(doc["scenarios"])


def load_scenarios(path: str | Path) -> list[dict[str, Any]]:
    """Every scenario of a file, checked (:func:`check_scenario`); the first bad one raises."""
    defaults, items = load_scenario_file(path)
    return [check_scenario(item, i, defaults) for i, item in enumerate(items, 1)]
