"""The reference's decision matrix and its one breaker (decisions 11 and 14)."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    InstanceConfig,
    InvocationStatus,
    ReasonCode,
    ToolKind,
    ToolSpec,
    TrustLabel,
)

DENIALS = frozenset(
    {ReasonCode.POLICY_DENIED, ReasonCode.APPROVAL_DENIED, ReasonCode.APPROVAL_EXPIRED, ReasonCode.REPEATED_DENIAL}
)
"""Reasons that count as a denial for the breaker."""


class Decision(StrEnum):
    """What step 5 decided; stored on the row so a recovering worker need not decide again."""

    ALLOW = "allow"
    """Run it."""
    DENY = "deny"
    """Refuse it."""
    APPROVAL = "approval"
    """Hold it for a person."""
    CONTROL = "control"
    """A control tool: suspend the run at step 7."""


def decide(spec: ToolSpec, config: InstanceConfig, origin: TrustLabel, argument: TrustLabel) -> Decision:
    """The minimal matrix: deny list, control suspension, approval for consequential untrusted calls."""
    if spec.name in config.denied_tools:
        return Decision.DENY
    if spec.kind is ToolKind.CONTROL:
        return Decision.CONTROL
    untrusted = min(origin, argument) is TrustLabel.EXTERNAL_UNTRUSTED
    unsatisfiable = bool(spec.required_scopes - set(config.credentials))
    if spec.consequential and (untrusted or unsatisfiable):
        return Decision.APPROVAL
    return Decision.ALLOW


def breaker(prior: Sequence[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
    """The one breaker over the earlier identical calls of the run (one counter: their number).

    Args:
        prior: status and reason of every earlier identical call in the run.
    """
    if any(status is InvocationStatus.UNCERTAIN for status, _ in prior):
        return ReasonCode.PRIOR_UNCERTAIN
    denials = sum(1 for status, reason in prior if status is InvocationStatus.DENIED and reason in DENIALS)
    if denials >= REPEATED_DENIAL_THRESHOLD - 1:
        return ReasonCode.REPEATED_DENIAL
    if len(prior) >= LOOP_THRESHOLD - 1:
        return ReasonCode.LOOP_DETECTED
    return None
