"""Round 4, decision 8: MCP's other surfaces (the synthetic resource read tool) and decision 8's bounded results,
each pipeline one realistic mistake: one path of several (resource read vs tool call, error vs success result) or
a boundary on the other side (a block vs the whole result, at the cap vs over it).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from toolproof.reference.hooks import STEP_TABLE, CallState, Link, McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import READ_RESOURCE, ContentPart, Step, ToolFailure, ToolResult, ToolSource, ToolSpec

from ._common import impl, table

_claim = STEP_TABLE[Step.CLAIM]


async def _claim_unless_resource_read(p: Pipeline, s: CallState) -> None:
    r = s.resolved
    assert r is not None
    if r.spec.source is ToolSource.MCP and r.spec.name.endswith("." + READ_RESOURCE) and s.existing is None:
        # The mistake: "a resource read changes nothing, so it needs no lease": the synthetic read tool goes from
        # its recorded row straight to execution (no RUNNING row, no tool_call.started, attempt stays 0).
        return
    await _claim(p, s)


class _ResourceReadSkipsClaim(Pipeline):
    steps = table(CLAIM=_claim_unless_resource_read)


def read_resource_skips_claim() -> ReferenceImplementation:
    """D8 (resources become one synthetic read tool 'that runs the full pipeline'; D8.1/D8.6): the synthetic
    mcp.{server}.read_resource tool skips step 8's claim, so a resource read executes without a RUNNING row, a lease
    or a tool_call.started event (a remote tool call of the same server is claimed as usual)."""
    return impl("r4-read-resource-skips-claim", _ResourceReadSkipsClaim)


def _text_parts(result: types.CallToolResult) -> list[str]:
    return [McpAdapter._text(block) for block in result.content]


class _CapSkipsErrors(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        parts = _text_parts(result)
        if result.is_error:
            # The mistake: an error result is "not output", so it is turned into a failure before the cap is
            # checked; its whole text (any size) is delivered as the outcome's external_detail.
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return super().from_result(link, spec, result)


class _CapSkipsErrorsPipeline(Pipeline):
    mcp_class = _CapSkipsErrors


def cap_skips_error_results() -> ReferenceImplementation:
    """D8 (a result over the server's output cap MUST NOT be delivered; D8.8): the cap is applied to successful
    results only; an isError result of any size is delivered whole as external_detail (a 1 MB error text from a
    server capped at 100 bytes reaches the model)."""
    return impl("r4-cap-skips-error-results", _CapSkipsErrorsPipeline)


class _CapPerBlock(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        parts = _text_parts(result)
        # The mistake: the cap bounds each content block, not the whole result.
        size = max((len(p.encode()) for p in parts), default=0)
        if result.structured_content is not None:
            size = max(size, len(json.dumps(result.structured_content)))
        cap = self.output_cap(link)
        if size > cap:
            detail = f"the result is {size} bytes, over this server's cap of {cap}"
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))
        structured = result.structured_content if spec.output_schema is not None else None
        if result.is_error:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts], structured=structured)


class _CapPerBlockPipeline(Pipeline):
    mcp_class = _CapPerBlock


def cap_checked_per_block() -> ReferenceImplementation:
    """D8 (bounded results; D8.8 'the UTF-8 bytes of all its text parts together, never one part at a time'): the
    cap is checked against the largest content block, so a result of ten 60-byte blocks passes a 100-byte cap."""
    return impl("r4-cap-checked-per-block", _CapPerBlockPipeline)


class _CapAtLimit(McpAdapter):
    def output_cap(self, link: Link) -> int:
        # The mistake: the cap is read as "must stay under": the largest result delivered is one byte less.
        return link.config.max_output_bytes - 1


class _CapAtLimitPipeline(Pipeline):
    mcp_class = _CapAtLimit


def cap_rejects_at_limit() -> ReferenceImplementation:
    """D8 (bounded results; D8.8 'a result of exactly max_output_bytes is delivered'): a result of exactly
    max_output_bytes fails remote_rejected (the cap is treated as exclusive); results and resource reads one byte
    under it are delivered."""
    return impl("r4-cap-rejects-at-limit", _CapAtLimitPipeline)


class _ResourceReadDefaultDeadline(McpAdapter):
    def spec_for(self, link: Link, entry: Any) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is None:
            # The mistake: the synthetic read tool is built like a builtin spec, so it keeps ToolSpec's default
            # deadline instead of the server's call_timeout_s (remote tools of the server get it).
            return spec.model_copy(update={"deadline_s": ToolSpec.model_fields["deadline_s"].default})
        return spec


class _ResourceReadDefaultDeadlinePipeline(Pipeline):
    mcp_class = _ResourceReadDefaultDeadline


def read_resource_default_deadline() -> ReferenceImplementation:
    """D8 (the synthetic read tool runs the full pipeline; D8.7 every MCP call bounded by the server's
    call_timeout_s): the synthetic mcp.{server}.read_resource tool keeps ToolSpec's default 30 s deadline instead
    of the server's call_timeout_s, so a resource read from a server that hangs is held past the per-server
    deadline (remote tool calls of the same server are bounded correctly)."""
    return impl("r4-read-resource-default-deadline", _ResourceReadDefaultDeadlinePipeline)
