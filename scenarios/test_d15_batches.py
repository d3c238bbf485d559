"""Decision 15: a step's batch shares its step_number; parallel only when the whole batch qualifies.

D2.4 inside a batch, swept: every member runs under its own deadline, never the batch's longest or shortest. Batches of
two and three, in parallel (all reads) and one after another (a write among them), with the short-deadline members
first, last and in the middle, one or two of them: a member with a 0.2 s or 0.4 s deadline pausing 5 s is cut off
(FAILED deadline_exceeded) and a member with a 30 s deadline pausing 0.5 s succeeds; and each member's context
deadline is its own deadline_s after its own context was built (between the submission and its start, plus its
deadline_s), so no verdict waits on a window the machine's load could move."""

from __future__ import annotations

import itertools
import time
from typing import Any

import anyio
import pytest

from toolproof.fakes import AskUserTool, EchoTool, FakeTool, SlowTool, World, WriteTool
from toolproof.spec import (
    IdempotencyClass,
    InvocationStatus,
    JsonObject,
    Outcome,
    ReasonCode,
    SideEffect,
    Success,
    Suspended,
    ToolExecutionContext,
    ToolKind,
    ToolResult,
)

from ._harness import Harness, describe


def _sequential(order: list[tuple[str, str]], call_ids: list[str]) -> bool:
    expected = [(event, call_id) for call_id in call_ids for event in ("start", "end")]
    return order == expected


@pytest.mark.rules("D15.1")
async def test_batch_members_share_the_step_and_differ_by_call_id(harness: Harness) -> None:
    tool = WriteTool(harness.world)
    async with harness.open(tool) as session:
        await session.step(
            [session.proposed(tool.spec.name, {"title": "t"}, call_id=c) for c in ("a", "b")], step_number=4
        )
        rows = await session.rows()
    harness.expect(
        "D15.1",
        [r.step_number for r in rows] == [4, 4] and len({r.idempotency_key for r in rows}) == 2,
        f"two identical calls of one batch left rows with steps {[r.step_number for r in rows]} and "
        f"{len({r.idempotency_key for r in rows})} distinct key(s)",
    )
    harness.expect("D15.1", len(harness.world.effects) == 2, f"{len(harness.world.effects)} of the 2 calls acted")


@pytest.mark.rules("D15.2")
async def test_every_call_gets_a_disposition_in_proposal_order(harness: Harness) -> None:
    echo = EchoTool(harness.world)
    async with harness.open(echo) as session:
        calls = [
            session.proposed("files.echo", {"text": "a"}, call_id="first"),
            session.proposed("files.missing", {}, call_id="second"),
            session.proposed("files.echo", {"text": 7}, call_id="third"),
            session.proposed("files.echo", {"text": "b"}, call_id="fourth"),
        ]
        dispositions = await session.step(calls)
        by_id = {r.invocation_id: r.call_id for r in await session.rows()}
    answered = [by_id.get(d.invocation_id) for d in dispositions]
    harness.expect(
        "D15.2",
        answered == ["first", "second", "third", "fourth"],
        f"the step answered calls {answered}; expected every call, in proposal order",
    )
    kinds = [type(d) for d in dispositions]
    harness.expect("D15.2", kinds == [Success, Outcome, Outcome, Success], f"dispositions were {kinds}")


@pytest.mark.rules("D15.2")
@pytest.mark.parametrize("slow_at", [0, 1, 2])
async def test_parallel_batch_answers_in_proposal_order(harness: Harness, slow_at: int) -> None:
    names = ["files.read_a", "files.read_b", "files.read_c"]
    tools = [SlowTool(harness.world, name=n, pause_s=0.2 if i == slow_at else 0.0) for i, n in enumerate(names)]
    async with harness.open(*tools) as session:
        dispositions = await session.step([session.proposed(n, {}, call_id=n) for n in names])
        by_id = {r.invocation_id: r.call_id for r in await session.rows()}
    answered = [by_id.get(d.invocation_id) for d in dispositions]
    sources = [d.content[0].source if isinstance(d, Success) and d.content else None for d in dispositions]
    harness.expect(
        "D15.2",
        answered == names and sources == names,
        f"a qualifying batch whose call {names[slow_at]} finishes last was answered {answered} (content from "
        f"{sources}); expected every call, in proposal order {names}",
    )


