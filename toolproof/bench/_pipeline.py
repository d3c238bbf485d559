"""The reference pipeline under ``toolproof bench``: single calls through the fourteen steps, and batches.

The instance is opened once in an event loop on a portal thread, so its repetitions can be
interleaved with a synchronous peer in the same run; every repetition is timed inside the loop.
``open``, ``attach`` and ``timed`` run the same calls in the caller's own loop instead, where a
profiler that watches one thread (pyinstrument, cProfile) sees them.
"""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from anyio.from_thread import BlockingPortal, start_blocking_portal

from toolproof.fakes import EchoTool, FakeClock, SlowTool, World, WriteTool
from toolproof.reference import ReferenceImplementation, ReferenceInstance
from toolproof.spec import (
    ContextItem,
    Disposition,
    HarnessError,
    InstanceConfig,
    ProposedCall,
    StepRequest,
    Success,
    TrustLabel,
)

from ._sqlite import CommitCounter, engine_settings

Workload = Literal["read", "write"]
"""``read``: an IDEMPOTENT read-only tool, no approval. ``write``: a NON_IDEMPOTENT write that sets the watermark."""

TOOLS: dict[Workload, str] = {"read": EchoTool.default_name, "write": WriteTool.default_name}
"""The fake tool each workload calls."""

_USER = ContextItem(id="user-1", trust=TrustLabel.USER, text="please do it")
# Arguments carried from a USER item: the policy allows the consequential write without an approval hold.
_PROVENANCE = {"text": [_USER.id]}


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed repetition."""

    seconds: float
    """Wall time of the repetition."""
    calls: int
    """Calls it made."""
    commits: int
    """Transactions that committed a write meanwhile, counted on the system's own engine."""

    @property
    def calls_per_s(self) -> float:
        """Throughput."""
        return self.calls / self.seconds

    @property
    def ms_per_call(self) -> float:
        """Per-call latency (calls run one after another)."""
        return 1000 * self.seconds / self.calls

    @property
    def commits_per_call(self) -> float:
        """Committed write transactions per call."""
        return self.commits / self.calls


def _succeeded(dispositions: list[Disposition], what: str) -> None:
    for disposition in dispositions:
        if not isinstance(disposition, Success):
            raise HarnessError(
                f"bench {what}: a call ended {disposition.status!r}, not SUCCEEDED; the figure would lie"
            )


class ReferenceRig:
    """The reference pipeline with the read, write and slow tools registered, in ``directory``.

    Args:
        directory: Fresh folder for the store and the workspace.
        batch_wait_s: How long each batch call waits (the slow tool's pause).
    """

    def __init__(self, directory: Path, batch_wait_s: float) -> None:
        self.directory = directory
        self.world = World()
        self.tools = [EchoTool(self.world), WriteTool(self.world), SlowTool(self.world, pause_s=batch_wait_s)]
        self._stack = ExitStack()
        self._portal: BlockingPortal | None = None
        self._instance: ReferenceInstance | None = None
        self._counter: CommitCounter | None = None
        self._step = 0

    def __enter__(self) -> ReferenceRig:
        self._portal = self._stack.enter_context(start_blocking_portal())
        self.attach(self._stack.enter_context(self._portal.wrap_async_context_manager(self.open())))
        return self

    def open(self) -> AbstractAsyncContextManager[ReferenceInstance]:
        """The reference instance over a fresh store in ``directory``, to enter in the caller's event loop."""
        workspace = self.directory / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        config = InstanceConfig(store_dir=self.directory / "store", workspace=workspace)
        return ReferenceImplementation().open(config, self.tools, FakeClock())

    def attach(self, instance: ReferenceInstance) -> None:
        """Measure ``instance`` (opened by ``open``) and count its commits until the rig closes."""
        self._instance = instance
        store = instance.store
        self._counter = CommitCounter(store.engine, lambda: store.hot_commits)
        self._stack.callback(self._counter.detach)

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop counting commits, and close the instance and portal if the rig opened them."""
        self._stack.close()

    def settings(self) -> dict[str, str]:
        """Journal mode and synchronous level of the reference store, read back from its engine."""
        assert self._instance is not None
        return engine_settings(self._instance.store.engine)

    def _next_step(self) -> int:
        self._step += 1
        return self._step

    def requests(self, workload: Workload, tag: str, calls: int) -> list[StepRequest]:
        """``calls`` single-call steps of ``workload`` in run ``bench-{tag}``."""
        tool = TOOLS[workload]
        return [
            StepRequest(
                run_id=f"bench-{tag}",
                step_number=self._next_step(),
                context=[_USER],
                calls=[
                    ProposedCall(
                        call_id=f"c{index}",
                        tool_name=tool,
                        arguments={"text": f"{tag} {index}"},
                        provenance=_PROVENANCE,
                    )
                ],
            )
            for index in range(calls)
        ]

    def run_calls(self, workload: Workload, calls: int, tag: str) -> Sample:
        """``calls`` single-call steps of ``workload``, one after another; requests are built before the clock starts."""
        return self.run(self.requests(workload, tag, calls), f"{workload} {tag}")

    def run(self, requests: list[StepRequest], what: str) -> Sample:
        """Submit ``requests`` one after another in the rig's event loop, timed (``what`` names them in errors)."""
        assert self._portal is not None
        return self._portal.call(self.timed, requests, what)

    async def timed(self, requests: list[StepRequest], what: str) -> Sample:
        """Submit ``requests`` one after another in the instance's event loop, timed; every call must succeed."""
        assert self._instance is not None
        assert self._counter is not None
        before = self._counter.count
        dispositions: list[Disposition] = []
        started = time.perf_counter()
        for request in requests:
            dispositions.extend(await self._instance.submit(request))
        seconds = time.perf_counter() - started
        _succeeded(dispositions, what)
        calls = sum(len(request.calls) for request in requests)
        return Sample(seconds=seconds, calls=calls, commits=self._counter.count - before)

    def run_batch(self, size: int, *, parallel: bool, tag: str) -> Sample:
        """``size`` slow reads: one batch of ``size`` calls (parallel), or ``size`` one-call steps (sequential)."""
        assert self._portal is not None
        tool = self.tools[2].spec.name
        # Distinct arguments: identical calls in one run would be the breaker's business, not the batch's.
        calls = [ProposedCall(call_id=f"c{index}", tool_name=tool, arguments={"part": index}) for index in range(size)]
        run_id = f"bench-batch-{tag}"
        if parallel:
            requests = [StepRequest(run_id=run_id, step_number=self._next_step(), calls=calls)]
        else:
            requests = [StepRequest(run_id=run_id, step_number=self._next_step(), calls=[call]) for call in calls]
        return self._portal.call(self.timed, requests, f"batch {tag}")
