"""Decision 4 (with D1.2, D3.5 and D10.2): how an execution ends, by its watermark and its idempotency class."""

from __future__ import annotations

from dataclasses import dataclass

from toolproof.spec import FAILURE_REASONS, FailureKind, IdempotencyClass, ReasonCode, ToolKind, ToolSpec

from ._catalog import Behaviour
from .d01 import invalid_result
from .d13 import SUCCEEDED, Verdict, outcome


@dataclass(frozen=True)
class Run:
    """What step 10's executions within one submission come to."""

    verdicts: tuple[Verdict, ...]
    """The allowed terminal judgements (more than one where the ADR leaves the choice)."""
    executions: int
    """How many times the tool ran (D10.2's bounded retry)."""
    watermark: bool
    effects: int
    unmarked: tuple[int, int]
    """Bounds of what tool_effect_unmarked_total may rise by (D4.10)."""
    detail: str | None
    """Remote text the last failure carried."""
    succeeded: bool
    cut: bool = False
    """Cut off at its deadline: the deadline is wall-clock time, so the cut may come before the tool entered execute,
    before its mark or after its effect; the watermark the row shows then decides between D4.2 and D4.20."""


def _escaped(spec: ToolSpec, marked: bool) -> bool:
    """D4.2: a NON_IDEMPOTENT call that marked its effect may have escaped."""
    return marked and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT


def _end(spec: ToolSpec, ending: str, marked: bool) -> tuple[Verdict, ...]:
    """A raise or an overrun: the watermark decides (D4.2, D4.20)."""
    reason = ReasonCode.TOOL_CRASHED if ending == "raise" else ReasonCode.DEADLINE_EXCEEDED
    if _escaped(spec, marked):
        return (outcome(ReasonCode.EFFECT_UNKNOWN, "D4.2"),)
    if not marked:
        return (outcome(reason, "D4.20"),)
    # A marked IDEMPOTENT or CONDITIONALLY_IDEMPOTENT call that raises: the ADR reserves UNCERTAIN for set watermarks
    # (D4.7) and says nothing more, so both readings are allowed.
    return outcome(reason, "D4.20"), outcome(ReasonCode.EFFECT_UNKNOWN, "D4.7")


def execute(spec: ToolSpec, behaviour: Behaviour, max_attempts: int, first: int = 1, marked: bool = False) -> Run:
    """Run ``behaviour`` as step 10 would, attempt after attempt, and say how the call ends.

    ``first`` is the attempt number the row's claim gave the first execution (1, or more after a crash: the row's
    attempt keeps rising, D10.2's interpretation), ``marked`` whether the row's watermark was already set. A retry
    follows while the row's attempt is under ``max_attempts``; the first execution always runs. Whether a recovering
    worker's own retries count from its claim's attempt or from 1 the interpretation leaves open: the crash
    family never draws a TRANSIENT failure for a recovered run (d04_crash)."""
    effects, executions = 0, 0
    verdicts: tuple[Verdict, ...] = ()
    for attempt in range(first, max(max_attempts, first) + 1):
        executions += 1
        marked = marked or behaviour.mark
        effects += int(behaviour.effect)
        ending = behaviour.ending_at(attempt)
        if ending == "ok":
            invalid = invalid_result(spec, behaviour)
            verdicts = (outcome(invalid, "D1.4", "D3.5"),) if invalid else (SUCCEEDED,)
            break
        if ending == "raise":
            verdicts = _end(spec, ending, marked)
            break
        if ending == "overrun":
            unmarked = _end(spec, ending, False)
            verdicts = unmarked + tuple(v for v in _end(spec, ending, marked) if v not in unmarked)
            break
        reason = FAILURE_REASONS[FailureKind(ending)]
        verdicts = (outcome(reason, "D1.2"),)
        # D10.2: a TRANSIENT failure runs again within the step, up to max_attempts, unless it may have escaped.
        if ending != "TRANSIENT" or _escaped(spec, marked):
            break
        verdicts = (outcome(reason, "D1.2", "D10.2"),)
    may_owe = spec.consequential and spec.idempotency is not IdempotencyClass.IDEMPOTENT
    owes = may_owe and not behaviour.mark
    cut = behaviour.ending_at(first + executions - 1) == "overrun"
    # D4.10: a NON_IDEMPOTENT or CONDITIONALLY_IDEMPOTENT consequential tool that ran without calling
    # mark_effect_sent is flagged however its execution ended (a success, a failure, a raise, an overrun): decision 4
    # says a tool that omits the call is flagged, not a call that succeeded. It binds for certain an ACTION tool only:
    # a CONTROL tool's effect is on the run (decision 16), and whether its declared classification owes the watermark
    # the ADR does not say (docs/model.md, settled disagreements).
    certain = owes and spec.kind is ToolKind.ACTION
    return Run(
        verdicts=verdicts,
        executions=executions,
        watermark=marked,
        effects=effects,
        # A call cut off at its deadline may be cut before its mark: the flag may then rise too.
        unmarked=(int(certain), executions if owes or (cut and may_owe) else 0),
        detail=behaviour.detail,
        succeeded=verdicts[0] is SUCCEEDED,
        cut=cut,
    )
