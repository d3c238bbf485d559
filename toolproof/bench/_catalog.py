"""Hostile scale in ``toolproof bench``: a 10,000-tool MCP catalog through the reference MCP adapter.

An in-process low-level MCP server (the SDK's ``Server``, configured as an operator's server on
the memory transport) lists the catalog; the reference ``McpAdapter`` lists it, normalizes every
remote name (decision 5), hashes every definition and records the catalog history in its store
(decision 9). A session then pins the catalog, the server changes it (a list_changed of the same
size), and the adapter lists it again, records the differences and the pin is checked against it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from toolproof.fakes import FakeClock
from toolproof.reference.hooks import McpAdapter, Store
from toolproof.spec import (
    Advertisement,
    CatalogChangeKind,
    HarnessError,
    IdempotencyClass,
    InstanceConfig,
    McpClassification,
    McpServerConfig,
    McpTransport,
    Risk,
    SideEffect,
)

METHOD = (
    "the reference McpAdapter over an in-process low-level MCP server (memory transport): list through the "
    "SDK, normalize, hash, register and record history; a session pin; then a same-size list_changed re-listed, "
    "recorded and checked against the pin"
)
"""How the figure is labelled wherever it is shown."""

SERVER_ID = "bench"
"""The operator's server_id, the prefix of every registered name."""

_READ = McpClassification(side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT)


def definitions(size: int, revision: int = 0) -> list[dict[str, Any]]:
    """``size`` MCP tool definitions in wire form (``name``, ``description``, ``inputSchema``).

    Revision 1 is a list_changed of the same size: every 100th tool reworded, every 200th
    withdrawn and as many new ones added.
    """
    result: list[dict[str, Any]] = []
    withdrawn = 0
    for index in range(size):
        if revision and index % 200 == 199:
            withdrawn += 1
            continue
        reworded = revision and index % 100 == 0
        result.append(_definition(f"tool_{index:05d}", "now also deletes" if reworded else "reads one record"))
    result.extend(_definition(f"added_{index:05d}", "a newcomer") for index in range(withdrawn))
    return result


def _definition(name: str, summary: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name}: {summary}",
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["id"],
            "additionalProperties": False,
        },
    }


class CatalogServer:
    """A low-level MCP server whose ``tools/list`` answers revision 0 or 1 of a ``size``-tool catalog.

    Args:
        size: Tools per revision.
    """

    def __init__(self, size: int) -> None:
        self.revision = 0
        self._catalogs = [[types.Tool.model_validate(d) for d in definitions(size, r)] for r in (0, 1)]
        self.server: Server[Any] = Server("CatalogServer", version="1.0.0", on_list_tools=self._list_tools)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._catalogs[self.revision])


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """What a list_changed changed against the session's pin (recorded, never applied to the session)."""

    added: int
    """Names the pin does not have."""
    withdrawn: int
    """Pinned names the new catalog lacks (they stay advertised and answer unavailable)."""
    changed: int
    """Pinned names whose definition hash differs."""


@dataclass(frozen=True, slots=True)
class CatalogSample:
    """One repetition, on a fresh store and connection."""

    list_s: float
    """The SDK alone: one ``tools/list`` of the catalog through the adapter's client."""
    register_s: float
    """The adapter's first refresh: list, normalize, hash, register, record the history."""
    advertise_s: float
    """A session starts: the adapter lists again and pins what it registered."""
    pin_check_s: float
    """After the list_changed: the adapter re-lists and records it, and the pin is compared with it."""
    registered: int
    """Tools the adapter registered from revision 0."""
    history: dict[str, int]
    """Catalog-history entries the list_changed refresh recorded, by kind."""
    change: CatalogChange


def _check(pin: Advertisement, current: dict[str, str]) -> CatalogChange:
    # What the adapter's resolve asks of each pinned name: still listed, and under the pinned hash?
    pinned = {tool.name: tool.definition_sha256 for tool in pin.tools}
    return CatalogChange(
        added=sum(1 for name in current if name not in pinned),
        withdrawn=sum(1 for name in pinned if name not in current),
        changed=sum(1 for name, sha in pinned.items() if name in current and current[name] != sha),
    )


async def _measure(directory: Path, size: int) -> CatalogSample:
    catalog = CatalogServer(size)
    server = McpServerConfig(
        server_id=SERVER_ID, transport=McpTransport.MEMORY, server=catalog.server, classification=_READ
    )
    config = InstanceConfig(store_dir=directory, workspace=directory, mcp_servers=[server])
    store = Store.in_directory(directory)
    try:
        adapter = McpAdapter(config, store, FakeClock())
        async with adapter.running():
            link = adapter.links[SERVER_ID]
            started = time.perf_counter()
            await link.client.list_tools()
            list_s = time.perf_counter() - started

            started = time.perf_counter()
            await adapter.refresh(link)
            register_s = time.perf_counter() - started
            registered = len(link.catalog)

            started = time.perf_counter()
            pin = await adapter.advertise("bench-session")
            advertise_s = time.perf_counter() - started

            catalog.revision = 1
            seen = len(store.catalog_history(SERVER_ID))
            started = time.perf_counter()
            await adapter.refresh(link)
            current = {name: entry.sha256 for name, entry in link.catalog.items()}
            after = await adapter.advertise("bench-session")
            change = _check(after, current)
            pin_check_s = time.perf_counter() - started
        recorded = store.catalog_history(SERVER_ID)[seen:]
    finally:
        store.close()
    if after != pin:
        raise HarnessError("bench catalog: the session's pin moved with the list_changed; the figure would lie")
    history = {kind.value: sum(1 for r in recorded if r.kind == kind.value) for kind in CatalogChangeKind}
    return CatalogSample(
        list_s=list_s,
        register_s=register_s,
        advertise_s=advertise_s,
        pin_check_s=pin_check_s,
        registered=registered,
        history={kind: count for kind, count in history.items() if count},
        change=change,
    )


def measure_catalog(directory: Path, size: int) -> CatalogSample:
    """One repetition of section 5 in a fresh store under ``directory``, in its own event loop."""
    directory.mkdir(parents=True, exist_ok=True)
    return anyio.run(_measure, directory, size)
