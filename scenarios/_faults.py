"""Fail a living worker's store at a point; judge the submitter's answer, the world, the row, the next call, and
recovery once the store returns.

One procedure for every way of failing the store: the implementation's own fault plan (``InstanceConfig.fault``,
over its default store or PostgreSQL), or a real fault the harness makes in a database it owns (``_faults_real``
makes it, through ``FaultCase.arm``, ``disarm`` and ``wrap``). The verdict rests on the world's effects (the harness's tools, the
harness's world) and on the rows and events a second instance reads from the store, never on what the
implementation says of itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolproof.fakes import CrashingTool
from toolproof.spec import (
    BEFORE_TOOL_FAULT_POINTS,
    ConformanceFailure,
    CrashPlan,
    CrashPoint,
    Disposition,
    EventKind,
    FaultCell,
    FaultKind,
    FaultMode,
    FaultPath,
    FaultPlan,
    FaultPoint,
    FaultRecovery,
    IdempotencyClass,
    InvocationRow,
    InvocationStatus,
    Outcome,
    ProposedCall,
    SideEffect,
    SimulatedCrash,
    StepRequest,
    StoreFault,
    Success,
    Suspended,
    Tool,
    ToolKind,
    Verdict,
)

from ._harness import USER_ITEM, Harness, Session
from ._recovery import ANSWER, UNTRUSTED_PAGE, describe_status

LEASE_S = 60.0
RUN = "run-fault"
NEXT_RUN = "run-next"
SCRIPT = "toolproof.fakes._scripts:three_orders"
"""The bridge path's script: orders 1, 2 and 3 through ``orders.place``; the fault meets the first."""
HELD_PATHS = (FaultPath.APPROVED, FaultPath.RESUMED)


def reachable(point: FaultPoint, path: FaultPath) -> bool:
    """Whether a call on ``path`` makes the write of ``point``: only a held call is held, and a call a crashed
    worker left RUNNING is past its record and hold."""
    if point is FaultPoint.HOLD:
        return path in HELD_PATHS
    if path is FaultPath.RECOVERED:
        return point in (FaultPoint.CLAIM, FaultPoint.WATERMARK, FaultPoint.COMPLETE)
    return True


@dataclass(frozen=True)
class FaultWant:
    """What a fault at one point must leave, for one idempotency class."""

    rule: str
    """The rule the submitter's answer and the row left behind are judged by."""
    final_rule: str
    """The rule recovery's resolution is judged by, once the store returns."""
    status: InvocationStatus
    """The call's final status."""
    effects: int
    """Effects the world keeps for the call in the end."""
    recorded: int
    """Effects the world saw at all for the call (retries of idempotent tools included)."""

    @property
    def text(self) -> str:
        """As the matrix shows it."""
        final = "UNCERTAIN effect_unknown" if self.status is InvocationStatus.UNCERTAIN else self.status.value
        return f"StoreFault; {final}"

    @property
    def rules(self) -> tuple[str, ...]:
        """Every rule a cell judges."""
        return tuple(dict.fromkeys((self.rule, self.final_rule, "D3.11", "D4.7")))


def fault_want(point: FaultPoint, idempotency: IdempotencyClass) -> FaultWant:
    """Before step 10 nothing ran and the call runs once after; a failed watermark is a call that never left the
    process (D4.3 retries it); a failed completion is recovered as a crash after the effect."""
    if point in BEFORE_TOOL_FAULT_POINTS:
        return FaultWant("D3.10", "D3.10", InvocationStatus.SUCCEEDED, 1, 1)
    if point is FaultPoint.WATERMARK:
        return FaultWant("D4.21", "D4.3", InvocationStatus.SUCCEEDED, 1, 1)
    if idempotency is IdempotencyClass.NON_IDEMPOTENT:
        return FaultWant("D4.22", "D4.22", InvocationStatus.UNCERTAIN, 1, 1)
    if idempotency is IdempotencyClass.IDEMPOTENT:
        return FaultWant("D4.22", "D4.22", InvocationStatus.SUCCEEDED, 2, 2)
    return FaultWant("D4.22", "D4.22", InvocationStatus.SUCCEEDED, 1, 2)


