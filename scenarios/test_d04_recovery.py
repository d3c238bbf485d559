"""Decision 4, recovery: crash a worker at every point; another worker decides from the store alone.

Every crash point x idempotency class, with the crashing call alone or first, middle or
last in its batch, in-process; and every point x class with the worker really killed
(SIGKILL) over a shared SQLite file and, given a database URL, over PostgreSQL. Every point
on each decision path (allowed, held for approval, a control suspension), recovered by a
sweep and by a replay of the step alone: nothing consequential from untrusted content runs
unapproved, and a control call never runs without its suspension and its answer.

The recovering worker is another instance over the same store (in-process crashes) or another
process (SIGKILL), started after the lease expired on the injected clock; it sweeps, then the
step is replayed (D4.8). Each cell judges the rule the recovery table gives its crash point,
class and path (``_recovery.expectation``), among them:

- D4.12: the cells at after_complete (every class, every batch position, every crash mode): the
  replay answers from the terminal row and the world sees no second effect;
- D4.14 and D4.15: the approval and the control path at every crash point up to and including
  step 7, recovered by a sweep and by a replay (after step 7 a held path's cell judges the rule
  the allowed call would);
- D4.16: the control path at every crash point after step 7.

D4.9 is judged twice. By racing: two workers, each in its own thread, event loop and
connections, sweep the same expired lease at the same instant (a barrier), as many times as the
exploration profile says (``TOOLPROOF_HYPOTHESIS_PROFILE``; ci, the default: 200), on SQLite
and, given a database URL, on PostgreSQL. And without racing luck: one worker is paused at each
reading of its injected clock (so between any read of the row and the claim that follows it)
while a second worker runs the same call to completion, both submitting it or both sweeping its
orphan; the paused worker's claim from its stale read has to lose, so the tool runs once.
"""

from __future__ import annotations

import pytest

from toolproof.fakes import CrashingTool
from toolproof.spec import (
    BatchPosition,
    CrashPlan,
    CrashPoint,
    DecisionPath,
    IdempotencyClass,
    InvocationStatus,
    RecoveryMode,
    RecoveryVia,
    SimulatedCrash,
)

from ._exploration import selected_exploration
from ._harness import Harness
from ._recovery import LEASE_S, crash_cell, expectation, lease_race, postgres_url, stale_reads

SIGKILL_HELD_POINTS = (CrashPoint.AFTER_RECORD, CrashPoint.AFTER_HOLD, CrashPoint.AFTER_CLAIM, CrashPoint.AFTER_EFFECT)
"""Where the held paths are also crashed by SIGKILL: before the hold, at it, and after an answer, before and after
the effect (every point runs in-process)."""


def _cell(
    mode: RecoveryMode,
    point: CrashPoint,
    idempotency: IdempotencyClass,
    position: BatchPosition,
    path: DecisionPath,
    recovery: RecoveryVia,
) -> object:
    want = expectation(point, idempotency, path)
    marks = [pytest.mark.rules(want.rule, *want.rules, "D4.7")]
    if mode is RecoveryMode.SIGKILL_POSTGRES:
        marks.append(pytest.mark.needs_database)
    if mode is not RecoveryMode.SIMULATED:
        marks.append(pytest.mark.slow)
    return pytest.param(mode, point, idempotency, position, path, recovery, marks=marks)


def _cells() -> list[object]:
    """Allowed calls: every point x class x position in-process (recovered by a sweep), every point x class by a
    replay alone, every point x class by SIGKILL. Held calls (approval, control; the D11 setup's NON_IDEMPOTENT
    write): every point, recovered both ways, in-process; the SIGKILL_HELD_POINTS by SIGKILL."""
    cells: list[object] = []
    single, non = BatchPosition.SINGLE, IdempotencyClass.NON_IDEMPOTENT
    allow, sweep, replay = DecisionPath.ALLOW, RecoveryVia.SWEEP, RecoveryVia.REPLAY
    plans: list[tuple[RecoveryMode, tuple[BatchPosition, ...]]] = [
        (RecoveryMode.SIMULATED, tuple(BatchPosition)),
        (RecoveryMode.SIGKILL_SQLITE, (single,)),
        (RecoveryMode.SIGKILL_POSTGRES, (single,)),
    ]
    for mode, positions in plans:
        for point in CrashPoint:
            for idempotency in IdempotencyClass:
                for position in positions:
                    cells.append(_cell(mode, point, idempotency, position, allow, sweep))
                if mode is RecoveryMode.SIMULATED:
                    cells.append(_cell(mode, point, idempotency, single, allow, replay))
    for path in (DecisionPath.APPROVAL, DecisionPath.CONTROL):
        for point in CrashPoint:
            for recovery in RecoveryVia:
                cells.append(_cell(RecoveryMode.SIMULATED, point, non, single, path, recovery))
        for mode in (RecoveryMode.SIGKILL_SQLITE, RecoveryMode.SIGKILL_POSTGRES):
            for point in SIGKILL_HELD_POINTS:
                cells.append(_cell(mode, point, non, single, path, sweep))
    return cells


# No function-level rules mark: each cell's own marks name the rules it judges.
@pytest.mark.parametrize(("mode", "point", "idempotency", "position", "path", "recovery"), _cells())
async def test_crash_at_every_point_is_recovered_by_the_watermark(
    harness: Harness,
    database_url: str | None,
    mode: RecoveryMode,
    point: CrashPoint,
    idempotency: IdempotencyClass,
    position: BatchPosition,
    path: DecisionPath,
    recovery: RecoveryVia,
) -> None:
    await crash_cell(
        harness,
        mode=mode,
        point=point,
        idempotency=idempotency,
        position=position,
        path=path,
        recovery=recovery,
        database_url=database_url,
    )


