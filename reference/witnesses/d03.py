"""Witnesses of decision 3: Fourteen steps, one function, one call site.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any

import anyio
from sqlalchemy.exc import PendingRollbackError

from toolproof.reference.hooks import (
    DISPOSITION,
    STEP_TABLE,
    CallState,
    Decision,
    EventTable,
    InvocationTable,
    Pipeline,
    PipelineHost,
    Resolved,
    StepFunction,
    invocation_row,
    resolved_step,
)
from toolproof.spec import (
    Disposition,
    Envelope,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    Outcome,
    ProposedCall,
    ReasonCode,
    SideEffect,
    Step,
    StepRequest,
    StoreFault,
    Success,
    ToolSource,
    TrustLabel,
)

from ._registry import moved, reads_a_resource, witness

_LOG = logging.getLogger(__name__)


@witness("executes_before_claim", ("D3.1",), "runs step 8 (claim) after step 10 (execute)")
class _ExecutesBeforeClaim(Pipeline):
    steps = moved(Step.CLAIM, after=Step.EXECUTE)


async def _record_in_memory(p: PipelineHost, s: CallState) -> None:
    existing = p.store.find_by_key(s.key)
    if existing is not None:
        s.invocation_id, s.recorded = existing.invocation_id, True


async def _claim_if_recorded(p: PipelineHost, s: CallState) -> None:
    if s.recorded:
        await STEP_TABLE[Step.CLAIM](p, s)
    s.attempt = max(s.attempt, 1)


@witness(
    "one_transaction", ("D3.1", "D3.2"), "holds the row back until step 13, as if one transaction spanned the call"
)
class _OneTransaction(Pipeline):
    # Everything up to step 13 stays in memory, which is what an uncommitted transaction looks like to a reader.
    steps = STEP_TABLE | {Step.RECORD: _record_in_memory, Step.CLAIM: _claim_if_recorded}

    async def mark_effect(self, s: CallState) -> None:
        if s.recorded:
            await super().mark_effect(s)
        s.marked = True


async def _complete_successes_only(p: PipelineHost, s: CallState) -> None:
    d = s.disposition
    if s.recorded and isinstance(d, Outcome) and d.status is InvocationStatus.FAILED:
        return  # The mistake: "a failed call's row can wait for the next sweep to settle it".
    await STEP_TABLE[Step.COMPLETE](p, s)


@witness("failures_completed_later", ("D3.8",), "returns a FAILED call's outcome with its row still RUNNING")
class _FailuresCompletedLater(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _complete_successes_only}


@witness("validates_after_execute", ("D3.3",), "validates arguments only after running the tool")
class _ValidatesAfterExecute(Pipeline):
    steps = moved(Step.VALIDATE, after=Step.EXECUTE)


async def _remote_tools_unvalidated(p: PipelineHost, s: CallState) -> None:
    spec = s.resolved.spec if s.resolved is not None else None
    if spec is not None and spec.source is ToolSource.MCP and not reads_a_resource(s):
        return  # The defect: "the server validates its own arguments"; only the adapter's own read tool is checked.
    await STEP_TABLE[Step.VALIDATE](p, s)


@witness(
    "mcp_arguments_unvalidated",
    ("D3.3", "D8.6"),
    "skips step 2 for a remote MCP tool (not the synthetic read tool), so arguments its schema refuses are sent",
)
class _McpArgumentsUnvalidated(Pipeline):
    steps = STEP_TABLE | {Step.VALIDATE: _remote_tools_unvalidated}


async def _claims_terminal_rows(p: PipelineHost, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    if InvocationStatus(row.status).is_terminal:
        p.store.update(s.invocation_id, {"status": InvocationStatus.RECORDED.value})
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("no_dedupe", ("D3.4", "D4.12"), "re-executes a replayed call whose row is already terminal")
class _NoDedupe(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claims_terminal_rows}


async def _reruns_invalid_results(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.INVALID_TOOL_RESULT:
        s.disposition = None
        p.store.update(s.invocation_id, {"effect_sent_at": None})
        await p.steps[Step.EXECUTE](p, s)
        await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("retries_invalid_results", ("D3.5",), "runs the tool again when its result is rejected")
class _RetriesInvalidResults(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _reruns_invalid_results}


@witness("device_shortcut", ("D3.6",), "runs device and sandbox tools directly, outside the pipeline")
class _DeviceShortcut(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        found = self.registry.resolve(call.tool_name)
        if found is None or found[0].source not in (ToolSource.DEVICE, ToolSource.SANDBOX):
            return await super().run_call(request, call)
        resolved = Resolved(*found)
        s = CallState(request=request, call=call, resolved=resolved, attempt=1, key=uuid.uuid4().hex)
        context = self.context_for(self.context_parts(s, resolved))
        # Parsed as the pipeline parses any result: behind the driver a tool's result arrives as JSON.
        result = self.parse_result(await resolved.tool.execute(dict(call.arguments), context))
        return Success(
            invocation_id=s.invocation_id,
            content=[
                Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source=resolved.spec.name, text=p.text)
                for p in (result.content if result is not None else [])
            ],
        )


async def _completes_without_requested(p: PipelineHost, s: CallState) -> None:
    if s.recorded or s.leave_row:
        await STEP_TABLE[Step.COMPLETE](p, s)
        return
    assert s.disposition is not None
    row = invocation_row(p, s, InvocationStatus(s.disposition.status))
    row.reason_code = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
    row.disposition_json = DISPOSITION.dump_json(s.disposition).decode()
    p.store.insert(row, [EventKind.COMPLETED])


@witness("no_requested_event_on_refusal", ("D3.7",), "writes a refused call's row without its requested event")
class _NoRequestedOnRefusal(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _completes_without_requested}


async def _completed_twice(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    p.store.update(s.invocation_id, {}, [EventKind.COMPLETED])


@witness("double_completed", ("D3.7",), "emits tool_call.completed twice for an executed call")
class _DoubleCompleted(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _completed_twice}


@witness(
    "recovery_logged_after_decision",
    ("D3.7",),
    "a recovered call's tool_call.recovered event is written once more after the call completes",
    through=("D4.11",),
)
class _RecoveryLoggedAfterDecision(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        decided = await super().recover(row)
        # The mistake: the sweep logs what it decided, after the decision it logs.
        self.store.update(row.invocation_id, {}, [EventKind.RECOVERED])
        return decided


@witness(
    "resume_completes_twice",
    ("D3.7", "D16.4"),
    "a resumed control call writes a tool_call.completed for the suspension as well as for the call",
)
class _ResumeCompletesTwice(Pipeline):
    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        self.store.update(invocation_id, {}, [EventKind.COMPLETED])  # The mistake: the suspension "completes".
        return await super().resume(invocation_id, answer)


_claim = STEP_TABLE[Step.CLAIM]


@resolved_step
async def _claim_reruns_failures(p: PipelineHost, s: CallState, r: Resolved) -> None:
    row = p.store.get(s.invocation_id)
    status = InvocationStatus(row.status)
    if status.is_terminal and status is not InvocationStatus.SUCCEEDED and row.effect_sent_at is None:
        # The defect: only a success is final; a call that failed without its mark "can simply run again".
        now = p.clock.now()
        changes = {
            "status": InvocationStatus.RUNNING.value,
            "attempt": row.attempt + 1,
            "lease_owner": p.worker_id,
            "lease_expires_at": now + p.config.lease_s,
            "started_at": now,
            "reason_code": None,
            "finished_at": None,
            "disposition_json": None,
        }
        if p.store.claim(s.invocation_id, expect_status=status, expect_owner=row.lease_owner, changes=changes):
            s.attempt = row.attempt + 1
            return
    await _claim(p, s)


@witness("replay_reruns_failed", ("D3.4",), "re-executes a replayed call whose terminal row is not SUCCEEDED")
class _ReplayRerunsFailed(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_reruns_failures}


async def _claim_then_own_the_answer(p: PipelineHost, s: CallState) -> None:
    await _claim(p, s)
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.IN_PROGRESS:
        s.leave_row = False  # The defect: the in-progress answer is written to the row another worker is running.


@witness(
    "in_progress_written_to_row",
    ("D3.2", "D3.7"),
    "a second submission of a running call completes its row UNAVAILABLE in_progress",
)
class _InProgressWrittenToRow(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_then_own_the_answer}


async def _claim_own_lease(p: PipelineHost, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    live = (row.lease_expires_at or 0) > p.clock.now()
    if row.status == InvocationStatus.RUNNING.value and live and row.lease_owner == p.worker_id:
        # The mistake: a live lease of its own is taken for a leftover of this worker's, and claimed again.
        p.store.update(s.invocation_id, {"lease_expires_at": 0.0})
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("own_lease_claimed_again", ("D3.2", "D3.7"), "claims again a call running under its own live lease")
class _OwnLeaseClaimedAgain(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claim_own_lease}


def _carrying_on(step: StepFunction) -> StepFunction:
    async def run(p: PipelineHost, s: CallState) -> None:
        try:
            await step(p, s)
        except StoreFault as fault:
            _LOG.warning("store write failed, continuing: %s", fault)

    return run


@witness(
    "logs_failed_write_and_carries_on",
    ("D3.10",),
    "catches a failed record, hold or claim write, logs it and carries on towards the tool",
)
class _LogsFailedWriteAndCarriesOn(Pipeline):
    steps = STEP_TABLE | {step: _carrying_on(STEP_TABLE[step]) for step in (Step.RECORD, Step.HOLD, Step.CLAIM)}


@witness(
    "raw_store_error",
    ("D3.10",),
    "lets the database driver's own exception reach the submitter instead of the typed StoreFault",
)
class _RawStoreError(Pipeline):
    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        try:
            return await super().drive(state, start)
        except StoreFault as fault:
            if isinstance(fault.__cause__, Exception):
                raise fault.__cause__ from None
            raise


@witness(
    "poisoned_session",
    ("D3.11",),
    "keeps the session of a failed write without rolling it back, so every later call fails (PendingRollbackError)",
)
class _PoisonedSession(Pipeline):
    failed: StoreFault | None = None

    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        if self.failed is not None:
            raise PendingRollbackError(f"this session's transaction was rolled back by an error: {self.failed}")
        try:
            return await super().drive(state, start)
        except StoreFault as fault:
            self.failed = fault
            raise


async def _random_key_off_the_builtins(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    if s.resolved is not None and s.resolved.spec.source in (ToolSource.DEVICE, ToolSource.SANDBOX):
        # The defect: "a device call is a fresh request to the device every time", so it gets a key of its own.
        s.key = uuid.uuid4().hex


@witness("device_calls_random_keys", ("D3.6",), "gives device and sandbox calls a random key, so a replay runs again")
class _DeviceCallsRandomKeys(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _random_key_off_the_builtins}


async def _silent_answered_holds(p: PipelineHost, s: CallState) -> None:
    d = s.disposition
    answered = isinstance(d, Outcome) and d.reason_code in (ReasonCode.APPROVAL_DENIED, ReasonCode.APPROVAL_EXPIRED)
    if not (isinstance(d, Outcome) and answered and s.recorded and not s.leave_row):
        await STEP_TABLE[Step.COMPLETE](p, s)
        return
    # The defect: a hold that never ran "completed nothing", so its terminal row is written without the event.
    changes = {"status": d.status.value, "reason_code": d.reason_code.value}
    p.store.update(s.invocation_id, changes | {"disposition_json": DISPOSITION.dump_json(d).decode()})


@witness(
    "answered_hold_not_completed",
    ("D3.7",),
    "writes a denied or expired hold's terminal row without tool_call.completed",
)
class _AnsweredHoldNotCompleted(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _silent_answered_holds}


async def _record_or_run_unrecorded_reads(p: PipelineHost, s: CallState) -> None:
    assert isinstance(p, _ReadOnlyRunsWithoutRow)
    try:
        await STEP_TABLE[Step.RECORD](p, s)
    except StoreFault as fault:
        if s.resolved is None or s.resolved.spec.side_effect is not SideEffect.READ_ONLY:
            raise
        p.unrecorded.add(s.invocation_id)  # The defect: "a read changes nothing", so it runs with no row.
        _LOG.warning("read not recorded, running it anyway: %s", fault)


def _unless_unrecorded(step: Step) -> StepFunction:
    async def run(p: PipelineHost, s: CallState) -> None:
        assert isinstance(p, _ReadOnlyRunsWithoutRow)
        if s.invocation_id not in p.unrecorded:
            await STEP_TABLE[step](p, s)

    return run


@witness("read_only_runs_without_row", ("D3.10",), "runs a READ_ONLY call whose record write failed, with no row")
class _ReadOnlyRunsWithoutRow(Pipeline):
    steps = STEP_TABLE | {
        Step.RECORD: _record_or_run_unrecorded_reads,
        Step.CLAIM: _unless_unrecorded(Step.CLAIM),
        Step.COMPLETE: _unless_unrecorded(Step.COMPLETE),
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.unrecorded: set[str] = set()


def _publishing_despite_a_fault(step: Step, kind: EventKind) -> StepFunction:
    async def run(p: PipelineHost, s: CallState) -> None:
        try:
            await STEP_TABLE[step](p, s)
        except StoreFault:
            if kind is not EventKind.APPROVAL_REQUESTED or s.decision is Decision.APPROVAL:
                p.store.update(s.invocation_id, {}, [kind])  # The defect: the event goes out in a write of its own.
            raise

    return run


@witness("failed_hold_still_asks_approver", ("D3.11",), "publishes approval_requested although the hold write failed")
class _FailedHoldStillAsksApprover(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _publishing_despite_a_fault(Step.HOLD, EventKind.APPROVAL_REQUESTED)}


@witness("failed_claim_still_started", ("D3.11",), "publishes tool_call.started although the claim write failed")
class _FailedClaimStillStarted(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _publishing_despite_a_fault(Step.CLAIM, EventKind.STARTED)}


@witness(
    "parallel_member_fault_answered",
    ("D3.10",),
    "answers a parallel batch member whose write failed remote_unavailable instead of failing the step StoreFault",
)
class _ParallelMemberFaultAnswered(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if not self.qualifies(step):
            return await super().run_step(step)
        results: list[Disposition] = [Outcome.of(ReasonCode.REMOTE_UNAVAILABLE, c.call_id) for c in step.calls]

        async def one(index: int, call: ProposedCall) -> None:
            # The defect: the member's failed write is its own outcome, so the task group carries on.
            with contextlib.suppress(StoreFault):
                results[index] = await self.run_call(step, call)

        async with anyio.create_task_group() as group:
            for index, call in enumerate(step.calls):
                group.start_soon(one, index, call)
        return results


async def _complete_refusals_regardless(p: PipelineHost, s: CallState) -> None:
    try:
        await STEP_TABLE[Step.COMPLETE](p, s)
    except StoreFault:
        # The defect: a call that never ran has nothing to lose, so its refusal is reported without its row.
        if not (isinstance(s.disposition, Outcome) and s.prepared is None and not s.marked):
            raise


@witness(
    "refusal_reported_without_its_row",
    ("D3.8",),
    "reports a refused call's outcome although step 13's write of its row failed",
)
class _RefusalReportedWithoutItsRow(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _complete_refusals_regardless}


async def _excerpt_after_recording_refusals(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Outcome) and not s.recorded and s.prepared is None and not p.store.find_by_key(s.key):
        # The defect: every proposal goes on record before its answer, so a refusal decided before step 6 is inserted
        # RECORDED here and step 13 only updates it; a failed completion leaves a row recovery takes for runnable.
        p.store.insert(invocation_row(p, s, InvocationStatus.RECORDED), [EventKind.REQUESTED])
        s.recorded = True
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness(
    "refusals_recorded_before_completion",
    ("D3.3",),
    "inserts a call refused before step 6 as RECORDED and only then completes it, so a failed completion leaves a row "
    "the sweep runs",
)
class _RefusalsRecordedBeforeCompletion(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_after_recording_refusals}


async def _publish_announcing_replayed_refusals(p: PipelineHost, s: CallState) -> None:
    d = s.disposition
    if isinstance(d, Outcome) and not s.recorded and d.invocation_id != s.invocation_id:
        # The defect: a refusal answered again from its row is announced again, as though it completed once more.
        p.store.update(d.invocation_id, {"finished_at": p.clock.now()}, [EventKind.COMPLETED])
    await STEP_TABLE[Step.PUBLISH](p, s)


@witness(
    "replayed_refusal_completed_again",
    ("D3.7",),
    "publishes another tool_call.completed on a refused call's row each time the refusal is replayed",
)
class _ReplayedRefusalCompletedAgain(Pipeline):
    steps = STEP_TABLE | {Step.PUBLISH: _publish_announcing_replayed_refusals}


async def _reruns_invalid_idempotent_results(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    spec = s.resolved.spec if s.resolved else None
    # The defect: asking an IDEMPOTENT tool again is harmless, so a result step 11 rejected is asked for once more.
    if (
        spec is not None
        and spec.idempotency is IdempotencyClass.IDEMPOTENT
        and isinstance(s.disposition, Outcome)
        and s.disposition.reason_code is ReasonCode.INVALID_TOOL_RESULT
        and s.attempt < p.config.max_attempts
    ):
        s.disposition = None
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result, s.error, s.timed_out = None, None, False
        await p.steps[Step.PREPARE](p, s)
        await p.steps[Step.EXECUTE](p, s)
        await STEP_TABLE[Step.NORMALIZE](p, s)


@witness(
    "invalid_result_of_idempotent_tool_retried",
    ("D3.5",),
    "runs an IDEMPOTENT tool again when step 11 rejects the result it returned after acting",
)
class _InvalidResultOfIdempotentToolRetried(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _reruns_invalid_idempotent_results}


async def _reruns_garbled_device_results(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    spec = s.resolved.spec if s.resolved else None
    # The defect: a device's answer that is no ToolResult at all is taken for a garbled transmission and asked for
    # again, up to the retry bound, watermark or not; the last answer is judged as step 11 judges any.
    while (
        spec is not None
        and spec.source is ToolSource.DEVICE
        and s.error is None
        and not s.timed_out
        and p.parse_result(s.raw_result) is None
        and s.attempt < p.config.max_attempts
    ):
        s.disposition = None
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result = None
        await p.steps[Step.PREPARE](p, s)
        await p.steps[Step.EXECUTE](p, s)
        await STEP_TABLE[Step.NORMALIZE](p, s)


@witness(
    "device_garbled_result_rerun",
    ("D3.5",),
    "runs a DEVICE tool again, marked or not, when what it returned is no ToolResult at all",
)
class _DeviceGarbledResultRerun(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _reruns_garbled_device_results}


@witness("events_share_one_seq", ("D3.7",), "reads a run's events back in order but with seq 0 for every one")
class _EventsShareOneSeq(Pipeline):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        read = self.store.events

        def seqless(run_id: str) -> list[EventTable]:
            # The defect: the emission order the seq states is dropped; the list itself keeps it.
            return [event.model_copy(update={"seq": 0}) for event in read(run_id)]

        setattr(self.store, "events", seqless)  # noqa: B010 (mypy refuses an assignment to a method)


async def _completes_refusals_marked(p: PipelineHost, s: CallState) -> None:
    if not s.recorded:
        s.marked = True  # The defect: a call refused before step 6 gets its row inserted with the watermark set.
    await STEP_TABLE[Step.COMPLETE](p, s)


@witness(
    "refused_rows_watermarked", ("D3.3",), "inserts the row of a call refused before step 6 with effect_sent_at set"
)
class _RefusedRowsWatermarked(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _completes_refusals_marked}


async def _completes_refusals_by_insert_only(p: PipelineHost, s: CallState) -> None:
    if s.leave_row or s.recorded:
        await STEP_TABLE[Step.COMPLETE](p, s)
        return
    assert s.disposition is not None
    status = InvocationStatus(s.disposition.status)
    row = invocation_row(p, s, status)
    row.reason_code = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
    row.finished_at = p.clock.now()
    row.disposition_json = DISPOSITION.dump_json(s.disposition).decode()
    # The defect: a call refused before step 6 is recorded by a plain insert; its replay, whose key already has that
    # terminal row, meets the duplicate key and the submission raises instead of answering with the row's outcome.
    p.store.insert(row, [EventKind.REQUESTED, EventKind.COMPLETED], p.metrics_for(s, status))


@witness(
    "refusal_replay_raises",
    ("D3.4",),
    "records a call refused before step 6 by a plain insert, so its replay raises on the duplicate key instead of "
    "returning the recorded refusal",
)
class _RefusalReplayRaises(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _completes_refusals_by_insert_only}


async def _record_sandbox_unversioned(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RECORD](p, s)
    spec = s.resolved.spec if s.resolved is not None else None
    if s.recorded and s.existing is None and spec is not None and spec.source is ToolSource.SANDBOX:
        # The defect: "sandbox code is the script of the moment, it has no version", so its row keeps none.
        p.store.update(s.invocation_id, {"tool_version": None})


@witness(
    "sandbox_rows_unversioned",
    ("D2.3", "D3.6"),
    "records a SANDBOX tool's row without its tool_version, though its identity (and a builtin's row) carries it",
)
class _SandboxRowsUnversioned(Pipeline):
    steps = STEP_TABLE | {Step.RECORD: _record_sandbox_unversioned}
