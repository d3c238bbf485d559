"""Round 2, decision 3: the one pipeline, dedupe at step 8, and the terminal row."""

from __future__ import annotations

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation, Resolved, resolved_step
from toolproof.spec import InvocationStatus, Outcome, ReasonCode, Step

from ._common import impl, table

_reference_claim = STEP_TABLE[Step.CLAIM]


@resolved_step
async def _claim_retries_retryable(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal and row.effect_sent_at is None and row.disposition_json is not None:
        from toolproof.reference.hooks import DISPOSITION

        recorded = DISPOSITION.validate_json(row.disposition_json)
        if isinstance(recorded, Outcome) and recorded.retryable:
            # The mistake: the table said "retryable", so a resubmission of the call is taken as the retry.
            now = p.clock.now()
            attempt = row.attempt + 1
            if p.store.claim(
                s.invocation_id,
                expect_status=status.value,
                expect_owner=row.lease_owner,
                changes={
                    "status": InvocationStatus.RUNNING.value,
                    "attempt": attempt,
                    "lease_owner": p.worker_id,
                    "lease_expires_at": now + p.config.lease_s,
                    "started_at": now,
                    "reason_code": None,
                    "finished_at": None,
                    "disposition_json": None,
                },
            ):
                s.attempt = attempt
                return
    await _reference_claim(p, s)


class _ReplayRetriesRetryable(Pipeline):
    steps = table(CLAIM=_claim_retries_retryable)


def replay_retries_retryable_outcomes() -> ReferenceImplementation:
    """D3 step 8 dedupe ("a replayed ... deduplicates at step 8"): a replayed call whose terminal row holds a
    retryable outcome (tool_crashed, deadline_exceeded, remote_unavailable, tool_error_transient) and no watermark
    is executed again instead of being answered with the recorded disposition; non-retryable ones are answered."""
    return impl("r2-d03-replay-retries-retryable", _ReplayRetriesRetryable)


async def _claim_in_progress_completes(p: Pipeline, s: CallState) -> None:
    await _reference_claim(p, s)
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.IN_PROGRESS:
        s.leave_row = False  # The mistake: "every disposition returned is written", so in_progress is completed.


class _InProgressCompletes(Pipeline):
    steps = table(CLAIM=_claim_in_progress_completes)


def in_progress_completes_row() -> ReferenceImplementation:
    """D3 "nothing after step 10 can undo step 10" / one terminal write: a second submission of a call another
    worker is still executing is answered UNAVAILABLE in_progress and that answer is written to the shared row
    (status, reason, tool_call.completed), so the row reads terminal while the tool runs, and the running worker's
    completion writes it a second time."""
    return impl("r2-d03-in-progress-completes-row", _InProgressCompletes)
