"""``toolproof fake-mcp``, ``serve-reference`` and ``supervise``: serve something for another program to test, until
stopped."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from toolproof.spec import DRIVER_PROTOCOL, ConfigurationError, McpServerFile, load_implementation, load_mcp_config

from ._console import die, err
from ._server_file import command_problem, not_admitted


def port_in_use(port: int) -> str | None:
    """Why nothing can listen on 127.0.0.1:``port`` (the system's words), or None when something can."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As uvicorn binds: SO_REUSEADDR, so a port left in TIME_WAIT is free, and one listened on is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _list_fake_servers(value: bool) -> None:
    if not value:
        return
    from toolproof.fakes import mcp as fake_servers

    for server_name, behaviour in fake_servers.catalog():
        typer.echo(f"{server_name}\t{behaviour}")  # Plain: tab-separated, one line each, for scripts.
    raise typer.Exit()


def fake_mcp(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The fake MCP server to serve: a name `--list` prints.")],
    transport: Annotated[
        Literal["stdio", "http"],
        typer.Option("--transport", help="stdio, or http (streamable HTTP on 127.0.0.1, path /mcp)."),
    ] = "stdio",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="HTTP port on 127.0.0.1.")] = 8765,
    list_: Annotated[
        bool,
        typer.Option(
            "--list", callback=_list_fake_servers, is_eager=True, help="List the fake MCP servers (NAME, behaviour)."
        ),
    ] = False,
) -> None:
    """Serve one hostile fake MCP server (a real MCP server with one hostile behaviour) to test an MCP adapter.

    \b
    Examples:
      toolproof fake-mcp --list
      toolproof fake-mcp RugPullServer --transport http --port 8765
    """
    from toolproof.fakes import mcp as fake_servers

    if name not in fake_servers.SERVERS:
        raise die(f"unknown fake MCP server {name!r}; the names are: {', '.join(fake_servers.SERVERS)}")
    if transport not in fake_servers.SERVERS[name].transports:
        raise die(f"fake MCP server {name!r} is served over {', '.join(fake_servers.SERVERS[name].transports)} only")
    fake_servers.serve(name, transport, port)


def serve_reference(
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="Port on 127.0.0.1.")] = 8787,
    impl: Annotated[
        str,
        typer.Option(
            "--impl",
            metavar="IMPL",
            help="A Python implementation to serve instead (entry-point name or module:factory, the working "
            "directory importable while the module is imported).",
        ),
    ] = "reference",
    root: Annotated[
        Path | None,
        typer.Option(
            "--root", metavar="DIR", help="Stores and workspaces must lie under it (default: the system temp folder)."
        ),
    ] = None,
    mcp_config: Annotated[
        Path | None,
        typer.Option(
            "--mcp-config",
            metavar="FILE",
            help="The operator's MCP servers (TOML, one \\[\\[server]] table each; see docs/check-server.md): every instance"
            " opened gets them besides the servers its client sends, stdio commands included. Not for a"
            " conformance run: the scenarios would see their tools too.",
        ),
    ] = None,
) -> None:
    """Serve the reference behind the driver protocol (spec/driver-openapi.json) at http://127.0.0.1:PORT.

    Test it with `toolproof run --impl http://127.0.0.1:PORT`. A supervisor restarts the server each time a
    crash plan kills it (SIGKILL), so the recovery scenarios run over HTTP too. Stop it with Ctrl-C.
    Exit status 2 for bad input, in one line, before anything is served: an unknown implementation, a port that is
    not one or is in use, a bad root, or a bad --mcp-config file (unreadable, a stdio command not found, a server
    decision 7 refuses: the same decisions check-server makes on the file).
    """
    import tempfile

    from toolproof.driver import child_command, supervise

    try:
        load_implementation(impl)
        loaded = load_mcp_config(mcp_config) if mcp_config is not None else McpServerFile(servers=[])
    except ConfigurationError as exc:
        raise die(str(exc)) from None
    servers = loaded.servers
    # The decisions check-server makes on the same file, in its words: refused here once, not at every open.
    for server in servers:
        problem = command_problem(server) or not_admitted(server, loaded.egress_allowlist)
        if problem is not None:
            raise die(f"{mcp_config}: {problem}")
    if not 0 < port < 65536:
        raise die(f"--port {port}: not a TCP port")
    base = (root or Path(tempfile.gettempdir())).resolve()
    if not base.is_dir():
        raise die(f"--root {base}: not a directory")
    if (busy := port_in_use(port)) is not None:
        raise die(f"--port {port}: cannot listen on 127.0.0.1:{port} ({busy}); give a free port")
    err.print(f"serving {impl} at http://127.0.0.1:{port} (driver protocol {DRIVER_PROTOCOL}, root {base})")
    if servers:
        err.print(f"MCP servers of {mcp_config}: {', '.join(s.server_id for s in servers)}", markup=False)
    command = child_command(impl, port, base, [sys.executable], mcp_config=mcp_config)
    raise typer.Exit(supervise(command, lambda n: err.print(f"restarted after a SIGKILL crash ({n})")))


def supervise_command(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="COMMAND...",
            help="The driver's command line, after --: any program serving the driver protocol, in any language.",
        ),
    ],
) -> None:
    """Run a driver COMMAND and start it again each time a crash plan kills it (SIGKILL), as serve-reference does.

    For a driver in another language: supervise it, then run the suite against it; the recovery scenarios' SIGKILL
    cells then run over HTTP. The driver finds TOOLPROOF_SUPERVISED=1 in its environment (driver protocol revision
    3): its sign that a SIGKILL plan is safe to accept. SIGINT and SIGTERM are passed on to the driver. Everything
    after COMMAND is the driver's, options included (write -- before COMMAND).

    \b
    Example:
      toolproof supervise -- node dist/src/main.js --port 8787
      toolproof run --impl http://127.0.0.1:8787

    Exit status: the driver's own when it exits by itself (0 when stopped by SIGINT or SIGTERM); 2 when COMMAND
    cannot be started.
    """
    import shutil

    from toolproof.driver import supervise

    if shutil.which(command[0]) is None:
        raise die(f"COMMAND {command[0]!r}: no such program (give its path, or put it on PATH)")
    err.print(f"supervising {' '.join(command)}", markup=False)
    raise typer.Exit(supervise(command, lambda n: err.print(f"restarted after a SIGKILL crash ({n})")))
