"""What a driver accepts: it executes what the harness sends, so it checks where that may reach."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from toolproof.spec import McpOrigin, McpServerConfig, McpTransport, OpenInstance

from ._problems import Refused

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""Where a tool host and an HTTP MCP server reached by a driver may be."""


@dataclass(frozen=True)
class DriverOptions:
    """What a driver accepts."""

    root: Path
    """Every instance's store_dir and workspace must lie under it."""
    stdio_commands: frozenset[str] = field(default_factory=frozenset)
    """Executables an MCP stdio server may be started with (none: stdio servers are refused)."""
    supervised: bool = False
    """Whether a supervisor restarts this process, so a sigkill crash plan may kill it."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """The operator's MCP servers (``serve-reference --mcp-config``): added to every instance, their commands
    started whatever ``stdio_commands`` says, since the operator, not the harness, named them."""
    egress_allowlist: tuple[str, ...] = ()
    """The operator's egress allowlist (the server file's ``egress_allowlist``): added to every instance's, so a
    tenant's HTTP server on one of its hosts is admitted (D7.2)."""


def admit(body: OpenInstance, options: DriverOptions) -> OpenInstance:
    """The instance request as the implementation gets it, or ``Refused`` naming the field it may not have."""
    root = options.root.resolve()
    for name in ("store_dir", "workspace"):
        try:
            path = Path(getattr(body.config, name)).resolve()
        except (ValueError, OSError) as exc:  # A NUL byte, a path too long for the system.
            raise Refused(
                422, "invalid-request", f"config.{name}: not a usable path ({exc})", f"config.{name}"
            ) from None
        if not path.is_relative_to(root):
            raise Refused(422, "invalid-request", f"config.{name}: {path} is outside {root}", f"config.{name}")
    if urlsplit(body.tool_host).hostname not in LOOPBACK_HOSTS:
        raise Refused(422, "invalid-request", "tool_host: must be a loopback URL", "tool_host")
    if body.config.crash is not None and body.config.crash.mode == "sigkill" and not options.supervised:
        raise Refused(422, "not-supported", "config.crash.mode: sigkill needs a supervised driver", "config.crash.mode")
    servers = []
    operators = {server.server_id for server in options.mcp_servers}
    for i, server in enumerate(body.config.mcp_servers):
        where = f"config.mcp_servers.{i}"
        if server.server_id in operators:
            message = f"{where}.server_id: {server.server_id!r} is an operator's server of this driver"
            raise Refused(422, "invalid-request", message, f"{where}.server_id")
        if server.transport is McpTransport.STDIO and (server.command or [""])[0] not in options.stdio_commands:
            raise Refused(422, "not-supported", f"{where}.command: this driver does not start it", f"{where}.command")
        operator_http = server.transport is McpTransport.HTTP and server.origin is McpOrigin.OPERATOR
        if operator_http and urlsplit(server.url or "").hostname not in LOOPBACK_HOSTS:
            raise Refused(422, "not-supported", f"{where}.url: only loopback servers", f"{where}.url")
        servers.append(server.model_copy(update={"server": None}))
    servers.extend(options.mcp_servers)
    allowlist = [
        *body.config.egress_allowlist,
        *(h for h in options.egress_allowlist if h not in body.config.egress_allowlist),
    ]
    config = body.config.model_copy(update={"mcp_servers": servers, "egress_allowlist": allowlist})
    return body.model_copy(update={"config": config})
