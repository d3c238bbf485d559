"""Store faults (D3.10, D3.11, D4.21, D4.22): the worker lives and its store fails one write of a call.

The workload's fault plan (``Workload.fault``, the port's ``InstanceConfig.fault``) names the write: a persistence
point or the watermark, of the first call named ``call_id`` that makes it (any call when None), with a kind (which
changes nothing observable) and whether the store comes back. The submitter gets ``spec.StoreFault`` and no
disposition; the call's row is what its committed writes left; a store that does not come back fails every later
write of the instance, so every later step gets StoreFault and touches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from toolproof.spec import EventKind, FaultPlan, FaultPoint, InvocationStatus

from ._record import CallRef, Record

RULES: dict[FaultPoint, str] = {
    FaultPoint.RECORD: "D3.10",
    FaultPoint.HOLD: "D3.10",
    FaultPoint.CLAIM: "D3.10",
    FaultPoint.WATERMARK: "D4.21",
    FaultPoint.COMPLETE: "D4.22",
}
"""The rule that decides what a failed write at each point leaves."""


class FaultExpected(Exception):
    """The submitter must get ``spec.StoreFault`` and no disposition; ``rules`` decide it."""

    def __init__(self, rules: tuple[str, ...]) -> None:
        super().__init__(", ".join(rules))
        self.rules = rules


def writes(record: Record) -> tuple[FaultPoint, ...]:
    """The writes a proposal's submission makes, in order (a refusal before step 6 writes its row at step 13 only;
    a held call its record and its hold; a claimed one its record, its claim, its watermark when the tool marks,
    and its completion)."""
    if record.pre_record:
        return (FaultPoint.COMPLETE,)
    if record.status is InvocationStatus.AWAITING_APPROVAL or record.suspended:
        return (FaultPoint.RECORD, FaultPoint.HOLD)
    marks = record.tool is not None and record.tool.behaviour.mark
    return (FaultPoint.RECORD, FaultPoint.CLAIM, *((FaultPoint.WATERMARK,) if marks else ()), FaultPoint.COMPLETE)


@dataclass
class StoreFaults:
    """Where the instance's store stands: its plan not yet met, met once, or down for good."""

    plan: FaultPlan | None
    fired: bool = False
    down: bool = False
    faulted: dict[CallRef, str] = field(default_factory=dict)
    """The calls whose write failed, and the rule that decides what they left."""
    refused: set[CallRef] = field(default_factory=set)
    """Those of them refused before step 6: D3.3, a refusal's one write is its terminal row at step 13, so when it
    fails no row of the call is left (none RECORDED for a sweep to take)."""

    def meets(self, record: Record) -> FaultPoint | None:
        """The write of ``record``'s submission that fails, if any (the plan fires once)."""
        plan = self.plan
        if plan is None or self.fired or (plan.call_id is not None and plan.call_id != record.call.call_id):
            return None
        if plan.point not in writes(record):
            return None
        self.fired, self.down = True, not plan.store_returns
        return plan.point

    def fail(self, record: Record, point: FaultPoint) -> bool:
        """Leave ``record`` as its committed writes left it when the write of ``point`` failed; False when no row
        was ever written (the record write, or a refusal's only write, failed)."""
        self.faulted[record.ref] = RULES[point]
        if record.pre_record:
            self.refused.add(record.ref)
        if point is FaultPoint.RECORD or record.pre_record:
            return False
        record.verdicts, record.reason, record.delivery = (), None, None
        record.suspended, record.held_since = False, None
        if point in (FaultPoint.HOLD, FaultPoint.CLAIM):
            # D3.10: nothing ran; an event is a fact a committed write states, so only the request's stands.
            record.status, record.events = InvocationStatus.RECORDED, [EventKind.REQUESTED]
            record.run, record.executions, record.effects, record.watermark = None, 0, 0, False
            record.attempt, record.attempts = 0, []
            return True
        record.status, record.events = InvocationStatus.RUNNING, [EventKind.REQUESTED, EventKind.STARTED]
        if point is FaultPoint.WATERMARK:
            # D4.21: mark_effect_sent raised to the tool on its first attempt, before its effect.
            record.run, record.executions, record.effects, record.watermark = None, 1, 0, False
            record.attempt, record.attempts = 1, [1]
            return True
        # D4.22: the tool ran as it does; the completion (and the counters committed with it) did not commit.
        assert record.run is not None
        record.run = replace(record.run, unmarked=(0, 0))
        return True
