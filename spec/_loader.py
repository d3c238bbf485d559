"""One loader for every object a user names: ``package.module:attribute`` or an entry-point name.

``--impl``, ``check-tool``, the bridge's scripts, the driver's child process and the crash
workers all resolve references here, so they agree on the syntax, on what is importable, and
on how a failure reads. Builtins (the reference) and plugins resolve alike, through their
entry point.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from types import ModuleType
from typing import TypeVar, overload

from ._errors import ConfigurationError

T = TypeVar("T")

Predicate = Callable[[object], bool]
"""A check on a loaded object: true when it is what the caller expects."""


class LoadProblem(StrEnum):
    """Why a reference did not load."""

    MALFORMED = "malformed"
    """Neither ``package.module:attribute`` nor (where a group is given) a bare name."""
    UNKNOWN_NAME = "unknown-name"
    """No entry point of the group has that name."""
    IMPORT_FAILED = "import-failed"
    """The module is missing or raised while it was imported."""
    NO_ATTRIBUTE = "no-attribute"
    """The module, or an attribute on the dotted path, lacks the next attribute."""
    WRONG_TYPE = "wrong-type"
    """The object was found but is not what the caller expects."""


class LoadError(ConfigurationError):
    """A reference did not load; the message is one line, the cause is kept as ``__cause__``."""

    def __init__(self, message: str, *, ref: str, problem: LoadProblem) -> None:
        super().__init__(message)
        self.ref = ref
        """The reference as the user gave it."""
        self.problem = problem
        """Why it did not load."""


@contextmanager
def _working_directory_importable() -> Iterator[str | None]:
    # A console script (unlike ``python -m``) does not put the working directory on sys.path, yet a
    # user running `toolproof check-tool mymod:make` beside mymod.py expects it to import. Front of
    # the path, for this import only: the user's module wins over an installed namesake, and
    # nothing later imports from the working directory by accident.
    try:
        entry = os.getcwd()
    except OSError:  # The working directory was removed: there is nothing beside the user to import.
        yield None
        return
    sys.path.insert(0, entry)
    try:
        yield entry
    finally:
        # Invariant: the entry inserted above is removed, whatever the import did to sys.path.
        if entry in sys.path:
            sys.path.remove(entry)


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def _describe(found: object) -> str:
    if isinstance(found, ModuleType):
        return f"module {found.__name__!r}"
    if isinstance(found, type):
        return f"class {found.__qualname__!r}"
    name = getattr(found, "__qualname__", None)
    if callable(found) and isinstance(name, str):
        return f"{type(found).__name__} {name!r}"
    shown = repr(found)
    return f"{type(found).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _import(ref: str, shown: str, module_name: str) -> ModuleType:
    with _working_directory_importable() as entry:
        try:
            return importlib.import_module(module_name)
        except Exception as exc:  # Whatever the import raised is the user's to see, with its cause kept.
            error = LoadError(
                f"{shown}: module {module_name!r} cannot be imported ({_one_line(exc)})",
                ref=ref,
                problem=LoadProblem.IMPORT_FAILED,
            )
            if entry is not None:
                error.add_note(f"the working directory {entry!r} was first on sys.path during the import")
            raise error from exc


def _walk(ref: str, shown: str, module: ModuleType, attr: str) -> object:
    found: object = module
    walked = module.__name__
    for index, part in enumerate(attr.split(".")):
        try:
            found = getattr(found, part)
        except AttributeError as exc:
            owner = f"module {walked!r}" if index == 0 else repr(walked)
            error = LoadError(f"{shown}: {owner} has no attribute {part!r}", ref=ref, problem=LoadProblem.NO_ATTRIBUTE)
            error.add_note(f"module {module.__name__!r} was imported from {getattr(module, '__file__', None)!r}")
            raise error from exc
        walked += f"{':' if index == 0 else '.'}{part}"
    return found


def _entry_point(ref: str, what: str, form: str, group: str) -> importlib.metadata.EntryPoint:
    named = [ep for ep in importlib.metadata.entry_points(group=group) if ep.name == ref]
    if not named:
        known = ", ".join(sorted({ep.name for ep in importlib.metadata.entry_points(group=group)})) or "none"
        raise LoadError(
            f"unknown {what} {ref!r}: registered names are {known}; or give {form}",
            ref=ref,
            problem=LoadProblem.UNKNOWN_NAME,
        )
    return named[0]


@overload
def load_object(
    ref: str,
    *,
    expect: type[T],
    expected: str | None = None,
    group: str | None = None,
    what: str = ...,
    form: str = ...,
) -> T: ...


@overload
def load_object(
    ref: str,
    *,
    expect: Predicate | None = None,
    expected: str | None = None,
    group: str | None = None,
    what: str = ...,
    form: str = ...,
) -> object: ...


def load_object(
    ref: str,
    *,
    expect: type[T] | Predicate | None = None,
    expected: str | None = None,
    group: str | None = None,
    what: str = "object",
    form: str = "package.module:attribute",
) -> T | object:
    """Resolve ``ref`` to the object it names, and check that it is what the caller expects.

    ``ref`` is ``package.module:attribute`` (the attribute may be dotted:
    ``package.module:Class.make``) or, when ``group`` is given, the name of an entry point of
    that group, which resolves through its own ``module:attribute`` in the same way. The
    working directory is first on ``sys.path`` while the module is imported, and only then,
    so a module beside the user resolves as with ``python -m``.

    Args:
        ref: The reference, as the user gave it.
        expect: A class (``isinstance``; a runtime-checkable protocol too, which a class
            satisfying it structurally also passes) or a predicate the object must satisfy.
        expected: How an error names what was expected (default: from ``expect``).
        group: The entry-point group a bare name is looked up in; without it a bare name is malformed.
        what: What the reference names, for messages ("implementation", "script").
        form: How a reference is written, for messages (``package.module:factory``).

    Returns:
        The object, unchanged (a factory is not called).

    Raises:
        LoadError: a ``ConfigurationError`` with a one-line message and ``problem`` saying why;
            an import error or a missing attribute is kept as ``__cause__``, with a note.
    """
    shown = f"{what} {ref!r}"
    registered = ""
    module_name, colon, attr = ref.partition(":")
    if not colon and group is not None and ref:
        entry = _entry_point(ref, what, form, group)
        shown = f"{what} {ref!r} (entry point {entry.value!r})"
        dist = entry.dist.name if entry.dist is not None else "an unknown distribution"
        registered = f"entry point {ref!r} of group {group!r} is registered by {dist}"
        module_name, attr = entry.module, entry.attr or ""
    elif not (colon and module_name and attr):
        raise LoadError(f"{shown} is not {form}", ref=ref, problem=LoadProblem.MALFORMED)
    try:
        module = _import(ref, shown, module_name)
        found = _walk(ref, shown, module, attr) if attr else module
    except LoadError as error:
        if registered:
            error.add_note(registered)
        raise
    if expect is None:
        return found
    if isinstance(expect, type):
        accepted = isinstance(found, expect)
        name = expected or f"an instance of {expect.__qualname__}"
    else:
        accepted = expect(found)
        name = expected or str(getattr(expect, "__name__", expect))
    if not accepted:
        raise LoadError(f"{shown}: expected {name}, found {_describe(found)}", ref=ref, problem=LoadProblem.WRONG_TYPE)
    return found