@dataclass
class FaultCase:
    """One cell: where, how, on which call, and how the store was failed."""

    point: FaultPoint
    kind: FaultKind
    idempotency: IdempotencyClass
    path: FaultPath
    store_returns: bool = True
    mode: FaultMode = FaultMode.PLAN_SQLITE
    store_url: str | None = None
    """The store every life of the cell opens (None: the implementation's default, in the cell's directory)."""
    arm: Callable[[], None] | None = None
    """A real fault: called right before the faulty life acts (the harness breaks its database); None: a plan."""
    disarm: Callable[[], None] | None = None
    """A real fault: gives the store back once the faulty life is over."""
    wrap: Callable[[Tool], Tool] | None = None
    """A real fault made by the harness's tool: wraps the call's tool in the faulty life."""
    restore: Callable[[], None] | None = None
    """A real fault the store cannot come back from while the faulty instance holds its files open: gives the store
    back once that instance closed, before anything reads it."""
    side_effect: SideEffect = SideEffect.EXTERNAL_WRITE
    """The side effect of the step's tools (READ_ONLY IDEMPOTENT tools make a batch parallel)."""
    recovery: FaultRecovery = FaultRecovery.ANOTHER_WORKER
    """Who resolves the call once the store returned."""
    seen: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Shape:
    names: list[str]
    calls: list[ProposedCall]
    target: int
    step: StepRequest


def _shape(case: FaultCase) -> _Shape:
    if case.path is FaultPath.BRIDGE:
        calls = [
            ProposedCall(call_id=f"ordinal-{i}", tool_name="orders.place", arguments={"item": i}) for i in (1, 2, 3)
        ]
        step = StepRequest(run_id=RUN, step_number=1, calls=calls[:1], context=[USER_ITEM])
        return _Shape(["orders.place"], calls, 0, step)
    size, target = (3, 1) if case.path is FaultPath.BATCH else (1, 0)
    names = [f"orders.place_{i}" for i in range(size)]
    source = UNTRUSTED_PAGE.id if case.path is FaultPath.APPROVED else USER_ITEM.id
    calls = [
        ProposedCall(call_id=f"call-{i}", tool_name=n, arguments={"item": i}, provenance={"item": [source]})
        for i, n in enumerate(names)
    ]
    context = [USER_ITEM, UNTRUSTED_PAGE] if case.path is FaultPath.APPROVED else [USER_ITEM]
    return _Shape(names, calls, target, StepRequest(run_id=RUN, step_number=1, calls=calls, context=context))


def _tools(harness: Harness, case: FaultCase, names: Sequence[str], crash: bool = False) -> list[Tool]:
    spec: dict[str, Any] = {"idempotency": case.idempotency.value, "side_effect": case.side_effect.value}
    if case.path is FaultPath.RESUMED:
        spec["kind"] = ToolKind.CONTROL.value
    tools: list[Tool] = [CrashingTool(harness.world, name=n, **spec) for n in names]
    tools.append(CrashingTool(harness.world, name="orders.next", idempotency=case.idempotency.value))
    return tools


def _effects(harness: Harness, name_prefix: str, item: object) -> tuple[int, int]:
    """(kept, seen) effects of the call of ``item`` on tools named from ``name_prefix``."""
    mine = [e for e in harness.world.effects if e.tool_name.startswith(name_prefix) and e.arguments.get("item") == item]
    return len([e for e in mine if not e.deduplicated]), len(mine)


