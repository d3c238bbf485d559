"""Round 3, decision 4: the watermark's flag and counter, the claim, the sweep, and recovery of a resumed call."""

from __future__ import annotations

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    InvocationTable,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    Store,
    resolved_step,
)
from toolproof.spec import (
    IdempotencyClass,
    InvocationStatus,
    Metric,
    Outcome,
    ReasonCode,
    Step,
    Success,
    ToolKind,
)

from ._common import StorePipeline, impl, table


class _FlagNonIdempotentOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        if s.resolved is None or s.prepared is None:
            return False
        spec = s.resolved.spec
        # The mistake: only NON_IDEMPOTENT tools are held to the watermark; CONDITIONALLY_IDEMPOTENT ones are not.
        owes = spec.consequential and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        ran = s.raw_result is not None or s.error is not None or s.timed_out
        return owes and ran and not s.marked and spec.kind is ToolKind.ACTION


def unmarked_flag_non_idempotent_only() -> ReferenceImplementation:
    """D4 (a NON_IDEMPOTENT or CONDITIONALLY_IDEMPOTENT tool calls mark_effect_sent; omitting it is flagged in
    production; D4.10): tool_effect_unmarked_total is incremented only for NON_IDEMPOTENT tools, so a consequential
    CONDITIONALLY_IDEMPOTENT tool that never marks goes unflagged."""
    return impl("r3-unmarked-flag-non-idempotent-only", _FlagNonIdempotentOnly)


class _FlagSuccessOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The mistake: only a call that succeeded is checked for its watermark ("a failed call did nothing").
        return isinstance(s.disposition, Success) and super().unmarked(s)


def unmarked_flag_success_only() -> ReferenceImplementation:
    """D4 (a consequential non-idempotent tool that completes without marking is flagged; D4.10): the flag is
    raised only when the call SUCCEEDED, so an unmarked tool that reports a failure (ok=false ERROR) after acting
    goes unflagged."""
    return impl("r3-unmarked-flag-success-only", _FlagSuccessOnly)


_DECIDED_AT_CLAIM = "_r3_uncertain_at_claim"


@resolved_step
async def _claim_noting(p: Pipeline, s: CallState, r: Resolved) -> None:
    await STEP_TABLE[Step.CLAIM](p, s)
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.EFFECT_UNKNOWN:
        setattr(s, _DECIDED_AT_CLAIM, True)


class _UncertainMetricSkipsClaim(Pipeline):
    steps = table(CLAIM=_claim_noting)

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        if getattr(s, _DECIDED_AT_CLAIM, False):
            # The mistake: the counter is bumped where UNCERTAIN is "made" (step 11, the sweep), not at step 8.
            metrics = [m for m in metrics if m != Metric.UNCERTAIN.value]
        return metrics


def uncertain_metric_skips_claim_path() -> ReferenceImplementation:
    """D4 (every UNCERTAIN resolution increments tool_uncertain_total; D4.11): the counter is bumped when step 11
    or the sweep resolves UNCERTAIN, but not when step 8 does, so a replayed submission that finds a dead worker's
    marked NON_IDEMPOTENT row resolves it UNCERTAIN without counting it."""
    return impl("r3-uncertain-metric-skips-claim-path", _UncertainMetricSkipsClaim)


class _RecoveredControlLosesAnswer(Pipeline):
    def state_from_row(self, row: InvocationTable) -> CallState:
        s = super().state_from_row(row)
        s.answer = None  # The mistake: the rebuilt state forgets the control_answer column.
        return s


def recovered_control_loses_answer() -> ReferenceImplementation:
    """D4 (recovery decides from the store alone; D4.16): a state rebuilt from a row does not restore the row's
    control_answer, so a resumed control call that a crash interrupts is re-executed by the sweep without the
    answer it was resumed with (the replay path, which adopts the row, keeps it)."""
    return impl("r3-recovered-control-loses-answer", _RecoveredControlLosesAnswer)


class _StoreStrandsHolds(Store):
    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        found = super().orphans(now, lease_s)
        # The mistake: "not yet running and older than a lease" also picks approval holds as stranded rows.
        held = [
            row
            for row in self.expired_holds(float("inf"))
            if row.created_at < now - lease_s and row.suspended_at is None
        ]
        return sorted(found + held, key=lambda row: row.seq or 0)


class _SweepTakesUnexpiredHolds(StorePipeline):
    store_class = _StoreStrandsHolds


def sweep_takes_unexpired_holds() -> ReferenceImplementation:
    """D4 (the sweep takes only orphans a dead worker left; D4.19): the orphan predicate counts every row not yet
    running and older than a lease as stranded, approval holds included, so a hold past lease_s but before its
    approval bound is recovered and executed without approval."""
    return impl("r3-sweep-takes-unexpired-holds", _SweepTakesUnexpiredHolds)


@resolved_step
async def _claim_own_lease_reentrant(p: Pipeline, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    now = p.clock.now()
    live = row.status == InvocationStatus.RUNNING.value and (row.lease_expires_at or 0) > now
    if live and row.lease_owner == p.worker_id:
        # The mistake: a live lease this worker holds is taken for "our own earlier attempt", so it is re-entered.
        escaped = p.escaped(row, r.spec)
        if escaped:
            s.marked = True
            s.finish(ReasonCode.EFFECT_UNKNOWN)
            return
        attempt = row.attempt + 1
        claimed = p.store.claim(
            s.invocation_id,
            expect_status=row.status,
            expect_owner=row.lease_owner,
            changes={
                "status": InvocationStatus.RUNNING.value,
                "attempt": attempt,
                "lease_owner": p.worker_id,
                "lease_expires_at": now + p.config.lease_s,
                "started_at": now,
                "suspended_at": None,
            },
        )
        if claimed:
            s.attempt = attempt
            return
    await STEP_TABLE[Step.CLAIM](p, s)


class _OwnLeaseReentered(Pipeline):
    steps = table(CLAIM=_claim_own_lease_reentrant)


def own_lease_reentered() -> ReferenceImplementation:
    """D4/D3 (step 8 takes the lease exclusively; a call RUNNING under a live lease is not run again): a live lease
    held by this same worker is treated as its own earlier attempt and re-claimed, so a concurrent second
    submission of a call to the same instance executes the tool a second time."""
    return impl("r3-own-lease-reentered", _OwnLeaseReentered)
