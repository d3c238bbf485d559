"""Decision 10: the idempotency key.

The scenarios judge properties of keys, never their values. D10.1: inputs that run together alike when concatenated
(tenant t1 with run r, tenant t with run 1r, and so at every boundary between adjacent inputs), or that contain the
character a key could join them with, are still different calls. Where keys have to agree across implementations,
the derivation to use is spec ``idempotency_key``: sha256 of the RFC 8785 canonical JSON of ["toolproof-key/2",
tenant, run, step_number, call_id, tool name, tool_version or null, arguments], with vectors in
spec/vectors/canonical-hashes.json.

D10.2: the key across the attempts of a retried tool, and the bound for max_attempts 1, 2 (the default) and 3 with a
tool that reports TRANSIENT every time and one that reports it once. The mark's gate on the retry, swept: a
consequential tool of every idempotency class that reports TRANSIENT every time, once after marking its effect (and
leaving it) and once without marking, for max_attempts 1, 2 and 3: only the marked NON_IDEMPOTENT one runs once, every
other runs max_attempts times, counted in the fake world.

D10.4: member order at every depth (property-based) keeps the key; an array's order, its length, and a scalar's JSON
type change it (JSON's data model, RFC 8259: an object is unordered, an array ordered, so sorting arrays would change
the value). One number in every encoding a submission can carry (1 and 1.0, 0 and -0.0, 100 and 1e2, 2**53 and its
double), at the top level, nested in an object and inside an array, is one value: a replay in any of them is the
same call, acting once. Strings are compared as their code points, never folded: two strings that one Unicode
normalization or a case fold makes equal (a ligature, a composed letter and its decomposition, combining marks in
another order, a full-width letter, a compatibility character, another case) are two values, as object member names,
as values, nested and inside an array: each is its own call and executes, and only the same code points replay.
That arguments without a canonical form (NaN, an infinity, 2**53 + 1, a lone surrogate) are
refused by spec ProposedCall, naming where, is the spec's own, checked by the harness's tests and vectors.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.fakes import EchoTool, FailsTool, FakeTool, TransientOnceTool, World, WriteTool
from toolproof.spec import (
    IdempotencyClass,
    Identity,
    InstanceConfig,
    InvocationRow,
    JsonObject,
    SideEffect,
    Success,
    ToolExecutionContext,
    ToolFailure,
    ToolResult,
    ToolSource,
)

from ._harness import Harness, Session, describe

_FREE_OBJECT = {"input_schema": {"type": "object"}}


@pytest.mark.rules("D10.1")
async def test_key_changes_with_tenant_run_and_tool(harness: Harness) -> None:
    first = WriteTool(harness.world, name="tickets.create")
    second = WriteTool(harness.world, name="tickets.open")
    async with harness.open(first, second) as session:
        base = {"step_number": 1}
        variants = [
            ("tickets.create", {"run_id": "run-a", "tenant": "tenant-1"}),
            ("tickets.create", {"run_id": "run-a", "tenant": "tenant-2"}),
            ("tickets.create", {"run_id": "run-b", "tenant": "tenant-1"}),
            ("tickets.open", {"run_id": "run-a", "tenant": "tenant-1"}),
        ]
        keys = []
        unread: list[str] = []
        for tool_name, where in variants:
            d = harness.success(
                "D10.1", await session.call(tool_name, {"title": "t"}, call_id="call-1", **base, **where)
            )
            row, missing = await _read_row(session, d.invocation_id, where["run_id"])
            keys.append(row.idempotency_key if row else None)
            unread += [missing] if missing else []
    if unread:
        harness.fail("D10.1", "; ".join(unread) + ", so the keys could not be compared")
    harness.expect(
        "D10.1",
        len(set(keys)) == 4,
        f"calls differing only in tenant, run or tool got keys {keys}; expected four different keys",
    )
    harness.expect("D10.1", len(harness.world.effects) == 4, f"{len(harness.world.effects)} of 4 distinct calls acted")


@pytest.mark.rules("D10.2")
async def test_retry_reuses_the_key(harness: Harness) -> None:
    tool = TransientOnceTool(harness.world)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    attempts: list[Identity] = harness.world.observations.get(tool.spec.name, [])
    harness.expect(
        "D10.2",
        len(attempts) >= 2,
        f"a TRANSIENT failure on attempt 1 got {len(attempts)} execution(s) in its step; expected a bounded retry "
        f"(final disposition {d!r})",
    )
    harness.expect(
        "D10.2",
        [a.attempt for a in attempts[:2]] == [1, 2] and attempts[0].idempotency_key == attempts[1].idempotency_key,
        f"attempts {[a.attempt for a in attempts]} carried keys {[a.idempotency_key[:12] for a in attempts]}; "
        "a retry must carry the same key",
    )


@pytest.mark.rules("D10.2")
@pytest.mark.parametrize("max_attempts", [None, 1, 2, 3], ids=["default", "1", "2", "3"])
async def test_a_failing_tool_runs_at_most_max_attempts_times(harness: Harness, max_attempts: int | None) -> None:
    bound = InstanceConfig.model_fields["max_attempts"].default if max_attempts is None else max_attempts
    always = FailsTool(harness.world, kind="TRANSIENT", name="weather.always_down")
    once = TransientOnceTool(harness.world)
    config = {} if max_attempts is None else {"max_attempts": max_attempts}
    async with harness.open(always, once, **config) as session:
        await session.call(always.spec.name)
        await session.call(once.spec.name)
    runs = [e.attempt for e in harness.world.executions if e.tool_name == always.spec.name]
    harness.expect(
        "D10.2",
        runs == list(range(1, bound + 1)),
        f"a tool that reports TRANSIENT every time ran as attempts {runs} with max_attempts {bound}; expected "
        f"{list(range(1, bound + 1))}: max_attempts counts every execution of the invocation, the first included",
    )
    again = [e.attempt for e in harness.world.executions if e.tool_name == once.spec.name]
    want = [1] if bound == 1 else [1, 2]
    harness.expect(
        "D10.2",
        again == want,
        f"a tool that reports TRANSIENT once ran as attempts {again} with max_attempts {bound}; expected {want}",
    )


class _MarksThenTransient(FakeTool):
    """Marks its effect (when ``marks``), acts, then reports a TRANSIENT failure, every time it runs."""

    def __init__(self, world: World, name: str, marks: bool, **spec: Any) -> None:
        super().__init__(world, name=name, **spec)
        self.marks = marks

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        if self.marks:
            await context.mark_effect_sent()
        return ToolResult(ok=False, failure=ToolFailure(kind="TRANSIENT"))


SOURCES = [ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX]
"""Every source a tool of the port can have (an MCP tool is the adapter's: see D7's and D8's scenarios)."""


@pytest.mark.rules("D10.2")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
@pytest.mark.parametrize("max_attempts", [1, 2, 3])
async def test_a_transient_failure_after_a_non_idempotent_mark_is_never_retried(
    harness: Harness, max_attempts: int, source: ToolSource
) -> None:
    # Every side effect and idempotency class, marked or not: a TRANSIENT failure runs again up to max_attempts,
    # unless the watermark is set on a NON_IDEMPOTENT tool (its effect may have escaped; D10.2's interpretation).
    # Every source alike: a sandbox discarded after the call does not take back what left it.
    tools = [
        _MarksThenTransient(
            harness.world,
            f"flaky.{side_effect.value.lower()}_{idempotency.value.lower()}_{'marked' if marks else 'unmarked'}",
            marks,
            side_effect=side_effect,
            idempotency=idempotency,
            input_schema={"type": "object"},
            source=source,
        )
        for side_effect in SideEffect
        for idempotency in IdempotencyClass
        for marks in (True, False)
    ]
    wrong: list[str] = []
    async with harness.open(*tools, max_attempts=max_attempts) as session:
        for tool in tools:
            d = await session.call(tool.spec.name, {"n": 1})
            runs = [e.attempt for e in harness.world.executions if e.tool_name == tool.spec.name]
            escaped = tool.marks and tool.spec.idempotency is IdempotencyClass.NON_IDEMPOTENT
            want = [1] if escaped else list(range(1, max_attempts + 1))
            if runs != want:
                wrong.append(f"{tool.spec.name} ({describe(d)}) ran as attempts {runs}, expected {want}")
    harness.expect(
        "D10.2",
        not wrong,
        f"with max_attempts {max_attempts}, {source.value} tools reporting TRANSIENT every time: {wrong}; a marked NON_IDEMPOTENT "
        "call may have left its mark, so it is never run again, and every other is retried up to the bound",
    )


@pytest.mark.rules("D10.3")
async def test_later_step_or_other_call_id_executes_again(harness: Harness) -> None:
    tool = WriteTool(harness.world)
    async with harness.open(tool) as session:
        await session.call(tool.spec.name, {"title": "t"}, call_id="call-1", step_number=1)
        await session.call(tool.spec.name, {"title": "t"}, call_id="call-1", step_number=2)
        await session.step(
            [session.proposed(tool.spec.name, {"title": "t"}, call_id=c) for c in ("call-x", "call-y")], step_number=3
        )
        keys = [r.idempotency_key for r in await session.rows()]
    harness.expect(
        "D10.3",
        len(keys) == 4 and len(set(keys)) == 4,
        f"the same call in step 1, step 2, and twice in step 3 under two call_ids got {len(set(keys))} distinct keys",
    )
    harness.expect(
        "D10.3", len(harness.world.effects) == 4, f"{len(harness.world.effects)} of 4 legitimate repeats acted"
    )


_NAMES = st.text("abcdefghij", min_size=1, max_size=6)
_SCALARS = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.booleans(), st.none())
# JSON values nested to any depth: objects inside objects, objects inside arrays inside objects.
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_NAMES, inner, min_size=2, max_size=4)),
    max_leaves=8,
)
_NESTED = st.dictionaries(_NAMES, _VALUES, min_size=2, max_size=4)
# Top-level members of any kind, plus one nested object of at least two members (so reordering reaches inside).
_ARGUMENTS = st.tuples(st.dictionaries(_NAMES, _VALUES, min_size=1, max_size=4), _NESTED).map(
    lambda parts: {**parts[0], "nested": parts[1]}
)


