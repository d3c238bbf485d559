"""Round 2, decision 9: catalog listing, the definition hash, and drift."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp_types as types

from toolproof.reference.hooks import (
    CatalogHistoryTable,
    Link,
    McpAdapter,
    Pipeline,
    ReferenceImplementation,
    RemoteTool,
)
from toolproof.spec import CatalogChangeKind, replay_history

from ._common import impl


class _FirstPageOnly(McpAdapter):
    async def refresh(self, link: Link) -> None:
        async with link.lock:
            # The mistake: one tools/list request, its next_cursor ignored ("catalogs are small").
            tools: list[types.Tool] = list((await link.client.list_tools()).tools)
            if not link.known:
                history = [self._public(r) for r in self.store.catalog_history(link.config.server_id)]
                previous = replay_history(history, up_to_seq=history[-1].seq if history else 0)
                link.catalog = {n: RemoteTool(n, None, sha, {}) for n, sha in previous.items()}
                link.known = True
            registered, dropped = self.register(link, tools)
            changes: list[CatalogHistoryTable] = []
            for remote in sorted(dropped - link.dropped):
                changes.append(
                    self._change(link, CatalogChangeKind.DROPPED, remote, link.prefix + self.normalize(remote))
                )
            for name, entry in registered.items():
                before = link.catalog.get(name)
                if before is None or before.sha256 != entry.sha256:
                    kind = CatalogChangeKind.ADDED if before is None else CatalogChangeKind.CHANGED
                    changes.append(self._change(link, kind, entry.remote_name, name, entry.sha256))
            for name, before in link.catalog.items():
                if name not in registered:
                    changes.append(self._change(link, CatalogChangeKind.WITHDRAWN, before.remote_name, name))
            self.record(changes)
            link.catalog, link.dropped = registered, dropped


class _FirstPagePipeline(Pipeline):
    mcp_class = _FirstPageOnly


def catalog_first_page_only() -> ReferenceImplementation:
    """D9 / D18 (pins plus catalog history answer what a session advertised; a new session sees the current
    catalog): the adapter reads only the first page of tools/list and ignores next_cursor, so tools a server lists
    on later pages are never registered, advertised or recorded (and look withdrawn if they move there)."""
    return impl("r2-d09-catalog-first-page-only", _FirstPagePipeline)


_HASHED_2025_03 = ("name", "description", "inputSchema", "annotations")


class _OlderFieldSet(McpAdapter):
    def definition_hash(self, tool: types.Tool) -> str:
        definition: dict[str, Any] = wire_form(tool)
        # The mistake: the hash covers the definition fields of the 2025-03 protocol; title and outputSchema
        # (added later) are left out.
        picked = {k: definition.get(k) for k in _HASHED_2025_03}
        return hashlib.sha256(
            json.dumps(picked, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        ).hexdigest()


def wire_form(tool: types.Tool) -> dict[str, Any]:
    from toolproof.reference.hooks import wire

    return wire(tool)


class _OlderFieldSetPipeline(Pipeline):
    mcp_class = _OlderFieldSet


def definition_hash_older_field_set() -> ReferenceImplementation:
    """D9 "hash of each tool's full definition" (ADR-0020's pinned advertisement): the hash covers name,
    description, inputSchema and annotations, the 2025-03 field set, but not title or outputSchema, so a tool whose
    outputSchema or title changes mid-session is neither recorded as changed nor answered tool_definition_changed."""
    return impl("r2-d09-definition-hash-older-fields", _OlderFieldSetPipeline)
