"""Witnesses from the red team's gaps in decisions 1 (structure), 13 (outcomes), 14 (the breaker) and 15 (batches)."""

from __future__ import annotations

import anyio

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    Disposition,
    Envelope,
    InvocationStatus,
    Outcome,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
    Success,
)

from ._registry import witness

Prior = list[tuple[InvocationStatus, ReasonCode | None]]

# -- D13 ------------------------------------------------------------------------------------


async def _crash_with_exception_text(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED and s.error is not None:
        # The mistake: the exception is appended to the fixed message "to help debugging".
        s.disposition = d.model_copy(update={"message": f"{d.message} ({type(s.error).__name__}: {s.error})"})


@witness("exception_text_in_message", ("D13.3", "D13.4"), "appends a raising tool's exception text to message")
class _ExceptionTextInMessage(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _crash_with_exception_text}


async def _crash_not_retryable(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED:
        s.disposition = d.model_copy(update={"retryable": False})  # The mistake: "a crash is not retried blindly".


@witness("crashed_not_retryable", ("D13.2",), "returns tool_crashed with retryable=false against the table")
class _CrashedNotRetryable(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _crash_not_retryable}


# -- D14 ------------------------------------------------------------------------------------


def _uncertain(prior: Prior) -> bool:
    return any(st is InvocationStatus.UNCERTAIN for st, _ in prior)


@witness("denial_means_policy_denied_only", ("D14.2",), "counts only policy_denied as a denial")
class _DenialMeansPolicyDeniedOnly(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if _uncertain(prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for _, r in prior if r in (ReasonCode.POLICY_DENIED, ReasonCode.REPEATED_DENIAL))
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        return ReasonCode.LOOP_DETECTED if len(prior) >= LOOP_THRESHOLD - 1 else None


@witness("loop_counter_skips_denials", ("D14.1",), "counts towards the loop only identical calls that were not denied")
class _LoopCounterSkipsDenials(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        reason = super().trip(prior)
        if reason is not ReasonCode.LOOP_DETECTED:
            return reason
        evaluated = sum(1 for st, _ in prior if st is not InvocationStatus.DENIED)  # The mistake: a second counter.
        return reason if evaluated >= LOOP_THRESHOLD - 1 else None


@witness("uncertain_checked_on_latest_only", ("D14.4",), "looks for UNCERTAIN only in the latest identical call")
class _UncertainCheckedOnLatestOnly(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if prior and prior[-1][0] is InvocationStatus.UNCERTAIN:
            return ReasonCode.PRIOR_UNCERTAIN
        return super().trip([(st, r) for st, r in prior if st is not InvocationStatus.UNCERTAIN])


# -- D15 ------------------------------------------------------------------------------------


@witness("parallel_results_in_completion_order", ("D15.2",), "answers a parallel batch in the order calls finished")
class _ParallelResultsInCompletionOrder(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if not self.qualifies(step):
            return await super().run_step(step)
        finished: list[Disposition] = []

        async def one(call: ProposedCall) -> None:
            finished.append(await self.run_call(step, call))

        async with anyio.create_task_group() as group:
            for call in step.calls:
                group.start_soon(one, call)
        return finished


# -- D1 -------------------------------------------------------------------------------------


async def _structure_without_schema(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d, resolved = s.disposition, s.resolved
    if not (isinstance(d, Outcome) and d.reason_code is ReasonCode.INVALID_TOOL_RESULT and resolved is not None):
        return
    result = p.parse_result(s.raw_result)
    spec = resolved.spec
    if result is None or result.failure is not None or result.structured is None or spec.output_schema is not None:
        return
    # The mistake: no schema, nothing to validate against, so the structure passes as it is.
    s.disposition = Success(
        invocation_id=s.invocation_id,
        content=[Envelope(trust=spec.output_trust, source=spec.name, text=part.text) for part in result.content],
        structured=result.structured,
        artifacts=list(result.artifacts),
    )


@witness("structure_without_schema_passes", ("D1.4",), "delivers structure from a tool that declares no output schema")
class _StructureWithoutSchemaPasses(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _structure_without_schema}
