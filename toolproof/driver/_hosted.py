"""The driver's view of the harness: its clock as pushed, and its tools as ordinary ``Tool``s.

A hosted tool executes in the harness's tool host; while it runs, its execution context
waits in the ``ContextRegistry`` for the callbacks (watermark, artifacts, credentials)
the tool host makes to the driver.
"""

from __future__ import annotations

import tracemalloc
import uuid
from typing import Any

import anyio
import httpx2

from toolproof.spec import (
    ExecuteTool,
    JsonObject,
    SimulatedCrash,
    ToolContext,
    ToolExecutionContext,
    ToolOutcome,
    ToolSpec,
    crash_now,
)


class PushedClock:
    """The harness's clock as last pushed in the ``Toolproof-Now`` header."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        """The last time the harness said it was."""
        return self._now

    def push(self, now: float | None) -> None:
        """Move to ``now`` when the harness sent one."""
        if now is not None:
            self._now = now


class ContextRegistry:
    """Execution contexts of tools executing now, by the id the tool host calls back with."""

    def __init__(self) -> None:
        self.contexts: dict[str, ToolExecutionContext] = {}
        self.trace_results = False
        """``?probe=memory``: start tracing memory as soon as a tool's result has arrived."""


class HostedTool:
    """A harness tool, executed by the tool host; the pipeline under test sees an ordinary ``Tool``."""

    def __init__(self, spec: ToolSpec, host: str, driver_url: str, contexts: ContextRegistry) -> None:
        self._spec = spec
        self._host = host.rstrip("/")
        self._driver_url = driver_url
        self._contexts = contexts

    @property
    def spec(self) -> ToolSpec:
        """The spec the harness registered."""
        return self._spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        """Run the tool in the harness; its mark, artifacts and credentials call back to this driver."""
        context_id = uuid.uuid4().hex
        self._contexts.contexts[context_id] = context
        wire = ToolContext(
            context_id=context_id,
            driver_url=self._driver_url,
            identity=context.identity,
            budget=context.budget,
            deadline=context.deadline,
            target=context.target,
            workspace=str(context.workspace),
        )
        request = ExecuteTool(tool=self._spec.name, arguments=arguments, context=wire)
        try:
            async with httpx2.AsyncClient(timeout=None) as client:
                answer = await client.post(f"{self._host}/v1/tools/execute", json=request.model_dump(mode="json"))
            outcome = ToolOutcome.model_validate_json(answer.content)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                async with httpx2.AsyncClient(timeout=5) as client:
                    await client.post(f"{self._host}/v1/contexts/{context_id}/cancel")
            raise
        except httpx2.TransportError:
            # The harness worker holding the tool died (a SIGKILL crash point): this call's worker died
            # with it. Nothing more is written for it; the row stays as it was for recovery to judge.
            raise SimulatedCrash("the harness worker executing the tool vanished") from None
        finally:
            self._contexts.contexts.pop(context_id, None)
        if self._contexts.trace_results and not tracemalloc.is_tracing():
            tracemalloc.start()  # From here on, what the pipeline allocates is the implementation's own.
        if outcome.crash is not None:
            crash_now(outcome.crash)
        if outcome.raised is not None:
            raise RuntimeError(f"the harness tool raised {outcome.raised}")
        return outcome.result
