"""Decision 3: fourteen steps, one function, persistence points."""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import (
    DISPOSITION,
    STEP_TABLE,
    CallState,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    resolved_step,
)
from toolproof.spec import EventKind, InvocationStatus, Outcome, ReasonCode, Step

from ._common import StorePipeline, impl, make_execute, table

_reference_complete = STEP_TABLE[Step.COMPLETE]
_reference_claim = STEP_TABLE[Step.CLAIM]


async def _complete_recorded_only(p: Pipeline, s: CallState) -> None:
    if not s.recorded and isinstance(s.disposition, Outcome):
        return  # The mistake: "nothing was recorded, so there is nothing to complete".
    await _reference_complete(p, s)


class _NoRowForRefused(Pipeline):
    steps = table(COMPLETE=_complete_recorded_only)


def refused_calls_leave_no_row() -> ReferenceImplementation:
    """D3 "Nothing before step 8 has touched the world" + the persistence points: a call refused before step 6
    (unknown tool, invalid arguments, policy deny, breaker) returns its outcome but is never written, so it leaves
    no terminal row (and the breaker cannot count denials)."""
    return impl("d03-refused-calls-leave-no-row", _NoRowForRefused)


@resolved_step
async def _claim_reruns_failures(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal and status is not InvocationStatus.SUCCEEDED and row.effect_sent_at is None:
        # The mistake: only a success is final; a failed call "can simply run again" on resubmission.
        now = p.clock.now()
        attempt = row.attempt + 1
        ok = p.store.claim(
            s.invocation_id,
            expect_status=status,
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
        )
        if ok:
            s.attempt = attempt
            return
    await _claim_reference(p, s)


async def _claim_reference(p: Pipeline, s: CallState) -> None:
    await _reference_claim(p, s)


class _ReplayRerunsFailures(Pipeline):
    steps = table(CLAIM=_claim_reruns_failures)


def replay_reruns_failed() -> ReferenceImplementation:
    """D3 step 8 dedupe: a replayed call is answered from its terminal row only when that row SUCCEEDED; a replay
    of a FAILED/DENIED/UNAVAILABLE call with no watermark executes the tool again."""
    return impl("d03-replay-reruns-failed", _ReplayRerunsFailures)


class _RetryInvalid(Pipeline):
    steps = table(EXECUTE=make_execute(retry_invalid=True))


def retries_rejected_result() -> ReferenceImplementation:
    """D3 "nothing after step 10 can undo step 10": a result step 11 cannot accept (not a ToolResult) is taken for
    a transient glitch and the tool is executed again in the same submission, even after it marked its effect."""
    return impl("d03-retries-rejected-result", _RetryInvalid)


async def _complete_no_requested(p: Pipeline, s: CallState) -> None:
    if s.recorded or s.leave_row:
        await _reference_complete(p, s)
        return
    from toolproof.reference.hooks import invocation_row

    assert s.disposition is not None
    status = InvocationStatus(s.disposition.status)
    row = invocation_row(p, s, status)
    row.reason_code = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
    row.finished_at = p.clock.now()
    row.disposition_json = DISPOSITION.dump_json(s.disposition).decode()
    p.store.insert(row, [EventKind.COMPLETED], p.metrics_for(s, status))  # The mistake: no tool_call.requested.


class _NoRequestedForRefused(Pipeline):
    steps = table(COMPLETE=_complete_no_requested)


def refused_without_requested_event() -> ReferenceImplementation:
    """D3 event sequence: a call decided before step 6 is written once at step 13 with only tool_call.completed;
    its tool_call.requested event is missing."""
    return impl("d03-refused-without-requested-event", _NoRequestedForRefused)


@resolved_step
async def _claim_deferred(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal or status is InvocationStatus.RUNNING:
        await _reference_claim(p, s)
        return
    s.attempt = row.attempt + 1  # The mistake: the RUNNING write is folded into step 13's transaction.
    s.deferred_claim = True  # type: ignore[attr-defined]


async def _complete_with_claim(p: Pipeline, s: CallState) -> None:
    if getattr(s, "deferred_claim", False) and not s.leave_row:
        now = p.clock.now()
        p.store.claim(
            s.invocation_id,
            expect_status=InvocationStatus.RECORDED.value,
            expect_owner=None,
            changes={
                "status": InvocationStatus.RUNNING.value,
                "attempt": s.attempt,
                "lease_owner": p.worker_id,
                "lease_expires_at": now + p.config.lease_s,
                "started_at": now,
                "suspended_at": None,
            },
        )
    await _reference_complete(p, s)


class _DeferredClaim(Pipeline):
    steps = table(CLAIM=_claim_deferred, COMPLETE=_complete_with_claim)


def running_not_committed_before_execute() -> ReferenceImplementation:
    """D3 persistence points ("four persistence points", 12.2): to save a commit, step 8's RUNNING write is
    deferred and written just before step 13, so while the tool runs its row still reads RECORDED."""
    return impl("d03-running-not-committed", _DeferredClaim)


_: Any = (StorePipeline, ReasonCode)
