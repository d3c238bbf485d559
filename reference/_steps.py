"""The fourteen named steps and the one loop that runs them in ``spec.STEPS`` order (decision 3).

Step ``X`` is the method ``step_X``; ``drive`` is the only caller of any of them. A call
that is held or suspended at step 7 continues later from step 8 through ``drive`` too.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from pydantic import BaseModel, TypeAdapter, ValidationError

from toolproof.spec import (
    BOUNDARY_CRASH_POINTS,
    CONTROL_ANSWER_ARGUMENT,
    FAILURE_REASONS,
    STEPS,
    Budget,
    Clock,
    ContentPart,
    ContextItem,
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
    Suspended,
    Tool,
    ToolKind,
    ToolResult,
    ToolSpec,
    TrustLabel,
    crash_now,
    domain_of,
    lowest_trust,
)

from ._context import CancellationSignal, ExecutionContext, FileArtifactWriter, ScopedCredentials
from ._excerpt import chunked, excerpt_parts
from ._keys import idempotency_key
from ._mcp import McpAdapter
from ._policy import Decision, breaker, decide
from ._registry import Registry
from ._store import DuplicateKey, Store
from ._tables import InvocationTable, dump_json, reason_or_none

DISPOSITION: TypeAdapter[Disposition] = TypeAdapter(Disposition)

_FINISHING = (Step.EXCERPT, Step.COMPLETE, Step.PUBLISH)
FULL_OUTPUT_ARTIFACT = "full-output.txt"
"""Name of the artifact that holds an excerpted output whole."""


@dataclass
class CallState:
    """Everything one call accumulates on its way through the steps."""

    request: StepRequest
    call: ProposedCall
    invocation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    spec: ToolSpec | None = None
    tool: Tool | None = None
    key: str = ""
    call_hash: str = ""
    """Tool name and canonical arguments: what 'identical' means to the breaker."""
    origin_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    argument_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    decision: Decision = Decision.ALLOW
    existing: InvocationTable | None = None
    """The row this call's key already has (a replay, or a call resumed from the store)."""
    recorded: bool = False
    """A row exists, so step 13 updates rather than inserts."""
    attempt: int = 0
    answer: str | None = None
    """The run's answer, for a resumed control call."""
    context: ExecutionContext | None = None
    artifacts: FileArtifactWriter | None = None
    marked: bool = False
    """mark_effect_sent() committed the watermark."""
    raw_result: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    disposition: Disposition | None = None
    """Set by the step that decides the call; steps up to 13 are then skipped."""
    leave_row: bool = False
    """The row already says all there is (a replay, a hold, another worker's lease): step 13 writes nothing."""

    def finish(self, reason: ReasonCode, detail: Envelope | None = None) -> None:
        """Decide a non-success outcome from the table."""
        self.disposition = Outcome.of(reason, self.invocation_id, detail)


