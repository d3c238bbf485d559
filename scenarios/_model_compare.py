"""Comparing what the harness observed with what the model allows, one observable at a time.

Every check returns ``(rule, message)`` problems worded "model allowed ..., implementation gave ...".
The facts come from the harness: dispositions as returned, rows and events as read back, effects and
executions from the fake world, artifact bytes read from where the reference points and hashed here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from toolproof.fakes import World
from toolproof.spec import (
    OUTCOME_TABLE,
    ArtifactRef,
    CanonicalJsonError,
    Disposition,
    Event,
    IdempotencyClass,
    InvocationRow,
    Outcome,
    ReasonCode,
    Success,
    Suspended,
    canonical_json,
)
from toolproof.spec.model import (
    RAISED_TEXT,
    Expected,
    Model,
    Problems,
    Record,
)
from toolproof.spec.model.d12 import excerpt_problems, total_bytes, whole
from toolproof.spec.model.d13 import detail_allowed
from toolproof.spec.model.mcp import verdict_rules

Ids = dict[tuple[object, ...], list[str]]
"""Each call's invocation ids, by its key's inputs, as the implementation named them (a replayed refusal may have a second)."""


def read_artifact(ref: ArtifactRef) -> bytes | None:
    """The bytes at ``ref.uri`` when the harness can read them itself (a file:// URI), else None."""
    url = urlparse(ref.uri)
    if url.scheme != "file":
        return None
    path = Path(unquote(url.path))
    return path.read_bytes() if path.is_file() else b""


def _digest(data: bytes) -> tuple[int, str]:
    return len(data), hashlib.sha256(data).hexdigest()


def _artifact_problems(record: Record, got: list[ArtifactRef], excerpted: bytes | None) -> Problems:
    """D1.5, D2.8, D12.2: the tool's artifacts in order, plus the whole output's exactly when excerpted."""
    assert record.delivery is not None
    own = [_digest(data) for _, data in record.delivery.artifacts]
    problems: Problems = []
    claimed = [(a.size, a.sha256) for a in got]
    for ref in got:
        data = read_artifact(ref)
        if data is not None and _digest(data) != (ref.size, ref.sha256):
            # Stored bytes other than the claim: a wrong digest (D2.8), or, when the claim is of bytes the tool
            # wrote, an artifact lost to a later one (D1.5: the tool's own artifacts stay).
            # The whole output's artifact stored otherwise than claimed: D12.2's artifact is not there.
            # A name the tool wrote once whose bytes another name's replaced: the writer gave two names one file, so
            # the reference describes bytes it no longer holds (D2.8) as well; so with writes started at once, which
            # the writer must keep apart whatever their names.
            whole_output = excerpted is not None and (ref.size, ref.sha256) == _digest(excerpted)
            at_once = record.tool is not None and record.tool.behaviour.artifacts_at_once
            once = at_once or sum(1 for name, _ in record.delivery.artifacts if name == ref.name) == 1
            if (ref.size, ref.sha256) in own:
                rules: tuple[str, ...] = ("D1.5", "D2.8") if once else ("D1.5",)
            else:
                rules = ("D12.2",) if whole_output else ("D2.8",)
            stored = _digest(data)
            shown = (
                f"claims {ref.size} bytes {ref.sha256[:12]}, its stored bytes are {stored[0]} bytes {stored[1][:12]}"
            )
            problems += [(rule, f"artifact {ref.name!r} {shown}") for rule in rules]
    expected = list(own) + ([_digest(excerpted)] if excerpted is not None else [])
    at = 0
    for item in claimed:
        if at < len(own) and item == own[at]:
            at += 1
    if at < len(own):
        problems.append(
            ("D1.5", f"model allowed the tool's own artifacts {own} in order, implementation gave {claimed}")
        )
    if excerpted is not None and _digest(excerpted) not in claimed:
        problems.append(
            (
                "D12.2",
                f"model allowed an artifact of the whole {len(excerpted)}-byte output, implementation gave {claimed}",
            )
        )
    if len(claimed) != len(expected):
        rule = "D12.2" if excerpted is not None else "D1.5"
        problems.append((rule, f"model allowed {len(expected)} artifacts, implementation gave {len(claimed)}"))
    return problems


def _success_problems(model: Model, record: Record, got: Success) -> Problems:
    assert record.delivery is not None
    assert record.tool is not None
    d, name = record.delivery, record.tool.spec.name
    pieces = [(e.trust.value, e.source, e.text) for e in got.content]
    limit = model.workload.max_output_bytes
    problems: Problems = []
    excerpted: bytes | None = None
    if total_bytes(d.parts) <= limit:
        want = whole(d.parts, name)
        if pieces != want:
            texts = [p[2] for p in pieces] == [w[2] for w in want]
            rules = d.label_rules if texts else ("D12.5", "D1.5")
            problems += [
                (rule, f"model allowed content {want!r:.300}, implementation gave {pieces!r:.300}") for rule in rules
            ]
    else:
        excerpted = "".join(t for t, _ in d.parts).encode()
        problems += excerpt_problems(d.parts, name, limit, pieces, d.label_rules)
    if got.structured != d.structured:
        problems.append(("D1.5", f"model allowed structured {d.structured!r}, implementation gave {got.structured!r}"))
    return problems + _artifact_problems(record, list(got.artifacts), excerpted)


REASON_RULES: dict[ReasonCode, tuple[str, ...]] = {
    ReasonCode.LOOP_DETECTED: ("D14.3", "D14.5"),
    ReasonCode.REPEATED_DENIAL: ("D14.2", "D14.5"),
    ReasonCode.PRIOR_UNCERTAIN: ("D14.4", "D14.5"),
    ReasonCode.UNKNOWN_TOOL: ("D5.3",),
    ReasonCode.POLICY_DENIED: ("D11.5",),
    ReasonCode.APPROVAL_DENIED: ("D11.6",),
    ReasonCode.APPROVAL_EXPIRED: ("D11.7",),
}
"""A refusal the model did not allow breaks the rule that says when that refusal applies, too."""


def _given_rules(got: Disposition, record: Record) -> tuple[str, ...]:
    """The rules of a refusal the implementation gave where the model allowed none of its kind."""
    if not isinstance(got, Outcome):
        return ()
    if got.reason_code is ReasonCode.INVALID_ARGUMENTS:
        return ("D16.1",) if record.spec is not None and record.spec.kind.value == "CONTROL" else ("D3.3",)
    return REASON_RULES.get(got.reason_code, ())


def disposition_problems(model: Model, expected: Expected, got: Disposition, where: str) -> Problems:
    """One call's disposition against the model's expectation; settles the verdict the implementation chose."""
    record = expected.record
    if expected.suspended is not None:
        if isinstance(got, Suspended) and got.reason == expected.suspended:
            return []
        return [
            (rule, f"{where}: model allowed SUSPENDED ({expected.suspended}), implementation gave {_shown(got)}")
            for rule in dict.fromkeys(expected.rules + _given_rules(got, record))
        ]
    if isinstance(got, Suspended):
        # A hold or a suspension the model did not allow is step 5's decision (D11.5, D16.2), whatever came after.
        rules: tuple[str, ...] = ("D11.5",) if got.reason == "approval" else ("D16.2",)
        # ... and the rules of the verdict the model allowed instead (a refusal it skipped: D16.1, D14.x, D5.3).
        held = verdict_rules(record.branch_rules, True, False)  # The hold follows from the tool's classification.
        rules = tuple(dict.fromkeys((*rules, *(r for v in record.verdicts for r in v.rules), *held)))
        return [
            (rule, f"{where}: model allowed {_allowed(record)}, implementation gave SUSPENDED ({got.reason})")
            for rule in rules
        ]
    status = got.status.value
    reason = got.reason_code.value if isinstance(got, Outcome) else None
    before = record.verdicts
    if isinstance(got, Outcome) and got.status is not OUTCOME_TABLE[got.reason_code].status:
        table = OUTCOME_TABLE[got.reason_code].status.value
        return [
            ("D13.2", f"{where}: model allowed {got.reason_code.value} only as {table}, implementation gave {status}")
        ]
    if not record.settle(status, reason):
        rules = tuple(
            dict.fromkeys((*(r for v in before for r in v.rules), *expected.rules, *_given_rules(got, record)))
        )
        return [
            (rule, f"{where}: model allowed {_allowed(record)}, implementation gave {status} {reason or ''}".rstrip())
            for rule in rules
        ]
    if isinstance(got, Success):
        found = _success_problems(model, record, got)
        if "D8.1" in record.branch_rules:  # What the synthetic read tool delivers is the resource's text (D8.1).
            found += [("D8.1", msg) for _, msg in found[:1]]
        return [(rule, f"{where}: {msg}") for rule, msg in found]
    entry = OUTCOME_TABLE[got.reason_code]
    problems: Problems = []
    if got.retryable != entry.retryable:
        problems.append(
            ("D13.2", f"{where}: model allowed retryable={entry.retryable}, implementation gave {got.retryable}")
        )
    if got.message != entry.message:
        problems.append(
            ("D13.3", f"{where}: model allowed message {entry.message!r}, implementation gave {got.message!r}")
        )
        remote = [t for t in (record.run.detail if record.run else None, RAISED_TEXT) if t]
        if any(text in got.message for text in remote):
            problems.append(("D13.4", f"{where}: the message carries remote or exception text: {got.message!r:.120}"))
    detail = None if got.external_detail is None else (got.external_detail.trust.value, got.external_detail.text)
    allowed = detail_allowed(record.run.detail if record.run is not None else None)
    if detail not in allowed:
        problems.append(
            (
                "D13.4",
                f"{where}: model allowed external_detail {sorted(map(str, allowed))}, implementation gave {detail!r}",
            )
        )
    return problems


def _allowed(record: Record) -> str:
    return (
        " or ".join(f"{v.status.value} {v.reason.value if v.reason else ''}".rstrip() for v in record.verdicts)
        or "(nothing)"
    )


def _shown(got: Disposition) -> str:
    if isinstance(got, Outcome):
        return f"{got.status.value} {got.reason_code.value}"
    if isinstance(got, Success):
        return "SUCCEEDED"
    return f"SUSPENDED ({got.reason})"


def leaked_text(model: Model, events: Sequence[Event]) -> Problems:
    """D13.6: no argument text, result text, remote detail or exception text in any event."""
    secrets = {RAISED_TEXT}
    for record in model.records:
        secrets.update(v for v in record.call.arguments.values() if isinstance(v, str) and len(v) >= 6)
        if record.tool is not None:
            b = record.tool.behaviour
            secrets.update(t for t, _ in b.parts if len(t) >= 6)
            if b.detail:
                secrets.add(b.detail)
    # Arguments that are not text (numbers, arrays, objects) cannot be told by a substring: an event value equal to
    # a call's whole arguments or to one of its array or object arguments carries them.
    shapes: set[bytes] = set()
    for record in model.records:
        values = [record.call.arguments, *record.call.arguments.values()]
        shapes.update(canonical(v) for v in values if isinstance(v, dict | list) and v)
    for event in events:
        data = json.dumps(event.data, default=str)
        for secret in secrets:
            if secret in data:
                return [("D13.6", f"event {event.kind} of {event.invocation_id[:8]} carries {secret[:40]!r}")]
        for value in _values(event.data):
            if _canonical_or_none(value) in shapes:
                return [("D13.6", f"event {event.kind} of {event.invocation_id[:8]} carries arguments {value!r:.60}")]
    return []


def _canonical_or_none(value: object) -> bytes | None:
    """``value``'s canonical bytes, or None when it has no canonical form (an event may carry anything)."""
    try:
        return canonical(value)
    except CanonicalJsonError:
        return None


def _values(data: object) -> list[object]:
    """Every array and object inside an event's data, at every depth."""
    out: list[object] = []
    if isinstance(data, dict):
        out += [v for item in data.values() for v in [item, *_values(item)] if isinstance(v, dict | list)]
    elif isinstance(data, list):
        out += [v for item in data for v in [item, *_values(item)] if isinstance(v, dict | list)]
    return out


def key_problems(model: Model, rows: dict[str, InvocationRow], ids: Ids) -> Problems:
    """D10: rows share a key exactly when the model's key inputs are equal."""
    by_inputs: dict[tuple[object, ...], set[str]] = {}
    for record in model.records:
        for invocation_id in ids.get(record.key, []):
            if invocation_id in rows:
                by_inputs.setdefault(record.key, set()).add(rows[invocation_id].idempotency_key)
    problems: Problems = []
    seen: dict[str, tuple[object, ...]] = {}
    for inputs, keys in by_inputs.items():
        if len(keys) > 1:
            # Equal inputs (the arguments compared in canonical form), several keys: the derivation is not a
            # function of its inputs (D10.1) or not of the arguments' canonical form (D10.4, a replay re-encoded).
            shown = f"model allowed one key for the inputs {inputs!r:.160}, implementation gave {len(keys)}"
            problems += [("D10.1", shown), ("D10.4", shown)]
        for key in keys:
            other = seen.setdefault(key, inputs)
            if other != inputs:
                shown = f"model allowed different keys for {other!r:.160} and {inputs!r:.160}, implementation gave one"
                problems += [(rule, shown) for rule in _differing(other, inputs)]
    return problems


KEY_INPUT_RULES = ("D10.1", "D10.1", "D10.3", "D10.3", "D10.1", "D10.5", "D10.4")
"""The rule that makes each of the key's inputs (spec.model.d10.key_inputs, in order) part of the key."""


def _differing(one: tuple[object, ...], other: tuple[object, ...]) -> list[str]:
    """The rules of the key inputs in which ``one`` and ``other`` differ: tenant, run or tool name D10.1, step or
    call_id D10.3, tool_version D10.5, canonical arguments D10.4."""
    return list(dict.fromkeys(rule for rule, a, b in zip(KEY_INPUT_RULES, one, other, strict=True) if a != b))


def canonical(value: object) -> bytes:
    """A JSON value's canonical bytes, for comparing what a row or a tool received."""
    return canonical_json(value)


def world_counts(world: World, invocation_id: str) -> tuple[int, int]:
    """(executions, effects) the fake world saw for ``invocation_id``."""
    executions = sum(1 for e in world.executions if e.invocation_id == invocation_id)
    effects = sum(1 for e in world.effects if e.invocation_id == invocation_id)
    return executions, effects


def consistency(record: Record, row: InvocationRow) -> Problems:
    """D4.7 and D4.2 on the row alone: UNCERTAIN only with a watermark; a marked NON_IDEMPOTENT raise or overrun
    is UNCERTAIN, never a retryable failure."""
    marked = row.effect_sent_at is not None
    if row.reason_code is ReasonCode.EFFECT_UNKNOWN and not marked:
        return [("D4.7", f"{record.ref[2]}: the row is UNCERTAIN with its watermark unset")]
    escaped = marked and record.tool is not None and record.tool.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
    if escaped and row.reason_code in (ReasonCode.TOOL_CRASHED, ReasonCode.DEADLINE_EXCEEDED):
        return [("D4.2", f"{record.ref[2]}: a NON_IDEMPOTENT call with its watermark set is {row.reason_code.value}")]
    return []
