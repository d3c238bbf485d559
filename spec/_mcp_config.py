"""The operator's MCP server file: TOML, one ``[[server]]`` table per server, read into ``McpServerConfig``s.

Example::

    [[server]]
    id = "fetch"
    command = "uvx"
    args = ["mcp-server-fetch"]
    env = { FETCH_TOKEN = "..." }
    classification = { side_effect = "READ_ONLY", risk = "LOW", idempotency = "IDEMPOTENT" }

    [[server]]
    id = "search"
    url = "http://127.0.0.1:9000/mcp"
    protocol = "2026-07-28"

    egress_allowlist = ["127.0.0.1"]   # top level: the hosts a tenant's HTTP server may be on (D7.2)

A ``command`` makes a stdio server and a ``url`` a streamable-HTTP one; every other key is the
``McpServerConfig`` field of that name. Errors name the file, the entry and the key, in one line,
and never show an ``env`` value (it may be a key).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ._errors import ConfigurationError
from ._mcp import ENV_NAME_GRAMMAR, McpOrigin, McpServerConfig, McpTransport, egress_host

SERVER_KEYS = (
    "id",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "origin",
    "classification",
    "protocol",
    "call_timeout_s",
    "max_output_bytes",
    "listing_max_age_s",
)
"""The keys a ``[[server]]`` table may have."""
TOP_LEVEL_KEYS = ("server", "egress_allowlist")
"""The keys the file may have at its top level."""


class McpServerFile(BaseModel):
    """What an operator's MCP server file configures: the servers, and the egress allowlist (D7.2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    servers: list[McpServerConfig]
    """Every ``[[server]]`` table, in order."""
    egress_allowlist: list[str] = []
    """The hosts a tenant's HTTP server may be on (``origin = "tenant"``, D7.2); empty: none."""


class McpConfigError(ConfigurationError):
    """The MCP server file is unusable; the message is one line naming the file, the entry and the key."""

    def __init__(self, path: Path, problem: str, *, entry: str | None = None, key: str | None = None) -> None:
        where = str(path) + (f": {entry}" if entry else "") + (f": {key}" if key else "")
        super().__init__(f"{where}: {problem}")
        self.path = path
        """The file as given."""
        self.entry = entry
        """Which ``[[server]]`` table (``server 2 (id 'fetch')``), or None for the file as a whole."""
        self.key = key
        """The offending key (dotted inside a table, e.g. ``classification.risk``), or None."""


def load_mcp_servers(path: str | Path) -> list[McpServerConfig]:
    """Read an MCP server file (TOML, ``[[server]]`` tables) into validated operator configurations.

    Raises:
        McpConfigError: the file is missing, not TOML, or an entry is invalid (one line, no ``env`` value).
    """
    return load_mcp_config(path).servers


def load_mcp_config(path: str | Path) -> McpServerFile:
    """Read an MCP server file: its servers, and its top-level ``egress_allowlist``.

    Raises:
        McpConfigError: the file is missing, not TOML, or an entry is invalid (one line, no ``env`` value).
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise McpConfigError(path, f"cannot be read ({reason}); give a UTF-8 TOML file") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's messages give a position, never the text found there.
        raise McpConfigError(path, f"not TOML: {exc}") from None
    extra = sorted(set(document) - set(TOP_LEVEL_KEYS))
    if extra:
        raise McpConfigError(
            path, f"unknown top-level key {extra[0]!r}; the file holds [[server]] tables and egress_allowlist"
        )
    allowlist = document.get("egress_allowlist", [])
    if not (isinstance(allowlist, list) and all(isinstance(h, str) for h in allowlist)):
        raise McpConfigError(path, 'must be a list of host names, e.g. ["127.0.0.1"]', key="egress_allowlist")
    for host in allowlist:
        if egress_host(host) is None:
            raise McpConfigError(path, f"{host!r} names no host a client can reach", key="egress_allowlist")
    tables = document.get("server")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise McpConfigError(path, "no [[server]] tables; give one per MCP server")
    servers: list[McpServerConfig] = []
    seen: dict[str, int] = {}
    for number, table in enumerate(tables, start=1):
        server = _server(path, number, table)
        if server.server_id in seen:
            raise McpConfigError(
                path,
                f"id {server.server_id!r} is also server {seen[server.server_id]}'s; give each server its own id",
                entry=_entry(number, table),
                key="id",
            )
        seen[server.server_id] = number
        servers.append(server)
    return McpServerFile(servers=servers, egress_allowlist=allowlist)


def _entry(number: int, table: Mapping[str, Any]) -> str:
    name = table.get("id")
    return f"server {number}" + (f" (id {name!r})" if isinstance(name, str) else "")


def _server(path: Path, number: int, table: dict[str, Any]) -> McpServerConfig:
    entry = _entry(number, table)

    def fail(key: str | None, problem: str) -> McpConfigError:
        return McpConfigError(path, problem, entry=entry, key=key)

    unknown = [key for key in table if key not in SERVER_KEYS]
    if unknown:
        raise fail(unknown[0], f"unknown key; a server has {', '.join(SERVER_KEYS)}")
    if "id" not in table:
        raise fail("id", 'missing; give the server\'s id, e.g. id = "fetch"')
    if ("command" in table) == ("url" in table):
        found = "both" if "command" in table else "neither"
        raise fail("command", f"{found} of command and url; give command (stdio) or url (HTTP), not both")
    if "args" in table and "command" not in table:
        raise fail("args", "args without command; args are the stdio command's arguments")
    if table.get("origin") == McpOrigin.TENANT and "command" in table:
        # The model allows it, so scenarios can show the refusal (D7.1); a file never means it.
        raise fail("origin", 'a tenant server must use HTTP (D7.1); give url, or origin = "operator"')
    command = table.get("command")
    if "command" in table and not (isinstance(command, str) and command):
        raise fail("command", "must be a non-empty string (the executable); put its arguments in args")
    args = table.get("args", [])
    if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise fail("args", "must be a list of strings")
    env = table.get("env")
    if env is not None:
        # Only names are shown: a value may be a key.
        if not isinstance(env, dict):
            raise fail("env", 'must be a table of NAME = "value"')
        for name, value in env.items():
            if not ENV_NAME_GRAMMAR.fullmatch(name):
                raise fail(f"env.{name}", "not a variable name [A-Za-z_][A-Za-z0-9_]*; rename it")
            if not isinstance(value, str):
                raise fail(f"env.{name}", "must be a string (quote it)")
    fields: dict[str, Any] = {key: value for key, value in table.items() if key not in ("id", "command", "args", "env")}
    fields |= {"server_id": table["id"], "env": env}
    if command is not None:
        fields |= {"transport": McpTransport.STDIO, "command": [command, *args]}
    else:
        fields |= {"transport": McpTransport.HTTP}
    try:
        return McpServerConfig.model_validate(fields)
    except ValidationError as exc:
        raise fail(*_first_problem(exc)) from None


def _first_problem(exc: ValidationError) -> tuple[str | None, str]:
    """The key and the text of a validation error's first problem, without the value it was given."""
    problem = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    location = [str(part) for part in problem["loc"]]
    if location[:1] == ["server_id"]:
        location[0] = "id"
    message = str(problem["msg"]).removeprefix("Value error, ")
    key = ".".join(location) or None
    if key is None:
        # A check across fields names its field first, after the server (see McpServerConfig._endpoint).
        message = message.split(": ", 1)[-1] if message.startswith("server ") else message
        key = next((name for name in ("env", "cwd", "url", "command") if message.startswith(name)), None)
    return key, message
