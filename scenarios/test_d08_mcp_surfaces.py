"""Decision 8: resources, prompts, sampling and roots map deliberately; every call re-enters the pipeline.

D8.8's cap counts UTF-8 bytes over the whole result, never characters and never one part at a time: it is judged
around a 100-byte cap (under, at and one unit over it, for every UTF-8 width and over several parts), for successes,
isError results and resource reads, and with a 512 KiB result over a 256 KiB cap.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolproof.fakes import EchoTool, WriteTool
from toolproof.fakes.mcp import (
    HANG_RESOURCE,
    INJECTION,
    SHADOWING_TOOL_NAMES,
    repeat_uri,
    shadowing_resource_server,
    stdio_command,
)
from toolproof.spec import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    READ_RESOURCE,
    UNCLASSIFIED,
    Disposition,
    Event,
    InvocationRow,
    InvocationStatus,
    McpServerConfig,
    McpTransport,
    Outcome,
    ReasonCode,
    Success,
    Suspended,
    TrustLabel,
    mcp_skill_name,
)

from ._bounds import bound
from ._harness import Harness, describe
from ._mcp import ERAS, READ, memory

HOLD_BOUND_S = 15.0
"""How long a scenario lets a call run whose deadline is at most 5 s before judging it unbounded, on an idle machine
(``_mcp.bound`` scales it with the load)."""

RESOURCE = "file:///notes/readme.txt"


@pytest.mark.rules("D8.1")
async def test_resources_are_reached_through_one_read_tool_per_server(harness: Harness) -> None:
    notes, fake = memory(harness, "notes", "InjectingResourceServer")
    plain, _ = memory(harness, "plain", "PlainServer")
    async with harness.open(mcp_servers=[notes, plain]) as session:
        ad = await session.advertise()
        synthetic = [t for t in ad.tools if t.remote_name is None]
        harness.expect(
            "D8.1",
            [t.name for t in synthetic] == [f"mcp.notes.{READ_RESOURCE}"],
            f"tools not from a remote tool: {[t.name for t in synthetic]}; expected exactly mcp.notes.{READ_RESOURCE}",
        )
        ok = harness.success("D8.1", await session.call(f"mcp.notes.{READ_RESOURCE}", {"uri": RESOURCE}))
        harness.expect("D8.1", any("Notes." in e.text for e in ok.content), f"the resource read answered {ok.content}")
        rows = [r for r in await session.rows() if r.tool_name == f"mcp.notes.{READ_RESOURCE}"]
        kinds = [e.kind for e in await session.events() if rows and e.invocation_id == rows[0].invocation_id]
        harness.expect(
            "D8.1",
            len(rows) == 1 and rows[0].status is InvocationStatus.SUCCEEDED and len(kinds) >= 3,
            f"the read left rows {[(r.tool_name, r.status.value) for r in rows]} and events {kinds}",
        )
        harness.expect("D8.1", fake.log.count(f"resources/read {RESOURCE}") == 1, f"server saw {fake.log}")


@pytest.mark.rules("D8.1")
@pytest.mark.parametrize("remote", SHADOWING_TOOL_NAMES)
async def test_a_server_tool_named_read_resource_never_takes_the_synthetic_name(harness: Harness, remote: str) -> None:
    if remote == SHADOWING_TOOL_NAMES[0]:
        config, fake = memory(harness, "shadow", "ShadowingResourceServer")
    else:
        fake = shadowing_resource_server(remote)
        config = McpServerConfig(
            server_id="shadow", transport=McpTransport.MEMORY, server=fake.server, classification=READ
        )
        harness.log.append(f"mcp server shadow: ShadowingResourceServer listing its own tool {remote!r}, in-process")
    synthetic = f"mcp.shadow.{READ_RESOURCE}"
    async with harness.open(mcp_servers=[config]) as session:
        ad = await session.advertise()
        named = [t for t in ad.tools if t.name == synthetic]
        harness.expect(
            "D8.1",
            len(named) == 1 and named[0].remote_name is None,
            f"{synthetic} is advertised as {[(t.name, t.remote_name) for t in named]}: the server's own tool "
            f"{remote!r} took the synthetic resource tool's name",
        )
        d = await session.call(synthetic, {"uri": RESOURCE})
    harness.expect(
        "D8.1",
        isinstance(d, Success) and any("Notes." in e.text for e in d.content),
        f"{synthetic} did not read the resource: {describe(d)}",
    )
    harness.expect(
        "D8.1",
        f"tools/call {remote}" not in fake.log and fake.log.count(f"resources/read {RESOURCE}") == 1,
        f"{synthetic} reached the server's own tool {remote!r} instead of resources/read: {fake.log}",
    )


_NOT_A_URI: dict[str, dict[str, object]] = {
    "integer": {"uri": 5},
    "float": {"uri": 5.5},
    "true": {"uri": True},
    "null": {"uri": None},
    "array": {"uri": [RESOURCE]},
    "object": {"uri": {"uri": RESOURCE}},
    "missing": {},
    "misnamed": {"url": RESOURCE},
}
"""Arguments the synthetic read tool must refuse at step 2: a uri that is no string, or no uri at all."""


@pytest.mark.rules("D8.1")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("case", list(_NOT_A_URI))
async def test_the_read_tool_validates_its_arguments_like_any_tool(harness: Harness, case: str, protocol: str) -> None:
    # D8.1: the synthetic tool runs the full pipeline, step 2 included: arguments without a string uri are refused
    # invalid_arguments before anything reaches the server, as a builtin's would be.
    notes, fake = memory(harness, "notes", "InjectingResourceServer", protocol=protocol)
    synthetic = f"mcp.notes.{READ_RESOURCE}"
    async with harness.open(mcp_servers=[notes]) as session:
        d = await session.call(synthetic, _NOT_A_URI[case])
        ok = await session.call(synthetic, {"uri": RESOURCE})
    reads = [e for e in fake.log if e.startswith("resources/read")]
    harness.expect(
        "D8.1",
        isinstance(d, Outcome)
        and d.reason_code is ReasonCode.INVALID_ARGUMENTS
        and reads == [f"resources/read {RESOURCE}"],
        f"{synthetic} called with {_NOT_A_URI[case]!r} ({case}, {protocol}) was answered {describe(d)}, the server "
        f"seeing {reads} in all (a valid read after it answered {describe(ok)}); expected invalid_arguments, and only "
        "the valid read reaching resources/read",
    )


def _shadowing_sets() -> list[object]:
    """Several server tools normalizing to read_resource on one server: every pair of the shadowing names in both
    listing orders, and all of them in listing order and reversed (ids: indexes into SHADOWING_TOOL_NAMES)."""
    indexes = list(range(len(SHADOWING_TOOL_NAMES)))
    orders = [[i, j] for i in indexes for j in indexes if i != j] + [indexes, indexes[::-1]]
    return [
        pytest.param([SHADOWING_TOOL_NAMES[i] for i in order], id="+".join(str(i) for i in order)) for order in orders
    ]


@pytest.mark.rules("D8.1")
@pytest.mark.parametrize("remotes", _shadowing_sets())
async def test_several_server_tools_named_read_resource_never_displace_the_synthetic_one(
    harness: Harness, remotes: list[str]
) -> None:
    fake = shadowing_resource_server(*remotes)
    config = McpServerConfig(server_id="shadow", transport=McpTransport.MEMORY, server=fake.server, classification=READ)
    harness.log.append(f"mcp server shadow: ShadowingResourceServer listing its own tools {remotes!r}, in-process")
    synthetic = f"mcp.shadow.{READ_RESOURCE}"
    async with harness.open(mcp_servers=[config]) as session:
        ad = await session.advertise()
        named = [t for t in ad.tools if t.name == synthetic]
        harness.expect(
            "D8.1",
            len(named) == 1 and named[0].remote_name is None,
            f"{synthetic} is advertised as {[(t.name, t.remote_name) for t in named]} when the server lists "
            f"{len(remotes)} tools of its own normalizing to {READ_RESOURCE} ({remotes!r}): the one synthetic "
            "resource tool must stay, whatever they are and in whatever order they are listed",
        )
        d = await session.call(synthetic, {"uri": RESOURCE})
    reached = [remote for remote in remotes if f"tools/call {remote}" in fake.log]
    harness.expect(
        "D8.1",
        isinstance(d, Success) and any("Notes." in e.text for e in d.content),
        f"{synthetic} did not read the resource with the server listing {remotes!r}: {describe(d)}",
    )
    harness.expect(
        "D8.1",
        not reached and fake.log.count(f"resources/read {RESOURCE}") == 1,
        f"{synthetic} reached the server's own tools {reached!r} instead of resources/read: {fake.log}",
    )


@pytest.mark.rules("D8.2")
async def test_resource_content_is_never_attached_automatically(harness: Harness) -> None:
    notes, fake = memory(harness, "notes", "InjectingResourceServer")
    async with harness.open(mcp_servers=[notes]) as session:
        ad = await session.advertise()
        harness.success("D8.2", await session.call("mcp.notes.echo", {"text": "hi"}), "mcp.notes.echo")
        await session.advertise("run-2")
        reads = [e for e in fake.log if e.startswith("resources/read")]
        harness.expect("D8.2", reads == [], f"resources were read with no read_resource call: {reads}")
        shown = ad.model_dump_json()
        harness.expect("D8.2", "Notes." not in shown, "resource content appears in the session's advertisement")


@pytest.mark.rules("D8.3")
async def test_prompts_become_untrusted_read_only_uncacheable_skills(harness: Harness) -> None:
    notes, _ = memory(harness, "notes", "InjectingResourceServer")
    async with harness.open(mcp_servers=[notes]) as session:
        skills = (await session.advertise()).skills
        harness.expect(
            "D8.3",
            [s.name for s in skills] == [mcp_skill_name("notes", "review")],
            f"skills: {[s.name for s in skills]}",
        )
        for skill in skills:
            harness.expect(
                "D8.3",
                skill.trust is TrustLabel.EXTERNAL_UNTRUSTED and skill.read_only and not skill.cacheable,
                f"{skill.name}: trust={skill.trust.value} read_only={skill.read_only} cacheable={skill.cacheable}",
            )


async def _refused(harness: Harness, rule: str, fake_name: str, tool: str, protocol: str, what: str) -> None:
    config, fake = memory(harness, "asker", fake_name, protocol=protocol)
    async with harness.open(mcp_servers=[config]) as session:
        d = await session.call(f"mcp.asker.{tool}", {"text": "x"})
    advertised = [e for e in fake.log if e.startswith("client ") and f"{what}=True" in e]
    harness.expect(rule, not advertised, f"the client advertised {what} to the server: {advertised}")
    answered = isinstance(d, Success) and any(f"{what} answered" in e.text for e in d.content)
    responses = [e for e in fake.log if e.startswith("input_responses") and "error" not in e.lower()]
    harness.expect(rule, not answered and not responses, f"a {what} request was answered: {describe(d)} {fake.log}")


@pytest.mark.rules("D8.4")
@pytest.mark.parametrize("protocol", ERAS)
async def test_sampling_is_never_advertised_and_refused(harness: Harness, protocol: str) -> None:
    await _refused(harness, "D8.4", "SamplingRequestServer", "summarize", protocol, "sampling")


@pytest.mark.rules("D8.5")
@pytest.mark.parametrize("protocol", ERAS)
async def test_roots_are_never_advertised_and_refused(harness: Harness, protocol: str) -> None:
    await _refused(harness, "D8.5", "RootsRequestServer", "list_files", protocol, "roots")


@pytest.mark.rules("D8.4")
@pytest.mark.slow
async def test_sampling_refused_over_stdio(harness: Harness) -> None:
    config = McpServerConfig(
        server_id="asker",
        transport=McpTransport.STDIO,
        command=stdio_command("SamplingRequestServer"),
        classification=READ,
    )
    async with harness.open(mcp_servers=[config]) as session:
        d = await session.call("mcp.asker.summarize", {"text": "x"})
    answered = isinstance(d, Success) and any("sampling answered" in e.text for e in d.content)
    harness.expect("D8.4", not answered, f"a sampling request over stdio was answered: {describe(d)}")


@pytest.mark.rules("D8.6")
async def test_mcp_call_leaves_what_a_builtin_call_leaves(harness: Harness) -> None:
    plain, _ = memory(harness, "plain", "PlainServer")
    async with harness.open(EchoTool(harness.world), mcp_servers=[plain]) as session:
        for name in ("files.echo", "mcp.plain.echo"):
            harness.success("D8.6", await session.call(name, {"text": "same"}), name)
        rows = {r.tool_name: r for r in await session.rows()}
        events = await session.events()
    harness.expect("D8.6", set(rows) == {"files.echo", "mcp.plain.echo"}, f"rows were left for {sorted(rows)}")
    judge_alike(harness, rows["files.echo"], rows["mcp.plain.echo"], events, ("status", "attempt"))


def judge_alike(
    harness: Harness, builtin: InvocationRow, remote: InvocationRow, events: list[Event], same: tuple[str, ...]
) -> None:
    """D8.6 on one builtin call and one MCP call handled alike: the same event kinds in the same order, rows with
    the same fields filled, and equal values in the fields ``same`` names."""

    def kinds(invocation_id: str) -> list[str]:
        return [e.kind for e in events if e.invocation_id == invocation_id]

    harness.expect(
        "D8.6",
        kinds(builtin.invocation_id) == kinds(remote.invocation_id),
        f"events differ: builtin {kinds(builtin.invocation_id)}, MCP {kinds(remote.invocation_id)}",
    )
    shape = {k: v is None for k, v in builtin.model_dump().items()}
    other = {k: v is None for k, v in remote.model_dump().items()}
    harness.expect(
        "D8.6",
        shape == other and all(getattr(builtin, k) == getattr(remote, k) for k in same),
        f"rows differ: builtin {builtin.model_dump(mode='json')}, MCP {remote.model_dump(mode='json')}",
    )


ANSWERED = {"approve": "approved", "deny": "denied", "expire": "left past its bound and swept"}
"""How a hold is answered."""
ANSWERS = tuple(ANSWERED)


@pytest.mark.rules("D8.6")
@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("protocol", ERAS)
async def test_held_mcp_call_is_answered_as_a_held_builtin_is(harness: Harness, protocol: str, answer: str) -> None:
    """An unclassified server's tool is held (decision 6), as is a builtin under the same classification; both are
    answered alike, and an approved one runs exactly once (re-entering the pipeline from its row), a refused one
    never."""
    plain, fake = memory(harness, "plain", "PlainServer", classification=None, protocol=protocol)
    held = WriteTool(
        harness.world,
        name="files.note",
        side_effect=UNCLASSIFIED.side_effect,
        risk=UNCLASSIFIED.risk,
        idempotency=UNCLASSIFIED.idempotency,
        required_scopes=UNCLASSIFIED.required_scopes,
    )
    names = ("files.note", "mcp.plain.echo")
    async with harness.open(held, mcp_servers=[plain]) as session:
        holds = {name: await session.call(name, {"text": "same"}) for name in names}
        for name, d in holds.items():
            harness.expect("D8.6", isinstance(d, Suspended), f"{name} was not held for approval: {describe(d)}")
        answered: dict[str, Disposition | None] = {}
        if answer == "expire":
            session.advance(DEFAULT_APPROVAL_TIMEOUT_S + 1)
            swept = {d.invocation_id: d for d in await session.sweep()}
            answered = {name: swept.get(d.invocation_id) for name, d in holds.items()}
        else:
            for name, d in holds.items():
                answered[name] = await session.resolve_approval(d.invocation_id, approved=answer == "approve")
        session.advance(DEFAULT_APPROVAL_TIMEOUT_S + 1)
        await session.sweep()  # Nothing is left to pick up: an answered call never runs again.
        rows = {r.tool_name: r for r in await session.rows()}
        events = await session.events()
    got = {name: describe(d) if d is not None else "still held" for name, d in answered.items()}
    if answer == "approve":
        harness.expect("D8.6", all(isinstance(d, Success) for d in answered.values()), f"approved holds: {got}")
    else:
        reason = ReasonCode.APPROVAL_DENIED if answer == "deny" else ReasonCode.APPROVAL_EXPIRED
        refused = [isinstance(d, Outcome) and d.reason_code is reason for d in answered.values()]
        harness.expect("D8.6", all(refused), f"holds {ANSWERED[answer]} were answered {got}; expected {reason.value}")
    runs = 1 if answer == "approve" else 0
    remote_calls = [e for e in fake.log if e.startswith("tools/call")]
    local_calls = [e for e in harness.world.executions if e.tool_name == "files.note"]
    harness.expect(
        "D8.6",
        (len(remote_calls), len(local_calls)) == (runs, runs),
        f"after the hold was {ANSWERED[answer]}, the server saw {remote_calls} and the builtin ran {len(local_calls)} "
        f"time(s); expected {runs} each",
    )
    harness.expect("D8.6", set(rows) == set(names), f"rows were left for {sorted(rows)}")
    same = ("status", "reason_code", "attempt", "suspended")
    judge_alike(harness, rows["files.note"], rows["mcp.plain.echo"], events, same)


@pytest.mark.rules("D8.7")
@pytest.mark.parametrize("protocol", ERAS)
async def test_hanging_dripping_and_endless_servers_are_bounded(harness: Harness, protocol: str) -> None:
    hang, _ = memory(harness, "hang", "HangingServer", protocol=protocol, call_timeout_s=0.5)
    drip, _ = memory(harness, "drip", "DripServer", protocol=protocol, call_timeout_s=0.5)
    endless, _ = memory(harness, "endless", "EndlessInputServer", protocol=protocol, call_timeout_s=5.0)
    calls: list[tuple[str, dict[str, Any], set[ReasonCode] | None]] = [
        ("mcp.hang.hang", {}, {ReasonCode.DEADLINE_EXCEEDED}),
        # The synthetic read tool is an MCP call like any other: a hanging resources/read is bounded by the same
        # per-server deadline and answered alike (not by whatever the client library's own timeout says).
        (f"mcp.hang.{READ_RESOURCE}", {"uri": HANG_RESOURCE}, {ReasonCode.DEADLINE_EXCEEDED}),
        ("mcp.drip.drip", {"chunks": 20, "interval_s": 0.2}, {ReasonCode.DEADLINE_EXCEEDED}),
        ("mcp.endless.ask", {"text": "x"}, None),
    ]
    async with harness.open(mcp_servers=[hang, drip, endless]) as session:
        for name, arguments, reasons in calls:
            d = None
            held = bound(harness, HOLD_BOUND_S, f"{name}'s answer")
            with anyio.move_on_after(held):
                d = await session.call(name, arguments)
            harness.expect("D8.7", d is not None, f"{name} held the call for {held:.0f} s, past its deadline")
            assert d is not None
            if reasons is None:  # Endless input: any end will do, as long as no request was answered.
                answered = isinstance(d, Success) and any("answered" in e.text for e in d.content)
                harness.expect("D8.7", not answered, f"{name}'s input requests were answered: {describe(d)}")
                continue
            harness.expect(
                "D8.7",
                getattr(d, "reason_code", None) in reasons,
                f"{name} was answered {describe(d)}; expected one of {sorted(r.value for r in reasons)}",
            )


@pytest.mark.rules("D8.8")
async def test_output_over_the_server_cap_is_not_delivered(harness: Harness) -> None:
    # Both sizes stay under the 1 MiB an MCP SDK client accepts per streamed HTTP event, so over the driver
    # protocol (where the harness serves this fake over HTTP) the transport's own limit cannot do the cap's work.
    huge, _ = memory(harness, "huge", "HugeOutputServer", max_output_bytes=256 * 1024)
    async with harness.open(mcp_servers=[huge]) as session:
        for name, size in (("mcp.huge.dump", 512 * 1024), ("mcp.huge.dump_structured", 512 * 1024)):
            d = await session.call(name, {"bytes": size})
            harness.expect(
                "D8.8",
                not isinstance(d, Success),
                f"{name}'s {size}-byte result, over a 256 KiB cap, was delivered (whole or excerpted): {describe(d)}",
            )
        small = harness.success("D8.8", await session.call("mcp.huge.dump", {"bytes": 1000}), "a result under the cap")
        harness.expect("D8.8", "".join(e.text for e in small.content) == "A" * 1000, "the small result was altered")


CAP = 100
"""The output cap of the multibyte server, in bytes."""

_SIZES = (
    # (unit, count, parts): the unit's UTF-8 width times count times parts is the result's size in bytes.
    ("a", 99, 1),
    ("a", 100, 1),
    ("a", 101, 1),
    ("\u00e9", 50, 1),  # two bytes a character: 100 bytes in 50 characters
    ("\u00e9", 51, 1),
    ("\u00e9", 80, 1),  # 160 bytes, 80 characters: under the cap only if characters are counted
    ("\u20ac", 33, 1),  # three bytes: 99
    ("\u20ac", 34, 1),  # 102
    ("\U0001f600", 25, 1),  # four bytes: 100
    ("\U0001f600", 26, 1),  # 104 bytes in 26 characters
    ("a", 50, 2),  # two parts, 100 bytes together
    ("a", 60, 2),  # two parts of 60: each under the cap, together over it
    ("\u00e9", 30, 2),  # 120 bytes in 60 characters, in two parts
)
"""Results around a 100-byte cap, under it, at it and one unit over it, for every UTF-8 width and over several
parts."""


RUN = 10
"""Units in a row that count as the remote text delivered (in part): the fakes' own texts never repeat one this long."""


