"""Decision 4, what a sweep must take: every orphan it finds, each retried under the key its row records.

D4.3 with several orphans at once: parallel batches of one, two and three reads die mid-flight (every member
inside its tool when the worker dies), in one step, in two steps of one run, or in two runs; one sweep after the
lease must retry every one of them, each once. Judged by the executions the world records per member.

D4.3, D4.4 and D4.5 across a tool's versions: a call crashes at a point its class retries (after the claim, before
or after the watermark, after the effect); the tool is registered again at the same version or at a new one, and
a sweep retries the orphan. Every key the tool was handed for the call, before the crash and in the retry, must
be the key its row recorded before the crash: the external service deduplicates on it, and a new version's key
would escape that.
"""

from __future__ import annotations

import anyio
import pytest

from toolproof.fakes import CrashingTool, ProbeTool
from toolproof.spec import (
    CrashPlan,
    CrashPoint,
    IdempotencyClass,
    InvocationStatus,
    SimulatedCrash,
    Success,
    Tool,
    ToolExecutionContext,
    crash_now,
)

from ._bounds import bound
from ._harness import Harness, describe

LEASE_S = 60.0

LAYOUTS: dict[str, tuple[tuple[str, int], ...]] = {
    "one-step": (("run-a", 1),),
    "two-steps": (("run-a", 1), ("run-a", 2)),
    "two-runs": (("run-a", 1), ("run-b", 1)),
}
"""Where the dying batches are: (run, step) of each, one worker life apiece."""


def _reads(harness: Harness, size: int) -> list[Tool]:
    """``size`` READ_ONLY IDEMPOTENT tools (a batch of them runs in parallel) whose first attempts wait until every
    member is inside its tool, then die together: the worker dies with the whole batch in flight."""
    inside = [0]
    everyone_in = anyio.Event()

    async def die_once_all_are_in(context: ToolExecutionContext) -> str:
        if context.identity.attempt > 1:
            return "retried"
        inside[0] += 1
        if inside[0] == size:
            everyone_in.set()
        with anyio.fail_after(bound(harness, 30.0, "every member of the batch to be inside its tool")):
            await everyone_in.wait()
        crash_now("raise")
        return "unreachable"

    return [ProbeTool(harness.world, name=f"files.read_{i}", probe=die_once_all_are_in) for i in range(size)]


@pytest.mark.rules("D4.3")
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("size", [1, 2, 3])
async def test_one_sweep_retries_every_orphan_of_a_batch_that_died_in_flight(
    harness: Harness, size: int, layout: str
) -> None:
    members = [(run, step, i) for run, step in LAYOUTS[layout] for i in range(size)]
    for run, step in LAYOUTS[layout]:
        async with harness.open(*_reads(harness, size), lease_s=LEASE_S) as session:
            calls = [
                session.proposed(f"files.read_{i}", {"run": run, "step": step, "member": i}, call_id=f"member-{i}")
                for i in range(size)
            ]
            try:
                await session.step(calls, step_number=step, run_id=run)
                harness.fail("D4.3", f"the batch of {run} step {step} did not die in flight: its tools crash on entry")
            except (SimulatedCrash, BaseExceptionGroup):
                harness.log.append(f"  the worker died with {size} read(s) of {run} step {step} inside their tools")
    first = len(harness.world.executions)
    harness.expect("D4.3", first == len(members), f"{first} of {len(members)} members started before the workers died")
    harness.clock.advance(LEASE_S + 1)
    async with harness.open(*_reads(harness, size), lease_s=LEASE_S) as sweeper:
        await sweeper.sweep()
    retried = harness.world.executions[first:]
    counts = {
        m: sum(1 for e in retried if (e.arguments["run"], e.arguments["step"], e.arguments["member"]) == m)
        for m in members
    }
    wrong = [f"{run} step {step} member-{i}: {n}" for (run, step, i), n in counts.items() if n != 1]
    harness.expect(
        "D4.3",
        not wrong,
        f"{len(members)} unmarked orphans ({layout}: batches of {size} reads that died in flight), one sweep "
        f"{LEASE_S:.0f}+1 s later; retries per member that were not exactly one: {wrong}; a sweep retries every "
        "orphan it finds, however many share a run or a step",
    )


VERSIONS = {"kept": ("1", "1"), "bumped": ("1", "2")}
"""(version registered when the call was recorded, version registered at the sweep)."""
INSIDE_THE_TOOL = frozenset({CrashPoint.BEFORE_WATERMARK, CrashPoint.AFTER_WATERMARK, CrashPoint.AFTER_EFFECT})
"""Points where the harness's tool itself dies (the implementation's crash plan is null there)."""
UNMARKED_POINTS = (CrashPoint.AFTER_CLAIM, CrashPoint.BEFORE_WATERMARK)
MARKED_POINTS = (CrashPoint.AFTER_WATERMARK, CrashPoint.AFTER_EFFECT)


