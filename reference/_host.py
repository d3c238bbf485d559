"""What a step may ask of the pipeline that runs it: the interface the step modules depend on.

The steps (``_logic``, ``_persist``, ``_execute``, ``_finish``) and the bridge are written against
``PipelineHost``, never against ``Pipeline``: the pipeline imports its step table, and the steps need
only these members of it. ``Pipeline`` provides all of them; a witness's step function takes a
``PipelineHost`` like the reference's own.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeAlias

from toolproof.spec import (
    Clock,
    Disposition,
    InstanceConfig,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    Step,
    StepRequest,
    Tool,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
)

from ._context import ContextParts
from ._mcp import McpAdapter
from ._registry import Registry
from ._state import CallState, Resolved
from ._store import Store
from ._tables import InvocationTable


class PipelineHost(Protocol):
    """The members of the pipeline a step, the bridge or a witness's step function uses."""

    config: InstanceConfig
    """The instance's configuration."""
    registry: Registry
    """The builtin tools."""
    store: Store
    """The committed rows, events, holds and metrics."""
    worker_id: str
    """This worker, as leases name it."""
    clock: Clock
    """The injected clock holds and leases are judged by."""
    mcp: McpAdapter | None
    """The MCP adapter, when servers are configured."""

    @property
    def steps(self) -> Mapping[Step, StepFunction]:
        """The step table the pipeline runs."""
        ...

    async def drive(self, state: CallState, start: Step | None = None) -> Disposition:
        """Run ``state`` through the step table from ``start`` (default the first)."""
        ...

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        """Run one proposed call through the fourteen steps (the bridge's calls re-enter here)."""
        ...

    def lookup(self, run_id: str, name: str) -> tuple[ToolSpec, Tool] | None:
        """A registered builtin, or the tool pinned in the run's session."""
        ...

    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        """Step 4: status and reason of the earlier identical calls of the run."""
        ...

    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        """Step 4: the breaker's verdict."""
        ...

    def escaped(self, row: InvocationTable, spec: ToolSpec | None) -> bool:
        """Step 8 and recovery: whether a dead worker's call may have left a mark a retry would repeat."""
        ...

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        """Step 9: what the context is built from."""
        ...

    def context_for(self, parts: ContextParts) -> ToolExecutionContext:
        """Step 9: the context handed to the tool."""
        ...

    def parse_result(self, raw: Any) -> ToolResult | None:
        """Steps 10 and 11: what the tool returned, as a ToolResult; None when it is not one."""
        ...

    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        """Step 11: whether a successful result's structure may be delivered."""
        ...

    def metrics_for(self, s: CallState, status: InvocationStatus) -> list[str]:
        """Step 13: the counters incremented with the terminal status."""
        ...


StepFunction: TypeAlias = Callable[[PipelineHost, CallState], Awaitable[None]]
"""One entry of the step table."""
ResolvedStepFunction: TypeAlias = Callable[[PipelineHost, CallState, Resolved], Awaitable[None]]
"""A step that needs what step 1 resolved."""


def resolved_step(step: ResolvedStepFunction) -> StepFunction:
    """Adapt a step that needs what step 1 resolved to the table's signature.

    Invariant: ``drive`` runs steps 2-11 only on an undecided call, and step 1 decides every call it
    cannot resolve, so ``resolved`` is set whenever one of them runs.
    """

    @functools.wraps(step)
    async def run(pipeline: PipelineHost, state: CallState) -> None:
        if state.resolved is None:
            raise RuntimeError(
                f"step function {step.__qualname__} ran on call_id={state.call.call_id!r}, which step 1 did not "
                "resolve; run it only on an undecided call (drive skips decided ones)"
            )
        await step(pipeline, state, state.resolved)

    return run
