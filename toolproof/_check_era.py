"""One protocol era of ``toolproof check-server``: connect through the reference's adapter, list, probe, list again.

Each era is one connection made by the reference's own ``McpAdapter`` (``toolproof.reference.hooks``),
with the operator's classification, era, timeout and cap. The only addition is a tap on the
transport: every message the server sends is read on its way to the adapter, unchanged, so the
notifications and the requests the adapter declines can be counted. Nothing extra is advertised
(no sampling, roots or elicitation callback), exactly as the reference connects.

What is sent to the server: the adapter's own connect and listings (two; ``advertise`` of two
sessions), one ``tools/list``, ``prompts/list``, ``resources/list`` and ``resources/templates/list``
for the raw view, and one ``tools/call`` of a name the server did not list (its error shape). A
listed tool is called only when the user names it (``--call``): a tool's call may have effects,
and only the user knows which of them are safe.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, cast

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.reference.hooks import McpAdapter, Store
from toolproof.reports import CallObservation, EraCheck, ErrorShape, ListedPrompt, ListedTool
from toolproof.spec import CanonicalJsonError, CatalogChangeKind, InstanceConfig, McpServerConfig, McpTransport

from ._check_call import Call, call_listed_tool
from ._check_findings import era_findings
from ._check_tap import Tap, TappedTransport
from ._check_text import failure_line, shown

UNLISTED_TOOL = "toolproof_check_unlisted_tool"
"""The name of the one ``tools/call`` sent without the user asking: a tool the server did not list."""
ERA_WAITS = 6
"""One era's check may take this many request waits (connect, listings, probes), plus one per ``--call``."""
FIRST_RUN, SECOND_RUN = "check-listing-1", "check-listing-2"
"""The two sessions whose advertisements are the two consecutive listings."""

Progress = Callable[[str], None]


class _WallClock:
    def now(self) -> float:
        return time.time()


def _probe_config(server: McpServerConfig, era: str, transport: TappedTransport, wait_s: float) -> McpServerConfig:
    # The tapped transport reaches the SDK as an object; everything the adapter reads stays the operator's.
    return McpServerConfig(
        server_id=server.server_id,
        transport=McpTransport.MEMORY,
        server=transport,
        classification=server.classification,
        protocol=cast(Any, era),
        call_timeout_s=min(server.call_timeout_s, wait_s),
        max_output_bytes=server.max_output_bytes,
        listing_max_age_s=server.listing_max_age_s,
    )


class _CheckAdapter(McpAdapter):
    """The reference's adapter, its open errors worded for the server as configured (stdio or HTTP), not for the
    tapped transport it reaches it through: a server that exits at start reads as it does in serve-reference."""

    def __init__(self, config: InstanceConfig, store: Store, configured: McpServerConfig) -> None:
        super().__init__(config, store, _WallClock())
        self.configured = configured

    def open_error(self, opening: Any, exc: BaseException) -> Any:
        probed = opening.server  # The era tried, and the wait capped by --timeout, stay the check's own.
        opening.server = self.configured.model_copy(
            update={"protocol": probed.protocol, "call_timeout_s": probed.call_timeout_s}
        )
        return super().open_error(opening, exc)


class _EraRun:
    """Everything seen on one era's connection, filled in as the check goes."""

    def __init__(self, era: str) -> None:
        self.era = era
        self.facts: dict[str, Any] = {"era": era, "connected": False, "failure": None}

    def result(self, tap: Tap) -> EraCheck:
        return EraCheck(
            **self.facts,
            notifications=dict(tap.notifications),
            requests=tap.requests,
            malformed=tap.malformed,
        )


