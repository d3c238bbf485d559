"""Shared parts of the red-team pipelines: a factory helper, a store-swapping pipeline base, and parameterised
copies of the reference's normalize (step 11) and execute (step 10), each knob one plausible mistake.

Every knob defaults to the reference's behaviour; a red-team module turns exactly one on.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import anyio

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    ContextParts,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    Store,
    resolved_step,
)
from toolproof.spec import (
    CONTROL_ANSWER_ARGUMENT,
    FAILURE_REASONS,
    Envelope,
    FailureKind,
    IdempotencyClass,
    Outcome,
    ReasonCode,
    Step,
    Success,
    TrustLabel,
)

__all__ = ["STEP_TABLE", "StorePipeline", "impl", "make_execute", "make_normalize"]


def impl(name: str, pipeline_class: type[Pipeline]) -> ReferenceImplementation:
    """The reference implementation running ``pipeline_class`` under ``name``."""
    return ReferenceImplementation(name=f"redteam-{name}", pipeline_class=pipeline_class)


class StorePipeline(Pipeline):
    """A pipeline whose store is swapped for ``store_class`` (a Store subclass planting one defect)."""

    store_class: ClassVar[type[Store]] = Store

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if type(self.store) is not self.store_class:
            self.store.__class__ = self.store_class  # Same engine and state, other methods.


def make_normalize(
    *,
    watermark_on_error: bool = True,
    watermark_on_timeout: bool = True,
    structure_needs_schema: bool = True,
    honour_raised_trust: bool = False,
    detail_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED,
    failure_reasons: dict[FailureKind, ReasonCode] | None = None,
    message_with_exception: bool = False,
) -> Any:
    """A copy of the reference's step 11 with one knob turned."""
    reasons = FAILURE_REASONS if failure_reasons is None else failure_reasons

    @resolved_step
    async def normalize(p: Pipeline, s: CallState, r: Resolved) -> None:
        spec = r.spec
        if s.timed_out or s.error is not None:
            check = watermark_on_timeout if s.timed_out else watermark_on_error
            if check and s.marked and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
                s.finish(ReasonCode.EFFECT_UNKNOWN)
            else:
                s.finish(ReasonCode.DEADLINE_EXCEEDED if s.timed_out else ReasonCode.TOOL_CRASHED)
                if message_with_exception and s.error is not None and isinstance(s.disposition, Outcome):
                    # The mistake: the exception text is appended to the fixed message "to help debugging".
                    s.disposition = s.disposition.model_copy(
                        update={"message": f"{s.disposition.message} ({type(s.error).__name__}: {s.error})"}
                    )
            return
        result = p.parse_result(s.raw_result)
        if result is None:
            s.finish(ReasonCode.INVALID_TOOL_RESULT)
            return
        if result.failure is not None:
            reason = reasons[FailureKind(result.failure.kind)]
            detail = result.failure.detail
            remote = Envelope(trust=detail_trust, source="remote", text=detail) if detail else None
            s.finish(reason, remote)
            return
        if result.structured is not None:
            if spec.output_schema is None:
                if structure_needs_schema:
                    s.finish(ReasonCode.INVALID_TOOL_RESULT)
                    return
            else:
                from toolproof.reference._logic import conforms

                if not conforms(result.structured, spec.output_schema):
                    s.finish(ReasonCode.INVALID_TOOL_RESULT)
                    return
        if honour_raised_trust and result.trust is not None:
            floor = result.trust  # The mistake: the tool's claim replaces the registered label.
        else:
            floor = spec.output_trust if result.trust is None else min(spec.output_trust, result.trust)
        s.disposition = Success(
            invocation_id=s.invocation_id,
            content=[
                Envelope(
                    trust=floor if part.trust is None else min(floor, part.trust), source=spec.name, text=part.text
                )
                for part in result.content
            ],
            structured=result.structured,
            artifacts=list(result.artifacts),
        )

    return normalize


def make_execute(
    *,
    set_signal: bool = True,
    retry_invalid: bool = False,
    rekey_retry: bool = False,
) -> Any:
    """A copy of the reference's step 10 with one knob turned."""

    async def run_tool(s: CallState, r: Resolved) -> None:
        prepared = s.prepared
        assert prepared is not None
        signal, deadline = prepared.parts.cancellation, prepared.parts.deadline
        arguments = dict(s.call.arguments)
        if s.answer is not None:
            arguments[CONTROL_ANSWER_ARGUMENT] = s.answer
        from toolproof.reference._execute import wall_clock

        async with anyio.create_task_group() as group:

            async def watchdog() -> None:
                await anyio.sleep(max(0.0, deadline - wall_clock()))
                s.timed_out = True
                if set_signal:
                    signal.set()
                group.cancel_scope.cancel()

            group.start_soon(watchdog)
            try:
                s.raw_result = await r.tool.execute(arguments, prepared.context)
            except Exception as exc:
                s.error = exc
            group.cancel_scope.cancel()

    def may_retry(p: Pipeline, s: CallState, r: Resolved) -> bool:
        result = p.parse_result(s.raw_result)
        transient = result is not None and result.failure is not None and result.failure.kind == FailureKind.TRANSIENT
        if retry_invalid and result is None and s.error is None and not s.timed_out:
            transient = True  # The mistake: a malformed result is taken for a transient glitch.
        escaped = s.marked and r.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        if retry_invalid:
            escaped = False  # ... and "the tool did not really finish", so the watermark is not consulted.
        return transient and not escaped and s.attempt < p.config.max_attempts

    @resolved_step
    async def execute(p: Pipeline, s: CallState, r: Resolved) -> None:
        await run_tool(s, r)
        while may_retry(p, s, r):
            s.attempt += 1
            changes: dict[str, Any] = {"attempt": s.attempt}
            if rekey_retry:
                # The mistake: every attempt gets its own key "so the retry is not mistaken for the first".
                s.key = f"{s.key[:48]}-a{s.attempt}"
                changes["idempotency_key"] = s.key
            p.store.update(s.invocation_id, changes)
            s.raw_result, s.error, s.timed_out = None, None, False
            await p.steps[Step.PREPARE](p, s)
            await run_tool(s, r)

    return execute


def replace_parts(parts: ContextParts, **changes: Any) -> ContextParts:
    """``dataclasses.replace`` for ContextParts (typed loosely for the red-team modules)."""
    return dataclasses.replace(parts, **changes)


def table(**entries: Any) -> Any:
    """STEP_TABLE with entries replaced by step name, e.g. ``table(NORMALIZE=fn)``."""
    return STEP_TABLE | {Step[name]: fn for name, fn in entries.items()}


__all__ += ["Outcome", "replace_parts", "table"]
