"""What MCP scenarios share: hostile fakes as configured servers, classifications, bounded waits."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

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

BOUND_S = 60.0
"""How long a scenario waits for something before judging it missing (a bound, never a timing claim)."""


def memory(
    harness: Harness,
    server_id: str,
    fake: str,
    *,
    classification: McpClassification | None = READ,
    protocol: str = "legacy",
    **fields: Any,
) -> tuple[McpServerConfig, FakeServer]:
    """An operator server reaching the hostile fake ``fake`` in-process, and the fake (to read its log)."""
    built = SERVERS[fake].build()
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


async def eventually(check: Callable[[], Awaitable[bool]]) -> bool:
    """Whether ``check`` holds within ``BOUND_S`` (polled): a notification travels on its own channel."""
    # Polling, not an event: the implementation is behind the port and signals nothing.
    interval = 0.02
    for _ in range(int(BOUND_S / interval)):
        if await check():
            return True
        await anyio.sleep(interval)
    return await check()


async def notified(session: Session, server_id: str) -> bool:
    """Whether the implementation recorded a tools/list_changed from ``server_id`` (waiting up to the bound)."""

    async def seen() -> bool:
        return bool(of_kind(await session.instance.catalog_history(), CatalogChangeKind.NOTIFIED, server_id))

    return await eventually(seen)
