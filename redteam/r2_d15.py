"""Round 2, decision 15: steps and batches."""

from __future__ import annotations

from toolproof.reference.hooks import Pipeline, ReferenceImplementation
from toolproof.spec import Disposition, Outcome, StepRequest

from ._common import impl


class _SortedSequential(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.qualifies(step):
            return await super().run_step(step)
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)
        # The mistake: a sequential batch runs "in a deterministic order", sorted by call_id; the dispositions are
        # still returned in proposal order.
        order = sorted(range(len(step.calls)), key=lambda i: step.calls[i].call_id)
        results: dict[int, Disposition] = {}
        for index in order:
            results[index] = await self.run_call(step, step.calls[index])
        return [results[i] for i in range(len(step.calls))]


def sequential_batch_sorted_by_call_id() -> ReferenceImplementation:
    """D15 "a mixed batch runs sequentially" (Section 12.4, in proposal order): a batch that does not qualify for
    parallelism runs its calls sorted by call_id rather than in proposal order (results are still returned in
    proposal order), so a batch proposed as ["b": write, "a": read] reads before it writes."""
    return impl("r2-d15-sequential-sorted-by-call-id", _SortedSequential)


class _StopsAtRefusal(Pipeline):
    async def run_step(self, step: StepRequest) -> list[Disposition]:
        if self.qualifies(step):
            return await super().run_step(step)
        if self.mcp is not None and self.mcp.links:
            await self.mcp.advertise(step.run_id)
        results: list[Disposition] = []
        for call in step.calls:
            disposition = await self.run_call(step, call)
            results.append(disposition)
            if isinstance(disposition, Outcome):
                break  # The mistake: "later calls may depend on this one", so a sequential batch stops here.
        return results


def sequential_batch_stops_at_failure() -> ReferenceImplementation:
    """D15 "A step is one model call plus the complete disposition of every tool call it produced": a sequential
    batch stops at its first non-success disposition, so the calls after a denied or failed one get no
    disposition (and no row) at all."""
    return impl("r2-d15-sequential-stops-at-failure", _StopsAtRefusal)
