"""Witnesses of the third red team's gaps in the context and in batches: a retry handed the first attempt's context,
a deadline enforced with a grace period, and a CONDITIONALLY_IDEMPOTENT read let into a parallel batch."""

from __future__ import annotations

import dataclasses

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, Prepared
from toolproof.spec import IdempotencyClass, SideEffect, Step, StepRequest, ToolKind

from ._registry import witness

_prepare = STEP_TABLE[Step.PREPARE]

GRACE_S = 1.0
"""How long past its deadline the grace witness lets a tool run."""


async def _prepare_once(p: Pipeline, s: CallState) -> None:
    if s.prepared is None:
        await _prepare(p, s)
    # The defect: a retry keeps the context step 9 built for the first attempt (its identity, deadline and signal).


@witness(
    "retry_reuses_first_context",
    ("D2.3", "D2.4", "D10.2"),
    "a TRANSIENT retry runs with the first attempt's context: attempt 1 in its identity, the first deadline",
)
class _RetryReusesFirstContext(Pipeline):
    steps = STEP_TABLE | {Step.PREPARE: _prepare_once}


async def _prepare_with_grace(p: Pipeline, s: CallState) -> None:
    await _prepare(p, s)
    assert s.prepared is not None
    # The defect: the tool is told its deadline, but the watchdog waits a grace period past it.
    late = dataclasses.replace(s.prepared.parts, deadline=s.prepared.parts.deadline + GRACE_S)
    s.prepared = Prepared(parts=late, context=s.prepared.context)


@witness("deadline_with_grace", ("D2.4",), "a tool is cut off only a second past its deadline, so a late return counts")
class _DeadlineWithGrace(Pipeline):
    steps = STEP_TABLE | {Step.PREPARE: _prepare_with_grace}


_ENOUGH = frozenset({IdempotencyClass.IDEMPOTENT, IdempotencyClass.CONDITIONALLY_IDEMPOTENT})


@witness(
    "parallel_admits_conditional",
    ("D15.3",),
    "a READ_ONLY CONDITIONALLY_IDEMPOTENT member counts as idempotent enough for a parallel batch",
)
class _ParallelAdmitsConditional(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        specs = [self.lookup(step.run_id, call.tool_name) for call in step.calls]
        # The defect: the key's deduplication is taken to make a CONDITIONALLY_IDEMPOTENT read safe to overlap.
        return len(specs) > 1 and all(
            found is not None
            and found[0].side_effect is SideEffect.READ_ONLY
            and found[0].kind is ToolKind.ACTION
            and found[0].idempotency in _ENOUGH
            for found in specs
        )
