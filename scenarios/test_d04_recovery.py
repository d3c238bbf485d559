"""Decision 4, recovery: crash a worker at every point; another worker decides from the store alone.

Every crash point x idempotency class, with the crashing call alone or first, middle or
last in its batch, in-process; and every point x class with the worker really killed
(SIGKILL) over a shared SQLite file and, given a database URL, over PostgreSQL.
"""

from __future__ import annotations

import pytest

from toolproof.fakes import CrashingTool
from toolproof.spec import (
    BatchPosition,
    CrashPlan,
    CrashPoint,
    IdempotencyClass,
    InvocationStatus,
    RecoveryMode,
    SimulatedCrash,
)

from ._exploration import selected_exploration
from ._harness import Harness
from ._recovery import LEASE_S, crash_cell, expectation, lease_race, postgres_url


def _cells() -> list[object]:
    cells: list[object] = []
    plans: list[tuple[RecoveryMode, tuple[BatchPosition, ...]]] = [
        (RecoveryMode.SIMULATED, tuple(BatchPosition)),
        (RecoveryMode.SIGKILL_SQLITE, (BatchPosition.SINGLE,)),
        (RecoveryMode.SIGKILL_POSTGRES, (BatchPosition.SINGLE,)),
    ]
    for mode, positions in plans:
        for point in CrashPoint:
            for idempotency in IdempotencyClass:
                for position in positions:
                    marks = [pytest.mark.rules(expectation(point, idempotency).rule, "D4.7")]
                    if mode is RecoveryMode.SIGKILL_POSTGRES:
                        marks.append(pytest.mark.needs_database)
                    if mode is not RecoveryMode.SIMULATED:
                        marks.append(pytest.mark.slow)
                    cells.append(pytest.param(mode, point, idempotency, position, marks=marks))
    return cells


# No function-level rules mark: each cell's own marks name the rule it judges.
@pytest.mark.parametrize(("mode", "point", "idempotency", "position"), _cells())
async def test_crash_at_every_point_is_recovered_by_the_watermark(
    harness: Harness,
    database_url: str | None,
    mode: RecoveryMode,
    point: CrashPoint,
    idempotency: IdempotencyClass,
    position: BatchPosition,
) -> None:
    await crash_cell(
        harness, mode=mode, point=point, idempotency=idempotency, position=position, database_url=database_url
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
