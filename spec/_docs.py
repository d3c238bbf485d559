"""Member docstrings of spec's enums, read from the source: what reports and generated pages say a member means."""

from __future__ import annotations

import ast
import inspect
import textwrap
from enum import Enum
from functools import cache
from typing import TypeVar

E = TypeVar("E", bound=Enum)


@cache
def _documented(enum: type[Enum]) -> dict[str, str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(enum)))
    (definition,) = tree.body
    assert isinstance(definition, ast.ClassDef)  # Invariant: getsource of a class gives one class definition.
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
