"""The MCP adapter's catalog layer (decisions 5, 9): names, the definition hash, and the recorded history.

Every listing is compared with the last catalog recorded and every difference (added, changed,
withdrawn, dropped, notified) is appended to the store's history; nothing here changes what a
session already pinned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.spec import (
    READ_RESOURCE,
    CatalogChange,
    CatalogChangeKind,
    Clock,
    InstanceConfig,
    JsonObject,
    definition_sha256,
    normalize_remote_name,
    replay_history,
)

from ._mcp_connection import Link, McpConnections, RemoteTool
from ._store import Store
from ._tables import CatalogHistoryTable

READ_RESOURCE_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"uri": {"type": "string"}},
    "required": ["uri"],
    "additionalProperties": False,
}
"""Input schema of the synthetic per-server read tool (decision 8)."""


def wire(tool: types.Tool) -> dict[str, Any]:
    """A tool definition's wire form, as decision 9's hash reads it."""
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


class McpCatalog(McpConnections):
    """Lists each server's catalog and records how it drifts."""

    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        # server_id -> whether its last listing found a resource or template (D8.9); read by ``register``.
        self._lists_resources: dict[str, bool] = {}

    async def lists_resources(self, link: Link) -> bool:
        """D8.9: whether the server lists at least one resource or resource template now.

        Answering resources/list is not having resources: SDK servers answer it with nothing.
        """
        if not link.resources:
            return False  # It did not answer resources/list at connect: it has no resources surface.
        cursor: str | None = None
        try:
            while True:
                resources = await link.client.list_resources(cursor=cursor)
                if resources.resources:
                    return True
                if not (cursor := resources.next_cursor):
                    break
            while True:  # Templates are optional: a server may answer resources/list and not this.
                templates = await link.client.list_resource_templates(cursor=cursor)
                if templates.resource_templates:
                    return True
                if not (cursor := templates.next_cursor):
                    break
        except MCPError:
            pass
        return False

    async def notified(self, link: Link) -> None:
        """Decision 9: a tools/list_changed is recorded, and changes nothing a session sees."""
        self.record([self._change(link, CatalogChangeKind.NOTIFIED)])

    async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
        """A lost connection and every attempt to reconnect it are recorded in the catalog history."""
        self.record([self._change(link, kind)])

    def normalize(self, remote: str) -> str:
        """Decision 5's pinned normalization."""
        return normalize_remote_name(remote)

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        """Registered entries by name, and the remote names dropped because they normalize alike."""
        groups: dict[str, list[types.Tool]] = {}
        for tool in tools:
            groups.setdefault(link.prefix + self.normalize(tool.name), []).append(tool)
        synthetic = link.prefix + READ_RESOURCE
        if self._lists_resources.get(link.config.server_id, link.resources):
            groups.setdefault(synthetic, []).insert(0, self._read_resource_definition(synthetic))
        registered: dict[str, RemoteTool] = {}
        dropped: set[str] = set()
        for name, group in groups.items():
            if len(group) > 1:
                dropped.update(t.name for t in group if t.name != synthetic)
                if group[0].name != synthetic:
                    continue
            chosen = group[0]
            remote = None if chosen.name == synthetic else chosen.name
            registered[name] = RemoteTool(name, remote, self.definition_hash(chosen), wire(chosen))
        return registered, dropped

    def definition_hash(self, tool: types.Tool) -> str:
        """Decision 9's hash of the tool's full definition."""
        return definition_sha256(wire(tool))

    @staticmethod
    def _read_resource_definition(name: str) -> types.Tool:
        return types.Tool(
            name=name, description="Reads one resource of this server by URI.", input_schema=READ_RESOURCE_SCHEMA
        )

    async def refresh(self, link: Link) -> None:
        """List the server's catalog now and record every difference from the last one recorded."""
        async with link.lock:
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:
                page = await link.client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            if not link.known:
                history = [self._public(r) for r in self.store.catalog_history(link.config.server_id)]
                previous = replay_history(history, up_to_seq=history[-1].seq if history else 0)
                link.catalog = {n: RemoteTool(n, None, sha, {}) for n, sha in previous.items()}
                link.known = True
            listed = await self.lists_resources(link)
            self._lists_resources[link.config.server_id] = listed
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

    def _change(
        self,
        link: Link,
        kind: CatalogChangeKind,
        remote: str | None = None,
        name: str | None = None,
        sha: str | None = None,
    ) -> CatalogHistoryTable:
        return CatalogHistoryTable(
            server_id=link.config.server_id,
            kind=kind.value,
            observed_at=self.clock.now(),
            remote_name=remote,
            registered_name=name,
            definition_sha256=sha,
        )

    def record(self, changes: list[CatalogHistoryTable]) -> None:
        """Append ``changes`` to the catalog history."""
        self.store.record_catalog(changes)

    @staticmethod
    def _public(row: CatalogHistoryTable) -> CatalogChange:
        return CatalogChange(
            seq=row.seq or 0,
            server_id=row.server_id,
            kind=CatalogChangeKind(row.kind),
            observed_at=row.observed_at,
            remote_name=row.remote_name,
            registered_name=row.registered_name,
            definition_sha256=row.definition_sha256,
        )

    def history(self) -> list[CatalogChange]:
        """The whole catalog history."""
        return [self._public(r) for r in self.store.catalog_history()]
