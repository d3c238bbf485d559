"""Decision 4, the in-process part: the watermark is committed before the effect, and it decides."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from toolproof.fakes import (
    CrashingTool,
    EchoTool,
    FakeTool,
    ForgetsWatermarkTool,
    HangsTool,
    MarkThenProbeTool,
    RaisesTool,
    WriteTool,
)
from toolproof.spec import (
    CrashPlan,
    CrashPoint,
    HarnessError,
    IdempotencyClass,
    InvocationRow,
    InvocationStatus,
    McpClassification,
    Metric,
    ReasonCode,
    Risk,
    SideEffect,
    SimulatedCrash,
    Suspended,
    ToolExecutionContext,
    ToolSource,
)

from ._bounds import bound
from ._harness import USER_ITEM, Harness, describe
from ._mcp import memory
from ._recovery import UNTRUSTED_PAGE


@pytest.mark.rules("D4.1")
async def test_watermark_is_committed_when_mark_returns(harness: Harness) -> None:
    tool = MarkThenProbeTool(harness.world)
    async with harness.open(tool) as session, harness.reader() as reader:

        async def own_row(context: ToolExecutionContext) -> InvocationRow | None:
            return await reader.row(context.identity.invocation_id)

        tool.probe = own_row
        harness.success("D4.1", await session.call(tool.spec.name, {"n": 1}))
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect(
        "D4.1",
        isinstance(seen, InvocationRow) and seen.effect_sent_at is not None,
        f"right after mark_effect_sent() returned, a separate reader saw effect_sent_at="
        f"{getattr(seen, 'effect_sent_at', 'no row')!r}",
    )


SOURCES = [ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX]
"""Every source a tool of the port can have (an MCP tool is the adapter's: see the MCP scenarios below and D7's)."""


def _failing_tool(
    harness: Harness,
    how: str,
    marked: bool,
    side_effect: SideEffect,
    idempotency: IdempotencyClass,
    source: ToolSource = ToolSource.BUILTIN,
    mark_window_s: float = 0.0,
    name: str | None = None,
) -> FakeTool:
    spec = {"side_effect": side_effect.value, "idempotency": idempotency.value, "source": source.value}
    if how == "raise":
        return RaisesTool(harness.world, after_watermark=marked, name=name, **spec)
    # Marked: the deadline leaves the mark time to be committed (``_marked_failures``). Unmarked: nothing to wait for.
    return HangsTool(
        harness.world, after_watermark=marked, deadline_s=mark_window_s if marked else 0.05, name=name, **spec
    )


MARK_WINDOWS_S = (0.25, 1.0, 4.0)
"""A marked overrun's deadline on an idle machine (times the load factor), tried in turn. The cell needs the mark to
have been committed before the deadline cut the tool off, and the world shows whether it was: the tool leaves its
effect once ``mark_effect_sent`` returned. A deadline that cut the tool off before that is tried again, longer, so
the verdict never rests on how fast the machine is."""


def _marked_failures(
    harness: Harness, how: str, side_effect: SideEffect, source: ToolSource = ToolSource.BUILTIN
) -> Iterator[FakeTool]:
    """A NON_IDEMPOTENT tool that marks, acts and then fails ``how``; for an overrun, the next one (a longer deadline,
    another name) while the one before was cut off before its mark landed. Raises HarnessError when the longest was."""
    if how == "raise":
        yield _failing_tool(harness, how, True, side_effect, IdempotencyClass.NON_IDEMPOTENT, source)
        return
    for attempt, idle_s in enumerate(MARK_WINDOWS_S):
        window = bound(harness, idle_s, "a marked tool's mark to be committed before its deadline")
        name = "fake.hangs" if attempt == 0 else f"fake.hangs_{attempt}"
        tool = _failing_tool(harness, how, True, side_effect, IdempotencyClass.NON_IDEMPOTENT, source, window, name)
        yield tool
        if any(effect.tool_name == name for effect in harness.world.effects):
            return
        harness.log.append(f"{name}'s deadline of {window:.2f} s cut it off before its mark was committed")
    raise HarnessError(
        f"a tool whose deadline was {MARK_WINDOWS_S[-1]:g} s times the load factor was cut off before its "
        "mark_effect_sent returned: the cell cannot reach a failure after the watermark"
    )


@pytest.mark.rules("D4.2")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
@pytest.mark.parametrize("side_effect", list(SideEffect))
@pytest.mark.parametrize("how", ["raise", "overrun"])
async def test_failing_after_the_watermark_is_uncertain(
    harness: Harness, how: str, side_effect: SideEffect, source: ToolSource
) -> None:
    # Every source alike: a device or sandbox tool's failure after its mark is no more known to be harmless.
    for tool in _marked_failures(harness, how, side_effect, source):
        async with harness.open(tool) as session:
            d = harness.outcome("D4.2", await session.call(tool.spec.name, {"n": 1}), f"a {how} after the watermark")
    harness.expect(
        "D4.2",
        (d.status, d.reason_code) == (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN),
        f"a NON_IDEMPOTENT {side_effect.value} {source.value} tool that marked, acted and then failed ({how}) was "
        f"answered {d.status.value} {d.reason_code.value}; expected UNCERTAIN effect_unknown",
    )


@pytest.mark.rules("D4.11")
@pytest.mark.parametrize("side_effect", list(SideEffect))
@pytest.mark.parametrize("how", ["raise", "overrun"])
async def test_an_uncertain_resolution_of_every_ending_is_counted(
    harness: Harness, how: str, side_effect: SideEffect
) -> None:
    # The call fails after its mark by a raise or by an overrun of its deadline: either way it resolves UNCERTAIN in
    # its own submission, and the counter counts the resolution, however it came.
    for tool in _marked_failures(harness, how, side_effect):
        async with harness.open(tool) as session:
            before = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
            d = await session.call(tool.spec.name, {"n": 1})
            after = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
    if InvocationStatus(d.status) is not InvocationStatus.UNCERTAIN:
        harness.fail("D4.11", f"the marked NON_IDEMPOTENT call that failed ({how}) was answered {describe(d)}")
    harness.expect(
        "D4.11",
        after - before == 1,
        f"a NON_IDEMPOTENT {side_effect.value} call that marked and then failed ({how}) resolved UNCERTAIN, and "
        f"{Metric.UNCERTAIN.value} went from {before} to {after}; expected one more",
    )


@pytest.mark.rules("D4.20")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
@pytest.mark.parametrize("idempotency", list(IdempotencyClass))
@pytest.mark.parametrize("how", ["raise", "overrun"])
async def test_failing_before_the_watermark_is_a_retryable_failure(
    harness: Harness, how: str, idempotency: IdempotencyClass, source: ToolSource
) -> None:
    tool = _failing_tool(harness, how, False, SideEffect.EXTERNAL_WRITE, idempotency, source)
    async with harness.open(tool) as session:
        d = harness.outcome("D4.20", await session.call(tool.spec.name, {"n": 1}), f"a {how} before the watermark")
    reason = ReasonCode.TOOL_CRASHED if how == "raise" else ReasonCode.DEADLINE_EXCEEDED
    harness.expect(
        "D4.20",
        (d.status, d.reason_code, d.retryable) == (InvocationStatus.FAILED, reason, True),
        f"a {idempotency.value} {source.value} tool that failed ({how}) before marking its effect was answered {d.status.value} "
        f"{d.reason_code.value} retryable={d.retryable}; nothing left the process, so FAILED {reason.value} retryable",
    )


_OWES_THE_MARK = [
    (side_effect, idempotency)
    for side_effect in SideEffect
    for idempotency in IdempotencyClass
    if side_effect is not SideEffect.READ_ONLY and idempotency is not IdempotencyClass.IDEMPOTENT
]
"""Every class of consequential, not idempotent tool: each owes the watermark."""


@pytest.mark.rules("D4.10")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
async def test_consequential_tool_without_watermark_is_flagged(harness: Harness, source: ToolSource) -> None:
    # Every source alike: a device's or a sandbox's unmarked effect has left the process as a builtin's has.
    forgetful = [
        ForgetsWatermarkTool(
            harness.world,
            name=f"unmarked.{side_effect.value.lower()}_{idempotency.value.lower()}",
            side_effect=side_effect,
            idempotency=idempotency,
            source=source,
        )
        for side_effect, idempotency in _OWES_THE_MARK
    ]
    marks = WriteTool(harness.world)
    read = EchoTool(harness.world)
    async with harness.open(*forgetful, marks, read) as session:
        await session.call(marks.spec.name, {"n": 1})
        await session.call(read.spec.name, {"text": "t"})
        counts = [(await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0)]
        # Every tool three times, the tools interleaved: the flag counts calls, not tools.
        for n in range(3):
            for forgets in forgetful:
                await session.call(forgets.spec.name, {"n": n})
                counts.append((await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0))
    harness.expect(
        "D4.10",
        counts == list(range(3 * len(forgetful) + 1)),
        f"{Metric.EFFECT_UNMARKED.value} was {counts[0]} after a marking write and a read, then {counts[1:]} after "
        f"unmarked {source.value} writes of {[f'{a.value}/{b.value}' for a, b in _OWES_THE_MARK]}, each called three times in turn; "
        "expected 0, then one more per call",
    )


_ENDINGS = ["success", "ERROR", "TRANSIENT", "REMOTE_REJECTED", "REMOTE_UNAVAILABLE", "raise", "overrun"]
"""Every way an unmarked call can end: a success, each failure kind a tool answers ok=false, a raise, an overrun."""


@pytest.mark.rules("D4.10")
@pytest.mark.parametrize("ends", _ENDINGS)
async def test_unmarked_call_is_flagged_whatever_its_outcome(harness: Harness, ends: str) -> None:
    forgetful = [
        ForgetsWatermarkTool(
            harness.world,
            name=f"unmarked.{side_effect.value.lower()}_{idempotency.value.lower()}",
            ends=ends,
            side_effect=side_effect,
            idempotency=idempotency,
            deadline_s=0.05,
        )
        for side_effect, idempotency in _OWES_THE_MARK
    ]
    counts: list[int] = []
    outcomes: list[str] = []
    async with harness.open(*forgetful) as session:
        for forgets in forgetful:
            d = await session.call(forgets.spec.name, {"n": 1})
            outcomes.append(describe(d))
            counts.append((await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0))
    harness.expect(
        "D4.10",
        # At least one more per call: a pipeline that retries a transient failure may flag each attempt.
        all(after > before for before, after in zip([0, *counts], counts, strict=False)),
        f"{Metric.EFFECT_UNMARKED.value} was {counts} after unmarked calls of "
        f"{[f'{a.value}/{b.value}' for a, b in _OWES_THE_MARK]} that acted and then ended {ends} ({outcomes}); "
        "expected at least one more after each: the flag is owed whatever the call's outcome",
    )


@pytest.mark.rules("D4.11")
async def test_uncertain_resolution_is_counted(harness: Harness) -> None:
    tool = RaisesTool(harness.world, after_watermark=True)
    other = RaisesTool(harness.world, after_watermark=True, name="fake.raises_too")
    unmarked = RaisesTool(harness.world, name="fake.raises_early")
    echo = EchoTool(harness.world)
    async with harness.open(tool, other, unmarked, echo) as session:
        # Calls that end every other way first: only the UNCERTAIN resolution may count.
        await session.call(echo.spec.name, {"text": "fine"})
        await session.call(unmarked.spec.name, {"n": 0})
        await session.call("no.such_tool", {})
        before = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
        counts = []
        # Three UNCERTAIN calls of each of two tools, in turn (other arguments each time: an UNCERTAIN call is never
        # proposed again, D14.4), and of two runs: the metric counts resolutions, not tools or runs.
        for n in range(3):
            for raising in (tool, other):
                await session.call(raising.spec.name, {"n": n}, run_id=f"run-{n % 2}")
                counts.append((await session.metrics()).get(Metric.UNCERTAIN.value, 0))
    harness.expect(
        "D4.11",
        (before, counts) == (0, list(range(1, 7))),
        f"{Metric.UNCERTAIN.value}={before} after a success, a FAILED and a DENIED call, then {counts} after each of "
        "six UNCERTAIN resolutions (two tools, three calls each, two runs); expected 0, then one more per resolution",
    )


async def die_after_marked_effect(harness: Harness, lease_s: float) -> None:
    """D4.11's setup: a worker places an order, marks, makes its effect and dies; the clock moves past its lease."""
    async with harness.open(CrashingTool(harness.world, crash_at=CrashPoint.AFTER_EFFECT), lease_s=lease_s) as session:
        try:
            await session.call("orders.place", {"item": 1})
            harness.fail("D4.11", "the worker did not die after the effect: it ignored its crash point")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append("  the worker died after its marked effect")
    harness.clock.advance(lease_s + 1)


