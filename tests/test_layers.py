"""The import arrows of style.md, enforced: who may import whom."""

from __future__ import annotations

import ast
import re
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {
    "spec": "spec",
    "reference": "reference",
    "fakes": "fakes",
    "contracts": "contracts",
    "scenarios": "scenarios",
    "reports": "reports",
    "driver": "toolproof/driver",
    "expectations": "toolproof/expectations",
    "bench": "toolproof/bench",
    "toolproof": "toolproof",
}
"""Each layer (its name under ``toolproof.``; ``toolproof`` is the CLI) and the source folder it is installed from.

A layer's folder holds its modules minus the folders of layers nested in it (the CLI's holds driver,
expectations and bench)."""
PACKAGES = tuple(FOLDERS)
SCRIPTS = {"benchmarks": "benchmarks", "mutation": "mutation"}
"""Folders of scripts run from the checkout, never installed, with a layer rule of their own."""

# Which toolproof packages each folder may import, and which third-party roots. A name missing from
# ALLOWED_EXTERNAL may import any third-party package. Every layer also obeys the private rule below:
# another package's private module is out of bounds, whatever the layer allows.
ALLOWED_INTERNAL = {
    "spec": set(),
    "reference": {"spec"},
    "fakes": {"spec"},
    "contracts": {"spec", "fakes"},
    "scenarios": {"spec", "fakes", "driver"},
    "reports": {"spec"},
    "driver": {"spec"},
    "expectations": {"spec", "scenarios"},
    # toolproof: the distribution root, for __version__; the reference through toolproof.reference and
    # toolproof.reference.hooks; the fakes for the tools it registers.
    "bench": {"toolproof", "spec", "reference", "fakes"},
    "toolproof": set(PACKAGES),  # The CLI wires everything: anything public.
    # driver: the MCP open-time benchmark serves the reference and opens instances through the driver's client.
    "benchmarks": {"spec", "reference", "fakes", "bench", "driver"},
    # The mutation gate never imports the reference: its children import the mutant in its place.
    "mutation": {"spec", "driver"},
}
ALLOWED_EXTERNAL = {
    # rfc8785: the canonical JSON every interop hash is defined on, one pure-Python module.
    # idna: the IDNA 2008 form in which D7.2 compares hosts, the form the SDK's HTTP client resolves.
    "spec": {"pydantic", "rfc8785", "idna"},
    "reports": {"pydantic", "duckdb"},
    # pydantic_core is pydantic's own engine (to_jsonable_python for a tool's result).
    "driver": {"pydantic", "pydantic_core", "anyio", "httpx2", "starlette", "uvicorn"},
    "expectations": {"pydantic", "pytest"},
    # dbos is imported by name at run time, when installed (the bench extra).
    # jsonschema: the floor checks arguments against the input schema as the reference does.
    "bench": {"anyio", "dbos", "jsonschema", "mcp", "mcp_types", "rich", "sqlalchemy", "sqlmodel"},
    "benchmarks": {"anyio", "httpx2"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def _sources(package: str, folder: Path) -> list[Path]:
    """The modules of layer ``package`` in ``folder`` (its source, or a copy): nested layers' folders left out."""
    own = Path({**FOLDERS, **SCRIPTS}[package])
    nested = [
        Path(f).relative_to(own) for name, f in FOLDERS.items() if name != package and Path(f).is_relative_to(own)
    ]
    return sorted(
        path for path in folder.rglob("*.py") if not any(path.relative_to(folder).is_relative_to(n) for n in nested)
    )


def _target(parts: list[str]) -> str:
    # toolproof.<layer>...; anything else under toolproof (the root, the CLI's own modules) is the root.
    return parts[1] if len(parts) > 1 and parts[1] in FOLDERS else "toolproof"


def layer_violations(package: str, folder: Path) -> list[str]:
    """Every import in ``folder`` (the source of layer ``package``) its layer rule does not allow."""
    violations = []
    for path in _sources(package, folder):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "toolproof":
                target = _target(parts)
                if target != package and target not in ALLOWED_INTERNAL[package]:
                    violations.append(f"{path.relative_to(folder)} imports {name}")
            elif package in ALLOWED_EXTERNAL:
                root = parts[0]
                if root not in sys.stdlib_module_names and root not in ALLOWED_EXTERNAL[package]:
                    violations.append(f"{path.relative_to(folder)} imports third-party {name}")
    return violations


def _absolute_imports(path: Path, package: str) -> set[str]:
    """Every module (or name) ``path``, a module of ``package``, imports, relative imports made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _private_owner(name: str) -> str | None:
    """The package whose private module (or name) ``name`` reaches, or None when it is public."""
    parts = name.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:index])
    return None


def private_imports(folder: Path, package: str) -> list[str]:
    """Every import, in the modules under ``folder`` (installed as ``package``), of a private module of
    another toolproof package: ``toolproof.x._y`` belongs to ``toolproof.x`` alone, not to its subpackages."""
    violations = []
    for path in sorted(folder.rglob("*.py")):
        inside = ".".join([package, *path.relative_to(folder).parent.parts])
        for name in sorted(_absolute_imports(path, inside)):
            owner = _private_owner(name)
            if name.split(".")[0] == "toolproof" and owner is not None and owner != inside:
                violations.append(f"{path.relative_to(folder)} imports {name}")
    return violations


def example_violations(folder: Path) -> list[str]:
    """Every import in the example project ``folder`` beyond ``toolproof.spec``, the stdlib, its own
    packages and the dependencies its ``pyproject.toml`` declares."""
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {
        re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("-", "_")
        for requirement in project["project"]["dependencies"]
    }
    own = {name.split(".")[0] for name in project["tool"]["setuptools"]["packages"]}
    violations = []
    for path in sorted(folder.rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "toolproof":
                if parts[:2] != ["toolproof", "spec"]:
                    violations.append(f"{path.relative_to(folder)} imports {name}")
            elif parts[0] not in own | (declared - {"toolproof"}) and parts[0] not in sys.stdlib_module_names:
                violations.append(f"{path.relative_to(folder)} imports undeclared {name}")
    return violations


@pytest.mark.parametrize("package", [*PACKAGES, *SCRIPTS])
def test_package_imports_follow_the_layers(package: str) -> None:
    assert layer_violations(package, ROOT / {**FOLDERS, **SCRIPTS}[package]) == []


def model_violations(folder: Path) -> list[str]:
    """Every import in the model (``spec/model``) beyond the standard library, ``toolproof.spec`` and its own
    modules: the model is a second statement of the ADR, so it reads the spec and nothing that implements it."""
    violations = []
    for path in sorted(folder.rglob("*.py")):
        for name in _absolute_imports(path, "toolproof.spec.model"):
            parts = name.split(".")
            if parts[0] == "toolproof":
                if parts[:3] != ["toolproof", "spec", "model"] and (
                    parts[:2] != ["toolproof", "spec"] or len(parts) != 3
                ):
                    violations.append(f"{path.relative_to(folder)} imports {name}")
            elif parts[0] not in sys.stdlib_module_names and parts[0] != "__future__":
                violations.append(f"{path.relative_to(folder)} imports third-party {name}")
    return violations


def test_the_model_imports_only_the_spec_and_the_standard_library() -> None:
    assert model_violations(ROOT / "spec" / "model") == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_packages_private_module(package: str) -> None:
    installed = "toolproof" if package == "toolproof" else f"toolproof.{package}"
    assert private_imports(ROOT / FOLDERS[package], installed) == []


def test_examples_and_benchmarks_import_no_private_module() -> None:
    examples = [(path.parent, path.parent.name) for path in sorted((ROOT / "examples").glob("*/*/__init__.py"))]
    assert examples, "no example package found"
    for folder, package in [*examples, (ROOT / "benchmarks", "benchmarks"), (ROOT / "mutation", "mutation")]:
        assert private_imports(folder, package) == [], folder


@pytest.mark.parametrize("project", sorted(p.parent.name for p in (ROOT / "examples").glob("*/pyproject.toml")))
def test_an_example_imports_the_spec_and_what_it_declares(project: str) -> None:
    assert example_violations(ROOT / "examples" / project) == []


def _plant(tmp_path: Path, source: str, module: str, planted: str) -> Path:
    """A copy of the folder ``source`` with ``planted`` appended to its ``module``; the copy's path."""
    copy = tmp_path / Path(source).name
    shutil.copytree(ROOT / source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
    return copy


@pytest.mark.parametrize(
    ("package", "module", "planted"),
    [
        ("driver", "_client.py", "from toolproof.reference import ReferenceImplementation"),
        ("driver", "_client.py", "from toolproof.scenarios._plugin import ResultCollector"),
        ("driver", "_client.py", "import toolproof.fakes"),
        ("driver", "_client.py", "from fastapi import FastAPI"),
        ("bench", "_run.py", "from toolproof.contracts import check_tool"),
        ("bench", "_run.py", "from toolproof.scenarios import Harness"),
        ("bench", "_run.py", "import typer"),
        ("expectations", "_file.py", "from toolproof.reference import Pipeline"),
        ("expectations", "_file.py", "from toolproof.driver import load"),
        ("expectations", "_file.py", "import duckdb"),
        ("benchmarks", "profile_pipeline.py", "from toolproof.reports import load_run"),
        ("benchmarks", "profile_pipeline.py", "import duckdb"),
    ],
)
def test_a_planted_import_breaks_its_layer(package: str, module: str, planted: str, tmp_path: Path) -> None:
    source = {**FOLDERS, **SCRIPTS}[package]
    assert layer_violations(package, ROOT / source) == []
    copy = _plant(tmp_path, source, module, planted)
    violations = layer_violations(package, copy)
    assert len(violations) == 1
    assert violations[0].startswith(f"{module} imports ")
    assert violations[0].endswith(planted.split()[1])


def test_the_clis_rule_leaves_out_the_layers_nested_in_its_folder(tmp_path: Path) -> None:
    # The CLI may import any layer; the bench, in its folder, may not: each file is judged by its own layer.
    copy = _plant(tmp_path, "toolproof", "bench/_run.py", "from toolproof.contracts import check_tool")
    assert layer_violations("toolproof", copy) == []
    assert layer_violations("bench", copy / "bench") == ["_run.py imports toolproof.contracts"]


@pytest.mark.parametrize(
    ("source", "package", "module", "planted", "reached"),
    [
        ("toolproof", "toolproof", "_run.py", "from toolproof.scenarios._plugin import ResultCollector", None),
        ("toolproof", "toolproof", "_cli.py", "import toolproof.reference._store", None),
        ("toolproof/bench", "toolproof.bench", "_catalog.py", "from toolproof.reference._mcp import McpAdapter", None),
        ("toolproof/bench", "toolproof.bench", "_run.py", "from toolproof import _cli", "toolproof._cli"),
        ("toolproof/bench", "toolproof.bench", "_run.py", "from .._run import run_suite", "toolproof._run.run_suite"),
        (
            "reference/witnesses",
            "toolproof.reference.witnesses",
            "__init__.py",
            "from .._pipeline import Pipeline",
            "toolproof.reference._pipeline.Pipeline",
        ),
        (
            "benchmarks",
            "benchmarks",
            "excerpt_memory.py",
            "from toolproof.reference._excerpt import excerpt_parts",
            None,
        ),
        ("examples/minimal", "examples", "toolproof_minimal/_store.py", "from toolproof.spec._port import Tool", None),
    ],
)
def test_a_planted_private_import_breaks_the_private_rule(
    source: str, package: str, module: str, planted: str, reached: str | None, tmp_path: Path
) -> None:
    assert private_imports(ROOT / source, package) == []
    copy = _plant(tmp_path, source, module, planted)
    violations = private_imports(copy, package)
    assert len(violations) == 1
    name = reached or planted.split()[1]
    assert violations[0].startswith(f"{module} imports {name}")


@pytest.mark.parametrize(
    ("planted", "found"),
    [
        ("from toolproof.reference import ReferenceImplementation", "imports toolproof.reference"),
        ("from toolproof.driver import serve", "imports toolproof.driver"),
        ("import httpx2", "imports undeclared httpx2"),
    ],
)
def test_a_planted_import_breaks_the_examples_rule(planted: str, found: str, tmp_path: Path) -> None:
    copy = _plant(tmp_path, "examples/minimal", "toolproof_minimal/_store.py", planted)
    assert example_violations(copy) == [f"toolproof_minimal/_store.py {found}"]


def test_only_the_driver_imports_its_private_modules() -> None:
    # Scenarios, the CLI, tests, examples and benchmarks use the package's public surface.
    driver = ROOT / FOLDERS["driver"]
    folders = [*(ROOT / folder for folder in FOLDERS.values()), ROOT / "toolproof", ROOT / "tests"]
    folders += [ROOT / "examples", ROOT / "benchmarks"]
    offenders = set()
    for folder in folders:
        for path in folder.rglob("*.py"):
            if path.is_relative_to(driver) or ".venv" in path.parts:
                continue
            for name in _imports(path):
                if name.startswith("toolproof.driver._"):
                    offenders.add(f"{path.relative_to(ROOT)} imports {name}")
    assert sorted(offenders) == []


def test_scenarios_never_import_the_reference() -> None:
    for path in (ROOT / "scenarios").rglob("*.py"):
        assert not any(name.split(".")[:2] == ["toolproof", "reference"] for name in _imports(path)), path


@pytest.mark.parametrize("package", PACKAGES)
def test_public_surface_is_an_explicit_all(package: str) -> None:
    init = ROOT / FOLDERS[package] / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    assigned = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    ]
    reexported = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    if reexported:
        assert assigned, f"{init} re-exports without __all__"
