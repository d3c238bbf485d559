"""A mutant in place of one module: the hook the mutation gate's processes honour (``mutation/``).

The mutation gate runs the scenarios against a reference whose one module is replaced by a mutated copy of its
source. Its runner imports the copy in-process; the processes the scenarios start (the worker zygote of the
SIGKILL cells, a driver served by ``python -m toolproof.driver``) must import the same copy, so they call
``install_mutant_from_environment`` before they import the implementation. ``TOOLPROOF_MUTANT`` unset or empty
changes nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Mapping, Sequence
from pathlib import Path

MUTANT_VARIABLE = "TOOLPROOF_MUTANT"
"""``TOOLPROOF_MUTANT=package.module=/path/to/mutated_source.py``: serve that source for that module."""


class _MutantLoader(importlib.abc.Loader):
    def __init__(self, source: str, origin: str) -> None:
        self._source = source
        self._origin = origin

    def exec_module(self, module: types.ModuleType) -> None:
        # Compiled here and never cached: the real module's bytecode cache is left alone.
        code = compile(self._source, self._origin, "exec", dont_inherit=True)
        exec(code, module.__dict__)


class MutantFinder(importlib.abc.MetaPathFinder):
    """Serves ``source`` for the module ``name``, with the real module's file as its origin."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        """The dotted name of the module replaced."""
        self.source = source
        """The source served in its place."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or real.origin is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, real.origin, loader=_MutantLoader(self.source, real.origin)
        )


def install_mutant(name: str, source_path: Path) -> MutantFinder:
    """Serve the source in ``source_path`` whenever ``name`` is imported from now on.

    The module must not be imported yet (a copy already in ``sys.modules`` would be used instead).

    Raises:
        RuntimeError: ``name`` is already imported.
        OSError: the source cannot be read.
    """
    if name in sys.modules:
        raise RuntimeError(f"{MUTANT_VARIABLE}: {name} is already imported; the mutant cannot replace it")
    finder = MutantFinder(name, source_path.read_text(encoding="utf-8"))
    sys.meta_path.insert(0, finder)
    return finder


def install_mutant_from_environment(environ: Mapping[str, str] | None = None) -> MutantFinder | None:
    """Honour ``TOOLPROOF_MUTANT`` (see ``MUTANT_VARIABLE``); None when it is unset or empty.

    Raises:
        ValueError: the variable is not ``module=path``.
        RuntimeError, OSError: as ``install_mutant``.
    """
    value = (os.environ if environ is None else environ).get(MUTANT_VARIABLE, "").strip()
    if not value:
        return None
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"{MUTANT_VARIABLE}={value!r}: expected package.module=/path/to/source.py")
    return install_mutant(name, Path(path))
