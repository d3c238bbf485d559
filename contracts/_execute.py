"""Running one example: a fresh tool, a fresh workspace, one or two attempts, under the gate.

Each example runs in its own thread with its own event loop, so a check works from sync
code, from inside a running event loop, and against a tool that will not stop: a tool
still running ``GRACE_S`` after its deadline is abandoned (its thread is a daemon) and the
check goes on.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel

from toolproof.spec import ConfigurationError, HarnessError, Identity, JsonObject, Tool, ToolResult, ToolSpec

from . import _gate
from ._context import ContractContext, request_cancellation
from ._trace import EventKind, Trace
from ._transport import TransportMode, short_key
from ._world import ContractWorld, ExampleWorld, WorldState

NORMAL_DEADLINE_S = 1.0
"""Cap on the deadline of an ordinary example (the spec's ``deadline_s`` when shorter)."""
PROBE_DEADLINE_S = 0.2
"""The deadline of the deadline probe."""
GRACE_S = 0.5
"""How long a tool may take to stop once cancelled before it is abandoned."""


@dataclass
class AttemptRun:
    """What one execution attempt did, as the harness saw it."""

    number: int
    identity: Identity
    returned: Any = None
    finished: bool = False
    """``execute`` returned (``returned`` holds what)."""
    raised: BaseException | None = None
    cancelled: bool = False
    """The deadline passed and the harness cancelled the attempt."""
    state_after: WorldState | None = None
    keys: list[str] = field(default_factory=list)
    """Idempotency-Key headers the service received during the attempt."""


@dataclass
class ExampleRun:
    """One example: its arguments, its world and trace, and its attempts."""

    arguments: JsonObject
    world: ExampleWorld
    attempts: list[AttemptRun] = field(default_factory=list)
    abandoned: bool = False
    """The tool was still running ``GRACE_S`` after a deadline."""

    @property
    def trace(self) -> Trace:
        """The example's trace."""
        return self.world.trace


def idempotency_key(spec: ToolSpec, arguments: JsonObject) -> str:
    """The key the contract hands the tool: stable for a tool, version and arguments, never the attempt."""
    canonical = json.dumps([spec.name, spec.version, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def describe_result(raw: Any) -> str:
    """What ``execute`` returned, as the trace shows it (never a repr with an address)."""
    if isinstance(raw, ToolResult) and type(raw) is ToolResult:
        extra = f", failure={raw.failure.kind}" if raw.failure else ""
        extra += f", trust={raw.trust.value}" if raw.trust else ""
        return f"returned ToolResult(ok={raw.ok}{extra})"
    if isinstance(raw, BaseModel):
        return f"returned {type(raw).__name__} with fields {sorted(raw.model_dump())}"
    if isinstance(raw, Mapping):
        return f"returned a {type(raw).__name__} with keys {sorted(map(str, raw))}"
    return f"returned {type(raw).__name__}"


def describe_error(exc: BaseException) -> str:
    """An exception as the trace shows it."""
    text = str(exc)
    text = text if len(text) <= 160 else text[:157] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Progress:
    """Shared with the example's thread: the absolute deadline of the attempt in progress."""

    def __init__(self) -> None:
        self.deadline = math.inf


class Runner:
    """Runs examples of one tool in one ContractWorld."""

    def __init__(self, factory: Callable[[], Tool], spec: ToolSpec, world: ContractWorld) -> None:
        self.factory = factory
        self.spec = spec
        self.world = world
        self.effects_seen = 0
        """Examples in which some effect was observed (for the 'nothing to judge' note)."""
        self.deadlines_reached = 0
        """Ordinary examples that ran into their deadline."""

    def run(
        self,
        arguments: JsonObject,
        *,
        attempts: int = 1,
        mode: TransportMode = TransportMode.ANSWER,
        deadline_s: float | None = None,
        stall: bool = False,
        label: str = "",
    ) -> ExampleRun:
        """Run ``attempts`` executions of a fresh tool with ``arguments`` (the same key each time).

        ``label`` names a probe in the trace's attempt headers.
        """
        __tracebackhide__ = True
        limit = deadline_s if deadline_s is not None else min(self.spec.deadline_s, NORMAL_DEADLINE_S)
        try:
            tool = self.factory()
        except Exception as exc:
            raise ConfigurationError(f"the tool factory raised {type(exc).__name__} on a later call: {exc}") from None
        example = self.world.example(mode, hold_s=limit + 3 * GRACE_S)
        run = ExampleRun(copy.deepcopy(arguments), example)
        progress = _Progress()
        failure: list[BaseException] = []

        async def main() -> None:
            for number in range(1, attempts + 1):
                await self._attempt(tool, run, number, limit, stall, progress, label)
            progress.deadline = math.inf

        def target() -> None:
            try:
                anyio.run(main)
            except BaseException as exc:  # A harness bug surfaces in the caller's thread, not here.
                failure.append(exc)

        try:
            with _gate.watching(example):
                thread = threading.Thread(target=target, name="toolproof-contract-example", daemon=True)
                thread.start()
                while thread.is_alive():
                    thread.join(0.01)
                    if thread.is_alive() and time.time() > progress.deadline + GRACE_S:
                        run.abandoned = True
                        example.trace.add(EventKind.END, f"still running {GRACE_S}s after its deadline: abandoned")
                        break
        finally:
            self.world.recorder.end()
        if failure:
            raise HarnessError(f"the contract harness failed: {describe_error(failure[0])}") from failure[0]
        if any(e.effect or e.kind is EventKind.OUTSIDE for e in example.trace.events()):
            self.effects_seen += 1
        if deadline_s is None and any(a.cancelled for a in run.attempts):
            self.deadlines_reached += 1
        return run

    async def _attempt(
        self, tool: Tool, run: ExampleRun, number: int, limit: float, stall: bool, progress: _Progress, label: str
    ) -> None:
        example = run.world
        key = idempotency_key(self.spec, run.arguments)
        identity = Identity(
            tenant="contract-tenant",
            run_id="contract-run",
            step_number=1,
            call_id="call-1",
            invocation_id="contract-invocation",
            tool_name=self.spec.name,
            tool_version=self.spec.version,
            attempt=number,
            idempotency_key=key,
        )
        attempt = AttemptRun(number, identity)
        run.attempts.append(attempt)
        example.trace.attempt = number
        header = f"attempt {number}{' of the ' + label if label else ''} (idempotency key {short_key(key)})"
        example.trace.add(EventKind.ATTEMPT, header)

        async def before_mark() -> None:
            await example.recorder.settle()
            example.checkpoint()

        deadline = time.time() + limit
        progress.deadline = deadline
        context = ContractContext(
            identity=identity,
            deadline=deadline,
            target=example.recorder.target,
            workspace=example.workspace,
            scopes=self.spec.required_scopes,
            trace=example.trace,
            before_mark=before_mark,
            stall=stall,
        )
        async with anyio.create_task_group() as group:

            async def watchdog() -> None:
                await anyio.sleep(max(0.0, deadline - time.time()))
                attempt.cancelled = True
                example.trace.add(EventKind.CANCEL, "deadline reached: the tool's scope cancelled, cancellation set")
                # Scope first: a tool waiting inside the context gets Cancelled rather than a normal return.
                group.cancel_scope.cancel()
                request_cancellation(context)
                example.recorder.release()

            group.start_soon(watchdog)
            try:
                attempt.returned = await tool.execute(copy.deepcopy(run.arguments), context)
                attempt.finished = True
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # The tool's exception is an observation, whatever its kind.
                attempt.raised = exc
            group.cancel_scope.cancel()
        await example.recorder.settle()
        example.checkpoint()
        attempt.keys = example.recorder.keys(number)
        if attempt.finished:
            example.trace.add(EventKind.END, describe_result(attempt.returned))
        elif attempt.raised is not None:
            example.trace.add(EventKind.END, f"raised {describe_error(attempt.raised)}")
        else:
            example.trace.add(EventKind.END, "cancelled at its deadline")
        attempt.state_after = example.state()
