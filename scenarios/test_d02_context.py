"""Decision 2: the ToolExecutionContext has nine members and no way back into the pipeline."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from toolproof.fakes import ArtifactTool, HangsTool, ProbeTool
from toolproof.spec import (
    CONTEXT_MEMBERS,
    Identity,
    InvocationStatus,
    ReasonCode,
    ToolExecutionContext,
)

from ._harness import Harness

# Attribute names that would hand a tool the pipeline, its store or its registry.
_FORBIDDEN_NAMES = frozenset(
    {
        "commit",
        "rollback",
        "begin",
        "session",
        "engine",
        "connection",
        "cursor",
        "store",
        "repository",
        "registry",
        "tools",
        "policy",
        "pipeline",
        "submit",
        "run_call",
        "register",
        "invoke",
        "call_tool",
    }
)
_FORBIDDEN_MODULES = ("sqlalchemy", "sqlmodel", "sqlite3", "psycopg", "duckdb")


def _public(obj: object) -> list[str]:
    if isinstance(obj, BaseModel):
        return list(type(obj).model_fields)
    return [name for name in dir(obj) if not name.startswith("_")]


_LEAVES = (str, bytes, int, float, bool, complex, Path, type(None), type)


def _members(obj: object) -> list[tuple[str, Any]]:
    """What a tool can reach from ``obj`` in one hop: its public attributes, every entry of its ``__dict__``
    and ``__slots__`` (a leading underscore hides nothing), and the items of a container."""
    if isinstance(obj, dict):
        return [(f"[{key!r}]", value) for key, value in obj.items()] + [(f"<key {key!r}>", key) for key in obj]
    if isinstance(obj, list | tuple | set | frozenset):
        return [(f"[{i}]", value) for i, value in enumerate(obj)]
    found: dict[str, Any] = {}
    names = set(_public(obj))
    names.update(getattr(obj, "__dict__", {}) if isinstance(getattr(obj, "__dict__", None), dict) else {})
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.update([slots] if isinstance(slots, str) else slots)
    for name in sorted(names):
        try:
            found[name] = getattr(obj, name)
        except Exception:
            continue
    return [(f".{name}", value) for name, value in found.items()]


def _reachable_hazards(context: ToolExecutionContext, instance: object) -> list[str]:
    """Paths from the context, through the whole object graph it reaches (each object visited once, however
    deep), to anything that reaches the pipeline: a forbidden attribute name, the instance under test, or a
    database object."""
    hazards: list[str] = []
    seen: set[int] = {id(context)}
    frontier: list[tuple[str, Any]] = [("context", context)]
    while frontier:
        path, obj = frontier.pop()
        for step, value in _members(obj):
            where = f"{path}{step}"
            name = step.lstrip(".")
            if step.startswith(".") and name.lstrip("_") in _FORBIDDEN_NAMES:
                hazards.append(f"{where} (name)")
                continue
            if value is instance:
                hazards.append(f"{where} is the instance under test")
            if type(value).__module__.split(".")[0] in _FORBIDDEN_MODULES:
                hazards.append(f"{where} is a {type(value).__module__}.{type(value).__name__}")
            if callable(value) or isinstance(value, _LEAVES) or id(value) in seen:
                continue
            seen.add(id(value))
            frontier.append((where, value))
    return hazards


@pytest.mark.rules("D2.1")
async def test_context_exposes_exactly_the_nine_members(harness: Harness) -> None:
    async def members(context: ToolExecutionContext) -> list[str]:
        return sorted(_public(context))

    tool = ProbeTool(harness.world, probe=members)
    async with harness.open(tool) as session:
        harness.success("D2.1", await session.call(tool.spec.name))
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect(
        "D2.1",
        seen == sorted(CONTEXT_MEMBERS),
        f"the context exposed {seen}; expected exactly {sorted(CONTEXT_MEMBERS)}",
    )


@pytest.mark.rules("D2.2")
async def test_context_offers_no_way_back_into_the_pipeline(harness: Harness) -> None:
    tool = ProbeTool(harness.world)
    async with harness.open(tool) as session:
        instance = session.instance

        async def hazards(context: ToolExecutionContext) -> list[str]:
            return _reachable_hazards(context, instance)

        tool.probe = hazards
        harness.success("D2.2", await session.call(tool.spec.name))
    found = harness.world.observations.get(tool.spec.name)
    harness.expect("D2.2", found == [], f"the context leads back into the pipeline: {found}")


@pytest.mark.rules("D2.3")
async def test_identity_names_the_invocation_being_executed(harness: Harness) -> None:
    async def identity(context: ToolExecutionContext) -> Identity:
        return context.identity

    tool = ProbeTool(harness.world, probe=identity)
    async with harness.open(tool) as session:
        d = harness.success("D2.3", await session.call(tool.spec.name, call_id="call-identity", step_number=7))
        row = await session.row(d.invocation_id)
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect("D2.3", isinstance(seen, Identity) and row is not None, f"identity {seen!r}, row {row!r}")
    assert isinstance(seen, Identity)
    assert row is not None
    expected = {
        "tenant": row.tenant,
        "run_id": row.run_id,
        "step_number": 7,
        "call_id": "call-identity",
        "invocation_id": d.invocation_id,
        "tool_name": tool.spec.name,
        "tool_version": tool.spec.version,
        "attempt": row.attempt,
        "idempotency_key": row.idempotency_key,
    }
    actual = seen.model_dump()
    wrong = {k: (actual[k], v) for k, v in expected.items() if actual[k] != v}
    harness.expect("D2.3", not wrong, f"identity disagrees with the row (seen, expected): {wrong}")


@pytest.mark.rules("D2.4")
async def test_tool_past_its_deadline_is_cancelled_and_fails(harness: Harness) -> None:
    tool = HangsTool(harness.world, deadline_s=0.2)
    async with harness.open(tool) as session:
        d = harness.outcome("D2.4", await session.call(tool.spec.name), "a tool hanging past its deadline")
    harness.expect(
        "D2.4",
        d.status is InvocationStatus.FAILED and d.reason_code is ReasonCode.DEADLINE_EXCEEDED,
        f"a tool hanging past its 0.2 s deadline was answered {d.status.value} {d.reason_code.value}",
    )
    flag = harness.world.observations.get(f"{tool.spec.name}.cancellation_set")
    harness.expect("D2.4", flag is True, f"the tool's cancellation signal at cancellation was {flag!r}, expected True")


@pytest.mark.rules("D2.5")
async def test_credentials_resolve_only_for_required_scopes(harness: Harness) -> None:
    async def resolve(context: ToolExecutionContext) -> dict[str, str | None]:
        return {scope: await context.credential_resolver.resolve(scope) for scope in ("tickets:write", "admin")}

    tool = ProbeTool(harness.world, probe=resolve, required_scopes=frozenset({"tickets:write"}))
    creds = {"tickets:write": "token-tickets", "admin": "token-admin"}
    async with harness.open(tool, credentials=creds) as session:
        harness.success("D2.5", await session.call(tool.spec.name))
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect(
        "D2.5",
        seen == {"tickets:write": "token-tickets", "admin": None},
        f"a tool requiring only tickets:write resolved {seen}",
    )


@pytest.mark.rules("D2.6")
async def test_workspace_is_the_configured_one(harness: Harness) -> None:
    async def workspace(context: ToolExecutionContext) -> Path:
        return Path(context.workspace)

    tool = ProbeTool(harness.world, probe=workspace)
    async with harness.open(tool) as session:
        harness.success("D2.6", await session.call(tool.spec.name))
    expected = harness.directory / "workspace"
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect("D2.6", seen == expected, f"workspace {seen}, configured {expected}")


@pytest.mark.rules("D2.8")
async def test_artifact_written_through_the_context_is_returned_with_its_digest(harness: Harness) -> None:
    data = "archived bytes \u00e9\n" * 50
    tool = ArtifactTool(harness.world)
    async with harness.open(tool) as session:
        d = harness.success("D2.8", await session.call(tool.spec.name, {"data": data}))
    raw = data.encode()
    refs = [(a.size, a.sha256) for a in d.artifacts]
    harness.expect(
        "D2.8",
        refs == [(len(raw), hashlib.sha256(raw).hexdigest())],
        f"the artifact came back as {refs}; expected one of {len(raw)} bytes with its sha256",
    )


# Configured scopes that share a prefix, a separator, a case or a pattern with a required one: least privilege is an
# exact match, in both directions (a parent scope grants no child, a child no parent, "*" is a name, not a pattern).
_SCOPES = (
    "repo",
    "repo:admin",
    "repo:read",
    "repo:read:all",
    "repo:*",
    "repo.admin",
    "repo/admin",
    "repo_admin",
    "repository",
    "rep",
    "REPO",
    "Repo",
    " repo",
    "repo ",
    "issues",
    "issues:write",
    "*",
    "admin",
)
# Required scopes of each probing tool; each resolves every configured scope and a few unconfigured ones.
_REQUIRED: tuple[frozenset[str], ...] = (
    frozenset({"repo"}),
    frozenset({"repo:read"}),
    frozenset({"repo:admin"}),
    frozenset({"repo", "issues:write"}),
    frozenset({"*"}),
    frozenset({"repo:*"}),
    frozenset({"REPO"}),
    frozenset(),
)
_ASKED = (*_SCOPES, "repo:write", "", "nothing")


@pytest.mark.rules("D2.5")
async def test_credentials_resolve_only_for_exactly_the_required_scopes(harness: Harness) -> None:
    async def resolve_all(context: ToolExecutionContext) -> dict[str, str | None]:
        return {scope: await context.credential_resolver.resolve(scope) for scope in _ASKED}

    creds = {scope: f"token-{i}" for i, scope in enumerate(_SCOPES)}
    tools = [
        ProbeTool(harness.world, name=f"probe.scopes_{i}", probe=resolve_all, required_scopes=required)
        for i, required in enumerate(_REQUIRED)
    ]
    async with harness.open(*tools, credentials=creds) as session:
        for tool in tools:
            harness.success("D2.5", await session.call(tool.spec.name))
    wrong = []
    for tool, required in zip(tools, _REQUIRED, strict=True):
        seen = harness.world.observations.get(tool.spec.name, {})
        expected = {scope: creds.get(scope) if scope in required else None for scope in _ASKED}
        extra = sorted(scope for scope in _ASKED if seen.get(scope) != expected[scope])
        if extra:
            shown = {scope: seen.get(scope) for scope in extra}
            wrong.append(f"requiring {sorted(required)}: {shown}")
    harness.expect(
        "D2.5",
        not wrong,
        "a tool must resolve exactly the configured credentials of the scopes it requires (compared as whole strings) "
        f"and nothing for any other scope; resolved otherwise: {wrong}",
    )
