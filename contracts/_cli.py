"""``toolproof check-tool module:factory``: the behaviour, so the CLI only wires a command to it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO, cast

from toolproof.spec import ConfigurationError, Tool, load_object

from ._check import check_tool

EXIT_CONFORMS = 0
"""The tool conforms."""
EXIT_FINDINGS = 1
"""At least one rule is violated."""
EXIT_BAD_INPUT = 2
"""The reference does not load, or does not make a Tool."""


def _tool_or_factory(found: object) -> bool:
    return isinstance(found, Tool) or callable(found)


def load_factory(ref: str) -> Callable[[], Any]:
    """Resolve ``package.module:factory`` with ``spec.load_object`` (the attribute may be dotted:
    ``module:Class.make``; the working directory is importable during the import).

    A Tool instance is accepted too, and wrapped as a factory that returns it; whether the
    factory makes a Tool is ``load_tool``'s to judge.

    Raises:
        ConfigurationError: malformed reference, module not importable, attribute missing, or
            neither a Tool nor callable (a ``LoadError``, its cause kept).
    """
    found = load_object(
        ref,
        expect=_tool_or_factory,
        expected="a Tool or a zero-argument callable that makes one",
        what="tool reference",
        form="module:factory (e.g. mypackage.tools:SendEmailTool)",
    )
    if isinstance(found, Tool) and not isinstance(found, type):
        instance = found
        return lambda: instance
    return cast(Callable[[], Any], found)


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
