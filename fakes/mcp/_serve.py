"""Serve one fake over stdio or over streamable HTTP on loopback."""

from __future__ import annotations

from pathlib import Path
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


def _lookup(name: str, transport: str | None = None) -> None:
    if name not in SERVERS:
        raise ValueError(f"unknown fake MCP server name={name!r}; choose one of `toolproof fake-mcp --list`")
    if transport is not None and transport not in SERVERS[name].transports:
        raise ValueError(f"fake MCP server {name!r} is served over {', '.join(SERVERS[name].transports)} only")


async def serve_stdio(name: str, state_dir: Path | None = None) -> None:
    """Serve the fake ``name`` on this process's stdin/stdout until stdin closes (``state_dir``: see ``serve``)."""
    _lookup(name)
    entry = SERVERS[name]
    if entry.stdio_main is not None:
        entry.stdio_main()
        return
    fake = entry.build()
    fake.served, fake.state_dir = True, state_dir
    server = fake.server
    # tools_changed=True: the handshake-era catalog advertises listChanged, as real servers do.
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


async def serve_http(name: str, port: int, state_dir: Path | None = None) -> None:
    """Serve the fake ``name`` at ``http://127.0.0.1:{port}/mcp`` until cancelled (``state_dir``: see ``serve``).

    Raises:
        ValueError: Unknown ``name``, or a fake that exists over stdio only.
    """
    _lookup(name, "http")
    fake = SERVERS[name].build()
    fake.served, fake.state_dir = True, state_dir
    app = fake.server.streamable_http_app(host=LOOPBACK)
    config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


def serve(name: str, transport: Transport = "stdio", port: int = 8765, state_dir: Path | None = None) -> None:
    """Run the fake ``name`` in the foreground (blocking) over ``transport``.

    Args:
        name: A key of ``SERVERS``.
        transport: ``"stdio"`` or ``"http"`` (streamable HTTP, loopback only, path ``/mcp``).
        port: The HTTP port; ignored for stdio.
        state_dir: Where the fake may keep what must outlive its process (ChangedOnRestartServer's exit);
            None: nowhere, every start is a first start.

    Raises:
        ValueError: Unknown ``name`` or ``transport``, or a transport the fake is not served over.
    """
    _lookup(name, transport)
    if transport == "stdio":
        anyio.run(serve_stdio, name, state_dir)
    elif transport == "http":
        anyio.run(serve_http, name, port, state_dir)
    else:
        raise ValueError(f"unknown transport={transport!r}; use 'stdio' or 'http'")