async def _attempt(what: str, harness: Harness, action: Callable[[], Awaitable[object]]) -> str:
    """Run the faulty action; what it ended in, as text: ``StoreFault`` or what it did instead."""
    try:
        answer = await action()
    except StoreFault as fault:
        harness.log.append(f"  {what} -> StoreFault: {fault}")
        return "StoreFault"
    except ConformanceFailure:
        raise
    except Exception as exc:  # The implementation's answer, judged below: anything but StoreFault is wrong.
        harness.log.append(f"  {what} -> raised {type(exc).__name__}: {exc}")
        return f"raised {type(exc).__name__}"
    shown = _answer_text(answer)
    harness.log.append(f"  {what} -> answered {shown}")
    return f"answered {shown}"


def _answer_text(answer: object) -> str:
    if isinstance(answer, list):
        return "[" + ", ".join(describe_status(d) for d in answer) + "]"
    dispositions = getattr(answer, "dispositions", None)
    if isinstance(dispositions, list):
        return f"script {getattr(answer, 'status', '?')} [" + ", ".join(describe_status(d) for d in dispositions) + "]"
    if answer is None or isinstance(answer, Success | Outcome | Suspended):
        return describe_status(answer)
    return repr(answer)[:80]


async def fault_cell(harness: Harness, case: FaultCase) -> FaultCell:
    """Judge one cell and record it in ``harness.fault_cells`` however it ends."""
    want = fault_want(case.point, case.idempotency)
    effects = [0]
    return await recorded(harness, case, lambda: _judge(harness, case, want, effects), effects)


async def recorded(
    harness: Harness, case: FaultCase, judge: Callable[[], Awaitable[None]], effects: list[int]
) -> FaultCell:
    """Run ``judge`` (which fills ``case.seen`` and ``effects[0]``) and record the cell in ``harness.fault_cells``
    however it ends: passed, failed (raised again) or errored (raised again)."""
    want = fault_want(case.point, case.idempotency)
    verdict, evidence = Verdict.ERROR, ""
    try:
        await judge()
    except ConformanceFailure as failure:
        verdict, evidence = Verdict.FAIL, str(failure)
        raise
    else:
        verdict = Verdict.PASS
    finally:
        harness.fault_cells.append(
            FaultCell(
                run_id=harness.run_id,
                implementation=harness.implementation.name,
                mode=case.mode,
                point=case.point,
                kind=case.kind,
                idempotency=case.idempotency,
                path=case.path,
                store_returns=case.store_returns,
                expected=want.text,
                observed="; ".join(case.seen) or "not reached",
                effects=effects[0],
                verdict=verdict,
                evidence=evidence,
                side_effect=case.side_effect,
                recovery=case.recovery,
            )
        )
    return harness.fault_cells[-1]


async def _prepare(harness: Harness, case: FaultCase, shape: _Shape, rule: str) -> str:
    """What happens before the faulty life: a held call is held, a recovered call is left RUNNING by a crash.
    Returns the invocation id the faulty life answers ('' when it submits)."""
    store = {"store_url": case.store_url, "lease_s": LEASE_S}
    tools = _tools(harness, case, shape.names)
    before_answer = case.path in HELD_PATHS and case.point not in (FaultPoint.RECORD, FaultPoint.HOLD)
    if before_answer:
        async with harness.open(*tools, **store) as session:
            [held] = await session.step(shape.step.calls, step_number=1, context=shape.step.context, run_id=RUN)
        harness.expect(rule, isinstance(held, Suspended), f"the {case.path.value} call was not held: {held}")
        assert isinstance(held, Suspended)
        return held.invocation_id
    if case.path is FaultPath.RECOVERED:
        plan = CrashPlan(point=CrashPoint.AFTER_CLAIM, call_id=shape.calls[shape.target].call_id)
        try:
            async with harness.open(*tools, crash=plan, **store) as session:
                await session.step(shape.step.calls, step_number=1, context=shape.step.context, run_id=RUN)
        except SimulatedCrash:
            pass
        except BaseExceptionGroup as group:
            if group.subgroup(SimulatedCrash) is None:
                raise
        harness.clock.advance(LEASE_S + 1)
        harness.log.append(f"the worker died after claiming call-{shape.target}; clock +{LEASE_S + 1:.0f}s")
    return ""