@pytest.mark.rules("D4.6")
@pytest.mark.profiles("recovery")  # The dying worker honours a crash plan.
@pytest.mark.parametrize("via", ["sweep", "replay"])
@pytest.mark.parametrize("side_effect", list(SideEffect))
async def test_a_marked_orphan_of_every_side_effect_is_uncertain(
    harness: Harness, side_effect: SideEffect, via: str
) -> None:
    # The watermark decides for every NON_IDEMPOTENT tool, a READ_ONLY one included: its class says it may escape.
    lease_s = 60.0

    def order(crash_at: CrashPoint | None = None) -> CrashingTool:
        return CrashingTool(harness.world, crash_at=crash_at, side_effect=side_effect)

    async with harness.open(order(CrashPoint.AFTER_EFFECT), lease_s=lease_s) as session:
        try:
            await session.call("orders.place", {"item": 1})
            harness.fail("D4.6", "the worker did not die after the effect: it ignored its crash point")
        except (SimulatedCrash, BaseExceptionGroup):
            harness.log.append(f"  the worker died after the marked effect of a {side_effect.value} tool")
    harness.clock.advance(lease_s + 1)
    async with harness.open(order(), lease_s=lease_s) as session:
        if via == "sweep":
            await session.sweep()
        else:
            await session.call("orders.place", {"item": 1})
        [row] = await session.rows()
    effects = len(harness.world.effects_of("orders.place"))
    harness.expect(
        "D4.6",
        (row.status, effects) == (InvocationStatus.UNCERTAIN, 1),
        f"a dead worker's marked NON_IDEMPOTENT {side_effect.value} call, recovered by a {via}, ended "
        f"{row.status.value} with {effects} effect(s); expected UNCERTAIN and 1: it may have escaped, so it is not "
        "retried",
    )


