"""The model's state and its actions: submit, answer, resume, advance, sweep, crash.

Each action returns what the caller must get back, as ``Expected`` dispositions; after the judge has
compared them, ``settle`` fixes the choices the ADR left open to the ones the implementation made, so
every later expectation follows from what was really observed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from toolproof.spec import READ_RESOURCE, CrashPoint, EventKind, InvocationStatus, ReasonCode, ToolSpec

from ._catalog import (
    Answer,
    ChangeCatalog,
    Crash,
    ModelTool,
    Overlap,
    Reopen,
    Resume,
    Script,
    Submit,
    Sweep,
    Workload,
)
from ._record import CallRef, Record
from .d03 import propose, run_tool
from .d04_crash import BEFORE_CLAIM, BEFORE_ROW, Before, left, orphan, points, recover, recovery_points
from .d04_faults import FaultExpected, StoreFaults
from .d10 import key_inputs
from .d13 import outcome
from .d16 import with_answer
from .mcp import McpTool, dropped, registered, resolve, verdict_rules


@dataclass(frozen=True)
class Expected:
    """What one call's disposition must be."""

    record: Record
    suspended: str | None = None
    """``approval`` or ``control`` when the call must come back suspended."""
    rules: tuple[str, ...] = ()
    """The rules of the branch that produced it."""
    replay: bool = False


