"""Crashes and recovery (decision 4's recovery table): a worker dies at a crash point; another worker decides the
call from the store alone, by a sweep past the lease or by the same step submitted again.

``points`` says where a call's run can die; ``left`` what the dead worker's committed writes left of the call (a row
per step 6 and 8, the watermark per D4.1, the terminal row per step 13); ``orphan`` whether a sweep takes it;
``recover`` what the recovering worker makes of it. Every branch names the rules it implements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class Before:
    """What a call's row held when the run that dies began (a first run begins with nothing)."""

    status: InvocationStatus = InvocationStatus.RECORDED
    events: tuple[EventKind, ...] = (EventKind.REQUESTED,)
    attempt: int = 0
    attempts: tuple[int, ...] = ()
    executions: int = 0
    effects: int = 0
    watermark: bool = False
    lease_until: float | None = None

    @classmethod
    def of(cls, record: Record) -> Before:
        """``record`` as it stands."""
        return cls(
            record.status,
            tuple(record.events),
            record.attempt,
            tuple(record.attempts),
            record.executions,
            record.effects,
            record.watermark,
            record.lease_until,
        )


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


def recovery_points(record: Record, sweep: bool) -> tuple[CrashPoint, ...]:
    """The points a recovery of ``record`` that runs its tool meets: a sweep's from step 7 (a recorded row) or 8 (a
    RUNNING one), a replay's every point of the step, the ones before the claim writing nothing. A recovery that
    does not run the tool (an escaped call, a held one) is not crashed: which points it passes is the
    implementation's."""
    if record.decided != "allow" or escaped(record):
        return ()
    run = points(record, True)
    if not sweep:
        return (*BEFORE_ROW, *BEFORE_CLAIM, *run)
    return (P.AFTER_HOLD, *run) if record.status is InvocationStatus.RECORDED else run


def escaped(record: Record) -> bool:
    """D4.6: a RUNNING NON_IDEMPOTENT row whose watermark is set may have escaped."""
    assert record.tool is not None
    non = record.tool.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
    return record.status is InvocationStatus.RUNNING and record.watermark and non


def rule_of(point: CrashPoint, record: Record) -> tuple[str, ...]:
    """The rules that decide what a crash at ``point`` leaves of ``record``."""
    if point in BEFORE_ROW or point in BEFORE_CLAIM:
        return {"approval": ("D4.14",), "control": ("D4.15",)}.get(record.decided, ("D4.8",))
    if point is P.AFTER_COMPLETE:
        return ("D4.12",)
    return ("D4.16",) if record.answer is not None else ("D3.1", "D4.1")


