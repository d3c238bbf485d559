"""Round 2, decision 16: control tools."""

from __future__ import annotations

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import Step, ToolKind

from ._common import impl, table

_reference_guard = STEP_TABLE[Step.GUARD]


async def _guard_skips_control(p: Pipeline, s: CallState) -> None:
    if s.resolved is not None and s.resolved.spec.kind is ToolKind.CONTROL:
        # The mistake: control tools act on the run, not the world, so "the loop breaker is not for them".
        s.existing = p.store.find_by_key(s.key)
        return
    await _reference_guard(p, s)


class _ControlSkipsBreaker(Pipeline):
    steps = table(GUARD=_guard_skips_control)


def control_tools_skip_breaker() -> ReferenceImplementation:
    """D16 "Control tools are ToolKind.CONTROL, run the full pipeline": step 4's breaker is skipped for control tools,
    so a model that proposes the same control call (e.g. conversation.ask_user with the same question) in step
    after step suspends the run every time instead of DENIED loop_detected at the fifth."""
    return impl("r2-d16-control-tools-skip-breaker", _ControlSkipsBreaker)
