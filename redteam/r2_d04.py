"""Round 2, decision 4: the watermark, leases and recovery."""

from __future__ import annotations

from toolproof.reference.hooks import DISPOSITION, CallState, Pipeline, ReferenceImplementation, Resolved, resolved_step
from toolproof.spec import EventKind, InvocationStatus, ReasonCode

from ._common import impl, table


def _claim_changes(p: Pipeline, s: CallState, attempt: int, now: float) -> dict[str, object]:
    return {
        "status": InvocationStatus.RUNNING.value,
        "attempt": attempt,
        "lease_owner": p.worker_id,
        "lease_expires_at": now + p.config.lease_s,
        "started_at": now,
        "suspended_at": None,
    } | ({} if s.answer is None else {"control_answer": s.answer})


@resolved_step
async def _claim_status_cas(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal:
        assert row.disposition_json is not None
        s.disposition, s.leave_row = DISPOSITION.validate_json(row.disposition_json), True
        return
    now = p.clock.now()
    if status is InvocationStatus.RUNNING and (row.lease_expires_at or 0) > now and row.lease_owner != p.worker_id:
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    if status is InvocationStatus.RUNNING and p.escaped(row, r.spec):
        s.marked = True
        s.finish(ReasonCode.EFFECT_UNKNOWN)
        return
    attempt = row.attempt + 1
    # The mistake: the compare-and-set compares the status only ("the status is the state machine"); taking an
    # expired RUNNING lease leaves the status RUNNING, so two workers recovering it both succeed.
    claimed = p.store.update(
        s.invocation_id, _claim_changes(p, s, attempt, now), [EventKind.STARTED], expect_status=status
    )
    if not claimed:
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    s.attempt = attempt


class _StatusOnlyCas(Pipeline):
    steps = table(CLAIM=_claim_status_cas)


def claim_cas_on_status_only() -> ReferenceImplementation:
    """D4 / Section 12.2 lease discipline: step 8's compare-and-set is on the status alone (UPDATE ... WHERE
    status = :read_status), not on status and lease owner, so two workers taking the same expired RUNNING lease
    (RUNNING -> RUNNING) both win it and both execute the tool."""
    return impl("r2-d04-claim-cas-on-status-only", _StatusOnlyCas)


@resolved_step
async def _claim_without_watermark_check(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal:
        assert row.disposition_json is not None
        s.disposition, s.leave_row = DISPOSITION.validate_json(row.disposition_json), True
        return
    now = p.clock.now()
    if status is InvocationStatus.RUNNING and (row.lease_expires_at or 0) > now and row.lease_owner != p.worker_id:
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    # The mistake: "deciding escaped rows is the sweep's job" (Pipeline.recover checks the watermark first), so
    # step 8 takes any expired lease; a resubmitted step that finds a dead worker's row before a sweep re-executes.
    attempt = row.attempt + 1
    claimed = p.store.claim(
        s.invocation_id,
        expect_status=status,
        expect_owner=row.lease_owner,
        changes=_claim_changes(p, s, attempt, now),
    )
    if not claimed:
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    s.attempt = attempt


class _ReplayIgnoresWatermark(Pipeline):
    steps = table(CLAIM=_claim_without_watermark_check)


def replay_path_ignores_watermark() -> ReferenceImplementation:
    """D4 "recovery then reads a fact" / 8.4 "do not automatically retry a non-idempotent tool left RUNNING": only
    the sweep consults effect_sent_at; a replay of the step that reaches step 8 on a dead worker's expired RUNNING
    NON_IDEMPOTENT row with the watermark set claims it and executes the tool again instead of resolving UNCERTAIN."""
    return impl("r2-d04-replay-path-ignores-watermark", _ReplayIgnoresWatermark)
