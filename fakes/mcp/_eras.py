"""The connection's protocol era: servers that never complete the era a client asks for, or break it afterwards.

A client opens a handshake-era connection with ``initialize`` and verifies a 2026-07-28 one with
``server/discover``; each fake here fails that opening (or what follows it) in one way.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, is_modern

OPENINGS = ("initialize", "server/discover")
"""The requests that open a connection: the handshake era's, and the 2026-07-28 era's probe."""


def _hangs_at_initialize() -> FakeServer:
    async def hang(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        if ctx.method in OPENINGS:
            fake.log.append(f"{ctx.method}: never answered")
            await anyio.sleep_forever()
        return await call_next(ctx)

    fake = FakeServer("HangsAtInitializeServer", lambda: [ECHO], {"echo": echo})
    fake.server.middleware.insert(0, hang)
    return fake


HangsAtInitializeServer = ServerFake(
    "HangsAtInitializeServer",
    "accepts the connection and never answers its opening request (initialize, or 2026-07-28's server/discover); "
    "every other request is answered",
    _hangs_at_initialize,
)

LEGACY_ONLY_MESSAGE = "this server speaks the initialize handshake only; send initialize first"
"""What LegacyOnlyServer answers every 2026-07-28 request (server/discover aside) with."""


def _legacy_only() -> FakeServer:
    async def refuse_modern(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        if ctx.request_id is not None and is_modern(ctx):
            fake.log.append(f"{ctx.method}: refused (2026-07-28 envelope)")
            if ctx.method == "server/discover":
                raise MCPError(types.METHOD_NOT_FOUND, "Method not found")
            raise MCPError(types.INVALID_REQUEST, LEGACY_ONLY_MESSAGE)
        return await call_next(ctx)

    fake = FakeServer("LegacyOnlyServer", lambda: [ECHO], {"echo": echo})
    fake.server.middleware.insert(0, refuse_modern)
    return fake


LegacyOnlyServer = ServerFake(
    "LegacyOnlyServer",
    "speaks only the handshake era: server/discover is Method not found and every other 2026-07-28 request is "
    "refused (Invalid request), as a server written before 2026-07-28 answers",
    _legacy_only,
)


def _discover_refused(name: str, code: int, message: str) -> Callable[[], FakeServer]:
    def build() -> FakeServer:
        async def refuse_discover(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
            if ctx.request_id is not None and is_modern(ctx):
                fake.log.append(f"{ctx.method}: refused with {code}")
                raise MCPError(code, message)
            return await call_next(ctx)

        fake = FakeServer(name, lambda: [ECHO], {"echo": echo})
        fake.server.middleware.insert(0, refuse_discover)
        return fake

    return build


DiscoverInvalidParamsServer = ServerFake(
    "DiscoverInvalidParamsServer",
    "speaks only the handshake era, and answers every 2026-07-28 request (server/discover included) with -32602 "
    "Invalid request parameters, as a Python-SDK server of an earlier major answers a request before initialize",
    _discover_refused("DiscoverInvalidParamsServer", types.INVALID_PARAMS, "Invalid request parameters"),
)
DiscoverInternalErrorServer = ServerFake(
    "DiscoverInternalErrorServer",
    "speaks only the handshake era, and answers every 2026-07-28 request (server/discover included) with -32603 "
    "Internal error, as a server whose dispatcher fails on a method it does not know",
    _discover_refused("DiscoverInternalErrorServer", types.INTERNAL_ERROR, "Internal error"),
)
DiscoverSessionErrorServer = ServerFake(
    "DiscoverSessionErrorServer",
    "speaks only the handshake era, and answers every 2026-07-28 request (server/discover included) with -32000 "
    "Bad Request: No valid session ID provided, as a streamable-HTTP server of an earlier SDK major answers a "
    "request outside an initialized session",
    _discover_refused(
        "DiscoverSessionErrorServer", types.CONNECTION_CLOSED, "Bad Request: No valid session ID provided"
    ),
)

BROKEN = types.Tool(
    name="broken", description="Answers without the result's required content.", input_schema=TEXT_SCHEMA
)
"""EraViolatorServer's tool whose every answer lacks ``content``."""


def _era_violator() -> FakeServer:
    async def violate(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "tools/call" and params.get("name") == BROKEN.name:
            fake.log.append("tools/call broken: answered without content")
            # Short-circuited: the SDK's own result model would refuse to leave out a required field.
            return {"isError": False} | ({"resultType": "complete"} if is_modern(ctx) else {})
        return await call_next(ctx)

    fake = FakeServer("EraViolatorServer", lambda: [ECHO, BROKEN], {"echo": echo})
    fake.server.middleware.insert(0, violate)
    return fake


EraViolatorServer = ServerFake(
    "EraViolatorServer",
    "opens in the era asked for (initialize or server/discover answered), then answers every `broken` call with a "
    "result missing its required `content`; `echo` answers well",
    _era_violator,
)

NON_JSON_LINE = "Weather server v2 starting... ready to serve!"
"""What NonJsonServer writes to stdout for every line it reads."""


def _non_json_stdio() -> None:
    # Not an SDK server: it reads each request and answers it with a log line, never JSON-RPC.
    for _ in sys.stdin:
        sys.stdout.write(NON_JSON_LINE + "\n")
        sys.stdout.flush()


def _non_json() -> FakeServer:
    # In-process there is no stdout to write to: the entry exists to be served over stdio.
    return FakeServer("NonJsonServer", lambda: [ECHO], {"echo": echo})


NonJsonServer = ServerFake(
    "NonJsonServer",
    "stdio only: answers every line it reads with a log line on stdout, never JSON-RPC",
    _non_json,
    transports=("stdio",),
    stdio_main=_non_json_stdio,
)

CRASH_MESSAGE = "fatal: WEATHER_API_KEY is not set"
"""What CrashesAtStartServer writes to stderr before it exits (unless ``CRASH_MESSAGE_ENV`` names another line)."""

CRASH_MESSAGE_ENV = "TOOLPROOF_FAKE_CRASH_MESSAGE"
"""The environment variable (given through the server's configured env) whose value CrashesAtStartServer writes
instead of ``CRASH_MESSAGE``: one server saying different things at different starts."""

CRASH_STATUS = 3
"""CrashesAtStartServer's exit status."""


def _crashes_at_start_stdio() -> None:
    sys.stderr.write("loading configuration\n" + os.environ.get(CRASH_MESSAGE_ENV, CRASH_MESSAGE) + "\n")
    sys.stderr.flush()
    raise SystemExit(CRASH_STATUS)


CrashesAtStartServer = ServerFake(
    "CrashesAtStartServer",
    f"stdio only: writes a fatal line to stderr and exits with status {CRASH_STATUS} before reading a request",
    lambda: FakeServer("CrashesAtStartServer", lambda: [ECHO], {"echo": echo}),
    transports=("stdio",),
    stdio_main=_crashes_at_start_stdio,
)
