"""Decision 14: one circuit breaker with one counter."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from sqlmodel import Session, select

from toolproof.reference.hooks import STEP_TABLE, CallState, InvocationTable, Pipeline, ReferenceImplementation, Store
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    InvocationStatus,
    ReasonCode,
    Step,
)

from ._common import StorePipeline, impl, table

Prior = list[tuple[InvocationStatus, ReasonCode | None]]
_DENIALS = {
    ReasonCode.POLICY_DENIED,
    ReasonCode.APPROVAL_DENIED,
    ReasonCode.APPROVAL_EXPIRED,
    ReasonCode.REPEATED_DENIAL,
}


class _TwoCounters(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if any(st is InvocationStatus.UNCERTAIN for st, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for st, r in prior if st is InvocationStatus.DENIED and r in _DENIALS)
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        # The mistake: the loop counter counts calls that were evaluated (not denied) — a second counter.
        evaluated = sum(1 for st, _ in prior if st is not InvocationStatus.DENIED)
        if evaluated >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def loop_counter_skips_denials() -> ReferenceImplementation:
    """D14 "One circuit breaker with one counter": loop detection counts only identical calls that were not
    denied, a second counter beside the denial count, so denied repeats never count towards the loop."""
    return impl("d14-loop-counter-skips-denials", _TwoCounters)


class _LoopOffByOne(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if any(st is InvocationStatus.UNCERTAIN for st, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for st, r in prior if st is InvocationStatus.DENIED and r in _DENIALS)
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        if len(prior) >= LOOP_THRESHOLD:  # The mistake: five earlier calls, so the sixth trips.
            return ReasonCode.LOOP_DETECTED
        return None


def loop_threshold_off_by_one() -> ReferenceImplementation:
    """D14 "loop detection (5)": the breaker trips when five identical calls are already recorded, i.e. on the
    sixth, not the fifth."""
    return impl("d14-loop-threshold-off-by-one", _LoopOffByOne)


class _PolicyOnly(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if any(st is InvocationStatus.UNCERTAIN for st, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for _, r in prior if r is ReasonCode.POLICY_DENIED)  # The mistake: policy denials only.
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        if len(prior) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def denial_means_policy_denied_only() -> ReferenceImplementation:
    """D14 "the policy spec's repeated-denial rule (3)": only policy_denied counts as a denial; approval_denied and
    approval_expired (a person said no) do not, so a rejected call can be re-proposed until the loop limit."""
    return impl("d14-denial-policy-only", _PolicyOnly)


class _LastOnlyUncertain(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if prior and prior[-1][0] is InvocationStatus.UNCERTAIN:  # The mistake: only the latest call is looked at.
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for st, r in prior if st is InvocationStatus.DENIED and r in _DENIALS)
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        if len(prior) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def uncertain_checked_on_latest_only() -> ReferenceImplementation:
    """D14 "an invocation that resolved UNCERTAIN is never proposed again in the same run": only the most recent
    identical call is checked, so after the refused prior_uncertain repeat, the next repeat executes again."""
    return impl("d14-uncertain-latest-only", _LastOnlyUncertain)


_reference_resolve = STEP_TABLE[Step.RESOLVE]


async def _resolve_raw_hash(p: Pipeline, s: CallState) -> None:
    await _reference_resolve(p, s)
    raw = json.dumps([s.call.tool_name, s.call.arguments])  # The mistake: arguments in proposed order.
    s.call_hash = hashlib.sha256(raw.encode()).hexdigest()


class _RawHash(Pipeline):
    steps = table(RESOLVE=_resolve_raw_hash)


def identical_without_canonical_arguments() -> ReferenceImplementation:
    """D14 ("two implementations would ... disagree about what identical means"): the breaker's call hash is over
    the arguments in proposed member order, so reordering the members evades repeated_denial/loop/prior_uncertain."""
    return impl("d14-identical-not-canonical", _RawHash)


async def _resolve_hash_is_key(p: Pipeline, s: CallState) -> None:
    await _reference_resolve(p, s)
    s.call_hash = s.key  # The mistake: "identical call" = same idempotency key.


class _HashIsKey(Pipeline):
    steps = table(RESOLVE=_resolve_hash_is_key)


def identical_means_same_key() -> ReferenceImplementation:
    """D14 "identical" as "same idempotency key": the key includes step_number and call_id, so identical calls in
    later steps (a real loop) are never counted together and the breaker never trips."""
    return impl("d14-identical-means-same-key", _HashIsKey)


class _TenantWideStore(Store):
    def identical(self, run_id: str, call_hash: str) -> list[InvocationTable]:
        with Session(self.engine, expire_on_commit=False) as session:
            # The mistake: the run filter was dropped when the index moved to call_hash.
            stmt = select(InvocationTable).where(InvocationTable.call_hash == call_hash)
            return list(session.exec(stmt).all())


class _AcrossRuns(StorePipeline):
    store_class = _TenantWideStore


def breaker_counts_across_runs() -> ReferenceImplementation:
    """D14 "in the same run": the breaker's look-up of identical calls is not filtered by run, so denials and
    repeats in one run trip the breaker in another."""
    return impl("d14-breaker-across-runs", _AcrossRuns)


_: Sequence[object] = ()
