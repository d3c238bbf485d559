"""Decision 17: a script's call re-enters the one pipeline, so every per-call rule holds on the bridge's path.

Each cell runs a small script and judges one per-call rule by what the harness observes (the world's executions and
the tools' records, the dispositions the script's calls were answered): the output limit (D12.1), the loop breaker
(D14.3), the tool's deadline (D2.4) and the bounded retry of a TRANSIENT failure (D10.2). The cells name the rule the
mistake breaks and need the bridge: an implementation without it does not claim them.
"""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool, PartsTool, SlowTool, TransientOnceTool
from toolproof.spec import (
    EXCERPT_MARKER_SOURCE,
    LOOP_THRESHOLD,
    Identity,
    InvocationStatus,
    Outcome,
    ReasonCode,
    Success,
    TrustLabel,
)

from ._harness import Harness, describe

LARGE = "toolproof.fakes._scripts:reads_a_large_output"
REPEATS = "toolproof.fakes._scripts:echoes_the_same_text_six_times"
SLOW = "toolproof.fakes._scripts:waits_on_a_slow_tool"
WEATHER = "toolproof.fakes._scripts:looks_up_the_weather"
LIMIT = 100
OUTPUT = "HEAD-" + "é€" * 60 + "-TAIL"
"""An output well over ``LIMIT`` bytes, of multi-byte characters."""
REPEATED = 6
"""How many identical calls ``REPEATS`` makes: one past the loop breaker's threshold."""


@pytest.mark.rules("D12.1")
@pytest.mark.profiles("bridge")  # A core rule, judged on the bridge's path: only where the bridge is claimed.
async def test_a_script_calls_output_over_the_limit_is_excerpted(harness: Harness) -> None:
    tool = PartsTool(harness.world, [(OUTPUT, None)], output_trust=TrustLabel.INTERNAL)
    async with harness.open(tool, max_output_bytes=LIMIT) as session:
        run = await session.run_script(LARGE)
    answer = run.dispositions[0] if run.dispositions else None
    what = f"a {len(OUTPUT.encode())}-byte output a script read under a {LIMIT}-byte limit ({run.status})"
    if answer is None:
        harness.fail("D12.1", f"{what} was answered nothing: {run.message}")
    d = harness.success("D12.1", answer, what)
    markers = [e for e in d.content if e.source == EXCERPT_MARKER_SOURCE]
    at = d.content.index(markers[0]) if markers else len(d.content)
    head = "".join(e.text for e in d.content[:at])
    tail = "".join(e.text for e in d.content[at + 1 :] if e.source != EXCERPT_MARKER_SOURCE)
    harness.expect(
        "D12.1",
        len(markers) == 1
        and bool(head and tail)
        and OUTPUT.startswith(head)
        and OUTPUT.endswith(tail)
        and len(head.encode()) + len(tail.encode()) <= LIMIT,
        f"{what} was delivered as {len(markers)} marker(s), head …{head[-8:]!r} and tail {tail[:8]!r}…; expected "
        "head, one marker and tail within the limit: a call through the bridge is excerpted as any other",
    )


@pytest.mark.rules("D14.3")
@pytest.mark.profiles("bridge")
async def test_a_scripts_identical_calls_trip_loop_detection(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        run = await session.run_script(REPEATS)
    reasons = [d.reason_code.value if isinstance(d, Outcome) else describe(d)[:9] for d in run.dispositions]
    expected = ["SUCCEEDED"] * (LOOP_THRESHOLD - 1) + [ReasonCode.LOOP_DETECTED.value] * (REPEATED - LOOP_THRESHOLD + 1)
    executed = len(harness.world.executions)
    harness.expect(
        "D14.3",
        reasons == expected and executed == LOOP_THRESHOLD - 1,
        f"a script's {REPEATED} identical calls were answered {reasons} ({run.status}) and the tool ran {executed} time(s); "
        f"expected {expected} and {LOOP_THRESHOLD - 1} runs: the breaker counts a script's calls as any other",
    )


@pytest.mark.rules("D2.4")
@pytest.mark.profiles("bridge")
async def test_a_script_call_past_its_deadline_is_cut_off(harness: Harness) -> None:
    tool = SlowTool(harness.world, name="slow.tool", pause_s=5.0, deadline_s=0.2)
    async with harness.open(tool) as session:
        run = await session.run_script(SLOW)
    answer = run.dispositions[0] if run.dispositions else None
    ended = [call_id for mark, call_id in harness.world.order if mark == "end"]
    harness.expect(
        "D2.4",
        isinstance(answer, Outcome)
        and answer.status is InvocationStatus.FAILED
        and answer.reason_code is ReasonCode.DEADLINE_EXCEEDED
        and not ended,
        f"a script's call of a tool pausing 5 s past its 0.2 s deadline was answered "
        f"{describe(answer) if answer is not None else None} ({run.status}) and the tool ran to its end "
        f"{len(ended)} time(s); expected failed deadline_exceeded, cut off at the tool's deadline",
    )


@pytest.mark.rules("D10.2")
@pytest.mark.profiles("bridge")
async def test_a_script_calls_transient_failure_is_retried(harness: Harness) -> None:
    tool = TransientOnceTool(harness.world)
    async with harness.open(tool) as session:
        run = await session.run_script(WEATHER)
    attempts: list[Identity] = harness.world.observations.get(tool.spec.name, [])
    answer = run.dispositions[0] if run.dispositions else None
    harness.expect(
        "D10.2",
        [a.attempt for a in attempts] == [1, 2]
        and attempts[0].idempotency_key == attempts[1].idempotency_key
        and isinstance(answer, Success),
        f"a script's call of a tool failing TRANSIENT once ran as attempts {[a.attempt for a in attempts]} and was "
        f"answered {describe(answer) if answer is not None else None} ({run.status}); expected attempts [1, 2] under "
        "one key and success: a call through the bridge is retried within its step as any other",
    )
