"""Serve one fake over stdio or over streamable HTTP on loopback."""

from __future__ import annotations

from typing import Literal

import anyio
import uvicorn
from mcp.server.lowlevel import NotificationOptions
from mcp.server.stdio import stdio_server

from ._registry import SERVERS

Transport = Literal["stdio", "http"]
"""How ``serve`` exposes the fake."""

LOOPBACK = "127.0.0.1"
"""The only host the HTTP transport binds."""


def _lookup(name: str) -> None:
    if name not in SERVERS:
        raise ValueError(f"unknown fake MCP server name={name!r}; choose one of `toolproof fake-mcp --list`")


async def serve_stdio(name: str) -> None:
    """Serve the fake ``name`` on this process's stdin/stdout until stdin closes."""
    _lookup(name)
    fake = SERVERS[name].build()
    fake.served = True
    server = fake.server
    # tools_changed=True: the handshake-era catalog advertises listChanged, as real servers do.
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


async def serve_http(name: str, port: int) -> None:
    """Serve the fake ``name`` at ``http://127.0.0.1:{port}/mcp`` until cancelled."""
    _lookup(name)
    fake = SERVERS[name].build()
    fake.served = True
    app = fake.server.streamable_http_app(host=LOOPBACK)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


def serve(name: str, transport: Transport = "stdio", port: int = 8765) -> None:
    """Run the fake ``name`` in the foreground (blocking) over ``transport``.

    Args:
        name: A key of ``SERVERS``.
        transport: ``"stdio"`` or ``"http"`` (streamable HTTP, loopback only, path ``/mcp``).
        port: The HTTP port; ignored for stdio.

    Raises:
        ValueError: Unknown ``name`` or ``transport``.
    """
    _lookup(name)
    if transport == "stdio":
        anyio.run(serve_stdio, name)
    elif transport == "http":
        anyio.run(serve_http, name, port)
    else:
        raise ValueError(f"unknown transport={transport!r}; use 'stdio' or 'http'")
