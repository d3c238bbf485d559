"""Round 3, decision 14: where the breaker keeps its one counter."""

from __future__ import annotations

from toolproof.reference.hooks import CallState, Pipeline, ReferenceImplementation
from toolproof.spec import InvocationStatus, Outcome, ReasonCode

from ._common import impl

Seen = list[tuple[InvocationStatus, ReasonCode | None]]


class _BreakerInMemory(Pipeline):
    def _seen(self) -> dict[tuple[str, str], Seen]:
        return self.__dict__.setdefault("_r3_breaker", {})

    def prior_identical(self, s: CallState) -> Seen:
        # The mistake: the breaker counts in the worker's memory, filled as this worker completes calls.
        return list(self._seen().get((s.request.run_id, s.call_hash), []))

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        reason = s.disposition.reason_code if isinstance(s.disposition, Outcome) else None
        self._seen().setdefault((s.request.run_id, s.call_hash), []).append((status, reason))
        return super().metrics_for(s, status)


def breaker_counts_in_memory() -> ReferenceImplementation:
    """D14 (one breaker, one counter over the run's earlier identical calls; D14.1-D14.4): the counter lives in the
    worker's memory, so identical calls made before a restart, or by another worker of the same run, do not count
    (a fifth identical call after a restart runs; an UNCERTAIN call recovered elsewhere is proposed again)."""
    return impl("r3-breaker-counts-in-memory", _BreakerInMemory)


class _BreakerTerminalOnly(Pipeline):
    def prior_identical(self, s: CallState) -> Seen:
        rows = self.store.identical(s.request.run_id, s.call_hash)
        # The mistake: only decided calls count ("a call still open has not happened yet").
        return [
            (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
            for row in rows
            if InvocationStatus(row.status).is_terminal
        ]


def breaker_counts_decided_calls_only() -> ReferenceImplementation:
    """D14 (every earlier identical call of the run counts; D14.1, D14.3): the breaker counts only identical calls
    already in a terminal status, so calls left open (held for approval, suspended, running) never count and a fifth
    identical call proposed while four wait for approval is held again instead of refused loop_detected."""
    return impl("r3-breaker-counts-decided-calls-only", _BreakerTerminalOnly)
