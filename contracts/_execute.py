"""Running one example: a fresh tool, a fresh workspace, one or two attempts, observed.

Under confinement an example runs in a child process (see ``_confined``). Otherwise it runs
in its own thread with its own event loop under the audit gate, so a check works from sync
code, from inside a running event loop, and against a tool that will not stop: a tool still
running ``GRACE_S`` after its deadline is abandoned (its thread is a daemon) and the check
goes on; a confined one is killed.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable

import anyio

from toolproof.spec import ConfigurationError, HarnessError, JsonObject, Tool, ToolSpec

from . import _gate
from ._attempts import AttemptPlan, AttemptRun, run_attempts
from ._confined import run_confined
from ._example import GRACE_S, NORMAL_DEADLINE_S, ExampleRun
from ._leftovers import Leftovers
from ._options import CheckOptions
from ._result import describe_error
from ._trace import EventKind
from ._transport import TransportMode
from ._world import ContractWorld, ExampleWorld, snapshot


class _Progress:
    """Shared with the example's thread: the absolute deadline of the attempt in progress."""

    def __init__(self) -> None:
        self.deadline = math.inf


class _ThreadHost:
    """An example in a thread of this process: events go straight to its trace."""

    def __init__(self, example: ExampleWorld, progress: _Progress) -> None:
        self.example = example
        self.progress = progress
        self._leftovers = Leftovers()

    def begin(self, number: int, deadline: float) -> None:
        self.example.trace.attempt = number
        self.progress.deadline = deadline
        self._leftovers.begin()

    def event(self, kind: EventKind, text: str) -> None:
        if kind is EventKind.END:
            self.progress.deadline = math.inf  # execute has ended: what it left running is waited for, bounded
        self.example.trace.add(kind, text)

    def running(self) -> str:
        return self._leftovers.running()

    async def settle(self) -> None:
        await self.example.recorder.settle()
        self.example.checkpoint()

    def deadline_passed(self) -> None:
        self.example.recorder.release()

    async def finish(self, attempt: AttemptRun) -> None:
        attempt.keys = self.example.recorder.keys(attempt.number)
        attempt.workspace_after = snapshot(self.example.workspace)
        attempt.service_after = self.example.recorder.state()


class Runner:
    """Runs examples of one tool in one ContractWorld."""

    def __init__(
        self, factory: Callable[[], Tool], spec: ToolSpec, world: ContractWorld, options: CheckOptions | None = None
    ) -> None:
        self.factory = factory
        self.spec = spec
        self.world = world
        self.options = options or CheckOptions()
        self.effects_seen = 0
        """Examples in which some effect was observed (for the 'nothing to judge' warning)."""
        self.marks_seen = 0
        """Examples in which the tool marked."""
        self.reads_only: ExampleRun | None = None
        """The first example whose only contact with the world was safe requests."""
        self.deadlines_reached = 0
        """Ordinary examples that ran into their deadline."""
        self.left_running: list[str] = []
        """What runs (examples and probes) left running past the wait after an execution (``1 thread``), one each."""

    @property
    def confined(self) -> bool:
        """Whether examples run confined."""
        return self.world.net is not None

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
        hold_s = limit + 3 * GRACE_S
        if self.confined:
            run = run_confined(
                self.factory,
                self.spec,
                self.world,
                copy.deepcopy(arguments),
                attempts,
                mode,
                limit,
                hold_s,
                stall,
                label,
            )
        else:
            run = self._run_in_thread(copy.deepcopy(arguments), attempts, mode, limit, hold_s, stall, label)
        events = run.trace.events()
        if any(e.effect or e.kind is EventKind.OUTSIDE for e in events) or run.changes:
            self.effects_seen += 1
        if any(e.kind is EventKind.MARK for e in events):
            self.marks_seen += 1
        elif (
            self.reads_only is None
            and any(e.kind is EventKind.HTTP for e in events)
            and not any(e.effect or e.kind is EventKind.OUTSIDE for e in events)
        ):
            self.reads_only = run
        if deadline_s is None and any(a.cancelled for a in run.attempts):
            self.deadlines_reached += 1
        still = next((a.left_running for a in run.attempts if a.left_running), "")
        if still:
            self.left_running.append(still)
        return run

    def make_tool(self) -> Tool:
        """A fresh tool from the factory."""
        try:
            return self.factory()
        except Exception as exc:
            raise ConfigurationError(f"the tool factory raised {type(exc).__name__} on a later call: {exc}") from None

    def _run_in_thread(
        self,
        arguments: JsonObject,
        attempts: int,
        mode: TransportMode,
        limit: float,
        hold_s: float,
        stall: bool,
        label: str,
    ) -> ExampleRun:
        tool = self.make_tool()
        example = self.world.example(mode, hold_s=hold_s)
        run = ExampleRun(arguments, example.trace)
        progress = _Progress()
        failure: list[BaseException] = []
        plan = AttemptPlan(arguments, attempts, limit, self.world.recorder.target, example.workspace, stall, label)
        host = _ThreadHost(example, progress)

        async def main() -> None:
            await run_attempts(tool, self.spec, plan, host, run.attempts)

        def target() -> None:
            try:
                anyio.run(main)
            except BaseException as exc:  # A harness bug surfaces in the caller's thread, not here.
                failure.append(exc)
            progress.deadline = math.inf

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
            arrivals = self.world.recorder.end()
        if failure:
            raise HarnessError(f"the contract harness failed: {describe_error(failure[0])}") from failure[0]
        run.stray_keys = sorted({a.stray_key for a in arrivals if a.stray_key})
        return run
