"""What an MCP server sends, read on its way to the adapter: the transport the reference would open, tapped."""

from __future__ import annotations

import contextlib
import math
from collections import Counter
from contextlib import AsyncExitStack
from typing import IO, Any, TextIO, cast

import anyio
import anyio.abc
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from toolproof.reports import ServerRequest
from toolproof.spec import McpServerConfig, McpTransport


class Tap:
    """Reads every message a server sends, on its way to the adapter; what the checker is doing labels it."""

    def __init__(self) -> None:
        self.phase = "connect"
        self.notifications: Counter[str] = Counter()
        self.requests: list[ServerRequest] = []
        self.malformed = 0

    def see(self, item: SessionMessage | Exception) -> None:
        """Count one item of the read stream."""
        if isinstance(item, Exception):
            self.malformed += 1
            return
        message = item.message
        if isinstance(message, types.JSONRPCNotification):
            self.notifications[message.method] += 1
        elif isinstance(message, types.JSONRPCRequest):
            if message.method != "ping":
                self.requests.append(ServerRequest(method=message.method, during=self.phase, input_required=False))
        elif isinstance(message, types.JSONRPCResponse) and isinstance(message.result, dict):
            asked = message.result.get("inputRequests")
            if isinstance(asked, dict) or message.result.get("resultType") == "input_required":
                methods = [str(v.get("method", k)) for k, v in (asked or {}).items() if isinstance(v, dict)]
                for method in methods or ["input_required"]:
                    self.requests.append(ServerRequest(method=method, during=self.phase, input_required=True))


class TappedTransport:
    """The transport the reference would open for ``server`` (stdio or streamable HTTP), read through a ``Tap``.

    Entered afresh each time the adapter connects (a reconnect is a new process, as for the reference).
    """

    def __init__(self, server: McpServerConfig, tap: Tap, errlog: IO[str]) -> None:
        self._server = server
        self._tap = tap
        self._errlog = errlog
        self._stack: AsyncExitStack | None = None

    def _inner(self) -> contextlib.AbstractAsyncContextManager[Any]:
        server = self._server
        if server.transport is McpTransport.STDIO:
            assert server.command  # Invariant: McpServerConfig requires it for stdio.
            parameters = StdioServerParameters(
                command=server.command[0], args=server.command[1:], env=server.env, cwd=server.cwd
            )
            return stdio_client(parameters, errlog=cast(TextIO, self._errlog))
        assert server.url  # Invariant: McpServerConfig requires it for HTTP.
        return streamable_http_client(server.url)

    async def __aenter__(self) -> tuple[Any, Any]:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            read, write = await stack.enter_async_context(self._inner())
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            group.start_soon(self._pump, read, send)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return receive, write

    async def _pump(self, read: Any, send: anyio.abc.ObjectSendStream[SessionMessage | Exception]) -> None:
        async with send:
            async for item in read:
                self._tap.see(item)
                await send.send(item)

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()
