"""What a scenario uses to talk to an implementation: the port, a world, and a reproduction log.

Scenarios never import an implementation; they get one through the ``harness`` fixture.
"""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio

from toolproof.fakes import FakeClock, World
from toolproof.spec import (
    OUTCOME_TABLE,
    Advertisement,
    ArtifactRef,
    CatalogChange,
    ConfigurationError,
    ConformanceFailure,
    ContextItem,
    CrashCell,
    Disposition,
    Event,
    EventKind,
    FaultCell,
    Implementation,
    Instance,
    InstanceConfig,
    InvocationRow,
    MeasuresExcerptMemory,
    NotCovered,
    Outcome,
    ProposedCall,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    Success,
    Tool,
    TrustLabel,
    checked_instance,
    new_run_id,
)

USER_ITEM = ContextItem(id="user-1", trust=TrustLabel.USER, text="Please do what I asked.")
"""The default context: one USER message, from which every argument is said to come."""


def describe(disposition: Disposition) -> str:
    """One line for a reproduction."""
    if isinstance(disposition, Outcome):
        return f"{disposition.status.value} {disposition.reason_code.value}"
    if isinstance(disposition, Success):
        return "SUCCEEDED " + json.dumps([e.text[:60] for e in disposition.content])
    return f"SUSPENDED ({disposition.reason})"