@pytest.mark.rules("D4.11")
@pytest.mark.profiles("recovery")  # The dying worker honours a crash plan.
async def test_uncertain_resolution_by_recovery_is_counted(harness: Harness) -> None:
    lease_s = 60.0
    await die_after_marked_effect(harness, lease_s)
    async with harness.open(CrashingTool(harness.world), lease_s=lease_s) as session:
        decided = await session.sweep()
        [row] = await session.rows()
        count = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
        await session.events()  # Read, so the harness checks the recovered call's events in order (D3.7).
    harness.expect(
        "D4.11",
        row.status is InvocationStatus.UNCERTAIN and len(decided) == 1,
        f"another worker's sweep resolved the dead worker's marked call {row.status.value} ({decided}); "
        "expected UNCERTAIN",
    )
    harness.expect(
        "D4.11", count == 1, f"{Metric.UNCERTAIN.value}={count} after a sweep resolved one call UNCERTAIN; expected 1"
    )


@pytest.mark.rules("D4.11")
@pytest.mark.profiles("recovery")  # The dying worker honours a crash plan.
async def test_uncertain_resolution_by_a_replay_of_the_step_is_counted(harness: Harness) -> None:
    lease_s = 60.0
    await die_after_marked_effect(harness, lease_s)
    harness.log.append("another worker receives the same step again (a replay, no sweep)")
    async with harness.open(CrashingTool(harness.world), lease_s=lease_s) as session:
        d = await session.call("orders.place", {"item": 1})
        count = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
    harness.expect(
        "D4.11",
        getattr(d, "status", None) is InvocationStatus.UNCERTAIN and count == 1,
        f"a replay of the step found the dead worker's marked call and answered {describe(d)}, with "
        f"{Metric.UNCERTAIN.value}={count}; expected UNCERTAIN and 1",
    )


