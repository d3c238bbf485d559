"""The MCP adapter's classification layer (decision 6): what a remote tool is, and what its result becomes.

The operator classifies a server, never the server itself; output is always EXTERNAL_UNTRUSTED;
a result is text only, bounded in size, with structure only under a pinned output schema (judged at step 11).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolproof.spec import (
    ContentPart,
    JsonObject,
    McpClassification,
    SideEffect,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
    TrustLabel,
)

from ._mcp_catalog import READ_RESOURCE_SCHEMA, McpCatalog
from ._mcp_link import Link, RemoteTool


class McpClassifier(McpCatalog):
    """Turns a catalog entry into the spec a session pins, and a remote result into a ToolResult."""

    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        """Decision 6: the operator's per-server classification, whatever the server annotates."""
        return link.config.effective_classification

    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        """The spec a session pins for ``entry``: the server's classification for every tool it yields.

        The synthetic read_resource tool is a tool of the server too (reading a resource runs the server's code), so
        it takes the server's classification, and an unclassified server's is the most restrictive (D6.1, D6.2).
        """
        definition = entry.definition
        classification = self.classify(link, entry)
        synthetic = entry.remote_name is None
        return ToolSpec(
            name=entry.name,
            version=entry.sha256,
            description=str(definition.get("description", "")),
            source=ToolSource.MCP,
            side_effect=classification.side_effect,
            risk=classification.risk,
            idempotency=classification.idempotency,
            required_scopes=classification.required_scopes,
            input_schema=READ_RESOURCE_SCHEMA
            if synthetic
            else dict(definition.get("inputSchema") or {"type": "object"}),
            output_schema=None if synthetic else definition.get("outputSchema"),
            output_trust=TrustLabel.EXTERNAL_UNTRUSTED,
            deadline_s=link.config.call_timeout_s,
        )

    def malformed(self, link: Link, exc: ValidationError) -> ToolResult:
        """D7.9: an answer that is no result of the era the server speaks (a required field missing).

        The server answered, so the call is no crash and not retried: what is returned is deliberately no valid
        ToolResult (``ok`` false without a failure), which step 11 judges ``invalid_tool_result``.
        """
        return ToolResult.model_construct(ok=False, failure=None)

    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        """A remote result as a ToolResult: text only, no claimed label, structure only under a pinned schema."""
        parts = [self._text(block) for block in result.content]
        size = sum(len(p.encode()) for p in parts)
        if result.structured_content is not None:
            size += len(json.dumps(result.structured_content))
        cap = self.output_cap(link)
        if size > cap:
            return self.over_cap()
        # Under a pinned output schema, the structure (or its absence) is handed on for step 11 to judge (D8.11,
        # D8.12); without one, a server's structure has nothing to be judged against and is not delivered.
        structured = result.structured_content if spec.output_schema is not None else None
        if result.is_error:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts], structured=structured)

    def output_cap(self, link: Link) -> int:
        """Decision 8 (our D8.8): the largest result delivered from this server."""
        return link.config.max_output_bytes

    def over_cap(self) -> ToolResult:
        """D8.10: a result over the cap is this tool's failure (tool_error), with no external detail.

        The verdict is the adapter's, not the remote's: a detail would be enveloped as remote text, and the
        remote's own text over the cap is not delivered (D8.8). remote_rejected's message would say the remote
        refused, and it answered.
        """
        return ToolResult(ok=False, failure=ToolFailure(kind="ERROR"))

    def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
        """Resource contents as text parts."""
        parts: list[str] = []
        for item in result.contents:
            if isinstance(item, types.TextResourceContents):
                parts.append(item.text)
            else:
                parts.append(f"[binary resource {item.uri}, {item.mime_type or 'unknown type'}]")
        if sum(len(p.encode()) for p in parts) > self.output_cap(link):
            return self.over_cap()
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts])

    @staticmethod
    def _text(block: Any) -> str:
        if isinstance(block, types.TextContent):
            return block.text
        if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
            return block.resource.text
        return f"[{getattr(block, 'type', 'content')} omitted]"


class McpTool:
    """The ``Tool`` the pipeline executes for a pinned MCP name: one remote call, bounded in size."""

    def __init__(self, adapter: McpClassifier, link: Link, remote_name: str | None, spec: ToolSpec) -> None:
        self._adapter = adapter
        self._link = link
        self._remote_name = remote_name
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        """The pinned spec."""
        return self._spec

    @property
    def link(self) -> Link:
        """The server this tool is called on."""
        return self._link

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Send the call; a remote error is a ToolFailure whose text is only ever external detail.

        A connection lost during a marked call raises: the request may have reached the server, so the
        watermark decides the outcome (D4.2), as it does for a crash. Unmarked, it is remote_unavailable.
        """
        marked = self._spec.side_effect is not SideEffect.READ_ONLY
        if marked:
            await context.mark_effect_sent()
        try:
            if self._remote_name is None:
                return self._adapter.from_resource(
                    self._link, await self._link.client.read_resource(str(arguments["uri"]))
                )
            result = await self._link.client.call_tool(self._remote_name, dict(arguments))
        except Exception as exc:
            if self._adapter.lost(exc):
                await self._adapter.lose(self._link)
                if marked:
                    raise
                return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))
            if isinstance(exc, MCPError):
                return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=exc.error.message))
            if isinstance(exc, RuntimeError):  # The SDK's own checks: input-required rounds (structure: see opened).
                return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=str(exc)))
            if isinstance(exc, ValidationError):
                return self._adapter.malformed(self._link, exc)
            raise
        return self._adapter.from_result(self._link, self._spec, result)