class Model:
    """An executable statement of the ADR's observable behaviour over one workload."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.tools: dict[str, ModelTool] = {t.spec.name: t for t in workload.tools}
        self.records: list[Record] = []
        self.by_ref: dict[CallRef, Record] = {}
        """The first call proposed under each (run, step, call_id): the one an answer or a resume names."""
        self.by_key: dict[tuple[object, ...], Record] = {}
        """Every call by its key's inputs (D10.1): a submission with equal inputs is the same call (D3.4)."""
        self.clock = 0.0
        self.store = StoreFaults(workload.fault)
        self.sweep_rules: tuple[str, ...] = ("D11.7",)
        """The rules the last sweep's choice of calls follows."""
        self.servers = {server.server_id: server for server in workload.mcp_servers}
        self.listed: dict[str, dict[str, McpTool]] = {
            server.server_id: registered(server, server.tools) for server in workload.mcp_servers
        }
        """Each MCP server's tools as it lists them now, by registered name (the model's page ``mcp``)."""
        self.dropped: set[str] = {name for s in workload.mcp_servers for name in dropped(s, s.tools)}
        """Registered names that remote names of one server normalized to alike, now or before (D5.7)."""
        self.current_tools = {server.server_id: server.tools for server in workload.mcp_servers}
        """Each MCP server's remote tools as it lists them now."""
        self.pins: dict[str, dict[str, McpTool]] = {}
        """Each session's (run's) pinned MCP tools, from its first step on (D9.1)."""
        self.quiet_pins: set[str] = set()
        """Sessions that pinned at a step proposing no MCP tool (D9.1: a session starts at its run's first step)."""

    def change(self, action: ChangeCatalog) -> None:
        """The server lists another catalog; every session keeps its pin (decision 9)."""
        server = self.servers[action.server_id]
        self.listed[action.server_id] = registered(server, action.tools)
        self.current_tools[action.server_id] = action.tools
        self.dropped |= dropped(server, action.tools)

    def mcp_tool(self, run_id: str, name: str) -> McpTool | None:
        """The MCP tool ``name`` resolves to in ``run_id``'s session now, if it runs."""
        found = self._resolve(run_id, name)
        return found if isinstance(found, McpTool) else None

    def _resolve(self, run_id: str, name: str) -> McpTool | tuple[ReasonCode, tuple[str, ...]]:
        if run_id not in self.pins:  # D9.1: the session starts, and pins, at the run's first step.
            self.pins[run_id] = {n: t for listed in self.listed.values() for n, t in listed.items()}
        current = {n: t for listed in self.listed.values() for n, t in listed.items()}
        found = resolve(self.pins[run_id], current, name)
        if isinstance(found, tuple) and run_id in self.quiet_pins and found[0] is not ReasonCode.UNKNOWN_TOOL:
            # The session pinned at a step that named no MCP tool: it starts at its run's first step all the same.
            return found[0], (*found[1], "D9.1")
        if isinstance(found, tuple) and name in self.dropped:
            return found[0], (*found[1], "D5.7")
        if isinstance(found, tuple) and name.endswith(f".{READ_RESOURCE}"):
            return found[0], (*found[1], "D8.9")  # A server that lists no resource has no read tool.
        return found

    def catalog(
        self, run_id: str, names: Sequence[str]
    ) -> tuple[dict[str, ModelTool], dict[str, tuple[ReasonCode, tuple[str, ...]]]]:
        """What each of ``names`` resolves to in ``run_id``'s session (pinning it at its first step): the builtins and
        the MCP tools that run, and the MCP names step 1 refuses (the model's page ``mcp``)."""
        tools = dict(self.tools)
        unresolved: dict[str, tuple[ReasonCode, tuple[str, ...]]] = {}
        if not self.servers:
            return tools, unresolved
        if run_id not in self.pins and not any(name.startswith("mcp.") for name in names):
            self.quiet_pins.add(run_id)
        self._resolve(run_id, "")
        for name in names:
            if not name.startswith("mcp."):
                continue
            found = self._resolve(run_id, name)
            if isinstance(found, McpTool):
                tools[name] = found.tool
            else:
                unresolved[name] = found
        return tools, unresolved

    def specs(self, run_id: str, names: Sequence[str]) -> list[ToolSpec | None]:
        """The spec each of ``names`` resolves to in ``run_id``'s session, None where step 1 refuses it."""
        tools, _ = self.catalog(run_id, names)
        return [tools[name].spec if name in tools else None for name in names]

    def submit(self, action: Submit) -> list[Expected]:
        """D3, D15.2: one expectation per proposed call, in proposal order.

        D3.4 with D10.1-D10.4: a call is the same call as an earlier one exactly when its key's inputs are equal
        (the arguments compared in canonical form); the same (run, step, call_id) with other arguments is another.

        Raises:
            FaultExpected: a write of the step fails (``d04_faults``): the submitter must get StoreFault instead.
        """
        if self.store.down:
            raise FaultExpected(("D3.11",))  # D3.11: the store stays down; no write, so nothing runs.
        out: list[Expected] = []
        tools, unresolved = self.catalog(action.run_id, [c.tool_name for c in action.calls])
        for call in action.calls:
            ref = (action.run_id, action.step_number, call.call_id)
            tool = tools.get(call.tool_name)
            inputs = key_inputs(action.tenant, *ref[:2], call, tool.spec.version if tool is not None else None)
            known = self.by_key.get(inputs)
            if known is not None:
                out.append(self._replay(known))
                continue
            record = propose(
                self.workload, tools, self.records, action.tenant, ref, call, action.context, self.clock, unresolved
            )
            mcp = self.mcp_tool(action.run_id, call.tool_name) if call.tool_name.startswith("mcp.") else None
            if mcp is not None and record.tool is not None:
                record.branch_rules = mcp.rules
                record.remote = (call.tool_name.split(".")[1], mcp.remote_name)
                if record.reason is ReasonCode.INVALID_ARGUMENTS and "D8.1" in mcp.rules:
                    # D8.1's interpretation: the synthetic read tool's arguments are validated at step 2 like any.
                    record.verdicts = tuple(replace(v, rules=(*v.rules, "D8.1")) for v in record.verdicts)
            if record.status is InvocationStatus.AWAITING_APPROVAL:
                record.held_since = self.clock
            point = self.store.meets(record)
            if point is not None and not self.store.fail(record, point):
                raise FaultExpected((self.store.faulted[ref],))  # No row was written: the model holds none.
            self.records.append(record)
            self.by_ref.setdefault(ref, record)
            self.by_key[inputs] = record
            if point is not None:
                raise FaultExpected((self.store.faulted[ref],))
            out.append(self._expected(record, ()))
        return out

    def script(self, action: Script, call_ids: Sequence[str]) -> list[Expected]:
        """D17.1: each call a script makes re-enters the one pipeline as a step of that one call, under the script
        request's tenant, run and step and the call_id the bridge synthesized for it (``call_ids``, in ordinal order:
        D17.2's values are the bridge's); the script stops at the first call that comes back suspended. A script run
        again meets its recorded calls as any replay does (D3.4, D17.3)."""
        out: list[Expected] = []
        for call, call_id in zip(action.calls, call_ids, strict=False):
            proposed = call.model_copy(update={"call_id": call_id})
            step = Submit(action.run_id, action.step_number, (proposed,), action.context, action.tenant)
            expected = self.submit(step)[0]
            out.append(replace(expected, rules=(*expected.rules, "D17.1")))
            if expected.suspended:
                break
        return out

    def overlap(self, action: Overlap) -> tuple[list[Expected], list[Expected]]:
        """What the step's submission must give, and what the same step submitted again while its tool runs must
        give: D3.2, the call is RUNNING under the worker's own live lease, so the second is answered in_progress and
        leaves the row and its events alone (D3.7). The second happens only when the call's tool runs in this
        submission (a refusal, a hold or a replay runs none): then nothing is expected of it.

        Raises:
            FaultExpected: as ``submit``.
        """
        assert len(action.step.calls) == 1, "an overlap is modelled for a step of one call"
        before = len(self.records)
        first = self.submit(action.step)
        record = first[0].record
        if len(self.records) == before or record.executions == 0:
            return first, []
        record.replayed += 1
        busy = replace(
            record,
            status=InvocationStatus.RUNNING,
            verdicts=(outcome(ReasonCode.IN_PROGRESS, "D3.2", "D13.5"),),
            events=[],
        )
        return first, [Expected(busy, None, ("D3.2",), replay=True)]

    def _expected(self, record: Record, rules: tuple[str, ...]) -> Expected:
        held = record.status is InvocationStatus.AWAITING_APPROVAL or record.decided == "approval"
        rules = (*rules, *verdict_rules(record.branch_rules, held, record.run is not None))
        if record.status is InvocationStatus.AWAITING_APPROVAL:
            return Expected(record, "approval", (*rules, "D11.5"))
        if record.suspended:
            return Expected(record, "control", (*rules, "D16.2"))
        return Expected(record, None, rules)

    def _replay(self, record: Record) -> Expected:
        """D3.4: a terminal call replayed is answered from its record; a held one is still held. A call a dead worker
        left (d04_crash): a RUNNING row past its lease, or a recorded one, is recovered by the replay (D4.3-D4.8,
        D4.14, D4.15); a RUNNING row under a live lease is another worker's (D3.2: in_progress, the row untouched)."""
        record.replayed += 1
        running = record.status is InvocationStatus.RUNNING and not record.terminal
        if running and record.lease_until is not None and record.lease_until > self.clock:
            busy = replace(record, verdicts=(outcome(ReasonCode.IN_PROGRESS, "D3.2", "D13.5"),), events=[])
            return Expected(busy, None, ("D3.2",), replay=True)
        stranded = record.status is InvocationStatus.RECORDED and not (record.suspended or record.terminal)
        if running or (stranded and not record.pre_record):
            rules = recover(record, self.workload, self.clock, sweep=False)
            return self._expected(record, rules)
        return Expected(record, self._expected(record, ()).suspended, ("D3.4",), replay=True)

    def past_bound(self, record: Record) -> bool | None:
        """D11.7: whether the hold is past its bound; None exactly at it (left open)."""
        assert record.held_since is not None
        waited = self.clock - record.held_since
        if waited == self.workload.approval_timeout_s:
            return None
        return waited > self.workload.approval_timeout_s

    def answer(self, action: Answer) -> Expected:
        """D11.6 and D11.7: an answer inside the bound is honoured; past it the hold is expired."""
        record = self.by_ref[action.call]
        assert record.status is InvocationStatus.AWAITING_APPROVAL
        record.events.append(EventKind.APPROVAL_RESOLVED)
        if self.past_bound(record):
            record.finish((outcome(ReasonCode.APPROVAL_EXPIRED, "D11.7"),))
            return Expected(record, None, ("D11.7",))
        if not action.approved:
            record.finish((outcome(ReasonCode.APPROVAL_DENIED, "D11.6"),))
            return Expected(record, None, ("D11.6",))
        run_tool(record, self.workload, self.clock)
        return Expected(record, None, ("D11.6", *verdict_rules(record.branch_rules, False, True)))

    def resume(self, action: Resume) -> Expected:
        """D16.4: a resumed control call runs with its arguments plus the answer, and completes."""
        record = self.by_ref[action.call]
        assert record.suspended
        record.answer = action.answer
        record.suspended = False
        run_tool(record, self.workload, self.clock)
        return Expected(record, None, ("D16.4",))

    def reopen(self, action: Reopen) -> None:
        """Another instance over the same store: every record stands as the store holds it (a breaker counts the
        rows, D14.2-D14.4; a hold's bound is the configuration's, D11.7). D10.5: a tool registered at another version
        keys its later calls apart from the earlier ones (``d10.key_inputs``); an earlier call keeps the tool it was
        proposed to."""
        for name, version in action.versions:
            tool = self.tools[name]
            self.tools[name] = ModelTool(tool.spec.model_copy(update={"version": version}), tool.behaviour)

    def advance(self, seconds: float) -> None:
        """The injected clock moves."""
        self.clock += seconds

    def sweep(self) -> list[Expected]:
        """D11.7, D4.19, D16.3: expire holds past their bound; leave holds inside it and suspended calls alone. Then
        D4.3-D4.8, D4.18 (d04_crash): recover the orphans a dead worker left, never a row under a live lease."""
        out = []
        rules = ["D11.7"]
        for record in self.records:
            if record.status is InvocationStatus.AWAITING_APPROVAL and self.past_bound(record):
                record.events.append(EventKind.APPROVAL_RESOLVED)
                record.finish((outcome(ReasonCode.APPROVAL_EXPIRED, "D11.7"),))
                out.append(Expected(record, None, ("D11.7",)))
            elif record.status is InvocationStatus.AWAITING_APPROVAL:
                rules.append("D4.19")  # Before its bound, however long past the lease: left as it is.
        lease = self.workload.lease_s
        for record in self.records:
            if orphan(record, self.clock, lease):
                found = recover(record, self.workload, self.clock, sweep=True)
                rules += found
                out.append(self._expected(record, found))
            elif record.crash_rules and record.status is InvocationStatus.RUNNING and not record.terminal:
                rules.append("D4.18")  # Under a live lease: left as it is.
        self.sweep_rules = tuple(dict.fromkeys(rules))
        return out

    def crash(self, action: Crash) -> list[Expected] | None:
        """Do ``action`` in a worker that dies at ``action.point`` (d04_crash): None when it dies there; when its
        call never meets the point, the worker lives and the action's expectations are returned."""
        inner = action.action
        if isinstance(inner, Sweep):
            return self._sweep_dying(action)
        if isinstance(inner, Submit):
            return self._submit_dying(inner, action.point)
        record = self.by_ref[inner.call]
        if isinstance(inner, Answer):
            if not inner.approved or self.past_bound(record):
                return [self.answer(inner)]
            self.answer(inner)
        else:
            self.resume(inner)
        if action.point not in points(record, True):
            return [self._expected(record, ())]
        left(record, action.point)
        return None

    def _submit_dying(self, step: Submit, point: CrashPoint) -> list[Expected] | None:
        assert len(step.calls) == 1, "a crash is modelled for a step of one call"
        call = step.calls[0]
        ref = (step.run_id, step.step_number, call.call_id)
        tool = self.tools.get(call.tool_name)
        inputs = key_inputs(step.tenant, *ref[:2], call, tool.spec.version if tool is not None else None)
        known = self.by_key.get(inputs)
        if known is not None:
            # A replay: it dies only where it recovers the call by running its tool (d04_crash.recovery_points).
            expired = known.lease_until is not None and known.lease_until < self.clock
            running = known.status is InvocationStatus.RUNNING and not known.terminal
            stranded = known.status is InvocationStatus.RECORDED and not (known.suspended or known.terminal)
            if not ((expired and running) or stranded) or point not in recovery_points(known, sweep=False):
                return self.submit(step)
            known.replayed += 1
            if point in BEFORE_ROW or point in BEFORE_CLAIM:
                left(known, point, Before.of(known))
            else:
                recover(known, self.workload, self.clock, sweep=False, dies=point)
            return None
        record = propose(self.workload, self.tools, self.records, step.tenant, ref, call, step.context, self.clock)
        if record.status is InvocationStatus.AWAITING_APPROVAL:
            record.held_since = self.clock
        met = not record.pre_record and record.tool is not None and point in points(record, False)
        if not met or left(record, point):
            self.records.append(record)
            self.by_ref.setdefault(ref, record)
            self.by_key[inputs] = record
        return None if met else [self._expected(record, ())]

    def _sweep_dying(self, action: Crash) -> list[Expected] | None:
        """A sweep whose worker dies recovering ``action.call``: the holds past their bound it expired first stand."""
        target = self.by_ref.get(action.call) if action.call is not None else None
        lease = self.workload.lease_s
        dies = (
            target is not None
            and orphan(target, self.clock, lease)
            and action.point in recovery_points(target, sweep=True)
        )
        if not dies:
            return self.sweep()
        assert target is not None
        for record in self.records:
            if record.status is InvocationStatus.AWAITING_APPROVAL and self.past_bound(record):
                record.events.append(EventKind.APPROVAL_RESOLVED)
                record.finish((outcome(ReasonCode.APPROVAL_EXPIRED, "D11.7"),))
        for record in self.records:
            if record is target:
                recover(record, self.workload, self.clock, sweep=True, dies=action.point)
                break
            if orphan(record, self.clock, lease):
                recover(record, self.workload, self.clock, sweep=True)
        return None

    def executed_arguments(self, record: Record) -> dict[str, object]:
        """What the tool must have been executed with (D16.4: a control call gets the answer too)."""
        return with_answer(record.call, record.answer)
