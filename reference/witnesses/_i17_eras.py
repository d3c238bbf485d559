"""Witnesses of a server's protocol era at open (issue 17): each plants one old defect of the adapter."""

from __future__ import annotations

from mcp import Client
from pydantic import ValidationError

from toolproof.reference.hooks import Link, McpAdapter, Opening, Pipeline
from toolproof.spec import ConfigurationError, McpServerConfig, ToolResult

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _OpaqueOpenError(McpAdapter):
    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        # The defect: the error says only what the SDK raised (often its task group's wrapper), not the era asked
        # nor what the server answered.
        return ConfigurationError(f"MCP server {opening.server.server_id!r} cannot be reached: {exc}")


witness(
    "opaque_open_error",
    ("D7.7", "D7.8"),
    "refuses a server whose opening failed with the SDK's own text (a task group's wrapper), naming neither the era "
    "asked nor what the server answered",
)(_mcp(_OpaqueOpenError))


class _UnverifiedEra(McpAdapter):
    async def verify(self, server: McpServerConfig, client: Client, opening: Opening) -> None:
        # The defect: a 2026-07-28 connection is taken as adopted; nothing asks the server whether it speaks the era.
        return


witness(
    "unverified_era",
    ("D7.8", "D7.7"),
    "accepts a server configured for 2026-07-28 without a server/discover probe: a handshake-only, silent or "
    "non-JSON server opens, and fails later",
)(_mcp(_UnverifiedEra))


class _MalformedCrashes(McpAdapter):
    def malformed(self, link: Link, exc: ValidationError) -> ToolResult:
        # The defect: an answer that is no result of its era escapes the tool as the SDK's validation error, which
        # the pipeline judges a retryable crash "before acting".
        raise exc


witness(
    "malformed_is_a_crash",
    ("D7.9",),
    "lets a result missing its era's required fields out of the MCP tool as an exception: tool_crashed, retryable",
)(_mcp(_MalformedCrashes))
