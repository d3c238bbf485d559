"""No import circles between modules: files that import each other, however the import is made.

Counted as issue 30 counts them: every ``import`` and ``from … import`` statement anywhere in a file's syntax tree
is an edge, including those under ``if TYPE_CHECKING:`` and those deferred into a function. A reader of one file of
a circle has to hold the others in mind too, whichever way the import was hidden from the interpreter.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_layers import FOLDERS, ROOT

PENDING: frozenset[frozenset[str]] = frozenset()
"""Circles known and being removed, each as its exact set of modules (none today).

Tolerated until they go, and checked to be still there: a circle listed here that no longer exists fails the
test, so the list shrinks to empty as they are broken. A circle not listed here fails the test."""


@dataclass(frozen=True)
class Edge:
    """One module importing another: the first statement of ``source`` that does it."""

    source: str
    target: str
    path: Path
    line: int
    statement: str


def modules(roots: Mapping[str, Path]) -> dict[str, Path]:
    """Every module under ``roots`` (installed package name -> its source folder), by its installed name.

    A package is named by its ``__init__.py``; a folder nested in another root is counted once.
    """
    found: dict[str, Path] = {}
    for package, folder in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found.setdefault(".".join([package, *parts]), path)
    return found


def _package_of(name: str, path: Path) -> str:
    """The package a relative import in module ``name`` (at ``path``) is relative to."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imported(node: ast.Import | ast.ImportFrom, name: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The known modules one import statement of module ``name`` names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    base = node.module or ""
    if node.level:
        anchor = _package_of(name, path).split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    for alias in node.names:
        # `from package import name`: the submodule when `name` is one, else the package's __init__.
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in known else base


def edges(known: Mapping[str, Path]) -> dict[str, dict[str, Edge]]:
    """Module -> module it imports -> the first statement that does it, for imports between ``known`` modules.

    An import of a module not in ``known`` (the standard library, a third-party package) is left out; an import
    of a dotted name is an edge to the deepest known module it names.
    """
    graph: dict[str, dict[str, Edge]] = {name: {} for name in known}
    for name, path in known.items():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source, filename=str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for dotted in _imported(node, name, path, known):
                parts = dotted.split(".")
                while parts and ".".join(parts) not in known:
                    parts.pop()
                target = ".".join(parts)
                if not target or target == name:
                    continue
                statement = " ".join((ast.get_source_segment(source, node) or "").split())
                edge = Edge(name, target, path, node.lineno, statement)
                earlier = graph[name].get(target)
                if earlier is None or edge.line < earlier.line:
                    graph[name][target] = edge
    return graph


def strongly_connected(graph: Mapping[str, Mapping[str, Edge]]) -> list[frozenset[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_circles(roots: Mapping[str, Path]) -> dict[frozenset[str], list[Edge]]:
    """Every import circle among the modules under ``roots``: its modules, and one import line per edge inside it."""
    graph = edges(modules(roots))
    return {
        circle: [
            graph[source][target] for source in sorted(circle) for target in sorted(graph[source]) if target in circle
        ]
        for circle in strongly_connected(graph)
    }


def describe(circle: frozenset[str], inside: list[Edge], root: Path) -> str:
    """A circle as the failure shows it: its modules, then each edge with the line that makes it."""
    lines = [f"circle of {len(circle)} modules: {', '.join(sorted(circle))}"]
    for edge in inside:
        shown = edge.path.relative_to(root) if edge.path.is_relative_to(root) else edge.path
        lines.append(f"  {edge.source} -> {edge.target}  ({shown}:{edge.line}: {edge.statement})")
    return "\n".join(lines)


def installed_roots(root: Path = ROOT) -> dict[str, Path]:
    """Every installed package folder of the checkout, by its installed name."""
    return {
        ("toolproof" if layer == "toolproof" else f"toolproof.{layer}"): root / folder
        for layer, folder in FOLDERS.items()
    }


def circle_problems(
    circles: Mapping[frozenset[str], list[Edge]], pending: frozenset[frozenset[str]], root: Path
) -> list[str]:
    """What is wrong: each circle not in ``pending``, and each circle of ``pending`` that no longer exists."""
    new = [describe(circle, inside, root) for circle, inside in circles.items() if circle not in pending]
    gone = sorted(", ".join(sorted(circle)) for circle in pending if circle not in circles)
    problems = []
    if new:
        problems.append("import circles (break one edge of each: an interface module, a protocol, a callback):")
        problems += new
    if gone:
        problems.append("PENDING lists circles that no longer exist (remove them from the list):")
        problems += [f"  {circle}" for circle in gone]
    return problems


def test_no_import_circle_but_the_pending_ones() -> None:
    problems = circle_problems(import_circles(installed_roots()), PENDING, ROOT)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def _package(folder: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_planted_circle_is_found_through_type_checking_and_function_imports(tmp_path: Path) -> None:
    source = _package(
        tmp_path / "src",
        {
            "__init__.py": "",
            # A circle through an import made only for type checking.
            "_typed.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from ._user import User\n",
            "_user.py": "from toolproof.planted._typed import Typed\n",
            # A circle through an import deferred into a function, `from . import` of a submodule.
            "_early.py": "def late() -> None:\n    from . import _late\n",
            "_late.py": "import toolproof.planted._early\n",
            # A circle through a package's __init__, and a one-way import that is no circle.
            "sub/__init__.py": "from ._inner import Inner\n",
            "sub/_inner.py": "import json\n\nfrom .. import sub\n",
            "_leaf.py": "from ._typed import Typed\nfrom . import sub\n",
        },
    )
    circles = import_circles({"toolproof.planted": source})
    typed = frozenset({"toolproof.planted._typed", "toolproof.planted._user"})
    deferred = frozenset({"toolproof.planted._early", "toolproof.planted._late"})
    package = frozenset({"toolproof.planted.sub", "toolproof.planted.sub._inner"})
    assert set(circles) == {typed, deferred, package}
    problems = circle_problems(circles, frozenset({package}), tmp_path)
    assert problems == [
        "import circles (break one edge of each: an interface module, a protocol, a callback):",
        "circle of 2 modules: toolproof.planted._early, toolproof.planted._late\n"
        "  toolproof.planted._early -> toolproof.planted._late  (src/_early.py:2: from . import _late)\n"
        "  toolproof.planted._late -> toolproof.planted._early  (src/_late.py:1: import toolproof.planted._early)",
        "circle of 2 modules: toolproof.planted._typed, toolproof.planted._user\n"
        "  toolproof.planted._typed -> toolproof.planted._user  (src/_typed.py:4: from ._user import User)\n"
        "  toolproof.planted._user -> toolproof.planted._typed"
        "  (src/_user.py:1: from toolproof.planted._typed import Typed)",
    ]


def test_a_pending_circle_that_is_gone_fails_too(tmp_path: Path) -> None:
    source = _package(tmp_path / "src", {"__init__.py": "", "_one.py": "from . import _two\n", "_two.py": ""})
    circles = import_circles({"toolproof.planted": source})
    assert circles == {}
    gone = frozenset({frozenset({"toolproof.planted._one", "toolproof.planted._two"})})
    assert circle_problems(circles, gone, tmp_path) == [
        "PENDING lists circles that no longer exist (remove them from the list):",
        "  toolproof.planted._one, toolproof.planted._two",
    ]
