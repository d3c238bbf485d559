"""The reference MCP adapter (decisions 5-9): servers become pinned, operator-classified tools of the one pipeline.

The adapter never runs a call itself. It supplies a ``Tool`` for a pinned name and the
pipeline re-enters its one function with it; everything a server sends is data, never
classification, identity or trust.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from toolproof.spec import (
    READ_RESOURCE,
    AdvertisedTool,
    Advertisement,
    CatalogChange,
    CatalogChangeKind,
    Clock,
    ConfigurationError,
    ContentPart,
    InstanceConfig,
    JsonObject,
    McpClassification,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    SideEffect,
    Skill,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
    TrustLabel,
    definition_sha256,
    normalize_remote_name,
    replay_history,
)

from ._store import Store
from ._tables import CatalogHistoryTable, SessionPinTable

INPUT_REQUIRED_MAX_ROUNDS = 3
"""How many input-required rounds a call may take before it fails (every request in them is declined)."""
SESSION_MARKER = "session"
"""Pin row kind that records that a session started (so an empty advertisement is still a pin)."""

_READ_RESOURCE_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"uri": {"type": "string"}},
    "required": ["uri"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class RemoteTool:
    """One registered entry of a server's current catalog."""

    name: str
    """The registered name."""
    remote_name: str | None
    """None: the synthetic read_resource tool."""
    sha256: str
    definition: dict[str, Any]
    """The wire form (camelCase) of the remote definition."""


@dataclass
class Link:
    """One configured server: its connection and the adapter's view of its catalog."""

    config: McpServerConfig
    client: Client
    prefix: str
    catalog: dict[str, RemoteTool] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    known: bool = False
    """Whether ``catalog`` reflects the store's history yet."""
    resources: bool = False
    """Whether the server answers resources/list (then it gets the synthetic read tool)."""
    prompts: bool = False
    """Whether the server answers prompts/list (then its prompts become skills)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one leaf exception of nested single-member groups, or None."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup):
        if len(inner.exceptions) != 1:
            return None
        inner = inner.exceptions[0]
    return inner


async def _answers(method: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await method()
    except MCPError:
        return False
    return True


def wire(tool: types.Tool) -> dict[str, Any]:
    """A tool definition's wire form, as decision 9's hash reads it."""
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


class McpTool:
    """The ``Tool`` the pipeline executes for a pinned MCP name: one remote call, bounded in size."""

    def __init__(self, adapter: McpAdapter, link: Link, remote_name: str | None, spec: ToolSpec) -> None:
        self._adapter = adapter
        self._link = link
        self._remote_name = remote_name
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        """The pinned spec."""
        return self._spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Send the call; a remote error is a ToolFailure whose text is only ever external detail."""
        if self._spec.side_effect is not SideEffect.READ_ONLY:
            await context.mark_effect_sent()
        try:
            if self._remote_name is None:
                return self._adapter.from_resource(
                    self._link, await self._link.client.read_resource(str(arguments["uri"]))
                )
            result = await self._link.client.call_tool(self._remote_name, dict(arguments))
        except MCPError as exc:
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=exc.error.message))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError) as exc:
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))
        except RuntimeError as exc:  # The SDK's own checks: input-required rounds, output-schema mismatch.
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=str(exc)))
        return self._adapter.from_result(self._link, self._spec, result)


