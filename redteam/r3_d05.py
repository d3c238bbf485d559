"""Round 3, decision 5: the name grammar, and same-server normalization collisions."""

from __future__ import annotations

import re
from collections.abc import Sequence

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation, Registry, RemoteTool, wire
from toolproof.spec import READ_RESOURCE, RESERVED_DOMAINS, ConfigurationError, ToolSource, ToolSpec, domain_of

from ._common import impl

_LOOSE_GRAMMAR = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$")
"""The grammar with '-' admitted inside a segment (the mistake)."""


class _HyphenRegistry(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        if len(spec.name) > 128 or not _LOOSE_GRAMMAR.fullmatch(spec.name):
            raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar domain.name")
        if spec.source is not ToolSource.MCP and domain_of(spec.name) in RESERVED_DOMAINS:
            raise ConfigurationError(f"tool {spec.name!r} is a builtin in a reserved domain")
        return Registry.admit(spec.model_copy(update={"name": spec.name.replace("-", "_")})).model_copy(
            update={"name": spec.name}
        )


class _GrammarAllowsHyphen(Pipeline):
    registry_class = _HyphenRegistry


def grammar_allows_hyphen() -> ReferenceImplementation:
    """D5 (registry names match domain.name, each segment [a-z][a-z0-9_]*; D5.1): the segment pattern also admits
    '-' ("kebab-case is common"), so a builtin named files.read-text registers at startup instead of being refused."""
    return impl("r3-grammar-allows-hyphen", _GrammarAllowsHyphen)


class _PairwiseCollisionAdapter(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered: dict[str, RemoteTool] = {}
        dropped: set[str] = set()
        synthetic = link.prefix + READ_RESOURCE
        if link.resources:
            definition = self._read_resource_definition(synthetic)
            registered[synthetic] = RemoteTool(synthetic, None, self.definition_hash(definition), wire(definition))
        for tool in tools:
            name = link.prefix + self.normalize(tool.name)
            if name == synthetic and link.resources:
                dropped.add(tool.name)
                continue
            if name in registered:
                # The mistake: a collision removes the entry and drops both names, but the entry is gone, so a third
                # name normalizing alike finds the slot free and registers.
                earlier = registered.pop(name)
                dropped.update({tool.name, earlier.remote_name or ""} - {""})
                continue
            registered[name] = RemoteTool(name, tool.name, self.definition_hash(tool), wire(tool))
        return registered, dropped


class _CollisionThirdReadmitted(Pipeline):
    mcp_class = _PairwiseCollisionAdapter


def collision_third_name_readmitted() -> ReferenceImplementation:
    """D5 (same-server normalization collisions drop both tools rather than resolving by iteration order; D5.7):
    collisions are handled pairwise by popping the registered entry, so of three remote names that normalize alike
    the first two are dropped and the third is registered under the shared name."""
    return impl("r3-collision-third-name-readmitted", _CollisionThirdReadmitted)