@pytest.mark.rules("D4.8")
async def test_an_old_unmarked_orphan_is_retried_not_presumed_escaped(harness: Harness) -> None:
    tool = CrashingTool(harness.world, name="orders.place")
    call = {"item": 1}
    async with harness.open(tool, crash=CrashPlan(point=CrashPoint.AFTER_CLAIM), lease_s=LEASE_S) as session:
        try:
            await session.call(tool.spec.name, call)
            harness.fail("D4.8", "the worker did not die after its claim: the implementation ignored its crash plan")
        except (SimulatedCrash, BaseExceptionGroup):
            pass
    week = 7 * 24 * 3600.0
    session_clock_note = f"a different worker recovers a week ({week:.0f} s) later"
    harness.log.append(session_clock_note)
    harness.clock.advance(week)
    async with harness.open(CrashingTool(harness.world, name="orders.place"), lease_s=LEASE_S) as session:
        await session.sweep()
        rows = await session.rows()
    harness.expect(
        "D4.8",
        [r.status for r in rows] == [InvocationStatus.SUCCEEDED] and len(harness.world.effects) == 1,
        f"a week-old RUNNING call whose watermark is unset was resolved {[r.status.value for r in rows]} with "
        f"{len(harness.world.effects)} effect(s); its age says nothing about escape, the watermark does",
    )


@pytest.mark.rules("D4.3", "D4.7")
@pytest.mark.parametrize("deaths", [2, 3])
@pytest.mark.parametrize("idempotency", list(IdempotencyClass))
async def test_an_unmarked_orphan_is_retried_however_many_workers_died_on_it(
    harness: Harness, idempotency: IdempotencyClass, deaths: int
) -> None:
    # The first worker dies after its claim; each next one dies after claiming the orphan in its sweep. The row's
    # watermark stays unset throughout, so the last worker retries it (D4.3) and never resolves it UNCERTAIN (D4.7),
    # however many attempts the row counts.
    name = "orders.place"
    for death in range(deaths):
        tool = CrashingTool(harness.world, name=name, idempotency=idempotency)
        async with harness.open(tool, crash=CrashPlan(point=CrashPoint.AFTER_CLAIM), lease_s=LEASE_S) as session:
            try:
                if death == 0:
                    await session.call(name, {"item": 1})
                else:
                    await session.sweep()
                harness.fail("D4.3", f"worker {death + 1} did not die after its claim: it ignored its crash plan")
            except (SimulatedCrash, BaseExceptionGroup):
                harness.log.append(f"  worker {death + 1} died after its claim")
        harness.clock.advance(LEASE_S + 1)
    async with harness.open(
        CrashingTool(harness.world, name=name, idempotency=idempotency), lease_s=LEASE_S
    ) as session:
        await session.sweep()
        rows = await session.rows()
    statuses = [r.status for r in rows]
    harness.expect(
        "D4.7",
        InvocationStatus.UNCERTAIN not in statuses,
        f"a {idempotency.value} call whose {deaths} workers died after their claims, its watermark never set, was "
        f"resolved {[s.value for s in statuses]}; UNCERTAIN is only for a set watermark",
    )
    harness.expect(
        "D4.3",
        statuses == [InvocationStatus.SUCCEEDED] and len(harness.world.effects) == 1,
        f"a {idempotency.value} call whose {deaths} workers died after their claims was resolved "
        f"{[s.value for s in statuses]} with {len(harness.world.effects)} effect(s); expected it retried once more, "
        "SUCCEEDED with one effect",
    )


@pytest.mark.rules("D4.9")
@pytest.mark.parametrize(
    "backend", [pytest.param("sqlite"), pytest.param("postgres", marks=[pytest.mark.needs_database])]
)
async def test_two_workers_racing_for_one_expired_lease_execute_it_once(
    harness: Harness, database_url: str | None, backend: str
) -> None:
    store_url = postgres_url(harness, database_url) if backend == "postgres" and database_url else None
    counts = await lease_race(harness, store_url, selected_exploration().races)
    doubled = [race for race, n in enumerate(counts) if n != 1]
    harness.expect(
        "D4.9",
        not doubled,
        f"in {len(doubled)} of {len(counts)} races the call ran {sorted({counts[r] for r in doubled})} times "
        f"(races {doubled[:10]}); exactly one worker may win a lease",
    )


@pytest.mark.rules("D4.9")
@pytest.mark.parametrize("via", ["submit", "sweep"])
@pytest.mark.parametrize(
    "backend", [pytest.param("sqlite"), pytest.param("postgres", marks=[pytest.mark.needs_database])]
)
async def test_a_claim_from_a_stale_read_never_runs_a_call_another_worker_completed(
    harness: Harness, database_url: str | None, backend: str, via: str
) -> None:
    """No racing luck: the first worker is paused at every reading of its injected clock (so between any read of
    the row and the claim that follows it) while a second worker runs the same call to completion."""
    store_url = postgres_url(harness, database_url) if backend == "postgres" and database_url else None
    found = await stale_reads(harness, store_url, "submit" if via == "submit" else "sweep")
    doubled = [r for r in found if r.executions != 1]
    harness.expect(
        "D4.9",
        bool(found) and not doubled,
        f"paused at {len(found)} clock readings while another worker completed the call, the first worker then ran "
        f"it again at {len(doubled)}: "
        + "; ".join(f"reading {r.at}: {r.executions} executions, answered {r.answers}" for r in doubled[:5])
        + "; a claim taken from a read made before another worker finished the call must lose",
    )
