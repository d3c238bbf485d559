"""Witnesses of decision 15: Steps and batches.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import anyio

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Pipeline,
    PipelineHost,
    idempotency_key,
)
from toolproof.spec import (
    Disposition,
    IdempotencyClass,
    ProposedCall,
    SideEffect,
    Step,
    StepRequest,
    Success,
    ToolKind,
)

from ._registry import key_without, witness


@witness("callless_key", ("D15.1",), "leaves call_id out of the key, so batch members collide")
class _CalllessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: key_without("call_id")}


@witness("refusals_last", ("D15.2",), "answers executed calls first and refused ones after them")
class _RefusalsLast(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        results = await super().run_step(step)
        return [d for d in results if isinstance(d, Success)] + [d for d in results if not isinstance(d, Success)]


class _Qualifies(Pipeline):
    def member_qualifies(self, side_effect: SideEffect, idempotency: IdempotencyClass, kind: ToolKind) -> bool:
        return True

    def qualifies(self, step: StepRequest) -> bool:
        found = [self.registry.resolve(c.tool_name) for c in step.calls]
        specs = [f[0] for f in found if f is not None]
        return (
            len(step.calls) > 1
            and len(specs) == len(step.calls)
            and all(self.member_qualifies(s.side_effect, s.idempotency, s.kind) for s in specs)
        )


@witness("read_only_is_enough", ("D15.3",), "runs a batch in parallel when every member is read-only")
class _ReadOnlyIsEnough(_Qualifies):
    def member_qualifies(self, side_effect: SideEffect, idempotency: IdempotencyClass, kind: ToolKind) -> bool:
        return side_effect is SideEffect.READ_ONLY


@witness("idempotent_is_enough", ("D15.3",), "runs a batch in parallel when every member is an idempotent action")
class _IdempotentIsEnough(_Qualifies):
    def member_qualifies(self, side_effect: SideEffect, idempotency: IdempotencyClass, kind: ToolKind) -> bool:
        return idempotency is IdempotencyClass.IDEMPOTENT and kind is ToolKind.ACTION


@witness("mixed_batch_in_parallel", ("D15.4",), "runs every batch in parallel")
class _MixedBatchInParallel(_Qualifies):
    pass


@witness("parallel_results_in_completion_order", ("D15.2",), "answers a parallel batch in the order calls finished")
class _ParallelResultsInCompletionOrder(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if not self.qualifies(step):
            return await super().run_step(step)
        finished: list[Disposition] = []

        async def one(call: ProposedCall) -> None:
            finished.append(await self.run_call(step, call))

        async with anyio.create_task_group() as group:
            for call in step.calls:
                group.start_soon(one, call)
        return finished


@witness(
    "batch_class_read_from_its_first_call",
    ("D15.2",),
    "reads a batch's classification from its first call as if that call always named a known tool",
)
class _BatchClassReadFromItsFirstCall(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        # The mistake: the first member is looked up and indexed without asking whether the look-up found a tool.
        first = self.lookup(step.run_id, step.calls[0].tool_name)[0]  # type: ignore[index]
        if first.side_effect is not SideEffect.READ_ONLY:
            return False
        return super().qualifies(step)


_ENOUGH = frozenset({IdempotencyClass.IDEMPOTENT, IdempotencyClass.CONDITIONALLY_IDEMPOTENT})


@witness(
    "parallel_admits_conditional",
    ("D15.3",),
    "a READ_ONLY CONDITIONALLY_IDEMPOTENT member counts as idempotent enough for a parallel batch",
)
class _ParallelAdmitsConditional(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        specs = [self.lookup(step.run_id, call.tool_name) for call in step.calls]
        # The defect: the key's deduplication is taken to make a CONDITIONALLY_IDEMPOTENT read safe to overlap.
        return len(specs) > 1 and all(
            found is not None
            and found[0].side_effect is SideEffect.READ_ONLY
            and found[0].kind is ToolKind.ACTION
            and found[0].idempotency in _ENOUGH
            for found in specs
        )


@witness("unknown_members_skipped", ("D15.3",), "judges a batch's parallelism on its known members only")
class _UnknownMembersSkipped(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            if found is None:
                continue  # The defect: an unknown member "will be denied anyway", so it cannot spoil the batch.
            spec = found[0]
            qualifying = (SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT, ToolKind.ACTION)
            if (spec.side_effect, spec.idempotency, spec.kind) != qualifying:
                return False
        return True


async def _resolve_keying_batch_places(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    # The defect: a member is keyed by its place among the batch's calls of its tool; call_ids are the model's.
    place = [c.tool_name for c in s.request.calls[: s.request.calls.index(s.call)]].count(s.call.tool_name)
    s.key = idempotency_key(
        tenant=s.request.tenant,
        run_id=s.request.run_id,
        step_number=s.request.step_number,
        call_id=f"{s.call.tool_name}#{place}",
        tool_name=s.call.tool_name,
        tool_version=s.resolved.spec.version if s.resolved else None,
        arguments=s.call.arguments,
    )


@witness(
    "key_by_batch_place",
    ("D15.1",),
    "keys a batch member by its place among the batch's calls of its tool instead of by its call_id",
)
class _KeyByBatchPlace(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_keying_batch_places}
