"""Steps 9-12: build the context, run the tool (the only step that touches the world), judge, excerpt."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError

from toolproof.spec import (
    CONTROL_ANSWER_ARGUMENT,
    FAILURE_REASONS,
    ContentPart,
    Envelope,
    FailureKind,
    IdempotencyClass,
    ReasonCode,
    Step,
    Success,
    ToolResult,
    TrustLabel,
)

from ._excerpt import chunked, excerpt_parts
from ._host import PipelineHost, resolved_step
from ._state import CallState, Prepared, Resolved

FULL_OUTPUT_ARTIFACT = "full-output.txt"
"""Name of the artifact that holds an excerpted output whole."""


@resolved_step
async def prepare(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """9. Build the ToolExecutionContext."""
    parts = p.context_parts(s, r)
    s.prepared = Prepared(parts=parts, context=p.context_for(parts))


@resolved_step
async def execute(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """10. The only step that touches the world; a TRANSIENT failure is retried under the same key.

    A watermark that failed to commit ends the step in its ``StoreFault``: the row stays RUNNING and unmarked, so
    the call never left the process and recovery retries it."""
    await _run_tool(s, r)
    if s.store_fault is not None:
        raise s.store_fault
    while _may_retry(p, s, r):
        s.attempt += 1
        p.store.update(s.invocation_id, {"attempt": s.attempt})
        s.raw_result, s.error, s.timed_out = None, None, False
        await p.steps[Step.PREPARE](p, s)  # A retry gets a context of its own, built as step 9 builds one.
        await _run_tool(s, r)
        if s.store_fault is not None:
            raise s.store_fault


def _may_retry(p: PipelineHost, s: CallState, r: Resolved) -> bool:
    result = p.parse_result(s.raw_result)
    transient = result is not None and result.failure is not None and result.failure.kind == FailureKind.TRANSIENT
    escaped = s.marked and r.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
    return transient and not escaped and s.attempt < p.config.max_attempts


async def _run_tool(s: CallState, r: Resolved) -> None:
    prepared = s.prepared
    assert prepared is not None  # Invariant: step 9 ran (and runs again before every retry).
    signal, deadline = prepared.parts.cancellation, prepared.parts.deadline
    arguments = dict(s.call.arguments)
    if s.answer is not None:
        arguments[CONTROL_ANSWER_ARGUMENT] = s.answer

    # The deadline is a cancel scope the signal follows (it reads set once the deadline fires), not a task group
    # with a watchdog task: the same order (signal, then the tool's cancellation) without a task per call.
    with anyio.CancelScope(deadline=anyio.current_time() + max(0.0, deadline - wall_clock())) as scope:
        signal.follow(scope)
        try:
            s.raw_result = await r.tool.execute(arguments, prepared.context)
        except Exception as exc:  # A tool's exception is data for step 11, never a pipeline crash.
            s.error = exc
    if scope.cancel_called:
        s.timed_out = True
        signal.set()


@resolved_step
async def normalize(p: PipelineHost, s: CallState, r: Resolved) -> None:
    """11. Judge what the tool did; a tool never sets the status."""
    spec = r.spec
    if s.timed_out or s.error is not None:
        if s.marked and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT:
            s.finish(ReasonCode.EFFECT_UNKNOWN)
        else:
            s.finish(ReasonCode.DEADLINE_EXCEEDED if s.timed_out else ReasonCode.TOOL_CRASHED)
        return
    result = p.parse_result(s.raw_result)
    if result is None:
        s.finish(ReasonCode.INVALID_TOOL_RESULT)
        return
    if result.failure is not None:
        reason = FAILURE_REASONS[FailureKind(result.failure.kind)]
        detail = result.failure.detail
        remote = Envelope(trust=TrustLabel.EXTERNAL_UNTRUSTED, source="remote", text=detail) if detail else None
        s.finish(reason, remote)
        return
    if not p.accepts_structure(spec, result):
        s.finish(ReasonCode.INVALID_TOOL_RESULT)
        return
    floor = spec.output_trust if result.trust is None else min(spec.output_trust, result.trust)
    s.disposition = Success(
        invocation_id=s.invocation_id,
        content=[envelope(part, floor, spec.name) for part in result.content],
        structured=result.structured,
        artifacts=list(result.artifacts),
    )


def parse_result(raw: Any) -> ToolResult | None:
    """What a tool returned, as a ToolResult; None when it is not one."""
    # Revalidate even a model instance: a ToolResult subclass could smuggle a status field.
    if isinstance(raw, BaseModel):
        data = raw.model_dump()
    elif isinstance(raw, Mapping):
        data = dict(raw)
    else:
        return None
    try:
        return ToolResult.model_validate(data)
    except ValidationError:
        return None


def envelope(part: ContentPart, floor: TrustLabel, source: str) -> Envelope:
    """A delivered part: its own label when it lowers the floor, else the floor (a result only lowers trust)."""
    return Envelope(trust=floor if part.trust is None else min(floor, part.trust), source=source, text=part.text)


async def excerpt(p: PipelineHost, s: CallState) -> None:
    """12. Over the limit: head, marker and tail, each piece in its own envelope; the whole to an artifact."""
    if not isinstance(s.disposition, Success) or s.prepared is None:
        return
    content = s.disposition.content
    limit = p.config.max_output_bytes
    if 4 * sum(len(e.text) for e in content) <= limit:
        return  # Even at four bytes a character it fits: no need to look closer.
    stream = s.prepared.parts.artifact_writer.stream(FULL_OUTPUT_ARTIFACT)
    excerpted = excerpt_parts(((e.trust, e.source, chunked(e.text)) for e in content), limit, stream.write)
    if not excerpted.excerpted:
        stream.discard()
        return
    full = stream.finish()
    s.disposition = s.disposition.model_copy(
        update={"content": excerpted.envelopes, "artifacts": [*s.disposition.artifacts, full]}
    )


def wall_clock() -> float:
    """Now, for deadlines: real time, so a hanging tool is cut off however the injected clock moves."""
    return time.time()
