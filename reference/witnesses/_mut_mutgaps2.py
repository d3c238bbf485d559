"""Witnesses of four mutation-gate survivors' gaps: a synthetic read tool lost among several server tools of its
name (D8.1)."""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, RemoteTool
from toolproof.spec import READ_RESOURCE

from ._registry import witness

# -- D8.1 -------------------------------------------------------------------------------------------------------


class _SyntheticAmongClaimants(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        synthetic = link.prefix + READ_RESOURCE
        claimants = [tool for tool in tools if link.prefix + self.normalize(tool.name) == synthetic]
        if link.resources and len(claimants) > 1:
            # The defect: the synthetic definition joins its name's group in front of the last server tool, not at
            # its head; with two or more server tools there a server tool heads the group, and the collision drops
            # the whole group, the synthetic read tool with it.
            registered.pop(synthetic, None)
        return registered, dropped


@witness(
    "read_resource_lost_among_claimants",
    ("D8.1",),
    "drops the synthetic read tool when two or more server tools normalize to read_resource",
)
class _ReadResourceLostAmongClaimants(Pipeline):
    mcp_class = _SyntheticAmongClaimants
