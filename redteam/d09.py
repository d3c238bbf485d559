"""Decision 9: catalog changes are recorded, not applied mid-session."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from sqlalchemy import delete

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline, ReferenceImplementation
from toolproof.spec import CatalogChangeKind, ReasonCode, ToolSpec, definition_sha256

from ._common import impl


class _ApplyingAdapter(McpAdapter):
    async def notified(self, link: Link) -> None:
        await super().notified(link)
        # The mistake: on tools/list_changed the sessions are re-pinned so they see the new catalog.
        from toolproof.reference._tables import SessionPinTable

        with self.store.engine.begin() as connection:
            connection.execute(delete(SessionPinTable))


class _ApplyListChanged(Pipeline):
    mcp_class = _ApplyingAdapter


def list_changed_repins_sessions() -> ReferenceImplementation:
    """D9 "A catalog change is recorded and not applied mid-session": on tools/list_changed the notice is recorded
    and then every session pin is dropped, so the next advertise re-pins the changed catalog mid-session."""
    return impl("d09-list-changed-repins", _ApplyListChanged)


class _NoChangeCheck(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        await self.advertise(run_id)
        found = self.pinned(run_id, name)
        if found is None:
            return ReasonCode.UNKNOWN_TOOL
        link = found[1]._link
        try:
            await self.refresh(link)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            return ReasonCode.REMOTE_UNAVAILABLE
        if name not in link.catalog:
            return ReasonCode.TOOL_WITHDRAWN
        return found  # The mistake: only withdrawal is checked; a changed definition runs under the pin.


class _ChangedRuns(Pipeline):
    mcp_class = _NoChangeCheck


def changed_definition_still_runs() -> ReferenceImplementation:
    """D9 pinned advertisement: a tool whose definition changed mid-session still executes (only a withdrawn tool
    answers unavailable), so the session calls something it never advertised."""
    return impl("d09-changed-definition-runs", _ChangedRuns)


class _SchemaHash(McpAdapter):
    def definition_hash(self, tool: types.Tool) -> str:
        wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        # The mistake: only what affects calling (name and input schema) is hashed.
        return definition_sha256({"name": wire.get("name"), "inputSchema": wire.get("inputSchema")})


class _PartialHash(Pipeline):
    mcp_class = _SchemaHash


def hash_over_name_and_input_schema() -> ReferenceImplementation:
    """D9 "hash of each tool's full definition": the pinned hash covers only name and inputSchema, so a changed
    description/annotations (tool poisoning) is neither recorded as changed nor answered
    tool_definition_changed."""
    return impl("d09-hash-name-and-input-schema", _PartialHash)


class _WithdrawnUnknown(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is ReasonCode.TOOL_WITHDRAWN:
            return ReasonCode.UNKNOWN_TOOL  # The mistake: "it is not in the catalog, so it is unknown".
        return found


class _Withdrawn(Pipeline):
    mcp_class = _WithdrawnUnknown


def withdrawn_answers_unknown_tool() -> ReferenceImplementation:
    """D9 "a withdrawn tool stays advertised and returns unavailable at call time": a withdrawn tool is answered
    DENIED unknown_tool instead of UNAVAILABLE tool_withdrawn."""
    return impl("d09-withdrawn-answers-unknown", _Withdrawn)


class _NameOnlyHistory(McpAdapter):
    def record(self, changes: list[Any]) -> None:
        # The mistake: the history tracks membership; a changed hash is not a catalog change worth a row.
        super().record([c for c in changes if c.kind != CatalogChangeKind.CHANGED.value])


class _ChangesUnrecorded(Pipeline):
    mcp_class = _NameOnlyHistory


def changed_definitions_not_recorded() -> ReferenceImplementation:
    """D9 "A catalog change is recorded": the history records added/withdrawn/dropped/notified but not a changed
    definition, so an unannounced change never reaches the catalog history."""
    return impl("d09-changed-not-recorded", _ChangesUnrecorded)


class _StaleCatalog(McpAdapter):
    async def refresh(self, link: Link) -> None:
        if link.known:
            return  # The mistake: the catalog is listed once per connection and cached.
        await super().refresh(link)


class _Stale(Pipeline):
    mcp_class = _StaleCatalog


def catalog_listed_once() -> ReferenceImplementation:
    """D9 (new sessions see the current catalog; changes are recorded): the catalog is listed once per connection
    and cached, so a new session pins the stale catalog and unannounced changes are never recorded or detected."""
    return impl("d09-catalog-listed-once", _Stale)
