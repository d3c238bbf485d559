"""Round 4, decision 4: the effect watermark and recovery, each pipeline one realistic mistake on one path of
several (sweep vs replay, builtin vs MCP, one member of a batch vs the step).
"""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import (
    CallState,
    McpAdapter,
    McpTool,
    Pipeline,
    ReferenceImplementation,
)
from toolproof.reference.hooks import Link as _Link
from toolproof.spec import (
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    JsonObject,
    ReasonCode,
    SideEffect,
    Step,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
)

from ._common import impl


class _RecordedResumedAtClaim(Pipeline):
    async def recover(self, row: Any) -> Disposition:
        state: CallState = self.state_from_row(row)
        self.store.update(row.invocation_id, {}, [EventKind.RECOVERED])
        if row.status == InvocationStatus.RECORDED.value:
            # The mistake: "the decision is already on the row", so a recorded orphan resumes at the claim; the hold
            # (step 7) it never reached is skipped on the sweep path (a replay still goes through step 7).
            return await self.drive(state, Step.CLAIM)
        if self.escaped(row, state.resolved.spec if state.resolved else None):
            state.finish(ReasonCode.EFFECT_UNKNOWN)
        return await self.drive(state, Step.CLAIM)


def recovery_resumes_recorded_at_claim() -> ReferenceImplementation:
    """D4 (recovery from the store; D4.14/D4.15): the sweep resumes a RECORDED orphan at step 8 instead of step 7,
    so a call recorded for approval (or a control call) whose worker died between record and hold executes without
    approval (or suspension) when a second worker sweeps; the replay path still holds it."""
    return impl("r4-recovery-resumes-recorded-at-claim", _RecordedResumedAtClaim)


class _MarkAfterCallTool(McpTool):
    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        # The mistake: the adapter marks the effect once the server has answered ("the call went through"): the
        # watermark is written after the effect, so a call that hangs or breaks mid-flight is never marked.
        inner = McpTool(self._adapter, self._link, self._remote_name, self._spec)
        unmarked = _NoMarkContext(context)
        result = await inner.execute(arguments, unmarked)  # type: ignore[arg-type]
        if self._spec.side_effect is not SideEffect.READ_ONLY:
            await context.mark_effect_sent()
        return result


class _NoMarkContext:
    """The context with mark_effect_sent made a no-op (the adapter marks after the call instead)."""

    def __init__(self, context: ToolExecutionContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        return None


class _MarkAfterAdapter(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        link: _Link = tool._link
        return spec, _MarkAfterCallTool(self, link, tool._remote_name, spec)


class _MarkAfterPipeline(Pipeline):
    mcp_class = _MarkAfterAdapter


def mcp_marks_after_remote_call() -> ReferenceImplementation:
    """D4 (watermark before the effect; D4.2) on the MCP path only: the adapter calls mark_effect_sent after the
    server answered instead of before sending, so a NON_IDEMPOTENT MCP tool whose server hangs past call_timeout_s
    (or drops the connection) completes FAILED deadline_exceeded, retryable, instead of UNCERTAIN effect_unknown;
    builtin tools are unaffected."""
    return impl("r4-mcp-marks-after-remote-call", _MarkAfterPipeline)


class _StepLevelEscape(Pipeline):
    def escaped(self, row: Any, spec: ToolSpec | None) -> bool:
        if spec is None or spec.idempotency is not IdempotencyClass.NON_IDEMPOTENT:
            return False
        # The mistake: escape is judged per step ("did this step send anything"): any member of the row's step with
        # a watermark makes every RUNNING NON_IDEMPOTENT member of it escaped, its own watermark unset or not.
        return any(
            other.effect_sent_at is not None
            for other in self.store.invocations(row.run_id)
            if other.step_number == row.step_number
        )


def escape_judged_per_step() -> ReferenceImplementation:
    """D4 (UNCERTAIN only where the watermark is set; D4.3/D4.7): recovery asks whether any call of the row's step
    marked its effect instead of whether this row did, so in a sequential batch whose first member completed
    (marked) and whose second member died before its mark, the second is resolved UNCERTAIN instead of retried."""
    return impl("r4-escape-judged-per-step", _StepLevelEscape)
