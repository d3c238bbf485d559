"""Witnesses of the fourth red team's gaps in decisions 8 and 12: an oversized error result cut down to the
server's cap instead of refused, MCP output excerpted against the server's cap instead of the instance's limit, and
a resource read given more time than the server's call deadline, and an MCP adapter that leaves one class of
consequential call unmarked."""

from __future__ import annotations

import json

import mcp_types as types

from toolproof.reference.hooks import STEP_TABLE, CallState, Link, McpAdapter, McpTool, Pipeline, RemoteTool
from toolproof.spec import (
    JsonObject,
    SideEffect,
    Step,
    Success,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
)

from ._registry import witness

_excerpt = STEP_TABLE[Step.EXCERPT]


class _ErrorCutToCap(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        if not result.is_error:
            return super().from_result(link, spec, result)
        parts = [self._text(block) for block in result.content]
        size = sum(len(p.encode()) for p in parts)
        if result.structured_content is not None:
            size += len(json.dumps(result.structured_content))
        if size <= self.output_cap(link):
            return super().from_result(link, spec, result)
        # The defect: "an error is only diagnostics", so an oversized one is cut down to the cap and delivered
        # (excerpted) as the outcome's external_detail instead of refused.
        cut = "\n".join(parts).encode()[: self.output_cap(link)].decode(errors="ignore")
        return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail=cut))


@witness(
    "mcp_error_result_cut_to_cap",
    ("D8.8",),
    "delivers an MCP isError result over the server's cap cut down to the cap, in external_detail",
)
class _McpErrorResultCutToCap(Pipeline):
    mcp_class = _ErrorCutToCap


async def _excerpt_mcp_against_server_cap(p: Pipeline, s: CallState) -> None:
    r = s.resolved
    if r is not None and r.spec.source is ToolSource.MCP and isinstance(s.disposition, Success):
        caps = {c.server_id: c.max_output_bytes for c in p.config.mcp_servers}
        server_id = r.spec.name.split(".")[1]
        size = sum(len(e.text.encode()) for e in s.disposition.content)
        # The defect: an MCP result is measured against its own server's output cap (the operator's bound for that
        # server) rather than the instance's max_output_bytes, so anything under the cap is delivered whole.
        if size <= caps.get(server_id, p.config.max_output_bytes):
            return
    await _excerpt(p, s)


@witness(
    "mcp_excerpt_limit_is_server_cap",
    ("D12.1", "D12.2"),
    "excerpts an MCP result only over its server's output cap, not over the instance's max_output_bytes",
)
class _McpExcerptLimitIsServerCap(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_mcp_against_server_cap}


class _ResourceReadGrace(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is not None:
            return spec
        # The defect: "a resource may be large, and reading changes nothing", so the synthetic read tool gets twice
        # the server's call_timeout_s; a hanging resources/read is then ended by the client library's own timeout
        # (remote_rejected), not by the pipeline's deadline.
        return spec.model_copy(update={"deadline_s": 2 * link.config.call_timeout_s})


@witness(
    "mcp_resource_read_deadline_doubled",
    ("D8.7",),
    "gives the synthetic read_resource tool twice the server's call_timeout_s, so a hanging read is not deadline_exceeded",
)
class _McpResourceReadDeadlineDoubled(Pipeline):
    mcp_class = _ResourceReadGrace


class _NoMarkContext:
    """A tool's context whose mark_effect_sent does nothing (the rest is the pipeline's)."""

    def __init__(self, context: ToolExecutionContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> object:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        return None


class _WorkspaceWritesUnmarked(McpTool):
    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        if self.spec.side_effect is SideEffect.WORKSPACE_WRITE:
            # The defect: "a server writing its own workspace changes nothing outside it", so the adapter marks only
            # EXTERNAL_WRITE calls; a NON_IDEMPOTENT WORKSPACE_WRITE call that hangs after sending ends retryable.
            return await super().execute(arguments, _NoMarkContext(context))  # type: ignore[arg-type]
        return await super().execute(arguments, context)


class _MarksExternalWritesOnly(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, _ = found
        row = next(r for r in self.store.pins(run_id) if r.kind == "tool" and r.name == name)
        return spec, _WorkspaceWritesUnmarked(self, self.links[row.server_id], row.remote_name, spec)


@witness(
    "mcp_marks_external_writes_only",
    ("D4.2",),
    "the MCP adapter marks the effect of EXTERNAL_WRITE calls only, not of WORKSPACE_WRITE ones, before sending",
)
class _McpMarksExternalWritesOnly(Pipeline):
    mcp_class = _MarksExternalWritesOnly