def _reordered(value: Any) -> Any:
    """``value`` with the members of every object, at every depth, in reverse order (arrays keep their order)."""
    if isinstance(value, dict):
        return _reordered_object(value)
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


def _reordered_object(members: dict[str, Any]) -> dict[str, Any]:
    """An object's members in reverse order, each reordered at every depth."""
    return {name: _reordered(member) for name, member in reversed(list(members.items()))}


@pytest.mark.rules("D10.4")
@settings(max_examples=15, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(arguments=_ARGUMENTS)
async def test_member_order_does_not_change_the_key(harness: Harness, arguments: dict[str, Any]) -> None:
    harness.world.executions.clear()
    run_id = f"run-{len(harness.log)}"
    nested: dict[str, Any] = arguments["nested"]
    variants = [
        arguments,
        _reordered_object(arguments),
        {**arguments, "nested": _reordered_object(nested)},
        {**arguments, next(iter(arguments)): "changed-value"},
        {**arguments, "nested": {**nested, next(iter(nested)): "changed-value"}},
    ]
    tool = EchoTool(harness.world, name="files.echo", **_FREE_OBJECT)
    async with harness.open(tool) as session:
        for args in variants:
            await session.call(tool.spec.name, args, call_id="call-1", step_number=1, run_id=run_id)
        keys = [r.idempotency_key for r in await session.rows(run_id)]
    harness.expect(
        "D10.4",
        len(keys) == 3 and len(harness.world.executions) == 3,
        f"arguments {arguments!r}, the same with every object's members reordered (all depths, then the nested "
        f"object only), a changed top-level value and a changed nested value gave {len(keys)} rows and "
        f"{len(harness.world.executions)} executions; expected the reorderings to be the same call (3 and 3)",
    )


# Argument sets whose members differ only in the order of an array's elements (at every depth), in an array's
# length, or in a scalar's JSON type: every variant is another value, so every one is another call.
_ARRAY_VALUES: dict[str, list[Any]] = {
    "strings": [["a", "b"], ["b", "a"]],
    "numbers": [[1, 2, 3], [3, 2, 1], [2, 1, 3]],
    "repeats": [[1, 1, 2], [1, 2, 1], [1, 2], [1, 1, 2, 2]],
    "objects": [[{"a": 1}, {"b": 2}], [{"b": 2}, {"a": 1}]],
    "nested": [[[1, 2], [3]], [[3], [1, 2]], [[2, 1], [3]]],
    "in-object": [{"o": {"ids": ["x", "y"]}}, {"o": {"ids": ["y", "x"]}}],
    "types": [1, "1", True, None, 0, False, "", [], {}, 1.5, [None], [0]],
}


@pytest.mark.rules("D10.4")
@pytest.mark.parametrize("kind", list(_ARRAY_VALUES))
async def test_array_order_and_value_types_change_the_key(harness: Harness, kind: str) -> None:
    values = _ARRAY_VALUES[kind]
    tool = EchoTool(harness.world, name="files.echo", **_FREE_OBJECT)
    async with harness.open(tool) as session:
        answers = [
            describe(await session.call(tool.spec.name, {"v": v, "t": "x"}, call_id="call-1", step_number=1))
            for v in values
        ]
        keys = [r.idempotency_key for r in await session.rows()]
    harness.expect(
        "D10.4",
        len(set(keys)) == len(values) and len(harness.world.executions) == len(values),
        f"the arguments {{'v': V}} for V in {values!r} (each a different value: an array's order is part of its "
        f"value) gave {len(set(keys))} distinct key(s) and {len(harness.world.executions)} execution(s); expected "
        f"{len(values)} and {len(values)} (answers {answers})",
    )


@pytest.mark.rules("D10.5")
@pytest.mark.parametrize("source", SOURCES, ids=[s.value for s in SOURCES])
async def test_new_tool_version_gets_a_new_key(harness: Harness, source: ToolSource) -> None:
    # Every source alike: a device tool's version names its firmware's behaviour as a builtin's names its code's.
    keys = []
    for version in ("1", "2"):
        tool = WriteTool(harness.world, version=version, source=source)
        async with harness.open(tool) as session:
            harness.success(
                "D10.5", await session.call(tool.spec.name, {"title": "t"}, call_id="call-1", step_number=1)
            )
            keys = [r.idempotency_key for r in await session.rows()]
    harness.expect(
        "D10.5",
        len(set(keys)) == 2 and len(harness.world.effects) == 2,
        f"the same {source.value} call under tool_version 1 then 2 left {len(set(keys))} key(s) and {len(harness.world.effects)} effect(s)",
    )


async def _read_row(session: Session, invocation_id: str, run_id: str) -> tuple[InvocationRow | None, str]:
    """The row of a call that succeeded, read back with its run's rows; else None and what the read showed."""
    rows = await session.rows(run_id)
    row = next((r for r in rows if r.invocation_id == invocation_id), None)
    if row is not None:
        return row, ""
    seen = "came back empty" if not rows else f"held {len(rows)} row(s), none of it"
    why = ""
    if quote(run_id, safe="") != run_id:
        why = " (the run id holds characters a URL path percent-encodes: over HTTP its path segment must be decoded)"
    return (
        None,
        f"invocation {invocation_id[:8]} succeeded in run {run_id!r}, but the read of that run's rows {seen}{why}",
    )


# Pairs of calls whose key inputs differ yet read alike when the inputs are run together: each pair moves the
# boundary between two adjacent inputs (tenant|run, run|step_number, step_number|call_id, call_id|tool name,
# tool name|tool_version), so a key over the inputs concatenated without a boundary gives both one key.
_BOUNDARIES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "tenant|run": ({"tenant": "t1", "run_id": "r"}, {"tenant": "t", "run_id": "1r"}),
    "run|step": ({"run_id": "run-b2", "step_number": 23}, {"run_id": "run-b22", "step_number": 3}),
    "step|call_id": ({"step_number": 1, "call_id": "23"}, {"step_number": 12, "call_id": "3"}),
    "call_id|tool": ({"call_id": "c-1", "tool": "ab.create"}, {"call_id": "c-1a", "tool": "b.create"}),
    "tool|version": ({"tool": "t.ab", "version": "1"}, {"tool": "t.a", "version": "b1"}),
}
_SEPARATORS = ["|", ":", "/", ".", "-", "_", ",", ";", " ", "\t", "\n", "\x1f", '"', "\\", "[", "]"]
"""Characters a key could join its inputs with: an input that contains the separator moves a boundary too."""