@pytest.mark.rules("D8.8")
@pytest.mark.parametrize("error", [False, True], ids=["success", "isError"])
@pytest.mark.parametrize(("unit", "count", "parts"), _SIZES)
async def test_output_cap_is_in_utf8_bytes_over_the_whole_result(
    harness: Harness, unit: str, count: int, parts: int, error: bool
) -> None:
    # An error result is a result too: its text reaches the model as the outcome's external_detail, so the cap
    # bounds it as it bounds a success (it is neither delivered whole nor cut down to the cap).
    config, _ = memory(harness, "multi", "MultibyteOutputServer", max_output_bytes=CAP)
    size = len(unit.encode()) * count * parts
    arguments = {"unit": unit, "count": count, "parts": parts, "error": error}
    async with harness.open(mcp_servers=[config]) as session:
        d = await session.call("mcp.multi.repeat", arguments)
    kind = "an isError result" if error else "a result"
    what = f"{kind} of {parts} part(s) of {count} x {unit!r}: {count * parts} characters, {size} bytes"
    if size > CAP:
        harness.expect(
            "D8.8", not isinstance(d, Success), f"{what}, over the {CAP}-byte cap, was delivered: {describe(d)}"
        )
        harness.expect(
            "D8.8",
            unit * RUN not in str(d.model_dump()),
            f"{what}, over the {CAP}-byte cap, was delivered (whole or excerpted) in the disposition: {describe(d)}",
        )
        return
    if error:
        outcome = harness.outcome("D8.8", d, f"{what}, within the {CAP}-byte cap,")
        detail = outcome.external_detail
        harness.expect(
            "D8.8",
            detail is not None and detail.text.count(unit * count) >= parts,
            f"{what}, within the {CAP}-byte cap, did not reach the external_detail unaltered: {detail}",
        )
        return
    ok = harness.success("D8.8", d, f"{what}, within the {CAP}-byte cap,")
    harness.expect(
        "D8.8", [e.text for e in ok.content] == [unit * count] * parts, f"{what} was delivered altered: {ok.content}"
    )


