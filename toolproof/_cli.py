"""The ``toolproof`` command (wiring only: every decision lives in spec, scenarios or reports).

Each group of commands lives in a module of its own (``_commands_*.py``); this one puts them together, in the
order ``toolproof --help`` lists them. A command imports what only it needs (pytest and the scenarios, the reports,
the driver, the fakes) when it runs, so ``--help`` and the light commands start without loading them.
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import __version__
from ._commands_bench import bench
from ._commands_catalog import impls, rules
from ._commands_check import CheckServerCommand, check_server_command, check_tool_command
from ._commands_protocol import protocol
from ._commands_results import diff, report
from ._commands_run import merge, run
from ._commands_serve import fake_mcp, serve_reference, supervise_command
from ._console import HELP_OPTIONS, GitStyleCommand, GitStyleGroup, out, sentences

app = typer.Typer(
    name="toolproof",
    cls=GitStyleGroup,
    help=sentences(
        """Conformance suite for ADR-0021's tool execution pipeline: run the scenarios against an implementation and
        get a verdict per rule (pass, fail, error, xfail, not-claimed, not-covered, review-only).

        \b
        toolproof run --impl reference --rules D1,D13
        toolproof run --impl mypackage.pipeline:make --out toolproof-report
        toolproof COMMAND -h

        Shell completion: toolproof --install-completion (bash, zsh, fish or PowerShell), or
        eval "$(_TOOLPROOF_COMPLETE=source_bash toolproof)" in a bash session; see docs/running.md."""
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_OPTIONS},
)


def _version(value: bool) -> None:
    if value:
        out.print(f"toolproof {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Conformance suite for ADR-0021's tool execution pipeline."""


# The commands, in the order --help lists them.
app.command(cls=GitStyleCommand)(rules)
app.command(cls=GitStyleCommand)(impls)
app.command(cls=GitStyleCommand)(run)
app.command(cls=GitStyleCommand)(merge)
app.command(cls=GitStyleCommand)(report)
app.command(cls=GitStyleCommand)(diff)
app.command("check-tool", cls=GitStyleCommand)(check_tool_command)
app.command(cls=GitStyleCommand)(bench)
app.command("fake-mcp", cls=GitStyleCommand)(fake_mcp)
# Options anywhere around a file or a URL; from a command's first word on, the words are the server's.
app.command("check-server", cls=CheckServerCommand)(check_server_command)
app.command("serve-reference", cls=GitStyleCommand)(serve_reference)
app.command(cls=GitStyleCommand)(protocol)
# The driver's own options pass through to its command line.
app.command("supervise", cls=GitStyleCommand, context_settings={"ignore_unknown_options": True})(supervise_command)
