"""The package's import graph: no circles, and no import that runs up the layers.

Every module of ``k3lib`` is read with :mod:`ast` (nothing is imported), and every
``import``/``from … import`` in it counts — at module level, inside functions (a lazy import is
where a circle hides) and under ``if TYPE_CHECKING:`` (a type named from a higher layer is still a
dependency on it: give the lower layer a Protocol, or pass the value down). An edge ``a → b``
joins two ``k3lib`` modules when ``a`` imports ``b`` (``from k3lib.x import y`` points at the
module ``k3lib.x.y`` when that is a module, else at ``k3lib.x``).

The layers, bottom to top; a module may import its own layer and the ones below it, never one
above (rank(target) ≤ rank(importer)):

====  ===========  ====================================================================
rank  layer        what it holds
====  ===========  ====================================================================
0     ``core``     formulas over bytes: units, precisions, hardware, architecture, memory, plan
1     ``loaders``  config.json, GGUF, safetensors, the hub, a model by name or path
2     ``engines``  vLLM, llama.cpp, SGLang, transformers: each engine's delta over the core
3     ``serving``  step time, communication, concurrency and cost of a plan; the offload model
4     ``studies``  the solver, checklist steps, cheat sheets, offload study, launch commands
5     ``guides``   the guides' claims, the audit's checks, registry and runner
6     ``views``    presentation: tables, charts, widgets, notebook parameters
7     ``report``   parameterized HTML reports
8     top          ``k3lib`` itself and its modules: ``cli``, ``cli_args``, ``cli_studies``, ``__main__``
====  ===========  ====================================================================

Formulas at the bottom, presentation on top: a view may call an engine, an engine never draws.
Circles are forbidden between modules (a strongly connected component of more than one module,
or a module importing itself) *and* between layers, which the rank rule already implies.

A new subpackage must take its place in :data:`LAYER_RANKS` (a test fails until it does).

Every offence is reported as ``file:line  importer → imported``; :func:`test_checker_sees_*`
feed the checker tiny synthetic graphs so that it is known to turn red.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "k3lib"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE

#: layer name → rank, bottom (0) to top; the package itself and its top-level modules rank highest
LAYER_RANKS: dict[str, int] = {
    "core": 0,
    "loaders": 1,
    "engines": 2,
    "serving": 3,
    "studies": 4,
    "guides": 5,
    "views": 6,
    "report": 7,
}
TOP_RANK = 8


@dataclass(frozen=True)
class ImportEdge:
    """One import statement of a ``k3lib`` module naming another ``k3lib`` module."""

    importer: str
    imported: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}  {self.importer} → {self.imported}"


def module_name_for_path(path: Path, *, root: Path) -> str:
    """``root/k3lib/a/b.py`` → ``k3lib.a.b``; a package's ``__init__.py`` → the package's name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package under ``package_dir``: dotted name → file."""
    root = package_dir.parent
    return {module_name_for_path(p, root=root): p for p in sorted(package_dir.rglob("*.py"))}


def _absolute_base(node: ast.ImportFrom, *, importer: str, is_package: bool) -> str:
    """The module a ``from … import`` names, with a relative import (``from ..core import x``)
    resolved against the importer: level 1 is the importer's package, each further dot one up."""
    if node.level == 0:
        return node.module or ""
    package_parts = importer.split(".") if is_package else importer.split(".")[:-1]
    base_parts = package_parts[: len(package_parts) - (node.level - 1)]
    return ".".join(base_parts + ([node.module] if node.module else []))


