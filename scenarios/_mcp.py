"""What MCP scenarios share: hostile fakes as configured servers, classifications, bounded waits."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolproof.fakes.mcp import SERVERS, FakeServer, http_server, stdio_command
from toolproof.spec import (
    CatalogChange,
    CatalogChangeKind,
    IdempotencyClass,
    McpClassification,
    McpServerConfig,
    McpTransport,
    Risk,
    SideEffect,
    definition_sha256,
)

from ._bounds import bound
from ._harness import Harness, Session

ERAS = ("legacy", "2026-07-28")
"""Both protocol eras the adapter must speak."""

READ = McpClassification(side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT)
"""An operator classification under which calls run without approval."""
WRITE = McpClassification(
    side_effect=SideEffect.EXTERNAL_WRITE,
    risk=Risk.HIGH,
    idempotency=IdempotencyClass.NON_IDEMPOTENT,
    required_scopes=frozenset({"files:delete"}),
)
"""An operator classification that says a server's tools write, without an idempotency guarantee."""

DEFAULT_NAMES = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
"""Names on the MCP SDK's default list, which a stdio server inherits from the worker unless its env names them."""


def configured_defaults(directory: Path) -> dict[str, str]:
    """An operator's own value for every name of ``DEFAULT_NAMES`` (each unlike any worker's)."""
    home = str((directory / "server-home").resolve())
    return {
        "HOME": home,
        "LOGNAME": "toolproof-operator",
        "PATH": os.pathsep.join([home, os.environ.get("PATH", os.defpath)]),
        "SHELL": "/bin/toolproof-shell",
        "TERM": "toolproof-term",
        "USER": "toolproof-operator",
    }


CAP_S = 60.0
"""D7.6's limit: reconnect attempts at most this many instance-clock seconds apart; a need exactly this long after the
last attempt (or the loss) is due one (inclusive)."""

DOWN_SCHEDULE = (*([61.0] * 8), 59.5, 0.5, 60.0, 60.0, 30.0, 30.0, 60.0)
"""Instance-clock seconds between the needs while the server stays down: eight 61 s apart (past the point where a
doubling backoff passes 60 s, and where 10% on top of a 60 s cap would), then both sides of the boundary: 59.5 s
(not due yet: an attempt is allowed, not required), then exactly 60.0 s after the last attempt (due), and needs
exactly 60 s apart."""


BOUND_S = 10.0
"""How long a scenario waits for something before judging it missing, on an idle machine (a bound, never a timing
claim; ``_bounds.bound`` scales it with the load): a notification in flight, a lost connection noticed, a restarted
server used again; a right pipeline takes milliseconds, or one start of a fake (about 1.5 s idle)."""

ATTEMPT_BOUND_S = 3.0
"""How long a due need waits for its reconnect attempt to be recorded, on an idle machine: one start of a server kept
down, which exits before importing anything (``stdio_command(down_while=…)``), in tens of milliseconds (a bound,
never a timing claim; ``bound`` scales it; shorter than ``BOUND_S`` because a pipeline that makes no attempt waits it
out at every due need of the outage)."""


def memory(
    harness: Harness,
    server_id: str,
    fake: str,
    *,
    classification: McpClassification | None = READ,
    protocol: str = "legacy",
    built: FakeServer | None = None,
    **fields: Any,
) -> tuple[McpServerConfig, FakeServer]:
    """An operator server reaching the hostile fake ``fake`` in-process, and the fake (to read its log).

    ``built``: a fake of that name already built with options of its own (``ttl_drift_server(5000)``, say); None:
    a fresh one from the registry.
    """
    built = SERVERS[fake].build() if built is None else built
    config = McpServerConfig(
        server_id=server_id,
        transport=McpTransport.MEMORY,
        server=built.server,
        classification=classification,
        protocol=protocol,
        **fields,
    )
    harness.log.append(
        f"mcp server {server_id}: {fake} in-process, {protocol}, "
        f"classification={'none' if classification is None else classification.model_dump(mode='json')} {fields}"
    )
    return config, built


TRANSPORTS = ("memory", "stdio", "http")
"""Every way the adapter reaches a server; the subprocess ones are marked slow where a scenario sweeps them."""


def transport_params() -> list[object]:
    """``TRANSPORTS`` for ``parametrize``: in-memory as is, the subprocess transports marked slow."""
    return [t if t == "memory" else pytest.param(t, marks=pytest.mark.slow) for t in TRANSPORTS]


@contextlib.asynccontextmanager
async def reached(
    harness: Harness,
    server_id: str,
    fake: str,
    transport: str,
    *,
    classification: McpClassification | None = READ,
    protocol: str = "legacy",
    **fields: Any,
) -> AsyncIterator[McpServerConfig]:
    """An operator server reaching the fake ``fake`` over ``transport`` (one of ``TRANSPORTS``), for the block."""
    if transport == "memory":
        yield memory(harness, server_id, fake, classification=classification, protocol=protocol, **fields)[0]
        return
    common: dict[str, Any] = {"server_id": server_id, "classification": classification, "protocol": protocol}
    harness.log.append(f"mcp server {server_id}: {fake} over {transport}, {protocol} {fields}")
    if transport == "stdio":
        yield McpServerConfig(transport=McpTransport.STDIO, command=stdio_command(fake), **common, **fields)
        return
    async with http_server(fake) as url:
        yield McpServerConfig(transport=McpTransport.HTTP, url=url, **common, **fields)


def wire_hashes(fake: FakeServer) -> dict[str, str]:
    """Remote name -> decision 9's hash, of the fake's catalog as it stands."""
    return {
        t.name: definition_sha256(t.model_dump(by_alias=True, exclude_none=True, mode="json"))
        for t in fake.list_tools()
    }


def of_kind(history: list[CatalogChange], kind: CatalogChangeKind, server_id: str) -> list[CatalogChange]:
    """History entries of one kind and server."""
    return [c for c in history if c.kind is kind and c.server_id == server_id]


async def eventually(harness: Harness, check: Callable[[], Awaitable[bool]], what: str) -> bool:
    """Whether ``check`` holds within ``bound(BOUND_S)`` (polled): a notification travels on its own channel."""
    # Polling, not an event: the implementation is behind the port and signals nothing.
    with anyio.move_on_after(bound(harness, BOUND_S, what)):
        for _ in itertools.count():
            if await check():
                return True
            await anyio.sleep(0.02)
    return await check()


async def notified(session: Session, server_id: str) -> bool:
    """Whether the implementation recorded a tools/list_changed from ``server_id`` (waiting up to the bound)."""

    async def seen() -> bool:
        return bool(of_kind(await session.instance.catalog_history(), CatalogChangeKind.NOTIFIED, server_id))

    return await eventually(session.harness, seen, f"a tools/list_changed from {server_id} to be recorded")