def left(record: Record, point: CrashPoint, before: Before | None = None) -> bool:
    """Leave ``record`` (modelled as if its worker lived) as the dead worker's commits left it; False when no row was
    ever written. ``before``: the row when the dying run began (None: a first run). The worker is gone, so nothing
    counts toward the metrics but a terminal row (step 13 commits them)."""
    record.crash_rules = tuple(dict.fromkeys((*record.crash_rules, *rule_of(point, record))))
    if point in BEFORE_ROW and before is None:
        return False  # D4.8: no row; a replay runs the call as new, a sweep has nothing to find.
    if point is P.AFTER_COMPLETE:
        return True  # D4.12: the terminal row stands.
    assert record.tool is not None
    record.verdicts, record.reason, record.delivery = (), None, None
    if point in AFTER_RUN:
        # D4.1: the watermark the tool left is committed; the run's outcome is not.
        assert record.run is not None
        record.status, record.run = InvocationStatus.RUNNING, replace(record.run, unmarked=(0, 0))
        record.events.pop()  # Its tool_call.completed.
        return True
    if before is None:
        if point in BEFORE_CLAIM and (point is P.AFTER_RECORD or record.decided == "allow"):
            # D3.1, D4.14, D4.15: recorded with its decision, never held, never claimed.
            record.status, record.events = InvocationStatus.RECORDED, [EventKind.REQUESTED]
            record.held_since, record.suspended = None, False
        before = Before(status=record.status, events=tuple(record.events[:1]))
    b = before
    record.attempt, record.attempts, record.executions = b.attempt, list(b.attempts), b.executions
    record.effects, record.watermark, record.run = b.effects, b.watermark, None
    if point in BEFORE_ROW or point in BEFORE_CLAIM:
        if record.status is InvocationStatus.AWAITING_APPROVAL or record.suspended:
            record.run, record.lease_until = None, None  # A first run held at step 7: the hold stands.
            return True
        # Nothing of this run was written (a replay's steps before the claim write nothing for a row it adopts).
        record.status, record.events, record.lease_until = b.status, list(b.events), b.lease_until
        return True
    record.status = InvocationStatus.RUNNING
    if record.events[-1] is EventKind.COMPLETED:
        record.events.pop()
    # The claim's lease stands (run_tool set it), and its attempt.
    record.attempt = b.attempt + 1
    if point in CLAIMED:
        return True
    # D4.1: a crash after the mark shows the watermark, committed before mark_effect_sent returned.
    behaviour = record.tool.behaviour
    record.attempts.append(record.attempt)
    record.executions += 1
    record.watermark = b.watermark or (behaviour.mark and point is not P.BEFORE_WATERMARK)
    record.effects += int(behaviour.effect and point is P.AFTER_EFFECT)
    return True


def orphan(record: Record, now: float, lease_s: float) -> bool:
    """D4.8, D4.18: a sweep takes a RUNNING row past its lease, and a row recorded and never claimed within one;
    never a suspended control call, a hold (D4.19, its bound decides) or a terminal row."""
    if record.suspended or record.terminal or record.pre_record:
        return False
    if record.status is InvocationStatus.RUNNING:
        return record.lease_until is not None and record.lease_until < now
    return record.status is InvocationStatus.RECORDED and record.created_at < now - lease_s


def recover(
    record: Record, workload: Workload, now: float, sweep: bool, dies: CrashPoint | None = None
) -> tuple[str, ...]:
    """Decide an orphan from its row alone (D4.8): the watermark and the class, never its age. Returns the rules.
    With ``dies``, the recovering worker dies at that point of the run it starts (``recovery_points``).

    tool_call.recovered is allowed, not required: no rule asks for it, and its definition ("a recovering worker
    decided the fate of a RUNNING row") leaves open a replay's and a recorded row's; D4.18 forbids it for a live
    lease, and D3.7 puts it before tool_call.completed."""
    assert record.tool is not None
    record.events.append(EventKind.RECOVERED)
    record.recovered_optional = True
    before = Before.of(record)
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
    elif escaped(record):
        # D4.6: may have escaped, never retried; D4.7: only a set watermark makes it UNCERTAIN.
        record.run = None
        record.finish((outcome(ReasonCode.EFFECT_UNKNOWN, "D4.6", "D4.7"),))
        rules = ("D4.6", "D4.7")
    else:
        # D4.3 (unmarked, any class), D4.4 (marked IDEMPOTENT), D4.5 (marked CONDITIONALLY_IDEMPOTENT): retried under
        # the same key, the attempt going on from the row's.
        marked = record.watermark
        run_tool(record, workload, now)
        rules = ("D4.4",) if record.tool.spec.idempotency is IdempotencyClass.IDEMPOTENT else ("D4.5",)
        rules = rules if marked else ("D4.3",)
    if record.answer is not None:
        rules = (*rules, "D4.16")  # D4.16: a resumed control call runs again with its answer.
    if "D4.8" not in rules:
        rules = (*rules, "D4.8")  # D4.8: decided from the row alone, whatever its age (drawn up to a week).
    record.crash_rules = tuple(dict.fromkeys((*record.crash_rules, *rules)))
    if dies is not None:
        left(record, dies, before)
    return rules
