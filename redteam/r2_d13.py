"""Round 2, decision 13: the six-field outcome, its table, and what events carry."""

from __future__ import annotations

import json

from sqlalchemy import update

from toolproof.reference.hooks import STEP_TABLE, CallState, EventTable, Pipeline, ReferenceImplementation
from toolproof.spec import EventKind, Outcome, ReasonCode, Step

from ._common import impl, table

_reference_complete = STEP_TABLE[Step.COMPLETE]
_reference_normalize = STEP_TABLE[Step.NORMALIZE]


async def _complete_with_detail(p: Pipeline, s: CallState) -> None:
    await _reference_complete(p, s)
    if s.leave_row or not isinstance(s.disposition, Outcome) or s.disposition.external_detail is None:
        return
    # The mistake: the completed event carries the remote error "so a failing call can be debugged from the stream".
    data = {"reason_code": s.disposition.reason_code.value, "remote_error": s.disposition.external_detail.text}
    events = EventTable.__table__  # type: ignore[attr-defined]
    with p.store.engine.begin() as connection:
        connection.execute(
            update(events)
            .where(events.c.invocation_id == s.invocation_id, events.c.kind == EventKind.COMPLETED.value)
            .values(data_json=json.dumps(data))
        )


class _DetailInEvent(Pipeline):
    steps = table(COMPLETE=_complete_with_detail)


def completed_event_carries_remote_error() -> ReferenceImplementation:
    """D13 consequences ("event carries classification, row carries payload" ... "the SSE stream is no longer a
    place to debug a failing tool call"): tool_call.completed of a failed call carries the remote error text
    (external_detail) in its data; arguments and success content stay out of events."""
    return impl("r2-d13-completed-event-carries-remote-error", _DetailInEvent)


async def _normalize_exhausted(p: Pipeline, s: CallState) -> None:
    await _reference_normalize(p, s)
    outcome = s.disposition
    if (
        isinstance(outcome, Outcome)
        and outcome.reason_code is ReasonCode.TOOL_ERROR_TRANSIENT
        and s.attempt >= p.config.max_attempts
    ):
        # The mistake: once the retries are spent the failure is "no longer transient" and is reported as tool_error.
        s.finish(ReasonCode.TOOL_ERROR, outcome.external_detail)


class _ExhaustedAsError(Pipeline):
    steps = table(NORMALIZE=_normalize_exhausted)


def exhausted_transient_reported_as_error() -> ReferenceImplementation:
    """D13 "a stable reason_code" (the tool's TRANSIENT failure maps to tool_error_transient): a TRANSIENT failure
    that is still failing after the last attempt completes FAILED tool_error (retryable false) instead of
    tool_error_transient (retryable true); a TRANSIENT failure that is not retried (watermark set) keeps its code."""
    return impl("r2-d13-exhausted-transient-as-error", _ExhaustedAsError)
