"""Decision 14: one breaker, one counter, one notion of identical."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.fakes import EchoTool, RaisesTool
from toolproof.spec import LOOP_THRESHOLD, REPEATED_DENIAL_THRESHOLD, Disposition, Outcome, ReasonCode

from ._harness import Harness, Session

_FREE: dict[str, Any] = {"input_schema": {"type": "object"}}


def _reason(d: Disposition) -> str:
    return d.reason_code.value if isinstance(d, Outcome) else d.status


async def _repeat(
    session: Session, name: str, arguments: dict[str, object], times: int, run_id: str = "run-1"
) -> list[str]:
    return [_reason(await session.call(name, arguments, run_id=run_id)) for _ in range(times)]


def _wipe(harness: Harness) -> EchoTool:
    return EchoTool(harness.world, name="admin.wipe", **_FREE)


@pytest.mark.rules("D14.1")
async def test_argument_order_does_not_make_a_call_different(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world, **_FREE)) as session:
        reasons = [
            _reason(await session.call("files.echo", {"a": 1, "b": 2} if i % 2 else {"b": 2, "a": 1}))
            for i in range(LOOP_THRESHOLD)
        ]
    harness.expect(
        "D14.1",
        reasons[-1] == ReasonCode.LOOP_DETECTED.value,
        f"{LOOP_THRESHOLD} calls whose arguments differ only in member order were answered {reasons}; "
        "they are identical calls",
    )


@pytest.mark.rules("D14.1")
async def test_denials_count_only_identical_calls(harness: Harness) -> None:
    async with harness.open(_wipe(harness), denied_tools=["admin.wipe"]) as session:
        reasons = [_reason(await session.call("admin.wipe", {"target": n})) for n in range(REPEATED_DENIAL_THRESHOLD)]
    harness.expect(
        "D14.1",
        reasons == [ReasonCode.POLICY_DENIED.value] * REPEATED_DENIAL_THRESHOLD,
        f"denied calls to one tool with different arguments were answered {reasons}; different arguments are "
        "different calls, each evaluated",
    )


@pytest.mark.rules("D14.2")
async def test_third_identical_denied_call_is_refused_without_evaluation(harness: Harness) -> None:
    async with harness.open(_wipe(harness), denied_tools=["admin.wipe"]) as session:
        reasons = await _repeat(session, "admin.wipe", {"target": "all"}, REPEATED_DENIAL_THRESHOLD)
    expected = [ReasonCode.POLICY_DENIED.value] * (REPEATED_DENIAL_THRESHOLD - 1) + [ReasonCode.REPEATED_DENIAL.value]
    harness.expect("D14.2", reasons == expected, f"identical denied calls were answered {reasons}; expected {expected}")


@pytest.mark.rules("D14.3")
async def test_fifth_identical_call_trips_loop_detection(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        reasons = await _repeat(session, "files.echo", {"text": "again"}, LOOP_THRESHOLD)
    expected = ["SUCCEEDED"] * (LOOP_THRESHOLD - 1) + [ReasonCode.LOOP_DETECTED.value]
    harness.expect("D14.3", reasons == expected, f"identical calls were answered {reasons}; expected {expected}")
    harness.expect(
        "D14.3",
        len(harness.world.executions) == LOOP_THRESHOLD - 1,
        f"the tool ran {len(harness.world.executions)} times",
    )


@pytest.mark.rules("D14.4")
async def test_call_identical_to_an_uncertain_one_never_runs_again(harness: Harness) -> None:
    tool = RaisesTool(harness.world, after_watermark=True)
    async with harness.open(tool) as session:
        reasons = await _repeat(session, tool.spec.name, {"amount": 10}, 2)
    harness.expect(
        "D14.4",
        reasons == [ReasonCode.EFFECT_UNKNOWN.value, ReasonCode.PRIOR_UNCERTAIN.value],
        f"a call identical to an UNCERTAIN one was answered {reasons[1:]}; expected prior_uncertain",
    )
    harness.expect("D14.4", len(harness.world.executions) == 1, f"the tool ran {len(harness.world.executions)} times")


@pytest.mark.rules("D14.5")
async def test_breaker_counts_per_run(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world), _wipe(harness), denied_tools=["admin.wipe"]) as session:
        await _repeat(session, "files.echo", {"text": "again"}, LOOP_THRESHOLD - 1, run_id="run-a")
        await _repeat(session, "admin.wipe", {"target": "all"}, REPEATED_DENIAL_THRESHOLD - 1, run_id="run-a")
        other = [
            _reason(await session.call("files.echo", {"text": "again"}, run_id="run-b")),
            _reason(await session.call("admin.wipe", {"target": "all"}, run_id="run-b")),
        ]
    harness.expect(
        "D14.5",
        other == ["SUCCEEDED", ReasonCode.POLICY_DENIED.value],
        f"after repeats in run-a, the same calls in run-b were answered {other}; the breaker counts per run",
    )
