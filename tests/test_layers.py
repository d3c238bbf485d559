"""The import arrows of style.md, enforced: who may import whom."""

from __future__ import annotations

import ast
import shutil
import sys
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
}
"""Each layer (its name under ``toolproof.``) and the source folder it is installed from."""
PACKAGES = tuple(FOLDERS)

# Which toolproof packages each folder may import, and which third-party roots.
ALLOWED_INTERNAL = {
    "spec": set(),
    "reference": {"spec"},
    "fakes": {"spec"},
    "contracts": {"spec", "fakes"},
    "scenarios": {"spec", "fakes", "driver"},
    "reports": {"spec"},
    "driver": {"spec"},
}
ALLOWED_EXTERNAL = {
    "spec": {"pydantic"},
    "reports": {"pydantic", "duckdb"},
    # pydantic_core is pydantic's own engine (to_jsonable_python for a tool's result).
    "driver": {"pydantic", "pydantic_core", "anyio", "httpx2", "starlette", "uvicorn"},
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


def layer_violations(package: str, folder: Path) -> list[str]:
    """Every import in ``folder`` (the source of layer ``package``) its layer rule does not allow."""
    violations = []
    for path in sorted(folder.rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "toolproof":
                target = parts[1] if len(parts) > 1 else "toolproof"
                if target != package and target not in ALLOWED_INTERNAL[package]:
                    violations.append(f"{path.relative_to(folder)} imports {name}")
            elif package in ALLOWED_EXTERNAL:
                root = parts[0]
                if root not in sys.stdlib_module_names and root not in ALLOWED_EXTERNAL[package]:
                    violations.append(f"{path.relative_to(folder)} imports third-party {name}")
    return violations


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_follow_the_layers(package: str) -> None:
    assert layer_violations(package, ROOT / FOLDERS[package]) == []


@pytest.mark.parametrize(
    "planted",
    [
        "from toolproof.reference import ReferenceImplementation",
        "from toolproof.scenarios._plugin import ResultCollector",
        "import toolproof.fakes",
        "from fastapi import FastAPI",
    ],
)
def test_a_planted_import_in_the_driver_breaks_its_layer(planted: str, tmp_path: Path) -> None:
    copy = tmp_path / "driver"
    shutil.copytree(ROOT / FOLDERS["driver"], copy)
    assert layer_violations("driver", copy) == []
    client = copy / "_client.py"
    client.write_text(client.read_text(encoding="utf-8") + f"\n{planted}\n", encoding="utf-8")
    violations = layer_violations("driver", copy)
    assert len(violations) == 1
    assert violations[0].startswith("_client.py imports ")
    assert violations[0].endswith(planted.split()[1])


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
