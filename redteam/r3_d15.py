"""Round 3, decision 15: which batches qualify for parallelism."""

from __future__ import annotations

from toolproof.reference.hooks import Pipeline, ReferenceImplementation
from toolproof.spec import IdempotencyClass, SideEffect, StepRequest, ToolKind

from ._common import impl


class _ParallelAdmitsConditional(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        for call in step.calls:
            found = self.lookup(step.run_id, call.tool_name)
            if found is None:
                return False
            spec = found[0]
            # The mistake: "idempotent enough" is tested as "not NON_IDEMPOTENT".
            if (
                spec.side_effect is not SideEffect.READ_ONLY
                or spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
                or spec.kind is not ToolKind.ACTION
            ):
                return False
        return True


def parallel_admits_conditionally_idempotent() -> ReferenceImplementation:
    """D15 (parallelism requires every member to qualify: READ_ONLY, IDEMPOTENT, not CONTROL; D15.3): a
    CONDITIONALLY_IDEMPOTENT member is admitted as if IDEMPOTENT, so a READ_ONLY batch with one such member runs in
    parallel."""
    return impl("r3-parallel-admits-conditionally-idempotent", _ParallelAdmitsConditional)
