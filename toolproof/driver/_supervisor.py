"""A driver that a crash plan may kill: run it as a child process and start it again after each SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from toolproof.spec import SUPERVISED_ENV, McpConfigError, McpServerFile, load_implementation, load_mcp_config

from ._admission import DriverOptions
from ._mutant import install_mutant_from_environment
from ._server import serve


def supervise(command: Sequence[str], on_restart: Callable[[int], None] | None = None) -> int:
    """Run ``command`` and start it again each time it is SIGKILLed (a crash plan's death); its exit code.

    SIGINT and SIGTERM are forwarded to the child; a child stopped by either exits 0. The child finds
    ``SUPERVISED_ENV`` set to ``1``: how a driver in any language learns that a SIGKILL plan is safe to accept.
    """
    restarts = 0
    environment = {**os.environ, SUPERVISED_ENV: "1"}
    while True:
        child = subprocess.Popen(list(command), env=environment)

        def forward(signum: int, _frame: object, child: subprocess.Popen[bytes] = child) -> None:
            child.send_signal(signum)

        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            code = child.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        if code != -signal.SIGKILL:
            return 0 if code in (-signal.SIGINT, -signal.SIGTERM) else code
        restarts += 1
        if on_restart is not None:
            on_restart(restarts)


MCP_CONFIG_ARGUMENT = "--mcp-config="
"""How ``child_command`` passes the operator's MCP server file, before the stdio commands."""


def child_command(
    ref: str,
    port: int,
    root: Path,
    stdio_commands: Sequence[str],
    *,
    supervised: bool = True,
    mcp_config: Path | None = None,
) -> list[str]:
    """The command line of one driver process serving the implementation ``ref`` (entry-point name or
    ``package.module:factory``); ``supervised``: a supervisor restarts it after a SIGKILL; ``mcp_config``:
    the operator's MCP server file (see ``load_mcp_servers``), whose servers join every instance."""
    command = [sys.executable, "-m", "toolproof.driver", ref, str(port), str(root)]
    command.append("supervised" if supervised else "alone")
    # The path, never the servers: an env value on a command line would be visible to every user.
    if mcp_config is not None:
        command.append(f"{MCP_CONFIG_ARGUMENT}{mcp_config.resolve()}")
    return [*command, *stdio_commands]


def serve_child(argv: Sequence[str]) -> None:
    """``python -m toolproof.driver REF PORT ROOT supervised|alone [--mcp-config=FILE] [STDIO_COMMAND...]``:
    what ``child_command`` runs."""
    ref, port, root, mode, *stdio = argv
    loaded = McpServerFile(servers=[])
    if stdio and stdio[0].startswith(MCP_CONFIG_ARGUMENT):
        # Read again here, though the CLI checked it first: only the path may go on the command line.
        try:
            loaded = load_mcp_config(stdio.pop(0).removeprefix(MCP_CONFIG_ARGUMENT))
        except McpConfigError as exc:  # Changed since the CLI read it: one line, as the CLI would say it.
            sys.stderr.write(f"toolproof: error: {exc}\n")
            raise SystemExit(2) from None
    options = DriverOptions(
        root=Path(root),
        stdio_commands=frozenset(stdio),
        supervised=mode == "supervised",
        mcp_servers=tuple(loaded.servers),
        egress_allowlist=tuple(loaded.egress_allowlist),
    )
    install_mutant_from_environment()  # The mutation gate's mutant, before the implementation is imported.
    serve(load_implementation(ref), int(port), options)
