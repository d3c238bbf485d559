"""Witnesses plant their defect through the reference's public hooks, never through its private parts.

A witness replaces a step-table entry or overrides a public hook of ``toolproof.reference.hooks``.
It must not import a private ``toolproof.reference._x`` module, touch (read, write or delete) an
attribute whose name starts with ``_`` of an object it did not define, or define a ``_x`` member
in a class (which would override a private one of the reference class it extends).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WITNESS_MODULES = sorted((ROOT / "reference" / "witnesses").glob("*.py"))
REFERENCE = "toolproof.reference"
OWN_PACKAGE = "toolproof.reference.witnesses"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_module(module: str) -> bool:
    """A private module of the reference outside the witnesses' own package."""
    if module == OWN_PACKAGE or module.startswith(OWN_PACKAGE + "."):
        return False
    if module != REFERENCE and not module.startswith(REFERENCE + "."):
        return False
    return any(_private(part) for part in module.split("."))


class _Checker(ast.NodeVisitor):
    """Collects violations; ``owners`` are the names bound to an object the module defined (``self``, ``cls``)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.violations: list[str] = []
        self.owners: tuple[str, ...] = ()
        self.in_class: str | None = None

    def flag(self, node: ast.AST, what: str) -> None:
        self.violations.append(f"{self.where}:{getattr(node, 'lineno', 0)}: {what}")

    # -- imports ---------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _private_module(alias.name):
                self.flag(node, f"imports the private module {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 1:
            module = OWN_PACKAGE + (f".{node.module}" if node.module else "")
        elif node.level > 1:
            parents = OWN_PACKAGE.split(".")[: -(node.level - 1)]
            module = ".".join(parents) + (f".{node.module}" if node.module else "")
        else:
            module = node.module or ""
        if _private_module(module):
            self.flag(node, f"imports from the private module {module}")
            return
        for alias in node.names:
            if _private_module(f"{module}.{alias.name}"):
                self.flag(node, f"imports the private module {module}.{alias.name}")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and _private_module(node.value.partition(":")[0]):
            self.flag(node, f"names the private module {node.value!r}")

    # -- classes and the objects they define ---------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for statement in node.body:
            names: list[str] = []
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [statement.name]
            elif isinstance(statement, ast.Assign):
                names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                names = [statement.target.id]
            for name in names:
                if _private(name):
                    self.flag(statement, f"class {node.name} defines the private member {name}")
        outer, self.in_class = self.in_class, node.name
        self.generic_visit(node)
        self.in_class = outer

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer_owners, outer_class = self.owners, self.in_class
        if self.in_class is not None:
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
            arguments = node.args.posonlyargs + node.args.args
            self.owners = () if static or not arguments else (arguments[0].arg,)
        self.in_class = None  # A class inside this function is visited as its own.
        self.generic_visit(node)
        self.owners, self.in_class = outer_owners, outer_class

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    # -- private attributes of other objects ----------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        own = isinstance(node.value, ast.Name) and node.value.id in self.owners
        if _private(node.attr) and not own:
            verb = {ast.Load: "reads", ast.Store: "assigns to", ast.Del: "deletes"}[type(node.ctx)]
            self.flag(node, f"{verb} the private attribute {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        function = ast.unparse(node.func)
        reflective = function in {"setattr", "getattr", "delattr", "object.__setattr__", "object.__getattribute__"}
        if reflective and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            own = isinstance(target, ast.Name) and target.id in self.owners
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value) and not own:
                self.flag(node, f"{function} of the private attribute {name.value!r}")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
            self.flag(node, f"reaches into {ast.unparse(node.value)}")
        self.generic_visit(node)


def violations(source: str, where: str) -> list[str]:
    """Every place ``source`` (a witness module) reaches past the public hooks."""
    checker = _Checker(where)
    checker.visit(ast.parse(source, filename=where))
    return checker.violations


@pytest.mark.parametrize("path", WITNESS_MODULES, ids=lambda p: p.name)
def test_witness_uses_only_the_public_hooks(path: Path) -> None:
    assert violations(path.read_text(encoding="utf-8"), path.name) == []


PLANTED = """
import toolproof.reference._store
from toolproof.reference._pipeline import Pipeline
from toolproof.reference import _context, hooks
from .._steps import STEP_TABLE
from . import _registry
from toolproof.reference.hooks import CallState
import importlib

