"""What one call carries through the steps, and the shape of a step.

A step is ``async def step(pipeline, state) -> None``; ``_steps`` maps every ``Step`` to one.
Step 1 resolves the call's name into a ``Resolved`` record; the steps that need it (2, 5, 8-11)
are written as ``async def step(pipeline, state, resolved)`` and adapted by ``resolved_step``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import TypeAdapter

from toolproof.spec import (
    Disposition,
    Envelope,
    Outcome,
    ProposedCall,
    ReasonCode,
    StepRequest,
    Tool,
    ToolExecutionContext,
    ToolSpec,
    TrustLabel,
)

from ._context import ContextParts
from ._policy import Decision
from ._tables import InvocationTable

if TYPE_CHECKING:
    from ._pipeline import Pipeline

DISPOSITION: TypeAdapter[Disposition] = TypeAdapter(Disposition)
"""Reads and writes a disposition as the JSON a row keeps."""


@dataclass(frozen=True)
class Resolved:
    """What step 1 found for the call's name: the spec and the tool the later steps run."""

    spec: ToolSpec
    tool: Tool


@dataclass(frozen=True)
class Prepared:
    """What step 9 built: the context handed to the tool, and the parts it was built from."""

    parts: ContextParts
    context: ToolExecutionContext


@dataclass
class CallState:
    """Everything one call accumulates on its way through the steps."""

    request: StepRequest
    call: ProposedCall
    invocation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    resolved: Resolved | None = None
    """Set by step 1; None only on a call step 1 decided (unknown, withdrawn, changed)."""
    key: str = ""
    call_hash: str = ""
    """Tool name and canonical arguments: what 'identical' means to the breaker."""
    origin_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    argument_trust: TrustLabel = TrustLabel.EXTERNAL_UNTRUSTED
    decision: Decision = Decision.ALLOW
    existing: InvocationTable | None = None
    """The row this call's key already has (a replay, or a call resumed from the store)."""
    recorded: bool = False
    """A row exists, so step 13 updates rather than inserts."""
    attempt: int = 0
    answer: str | None = None
    """The run's answer, for a resumed control call."""
    prepared: Prepared | None = None
    """Set by step 9 (again for every retry)."""
    marked: bool = False
    """mark_effect_sent() committed the watermark."""
    raw_result: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    disposition: Disposition | None = None
    """Set by the step that decides the call; steps up to 13 are then skipped."""
    leave_row: bool = False
    """The row already says all there is (a replay, a hold, another worker's lease): step 13 writes nothing."""

    def finish(self, reason: ReasonCode, detail: Envelope | None = None) -> None:
        """Decide a non-success outcome from the table."""
        self.disposition = Outcome.of(reason, self.invocation_id, detail)


StepFunction: TypeAlias = Callable[["Pipeline", CallState], Awaitable[None]]
"""One entry of the step table."""
ResolvedStepFunction: TypeAlias = Callable[["Pipeline", CallState, Resolved], Awaitable[None]]
"""A step that needs what step 1 resolved."""


def resolved_step(step: ResolvedStepFunction) -> StepFunction:
    """Adapt a step that needs what step 1 resolved to the table's signature.

    Invariant: ``drive`` runs steps 2-11 only on an undecided call, and step 1 decides every call it
    cannot resolve, so ``resolved`` is set whenever one of them runs.
    """

    @functools.wraps(step)
    async def run(pipeline: Pipeline, state: CallState) -> None:
        if state.resolved is None:
            raise RuntimeError(
                f"step function {step.__qualname__} ran on call_id={state.call.call_id!r}, which step 1 did not "
                "resolve; run it only on an undecided call (drive skips decided ones)"
            )
        await step(pipeline, state, state.resolved)

    return run
