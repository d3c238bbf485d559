"""Round 5's shared part: a pipeline built with one MCP adapter subclass, and an ``McpTool`` swap.

Round 5 targets the MCP lifecycle rules (D4.2, D5.9, D7.4-D7.6, D8.9, D8.10, D9.2); every pipeline is the
reference with one adapter hook (or the one ``McpTool.execute``) overridden.
"""

from __future__ import annotations

from toolproof.reference.hooks import McpAdapter, McpTool, Pipeline, ReferenceImplementation
from toolproof.spec import ToolSpec

from ._common import impl


def adapter_impl(name: str, adapter: type[McpAdapter]) -> ReferenceImplementation:
    """The reference whose pipeline connects MCP servers through ``adapter``."""
    pipeline = type(f"Pipeline_{name}", (Pipeline,), {"mcp_class": adapter})
    return impl(name, pipeline)


def tool_impl(name: str, tool: type[McpTool]) -> ReferenceImplementation:
    """The reference whose pinned MCP tools are instances of ``tool`` (an ``McpTool`` with one defect)."""

    class Adapter(McpAdapter):
        def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
            found = super().pinned(run_id, name)
            if found is None:
                return None
            spec, plain = found
            return spec, tool(self, plain.link, plain._remote_name, spec)

    return adapter_impl(name, Adapter)
