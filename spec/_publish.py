"""A package's public objects report the package as their module, not the private module that defines them.

``toolproof.spec.Budget`` is defined in ``toolproof.spec._types``; its ``__module__`` says
``toolproof.spec``, so reprs, documentation, error messages and pickles name the import a user
writes. Each public package calls ``publish_exports(globals())`` at the end of its ``__init__``.
"""

from __future__ import annotations

import inspect
from collections.abc import MutableMapping


def _public_prefix(module: str) -> str | None:
    """The public package above the first private part of ``module``; None when ``module`` is public."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:index])
    return None


def publish_exports(namespace: MutableMapping[str, object]) -> None:
    """Set ``__module__`` of each class and function in ``namespace['__all__']`` to the namespace's module.

    Only objects defined in a private module of the same package tree move (``toolproof.spec._types``
    for ``toolproof.spec``; ``toolproof.reference._state`` for ``toolproof.reference.hooks``), and only
    when exported under their own name, so ``module.name`` finds them again (pickle relies on that).
    An object another public module already published keeps that module. Constants, instances and
    type aliases carry no module of their own and are left alone.
    """
    package = str(namespace["__name__"])
    exported = namespace.get("__all__", ())
    if not isinstance(exported, list | tuple):
        raise TypeError(f"{package}.__all__ must be a list or tuple of names, not {type(exported).__name__}")
    for name in exported:
        found = namespace[name]
        if not (inspect.isclass(found) or inspect.isfunction(found)) or found.__name__ != name:
            continue
        home = _public_prefix(found.__module__)
        if home is not None and (package == home or package.startswith(home + ".")):
            found.__module__ = package
