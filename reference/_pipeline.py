"""The reference pipeline: the one loop over the step table, the hooks the steps call, and what happens to a
call between and after them.

A batch, an approval, a resumed control call and a sweep all go through ``Pipeline.drive``:
there is one pipeline function and every entry re-enters it. Witnesses subclass ``Pipeline`` and
replace a step-table entry or override one public hook.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import anyio

from toolproof.spec import (
    BOUNDARY_CRASH_POINTS,
    STEPS,
    Budget,
    Clock,
    ConfigurationError,
    Disposition,
    EventKind,
    FaultPoint,
    IdempotencyClass,
    Identity,
    InstanceConfig,
    InvocationStatus,
    Metric,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    SideEffect,
    Step,
    StepRequest,
    StoreFault,
    Tool,
    ToolExecutionContext,
    ToolKind,
    ToolResult,
    ToolSource,
    ToolSpec,
    crash_now,
    domain_of,
)

from ._bridge import Bridge
from ._context import (
    CancellationSignal,
    ContextParts,
    EffectMark,
    ExecutionContext,
    FileArtifactWriter,
    ScopedCredentials,
)
from ._execute import parse_result, wall_clock
from ._host import StepFunction
from ._logic import conforms
from ._mcp import McpAdapter
from ._policy import Decision, breaker
from ._registry import Registry
from ._state import CallState, Resolved
from ._steps import FINISHING, PERSIST_FAULT_POINTS, STEP_TABLE, step_table
from ._store import Store
from ._tables import InvocationTable, reason_or_none


def structure_accepted(spec: ToolSpec, result: ToolResult) -> bool:
    """Whether a successful result's structure (or its absence) may be delivered: the reference's step 11 rule
    (D1.4 for every tool; D8.11, D8.12 for MCP tools), for ``toolproof check-server`` too."""
    if result.structured is None:
        return spec.output_schema is None or spec.source is not ToolSource.MCP
    return spec.output_schema is not None and conforms(result.structured, spec.output_schema)


class Pipeline:
    """The reference pipeline; witnesses subclass it to plant one defect."""

    steps: ClassVar[Mapping[Step, StepFunction]] = STEP_TABLE
    """The step table (witnesses replace an entry); checked against ``spec.STEPS`` when a subclass is defined."""
    registry_class: ClassVar[type[Registry]] = Registry
    """How tools are admitted (witnesses loosen it)."""
    mcp_class: ClassVar[type[McpAdapter]] = McpAdapter
    """The MCP adapter (witnesses plant a defect in it)."""
    bridge_class: ClassVar[type[Bridge]] = Bridge
    """The bridge that runs scripts (witnesses replace it)."""

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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.steps = step_table(cls.steps, owner=cls.__qualname__)

    # -- the one function ---------------------------------------------------------------

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        """Run one proposed call through the fourteen steps and return its disposition."""
        return await self.drive(CallState(request=request, call=call))

    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        """Run ``state`` through the step table in ``spec.STEPS`` order, from ``start`` (default the first)."""
        for step in STEPS if start is None else STEPS[STEPS.index(start) :]:
            if state.disposition is not None and step not in FINISHING:
                if step is Step.LABEL:
                    # Refused at resolve or validate: the row still records the labels its request carried (pure
                    # logic, so no crash point), never the defaults a reader would take for a judgement.
                    await self.steps[step](self, state)
                continue  # Decided: skip to excerpt (a no-op unless it succeeded), complete and publish.
            point = PERSIST_FAULT_POINTS.get(step)
            if point is None:
                await self.steps[step](self, state)
            else:
                with self.store.faults.at(point, state.call.call_id):  # The step's writes are this point's.
                    await self.steps[step](self, state)
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

    def lookup(self, run_id: str, name: str) -> tuple[ToolSpec, Tool] | None:
        """A registered builtin, or the tool ``name`` pinned in the session of ``run_id``, without asking a server."""
        found = self.registry.resolve(name)
        if found is None and self.mcp is not None and domain_of(name) == "mcp":
            return self.mcp.pinned(run_id, name)
        return found

    def state_from_row(self, row: InvocationTable) -> CallState:
        """Rebuild a call's state from its row alone (to resume it, here or in another worker)."""
        call = ProposedCall(call_id=row.call_id, tool_name=row.tool_name, arguments=json.loads(row.arguments_json))
        request = StepRequest(tenant=row.tenant, run_id=row.run_id, step_number=row.step_number, calls=[call])
        s = CallState(request=request, call=call, invocation_id=row.invocation_id, key=row.idempotency_key)
        s.call_hash, s.existing, s.recorded, s.attempt = row.call_hash, row, True, row.attempt
        s.origin_trust, s.argument_trust = row.origin_trust, row.argument_trust
        s.decision, s.marked = Decision(row.decision or Decision.ALLOW), row.effect_sent_at is not None
        s.answer = row.control_answer
        found = self.lookup(row.run_id, row.tool_name)
        if found is None:
            s.finish(ReasonCode.UNKNOWN_TOOL)  # Registered when recorded, gone after a restart.
        else:
            s.resolved = Resolved(*found)
        return s

    # -- hooks the steps call ------------------------------------------------------------

    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        """Step 4: status and reason of the earlier identical calls of this run."""
        rows = self.store.identical(s.request.run_id, s.call_hash)
        return [(InvocationStatus(row.status), reason_or_none(row.reason_code)) for row in rows]

    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        """Step 4: the breaker's verdict on a new identical call."""
        return breaker(prior)

    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        """Step 8 and recovery's one question, answered by the watermark alone: may a dead worker's call have left
        its mark in a way a retry would repeat?"""
        return (
            row.effect_sent_at is not None and spec is not None and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        )

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        """Step 9: what the call's ToolExecutionContext is built from."""
        return ContextParts(
            identity=Identity(
                tenant=s.request.tenant,
                run_id=s.request.run_id,
                step_number=s.request.step_number,
                call_id=s.call.call_id,
                invocation_id=s.invocation_id,
                tool_name=r.spec.name,
                tool_version=r.spec.version,
                attempt=s.attempt,
                idempotency_key=s.key,
            ),
            budget=Budget(max_output_bytes=self.config.max_output_bytes),
            deadline=wall_clock() + r.spec.deadline_s,
            target=self.config.targets.get(r.spec.name),
            workspace=Path(self.config.workspace),
            artifact_writer=self.artifact_writer(
                Path(self.config.store_dir) / "artifacts" / s.invocation_id / str(s.attempt)
            ),
            credential_resolver=ScopedCredentials(r.spec.required_scopes, self.config.credentials),
            cancellation=CancellationSignal(),
            mark=EffectMark(self, s),
        )

    def artifact_writer(self, directory: Path) -> FileArtifactWriter:
        """Step 9: the writer of one attempt's artifacts, under ``directory``."""
        return FileArtifactWriter(directory)

    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        """Step 9: the context handed to the tool (nine members over ``parts``)."""
        return ExecutionContext(parts)

    async def mark_effect(self, s: CallState) -> None:
        """Step 10: what the context's mark_effect_sent does: commit the watermark, then return.

        A failed write raises ``StoreFault`` to the tool, and the call keeps it: whatever the tool does with the
        exception, step 10 ends in it (the submitter gets it, the row stays RUNNING and unmarked)."""
        with self.store.faults.at(FaultPoint.WATERMARK, s.call.call_id):
            try:
                self.store.mark_effect_sent(s.invocation_id, self.clock.now())
            except StoreFault as fault:
                s.store_fault = fault
                raise
        s.marked = True

    def parse_result(self, raw: Any) -> ToolResult | None:
        """Steps 10 and 11: what the tool returned, as a ToolResult; None when it is not one."""
        return parse_result(raw)

    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        """Step 11: whether a successful result's structure (or its absence) may be delivered.

        Structure validates against the pinned output schema, and a tool without one may return none (D1.4);
        an MCP tool whose pinned definition declares one owes structure (D8.11, D8.12). The MCP adapter hands
        a server's structure over unjudged, so this is the one place it is judged.
        """
        return structure_accepted(spec, result)

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        """Step 13: the counters incremented with the terminal status (so they commit with it)."""
        metrics = [Metric.INVOCATIONS.value]
        if status is InvocationStatus.UNCERTAIN:
            metrics.append(Metric.UNCERTAIN.value)
        if self.unmarked(s):
            metrics.append(Metric.EFFECT_UNMARKED.value)
        return metrics

    def unmarked(self, s: CallState) -> bool:
        """Step 13: whether a consequential action ran without marking its effect (the production flag)."""
        if s.resolved is None or s.prepared is None:
            return False
        spec = s.resolved.spec
        owes = spec.consequential and spec.idempotency is not IdempotencyClass.IDEMPOTENT
        ran = s.raw_result is not None or s.error is not None or s.timed_out
        return owes and ran and not s.marked and spec.kind is ToolKind.ACTION

    # -- between and after the steps -----------------------------------------------------

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        """Decision 17: run a script whose every call re-enters ``run_call``."""
        return await self.bridge_class(self).run(request)

    async def run_step(self, step: StepRequest) -> list[Disposition]:
        """Decision 15: the whole batch in parallel when every member qualifies, else one by one in proposal order."""
        if self.mcp is not None:
            await self.mcp.start(step.run_id)  # Submitting a step starts the run's session.
        if not self.qualifies(step):
            return [await self.run_call(step, call) for call in step.calls]
        results: list[Disposition | None] = [None] * len(step.calls)

        async def one(index: int, call: ProposedCall) -> None:
            results[index] = await self.run_call(step, call)

        try:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(step.calls):
                    group.start_soon(one, index, call)
        except* StoreFault as faults:  # The step failed as its first failed write did, not as a task group.
            raise faults.exceptions[0] from None
        return [r for r in results if r is not None]

    def qualifies(self, step: StepRequest) -> bool:
        """Every member READ_ONLY, IDEMPOTENT and not CONTROL (an unknown tool never qualifies)."""
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            if found is None:
                return False
            spec = found[0]
            if (spec.side_effect, spec.idempotency, spec.kind) != (
                SideEffect.READ_ONLY,
                IdempotencyClass.IDEMPOTENT,
                ToolKind.ACTION,
            ):
                return False
        return True

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        """Answer a hold; past its bound it expires whatever the answer."""
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        if self.clock.now() > (row.hold_expires_at or 0):
            state.finish(ReasonCode.APPROVAL_EXPIRED)
        elif not approved:
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        """Continue a suspended control call from the claim, with the run's answer."""
        row = self.store.get_or_none(invocation_id)
        if row is None or row.suspended_at is None:
            raise ConfigurationError(f"invocation {invocation_id!r} is not a suspended control call")
        state = self.state_from_row(row)
        state.answer = answer
        return await self.drive(state, Step.CLAIM)

    async def sweep(self) -> list[Disposition]:
        """Expire holds past their bound, then pick up orphans (never suspended rows)."""
        decided: list[Disposition] = []
        now = self.clock.now()
        for row in self.store.expired_holds(now):
            state = self.state_from_row(row)
            state.finish(ReasonCode.APPROVAL_EXPIRED)
            self.store.update(row.invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
            decided.append(await self.drive(state, Step.CLAIM))
        for row in self.orphans(now):
            decided.append(await self.recover(row))
        return decided

    def orphans(self, now: float) -> list[InvocationTable]:
        """Rows a dead worker left behind; suspended control calls are excluded by the store's predicate."""
        return self.store.orphans(now, self.config.lease_s)

    async def recover(self, row: InvocationTable) -> Disposition:
        """Decide an orphan from the store alone: the watermark, not the clock, says whether it escaped."""
        state = self.state_from_row(row)
        self.store.update(row.invocation_id, {}, [EventKind.RECOVERED])
        if row.status == InvocationStatus.RECORDED.value:
            return await self.drive(state, Step.HOLD)
        if self.escaped(row, state.resolved.spec if state.resolved else None):
            state.finish(ReasonCode.EFFECT_UNKNOWN)
        return await self.drive(state, Step.CLAIM)
