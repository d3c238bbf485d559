"""A failed completion recovered by the very instance whose completion write failed (decision 4).

The worker lives on after step 13's write failed past the effect; once the lease it holds has expired, its own
sweep, or its own resubmission of the same step (step 8 meets the RUNNING row), must resolve the row exactly as
another worker's would after a crash past the effect: UNCERTAIN for NON_IDEMPOTENT, a retry under the same key
otherwise. Owning the lease is no licence to replay what it remembers, nor to judge its own rows by other rules.
"""

from __future__ import annotations

from toolproof.fakes import CrashingTool
from toolproof.spec import (
    Disposition,
    FaultCell,
    FaultKind,
    FaultPath,
    FaultPlan,
    FaultPoint,
    FaultRecovery,
    IdempotencyClass,
    InvocationStatus,
    ProposedCall,
    StoreFault,
)

from ._faults import LEASE_S, FaultCase, fault_want, recorded
from ._harness import USER_ITEM, Harness
from ._recovery import describe_status

RUN = "run-in-place"
TOOL = "orders.place"


async def recovered_in_place(harness: Harness, idempotency: IdempotencyClass, by_sweep: bool) -> FaultCell:
    """Judge one cell (recorded in the fault matrix): a completion fault, the lease expires, and the same instance
    sweeps or resubmits."""
    recovery = FaultRecovery.OWN_SWEEP if by_sweep else FaultRecovery.OWN_RESUBMISSION
    case = FaultCase(FaultPoint.COMPLETE, FaultKind.ERROR, idempotency, FaultPath.FIRST, recovery=recovery)
    effects = [0]
    return await recorded(harness, case, lambda: _judge(harness, case, by_sweep, effects), effects)


async def _judge(harness: Harness, case: FaultCase, by_sweep: bool, effects: list[int]) -> None:
    idempotency = case.idempotency
    want = fault_want(FaultPoint.COMPLETE, idempotency)
    call = ProposedCall(call_id="call-0", tool_name=TOOL, arguments={"item": 0}, provenance={"item": [USER_ITEM.id]})
    tool = CrashingTool(harness.world, name=TOOL, idempotency=idempotency.value)
    plan = FaultPlan(point=FaultPoint.COMPLETE, call_id=call.call_id)
    how = "its own sweep" if by_sweep else "its own resubmission of the step"
    harness.log.append(f"the store fails the completion write of {call.call_id} ({idempotency.value}); then {how}")
    async with harness.open(tool, fault=plan, lease_s=LEASE_S) as session:
        try:
            answer = await session.step([call], step_number=1, run_id=RUN)
        except StoreFault as fault:
            harness.log.append(f"  -> StoreFault: {fault}")
            case.seen.append("StoreFault")
        else:
            shown = [describe_status(d) for d in answer]
            case.seen.append(f"answered {shown}")
            harness.fail(want.rule, f"a failed completion was answered {shown}")
        session.advance(LEASE_S + 1)
        outcome: Disposition | None
        if by_sweep:
            swept = await session.sweep()
            outcome = swept[0] if len(swept) == 1 else None
            harness.expect(want.rule, len(swept) == 1, f"{how} decided {len(swept)} call(s); expected the one")
        else:
            [outcome] = await session.step([call], step_number=1, run_id=RUN)
        rows = await session.rows(RUN)
    mine = [e for e in harness.world.effects if e.tool_name == TOOL]
    kept, seen = len([e for e in mine if not e.deduplicated]), len(mine)
    effects[0] = kept
    observed = describe_status(outcome)
    case.seen.append(f"recovered {observed}")
    harness.log.append(f"  recovered in place: {observed}; the world kept {kept} of {seen} effect(s)")
    harness.expect(
        want.final_rule,
        outcome is not None and outcome.status is want.status,
        f"after its own completion failed, {how} ended the call {observed}; expected {want.status.value}, as "
        "another worker recovers a crash past the effect",
    )
    harness.expect(
        want.final_rule,
        (kept, seen) == (want.effects, want.recorded),
        f"the world kept {kept} of {seen} effect(s) of the call; expected {want.effects} of {want.recorded}",
    )
    row = rows[0] if len(rows) == 1 else None
    harness.expect(
        want.final_rule,
        row is not None and row.status is want.status,
        f"the call's row reads {row.status.value if row else 'absent'}; expected {want.status.value}",
    )
    if want.status is InvocationStatus.UNCERTAIN:
        harness.expect("D4.7", row is not None and row.effect_sent_at is not None, "UNCERTAIN with the watermark unset")
