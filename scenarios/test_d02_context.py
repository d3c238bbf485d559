"""Decision 2: the ToolExecutionContext has nine members and no way back into the pipeline.

D2.2 is judged by walking the whole object graph the context reaches (each object once, however deep) for anything
that offers a session, a registry, another tool or the instance under test. Behind the driver protocol the walk runs
over the context the implementation handed the tool, as the driver describes it with each execution: every public
member, with its kind and type name, and the members of every object it leads to, each object where a breadth-first
walk first reaches it, up to ``spec.CONTEXT_DESCRIPTION_OBJECTS`` objects and ``spec.CONTEXT_DESCRIPTION_DEPTH``
levels.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio
import anyio.lowlevel
import pytest

from toolproof.driver import HttpImplementation
from toolproof.fakes import ArtifactTool, FakeTool, HangsTool, ProbeTool, SlowTool, World
from toolproof.spec import (
    CONTEXT_MEMBERS,
    ArtifactRef,
    ContentPart,
    Disposition,
    IdempotencyClass,
    Identity,
    InvocationStatus,
    JsonObject,
    NotCovered,
    Outcome,
    ReasonCode,
    SideEffect,
    Suspended,
    ToolExecutionContext,
    ToolFailure,
    ToolKind,
    ToolResult,
    ToolSource,
    TrustLabel,
)

from ._bounds import bound
from ._context_walk import public, reachable_hazards
from ._harness import USER_ITEM, Harness, describe
from ._recovery import UNTRUSTED_PAGE


@pytest.mark.rules("D2.1")
async def test_context_exposes_exactly_the_nine_members(harness: Harness) -> None:
    async def members(context: ToolExecutionContext) -> list[str]:
        return sorted(public(context))

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
    # Behind the driver the context is the harness's own stand-in, rebuilt from the driver's description of what the
    # implementation handed over: its callables are the harness's transport, and no closure of the implementation
    # crosses the wire, so only in-process are callables walked into.
    over_http = isinstance(harness.implementation, HttpImplementation)
    async with harness.open(tool) as session:
        instance = session.instance

        async def hazards(context: ToolExecutionContext) -> list[str]:
            return reachable_hazards(context, instance, callables=not over_http)

        tool.probe = hazards
        harness.success("D2.2", await session.call(tool.spec.name))
    found = harness.world.observations.get(tool.spec.name)
    harness.expect("D2.2", found == [], f"the context leads back into the pipeline: {found}")


_VERSIONED = [ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX]
"""Every source a tool of the port can have; each tool is registered at a version of its own, not the default."""


@pytest.mark.rules("D2.3")
@pytest.mark.parametrize("source", _VERSIONED, ids=[s.value for s in _VERSIONED])
async def test_identity_names_the_invocation_being_executed(harness: Harness, source: ToolSource) -> None:
    async def identity(context: ToolExecutionContext) -> Identity:
        return context.identity

    tool = ProbeTool(harness.world, probe=identity, source=source, version=f"7-{source.value.lower()}")
    wrong: dict[str, object] = {}
    async with harness.open(tool) as session:
        # Two tenants and two runs: what the identity and the row name is compared with the request the harness sent,
        # never only with each other.
        for tenant, run_id in (("tenant-1", "run-a"), ("acme-eu", "run-b")):
            d = harness.success(
                "D2.3",
                await session.call(
                    tool.spec.name, call_id="call-identity", step_number=7, tenant=tenant, run_id=run_id
                ),
            )
            row = await session.row(d.invocation_id, run_id)
            seen = harness.world.observations.get(tool.spec.name)
            harness.expect("D2.3", isinstance(seen, Identity) and row is not None, f"identity {seen!r}, row {row!r}")
            assert isinstance(seen, Identity)
            assert row is not None
            sent = {"tenant": tenant, "run_id": run_id, "step_number": 7, "call_id": "call-identity"}
            expected = sent | {
                "invocation_id": d.invocation_id,
                "tool_name": tool.spec.name,
                "tool_version": tool.spec.version,
                "attempt": row.attempt,
                "idempotency_key": row.idempotency_key,
            }
            actual = seen.model_dump()
            recorded = row.model_dump()
            wrong |= {f"{tenant} identity.{k}": (actual[k], v) for k, v in expected.items() if actual[k] != v}
            # The row is held to the request and to the spec the harness registered, never to the identity alone.
            registered = {"tool_name": tool.spec.name, "tool_version": tool.spec.version}
            wrong |= {f"{tenant} row.{k}": (recorded[k], v) for k, v in (sent | registered).items() if recorded[k] != v}
    harness.expect(
        "D2.3",
        not wrong,
        f"a {source.value} tool's identity or row disagrees with the request sent, the spec registered and the row "
        f"(seen, expected): {wrong}",
    )


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


@pytest.mark.rules("D2.4")
async def test_a_tool_within_its_deadline_reads_its_cancellation_signal_unset(harness: Harness) -> None:
    async def signal(context: ToolExecutionContext) -> list[bool]:
        first = context.cancellation.is_set()
        await anyio.lowlevel.checkpoint()  # Nothing was cancelled, and the deadline is far off.
        return [first, context.cancellation.is_set()]

    tool = ProbeTool(harness.world, name="probe.signal", probe=signal, deadline_s=30.0)
    async with harness.open(tool) as session:
        harness.success("D2.4", await session.call(tool.spec.name), "a tool reading its cancellation signal")
    seen = harness.world.observations.get(tool.spec.name)
    harness.expect(
        "D2.4",
        seen == [False, False],
        f"a tool 30 s from its deadline, nothing cancelled, read its cancellation signal as {seen!r}; expected it "
        "unset (a tool that honours a set signal stops at once)",
    )


_CUT_PATHS: dict[str, dict[str, Any]] = {
    "first-run": {},
    "approved": {"side_effect": SideEffect.WORKSPACE_WRITE},
    "resumed": {"kind": ToolKind.CONTROL},
}
"""How a call reaches step 10, and the class of tool that reaches it so: a first run, an approved hold (a consequential
action), a resumed suspension (a control tool)."""


_SOURCES = [ToolSource.BUILTIN, ToolSource.DEVICE, ToolSource.SANDBOX]
"""Every source a tool of the port can have: a device's or a sandbox's tool is held to its deadline as a builtin is
(an MCP call is held to call_timeout_s: D8.7)."""


@pytest.mark.rules("D2.4")
@pytest.mark.parametrize("source", _SOURCES, ids=[s.value for s in _SOURCES])
@pytest.mark.parametrize("path", list(_CUT_PATHS))
async def test_a_tool_past_its_deadline_is_cut_off_on_every_path(
    harness: Harness, path: str, source: ToolSource
) -> None:
    # The tool would return long after its deadline; cut off at it, the call fails deadline_exceeded, whatever the
    # path to step 10, the kind of tool (a control tool waits on a person while suspended, never while it runs) or the
    # tool's source.
    tool = SlowTool(harness.world, name="slow.tool", pause_s=5.0, deadline_s=0.2, source=source, **_CUT_PATHS[path])
    async with harness.open(tool) as session:
        if path == "first-run":
            d = await session.call(tool.spec.name, {"n": 1})
        else:
            held = await session.call(tool.spec.name, {"n": 1}, provenance={"n": []} if path == "approved" else None)
            if not isinstance(held, Suspended):
                harness.fail("D2.4", f"the {path} call was answered {describe(held)}; expected it held or suspended")
            if path == "approved":
                d = await session.resolve_approval(held.invocation_id, approved=True)
            else:
                d = await session.resume(held.invocation_id, "yes")
    outcome = harness.outcome("D2.4", d, f"a {source.value} tool running past its 0.2 s deadline ({path})")
    harness.expect(
        "D2.4",
        outcome.status is InvocationStatus.FAILED and outcome.reason_code is ReasonCode.DEADLINE_EXCEEDED,
        f"a {path} call of a {source.value} tool running 5 s past its 0.2 s deadline was answered {describe(d)}; "
        "expected FAILED deadline_exceeded",
    )


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


_WORKSPACE_CLASSES = [
    (side_effect, idempotency, kind)
    for side_effect in SideEffect
    for idempotency in IdempotencyClass
    for kind in ToolKind
]
"""Every class a tool can have: each side effect, idempotency class and kind."""


@pytest.mark.rules("D2.6")
async def test_workspace_is_the_configured_one_for_every_class_and_path(harness: Harness) -> None:
    # Each class of tool on each path to step 10: a first run, an approved hold (consequential actions), a resumed
    # suspension (control tools). The workspace is the configured one whatever the tool writes or the call's path.
    async def workspace(context: ToolExecutionContext) -> Path:
        return Path(context.workspace)

    tools = [
        ProbeTool(
            harness.world,
            name=f"probe.{side_effect.value.lower()}_{idempotency.value.lower()}_{kind.value.lower()}",
            probe=workspace,
            side_effect=side_effect,
            idempotency=idempotency,
            kind=kind,
        )
        for side_effect, idempotency, kind in _WORKSPACE_CLASSES
    ]
    expected = harness.directory / "workspace"
    wrong: list[str] = []
    async with harness.open(*tools) as session:
        for tool in tools:
            name, spec = tool.spec.name, tool.spec
            paths = ["first-run"] if spec.kind is ToolKind.ACTION else ["resumed"]
            if spec.kind is ToolKind.ACTION and spec.side_effect is not SideEffect.READ_ONLY:
                paths.append("approved")
            for path in paths:
                harness.world.observations.pop(name, None)
                if path == "approved":
                    held = await session.call(name, {"n": 1}, provenance={"n": []})
                    if not isinstance(held, Suspended):
                        wrong.append(f"{name}: an untrusted consequential call was answered {describe(held)}")
                        continue
                    await session.resolve_approval(held.invocation_id, approved=True)
                elif path == "resumed":
                    asked = await session.call(name, {"n": 1})
                    if not isinstance(asked, Suspended):
                        wrong.append(f"{name}: the control call was answered {describe(asked)}")
                        continue
                    await session.resume(asked.invocation_id, "yes")
                else:
                    await session.call(name, {"n": 1})
                seen = harness.world.observations.get(name)
                if seen != expected:
                    wrong.append(f"{name} ({path}): workspace {seen}")
    harness.expect(
        "D2.6",
        not wrong,
        f"every tool, whatever its class and the call's path, is handed the configured workspace {expected}: {wrong}",
    )


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
    problem = await harness.holds("D2.8", d.artifacts[0], raw)
    harness.expect("D2.8", problem is None, f"the artifact written through the context: {problem}")


class _NamedWrites(FakeTool):
    """Writes one artifact per ``(name, bytes)`` in one execution, in order, and returns their references."""

    def __init__(self, world: World, name: str, writes: tuple[tuple[str, bytes], ...]) -> None:
        super().__init__(world, name=name)
        self.writes = writes

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        refs = [await context.artifact_writer.write(name, data) for name, data in self.writes]
        return ToolResult(ok=True, content=[ContentPart(text="written")], artifacts=refs)


# Artifact names a writer may reduce to one file name: a character it replaces (' ', '?', '/', '\\') against the
# replacement itself, the file name a numbered duplicate gets, case, Unicode normal forms and lookalikes, and names
# reduced to nothing. Each group is written by one execution, each name with bytes of a different length.
_ALIKE: tuple[tuple[str, ...], ...] = (
    ("a b.txt", "a?b.txt"),
    ("a b.txt", "a_b.txt"),
    ("a b.txt", "a?b.txt", "a_b-2.txt"),
    ("Report.TXT", "report.txt", "REPORT.txt"),
    ("caf\u00e9.txt", "cafe\u0301.txt", "cafe.txt"),
    ("\uff46ull.txt", "full.txt"),
    ("dir/x.txt", "dir\\x.txt", "dir_x.txt"),
    ("", "???", "artifact"),
)


@pytest.mark.rules("D2.8")
async def test_artifacts_whose_names_reduce_alike_keep_their_bytes(harness: Harness) -> None:
    tools = [
        _NamedWrites(
            harness.world,
            f"files.alike_{i}",
            tuple((name, f"{i}:{j}:{name!r} ".encode() * (j + 1)) for j, name in enumerate(group)),
        )
        for i, group in enumerate(_ALIKE)
    ]
    wrong: list[str] = []
    async with harness.open(*tools) as session:
        delivered = [
            harness.success("D2.8", await session.call(tool.spec.name), f"writes {tool.writes}") for tool in tools
        ]
        # Re-read every reference only after every write of every group: a later write must not change what an
        # earlier reference names.
        for tool, d in zip(tools, delivered, strict=True):
            refs = [(a.name, a.size, a.sha256) for a in d.artifacts]
            made = [(name, len(data), hashlib.sha256(data).hexdigest()) for name, data in tool.writes]
            if refs != made:
                wrong.append(f"{tool.spec.name}: references {refs}, expected {made}")
            readable = [a for a in d.artifacts if a.uri.startswith("file:")]
            if not readable:
                raise NotCovered("D2.8", f"no artifact has a file: URI the harness can read ({d.artifacts})")
            for ref in readable:
                path = anyio.Path(url2pathname(urlparse(ref.uri).path))
                data = await path.read_bytes() if await path.is_file() else None
                if data is None or (len(data), hashlib.sha256(data).hexdigest()) != (ref.size, ref.sha256):
                    shown = "nothing" if data is None else f"{len(data)} bytes"
                    wrong.append(
                        f"{ref.name!r} ({ref.uri}): the reference says {ref.size} bytes, the file holds {shown}"
                    )
    harness.expect(
        "D2.8",
        not wrong,
        "every artifact reference must keep describing the bytes at its URI after later writes whose names reduce to "
        f"the same file name: {wrong}",
    )


class _WritesTogether(FakeTool):
    """Starts one artifact write per ``(name, bytes)`` at once (in one task group) and returns their references in
    that order: a writer that reserves a file name only once its file is on disk gives two of them one file."""

    def __init__(self, world: World, name: str, writes: tuple[tuple[str, bytes], ...]) -> None:
        super().__init__(world, name=name)
        self.writes = writes

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        refs: list[ArtifactRef | None] = [None] * len(self.writes)

        async def one(index: int, name: str, data: bytes) -> None:
            refs[index] = await context.artifact_writer.write(name, data)

        async with anyio.create_task_group() as group:
            for index, (name, data) in enumerate(self.writes):
                group.start_soon(one, index, name, data)
        return ToolResult(ok=True, content=[ContentPart(text="written")], artifacts=[r for r in refs if r])


_TOGETHER = ("same.txt",) * 4 + ("a b.txt", "a?b.txt", "a_b.txt")
"""Names written at once by one execution: one name four times, and three that reduce alike."""


@pytest.mark.rules("D2.8")
async def test_artifacts_written_at_once_keep_their_bytes(harness: Harness) -> None:
    writes = tuple((name, f"{j}:{name!r} ".encode() * (j + 1)) for j, name in enumerate(_TOGETHER))
    tool = _WritesTogether(harness.world, "files.together", writes)
    async with harness.open(tool) as session:
        d = harness.success("D2.8", await session.call(tool.spec.name), f"writes {len(writes)} artifacts at once")
    harness.expect(
        "D2.8",
        len(d.artifacts) == len(writes),
        f"{len(writes)} artifacts were written at once, {len(d.artifacts)} references came back: {d.artifacts}",
    )
    # Read back only after every write ended: no write may change what another's reference names.
    wrong = [
        problem
        for ref, (_, data) in zip(d.artifacts, writes, strict=True)
        if (problem := await harness.holds("D2.8", ref, data))
    ]
    harness.expect(
        "D2.8",
        not wrong,
        f"every artifact reference must describe the bytes at its URI when writes of one name run at once: {wrong}",
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


# Batches whose members require different scopes: (side effect of each member, in proposal order). Read-only
# batches may run concurrently, a batch with a write runs in proposal order; either way each member's resolver is
# its own tool's, never the batch's union.
_BATCHES: tuple[tuple[SideEffect, ...], ...] = (
    (SideEffect.READ_ONLY, SideEffect.READ_ONLY),
    (SideEffect.READ_ONLY, SideEffect.READ_ONLY, SideEffect.READ_ONLY),
    (SideEffect.WORKSPACE_WRITE, SideEffect.READ_ONLY),
    (SideEffect.READ_ONLY, SideEffect.WORKSPACE_WRITE, SideEffect.READ_ONLY),
)


def _scope_probe(asked: tuple[str, ...]) -> Any:
    async def resolve_all(context: ToolExecutionContext) -> dict[str, str | None]:
        return {scope: await context.credential_resolver.resolve(scope) for scope in asked}

    return resolve_all


def _scoping_errors(
    harness: Harness, tools: list[ProbeTool], creds: dict[str, str], asked: tuple[str, ...]
) -> list[str]:
    wrong = []
    for tool in tools:
        seen = harness.world.observations.get(tool.spec.name)
        expected = {scope: creds[scope] if scope in tool.spec.required_scopes else None for scope in asked}
        if seen != expected:
            wrong.append(f"{tool.spec.name} requiring {sorted(tool.spec.required_scopes)} resolved {seen}")
    return wrong


@pytest.mark.rules("D2.5")
@pytest.mark.parametrize("effects", _BATCHES, ids=["-".join(e.value for e in b) for b in _BATCHES])
async def test_each_batch_member_resolves_only_its_own_scopes(
    harness: Harness, effects: tuple[SideEffect, ...]
) -> None:
    scopes = tuple(f"scope-{i}" for i in range(len(effects)))
    creds = {scope: f"token-{scope}" for scope in scopes}
    tools = [
        ProbeTool(
            harness.world,
            name=f"probe.member_{i}",
            probe=_scope_probe(scopes),
            required_scopes=frozenset({scope}),
            side_effect=effect,
        )
        for i, (scope, effect) in enumerate(zip(scopes, effects, strict=True))
    ]
    async with harness.open(*tools, credentials=creds) as session:
        for d in await session.step([session.proposed(tool.spec.name) for tool in tools]):
            harness.success("D2.5", d, "a batch member")
    wrong = _scoping_errors(harness, tools, creds, scopes)
    harness.expect(
        "D2.5",
        not wrong,
        "each member of a batch must resolve the credentials of its own tool's required scopes only, never a "
        f"batch-mate's; resolved otherwise: {wrong}",
    )


# Consequential classes an untrusted call is held for; each is approved, and must still resolve its own scope only.
_HELD: tuple[dict[str, Any], ...] = (
    {"side_effect": SideEffect.WORKSPACE_WRITE},
    {"side_effect": SideEffect.EXTERNAL_WRITE, "idempotency": IdempotencyClass.IDEMPOTENT},
    {"side_effect": SideEffect.EXTERNAL_WRITE, "idempotency": IdempotencyClass.NON_IDEMPOTENT},
)
_PATH_SCOPES = ("repo", "admin", "repo:admin", "issues")


@pytest.mark.rules("D2.5")
@pytest.mark.parametrize("spec", _HELD, ids=["workspace-write", "external-idempotent", "external-non-idempotent"])
async def test_approved_call_resolves_only_its_required_scopes(harness: Harness, spec: dict[str, Any]) -> None:
    creds = {scope: f"token-{scope}" for scope in _PATH_SCOPES}
    tool = ProbeTool(
        harness.world, name="probe.held", probe=_scope_probe(_PATH_SCOPES), required_scopes=frozenset({"repo"}), **spec
    )
    async with harness.open(tool, credentials=creds) as session:
        held = await session.call(
            tool.spec.name, {"p": "x"}, context=[USER_ITEM, UNTRUSTED_PAGE], provenance={"p": [UNTRUSTED_PAGE.id]}
        )
        if not isinstance(held, Suspended):
            harness.fail("D2.5", f"an untrusted consequential call was answered {describe(held)}; expected a hold")
        harness.success("D2.5", await session.resolve_approval(held.invocation_id, True), "the approved call")
    wrong = _scoping_errors(harness, [tool], creds, _PATH_SCOPES)
    harness.expect(
        "D2.5",
        not wrong,
        "a call that runs after its approval must resolve only its tool's required scopes, like any other call; "
        f"resolved otherwise: {wrong}",
    )


@pytest.mark.rules("D2.5")
async def test_resumed_control_call_resolves_only_its_required_scopes(harness: Harness) -> None:
    creds = {scope: f"token-{scope}" for scope in _PATH_SCOPES}
    tool = ProbeTool(
        harness.world,
        name="conversation.ask_scoped",
        probe=_scope_probe(_PATH_SCOPES),
        required_scopes=frozenset({"repo"}),
        kind=ToolKind.CONTROL,
        output_trust=TrustLabel.USER,
    )
    async with harness.open(tool, credentials=creds) as session:
        d = await session.call(tool.spec.name, {"question": "Which colour?"})
        if not isinstance(d, Suspended):
            harness.fail("D2.5", f"the control call was answered {describe(d)}; expected a control suspension")
        harness.success("D2.5", await session.resume(d.invocation_id, "blue"), "the resumed control call")
    wrong = _scoping_errors(harness, [tool], creds, _PATH_SCOPES)
    harness.expect(
        "D2.5",
        not wrong,
        f"a resumed control call must resolve only its tool's required scopes; resolved otherwise: {wrong}",
    )


class _TransientAttempts(FakeTool):
    """Pauses ``pause_s``, then reports TRANSIENT until its last ``succeed_at`` attempt (0: never succeeds); records
    each attempt's identity and context deadline, and when that attempt started."""

    default_name = "weather.flaky"

    def __init__(self, world: World, name: str, succeed_at: int = 0, pause_s: float = 0.0, **spec: Any) -> None:
        super().__init__(world, name, **spec)
        self.succeed_at = succeed_at
        self.pause_s = pause_s
        self.seen: list[tuple[Identity, float, float]] = []

    async def behave(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        self.seen.append((context.identity, context.deadline, time.time()))
        await anyio.sleep(self.pause_s)
        if len(self.seen) == self.succeed_at:
            return ToolResult(ok=True)
        return ToolResult(ok=False, failure=ToolFailure(kind="TRANSIENT"))


# Classes a retried tool can have: a retry happens whenever no effect may have escaped (never after a NON_IDEMPOTENT
# tool's watermark), so every class is retried here by a tool that reports TRANSIENT without marking.
_RETRIED: tuple[dict[str, Any], ...] = (
    {},
    {"idempotency": IdempotencyClass.CONDITIONALLY_IDEMPOTENT},
    {"side_effect": SideEffect.WORKSPACE_WRITE},
    {"side_effect": SideEffect.EXTERNAL_WRITE, "idempotency": IdempotencyClass.CONDITIONALLY_IDEMPOTENT},
    {"side_effect": SideEffect.EXTERNAL_WRITE, "idempotency": IdempotencyClass.NON_IDEMPOTENT},
)


@pytest.mark.rules("D2.3")
@pytest.mark.parametrize("max_attempts", [2, 3])
async def test_every_attempt_has_its_own_identity(harness: Harness, max_attempts: int) -> None:
    tools = [
        _TransientAttempts(harness.world, f"weather.flaky_{i}", succeed_at=max_attempts if i % 2 else 0, **spec)
        for i, spec in enumerate(_RETRIED)
    ]
    async with harness.open(*tools, max_attempts=max_attempts) as session:
        rows = {}
        for i, tool in enumerate(tools):
            d = await session.call(tool.spec.name, call_id=f"call-{i}", step_number=i)
            rows[tool.spec.name] = await session.row(d.invocation_id)
    wrong = []
    for tool in tools:
        row = rows[tool.spec.name]
        seen = [identity for identity, _, _ in tool.seen]
        attempts = [identity.attempt for identity in seen]
        if row is None or attempts != list(range(1, max_attempts + 1)) or row.attempt != max_attempts:
            wrong.append(f"{tool.spec.name}: attempts seen {attempts}, row attempt {row and row.attempt}")
            continue
        for identity in seen:
            expected = {
                "tenant": row.tenant,
                "run_id": row.run_id,
                "step_number": row.step_number,
                "call_id": row.call_id,
                "invocation_id": row.invocation_id,
                "tool_name": tool.spec.name,
                "tool_version": tool.spec.version,
                "idempotency_key": row.idempotency_key,
            }
            actual = identity.model_dump()
            off = {k: (actual[k], v) for k, v in expected.items() if actual[k] != v}
            if off:
                wrong.append(f"{tool.spec.name} attempt {identity.attempt}: (seen, row) {off}")
    harness.expect(
        "D2.3",
        not wrong,
        f"with max_attempts {max_attempts}, each execution of a TRANSIENT-failing tool must see an identity naming "
        f"that attempt (1, 2, ... {max_attempts}, the row's last) and otherwise the row's invocation; saw {wrong}",
    )


# Deadlines, and how far past each one the tool returns: from just over to well over.
_DEADLINES = (0.1, 0.4, 1.2)


def _overruns(deadline: float) -> list[float]:
    return sorted({0.02, 0.1, deadline / 2, deadline, 2 * deadline + 1.0})


@pytest.mark.rules("D2.4")
@pytest.mark.parametrize("deadline", _DEADLINES)
async def test_tool_returning_after_its_deadline_is_not_delivered(harness: Harness, deadline: float) -> None:
    overruns = _overruns(deadline)
    tools = [
        SlowTool(harness.world, name=f"files.late_{i}", pause_s=deadline + over, deadline_s=deadline)
        for i, over in enumerate(overruns)
    ]
    # Each overrun in an instance of its own over the one store, side by side (workers, as D4.7 has them): every call
    # waits out the whole deadline, and one after the other they would wait len(overruns) times as long.
    answers: list[Disposition | None] = [None] * len(tools)

    async def call(index: int, tool: SlowTool) -> None:
        async with harness.open(*tools) as session:
            answers[index] = await session.call(tool.spec.name, call_id=tool.spec.name)

    async with anyio.create_task_group() as group:
        for index, tool in enumerate(tools):
            group.start_soon(call, index, tool)
    received = [d for d in answers if d is not None]
    assert len(received) == len(tools)  # Invariant: every task stored its answer, or the group raised.
    # Only the answer is judged: behind the driver protocol the cancellation reaches the tool host a moment late,
    # so a tool a few milliseconds from its end may still finish there (its cancellation is the cell above's).
    wrong = [
        f"{over:.2f} s late: {describe(d)}"
        for over, d in zip(overruns, received, strict=True)
        if not isinstance(d, Outcome)
        or (d.status, d.reason_code) != (InvocationStatus.FAILED, ReasonCode.DEADLINE_EXCEEDED)
    ]
    harness.expect(
        "D2.4",
        not wrong,
        f"a tool with deadline_s {deadline} that would return after its deadline must be cut off there and the call "
        f"completed FAILED deadline_exceeded, however little it overran (no grace); answered otherwise: {wrong}",
    )


@pytest.mark.rules("D2.4")
async def test_a_retry_runs_under_a_deadline_of_its_own(harness: Harness) -> None:
    # Each attempt pauses 0.6 of the deadline: inside its own deadline with 0.4 of it to spare (for building the context
    # and starting the tool, scaled with the load), past a deadline shared with the first attempt.
    deadline_s = bound(harness, 1.0, "each attempt's deadline (its pause is 0.6 of it)")
    pause_s = 0.6 * deadline_s
    tool = _TransientAttempts(harness.world, "weather.slow_flaky", succeed_at=2, pause_s=pause_s, deadline_s=deadline_s)
    async with harness.open(tool) as session:
        d = await session.call(tool.spec.name)
    deadlines = [round(deadline - started, 2) for _, deadline, started in tool.seen]
    harness.expect(
        "D2.4",
        d.status is InvocationStatus.SUCCEEDED and len(tool.seen) == 2,
        f"a tool with deadline_s {deadline_s:.2f} whose first attempt reports TRANSIENT after {pause_s:.2f} s and whose "
        f"retry succeeds after {pause_s:.2f} s was answered {describe(d)} after {len(tool.seen)} execution(s) (each "
        f"attempt's deadline was {deadlines} s after its start): a retry is an execution of its own, given deadline_s "
        "from its own start",
    )


# Spans a context's deadline is checked over, and how many attempts (a retry builds a context of its own).
_SPANS: tuple[tuple[float, int], ...] = ((5.0, 1), (30.0, 1), (3600.0, 1), (30.0, 2), (86_400.0, 3))
_DEADLINE_SLACK_S = 0.5
"""Float and clock-read slack around the instant a context's deadline has to be (spec: ``ToolExecutionContext``)."""


@pytest.mark.rules("D2.4")
@pytest.mark.parametrize("source", _SOURCES, ids=[s.value for s in _SOURCES])
@pytest.mark.parametrize(("deadline_s", "attempts"), _SPANS, ids=[f"{s:g}s-attempts{a}" for s, a in _SPANS])
async def test_context_deadline_is_the_absolute_wall_clock_instant(
    harness: Harness, deadline_s: float, attempts: int, source: ToolSource
) -> None:
    tool = _TransientAttempts(
        harness.world, "weather.deadline", succeed_at=attempts, deadline_s=deadline_s, source=source
    )
    async with harness.open(tool, max_attempts=attempts) as session:
        submitted = time.time()
        harness.success("D2.4", await session.call(tool.spec.name))
    wrong = []
    earliest = submitted
    for identity, deadline, started in tool.seen:
        # The context is built after the previous observation (the submit, or the attempt before) and before the tool
        # starts, so its deadline lies between those two instants plus deadline_s.
        low, high = earliest + deadline_s - _DEADLINE_SLACK_S, started + deadline_s + _DEADLINE_SLACK_S
        if not low <= deadline <= high:
            wrong.append(
                f"attempt {identity.attempt}: deadline={deadline!r}, expected time.time() + {deadline_s:g} in "
                f"[{low:.2f}, {high:.2f}] (the tool started at {started:.2f})"
            )
        earliest = started
    harness.expect(
        "D2.4",
        len(tool.seen) == attempts and not wrong,
        f"context.deadline of a {source.value} tool has to be the absolute time.time() instant deadline_s after the "
        f"context is built; {len(tool.seen)} attempt(s) of {attempts} seen, wrong: {wrong}",
    )
