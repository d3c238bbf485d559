"""Witnesses of the MCP decisions (5-9, and 18's MCP half): each plants one defect in the adapter."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from mcp import Client

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    CatalogRow,
    Link,
    McpAdapter,
    McpTool,
    Pipeline,
    RemoteTool,
    Store,
    wire,
)
from toolproof.spec import (
    DEFINITION_FIELDS,
    READ_RESOURCE,
    UNSATISFIABLE_SCOPE,
    Advertisement,
    CatalogChangeKind,
    Clock,
    ConfigurationError,
    Disposition,
    IdempotencyClass,
    InstanceConfig,
    McpClassification,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    ProposedCall,
    ReasonCode,
    Risk,
    SideEffect,
    Skill,
    Step,
    StepRequest,
    ToolSpec,
    TrustLabel,
    definition_sha256,
    normalize_remote_name,
)

from ._registry import outside_the_pipeline, witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _PrefixFromServerInfo(McpAdapter):
    def prefix(self, server: McpServerConfig, client: Client) -> str:
        info = client.server_info
        return f"mcp.{normalize_remote_name(info.name if info else server.server_id)}."


witness("server_info_prefix", ("D5.5",), "names a server's tools after its serverInfo.name")(
    _mcp(_PrefixFromServerInfo)
)


class _NoNfkc(McpAdapter):
    def normalize(self, remote: str) -> str:
        segment = re.sub(r"[^a-z0-9_]+", "_", remote.lower())
        return (segment if segment[:1].isalpha() else "t_" + segment)[:64]


witness("no_nfkc", ("D5.6",), "normalizes without Unicode NFKC")(_mcp(_NoNfkc))


class _FirstWins(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, _ = super().register(link, [])
        for tool in tools:
            name = link.prefix + self.normalize(tool.name)
            if name not in registered:
                shape = wire(tool)
                registered[name] = RemoteTool(name, tool.name, self.definition_hash(tool), shape)
        return registered, set()


witness("first_name_wins", ("D5.7",), "resolves normalization collisions by catalog order, first wins")(
    _mcp(_FirstWins)
)


class _VerbatimNames(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        for tool in tools:
            if "." in tool.name and tool.name == tool.name.lower():
                registered.pop(link.prefix + self.normalize(tool.name), None)
                registered[tool.name] = RemoteTool(tool.name, tool.name, self.definition_hash(tool), wire(tool))
        return registered, dropped


witness("verbatim_dotted_names", ("D5.8",), "registers remote names that already look like dotted names as they are")(
    _mcp(_VerbatimNames)
)


class _TrustsAnnotations(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        hints = entry.definition.get("annotations") or {}
        if hints.get("readOnlyHint"):
            return McpClassification(
                side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT
            )
        return super().classify(link, entry)


witness("annotations_classify", ("D6.1",), "takes side effect, risk and idempotency from the server's annotations")(
    _mcp(_TrustsAnnotations)
)


class _PermissiveDefault(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        if link.config.classification is None:
            return McpClassification(
                side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT
            )
        return super().classify(link, entry)


witness("permissive_unclassified", ("D6.2",), "treats an unclassified server as read-only and idempotent")(
    _mcp(_PermissiveDefault)
)


class _GrantsTheUnsatisfiableScope(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        # The defect: the reserved scope is just another credential name.
        kept = {scope: value for scope, value in config.credentials.items() if scope != UNSATISFIABLE_SCOPE}
        super().check(config.model_copy(update={"credentials": kept}))


witness(
    "unsatisfiable_scope_grantable",
    ("D6.2",),
    "lets a credential named like the unclassified scope grant it, approving an unclassified server's calls",
)(_mcp(_GrantsTheUnsatisfiableScope))


async def _scopes_folded(p: Pipeline, s: CallState) -> None:
    # The defect: scopes compared trimmed and case-folded, so a near miss of the reserved scope grants it.
    folded = {scope.strip().casefold(): value for scope, value in p.config.credentials.items()}
    config = p.config
    p.config = config.model_copy(update={"credentials": folded})
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        p.config = config


@witness("scopes_matched_loosely", ("D6.2",), "matches credential scopes trimmed and case-folded")
class _ScopesMatchedLoosely(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _scopes_folded}


class _ResourceToolReadOnly(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is not None:
            return spec
        # The defect: "reading a resource is a read", whatever the operator said of the server.
        return spec.model_copy(
            update={"side_effect": SideEffect.READ_ONLY, "risk": Risk.LOW, "idempotency": IdempotencyClass.IDEMPOTENT}
        )


witness(
    "resource_tool_always_read_only",
    ("D6.1", "D6.2"),
    "gives the synthetic read_resource tool READ_ONLY, LOW, IDEMPOTENT whatever its server's classification",
)(_mcp(_ResourceToolReadOnly))


class _TrustedOutput(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        return super().spec_for(link, entry).model_copy(update={"output_trust": TrustLabel.INTERNAL})


witness("trusted_mcp_output", ("D6.3",), "registers MCP tools with INTERNAL output trust")(_mcp(_TrustedOutput))


class _AcceptsTenantStdio(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        allowed = [s for s in config.mcp_servers if s.url is not None]
        super().check(config.model_copy(update={"mcp_servers": allowed}))


witness("tenant_stdio_accepted", ("D7.1",), "accepts a tenant MCP server over stdio or in-process")(
    _mcp(_AcceptsTenantStdio)
)


class _AnyHost(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        hosts = [urlsplit(s.url).hostname or "" for s in config.mcp_servers if s.url is not None]
        super().check(config.model_copy(update={"egress_allowlist": [*config.egress_allowlist, *hosts]}))


witness("egress_allowlist_ignored", ("D7.2",), "accepts a tenant HTTP server on any host")(_mcp(_AnyHost))


class _AllowlistVerbatim(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        for server in config.mcp_servers:
            host = urlsplit(server.url or "").hostname
            # The defect: the host as written against the entries as written (case, trailing dot and IDNA kept).
            if server.origin is McpOrigin.TENANT and server.url is not None and host not in config.egress_allowlist:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
        super().check(
            config.model_copy(
                update={"egress_allowlist": [urlsplit(s.url or "").hostname or "" for s in config.mcp_servers]}
            )
        )


witness("allowlist_compared_verbatim", ("D7.2",), "compares allowlist hosts as written: case, trailing dot, U-labels")(
    _mcp(_AllowlistVerbatim)
)


class _AllowlistIdna2003(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        def key(host: str) -> str:
            # The defect: IDNA 2003's transitional mapping (ß to ss, full-width to ASCII), not the host the client
            # resolves.
            try:
                return host.rstrip(".").encode("idna").decode().lower()
            except UnicodeError:
                return host.lower()

        allowed = {key(entry) for entry in config.egress_allowlist}
        for server in config.mcp_servers:
            host = urlsplit(server.url or "").hostname or ""
            if server.origin is McpOrigin.TENANT and server.url is not None and key(host) not in allowed:
                raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
        super().check(
            config.model_copy(
                update={"egress_allowlist": [urlsplit(s.url or "").hostname or "" for s in config.mcp_servers]}
            )
        )


witness("allowlist_idna2003", ("D7.2",), "compares allowlist hosts under IDNA 2003's mapping (ß as ss)")(
    _mcp(_AllowlistIdna2003)
)


class _RefusesStdio(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        for server in config.mcp_servers:
            if server.transport is McpTransport.STDIO:
                raise ConfigurationError(f"MCP server {server.server_id!r}: stdio is not supported")
        super().check(config)


witness("stdio_refused", ("D7.3",), "refuses stdio servers even from the operator")(_mcp(_RefusesStdio))


class _ToolPerResource(McpAdapter):
    async def refresh(self, link: Link) -> None:
        await super().refresh(link)
        if not link.resources:
            return
        synthetic = link.catalog.pop(link.prefix + READ_RESOURCE, None)
        for resource in (await link.client.list_resources()).resources:
            name = link.prefix + self.normalize(resource.name)
            link.catalog[name] = RemoteTool(name, None, synthetic.sha256 if synthetic else "", {})


witness("tool_per_resource", ("D8.1",), "exposes each resource as its own tool instead of one read_resource")(
    _mcp(_ToolPerResource)
)


class _Prefetches(McpAdapter):
    async def prefetch(self, link: Link) -> None:
        if link.resources:
            for resource in (await link.client.list_resources()).resources:
                await link.client.read_resource(str(resource.uri))


witness("prefetched_resources", ("D8.2",), "reads every resource when a session starts")(_mcp(_Prefetches))


class _CacheableSkills(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        return [s.model_copy(update={"cacheable": True}) for s in await super().skills(link)]


witness("cacheable_skills", ("D8.3",), "lets MCP prompts into the cacheable prefix")(_mcp(_CacheableSkills))


async def _answer_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sure"), model="witness"
    )


async def _answer_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///")])


class _AdvertisesSampling(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"sampling_callback": _answer_sampling}


witness("sampling_advertised", ("D8.4",), "advertises sampling and answers a server's sampling requests")(
    _mcp(_AdvertisesSampling)
)


class _AdvertisesRoots(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"list_roots_callback": _answer_roots}


witness("roots_advertised", ("D8.5",), "advertises roots and answers a server's roots requests")(_mcp(_AdvertisesRoots))


@witness("mcp_beside_pipeline", ("D8.6",), "runs MCP calls straight through the adapter, leaving no row or event")
class _McpBesidePipeline(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        if self.mcp is None or not call.tool_name.startswith("mcp."):
            return await super().run_call(request, call)
        found = await self.mcp.resolve(request.run_id, call.tool_name)
        if isinstance(found, ReasonCode):
            return await super().run_call(request, call)
        return await outside_the_pipeline(self, request, call, found)


class _Unbounded(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"read_timeout_seconds": None, "input_required_max_rounds": 1_000_000}

    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        return super().spec_for(link, entry).model_copy(update={"deadline_s": 3600.0})


witness("unbounded_mcp_calls", ("D8.7",), "gives MCP calls an hour and unlimited input-required rounds")(
    _mcp(_Unbounded)
)


class _NoOutputCap(McpAdapter):
    def output_cap(self, link: Link) -> int:
        return 1 << 40


witness("no_mcp_output_cap", ("D8.8",), "delivers MCP results of any size")(_mcp(_NoOutputCap))


class _SchemaOnlyHash(McpAdapter):
    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        return definition_sha256({"inputSchema": wire(tool).get("inputSchema")})


witness("schema_only_hash", ("D9.1",), "pins a hash of the input schema alone, not the full definition")(
    _mcp(_SchemaOnlyHash)
)


class _SortKeysHash(McpAdapter):
    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        # The defect: Python's sort_keys JSON, not RFC 8785: keys in code-point order, floats as repr writes them.
        dumped = wire(tool) if definition is None else definition
        picked = {field: dumped.get(field) for field in DEFINITION_FIELDS}
        text = json.dumps(picked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


witness(
    "sort_keys_definition_hash",
    ("D9.1",),
    "hashes tool definitions as Python sort_keys JSON, not RFC 8785 (floats, non-BMP key order differ)",
)(_mcp(_SortKeysHash))


class _AppliesListChanged(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.sessions: set[str] = set()

    async def advertise(self, run_id: str) -> Advertisement:
        self.sessions.add(run_id)
        return await super().advertise(run_id)

    async def notified(self, link: Link) -> None:
        await super().notified(link)
        for run_id in self.sessions:
            self.store.unpin(run_id)  # The next look re-pins from the current catalog.


witness("list_changed_applied", ("D9.2",), "re-pins every session when a server sends tools/list_changed")(
    _mcp(_AppliesListChanged)
)


class _CallsWithdrawn(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is ReasonCode.TOOL_WITHDRAWN:
            return self.pinned(run_id, name) or found
        return found


witness("withdrawn_tool_called", ("D9.3",), "still calls a pinned tool its server withdrew")(_mcp(_CallsWithdrawn))


class _CallsChanged(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is ReasonCode.TOOL_DEFINITION_CHANGED:
            return self.pinned(run_id, name) or found
        return found


witness("changed_tool_called", ("D9.4",), "calls a tool whose definition changed under its pinned definition")(
    _mcp(_CallsChanged)
)


class _ForgetsSilentChanges(McpAdapter):
    def record(self, changes: list[CatalogRow]) -> None:
        super().record([c for c in changes if c.kind != CatalogChangeKind.CHANGED.value])


witness("silent_change_unrecorded", ("D9.5",), "records changes it is told about, not changes it lists")(
    _mcp(_ForgetsSilentChanges)
)


class _PinsOnce(McpAdapter):
    async def advertise(self, run_id: str) -> Advertisement:
        first = getattr(self, "first_run", None)
        if first is None:
            self.first_run = run_id
            return await super().advertise(run_id)
        ad = await super().advertise(first)
        return ad.model_copy(update={"run_id": run_id})


witness("one_pin_per_instance", ("D9.6",), "gives every session the catalog the first session pinned")(_mcp(_PinsOnce))


class _FirstListingUnrecorded(McpAdapter):
    def record(self, changes: list[CatalogRow]) -> None:
        if getattr(self, "recorded_once", False):
            super().record(changes)
        self.recorded_once = True


witness("first_listing_unrecorded", ("D18.2",), "keeps no history of the catalog a server first listed")(
    _mcp(_FirstListingUnrecorded)
)