@pytest.mark.rules("D15.3")
@pytest.mark.parametrize(
    "odd_one",
    [
        {"side_effect": "WORKSPACE_WRITE"},
        {"idempotency": "NON_IDEMPOTENT"},
    ],
    ids=["not-read-only", "not-idempotent"],
)
async def test_batch_with_a_non_qualifying_member_never_overlaps(harness: Harness, odd_one: dict[str, Any]) -> None:
    tools = [SlowTool(harness.world, name="files.read_a"), SlowTool(harness.world, name="files.odd", **odd_one)]
    tools.append(SlowTool(harness.world, name="files.read_b"))
    async with harness.open(*tools) as session:
        await session.step([session.proposed(t.spec.name, {}, call_id=t.spec.name) for t in tools])
    ids = [t.spec.name for t in tools]
    harness.expect(
        "D15.3",
        _sequential(harness.world.order, ids),
        f"a batch with one {odd_one} member ran as {harness.world.order}; it does not qualify for parallelism",
    )


@pytest.mark.rules("D15.3")
async def test_batch_with_a_control_member_never_overlaps(harness: Harness) -> None:
    reads = [SlowTool(harness.world, name="files.read_a"), SlowTool(harness.world, name="files.read_b")]
    async with harness.open(*reads, AskUserTool(harness.world)) as session:
        calls = [session.proposed(reads[0].spec.name, {}, call_id="files.read_a")]
        calls.append(session.proposed("conversation.ask_user", {"question": "ok?"}, call_id="ask"))
        calls.append(session.proposed(reads[1].spec.name, {}, call_id="files.read_b"))
        dispositions = await session.step(calls)
    harness.expect("D15.3", isinstance(dispositions[1], Suspended), f"ask_user was answered {dispositions[1]!r}")
    harness.expect(
        "D15.3",
        _sequential(harness.world.order, ["files.read_a", "files.read_b"]),
        f"a batch with a CONTROL member ran its reads as {harness.world.order}",
    )


# Every class a member can have but the one that qualifies (READ_ONLY, IDEMPOTENT, ACTION).
_CLASSES = [
    (side_effect, idempotency, kind)
    for side_effect, idempotency, kind in itertools.product(SideEffect, IdempotencyClass, ToolKind)
    if (side_effect, idempotency, kind) != (SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, ToolKind.ACTION)
]


def _ran_one_at_a_time(order: list[tuple[str, str]], call_ids: list[str]) -> bool:
    """Each execution ended before the next began, in proposal order (members that never executed left out)."""
    started = [call_id for event, call_id in order if event == "start"]
    expected = [(event, call_id) for call_id in started for event in ("start", "end")]
    return order == expected and started == [c for c in call_ids if c in started]


@pytest.mark.rules("D15.3")
@pytest.mark.parametrize(
    ("side_effect", "idempotency", "kind"), _CLASSES, ids=["-".join(c.lower() for c in cls) for cls in _CLASSES]
)
async def test_no_member_class_but_the_qualifying_one_admits_parallelism(
    harness: Harness, side_effect: SideEffect, idempotency: IdempotencyClass, kind: ToolKind
) -> None:
    odd = SlowTool(harness.world, name="files.odd", side_effect=side_effect, idempotency=idempotency, kind=kind)
    reads = [SlowTool(harness.world, name=f"files.read_{c}") for c in "ab"]
    wrong = []
    async with harness.open(odd, *reads) as session:
        for at in range(3):
            members = [*reads]
            members.insert(at, odd)
            ids = [f"{t.spec.name}-{at}" for t in members]
            harness.world.order.clear()
            await session.step(
                [session.proposed(t.spec.name, {}, call_id=i) for t, i in zip(members, ids, strict=True)],
                step_number=at,
            )
            if not _ran_one_at_a_time(harness.world.order, ids):
                wrong.append(f"{ids} ran as {harness.world.order}")
    harness.expect(
        "D15.3",
        not wrong,
        f"a batch of two qualifying reads and one {side_effect.value} {idempotency.value} {kind.value} member (first, "
        f"middle or last) does not qualify for parallelism, yet its executions overlapped: {wrong}",
    )


_UNRESOLVED = {
    "unknown-builtin": "files.nowhere",
    "ungrammatical": "Files..Read",
    "unknown-mcp": "mcp.nowhere.read",
    "reserved-device": "device.nowhere.read",
}
"""Member names no registered tool answers to: unknown in each domain, or outside the grammar."""


