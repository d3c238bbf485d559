"""Witnesses of decision 13: the outcome shape, the table, the row and the events."""

from __future__ import annotations

import time

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    EventTable,
    Pipeline,
    dump_json,
)
from toolproof.spec import (
    Disposition,
    Outcome,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
)

from ._registry import witness

# -- D13 ------------------------------------------------------------------------------------


class _DebugOutcome(Outcome):
    debug: str = ""


class _Rewrites(Pipeline):
    """Base for witnesses that rewrite the outcome they return (the row keeps the right one)."""

    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        disposition = await super().run_call(request, call)
        if isinstance(disposition, Outcome):
            return self.rewrite(disposition, CallState(request=request, call=call))
        return disposition


@witness("debug_outcome", ("D13.1",), "adds a seventh field, debug, to non-success outcomes")
class _DebugOutcomes(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return _DebugOutcome(**outcome.model_dump(), debug=f"while calling {s.call.tool_name}")


@witness("flipped_retryable", ("D13.2",), "returns retryable opposite to the table")
class _FlippedRetryable(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome.model_copy(update={"retryable": not outcome.retryable})


@witness("chatty_messages", ("D13.3",), "appends the tool name to the table's message")
class _ChattyMessages(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome.model_copy(update={"message": f"{outcome.message} ({s.call.tool_name})"})


@witness("narrates_remote_errors", ("D13.4",), "puts the remote error string in message")
class _NarratesRemoteErrors(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        if outcome.external_detail is None:
            return outcome
        return outcome.model_copy(update={"message": outcome.external_detail.text, "external_detail": None})


async def _files_every_outcome_as_failed(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.COMPLETE](p, s)
    if isinstance(s.disposition, Outcome) and not s.leave_row:
        p.store.update(s.invocation_id, {"status": "FAILED", "reason_code": ReasonCode.TOOL_ERROR.value})


@witness("row_disagrees", ("D13.5",), "records every non-success row as FAILED tool_error")
class _RowDisagrees(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _files_every_outcome_as_failed}


async def _payload_in_events(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.COMPLETE](p, s)
    detail = s.disposition.external_detail if isinstance(s.disposition, Outcome) else None
    with p.store.transaction() as session:
        payload = {"arguments": s.call.arguments, "detail": detail.text if detail else None}
        session.add(
            EventTable(
                run_id=s.request.run_id,
                invocation_id=s.invocation_id,
                kind="tool_call.debug",
                data_json=dump_json(payload),
                created_at=time.time(),
            )
        )


@witness("payload_in_events", ("D13.6",), "copies arguments and remote detail into event data")
class _PayloadInEvents(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _payload_in_events}
