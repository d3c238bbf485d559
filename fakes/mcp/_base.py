"""What every hostile fake server shares: the registry entry, a plain ``echo``, and the wiring.

Every fake is a low-level ``mcp.server.lowlevel.Server`` (not ``MCPServer``): only the
low-level server lets a handler return exactly the hostile catalog it wants, duplicates
and malformed names included, without the SDK's decorators validating them away.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

Context = ServerRequestContext[Any, Any]
"""The per-request context the SDK hands every low-level handler."""

ToolCall = Callable[[Context, types.CallToolRequestParams], Awaitable[types.CallToolResult | types.InputRequiredResult]]
"""One tool's behaviour: ``(ctx, params) -> result``."""


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


_LOGGED_HANDLERS: dict[str, Callable[[Any], str]] = {
    "on_list_resources": lambda params: "resources/list",
    "on_read_resource": lambda params: f"resources/read {params.uri}",
    "on_list_prompts": lambda params: "prompts/list",
    "on_get_prompt": lambda params: f"prompts/get {params.name}",
}
"""The ``on_*`` handlers ``FakeServer`` wraps, and the log entry each of their requests appends."""

_SAMPLING = types.ClientCapabilities(sampling=types.SamplingCapability())
_ROOTS = types.ClientCapabilities(roots=types.RootsCapability())


CALL_LOG = "tools-calls.log"
"""The file, in a served fake's state directory, to which it appends one ``"tools/call NAME"`` line per call it
receives: what a subprocess fake was asked, for a scenario that cannot read its ``log`` (``served_calls``)."""


def served_calls(state_dir: Path) -> list[str]:
    """The ``"tools/call NAME"`` lines a fake served with ``state_dir`` received, in arrival order (none yet: [])."""
    path = state_dir / CALL_LOG
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _advertised(ctx: Context) -> str:
    # Handshake era: the initialize capabilities; 2026-07-28: this request's `_meta` envelope.
    sampling = ctx.session.check_client_capability(_SAMPLING)
    roots = ctx.session.check_client_capability(_ROOTS)
    return f"client sampling={sampling} roots={roots}"


