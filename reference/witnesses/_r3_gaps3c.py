"""Witnesses of the third red team's gaps in decisions 11 and 14: an origin read from the context's last item, a
hold's bound known only to the worker that opened it, and a breaker that counts only this worker's calls or only the
calls already decided."""

from __future__ import annotations

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline
from toolproof.spec import (
    ConfigurationError,
    Disposition,
    EventKind,
    InvocationStatus,
    ReasonCode,
    Step,
    Suspended,
    TrustLabel,
)

from ._registry import witness

Prior = list[tuple[InvocationStatus, ReasonCode | None]]

_label = STEP_TABLE[Step.LABEL]
_hold = STEP_TABLE[Step.HOLD]
_guard = STEP_TABLE[Step.GUARD]


async def _origin_from_the_last_item(p: Pipeline, s: CallState) -> None:
    await _label(p, s)
    items = s.request.context
    was = s.origin_trust
    # The defect: the item the model saw last speaks for the request ("the latest turn is what it acted on").
    s.origin_trust = items[-1].trust if items else TrustLabel.EXTERNAL_UNTRUSTED
    if not s.call.arguments and s.argument_trust is was:
        s.argument_trust = s.origin_trust  # A call without arguments takes origin_trust, as the reference does.


@witness(
    "origin_from_last_context_item",
    ("D11.1", "D11.5"),
    "takes origin_trust from the request's last context item, not the minimum over all of them",
)
class _OriginFromLastContextItem(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _origin_from_the_last_item}


def _holds_opened_here(p: Pipeline) -> set[str]:
    held: set[str] = p.__dict__.setdefault("_holds_opened_here", set())
    return held


async def _hold_and_remember(p: Pipeline, s: CallState) -> None:
    await _hold(p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "approval":
        _holds_opened_here(p).add(s.invocation_id)


@witness(
    "hold_bound_known_to_its_worker",
    ("D11.7",),
    "checks a hold's bound only when the worker that opened it answers it; after a restart or in another worker a "
    "late answer is taken as given",
)
class _HoldBoundKnownToItsWorker(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _hold_and_remember}

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        if invocation_id in _holds_opened_here(self):
            return await super().resolve_approval(invocation_id, approved)
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        # The defect: a hold this worker did not open has no bound it knows of, so the answer stands as given.
        if not approved:
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)


def _calls_seen_here(p: Pipeline) -> set[str]:
    seen: set[str] = p.__dict__.setdefault("_calls_seen_here", set())
    return seen


async def _guard_and_remember(p: Pipeline, s: CallState) -> None:
    await _guard(p, s)
    _calls_seen_here(p).add(s.invocation_id)


def _prior(rows: list[tuple[str, str, str | None]]) -> Prior:
    return [(InvocationStatus(status), ReasonCode(reason) if reason else None) for _, status, reason in rows]


@witness(
    "breaker_counts_this_worker_only",
    ("D14.2", "D14.3", "D14.4"),
    "counts only the identical calls this worker instance proposed, so a restart or a second worker starts afresh",
)
class _BreakerCountsThisWorkerOnly(Pipeline):
    steps = STEP_TABLE | {Step.GUARD: _guard_and_remember}

    def prior_identical(self, s: CallState) -> Prior:
        mine = _calls_seen_here(self)
        rows = self.store.identical(s.request.run_id, s.call_hash)
        # The defect: rows another worker (or this one before a restart) wrote are not this breaker's business.
        return _prior([(r.invocation_id, r.status, r.reason_code) for r in rows if r.invocation_id in mine])


@witness(
    "breaker_skips_open_calls",
    ("D14.3", "D16.1"),
    "counts only the earlier identical calls already decided; those held, suspended or running do not count",
)
class _BreakerSkipsOpenCalls(Pipeline):
    def prior_identical(self, s: CallState) -> Prior:
        rows = self.store.identical(s.request.run_id, s.call_hash)
        # The defect: a call still waiting on an answer "has not happened", so it is left out of the count.
        return _prior(
            [(r.invocation_id, r.status, r.reason_code) for r in rows if InvocationStatus(r.status).is_terminal]
        )
