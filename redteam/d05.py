"""Decision 5: registry names, reserved domains, MCP naming."""

from __future__ import annotations

import re
from collections.abc import Sequence

import mcp_types as types
from mcp import Client

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation, Registry, RemoteTool
from toolproof.spec import (
    READ_RESOURCE,
    ConfigurationError,
    McpServerConfig,
    Tool,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
    is_valid_name,
    normalize_remote_name,
)

from ._common import impl


class _McpOnlyReserved(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        if not is_valid_name(spec.name):
            raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar (D5.1)")
        if spec.source is not ToolSource.MCP and domain_of(spec.name) == "mcp":  # The mistake: device forgotten.
            raise ConfigurationError(f"tool {spec.name!r} is a builtin in the reserved domain 'mcp' (D5.2)")
        if spec.source in (ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX):
            spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
        return spec


class _DeviceNotReserved(Pipeline):
    registry_class = _McpOnlyReserved


def device_domain_not_reserved() -> ReferenceImplementation:
    """D5 "mcp and device are reserved": only the mcp domain is checked; a builtin named device.* registers."""
    return impl("d05-device-not-reserved", _DeviceNotReserved)


class _LastWins(Registry):
    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = {}
        for tool in tools:
            spec = self.admit(tool.spec)
            self._tools[spec.name] = (spec, tool)  # The mistake: a later registration replaces an earlier one.


class _DuplicateLastWins(Pipeline):
    registry_class = _LastWins


def duplicate_name_last_wins() -> ReferenceImplementation:
    """D5 "what stops a server configuration from shadowing": two builtins registered under one name are not a
    startup error; the later one silently shadows the earlier."""
    return impl("d05-duplicate-name-last-wins", _DuplicateLastWins)


_PREFIX_GRAMMAR = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+")


class _Unanchored(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        if len(spec.name) > 128 or not _PREFIX_GRAMMAR.match(spec.name):  # The mistake: match, not fullmatch.
            raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar (D5.1)")
        return Registry.admit(spec) if is_valid_name(spec.name) else _floor(spec)


def _floor(spec: ToolSpec) -> ToolSpec:
    if domain_of(spec.name) in ("mcp", "device") and spec.source is not ToolSource.MCP:
        raise ConfigurationError(f"tool {spec.name!r} is a builtin in a reserved domain (D5.2)")
    if spec.source in (ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX):
        spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
    return spec


class _GrammarPrefix(Pipeline):
    registry_class = _Unanchored


def grammar_prefix_match() -> ReferenceImplementation:
    """D5 "a fixed grammar": names are checked with re.match (anchored at the start only), so "files.read-text" or
    "files.Read" (a valid prefix followed by anything) registers."""
    return impl("d05-grammar-prefix-match", _GrammarPrefix)


class _CaseFolding(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        return self._tools.get(name.strip().lower())  # The mistake: "be forgiving about case".


class _ResolveFolds(Pipeline):
    registry_class = _CaseFolding


def resolve_folds_case() -> ReferenceImplementation:
    """D5 / 9.2 "Unknown tool -> Deny": resolution lower-cases (and strips) the proposed name, so a name outside the
    grammar such as "Files.Read_Text" resolves to files.read_text and executes instead of DENIED unknown_tool."""
    return impl("d05-resolve-folds-case", _ResolveFolds)


class _InfoPrefix(McpAdapter):
    def prefix(self, server: McpServerConfig, client: Client) -> str:
        info = client.server_info
        name = getattr(info, "name", None) if info is not None else None
        # The mistake: the server's own name is friendlier; fall back to server_id only without one.
        return f"mcp.{normalize_remote_name(name) if name else server.server_id}."


class _ServerInfoPrefix(Pipeline):
    mcp_class = _InfoPrefix


def prefix_from_server_info() -> ReferenceImplementation:
    """D5 "namespaced server IDs": the name prefix is built from the server's serverInfo.name (normalized) instead
    of the operator's server_id, so a server can choose (or impersonate) its namespace."""
    return impl("d05-prefix-from-server-info", _ServerInfoPrefix)


class _FirstWinsAdapter(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        from toolproof.reference.hooks import wire

        registered: dict[str, RemoteTool] = {}
        dropped: set[str] = set()
        synthetic = link.prefix + READ_RESOURCE
        if link.resources:
            definition = self._read_resource_definition(synthetic)
            registered[synthetic] = RemoteTool(synthetic, None, self.definition_hash(definition), wire(definition))
        for tool in tools:
            name = link.prefix + self.normalize(tool.name)
            if name in registered:
                dropped.add(tool.name)  # The mistake: the first listed keeps the name, the later is dropped.
                continue
            registered[name] = RemoteTool(name, tool.name, self.definition_hash(tool), wire(tool))
        return registered, dropped


class _CollisionFirstWins(Pipeline):
    mcp_class = _FirstWinsAdapter


def collision_first_wins() -> ReferenceImplementation:
    """D5 "Same-server normalization collisions drop both tools rather than resolving by iteration order": the first
    remote name in the listing keeps the registered name and only the later one is dropped (and recorded)."""
    return impl("d05-collision-first-wins", _CollisionFirstWins)


class _PassThroughAdapter(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        from toolproof.reference.hooks import wire

        registered, dropped = super().register(link, tools)
        for tool in tools:
            if tool.name.startswith("mcp.") and is_valid_name(tool.name):
                # The mistake: "already namespaced" names are not prefixed twice.
                registered.pop(link.prefix + self.normalize(tool.name), None)
                registered[tool.name] = RemoteTool(tool.name, tool.name, self.definition_hash(tool), wire(tool))
        return registered, dropped


class _PreNamespaced(Pipeline):
    mcp_class = _PassThroughAdapter


def prenamespaced_names_pass_through() -> ReferenceImplementation:
    """D5 "MCP tools are named mcp.{server_id}.{normalized_remote_name}": a remote name that already looks like a
    registered MCP name (e.g. "mcp.other.delete_all") is registered as is, escaping the server's own prefix."""
    return impl("d05-prenamespaced-pass-through", _PreNamespaced)
