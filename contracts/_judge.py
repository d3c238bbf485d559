"""Judging what an example did: pure functions from an ``ExampleRun`` to findings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from pydantic import BaseModel, ValidationError

from toolproof.spec import IdempotencyClass, SideEffect, ToolResult, ToolSpec

from ._execute import GRACE_S, PROBE_DEADLINE_S, AttemptRun, ExampleRun, describe_error
from ._findings import Finding, finding
from ._trace import EventKind, TraceEvent
from ._transport import REMOTE_ERROR_TEXT, short_key
from ._world import describe_change

_FIELDS = frozenset(ToolResult.model_fields)


def owes_watermark(spec: ToolSpec) -> bool:
    """Whether the tool must call mark_effect_sent before its first effect (decision 4)."""
    return spec.consequential and spec.idempotency is not IdempotencyClass.IDEMPOTENT


def repeats(spec: ToolSpec) -> bool:
    """Whether the contract runs each example twice under the same key (the idempotency check)."""
    return spec.consequential and spec.idempotency is not IdempotencyClass.NON_IDEMPOTENT


class _Judge:
    def __init__(self, spec: ToolSpec, run: ExampleRun) -> None:
        self.spec, self.run = spec, run
        self.findings: list[Finding] = []

    def add(self, rule_id: str, seen: str) -> None:
        self.findings.append(finding(rule_id, seen, self.run.arguments, self.run.trace.lines()))

    def at(self, event: TraceEvent) -> str:
        return f"trace event {self.run.trace.number(event)}"


def judge_example(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """Every per-execution rule, judged on one example."""
    judge = _Judge(spec, run)
    for attempt in run.attempts:
        _judge_attempt(judge, attempt)
    if run.abandoned:
        judge.add(
            "D2.4",
            f"the tool was still running {GRACE_S}s after its deadline: "
            "it swallows cancellation, shields itself, or blocks the event loop",
        )
    _judge_repeat(judge)
    return judge.findings


def _judge_attempt(judge: _Judge, attempt: AttemptRun) -> None:
    spec, trace = judge.spec, judge.run.trace
    events = trace.events(attempt.number)
    marks = [e for e in events if e.kind is EventKind.MARK]
    effects = [e for e in events if e.effect]
    outside = [e for e in events if e.kind is EventKind.OUTSIDE]
    where = f"in attempt {attempt.number}" if len(judge.run.attempts) > 1 else ""
    if outside:
        judge.add("D2.7", f"the tool tried to {outside[0].text.removesuffix(': refused')} (the gate refused it)")
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
    _judge_declared(judge, effects)
    if attempt.finished:
        for rule_id, seen in judge_result(spec, attempt.returned):
            judge.add(rule_id, seen)
    elif attempt.raised is not None and not outside and not attempt.cancelled:
        after_mark = bool(marks) and spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
        outcome = "effect_unknown (UNCERTAIN, a person must review it)" if after_mark else "tool_crashed"
        judge.add(
            "D13.7",
            f"for arguments its schema accepts the tool raised {describe_error(attempt.raised)}; "
            f"the pipeline can only record {outcome}",
        )


def _judge_declared(judge: _Judge, effects: list[TraceEvent]) -> None:
    side_effect = judge.spec.side_effect
    if side_effect is SideEffect.READ_ONLY and effects:
        judge.add("D6.5", f"the tool is declared READ_ONLY but left an effect: {effects[0].text}")
    elif side_effect is SideEffect.WORKSPACE_WRITE:
        remote = [e for e in effects if e.kind is EventKind.HTTP]
        if remote:
            judge.add("D6.5", f"the tool is declared WORKSPACE_WRITE but sent {remote[0].text}")


def _judge_repeat(judge: _Judge) -> None:
    attempts = judge.run.attempts
    if len(attempts) != 2 or not _succeeded(attempts[0]) or attempts[1].state_after is None:
        return
    first, second = attempts
    keys_first, keys_second = first.keys, second.keys
    if keys_first and keys_second and keys_first != keys_second:
        judge.add(
            "D10.2",
            f"attempt 1 sent Idempotency-Key {short_key(keys_first[0])} and attempt 2 sent "
            f"{short_key(keys_second[0])}, although both executions carried the same idempotency key",
        )
    elif first.state_after != second.state_after:
        judge.add(
            "D10.6",
            f"a {judge.spec.idempotency.value} tool executed twice with the same arguments and key changed the "
            f"world twice: {_state_change(first, second)}",
        )


def _succeeded(attempt: AttemptRun) -> bool:
    result = attempt.returned
    return attempt.finished and isinstance(result, ToolResult | Mapping) and _ok(result)


def _ok(result: Any) -> bool:
    return bool(result.get("ok") if isinstance(result, Mapping) else result.ok)


def _state_change(first: AttemptRun, second: AttemptRun) -> str:
    assert first.state_after is not None
    assert second.state_after is not None
    files_1, remote_1 = first.state_after
    files_2, remote_2 = second.state_after
    parts = []
    if files_1 != files_2:
        parts.append(f"the workspace changed again ({describe_change(dict(files_1), dict(files_2))})")
    if remote_1 != remote_2:
        parts.append(f"the service holds {len(remote_2) - len(remote_1)} more effect(s) after the repeat")
    return "; ".join(parts)


def judge_result(spec: ToolSpec, raw: Any) -> list[tuple[str, str]]:
    """Rules on what ``execute`` returned: no status, a consistent ToolResult, trust only lowered, valid structure."""
    if isinstance(raw, BaseModel):
        data = raw.model_dump()
    elif isinstance(raw, Mapping):
        data = dict(raw)
    else:
        return [("D1.2", f"execute returned {type(raw).__name__}, not a ToolResult")]
    seen: list[tuple[str, str]] = []
    extra = sorted(set(map(str, data)) - _FIELDS)
    status = data.get("status", getattr(raw, "status", None) if isinstance(raw, BaseModel) else None)
    if status is not None:
        seen.append(("D1.1", f"the result claims status={status!r}; a tool cannot set the status"))
    elif extra:
        seen.append(("D1.1", f"the result carries fields ToolResult does not define: {', '.join(extra)}"))
    try:
        result = ToolResult.model_validate({k: v for k, v in data.items() if k in _FIELDS})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'result'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        return [*seen, ("D1.2", f"the result is not a valid ToolResult: {problems}")]
    ceiling = spec.output_trust
    if result.trust is not None and result.trust > ceiling:
        seen.append(("D1.3", f"the result claims trust={result.trust.value} above output_trust={ceiling.value}"))
    else:
        raised = [part.trust for part in result.content if part.trust is not None and part.trust > ceiling]
        if raised:
            seen.append(("D1.3", f"a content part claims trust={raised[0].value} above output_trust={ceiling.value}"))
    if result.structured is not None:
        if spec.output_schema is None:
            seen.append(("D1.4", "the result carries structured output but the spec declares no output_schema"))
        else:
            try:
                jsonschema.validate(result.structured, spec.output_schema)
            except jsonschema.ValidationError as exc:
                seen.append(("D1.4", f"structured output does not validate: {exc.message}"))
    return seen


def judge_deadline_probe(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """D2.4 on the deadline probe: nothing after cancellation, and the tool stops within the grace period."""
    judge = _Judge(spec, run)
    events = run.trace.events()
    cancel = next((e for e in events if e.kind is EventKind.CANCEL), None)
    if run.abandoned:
        judge.add(
            "D2.4",
            f"with a {PROBE_DEADLINE_S}s deadline the tool was still running {GRACE_S}s after it: "
            "it swallows cancellation, shields itself, or blocks the event loop",
        )
    elif cancel is not None:
        late = [e for e in events if e.seq > cancel.seq and (e.effect or e.kind is EventKind.MARK)]
        if late:
            judge.add(
                "D2.4",
                f"after its {PROBE_DEADLINE_S}s deadline passed and cancellation was set, the tool still went on: "
                f"{late[0].text} ({judge.at(late[0])})",
            )
    return judge.findings


def judge_remote_probe(spec: ToolSpec, run: ExampleRun) -> list[Finding]:
    """On the service's 503: the failure is reported, not raised, and the remote text stays in the detail."""
    judge = _Judge(spec, run)
    events = run.trace.events()
    if not any(e.kind is EventKind.HTTP for e in events):
        return []
    attempt = run.attempts[0]
    outside = any(e.kind is EventKind.OUTSIDE for e in events)
    if attempt.raised is not None and not outside and not attempt.cancelled:
        judge.add(
            "D13.7",
            f"when the service answered 503 the tool raised {describe_error(attempt.raised)} instead of "
            "returning ToolResult(ok=False, failure=ToolFailure(kind='REMOTE_UNAVAILABLE', detail=...))",
        )
    if attempt.finished:
        narrated = _narrated(attempt.returned)
        if narrated:
            judge.add("D13.4", f"the service's 503 text appeared in the result's {narrated}, outside failure.detail")
    return judge.findings


def _narrated(raw: Any) -> str | None:
    marker = REMOTE_ERROR_TEXT.split(":")[0]
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw) if isinstance(raw, Mapping) else {}
    for index, part in enumerate(data.get("content") or []):
        text = part.get("text", "") if isinstance(part, Mapping) else str(part)
        if marker in str(text):
            return f"content[{index}]"
    if marker in json.dumps(data.get("structured"), default=str):
        return "structured output"
    return None
