"""Witnesses of an MCP result judged against its pinned output schema (D8.11, D8.12): each plants one defect."""

from __future__ import annotations

from mcp import Client

from toolproof.reference.hooks import McpAdapter, Pipeline
from toolproof.spec import ToolResult, ToolSource, ToolSpec

from ._registry import witness


class _SdkJudgesStructure(McpAdapter):
    def opened(self, client: Client) -> None:
        # The defect: the SDK's own check stays on, so a result that breaks its schema raises a RuntimeError,
        # answered remote_rejected with the SDK's words (quoting the remote's structure) as remote text.
        return


witness(
    "schema_verdict_as_remote",
    ("D8.11", "D8.12"),
    "leaves the output-schema check to the SDK: a violating or missing structure is answered remote_rejected, the "
    "SDK's words enveloped as the remote's",
)(type("_SdkJudgesStructurePipeline", (Pipeline,), {"mcp_class": _SdkJudgesStructure}))


@witness(
    "mcp_structure_unjudged",
    ("D8.11",),
    "delivers an MCP server's structuredContent as valid without checking it against the pinned output schema",
)
class _StructureUnjudged(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        # The defect: a server's structure is taken as the SDK client would have checked it; nothing here does.
        if spec.source is ToolSource.MCP and result.structured is not None:
            return True
        return super().accepts_structure(spec, result)


@witness(
    "missing_structure_accepted",
    ("D8.12",),
    "delivers an MCP success without structuredContent although the tool's pinned definition declares an output schema",
)
class _MissingStructureAccepted(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        # The defect: a builtin tool may omit its structure, so an MCP tool may too.
        return result.structured is None or super().accepts_structure(spec, result)