async def _pair(
    harness: Harness,
    session: Session,
    label: str,
    pair: tuple[dict[str, Any], dict[str, Any]],
    *,
    read_rows: bool = True,
) -> list[str]:
    """Submit the pair's two calls (each in its own run unless the pair names one); the failures seen, as text.

    Without ``read_rows`` the pair is judged by its dispositions and effects alone (one key for both calls answers
    the second with the first's invocation and leaves one effect), not by reading the run's rows back."""
    problems: list[str] = []
    rows: list[InvocationRow | None] = []
    unread: list[str] = []
    ids: list[str] = []
    before = len(harness.world.effects)
    for where in pair:
        where = dict(where)
        tool = where.pop("tool", "tickets.create")
        where.pop("version", None)
        where.setdefault("call_id", "call-1")
        where.setdefault("step_number", 1)
        where.setdefault("run_id", f"run-{label}")
        d = await session.call(tool, {"title": "t"}, **where)
        if not isinstance(d, Success):
            problems.append(f"{label}: {where} was answered {describe(d)}")
            continue
        ids.append(d.invocation_id)
        if read_rows:
            row, missing = await _read_row(session, d.invocation_id, where["run_id"])
            rows.append(row)
            unread += [missing] if missing else []
    acted = len(harness.world.effects) - before
    if unread:
        # What the read showed comes first: no key was read, so no key can be blamed.
        return [f"{label}: " + "; ".join(unread) + f", so the keys could not be compared ({acted} effect(s))"]
    keys = [r.idempotency_key if r else None for r in rows]
    one_key = read_rows and len(set(keys)) != 2
    if len(set(ids)) != 2 or one_key or acted != 2:
        shown = f", keys {[k[:12] if k else None for k in keys]}" if read_rows else ""
        problems.append(
            f"{label}: {pair[0]} and {pair[1]} got invocations {[i[:8] for i in ids]}{shown} and {acted} effect(s); "
            "expected two invocations, two keys and two effects"
        )
    return problems


