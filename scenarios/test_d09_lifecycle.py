"""Decision 9 around the connection's lifecycle: a notice a server sends while the client is still connecting.

D9.2 counts a notice sent before the adapter has listed anything as one entry like any other: some servers send one
right after initialize, and a 2026-07-28 server may lead a listen stream with one. Both eras; in-memory, over stdio
and over streamable HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from toolproof.fakes.mcp import http_server, stdio_command
from toolproof.spec import CatalogChangeKind, McpServerConfig, McpTransport

from ._harness import Harness
from ._mcp import ERAS, READ, memory, notified, of_kind

TRANSPORTS = ("memory", "stdio", "http")
"""Every transport an operator server may use."""


@asynccontextmanager
async def served(
    harness: Harness, server_id: str, fake: str, transport: str, protocol: str
) -> AsyncIterator[McpServerConfig]:
    """An operator server reaching the fake ``fake`` over ``transport`` in ``protocol``, for the block's duration."""
    if transport == "memory":
        config, _ = memory(harness, server_id, fake, protocol=protocol)
        yield config
        return
    if transport == "stdio":
        harness.log.append(f"mcp server {server_id}: {fake} over stdio, {protocol}")
        yield McpServerConfig(
            server_id=server_id,
            transport=McpTransport.STDIO,
            command=stdio_command(fake),
            classification=READ,
            protocol=protocol,
        )
        return
    async with http_server(fake) as url:
        harness.log.append(f"mcp server {server_id}: {fake} over HTTP at {url}, {protocol}")
        yield McpServerConfig(
            server_id=server_id, transport=McpTransport.HTTP, url=url, classification=READ, protocol=protocol
        )


async def _early_notice(harness: Harness, transport: str, protocol: str) -> None:
    async with (
        served(harness, "early", "EarlyNoticeServer", transport, protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        recorded = await notified(session, "early")
        harness.expect(
            "D9.2",
            recorded,
            f"the tools/list_changed EarlyNoticeServer sent as the {transport} connection started ({protocol}) "
            "was not recorded in the catalog history",
        )
        # A round trip through the pipeline and the server: a second record of the one notice would be in by now.
        harness.success("D9.2", await session.call("mcp.early.echo", {"text": "after"}), "mcp.early.echo")
        notices = of_kind(await session.catalog_history(), CatalogChangeKind.NOTIFIED, "early")
    harness.expect(
        "D9.2",
        len(notices) == 1,
        f"EarlyNoticeServer sent one tools/list_changed over {transport} ({protocol}); the catalog history "
        f"recorded {len(notices)} notified entries",
    )


@pytest.mark.rules("D9.2")
@pytest.mark.parametrize("protocol", ERAS)
async def test_list_changed_sent_while_connecting_is_recorded_once(harness: Harness, protocol: str) -> None:
    await _early_notice(harness, "memory", protocol)


@pytest.mark.rules("D9.2")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_list_changed_sent_while_connecting_over_real_transports(
    harness: Harness, transport: str, protocol: str
) -> None:
    await _early_notice(harness, transport, protocol)
