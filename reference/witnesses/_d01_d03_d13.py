"""Witnesses of decisions 1, 2, 3 and 13: results, the context, the steps, the outcome shape."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolproof.reference._context import CancellationSignal, ExecutionContext, FileArtifactWriter, ScopedCredentials
from toolproof.reference._pipeline import DISPOSITION, CallState, Pipeline
from toolproof.reference._tables import EventTable, dump_json
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
    ToolFailure,
    ToolResult,
    ToolSource,
    TrustLabel,
)

from ._registry import reorder, witness

# -- D1 -------------------------------------------------------------------------------------


@witness("status_honouring", ("D1.1",), "honours a status a result claims and drops fields it does not know")
class _StatusHonouring(Pipeline):
    @staticmethod
    def _parse_result(raw: Any) -> ToolResult | None:
        data = raw.model_dump() if hasattr(raw, "model_dump") else raw
        if not isinstance(data, Mapping):
            return None
        if data.get("status") == "DENIED":
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED"))
        return ToolResult.model_validate({k: v for k, v in data.items() if k in ToolResult.model_fields})


@witness("trusts_ok_flag", ("D1.2",), "believes ok=true over a failure, and files every failure as tool_error")
class _TrustsOkFlag(Pipeline):
    @staticmethod
    def _parse_result(raw: Any) -> ToolResult | None:
        data = dict(raw.model_dump() if hasattr(raw, "model_dump") else raw)
        if data.get("ok"):
            data.pop("failure", None)
        elif data.get("failure"):
            data["failure"] = {"kind": "ERROR", "detail": data["failure"].get("detail")}
        return Pipeline._parse_result(data)


@witness("over_strict_results", ("D1.2",), "rejects a successful result that carries no structured output")
class _OverStrictResults(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        await super().step_normalize(s)
        if isinstance(s.disposition, Success) and s.disposition.structured is None:
            s.finish(ReasonCode.INVALID_TOOL_RESULT)


@witness("trust_raising", ("D1.3",), "takes a result's own trust label, even above the registered one")
class _TrustRaising(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        await super().step_normalize(s)
        result = self._parse_result(s.raw_result)
        if isinstance(s.disposition, Success) and result is not None:
            assert s.spec is not None
            content = [
                Envelope(trust=part.trust or result.trust or s.spec.output_trust, source=s.spec.name, text=part.text)
                for part in result.content
            ]
            s.disposition = s.disposition.model_copy(update={"content": content})


@witness("unvalidated_structure", ("D1.4",), "delivers structured output without checking the output schema")
class _UnvalidatedStructure(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        assert s.spec is not None
        schema = s.spec.output_schema
        s.spec = s.spec.model_copy(update={"output_schema": {}}) if schema is not None else s.spec
        await super().step_normalize(s)


@witness("drops_structure", ("D1.5",), "drops structured output and names no source on delivered content")
class _DropsStructure(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        await super().step_normalize(s)
        if isinstance(s.disposition, Success):
            content = [e.model_copy(update={"source": "tool"}) for e in s.disposition.content]
            s.disposition = s.disposition.model_copy(update={"structured": None, "content": content})


# -- D2 -------------------------------------------------------------------------------------


class _LeakyContext(ExecutionContext):
    __slots__ = ("_registry",)
    _registry: object

    @property
    def registry(self) -> object:
        return self._registry


@witness("leaky_context", ("D2.1", "D2.2"), "adds a tenth member: the registry")
class _LeakyContextPipeline(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        leaky = _LeakyContext.__new__(_LeakyContext)
        for slot in ExecutionContext.__slots__:
            object.__setattr__(leaky, slot, getattr(s.context, slot))
        leaky._registry = self.registry
        s.context = leaky


class _StoreReachingWriter(FileArtifactWriter):
    def __init__(self, directory: Path, store: object) -> None:
        super().__init__(directory)
        self.store = store


@witness("store_reaching_artifacts", ("D2.2",), "the artifact writer exposes the store")
class _StoreReachingArtifacts(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        assert s.artifacts is not None
        s.artifacts = _StoreReachingWriter(s.artifacts._directory, self.store)
        s.context._artifacts = s.artifacts


@witness("stale_identity", ("D2.3",), "hands the tool attempt 0 whatever the attempt")
class _StaleIdentity(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        s.context._identity = s.context.identity.model_copy(update={"attempt": 0})


class _DeafSignal(CancellationSignal):
    def set(self) -> None:
        pass  # The tool watches a signal that never fires.


@witness("deadline_as_crash", ("D2.4",), "cancels at the deadline without setting the signal and calls it a crash")
class _DeadlineAsCrash(Pipeline):
    async def step_execute(self, s: CallState) -> None:
        assert s.context is not None
        s.context._cancellation = _DeafSignal()
        await super().step_execute(s)
        if s.timed_out:
            s.timed_out, s.error = False, TimeoutError("deadline")


@witness("all_credentials", ("D2.5",), "resolves every configured scope for every tool")
class _AllCredentials(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        s.context._credentials = ScopedCredentials(frozenset(self.config.credentials), self.config.credentials)


@witness("wrong_workspace", ("D2.6",), "hands tools the store directory as their workspace")
class _WrongWorkspace(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        s.context._workspace = Path(self.config.store_dir)


class _MisdigestingWriter(FileArtifactWriter):
    async def write(self, name: str, data: bytes) -> ArtifactRef:
        ref = await super().write(name, data)
        return ref.model_copy(update={"sha256": hashlib.sha256(name.encode()).hexdigest()})


@witness("misdigests_artifacts", ("D2.6",), "reports the digest of an artifact's name instead of its bytes")
class _MisdigestsArtifacts(Pipeline):
    async def step_prepare(self, s: CallState) -> None:
        await super().step_prepare(s)
        assert s.context is not None
        assert s.artifacts is not None
        s.artifacts = _MisdigestingWriter(s.artifacts._directory)
        s.context._artifacts = s.artifacts


# -- D3 -------------------------------------------------------------------------------------


@witness("executes_before_claim", ("D3.1",), "runs step 8 (claim) after step 10 (execute)")
class _ExecutesBeforeClaim(Pipeline):
    steps = reorder(Step.CLAIM, after=Step.EXECUTE)


@witness(
    "one_transaction", ("D3.1", "D3.2"), "holds the row back until step 13, as if one transaction spanned the call"
)
class _OneTransaction(Pipeline):
    # Everything up to step 13 stays in memory, which is what an uncommitted transaction looks like to a reader.
    async def step_record(self, s: CallState) -> None:
        existing = self.store.find_by_key(s.key)
        if existing is not None:
            s.invocation_id, s.recorded = existing.invocation_id, True

    async def step_claim(self, s: CallState) -> None:
        if s.recorded:
            await super().step_claim(s)
        s.attempt = max(s.attempt, 1)

    async def mark_effect(self, s: CallState) -> None:
        if s.recorded:
            await super().mark_effect(s)
        s.marked = True


@witness("validates_after_execute", ("D3.3",), "validates arguments only after running the tool")
class _ValidatesAfterExecute(Pipeline):
    steps = reorder(Step.VALIDATE, after=Step.EXECUTE)


@witness("no_dedupe", ("D3.4", "D4.12"), "re-executes a replayed call whose row is already terminal")
class _NoDedupe(Pipeline):
    async def step_claim(self, s: CallState) -> None:
        row = self.store.get(s.invocation_id)
        if InvocationStatus(row.status).is_terminal:
            self.store.update(s.invocation_id, {"status": InvocationStatus.RECORDED.value})
        await super().step_claim(s)


@witness("retries_invalid_results", ("D3.5",), "runs the tool again when its result is rejected")
class _RetriesInvalidResults(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        await super().step_normalize(s)
        if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.INVALID_TOOL_RESULT:
            s.disposition = None
            self.store.update(s.invocation_id, {"effect_sent_at": None})
            await self.step_execute(s)
            await super().step_normalize(s)


@witness("device_shortcut", ("D3.6",), "runs device and sandbox tools directly, outside the pipeline")
class _DeviceShortcut(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        found = self.registry.resolve(call.tool_name)
        if found is None or found[0].source not in (ToolSource.DEVICE, ToolSource.SANDBOX):
            return await super().run_call(request, call)
        spec, tool = found
        s = CallState(request=request, call=call)
        s.spec, s.tool, s.attempt = spec, tool, 1
        s.key = uuid.uuid4().hex
        await self.step_prepare(s)
        result = await tool.execute(dict(call.arguments), s.context)  # type: ignore[arg-type]
        return Success(
            invocation_id=s.invocation_id,
            content=[
                Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source=spec.name, text=p.text) for p in result.content
            ],
        )


@witness("no_requested_event_on_refusal", ("D3.7",), "writes a refused call's row without its requested event")
class _NoRequestedOnRefusal(Pipeline):
    async def step_complete(self, s: CallState) -> None:
        if s.recorded or s.leave_row:
            await super().step_complete(s)
            return
        assert s.disposition is not None
        row = self._row(s, InvocationStatus(s.disposition.status))
        row.reason_code = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
        row.disposition_json = DISPOSITION.dump_json(s.disposition).decode()
        self.store.insert(row, [EventKind.COMPLETED])


@witness("double_completed", ("D3.7",), "emits tool_call.completed twice for an executed call")
class _DoubleCompleted(Pipeline):
    async def step_normalize(self, s: CallState) -> None:
        await super().step_normalize(s)
        self.store.update(s.invocation_id, {}, [EventKind.COMPLETED])


# -- D13 ------------------------------------------------------------------------------------


class _DebugOutcome(Outcome):
    debug: str = ""


class _Rewrites(Pipeline):
    """Base for witnesses that rewrite the outcome they return (the row keeps the right one)."""

    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        disposition = await super().run_call(request, call)
        if isinstance(disposition, Outcome):
            return self.rewrite(disposition, CallState(request=request, call=call))
        return disposition


@witness("debug_outcome", ("D13.1",), "adds a seventh field, debug, to non-success outcomes")
class _DebugOutcomes(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return _DebugOutcome(**outcome.model_dump(), debug=f"while calling {s.call.tool_name}")


@witness("flipped_retryable", ("D13.2",), "returns retryable opposite to the table")
class _FlippedRetryable(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome.model_copy(update={"retryable": not outcome.retryable})


@witness("chatty_messages", ("D13.3",), "appends the tool name to the table's message")
class _ChattyMessages(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        return outcome.model_copy(update={"message": f"{outcome.message} ({s.call.tool_name})"})


@witness("narrates_remote_errors", ("D13.4",), "puts the remote error string in message")
class _NarratesRemoteErrors(_Rewrites):
    def rewrite(self, outcome: Outcome, s: CallState) -> Outcome:
        if outcome.external_detail is None:
            return outcome
        return outcome.model_copy(update={"message": outcome.external_detail.text, "external_detail": None})


@witness("row_disagrees", ("D13.5",), "records every non-success row as FAILED tool_error")
class _RowDisagrees(Pipeline):
    async def step_complete(self, s: CallState) -> None:
        await super().step_complete(s)
        if isinstance(s.disposition, Outcome) and not s.leave_row:
            self.store.update(s.invocation_id, {"status": "FAILED", "reason_code": ReasonCode.TOOL_ERROR.value})


@witness("payload_in_events", ("D13.6",), "copies arguments and remote detail into event data")
class _PayloadInEvents(Pipeline):
    async def step_complete(self, s: CallState) -> None:
        await super().step_complete(s)
        detail = s.disposition.external_detail if isinstance(s.disposition, Outcome) else None
        with self.store.transaction() as session:
            payload = {"arguments": s.call.arguments, "detail": detail.text if detail else None}
            session.add(
                EventTable(
                    run_id=s.request.run_id,
                    invocation_id=s.invocation_id,
                    kind="tool_call.debug",
                    data_json=dump_json(payload),
                    created_at=time.time(),
                )
            )