@pytest.mark.rules("D10.1")
@pytest.mark.parametrize("boundary", list(_BOUNDARIES))
async def test_inputs_that_run_together_alike_get_different_keys(harness: Harness, boundary: str) -> None:
    pair = _BOUNDARIES[boundary]
    tools = {w.get("tool", "tickets.create"): w.get("version", "1") for w in pair}
    async with harness.open(*(WriteTool(harness.world, name=n, version=v) for n, v in tools.items())) as session:
        problems = await _pair(harness, session, boundary, pair)
    harness.expect(
        "D10.1",
        not problems,
        "; ".join(problems) + " (the key's inputs must each keep their bounds: a boundary moved between two adjacent "
        "inputs is another call)",
    )


@pytest.mark.rules("D10.1")
async def test_an_input_holding_a_separator_does_not_move_a_boundary(harness: Harness) -> None:
    # Judged by dispositions and effects: these run ids (one holds "/") are not read back by run.
    problems: list[str] = []
    async with harness.open(WriteTool(harness.world)) as session:
        for n, sep in enumerate(_SEPARATORS):
            shown = repr(sep)
            problems += await _pair(
                harness,
                session,
                f"tenant|run around {shown}",
                ({"tenant": f"a{sep}b", "run_id": f"c{n}"}, {"tenant": "a", "run_id": f"b{sep}c{n}"}),
                read_rows=False,
            )
            problems += await _pair(
                harness,
                session,
                f"run|step|call_id around {shown}",
                (
                    {"run_id": f"r{n}{sep}1", "step_number": 2, "call_id": "c"},
                    {"run_id": f"r{n}", "step_number": 1, "call_id": f"2{sep}c"},
                ),
                read_rows=False,
            )
    harness.expect(
        "D10.1",
        not problems,
        "; ".join(problems) + " (a tenant, run or call_id containing the character a key joins its inputs with must "
        "not make two calls one)",
    )


