"""Witnesses of decisions 12 (excerpts), 14 (the breaker), 15 (batches) and 16 (control tools)."""

from __future__ import annotations

import hashlib
import json

from sqlmodel import select

from toolproof.reference.hooks import STEP_TABLE, CallState, InvocationTable, Pipeline
from toolproof.spec import (
    EXCERPT_MARKER_SOURCE,
    Disposition,
    Envelope,
    IdempotencyClass,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    SideEffect,
    Step,
    StepRequest,
    Success,
    Suspended,
    ToolKind,
    TrustLabel,
)

from ._registry import witness

# -- D12 ------------------------------------------------------------------------------------


def _pieces(content: list[Envelope]) -> tuple[list[Envelope], list[Envelope], list[Envelope]]:
    markers = [e for e in content if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return content, [], []
    at = content.index(markers[0])
    return content[:at], markers, content[at + 1 :]


async def _excerpt_then_rewrite(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.EXCERPT](p, s)
    if isinstance(s.disposition, Success) and any(e.source == EXCERPT_MARKER_SOURCE for e in s.disposition.content):
        assert isinstance(p, _Rewrites)
        s.disposition = p.rewrite(s.disposition)


class _Rewrites(Pipeline):
    """Rewrites an excerpt after the reference made it."""

    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_then_rewrite}

    def rewrite(self, success: Success) -> Success:
        return success


@witness("head_only_excerpt", ("D12.1",), "keeps the head and the marker, drops the tail")
class _HeadOnlyExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, _ = _pieces(success.content)
        return success.model_copy(update={"content": head + markers})


