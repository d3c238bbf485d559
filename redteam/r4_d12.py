"""Round 4, decision 12: large output is excerpted head-and-tail and artifactized, on every path of several."""

from __future__ import annotations

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import Step, ToolSource

from ._common import impl, table

_excerpt = STEP_TABLE[Step.EXCERPT]


async def _excerpt_builtin_only(p: Pipeline, s: CallState) -> None:
    if s.resolved is not None and s.resolved.spec.source is ToolSource.MCP:
        # The mistake: "MCP results are already bounded by the server's output cap", so step 12 leaves them alone.
        return
    await _excerpt(p, s)


class _ExcerptSkipsMcp(Pipeline):
    steps = table(EXCERPT=_excerpt_builtin_only)


def excerpt_skips_mcp_results() -> ReferenceImplementation:
    """D12 (large output is excerpted head-and-tail and artifactized; D12.1/D12.2) on the MCP path only: step 12
    is skipped for MCP results because the per-server cap (16 MiB by default) 'already bounds them', so an MCP
    result between the instance's max_output_bytes and the server's cap is delivered whole, with no marker and no
    artifact; builtin output is excerpted as before."""
    return impl("r4-excerpt-skips-mcp-results", _ExcerptSkipsMcp)