async def _judge(harness: Harness, case: FaultCase, want: FaultWant, effects: list[int]) -> None:
    shape = _shape(case)
    target = shape.calls[shape.target]
    item = target.arguments["item"]
    harness.log.append(
        f"{case.mode.value}: the store fails the {case.point.value} write ({case.kind.value}, "
        f"{'comes back' if case.store_returns else 'stays down'}) of {target.call_id} "
        f"({case.idempotency.value}, {case.path.value})"
    )
    answered = await _prepare(harness, case, shape, want.rule)
    plan = None
    if case.arm is None and case.wrap is None:  # No real fault: the implementation is asked to make one.
        call_id = None if case.path is FaultPath.BRIDGE else target.call_id
        plan = FaultPlan(point=case.point, kind=case.kind, call_id=call_id, store_returns=case.store_returns)
    store = {"store_url": case.store_url, "lease_s": LEASE_S}
    tools = _tools(harness, case, shape.names)
    if case.wrap is not None:
        tools[shape.target] = case.wrap(tools[shape.target])
    async with harness.open(*tools, fault=plan, **store) as session:
        if case.arm is not None:
            case.arm()
        disarm = case.disarm
        try:
            got = await _attempt(
                f"the faulty {case.path.value} life", harness, lambda: _act(session, case, shape, answered)
            )
            case.seen.append(got)
            harness.expect(
                want.rule,
                got == "StoreFault",
                f"a failed {case.point.value} write ({case.kind.value}) was {got}; expected the typed error StoreFault "
                "and no disposition",
            )
            if case.store_returns and disarm is not None:
                disarm()  # The store is back before the next call.
                disarm = None
            await _next_call(harness, case, session)
        finally:
            if disarm is not None:
                disarm()
    if case.restore is not None:
        case.restore()
    await _left_behind(harness, case, want, item, target.call_id)
    await _recover(harness, case, want, shape, effects)


async def _act(session: Session, case: FaultCase, shape: _Shape, answered: str) -> object:
    if answered:
        if case.path is FaultPath.APPROVED:
            return await session.resolve_approval(answered, True)
        return await session.resume(answered, ANSWER)
    if case.path is FaultPath.RECOVERED:
        return await session.sweep()
    if case.path is FaultPath.BRIDGE:
        session.run_id = RUN
        return await session.run_script(SCRIPT)
    return await session.step(shape.step.calls, step_number=1, context=shape.step.context, run_id=RUN)


async def _next_call(harness: Harness, case: FaultCase, session: Session) -> None:
    """D3.11: the same instance's next call, on a fresh run."""
    call = ProposedCall(
        call_id="next-1", tool_name="orders.next", arguments={"item": "next"}, provenance={"item": [USER_ITEM.id]}
    )
    before = _effects(harness, "orders.next", "next")[1]
    got = await _attempt(
        "the same instance's next call",
        harness,
        lambda: session.step([call], step_number=1, run_id=NEXT_RUN),
    )
    ran = _effects(harness, "orders.next", "next")[1] - before
    if not case.store_returns:
        case.seen.append(f"next call {got}")
        harness.expect(
            "D3.11",
            got == "StoreFault" and ran == 0,
            f"while the store stayed down the next call was {got} with {ran} effect(s); expected StoreFault and none",
        )
        return
    case.seen.append(f"next call {got}")
    harness.expect(
        "D3.11",
        got == "answered [SUCCEEDED]" and ran == 1,
        f"after a failed {case.point.value} write ({case.kind.value}) the same instance's next call was {got} with "
        f"{ran} effect(s); expected SUCCEEDED with one (a session left failed, or a connection never replaced?)",
    )
    rows = await session.rows(NEXT_RUN)
    row = rows[0] if len(rows) == 1 else None
    harness.expect(
        "D3.11",
        row is not None and row.status is InvocationStatus.SUCCEEDED,
        f"the next call's row reads {row.status.value if row else 'absent'} in the store; expected SUCCEEDED",
    )
    _events_once(harness, await session.events(NEXT_RUN), {row.invocation_id: row} if row else {})


