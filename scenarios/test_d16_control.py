"""Decision 16: control tools run the full pipeline and suspend through a nullable marker.

D16.4's answer, swept: the tool receives the answer a call was resumed with whole, as its ``answer`` argument, at every
length from empty through one character, around 200 (a plausible cut), around the byte boundaries 256, 1,024 and 4,096,
and past the 64 KiB output limit; in characters of one to four UTF-8 bytes (four-byte ones two UTF-16 units each) and
combining sequences, so a cut by bytes, by UTF-16 units or by characters shows; with leading, trailing and inner white
space and line breaks. D4.16's path, swept over the same kinds of answer: a worker that dies after its claim on
resuming, and a sweep or a replay that recovers the call, hands the tool the whole answer too. Judged by what the fake
tool received (its output is excerpted past the limit, the arguments it was handed are not)."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.fakes import AskUserTool
from toolproof.spec import (
    CONTROL_ANSWER_ARGUMENT,
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    CrashPlan,
    CrashPoint,
    Disposition,
    EventKind,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    RecoveryVia,
    SimulatedCrash,
    Suspended,
    TrustLabel,
)

from ._harness import USER_ITEM, Harness, Session, describe

ASK = "conversation.ask_user"


async def _ask(harness: Harness, session: Session) -> Suspended:
    d = await session.call(ASK, {"question": "Which colour?"})
    if not isinstance(d, Suspended) or d.reason != "control":
        harness.fail("D16.1", f"ask_user was answered {d!r}; expected a control suspension")
    return d


@pytest.mark.rules("D16.1")
async def test_control_tool_runs_the_full_pipeline(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world)) as session:
        d = await _ask(harness, session)
        row = await session.row(d.invocation_id)
        kinds = [e.kind for e in await session.events() if e.invocation_id == d.invocation_id]
    harness.expect("D16.1", row is not None and bool(row.idempotency_key), f"the control call left row {row!r}")
    want = [EventKind.REQUESTED.value, EventKind.SUSPENDED.value]
    harness.expect("D16.1", kinds == want, f"the control call emitted {kinds}; expected {want}")


@pytest.mark.rules("D16.1")
async def test_policy_applies_to_control_tools(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world), denied_tools=[ASK]) as session:
        d = harness.outcome("D16.1", await session.call(ASK, {"question": "?"}), "a denied control tool")
    harness.expect(
        "D16.1", d.reason_code is ReasonCode.POLICY_DENIED, f"a denied control tool got {d.reason_code.value}"
    )


@pytest.mark.rules("D16.1")
@pytest.mark.parametrize("resumed", [False, True], ids=["left-suspended", "resumed"])
async def test_the_breaker_applies_to_control_tools(harness: Harness, resumed: bool) -> None:
    async with harness.open(AskUserTool(harness.world)) as session:
        answers = []
        for _ in range(LOOP_THRESHOLD):
            d = await session.call(ASK, {"question": "Which colour?"})
            answers.append(describe(d))
            if resumed and isinstance(d, Suspended):
                await session.resume(d.invocation_id, "blue")
    last = answers[-1] if answers else None
    harness.expect(
        "D16.1",
        last == f"DENIED {ReasonCode.LOOP_DETECTED.value}" and all(a.startswith("SUSPENDED") for a in answers[:-1]),
        f"the same control call proposed in {LOOP_THRESHOLD} steps ({'each resumed' if resumed else 'none resumed'}) "
        f"was answered {answers}; expected {LOOP_THRESHOLD - 1} suspensions, then DENIED "
        f"{ReasonCode.LOOP_DETECTED.value}: step 4's breaker is part of the full pipeline",
    )


@pytest.mark.rules("D16.1")
async def test_repeated_denials_of_a_control_tool_trip_the_breaker(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world), denied_tools=[ASK]) as session:
        answers = [describe(await session.call(ASK, {"question": "?"})) for _ in range(REPEATED_DENIAL_THRESHOLD)]
    want = [f"DENIED {ReasonCode.POLICY_DENIED.value}"] * (REPEATED_DENIAL_THRESHOLD - 1) + [
        f"DENIED {ReasonCode.REPEATED_DENIAL.value}"
    ]
    harness.expect(
        "D16.1",
        answers == want,
        f"a denied control call proposed {REPEATED_DENIAL_THRESHOLD} times was answered {answers}; expected {want}",
    )


@pytest.mark.rules("D16.2")
async def test_suspension_is_a_marker_not_a_status(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world)) as session:
        d = await _ask(harness, session)
        row = await session.row(d.invocation_id)
    harness.expect(
        "D16.2",
        row is not None and row.suspended and row.status in (InvocationStatus.RECORDED, InvocationStatus.RUNNING),
        f"a suspended control call's row has suspended={row.suspended if row else None} and status "
        f"{row.status.value if row else None}; expected the marker set on an ordinary status",
    )


@pytest.mark.rules("D16.3")
async def test_sweep_leaves_suspended_calls_alone(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world), lease_s=60) as session:
        d = await _ask(harness, session)
        before = await session.row(d.invocation_id)
        decided: list[object] = []
        for seconds in (59, 2, 3600):  # Inside the lease, just past it, and long past it.
            session.advance(seconds)
            decided += [x for x in await session.sweep() if x.invocation_id == d.invocation_id]
        row = await session.row(d.invocation_id)
        kinds = [e.kind for e in await session.events() if e.invocation_id == d.invocation_id]
    harness.expect(
        "D16.3",
        row is not None and row.suspended and not row.status.is_terminal and not harness.world.executions,
        f"after an hour and a sweep the suspended call is {row.status.value if row else None} "
        f"suspended={row.suspended if row else None} with {len(harness.world.executions)} execution(s)",
    )
    harness.expect(
        "D16.3",
        decided == [],
        f"the sweep picked up the suspended call and answered {decided}; a suspended row is not an orphan",
    )
    harness.expect(
        "D16.3",
        EventKind.RECOVERED.value not in kinds,
        f"the sweep wrote {EventKind.RECOVERED.value} for a suspended call (events {kinds})",
    )
    harness.expect(
        "D16.3",
        before is not None and row is not None and (row.status, row.attempt) == (before.status, before.attempt),
        f"the sweep changed the suspended row: {before!r} -> {row!r}",
    )


@pytest.mark.rules("D16.4")
async def test_resumed_control_call_completes_through_the_pipeline(harness: Harness) -> None:
    async with harness.open(AskUserTool(harness.world)) as session:
        d = await _ask(harness, session)
        done = harness.success("D16.4", await session.resume(d.invocation_id, "blue"), "the resumed control call")
        row = await session.row(d.invocation_id)
        kinds = [e.kind for e in await session.events() if e.invocation_id == d.invocation_id]
    harness.expect(
        "D16.4",
        [(e.text, e.trust) for e in done.content] == [("blue", TrustLabel.USER)],
        f"the resumed call delivered {done.content!r}",
    )
    harness.expect(
        "D16.4",
        row is not None and row.status is InvocationStatus.SUCCEEDED and not row.suspended,
        f"after resuming, the row is {row.status.value if row else None} suspended={row.suspended if row else None}",
    )
    want = [EventKind.REQUESTED.value, EventKind.SUSPENDED.value, EventKind.STARTED.value, EventKind.COMPLETED.value]
    harness.expect("D16.4", kinds == want, f"events {kinds}; expected {want}")
    harness.expect("D16.4", len(harness.world.executions) == 1, f"{len(harness.world.executions)} executions")


_STRICT_QUESTION = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 1}},
    "required": ["question"],
    "additionalProperties": False,
}
_INVALID_QUESTIONS: dict[str, dict[str, Any]] = {
    "missing": {},
    "wrong-type": {"question": 7},
    "empty": {"question": ""},
    "extra-member": {"question": "Which colour?", "then": "wipe the disk"},
}


@pytest.mark.rules("D16.1")
@pytest.mark.parametrize("case", list(_INVALID_QUESTIONS))
async def test_control_arguments_are_validated_like_any_tool(harness: Harness, case: str) -> None:
    arguments = _INVALID_QUESTIONS[case]
    async with harness.open(AskUserTool(harness.world, input_schema=_STRICT_QUESTION)) as session:
        d = await session.call(ASK, arguments)
        row = await session.row(d.invocation_id)
        valid = await session.call(ASK, {"question": "Which colour?"})
    harness.expect(
        "D16.1",
        getattr(d, "reason_code", None) is ReasonCode.INVALID_ARGUMENTS and row is not None,
        f"a control call with arguments {arguments!r}, invalid under its input schema, was answered {describe(d)} "
        f"(row {'kept' if row else 'missing'}); expected {ReasonCode.INVALID_ARGUMENTS.value} with a row: step 2 runs "
        "for control tools too",
    )
    harness.expect(
        "D16.1",
        isinstance(valid, Suspended) and valid.reason == "control",
        f"the same control call with valid arguments was answered {describe(valid)}; expected a control suspension",
    )


def _digits(length: int) -> str:
    """``length`` characters whose every position shows where a cut fell (the digits cycle, a letter each ten)."""
    return "".join(str(i % 10) if i % 10 else "abcdefghij"[(i // 10) % 10] for i in range(length))


ANSWERS: dict[str, list[str]] = {
    "short": ["", "b", _digits(199), _digits(200), _digits(201)],
    "byte-boundaries": [_digits(n) for n in (255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097)],
    "past-the-output-limit": [_digits(64 * 1024 - 1), _digits(64 * 1024 + 1)],
    "multi-byte": [
        "\u00e9" * 201,  # Two UTF-8 bytes each: 402 bytes.
        "\u8a9e" * 100,  # Three each: 300 bytes.
        "\U0001f600" * 101,  # Four each, and two UTF-16 units: 202 units.
        "\U0001f600" * 1025,
        "e\u0301" * 150,  # A letter and its combining mark: 300 code points, 150 characters to the eye.
        "a" * 199 + "\U0001f600" + "z",  # A four-byte character across the 200th code point.
    ],
    "white-space": [" ", "\n", "  blue  ", "blue\n", "\tblue", "line one\nline two\r\n", "a" * 200 + "   "],
}
"""Answers a person may give, by what a pipeline that cut, encoded or trimmed them would get wrong."""


def _shown(answer: str) -> str:
    return repr(answer) if len(answer) <= 12 else f"{len(answer)} characters {answer[:6]!r}...{answer[-6:]!r}"


def _received(harness: Harness, invocation_id: str) -> list[object]:
    """What the tool was handed as its answer, on each execution of ``invocation_id``."""
    return [
        e.arguments.get(CONTROL_ANSWER_ARGUMENT, "<none>")
        for e in harness.world.executions
        if e.invocation_id == invocation_id
    ]


def _not_whole(harness: Harness, invocation_id: str, answer: str, done: Disposition) -> str | None:
    """What went wrong when a resumed call did not execute once with ``answer`` whole and succeed; None when it did."""
    received = _received(harness, invocation_id)
    if received == [answer] and done.status is InvocationStatus.SUCCEEDED:
        return None
    shown = [_shown(r) if isinstance(r, str) else repr(r) for r in received]
    return f"{_shown(answer)}: answered {describe(done)}, the tool received {shown}"


@pytest.mark.rules("D16.4")
@pytest.mark.parametrize("kind", list(ANSWERS))
async def test_the_tool_receives_the_whole_answer(harness: Harness, kind: str) -> None:
    wrong = []
    async with harness.open(AskUserTool(harness.world)) as session:
        for index, answer in enumerate(ANSWERS[kind]):
            run_id = f"run-answer-{index}"  # A run each: the same question in one run would trip the loop breaker.
            held = await session.call(ASK, {"question": "Which colour?"}, run_id=run_id)
            if not isinstance(held, Suspended):
                harness.fail("D16.4", f"ask_user was answered {describe(held)}; expected a control suspension")
            done = await session.resume(held.invocation_id, answer)
            if (what := _not_whole(harness, held.invocation_id, answer, done)) is not None:
                wrong.append(what)
    harness.expect(
        "D16.4",
        not wrong,
        f"a control call resumed with an answer ({kind}) must execute once with that answer whole as its "
        f"'{CONTROL_ANSWER_ARGUMENT}' argument and succeed; otherwise: {wrong}",
    )


CRASH_ANSWERS = ["", "b", _digits(201), _digits(4097), _digits(64 * 1024 + 1), "\U0001f600" * 101, "  blue\n"]
"""One answer of each kind for the crash path: empty, one character, past 200, past 4 KiB and 64 KiB, four-byte
characters past 200 UTF-16 units, white space at both ends."""
LEASE_S = 60.0


def _ask_call() -> ProposedCall:
    return ProposedCall(
        call_id="call-1",
        tool_name=ASK,
        arguments={"question": "Which colour?"},
        provenance={"question": [USER_ITEM.id]},
    )


@pytest.mark.rules("D4.16")
@pytest.mark.parametrize("via", list(RecoveryVia))
async def test_a_recovered_resume_hands_the_tool_the_whole_answer(harness: Harness, via: RecoveryVia) -> None:
    held: list[Suspended] = []
    async with harness.open(AskUserTool(harness.world), lease_s=LEASE_S) as session:
        for index in range(len(CRASH_ANSWERS)):
            [d] = await session.step([_ask_call()], step_number=1, run_id=f"run-crash-{index}")
            if not isinstance(d, Suspended):
                harness.fail("D4.16", f"the control call was answered {describe(d)}; expected a suspension")
            held.append(d)
    for d, answer in zip(held, CRASH_ANSWERS, strict=True):
        plan = CrashPlan(point=CrashPoint.AFTER_CLAIM)
        async with harness.open(AskUserTool(harness.world), crash=plan, lease_s=LEASE_S) as session:
            try:
                await session.resume(d.invocation_id, answer)
                harness.fail("D4.16", "the resuming worker did not die after its claim: it ignored its crash plan")
            except (SimulatedCrash, BaseExceptionGroup):
                harness.log.append(f"  the worker resuming with {_shown(answer)} died after its claim")
    harness.clock.advance(LEASE_S + 1)
    harness.log.append(f"another worker, {LEASE_S:.0f}+1 s later, recovers by {via.value}")
    wrong = []
    async with harness.open(AskUserTool(harness.world), lease_s=LEASE_S) as session:
        if via is RecoveryVia.SWEEP:
            await session.sweep()
        for index, (d, answer) in enumerate(zip(held, CRASH_ANSWERS, strict=True)):
            [done] = await session.step([_ask_call()], step_number=1, run_id=f"run-crash-{index}")
            if (what := _not_whole(harness, d.invocation_id, answer, done)) is not None:
                wrong.append(what)
    harness.expect(
        "D4.16",
        not wrong,
        f"a control call whose worker died after claiming its resume, recovered by a {via.value}, must execute once "
        f"with the answer it was resumed with, whole; otherwise: {wrong}",
    )
