"""Decision 13: one six-field outcome shape, fixed messages, external text is data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, InvocationTable, Pipeline, ReferenceImplementation, Store
from toolproof.spec import (
    FAILURE_REASONS,
    EventKind,
    FailureKind,
    InvocationStatus,
    Outcome,
    ReasonCode,
    Step,
    TrustLabel,
)

from ._common import StorePipeline, impl, make_normalize, table

_reference_normalize = STEP_TABLE[Step.NORMALIZE]
_reference_complete = STEP_TABLE[Step.COMPLETE]


class _ExceptionInMessage(Pipeline):
    steps = table(NORMALIZE=make_normalize(message_with_exception=True))


def exception_text_in_message() -> ReferenceImplementation:
    """D13 "a fixed message drawn from a checked-in table": when a tool raises, the exception's type and text are
    appended to the table message of tool_crashed (to help debugging), leaking tool/remote text into message."""
    return impl("d13-exception-text-in-message", _ExceptionInMessage)


class _DetailInternal(Pipeline):
    steps = table(NORMALIZE=make_normalize(detail_trust=TrustLabel.INTERNAL))


def external_detail_labelled_internal() -> ReferenceImplementation:
    """D13 "a remote system's error string goes into enveloped EXTERNAL_UNTRUSTED content": the failure detail is
    put in external_detail but its envelope is labelled INTERNAL (the tool's own label)."""
    return impl("d13-external-detail-internal", _DetailInternal)


class _UnavailableAsRejected(Pipeline):
    steps = table(
        NORMALIZE=make_normalize(
            failure_reasons=FAILURE_REASONS | {FailureKind.REMOTE_UNAVAILABLE: ReasonCode.REMOTE_REJECTED}
        )
    )


def remote_unavailable_mapped_rejected() -> ReferenceImplementation:
    """D13 stable reason codes: a tool's REMOTE_UNAVAILABLE failure is mapped to remote_rejected (FAILED, not
    retryable) instead of remote_unavailable (UNAVAILABLE, retryable)."""
    return impl("d13-remote-unavailable-mapped-rejected", _UnavailableAsRejected)


async def _normalize_crash_final(p: Pipeline, s: CallState) -> None:
    await _reference_normalize(p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED:
        s.disposition = d.model_copy(update={"retryable": False})  # "a crash is not something to retry blindly"


class _CrashNotRetryable(Pipeline):
    steps = table(NORMALIZE=_normalize_crash_final)


def crashed_not_retryable() -> ReferenceImplementation:
    """D13 "status and retryable from the table": a tool_crashed outcome is returned with retryable=false (the
    table says true: nothing was marked), overriding the table for caution."""
    return impl("d13-crashed-not-retryable", _CrashNotRetryable)


async def _complete_no_unavailable_reason(p: Pipeline, s: CallState) -> None:
    await _reference_complete(p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.status is InvocationStatus.UNAVAILABLE and not s.leave_row:
        # The mistake: reason_code is "a failure column"; UNAVAILABLE rows keep it empty.
        p.store.update(s.invocation_id, {"reason_code": None})


class _RowReasonMissing(Pipeline):
    steps = table(COMPLETE=_complete_no_unavailable_reason)


def unavailable_row_without_reason() -> ReferenceImplementation:
    """D13 (row and outcome agree): an UNAVAILABLE call's row records no reason_code, while the returned outcome
    carries one (tool_withdrawn, remote_unavailable, ...)."""
    return impl("d13-unavailable-row-without-reason", _RowReasonMissing)


class _PayloadStore(Store):
    _payload: str | None = None

    def insert(self, row: InvocationTable, events: Sequence[EventKind], metrics: Sequence[str] = ()) -> None:
        self._payload = row.arguments_json
        try:
            super().insert(row, events, metrics)
        finally:
            self._payload = None

    def _emit(
        self,
        connection: Any,
        run_id: str,
        invocation_id: str,
        status: str | None,
        reason_code: str | None,
        events: Sequence[EventKind],
    ) -> None:
        if not events:
            return
        import time

        from sqlalchemy import insert
        from sqlmodel import SQLModel

        table_ = SQLModel.metadata.tables["tool_events"]
        data = json.dumps({"arguments": json.loads(self._payload)}) if self._payload else "{}"
        rows = [
            {
                "run_id": run_id,
                "invocation_id": invocation_id,
                "kind": k.value,
                "status": status,
                "reason_code": reason_code,
                # The mistake: tool_call.requested carries the arguments, for debugging from the stream.
                "data_json": data if k is EventKind.REQUESTED else "{}",
                "created_at": time.time(),
            }
            for k in events
        ]
        connection.execute(insert(table_), rows)


class _EventPayload(StorePipeline):
    store_class = _PayloadStore


def requested_event_carries_arguments() -> ReferenceImplementation:
    """D13 consequences ("event carries classification, row carries payload"): tool_call.requested carries the
    call's arguments in its data."""
    return impl("d13-requested-event-carries-arguments", _EventPayload)
