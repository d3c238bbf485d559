"""``toolproof check-server``'s command: which servers, which outputs, which exit status."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from toolproof.reports import ServerCheck, ServerCheckReport, render_server_check_html, render_server_check_text
from toolproof.spec import ConfigurationError, McpServerConfig, McpTransport, load_mcp_config

from . import __version__
from ._check_call import Call, parse_call
from ._check_server import check_server
from ._server_file import command_problem

COMMAND_SERVER_ID = "server"
"""The server id (name prefix ``mcp.server.``) of a server given as a command or a URL."""


def servers_of(target: Sequence[str], server_ids: Sequence[str]) -> tuple[list[McpServerConfig], bool, list[str]]:
    """The servers ``target`` names, whether they came from an operator file, and the file's egress allowlist.

    Raises:
        ConfigurationError: nothing given, a bad file, an unknown ``--server``, a command not found (one line).
    """
    if not target:
        raise ConfigurationError("give an MCP server file (FILE.toml), a URL, or -- COMMAND ARGS...")
    allowlist: list[str] = []
    if len(target) == 1 and target[0].endswith(".toml"):
        loaded = load_mcp_config(target[0])
        servers, allowlist = loaded.servers, loaded.egress_allowlist
        if server_ids:
            known = {s.server_id for s in servers}
            for wanted in server_ids:
                if wanted not in known:
                    raise ConfigurationError(
                        f"--server {wanted!r}: no such id in {target[0]}; its ids are: {', '.join(sorted(known))}"
                    )
            servers = [s for s in servers if s.server_id in server_ids]
        configured = True
    elif server_ids:
        raise ConfigurationError("--server picks servers of an MCP server file; give FILE.toml")
    elif len(target) == 1 and target[0].startswith(("http://", "https://")):
        servers = [McpServerConfig(server_id=COMMAND_SERVER_ID, transport=McpTransport.HTTP, url=target[0])]
        configured = False
    else:
        servers = [McpServerConfig(server_id=COMMAND_SERVER_ID, transport=McpTransport.STDIO, command=list(target))]
        configured = False
    for server in servers:
        if (problem := command_problem(server)) is not None:
            raise ConfigurationError(problem)
    return servers, configured, allowlist


def run_check_server(
    target: Sequence[str],
    *,
    server_ids: Sequence[str] = (),
    calls: Sequence[str] = (),
    timeout: float = 30.0,
    era: str | None = None,
    as_json: bool = False,
    html: Path | None = None,
    out_dir: Path | None = None,
    progress: Callable[[str], None] = lambda line: None,
    fail: Callable[[str], None] = lambda line: None,
) -> int:
    """Check every server ``target`` names, print the report, write the files asked for; the exit status.

    0: every server can be admitted as configured; 1: findings ADR-0021 will act on; 2: a server
    could not be reached in any era, or bad input (``fail`` gets the one line).
    """
    try:
        if timeout <= 0:
            raise ConfigurationError(f"--timeout {timeout:g}: give a positive number of seconds")
        parsed: list[Call] = []
        for text in calls:
            try:
                parsed.append(parse_call(text))
            except ValueError as exc:
                raise ConfigurationError(str(exc)) from None
        servers, configured, allowlist = servers_of(target, server_ids)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
    except (ConfigurationError, OSError) as exc:
        fail(str(exc) if isinstance(exc, ConfigurationError) else f"--out {out_dir}: {exc.strerror or exc}")
        return 2

    async def every() -> list[ServerCheck]:
        return [
            await check_server(
                s,
                configured=configured,
                egress_allowlist=allowlist,
                calls=parsed,
                wait_s=timeout,
                era=era,
                progress=progress,
            )
            for s in servers
        ]

    # The SDK logs a traceback for each line a server writes that is not JSON-RPC; the report counts them instead.
    sdk_log = logging.getLogger("mcp")  # Its modules' loggers inherit its level.
    level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL + 1)
    try:
        checked = anyio.run(every)
    finally:
        sdk_log.setLevel(level)
    report = ServerCheckReport(
        toolproof_version=__version__, servers=checked, exit_code=max(s.exit_code for s in checked)
    )
    text = render_server_check_text(report)
    document = report.model_dump_json(indent=2) + "\n"
    sys.stdout.write(document if as_json else text)
    try:
        if html is not None:
            html.write_text(render_server_check_html(report), encoding="utf-8")
        if out_dir is not None:
            (out_dir / "server-check.json").write_text(document, encoding="utf-8")
            (out_dir / "server-check.txt").write_text(text, encoding="utf-8")
            (out_dir / "server-check.html").write_text(render_server_check_html(report), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write the report: {exc.strerror or exc}: {exc.filename}")
        return 2
    for server in checked:
        if server.exit_code == 2:
            why = "; ".join(f"{e.era}: {e.failure}" for e in server.eras)
            fail(f"server {server.server_id!r} could not be reached in any era ({why})")
    return report.exit_code
