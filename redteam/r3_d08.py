"""Round 3, decision 8: the output cap of MCP results (D8.7), on one path of two and one field of two."""

from __future__ import annotations

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import ContentPart, ToolFailure, ToolResult, ToolSpec

from ._common import impl


class _UncappedResources(McpAdapter):
    def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
        parts = [
            item.text
            if isinstance(item, types.TextResourceContents)
            else f"[binary resource {item.uri}, {item.mime_type or 'unknown type'}]"
            for item in result.contents
        ]
        # The mistake: the cap is enforced on tools/call results only; a resource read is delivered whatever its size.
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts])


class _ResourceReadsUncapped(Pipeline):
    mcp_class = _UncappedResources


def resource_reads_uncapped() -> ReferenceImplementation:
    """D8 (every MCP call is bounded: a result over the server's output cap is not delivered; D8.7): the cap is
    checked on tools/call results but not on the synthetic read_resource tool, so a resource larger than the cap is
    delivered."""
    return impl("r3-resource-reads-uncapped", _ResourceReadsUncapped)


class _CapTextOnly(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        parts = [self._text(block) for block in result.content]
        size = sum(len(p.encode()) for p in parts)  # The mistake: structuredContent is not counted.
        cap = self.output_cap(link)
        if size > cap:
            detail = f"the result is {size} bytes, over this server's cap of {cap}"
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))
        structured = result.structured_content if spec.output_schema is not None else None
        if result.is_error:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts], structured=structured)


class _CapIgnoresStructured(Pipeline):
    mcp_class = _CapTextOnly


def cap_ignores_structured() -> ReferenceImplementation:
    """D8 (a result over the server's output cap is not delivered; D8.7): the cap is measured over the text content
    blocks only, so a result whose structuredContent alone is over the cap (the tool has an outputSchema) is
    delivered."""
    return impl("r3-cap-ignores-structured", _CapIgnoresStructured)