@pytest.mark.rules("D8.8")
@pytest.mark.parametrize(("unit", "count", "parts"), _SIZES)
async def test_output_cap_holds_for_resource_reads(harness: Harness, unit: str, count: int, parts: int) -> None:
    config, fake = memory(harness, "multi", "MultibyteOutputServer", max_output_bytes=CAP)
    size = len(unit.encode()) * count * parts
    uri = repeat_uri(unit, count, parts)
    async with harness.open(mcp_servers=[config]) as session:
        d = await session.call(f"mcp.multi.{READ_RESOURCE}", {"uri": uri})
    harness.expect("D8.8", f"resources/read {uri}" in fake.log, f"the server was not asked for {uri}: {fake.log}")
    what = f"a resource of {parts} content(s) of {count} x {unit!r}: {count * parts} characters, {size} bytes"
    if size > CAP:
        harness.expect(
            "D8.8", not isinstance(d, Success), f"{what}, over the {CAP}-byte cap, was delivered: {describe(d)}"
        )
        return
    ok = harness.success("D8.8", d, f"{what}, within the {CAP}-byte cap,")
    harness.expect(
        "D8.8", [e.text for e in ok.content] == [unit * count] * parts, f"{what} was delivered altered: {ok.content}"
    )


@pytest.mark.rules("D13.4")
@pytest.mark.profiles("mcp")
async def test_remote_error_text_stays_in_the_external_detail(harness: Harness) -> None:
    config, _ = memory(harness, "errs", "InjectingErrorServer")
    async with harness.open(mcp_servers=[config]) as session:
        for name in ("mcp.errs.fail", "mcp.errs.crash"):
            outcome = harness.outcome("D13.4", await session.call(name, {"text": "x"}), name)
            harness.expect(
                "D13.4",
                "instructions" not in outcome.message and "tool_result" not in outcome.message,
                f"{name}'s message carries the server's text: {outcome.message!r}",
            )
            detail = outcome.external_detail
            harness.expect(
                "D13.4",
                detail is not None and detail.trust is TrustLabel.EXTERNAL_UNTRUSTED and INJECTION[:20] in detail.text,
                f"{name}'s remote text is not in an EXTERNAL_UNTRUSTED external_detail: {detail}",
            )
