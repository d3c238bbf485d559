"""``toolproof check-tool module:factory``: the behaviour, so the CLI only wires a command to it."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from toolproof.spec import ConfigurationError, Tool

from ._check import check_tool, one_line

EXIT_CONFORMS = 0
"""The tool conforms."""
EXIT_FINDINGS = 1
"""At least one rule is violated."""
EXIT_BAD_INPUT = 2
"""The reference does not load, or does not make a Tool."""


def load_factory(ref: str) -> Callable[[], Any]:
    """Resolve ``package.module:factory`` (the attribute may be dotted: ``module:Class.make``).

    The working directory is importable, as with ``python -m``. A Tool instance is accepted
    too, and wrapped as a factory that returns it.

    Raises:
        ConfigurationError: malformed reference, module not importable, attribute missing.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"tool reference {ref!r} is not module:factory (e.g. mypackage.tools:SendEmailTool)")
    # A console script does not put the working directory on sys.path; the author's module is usually there.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigurationError(
            f"tool reference {ref!r}: module {module_name!r} cannot be imported ({one_line(exc)})"
        ) from None
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ConfigurationError(f"tool reference {ref!r}: {module_name!r} has no attribute {attr!r}") from None
    if isinstance(found, Tool) and not isinstance(found, type):
        instance = found
        return lambda: instance
    return found  # type: ignore[no-any-return]


def run_check_tool(
    ref: str, *, as_json: bool, out: TextIO | None = None, err: TextIO | None = None, **options: Any
) -> int:
    """Check the tool ``ref`` names and print the verdict; return the exit status.

    Prints the report as readable text (one block per violated rule: rule ID, what was seen,
    how to fix it, the minimal arguments and their trace), or with ``as_json`` as stable JSON
    (sorted keys, no timestamps, no absolute paths). Bad input prints one line on ``err``.
    ``options`` are ``check_tool``'s keyword options (``key_in``, ``requests_act``, ``strict``,
    ``observation``).

    Returns:
        0 when the tool passes, 1 when a rule is violated (or, with ``strict``, a warning), 2 for bad input.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        report = check_tool(load_factory(ref), **options)
    except ConfigurationError as exc:
        err.write(f"toolproof check-tool: error: {exc}\n")
        return EXIT_BAD_INPUT
    if as_json:
        out.write(json.dumps(report.model_dump(mode="json"), sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(report.render() + "\n")
    return EXIT_CONFORMS if report.passed else EXIT_FINDINGS