# One scenario per rule: a witness is stopped at a scenario's first failed cell, so each rule gets cells of its own.
@pytest.mark.rules("D4.3")
@pytest.mark.parametrize("era", list(VERSIONS))
@pytest.mark.parametrize("idempotency", list(IdempotencyClass))
@pytest.mark.parametrize("point", UNMARKED_POINTS)
async def test_an_unmarked_orphan_is_retried_under_its_row_key_whatever_version_is_registered_now(
    harness: Harness, point: CrashPoint, idempotency: IdempotencyClass, era: str
) -> None:
    await _retried_under_its_row_key(harness, "D4.3", point, idempotency, era)


@pytest.mark.rules("D4.4")
@pytest.mark.parametrize("era", list(VERSIONS))
@pytest.mark.parametrize("point", MARKED_POINTS)
async def test_a_marked_idempotent_orphan_is_retried_under_its_row_key_whatever_version_is_registered_now(
    harness: Harness, point: CrashPoint, era: str
) -> None:
    await _retried_under_its_row_key(harness, "D4.4", point, IdempotencyClass.IDEMPOTENT, era)


@pytest.mark.rules("D4.5")
@pytest.mark.parametrize("era", list(VERSIONS))
@pytest.mark.parametrize("point", MARKED_POINTS)
async def test_a_marked_conditionally_idempotent_orphan_is_retried_under_its_row_key_whatever_version_is_registered_now(
    harness: Harness, point: CrashPoint, era: str
) -> None:
    await _retried_under_its_row_key(harness, "D4.5", point, IdempotencyClass.CONDITIONALLY_IDEMPOTENT, era)


async def _retried_under_its_row_key(
    harness: Harness, rule: str, point: CrashPoint, idempotency: IdempotencyClass, era: str
) -> None:
    """A call recorded at one version dies at ``point``; the tool is registered again at the era's version and a
    sweep retries it: every key the tool was handed for the call is the row's, and the world keeps what it should."""
    recorded, registered = VERSIONS[era]
    name = "orders.place"
    crash_at = point if point in INSIDE_THE_TOOL else None
    plan = None if crash_at is not None else CrashPlan(point=point)
    dying = CrashingTool(harness.world, name=name, crash_at=crash_at, idempotency=idempotency, version=recorded)
    async with harness.open(dying, crash=plan, lease_s=LEASE_S) as session:
        try:
            await session.call(name, {"item": 1})
            harness.fail(rule, f"the worker did not die at {point.value}: the implementation ignored its crash")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append(f"  the worker died at {point.value} (tool version {recorded})")
    async with harness.reader(lease_s=LEASE_S) as reader:
        rows = await reader.rows()
    if len(rows) != 1:
        harness.fail(rule, f"the dead worker left {len(rows)} rows for its one call; expected one")
    key = rows[0].idempotency_key
    before = len(harness.world.effects)
    harness.clock.advance(LEASE_S + 1)
    harness.log.append(f"{name} registered again at version {registered}; a sweep {LEASE_S:.0f}+1 s later")
    again = CrashingTool(harness.world, name=name, idempotency=idempotency, version=registered)
    async with harness.open(again, lease_s=LEASE_S) as sweeper:
        decided = await sweeper.sweep()
    effects = harness.world.effects_of(name)
    handed = sorted({e.idempotency_key for e in effects})
    harness.expect(
        rule,
        len(effects) > before and handed == [key],
        f"a {idempotency.value} call recorded at tool version {recorded} died at {point.value}; swept with version "
        f"{registered} registered, the tool was handed keys {handed} ({len(effects) - before} retry effect(s)); its "
        f"row recorded {key} before the crash, the one key every attempt of the call must carry",
    )
    kept = [e for e in effects if not e.deduplicated]
    harness.expect(
        rule,
        len(kept) == (2 if point is CrashPoint.AFTER_EFFECT and idempotency is IdempotencyClass.IDEMPOTENT else 1),
        f"the world kept {len(kept)} of {len(effects)} effect(s) of the call once swept",
    )
    harness.expect(
        rule,
        [d.status for d in decided] == [InvocationStatus.SUCCEEDED] and isinstance(decided[0], Success),
        f"the sweep decided {[describe(d) for d in decided]}; expected the orphan retried, SUCCEEDED",
    )