importlib.import_module("toolproof.reference._mcp")


async def prepare(p, s):
    s.context._identity = None
    p.store._returning = False
    setattr(s.context, "_mark", None)
    object.__setattr__(s.context, "_mark", None)
    del p._cache
    return p.mcp._specs


class Leaky(Pipeline):
    _salt = 0

    def _parse_result(self, raw):
        self._seen = raw  # Its own object: allowed.
        vars(self)
        self.__dict__["x"] = raw
        return super()._parse_result(raw)
"""


def test_the_rule_catches_every_kind_of_planted_violation() -> None:
    found = violations(PLANTED, "planted.py")
    assert found == [
        "planted.py:2: imports the private module toolproof.reference._store",
        "planted.py:3: imports from the private module toolproof.reference._pipeline",
        "planted.py:4: imports the private module toolproof.reference._context",
        "planted.py:5: imports from the private module toolproof.reference._steps",
        "planted.py:10: names the private module 'toolproof.reference._mcp'",
        "planted.py:14: assigns to the private attribute s.context._identity",
        "planted.py:15: assigns to the private attribute p.store._returning",
        "planted.py:16: setattr of the private attribute '_mark'",
        "planted.py:17: object.__setattr__ of the private attribute '_mark'",
        "planted.py:18: deletes the private attribute p._cache",
        "planted.py:19: reads the private attribute p.mcp._specs",
        "planted.py:23: class Leaky defines the private member _salt",
        "planted.py:25: class Leaky defines the private member _parse_result",
        "planted.py:28: reaches into self.__dict__",
        "planted.py:29: reads the private attribute super()._parse_result",
    ]


def test_a_clean_witness_passes() -> None:
    clean = """
from toolproof.reference.hooks import STEP_TABLE, Pipeline
from toolproof.spec import Step
from ._registry import witness


async def _normalize(p, s):
    await STEP_TABLE[Step.NORMALIZE](p, s)


class Clean(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _normalize}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._pending = []  # Its own attribute, on its own object.
"""
    assert violations(clean, "clean.py") == []


# -- the step table -------------------------------------------------------------------------


def test_the_reference_table_maps_every_step_in_spec_order() -> None:
    from toolproof.reference.hooks import STEP_TABLE
    from toolproof.spec import STEPS

    assert tuple(STEP_TABLE) == STEPS
    assert len(set(STEP_TABLE.values())) == len(STEPS)  # One function per step, none shared.


def test_a_table_missing_a_step_or_with_an_extra_entry_is_refused() -> None:
    from toolproof.reference.hooks import STEP_TABLE, step_table
    from toolproof.spec import Step

    partial = {step: function for step, function in STEP_TABLE.items() if step is not Step.PUBLISH}
    with pytest.raises(
        ImportError,
        match=r"^the step table of demo must map every spec\.STEPS member to one function: "
        r"missing=\['publish'\], extra=\[\]; add or remove those entries$",
    ):
        step_table(partial, owner="demo")
    with pytest.raises(ImportError, match=r"missing=\[\], extra=\[\"'audit'\"\]"):
        step_table({**STEP_TABLE, "audit": STEP_TABLE[Step.PUBLISH]}, owner="demo")  # type: ignore[dict-item]


def test_a_pipeline_with_a_broken_table_fails_when_its_module_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_witness.py").write_text(
        "from toolproof.reference.hooks import STEP_TABLE, Pipeline\n"
        "from toolproof.spec import Step\n\n\n"
        "class Broken(Pipeline):\n"
        "    steps = {s: f for s, f in STEP_TABLE.items() if s is not Step.EXCERPT}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"^the step table of Broken must map .* missing=\['excerpt'\], extra=\[\];"):
        __import__("broken_witness")


def test_the_hook_surface_is_an_explicit_all() -> None:
    import toolproof.reference.hooks as hooks

    assert sorted(hooks.__all__) == sorted(
        name for name in vars(hooks) if not name.startswith("_") and name not in {"annotations"}
    )