def _events_once(harness: Harness, events: Sequence[Any], rows: dict[str, InvocationRow]) -> None:
    """D3.11: one tool_call.requested per row, and a tool_call.completed exactly when the row is terminal."""
    for invocation_id, row in rows.items():
        kinds = [e.kind for e in events if e.invocation_id == invocation_id]
        completed = kinds.count(EventKind.COMPLETED)
        terminal = row.status.is_terminal
        harness.expect(
            "D3.11",
            kinds.count(EventKind.REQUESTED) == 1 and completed == int(terminal),
            f"invocation {invocation_id[:8]} ({row.call_id}, {row.status.value}) has events {[str(k) for k in kinds]}: "
            f"expected one {EventKind.REQUESTED} and {int(terminal)} {EventKind.COMPLETED} (a failed write left an "
            "event, or lost one)",
        )


def _events_committed(harness: Harness, case: FaultCase, kinds: list[str]) -> None:
    """D3.11: after a failed hold or claim write, the call's whole event list is what its committed writes left:
    no approval asked or suspension told without a committed hold, no start without a committed claim."""
    want: list[str] = [EventKind.REQUESTED]
    if case.path in HELD_PATHS and case.point is not FaultPoint.HOLD:  # The hold committed before the faulty life.
        approved = case.path is FaultPath.APPROVED
        want += [EventKind.APPROVAL_REQUESTED, EventKind.APPROVAL_RESOLVED] if approved else [EventKind.SUSPENDED]
    if case.path is FaultPath.RECOVERED:  # The dead worker's claim and the sweep's recovery committed, not its claim.
        want += [EventKind.STARTED, EventKind.RECOVERED]
    harness.expect(
        "D3.11",
        kinds == want,
        f"after a failed {case.point.value} write the call's events are {[str(k) for k in kinds]}; expected "
        f"{[str(k) for k in want]}, what its committed writes left (an event published for a write that failed)",
    )


async def _left_behind(harness: Harness, case: FaultCase, want: FaultWant, item: object, call_id: str) -> None:
    """What the failed write left: read by another instance, and in the world."""
    seen = _effects(harness, "orders.place", item)[1]
    async with harness.reader(store_url=case.store_url) as reader:
        rows = [r for r in await reader.rows(RUN) if r.call_id == call_id or case.path is FaultPath.BRIDGE]
        events = await reader.events(RUN)
    row = rows[0] if rows else None
    shown = "no row" if row is None else f"{row.status.value}, watermark {'set' if row.effect_sent_at else 'unset'}"
    harness.log.append(f"  left behind: {shown}; the world saw {seen} effect(s) of the call")
    case.seen.append(f"left {shown}, {seen} effect(s)")
    if case.point in BEFORE_TOOL_FAULT_POINTS:
        harness.expect(
            want.rule, seen == 0, f"the tool ran ({seen} effect(s)) although the {case.point.value} write failed"
        )
        harness.expect(
            want.rule,
            row is None or not row.status.is_terminal,
            f"the call's row reads {shown} after its {case.point.value} write failed",
        )
        if case.point is FaultPoint.RECORD:
            harness.expect(want.rule, row is None, f"the failed record write left a row ({shown})")
        if case.point is FaultPoint.HOLD:
            held = row is not None and (row.status is InvocationStatus.AWAITING_APPROVAL or row.suspended)
            harness.expect(want.rule, not held, f"the failed hold write left the call held ({shown})")
        if row is not None:
            _events_committed(harness, case, [e.kind for e in events if e.invocation_id == row.invocation_id])
    elif case.point is FaultPoint.WATERMARK:
        harness.expect(want.rule, seen == 0, f"the tool acted ({seen} effect(s)) after its watermark write failed")
        harness.expect(
            want.rule,
            row is not None and row.effect_sent_at is None and row.status is InvocationStatus.RUNNING,
            f"after a failed watermark write the row reads {shown}; expected RUNNING, watermark unset",
        )
    else:
        harness.expect(
            want.rule,
            row is not None and row.status is InvocationStatus.RUNNING and row.effect_sent_at is not None,
            f"after a failed completion the row reads {shown}; expected RUNNING with the watermark set, as recovery "
            "expects",
        )
    _events_once(harness, events, {r.invocation_id: r for r in rows})


