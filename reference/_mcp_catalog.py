"""The MCP adapter's catalog layer (decisions 5, 9): names, the definition hash, and the recorded history.

Every listing is compared with the last catalog recorded and every difference (added, changed,
withdrawn, dropped, notified) is appended to the store's history; nothing here changes what a
session already pinned.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.spec import (
    READ_RESOURCE,
    CanonicalJsonError,
    CatalogChange,
    CatalogChangeKind,
    Clock,
    InstanceConfig,
    JsonObject,
    definition_sha256,
    normalize_remote_name,
    replay_history,
)

from ._mcp_connection import McpConnections
from ._mcp_link import Link, RemoteTool
from ._store import Store
from ._tables import CatalogRow

READ_RESOURCE_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"uri": {"type": "string"}},
    "required": ["uri"],
    "additionalProperties": False,
}
"""Input schema of the synthetic per-server read tool (decision 8)."""


_paused = 0
"""How many listings are running with the cyclic collector paused (it is turned back on when the last ends)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (nested and concurrent blocks count).

    A listing of thousands of tools allocates hundreds of thousands of tracked objects, none of them cyclic
    garbage, and the collector would walk them hundreds of times; reference counting still frees everything.
    """
    global _paused
    if _paused == 0 and not gc.isenabled():
        yield  # Someone else turned it off: leave it as it is.
        return
    _paused += 1
    gc.disable()
    try:
        yield
    finally:
        _paused -= 1
        if _paused == 0:
            gc.enable()


@asynccontextmanager
async def collector_paused_async() -> AsyncIterator[None]:
    """``collector_paused`` for a block that awaits."""
    with collector_paused():
        yield


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
        """Decision 9: a tools/list_changed is recorded, and changes nothing a session sees.

        It makes the last listing stale first (D9.4), so once a notice is in the history no call reuses a listing
        from before it.
        """
        self.invalidate(link)
        self.record([self._change(link, CatalogChangeKind.NOTIFIED)])

    def invalidate(self, link: Link) -> None:
        """D9.4: no call may reuse the link's last listing, nor one in flight now; the next call lists again."""
        link.listed_at = None
        link.generation += 1

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        """D9.4: seconds a listing made of ``pages`` stays fresh for an idempotent read.

        The operator's ``listing_max_age_s``, shortened by the server's own ``ttlMs`` where its era sends one (the
        shortest of its pages); a server can shorten the age, never lengthen it. ``cacheScope`` changes nothing:
        a listing is only ever reused by this link, over the connection and credentials that listed it.
        """
        age = link.config.listing_max_age_s
        for page in pages:
            if "ttl_ms" in page.model_fields_set:
                age = min(age, page.ttl_ms / 1000.0)
        return age

    async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
        """A lost connection and every attempt to reconnect it are recorded in the catalog history."""
        self.record([self._change(link, kind)])

    def normalize(self, remote: str) -> str:
        """Decision 5's pinned normalization."""
        return normalize_remote_name(remote)

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        """Registered entries by name, and the remote names dropped: they normalize alike, or their definition has no
        RFC 8785 form to hash."""
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
            definition = wire(chosen)  # Dumped once: stored in the entry and hashed.
            try:
                sha = self.definition_hash(chosen, definition)
            except CanonicalJsonError:
                # No RFC 8785 form (an integer bound no double holds, say): no hash to pin, so not registered,
                # recorded dropped like a name that normalizes alike; the server's other tools stay usable.
                dropped.add(chosen.name)
                continue
            registered[name] = RemoteTool(name, remote, sha, definition)
        return registered, dropped

    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        """Decision 9's hash of the tool's full definition (``definition``: its wire form, when already dumped)."""
        return definition_sha256(wire(tool) if definition is None else definition)

    @staticmethod
    def _read_resource_definition(name: str) -> types.Tool:
        return types.Tool(
            name=name, description="Reads one resource of this server by URI.", input_schema=READ_RESOURCE_SCHEMA
        )

    async def refresh(self, link: Link) -> None:
        """List the server's catalog now and record every difference from the last one recorded."""
        # The collector is paused for the whole refresh: the listing and the entries built from it are hundreds of
        # thousands of objects, none of them cyclic garbage (see collector_paused).
        async with link.lock, collector_paused_async():
            generation, began = link.generation, self.clock.now()
            pages: list[types.ListToolsResult] = []
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:
                page = await link.client.list_tools(cursor=cursor)
                pages.append(page)
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
            changes: list[CatalogRow] = []
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
            if link.generation == generation:  # Invariant: no notice (nor loss) arrived while it listed.
                link.listed_at, link.fresh_for = began, self.fresh_for(link, pages)

    def _change(
        self,
        link: Link,
        kind: CatalogChangeKind,
        remote: str | None = None,
        name: str | None = None,
        sha: str | None = None,
    ) -> CatalogRow:
        return CatalogRow(
            server_id=link.config.server_id,
            kind=kind.value,
            observed_at=self.clock.now(),
            remote_name=remote,
            registered_name=name,
            definition_sha256=sha,
        )

    def record(self, changes: list[CatalogRow]) -> None:
        """Append ``changes`` to the catalog history."""
        self.store.record_catalog(changes)

    @staticmethod
    def _public(row: CatalogRow) -> CatalogChange:
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
