"""Crashes and recovery (decision 4's recovery table): a worker dies at a crash point; another worker decides the
call from the store alone, by a sweep past the lease or by the same step submitted again.

``points`` says where a call's run can die; ``left`` what the dead worker's committed writes left of the call (a row
per step 6 and 8, the watermark per D4.1, the terminal row per step 13); ``orphan`` whether a sweep takes it;
``recover`` what the recovering worker makes of it. Every branch names the rules it implements.
"""

from __future__ import annotations

from dataclasses import replace

from toolproof.spec import CrashPoint, EventKind, IdempotencyClass, InvocationStatus, ReasonCode

from ._catalog import Workload
from ._record import Record
from .d03 import run_tool
from .d13 import outcome

P = CrashPoint
BEFORE_ROW = (P.AFTER_RESOLVE, P.AFTER_VALIDATE, P.AFTER_LABEL, P.AFTER_GUARD, P.AFTER_DECIDE)
"""Before step 6: no row."""
BEFORE_CLAIM = (P.AFTER_RECORD, P.AFTER_HOLD)
"""A row, recorded (and held, when its decision holds it), never claimed."""
CLAIMED = (P.AFTER_CLAIM, P.AFTER_PREPARE)
"""Claimed RUNNING, the tool not entered."""
IN_TOOL = (P.BEFORE_WATERMARK, P.AFTER_WATERMARK, P.AFTER_EFFECT)
"""Inside step 10: the harness's tool dies there."""
AFTER_RUN = (P.AFTER_NORMALIZE, P.AFTER_EXCERPT)
"""Step 10 done, step 13 not written."""


def points(record: Record, continued: bool) -> tuple[CrashPoint, ...]:
    """The points a run of ``record`` meets, in order: its first run (held at step 7 when its decision holds it), or
    a run continued after an approval or a resume (from the claim on). Inside step 10, after_watermark only for a
    tool that marks."""
    assert record.tool is not None
    tool = IN_TOOL if record.tool.behaviour.mark else (P.BEFORE_WATERMARK, P.AFTER_EFFECT)
    run = (*CLAIMED, *tool, *AFTER_RUN, P.AFTER_COMPLETE)
    if continued:
        return run
    if record.decided != "allow":
        return (*BEFORE_ROW, *BEFORE_CLAIM)
    return (*BEFORE_ROW, *BEFORE_CLAIM, *run)


def rule_of(point: CrashPoint, record: Record) -> tuple[str, ...]:
    """The rules that decide what a crash at ``point`` leaves of ``record``."""
    if point in BEFORE_ROW or point in BEFORE_CLAIM:
        return {"approval": ("D4.14",), "control": ("D4.15",)}.get(record.decided, ("D4.8",))
    if point is P.AFTER_COMPLETE:
        return ("D4.12",)
    return ("D4.16",) if record.answer is not None else ("D3.1", "D4.1")


def left(record: Record, point: CrashPoint) -> bool:
    """Leave ``record`` (modelled as if its worker lived) as the dead worker's commits left it; False when no row was
    ever written. The worker is gone, so nothing counts toward the metrics but a terminal row (step 13 commits them).
    """
    record.crash_rules = rule_of(point, record)
    if point in BEFORE_ROW:
        return False  # D4.8: no row; a replay runs the call as new, a sweep has nothing to find.
    if point is P.AFTER_COMPLETE:
        return True  # D4.12: the terminal row stands.
    assert record.tool is not None
    record.verdicts, record.reason, record.delivery = (), None, None
    if point in BEFORE_CLAIM:
        if point is P.AFTER_RECORD or record.decided == "allow":
            # D3.1, D4.14, D4.15: recorded with its decision, never held, never claimed.
            record.status, record.events = InvocationStatus.RECORDED, [EventKind.REQUESTED]
            record.held_since, record.suspended = None, False
        record.run, record.lease_until = None, None
        record.attempt, record.attempts, record.executions, record.effects, record.watermark = 0, [], 0, 0, False
        return True
    record.status = InvocationStatus.RUNNING
    if record.events[-1] is EventKind.COMPLETED:
        record.events.pop()
    if point in AFTER_RUN:
        assert record.run is not None  # D4.1: the watermark the tool left is committed; the run is not.
        record.run = replace(record.run, unmarked=(0, 0))
        return True
    behaviour = record.tool.behaviour
    record.run = None  # The claim's lease stands (run_tool set it).
    if point in CLAIMED:
        record.attempt, record.attempts, record.executions, record.effects, record.watermark = 1, [], 0, 0, False
        return True
    # D4.1: a crash after the mark shows the watermark, committed before mark_effect_sent returned.
    record.attempt, record.attempts, record.executions = 1, [1], 1
    record.watermark = behaviour.mark and point is not P.BEFORE_WATERMARK
    record.effects = int(behaviour.effect and point is P.AFTER_EFFECT)
    return True


def orphan(record: Record, now: float, lease_s: float) -> bool:
    """D4.8, D4.18: a sweep takes a RUNNING row past its lease, and a row recorded and never claimed within one;
    never a suspended control call, a hold (D4.19, its bound decides) or a terminal row."""
    if record.suspended or record.terminal or record.pre_record:
        return False
    if record.status is InvocationStatus.RUNNING:
        return record.lease_until is not None and record.lease_until < now
    return record.status is InvocationStatus.RECORDED and record.created_at < now - lease_s


def recover(record: Record, workload: Workload, now: float, sweep: bool) -> tuple[str, ...]:
    """Decide an orphan from its row alone (D4.8): the watermark and the class, never its age. Returns the rules.

    A sweep logs tool_call.recovered for a RUNNING row; for a recorded one, and for a replay, the ADR does not say
    (the event's definition names a RUNNING row and a recovering worker), so there it is allowed, not required."""
    assert record.tool is not None
    record.events.append(EventKind.RECOVERED)
    record.recovered_optional = not sweep or record.status is InvocationStatus.RECORDED
    rules: tuple[str, ...]
    if record.status is InvocationStatus.RECORDED:
        # D4.8: resumed from step 7; D4.14, D4.15: the recorded decision holds it first.
        if record.decided == "approval":
            record.status, record.held_since = InvocationStatus.AWAITING_APPROVAL, now
            record.events.append(EventKind.APPROVAL_REQUESTED)
            rules = ("D4.14",)
        elif record.decided == "control":
            record.suspended = True
            record.events.append(EventKind.SUSPENDED)
            rules = ("D4.15",)
        else:
            run_tool(record, workload, now)
            rules = ("D4.8",)
    else:
        spec = record.tool.spec
        if record.watermark and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
            # D4.6: may have escaped, never retried; D4.7: only a set watermark makes it UNCERTAIN.
            record.run = None
            record.finish((outcome(ReasonCode.EFFECT_UNKNOWN, "D4.6", "D4.7"),))
            rules = ("D4.6", "D4.7")
        else:
            # D4.3 (unmarked, any class), D4.4 (marked IDEMPOTENT), D4.5 (marked CONDITIONALLY_IDEMPOTENT): retried
            # under the same key, the attempt going on from the row's.
            marked = record.watermark
            run_tool(record, workload, now)
            rules = ("D4.4",) if spec.idempotency is IdempotencyClass.IDEMPOTENT else ("D4.5",)
            rules = rules if marked else ("D4.3",)
        if record.answer is not None:
            rules = (*rules, "D4.16")  # D4.16: a resumed control call runs again with its answer.
    record.crash_rules = tuple(dict.fromkeys((*record.crash_rules, *rules)))
    return rules
