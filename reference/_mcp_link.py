"""What the MCP adapter keeps of one server's connection, and how an attempt to open one fails.

``Link`` is one configured server's client and catalog; ``Keeper`` sits between the sessions and the task that
opens and closes its clients; ``Opening`` turns what an attempt saw into one typed error (D7.7, D7.8).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolproof.spec import InstanceConfig, McpOpenError, McpServerConfig, McpTransport

INPUT_REQUIRED_MAX_ROUNDS = 3
"""How many input-required rounds a call may take before it fails (every request in them is declined)."""

STDERR_TAIL_LINES = 5
"""How many of a stdio server's last stderr lines an open error quotes."""
STDERR_MARK = "--- toolproof: starting "
"""The line the adapter appends to a stdio server's stderr log before each start of its process."""

RECONNECT_BACKOFF_S = 1.0
"""Instance-clock seconds from losing a connection to the first reconnect attempt; doubles per failed attempt."""
RECONNECT_BACKOFF_CAP_S = 60.0
"""The longest wait between two reconnect attempts (D7.6's interpretation allows at most 60 s)."""


@dataclass(frozen=True)
class RemoteTool:
    """One registered entry of a server's current catalog."""

    name: str
    """The registered name."""
    remote_name: str | None
    """None: the synthetic read_resource tool."""
    sha256: str
    definition: dict[str, Any]
    """The wire form (camelCase) of the remote definition."""


@dataclass
class Link:
    """One configured server: its connection and the adapter's view of its catalog."""

    config: McpServerConfig
    client: Client
    prefix: str
    catalog: dict[str, RemoteTool] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    known: bool = False
    """Whether ``catalog`` reflects the store's history yet."""
    resources: bool = False
    """Whether the server answers resources/list (then it gets the synthetic read tool)."""
    prompts: bool = False
    """Whether the server answers prompts/list (then its prompts become skills)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    lost: bool = False
    """Whether the connection was found lost and not yet reconnected (its tools answer remote_unavailable)."""
    attempts: int = 0
    """Reconnect attempts that failed since the connection was lost."""
    retry_at: float = 0.0
    """Instance-clock time from which the next reconnect attempt is due."""
    keeper: Keeper | None = field(default=None, repr=False)
    """What the task that owns the server's clients is told, and answers."""
    listed_at: float | None = None
    """Instance-clock time the last complete listing began; None: no listing a call may reuse (D9.4)."""
    fresh_for: float = 0.0
    """Seconds from ``listed_at`` during which an idempotent read may reuse that listing (D9.4)."""
    generation: int = 0
    """Bumped by every invalidation: a listing that began before one is never fresh."""


@dataclass
class Keeper:
    """Between the sessions and the one task that opens and closes a server's clients."""

    closing: anyio.Event = field(default_factory=anyio.Event)
    """Set: close the current (lost) client."""
    wanted: anyio.Event = field(default_factory=anyio.Event)
    """Set: attempt a new connection."""
    attempted: anyio.Event | None = None
    """Set when the attempt asked for ended; None until the first reconnect is asked for."""
    failure: str | None = None
    """Why the last attempt failed; None: it succeeded."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """One attempt at a time."""


HANDSHAKE_ONLY_ANSWERS = frozenset(
    {types.METHOD_NOT_FOUND, types.INVALID_PARAMS, types.INTERNAL_ERROR, types.CONNECTION_CLOSED}
)
"""The errors handshake-era servers answer ``server/discover`` with: Method not found; a Python-SDK server of an
earlier major, -32602 (a request before initialize) or -32603; a streamable-HTTP one, -32000 (no session)."""
SDK_CLOSED = ("Connection closed", "SSE stream failed: ", "SSE stream ended ")
"""How the messages of the SDK's own -32000 errors for a transport that is gone begin (the dispatcher's closed
connection; streamable HTTP's dropped or unresumable response stream), which no server sent."""


