"""Decision 3: a call through the fourteen steps; what refuses it where, and which events each path writes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolproof.spec import (
    UNSATISFIABLE_SCOPE,
    ContextItem,
    EventKind,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    call_hash,
)

from ._catalog import ModelTool, Workload
from ._record import Record
from ._schema import validates
from .d01 import delivery
from .d04 import execute
from .d10 import key_inputs
from .d11 import Decision, argument_trust, decide, origin_trust
from .d13 import outcome
from .d14 import refusals


def _refuse(record: Record, reason: ReasonCode, *rules: str) -> Record:
    """D3.3: refused before step 6: one terminal row, requested then completed, nothing executed."""
    record.pre_record = True
    record.events.append(EventKind.REQUESTED)
    record.finish((outcome(reason, *rules, "D3.3"),))
    return record


def run_tool(record: Record, workload: Workload, now: float = 0.0) -> None:
    """Steps 8 to 13 for a claimed call: started, the executions, completed (D3.1, D3.7). The claim takes the
    next attempt after the row's (a call recovered after a crash goes on counting, D10.2's interpretation) and keeps
    the watermark a dead worker left (D4.4, D4.5)."""
    assert record.tool is not None
    record.events.append(EventKind.STARTED)
    first = record.attempt + 1
    record.lease_until = now + workload.lease_s
    run = execute(record.tool.spec, record.tool.behaviour, workload.max_attempts, first, record.watermark)
    record.run, record.executions, record.effects = (
        run,
        record.executions + run.executions,
        record.effects + run.effects,
    )
    record.attempt = first + run.executions - 1
    record.attempts += range(first, record.attempt + 1)
    record.watermark = run.watermark
    if run.succeeded:
        record.delivery = delivery(record.tool.spec, record.tool.behaviour)
    record.finish(run.verdicts)


def propose(
    workload: Workload,
    tools: dict[str, ModelTool],
    earlier: Sequence[Record],
    tenant: str,
    ref: tuple[str, int, str],
    call: ProposedCall,
    context: tuple[ContextItem, ...],
    now: float = 0.0,
    unresolved: Mapping[str, tuple[ReasonCode, tuple[str, ...]]] | None = None,
) -> Record:
    """A new proposal through steps 1 to 8 (and on to 13 when it is allowed), at the model's clock ``now``;
    ``unresolved``: names step 1 refuses with another reason than unknown_tool, and its rules (an MCP session's
    withdrawn or changed tools, the model's page ``mcp``)."""
    tool = tools.get(call.tool_name)
    version = tool.spec.version if tool is not None else None
    record = Record(ref, tenant, call, context, tool, key_inputs(tenant, ref[0], ref[1], call, version), None)
    if tool is None:
        reason, rules = (unresolved or {}).get(call.tool_name, (ReasonCode.UNKNOWN_TOOL, ("D5.3",)))
        return _refuse(record, reason, *rules)
    if not validates(tool.spec.input_schema, call.arguments):
        return _refuse(record, ReasonCode.INVALID_ARGUMENTS, "D16.1" if tool.spec.kind.value == "CONTROL" else "D3.3")
    record.origin, record.argument = origin_trust(context), argument_trust(context, call)
    record.identical = call_hash(call.tool_name, call.arguments)
    same = [(r.status, r.reason) for r in earlier if r.ref[0] == ref[0] and r.identical == record.identical]
    applies = refusals(same)
    if applies:
        record.pre_record = True
        record.events.append(EventKind.REQUESTED)
        # D16.1: a control call meets the breaker like any call.
        control = ("D16.1",) if tool.spec.kind.value == "CONTROL" else ()
        record.finish(tuple(outcome(reason, rule, "D3.3", *control) for reason, rule in applies.items()))
        return record
    # Decision 6: no credential of any configuration grants the unclassified server's scope (D6.2).
    granted = tuple(scope for scope in workload.credentials if scope != UNSATISFIABLE_SCOPE)
    decision, rules = decide(tool.spec, record.origin, record.argument, workload.denied_tools, granted)
    if decision is Decision.DENY:
        return _refuse(record, ReasonCode.POLICY_DENIED, *rules)
    record.events.append(EventKind.REQUESTED)
    record.created_at = now
    if decision is Decision.APPROVAL:
        record.decided = "approval"
        record.status = InvocationStatus.AWAITING_APPROVAL
        record.events.append(EventKind.APPROVAL_REQUESTED)
        return record
    if decision is Decision.CONTROL:
        record.decided = "control"
        record.suspended = True
        record.events.append(EventKind.SUSPENDED)
        return record
    run_tool(record, workload, now)
    return record
