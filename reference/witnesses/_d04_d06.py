"""Witnesses of decision 4 (in-process), 5 (builtin names) and 6 (device and sandbox trust)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlmodel import Session, select

from toolproof.reference.hooks import STEP_TABLE, CallState, ContextParts, InvocationTable, Pipeline, Registry, Resolved
from toolproof.spec import (
    ConfigurationError,
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    Metric,
    Outcome,
    ReasonCode,
    Step,
    Tool,
    ToolSpec,
)

from ._registry import witness

# -- D4 -------------------------------------------------------------------------------------


async def _watermark_at_completion(p: Pipeline, s: CallState) -> None:
    if s.marked and s.recorded and not s.leave_row:
        p.store.mark_effect_sent(s.invocation_id, p.clock.now())
    await STEP_TABLE[Step.COMPLETE](p, s)


@witness("watermark_after_effect", ("D4.1", "D4.6"), "remembers the watermark in memory and writes it at step 13")
class _WatermarkAfterEffect(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _watermark_at_completion}

    async def mark_effect(self, s: CallState) -> None:
        s.marked = True


async def _commit_pending_then_normalize(p: Pipeline, s: CallState) -> None:
    assert isinstance(p, _UncommittedWatermark)
    while p.pending:
        session = p.pending.pop()
        session.commit()
        session.close()
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness(
    "uncommitted_watermark", ("D4.1", "D4.6"), "writes the watermark in a transaction it commits after the tool returns"
)
class _UncommittedWatermark(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _commit_pending_then_normalize}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pending: list[Session] = []
        close = self.store.close

        def close_pending_then_store() -> None:
            for session in self.pending:
                session.close()  # A dead worker's transaction is rolled back with its connection.
            close()

        self.store.close = close_pending_then_store  # type: ignore[method-assign]

    async def mark_effect(self, s: CallState) -> None:
        session = Session(self.store.engine)
        row = session.exec(select(InvocationTable).where(InvocationTable.invocation_id == s.invocation_id)).one()
        row.effect_sent_at = self.clock.now()
        session.add(row)
        session.flush()
        self.pending.append(session)
        s.marked = True


async def _exceptions_are_failures(p: Pipeline, s: CallState) -> None:
    if s.error is not None or s.timed_out:
        s.finish(ReasonCode.TOOL_ERROR)
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("exceptions_are_failures", ("D4.2", "D4.20"), "answers every exception and overrun FAILED, watermark or not")
class _ExceptionsAreFailures(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _exceptions_are_failures}


async def _overrun_before_mark_uncertain(p: Pipeline, s: CallState) -> None:
    spec = s.resolved.spec if s.resolved is not None else None
    if s.timed_out and not s.marked and spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
        s.finish(ReasonCode.EFFECT_UNKNOWN)  # The mistake: "the deadline may have cut it mid-send".
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("overrun_before_mark_uncertain", ("D4.20",), "resolves a NON_IDEMPOTENT overrun UNCERTAIN though unmarked")
class _OverrunBeforeMarkUncertain(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _overrun_before_mark_uncertain}


async def _idempotent_crash_final(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    spec = s.resolved.spec if s.resolved is not None else None
    d = s.disposition
    crashed = isinstance(d, Outcome) and d.reason_code is ReasonCode.TOOL_CRASHED
    if crashed and spec is not None and spec.idempotency is IdempotencyClass.IDEMPOTENT:
        s.finish(ReasonCode.TOOL_ERROR)  # The mistake: "an idempotent tool that crashes will crash again".


@witness("idempotent_crash_final", ("D4.20",), "answers an IDEMPOTENT tool's crash tool_error, not retryable")
class _IdempotentCrashFinal(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _idempotent_crash_final}


@witness("no_unmarked_flag", ("D4.10",), "never raises the production flag for an unmarked consequential call")
class _NoUnmarkedFlag(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        return False


@witness("no_uncertain_metric", ("D4.11",), "does not count UNCERTAIN resolutions")
class _NoUncertainMetric(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        return [m for m in super().metrics_for(s, status) if m != Metric.UNCERTAIN.value]


@witness("retries_after_watermark", ("D4.6",), "retries a dead worker's NON_IDEMPOTENT call whatever its watermark")
class _RetriesAfterWatermark(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        return False


@witness("assume_the_worst", ("D4.7",), "marks every dead worker's NON_IDEMPOTENT call UNCERTAIN, watermark or not")
class _AssumeTheWorst(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        return spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT


@witness("orphans_fail", ("D4.3",), "fails a dead worker's unmarked call instead of retrying it")
class _OrphansFail(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        if row.status == InvocationStatus.RUNNING.value and row.effect_sent_at is None:
            state = self.state_from_row(row)
            state.finish(ReasonCode.TOOL_CRASHED)
            return await self.drive(state, Step.CLAIM)
        return await super().recover(row)


@witness("retries_with_new_key", ("D4.4", "D4.5"), "hands a retried call a new idempotency key")
class _RetriesWithNewKey(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        if s.attempt <= 1:
            return parts
        fresh = parts.identity.model_copy(update={"idempotency_key": f"{s.key}-retry{s.attempt}"})
        return replace(parts, identity=fresh)


@witness("timestamp_inference", ("D4.8",), "presumes a RUNNING call older than a day escaped, whatever its watermark")
class _TimestampInference(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        old = row.started_at is not None and self.clock.now() - row.started_at > 24 * 3600
        return old or super().escaped(row, spec)


@witness("double_claim", ("D4.9",), "claims an orphan from the snapshot it swept, without compare-and-set")
class _DoubleClaim(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        state = self.state_from_row(row)
        spec = state.resolved.spec if state.resolved else None
        if row.status != InvocationStatus.RUNNING.value or self.escaped(row, spec):
            return await super().recover(row)
        now = self.clock.now()
        changes = {
            "status": "RUNNING",
            "attempt": row.attempt + 1,
            "lease_owner": self.worker_id,
            "lease_expires_at": now + self.config.lease_s,
            "started_at": now,
        }
        self.store.update(row.invocation_id, changes, [EventKind.STARTED])
        state.attempt = row.attempt + 1
        return await self.drive(state, Step.PREPARE)


# -- D5 -------------------------------------------------------------------------------------


class _LaxNames(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        return spec


@witness("lax_names", ("D5.1", "D5.2"), "registers any name, reserved domains included")
class _LaxNamesPipeline(Pipeline):
    registry_class = _LaxNames


class _ReservedOpen(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        try:
            return Registry.admit(spec)
        except ConfigurationError as exc:
            if "reserved domain" in str(exc):
                return spec
            raise


@witness("reserved_domains_open", ("D5.2",), "lets builtins into the mcp and device domains")
class _ReservedDomainsOpen(Pipeline):
    registry_class = _ReservedOpen


class _CaseFolding(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        return super().resolve(name.strip().lower())


@witness("case_folding_lookup", ("D5.3",), "resolves names case-insensitively and ignores surrounding blanks")
class _CaseFoldingLookup(Pipeline):
    registry_class = _CaseFolding


class _LastWins(Registry):
    def __init__(self, tools: Sequence[Tool]) -> None:
        unique = {tool.spec.name: tool for tool in tools}
        super().__init__(list(unique.values()))


@witness("last_registration_wins", ("D5.4",), "lets a second registration of a name replace the first")
class _LastRegistrationWins(Pipeline):
    registry_class = _LastWins


# -- D6 -------------------------------------------------------------------------------------


class _NoFloors(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        Registry.admit(spec)
        return spec  # Keeps the declared output trust of device and sandbox tools.


@witness("trusts_declared_device_trust", ("D6.4",), "keeps the output trust a device or sandbox tool declares")
class _TrustsDeclaredDeviceTrust(Pipeline):
    registry_class = _NoFloors
