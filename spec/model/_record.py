"""What the model remembers of one call: its row as it must be, and what the world saw of it."""

from __future__ import annotations

from dataclasses import dataclass, field

from toolproof.spec import ContextItem, EventKind, InvocationStatus, ProposedCall, ReasonCode, ToolSpec, TrustLabel

from ._catalog import ModelTool
from .d01 import Delivery
from .d04 import Run
from .d13 import Verdict

CallRef = tuple[str, int, str]
"""A call named as the harness knows it: run, step number, call_id."""


@dataclass
class Record:
    """One call's expected row, events and effects, as the model's state holds them."""

    ref: CallRef
    tenant: str
    call: ProposedCall
    context: tuple[ContextItem, ...]
    tool: ModelTool | None
    key: tuple[object, ...]
    identical: str | None
    """The breaker's identity (call hash), once the call reached step 4."""
    origin: TrustLabel | None = None
    argument: TrustLabel | None = None
    status: InvocationStatus = InvocationStatus.RECORDED
    reason: ReasonCode | None = None
    verdicts: tuple[Verdict, ...] = ()
    """Allowed terminal judgements until the judge settles which one the implementation gave."""
    suspended: bool = False
    held_since: float | None = None
    executions: int = 0
    effects: int = 0
    attempt: int = 0
    """The row's attempt: one per claim and one per retry within a step (D10.2), across worker lives."""
    attempts: list[int] = field(default_factory=list)
    """The attempt number each execution the world saw was handed, in order."""
    created_at: float = 0.0
    """The model's clock when step 6 recorded it."""
    lease_until: float | None = None
    """When the lease of its last claim ends (a RUNNING row is an orphan past it)."""
    decided: str = "allow"
    """Step 5's recorded decision for a recorded call: allow, approval or control (what a recovering worker follows)."""
    crash_rules: tuple[str, ...] = ()
    """The rules that decide what a crash left of this call and how it is recovered (``d04_crash``)."""
    recovered_optional: bool = False
    """Whether its one tool_call.recovered event may be missing (a recovery the ADR does not say logs one)."""
    watermark: bool = False
    events: list[EventKind] = field(default_factory=list)
    run: Run | None = None
    delivery: Delivery | None = None
    answer: str | None = None
    replayed: int = 0
    """How often the call was submitted again (D3.4)."""
    pre_record: bool = False
    """Refused before step 6: a replay may write its own row (the same verdict)."""
    remote: tuple[str, str] | None = None
    """An MCP tool's server and remote name: where its executions are counted (the server's own log)."""
    branch_rules: tuple[str, ...] = ()
    """Rules of the branches that shaped its tool beyond its spec (an MCP tool's: the model's page ``mcp``)."""

    @property
    def spec(self) -> ToolSpec | None:
        """The resolved spec, if any."""
        return self.tool.spec if self.tool is not None else None

    @property
    def terminal(self) -> bool:
        """Whether step 13 has written it."""
        return bool(self.verdicts)

    def path_rules(self) -> tuple[str, ...]:
        """The rules that decide how often this call's tool ran, by the path it took."""
        if self.executions:
            return tuple(dict.fromkeys(r for v in self.verdicts for r in v.rules)) or ("D3.1",)
        if self.pre_record:
            return ("D3.3",)
        if self.status is InvocationStatus.AWAITING_APPROVAL:
            return ("D11.5",)
        if self.suspended:
            return ("D16.2",)
        return tuple(dict.fromkeys(r for v in self.verdicts for r in v.rules)) or ("D3.1",)

    def allowed_events(self) -> list[list[EventKind]]:
        """The event sequences allowed: its events, and without any of its tool_call.recovered where those are
        optional."""
        out = [list(self.events)]
        if self.recovered_optional:
            for i, kind in reversed(list(enumerate(self.events))):
                if kind is EventKind.RECOVERED:
                    out += [[k for j, k in enumerate(events) if j != i] for events in out]
        return out

    def settle(self, status: str, reason: str | None) -> bool:
        """Fix the verdict to the one observed, when the model allowed it; False when it did not."""
        for verdict in self.verdicts:
            if verdict.key == (status, reason):
                self.verdicts = (verdict,)
                self.status, self.reason = verdict.status, verdict.reason
                return True
        return False

    def finish(self, verdicts: tuple[Verdict, ...]) -> None:
        """Step 13: the allowed verdicts (the first stands until settled)."""
        self.verdicts = verdicts
        self.status, self.reason = verdicts[0].status, verdicts[0].reason
        self.suspended = False
        self.events.append(EventKind.COMPLETED)
