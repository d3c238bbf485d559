"""Round 2, decision 8: MCP's other surfaces, and bounded MCP results."""

from __future__ import annotations

import json
from collections.abc import Sequence

import mcp_types as types

from toolproof.reference._mcp_catalog import READ_RESOURCE_SCHEMA
from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation, RemoteTool, wire
from toolproof.spec import READ_RESOURCE, ContentPart, ToolFailure, ToolResult, ToolSpec

from ._common import impl


class _CapInCharacters(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        parts = [self._text(block) for block in result.content]
        size = sum(len(p) for p in parts)  # The mistake: the cap is compared with characters, not bytes.
        if result.structured_content is not None:
            size += len(json.dumps(result.structured_content))
        cap = self.output_cap(link)
        if size > cap:
            detail = f"the result is {size} characters, over this server's cap of {cap}"
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))
        structured = result.structured_content if spec.output_schema is not None else None
        if result.is_error:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts], structured=structured)


class _CapInCharactersPipeline(Pipeline):
    mcp_class = _CapInCharacters


def output_cap_in_characters() -> ReferenceImplementation:
    """D8 / our D8.7 (a result over the server's output cap MUST NOT be delivered; caps are bytes): the cap is
    compared with the number of characters, so a multibyte result whose character count is at or under
    max_output_bytes but whose UTF-8 size is over it is delivered."""
    return impl("r2-d08-output-cap-in-characters", _CapInCharactersPipeline)


class _RemoteReadResourceWins(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        groups: dict[str, list[types.Tool]] = {}
        for tool in tools:
            groups.setdefault(link.prefix + self.normalize(tool.name), []).append(tool)
        synthetic = link.prefix + READ_RESOURCE
        registered: dict[str, RemoteTool] = {}
        dropped: set[str] = set()
        for name, group in groups.items():
            if len(group) > 1:
                dropped.update(t.name for t in group)
                continue
            registered[name] = RemoteTool(name, group[0].name, self.definition_hash(group[0]), wire(group[0]))
        if link.resources and synthetic not in registered:
            # The mistake: the synthetic tool is added only "if the server does not already have one of that name".
            tool = types.Tool(
                name=synthetic,
                description="Reads one resource of this server by URI.",
                input_schema=READ_RESOURCE_SCHEMA,
            )
            registered[synthetic] = RemoteTool(synthetic, None, self.definition_hash(tool), wire(tool))
        return registered, dropped


class _RemoteReadResourcePipeline(Pipeline):
    mcp_class = _RemoteReadResourceWins


def remote_tool_shadows_read_resource() -> ReferenceImplementation:
    """D8 "Resources become one synthetic per-server read tool that runs the full pipeline": the synthetic
    mcp.{server}.read_resource is added only when the server has no tool of that name, so a server listing its own
    tool "read_resource" (or "Read-Resource") takes the synthetic tool's name: the name then calls the server's tool
    and the server's resources are no longer reachable through the synthetic one."""
    return impl("r2-d08-remote-shadows-read-resource", _RemoteReadResourcePipeline)
