"""Decision 4: the effect watermark and recovery."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

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
    ReasonCode,
    SideEffect,
    Step,
    ToolKind,
    ToolSpec,
)

from ._common import StorePipeline, impl, make_normalize, table

_reference_complete = STEP_TABLE[Step.COMPLETE]


# -- watermark write ------------------------------------------------------------------------------


class _LazyMark(Pipeline):
    async def mark_effect(self, s: CallState) -> None:
        s.marked = True  # The mistake: written with the terminal row at step 13 ("one commit fewer").
        s.marked_at = self.clock.now()  # type: ignore[attr-defined]


async def _complete_with_mark(p: Pipeline, s: CallState) -> None:
    marked_at = getattr(s, "marked_at", None)
    if marked_at is not None and s.recorded:
        p.store.mark_effect_sent(s.invocation_id, marked_at)
    await _reference_complete(p, s)


class LazyMark(_LazyMark):
    steps = table(COMPLETE=_complete_with_mark)


def watermark_written_at_complete() -> ReferenceImplementation:
    """D4 "The watermark is written before the effect" / one extra committed write: mark_effect_sent() only sets a
    flag and the watermark is committed together with the terminal row at step 13, so a reader (or a crash) during
    the effect sees effect_sent_at unset."""
    return impl("d04-watermark-written-at-complete", LazyMark)


# -- which classes escape ---------------------------------------------------------------------------


class _CondEscapes(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        # The mistake: "the watermark duty applies to both classes", so both are never retried.
        return (
            row.effect_sent_at is not None and spec is not None and spec.idempotency is not IdempotencyClass.IDEMPOTENT
        )


def conditional_treated_as_escaped() -> ReferenceImplementation:
    """D4 "UNCERTAIN is reserved for calls whose watermark is set" + D10 (same key lets the service dedupe): a
    CONDITIONALLY_IDEMPOTENT RUNNING row with the watermark set is resolved UNCERTAIN instead of retried."""
    return impl("d04-conditional-treated-as-escaped", _CondEscapes)


class _AnyMarkedEscapes(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        return row.effect_sent_at is not None  # The mistake: the class is not consulted at all.


def watermark_alone_means_escaped() -> ReferenceImplementation:
    """D4 "dispatches on IdempotencyClass": any RUNNING row with a watermark is resolved UNCERTAIN, even an
    IDEMPOTENT one that must simply be retried."""
    return impl("d04-watermark-alone-escaped", _AnyMarkedEscapes)


class _AgeEscapes(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        if spec is None or spec.idempotency is not IdempotencyClass.NON_IDEMPOTENT:
            return False
        if row.effect_sent_at is not None:
            return True
        # The mistake: a call that ran longer than a lease "probably got out" too.
        return row.started_at is not None and self.clock.now() - row.started_at > 2 * self.config.lease_s


def escape_inferred_from_age() -> ReferenceImplementation:
    """D4 alternatives ("Inferring ambiguity from timestamps: rejected"): recovery also treats a NON_IDEMPOTENT
    RUNNING row as escaped when started_at is older than two leases, watermark or not, making it UNCERTAIN."""
    return impl("d04-escape-inferred-from-age", _AgeEscapes)


# -- in-process watermark decision ------------------------------------------------------------------


class _ErrorIgnoresMark(Pipeline):
    steps = table(NORMALIZE=make_normalize(watermark_on_error=False))


def raise_after_mark_is_crash() -> ReferenceImplementation:
    """D4 (in-process crash): a NON_IDEMPOTENT tool that raises after mark_effect_sent() completes FAILED
    tool_crashed (retryable) instead of UNCERTAIN effect_unknown; only the deadline path consults the watermark."""
    return impl("d04-raise-after-mark-is-crash", _ErrorIgnoresMark)


class _TimeoutIgnoresMark(Pipeline):
    steps = table(NORMALIZE=make_normalize(watermark_on_timeout=False))


def timeout_after_mark_is_deadline() -> ReferenceImplementation:
    """D4: a NON_IDEMPOTENT tool that overruns its deadline after marking completes FAILED deadline_exceeded
    (retryable) instead of UNCERTAIN effect_unknown; only the exception path consults the watermark."""
    return impl("d04-timeout-after-mark-is-deadline", _TimeoutIgnoresMark)


# -- claims and sweeps ------------------------------------------------------------------------------


@resolved_step
async def _claim_blind(p: Pipeline, s: CallState, r: Resolved) -> None:
    from toolproof.reference.hooks import DISPOSITION

    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal:
        assert row.disposition_json is not None
        s.disposition, s.leave_row = DISPOSITION.validate_json(row.disposition_json), True
        return
    now = p.clock.now()
    if status is InvocationStatus.RUNNING and (row.lease_expires_at or 0) > now and row.lease_owner != p.worker_id:
        s.finish(ReasonCode.IN_PROGRESS)
        s.leave_row = True
        return
    if status is InvocationStatus.RUNNING and p.escaped(row, r.spec):
        s.marked = True
        s.finish(ReasonCode.EFFECT_UNKNOWN)
        return
    attempt = row.attempt + 1
    # The mistake: read-then-write without compare-and-set ("we just checked the lease").
    p.store.update(
        s.invocation_id,
        {
            "status": InvocationStatus.RUNNING.value,
            "attempt": attempt,
            "lease_owner": p.worker_id,
            "lease_expires_at": now + p.config.lease_s,
            "started_at": now,
            "suspended_at": None,
        },
        [],
    )
    s.attempt = attempt


class _BlindClaim(Pipeline):
    steps = table(CLAIM=_claim_blind)


def claim_without_compare_and_set() -> ReferenceImplementation:
    """D4 / 12.2 lease discipline: step 8 reads the row, checks the lease, then writes RUNNING with a plain UPDATE
    (no status/owner condition), so two workers recovering the same expired lease both execute the tool. (It
    also forgets the tool.started event.)"""
    return impl("d04-claim-without-cas", _BlindClaim)


class _EdgeStore(Store):
    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        with Session(self.engine, expire_on_commit=False) as session:
            running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
                col(InvocationTable.started_at) < now  # The mistake: age since start, not the lease.
            )
            stranded = (col(InvocationTable.status) == InvocationStatus.RECORDED.value) & (
                col(InvocationTable.created_at) < now - lease_s
            )
            stmt = select(InvocationTable).where(col(InvocationTable.suspended_at).is_(None), running | stranded)
            return list(session.exec(stmt.order_by(col(InvocationTable.seq))).all())


class _SweepLive(StorePipeline):
    store_class = _EdgeStore

    async def recover(self, row: InvocationTable) -> Any:
        # "Orphans" are re-claimed regardless of whose lease it is: lease owner is cleared first.
        self.store.update(row.invocation_id, {"lease_owner": None, "lease_expires_at": 0.0})
        return await super().recover(self.store.get(row.invocation_id))


def sweep_takes_live_leases() -> ReferenceImplementation:
    """D4 / D16 "lease-expiry sweep": the sweep's orphan predicate reads started_at < now instead of
    lease_expires_at < now, and recovery resets the lease, so a sweep steals RUNNING rows whose lease is live."""
    return impl("d04-sweep-takes-live-leases", _SweepLive)


class _RunningOnlyStore(Store):
    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        with Session(self.engine, expire_on_commit=False) as session:
            running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
                col(InvocationTable.lease_expires_at) < now
            )
            stmt = select(InvocationTable).where(col(InvocationTable.suspended_at).is_(None), running)
            return list(session.exec(stmt.order_by(col(InvocationTable.seq))).all())


class _RecordedIgnored(StorePipeline):
    store_class = _RunningOnlyStore


def sweep_ignores_recorded_rows() -> ReferenceImplementation:
    """D4 "a worker that died during argument marshalling is retried safely": the sweep only recovers RUNNING
    rows, so a row left RECORDED by a crash between step 6 and step 8 is never resumed by the sweep."""
    return impl("d04-sweep-ignores-recorded", _RecordedIgnored)


class _RecoveryRekeys(Pipeline):
    async def recover(self, row: InvocationTable) -> Any:
        if row.status == InvocationStatus.RUNNING.value and row.effect_sent_at is None:
            # The mistake: a recovered retry is a new attempt, so it gets a fresh key.
            new_key = f"{row.idempotency_key[:40]}-r{row.attempt + 1}"
            self.store.update(row.invocation_id, {"idempotency_key": new_key})
            row = self.store.get(row.invocation_id)
        return await super().recover(row)


def recovery_retry_new_key() -> ReferenceImplementation:
    """D4 + D10: a recovering worker retries an unmarked RUNNING row, but under a new idempotency key derived with
    the attempt, not the same key."""
    return impl("d04-recovery-retry-new-key", _RecoveryRekeys)


# -- production flags ---------------------------------------------------------------------------------


class _UnmarkedExternalOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        if s.resolved is None or s.prepared is None:
            return False
        spec = s.resolved.spec
        owes = spec.side_effect is SideEffect.EXTERNAL_WRITE and spec.idempotency is not IdempotencyClass.IDEMPOTENT
        ran = s.raw_result is not None or s.error is not None or s.timed_out
        return owes and ran and not s.marked and spec.kind is ToolKind.ACTION


def unmarked_flag_external_only() -> ReferenceImplementation:
    """D4 "a tool that omits the call is ... flagged in production": the unmarked flag only considers
    EXTERNAL_WRITE tools; a WORKSPACE_WRITE NON_IDEMPOTENT tool that never marks is not flagged."""
    return impl("d04-unmarked-flag-external-only", _UnmarkedExternalOnly)


class _UncertainMetricInProcess(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        if status is InvocationStatus.UNCERTAIN and not (s.error is not None or s.timed_out):
            from toolproof.spec import Metric

            metrics.remove(Metric.UNCERTAIN.value)  # The mistake: counted where the exception is seen, only.
        return metrics


def uncertain_metric_in_process_only() -> ReferenceImplementation:
    """D4 alerting metric: tool_uncertain_total is incremented only for an in-process UNCERTAIN (exception or
    deadline after the mark), not when recovery/step 8 resolves a dead worker's row UNCERTAIN."""
    return impl("d04-uncertain-metric-in-process-only", _UncertainMetricInProcess)
