"""The one pipeline function: fourteen named steps run by one loop over ``spec.STEPS`` (decision 3).

Step ``X`` is the method ``step_X``; ``run_call`` is the only caller of any of them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from pydantic import BaseModel, TypeAdapter, ValidationError

from toolproof.spec import (
    FAILURE_REASONS,
    STEPS,
    Budget,
    ContentPart,
    Disposition,
    Envelope,
    EventKind,
    FailureKind,
    IdempotencyClass,
    Identity,
    InstanceConfig,
    InvocationStatus,
    Metric,
    Outcome,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
    Success,
    Tool,
    ToolResult,
    ToolSpec,
    TrustLabel,
    lowest_trust,
)

from ._context import CancellationSignal, ExecutionContext, FileArtifactWriter, ScopedCredentials
from ._keys import idempotency_key
from ._registry import Registry
from ._store import DuplicateKey, InvocationTable, Store, dump_json

DISPOSITION: TypeAdapter[Disposition] = TypeAdapter(Disposition)

_FINISHING = (Step.COMPLETE, Step.PUBLISH)


@dataclass
class CallState:
    """Everything one call accumulates on its way through the steps."""

    request: StepRequest
    call: ProposedCall
    invocation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    spec: ToolSpec | None = None
    tool: Tool | None = None
    key: str = ""
    origin_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    argument_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    recorded: bool = False
    """Step 6 wrote the row (so step 13 updates rather than inserts)."""
    attempt: int = 0
    context: ExecutionContext | None = None
    artifacts: FileArtifactWriter | None = None
    marked: bool = False
    """mark_effect_sent() committed the watermark."""
    raw_result: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    disposition: Disposition | None = None
    """Set by the step that decides the call; steps up to 13 are then skipped."""
    replayed: bool = False
    """Step 8 answered from a terminal row; step 13 writes nothing."""

    def finish(self, reason: ReasonCode, detail: Envelope | None = None) -> None:
        """Decide a non-success outcome from the table."""
        self.disposition = Outcome.of(reason, self.invocation_id, detail)


class Pipeline:
    """The reference pipeline; each step is a method named after its ``Step`` value."""

    steps: tuple[Step, ...] = STEPS
    """The order the loop runs; spec's order (witnesses reorder it)."""

    def __init__(self, *, config: InstanceConfig, registry: Registry, store: Store, worker_id: str) -> None:
        self.config = config
        self.registry = registry
        self.store = store
        self.worker_id = worker_id

    # -- the one function ---------------------------------------------------------------

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        """Run one proposed call through the fourteen steps and return its disposition."""
        state = CallState(request=request, call=call)
        for step in self.steps:
            if state.disposition is not None and step not in _FINISHING:
                continue  # Decided early: skip straight to complete and publish.
            await getattr(self, f"step_{step.value}")(state)
        assert state.disposition is not None  # Invariant: complete always leaves a disposition.
        return state.disposition

    # -- 1-5: logic, nothing touches the world ------------------------------------------

    async def step_resolve(self, s: CallState) -> None:
        """1. Name to registered spec; unknown or ungrammatical names are denied."""
        found = self.registry.resolve(s.call.tool_name)
        if found is None:
            s.finish(ReasonCode.UNKNOWN_TOOL)
        else:
            s.spec, s.tool = found
        s.key = idempotency_key(
            tenant=s.request.tenant,
            run_id=s.request.run_id,
            step_number=s.request.step_number,
            call_id=s.call.call_id,
            tool_name=s.call.tool_name,
            tool_version=s.spec.version if s.spec else None,
            arguments=s.call.arguments,
        )

    async def step_validate(self, s: CallState) -> None:
        """2. Arguments against the input schema."""
        assert s.spec is not None
        try:
            jsonschema.validate(s.call.arguments, s.spec.input_schema)
        except jsonschema.ValidationError:
            s.finish(ReasonCode.INVALID_ARGUMENTS)

    async def step_label(self, s: CallState) -> None:
        """3. origin_trust over the context; argument_trust from carried provenance."""
        labels = {item.id: item.trust for item in s.request.context}
        s.origin_trust = lowest_trust(*labels.values())
        per_argument = []
        for name in s.call.arguments:
            sources = s.call.provenance.get(name, [])
            # Unknown provenance, or a source we cannot see, stays EXTERNAL_UNTRUSTED.
            per_argument.append(
                lowest_trust(*(labels.get(src, TrustLabel.EXTERNAL_UNTRUSTED) for src in sources))
                if sources
                else TrustLabel.EXTERNAL_UNTRUSTED
            )
        s.argument_trust = min(per_argument) if per_argument else s.origin_trust

    async def step_guard(self, s: CallState) -> None:
        """4. The breaker, budget and deadline admission (issue: core rules)."""

    async def step_decide(self, s: CallState) -> None:
        """5. Policy (issue: core rules); allow by default."""

    # -- 6-8: persistence ---------------------------------------------------------------

    def _row(self, s: CallState, status: InvocationStatus) -> InvocationTable:
        return InvocationTable(
            invocation_id=s.invocation_id,
            tenant=s.request.tenant,
            run_id=s.request.run_id,
            step_number=s.request.step_number,
            call_id=s.call.call_id,
            tool_name=s.spec.name if s.spec else s.call.tool_name,
            tool_version=s.spec.version if s.spec else None,
            idempotency_key=s.key,
            arguments_json=dump_json(s.call.arguments),
            status=status.value,
            origin_trust=s.origin_trust.value,
            argument_trust=s.argument_trust.value,
            created_at=time.time(),
        )

    async def step_record(self, s: CallState) -> None:
        """6. Insert the row; a replay finds the row its key already has."""
        existing = self.store.find_by_key(s.key)
        if existing is not None:
            s.invocation_id, s.attempt, s.recorded = existing.invocation_id, existing.attempt, True
            return
        try:
            self.store.insert(self._row(s, InvocationStatus.RECORDED), [EventKind.REQUESTED])
        except DuplicateKey:
            existing = self.store.find_by_key(s.key)
            assert existing is not None
            s.invocation_id, s.attempt = existing.invocation_id, existing.attempt
        s.recorded = True

    async def step_hold(self, s: CallState) -> None:
        """7. Approval holds and control suspension (issue: core rules)."""

    async def step_claim(self, s: CallState) -> None:
        """8. Dedupe against a terminal row, else take the lease and go RUNNING."""
        row = self.store.get(s.invocation_id)
        status = InvocationStatus(row.status)
        if status.is_terminal:
            assert row.disposition_json is not None
            s.disposition = DISPOSITION.validate_json(row.disposition_json)
            s.replayed = True
            return
        now = time.time()
        if (
            status is InvocationStatus.RUNNING
            and (row.lease_expires_at or 0) > now
            and row.lease_owner != self.worker_id
        ):
            s.finish(ReasonCode.IN_PROGRESS)
            s.replayed = True  # Not ours to complete.
            return
        s.attempt = row.attempt + 1
        self.store.update(
            s.invocation_id,
            {
                "status": InvocationStatus.RUNNING.value,
                "attempt": s.attempt,
                "lease_owner": self.worker_id,
                "lease_expires_at": now + self.config.lease_s,
                "started_at": now,
            },
            [EventKind.STARTED],
        )

    # -- 9-12: build, run, judge -------------------------------------------------------

    async def step_prepare(self, s: CallState) -> None:
        """9. Build the ToolExecutionContext."""
        assert s.spec is not None
        s.artifacts = FileArtifactWriter(Path(self.config.store_dir) / "artifacts" / s.invocation_id / str(s.attempt))

        async def mark() -> None:
            await self.mark_effect(s)

        s.context = ExecutionContext(
            identity=Identity(
                tenant=s.request.tenant,
                run_id=s.request.run_id,
                step_number=s.request.step_number,
                call_id=s.call.call_id,
                invocation_id=s.invocation_id,
                tool_name=s.spec.name,
                tool_version=s.spec.version,
                attempt=s.attempt,
                idempotency_key=s.key,
            ),
            budget=Budget(max_output_bytes=self.config.max_output_bytes),
            deadline=time.time() + s.spec.deadline_s,
            target=self.config.targets.get(s.spec.name),
            workspace=Path(self.config.workspace),
            artifact_writer=s.artifacts,
            credential_resolver=ScopedCredentials(s.spec.required_scopes, self.config.credentials),
            cancellation=CancellationSignal(),
            mark=mark,
        )

    async def mark_effect(self, s: CallState) -> None:
        """What the context's mark_effect_sent does: commit the watermark, then return."""
        self.store.mark_effect_sent(s.invocation_id)
        s.marked = True

    async def step_execute(self, s: CallState) -> None:
        """10. The only step that touches the world; cancelled at the deadline."""
        assert s.tool is not None
        assert s.spec is not None
        assert s.context is not None
        signal = s.context.cancellation
        assert isinstance(signal, CancellationSignal)
        tool, context, arguments = s.tool, s.context, dict(s.call.arguments)

        async with anyio.create_task_group() as group:

            async def watchdog() -> None:
                await anyio.sleep(max(0.0, context.deadline - time.time()))
                s.timed_out = True
                signal.set()
                group.cancel_scope.cancel()

            group.start_soon(watchdog)
            try:
                s.raw_result = await tool.execute(arguments, context)
            except Exception as exc:  # A tool's exception is data for step 11, never a pipeline crash.
                s.error = exc
            group.cancel_scope.cancel()

    async def step_normalize(self, s: CallState) -> None:
        """11. Judge what the tool did; a tool never sets the status."""
        assert s.spec is not None
        if s.timed_out or s.error is not None:
            if s.marked and s.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
                s.finish(ReasonCode.EFFECT_UNKNOWN)
            else:
                s.finish(ReasonCode.DEADLINE_EXCEEDED if s.timed_out else ReasonCode.TOOL_CRASHED)
            return
        result = self._parse_result(s.raw_result)
        if result is None:
            s.finish(ReasonCode.INVALID_TOOL_RESULT)
            return
        if result.failure is not None:
            reason = FAILURE_REASONS[FailureKind(result.failure.kind)]
            detail = result.failure.detail
            s.finish(
                reason, Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source="remote", text=detail) if detail else None
            )
            return
        if result.structured is not None:
            if s.spec.output_schema is None:
                s.finish(ReasonCode.INVALID_TOOL_RESULT)
                return
            try:
                jsonschema.validate(result.structured, s.spec.output_schema)
            except jsonschema.ValidationError:
                s.finish(ReasonCode.INVALID_TOOL_RESULT)
                return
        floor = s.spec.output_trust if result.trust is None else min(s.spec.output_trust, result.trust)
        s.disposition = Success(
            invocation_id=s.invocation_id,
            content=[self._envelope(part, floor, s.spec.name) for part in result.content],
            structured=result.structured,
            artifacts=list(result.artifacts),
        )

    @staticmethod
    def _parse_result(raw: Any) -> ToolResult | None:
        # Revalidate even a model instance: a ToolResult subclass could smuggle a status field.
        if isinstance(raw, BaseModel):
            data = raw.model_dump()
        elif isinstance(raw, Mapping):
            data = dict(raw)
        else:
            return None
        try:
            return ToolResult.model_validate(data)
        except ValidationError:
            return None

    @staticmethod
    def _envelope(part: ContentPart, floor: TrustLabel, source: str) -> Envelope:
        return Envelope(trust=floor if part.trust is None else min(floor, part.trust), source=source, text=part.text)

    async def step_excerpt(self, s: CallState) -> None:
        """12. Head-and-tail excerpt of large output (issue: core rules)."""

    # -- 13-14 -----------------------------------------------------------------------------

    async def step_complete(self, s: CallState) -> None:
        """13. Terminal status, outcome and events in one transaction."""
        if s.replayed:
            return
        assert s.disposition is not None
        status = InvocationStatus(s.disposition.status)
        reason = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
        metrics = [Metric.INVOCATIONS.value]
        if status is InvocationStatus.UNCERTAIN:
            metrics.append(Metric.UNCERTAIN.value)
        if s.spec is not None and s.context is not None and self._unmarked(s):
            metrics.append(Metric.EFFECT_UNMARKED.value)
        changes = {
            "status": status.value,
            "reason_code": reason,
            "finished_at": time.time(),
            "lease_owner": None,
            "lease_expires_at": None,
            "disposition_json": DISPOSITION.dump_json(s.disposition).decode(),
        }
        if s.recorded:
            self.store.update(s.invocation_id, changes, [EventKind.COMPLETED], metrics)
            return
        row = self._row(s, status)
        row.effect_sent_at = time.time() if s.marked else None
        for name, value in changes.items():
            setattr(row, name, value)
        try:
            self.store.insert(row, [EventKind.REQUESTED, EventKind.COMPLETED], metrics)
        except DuplicateKey:
            # An identical call was already decided: answer with what it recorded.
            existing = self.store.find_by_key(s.key)
            assert existing is not None
            assert existing.disposition_json is not None
            s.disposition = DISPOSITION.validate_json(existing.disposition_json)

    def _unmarked(self, s: CallState) -> bool:
        assert s.spec is not None
        owes = s.spec.consequential and s.spec.idempotency is not IdempotencyClass.IDEMPOTENT
        ran = s.raw_result is not None or s.error is not None or s.timed_out
        return owes and ran and not s.marked

    async def step_publish(self, s: CallState) -> None:
        """14. Metrics are written with step 13; breaker update (issue: core rules); return."""
