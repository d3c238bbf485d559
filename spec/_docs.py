"""Member docstrings of spec's enums, read from the source: what reports and generated pages say a member means."""

from __future__ import annotations

import ast
import sys
from enum import Enum
from functools import cache
from pathlib import Path
from typing import TypeVar

E = TypeVar("E", bound=Enum)


def _definition(enum: type[Enum]) -> ast.ClassDef | None:
    # The enum's __module__ names its public package (publish_exports), whose __init__ only re-exports it:
    # look for the top-level definition in that package's folder (or the module itself).
    home = Path(getattr(sys.modules.get(enum.__module__), "__file__", None) or "")
    files = sorted(home.parent.glob("*.py")) if home.name == "__init__.py" else [home]
    for file in files:
        if not file.is_file():
            continue
        for node in ast.parse(file.read_text(encoding="utf-8"), filename=str(file)).body:
            if isinstance(node, ast.ClassDef) and node.name == enum.__name__:
                return node
    return None


@cache
def _documented(enum: type[Enum]) -> dict[str, str]:
    definition = _definition(enum)
    if definition is None:
        return {}  # No source to read (a frozen or stripped install): members read as undocumented.
    docs: dict[str, str] = {}
    for node, after in zip(definition.body, definition.body[1:], strict=False):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            docs[node.targets[0].id] = " ".join(after.value.value.split())
    return docs


def member_doc(member: Enum) -> str:
    """The docstring written under ``member`` in its enum, on one line; ``""`` when it has none."""
    return _documented(type(member)).get(member.name, "")