@pytest.mark.rules("D4.11")
@pytest.mark.profiles("recovery")  # Taking over an expired lease at step 8 is recovery.
async def test_uncertain_resolution_by_a_concurrent_second_worker_is_counted(harness: Harness) -> None:
    lease_s = 60.0
    started, release = anyio.Event(), anyio.Event()

    async def hang_after_marking(context: ToolExecutionContext) -> None:
        started.set()
        await release.wait()

    def order(probe: Any) -> MarkThenProbeTool:
        return MarkThenProbeTool(harness.world, name="orders.place", probe=probe, deadline_s=600.0)

    async with (
        harness.open(order(hang_after_marking), lease_s=lease_s) as first,
        harness.open(order(None), lease_s=lease_s) as second,
        anyio.create_task_group() as group,
    ):
        group.start_soon(first.call, "orders.place", {"item": 1})
        with anyio.fail_after(bound(harness, 30.0, "the first worker's tool to start")):
            await started.wait()
        first.advance(lease_s + 1)
        harness.log.append("the first worker's marked call outlives its lease; a second worker receives the same step")
        d = await second.call("orders.place", {"item": 1})
        count = (await second.metrics()).get(Metric.UNCERTAIN.value, 0)
        release.set()
    harness.expect(
        "D4.11",
        getattr(d, "status", None) is InvocationStatus.UNCERTAIN and count == 1,
        f"a second worker found a marked call whose lease had expired and answered {describe(d)}, with "
        f"{Metric.UNCERTAIN.value}={count}; expected UNCERTAIN and 1",
    )


