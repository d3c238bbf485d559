"""Witnesses of issue 17's catalog and result defects (D5.9, D7.4, D8.9, D8.10): each the old behaviour, planted."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, Pipeline

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _AnsweringIsHaving(McpAdapter):
    async def lists_resources(self, link: Link) -> bool:
        return link.resources  # Whether resources/list was answered at connect, even with nothing.


witness("read_tool_without_resources", ("D8.9",), "gives every server that answers resources/list a read tool")(
    _mcp(_AnsweringIsHaving)
)
