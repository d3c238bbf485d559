"""Decision 16: control tools run the full pipeline and suspend through a nullable marker."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.fakes import AskUserTool
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    EventKind,
    InvocationStatus,
    ReasonCode,
    Suspended,
    TrustLabel,
)

from ._harness import Harness, Session, describe

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