def imports_in_source(
    source: str, *, importer: str, is_package: bool, known: set[str], path: str = "<source>"
) -> list[ImportEdge]:
    """The edges to ``known`` modules of every import in ``source``, at any depth (lazy ones too).

    ``import a.b.c`` names ``a.b.c``; ``from a.b import c`` names ``a.b.c`` when that is a known
    module (a submodule), else ``a.b`` (``c`` is an attribute of it)."""
    edges: list[ImportEdge] = []
    with warnings.catch_warnings():  # a module's invalid escape sequences are a linter's business, not this test's
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        tree = ast.parse(source)
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute_base(node, importer=importer, is_package=is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.append(sub if sub in known else base)
        for target in targets:
            while target and target not in known:  # import k3lib.a.b.attr → the longest known prefix
                target = target.rpartition(".")[0]
            edge = ImportEdge(importer, target, path, node.lineno)
            if target and edge not in edges:  # one edge per statement, however many names it imports
                edges.append(edge)
    return edges


def package_import_edges(package_dir: Path = PACKAGE_DIR) -> list[ImportEdge]:
    """Every internal import edge of the package, in file and line order."""
    modules = package_modules(package_dir)
    known = set(modules)
    repo = package_dir.parent
    edges: list[ImportEdge] = []
    for name, path in modules.items():
        edges += imports_in_source(
            path.read_text(encoding="utf-8"),
            importer=name,
            is_package=path.name == "__init__.py",
            known=known,
            path=str(path.relative_to(repo)),
        )
    return edges


def layer_rank(module: str) -> int:
    """The rank of the layer ``module`` belongs to: its first part below the package, looked up in
    :data:`LAYER_RANKS`; the package itself and its top-level modules (cli, __main__) rank top."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYER_RANKS:
        return TOP_RANK
    return LAYER_RANKS[parts[1]]


def upward_imports(edges: list[ImportEdge]) -> list[ImportEdge]:
    """The edges whose imported module lies in a higher layer than its importer."""
    return [e for e in edges if layer_rank(e.imported) > layer_rank(e.importer)]


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the strongly connected components of ``graph``
    (node → successors), each sorted; nodes without an entry have no successors."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph.get(succ, ())))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def import_cycles(edges: list[ImportEdge]) -> list[list[ImportEdge]]:
    """The circles: for every strongly connected component of more than one module (or a module
    importing itself), the edges that run inside it."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.importer, set()).add(e.imported)
    cycles = []
    for component in strongly_connected_components(graph):
        members = set(component)
        inside = [e for e in edges if e.importer in members and e.imported in members]
        if len(component) > 1 or inside:
            cycles.append(inside)
    return cycles


# --- the package itself ---------------------------------------------------------------------------


def test_the_package_has_modules_and_edges():
    edges = package_import_edges()
    assert len(package_modules(PACKAGE_DIR)) > 100
    assert len(edges) > 300


def test_every_subpackage_has_a_layer():
    subpackages = {p.relative_to(PACKAGE_DIR).parts[0] for p in PACKAGE_DIR.rglob("*.py")} - {
        p.name for p in PACKAGE_DIR.glob("*.py")
    }
    assert subpackages == set(LAYER_RANKS), "give each subpackage a rank in LAYER_RANKS"


def test_no_import_runs_up_the_layers():
    offences = upward_imports(package_import_edges())
    assert not offences, "imports that run up the layers:\n" + "\n".join(
        f"{e}  ({layer_rank(e.importer)} → {layer_rank(e.imported)})" for e in offences
    )


def test_no_import_circles():
    cycles = import_cycles(package_import_edges())
    assert not cycles, "import circles:\n" + "\n\n".join("\n".join(str(e) for e in c) for c in cycles)


# --- the checker, on synthetic graphs -------------------------------------------------------------

KNOWN = {
    "k3lib",
    "k3lib.core",
    "k3lib.core.memory",
    "k3lib.core.units",
    "k3lib.views",
    "k3lib.views.tables",
    "k3lib.engines",
    "k3lib.engines.vllm",
}


def test_checker_reads_absolute_relative_and_lazy_imports():
    source = (
        "import k3lib.core.units\n"
        "from k3lib.core import memory\n"
        "from k3lib.core.memory import kv_cache_bytes\n"
        "from . import vllm\n"
        "from ..views.tables import render\n"
        "import numpy\n"
        "def f():\n"
        "    from k3lib.views import tables\n"
    )
    edges = imports_in_source(
        source,
        importer="k3lib.engines.llamacpp",
        is_package=False,
        known=KNOWN | {"k3lib.engines.llamacpp"},
        path="x.py",
    )
    assert [(e.imported, e.line) for e in edges] == [
        ("k3lib.core.units", 1),
        ("k3lib.core.memory", 2),
        ("k3lib.core.memory", 3),
        ("k3lib.engines.vllm", 4),
        ("k3lib.views.tables", 5),
        ("k3lib.views.tables", 8),
    ]


def test_checker_resolves_relative_imports_of_a_package_init():
    edges = imports_in_source("from .memory import x\n", importer="k3lib.core", is_package=True, known=KNOWN)
    assert [e.imported for e in edges] == ["k3lib.core.memory"]


def test_checker_sees_an_upward_import_with_its_line():
    source = "import k3lib.core.units\n\n\ndef late():\n    from k3lib.views.tables import render\n"
    edges = imports_in_source(
        source, importer="k3lib.core.memory", is_package=False, known=KNOWN, path="k3lib/core/memory.py"
    )
    offences = upward_imports(edges)
    assert [str(e) for e in offences] == ["k3lib/core/memory.py:5  k3lib.core.memory → k3lib.views.tables"]


def test_checker_allows_imports_down_and_sideways():
    edges = [
        ImportEdge("k3lib.views.tables", "k3lib.core.units", "a.py", 1),
        ImportEdge("k3lib.core.memory", "k3lib.core.units", "b.py", 1),
        ImportEdge("k3lib.cli", "k3lib.views.tables", "c.py", 1),
    ]
    assert upward_imports(edges) == []
    assert import_cycles(edges) == []


def test_checker_sees_a_circle_of_three_and_a_self_import():
    edges = [
        ImportEdge("k3lib.core.a", "k3lib.core.b", "a.py", 1),
        ImportEdge("k3lib.core.b", "k3lib.core.c", "b.py", 2),
        ImportEdge("k3lib.core.c", "k3lib.core.a", "c.py", 3),
        ImportEdge("k3lib.core.c", "k3lib.core.d", "c.py", 4),
        ImportEdge("k3lib.core.e", "k3lib.core.e", "e.py", 5),
    ]
    cycles = import_cycles(edges)
    assert sorted(sorted(e.line for e in c) for c in cycles) == [[1, 2, 3], [5]]


def test_layer_ranks_put_core_at_the_bottom_and_the_cli_on_top():
    assert layer_rank("k3lib.core.memory") == 0
    assert layer_rank("k3lib.views.tables") == 6
    assert layer_rank("k3lib.cli") == layer_rank("k3lib") == TOP_RANK


def test_checker_reads_a_package_on_disk(tmp_path):
    """A tiny package with a lazy upward import and a two-module circle, read from files."""
    files = {
        "k3lib/__init__.py": "",
        "k3lib/core/__init__.py": "",
        "k3lib/core/a.py": "import math\n\n\ndef f():\n    from k3lib.views.b import g\n",
        "k3lib/views/__init__.py": "",
        "k3lib/views/b.py": "from k3lib.views import c\n",
        "k3lib/views/c.py": "from .b import g\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    edges = package_import_edges(tmp_path / "k3lib")
    assert [str(e) for e in upward_imports(edges)] == ["k3lib/core/a.py:5  k3lib.core.a → k3lib.views.b"]
    assert [sorted(str(e) for e in c) for c in import_cycles(edges)] == [
        ["k3lib/views/b.py:1  k3lib.views.b → k3lib.views.c", "k3lib/views/c.py:1  k3lib.views.c → k3lib.views.b"]
    ]
