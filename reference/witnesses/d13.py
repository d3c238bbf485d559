"""Witnesses of decision 13: One six-field shape for every non-success outcome.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import time

from sqlmodel import select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    EventTable,
    InvocationTable,
    Pipeline,
    PipelineHost,
    dump_json,
)
from toolproof.spec import (
    Disposition,
    EventKind,
    InvocationStatus,
    Outcome,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    Step,
    StepRequest,
)

from ._registry import witness


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


async def _files_every_outcome_as_failed(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.COMPLETE](p, s)
    if isinstance(s.disposition, Outcome) and not s.leave_row:
        p.store.update(s.invocation_id, {"status": "FAILED", "reason_code": ReasonCode.TOOL_ERROR.value})


@witness("row_disagrees", ("D13.5",), "records every non-success row as FAILED tool_error")
class _RowDisagrees(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _files_every_outcome_as_failed}


async def _payload_in_events(p: PipelineHost, s: CallState) -> None:
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


@witness(
    "recovered_uncertain_message_explains",
    ("D13.3",),
    "a call recovery resolves UNCERTAIN gets a message that explains the crash instead of the table's",
    through=("D4.11",),
)
class _RecoveredUncertainMessageExplains(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        decided = await super().recover(row)
        if isinstance(decided, Outcome) and decided.status is InvocationStatus.UNCERTAIN:
            # The mistake: "more helpful" text for the one case the table's message seems too terse for.
            return decided.model_copy(update={"message": "The worker died after the effect was sent; check it."})
        return decided


def _expired_retryable(decided: Disposition) -> Disposition:
    if isinstance(decided, Outcome) and decided.reason_code is ReasonCode.APPROVAL_EXPIRED:
        # The mistake: "nobody answered, so asking again may work".
        return decided.model_copy(update={"retryable": not decided.retryable})
    return decided


@witness(
    "expired_approval_retryable",
    ("D13.2",),
    "an approval that expires is answered with retryable flipped against the table",
    through=("D11.7",),
)
class _ExpiredApprovalRetryable(Pipeline):
    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        return _expired_retryable(await super().resolve_approval(invocation_id, approved))

    async def sweep(self) -> list[Disposition]:
        return [_expired_retryable(d) for d in await super().sweep()]


@witness(
    "script_outcomes_prefixed",
    ("D13.3",),
    "the bridge prefixes each refused call's message with the ordinal it refused",
    through=("D17.4",),
)
class _ScriptOutcomesPrefixed(Pipeline):
    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        ran = await super().run_script(request)
        dispositions = [
            d.model_copy(update={"message": f"call {n}: {d.message}"}) if isinstance(d, Outcome) else d
            for n, d in enumerate(ran.dispositions)
        ]
        return ran.model_copy(update={"dispositions": dispositions})


async def _crash_with_exception_text(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED and s.error is not None:
        # The mistake: the exception is appended to the fixed message "to help debugging".
        s.disposition = d.model_copy(update={"message": f"{d.message} ({type(s.error).__name__}: {s.error})"})


@witness("exception_text_in_message", ("D13.3", "D13.4"), "appends a raising tool's exception text to message")
class _ExceptionTextInMessage(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _crash_with_exception_text}


async def _crash_not_retryable(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED:
        s.disposition = d.model_copy(update={"retryable": False})  # The mistake: "a crash is not retried blindly".


@witness("crashed_not_retryable", ("D13.2",), "returns tool_crashed with retryable=false against the table")
class _CrashedNotRetryable(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _crash_not_retryable}


async def _exception_text_in_completed(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.COMPLETE](p, s)
    if s.error is None:
        return
    # The defect: "the error is classification too", so a raising tool's text rides on its completed event.
    with p.store.transaction() as session:
        for event in session.exec(
            select(EventTable).where(
                EventTable.invocation_id == s.invocation_id, EventTable.kind == EventKind.COMPLETED.value
            )
        ):
            event.data_json = dump_json({"error": str(s.error)})
            session.add(event)


@witness("exception_text_in_event", ("D13.6",), "puts a raising tool's exception text in its completed event's data")
class _ExceptionTextInEvent(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _exception_text_in_completed}


async def _complete_keeping_the_new_id(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.COMPLETE](p, s)
    d = s.disposition
    if isinstance(d, Outcome) and not s.recorded and d.invocation_id != s.invocation_id:
        # The defect: a refusal decided again is this submission's answer, so it keeps this submission's id, though
        # the row written is the first refusal's and this id names none.
        s.disposition = d.model_copy(update={"invocation_id": s.invocation_id})


@witness(
    "replayed_refusal_keeps_its_new_id",
    ("D13.5",),
    "answers a replayed refusal with the recorded outcome under the replay's own invocation_id, which names no row",
)
class _ReplayedRefusalKeepsItsNewId(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _complete_keeping_the_new_id}