async def _recover(harness: Harness, case: FaultCase, want: FaultWant, shape: _Shape, effects: list[int]) -> None:
    """The store is back: another worker, past the lease, sweeps and replays; held calls are answered."""
    harness.clock.advance(LEASE_S + 1)
    store = {"store_url": case.store_url, "lease_s": LEASE_S}
    target = shape.calls[shape.target]
    item = target.arguments["item"]
    async with harness.open(*_tools(harness, case, shape.names), **store) as session:
        await session.sweep()
        outcome: Disposition | None
        if case.path is FaultPath.BRIDGE:
            session.run_id = RUN
            run = await session.run_script(SCRIPT)
            outcome = run.dispositions[0] if run.dispositions else None
            others: list[Disposition] = list(run.dispositions[1:])
        else:
            dispositions = await session.step(shape.step.calls, step_number=1, context=shape.step.context, run_id=RUN)
            outcome = dispositions[shape.target]
            others = [d for i, d in enumerate(dispositions) if i != shape.target]
        if isinstance(outcome, Suspended):
            if case.path is FaultPath.APPROVED:
                outcome = await session.resolve_approval(outcome.invocation_id, True)
            else:
                outcome = await session.resume(outcome.invocation_id, ANSWER)
        rows = await session.rows(RUN)
        events = await session.events(RUN)
    kept, seen = _effects(harness, "orders.place", item)
    effects[0] = kept
    observed = describe_status(outcome)
    case.seen.append(f"recovered {observed}")
    harness.log.append(f"  recovered: {observed}; the world kept {kept} of {seen} effect(s)")
    row = next(
        (r for r in rows if r.call_id == (rows[0].call_id if case.path is FaultPath.BRIDGE else target.call_id)), None
    )
    if outcome is not None and outcome.status is InvocationStatus.UNCERTAIN:
        harness.expect("D4.7", row is not None and row.effect_sent_at is not None, "UNCERTAIN with the watermark unset")
    harness.expect(
        want.final_rule,
        outcome is not None and outcome.status is want.status,
        f"once the store returned, the call whose {case.point.value} write failed ended {observed}; "
        f"expected {want.status.value}",
    )
    harness.expect(
        want.final_rule,
        (kept, seen) == (want.effects, want.recorded),
        f"the world kept {kept} of {seen} effect(s) of the call; expected {want.effects} of {want.recorded}",
    )
    for other in others:
        harness.expect(
            "D3.11",
            other.status is InvocationStatus.SUCCEEDED,
            f"another call of the step ended {describe_status(other)} once the store returned; expected SUCCEEDED",
        )
    for i, call in enumerate(shape.calls):
        if i == shape.target:
            continue
        other_kept, other_seen = _effects(harness, "orders.place", call.arguments["item"])
        harness.expect(
            "D3.11",
            (other_kept, other_seen) == (1, 1),
            f"{call.call_id} left {other_kept} of {other_seen} effect(s) in all; expected 1 of 1",
        )
    _events_once(harness, events, {r.invocation_id: r for r in rows})
