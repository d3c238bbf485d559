"""Round 4, decision 15: a step is one model call plus the complete disposition of every call it produced; a batch
runs in parallel only when every member qualifies. Each pipeline one realistic mistake: one class of several
(side effect vs idempotency), one outcome of several (a hold), members that look alike.
"""

from __future__ import annotations

from toolproof.reference.hooks import Pipeline, ReferenceImplementation, dump_json
from toolproof.spec import Disposition, IdempotencyClass, StepRequest, Suspended, ToolKind

from ._common import impl


class _IdempotentWritesParallel(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            if found is None:
                return False
            spec = found[0]
            # The mistake: "idempotent calls can run in any order", so the side effect is not looked at.
            if spec.idempotency is not IdempotencyClass.IDEMPOTENT or spec.kind is not ToolKind.ACTION:
                return False
        return True


def parallel_admits_idempotent_writes() -> ReferenceImplementation:
    """D15 (parallelism requires every member READ_ONLY, IDEMPOTENT and not CONTROL; D15.3/D15.4): the
    qualification checks idempotency and kind but not the side effect, so a batch of IDEMPOTENT WORKSPACE_WRITE or
    EXTERNAL_WRITE calls (e.g. two writes of one file) runs concurrently instead of in proposal order."""
    return impl("r4-parallel-admits-idempotent-writes", _IdempotentWritesParallel)


class _StopsAtHold(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.qualifies(step):
            return await super().run_step(step)
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)
        results: list[Disposition] = []
        for call in step.calls:
            disposition = await self.run_call(step, call)
            results.append(disposition)
            if isinstance(disposition, Suspended):
                # The mistake: a held call suspends the step: the calls after it are left for the model to propose
                # again once the hold is answered, and the step returns what it decided so far.
                break
        return results


def sequential_batch_stops_at_hold() -> ReferenceImplementation:
    """D15 (a step is the complete disposition of every call it produced; D15.2 a disposition for every proposed
    call, in proposal order): a sequential batch stops at the first member that is held for approval (or
    suspended), so a batch [held write, read] returns one disposition and the read is never recorded."""
    return impl("r4-sequential-batch-stops-at-hold", _StopsAtHold)


class _DedupesIdenticalMembers(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        # The mistake: "the model proposed the same call twice": members with the same tool and canonical arguments
        # run once and share the first one's disposition (its row and invocation_id), whatever their call_id.
        first: dict[str, int] = {}
        unique = []
        for index, call in enumerate(step.calls):
            identity = dump_json([call.tool_name, call.arguments])
            if identity not in first:
                first[identity] = index
                unique.append(call)
        decided = await super().run_step(step.model_copy(update={"calls": unique}))
        by_identity = {dump_json([c.tool_name, c.arguments]): d for c, d in zip(unique, decided, strict=True)}
        return [by_identity[dump_json([c.tool_name, c.arguments])] for c in step.calls]


def batch_dedupes_identical_members() -> ReferenceImplementation:
    """D15 (a batch shares one step_number and is distinguished inside the key by call_id; D15.1, and D14.1's
    batch-mates): two members with the same tool and arguments but different call_ids are run once and both
    answered with the first's disposition; the second gets no row, no key and no breaker count."""
    return impl("r4-batch-dedupes-identical-members", _DedupesIdenticalMembers)
