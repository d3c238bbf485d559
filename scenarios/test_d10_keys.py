"""Decision 10: the idempotency key."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.fakes import EchoTool, TransientOnceTool, WriteTool
from toolproof.spec import Identity

from ._harness import Harness

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
        for tool_name, where in variants:
            d = harness.success(
                "D10.1", await session.call(tool_name, {"title": "t"}, call_id="call-1", **base, **where)
            )
            row = await session.row(d.invocation_id, where["run_id"])
            keys.append(row.idempotency_key if row else None)
    harness.expect(
        "D10.1",
        None not in keys and len(set(keys)) == 4,
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


@pytest.mark.rules("D10.5")
async def test_new_tool_version_gets_a_new_key(harness: Harness) -> None:
    keys = []
    for version in ("1", "2"):
        tool = WriteTool(harness.world, version=version)
        async with harness.open(tool) as session:
            harness.success(
                "D10.5", await session.call(tool.spec.name, {"title": "t"}, call_id="call-1", step_number=1)
            )
            keys = [r.idempotency_key for r in await session.rows()]
    harness.expect(
        "D10.5",
        len(set(keys)) == 2 and len(harness.world.effects) == 2,
        f"the same call under tool_version 1 then 2 left {len(set(keys))} key(s) and {len(harness.world.effects)} effect(s)",
    )
