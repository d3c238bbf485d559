"""The instance: fourteen steps, run by one loop over ``spec.STEPS``, for one call at a time."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import jsonschema
from pydantic import TypeAdapter, ValidationError

from toolproof.spec import (
    CONTROL_ANSWER_ARGUMENT,
    FAILURE_REASONS,
    LOOP_THRESHOLD,
    REPEATED_DENIAL_THRESHOLD,
    RESERVED_DOMAINS,
    STEPS,
    Advertisement,
    Budget,
    CatalogChange,
    Clock,
    ConfigurationError,
    Disposition,
    Envelope,
    Event,
    EventKind,
    FailureKind,
    IdempotencyClass,
    Identity,
    InstanceConfig,
    InvocationRow,
    InvocationStatus,
    JsonObject,
    Metric,
    Outcome,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    Step,
    StepRequest,
    Success,
    Suspended,
    Tool,
    ToolKind,
    ToolResult,
    ToolSource,
    TrustLabel,
    canonical_json,
    domain_of,
    is_valid_name,
    lowest_trust,
)

from ._context import ArtifactWriter, Cancellation, Context, CredentialResolver, MarkToken
from ._store import Store

_KEY_VERSION = "toolproof-minimal/1"
_DISPOSITION: TypeAdapter[Disposition] = TypeAdapter(Disposition)
_DENIALS = {
    ReasonCode.POLICY_DENIED,
    ReasonCode.APPROVAL_DENIED,
    ReasonCode.APPROVAL_EXPIRED,
    ReasonCode.REPEATED_DENIAL,
}
_UNTRUSTED = TrustLabel.EXTERNAL_UNTRUSTED


def _canonical(value: object) -> str:
    # RFC 8785 (decision 10): a number is its double, so 1, 1.0 and 1e0 are one value, and -0.0 is 0.
    return canonical_json(value).decode()


def _sha256(value: object) -> str:
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


@dataclass
class _Call:
    """One call's way through the steps; what a step learns, later steps read."""

    request: StepRequest
    call: ProposedCall
    invocation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    tool: Tool | None = None
    key: str = ""
    call_hash: str = ""
    origin: TrustLabel = _UNTRUSTED  # Fail closed until step 3 says otherwise.
    argument: TrustLabel = _UNTRUSTED
    verdict: Literal["allow", "approve", "suspend"] = "allow"
    recorded: bool = False
    pending: list[EventKind] = field(default_factory=list)  # Emitted with the next persist step.
    hold_until: float | None = None
    answer: str | None = None
    attempt: int = 0
    context: Context | None = None
    cancel: anyio.Event | None = None
    marked: bool = False
    executed: bool = False
    raw: object = None
    raised: bool = False
    timed_out: bool = False
    reason: ReasonCode | None = None  # Set by the step that ends the call; step 13 records it.
    detail: Envelope | None = None
    success: Success | None = None
    disposition: Disposition | None = None


