"""Decision 13: one six-field shape for every non-success outcome; message and retryable from the table."""

from __future__ import annotations

from dataclasses import dataclass

from toolproof.spec import OUTCOME_TABLE, InvocationStatus, ReasonCode, TrustLabel


@dataclass(frozen=True)
class Verdict:
    """A terminal judgement the model allows: status and reason (None for SUCCEEDED)."""

    status: InvocationStatus
    reason: ReasonCode | None
    rules: tuple[str, ...]

    @property
    def key(self) -> tuple[str, str | None]:
        """(status, reason) as values, as an observation is compared."""
        return self.status.value, None if self.reason is None else self.reason.value


def outcome(reason: ReasonCode, *rules: str) -> Verdict:
    """An outcome the table gives ``reason`` its status for; ``rules`` are those that choose the reason."""
    return Verdict(OUTCOME_TABLE[reason].status, reason, rules)


SUCCEEDED = Verdict(InvocationStatus.SUCCEEDED, None, ("D1.2",))
"""A success."""


def fields(reason: ReasonCode) -> tuple[str, bool]:
    """D13.3 and D13.2: the message and retryable flag the table gives ``reason``."""
    entry = OUTCOME_TABLE[reason]
    return entry.message, entry.retryable


def detail_allowed(detail: str | None) -> frozenset[tuple[str, str] | None]:
    """D13.4: a remote text appears enveloped EXTERNAL_UNTRUSTED or not at all; nothing else may."""
    if detail is None:
        return frozenset({None})
    return frozenset({None, (TrustLabel.EXTERNAL_UNTRUSTED.value, detail)})
