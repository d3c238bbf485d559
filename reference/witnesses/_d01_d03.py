"""Witnesses of decisions 1, 2 and 3: results, the context, the steps."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from toolproof.reference.hooks import (
    DISPOSITION,
    STEP_TABLE,
    CallState,
    CancellationSignal,
    ContextParts,
    ExecutionContext,
    FileArtifactWriter,
    Pipeline,
    Resolved,
    ScopedCredentials,
    invocation_row,
    resolved_step,
)
from toolproof.spec import (
    ArtifactRef,
    Disposition,
    Envelope,
    EventKind,
    InvocationStatus,
    Outcome,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
    Success,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
    TrustLabel,
)

from ._registry import moved, witness

# -- D1 -------------------------------------------------------------------------------------


@witness("status_honouring", ("D1.1",), "honours a status a result claims and drops fields it does not know")
class _StatusHonouring(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if not isinstance(data, Mapping):
            return None
        if data.get("status") == "DENIED":
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED"))
        return ToolResult.model_validate({k: v for k, v in data.items() if k in ToolResult.model_fields})


@witness("trusts_ok_flag", ("D1.2", "D1.6"), "believes ok=true over a failure, and files every failure as tool_error")
class _TrustsOkFlag(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = dict(raw.model_dump() if hasattr(raw, "model_dump") else raw)
        if data.get("ok"):
            data.pop("failure", None)
        elif data.get("failure"):
            data["failure"] = {"kind": "ERROR", "detail": data["failure"].get("detail")}
        return super().parse_result(data)


@witness("rejected_filed_unavailable", ("D1.2",), "files a REMOTE_REJECTED failure as remote_unavailable")
class _RejectedFiledUnavailable(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        result = super().parse_result(raw)
        if result is not None and result.failure is not None and result.failure.kind == "REMOTE_REJECTED":
            # The mistake: "the remote said no" and "the remote is down" are one bucket.
            return result.model_copy(
                update={"failure": result.failure.model_copy(update={"kind": "REMOTE_UNAVAILABLE"})}
            )
        return result


@witness("bare_not_ok_is_tool_error", ("D1.6",), "reads ok=false without a failure as a plain tool_error")
class _BareNotOkIsToolError(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if isinstance(data, Mapping) and data.get("ok") is False and not data.get("failure"):
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR"))  # The mistake: a lenient default.
        return super().parse_result(raw)


async def _rejects_unstructured(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    if isinstance(s.disposition, Success) and s.disposition.structured is None:
        s.finish(ReasonCode.INVALID_TOOL_RESULT)


@witness("over_strict_results", ("D1.2",), "rejects a successful result that carries no structured output")
class _OverStrictResults(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _rejects_unstructured}


@resolved_step
async def _raises_trust(p: Pipeline, s: CallState, r: Resolved) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    result = p.parse_result(s.raw_result)
    if isinstance(s.disposition, Success) and result is not None:
        content = [
            Envelope(trust=part.trust or result.trust or r.spec.output_trust, source=r.spec.name, text=part.text)
            for part in result.content
        ]
        s.disposition = s.disposition.model_copy(update={"content": content})


@witness("trust_raising", ("D1.3",), "takes a result's own trust label, even above the registered one")
class _TrustRaising(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _raises_trust}


@resolved_step
async def _skips_output_schema(p: Pipeline, s: CallState, r: Resolved) -> None:
    if r.spec.output_schema is not None:
        s.resolved = replace(r, spec=r.spec.model_copy(update={"output_schema": {}}))
    await STEP_TABLE[Step.NORMALIZE](p, s)


@witness("unvalidated_structure", ("D1.4",), "delivers structured output without checking the output schema")
class _UnvalidatedStructure(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _skips_output_schema}


async def _drops_structure(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    if isinstance(s.disposition, Success):
        content = [e.model_copy(update={"source": "tool"}) for e in s.disposition.content]
        s.disposition = s.disposition.model_copy(update={"structured": None, "content": content})


@witness("drops_structure", ("D1.5",), "drops structured output and names no source on delivered content")
class _DropsStructure(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _drops_structure}


# -- D2 -------------------------------------------------------------------------------------


class _LeakyContext(ExecutionContext):
    __slots__ = ("registry",)

    def __init__(self, parts: ContextParts, registry: object) -> None:
        super().__init__(parts)
        self.registry = registry


@witness("leaky_context", ("D2.1", "D2.2"), "adds a tenth member: the registry")
class _LeakyContextPipeline(Pipeline):
    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        return _LeakyContext(parts, self.registry)


class _StoreReachingWriter(FileArtifactWriter):
    def __init__(self, directory: Path, store: object) -> None:
        super().__init__(directory)
        self.store = store


@witness("store_reaching_artifacts", ("D2.2",), "the artifact writer exposes the store")
class _StoreReachingArtifacts(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _StoreReachingWriter(directory, self.store)


@witness("stale_identity", ("D2.3",), "hands the tool attempt 0 whatever the attempt")
class _StaleIdentity(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        return replace(parts, identity=parts.identity.model_copy(update={"attempt": 0}))


class _DeafSignal(CancellationSignal):
    def set(self) -> None:
        pass  # The tool watches a signal that never fires.

    def follow(self, scope: anyio.CancelScope) -> None:
        pass  # Nor when the deadline scope fires.


async def _deadline_as_crash(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.EXECUTE](p, s)
    if s.timed_out:
        s.timed_out, s.error = False, TimeoutError("deadline")


@witness("deadline_as_crash", ("D2.4",), "cancels at the deadline without setting the signal and calls it a crash")
class _DeadlineAsCrash(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _deadline_as_crash}

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        return replace(super().context_parts(s, r), cancellation=_DeafSignal())


@witness("all_credentials", ("D2.5",), "resolves every configured scope for every tool")
class _AllCredentials(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        every = ScopedCredentials(frozenset(self.config.credentials), self.config.credentials)
        return replace(super().context_parts(s, r), credential_resolver=every)


@witness("wrong_workspace", ("D2.6",), "hands tools the store directory as their workspace")
class _WrongWorkspace(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        return replace(super().context_parts(s, r), workspace=Path(self.config.store_dir))


class _MisdigestingWriter(FileArtifactWriter):
    async def write(self, name: str, data: bytes) -> ArtifactRef:
        ref = await super().write(name, data)
        return ref.model_copy(update={"sha256": hashlib.sha256(name.encode()).hexdigest()})


@witness("misdigests_artifacts", ("D2.8",), "reports the digest of an artifact's name instead of its bytes")
class _MisdigestsArtifacts(Pipeline):
    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        return _MisdigestingWriter(directory)


# -- D3 -------------------------------------------------------------------------------------


@witness("executes_before_claim", ("D3.1",), "runs step 8 (claim) after step 10 (execute)")
class _ExecutesBeforeClaim(Pipeline):
    steps = moved(Step.CLAIM, after=Step.EXECUTE)


async def _record_in_memory(p: Pipeline, s: CallState) -> None:
    existing = p.store.find_by_key(s.key)
    if existing is not None:
        s.invocation_id, s.recorded = existing.invocation_id, True


async def _claim_if_recorded(p: Pipeline, s: CallState) -> None:
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


async def _complete_successes_only(p: Pipeline, s: CallState) -> None:
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


async def _claims_terminal_rows(p: Pipeline, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    if InvocationStatus(row.status).is_terminal:
        p.store.update(s.invocation_id, {"status": InvocationStatus.RECORDED.value})
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("no_dedupe", ("D3.4", "D4.12"), "re-executes a replayed call whose row is already terminal")
class _NoDedupe(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _claims_terminal_rows}


async def _reruns_invalid_results(p: Pipeline, s: CallState) -> None:
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


async def _completes_without_requested(p: Pipeline, s: CallState) -> None:
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


async def _completed_twice(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    p.store.update(s.invocation_id, {}, [EventKind.COMPLETED])


@witness("double_completed", ("D3.7",), "emits tool_call.completed twice for an executed call")
class _DoubleCompleted(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _completed_twice}
