"""Decision 15: a step is one model call plus the disposition of every call; batches and parallelism."""

from __future__ import annotations

import anyio

from toolproof.reference.hooks import Pipeline, ReferenceImplementation
from toolproof.spec import Disposition, IdempotencyClass, ProposedCall, SideEffect, StepRequest, ToolKind

from ._common import impl


class _ReadOnlyQualifies(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            # The mistake: READ_ONLY and not CONTROL; "a read is idempotent anyway".
            if found is None or found[0].side_effect is not SideEffect.READ_ONLY or found[0].kind is ToolKind.CONTROL:
                return False
        return True


def parallel_ignores_idempotency() -> ReferenceImplementation:
    """D15 "Parallelism requires the whole batch to qualify": a batch qualifies when every member is READ_ONLY and
    not CONTROL; the IDEMPOTENT condition is dropped, so NON_IDEMPOTENT reads run in parallel."""
    return impl("d15-parallel-ignores-idempotency", _ReadOnlyQualifies)


class _ControlQualifies(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            if found is None:
                return False
            spec = found[0]
            # The mistake: the kind is not checked (a control tool's spec is READ_ONLY/IDEMPOTENT by default).
            if (spec.side_effect, spec.idempotency) != (SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT):
                return False
        return True


def control_tool_qualifies_for_parallel() -> ReferenceImplementation:
    """D15/D16: the parallel test checks side effect and idempotency but not kind, so a batch mixing READ_ONLY
    IDEMPOTENT actions with a (read-only) CONTROL tool runs in parallel."""
    return impl("d15-control-qualifies", _ControlQualifies)


class _SplitMixed(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)
        results: list[Disposition | None] = [None] * len(step.calls)
        reads: list[tuple[int, ProposedCall]] = []
        rest: list[tuple[int, ProposedCall]] = []
        for index, call in enumerate(step.calls):
            single = step.model_copy(update={"calls": [call, call]})
            (reads if self.qualifies(single) else rest).append((index, call))

        async def one(index: int, call: ProposedCall) -> None:
            results[index] = await self.run_call(step, call)

        async with anyio.create_task_group() as group:  # The mistake: the read group first, in parallel ...
            for index, call in reads:
                group.start_soon(one, index, call)
        for index, call in rest:  # ... then the writes, sequentially.
            results[index] = await self.run_call(step, call)
        return [r for r in results if r is not None]


def mixed_batch_split() -> ReferenceImplementation:
    """D15 "a mixed batch runs sequentially, because splitting it would require inferring independence": the
    qualifying reads of a mixed batch run first in parallel, then the rest sequentially (results still returned in
    proposal order)."""
    return impl("d15-mixed-batch-split", _SplitMixed)


class _CompletionOrder(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)
        if not self.qualifies(step):
            return [await self.run_call(step, call) for call in step.calls]
        results: list[Disposition] = []

        async def one(call: ProposedCall) -> None:
            results.append(await self.run_call(step, call))  # The mistake: completion order.

        async with anyio.create_task_group() as group:
            for call in step.calls:
                group.start_soon(one, call)
        return results


def parallel_results_in_completion_order() -> ReferenceImplementation:
    """D15 (every call's disposition, in proposal order): a parallel batch returns dispositions in the order the
    calls finished."""
    return impl("d15-completion-order", _CompletionOrder)


class _StepPerCall(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if len(step.calls) < 2:
            return await super().run_step(step)
        out: list[Disposition] = []
        for index, call in enumerate(step.calls):
            # The mistake: each call of the batch is its own step (step_number + position).
            single = step.model_copy(update={"calls": [call], "step_number": step.step_number + index})
            out.extend(await super().run_step(single))
        return out


def batch_call_gets_own_step() -> ReferenceImplementation:
    """D15 "A batch shares one step_number and is distinguished inside the key by call_id": each call of a batch is
    recorded under step_number + its position."""
    return impl("d15-batch-call-own-step", _StepPerCall)
