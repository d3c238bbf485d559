"""The reference pipeline: the steps, plus what happens to a call between and after them.

A batch, an approval, a resumed control call and a sweep all go through ``Steps.drive``:
there is one pipeline function and every entry re-enters it.
"""

from __future__ import annotations

import anyio

from toolproof.spec import (
    ConfigurationError,
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    SideEffect,
    Step,
    StepRequest,
    ToolKind,
)

from ._bridge import Bridge
from ._steps import DISPOSITION, FULL_OUTPUT_ARTIFACT, CallState, Steps, argument_trust, call_hash, origin_trust
from ._store import InvocationTable

__all__ = [
    "DISPOSITION",
    "FULL_OUTPUT_ARTIFACT",
    "CallState",
    "Pipeline",
    "argument_trust",
    "call_hash",
    "origin_trust",
]


class Pipeline(Steps):
    """The reference pipeline; witnesses subclass it to plant one defect."""

    bridge_class: type[Bridge] = Bridge
    """The bridge that runs scripts (witnesses replace it)."""

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        """Decision 17: run a script whose every call re-enters ``run_call``."""
        return await self.bridge_class(self).run(request)

    async def run_step(self, step: StepRequest) -> list[Disposition]:
        """Decision 15: the whole batch in parallel when every member qualifies, else one by one in proposal order."""
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)  # Submitting a step starts the run's session.
        if not self.qualifies(step):
            return [await self.run_call(step, call) for call in step.calls]
        results: list[Disposition | None] = [None] * len(step.calls)

        async def one(index: int, call: ProposedCall) -> None:
            results[index] = await self.run_call(step, call)

        async with anyio.create_task_group() as group:
            for index, call in enumerate(step.calls):
                group.start_soon(one, index, call)
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
        if self.escaped(row, state.spec):
            state.finish(ReasonCode.EFFECT_UNKNOWN)
        return await self.drive(state, Step.CLAIM)