class MinimalInstance:
    """One running pipeline over one store."""

    def __init__(self, config: InstanceConfig, tools: dict[str, Tool], clock: Clock, store: Store) -> None:
        self._config, self._tools, self._clock, self._store = config, tools, clock, store
        self._validators = {name: jsonschema.Draft202012Validator(t.spec.input_schema) for name, t in tools.items()}
        self._metrics = dict.fromkeys((m.value for m in Metric), 0)

    # --- the loop -------------------------------------------------------------------------

    async def _run(self, c: _Call, start: Step = Step.RESOLVE) -> Disposition:
        for step in STEPS[STEPS.index(start) :]:
            if c.reason is not None and step not in (Step.COMPLETE, Step.PUBLISH):
                continue  # The call has its answer; only recording and publishing it remain.
            run_step: Callable[[_Call], Awaitable[Disposition | None]] = getattr(self, f"_{step.value}")
            early = await run_step(c)
            if early is not None:
                return early  # Held at step 7, or answered from the record at step 8.
        assert c.disposition is not None
        return c.disposition

    async def submit(self, step: StepRequest) -> list[Disposition]:
        # Sequential for every batch: parallelism is allowed, never required (decision 15).
        return [await self._run(_Call(step, call)) for call in step.calls]

    # --- steps 1 to 5: logic only, nothing touches the store or the world ----------------

    async def _resolve(self, c: _Call) -> None:
        name = c.call.tool_name
        c.tool = self._tools.get(name) if is_valid_name(name) else None
        version = c.tool.spec.version if c.tool else None
        r = c.request
        c.key = _sha256(
            [_KEY_VERSION, r.tenant, r.run_id, r.step_number, c.call.call_id, name, version, c.call.arguments]
        )
        c.call_hash = _sha256([name, c.call.arguments])
        if c.tool is None:
            c.reason = ReasonCode.UNKNOWN_TOOL

    async def _validate(self, c: _Call) -> None:
        if not self._validators[c.call.tool_name].is_valid(c.call.arguments):
            c.reason = ReasonCode.INVALID_ARGUMENTS

    async def _label(self, c: _Call) -> None:
        # An id names every item that bears it: a contributor counts as the lowest of their labels.
        trust: dict[str, TrustLabel] = {}
        for item in c.request.context:
            trust[item.id] = lowest_trust(item.trust, trust.get(item.id, item.trust))
        c.origin = lowest_trust(*(item.trust for item in c.request.context))
        # Provenance is carried, never inferred: an unknown argument or contributor is untrusted.
        per_argument = [
            lowest_trust(*(trust.get(i, _UNTRUSTED) for i in c.call.provenance.get(name, [])))
            for name in c.call.arguments
        ]
        c.argument = lowest_trust(*per_argument) if per_argument else c.origin

    async def _guard(self, c: _Call) -> None:
        prior = self._store.identical(c.request.run_id, c.call_hash, c.key)
        denials = sum(r["status"] == InvocationStatus.DENIED and r["reason_code"] in _DENIALS for r in prior)
        if any(r["status"] == InvocationStatus.UNCERTAIN for r in prior):
            c.reason = ReasonCode.PRIOR_UNCERTAIN
        elif denials >= REPEATED_DENIAL_THRESHOLD - 1:
            c.reason = ReasonCode.REPEATED_DENIAL
        elif len(prior) >= LOOP_THRESHOLD - 1:
            c.reason = ReasonCode.LOOP_DETECTED

    async def _decide(self, c: _Call) -> None:
        assert c.tool is not None
        spec = c.tool.spec
        if spec.name in self._config.denied_tools:
            c.reason = ReasonCode.POLICY_DENIED
        elif spec.kind is ToolKind.CONTROL:
            c.verdict = "suspend"
        elif spec.consequential and (
            _UNTRUSTED in (c.origin, c.argument) or not spec.required_scopes <= self._config.credentials.keys()
        ):
            c.verdict = "approve"

    # --- steps 6 to 8: each its own committed transaction ----------------------------------

    def _row(self, c: _Call, status: InvocationStatus) -> dict[str, Any]:
        r = c.request
        return {
            "invocation_id": c.invocation_id, "tenant": r.tenant, "run_id": r.run_id, "step_number": r.step_number,
            "call_id": c.call.call_id, "tool_name": c.call.tool_name,
            "tool_version": c.tool.spec.version if c.tool else None, "idempotency_key": c.key,
            "call_hash": c.call_hash, "status": status.value, "origin_trust": c.origin.value,
            "argument_trust": c.argument.value, "arguments": _canonical(c.call.arguments),
        }  # fmt: skip

    async def _record(self, c: _Call) -> None:
        existing = self._store.by_key(c.key)
        if existing is not None:  # A replay: the recorded row answers it from here on.
            c.invocation_id, c.recorded = existing["invocation_id"], True
            return
        with self._store.transaction():
            self._store.insert(self._row(c, InvocationStatus.RECORDED))
            self._store.emit(c.invocation_id, EventKind.REQUESTED)
        c.recorded = True

    async def _hold(self, c: _Call) -> Disposition | None:
        row = self._store.get(c.invocation_id)
        assert row is not None
        if row["status"] == InvocationStatus.AWAITING_APPROVAL:
            return Suspended(invocation_id=c.invocation_id, reason="approval")
        if row["suspended_at"] is not None:
            return Suspended(invocation_id=c.invocation_id, reason="control")
        if row["status"] != InvocationStatus.RECORDED:
            return None  # Already past the hold: step 8 answers it.
        if c.verdict == "approve":
            until = self._clock.now() + self._config.approval_timeout_s
            with self._store.transaction():
                self._store.update(c.invocation_id, status=InvocationStatus.AWAITING_APPROVAL.value, hold_until=until)
                self._store.emit(c.invocation_id, EventKind.APPROVAL_REQUESTED)
            return Suspended(invocation_id=c.invocation_id, reason="approval")
        if c.verdict == "suspend":
            with self._store.transaction():
                self._store.update(c.invocation_id, suspended_at=self._clock.now())
                self._store.emit(c.invocation_id, EventKind.SUSPENDED)
            return Suspended(invocation_id=c.invocation_id, reason="control")
        return None

    async def _claim(self, c: _Call) -> Disposition | None:
        row = self._store.get(c.invocation_id)
        assert row is not None
        if InvocationStatus(row["status"]).is_terminal:
            return _DISPOSITION.validate_json(row["disposition"])  # Dedupe: the recorded answer, nothing runs.
        if row["status"] == InvocationStatus.RUNNING:
            return Outcome.of(ReasonCode.IN_PROGRESS, c.invocation_id)
        c.attempt = 1
        with self._store.transaction():
            self._store.emit(c.invocation_id, *c.pending)
            running = InvocationStatus.RUNNING.value
            self._store.update(c.invocation_id, status=running, attempt=1, suspended_at=None, hold_until=None)
            self._store.emit(c.invocation_id, EventKind.STARTED)
        c.pending = []
        return None

    # --- steps 9 to 12 -----------------------------------------------------------------------

    async def _prepare(self, c: _Call) -> None:
        assert c.tool is not None
        spec, r = c.tool.spec, c.request
        identity = Identity(
            tenant=r.tenant, run_id=r.run_id, step_number=r.step_number, call_id=c.call.call_id,
            invocation_id=c.invocation_id, tool_name=spec.name, tool_version=spec.version, attempt=c.attempt,
            idempotency_key=c.key,
        )  # fmt: skip
        granted = {s: v for s, v in self._config.credentials.items() if s in spec.required_scopes}

        def mark() -> None:
            self._store.mark_effect_sent(c.invocation_id, self._clock.now())
            c.marked = True

        c.cancel = anyio.Event()
        c.context = Context(
            identity, Budget(max_output_bytes=self._config.max_output_bytes), time.time() + spec.deadline_s,
            self._config.targets.get(spec.name), self._config.workspace,
            ArtifactWriter(self._config.store_dir / "artifacts" / c.invocation_id), CredentialResolver(granted),
            Cancellation(c.cancel), MarkToken(mark),
        )  # fmt: skip

    async def _execute(self, c: _Call) -> None:
        assert c.tool is not None
        while True:
            await self._attempt(c)
            # A TRANSIENT failure gets another execution in this step, under the same key, unless it may have acted.
            transient = (
                isinstance(c.raw, ToolResult) and c.raw.failure is not None and c.raw.failure.kind == "TRANSIENT"
            )
            unsafe = c.marked and c.tool.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
            if not transient or unsafe or c.attempt >= self._config.max_attempts:
                return
            c.attempt += 1
            with self._store.transaction():
                self._store.update(c.invocation_id, attempt=c.attempt)
            await self._prepare(c)

    async def _attempt(self, c: _Call) -> None:
        assert c.tool is not None
        assert c.context is not None
        assert c.cancel is not None
        tool, context, cancel = c.tool, c.context, c.cancel
        arguments: JsonObject = dict(c.call.arguments)
        if c.answer is not None:
            arguments[CONTROL_ANSWER_ARGUMENT] = c.answer
        c.executed, c.raised, c.timed_out, c.raw = True, False, False, None
        try:
            async with anyio.create_task_group() as group:

                async def run() -> None:
                    try:
                        c.raw = await tool.execute(arguments, context)
                    except Exception:
                        c.raised = True
                    group.cancel_scope.cancel()

                async def deadline() -> None:
                    await anyio.sleep(tool.spec.deadline_s)
                    c.timed_out = True
                    cancel.set()  # The signal is set before the tool is cancelled, so it sees why.
                    group.cancel_scope.cancel()

                group.start_soon(run)
                group.start_soon(deadline)
        finally:
            context._mark.close()  # A mark after the attempt ended is refused; the table keeps nothing of the call.

    async def _normalize(self, c: _Call) -> None:
        assert c.tool is not None
        spec = c.tool.spec
        if c.raised or c.timed_out:
            if c.marked and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
                c.reason = ReasonCode.EFFECT_UNKNOWN
            else:
                c.reason = ReasonCode.DEADLINE_EXCEEDED if c.timed_out else ReasonCode.TOOL_CRASHED
            return
        try:  # Strictly, from plain data: a ToolResult built around its validators is checked too.
            result = ToolResult.model_validate(c.raw.model_dump() if isinstance(c.raw, ToolResult) else c.raw)
        except ValidationError:
            c.reason = ReasonCode.INVALID_TOOL_RESULT
            return
        if result.failure is not None:
            c.reason = FAILURE_REASONS[FailureKind(result.failure.kind)]
            if result.failure.detail is not None:
                c.detail = Envelope(trust=_UNTRUSTED, source="remote", text=result.failure.detail)
            return
        if result.structured is not None and (
            spec.output_schema is None
            or not jsonschema.Draft202012Validator(spec.output_schema).is_valid(result.structured)
        ):
            c.reason = ReasonCode.INVALID_TOOL_RESULT
            return
        # A result may only lower its label; device, sandbox and MCP output is never above EXTERNAL_UNTRUSTED.
        ceiling = spec.output_trust if spec.source is ToolSource.BUILTIN else _UNTRUSTED
        whole = lowest_trust(ceiling, result.trust) if result.trust else ceiling
        content = [
            Envelope(trust=lowest_trust(whole, part.trust) if part.trust else whole, source=spec.name, text=part.text)
            for part in result.content
        ]
        c.success = Success(
            invocation_id=c.invocation_id, content=content, structured=result.structured, artifacts=result.artifacts
        )

    async def _excerpt(self, c: _Call) -> None:
        """Not implemented: output is delivered whole, whatever its size (see expectations.toml)."""

    # --- steps 13 and 14 -----------------------------------------------------------------------

    async def _complete(self, c: _Call) -> Disposition | None:
        if not c.recorded and (existing := self._store.by_key(c.key)) is not None:
            c.invocation_id, c.recorded = existing["invocation_id"], True  # A replay of a refused call.
            if InvocationStatus(existing["status"]).is_terminal:
                return _DISPOSITION.validate_json(existing["disposition"])
        if c.reason is None:
            assert c.success is not None
            c.disposition = c.success
        else:
            c.disposition = Outcome.of(c.reason, c.invocation_id, c.detail)
        with self._store.transaction():
            if not c.recorded:  # Refused before step 6: recorded here, so every proposal leaves a row.
                self._store.insert(self._row(c, InvocationStatus.RECORDED))
                self._store.emit(c.invocation_id, EventKind.REQUESTED)
            self._store.emit(c.invocation_id, *c.pending)
            self._store.update(
                c.invocation_id,
                status=InvocationStatus(c.disposition.status).value,
                reason_code=c.reason.value if c.reason else None,
                disposition=_DISPOSITION.dump_json(c.disposition).decode(),
            )
            self._store.emit(c.invocation_id, EventKind.COMPLETED)
        c.pending = []
        return None

    async def _publish(self, c: _Call) -> None:
        self._metrics[Metric.INVOCATIONS] += 1
        if c.disposition is not None and c.disposition.status == InvocationStatus.UNCERTAIN:
            self._metrics[Metric.UNCERTAIN] += 1
        owes_watermark = (
            c.tool is not None
            and c.tool.spec.consequential
            and c.tool.spec.idempotency is not IdempotencyClass.IDEMPOTENT
        )
        if c.executed and owes_watermark and not c.marked:
            self._metrics[Metric.EFFECT_UNMARKED] += 1  # The production flag for a tool that skipped its watermark.

    # --- answering holds ------------------------------------------------------------------------

    def _reload(self, invocation_id: str, status: InvocationStatus, suspended: bool) -> _Call:
        row = self._store.get(invocation_id)
        if row is None or row["status"] != status or (row["suspended_at"] is not None) != suspended:
            what = "suspended" if suspended else "awaiting approval"
            raise ConfigurationError(f"invocation_id={invocation_id!r} is not {what}; nothing to answer")
        call = ProposedCall(call_id=row["call_id"], tool_name=row["tool_name"], arguments=json.loads(row["arguments"]))
        request = StepRequest(tenant=row["tenant"], run_id=row["run_id"], step_number=row["step_number"], calls=[call])
        c = _Call(
            request,
            call,
            invocation_id=invocation_id,
            tool=self._tools.get(row["tool_name"]),
            key=row["idempotency_key"],
            call_hash=row["call_hash"],
            origin=TrustLabel(row["origin_trust"]),
            argument=TrustLabel(row["argument_trust"]),
            recorded=True,
            marked=row["effect_sent_at"] is not None,
            hold_until=row["hold_until"],
        )
        if c.tool is None:
            c.reason = ReasonCode.UNKNOWN_TOOL  # Its tool is gone since the restart.
        return c

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        c = self._reload(invocation_id, InvocationStatus.AWAITING_APPROVAL, suspended=False)
        c.pending.append(EventKind.APPROVAL_RESOLVED)
        if c.hold_until is not None and self._clock.now() >= c.hold_until:
            c.reason = ReasonCode.APPROVAL_EXPIRED
        elif not approved:
            c.reason = ReasonCode.APPROVAL_DENIED
        return await self._run(c, Step.CLAIM)

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        c = self._reload(invocation_id, InvocationStatus.RECORDED, suspended=True)
        c.answer = answer
        return await self._run(c, Step.CLAIM)

    async def sweep(self) -> list[Disposition]:
        # Only approval holds: suspended control calls are RECORDED, never AWAITING_APPROVAL, so the
        # predicate excludes them. Orphaned RUNNING rows are the recovery profile's, which we do not claim.
        expired = []
        for row in self._store.expired_holds(self._clock.now()):
            c = self._reload(row["invocation_id"], InvocationStatus.AWAITING_APPROVAL, suspended=False)
            c.pending.append(EventKind.APPROVAL_RESOLVED)
            c.reason = ReasonCode.APPROVAL_EXPIRED
            expired.append(await self._run(c, Step.COMPLETE))
        return expired

    # --- reading back ---------------------------------------------------------------------------

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        return self._store.rows(run_id)

    async def events(self, run_id: str) -> list[Event]:
        return self._store.events(run_id)

    async def metrics(self) -> dict[str, int]:
        return dict(self._metrics)

    async def store_tables(self) -> list[str]:
        return self._store.tables()

    # --- profiles we do not claim ---------------------------------------------------------------

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        raise ConfigurationError("bridge not claimed: toolproof-minimal does not run scripts (decision 17)")

    async def advertise(self, run_id: str) -> Advertisement:
        raise ConfigurationError("mcp not claimed: toolproof-minimal has no MCP adapter (decisions 5 to 9)")

    async def catalog_history(self) -> list[CatalogChange]:
        raise ConfigurationError("mcp not claimed: toolproof-minimal keeps no catalog history (decision 18)")


def registry(tools: Sequence[Tool]) -> dict[str, Tool]:
    """Name -> tool, refusing what decision 5 forbids at startup."""
    found: dict[str, Tool] = {}
    for tool in tools:
        name = tool.spec.name
        if not is_valid_name(name):
            raise ConfigurationError(f"tool name={name!r} does not match domain.name (spec.NAME_GRAMMAR); rename it")
        if domain_of(name) in RESERVED_DOMAINS:  # Any configured source: those domains are the adapters' own.
            raise ConfigurationError(
                f"{tool.spec.source.value} tool name={name!r} is in a reserved domain {sorted(RESERVED_DOMAINS)}; rename it"
            )
        if name in found:
            raise ConfigurationError(f"two tools are registered as name={name!r}; register each name once")
        try:
            jsonschema.Draft202012Validator.check_schema(tool.spec.input_schema)
        except jsonschema.SchemaError as exc:
            raise ConfigurationError(f"tool name={name!r} has an invalid input_schema: {exc.message}") from None
        found[name] = tool
    return found
