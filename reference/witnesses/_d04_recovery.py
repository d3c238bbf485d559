"""Witnesses of decision 4 across crashes of held calls, and of the lease sweep: each one realistic recovery mistake."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from toolproof.reference.hooks import STEP_TABLE, CallState, InvocationTable, Pipeline
from toolproof.spec import InvocationStatus, Step

from ._registry import witness


async def _recorded_rows_carry_on(p: Pipeline, s: CallState) -> None:
    row = s.existing
    if row is not None and row.status == InvocationStatus.RECORDED.value and row.suspended_at is None:
        return  # The old reference: "recorded earlier and never held: carry on to the claim".
    await STEP_TABLE[Step.HOLD](p, s)


@witness(
    "recorded_rows_skip_hold",
    ("D4.14", "D4.15"),
    "lets a row recorded before a crash and never held carry on to the claim, whatever its recorded decision",
)
class _RecordedRowsSkipHold(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _recorded_rows_carry_on}


async def _record_noting_adoption(p: Pipeline, s: CallState) -> None:
    assert isinstance(p, _AdoptedRowSkipsHold)
    replay = s.existing is not None
    await STEP_TABLE[Step.RECORD](p, s)
    if not replay and s.existing is not None:  # Lost the insert race and adopted the winner's row.
        p.adopted.add(s.invocation_id)


async def _hold_unless_adopted(p: Pipeline, s: CallState) -> None:
    assert isinstance(p, _AdoptedRowSkipsHold)
    if s.invocation_id in p.adopted:
        return  # "The winner holds it": the loser goes on to the claim.
    await STEP_TABLE[Step.HOLD](p, s)


@witness(
    "adopted_row_skips_hold",
    ("D4.17",),
    "lets the loser of a concurrent first submission carry on to the claim with the winner's row, unheld",
)
class _AdoptedRowSkipsHold(Pipeline):
    steps = STEP_TABLE | {Step.RECORD: _record_noting_adoption, Step.HOLD: _hold_unless_adopted}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.adopted: set[str] = set()


@witness("sweep_takes_live_leases", ("D4.18",), "sweeps every RUNNING row another worker owns, expired or not")
class _SweepTakesLiveLeases(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        found = super().orphans(now)
        with self.store.transaction() as session:
            running = session.exec(select(InvocationTable).where(InvocationTable.status == "RUNNING")).all()
        seen = {r.invocation_id for r in found}
        return found + [r for r in running if r.invocation_id not in seen and r.lease_owner != self.worker_id]


@witness(
    "sweep_takes_waiting_approvals",
    ("D4.19",),
    "counts an approval hold older than the lease as stranded, and recovers it before its bound",
)
class _SweepTakesWaitingApprovals(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        found = super().orphans(now)
        with self.store.transaction() as session:
            waiting = session.exec(
                select(InvocationTable).where(InvocationTable.status == InvocationStatus.AWAITING_APPROVAL.value)
            ).all()
        return found + [r for r in waiting if r.created_at < now - self.config.lease_s]


@witness(
    "watermark_from_started_at",
    ("D4.10",),
    "rebuilds a call's watermark state from started_at, so a recovered call counts as marked",
)
class _WatermarkFromStartedAt(Pipeline):
    def state_from_row(self, row: InvocationTable) -> CallState:
        state = super().state_from_row(row)
        state.marked = row.started_at is not None
        return state


@witness(
    "answer_forgotten_by_recovery",
    ("D4.16",),
    "keeps a resumed control call's answer in memory only: a call recovered after a crash runs without it",
)
class _AnswerForgottenByRecovery(Pipeline):
    def state_from_row(self, row: InvocationTable) -> CallState:
        state = super().state_from_row(row)
        state.answer = None
        return state
