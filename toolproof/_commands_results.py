"""``toolproof report`` and ``toolproof diff``: read the runs a results folder keeps."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from toolproof.spec import ConfigurationError

from ._console import die, out


def report(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A folder written by `toolproof run`.")],
    run_id: Annotated[
        str | None, typer.Option("--run-id", metavar="RUN_ID", help="Which run to render; default the latest.")
    ] = None,
) -> None:
    """Re-render summary.json, report.md, report.html and junit.xml from the folder's results.duckdb.

    \b
    Example:
      toolproof report toolproof-report --run-id 20261205T101500Z-1a2b3c
    """
    from toolproof.reports import rerender

    try:
        rerender(directory, run_id)
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    out.print(f"report: {directory / 'report.md'}", markup=False)


def _run_ref(argument: str) -> tuple[Path, str | None]:
    """``FOLDER`` or ``FOLDER@RUN_ID``; a folder whose own name holds an ``@`` is taken whole."""
    if "@" not in argument or Path(argument).is_dir():
        return Path(argument), None
    folder, run_id = argument.rsplit("@", 1)
    if not run_id:
        raise ConfigurationError(f"{argument!r} ends in '@': give FOLDER or FOLDER@RUN_ID")
    return Path(folder), run_id


def diff(
    before: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A", help="The earlier run: a folder written by --out (its latest run) or FOLDER@RUN_ID."
        ),
    ],
    after: Annotated[str, typer.Argument(metavar="RUN_B", help="The later run, as RUN_A.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the changes as JSON.")] = False,
) -> None:
    """List every (implementation, rule) whose verdict differs between two runs, and rules in one run only.

    Prints a table rule | implementation | before | after (— where a run does not hold the rule).
    Implementations are paired by name; two runs of one implementation each are paired whatever their names.

    \b
    Examples:
      toolproof diff before-report toolproof-report
      toolproof diff toolproof-report@20261205T101500Z-1a2b3c toolproof-report --json

    Exit status: 0 when nothing changed; 1 when something did; 2 for bad input (missing folder, unknown run id).
    """
    from toolproof.reports import diff_runs, load_run

    try:
        refs = [_run_ref(argument) for argument in (before, after)]
        loaded = [load_run(folder, run_id) for folder, run_id in refs]
        changes = diff_runs(loaded[0], loaded[1])
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    labels = (str(refs[0][0]), str(refs[1][0]))
    text = changes.as_json(*labels) if as_json else changes.as_table(*labels)
    sys.stdout.write(text)
    raise typer.Exit(1 if changes.changed else 0)