class McpAdapter:
    """Connects the configured servers, keeps catalog history and session pins, and resolves ``mcp.*`` names.

    Witnesses subclass it and override one hook (``prefix``, ``normalize``, ``register``,
    ``definition_hash``, ``classify``, ``spec_for``, ``client_options``, ``notified``,
    ``prefetch``, ``skills``, ``output_cap``, ``check``...).
    """

    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.links: dict[str, Link] = {}
        self._specs: dict[tuple[str, str], ToolSpec] = {}
        self.check(config)

    # -- configuration (decision 7) --------------------------------------------------------

    def check(self, config: InstanceConfig) -> None:
        """Refuse a configuration decision 7 forbids, naming the rule."""
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            if server.origin is not McpOrigin.TENANT:
                continue
            if server.transport is not McpTransport.HTTP:
                raise ConfigurationError(
                    f"tenant MCP server {server.server_id!r} uses {server.transport.value}: "
                    "tenant servers must use HTTP (D7.1)"
                )
            host = urlsplit(server.url or "").hostname
            if host not in config.egress_allowlist:
                raise ConfigurationError(
                    f"tenant MCP server {server.server_id!r} is on host {host!r}, "
                    "which is not on the egress allowlist (D7.2)"
                )

    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        """``mcp.Client`` options over the defaults: none, so sampling and roots are never advertised (decision 8)."""
        return {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[McpAdapter]:
        """Connect every server for the instance's lifetime.

        The SDK's task groups wrap whatever the body raises; a single error is raised as itself.
        """
        try:
            async with AsyncExitStack() as stack:
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                for server in self.config.mcp_servers:
                    await self._connect(stack, group, server)
                yield self
        except BaseExceptionGroup as wrapped:
            leaf = _single(wrapped)
            if leaf is None:
                raise
            raise leaf from None

    async def _connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup, server: McpServerConfig) -> None:
        target: Any
        if server.transport is McpTransport.MEMORY:
            if server.server is None:
                raise ConfigurationError(
                    f"MCP server {server.server_id!r}: transport memory needs an in-process server object"
                )
            target = server.server
        elif server.transport is McpTransport.STDIO:
            assert server.command  # Invariant: McpServerConfig requires it for stdio.
            target = StdioServerParameters(command=server.command[0], args=server.command[1:])
        else:
            target = server.url
        link_box: list[Link] = []

        async def on_message(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                await self.notified(link_box[0])

        options: dict[str, Any] = {
            "mode": server.protocol,
            "cache": None,
            "message_handler": on_message,
            "input_required_max_rounds": INPUT_REQUIRED_MAX_ROUNDS,
            "read_timeout_seconds": server.call_timeout_s,
        }
        client = Client(target, **(options | self.client_options(server)))
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            raise ConfigurationError(f"MCP server {server.server_id!r} cannot be reached: {exc}") from None
        link = Link(config=server, client=client, prefix=self.prefix(server, client))
        # Probed rather than read from capabilities: a 2026-07-28 connection may not have discovered them.
        link.resources = await _answers(client.list_resources)
        link.prompts = await _answers(client.list_prompts)
        link_box.append(link)
        self.links[server.server_id] = link
        if server.protocol != "legacy":
            await group.start(self._listen, link)

    async def _listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # 2026-07-28 has no standalone channel: tools/list_changed arrives on a listen subscription.
        # A server that cannot be listened to only loses notices; listings still record every change.
        started = False
        try:
            async with link.client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    await self.notified(link)
        except Exception:  # boundary: a broken subscription must not take the instance down
            if not started:
                task_status.started()

    def prefix(self, server: McpServerConfig, client: Client) -> str:
        """Decision 5: the name prefix comes from the operator's server_id, never from serverInfo."""
        return f"mcp.{server.server_id}."

    # -- catalog (decisions 5, 9) -------------------------------------------------------------

    async def notified(self, link: Link) -> None:
        """Decision 9: a tools/list_changed is recorded, and changes nothing a session sees."""
        self._record([self._change(link, CatalogChangeKind.NOTIFIED)])

    def normalize(self, remote: str) -> str:
        """Decision 5's pinned normalization."""
        return normalize_remote_name(remote)

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        """Registered entries by name, and the remote names dropped because they normalize alike."""
        groups: dict[str, list[types.Tool]] = {}
        for tool in tools:
            groups.setdefault(link.prefix + self.normalize(tool.name), []).append(tool)
        synthetic = link.prefix + READ_RESOURCE
        if link.resources:
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
            name=name, description="Reads one resource of this server by URI.", input_schema=_READ_RESOURCE_SCHEMA
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
            self._record(changes)
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

    def _record(self, changes: list[CatalogHistoryTable]) -> None:
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

    # -- classification (decision 6) -----------------------------------------------------------

    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        """Decision 6: the operator's per-server classification, whatever the server annotates."""
        return link.config.effective_classification

    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        """The spec a session pins for ``entry``."""
        definition = entry.definition
        if entry.remote_name is None:
            return ToolSpec(
                name=entry.name,
                version=entry.sha256,
                description=str(definition.get("description", "")),
                source=ToolSource.MCP,
                input_schema=_READ_RESOURCE_SCHEMA,
                output_trust=TrustLabel.EXTERNAL_UNTRUSTED,
                required_scopes=link.config.effective_classification.required_scopes,
                deadline_s=link.config.call_timeout_s,
            )
        classification = self.classify(link, entry)
        return ToolSpec(
            name=entry.name,
            version=entry.sha256,
            description=str(definition.get("description", "")),
            source=ToolSource.MCP,
            side_effect=classification.side_effect,
            risk=classification.risk,
            idempotency=classification.idempotency,
            required_scopes=classification.required_scopes,
            input_schema=dict(definition.get("inputSchema") or {"type": "object"}),
            output_schema=definition.get("outputSchema"),
            output_trust=TrustLabel.EXTERNAL_UNTRUSTED,
            deadline_s=link.config.call_timeout_s,
        )

    # -- sessions (decisions 8, 9) -------------------------------------------------------------

    async def prefetch(self, link: Link) -> None:
        """Decision 8: nothing is read from a server at session start beyond its catalogs."""

    async def advertise(self, run_id: str) -> Advertisement:
        """The session's pin; pinned now from the current catalogs if the session has not started."""
        if not self.links:
            return Advertisement(run_id=run_id, as_of_seq=0, tools=[], skills=[])  # No server: nothing to pin.
        rows = self.store.pins(run_id)
        if not rows:
            rows = await self._pin(run_id)
        return self._advertisement(run_id, rows)

    async def _pin(self, run_id: str) -> list[SessionPinTable]:
        rows: list[SessionPinTable] = []
        skills: list[Skill] = []
        for link in self.links.values():
            await self.refresh(link)
            await self.prefetch(link)
            skills.extend(await self.skills(link))
        as_of = self.store.last_catalog_seq()
        for link in self.links.values():
            for entry in link.catalog.values():
                spec = self.spec_for(link, entry)
                rows.append(
                    SessionPinTable(
                        run_id=run_id,
                        kind="tool",
                        name=entry.name,
                        server_id=link.config.server_id,
                        remote_name=entry.remote_name,
                        definition_sha256=entry.sha256,
                        body_json=spec.model_dump_json(),
                        as_of_seq=as_of,
                    )
                )
        for skill in skills:
            rows.append(
                SessionPinTable(
                    run_id=run_id,
                    kind="skill",
                    name=skill.name,
                    server_id=skill.server_id,
                    remote_name=skill.prompt_name,
                    definition_sha256="",
                    body_json=skill.model_dump_json(),
                    as_of_seq=as_of,
                )
            )
        marker = SessionPinTable(
            run_id=run_id,
            kind=SESSION_MARKER,
            name="",
            server_id="",
            definition_sha256="",
            body_json="{}",
            as_of_seq=as_of,
        )
        self.store.pin([marker, *rows])  # A concurrent pin of the same run wins; both read it back.
        return self.store.pins(run_id)

    async def skills(self, link: Link) -> list[Skill]:
        """Decision 8: the server's prompts as read-only, untrusted, never-cacheable skills."""
        if not link.prompts:
            return []
        listed = await link.client.list_prompts()
        return [
            Skill(
                name=link.prefix + self.normalize(prompt.name),
                server_id=link.config.server_id,
                prompt_name=prompt.name,
                description=prompt.description or "",
                trust=TrustLabel.EXTERNAL_UNTRUSTED,
                read_only=True,
                cacheable=False,
            )
            for prompt in listed.prompts
        ]

    def _advertisement(self, run_id: str, rows: list[SessionPinTable]) -> Advertisement:
        tools: list[AdvertisedTool] = []
        skills: list[Skill] = []
        as_of = 0
        for row in rows:
            as_of = row.as_of_seq
            if row.kind == "skill":
                skills.append(Skill.model_validate_json(row.body_json))
            elif row.kind == "tool":
                spec = ToolSpec.model_validate_json(row.body_json)
                tools.append(
                    AdvertisedTool(
                        name=row.name,
                        server_id=row.server_id,
                        remote_name=row.remote_name,
                        definition_sha256=row.definition_sha256,
                        source=spec.source,
                        side_effect=spec.side_effect,
                        risk=spec.risk,
                        idempotency=spec.idempotency,
                        required_scopes=spec.required_scopes,
                        output_trust=spec.output_trust,
                    )
                )
        return Advertisement(run_id=run_id, as_of_seq=as_of, tools=tools, skills=skills)

    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        """The pinned spec and tool of ``name`` in the session of ``run_id``, without asking the server."""
        for row in self.store.pins(run_id):
            if row.kind == "tool" and row.name == name and row.server_id in self.links:
                spec = ToolSpec.model_validate_json(row.body_json)
                return spec, McpTool(self, self.links[row.server_id], row.remote_name, spec)
        return None

    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        """Step 1 for an ``mcp.*`` name: the pinned tool, unless its server withdrew or changed it since."""
        await self.advertise(run_id)
        found = self.pinned(run_id, name)
        if found is None:
            return ReasonCode.UNKNOWN_TOOL
        spec, tool = found
        link = tool._link
        try:
            await self.refresh(link)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            return ReasonCode.REMOTE_UNAVAILABLE
        current = link.catalog.get(name)
        if current is None:
            return ReasonCode.TOOL_WITHDRAWN
        if current.sha256 != spec.version:  # Invariant: a pinned MCP spec's version is its definition hash.
            return ReasonCode.TOOL_DEFINITION_CHANGED
        return found

    # -- results (decisions 6, 13) ------------------------------------------------------------

    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        """A remote result as a ToolResult: text only, no claimed label, structure only under a pinned schema."""
        parts = [self._text(block) for block in result.content]
        size = sum(len(p.encode()) for p in parts)
        if result.structured_content is not None:
            size += len(json.dumps(result.structured_content))
        cap = self.output_cap(link)
        if size > cap:
            detail = f"the result is {size} bytes, over this server's cap of {cap}"
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))
        structured = result.structured_content if spec.output_schema is not None else None
        if result.is_error:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts], structured=structured)

    def output_cap(self, link: Link) -> int:
        """Decision 8 (our D8.7): the largest result delivered from this server."""
        return link.config.max_output_bytes

    def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
        """Resource contents as text parts."""
        parts: list[str] = []
        for item in result.contents:
            if isinstance(item, types.TextResourceContents):
                parts.append(item.text)
            else:
                parts.append(f"[binary resource {item.uri}, {item.mime_type or 'unknown type'}]")
        if sum(len(p.encode()) for p in parts) > self.output_cap(link):
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail="resource over the cap"))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts])

    @staticmethod
    def _text(block: Any) -> str:
        if isinstance(block, types.TextContent):
            return block.text
        if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            return block.resource.text
        return f"[{getattr(block, 'type', 'content')} omitted]"
