"""The import arrows of style.md, enforced: who may import whom."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("spec", "reference", "fakes", "contracts", "scenarios", "reports")

# Which toolproof packages each folder may import, and which third-party roots.
ALLOWED_INTERNAL = {
    "spec": set(),
    "reference": {"spec"},
    "fakes": {"spec"},
    "contracts": {"spec", "fakes"},
    "scenarios": {"spec", "fakes"},
    "reports": {"spec"},
}
ALLOWED_EXTERNAL = {
    "spec": {"pydantic"},
    "reports": {"pydantic", "duckdb"},
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


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_follow_the_layers(package: str) -> None:
    violations = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "toolproof":
                target = parts[1] if len(parts) > 1 else "toolproof"
                if target != package and target not in ALLOWED_INTERNAL[package]:
                    violations.append(f"{path.relative_to(ROOT)} imports {name}")
            elif package in ALLOWED_EXTERNAL:
                root = parts[0]
                if root not in sys.stdlib_module_names and root not in ALLOWED_EXTERNAL[package]:
                    violations.append(f"{path.relative_to(ROOT)} imports third-party {name}")
    assert violations == []


def test_scenarios_never_import_the_reference() -> None:
    for path in (ROOT / "scenarios").rglob("*.py"):
        assert not any(name.split(".")[:2] == ["toolproof", "reference"] for name in _imports(path)), path


@pytest.mark.parametrize("package", PACKAGES)
def test_public_surface_is_an_explicit_all(package: str) -> None:
    init = ROOT / package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    assigned = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    ]
    reexported = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    if reexported:
        assert assigned, f"{init} re-exports without __all__"
