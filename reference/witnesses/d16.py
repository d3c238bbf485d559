"""Witnesses of decision 16: Control tools.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

from sqlmodel import Session, col, select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    InvocationTable,
    Pipeline,
    PipelineHost,
)
from toolproof.spec import (
    Disposition,
    Envelope,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
    Success,
    Suspended,
    ToolKind,
    TrustLabel,
)

from ._registry import witness


@witness("control_shortcut", ("D16.1",), "suspends a control call at once, with no row, key, policy or events")
class _ControlShortcut(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        found = self.registry.resolve(call.tool_name)
        if found is not None and found[0].kind is ToolKind.CONTROL:
            return Suspended(invocation_id=f"control-{call.call_id}", reason="control")
        return await super().run_call(request, call)


async def _suspends_by_status(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "control" and s.existing is None:
        changes = {"suspended_at": None, "status": InvocationStatus.AWAITING_APPROVAL.value}
        p.store.update(s.invocation_id, changes)


@witness("suspends_by_status", ("D16.2",), "suspends a control call by giving its row the AWAITING_APPROVAL status")
class _SuspendsByStatus(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _suspends_by_status}


@witness("sweeps_suspended", ("D16.3",), "treats suspended control calls as orphans in the lease sweep")
class _SweepsSuspended(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        with self.store.transaction() as session:
            stale = self.clock.now() - self.config.lease_s
            rows = session.exec(select(InvocationTable).where(InvocationTable.status == "RECORDED")).all()
            return [r for r in rows if r.created_at < stale]

    async def recover(self, row: InvocationTable) -> Disposition:
        state = self.state_from_row(row)
        state.answer = ""
        return await self.drive(state, Step.CLAIM)


@witness("resume_skips_pipeline", ("D16.4",), "answers a resumed control call without running it")
class _ResumeSkipsPipeline(Pipeline):
    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        row = self.store.get(invocation_id)
        return Success(
            invocation_id=invocation_id, content=[Envelope(trust=TrustLabel.USER, source=row.tool_name, text=answer)]
        )


@witness("sweep_picks_suspended", ("D16.3",), "the lease-expiry sweep has no predicate on suspended_at")
class _SweepPicksSuspended(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
            col(InvocationTable.lease_expires_at) < now
        )
        stranded = (col(InvocationTable.status) == InvocationStatus.RECORDED.value) & (
            col(InvocationTable.created_at) < now - self.config.lease_s
        )
        with Session(self.store.engine, expire_on_commit=False) as session:
            # The defect: every stale row is an orphan, suspended or not.
            stmt = select(InvocationTable).where(running | stranded).order_by(col(InvocationTable.seq))
            return list(session.exec(stmt).all())


@witness("breaker_spares_control_tools", ("D16.1",), "step 4's breaker sees no history for a CONTROL tool's calls")
class _BreakerSparesControlTools(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        if s.resolved is not None and s.resolved.spec.kind is ToolKind.CONTROL:
            return []  # The defect: a control call acts on the run, not the world, "so it cannot loop".
        return super().prior_identical(s)


async def _control_calls_unvalidated(p: PipelineHost, s: CallState) -> None:
    if s.resolved is not None and s.resolved.spec.kind is ToolKind.CONTROL:
        return  # The defect: "the run answers a control call, so its arguments need no schema".
    await STEP_TABLE[Step.VALIDATE](p, s)


@witness("control_skips_validation", ("D16.1",), "does not validate a control call's arguments against its schema")
class _ControlSkipsValidation(Pipeline):
    steps = STEP_TABLE | {Step.VALIDATE: _control_calls_unvalidated}


ANSWER_CUT = 200
"""Where the defective pipeline below cuts an answer: a column width a person's answer seldom reaches."""


@witness(
    "control_answer_truncated",
    ("D16.4", "D4.16"),
    "cuts a control call's answer to 200 characters before the claim stores it",
)
class _ControlAnswerTruncated(Pipeline):
    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        # The defect: an answer is "a short reply", so it is cut to a fixed width, and what is stored (and a recovery
        # reads back) is the cut one.
        return await super().resume(invocation_id, answer[:ANSWER_CUT])
