"""Witnesses of decision 14: One circuit breaker, one counter.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import hashlib
import json

from sqlmodel import col, select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    InvocationTable,
    Pipeline,
    PipelineHost,
    dump_json,
)
from toolproof.spec import (
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    InvocationStatus,
    ReasonCode,
    Step,
    ToolSource,
    canonical_sha256,
)

from ._registry import reads_a_resource, witness


async def _order_sensitive_identity(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    s.call_hash = hashlib.sha256(json.dumps([s.call.tool_name, s.call.arguments]).encode()).hexdigest()


@witness("order_sensitive_identity", ("D14.1",), "tells calls apart by the order of their argument members")
class _OrderSensitiveIdentity(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _order_sensitive_identity}


async def _sorted_dumps_identity(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    # The defect: "identical" is the text json.dumps(sort_keys=True) writes, so 1 and 1.0 are two calls.
    text = json.dumps([s.call.tool_name, s.call.arguments], sort_keys=True)
    s.call_hash = hashlib.sha256(text.encode()).hexdigest()


@witness("identity_by_sorted_dumps", ("D14.1",), "tells calls apart by the text json.dumps(sort_keys=True) writes")
class _IdentityBySortedDumps(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _sorted_dumps_identity}


@witness("two_counters", ("D14.1",), "counts denials per tool name and calls per tool and arguments: two counters")
class _TwoCounters(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        prior = super().prior_identical(s)
        denied = [
            row
            for row in self.store.invocations(s.request.run_id)
            if row.tool_name == s.call.tool_name and row.status == InvocationStatus.DENIED.value
        ]
        # The second counter: denials of the tool, whatever the arguments.
        extra = [(InvocationStatus.DENIED, ReasonCode.POLICY_DENIED)] * max(0, len(denied) - len(prior))
        return prior + extra


@witness("denials_never_trip", ("D14.2",), "lets identical denied calls be evaluated again and again")
class _DenialsNeverTrip(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        return [(st, r) for st, r in super().prior_identical(s) if st is not InvocationStatus.DENIED]


@witness("loop_at_six", ("D14.3",), "trips loop detection on the sixth identical call")
class _LoopAtSix(Pipeline):
    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        reason = super().trip(prior)
        return None if reason is ReasonCode.LOOP_DETECTED and len(prior) < 5 else reason


@witness("forgets_uncertain", ("D14.4",), "proposes a call again after an identical one resolved UNCERTAIN")
class _ForgetsUncertain(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        return [(st, r) for st, r in super().prior_identical(s) if st is not InvocationStatus.UNCERTAIN]


@witness("breaker_across_runs", ("D14.5",), "counts identical calls across runs")
class _BreakerAcrossRuns(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        with self.store.transaction() as session:
            rows = session.exec(select(InvocationTable).where(InvocationTable.call_hash == s.call_hash)).all()
            return [(InvocationStatus(r.status), ReasonCode(r.reason_code) if r.reason_code else None) for r in rows]


Prior = list[tuple[InvocationStatus, ReasonCode | None]]


def _uncertain(prior: Prior) -> bool:
    return any(st is InvocationStatus.UNCERTAIN for st, _ in prior)


@witness("denial_means_policy_denied_only", ("D14.2",), "counts only policy_denied as a denial")
class _DenialMeansPolicyDeniedOnly(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if _uncertain(prior):
            return ReasonCode.PRIOR_UNCERTAIN
        denials = sum(1 for _, r in prior if r in (ReasonCode.POLICY_DENIED, ReasonCode.REPEATED_DENIAL))
        if denials >= REPEATED_DENIAL_THRESHOLD - 1:
            return ReasonCode.REPEATED_DENIAL
        return ReasonCode.LOOP_DETECTED if len(prior) >= LOOP_THRESHOLD - 1 else None


@witness("loop_counter_skips_denials", ("D14.1",), "counts towards the loop only identical calls that were not denied")
class _LoopCounterSkipsDenials(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        reason = super().trip(prior)
        if reason is not ReasonCode.LOOP_DETECTED:
            return reason
        evaluated = sum(1 for st, _ in prior if st is not InvocationStatus.DENIED)  # The mistake: a second counter.
        return reason if evaluated >= LOOP_THRESHOLD - 1 else None


@witness("uncertain_checked_on_latest_only", ("D14.4",), "looks for UNCERTAIN only in the latest identical call")
class _UncertainCheckedOnLatestOnly(Pipeline):
    def trip(self, prior: Prior) -> ReasonCode | None:
        if prior and prior[-1][0] is InvocationStatus.UNCERTAIN:
            return ReasonCode.PRIOR_UNCERTAIN
        return super().trip([(st, r) for st, r in prior if st is not InvocationStatus.UNCERTAIN])


def _history(
    p: Pipeline, s: CallState, *, earlier_steps_only: bool
) -> list[tuple[InvocationStatus, ReasonCode | None]]:
    """The run's identical calls as the breaker reads them (optionally those of earlier steps only)."""
    return [
        (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
        for row in p.store.identical(s.request.run_id, s.call_hash)
        if not earlier_steps_only or row.step_number < s.request.step_number
    ]


@witness(
    "breaker_blind_to_its_batch",
    ("D14.2", "D14.3", "D14.4"),
    "the breaker counts identical calls of earlier steps only, not those earlier in the same batch",
)
class _BreakerBlindToItsBatch(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        # The defect: "prior" read as "in a prior step".
        return _history(self, s, earlier_steps_only=True)


@witness(
    "breaker_counts_runs_sorting_after",
    ("D14.5",),
    "counts the identical calls of every run whose id sorts at or after the current one",
)
class _BreakerCountsRunsSortingAfter(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        with self.store.transaction() as session:
            # The mistake: a range bound (>=, as in keyset paging) where the run should be matched exactly.
            stmt = select(InvocationTable).where(
                col(InvocationTable.run_id) >= s.request.run_id,
                InvocationTable.call_hash == s.call_hash,
            )
            rows = session.exec(stmt).all()
            return [(InvocationStatus(r.status), ReasonCode(r.reason_code) if r.reason_code else None) for r in rows]


_guard = STEP_TABLE[Step.GUARD]


def _calls_seen_here(p: PipelineHost) -> set[str]:
    seen: set[str] = p.__dict__.setdefault("_calls_seen_here", set())
    return seen


async def _guard_and_remember(p: PipelineHost, s: CallState) -> None:
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


_resolve = STEP_TABLE[Step.RESOLVE]


@witness(
    "success_forgives_denials",
    ("D14.2",),
    "stops counting an identical call's denials once any identical call of the run has SUCCEEDED",
)
class _SuccessForgivesDenials(Pipeline):
    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        if any(status is InvocationStatus.SUCCEEDED for status, _ in prior):
            # The defect: "a person approved it once, so earlier refusals no longer speak for them": a success among
            # the earlier identical calls clears the denials. They still count for the loop (no reason, no denial).
            prior = [(status, None if status is InvocationStatus.DENIED else reason) for status, reason in prior]
        return super().trip(prior)


async def _resolve_hash_namespace(p: PipelineHost, s: CallState) -> None:
    await _resolve(p, s)
    # The defect: "identical" is read as "the same server and arguments": the breaker hashes the tool's namespace
    # (the part before its last dot) with the arguments, so t.a and t.b with equal arguments share one counter.
    namespace = s.call.tool_name.rpartition(".")[0]
    s.call_hash = hashlib.sha256(dump_json([namespace, s.call.arguments]).encode()).hexdigest()


@witness(
    "identical_by_tool_namespace",
    ("D14.1",),
    "counts calls to different tools of one namespace with equal arguments as identical",
)
class _IdenticalByToolNamespace(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_hash_namespace}


def _as_double(value: object) -> object:
    if isinstance(value, dict):
        return {k: _as_double(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_double(v) for v in value]
    # The defect: isinstance(True, int) holds in Python, so true and false become 1.0 and 0.0 with the numbers.
    return float(value) if isinstance(value, (int, float)) else value


async def _numbers_as_doubles_identity(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    s.call_hash = canonical_sha256([s.call.tool_name, _as_double(dict(s.call.arguments))])


@witness(
    "identity_reads_true_as_1",
    ("D14.1",),
    "maps every number of the arguments to its double with isinstance(v, (int, float)), so true is the call with 1",
)
class _IdentityReadsTrueAs1(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _numbers_as_doubles_identity}


@witness(
    "parallel_members_uncounted",
    ("D14.3",),
    "does not count the identical members of a parallel batch as earlier calls of one another",
)
class _ParallelMembersUncounted(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        prior = super().prior_identical(s)
        if len(s.request.calls) < 2 or not self.qualifies(s.request):
            return prior
        # The defect: a parallel batch has no order, so its members are not earlier calls of one another.
        rows = self.store.identical(s.request.run_id, s.call_hash)
        return [
            (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
            for row in rows
            if row.step_number != s.request.step_number
        ]


@witness(
    "device_calls_bypass_breaker",
    ("D14.2", "D14.3", "D14.4"),
    "finds no earlier identical calls for a DEVICE tool, so its denials, loops and UNCERTAIN calls never trip the breaker",
)
class _DeviceCallsBypassBreaker(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        if s.resolved is not None and s.resolved.spec.source is ToolSource.DEVICE:
            return []  # The defect: "a device polled again is polling, not a repeat".
        return super().prior_identical(s)


@witness(
    "resource_reads_bypass_breaker",
    ("D14.2", "D14.3"),
    "finds no earlier identical calls for the synthetic read_resource tool, so repeated reads never trip the breaker",
)
class _ResourceReadsBypassBreaker(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        if reads_a_resource(s):
            return []  # The defect: "reading a document again is no loop".
        return super().prior_identical(s)
