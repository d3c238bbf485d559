"""Judging what an example did: pure functions from an ``ExampleRun`` to findings."""

from __future__ import annotations

from toolproof.spec import IdempotencyClass, SideEffect, ToolSpec

from ._attempts import AttemptRun
from ._example import GRACE_S, PROBE_DEADLINE_S, ExampleRun
from ._findings import Finding, finding
from ._options import CheckOptions, KeyPlace
from ._trace import EventKind, TraceEvent
from ._transport import short_key
from ._view import describe_changes
from ._world import describe_change

_REMOTE = (EventKind.HTTP, EventKind.NETWORK)


def owes_watermark(spec: ToolSpec) -> bool:
    """Whether the tool must call mark_effect_sent before its first effect (decision 4)."""
    return spec.consequential and spec.idempotency is not IdempotencyClass.IDEMPOTENT


def repeats(spec: ToolSpec) -> bool:
    """Whether the contract runs each example twice under the same key (the idempotency check)."""
    return spec.consequential and spec.idempotency is not IdempotencyClass.NON_IDEMPOTENT


class _Judge:
    def __init__(self, spec: ToolSpec, run: ExampleRun, options: CheckOptions) -> None:
        self.spec, self.run, self.options = spec, run, options
        self.findings: list[Finding] = []

    def add(self, rule_id: str, seen: str) -> None:
        self.findings.append(finding(rule_id, seen, self.run.arguments, self.run.trace.lines()))

    def at(self, event: TraceEvent) -> str:
        return f"trace event {self.run.trace.number(event)}"


def judge_example(spec: ToolSpec, run: ExampleRun, options: CheckOptions | None = None) -> list[Finding]:
    """Every per-execution rule, judged on one example."""
    judge = _Judge(spec, run, options or CheckOptions())
    for attempt in run.attempts:
        _judge_attempt(judge, attempt)
    if run.changes and not any(f.rule_id == "D2.7" for f in judge.findings):
        shown = describe_changes(run.changes)
        judge.add("D2.7", f"the confinement kept changes outside the workspace from the real system: {shown}")
    if run.abandoned:
        judge.add(
            "D2.4",
            f"the tool was still running {GRACE_S}s after its deadline: "
            "it swallows cancellation, shields itself, or blocks the event loop",
        )
    _judge_repeat(judge)
    return judge.findings


def _outside_seen(judge: _Judge, event: TraceEvent) -> str:
    if not judge.run.confined:
        return f"the tool tried to {event.text.removesuffix(': refused')} (the gate refused it)"
    seen = f"the tool {event.text}"
    if judge.run.changes:
        kept = describe_changes(judge.run.changes)
        seen += f"; the confinement kept these changes from the real system: {kept}"
    return seen


def _judge_attempt(judge: _Judge, attempt: AttemptRun) -> None:
    spec, trace = judge.spec, judge.run.trace
    events = trace.events(attempt.number)
    marks = [e for e in events if e.kind is EventKind.MARK]
    effects = [e for e in events if e.effect]
    outside = [e for e in events if e.kind is EventKind.OUTSIDE]
    where = f"in attempt {attempt.number}" if len(judge.run.attempts) > 1 else ""
    if outside:
        judge.add("D2.7", _outside_seen(judge, outside[0]))
    if len(marks) > 1:
        judge.add("D4.13", f"mark_effect_sent() was called {len(marks)} times {where or 'in one execution'}".strip())
    if owes_watermark(spec) and effects:
        first = effects[0]
        if not marks:
            judge.add(
                "D4.10",
                f"a {spec.idempotency.value} {spec.side_effect.value} tool left an effect {where} without ever "
                f"calling mark_effect_sent(): {first.text} ({judge.at(first)})".replace("  ", " "),
            )
        elif first.seq < marks[0].seq:
            judge.add(
                "D4.1",
                f"the first effect, {first.text} ({judge.at(first)}), came before mark_effect_sent() "
                f"({judge.at(marks[0])})",
            )
    _judge_declared(judge, [e for e in effects if e.kind is not EventKind.OUTSIDE])
    _judge_after_end(judge, events)
    if attempt.finished:
        for rule_id, seen in attempt.result_findings:
            judge.add(rule_id, seen)
    elif attempt.raised is not None and not outside and not attempt.cancelled:
        after_mark = bool(marks) and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        outcome = "effect_unknown (UNCERTAIN, a person must review it)" if after_mark else "tool_crashed"
        judge.add(
            "D13.7",
            f"for arguments its schema accepts the tool raised {attempt.raised}; "
            f"the pipeline can only record {outcome}",
        )


def _judge_after_end(judge: _Judge, events: list[TraceEvent]) -> None:
    """D3.9: an effect on the trace after the execution's end came from what the tool left running."""
    end = next((e for e in events if e.kind is EventKind.END), None)
    late = next((e for e in events if end is not None and e.seq > end.seq and e.effect), None)
    if end is not None and late is not None:
        judge.add(
            "D3.9",
            f"after the execution ended ({end.text}, {judge.at(end)}), what the tool left running left an effect: "
            f"{late.text} ({judge.at(late)})",
        )