class FakeServer:
    """Wiring shared by the fakes: a tool table, a listen bus, a request log, and a ``tools/list_changed`` helper.

    Args:
        name: ``serverInfo.name``.
        list_tools: Returns the catalog to answer ``tools/list`` with, evaluated per request.
        tools: Tool name -> behaviour; a name not in the table answers ``isError`` "unknown tool".
        page_size: When set, ``tools/list`` answers pages of this many tools, each page but the last with a
            ``nextCursor`` (the offset of the next page); None: the whole catalog in one page.
        ttl_ms: The ``ttlMs`` cache hint of each page of ``tools/list``, in page order (a page past the end takes
            the last); empty: the SDK's default, 0. Only a 2026-07-28 answer carries it (the SDK drops it from a
            handshake-era one).
        bus: The ``subscriptions/listen`` bus; None: a plain in-memory one.
        **handlers: Further ``Server`` ``on_*`` handlers (resources, prompts; ``subscriptions/listen`` over
            ``bus``'s own handler, None: no listen stream is served).

    Attributes:
        log: What clients asked, in arrival order. ``"tools/list CURSOR"`` per page asked for when paginated
            (``-`` for the first page). Per ``tools/call``: ``"tools/call NAME"``,
            then what the client advertised, ``"client sampling=True|False roots=True|False"``,
            then ``"input_responses KEY=JSON"`` per response a 2026-07-28 retry carries.
            ``"resources/list"``, ``"resources/read URI"``, ``"prompts/list"`` and
            ``"prompts/get NAME"`` for the handlers of those names.
        server: The SDK server to connect a client to, or to serve.
    """

    def __init__(
        self,
        name: str,
        list_tools: Callable[[], list[types.Tool]],
        tools: Mapping[str, ToolCall],
        *,
        page_size: int | None = None,
        ttl_ms: Sequence[int] = (),
        bus: InMemorySubscriptionBus | None = None,
        **handlers: Any,
    ) -> None:
        self.list_tools = list_tools
        self.page_size = page_size
        self.ttl_ms = tuple(ttl_ms)
        self.tools = dict(tools)
        self.log: list[str] = []
        self.bus = bus if bus is not None else InMemorySubscriptionBus()
        self.served = False
        """Whether it runs as a subprocess serving stdio or HTTP (then it may end its process)."""
        self.state_dir: Path | None = None
        """Where a served fake may keep what must outlive its process (``--state-dir``); None: nowhere."""
        logged: dict[str, Any] = {
            key: self._logged(handler, _LOGGED_HANDLERS[key]) if key in _LOGGED_HANDLERS else handler
            for key, handler in handlers.items()
        }
        logged.setdefault("on_subscriptions_listen", ListenHandler(self.bus))
        self.server: Server[Any] = Server(
            name, version="1.0.0", on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool, **logged
        )

    def _logged(
        self, handler: Callable[[Context, Any], Awaitable[Any]], entry: Callable[[Any], str]
    ) -> Callable[[Context, Any], Awaitable[Any]]:
        async def logged(ctx: Context, params: Any) -> Any:
            self.log.append(entry(params))
            return await handler(ctx, params)

        return logged

    def _hinted(self, result: types.ListToolsResult, page: int) -> types.ListToolsResult:
        # Left unset, the field goes out as the SDK's default (0) in 2026-07-28.
        if not self.ttl_ms:
            return result
        return result.model_copy(update={"ttl_ms": self.ttl_ms[min(page, len(self.ttl_ms) - 1)]})

    async def _on_list_tools(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if self.page_size is None:
            return self._hinted(types.ListToolsResult(tools=self.list_tools()), 0)
        cursor = params.cursor if params is not None else None
        self.log.append(f"tools/list {cursor or '-'}")
        if cursor is not None and not cursor.isdigit():
            raise MCPError(types.INVALID_PARAMS, f"unknown cursor {cursor!r}")
        start = int(cursor or 0)
        catalog = self.list_tools()
        end = start + self.page_size
        page = types.ListToolsResult(tools=catalog[start:end], next_cursor=str(end) if end < len(catalog) else None)
        return self._hinted(page, start // self.page_size)

    async def _on_call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self.log.append(f"tools/call {params.name}")
        if self.state_dir is not None:
            # Written before the behaviour runs: a call that arrived is on record even if the tool ends the process.
            self.state_dir.mkdir(parents=True, exist_ok=True)
            with (self.state_dir / CALL_LOG).open("a", encoding="utf-8") as calls:
                calls.write(f"tools/call {params.name}\n")
        self.log.append(_advertised(ctx))
        for key, response in (params.input_responses or {}).items():
            self.log.append(f"input_responses {key}={response.model_dump_json(by_alias=True, exclude_none=True)}")
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


ServerFactory = Callable[[], FakeServer]
"""Builds a fresh fake; every call starts from the same deterministic state."""


@dataclass(frozen=True)
class ServerFake:
    """A registry entry: one hostile server, named for its one behaviour.

    ``build()`` makes a fresh ``FakeServer`` (its ``log`` observable by the caller);
    calling the entry builds one and returns just its SDK ``Server``.
    """

    name: str
    """Registry name, also the default ``serverInfo.name``: ``RugPullServer``."""
    behaviour: str
    """One line: what the server does that a client must survive."""
    factory: ServerFactory = field(repr=False)
    """Builds a fresh fake in its initial state."""
    transports: tuple[str, ...] = ("memory", "stdio", "http")
    """How it can be reached: a behaviour that needs a process's own stdout exists over stdio only."""
    stdio_main: Callable[[], None] | None = field(default=None, repr=False)
    """What its stdio process runs instead of an SDK server (a behaviour the SDK would not let it have)."""

    def build(self) -> FakeServer:
        """Build a fresh fake, request log included."""
        return self.factory()

    def __call__(self) -> Server[Any]:
        """Build a fresh fake and return its SDK server."""
        return self.build().server


@contextlib.contextmanager
def deprecated_ok() -> Any:
    """Silence the SDK's 2026-07-28 deprecation warnings: the fakes use deprecated features on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield
