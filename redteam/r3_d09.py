"""Round 3, decision 9: a changed or withdrawn pinned tool, and the definition hash."""

from __future__ import annotations

import hashlib
import json

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline, ReferenceImplementation, wire
from toolproof.spec import DEFINITION_FIELDS, Advertisement, ReasonCode, ToolSpec

from ._common import impl


class _ChangedAsWithdrawn(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        # The mistake: "no longer the tool we pinned" is one case, answered as withdrawn.
        return ReasonCode.TOOL_WITHDRAWN if found is ReasonCode.TOOL_DEFINITION_CHANGED else found


class _ChangedReportedAsWithdrawn(Pipeline):
    mcp_class = _ChangedAsWithdrawn


def changed_reported_as_withdrawn() -> ReferenceImplementation:
    """D9 (a tool whose definition changed mid-session answers unavailable with reason tool_definition_changed;
    D9.4): a pinned tool whose definition hash no longer matches is answered like a withdrawn one, reason
    tool_withdrawn."""
    return impl("r3-changed-reported-as-withdrawn", _ChangedReportedAsWithdrawn)


class _FilteringAdvertisement(McpAdapter):
    async def advertise(self, run_id: str) -> Advertisement:
        pinned = await super().advertise(run_id)
        if not pinned.tools:
            return pinned
        current: set[str] = set()
        for link in self.links.values():
            try:
                await self.refresh(link)
            except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                current.update(link.catalog)
                continue
            current.update(link.catalog)
        # The mistake: the pin is filtered by the live catalog "so the model is not offered a tool that is gone".
        return pinned.model_copy(update={"tools": [t for t in pinned.tools if t.name in current]})


class _WithdrawnDroppedFromAdvertisement(Pipeline):
    mcp_class = _FilteringAdvertisement


def withdrawn_dropped_from_advertisement() -> ReferenceImplementation:
    """D9 (a withdrawn tool stays advertised and answers unavailable at call time; D9.3): the session's
    advertisement is filtered by the server's current catalog, so a tool withdrawn mid-session disappears from what
    the session advertises (calls to it still answer tool_withdrawn)."""
    return impl("r3-withdrawn-dropped-from-advertisement", _WithdrawnDroppedFromAdvertisement)


class _OrderSensitiveHash(McpAdapter):
    def definition_hash(self, tool: types.Tool) -> str:
        definition = wire(tool)
        picked = {k: definition.get(k) for k in DEFINITION_FIELDS}
        # The mistake: the definition is serialized as received, without sorting keys.
        return hashlib.sha256(json.dumps(picked).encode()).hexdigest()


class _DefinitionHashKeyOrder(Pipeline):
    mcp_class = _OrderSensitiveHash


def definition_hash_key_order_sensitive() -> ReferenceImplementation:
    """D9 (a session pins a hash of each tool's full definition, and only a changed definition is refused; D9.4):
    the hash is taken over the definition serialized in the order the server sent its keys, so a server that lists
    the same tool with its inputSchema properties in another order makes an unchanged tool answer
    tool_definition_changed."""
    return impl("r3-definition-hash-key-order-sensitive", _DefinitionHashKeyOrder)


class _LegacyNoticesOnly(McpAdapter):
    async def _listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # The mistake: tools/list_changed is handled where the handshake era delivers it (the connection's message
        # handler) only; the 2026-07-28 listen subscription, that era's only route, is never opened.
        task_status.started()


class _ListenNoticesNotRecorded(Pipeline):
    mcp_class = _LegacyNoticesOnly


def listen_notices_not_recorded() -> ReferenceImplementation:
    """D9 (a tools/list_changed notification is recorded in the catalog history; D9.2): notifications are taken
    from the connection's message handler only, so on a 2026-07-28 connection, where list_changed arrives on a
    subscriptions/listen stream, no notice is ever recorded."""
    return impl("r3-listen-notices-not-recorded", _ListenNoticesNotRecorded)
