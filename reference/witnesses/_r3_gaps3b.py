"""Witnesses of the third red team's watermark-metric and resource-cap gaps: the unmarked flag raised only for a call
that succeeded, an UNCERTAIN resolved at the claim left uncounted, and resource reads delivered past the output cap."""

from __future__ import annotations

import mcp_types as types

from toolproof.reference.hooks import STEP_TABLE, CallState, Link, McpAdapter, Pipeline
from toolproof.spec import ContentPart, InvocationStatus, Metric, Outcome, ReasonCode, Step, Success, ToolResult

from ._registry import witness

_claim = STEP_TABLE[Step.CLAIM]


@witness(
    "unmarked_flagged_on_success_only",
    ("D4.10",),
    "tool_effect_unmarked_total counts an unmarked consequential call only when it ended SUCCEEDED",
)
class _UnmarkedFlaggedOnSuccessOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The defect: a call that failed, raised or overran "did nothing", so its missing watermark is not flagged.
        if not isinstance(s.disposition, Success):
            return False
        return super().unmarked(s)


_CLAIM_UNCERTAIN = "_witness_uncertain_at_claim"


async def _claim_remembering_uncertain(p: Pipeline, s: CallState) -> None:
    await _claim(p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.status is InvocationStatus.UNCERTAIN and d.reason_code is ReasonCode.EFFECT_UNKNOWN:
        setattr(s, _CLAIM_UNCERTAIN, True)


@witness(
    "uncertain_at_claim_uncounted",
    ("D4.11",),
    "an UNCERTAIN decided by step 8 (a replay or a second worker meeting an expired marked lease) is not counted",
)
class _UncertainAtClaimUncounted(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_remembering_uncertain}

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        counted = super().metrics_for(s, status)
        if getattr(s, _CLAIM_UNCERTAIN, False):
            # The defect: tool_uncertain_total is bumped only where a tool's own run or the sweep decides UNCERTAIN.
            return [m for m in counted if m != Metric.UNCERTAIN.value]
        return counted


class _ResourcesPastTheCap(McpAdapter):
    def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
        # The defect: the output cap guards tools/call only; a resource read is delivered at any size.
        texts = [
            item.text if isinstance(item, types.TextResourceContents) else f"[binary resource {item.uri}]"
            for item in result.contents
        ]
        return ToolResult(ok=True, content=[ContentPart(text=t) for t in texts])


@witness("resource_read_uncapped", ("D8.8",), "the synthetic read_resource tool delivers a resource over the cap")
class _ResourceReadUncapped(Pipeline):
    mcp_class = _ResourcesPastTheCap
