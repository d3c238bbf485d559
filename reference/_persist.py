"""Steps 6-8, persistence: each is its own committed transaction, and nothing has touched the world yet."""

from __future__ import annotations

from typing import Any

from toolproof.spec import EventKind, InvocationStatus, ReasonCode, Suspended

from ._host import PipelineHost, resolved_step
from ._policy import Decision
from ._state import DISPOSITION, CallState, Resolved
from ._store import DuplicateKey
from ._tables import InvocationTable, dump_json


def invocation_values(p: PipelineHost, s: CallState, status: InvocationStatus) -> dict[str, Any]:
    """The column values ``s`` is recorded with, with ``status``: every column but ``seq`` (step 6 inserts them)."""
    spec = s.resolved.spec if s.resolved else None
    return {
        "invocation_id": s.invocation_id,
        "tenant": s.request.tenant,
        "run_id": s.request.run_id,
        "step_number": s.request.step_number,
        "call_id": s.call.call_id,
        "tool_name": spec.name if spec else s.call.tool_name,
        "tool_version": spec.version if spec else None,
        "attempt": 0,
        "idempotency_key": s.key,
        "call_hash": s.call_hash,
        "arguments_json": dump_json(s.call.arguments),
        "status": status.value,
        "reason_code": None,
        "decision": s.decision.value,
        "origin_trust": s.origin_trust,
        "argument_trust": s.argument_trust,
        "effect_sent_at": None,
        "lease_owner": None,
        "lease_expires_at": None,
        "suspended_at": None,
        "hold_expires_at": None,
        "control_answer": None,
        "created_at": p.clock.now(),
        "started_at": None,
        "finished_at": None,
        "disposition_json": None,
    }


def invocation_row(p: PipelineHost, s: CallState, status: InvocationStatus) -> InvocationTable:
    """The row ``s`` is recorded as, with ``status`` (step 13 inserts it when step 6 never did)."""
    return InvocationTable(**invocation_values(p, s, status))


def adopt(s: CallState, row: InvocationTable) -> None:
    """Continue ``s`` as the call ``row`` records: its id, attempt, recorded decision and a resumed control call's
    answer (a replay, or the loser of a concurrent first submission, follows what the row says, not its own view)."""
    s.existing, s.invocation_id, s.attempt, s.recorded = row, row.invocation_id, row.attempt, True
    s.decision = Decision(row.decision or Decision.ALLOW)
    if row.control_answer is not None:
        s.answer = row.control_answer


async def record(p: PipelineHost, s: CallState) -> None:
    """6. Insert the row; a replay adopts the row its key already has."""
    if s.existing is not None:
        adopt(s, s.existing)
        return
    try:
        p.store.insert(invocation_values(p, s, InvocationStatus.RECORDED), [EventKind.REQUESTED])
        s.recorded = True
    except DuplicateKey:  # Another submission of the same call won the insert.
        existing = p.store.find_by_key(s.key)
        assert existing is not None  # Invariant: the insert failed on this key, so its row exists.
        adopt(s, existing)


async def hold(p: PipelineHost, s: CallState) -> None:
    """7. Open an approval hold, or suspend a control call through the nullable marker, as the recorded decision says.

    A row found already recorded (a replay, a recovered orphan, a lost insert race) is held here too when it never
    was: the hold is a compare-and-set from that state, so of two workers exactly one opens it and the other
    follows the row.
    """
    if s.decision is Decision.APPROVAL:
        changes = {
            "status": InvocationStatus.AWAITING_APPROVAL.value,
            "hold_expires_at": p.clock.now() + p.config.approval_timeout_s,
        }
        events = [EventKind.APPROVAL_REQUESTED]
    elif s.decision is Decision.CONTROL:
        # Invariant: suspension is the marker; the status column keeps a value it already had.
        changes, events = {"suspended_at": p.clock.now()}, [EventKind.SUSPENDED]
    else:
        return  # Allowed: on to the claim.
    row = s.existing
    if row is None or (row.status == InvocationStatus.RECORDED.value and row.suspended_at is None):
        if p.store.hold(s.invocation_id, changes, events):
            reason = "approval" if s.decision is Decision.APPROVAL else "control"
            s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason=reason), True
            return
        row = p.store.get(s.invocation_id)  # Another worker held or resumed it first: follow the row as it is.
    if row.status == InvocationStatus.AWAITING_APPROVAL.value:
        s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="approval"), True
    elif row.suspended_at is not None:
        s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="control"), True
    # Otherwise it was held and answered (approved, resumed): the claim dedupes, waits for or recovers it.


@resolved_step
async def claim(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """8. Dedupe against a terminal row, else take the lease and go RUNNING."""
    row = p.store.columns(s.invocation_id)  # Its column values: no row object is built for the common path.
    status = InvocationStatus(row["status"])
    if status.is_terminal:
        assert row["disposition_json"] is not None  # Invariant: step 13 writes both in one transaction.
        s.disposition, s.leave_row = DISPOSITION.validate_json(row["disposition_json"]), True
        return
    now = p.clock.now()
    if status is InvocationStatus.RUNNING and (row["lease_expires_at"] or 0) > now:
        # Running under a live lease, this worker's own included (a concurrent second submission): not ours to run.
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    if status is InvocationStatus.RUNNING and p.escaped(InvocationTable(**row), r.spec):
        # A dead worker's call that may have left its mark: never retried, whoever finds it.
        s.marked = True
        s.finish(ReasonCode.EFFECT_UNKNOWN)
        return
    attempt = row["attempt"] + 1
    claimed = p.store.claim(
        s.invocation_id,
        expect_status=status,
        expect_owner=row["lease_owner"],
        changes={
            "status": InvocationStatus.RUNNING.value,
            "attempt": attempt,
            "lease_owner": p.worker_id,
            "lease_expires_at": now + p.config.lease_s,
            "started_at": now,
            "suspended_at": None,
        }
        | ({} if s.answer is None else {"control_answer": s.answer}),
    )
    if not claimed:  # Another worker claimed it between our read and our write.
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    s.attempt = attempt