@pytest.mark.rules("D15.3")
@pytest.mark.parametrize("unresolved", list(_UNRESOLVED))
async def test_a_member_no_tool_answers_to_never_admits_parallelism(harness: Harness, unresolved: str) -> None:
    # A member that resolves to no tool is not READ_ONLY, IDEMPOTENT and not CONTROL: it is nothing, so the batch
    # does not qualify, wherever the member stands.
    reads = [SlowTool(harness.world, name=f"files.read_{c}") for c in "ab"]
    wrong = []
    async with harness.open(*reads) as session:
        for at in range(3):
            members = [read.spec.name for read in reads]
            members.insert(at, _UNRESOLVED[unresolved])
            ids = [f"m{i}-{at}" for i in range(3)]
            harness.world.order.clear()
            await session.step(
                [session.proposed(n, {}, call_id=i) for n, i in zip(members, ids, strict=True)], step_number=at + 1
            )
            if not _ran_one_at_a_time(harness.world.order, ids):
                wrong.append(f"{members} ran as {harness.world.order}")
    harness.expect(
        "D15.3",
        not wrong,
        f"a batch of two qualifying reads and a member named {_UNRESOLVED[unresolved]!r}, which no tool answers to, "
        f"does not qualify for parallelism, yet its executions overlapped: {wrong}",
    )


@pytest.mark.rules("D15.4")
async def test_mixed_batch_runs_sequentially_in_proposal_order(harness: Harness) -> None:
    write: dict[str, Any] = {"side_effect": "EXTERNAL_WRITE", "idempotency": "NON_IDEMPOTENT"}
    tools = [
        SlowTool(harness.world, name="tickets.write_a", **write),
        SlowTool(harness.world, name="files.read_a"),
        SlowTool(harness.world, name="files.read_b"),
        SlowTool(harness.world, name="tickets.write_b", **write),
    ]
    async with harness.open(*tools) as session:
        await session.step([session.proposed(t.spec.name, {}, call_id=t.spec.name) for t in tools])
    ids = [t.spec.name for t in tools]
    harness.expect(
        "D15.4",
        _sequential(harness.world.order, ids),
        f"the mixed batch {ids} ran as {harness.world.order}; expected one after another in proposal order",
    )


def _batch_tool(harness: Harness, batch: str) -> EchoTool:
    """An echo tool whose batches run in parallel (READ_ONLY IDEMPOTENT) or one after another (WORKSPACE_WRITE)."""
    if batch == "parallel":
        return EchoTool(harness.world)
    return EchoTool(harness.world, name="files.note", side_effect=SideEffect.WORKSPACE_WRITE)


def _texts(dispositions: list[Any]) -> list[str]:
    return [d.content[0].text if isinstance(d, Success) and d.content else repr(d) for d in dispositions]


@pytest.mark.rules("D15.1")
@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("batch", ["parallel", "sequential"])
async def test_a_batch_member_is_keyed_by_its_call_id_wherever_it_stands(
    harness: Harness, batch: str, size: int
) -> None:
    # A batch of distinct calls, then the same step again in other orders (replays, each answered by its own call_id),
    # then calls with new call_ids at the same positions and with the same arguments (new calls, each executed).
    tool = _batch_tool(harness, batch)
    name = tool.spec.name
    texts = [f"member-{i}" for i in range(size)]
    async with harness.open(tool) as session:
        calls = [session.proposed(name, {"text": t}, call_id=f"call-{i}") for i, t in enumerate(texts)]
        first = await session.step(calls, step_number=1)
        ran = len(harness.world.executions)
        orders = [list(reversed(calls)), calls[1:] + calls[:1]]
        replies = [await session.step(order, step_number=1) for order in orders]
        replayed = len(harness.world.executions)
        fresh = [session.proposed(name, {"text": t}, call_id=f"other-{i}") for i, t in enumerate(texts)]
        again = await session.step(fresh, step_number=1)
    harness.expect("D15.1", _texts(first) == texts, f"the batch {texts} was answered {_texts(first)}")
    for order, reply in zip(orders, replies, strict=True):
        want = [f"member-{c.call_id.rsplit('-', 1)[1]}" for c in order]
        harness.expect(
            "D15.1",
            _texts(reply) == want and replayed == ran,
            f"the same step resubmitted as {[c.call_id for c in order]} was answered {_texts(reply)} "
            f"({replayed - ran} more execution(s)); each member is its own call_id's replay: {want}",
        )
    harness.expect(
        "D15.1",
        _texts(again) == texts and len(harness.world.executions) == ran + size,
        f"calls with new call_ids at the same positions were answered {_texts(again)} with "
        f"{len(harness.world.executions) - ran} execution(s); each is a new call, keyed by its call_id, and runs",
    )