def server_answered(exc: MCPError) -> bool:
    """Whether the server sent this error, rather than the SDK raising it for a closed connection.

    The code cannot tell: -32000 is also one a server may answer (JSON-RPC leaves it to the implementation), and
    D7.5 reads no error a server answers as a loss, whatever its code. Only the SDK's own words can; a server that
    answers -32000 in exactly those words is taken for a closed connection.
    """
    return not (exc.error.code == types.CONNECTION_CLOSED and exc.error.message.startswith(SDK_CLOSED))


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection is gone, rather than that the server answered an error."""
    if isinstance(exc, MCPError):
        return not server_answered(exc)
    return isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)) or (
        isinstance(exc, BaseExceptionGroup) and any(connection_lost(e) for e in exc.exceptions)
    )


async def unjudged(name: str, result: types.CallToolResult) -> None:
    """Stands in for the SDK's ``validate_tool_result``: the result's structure is judged at step 11."""


async def answers(method: Callable[[], Awaitable[Any]]) -> bool:
    """Whether the server answers ``method`` (an error answer is no answer; a lost connection raises)."""
    # A lost connection is no answer: it raises (a 2026-07-28 client connects without a request, so a
    # probe may be the first request the server gets).
    try:
        await method()
    except MCPError as exc:
        if connection_lost(exc):
            raise
        return False
    return True


def stderr_log(config: InstanceConfig, server: McpServerConfig) -> Path:
    """Where a stdio server's stderr goes: one file per server in the store directory, appended across restarts."""
    return config.store_dir / f"mcp-{server.server_id}.stderr.log"


def stderr_tail(path: Path, lines: int = STDERR_TAIL_LINES) -> list[str]:
    """The last ``lines`` non-empty lines the server's latest start wrote to its stderr log."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    latest = text.rsplit(STDERR_MARK, 1)[-1].splitlines()[1:] if STDERR_MARK in text else text.splitlines()
    return [line for line in latest if line.strip()][-lines:]


def _leaf(exc: BaseException) -> BaseException:
    # The first leaf of (nested) groups: the SDK's task groups wrap what went wrong.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class Opening:
    """What one attempt to open a server's connection saw, for the open error."""

    server: McpServerConfig
    log: Path | None = None
    """The stdio server's stderr log; None for other transports."""
    garbage: list[str] = field(default_factory=list)
    """What the server wrote that is not JSON-RPC, first lines first."""
    answer: str | None = None
    """What the server said to the era's opening, when the adapter judged it (era mismatch)."""

    def error(self, exc: BaseException) -> McpOpenError:
        """One typed error naming the server, the era asked, what the server said, and the cause."""
        server = self.server
        leaf = _leaf(exc)
        cause = one_line(f"{type(leaf).__name__}: {leaf}")
        code = leaf.error.code if isinstance(leaf, MCPError) else None
        if self.answer is not None:
            answer = self.answer
        elif self.garbage:
            answer = f"wrote non-JSON to stdout ({self.garbage[0]!r}) and never answered"
        elif code == types.REQUEST_TIMEOUT or isinstance(leaf, TimeoutError):
            answer = f"gave no answer within {server.call_timeout_s:g} s"
        elif server.transport is McpTransport.STDIO and connection_lost(leaf):
            answer = "exited before answering"
        elif isinstance(leaf, MCPError):
            answer = f"answered error {leaf.error.code}: {one_line(leaf.error.message)}"
        elif isinstance(leaf, ValidationError):
            answer = "answered something that is no result of its era"
        else:
            answer = "could not be reached"
        if self.log is not None and (tail := stderr_tail(self.log)):
            answer += f" (its stderr ends: {one_line(' | '.join(tail), 400)!r}; whole log: {self.log})"
        return McpOpenError(server.server_id, server.protocol, answer, cause)

    async def seen(self, message: IncomingMessage) -> None:
        """Keep what the transport could not parse (the SDK hands it to the message handler)."""
        if isinstance(message, Exception) and len(self.garbage) < 3:
            inputs = [e.get("input") for e in message.errors()] if isinstance(message, ValidationError) else []
            text = next((i for i in inputs if isinstance(i, str)), str(message))
            self.garbage.append(one_line(text, 80))


class EraMismatch(Exception):
    """The server answered the era's opening, and not as a server of that era does."""