class Harness:
    """Opens instances of the implementation under test and keeps the reproduction."""

    def __init__(
        self, implementation: Implementation, directory: Path, implementation_ref: str = "", *, run_id: str = ""
    ) -> None:
        self.implementation = implementation
        self.implementation_ref = implementation_ref or implementation.name
        self.run_id = run_id or new_run_id()
        """The run the scenario's records belong to."""
        self.crash_cells: list[CrashCell] = []
        """Crash-matrix cells the scenario judged, in the order it judged them."""
        self.fault_cells: list[FaultCell] = []
        """Fault-matrix cells the scenario judged, in the order it judged them."""
        self.cleanups: list[Callable[[], None]] = []
        self.world = World()
        self.clock = FakeClock()
        self.directory = directory
        self.log: list[str] = []
        self.everywhere: dict[str, str] = {}
        """The checks made on everything a scenario observes (``Rule.everywhere``) that failed: rule id -> the first
        violation, with the reproduction up to it. The plugin turns each into a failing row of that rule."""
        self._opened = 0
        self.progress: Callable[[str], None] = lambda text: None
        """Says how far a long scenario has gone (examples done, of how many) while it runs; any thread may call
        it. The run prints it beside the cell's name (``toolproof run`` on stderr); elsewhere it says nothing."""

    def config(self, **overrides: Any) -> InstanceConfig:
        """A config over fresh directories; ``overrides`` replace fields."""
        self._opened += 1
        workspace = self.directory / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        fields: dict[str, Any] = {"store_dir": self.directory / "store", "workspace": workspace}
        return InstanceConfig(**(fields | overrides))

    def _log_tools(self, tools: Sequence[Tool]) -> None:
        for tool in tools:
            s = tool.spec
            self.log.append(
                f"register {s.name} ({type(tool).__name__}: kind={s.kind.value} source={s.source.value} "
                f"side_effect={s.side_effect.value} idempotency={s.idempotency.value} output_trust={s.output_trust.value})"
            )

    @asynccontextmanager
    async def open(self, *tools: Tool, **config: Any) -> AsyncIterator[Session]:
        """Open an instance with ``tools`` registered; the session talks to it."""
        self._log_tools(tools)
        async with self.implementation.open(self.config(**config), list(tools), self.clock) as instance:
            yield Session(self, checked_instance(instance))

    @asynccontextmanager
    async def reader(self, **config: Any) -> AsyncIterator[Session]:
        """A second instance over the same store, with no tools: what it reads is committed, whatever the writer's
        own connection holds. ``config`` as for ``open`` (a ``store_url`` must match the writer's)."""
        self.log.append("open a second instance over the same store, to read what is committed")
        async with self.implementation.open(self.config(**config), [], self.clock) as instance:
            yield Session(self, instance)

    async def refused(self, *tools: Tool) -> ConfigurationError | None:
        """The ConfigurationError the implementation raised when opened with ``tools``, or None if it started."""
        self._log_tools(tools)
        try:
            async with self.implementation.open(self.config(), list(tools), self.clock):
                return None
        except ConfigurationError as exc:
            self.log.append(f"open refused: {exc}")
            return exc

    def reproduction(self) -> str:
        """The call sequence so far, for a failure's evidence."""
        return "\n".join(f"  {line}" for line in self.log) or "  (no calls)"

    def fail(self, rule_id: str, message: str) -> NoReturn:
        """Raise the conformance failure of ``rule_id`` with the reproduction."""
        __tracebackhide__ = True
        raise ConformanceFailure(rule_id, message, reproduction=self.reproduction())

    def success(self, rule_id: str, disposition: Disposition, what: str = "the call") -> Success:
        """``disposition`` as a Success, or fail ``rule_id``."""
        __tracebackhide__ = True
        if not isinstance(disposition, Success):
            self.fail(rule_id, f"{what} should have succeeded but was answered {describe(disposition)}")
        return disposition

    def outcome(self, rule_id: str, disposition: Disposition, what: str = "the call") -> Outcome:
        """``disposition`` as a non-success Outcome, or fail ``rule_id``."""
        __tracebackhide__ = True
        if not isinstance(disposition, Outcome):
            self.fail(rule_id, f"{what} should have been a non-success outcome but was {describe(disposition)}")
        return disposition

    def observed(self, dispositions: Sequence[Disposition], where: str) -> None:
        """Check every non-success outcome the scenario received against the table (D13.2, D13.3, D13.4)."""
        for disposition in dispositions:
            if not isinstance(disposition, Outcome):
                continue
            entry = OUTCOME_TABLE.get(disposition.reason_code)
            code = disposition.reason_code.value
            if entry is None:
                self._violated("D13.2", f"{where}: reason_code {code} is not in the table")
                continue
            if (disposition.status, disposition.retryable) != (entry.status, entry.retryable):
                self._violated(
                    "D13.2",
                    f"{where}: {code} came with status {disposition.status.value} and retryable="
                    f"{disposition.retryable}; the table assigns {entry.status.value} and retryable={entry.retryable}",
                )
            if disposition.message != entry.message:
                self._violated(
                    "D13.3",
                    f"{where}: {code} came with message {disposition.message!r}, not the table's {entry.message!r}",
                )
            detail = disposition.external_detail
            if detail is not None and detail.trust is not TrustLabel.EXTERNAL_UNTRUSTED:
                self._violated(
                    "D13.4",
                    f"{where}: {code} came with external_detail labelled {detail.trust.value}, not EXTERNAL_UNTRUSTED",
                )

    def observed_events(self, events: Sequence[Event]) -> None:
        """Check each invocation's events, as read: requested first, at most one completed, nothing after it (D3.7).
        The order is the events' seq, the order of emission within the run (``spec.Event``): two events of one run
        with one seq leave that order unstated, so they fail D3.7 too."""
        taken: dict[tuple[str, int], int] = {}
        for event in events:
            taken[(event.run_id, event.seq)] = taken.get((event.run_id, event.seq), 0) + 1
        shared = sorted(f"{run_id} seq {seq} ({n} events)" for (run_id, seq), n in taken.items() if n > 1)
        if shared:
            self._violated(
                "D3.7",
                f"events of one run share a seq, so the order they were emitted in is not stated: {', '.join(shared[:3])}",
            )
        seen: dict[str, list[str]] = {}
        for event in sorted(events, key=lambda e: e.seq):
            kinds = seen.setdefault(event.invocation_id, [])
            if not kinds and event.kind != EventKind.REQUESTED:
                self._violated(
                    "D3.7", f"invocation {event.invocation_id}'s first event is {event.kind}, not {EventKind.REQUESTED}"
                )
            if kinds and kinds[-1] == EventKind.COMPLETED:
                self._violated(
                    "D3.7", f"invocation {event.invocation_id} has {event.kind} after its {EventKind.COMPLETED} event"
                )
            kinds.append(event.kind)

    def _violated(self, rule_id: str, message: str) -> None:
        if rule_id not in self.everywhere:
            # Worded as a ConformanceFailure of the rule is, so reports show both alike.
            self.everywhere[rule_id] = str(
                ConformanceFailure(
                    rule_id,
                    f"{message} (seen by the check the harness makes on everything a scenario observes)",
                    reproduction=self.reproduction(),
                )
            )

    async def stored(self, rule_id: str, ref: ArtifactRef) -> bytes | None:
        """The bytes stored at ``ref``'s URI, read by the harness itself (None: nothing is there), never its claimed
        size or digest. A URI the harness cannot read (not ``file:``) makes ``rule_id`` read not-covered."""
        if urlparse(ref.uri).scheme != "file":
            raise NotCovered(rule_id, f"the artifact {ref.name!r} is at {ref.uri!r}, a URI the harness cannot read")
        path = anyio.Path(url2pathname(urlparse(ref.uri).path))
        return await path.read_bytes() if await path.is_file() else None

    async def holds(self, rule_id: str, ref: ArtifactRef, data: bytes) -> str | None:
        """What is wrong with ``ref`` as the artifact of ``data``: its claim, or the bytes at its URI; None if both
        are ``data``."""
        claim = (ref.size, ref.sha256)
        want = (len(data), hashlib.sha256(data).hexdigest())
        if claim != want:
            return f"{ref.name!r} claims {ref.size} bytes (sha256 {ref.sha256[:12]}…), expected {len(data)} bytes"
        found = await self.stored(rule_id, ref)
        if found is None:
            return f"{ref.name!r} claims {ref.size} bytes, but nothing is stored at {ref.uri}"
        if (len(found), hashlib.sha256(found).hexdigest()) != want:
            return f"{ref.name!r} claims {ref.size} bytes, but {ref.uri} holds {len(found)} other bytes"
        return None

    def expect(self, rule_id: str, condition: bool, message: str) -> None:
        """Fail ``rule_id`` with ``message`` unless ``condition``."""
        __tracebackhide__ = True
        if not condition:
            self.fail(rule_id, message)


class Session:
    """One open instance: submit steps, read back rows, events and metrics."""

    def __init__(self, harness: Harness, instance: Instance, run_id: str = "run-1") -> None:
        self.harness = harness
        self.instance = instance
        self.run_id = run_id
        self._step = 0
        self._call = 0

    def proposed(
        self,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        provenance: dict[str, list[str]] | None = None,
    ) -> ProposedCall:
        """A proposed call; by default every argument comes from the USER item."""
        self._call += 1
        args = arguments or {}
        return ProposedCall(
            call_id=call_id or f"call-{self._call}",
            tool_name=tool_name,
            arguments=args,
            provenance={name: [USER_ITEM.id] for name in args} if provenance is None else provenance,
        )

    async def step(
        self,
        calls: Sequence[ProposedCall],
        *,
        step_number: int | None = None,
        context: Sequence[ContextItem] | None = None,
        run_id: str | None = None,
        tenant: str = "tenant-1",
    ) -> list[Disposition]:
        """Submit one model step; returns dispositions in proposal order."""
        if step_number is None:
            self._step += 1
            step_number = self._step
        request = StepRequest(
            tenant=tenant,
            run_id=run_id or self.run_id,
            step_number=step_number,
            calls=list(calls),
            context=list(context) if context is not None else [USER_ITEM],
        )
        shown = ", ".join(
            f"{c.tool_name}#{c.call_id} {json.dumps(c.arguments)[:120]} provenance={c.provenance}" for c in calls
        )
        ctx = ", ".join(f"{i.id}:{i.trust.value}" for i in request.context)
        self.harness.log.append(
            f"submit tenant={tenant} run={request.run_id} step={step_number} calls=[{shown}] context=[{ctx}]"
        )
        dispositions = await self.instance.submit(request)
        self.harness.observed(dispositions, f"submit step {step_number}")
        for call, disposition in zip(calls, dispositions, strict=False):
            self.harness.log.append(f"  -> {call.call_id}: {describe(disposition)}")
        if len(dispositions) != len(calls):
            self.harness.log.append(f"  -> {len(dispositions)} dispositions for {len(calls)} calls")
        return dispositions

    async def call(self, tool_name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Disposition:
        """Submit a one-call step and return its disposition."""
        step_keys = {"step_number", "context", "run_id", "tenant"}
        call_kwargs = {k: v for k, v in kwargs.items() if k not in step_keys}
        step_kwargs = {k: v for k, v in kwargs.items() if k in step_keys}
        [disposition] = await self.step([self.proposed(tool_name, arguments, **call_kwargs)], **step_kwargs)
        return disposition

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        """Answer an approval hold."""
        disposition = await self.instance.resolve_approval(invocation_id, approved)
        self.harness.observed([disposition], "an approval's answer")
        verb = "approve" if approved else "deny"
        self.harness.log.append(
            f"{verb} {invocation_id[:8]} at clock+{self.harness.clock.elapsed:.0f}s -> {describe(disposition)}"
        )
        return disposition

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        """Resume a suspended control call."""
        disposition = await self.instance.resume(invocation_id, answer)
        self.harness.observed([disposition], "resume")
        self.harness.log.append(f"resume {invocation_id[:8]} answer={answer!r} -> {describe(disposition)}")
        return disposition

    async def sweep(self) -> list[Disposition]:
        """Run the implementation's maintenance sweep."""
        decided = await self.instance.sweep()
        self.harness.observed(decided, "sweep")
        self.harness.log.append(f"sweep at clock+{self.harness.clock.elapsed:.0f}s -> {[describe(d) for d in decided]}")
        return decided

    async def run_script(
        self,
        script: str,
        *,
        step_number: int = 1,
        context: Sequence[ContextItem] | None = None,
        run_id: str | None = None,
        tenant: str = "tenant-1",
    ) -> ScriptRun:
        """Run a bridge script (decision 17)."""
        request = ScriptRequest(
            tenant=tenant,
            run_id=run_id or self.run_id,
            step_number=step_number,
            script=script,
            context=list(context) if context is not None else [USER_ITEM],
        )
        result = await self.instance.run_script(request)
        self.harness.observed(result.dispositions, "run_script")
        shown = [describe(d) for d in result.dispositions]
        self.harness.log.append(
            f"run_script {script} tenant={tenant} run={request.run_id} step={step_number} -> {result.status} {shown} "
            f"{result.message}"
        )
        return result

    def advance(self, seconds: float) -> None:
        """Move the injected clock."""
        self.harness.clock.advance(seconds)
        self.harness.log.append(f"advance clock by {seconds:.0f}s")

    async def rows(self, run_id: str | None = None) -> list[InvocationRow]:
        """Rows of the run."""
        return await self.instance.invocations(run_id or self.run_id)

    async def row(self, invocation_id: str, run_id: str | None = None) -> InvocationRow | None:
        """The row ``invocation_id``, or None."""
        return next((r for r in await self.rows(run_id) if r.invocation_id == invocation_id), None)

    async def events(self, run_id: str | None = None) -> list[Event]:
        """Events of the run."""
        events = await self.instance.events(run_id or self.run_id)
        self.harness.observed_events(events)
        return events

    async def metrics(self) -> dict[str, int]:
        """Counters."""
        return await self.instance.metrics()

    async def call_measuring_memory(self, tool_name: str) -> tuple[Disposition, int | None]:
        """One call, and the peak memory the implementation allocated for it beyond the tool's own output.

        In this process: tracemalloc around the call (the tool already holds its output). An
        implementation elsewhere measures itself (MeasuresExcerptMemory), from its tools' results arriving;
        None when it does not measure.
        """
        step = StepRequest(
            tenant="tenant-1", run_id=self.run_id, step_number=self._next_step(), calls=[self.proposed(tool_name)]
        )
        self.harness.log.append(f"submit run={self.run_id} step={step.step_number} calls=[{tool_name}] (memory traced)")
        if isinstance(self.instance, MeasuresExcerptMemory):
            [disposition], peak = await self.instance.submit_measuring_memory(step)
        else:
            tracemalloc.start()
            try:
                [disposition] = await self.instance.submit(step)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        self.harness.observed([disposition], f"submit step {step.step_number}")
        shown = "not measured" if peak is None else f"{peak / 2**20:.1f} MiB"
        self.harness.log.append(f"  -> {describe(disposition)}; peak {shown}")
        return disposition, peak

    def _next_step(self) -> int:
        self._step += 1
        return self._step

    async def advertise(self, run_id: str | None = None) -> Advertisement:
        """Start the run's MCP session if needed and read what it advertises."""
        ad = await self.instance.advertise(run_id or self.run_id)
        shown = ", ".join(f"{t.name}@{t.definition_sha256[:8]}" for t in ad.tools)
        self.harness.log.append(f"advertise run={ad.run_id} as_of_seq={ad.as_of_seq} -> [{shown}]")
        return ad

    async def catalog_history(self) -> list[CatalogChange]:
        """The implementation's catalog history."""
        history = await self.instance.catalog_history()
        self.harness.log.append(f"catalog_history -> {len(history)} entries")
        return history
