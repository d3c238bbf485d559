"""Hostile scale in ``toolproof bench``: a 10,000-tool MCP catalog through the reference MCP adapter.

An in-process low-level MCP server (the SDK's ``Server``, configured as an operator's server on
the memory transport) lists the catalog; the reference ``McpAdapter`` lists it, normalizes every
remote name (decision 5), hashes every definition and records the catalog history in its store
(decision 9). A session then pins the catalog, the server changes it (a list_changed of the same
size), and the adapter lists it again, records the differences and the pin is checked against it. Beside it,
``measure_calls`` times one tool called through a reference instance on a 10-tool and a 10,000-tool server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from toolproof.fakes import FakeClock
from toolproof.reference import ReferenceImplementation, ReferenceInstance
from toolproof.reference.hooks import McpAdapter, Store
from toolproof.spec import (
    Advertisement,
    CatalogChangeKind,
    ContextItem,
    HarnessError,
    IdempotencyClass,
    InstanceConfig,
    McpClassification,
    McpServerConfig,
    McpTransport,
    ProposedCall,
    Risk,
    SideEffect,
    StepRequest,
    Success,
    TrustLabel,
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
        self.server: Server[Any] = Server(
            "CatalogServer", version="1.0.0", on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._catalogs[self.revision])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # Every tool reads one record: the answer is the same work whatever the catalog's size.
        record = (params.arguments or {}).get("id")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}: record {record}")])


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


CALL_TOOL = "tool_00007"
"""The remote tool the per-call workload calls: listed by the 10-tool and the 10,000-tool server alike."""

CALL_METHOD = (
    "one IDEMPOTENT READ_ONLY MCP tool called through the fourteen steps of a reference instance, one call per step, "
    "on an in-process server (memory transport) of 10 tools and of 10,000, in alternating turns of 10 calls in one "
    "event loop; "
    "each instance's session is pinned in untimed warm-up calls; the instance clock does not move, so every read "
    "reuses the server's listing (D9.4), as reads within listing_max_age_s do; "
    "the MCP floor: the SDK's own Client.call_tool on a third 10-tool server over the memory transport, in the same "
    "turns, plus the floor pipeline's median builtin read of sections 1-4 (what the fourteen steps cost at least)"
)
"""How the per-call figure is labelled."""

_USER = ContextItem(id="user-1", trust=TrustLabel.USER, text="look it up")


@dataclass(frozen=True, slots=True)
class CallSample:
    """One interleaved repetition of the per-call workload."""

    small_ms: float
    """Per-call time on the 10-tool server."""
    large_ms: float
    """Per-call time on the large server."""
    sdk_ms: float
    """Per-call time of the SDK alone: ``Client.call_tool`` on another 10-tool server over the memory transport."""

    @property
    def ratio(self) -> float:
        """Large ÷ small."""
        return self.large_ms / self.small_ms


class _CallRig:
    """A reference instance whose one MCP server is a ``CatalogServer`` of ``size`` tools."""

    def __init__(self, directory: Path, size: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.catalog = CatalogServer(size)
        server = McpServerConfig(
            server_id=SERVER_ID, transport=McpTransport.MEMORY, server=self.catalog.server, classification=_READ
        )
        workspace = directory / "workspace"
        workspace.mkdir(exist_ok=True)
        self.config = InstanceConfig(store_dir=directory / "store", workspace=workspace, mcp_servers=[server])
        self.size = size
        self.step = 0

    async def calls(self, instance: ReferenceInstance, count: int) -> float:
        """Seconds for ``count`` one-call steps, one after another; every call must succeed."""
        requests = []
        for _ in range(count):
            self.step += 1
            call = ProposedCall(
                call_id="c", tool_name=f"mcp.{SERVER_ID}.{CALL_TOOL}", arguments={"id": f"record-{self.step}"}
            )
            requests.append(StepRequest(run_id="bench-calls", step_number=self.step, context=[_USER], calls=[call]))
        started = time.perf_counter()
        dispositions = [d for request in requests for d in await instance.submit(request)]
        seconds = time.perf_counter() - started
        for disposition in dispositions:
            if not isinstance(disposition, Success):
                raise HarnessError(
                    f"bench MCP calls ({self.size} tools): a call ended {disposition.status!r}; the figure would lie"
                )
        return seconds


class _SdkRig:
    """The MCP floor's first part: the SDK's own ``Client.call_tool`` on a server like the small rig's, no pipeline."""

    def __init__(self, size: int) -> None:
        self.catalog = CatalogServer(size)
        self.step = 0

    async def calls(self, client: Client, count: int) -> float:
        """Seconds for ``count`` calls, one after another; every call must answer without an error."""
        started = time.perf_counter()
        results = []
        for _ in range(count):
            self.step += 1
            results.append(await client.call_tool(CALL_TOOL, {"id": f"record-{self.step}"}))
        seconds = time.perf_counter() - started
        if any(result.is_error for result in results):
            raise HarnessError("bench MCP calls (the SDK alone): a call answered an error; the figure would lie")
        return seconds


CALL_CHUNK = 10
"""Calls per turn: a repetition alternates turns of the two servers, so a burst of load falls on both alike."""


async def _measure_calls(
    directory: Path, sizes: tuple[int, int], calls: int, warmup: int, repetitions: int
) -> list[CallSample]:
    small, large = (_CallRig(directory / f"calls-{size}", size) for size in sizes)
    sdk = _SdkRig(sizes[0])
    samples: list[CallSample] = []
    async with (
        ReferenceImplementation().open(small.config, [], FakeClock()) as small_instance,
        ReferenceImplementation().open(large.config, [], FakeClock()) as large_instance,
        Client(sdk.catalog.server) as client,
    ):
        rigs = ((small, small_instance), (large, large_instance))
        for rig, instance in rigs:
            await rig.calls(instance, warmup)  # The first step pins the session.
        await sdk.calls(client, warmup)
        for _ in range(repetitions):
            seconds = [0.0, 0.0, 0.0]
            for done in range(0, calls, CALL_CHUNK):
                chunk = min(CALL_CHUNK, calls - done)
                for index, (rig, instance) in enumerate(rigs):
                    seconds[index] += await rig.calls(instance, chunk)
                seconds[2] += await sdk.calls(client, chunk)
            per_call = [1000 * s / calls for s in seconds]
            samples.append(CallSample(small_ms=per_call[0], large_ms=per_call[1], sdk_ms=per_call[2]))
    return samples


def measure_calls(
    directory: Path, sizes: tuple[int, int], calls: int, warmup: int, repetitions: int
) -> list[CallSample]:
    """Per-call time of one MCP tool on a server of ``sizes[0]`` tools and of ``sizes[1]``, interleaved.

    Args:
        directory: Fresh folder for both instances' stores.
        sizes: Tools of the small and of the large server (each lists ``CALL_TOOL``).
        calls: Timed calls per repetition and server.
        warmup: Untimed calls per server first (the first pins the session).
        repetitions: Repetitions; each alternates turns of ``CALL_CHUNK`` calls on the small and the large server.
    """
    if min(sizes) <= int(CALL_TOOL.rsplit("_", 1)[1]):
        raise ValueError(f"sizes={sizes!r}: both servers must list {CALL_TOOL!r}; give each more than 7 tools")
    return anyio.run(_measure_calls, directory, sizes, calls, max(warmup, 1), repetitions)