def _judge_declared(judge: _Judge, effects: list[TraceEvent]) -> None:
    side_effect = judge.spec.side_effect
    if side_effect is SideEffect.READ_ONLY and effects:
        judge.add("D6.5", f"the tool is declared READ_ONLY but left an effect: {effects[0].text}")
    elif side_effect is SideEffect.WORKSPACE_WRITE:
        remote = [e for e in effects if e.kind in _REMOTE]
        if remote:
            judge.add("D6.5", f"the tool is declared WORKSPACE_WRITE but sent {remote[0].text}")


def _judge_repeat(judge: _Judge) -> None:
    attempts = judge.run.attempts
    if len(attempts) != 2 or not attempts[0].ok or attempts[1].workspace_after is None:
        return
    first, second = attempts
    keys_first, keys_second = first.keys, second.keys
    carrier = judge.options.key_in
    name = carrier.name if carrier.place is KeyPlace.HEADER else carrier.describe()
    if keys_first and keys_second and keys_first != keys_second:
        judge.add(
            "D10.2",
            f"attempt 1 sent {name} {short_key(keys_first[0])} and attempt 2 sent "
            f"{short_key(keys_second[0])}, although both executions carried the same idempotency key",
        )
    elif first.state() != second.state():
        seen = (
            f"a {judge.spec.idempotency.value} tool executed twice with the same arguments and key changed the "
            f"world twice: {_state_change(first, second)}"
        )
        if judge.run.stray_keys:
            place, _, where = judge.run.stray_keys[0].partition(":")
            seen += (
                f"; its requests carried the key in the {place} ({where}), where the service was not told to look: "
                f"declare it (key_in='{place}:{where}', or --key-in {place}:{where})"
            )
        judge.add("D10.6", seen)


def _state_change(first: AttemptRun, second: AttemptRun) -> str:
    parts = []
    files_1, files_2 = first.workspace_after or {}, second.workspace_after or {}
    if files_1 != files_2:
        parts.append(f"the workspace changed again ({describe_change(files_1, files_2)})")
    remote_1, remote_2 = first.service_after or [], second.service_after or []
    if remote_1 != remote_2:
        parts.append(f"the service holds {len(remote_2) - len(remote_1)} more effect(s) after the repeat")
    return "; ".join(parts)


def judge_deadline_probe(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """D2.4 on the deadline probe: nothing after cancellation, and the tool stops within the grace period."""
    judge = _Judge(spec, run, CheckOptions())
    events = run.trace.events()
    cancel = next((e for e in events if e.kind is EventKind.CANCEL), None)
    if run.abandoned:
        judge.add(
            "D2.4",
            f"with a {PROBE_DEADLINE_S}s deadline (times the load factor) the tool was still running {GRACE_S}s after it: "
            "it swallows cancellation, shields itself, or blocks the event loop",
        )
    elif cancel is not None:
        late = [e for e in events if e.seq > cancel.seq and (e.effect or e.kind is EventKind.MARK)]
        if late:
            judge.add(
                "D2.4",
                f"after its {PROBE_DEADLINE_S}s deadline (times the load factor) passed and cancellation was set, the tool still went on: "
                f"{late[0].text} ({judge.at(late[0])})",
            )
    return judge.findings


def judge_remote_probe(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """On the service's 503: the failure is reported, not raised, and the remote text stays in the detail."""
    judge = _Judge(spec, run, CheckOptions())
    events = run.trace.events()
    if not any(e.kind is EventKind.HTTP for e in events) or not run.attempts:
        return []
    attempt = run.attempts[0]
    outside = any(e.kind is EventKind.OUTSIDE for e in events)
    if attempt.raised is not None and not outside and not attempt.cancelled:
        judge.add(
            "D13.7",
            f"when the service answered 503 the tool raised {attempt.raised} instead of "
            "returning ToolResult(ok=False, failure=ToolFailure(kind='REMOTE_UNAVAILABLE', detail=...))",
        )
    if attempt.finished and attempt.narrated:
        judge.add(
            "D13.4", f"the service's 503 text appeared in the result's {attempt.narrated}, outside failure.detail"
        )
    return judge.findings


def judge_reads_only(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """D4.10 for a NON_IDEMPOTENT tool that never marked and whose only requests were reads (a GET webhook)."""
    judge = _Judge(spec, run, CheckOptions())
    request = next(e for e in run.trace.events() if e.kind is EventKind.HTTP)
    judge.add(
        "D4.10",
        f"a NON_IDEMPOTENT {spec.side_effect.value} tool never called mark_effect_sent(), and its only contact "
        f"with the world was {request.text.split(' at the transport')[0]} ({judge.at(request)}), a safe method, "
        "counted as a read: if its requests act, declare it (requests_act=True, or --requests-act) and mark "
        "before them; if they do not, the tool is not NON_IDEMPOTENT",
    )
    return judge.findings
