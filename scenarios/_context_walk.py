"""D2.2's walk: everything a tool can reach from its ToolExecutionContext, callables included, searched for a way
back into the pipeline. Used by test_d02_context.py and the model judge (every execution of a scripted tool)."""

from __future__ import annotations

import collections
import functools
import types
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toolproof.spec import ToolExecutionContext

# Attribute names that would hand a tool the pipeline, its store or its registry.
_FORBIDDEN_NAMES = frozenset(
    {
        "commit",
        "rollback",
        "begin",
        "session",
        "engine",
        "connection",
        "cursor",
        "store",
        "repository",
        "registry",
        "tools",
        "policy",
        "pipeline",
        "submit",
        "run_call",
        "register",
        "invoke",
        "call_tool",
    }
)
_FORBIDDEN_MODULES = ("sqlalchemy", "sqlmodel", "sqlite3", "psycopg", "duckdb")


def public(obj: object) -> list[str]:
    if isinstance(obj, BaseModel):
        return list(type(obj).model_fields)
    return [name for name in dir(obj) if not name.startswith("_")]


_LEAVES = (str, bytes, int, float, bool, complex, Path, type(None), type, types.ModuleType)


def _members(obj: object, callables: bool = True) -> list[tuple[str, Any]]:
    """What a tool can reach from ``obj`` in one hop: its public attributes, every entry of its ``__dict__``
    and ``__slots__`` (a leading underscore hides nothing), and the items of a container."""
    if isinstance(obj, dict):
        return [(f"[{key!r}]", value) for key, value in obj.items()] + [(f"<key {key!r}>", key) for key in obj]
    if isinstance(obj, list | tuple | set | frozenset):
        return [(f"[{i}]", value) for i, value in enumerate(obj)]
    if callable(obj) and not isinstance(obj, type):
        return _held_by_callable(obj) if callables else []
    found: dict[str, Any] = {}
    names = set(public(obj))
    names.update(getattr(obj, "__dict__", {}) if isinstance(getattr(obj, "__dict__", None), dict) else {})
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.update([slots] if isinstance(slots, str) else slots)
    for name in sorted(names):
        try:
            found[name] = getattr(obj, name)
        except Exception:
            continue
    return [(f".{name}", value) for name, value in found.items()]


def _held_by_callable(obj: Any) -> list[tuple[str, Any]]:
    """What a callable holds that a tool can reach through it: a bound method's object, a closure's cells, a partial's
    function and arguments, a wrapper's wrapped function, and the state of a callable object."""
    held: list[tuple[str, Any]] = []
    bound = getattr(obj, "__self__", None)
    if bound is not None:
        held.append((".__self__", bound))
    for name in ("__func__", "__wrapped__"):
        if hasattr(obj, name):
            held.append((f".{name}", getattr(obj, name)))
    for i, cell in enumerate(getattr(obj, "__closure__", None) or ()):
        try:
            held.append((f".__closure__[{i}]", cell.cell_contents))
        except ValueError:
            continue  # An empty cell holds nothing yet.
    if isinstance(obj, functools.partial):
        held += [(".func", obj.func), (".args", obj.args), (".keywords", obj.keywords)]
    if not isinstance(obj, types.FunctionType | types.MethodType | types.BuiltinFunctionType | functools.partial):
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict):
            held += [(f".{name}", value) for name, value in state.items()]
    return held


# How far the in-process walk goes. A context whose graph is larger than this is not vouched for: the walk stops and
# says so, and the verdict is a fail (D2.2's interpretation). The reference's context reaches a few hundred objects.
_WALK_OBJECTS = 100_000
# A context with this many hazards has shown its way back; the walk stops collecting evidence there.
_WALK_HAZARDS = 8


def reachable_hazards(context: ToolExecutionContext, instance: object, callables: bool = True) -> list[str]:
    """Paths from the context, through the whole object graph it reaches (each object visited once, however
    deep, callables included: what a bound method, a closure or a partial holds), to anything that reaches the
    pipeline: a forbidden attribute name, the instance under test, or a database object.

    Breadth first, so each hazard is named by a shortest path; a path is kept as a link to its parent, not as a
    string, so memory grows with the objects reached, not with their depth. A hazard is not walked beyond (what it
    leads to is the pipeline already). Every object visited is held until the walk ends, so no id is reused by an
    object a property made on the fly."""
    hazards: list[str] = []
    visited: dict[int, object] = {id(context): context}
    links: list[tuple[int, str]] = [(-1, "context")]
    frontier: collections.deque[tuple[int, Any]] = collections.deque([(0, context)])

    def path(link: int, step: str) -> str:
        steps = [step]
        while link >= 0:
            link, name = links[link]
            steps.append(name)
        return "".join(reversed(steps))

    while frontier and len(hazards) < _WALK_HAZARDS:
        if len(visited) > _WALK_OBJECTS:
            hazards.append(
                f"the context reaches more than {_WALK_OBJECTS:,} objects; the walk stopped there, so nothing "
                "vouches that the rest leads nowhere"
            )
            break
        link, obj = frontier.popleft()
        for step, value in _members(obj, callables):
            name = step.lstrip(".")
            if step.startswith(".") and name.lstrip("_") in _FORBIDDEN_NAMES:
                hazards.append(f"{path(link, step)} (name)")
                continue
            if value is instance:
                hazards.append(f"{path(link, step)} is the instance under test")
                continue
            if type(value).__module__.split(".")[0] in _FORBIDDEN_MODULES:
                hazards.append(f"{path(link, step)} is a {type(value).__module__}.{type(value).__name__}")
                continue
            if isinstance(value, _LEAVES) or id(value) in visited:
                continue
            visited[id(value)] = value
            links.append((link, step))
            frontier.append((len(links) - 1, value))
    return hazards
