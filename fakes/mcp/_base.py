"""What every hostile fake server shares: the registry entry, a plain ``echo``, and the wiring.

Every fake is a low-level ``mcp.server.lowlevel.Server`` (not ``MCPServer``): only the
low-level server lets a handler return exactly the hostile catalog it wants, duplicates
and malformed names included, without the SDK's decorators validating them away.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

Context = ServerRequestContext[Any, Any]
"""The per-request context the SDK hands every low-level handler."""

ToolCall = Callable[[Context, types.CallToolRequestParams], Awaitable[types.CallToolResult | types.InputRequiredResult]]
"""One tool's behaviour: ``(ctx, params) -> result``."""

ServerFactory = Callable[[], Server[Any]]
"""Builds a fresh SDK server; every call starts from the same deterministic state."""


@dataclass(frozen=True)
class ServerFake:
    """A registry entry: one hostile server, named for its one behaviour.

    Calling the entry builds a fresh ``mcp.server.lowlevel.Server``.
    """

    name: str
    """Registry name, also the default ``serverInfo.name``: ``RugPullServer``."""
    behaviour: str
    """One line: what the server does that a client must survive."""
    factory: ServerFactory = field(repr=False)
    """Builds a fresh server in its initial state."""

    def __call__(self) -> Server[Any]:
        """Build a fresh server."""
        return self.factory()


def text(value: str) -> types.CallToolResult:
    """A one-part text result."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


def error(value: str) -> types.CallToolResult:
    """A one-part text result with ``isError`` set."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=True)


TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "additionalProperties": False,
}
"""Input schema of ``echo`` and of most plain fakes' tools."""

ECHO = types.Tool(
    name="echo",
    description="Returns its `text` argument unchanged.",
    input_schema=TEXT_SCHEMA,
    annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True),
)
"""The plain tool every fake carries, so a client always has something that works."""


async def echo(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
    """``echo``: returns ``arguments['text']``."""
    return text(str((params.arguments or {}).get("text", "")))


def is_modern(ctx: Context) -> bool:
    """Whether this request arrived on a 2026-07-28-era connection (no server-initiated requests)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


class FakeServer:
    """Wiring shared by the fakes: a tool table, a listen bus, and a ``tools/list_changed`` helper.

    Args:
        name: ``serverInfo.name``.
        list_tools: Returns the catalog to answer ``tools/list`` with, evaluated per request.
        tools: Tool name -> behaviour; a name not in the table answers ``isError`` "unknown tool".
        **handlers: Further ``Server`` ``on_*`` handlers (resources, prompts).
    """

    def __init__(
        self,
        name: str,
        list_tools: Callable[[], list[types.Tool]],
        tools: Mapping[str, ToolCall],
        **handlers: Any,
    ) -> None:
        self.list_tools = list_tools
        self.tools = dict(tools)
        self.bus = InMemorySubscriptionBus()
        self.server: Server[Any] = Server(
            name,
            version="1.0.0",
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
            **handlers,
        )

    async def _on_list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.list_tools())

    async def _on_call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        behaviour = self.tools.get(params.name)
        if behaviour is None:
            return error(f"unknown tool: {params.name!r}")
        return await behaviour(ctx, params)

    async def announce_tools_changed(self, ctx: Context) -> None:
        """Send ``notifications/tools/list_changed`` in whichever era the connection speaks.

        Handshake era: a notification on the connection's standalone channel. 2026-07-28:
        an event on the ``subscriptions/listen`` bus (the only route that era has).
        """
        await self.bus.publish(ToolsListChanged())
        if not is_modern(ctx):
            await ctx.session.send_tool_list_changed()


@contextlib.contextmanager
def deprecated_ok() -> Any:
    """Silence the SDK's 2026-07-28 deprecation warnings: the fakes use deprecated features on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield
