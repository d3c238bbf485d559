"""The differential judge: run a workload through the port and hold every observable against the model.

After each action it compares the dispositions, then reads back rows, events, metrics and the fake
world and compares those too. The first action with a problem stops the workload: ``Divergence``
carries the rules the model's branches name, the evidence, and the workload as a reproduction.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolproof.driver import HttpImplementation
from toolproof.fakes import FakeClock, ScriptedTool, World
from toolproof.fakes.mcp import ModelledServer
from toolproof.spec import (
    BOUNDARY_CRASH_POINTS,
    CrashPlan,
    CrashPoint,
    Disposition,
    EventKind,
    Implementation,
    InstanceConfig,
    InvocationRow,
    InvocationStatus,
    McpServerConfig,
    McpTransport,
    Metric,
    Profile,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    SimulatedCrash,
    StepRequest,
    StoreFault,
)
from toolproof.spec.model import (
    Advance,
    Answer,
    ChangeCatalog,
    Crash,
    Expected,
    Model,
    Overlap,
    Problems,
    Record,
    Reopen,
    Resume,
    Script,
    Submit,
    Sweep,
    Workload,
    d02,
)
from toolproof.spec.model.d04_faults import FaultExpected
from toolproof.spec.model.d11 import argument_rules
from toolproof.spec.model.d15 import parallel_allowed, sequential_problems
from toolproof.spec.model.mcp import SYNTHETIC_VERSION

from ._context_walk import public, reachable_hazards
from ._model_compare import Ids, canonical, consistency, disposition_problems, key_problems, leaked_text, world_counts
from ._model_workloads import shown


class Divergence(AssertionError):
    """The implementation did something the model does not allow."""

    def __init__(self, problems: Problems, reproduction: str) -> None:
        self.problems = problems
        self.rules = tuple(dict.fromkeys(rule for rule, _ in problems))
        self.workload = reproduction
        lines = "\n".join(f"  [{rule}] {message}" for rule, message in problems[:12])
        super().__init__(f"the implementation diverged from the model:\n{lines}\nworkload:\n{reproduction}")


def _step_of(submit: Submit) -> StepRequest:
    """The port's request for the model's ``Submit`` action."""
    return StepRequest(
        tenant=submit.tenant,
        run_id=submit.run_id,
        step_number=submit.step_number,
        calls=list(submit.calls),
        context=list(submit.context),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:200]


def _compress(kinds: Sequence[str]) -> list[str]:
    """Event kinds with a run of tool_call.started (one per attempt, or one for all) counted once."""
    out: list[str] = []
    for kind in kinds:
        if not (out and kind == out[-1] == EventKind.STARTED):
            out.append(kind)
    return out


BREAKER_REASONS = frozenset({ReasonCode.LOOP_DETECTED, ReasonCode.REPEATED_DENIAL, ReasonCode.PRIOR_UNCERTAIN})
"""The breaker's refusals (D14.2-D14.4)."""


def _breaker_order(model: Model, step: Submit, got: list[Disposition]) -> list[tuple[Any, Disposition]]:
    """The order the model settles a step's calls in: proposal order, but in a parallel batch, which has no order
    among its members (D14.1's interpretation: which identical member the breaker refuses is open, not how many),
    the members the breaker refused after the others, as though they were proposed last."""
    pairs = list(zip(step.calls, got, strict=True))
    specs = model.specs(step.run_id, [c.tool_name for c in step.calls])
    if len(pairs) < 2 or not parallel_allowed(specs):
        return pairs
    return sorted(pairs, key=lambda pair: getattr(pair[1], "reason_code", None) in BREAKER_REASONS)


class Judge:
    """Runs one workload against one implementation."""

    def __init__(self, implementation: Implementation, workload: Workload, directory: Path) -> None:
        self.implementation = implementation
        if workload.mcp_servers and not self.serves_mcp(implementation):
            # Its servers are in-process objects: without them every mcp.* name is unknown, as the model then says.
            workload = replace(workload, mcp_servers=())
        self.workload = workload
        self.model = Model(workload)
        self.servers = {server.server_id: ModelledServer(server) for server in workload.mcp_servers}
        """The workload's MCP servers, served in-process; they outlive an instance, as a server does a restart."""
        self.synthetic_versions: dict[str, str | None] = {}
        """The version each synthetic read_resource tool's rows carry, the first read back (``_row``)."""
        self.world = World()
        self.clock = FakeClock()
        self.directory = directory / uuid.uuid4().hex[:10]
        self.ids: Ids = {}
        self.runs: set[str] = set()
        self.walked = 0
        """How many of the contexts the tools were handed have been judged."""
        self.counted_before = (0, 0, 0)
        """The counters the model allowed when the current instance opened (``_counts``)."""

    @staticmethod
    def serves_mcp(implementation: Implementation) -> bool:
        """Whether the workload's MCP servers can be handed to ``implementation``: it claims the mcp profile and runs
        in this process (transport memory hands over a server object, which no driver can carry)."""
        return Profile.MCP in implementation.profiles and not isinstance(implementation, HttpImplementation)

    @property
    def workspace(self) -> Path:
        """The configured workspace (D2.6)."""
        return self.directory / "workspace"

    def _config(self, crash: CrashPlan | None = None) -> InstanceConfig:
        workspace = self.workspace
        workspace.mkdir(parents=True, exist_ok=True)
        w = self.workload
        return InstanceConfig(
            store_dir=self.directory / "store",
            workspace=workspace,
            max_output_bytes=w.max_output_bytes,
            max_attempts=w.max_attempts,
            approval_timeout_s=w.approval_timeout_s,
            denied_tools=list(w.denied_tools),
            credentials={scope: f"credential-{scope}" for scope in w.credentials},
            fault=w.fault,
            lease_s=w.lease_s,
            crash=crash,
            mcp_servers=[
                McpServerConfig(
                    server_id=server.server_id,
                    transport=McpTransport.MEMORY,
                    server=self.servers[server.server_id].sdk_server,
                    classification=server.classification,
                    call_timeout_s=server.call_timeout_s,
                    max_output_bytes=server.max_output_bytes,
                    listing_max_age_s=0,  # Listed before every call: D9.4's reuse is no choice here (page ``mcp``).
                )
                for server in w.mcp_servers
            ],
        )

    def _tools(self, crash: tuple[CrashPoint, tuple[str, int, str]] | None = None) -> list[ScriptedTool]:
        """The catalog as the model registers it now (a Reopen may have changed versions), each a scripted tool."""
        return [ScriptedTool(self.world, t, crash) for t in self.model.tools.values()]

    async def run(self) -> None:
        """Every action in order; raises Divergence at the first action whose observables the model refuses. A crash
        action runs in an instance of its own that dies; the actions after it are another instance's, as are those
        after a Reopen (the instance closed, another opened over the same store)."""
        actions = self.workload.actions
        start = 0
        while start < len(actions):
            stop = next((i for i in range(start, len(actions)) if isinstance(actions[i], Crash | Reopen)), len(actions))
            if stop > start:
                self.counted_before = self._counts()
                async with self.implementation.open(self._config(), self._tools(), self.clock) as instance:
                    for number in range(start, stop):
                        await self._one(instance, number, actions[number])
            if stop < len(actions):
                boundary = actions[stop]
                if isinstance(boundary, Reopen):
                    self.model.reopen(boundary)
                else:
                    assert isinstance(boundary, Crash)
                    await self._crash(stop, boundary)
            start = stop + 1

    async def _one(self, instance: object, number: int, action: object) -> None:
        try:
            problems = await self._act(instance, action)
            problems += await self._read_back(instance)
        except Exception as exc:
            if not self.model.store.fired:
                raise
            # D3.11: after a store fault the same instance serves its next calls and reads.
            problems = [("D3.11", f"after the store fault the instance raised {_first_line(exc)}")]
        problems += self._contexts(instance)
        if problems:
            raise Divergence(problems, shown(self.workload, upto=number))

    async def _crash(self, number: int, action: Crash) -> None:
        """D4.x: run the action in a worker that dies at the point (the instance's crash plan at a step boundary, the
        scripted tool itself inside step 10); then, in another instance, read back what it left."""
        inner = action.action
        where = f"crash at {action.point.value}"
        target: tuple[str, int, str]
        invocation_id = ""
        if isinstance(inner, Submit):
            assert len(inner.calls) == 1
            target = (inner.run_id, inner.step_number, inner.calls[0].call_id)
            self.runs.add(inner.run_id)
        elif isinstance(inner, Sweep):
            assert action.call is not None
            target = action.call
        else:
            if inner.call not in self.model.by_ref:
                return  # A reduced workload dropped the step that proposed it.
            record = self.model.by_ref[inner.call]
            waiting = record.status.value == "AWAITING_APPROVAL" if isinstance(inner, Answer) else record.suspended
            if not waiting:
                return
            target, invocation_id = record.ref, self.ids[record.key][0]
        boundary = action.point in BOUNDARY_CRASH_POINTS.values()
        plan = CrashPlan(point=action.point, call_id=target[2]) if boundary else None
        tools = self._tools(None if boundary else (action.point, target))
        expected = self.model.crash(action)
        got: list[Disposition] = []
        died = False
        dying: object = None
        try:
            async with self.implementation.open(self._config(plan), tools, self.clock) as instance:
                dying = instance
                if isinstance(inner, Submit):
                    got = await instance.submit(_step_of(inner))
                elif isinstance(inner, Sweep):
                    got = await instance.sweep()
                elif isinstance(inner, Answer):
                    got = [await instance.resolve_approval(invocation_id, inner.approved)]
                else:
                    got = [await instance.resume(invocation_id, inner.answer)]
        except SimulatedCrash:
            died = True
        except BaseExceptionGroup as group:  # A task group may wrap the crash.
            if group.subgroup(SimulatedCrash) is None:
                raise
            died = True
        problems: Problems = []
        crashed = self.model.by_ref.get(target)
        rules = crashed.crash_rules if crashed is not None and crashed.crash_rules else ("D3.1",)
        if expected is None and not died:
            shown_got = ", ".join(f"{d.status} {getattr(d, 'reason_code', None) or ''}".strip() for d in got)
            problems += [
                (rule, f"{where}: model allowed the worker to die there, it lived and answered [{shown_got}]")
                for rule in rules
            ]
        elif expected is not None and died:
            problems.append(("D3.1", f"{where}: the call never meets that point, yet the worker died"))
        elif expected is not None and isinstance(inner, Sweep):
            problems += self._swept(expected, got)
        elif expected is not None:
            problems += self._dispositions(expected, got, where)
        self.counted_before = self._counts()
        async with self.implementation.open(self._config(), self._tools(), self.clock) as reader:
            # Read back whatever happened: a worker that lived where it should have died left its evidence too.
            if isinstance(inner, Submit):
                problems += await self._registered(reader, inner, where)
            problems += await self._read_back(reader)
        if dying is not None:
            problems += self._contexts(dying)
        if problems:
            raise Divergence(problems, shown(self.workload, upto=number))

    async def _registered(self, reader: Any, step: Submit, where: str) -> Problems:
        """The row a dead worker left for its call, found by run, step and call_id (no disposition named it)."""
        call = step.calls[0]
        ref = (step.run_id, step.step_number, call.call_id)
        rows = await reader.invocations(step.run_id)
        found = [r.invocation_id for r in rows if (r.run_id, r.step_number, r.call_id) == ref]
        record = self.model.by_ref.get(ref)
        if record is not None and record in self.model.records:
            if found:
                ids = self.ids.setdefault(record.key, [])
                if found[0] not in ids:
                    ids.append(found[0])
                return []
            return [
                (rule, f"{where}: model allowed a row for {call.call_id}, implementation has none")
                for rule in record.crash_rules
            ]
        if found:
            return [("D4.8", f"{where}: the worker died before step 6, yet {call.call_id} has a row")]
        return []

    def _contexts(self, instance: object) -> Problems:
        """D2.1, D2.2, D2.5, D2.6 on every context a tool was handed since the last action, read by the tool itself
        and walked here (callables included in-process; behind the driver the context is the harness's stand-in)."""
        contexts = self.world.observations.get("contexts", [])
        fresh, self.walked = contexts[self.walked :], len(contexts)
        problems: Problems = []
        callables = not isinstance(self.implementation, HttpImplementation)
        for spec, context, resolved in fresh:
            name = f"{context.identity.call_id} ({spec.name})"
            if sorted(public(context)) != d02.members():
                problems.append(
                    (
                        "D2.1",
                        f"{name}: model allowed members {d02.members()}, the context has {sorted(public(context))}",
                    )
                )
            if Path(context.workspace).resolve() != self.workspace.resolve():
                problems.append(
                    ("D2.6", f"{name}: the context's workspace is {context.workspace}, configured {self.workspace}")
                )
            want = d02.credentials(spec, self.workload.credentials)
            if resolved != want:
                problems.append(("D2.5", f"{name}: model allowed credentials {want}, the resolver gave {resolved}"))
            hazards = [] if problems else reachable_hazards(context, instance, callables)
            if hazards:
                problems.append(("D2.2", f"{name}: the context leads back into the pipeline: {hazards[:3]}"))
            if problems:
                break
        return problems

    async def _act(self, instance: object, action: object) -> Problems:
        inst = instance  # An Instance: typed loosely so this module needs only the port's methods.
        if isinstance(action, Submit):
            self.runs.add(action.run_id)
            start = len(self.world.order)
            step = _step_of(action)
            where = f"step {action.step_number}"
            raised: Exception | None = None
            try:
                got: list[Disposition] = await inst.submit(step)  # type: ignore[attr-defined]
            except Exception as exc:  # Judged below: the model says whether a store fault was due in this step.
                got, raised = [], exc
            if raised is not None or len(got) != len(action.calls):
                try:
                    expected = self.model.submit(action)
                except FaultExpected as fault:
                    return await self._faulted(inst, action, got, raised, fault.rules)
                if raised is not None and self.model.store.fired:
                    raise raised  # After a store fault, any exception is D3.11's (``run``).
                if raised is not None:
                    # A step of calls the model answers raised instead, StoreFault too while no write was made to fail
                    # (a store the implementation itself locks): no disposition for any of them (D15.2); a replayed
                    # call among them is answered from its record (D3.4).
                    shown = f"{where}: model allowed {len(expected)} dispositions, implementation raised {_first_line(raised)}"
                    replayed = ("D3.4",) if any(e.replay for e in expected) else ()
                    return [(rule, shown) for rule in ("D15.2", *replayed)]
                problems = self._dispositions(expected, got, where)
            else:
                # Call by call, each settled before the next is modelled: a later member's breaker reads the verdict
                # an earlier identical member was really given where the ADR left it a choice (D14.4 after D4.20).
                problems = []
                for call, given in _breaker_order(self.model, action, got):
                    try:
                        expected = self.model.submit(replace(action, calls=(call,)))
                    except FaultExpected as fault:
                        return await self._faulted(inst, action, got, None, fault.rules)
                    problems += self._dispositions(expected, [given], where)
            specs = self.model.specs(action.run_id, [c.tool_name for c in action.calls])
            if not parallel_allowed(specs):
                problems += sequential_problems(self.world.order[start:], [c.call_id for c in action.calls])
            return problems
        if isinstance(action, Answer | Resume):
            if action.call not in self.model.by_ref:
                return []  # A reduced workload dropped the step that proposed it.
            record = self.model.by_ref[action.call]
            waiting = record.status.value == "AWAITING_APPROVAL" if isinstance(action, Answer) else record.suspended
            if not waiting:
                return []  # Drawn against another settlement of a choice the ADR leaves open: nothing to answer.
            invocation_id = self.ids[record.key][0]
            if isinstance(action, Answer):
                one = self.model.answer(action)
                got_one = await inst.resolve_approval(invocation_id, action.approved)  # type: ignore[attr-defined]
            else:
                one = self.model.resume(action)
                got_one = await inst.resume(invocation_id, action.answer)  # type: ignore[attr-defined]
            return self._dispositions([one], [got_one], f"{type(action).__name__.lower()} {record.ref[2]}")
        if isinstance(action, Script):
            return await self._script(inst, action)
        if isinstance(action, ChangeCatalog):
            if action.server_id in self.servers:
                self.servers[action.server_id].change(action.tools)
                self.model.change(action)
            return []
        if isinstance(action, Overlap):
            return await self._overlap(inst, action)
        if isinstance(action, Advance):
            self.model.advance(action.seconds)
            self.clock.advance(action.seconds)
            return []
        assert isinstance(action, Sweep)
        expected = self.model.sweep()
        decided: list[Disposition] = await inst.sweep()  # type: ignore[attr-defined]
        return self._swept(expected, decided)

    async def _overlap(self, inst: Any, action: Overlap) -> Problems:
        """D3.2, D3.7: the step submitted again to the same instance while its call's tool runs (a concurrent request
        meeting the worker's own live lease)."""
        step = action.step
        self.runs.add(step.run_id)
        call = step.calls[0]
        key = (step.run_id, step.step_number, call.call_id)
        again: list[Disposition] = []
        raised: list[Exception] = []

        async def submit_again() -> None:
            try:
                again.extend(await inst.submit(_step_of(step)))
            except Exception as exc:  # Judged below; the tool it runs inside goes on as it would.
                raised.append(exc)

        self.world.during[key] = submit_again
        try:
            got: list[Disposition] = await inst.submit(_step_of(step))
        finally:
            self.world.during.pop(key, None)
        first, second = self.model.overlap(action)
        where = f"step {step.step_number}"
        problems = self._dispositions(first, got, where)
        if raised:
            shown = f"{where}: submitted again while {call.call_id} runs, model allowed in_progress, implementation raised {_first_line(raised[0])}"
            problems.append(("D3.2", shown))
        elif again and not second:
            problems.append(("D3.2", f"{where}: model allowed no run of {call.call_id}'s tool, yet it ran"))
        elif second:
            problems += self._dispositions(second, again, f"{where} submitted again while {call.call_id} runs")
        return problems

    async def _script(self, inst: Any, action: Script) -> Problems:
        """D17.1: a script's calls, each re-entering the pipeline under the script request's tenant, run and step; an
        implementation that does not claim the bridge runs none (and the model models none)."""
        if Profile.BRIDGE not in self.implementation.profiles:
            return []
        self.runs.add(action.run_id)
        request = ScriptRequest(
            tenant=action.tenant,
            run_id=action.run_id,
            step_number=action.step_number,
            script=action.script,
            context=list(action.context),
        )
        run: ScriptRun = await inst.run_script(request)
        expected = self.model.script(action, run.call_ids)
        where = f"script step {action.step_number}"
        want = "held" if expected and expected[-1].suspended else "completed"
        if run.status != want or len(run.call_ids) != len(expected):
            shown = f"{where}: model allowed {want} after {len(expected)} calls, the script run is {run.status} after {len(run.call_ids)}: {run.message[:120]}"
            return [("D17.1", shown)]
        return self._dispositions(expected, run.dispositions, where)

    def _swept(self, expected: list[Expected], decided: list[Disposition]) -> Problems:
        """A sweep's decisions against the model's: which calls it decided (D11.7, D4.18, D4.19 and the recovery
        rules), and each disposition."""
        want = {self.ids[e.record.key][0]: e for e in expected}
        got_ids = {getattr(d, "invocation_id", "") for d in decided}
        found: Problems = []
        if set(want) != got_ids:
            shown_sets = f"sweep: model allowed it to decide {sorted(want)}, implementation decided {sorted(got_ids)}"
            found += [(rule, shown_sets) for rule in self.model.sweep_rules]
        for d in decided:
            if d.invocation_id in want:
                found += disposition_problems(self.model, want[d.invocation_id], d, "sweep")
        return found

    async def _faulted(
        self, inst: Any, action: Submit, got: list[Disposition], raised: Exception | None, rules: tuple[str, ...]
    ) -> Problems:
        """D3.10, D3.11, D4.21, D4.22: a step whose write fails is answered StoreFault, with no disposition; the
        rows its calls left are found by run, step and call_id (no disposition named them)."""
        where = f"step {action.step_number}"
        problems: Problems = []
        if raised is not None and not isinstance(raised, StoreFault):  # Judged: anything but the typed error is wrong.
            shown = _first_line(raised)
            problems += [(rule, f"{where}: model allowed StoreFault, implementation raised {shown}") for rule in rules]
        elif raised is None:
            shown = ", ".join(f"{d.status} {getattr(d, 'reason', None) or ''}".strip() for d in got)
            problems += [
                (rule, f"{where}: model allowed StoreFault and no disposition, implementation gave [{shown}]")
                for rule in rules
            ]
        rows = await inst.invocations(action.run_id)
        for call in action.calls:
            ref = (action.run_id, action.step_number, call.call_id)
            found = [r.invocation_id for r in rows if (r.run_id, r.step_number, r.call_id) == ref]
            if ref in self.model.by_ref:
                if found:
                    self.ids.setdefault(self.model.by_ref[ref].key, []).append(found[0])
                else:
                    problems += [
                        (rule, f"{where} call {call.call_id}: model allowed a row, implementation has none")
                        for rule in rules
                    ]
            elif found:
                # A refusal's only write is its terminal row (D3.3): a row left behind was written before it.
                refused = ("D3.3",) if ref in self.model.store.refused else ()
                problems += [
                    (
                        rule,
                        f"{where} call {call.call_id}: its write failed before any row was stored, implementation has a row",
                    )
                    for rule in (*rules, *refused)
                ]
        return problems

    def _dispositions(self, expected: list[Expected], got: list[Disposition], where: str) -> Problems:
        if len(got) != len(expected):
            return [("D15.2", f"{where}: model allowed {len(expected)} dispositions, implementation gave {len(got)}")]
        problems: Problems = []
        for e, d in zip(expected, got, strict=True):
            ids = self.ids.setdefault(e.record.key, [])
            if d.invocation_id not in ids:
                if ids and not e.record.pre_record:
                    problems.append(
                        (
                            "D3.4",
                            f"{where}: {e.record.ref[2]} was answered as invocation {d.invocation_id[:8]}, model allowed its recorded {ids[0][:8]}",
                        )
                    )
                ids.append(d.invocation_id)
            found = disposition_problems(self.model, e, d, f"{where} call {e.record.ref[2]}")
            if e.record.remote is not None:
                # An MCP failure's external detail is the cap's too: a result over it carries none (D8.8, D8.10).
                capped = ["D8.8", "D8.10"] if "D8.10" in e.record.branch_rules else []
                found += [(rule, message) for kind, message in found if kind == "D13.4" for rule in capped]
            problems += found
        return problems

    async def _read_back(self, instance: object) -> Problems:
        inst = instance
        rows: dict[str, InvocationRow] = {}
        events = []
        for run_id in sorted(self.runs):
            rows.update({r.invocation_id: r for r in await inst.invocations(run_id)})  # type: ignore[attr-defined]
            events += await inst.events(run_id)  # type: ignore[attr-defined]
        problems: Problems = []
        # The seq is the order of emission within a run: two events of one run with one seq leave it unstated (D3.7).
        seqs = Counter((e.run_id, e.seq) for e in events)
        shared = sorted(f"{run} seq {seq}" for (run, seq), n in seqs.items() if n > 1)
        if shared:
            problems.append(("D3.7", f"events of one run share a seq, so their order is not stated: {shared[:3]}"))
        kinds: dict[str, list[str]] = {}
        for event in sorted(events, key=lambda e: (e.run_id, e.seq)):
            kinds.setdefault(event.invocation_id, []).append(event.kind)
        for record in self.model.records:
            for invocation_id in self.ids.get(record.key, []):
                found = self._row(record, rows.get(invocation_id), invocation_id)
                allowed = [_compress([str(k) for k in events]) for events in record.allowed_events()]
                got = _compress(kinds.get(invocation_id, []))
                if got not in allowed:
                    shown_events = " or ".join(map(str, allowed))
                    shown = f"{record.ref[2]}: model allowed events {shown_events}, implementation gave {got}"
                    found.append(("D3.7", shown))
                    if record.spec is not None and record.spec.kind.value == "CONTROL":
                        found.append(("D16.1", shown))  # A control call's events are those of any call.
                if record.crash_rules:
                    # What a crash left, and its recovery, are decided by the crash's rules too.
                    found += [(rule, message) for _, message in found for rule in record.crash_rules]
                fault_rule = self.model.store.faulted.get(record.ref)
                # What a call whose write failed left is decided by the store-fault rule, an event by D3.11.
                if fault_rule is not None:
                    found = [("D3.11" if rule == "D3.7" else fault_rule, message) for rule, message in found]
                problems += found
        known = {i for ids in self.ids.values() for i in ids}
        stray = [e for e in self.world.executions if e.invocation_id not in known]
        if stray:
            rules = sorted(set(self.model.store.faulted.values())) or ["D3.1"]
            problems += [
                (rule, f"the world saw {len(stray)} execution(s) of no call the store holds") for rule in rules
            ]
        problems += self._served()
        problems += key_problems(self.model, rows, self.ids)
        problems += leaked_text(self.model, events)
        problems += await self._metrics(inst)
        return problems

    def _served(self) -> Problems:
        """What reached each MCP server, from its own log: as many tools/call of each remote name with each argument
        value as the model's calls of it executed (a call cut at its deadline may have been cut before sending)."""
        want: Counter[tuple[str, str, bytes]] = Counter()
        cut: set[tuple[str, str, bytes]] = set()
        rules: dict[tuple[str, str, bytes], list[str]] = {}
        for record in self.model.records:
            if record.remote is None:
                continue
            key = (*record.remote, canonical(record.call.arguments))
            want[key] += record.executions
            rules.setdefault(key, []).extend(("D3.4",) if record.replayed else record.path_rules())
            if record.run is not None and record.run.cut:
                cut.add(key)
        got: Counter[tuple[str, str, bytes]] = Counter(
            (server_id, name, canonical(arguments))
            for server_id, server in self.servers.items()
            for name, arguments in server.calls
        )
        problems: Problems = []
        for key in sorted(set(want) | set(got)):
            if got[key] == want[key] or (key in cut and got[key] <= want[key]):
                continue
            shown = f"server {key[0]}: model allowed {want[key]} calls of {key[1]} with {key[2].decode()[:80]}, it received {got[key]}"
            problems += [(rule, shown) for rule in dict.fromkeys(rules.get(key) or ["D3.1"])]
        return problems

    def _row(self, record: Record, row: InvocationRow | None, invocation_id: str) -> Problems:
        name = record.ref[2]
        control = record.spec is not None and record.spec.kind.value == "CONTROL"
        if row is None:
            # D16.1: a control call has its row like any call; D13.5: a disposition names the row it was read from.
            rules = ("D3.3" if record.pre_record else "D3.1", "D13.5", *(("D16.1",) if control else ()))
            return [
                (rule, f"{name}: model allowed a row {invocation_id[:8]}, implementation has none") for rule in rules
            ]
        problems: Problems = []
        if (row.status, row.reason_code) != (record.status, record.reason):
            shown_row = f"{name}: model allowed row {record.status.value} {record.reason}, implementation's row is {row.status.value} {row.reason_code}"
            problems.append(("D13.5", shown_row))
            if record.crash_rules:
                # No disposition was given for a crashed call: its row is the verdict, judged by the verdict's rules.
                problems += [(rule, shown_row) for rule in dict.fromkeys(r for v in record.verdicts for r in v.rules)]
            if record.status is InvocationStatus.AWAITING_APPROVAL:
                # A hold no answer and no sweep resolved was resolved all the same: it resolves only as its answer says.
                problems.append(("D11.6", shown_row))
        executions, effects = world_counts(self.world, invocation_id)
        fresh = invocation_id == self.ids[record.key][0]
        # An MCP tool's executions are the server's to count (``_served``): the scripted world sees none of them.
        want_exec, want_eff = (record.executions, record.effects) if fresh and record.remote is None else (0, 0)
        cut = record.run is not None and record.run.cut and fresh
        if (executions, effects) != (want_exec, want_eff) and not (
            cut and executions <= want_exec and effects <= want_eff
        ):
            path = ("D3.4",) if record.replayed and executions > want_exec else record.path_rules()
            problems += [
                (
                    r,
                    f"{name}: model allowed {want_exec} executions and {want_eff} effects, the world saw {executions} and {effects}",
                )
                for r in path
            ]
        if fresh and row.attempt != record.attempt and not (cut and row.attempt <= record.attempt):
            problems.append(("D10.2", f"{name}: model allowed attempt {record.attempt}, the row says {row.attempt}"))
        marked = row.effect_sent_at is not None
        problems += consistency(record, row)
        if marked != record.watermark and not (cut and not marked):
            shown_mark = f"{name}: model allowed watermark {'set' if record.watermark else 'unset'}, the row's is {'set' if row.effect_sent_at is not None else 'unset'}"
            problems.append(("D4.1" if record.watermark else "D4.7", shown_mark))
            if record.remote is not None and record.run is not None:
                problems.append(("D4.2", shown_mark))  # Its interpretation: the adapter marks a consequential call.
            if record.pre_record:
                problems.append(("D3.3", shown_mark))  # Refused before step 6: nothing ran, so nothing was marked.
        if row.suspended != record.suspended:
            problems.append(
                (
                    "D16.2" if record.suspended else "D16.4",
                    f"{name}: model allowed suspended={record.suspended}, the row says {row.suspended}",
                )
            )
        if record.origin is not None and (row.origin_trust, row.argument_trust) != (record.origin, record.argument):
            rules = ("D11.1",) if row.origin_trust != record.origin else argument_rules(record.call)
            shown = f"{name}: model allowed origin {record.origin.value} argument {record.argument.value if record.argument else None}, the row says {row.origin_trust.value} {row.argument_trust.value}"
            problems += [(rule, shown) for rule in rules]
        if (row.tenant, row.run_id, row.step_number) == (record.tenant, *record.ref[:2]) and row.call_id != name:
            # The disposition in this call's place is another call's of the same step: answered out of order.
            problems.append(
                (
                    "D15.2",
                    f"{name}: the disposition in its place in the answer is invocation {invocation_id[:8]}, whose row is call {row.call_id}",
                )
            )
        elif row.tenant != record.tenant or (row.run_id, row.step_number, row.call_id) != record.ref:
            problems.append(
                (
                    "D2.3",
                    f"{name}: the request was tenant {record.tenant} {record.ref}, the row says {row.tenant} {(row.run_id, row.step_number, row.call_id)}",
                )
            )
        version = record.spec.version if record.spec is not None else None
        if version == SYNTHETIC_VERSION:
            # The synthetic read tool's definition is the implementation's: one version for all its rows (page mcp).
            version = self.synthetic_versions.setdefault(record.call.tool_name, row.tool_version)
        if row.tool_version != version:
            # D2.3: the row names the version the tool was registered at, as the identity it is handed does, for every
            # source (D3.6's interpretation: a device's or sandbox's row fills the columns a builtin's fills); a name
            # that resolved to no tool has none.
            shown = f"{name}: model allowed tool_version {version!r}, the row says {row.tool_version!r}"
            # An MCP tool's version is the definition hash its session pinned (D9.1).
            problems += [(rule, shown) for rule in ("D2.3", *(("D9.1",) if record.remote is not None else ()))]
        if canonical(row.arguments) != canonical(record.call.arguments):
            problems.append(
                (
                    "D13.6",
                    f"{name}: the row's arguments {row.arguments!r:.80} are not the proposed {record.call.arguments!r:.80}",
                )
            )
        return problems + self._identities(record, row) if fresh else problems

    def _identities(self, record: Record, row: InvocationRow) -> Problems:
        """D2.3 and D16.4: what the tool was handed, read from the tool itself."""
        seen = [i for i in self.world.observations.get("identities", []) if i.invocation_id == row.invocation_id]
        problems: Problems = []
        if len({i.idempotency_key for i in seen}) > 1:
            problems.append(("D10.2", f"{record.ref[2]}: its attempts were handed {len(seen)} different keys"))
        for attempt, identity in zip(record.attempts, seen, strict=False):
            want = (
                record.tenant,
                *record.ref,
                record.call.tool_name,
                record.tool.spec.version if record.tool else None,
                attempt,
                row.idempotency_key,
            )
            got = (
                identity.tenant,
                identity.run_id,
                identity.step_number,
                identity.call_id,
                identity.tool_name,
                identity.tool_version,
                identity.attempt,
                identity.idempotency_key,
            )
            if got[:-1] != want[:-1]:
                problems.append(
                    ("D2.3", f"{record.ref[2]}: model allowed identity {want!r:.200}, the tool was handed {got!r:.200}")
                )
            elif got != want:
                # Only the key differs from the row's: the identity is wrong, or the key moved with the attempt.
                shown = f"{record.ref[2]}: attempt {attempt} was handed key {got[-1]!r}, the row has {want[-1]!r}"
                problems += [("D2.3", shown), ("D10.2", shown)]
        executed = [e.arguments for e in self.world.executions if e.invocation_id == row.invocation_id]
        want_args = canonical(self.model.executed_arguments(record))
        if any(canonical(a) != want_args for a in executed):
            problems.append(
                (
                    "D16.4",
                    f"{record.ref[2]}: model allowed execution with {self.model.executed_arguments(record)!r:.120}, the tool got {executed[0]!r:.120}",
                )
            )
        return problems

    def _counts(self) -> tuple[int, int, int]:
        """What the model allows the counters to read over the whole store: UNCERTAIN resolutions, and the bounds of
        the unmarked flag."""
        records = self.model.records
        uncertain = sum(1 for r in records if r.reason is ReasonCode.EFFECT_UNKNOWN)
        low = sum(r.run.unmarked[0] for r in records if r.run is not None)
        high = sum(r.run.unmarked[1] for r in records if r.run is not None)
        return uncertain, low, high

    async def _metrics(self, inst: object) -> Problems:
        """D4.10, D4.11: the counters over the whole store, or since this instance opened (the ADR does not say a
        metric outlives its process: a restart or another worker may count afresh)."""
        metrics: dict[str, int] = await inst.metrics()  # type: ignore[attr-defined]
        uncertain, low, high = self._counts()
        before, low_before, high_before = self.counted_before
        problems: Problems = []
        got_uncertain = metrics.get(Metric.UNCERTAIN, 0)
        if got_uncertain not in (uncertain, uncertain - before):
            allowed = " or ".join(str(n) for n in dict.fromkeys((uncertain, uncertain - before)))
            problems.append(
                ("D4.11", f"model allowed {Metric.UNCERTAIN}={allowed}, implementation gave {got_uncertain}")
            )
        got = metrics.get(Metric.EFFECT_UNMARKED, 0)
        if not (low <= got <= high or low - low_before <= got <= high - high_before):
            shown = f"[{low}, {high}]" + (f" or [{low - low_before}, {high - high_before}]" if high_before else "")
            problems.append(("D4.10", f"model allowed {Metric.EFFECT_UNMARKED} in {shown}, implementation gave {got}"))
        return problems
