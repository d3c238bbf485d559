"""Witnesses of decision 4: effect_sent_at makes recovery decidable.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from sqlmodel import Session, col, select, update

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    ContextParts,
    InvocationTable,
    McpAdapter,
    McpTool,
    Pipeline,
    PipelineHost,
    Resolved,
    Store,
    idempotency_key,
)
from toolproof.spec import (
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    JsonObject,
    Metric,
    Outcome,
    ReasonCode,
    SideEffect,
    Step,
    StoreFault,
    Success,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
)

from ._registry import adapter_pipeline, witness

_LOG = logging.getLogger(__name__)


async def _watermark_at_completion(p: PipelineHost, s: CallState) -> None:
    if s.marked and s.recorded and not s.leave_row:
        p.store.mark_effect_sent(s.invocation_id, p.clock.now())
    await STEP_TABLE[Step.COMPLETE](p, s)


@witness("watermark_after_effect", ("D4.1", "D4.6"), "remembers the watermark in memory and writes it at step 13")
class _WatermarkAfterEffect(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _watermark_at_completion}

    async def mark_effect(self, s: CallState) -> None:
        s.marked = True


async def _commit_pending_then_normalize(p: PipelineHost, s: CallState) -> None:
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


async def _exceptions_are_failures(p: PipelineHost, s: CallState) -> None:
    if s.error is not None or s.timed_out:
        s.finish(ReasonCode.TOOL_ERROR)
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("exceptions_are_failures", ("D4.2", "D4.20"), "answers every exception and overrun FAILED, watermark or not")
class _ExceptionsAreFailures(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _exceptions_are_failures}


async def _overrun_before_mark_uncertain(p: PipelineHost, s: CallState) -> None:
    spec = s.resolved.spec if s.resolved is not None else None
    if s.timed_out and not s.marked and spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
        s.finish(ReasonCode.EFFECT_UNKNOWN)  # The mistake: "the deadline may have cut it mid-send".
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("overrun_before_mark_uncertain", ("D4.20",), "resolves a NON_IDEMPOTENT overrun UNCERTAIN though unmarked")
class _OverrunBeforeMarkUncertain(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _overrun_before_mark_uncertain}


async def _idempotent_crash_final(p: PipelineHost, s: CallState) -> None:
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


async def _recorded_rows_carry_on(p: PipelineHost, s: CallState) -> None:
    row = s.existing
    if row is not None and row.status == InvocationStatus.RECORDED.value and row.suspended_at is None:
        return  # The old reference: "recorded earlier and never held: carry on to the claim".
    await STEP_TABLE[Step.HOLD](p, s)


@witness(
    "recorded_rows_skip_hold",
    ("D4.14", "D4.15"),
    "lets a row recorded before a crash and never held carry on to the claim, whatever its recorded decision",
)
class _RecordedRowsSkipHold(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _recorded_rows_carry_on}


async def _record_noting_adoption(p: PipelineHost, s: CallState) -> None:
    assert isinstance(p, _AdoptedRowSkipsHold)
    replay = s.existing is not None
    await STEP_TABLE[Step.RECORD](p, s)
    if not replay and s.existing is not None:  # Lost the insert race and adopted the winner's row.
        p.adopted.add(s.invocation_id)


async def _hold_unless_adopted(p: PipelineHost, s: CallState) -> None:
    assert isinstance(p, _AdoptedRowSkipsHold)
    if s.invocation_id in p.adopted:
        return  # "The winner holds it": the loser goes on to the claim.
    await STEP_TABLE[Step.HOLD](p, s)


@witness(
    "adopted_row_skips_hold",
    ("D4.17",),
    "lets the loser of a concurrent first submission carry on to the claim with the winner's row, unheld",
)
class _AdoptedRowSkipsHold(Pipeline):
    steps = STEP_TABLE | {Step.RECORD: _record_noting_adoption, Step.HOLD: _hold_unless_adopted}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.adopted: set[str] = set()


@witness("sweep_takes_live_leases", ("D4.18",), "sweeps every RUNNING row another worker owns, expired or not")
class _SweepTakesLiveLeases(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        found = super().orphans(now)
        with self.store.transaction() as session:
            running = session.exec(select(InvocationTable).where(InvocationTable.status == "RUNNING")).all()
        seen = {r.invocation_id for r in found}
        return found + [r for r in running if r.invocation_id not in seen and r.lease_owner != self.worker_id]


@witness(
    "sweep_takes_waiting_approvals",
    ("D4.19",),
    "counts an approval hold older than the lease as stranded, and recovers it before its bound",
)
class _SweepTakesWaitingApprovals(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        found = super().orphans(now)
        with self.store.transaction() as session:
            waiting = session.exec(
                select(InvocationTable).where(InvocationTable.status == InvocationStatus.AWAITING_APPROVAL.value)
            ).all()
        return found + [r for r in waiting if r.created_at < now - self.config.lease_s]


@witness(
    "watermark_from_started_at",
    ("D4.10",),
    "rebuilds a call's watermark state from started_at, so a recovered call counts as marked",
)
class _WatermarkFromStartedAt(Pipeline):
    def state_from_row(self, row: InvocationTable) -> CallState:
        state = super().state_from_row(row)
        state.marked = row.started_at is not None
        return state


@witness(
    "answer_forgotten_by_recovery",
    ("D4.16",),
    "keeps a resumed control call's answer in memory only: a call recovered after a crash runs without it",
)
class _AnswerForgottenByRecovery(Pipeline):
    def state_from_row(self, row: InvocationTable) -> CallState:
        state = super().state_from_row(row)
        state.answer = None
        return state


@witness("unmarked_flag_external_only", ("D4.10",), "flags an unmarked effect of EXTERNAL_WRITE tools only")
class _UnmarkedFlagExternalOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The defect: a workspace write "stays inside", so it is not held to the watermark.
        external = s.resolved is not None and s.resolved.spec.side_effect is SideEffect.EXTERNAL_WRITE
        return external and super().unmarked(s)


@witness("uncertain_metric_in_process_only", ("D4.11",), "counts UNCERTAIN only where the tool's failure is seen")
class _UncertainMetricInProcessOnly(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        if status is InvocationStatus.UNCERTAIN and s.error is None and not s.timed_out:
            metrics.remove(Metric.UNCERTAIN.value)  # The defect: recovery's UNCERTAIN is not counted.
        return metrics


class _OwnerOnlyClaims(Store):
    """The instance's own store (its engine and every method), but a claim's compare-and-set leaves the status out."""

    def __init__(self, inner: Store) -> None:  # Shares the inner store's engine rather than opening its own.
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(
        self, invocation_id: str, *, expect_status: str, expect_owner: str | None, changes: dict[str, Any]
    ) -> bool:
        # The defect: "nobody holds the lease" is taken for "nobody ran it": the row's status is not compared with
        # the one the claim was read in, so a row another worker completed (and so released) since is taken again.
        owner = col(InvocationTable.lease_owner)
        held = owner.is_(None) if expect_owner is None else owner == expect_owner
        mine = col(InvocationTable.invocation_id) == invocation_id
        with self.inner.engine.begin() as connection:
            if connection.execute(update(InvocationTable).where(mine, held).values(**changes)).rowcount != 1:
                return False
        self.inner.update(invocation_id, {}, [EventKind.STARTED])
        return True


@witness(
    "claim_ignores_the_status_read",
    ("D4.9",),
    "claims a row whose lease is free whatever status it reached since it was read, so a completed call runs again",
)
class _ClaimIgnoresTheStatusRead(Pipeline):
    def __init__(self, *, store: Store, **parts: Any) -> None:
        super().__init__(store=_OwnerOnlyClaims(store), **parts)


_claim = STEP_TABLE[Step.CLAIM]


@witness(
    "unmarked_flagged_on_success_only",
    ("D4.10",),
    "tool_effect_unmarked_total counts an unmarked consequential call only when it ended SUCCEEDED",
)
class _UnmarkedFlaggedOnSuccessOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The defect: a call that failed, raised or overran "did nothing", so its missing watermark is not flagged.
        if not isinstance(s.disposition, Success):
            return False
        return super().unmarked(s)


_CLAIM_UNCERTAIN = "_witness_uncertain_at_claim"


async def _claim_remembering_uncertain(p: PipelineHost, s: CallState) -> None:
    await _claim(p, s)
    d = s.disposition
    if isinstance(d, Outcome) and d.status is InvocationStatus.UNCERTAIN and d.reason_code is ReasonCode.EFFECT_UNKNOWN:
        setattr(s, _CLAIM_UNCERTAIN, True)


@witness(
    "uncertain_at_claim_uncounted",
    ("D4.11",),
    "an UNCERTAIN decided by step 8 (a replay or a second worker meeting an expired marked lease) is not counted",
)
class _UncertainAtClaimUncounted(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_remembering_uncertain}

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        counted = super().metrics_for(s, status)
        if getattr(s, _CLAIM_UNCERTAIN, False):
            # The defect: tool_uncertain_total is bumped only where a tool's own run or the sweep decides UNCERTAIN.
            return [m for m in counted if m != Metric.UNCERTAIN.value]
        return counted


class _NoMarkContext:
    """A tool's context whose mark_effect_sent does nothing (the rest is the pipeline's)."""

    def __init__(self, context: ToolExecutionContext) -> None:
        self._context = context

    def __getattr__(self, name: str) -> object:
        return getattr(self._context, name)

    async def mark_effect_sent(self) -> None:
        return None


class _WorkspaceWritesUnmarked(McpTool):
    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        if self.spec.side_effect is SideEffect.WORKSPACE_WRITE:
            # The defect: "a server writing its own workspace changes nothing outside it", so the adapter marks only
            # EXTERNAL_WRITE calls; a NON_IDEMPOTENT WORKSPACE_WRITE call that hangs after sending ends retryable.
            return await super().execute(arguments, _NoMarkContext(context))  # type: ignore[arg-type]
        return await super().execute(arguments, context)


class _MarksExternalWritesOnly(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, _ = found
        row = next(r for r in self.store.pins(run_id) if r.kind == "tool" and r.name == name)
        return spec, _WorkspaceWritesUnmarked(self, self.links[row.server_id], row.remote_name, spec)


@witness(
    "mcp_marks_external_writes_only",
    ("D4.2",),
    "the MCP adapter marks the effect of EXTERNAL_WRITE calls only, not of WORKSPACE_WRITE ones, before sending",
)
class _McpMarksExternalWritesOnly(Pipeline):
    mcp_class = _MarksExternalWritesOnly


class _UnavailableAfterMark(McpTool):
    def __init__(self, adapter: McpAdapter, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        try:
            return await self.inner.execute(arguments, context)
        except Exception as exc:
            # The defect: a lost connection is "the server could not be reached", even after the call was marked
            # and sent, so a NON_IDEMPOTENT write that may have happened is answered retryable remote_unavailable.
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))


class _DropAfterMarkUnavailable(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _UnavailableAfterMark(self, tool)


witness(
    "drop_after_mark_unavailable",
    ("D4.2",),
    "answers a marked MCP call whose connection dropped remote_unavailable instead of leaving it to the watermark",
)(adapter_pipeline(_DropAfterMarkUnavailable))


@witness(
    "swallows_failed_watermark",
    ("D4.21",),
    "catches the failed watermark write inside mark_effect_sent and returns, so the tool acts with no mark",
)
class _SwallowsFailedWatermark(Pipeline):
    async def mark_effect(self, s: CallState) -> None:
        try:
            await super().mark_effect(s)
        except StoreFault as fault:
            s.store_fault = None
            _LOG.warning("watermark not written, carrying on: %s", fault)


@witness(
    "failed_watermark_is_a_tool_crash",
    ("D4.21",),
    "raises the failed watermark write to the tool but then judges the tool's exception as its own crash (FAILED)",
)
class _FailedWatermarkIsAToolCrash(Pipeline):
    async def mark_effect(self, s: CallState) -> None:
        try:
            await super().mark_effect(s)
        except StoreFault:
            s.store_fault = None  # Forgotten by the pipeline: step 11 sees only a tool that raised.
            raise


async def _complete_or_log(p: PipelineHost, s: CallState) -> None:
    try:
        await STEP_TABLE[Step.COMPLETE](p, s)
    except StoreFault as fault:
        _LOG.warning("completion not stored, answering anyway: %s", fault)


@witness(
    "succeeds_without_stored_completion",
    ("D4.22",),
    "answers the call's disposition (SUCCEEDED) although step 13's write failed and the row stays RUNNING",
)
class _SucceedsWithoutStoredCompletion(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _complete_or_log}


async def _complete_or_fail_the_row(p: PipelineHost, s: CallState) -> None:
    try:
        await STEP_TABLE[Step.COMPLETE](p, s)
    except StoreFault:
        s.finish(ReasonCode.TOOL_CRASHED)  # The effect happened, but the row now says a retryable failure.
        await STEP_TABLE[Step.COMPLETE](p, s)
        raise


@witness(
    "fails_the_row_after_failed_completion",
    ("D4.22",),
    "after step 13's write fails past the effect, writes the row FAILED tool_crashed instead of leaving it RUNNING",
)
class _FailsTheRowAfterFailedCompletion(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _complete_or_fail_the_row}


async def _watermark_decides_writes_only(p: PipelineHost, s: CallState) -> None:
    spec = s.resolved.spec if s.resolved is not None else None
    if (s.error is not None or s.timed_out) and spec is not None and not spec.consequential:
        # The defect: a READ_ONLY tool "cannot have left a mark", so its watermark is not read.
        s.finish(ReasonCode.DEADLINE_EXCEEDED if s.timed_out else ReasonCode.TOOL_CRASHED)
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness(
    "read_only_watermark_ignored",
    ("D4.2",),
    "answers a READ_ONLY NON_IDEMPOTENT tool that marked and then failed FAILED, retryable",
)
class _ReadOnlyWatermarkIgnored(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _watermark_decides_writes_only}


@witness(
    "read_only_orphan_retried",
    ("D4.6",),
    "retries a dead worker's marked READ_ONLY NON_IDEMPOTENT call, as if reads could not escape",
)
class _ReadOnlyOrphanRetried(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        return super().escaped(row, spec) and spec is not None and spec.consequential


@witness("unmarked_flag_once_per_tool", ("D4.10",), "raises the production flag for a tool's first unmarked call only")
class _UnmarkedFlagOncePerTool(Pipeline):
    flagged_tools: set[str] | None = None

    def unmarked(self, s: CallState) -> bool:
        if self.flagged_tools is None:
            self.flagged_tools = set()
        if not super().unmarked(s) or s.call.tool_name in self.flagged_tools:
            return False
        self.flagged_tools.add(s.call.tool_name)  # The defect: the flag names a tool, not each of its calls.
        return True


@witness("uncertain_counted_once_per_tool", ("D4.11",), "counts a tool's first UNCERTAIN resolution only")
class _UncertainCountedOncePerTool(Pipeline):
    counted_tools: set[str] | None = None

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        if self.counted_tools is None:
            self.counted_tools = set()
        if status is InvocationStatus.UNCERTAIN:
            if s.call.tool_name in self.counted_tools:
                metrics.remove(Metric.UNCERTAIN.value)  # The defect: one count per tool, not per resolution.
            self.counted_tools.add(s.call.tool_name)
        return metrics


@witness(
    "replays_remembered_completion",
    ("D4.22",),
    "keeps the disposition whose completion write failed and, recovering the row itself, writes that instead",
)
class _ReplaysRememberedCompletion(Pipeline):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.unwritten: dict[str, Disposition] = {}

    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        try:
            return await super().drive(state, start)
        except StoreFault:
            if state.disposition is not None and state.prepared is not None and not state.leave_row:
                self.unwritten[state.invocation_id] = state.disposition  # "The call is done; only the row is late."
            raise

    async def recover(self, row: InvocationTable) -> Disposition:
        if row.invocation_id not in self.unwritten:
            return await super().recover(row)
        state = self.state_from_row(row)
        self.store.update(row.invocation_id, {}, [EventKind.RECOVERED])
        state.disposition = self.unwritten.pop(row.invocation_id)
        return await self.drive(state, Step.COMPLETE)


@witness(
    "own_lease_rows_retried",
    ("D4.22",),
    "retries a marked NON_IDEMPOTENT row whose expired lease it held itself, as if only dead workers' rows escaped",
)
class _OwnLeaseRowsRetried(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        return row.lease_owner != self.worker_id and super().escaped(row, spec)


@witness(
    "own_marked_rows_uncertain",
    ("D4.22",),
    "resolves every marked row whose lease it held itself UNCERTAIN, whatever its idempotency class",
)
class _OwnMarkedRowsUncertain(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        mine = row.lease_owner == self.worker_id and row.effect_sent_at is not None
        return mine or super().escaped(row, spec)


@witness(
    "uncertain_metric_skips_overruns",
    ("D4.11",),
    "counts an UNCERTAIN resolution when the marked call raised, not when it overran its deadline",
)
class _UncertainMetricSkipsOverruns(Pipeline):
    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        metrics = super().metrics_for(s, status)
        # The defect: only a raise after the mark is an "uncertain failure"; an overrun is counted as a timeout.
        return [m for m in metrics if not (s.timed_out and m == Metric.UNCERTAIN.value)]


@witness(
    "twice_crashed_call_given_up",
    ("D4.7",),
    "resolves UNCERTAIN a NON_IDEMPOTENT orphan whose row counts two attempts, whatever its watermark",
)
class _TwiceCrashedCallGivenUp(Pipeline):
    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        # The defect: a call whose worker died twice is given up, as if the watermark had been set.
        twice = spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT and row.attempt >= 2
        return super().escaped(row, spec) or twice


async def _device_raise_trusts_the_channel(p: PipelineHost, s: CallState) -> None:
    spec = s.resolved.spec if s.resolved is not None else None
    if spec is not None and spec.source is ToolSource.DEVICE and s.error is not None and not s.timed_out:
        # The defect: "the device channel reports its own failures", so its exception is a crash to retry.
        s.finish(ReasonCode.TOOL_CRASHED)
        return
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness(
    "device_raise_ignores_watermark",
    ("D4.2",),
    "answers a DEVICE tool's exception FAILED tool_crashed (retryable) even after its NON_IDEMPOTENT effect was marked",
)
class _DeviceRaiseIgnoresWatermark(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _device_raise_trusts_the_channel}


@witness("unmarked_flag_builtin_only", ("D4.10",), "flags an unmarked consequential call of a BUILTIN tool only")
class _UnmarkedFlagBuiltinOnly(Pipeline):
    def unmarked(self, s: CallState) -> bool:
        # The defect: a device or a sandbox "reports its own effects", so only a builtin is held to the watermark.
        builtin = s.resolved is not None and s.resolved.spec.source is ToolSource.BUILTIN
        return builtin and super().unmarked(s)


@witness(
    "recovery_rekeys_with_current_version",
    ("D4.3", "D4.4", "D4.5"),
    "derives a swept orphan's idempotency key again from the tool version registered now, not the row's key",
)
class _RecoveryRekeysWithCurrentVersion(Pipeline):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recovering = False

    async def recover(self, row: InvocationTable) -> Disposition:
        self.recovering = True
        try:
            return await super().recover(row)
        finally:
            self.recovering = False

    def state_from_row(self, row: InvocationTable) -> CallState:
        state = super().state_from_row(row)
        if self.recovering and state.resolved is not None:
            # The mistake: "the key is a function of the call", computed afresh with the version registered now.
            state.key = idempotency_key(
                tenant=row.tenant,
                run_id=row.run_id,
                step_number=row.step_number,
                call_id=row.call_id,
                tool_name=row.tool_name,
                tool_version=state.resolved.spec.version,
                arguments=state.call.arguments,
            )
        return state


@witness("orphans_one_per_step", ("D4.3",), "recovers one orphan per (run, step) in a sweep, the rest left RUNNING")
class _OrphansOnePerStep(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        seen: set[tuple[str, int]] = set()
        kept: list[InvocationTable] = []
        for row in super().orphans(now):
            if (row.run_id, row.step_number) not in seen:  # The mistake: "a step has one call in flight".
                seen.add((row.run_id, row.step_number))
                kept.append(row)
        return kept


async def _record_then_decide_again(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RECORD](p, s)
    found = s.existing
    if found is None or s.resolved is None or s.disposition is not None:
        return
    # The mistake: a replay adopts the row but decides policy again from its own request's labels.
    s.existing = None
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        s.existing = found


@witness(
    "replay_redecides_with_its_own_labels",
    ("D4.14", "D4.17"),
    "a submission that finds the call's row decides policy again from its own context's labels, not the row's",
)
class _ReplayRedecidesWithItsOwnLabels(Pipeline):
    steps = STEP_TABLE | {Step.RECORD: _record_then_decide_again}
