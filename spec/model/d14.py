"""Decision 14: one breaker, one counter per identical call (tool name and canonical arguments) within a run."""

from __future__ import annotations

from collections.abc import Sequence

from toolproof.spec import LOOP_THRESHOLD, REPEATED_DENIAL_THRESHOLD, InvocationStatus, ReasonCode

DENIALS = frozenset(
    {ReasonCode.POLICY_DENIED, ReasonCode.APPROVAL_DENIED, ReasonCode.APPROVAL_EXPIRED, ReasonCode.REPEATED_DENIAL}
)
"""D14.2's interpretation: what counts as a denial."""


def refusals(earlier: Sequence[tuple[InvocationStatus, ReasonCode | None]]) -> dict[ReasonCode, str]:
    """The breaker's refusals that apply to a call, given its earlier identical calls' current (status, reason).

    The ADR does not rank the three rules: every one that applies is allowed (D14.4's interpretation).
    """
    applies: dict[ReasonCode, str] = {}
    if any(status is InvocationStatus.UNCERTAIN for status, _ in earlier):
        applies[ReasonCode.PRIOR_UNCERTAIN] = "D14.4"
    if len(earlier) + 1 >= LOOP_THRESHOLD:
        applies[ReasonCode.LOOP_DETECTED] = "D14.3"
    if sum(1 for status, reason in earlier if status is InvocationStatus.DENIED and reason in DENIALS) >= (
        REPEATED_DENIAL_THRESHOLD - 1
    ):
        applies[ReasonCode.REPEATED_DENIAL] = "D14.2"
    return applies
