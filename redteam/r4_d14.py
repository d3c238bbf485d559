"""Round 4, decision 14: the one circuit breaker (repeated denial 3, loop 5, never re-propose UNCERTAIN), each
pipeline one realistic mistake: one class of several (which outcomes count), the order of the three rules, state
kept in memory, what 'identical' means.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation, dump_json
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    InvocationStatus,
    ReasonCode,
    Step,
)

from ._common import impl, table

Prior = Sequence[tuple[InvocationStatus, ReasonCode | None]]

DENIALS = frozenset(
    {ReasonCode.POLICY_DENIED, ReasonCode.APPROVAL_DENIED, ReasonCode.APPROVAL_EXPIRED, ReasonCode.REPEATED_DENIAL}
)


def _is_denial(status: InvocationStatus, reason: ReasonCode | None) -> bool:
    return status is InvocationStatus.DENIED and reason in DENIALS


class _ConsecutiveDenials(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if any(status is InvocationStatus.UNCERTAIN for status, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        # The mistake: the classic breaker counts consecutive denials; anything else in between resets it.
        streak = 0
        for status, reason in prior:
            streak = streak + 1 if _is_denial(status, reason) else 0
        if streak >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        if len(prior) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def denials_counted_consecutively() -> ReferenceImplementation:
    """D14 (one counter per identical call; D14.2 the third identical call after two denials is refused): denials
    are counted as a streak reset by any other outcome, so denied, approved (succeeded), denied, then a fourth
    identical call is held for approval again instead of refused repeated_denial."""
    return impl("r4-denials-counted-consecutively", _ConsecutiveDenials)


class _LoopBeforeUncertain(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        denials = sum(1 for status, reason in prior if _is_denial(status, reason))
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        # The mistake: the counting rules come first and the UNCERTAIN rule last ("the cheap checks first").
        if len(prior) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        if any(status is InvocationStatus.UNCERTAIN for status, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        return None


def loop_checked_before_uncertain() -> ReferenceImplementation:
    """D14 (an invocation that resolved UNCERTAIN is never proposed again; D14.4 refused prior_uncertain): the
    loop and denial counts are checked before the UNCERTAIN rule, so when the fourth identical call resolved
    UNCERTAIN the fifth is refused loop_detected, and after two denials and an UNCERTAIN one repeated_denial,
    instead of prior_uncertain."""
    return impl("r4-loop-checked-before-uncertain", _LoopBeforeUncertain)


_complete = STEP_TABLE[Step.COMPLETE]


async def _complete_remembering_uncertain(p: Pipeline, s: CallState) -> None:
    await _complete(p, s)
    if s.disposition is not None and s.disposition.status == InvocationStatus.UNCERTAIN.value:
        p.__dict__.setdefault("uncertain", set()).add((s.request.run_id, s.call_hash))


class _UncertainInMemory(Pipeline):
    steps = table(COMPLETE=_complete_remembering_uncertain)

    def prior_identical(self, s: CallState) -> Any:
        prior = super().prior_identical(s)
        # The mistake: the UNCERTAIN rule reads the set of calls this worker resolved UNCERTAIN (kept in memory,
        # "the breaker update of step 14"), not the rows' status; the counts still come from the store.
        if (s.request.run_id, s.call_hash) in self.__dict__.get("uncertain", set()):
            return [*prior, (InvocationStatus.UNCERTAIN, ReasonCode.EFFECT_UNKNOWN)]
        return [(status, reason) for status, reason in prior if status is not InvocationStatus.UNCERTAIN]


def uncertain_remembered_in_process() -> ReferenceImplementation:
    """D14 (never propose an UNCERTAIN invocation again in the run; D14.4): the UNCERTAIN rule is fed from the
    calls this worker itself resolved UNCERTAIN (in memory); an UNCERTAIN resolved by another worker's recovery
    sweep, or before a restart, is not seen, and the identical call executes again (a second non-idempotent
    effect)."""
    return impl("r4-uncertain-remembered-in-process", _UncertainInMemory)


class _LoopCountsSucceeded(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if any(status is InvocationStatus.UNCERTAIN for status, _ in prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for status, reason in prior if _is_denial(status, reason))
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        # The mistake: "a loop is the model repeating a call that worked", so only SUCCEEDED calls count.
        if sum(1 for status, _ in prior if status is InvocationStatus.SUCCEEDED) >= LOOP_THRESHOLD - 1:
            return ReasonCode.LOOP_DETECTED
        return None


def loop_counts_succeeded_only() -> ReferenceImplementation:
    """D14 (one counter; D14.3 the fifth identical call in a run is refused loop_detected): the loop rule counts
    only earlier identical calls that SUCCEEDED, so a model repeating a call that fails (tool_error,
    remote_unavailable, invalid_arguments...) is never stopped: the fifth identical failing call executes."""
    return impl("r4-loop-counts-succeeded-only", _LoopCountsSucceeded)


_resolve = STEP_TABLE[Step.RESOLVE]


async def _resolve_hash_arguments_only(p: Pipeline, s: CallState) -> None:
    await _resolve(p, s)
    # The mistake: "identical" is read as "the same arguments": the tool name is left out of the breaker's hash.
    s.call_hash = hashlib.sha256(dump_json(s.call.arguments).encode()).hexdigest()


class _IdenticalIgnoresToolName(Pipeline):
    steps = table(RESOLVE=_resolve_hash_arguments_only)


def identical_ignores_tool_name() -> ReferenceImplementation:
    """D14 ('identical' means the same tool name and canonical arguments; D14.1): the breaker's hash covers the
    canonical arguments only, so calls of different tools with the same arguments share one counter: five calls
    alternating t.a and t.b with {} end with the fifth refused loop_detected (and two denials of t.a refuse a
    first call of t.b repeated_denial)."""
    return impl("r4-identical-ignores-tool-name", _IdenticalIgnoresToolName)
