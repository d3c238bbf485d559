"""Decision 4, the in-process part: the watermark is committed before the effect, and it decides."""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool, ForgetsWatermarkTool, HangsTool, MarkThenProbeTool, RaisesTool, WriteTool
from toolproof.spec import InvocationRow, InvocationStatus, Metric, ReasonCode, ToolExecutionContext

from ._harness import Harness


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


@pytest.mark.rules("D4.2")
async def test_raising_after_the_watermark_is_uncertain(harness: Harness) -> None:
    tool = RaisesTool(harness.world, after_watermark=True)
    async with harness.open(tool) as session:
        d = harness.outcome("D4.2", await session.call(tool.spec.name, {"n": 1}), "a raise after the watermark")
    harness.expect(
        "D4.2",
        (d.status, d.reason_code) == (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN),
        f"a NON_IDEMPOTENT tool that marked, acted and raised was answered {d.status.value} {d.reason_code.value}",
    )


@pytest.mark.rules("D4.2")
async def test_hanging_after_the_watermark_is_uncertain(harness: Harness) -> None:
    tool = HangsTool(
        harness.world, after_watermark=True, deadline_s=0.05, side_effect="EXTERNAL_WRITE", idempotency="NON_IDEMPOTENT"
    )
    async with harness.open(tool) as session:
        d = harness.outcome("D4.2", await session.call(tool.spec.name, {"n": 1}), "a hang after the watermark")
    harness.expect(
        "D4.2",
        (d.status, d.reason_code) == (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN),
        f"a NON_IDEMPOTENT tool that marked and then overran its deadline was answered {d.status.value} {d.reason_code.value}",
    )


@pytest.mark.rules("D4.2")
async def test_raising_before_the_watermark_is_a_retryable_failure(harness: Harness) -> None:
    tool = RaisesTool(harness.world, after_watermark=False)
    async with harness.open(tool) as session:
        d = harness.outcome("D4.2", await session.call(tool.spec.name, {"n": 1}), "a raise before the watermark")
    harness.expect(
        "D4.2",
        d.status is InvocationStatus.FAILED and d.retryable,
        f"a tool that raised before marking its effect was answered {d.status.value} {d.reason_code.value} "
        f"retryable={d.retryable}; nothing left the process, so FAILED and retryable",
    )


@pytest.mark.rules("D4.10")
async def test_consequential_tool_without_watermark_is_flagged(harness: Harness) -> None:
    forgets = ForgetsWatermarkTool(harness.world)
    marks = WriteTool(harness.world)
    read = EchoTool(harness.world)
    async with harness.open(forgets, marks, read) as session:
        await session.call(marks.spec.name, {"n": 1})
        await session.call(read.spec.name, {"text": "t"})
        before = (await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0)
        await session.call(forgets.spec.name, {"n": 1})
        after = (await session.metrics()).get(Metric.EFFECT_UNMARKED.value, 0)
    harness.expect(
        "D4.10",
        (before, after) == (0, 1),
        f"{Metric.EFFECT_UNMARKED.value} was {before} after a marking write and a read, {after} after an unmarked write;"
        " expected 0 then 1",
    )


@pytest.mark.rules("D4.11")
async def test_uncertain_resolution_is_counted(harness: Harness) -> None:
    tool = RaisesTool(harness.world, after_watermark=True)
    async with harness.open(tool) as session:
        await session.call(tool.spec.name, {"n": 1})
        count = (await session.metrics()).get(Metric.UNCERTAIN.value, 0)
    harness.expect("D4.11", count == 1, f"{Metric.UNCERTAIN.value}={count} after one UNCERTAIN resolution")