@functools.lru_cache(maxsize=1024)
def _compiled(schema_json: str) -> Any:
    # What jsonschema.validate does on every call (pick the draft, check the schema, build the validator), once.
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def conforms(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``instance`` is valid under ``schema``; keyed by the schema's canonical JSON, so a changed schema
    is compiled anew."""
    return bool(_compiled(dump_json(schema)).is_valid(instance))


def call_hash(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """Digest of the tool name and the canonical arguments."""
    return hashlib.sha256(dump_json([tool_name, arguments]).encode()).hexdigest()


class Steps:
    """The steps; each is a method named after its ``Step`` value."""

    steps: tuple[Step, ...] = STEPS
    """The order the loop runs: the spec's order (witnesses reorder it)."""
    registry_class: type[Registry] = Registry
    """How tools are admitted (witnesses loosen it)."""
    mcp_class: type[McpAdapter] = McpAdapter
    """The MCP adapter (witnesses plant a defect in it)."""

    def __init__(
        self,
        *,
        config: InstanceConfig,
        registry: Registry,
        store: Store,
        worker_id: str,
        clock: Clock,
        mcp: McpAdapter | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.store = store
        self.worker_id = worker_id
        self.clock = clock
        self.mcp = mcp

    def lookup(self, run_id: str, name: str) -> tuple[ToolSpec, Tool] | None:
        """A registered builtin, or the tool ``name`` pinned in the session of ``run_id``, without asking a server."""
        found = self.registry.resolve(name)
        if found is None and self.mcp is not None and domain_of(name) == "mcp":
            return self.mcp.pinned(run_id, name)
        return found

    # -- the one function ---------------------------------------------------------------

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        """Run one proposed call through the fourteen steps and return its disposition."""
        return await self.drive(CallState(request=request, call=call))

    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        """Run ``state`` through the steps from ``start`` (default the first) to the last."""
        steps = self.steps if start is None else self.steps[self.steps.index(start) :]
        for step in steps:
            if state.disposition is not None and step not in _FINISHING:
                continue  # Decided: skip to excerpt (a no-op unless it succeeded), complete and publish.
            await getattr(self, f"step_{step.value}")(state)
            self.crash_point(step, state)
        assert state.disposition is not None  # Invariant: complete always leaves a disposition.
        return state.disposition

    def crash_point(self, step: Step, s: CallState) -> None:
        """Die here if the crash plan says so (recovery profile)."""
        plan = self.config.crash
        if plan is None or BOUNDARY_CRASH_POINTS.get(step) is not plan.point:
            return
        if plan.call_id is None or plan.call_id == s.call.call_id:
            crash_now(plan.mode)

    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        """Recovery's one question, answered by the watermark alone: may a dead worker's call have left its mark
        in a way a retry would repeat?"""
        return (
            row.effect_sent_at is not None and spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        )

    def state_from_row(self, row: InvocationTable) -> CallState:
        """Rebuild a call's state from its row alone (to resume it, here or in another worker)."""
        call = ProposedCall(call_id=row.call_id, tool_name=row.tool_name, arguments=json.loads(row.arguments_json))
        request = StepRequest(tenant=row.tenant, run_id=row.run_id, step_number=row.step_number, calls=[call])
        s = CallState(request=request, call=call, invocation_id=row.invocation_id, key=row.idempotency_key)
        s.call_hash, s.existing, s.recorded, s.attempt = row.call_hash, row, True, row.attempt
        s.origin_trust, s.argument_trust = row.origin_trust, row.argument_trust
        s.decision, s.marked = Decision(row.decision or Decision.ALLOW), row.effect_sent_at is not None
        found = self.lookup(row.run_id, row.tool_name)
        if found is None:
            s.finish(ReasonCode.UNKNOWN_TOOL)  # Registered when recorded, gone after a restart.
        else:
            s.spec, s.tool = found
        return s

    # -- 1-5: logic, nothing touches the world ------------------------------------------

    async def step_resolve(self, s: CallState) -> None:
        """1. Name to registered spec; unknown or ungrammatical names are denied; MCP names resolve in the
        session's pin, and a pinned tool its server withdrew or changed is unavailable."""
        found: tuple[ToolSpec, Tool] | ReasonCode | None
        if self.mcp is not None and domain_of(s.call.tool_name) == "mcp":
            found = await self.mcp.resolve(s.request.run_id, s.call.tool_name)
        else:
            found = self.registry.resolve(s.call.tool_name)
        if found is None:
            s.finish(ReasonCode.UNKNOWN_TOOL)
        elif isinstance(found, ReasonCode):
            s.finish(found)
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
        s.call_hash = call_hash(s.call.tool_name, s.call.arguments)

    async def step_validate(self, s: CallState) -> None:
        """2. Arguments against the input schema."""
        assert s.spec is not None
        if not conforms(s.call.arguments, s.spec.input_schema):
            s.finish(ReasonCode.INVALID_ARGUMENTS)

    async def step_label(self, s: CallState) -> None:
        """3. origin_trust over the request's context; argument_trust from carried provenance."""
        s.origin_trust = origin_trust(s.request.context)
        s.argument_trust = argument_trust(s.call, s.request.context, s.origin_trust)

    async def step_guard(self, s: CallState) -> None:
        """4. The one breaker; a replay of a recorded call is not another proposal."""
        s.existing = self.store.find_by_key(s.key)
        if s.existing is not None:
            return
        reason = self.trip(self.prior_identical(s))
        if reason is not None:
            s.finish(reason)

    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        """Status and reason of the earlier identical calls of this run."""
        rows = self.store.identical(s.request.run_id, s.call_hash)
        return [(InvocationStatus(row.status), reason_or_none(row.reason_code)) for row in rows]

    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        """The breaker's verdict on a new identical call."""
        return breaker(prior)

    async def step_decide(self, s: CallState) -> None:
        """5. Policy: deny, hold for approval, suspend (control), or allow."""
        assert s.spec is not None
        if s.existing is not None:
            s.decision = Decision(s.existing.decision or Decision.ALLOW)
            return
        s.decision = decide(s.spec, self.config, s.origin_trust, s.argument_trust)
        if s.decision is Decision.DENY:
            s.finish(ReasonCode.POLICY_DENIED)

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
            call_hash=s.call_hash,
            arguments_json=dump_json(s.call.arguments),
            status=status.value,
            decision=s.decision.value,
            origin_trust=s.origin_trust,
            argument_trust=s.argument_trust,
            created_at=self.clock.now(),
        )

    def _adopt(self, s: CallState, row: InvocationTable) -> None:
        s.existing, s.invocation_id, s.attempt, s.recorded = row, row.invocation_id, row.attempt, True

    async def step_record(self, s: CallState) -> None:
        """6. Insert the row; a replay adopts the row its key already has."""
        if s.existing is not None:
            self._adopt(s, s.existing)
            return
        try:
            self.store.insert(self._row(s, InvocationStatus.RECORDED), [EventKind.REQUESTED])
            s.recorded = True
        except DuplicateKey:  # Another submission of the same call won the insert.
            existing = self.store.find_by_key(s.key)
            assert existing is not None
            self._adopt(s, existing)

    async def step_hold(self, s: CallState) -> None:
        """7. Open an approval hold, or suspend a control call through the nullable marker."""
        row = s.existing
        if row is not None and row.status == InvocationStatus.AWAITING_APPROVAL:
            s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="approval"), True
        elif row is not None and row.suspended_at is not None:
            s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="control"), True
        elif row is not None:
            return  # Recorded earlier and never held: carry on to the claim.
        elif s.decision is Decision.APPROVAL:
            changes = {
                "status": InvocationStatus.AWAITING_APPROVAL.value,
                "hold_expires_at": self.clock.now() + self.config.approval_timeout_s,
            }
            self.store.update(s.invocation_id, changes, [EventKind.APPROVAL_REQUESTED])
            s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="approval"), True
        elif s.decision is Decision.CONTROL:
            # Invariant: suspension is the marker; the status column keeps a value it already had.
            self.store.update(s.invocation_id, {"suspended_at": self.clock.now()}, [EventKind.SUSPENDED])
            s.disposition, s.leave_row = Suspended(invocation_id=s.invocation_id, reason="control"), True

    async def step_claim(self, s: CallState) -> None:
        """8. Dedupe against a terminal row, else take the lease and go RUNNING."""
        row = self.store.get(s.invocation_id)
        status = InvocationStatus(row.status)
        if status.is_terminal:
            assert row.disposition_json is not None
            s.disposition, s.leave_row = DISPOSITION.validate_json(row.disposition_json), True
            return
        now = self.clock.now()
        if (
            status is InvocationStatus.RUNNING
            and (row.lease_expires_at or 0) > now
            and row.lease_owner != self.worker_id
        ):
            s.finish(ReasonCode.IN_PROGRESS)
            s.leave_row = True  # Not ours to complete.
            return
        if status is InvocationStatus.RUNNING and self.escaped(row, s.spec):
            # A dead worker's call that may have left its mark: never retried, whoever finds it.
            s.marked = True
            s.finish(ReasonCode.EFFECT_UNKNOWN)
            return
        attempt = row.attempt + 1
        claimed = self.store.claim(
            s.invocation_id,
            expect_status=status,
            expect_owner=row.lease_owner,
            changes={
                "status": InvocationStatus.RUNNING.value,
                "attempt": attempt,
                "lease_owner": self.worker_id,
                "lease_expires_at": now + self.config.lease_s,
                "started_at": now,
                "suspended_at": None,
            },
        )
        if not claimed:  # Another worker claimed it between our read and our write.
            s.finish(ReasonCode.IN_PROGRESS)
            s.leave_row = True
            return
        s.attempt = attempt

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
            deadline=_wall_clock() + s.spec.deadline_s,
            target=self.config.targets.get(s.spec.name),
            workspace=Path(self.config.workspace),
            artifact_writer=s.artifacts,
            credential_resolver=ScopedCredentials(s.spec.required_scopes, self.config.credentials),
            cancellation=CancellationSignal(),
            mark=mark,
        )

    async def mark_effect(self, s: CallState) -> None:
        """What the context's mark_effect_sent does: commit the watermark, then return."""
        self.store.mark_effect_sent(s.invocation_id, self.clock.now())
        s.marked = True

    async def step_execute(self, s: CallState) -> None:
        """10. The only step that touches the world; a TRANSIENT failure is retried under the same key."""
        await self._run_tool(s)
        while self._may_retry(s):
            s.attempt += 1
            self.store.update(s.invocation_id, {"attempt": s.attempt})
            s.raw_result, s.error, s.timed_out = None, None, False
            await self.step_prepare(s)
            await self._run_tool(s)

    def _may_retry(self, s: CallState) -> bool:
        assert s.spec is not None
        result = self._parse_result(s.raw_result)
        transient = result is not None and result.failure is not None and result.failure.kind == FailureKind.TRANSIENT
        escaped = s.marked and s.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        return transient and not escaped and s.attempt < self.config.max_attempts

    async def _run_tool(self, s: CallState) -> None:
        assert s.tool is not None
        assert s.context is not None
        signal = s.context.cancellation
        assert isinstance(signal, CancellationSignal)
        tool, context = s.tool, s.context
        arguments = dict(s.call.arguments)
        if s.answer is not None:
            arguments[CONTROL_ANSWER_ARGUMENT] = s.answer

        async with anyio.create_task_group() as group:

            async def watchdog() -> None:
                await anyio.sleep(max(0.0, context.deadline - _wall_clock()))
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
            remote = Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source="remote", text=detail) if detail else None
            s.finish(reason, remote)
            return
        # A tool without an output schema may not return structure: it cannot be validated.
        if result.structured is not None and (
            s.spec.output_schema is None or not conforms(result.structured, s.spec.output_schema)
        ):
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
        """12. Over the limit: head, marker and tail, each piece in its own envelope; the whole to an artifact."""
        if not isinstance(s.disposition, Success) or s.artifacts is None:
            return
        content = s.disposition.content
        limit = self.config.max_output_bytes
        if 4 * sum(len(e.text) for e in content) <= limit:
            return  # Even at four bytes a character it fits: no need to look closer.
        stream = s.artifacts.stream(FULL_OUTPUT_ARTIFACT)
        excerpt = excerpt_parts(((e.trust, e.source, chunked(e.text)) for e in content), limit, stream.write)
        if not excerpt.excerpted:
            stream.discard()
            return
        full = stream.finish()
        s.disposition = s.disposition.model_copy(
            update={"content": excerpt.envelopes, "artifacts": [*s.disposition.artifacts, full]}
        )

    # -- 13-14 -----------------------------------------------------------------------------

    async def step_complete(self, s: CallState) -> None:
        """13. Terminal status, outcome and events in one transaction."""
        if s.leave_row:
            return
        assert s.disposition is not None
        status = InvocationStatus(s.disposition.status)
        reason = s.disposition.reason_code.value if isinstance(s.disposition, Outcome) else None
        metrics = self.metrics_for(s, status)
        changes: dict[str, Any] = {
            "status": status.value,
            "reason_code": reason,
            "finished_at": self.clock.now(),
            "lease_owner": None,
            "lease_expires_at": None,
            "disposition_json": DISPOSITION.dump_json(s.disposition).decode(),
        }
        if s.recorded:
            self.store.update(s.invocation_id, changes, [EventKind.COMPLETED], metrics)
            return
        row = self._row(s, status)
        for name, value in changes.items():
            setattr(row, name, value)
        row.effect_sent_at = self.clock.now() if s.marked else None
        try:
            self.store.insert(row, [EventKind.REQUESTED, EventKind.COMPLETED], metrics)
        except DuplicateKey:
            # An identical call was already decided: answer with what it recorded.
            existing = self.store.find_by_key(s.key)
            assert existing is not None
            assert existing.disposition_json is not None
            s.disposition = DISPOSITION.validate_json(existing.disposition_json)

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        """Counters step 13 increments with the terminal status (so they commit with it)."""
        metrics = [Metric.INVOCATIONS.value]
        if status is InvocationStatus.UNCERTAIN:
            metrics.append(Metric.UNCERTAIN.value)
        if self._unmarked(s):
            metrics.append(Metric.EFFECT_UNMARKED.value)
        return metrics

    def _unmarked(self, s: CallState) -> bool:
        if s.spec is None or s.context is None:
            return False
        owes = s.spec.consequential and s.spec.idempotency is not IdempotencyClass.IDEMPOTENT
        ran = s.raw_result is not None or s.error is not None or s.timed_out
        return owes and ran and not s.marked and s.spec.kind is ToolKind.ACTION

    async def step_publish(self, s: CallState) -> None:
        """14. Return. Metrics and the breaker's counts were committed with step 13; nothing is held in memory."""


def origin_trust(context: Sequence[ContextItem]) -> TrustLabel:
    """Decision 11: the minimum label over the context items of the request (none: EXTERNAL_UNTRUSTED)."""
    return lowest_trust(*(item.trust for item in context))


def argument_trust(call: ProposedCall, context: Sequence[ContextItem], origin: TrustLabel) -> TrustLabel:
    """Decision 11: per argument, the minimum over its contributors; unknown provenance is EXTERNAL_UNTRUSTED.

    A call without arguments carries no argument-borne content and takes the origin's label.
    """
    labels = {item.id: item.trust for item in context}
    per_argument = [
        lowest_trust(*(labels.get(source, TrustLabel.EXTERNAL_UNTRUSTED) for source in call.provenance.get(name, [])))
        for name in call.arguments
    ]
    return min(per_argument) if per_argument else origin


def _wall_clock() -> float:
    # Deadlines are real time: a hanging tool must be cut off however the injected clock moves.
    return time.time()