# One JSON number in two encodings a submission can carry (RFC 8785: a number is its IEEE 754 double).
EQUAL_ENCODINGS: dict[str, tuple[Any, Any]] = {
    "1-and-1.0": (1, 1.0),
    "0-and-minus-0.0": (0, -0.0),
    "100-and-1e2": (100, 1e2),
    "2**53-and-its-double": (2**53, float(2**53)),
    "minus-7-and-minus-7.0": (-7, -7.0),
}
"""Pairs of encodings of one number."""

PLACES: dict[str, Any] = {
    "top-level": lambda v: {"n": v, "s": "x"},
    "nested": lambda v: {"o": {"deep": {"n": v}}, "s": "x"},
    "in-array": lambda v: {"a": ["x", v, [v]]},
}
"""Where the number sits in the arguments."""


@pytest.mark.rules("D10.4")
@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("pair", list(EQUAL_ENCODINGS))
async def test_a_number_in_another_encoding_is_the_same_call(harness: Harness, pair: str, place: str) -> None:
    first, second = (PLACES[place](v) for v in EQUAL_ENCODINGS[pair])
    tool = WriteTool(harness.world, input_schema={"type": "object"})
    async with harness.open(tool) as session:
        for args in (first, second, first):
            await session.call(tool.spec.name, args, call_id="call-1", step_number=1)
        keys = {r.idempotency_key for r in await session.rows()}
    harness.expect(
        "D10.4",
        len(keys) == 1 and len(harness.world.effects) == 1,
        f"the arguments {first!r}, then {second!r} (the same JSON value: a number is its double), then the first "
        f"again, under one call_id and step gave {len(keys)} key(s) and {len(harness.world.effects)} effect(s); "
        "expected one key and one effect: the replays are the same call",
    )