@witness("excerpt_without_artifact", ("D12.2",), "excerpts but keeps no artifact of the whole output")
class _ExcerptWithoutArtifact(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        return success.model_copy(update={"artifacts": success.artifacts[:-1]})


@witness("summarizing_excerpt", ("D12.3",), "adds a trusted-looking summary of the omitted middle")
class _SummarizingExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, tail = _pieces(success.content)
        words = sorted({w for e in success.content if e.source != EXCERPT_MARKER_SOURCE for w in e.text.split()})[:3]
        summary = Envelope(trust=TrustLabel.SYSTEM, source="summarizer", text=f"Summary of the omitted part: {words}")
        return success.model_copy(update={"content": [*head, *markers, summary, *tail]})


@witness("merging_excerpt", ("D12.4",), "joins the head's pieces into one envelope under the first piece's label")
class _MergingExcerpt(_Rewrites):
    def rewrite(self, success: Success) -> Success:
        head, markers, tail = _pieces(success.content)
        if len(head) < 2:
            return success
        merged = Envelope(trust=head[0].trust, source=head[0].source, text="".join(e.text for e in head))
        return success.model_copy(update={"content": [merged, *markers, *tail]})


async def _excerpts_at_the_limit(p: Pipeline, s: CallState) -> None:
    if isinstance(s.disposition, Success):
        size = sum(len(e.text.encode()) for e in s.disposition.content)
        if size == p.config.max_output_bytes:
            limit = p.config.max_output_bytes
            p.config = p.config.model_copy(update={"max_output_bytes": limit - 1})
            try:
                await STEP_TABLE[Step.EXCERPT](p, s)
            finally:
                p.config = p.config.model_copy(update={"max_output_bytes": limit})
            return
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("excerpts_at_the_limit", ("D12.5",), "excerpts an output of exactly the limit (>= instead of >)")
class _ExcerptsAtTheLimit(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpts_at_the_limit}


# -- D14 ------------------------------------------------------------------------------------


async def _order_sensitive_identity(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    s.call_hash = hashlib.sha256(json.dumps([s.call.tool_name, s.call.arguments]).encode()).hexdigest()


@witness("order_sensitive_identity", ("D14.1",), "tells calls apart by the order of their argument members")
class _OrderSensitiveIdentity(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _order_sensitive_identity}


@witness("two_counters", ("D14.1",), "counts denials per tool name and calls per tool and arguments: two counters")
class _TwoCounters(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        prior = super().prior_identical(s)
        denied = [
            row
            for row in self.store.invocations(s.request.run_id)
            if row.tool_name == s.call.tool_name and row.status == InvocationStatus.DENIED.value
        ]
        # The second counter: denials of the tool, whatever the arguments.
        extra = [(InvocationStatus.DENIED, ReasonCode.POLICY_DENIED)] * max(0, len(denied) - len(prior))
        return prior + extra


@witness("denials_never_trip", ("D14.2",), "lets identical denied calls be evaluated again and again")
class _DenialsNeverTrip(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        return [(st, r) for st, r in super().prior_identical(s) if st is not InvocationStatus.DENIED]


@witness("loop_at_six", ("D14.3",), "trips loop detection on the sixth identical call")
class _LoopAtSix(Pipeline):
    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        reason = super().trip(prior)
        return None if reason is ReasonCode.LOOP_DETECTED and len(prior) < 5 else reason


@witness("forgets_uncertain", ("D14.4",), "proposes a call again after an identical one resolved UNCERTAIN")
class _ForgetsUncertain(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        return [(st, r) for st, r in super().prior_identical(s) if st is not InvocationStatus.UNCERTAIN]


@witness("breaker_across_runs", ("D14.5",), "counts identical calls across runs")
class _BreakerAcrossRuns(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        with self.store.transaction() as session:
            rows = session.exec(select(InvocationTable).where(InvocationTable.call_hash == s.call_hash)).all()
            return [(InvocationStatus(r.status), ReasonCode(r.reason_code) if r.reason_code else None) for r in rows]


# -- D15 ------------------------------------------------------------------------------------


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


# -- D16 ------------------------------------------------------------------------------------


@witness("control_shortcut", ("D16.1",), "suspends a control call at once, with no row, key, policy or events")
class _ControlShortcut(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        found = self.registry.resolve(call.tool_name)
        if found is not None and found[0].kind is ToolKind.CONTROL:
            return Suspended(invocation_id=f"control-{call.call_id}", reason="control")
        return await super().run_call(request, call)


async def _suspends_by_status(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "control" and s.existing is None:
        changes = {"suspended_at": None, "status": InvocationStatus.AWAITING_APPROVAL.value}
        p.store.update(s.invocation_id, changes)


@witness("suspends_by_status", ("D16.2",), "suspends a control call by giving its row the AWAITING_APPROVAL status")
class _SuspendsByStatus(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _suspends_by_status}


@witness("sweeps_suspended", ("D16.3",), "treats suspended control calls as orphans in the lease sweep")
class _SweepsSuspended(Pipeline):
    def orphans(self, now: float) -> list[InvocationTable]:
        with self.store.transaction() as session:
            stale = self.clock.now() - self.config.lease_s
            rows = session.exec(select(InvocationTable).where(InvocationTable.status == "RECORDED")).all()
            return [r for r in rows if r.created_at < stale]

    async def recover(self, row: InvocationTable) -> Disposition:
        state = self.state_from_row(row)
        state.answer = ""
        return await self.drive(state, Step.CLAIM)


@witness("resume_skips_pipeline", ("D16.4",), "answers a resumed control call without running it")
class _ResumeSkipsPipeline(Pipeline):
    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        row = self.store.get(invocation_id)
        return Success(
            invocation_id=invocation_id, content=[Envelope(trust=TrustLabel.USER, source=row.tool_name, text=answer)]
        )


async def _copies_output(p: Pipeline, s: CallState) -> None:
    if isinstance(s.disposition, Success) and s.disposition.content:
        whole = "".join(e.text for e in s.disposition.content)
        first = s.disposition.content[0]
        rest = s.disposition.content[1:]
        joined = Envelope(trust=first.trust, source=first.source, text=whole[: len(first.text)])
        s.disposition = s.disposition.model_copy(update={"content": [joined, *rest]})
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("copies_output", ("D12.6",), "joins the whole output into one string before excerpting it")
class _CopiesOutput(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _copies_output}
