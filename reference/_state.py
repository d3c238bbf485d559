"""What one call carries through the steps: its state, and the records steps 1 and 9 add to it.

Step 1 resolves the call's name into a ``Resolved`` record; step 9 builds the ``Prepared`` context. The shape of
a step is ``_host.StepFunction``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from toolproof.spec import (
    Disposition,
    Envelope,
    Outcome,
    ProposedCall,
    ReasonCode,
    StepRequest,
    StoreFault,
    Tool,
    ToolExecutionContext,
    ToolSpec,
    TrustLabel,
)

from ._context import ContextParts
from ._policy import Decision
from ._tables import InvocationTable

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
    store_fault: StoreFault | None = None
    """mark_effect_sent() failed to commit the watermark: step 10 ends in this, whatever the tool did with it."""
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