# Pairs of strings with other code points that a Unicode normalization (NFC, NFD, NFKC, NFKD) or a case fold makes
# one: two values under RFC 8785, which compares strings as their code points.
FOLDING_PAIRS: dict[str, tuple[str, str]] = {
    "ligature": ("\ufb01le", "file"),
    "composed-and-decomposed": ("caf\u00e9", "cafe\u0301"),
    "combining-marks-reordered": ("a\u0323\u0307", "a\u0307\u0323"),
    "hangul-syllable-and-jamo": ("\uac00", "\u1100\u1161"),
    "kelvin-sign-and-k": ("\u212a", "K"),
    "full-width": ("\uff46\uff49\uff4c\uff45", "file"),
    "superscript-digit": ("x\u00b2", "x2"),
    "long-s": ("\u017fize", "size"),
    "no-break-space": ("a\u00a0b", "a b"),
    "case": ("File", "file"),
    "sharp-s-casefold": ("stra\u00dfe", "strasse"),
}
"""Two strings a normalizing or folding pipeline would key alike."""

STRING_PLACES: dict[str, Any] = {
    "value": lambda v: {"name": v},
    "member-name": lambda v: {v: "x"},
    "nested-value": lambda v: {"o": {"deep": {"name": v}}},
    "nested-member-name": lambda v: {"o": {v: 1}},
    "in-array": lambda v: {"a": ["x", [v]]},
}
"""Where the string sits in the arguments."""


@pytest.mark.rules("D10.4")
@pytest.mark.parametrize("pair", list(FOLDING_PAIRS))
async def test_strings_that_fold_alike_are_different_calls(harness: Harness, pair: str) -> None:
    wrong = []
    tool = EchoTool(harness.world, name="files.echo", **_FREE_OBJECT)
    async with harness.open(tool) as session:
        for place, build in STRING_PLACES.items():
            first, second = (build(v) for v in FOLDING_PAIRS[pair])
            harness.world.executions.clear()
            run_id = f"run-{place}"
            # The first, the other string, then the first again: the third alone is a replay.
            for args in (first, second, first):
                await session.call(tool.spec.name, args, call_id="call-1", step_number=1, run_id=run_id)
            keys = {r.idempotency_key for r in await session.rows(run_id)}
            received = [e.arguments for e in harness.world.executions]
            if len(keys) != 2 or received != [first, second]:
                wrong.append(f"{place}: {len(keys)} key(s), the tool received {received!r}")
    harness.expect(
        "D10.4",
        not wrong,
        f"the arguments with {FOLDING_PAIRS[pair][0]!r}, then with {FOLDING_PAIRS[pair][1]!r} (other code points, "
        f"one string only once normalized or case-folded: {pair}), then the first again, under one run, step and "
        f"call_id, must be two calls that each execute (two keys; the tool receives the first, then the second) and a "
        f"replay; wrong where the string sat: {wrong}",
    )