@pytest.mark.rules("D4.10")
@pytest.mark.parametrize(
    "entry",
    [pytest.param("recovered", marks=pytest.mark.profiles("recovery")), "approved"],  # recovered: a crash plan.
)
async def test_unmarked_call_is_flagged_when_it_runs_from_its_row(harness: Harness, entry: str) -> None:
    lease_s = 60.0
    if entry == "recovered":
        crash = CrashPlan(point=CrashPoint.AFTER_CLAIM)
        async with harness.open(ForgetsWatermarkTool(harness.world), crash=crash, lease_s=lease_s) as session:
            try:
                await session.call("tickets.create_unmarked", {"n": 1})
                harness.fail("D4.10", "the worker did not die after its claim: it ignored its crash plan")
            except (SimulatedCrash, BaseExceptionGroup):
                harness.log.append("  the worker died after its claim")
        harness.clock.advance(lease_s + 1)
    else:
        async with harness.open(ForgetsWatermarkTool(harness.world), lease_s=lease_s) as session:
            held = await session.call(
                "tickets.create_unmarked", {"n": 1}, context=[USER_ITEM, UNTRUSTED_PAGE], provenance={"n": ["page-1"]}
            )
        if not isinstance(held, Suspended):
            harness.fail("D4.10", f"the untrusted consequential call was answered {held!r}; expected a hold")
    async with harness.open(ForgetsWatermarkTool(harness.world), lease_s=lease_s) as session:
        if entry == "recovered":
            await session.sweep()
        else:
            assert isinstance(held, Suspended)
            await session.resolve_approval(held.invocation_id, approved=True)
        [row] = await session.rows()
        flagged = (await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0)
    harness.expect(
        "D4.10",
        row.status is InvocationStatus.SUCCEEDED and row.effect_sent_at is None and flagged == 1,
        f"a consequential call {entry} from its row ran without marking its effect (row {row.status.value}, "
        f"effect_sent_at={row.effect_sent_at!r}) and {Metric.EFFECT_UNMARKED.value}={flagged}; expected 1",
    )


_MCP_CLASSES = [(side_effect, idempotency) for side_effect in SideEffect for idempotency in IdempotencyClass]
"""Every operator classification of an MCP server's tools, by side effect and idempotency."""


@pytest.mark.rules("D4.2", "D8.7")
@pytest.mark.profiles("mcp")
@pytest.mark.parametrize(("side_effect", "idempotency"), _MCP_CLASSES)
async def test_mcp_call_that_hangs_after_sending_is_judged_by_the_watermark(
    harness: Harness, side_effect: SideEffect, idempotency: IdempotencyClass
) -> None:
    # An MCP adapter is the tool: the request it sends is the effect, so a consequential call is marked before it is
    # sent. A server that never answers then leaves a NON_IDEMPOTENT call's effect unknown (D4.2); every other class
    # is an ordinary overrun, answered deadline_exceeded (D8.7).
    classification = McpClassification(side_effect=side_effect, risk=Risk.LOW, idempotency=idempotency)
    config, _ = memory(harness, "hang", "HangingServer", classification=classification, call_timeout_s=0.5)
    async with harness.open(mcp_servers=[config]) as session:
        d = None
        held = bound(harness, 15.0, "mcp.hang.hang's answer")
        with anyio.move_on_after(held):
            d = await session.call("mcp.hang.hang", {})
        harness.expect("D8.7", d is not None, f"mcp.hang.hang held the call for {held:.0f} s, past its 0.5 s deadline")
        assert d is not None
        outcome = harness.outcome("D8.7", d, "a call the server never answered")
    what = f"an MCP call classified {side_effect.value}/{idempotency.value} whose server never answered"
    got = f"{outcome.status.value} {outcome.reason_code.value}"
    if side_effect is not SideEffect.READ_ONLY and idempotency is IdempotencyClass.NON_IDEMPOTENT:
        harness.expect(
            "D4.2",
            (outcome.status, outcome.reason_code) == (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN),
            f"{what} was answered {got}; the request was sent (the adapter marks before sending), so "
            "UNCERTAIN effect_unknown",
        )
        return
    harness.expect(
        "D8.7",
        (outcome.status, outcome.reason_code) == (InvocationStatus.FAILED, ReasonCode.DEADLINE_EXCEEDED),
        f"{what} was answered {got}; expected FAILED deadline_exceeded",
    )
