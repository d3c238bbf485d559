"""Decision 4, the sweep's other side: what a sweep must leave alone.

Another worker's call still running under a live lease, and an approval hold older than the
lease but short of its bound, are not orphans: a sweep leaves their rows as they are and
records no ``tool_call.recovered`` for them. (Suspended control calls: D16.3.)

D4.18 is judged with another worker's tool still executing, the sweep run one second before the
lease expires on the injected clock.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolproof.fakes import ProbeTool, WriteTool
from toolproof.spec import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    SideEffect,
    Suspended,
    ToolExecutionContext,
)

from ._bounds import bound
from ._harness import USER_ITEM, Harness, describe
from ._recovery import UNTRUSTED_PAGE

LEASE_S = 60.0


def _order(harness: Harness, started: anyio.Event, release: anyio.Event) -> ProbeTool:
    async def wait_for_release(context: ToolExecutionContext) -> None:
        started.set()
        await release.wait()

    return ProbeTool(
        harness.world,
        name="orders.place",
        probe=wait_for_release,
        side_effect=SideEffect.EXTERNAL_WRITE,
        idempotency=IdempotencyClass.NON_IDEMPOTENT,
        deadline_s=60.0,
    )


@pytest.mark.rules("D4.18")
async def test_sweep_leaves_a_call_running_under_a_live_lease_alone(harness: Harness) -> None:
    started, release = anyio.Event(), anyio.Event()
    answer: dict[str, Disposition] = {}
    async with (
        harness.open(_order(harness, started, release), lease_s=LEASE_S) as worker,
        harness.open(_order(harness, anyio.Event(), anyio.Event()), lease_s=LEASE_S) as sweeper,
        anyio.create_task_group() as group,
    ):

        async def submit() -> None:
            answer["d"] = await worker.call("orders.place", {"n": 1})

        group.start_soon(submit)
        with anyio.fail_after(bound(harness, 30.0, "the first worker's tool to start")):
            await started.wait()
        [before] = await sweeper.rows()
        worker.advance(LEASE_S - 1)
        harness.log.append("the first worker's tool is still running; another worker sweeps, 1 s before its lease ends")
        decided = await sweeper.sweep()
        [during] = await sweeper.rows()
        kinds = [e.kind for e in await sweeper.events()]
        release.set()
    harness.expect(
        "D4.18",
        EventKind.RECOVERED.value not in kinds and not decided,
        f"a sweep recorded {kinds} and decided {[describe(d) for d in decided]} for a call another worker was "
        "running under a live lease; it must leave it alone",
    )
    harness.expect(
        "D4.18",
        (during.status, during.attempt)
        == (before.status, before.attempt)
        == (InvocationStatus.RUNNING, before.attempt),
        f"the sweep changed the running call's row from {before.status.value} attempt {before.attempt} to "
        f"{during.status.value} attempt {during.attempt}",
    )
    d = answer.get("d")
    harness.expect(
        "D4.18",
        d is not None and d.status is InvocationStatus.SUCCEEDED and len(harness.world.executions) == 1,
        f"the first worker's call ended {describe(d) if d else 'unanswered'} with {len(harness.world.executions)} "
        "execution(s); expected it to finish its own call, once",
    )


def _mail(harness: Harness) -> WriteTool:
    return WriteTool(harness.world, name="mail.send", input_schema={"type": "object"})


@pytest.mark.rules("D4.19")
@pytest.mark.parametrize("age", [LEASE_S + 1, DEFAULT_APPROVAL_TIMEOUT_S - 1], ids=["past-the-lease", "before-bound"])
async def test_sweep_leaves_an_approval_hold_short_of_its_bound_alone(harness: Harness, age: float) -> None:
    async with harness.open(_mail(harness), lease_s=LEASE_S) as session:
        held = await session.call(
            "mail.send", {"to": "x"}, context=[USER_ITEM, UNTRUSTED_PAGE], provenance={"to": [UNTRUSTED_PAGE.id]}
        )
    if not isinstance(held, Suspended):
        harness.fail("D4.19", f"the untrusted consequential call was answered {describe(held)}; expected a hold")
    harness.clock.advance(age)
    harness.log.append(f"another worker sweeps {age:.0f} s later (lease {LEASE_S:.0f} s)")
    found: dict[str, Any] = {}
    async with harness.open(_mail(harness), lease_s=LEASE_S) as sweeper:
        decided = await sweeper.sweep()
        found["row"] = await sweeper.row(held.invocation_id)
        kinds = [e.kind for e in await sweeper.events()]
    row = found["row"]
    harness.expect(
        "D4.19",
        row is not None and row.status is InvocationStatus.AWAITING_APPROVAL and not harness.world.executions,
        f"{age:.0f} s after it was held, a sweep left the hold {row.status.value if row else 'gone'} with "
        f"{len(harness.world.executions)} execution(s); expected AWAITING_APPROVAL, unexecuted",
    )
    harness.expect(
        "D4.19",
        EventKind.RECOVERED.value not in kinds and not decided,
        f"the sweep recorded {kinds} and decided {[describe(d) for d in decided]} for an approval hold short of "
        "its bound",
    )
