"""Round 2, decision 14: one breaker, one counter."""

from __future__ import annotations

from toolproof.reference.hooks import CallState, Pipeline, ReferenceImplementation
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    InvocationStatus,
    ReasonCode,
)

from ._common import impl

DENIALS = frozenset(
    {ReasonCode.POLICY_DENIED, ReasonCode.APPROVAL_DENIED, ReasonCode.APPROVAL_EXPIRED, ReasonCode.REPEATED_DENIAL}
)


class _EarlierStepsOnly(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        rows = self.store.identical(s.request.run_id, s.call_hash)
        # The mistake: "prior" read as "in an earlier step", so calls of the current step are not looked at.
        return [
            (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
            for row in rows
            if row.step_number < s.request.step_number
        ]


def breaker_reads_earlier_steps_only() -> ReferenceImplementation:
    """D14 "an invocation that resolved UNCERTAIN is never proposed again in the same run" / one counter: the
    breaker counts only identical calls of earlier steps, so within one (sequential) batch an identical call after
    one that resolved UNCERTAIN executes again, and five identical calls in one batch never trip loop detection."""
    return impl("r2-d14-breaker-earlier-steps-only", _EarlierStepsOnly)


class _DenialAtFour(Pipeline):
    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        if any(status is InvocationStatus.UNCERTAIN for status, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for status, reason in prior if status is InvocationStatus.DENIED and reason in DENIALS)
        if denials >= REPEATED_DENIAL_THRESHOLD:  # The mistake: three denials already recorded, not two.
            return ReasonCode.REPEATED_DENIAL
        if len(prior) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def denial_threshold_off_by_one() -> ReferenceImplementation:
    """D14 "the policy spec's repeated-denial rule (3)": the breaker refuses an identical call once three denials
    are recorded, i.e. the fourth call, so the third identical call after two denials is evaluated (and denied or
    held) again instead of DENIED repeated_denial."""
    return impl("r2-d14-denial-threshold-off-by-one", _DenialAtFour)
