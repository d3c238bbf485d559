"""Decision 16: control tools, the suspension marker and the sweep."""

from __future__ import annotations

from sqlmodel import Session, col, select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Decision,
    InvocationTable,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    Store,
    resolved_step,
)
from toolproof.spec import EventKind, InvocationStatus, ReasonCode, Step, ToolKind
from toolproof.spec import Suspended as _S

from ._common import StorePipeline, impl, table

_reference_hold = STEP_TABLE[Step.HOLD]
_reference_claim = STEP_TABLE[Step.CLAIM]


async def _hold_with_status(p: Pipeline, s: CallState) -> None:
    if s.existing is None and s.decision is Decision.CONTROL:
        # The mistake: a suspension "waits for an answer" just like approval, so it reuses that status.
        changes = {"status": InvocationStatus.AWAITING_APPROVAL.value, "suspended_at": p.clock.now()}
        p.store.update(s.invocation_id, changes, [EventKind.SUSPENDED])
        s.disposition, s.leave_row = _S(invocation_id=s.invocation_id, reason="control"), True
        return
    row = s.existing
    if row is not None and row.suspended_at is not None and row.status == InvocationStatus.AWAITING_APPROVAL.value:
        s.disposition, s.leave_row = _S(invocation_id=s.invocation_id, reason="control"), True
        return
    await _reference_hold(p, s)


class _StatusSuspension(Pipeline):
    steps = table(HOLD=_hold_with_status)


def suspension_reuses_approval_status() -> ReferenceImplementation:
    """D16 "suspend via a nullable marker rather than a new status": a suspended control call's row is moved to
    AWAITING_APPROVAL (besides the marker), changing tool_invocations.status for every consumer."""
    return impl("d16-suspension-reuses-status", _StatusSuspension)


class _UnfilteredStore(Store):
    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        with Session(self.engine, expire_on_commit=False) as session:
            running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
                col(InvocationTable.lease_expires_at) < now
            )
            stranded = (col(InvocationTable.status) == InvocationStatus.RECORDED.value) & (
                col(InvocationTable.created_at) < now - lease_s
            )
            stmt = select(InvocationTable).where(running | stranded)  # The mistake: no suspended_at predicate.
            return list(session.exec(stmt.order_by(col(InvocationTable.seq))).all())


class _SweepSuspended(StorePipeline):
    store_class = _UnfilteredStore


def sweep_picks_suspended() -> ReferenceImplementation:
    """D16 "the lease-expiry sweep excludes them by predicate": the orphan query has no suspended_at predicate, so
    a control call suspended longer than a lease is picked up by the sweep as a stranded RECORDED row."""
    return impl("d16-sweep-picks-suspended", _SweepSuspended)


@resolved_step
async def _claim_keeps_marker(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    suspended_at = row.suspended_at
    await _reference_claim(p, s)
    if suspended_at is not None and s.disposition is None:
        p.store.update(s.invocation_id, {"suspended_at": suspended_at})  # The mistake: the marker is "history".


class _ResumeKeepsMarker(Pipeline):
    steps = table(CLAIM=_claim_keeps_marker)


def resume_keeps_marker() -> ReferenceImplementation:
    """D16 suspension marker: a resumed control call runs and completes but its suspended_at is kept (as a record
    that it was suspended), so the completed row still reads as suspended."""
    return impl("d16-resume-keeps-marker", _ResumeKeepsMarker)


@resolved_step
async def _decide_control_first(p: Pipeline, s: CallState, r: Resolved) -> None:
    if s.existing is not None:
        s.decision = Decision(s.existing.decision or Decision.ALLOW)
        return
    if r.spec.kind is ToolKind.CONTROL:  # The mistake: control tools are "the run's own", checked first.
        s.decision = Decision.CONTROL
        return
    await STEP_TABLE[Step.DECIDE](p, s)


class _ControlSkipsPolicy(Pipeline):
    steps = table(DECIDE=_decide_control_first)


def control_tool_bypasses_deny_list() -> ReferenceImplementation:
    """D16 "Control tools ... run the full pipeline": the control check comes before the deny list, so a control
    tool on denied_tools suspends the run instead of being DENIED policy_denied."""
    return impl("d16-control-bypasses-deny-list", _ControlSkipsPolicy)


_ = ReasonCode