async def _all_pages(method: Callable[..., Any], attribute: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = await method(cursor=cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            return items


async def _raw_listing(adapter: McpAdapter, run: _EraRun, server_id: str) -> list[types.Tool]:
    link = adapter.links[server_id]
    client = link.client
    run.facts |= {
        "connected": True,
        "protocol_version": client.protocol_version,
        "server_name": client.server_info.name if client.server_info else None,
        "server_version": client.server_info.version if client.server_info else None,
        "capabilities": sorted(client.server_capabilities.model_dump(by_alias=True, exclude_none=True)),
    }
    tools: list[types.Tool] = await _all_pages(client.list_tools, "tools")
    if link.prompts:
        run.facts["prompts"] = [
            ListedPrompt(name=p.name, skill_name=None) for p in await _all_pages(client.list_prompts, "prompts")
        ]
    if link.resources:
        with contextlib.suppress(MCPError):
            run.facts["resources"] = len(await _all_pages(client.list_resources, "resources"))
        with contextlib.suppress(MCPError):
            run.facts["resource_templates"] = len(
                await _all_pages(client.list_resource_templates, "resource_templates")
            )
    return tools


def _hash_or_empty(adapter: McpAdapter, tool: types.Tool) -> str:
    try:
        return adapter.definition_hash(tool)
    except CanonicalJsonError:
        return ""  # No RFC 8785 form: the adapter dropped the tool (ListedTool.definition_sha256).


def _map_listing(
    adapter: McpAdapter, run: _EraRun, server_id: str, tools: Sequence[types.Tool], advertised: Any
) -> None:
    link = adapter.links[server_id]
    registered = {t.remote_name: t.name for t in advertised.tools if t.remote_name is not None}
    run.facts["tools"] = [
        ListedTool(
            remote_name=tool.name,
            registered_name=registered.get(tool.name),
            normalizes_to=link.prefix + adapter.normalize(tool.name),
            definition_sha256=_hash_or_empty(adapter, tool),
            annotations=tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
        )
        for tool in tools
    ]
    run.facts["read_resource_tool"] = next((t.name for t in advertised.tools if t.remote_name is None), None)
    skills = {s.prompt_name: s.name for s in advertised.skills}
    run.facts["prompts"] = [
        ListedPrompt(name=p.name, skill_name=skills.get(p.name)) for p in run.facts.get("prompts", [])
    ]


async def _error_shape(adapter: McpAdapter, server_id: str, tap: Tap, listed: set[str]) -> ErrorShape:
    client = adapter.links[server_id].client
    name = UNLISTED_TOOL
    while name in listed:
        name += "_"
    tap.phase = "error probe"
    probe = "tools/call of an unlisted name"
    try:
        result = await client.call_tool(name, {})
    except MCPError as exc:
        return ErrorShape(probe=probe, shape="jsonrpc_error", code=exc.error.code, text=shown(exc.error.message))
    except Exception as exc:  # boundary: a server that breaks on the probe is reported, not raised
        return ErrorShape(probe=probe, shape="no_answer", code=None, text=failure_line(exc))
    words = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return ErrorShape(
        probe=probe, shape="is_error_result" if result.is_error else "success", code=None, text=shown(words)
    )


async def check_era(
    server: McpServerConfig, era: str, calls: Sequence[Call], wait_s: float, errlog: IO[str], progress: Progress
) -> EraCheck:
    """Connect to ``server`` in ``era`` through the reference's adapter and record what it does."""
    tap = Tap()
    run = _EraRun(era)
    with tempfile.TemporaryDirectory(prefix="toolproof-check-") as folder:
        probe = _probe_config(server, era, TappedTransport(server, tap, errlog), wait_s)
        config = InstanceConfig(store_dir=Path(folder), workspace=Path(folder), mcp_servers=[probe])
        store = Store.in_directory(Path(folder))
        bound = wait_s * (ERA_WAITS + len(calls))
        try:
            with anyio.fail_after(bound):
                await _connected(_CheckAdapter(config, store, server), server, run, tap, calls, progress)
        except TimeoutError:
            run.facts["failure"] = (
                f"not finished within {bound:g} s ({ERA_WAITS} + {len(calls)} waits of --timeout {wait_s:g} s)"
            )
        except Exception as exc:  # boundary: whatever the server or the SDK raises is this era's failure
            run.facts["failure"] = failure_line(exc)
        finally:
            store.close()
    checked = run.result(tap)
    return checked.model_copy(update={"findings": era_findings(checked)})


async def _connected(
    adapter: McpAdapter,
    server: McpServerConfig,
    run: _EraRun,
    tap: Tap,
    calls: Sequence[Call],
    progress: Progress,
) -> None:
    server_id = server.server_id
    progress(f"era {run.era}: connecting")
    async with adapter.running():
        tap.phase = "listing 1"
        progress(f"era {run.era}: listing")
        tools = await _raw_listing(adapter, run, server_id)
        first = await adapter.advertise(FIRST_RUN)
        _map_listing(adapter, run, server_id, tools, first)
        registered = {t.remote_name: t.name for t in first.tools if t.remote_name is not None}
        run.facts["error_shapes"] = [await _error_shape(adapter, server_id, tap, {t.name for t in tools})]
        observed: list[CallObservation] = []
        run.facts["calls"] = observed
        for call in calls:
            tap.phase = f"call {call.remote_name}"
            progress(f"era {run.era}: calling {call.remote_name}")
            observed.append(await call_listed_tool(adapter, FIRST_RUN, server, call, registered))
        tap.phase = "listing 2"
        await adapter.advertise(SECOND_RUN)
        later = [c for c in adapter.history() if c.seq > first.as_of_seq]
        changes = [c for c in later if c.kind is not CatalogChangeKind.NOTIFIED]
        run.facts["drift"] = [f"{c.kind.value} {c.registered_name or c.remote_name or server_id}" for c in changes]
        lost = adapter.links[server_id].lost or any(c.kind is CatalogChangeKind.DISCONNECTED for c in later)
        catalog_changes = [c for c in changes if c.kind.value in ("added", "changed", "withdrawn", "dropped")]
        run.facts["listings_agree"] = None if lost and not catalog_changes else not catalog_changes
    progress(f"era {run.era}: done")