class _DeadlineMember(FakeTool):
    """Records its context's deadline and when it started, then pauses ``pause_s`` and succeeds."""

    def __init__(self, world: World, name: str, pause_s: float, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.pause_s = pause_s
        self.seen: list[tuple[float, float]] = []

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        self.seen.append((context.deadline, time.time()))
        await anyio.sleep(self.pause_s)
        return ToolResult(ok=True)


_MEMBERS: dict[str, tuple[float, float]] = {
    "short": (0.2, 5.0),
    "shorter-than-the-rest": (0.4, 5.0),
    "long": (30.0, 0.5),
}
"""A member's deadline_s and how long it pauses: the short ones are cut off, the long one is not."""
_WRITE = {"side_effect": SideEffect.WORKSPACE_WRITE}
"""A write: idempotent (it owes no watermark), but not read-only, so its batch runs one call after another."""
_LAYOUTS: dict[str, tuple[bool, list[str]]] = {
    "sequential-short-first": (True, ["short", "long"]),
    "sequential-short-last": (True, ["long", "short"]),
    "sequential-short-between": (True, ["long", "short", "long"]),
    "sequential-two-short": (True, ["short", "long", "shorter-than-the-rest"]),
    "parallel-short-first": (False, ["short", "long"]),
    "parallel-short-last": (False, ["long", "short"]),
    "parallel-short-between": (False, ["long", "short", "long"]),
    "parallel-two-short": (False, ["shorter-than-the-rest", "long", "short"]),
}
"""A batch: whether its long members write (so it runs one call after another) and its members in proposal order."""
_DEADLINE_SLACK_S = 0.5
"""Float and clock-read slack around the instant a context's deadline has to be (spec: ``ToolExecutionContext``)."""


@pytest.mark.rules("D2.4")
@pytest.mark.parametrize("layout", list(_LAYOUTS))
async def test_every_batch_member_runs_under_its_own_deadline(harness: Harness, layout: str) -> None:
    writes, members = _LAYOUTS[layout]
    tools = [
        _DeadlineMember(
            harness.world,
            f"tools.{kind.replace('-', '_')}_{index}",
            pause_s=_MEMBERS[kind][1],
            deadline_s=_MEMBERS[kind][0],
            **(_WRITE if writes and kind == "long" else {}),
        )
        for index, kind in enumerate(members)
    ]
    async with harness.open(*tools) as session:
        calls = [session.proposed(t.spec.name, {}, call_id=f"call-{i}") for i, t in enumerate(tools)]
        submitted = time.time()
        answers = await session.step(calls)
    wrong = []
    for kind, tool, d in zip(members, tools, answers, strict=True):
        deadline_s, pause_s = _MEMBERS[kind]
        cut = pause_s > deadline_s
        want = (InvocationStatus.FAILED, ReasonCode.DEADLINE_EXCEEDED) if cut else (InvocationStatus.SUCCEEDED, None)
        got = (d.status, d.reason_code if isinstance(d, Outcome) else None)
        if got != want:
            wrong.append(f"{tool.spec.name} (deadline_s {deadline_s:g}, pausing {pause_s:g} s) answered {describe(d)}")
        for deadline, started in tool.seen:
            # Built between the submission and the tool's start: its deadline lies between those two plus deadline_s.
            low, high = submitted + deadline_s - _DEADLINE_SLACK_S, started + deadline_s + _DEADLINE_SLACK_S
            if not low <= deadline <= high:
                wrong.append(
                    f"{tool.spec.name}'s context deadline is {deadline - started:+.2f} s from its start; expected "
                    f"its own deadline_s {deadline_s:g} after its context was built"
                )
        if len(tool.seen) != 1:
            wrong.append(f"{tool.spec.name} executed {len(tool.seen)} time(s)")
    harness.expect(
        "D2.4",
        not wrong,
        f"a batch of {len(members)} ({'a write among them: one after another' if writes else 'reads: in parallel'}; "
        f"{', '.join(members)}) must run each member under its own deadline: a member pausing past its deadline is "
        f"cut off FAILED deadline_exceeded, one within it succeeds, and its context deadline is its own; wrong: {wrong}",
    )
