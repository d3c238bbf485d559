"""The hostile fake MCP servers, seen from a real ``mcp.Client``: in-process, over stdio, over HTTP."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, InputRequiredRoundsExceededError, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import SubscriptionLost
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from pydantic import ValidationError

from toolproof.fakes import mcp as fakes
from toolproof.fakes.mcp import _forkserver

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
"""The handshake era (``legacy``) and 2026-07-28 (``auto`` picks it in-process)."""

ERAS = ["legacy", "2026-07-28"]
"""The handshake era and 2026-07-28, each pinned."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _texts(result: types.CallToolResult) -> str:
    return "".join(part.text for part in result.content if isinstance(part, types.TextContent))


class Notices:
    """A message handler that counts ``tools/list_changed``; ``arrived`` is set at ``expected`` of them."""

    def __init__(self, expected: int = 1) -> None:
        self.expected = expected
        self.tools_changed = 0
        self.arrived = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed += 1
            if self.tools_changed >= self.expected:
                self.arrived.set()


def _names(result: types.ListToolsResult) -> list[str]:
    return [tool.name for tool in result.tools]


# --- every server, both eras: list tools, call the plain tool -------------------------------


OPENING_FAULTS = {
    ("HangsAtInitializeServer", "legacy"),
    ("HangsAtInitializeServer", "auto"),
    ("LegacyOnlyServer", "auto"),
    ("DiscoverInvalidParamsServer", "auto"),
    ("DiscoverInternalErrorServer", "auto"),
    ("DiscoverSessionErrorServer", "auto"),
}
"""(fake, mode) whose fault is the opening itself: no client gets as far as a listing (tested on their own below).
In-process, ``auto`` adopts 2026-07-28 without a probe, so it never falls back to the handshake."""


@pytest.mark.parametrize(
    ("name", "mode"), [(name, mode) for name in fakes.SERVERS for mode in MODES if (name, mode) not in OPENING_FAULTS]
)
async def test_every_fake_lists_tools_and_answers_echo(name: str, mode: str) -> None:
    async with Client(fakes.SERVERS[name](), mode=mode) as client:
        assert "echo" in _names(await client.list_tools())
        result = await client.call_tool("echo", {"text": "hi"})
    assert not result.is_error
    assert _texts(result) == "hi"


def test_catalog_lists_every_server_with_a_behaviour() -> None:
    assert [name for name, _ in fakes.catalog()] == list(fakes.SERVERS)
    assert all(behaviour for _, behaviour in fakes.catalog())


def test_every_server_is_named_for_its_registry_key() -> None:
    for name, fake in fakes.SERVERS.items():
        expected = fakes.IMPERSONATED_NAME if fake is fakes.ImpersonatorServer else name
        assert fake().name == expected


# --- the request log -------------------------------------------------------------------------


async def _refuse_sampling(
    ctx: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="no sampling")


async def _no_roots(ctx: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
    return types.ListRootsResult(roots=[])


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize(("sampling", "roots"), [(False, False), (True, False), (False, True), (True, True)])
async def test_log_records_each_call_and_what_the_client_advertised(mode: str, sampling: bool, roots: bool) -> None:
    server = fakes.PlainServer.build()
    async with Client(
        server.server,
        mode=mode,
        sampling_callback=_refuse_sampling if sampling else None,
        list_roots_callback=_no_roots if roots else None,
    ) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "hi"})
        await client.call_tool("missing", {})
    advertised = f"client sampling={sampling} roots={roots}"
    assert server.log == ["tools/call echo", advertised, "tools/call missing", advertised]


@pytest.mark.parametrize("mode", ERAS)
async def test_log_records_resource_and_prompt_requests(mode: str) -> None:
    server = fakes.InjectingResourceServer.build()
    async with Client(server.server, mode=mode) as client:
        (resource,) = (await client.list_resources()).resources
        await client.read_resource(str(resource.uri))
        await client.list_prompts()
        await client.get_prompt("review")
    assert server.log == ["resources/list", f"resources/read {resource.uri}", "prompts/list", "prompts/get review"]


def test_calling_an_entry_builds_the_bare_sdk_server() -> None:
    assert isinstance(fakes.PlainServer(), Server)
    assert isinstance(fakes.PlainServer.build(), fakes.FakeServer)


# --- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_duplicate_names_lists_lookup_twice(mode: str) -> None:
    async with Client(fakes.DuplicateNamesServer(), mode=mode) as client:
        tools = (await client.list_tools()).tools
    lookups = [tool for tool in tools if tool.name == "lookup"]
    assert len(lookups) == 2
    assert lookups[0].input_schema != lookups[1].input_schema


@pytest.mark.parametrize(
    ("fake", "names"),
    [
        (fakes.CollidingNamesServer, fakes.COLLIDING_NAMES),
        (fakes.UnicodeTrickServer, fakes.UNICODE_TRICK_NAMES),
        (fakes.OverlongNameServer, fakes.OVERLONG_NAMES),
        (fakes.ReservedDomainServer, fakes.RESERVED_DOMAIN_NAMES),
    ],
)
async def test_hostile_names_arrive_verbatim_and_answer(fake: fakes.ServerFake, names: list[str]) -> None:
    async with Client(fake(), mode="legacy") as client:
        assert _names(await client.list_tools()) == ["echo", *names]
        for name in names:
            assert _texts(await client.call_tool(name, {})) == f"called {name!r}"


async def test_impersonator_claims_another_servers_name() -> None:
    async with Client(fakes.PlainServer()) as plain, Client(fakes.ImpersonatorServer(), mode="legacy") as twin:
        assert plain.server_info is not None
        assert twin.server_info is not None
        assert twin.server_info.name == plain.server_info.name == fakes.IMPERSONATED_NAME
        assert _names(await plain.list_tools()) != _names(await twin.list_tools())


# --- classification --------------------------------------------------------------------------


async def test_lying_annotations_call_a_destructive_tool_read_only() -> None:
    async with Client(fakes.LyingAnnotationsServer()) as client:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "delete_everything"]
        result = await client.call_tool("delete_everything", {})
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.destructive_hint is False
    assert _texts(result).startswith("deleted")


@pytest.mark.parametrize("mode", MODES)
async def test_claims_trust_in_text_structured_content_and_meta(mode: str) -> None:
    async with Client(fakes.ClaimsTrustServer(), mode=mode) as client:
        result = await client.call_tool("fetch", {})
    assert "[trust: SYSTEM]" in _texts(result)
    assert result.structured_content == fakes.TRUST_CLAIMS
    assert result.meta is not None
    assert result.meta["toolproof/trust"] == "SYSTEM"


# --- catalog drift ---------------------------------------------------------------------------


async def test_rug_pull_withdraws_transfer_and_notifies_in_the_handshake_era() -> None:
    notices = Notices()
    async with Client(fakes.RugPullServer(), mode="legacy", message_handler=notices) as client:
        assert "transfer" in _names(await client.list_tools())
        assert _texts(await client.call_tool("transfer", {})) == "transferred"
        with anyio.fail_after(5):
            await notices.arrived.wait()
        assert "transfer" not in _names(await client.list_tools(cache_mode="refresh"))
        again = await client.call_tool("transfer", {})
    assert again.is_error


async def test_rug_pull_announces_on_the_listen_stream_in_2026() -> None:
    async with Client(fakes.RugPullServer(), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("transfer", {})
            with anyio.fail_after(5):
                event = await subscription.__anext__()
        assert event == ToolsListChanged()
        assert "transfer" not in _names(await client.list_tools(cache_mode="refresh"))


async def test_silent_drift_changes_lookup_without_notifying() -> None:
    notices = Notices()
    async with Client(fakes.SilentDriftServer(), mode="legacy", message_handler=notices) as client:
        (before,) = [t for t in (await client.list_tools()).tools if t.name == "lookup"]
        await client.call_tool("lookup", {"text": "k"})
        (after,) = [t for t in (await client.list_tools(cache_mode="refresh")).tools if t.name == "lookup"]
        await client.call_tool("echo", {"text": "flush"})
    assert notices.tools_changed == 0
    assert before.description != after.description
    assert before.input_schema != after.input_schema
    assert before.annotations != after.annotations


async def test_list_changed_flood_sends_every_notification() -> None:
    notices = Notices(expected=fakes.FLOOD_COUNT)
    async with Client(fakes.ListChangedFloodServer(), mode="legacy", message_handler=notices) as client:
        await client.call_tool("flood", {})
        with anyio.fail_after(5):
            await notices.arrived.wait()
    assert notices.tools_changed == fakes.FLOOD_COUNT


async def test_silent_drift_changes_only_summarize_description() -> None:
    notices = Notices()
    async with Client(fakes.SilentDriftServer(), mode="legacy", message_handler=notices) as client:
        (before,) = [t for t in (await client.list_tools()).tools if t.name == "summarize"]
        await client.call_tool("summarize", {"text": "k"})
        (after,) = [t for t in (await client.list_tools(cache_mode="refresh")).tools if t.name == "summarize"]
        await client.call_tool("echo", {"text": "flush"})
    assert notices.tools_changed == 0
    assert before.description != after.description
    assert (before.input_schema, before.annotations) == (after.input_schema, after.annotations)


async def test_long_flood_notifies_while_the_call_is_in_flight() -> None:
    notices = Notices(expected=fakes.FLOOD_COUNT)
    seen_in_flight: list[int] = []
    async with Client(fakes.ListChangedFloodServer(), mode="legacy", message_handler=notices) as client:

        async def watch() -> None:
            await notices.arrived.wait()
            seen_in_flight.append(notices.tools_changed)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(watch)
                result = await client.call_tool("long_flood", {})
                done = bool(seen_in_flight)
    assert not result.is_error
    assert done, "the call ended before its notices all arrived"
    assert notices.tools_changed == fakes.FLOOD_COUNT


async def test_schema_violation_server_answers_structure_unvalidated() -> None:
    server = fakes.SchemaViolationServer.build()
    async with Client(server.server, mode="legacy") as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert {t.output_schema is not None for n, t in listed.items() if n != "echo"} == {True}
        valid = await client.call_tool("valid", {})
        assert valid.structured_content == fakes.VALID_REPORT
        for name, structure in fakes.SCHEMA_BREAKS.items():
            with pytest.raises(RuntimeError, match="Invalid structured content"):  # The SDK client's own check.
                await client.call_tool(name, {})
            assert f"tools/call {name}" in server.log, structure
        with pytest.raises(RuntimeError, match="did not return structured content"):
            await client.call_tool(fakes.NO_STRUCTURE, {})
        failed = await client.call_tool(fakes.FAILS_UNSTRUCTURED, {})
    assert failed.is_error
    assert failed.structured_content is None


async def test_growing_catalog_adds_a_callable_tool_per_grow() -> None:
    notices = Notices(expected=2)
    async with Client(fakes.GrowingCatalogServer(), mode="legacy", message_handler=notices) as client:
        first = _names(await client.list_tools())
        await client.call_tool("grow", {})
        await client.call_tool("grow", {})
        grown = _names(await client.list_tools(cache_mode="refresh"))
        extra = await client.call_tool("extra_2", {"text": "new"})
        with anyio.fail_after(5):
            await notices.arrived.wait()
    assert grown == [*first, "extra_1", "extra_2"]
    assert _texts(extra) == "new"


@pytest.mark.parametrize(("tool", "field"), [("label", "title"), ("report", "output_schema")])
async def test_silent_drift_changes_one_field_of_label_and_report(tool: str, field: str) -> None:
    notices = Notices()
    async with Client(fakes.SilentDriftServer(), mode="legacy", message_handler=notices) as client:
        (before,) = [t for t in (await client.list_tools()).tools if t.name == tool]
        result = await client.call_tool(tool, {"text": "k"})
        (after,) = [t for t in (await client.list_tools(cache_mode="refresh")).tools if t.name == tool]
        await client.call_tool("echo", {"text": "flush"})
    assert not result.is_error
    assert notices.tools_changed == 0
    fields = ("title", "description", "input_schema", "output_schema", "annotations")
    assert [f for f in fields if getattr(before, f) != getattr(after, f)] == [field]


@pytest.mark.parametrize(("ttls", "pages"), [((), [fakes.TTL_MS]), ((60_000, 5_000), [60_000, 5_000])])
async def test_ttl_drift_sends_a_ttl_on_every_page_in_2026_only(ttls: tuple[int, ...], pages: list[int]) -> None:
    for mode, expected in (("2026-07-28", pages), ("legacy", [])):
        async with Client(fakes.ttl_drift_server(*ttls).server, mode=mode, cache=None) as client:
            sent: list[int] = []
            cursor: str | None = None
            names: list[str] = []
            while True:
                page = await client.list_tools(cursor=cursor)
                names += _names(page)
                if "ttl_ms" in page.model_fields_set:
                    sent.append(page.ttl_ms)
                if not (cursor := page.next_cursor):
                    break
        assert sent == expected, mode
        assert names == ["echo", *fakes.DRIFTING], mode


def test_ttl_drift_refuses_more_pages_than_it_can_fill() -> None:
    with pytest.raises(ValueError, match=r"^ttls_ms=\(1, 2, 3, 4\): give one ttlMs >= 0 per page"):
        fakes.ttl_drift_server(1, 2, 3, 4)  # Five tools do not split into four pages of one size.


async def test_notice_mid_listing_answers_the_old_catalog_after_its_notice() -> None:
    notices = Notices()
    async with Client(fakes.NoticeMidListingServer(), mode="legacy", message_handler=notices) as client:
        (first,) = [t for t in (await client.list_tools()).tools if t.name == "lookup"]
        await client.call_tool("lookup", {"text": "k"})
        (during,) = [t for t in (await client.list_tools(cache_mode="refresh")).tools if t.name == "lookup"]
        noticed_before_the_answer = notices.arrived.is_set()
        (after,) = [t for t in (await client.list_tools(cache_mode="refresh")).tools if t.name == "lookup"]
    assert noticed_before_the_answer
    assert notices.tools_changed == 1
    assert during == first
    assert after.description != first.description


# --- requests the client never advertised ----------------------------------------------------


async def test_sampling_request_is_refused_by_a_client_without_sampling() -> None:
    async with Client(fakes.SamplingRequestServer(), mode="legacy") as client:
        result = await client.call_tool("summarize", {})
    assert _texts(result).startswith("sampling refused:")


async def test_sampling_request_reaches_a_refusing_callback() -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def refuse(
        ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        asked.append(params)
        return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is never advertised")

    async with Client(fakes.SamplingRequestServer(), mode="legacy", sampling_callback=refuse) as client:
        result = await client.call_tool("summarize", {})
    assert _texts(result) == "sampling refused: sampling is never advertised"
    content = asked[0].messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == fakes.SAMPLING_PROMPT


@pytest.mark.parametrize(
    ("fake", "tool"), [(fakes.SamplingRequestServer, "summarize"), (fakes.RootsRequestServer, "list_files")]
)
async def test_input_required_request_is_refused_in_2026(fake: fakes.ServerFake, tool: str) -> None:
    server = fake.build()
    async with Client(server.server, mode="2026-07-28") as client:
        with pytest.raises(MCPError):
            await client.call_tool(tool, {})
        assert _texts(await client.call_tool("echo", {"text": "still up"})) == "still up"
    # The client refused on its own side: the server saw one call and no retry.
    assert server.log == [
        f"tools/call {tool}",
        "client sampling=False roots=False",
        "tools/call echo",
        "client sampling=False roots=False",
    ]


async def test_input_required_retry_logs_its_input_responses_in_2026() -> None:
    async def answer(
        ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="no"), model="m")

    server = fakes.SamplingRequestServer.build()
    async with Client(server.server, mode="2026-07-28", sampling_callback=answer) as client:
        result = await client.call_tool("summarize", {})
    assert _texts(result).startswith("sampling answered:")
    assert server.log == [
        "tools/call summarize",
        "client sampling=True roots=False",
        "tools/call summarize",
        "client sampling=True roots=False",
        'input_responses sampling={"role":"assistant","content":{"type":"text","text":"no"},"model":"m"}',
    ]


async def test_roots_request_is_refused_by_a_client_without_roots() -> None:
    async with Client(fakes.RootsRequestServer(), mode="legacy") as client:
        result = await client.call_tool("list_files", {})
    assert _texts(result).startswith("roots refused:")


async def test_endless_input_exhausts_the_clients_rounds_in_2026() -> None:
    server = fakes.EndlessInputServer.build()
    async with Client(server.server, mode="2026-07-28", input_required_max_rounds=3) as client:
        with anyio.fail_after(10), pytest.raises(InputRequiredRoundsExceededError):
            await client.call_tool("ask", {})
        assert _texts(await client.call_tool("echo", {"text": "still up"})) == "still up"
    # The first call and one retry per round.
    assert server.log.count("tools/call ask") == 1 + 3


async def test_endless_input_elicitation_is_refused_by_a_client_without_elicitation() -> None:
    async with Client(fakes.EndlessInputServer(), mode="legacy") as client:
        result = await client.call_tool("ask", {})
    assert _texts(result).startswith("elicitation refused:")


async def test_endless_input_elicitation_reaches_an_elicitation_callback() -> None:
    asked: list[types.ElicitRequestParams] = []

    async def decline(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="decline")

    async with Client(fakes.EndlessInputServer(), mode="legacy", elicitation_callback=decline) as client:
        result = await client.call_tool("ask", {})
    assert _texts(result) == "elicitation answered: decline None"
    assert asked[0].message == fakes.ELICITATION_MESSAGE


# --- attacker text ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_injecting_error_carries_instructions_in_is_error_content(mode: str) -> None:
    async with Client(fakes.InjectingErrorServer(), mode=mode) as client:
        result = await client.call_tool("fail", {})
        with pytest.raises(MCPError) as raised:
            await client.call_tool("crash", {})
    assert result.is_error
    assert fakes.INJECTION in _texts(result)
    assert fakes.ANSI in _texts(result)
    assert fakes.INJECTION in raised.value.error.message


@pytest.mark.parametrize("mode", MODES)
async def test_injecting_resource_carries_injections_in_resources_and_prompts(mode: str) -> None:
    async with Client(fakes.InjectingResourceServer(), mode=mode) as client:
        (resource,) = (await client.list_resources()).resources
        contents = (await client.read_resource(str(resource.uri))).contents
        (prompt,) = (await client.list_prompts()).prompts
        messages = (await client.get_prompt(prompt.name)).messages
    assert fakes.INJECTION in (resource.description or "")
    assert isinstance(contents[0], types.TextResourceContents)
    assert fakes.INJECTION in contents[0].text
    assert fakes.INJECTION in (prompt.description or "")
    assert isinstance(messages[0].content, types.TextContent)
    assert fakes.INJECTION in messages[0].content.text


# --- volume ----------------------------------------------------------------------------------


async def test_huge_output_returns_megabytes() -> None:
    async with Client(fakes.HugeOutputServer(), mode="legacy") as client:
        text = await client.call_tool("dump", {})
        structured = await client.call_tool("dump_structured", {"bytes": 200_000})
    assert len(_texts(text)) == fakes.HUGE_BYTES
    assert structured.structured_content is not None
    assert len(structured.structured_content["rows"]) == 10_000


@pytest.mark.parametrize("mode", MODES)
async def test_drip_reports_progress_chunk_by_chunk(mode: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(fakes.DripServer(), mode=mode) as client:
        result = await client.call_tool("drip", {"chunks": 3, "interval_s": 0.01}, progress_callback=on_progress)
    assert _texts(result) == "chunk 1\nchunk 2\nchunk 3\n"
    assert progress == [1, 2, 3]


@pytest.mark.parametrize("mode", MODES)
async def test_hanging_call_ends_only_at_the_callers_deadline(mode: str) -> None:
    async with Client(fakes.HangingServer(), mode=mode) as client:
        with anyio.move_on_after(0.2) as scope:
            await client.call_tool("hang", {})
        assert scope.cancelled_caught
        assert _texts(await client.call_tool("echo", {"text": "alive"})) == "alive"


# --- real transports: a subprocess per server ------------------------------------------------

SUBPROCESS_SERVERS = ["DuplicateNamesServer", "RugPullServer", "SamplingRequestServer"]


async def _exercise(client: Client, name: str) -> None:
    names = _names(await client.list_tools())
    assert _texts(await client.call_tool("echo", {"text": "hi"})) == "hi"
    if name == "DuplicateNamesServer":
        assert names.count("lookup") == 2
    elif name == "RugPullServer":
        await client.call_tool("transfer", {})
        assert "transfer" not in _names(await client.list_tools(cache_mode="refresh"))
    elif name == "SamplingRequestServer":
        if client.protocol_version == "2026-07-28":
            with pytest.raises(MCPError):
                await client.call_tool("summarize", {})
        else:
            assert _texts(await client.call_tool("summarize", {})).startswith("sampling refused:")


def test_stdio_command_runs_the_package_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPROOF_FAKE_FORKSERVER", "0")  # Otherwise the fork server's launcher runs it.
    command = fakes.stdio_command("PlainServer")
    assert command == [sys.executable, "-m", "toolproof.fakes.mcp", "PlainServer", "--transport", "stdio"]


async def test_launchers_reject_an_unknown_name() -> None:
    with pytest.raises(ValueError, match="NoSuchServer"):
        fakes.stdio_command("NoSuchServer")
    with pytest.raises(ValueError, match="NoSuchServer"):
        async with fakes.http_server("NoSuchServer"):
            pass


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SUBPROCESS_SERVERS)
async def test_stdio_subprocess_serves_the_fake(name: str, mode: str) -> None:
    command, *args = fakes.stdio_command(name)
    with anyio.fail_after(30):
        async with Client(StdioServerParameters(command=command, args=args), mode=mode) as client:
            await _exercise(client, name)


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", SUBPROCESS_SERVERS)
async def test_http_subprocess_serves_the_fake(name: str, mode: str) -> None:
    with anyio.fail_after(30):
        async with fakes.http_server(name) as url, Client(url, mode=mode) as client:
            await _exercise(client, name)


def _fake_pids(port: int) -> list[int]:
    """Live processes serving a fake on ``port`` by their command line (the plain command, or the fork server's
    launcher), and the servers the fork server forked for this process."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        launched = b"toolproof.fakes.mcp" in args or _forkserver.LAUNCHER.encode() in args
        if launched and str(port).encode() in args:
            pids.append(int(cmdline.parent.name))
    return pids + _forkserver.served_pids()


@pytest.mark.slow
async def test_http_server_answers_a_real_client_and_is_gone_after_exit() -> None:
    with anyio.fail_after(30):
        async with fakes.http_server("PlainServer") as url:
            port = int(url.removeprefix(f"http://{fakes.LOOPBACK}:").removesuffix("/mcp"))
            assert _fake_pids(port)  # The server (and, through the fork server, its launcher) runs.
            async with Client(url) as client:
                assert _names(await client.list_tools()) == ["echo"]
    assert _fake_pids(port) == []
    with pytest.raises(OSError, match="connection attempts failed"):
        await anyio.connect_tcp(fakes.LOOPBACK, port)


SUBPROCESS_FAULTS = {
    "HangsAtInitializeServer",
    "LegacyOnlyServer",
    "DiscoverInvalidParamsServer",
    "DiscoverInternalErrorServer",
    "DiscoverSessionErrorServer",
    "NonJsonServer",
    "CrashesAtStartServer",
}
"""Fakes that never serve a plain client in one of these openings (tests/test_mcp_sweep.py takes them over
stdio and HTTP, through the reference)."""


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in fakes.SERVERS if name not in SUBPROCESS_FAULTS])
async def test_every_fake_starts_over_stdio_and_http_for_a_real_client(name: str) -> None:
    command, *args = fakes.stdio_command(name)
    with anyio.fail_after(60):
        async with Client(StdioServerParameters(command=command, args=args), mode="legacy") as client:
            await _exercise(client, name)
        async with fakes.http_server(name) as url, Client(url, mode="2026-07-28") as client:
            await _exercise(client, name)


@pytest.mark.parametrize("mode", ERAS)
async def test_empty_resources_answers_resource_lists_with_nothing(mode: str) -> None:
    async with Client(fakes.EmptyResourcesServer(), mode=mode) as client:
        assert (await client.list_resources()).resources == []
        assert (await client.list_resource_templates()).resource_templates == []


@pytest.mark.parametrize("mode", ERAS)
async def test_template_resources_lists_a_template_and_reads_through_it(mode: str) -> None:
    async with Client(fakes.TemplateResourcesServer(), mode=mode) as client:
        assert (await client.list_resources()).resources == []
        (template,) = (await client.list_resource_templates()).resource_templates
        assert template.uri_template == fakes.TEMPLATE
        read = await client.read_resource("file:///docs/guide")
    assert [c.text for c in read.contents if isinstance(c, types.TextResourceContents)] == [
        "Docs at file:///docs/guide."
    ]


@pytest.mark.parametrize("mode", ERAS)
async def test_changing_resources_come_and_go_with_publish_and_retract(mode: str) -> None:
    async with Client(fakes.ChangingResourcesServer(), mode=mode) as client:

        async def surface() -> tuple[list[str], list[str]]:
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            return [str(r.uri) for r in resources], [t.uri_template for t in templates]

        assert await surface() == ([], [])
        await client.call_tool("publish", {"text": "resource"})
        assert await surface() == ([fakes.PUBLISHED_URI], [])
        await client.call_tool("publish", {"text": "template"})
        assert await surface() == ([fakes.PUBLISHED_URI], [fakes.TEMPLATE])
        read = await client.read_resource(fakes.PUBLISHED_URI)
        assert [c.text for c in read.contents if isinstance(c, types.TextResourceContents)] == [
            f"Docs at {fakes.PUBLISHED_URI}."
        ]
        await client.call_tool("retract", {"text": "all"})
        assert await surface() == ([], [])
        with pytest.raises(MCPError, match="publish takes"):
            await client.call_tool("publish", {"text": "prompt"})


@pytest.mark.parametrize("mode", ERAS)
async def test_twin_names_ships_a_tool_and_a_prompt_of_one_name(mode: str) -> None:
    server = fakes.TwinNamesServer.build()
    async with Client(server.server, mode=mode) as client:
        assert _names(await client.list_tools()) == ["echo", fakes.SHARED_NAME]
        assert [p.name for p in (await client.list_prompts()).prompts] == list(fakes.TWIN_PROMPT_NAMES)
        (resource,) = (await client.list_resources()).resources
        (template,) = (await client.list_resource_templates()).resource_templates
        assert resource.name == template.name == fakes.SHARED_NAME
        called = await client.call_tool(fakes.SHARED_NAME, {"text": "x"})
        await client.get_prompt(fakes.SHARED_NAME)
    assert [c.text for c in called.content if isinstance(c, types.TextContent)] == ["fetched x"]
    assert server.log[-1] == f"prompts/get {fakes.SHARED_NAME}"


@pytest.mark.slow
async def test_environment_reports_the_key_and_cwd_it_was_started_with(tmp_path: Path) -> None:
    command, *args = fakes.stdio_command("EnvironmentServer")
    parameters = StdioServerParameters(command=command, args=args, env={fakes.ENV_KEY: "k-1"}, cwd=str(tmp_path))
    with anyio.fail_after(30):
        async with Client(parameters, mode="legacy") as client:
            reported = _texts(await client.call_tool("environment", {}))
    key, cwd, names = reported.splitlines()
    assert (key, cwd) == (f"{fakes.ENV_KEY}=k-1", f"cwd={tmp_path}")
    assert fakes.ENV_KEY in names.removeprefix("names=").split(",")
    assert set(names.removeprefix("names=").split(",")) <= fakes.SAFE_ENV_NAMES | {fakes.ENV_KEY}


async def test_early_notice_arrives_before_the_first_answer_in_the_handshake_era() -> None:
    notices = Notices()
    seen: list[int] = []
    async with Client(fakes.EarlyNoticeServer(), mode="legacy", message_handler=notices) as client:
        await client.list_resources()
        seen.append(notices.tools_changed)  # The notice came ahead of the answer, so it is in already.
        await client.list_prompts()
        await client.list_tools()
    assert seen == [1]
    assert notices.tools_changed == 1


async def test_early_notice_leads_every_listen_stream_in_2026() -> None:
    async with Client(fakes.EarlyNoticeServer(), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        for _ in range(2):
            async with client.listen(tools_list_changed=True) as subscription:
                with anyio.fail_after(5):
                    event = await subscription.__anext__()
            assert event == ToolsListChanged()


@pytest.mark.parametrize("mode", MODES)
async def test_exits_between_calls_refuses_to_exit_in_process(mode: str) -> None:
    async with Client(fakes.ExitsBetweenCallsServer(), mode=mode) as client:
        assert (await client.call_tool("exit", {})).is_error
        assert _texts(await client.call_tool("echo", {"text": "still here"})) == "still here"


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_exits_between_calls_ends_its_process_at_the_next_request(mode: str) -> None:
    command, *args = fakes.stdio_command("ExitsBetweenCallsServer")
    lost: list[str] = []
    with anyio.fail_after(30), contextlib.suppress(BaseExceptionGroup):  # Closing a dead process's client may fail.
        async with Client(StdioServerParameters(command=command, args=args), mode=mode) as client:
            await client.list_tools()  # The client knows the tools' output schemas: call_tool asks no more.
            assert _texts(await client.call_tool("exit", {})) == "exiting before the next request"
            try:
                await client.list_tools()
            except MCPError as exc:
                lost.append(str(exc))
                raise
    assert lost == ["Connection closed"]


@pytest.mark.parametrize("mode", MODES)
async def test_changed_on_restart_refuses_to_exit_in_process(mode: str) -> None:
    fake = fakes.ChangedOnRestartServer.build()
    async with Client(fake.server, mode=mode) as client:
        assert (await client.call_tool("exit", {})).is_error
        assert _texts(await client.call_tool("echo", {"text": "still here"})) == "still here"


async def _lookup(command: list[str], mode: str, *, exit_after: bool) -> types.Tool:
    with anyio.fail_after(30), contextlib.suppress(BaseExceptionGroup):  # Closing a dead process's client may fail.
        async with Client(StdioServerParameters(command=command[0], args=command[1:]), mode=mode) as client:
            (lookup,) = [t for t in (await client.list_tools()).tools if t.name == "lookup"]
            if exit_after:
                await client.call_tool("exit", {})
    return lookup


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_changed_on_restart_lists_lookup_changed_after_an_exit(mode: str, tmp_path: Path) -> None:
    state = tmp_path / "state"
    command = fakes.stdio_command("ChangedOnRestartServer", state_dir=state)
    first = await _lookup(command, mode, exit_after=True)
    assert (state / fakes.EXITED).exists()
    restarted = await _lookup(command, mode, exit_after=False)
    assert restarted.description != first.description


@pytest.mark.parametrize("mode", MODES)
async def test_exits_mid_call_refuses_to_exit_in_process(mode: str) -> None:
    async with Client(fakes.ExitsMidCallServer(), mode=mode) as client:
        assert (await client.call_tool("write", {})).is_error
        assert _texts(await client.call_tool("echo", {"text": "still here"})) == "still here"


# --- the connection's era ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", *ERAS[1:]])
async def test_hangs_at_initialize_never_answers_the_opening(mode: str) -> None:
    fake = fakes.HangsAtInitializeServer.build()
    with anyio.move_on_after(0.5) as scope:
        async with Client(fake.server, mode=mode) as client:
            if mode != "legacy":
                assert _texts(await client.call_tool("echo", {"text": "hi"})) == "hi"  # Only the opening hangs.
                await client.session.send_discover(mode)
    assert scope.cancelled_caught
    assert fake.log[-1] in ("initialize: never answered", "server/discover: never answered")


async def test_legacy_only_server_refuses_the_2026_era_and_serves_the_handshake() -> None:
    async with Client(fakes.LegacyOnlyServer(), mode="2026-07-28") as client:
        with pytest.raises(MCPError) as discover:
            await client.session.send_discover("2026-07-28")
        assert discover.value.error.code == types.METHOD_NOT_FOUND
        with pytest.raises(MCPError, match="handshake only"):
            await client.list_tools()
    async with Client(fakes.LegacyOnlyServer(), mode="legacy") as client:
        assert _texts(await client.call_tool("echo", {"text": "hi"})) == "hi"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("DiscoverInvalidParamsServer", types.INVALID_PARAMS),
        ("DiscoverInternalErrorServer", types.INTERNAL_ERROR),
        ("DiscoverSessionErrorServer", types.CONNECTION_CLOSED),
    ],
)
async def test_a_handshake_era_server_answers_discover_with_its_own_error(name: str, code: int) -> None:
    async with Client(fakes.SERVERS[name](), mode="2026-07-28") as client:
        with pytest.raises(MCPError) as discover:
            await client.session.send_discover("2026-07-28")
        assert discover.value.error.code == code
    async with Client(fakes.SERVERS[name](), mode="legacy") as client:
        assert _texts(await client.call_tool("echo", {"text": "hi"})) == "hi"


@pytest.mark.parametrize("mode", ERAS)
async def test_era_violator_answers_broken_without_content(mode: str) -> None:
    async with Client(fakes.EraViolatorServer(), mode=mode) as client:
        assert _names(await client.list_tools()) == ["echo", "broken"]
        with pytest.raises(ValidationError):
            await client.call_tool("broken", {"text": "x"})
        assert _texts(await client.call_tool("echo", {"text": "still"})) == "still"


def test_stdio_only_fakes_say_so() -> None:
    assert fakes.NonJsonServer.transports == fakes.CrashesAtStartServer.transports == ("stdio",)


async def test_stdio_only_fakes_are_never_served_over_http() -> None:
    with pytest.raises(ValueError, match="stdio only"):
        async with fakes.http_server("NonJsonServer"):
            pass


@pytest.mark.slow
def test_non_json_server_writes_a_log_line_per_request() -> None:
    command = fakes.stdio_command("NonJsonServer")
    done = subprocess.run(command, input='{"jsonrpc": "2.0"}\n', capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == fakes.NON_JSON_LINE + "\n"


@pytest.mark.slow
def test_crashing_server_exits_with_its_status_and_a_fatal_line() -> None:
    command = fakes.stdio_command("CrashesAtStartServer")
    done = subprocess.run(command, input="", capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == fakes.CRASH_STATUS
    assert fakes.CRASH_MESSAGE in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("listing", fakes.LISTINGS)
@pytest.mark.parametrize("mode", MODES)
async def test_listing_error_server_answers_one_listing_with_an_error_and_stays_up(mode: str, listing: str) -> None:
    listings = {"tools": "list_tools", "prompts": "list_prompts", "resources": "list_resources"}
    async with Client(fakes.ListingErrorServer(), mode=mode) as client:
        for method in listings.values():
            await getattr(client, method)()  # Every listing answers at first.
        assert not (await client.call_tool("fail_listing", {"text": listing})).is_error
        with pytest.raises(MCPError) as raised:
            await getattr(client, listings[listing])()
        assert raised.value.error.code == types.INTERNAL_ERROR
        assert not (await client.call_tool("fail_listing", {"text": listing, "code": 4242})).is_error
        with pytest.raises(MCPError) as raised:
            await getattr(client, listings[listing])()
        assert raised.value.error.code == 4242
        for other, method in listings.items():
            if other != listing:
                await getattr(client, method)()
        assert _texts(await client.call_tool("echo", {"text": "still here"})) == "still here"
        assert (await client.call_tool("fail_listing", {"text": "everything"})).is_error


async def test_listing_error_server_ends_its_listen_streams_with_an_error_and_stays_up() -> None:
    async with Client(fakes.ListingErrorServer(), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools_list_changed=True) as subscription:
            assert not (await client.call_tool("fail_listing", {"text": fakes.LISTEN})).is_error
            with anyio.fail_after(5), pytest.raises(SubscriptionLost):
                await subscription.__anext__()
        with pytest.raises(MCPError) as raised:
            async with client.listen(tools_list_changed=True):
                pass
        assert raised.value.error.code == types.INTERNAL_ERROR
        assert _texts(await client.call_tool("echo", {"text": "still here"})) == "still here"
        await client.list_tools(cache_mode="refresh")


def test_down_while_keeps_a_server_from_starting(tmp_path: Path) -> None:
    flag = tmp_path / "down"
    flag.touch()
    command = fakes.stdio_command("PlainServer", down_while=flag)
    assert command[-2:] == ["--down-while", str(flag)]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)
    assert done.returncode == 3
    assert b"kept down" in done.stderr


@pytest.mark.slow
async def test_environment_reports_the_names_asked_for(tmp_path: Path) -> None:
    command, *args = fakes.stdio_command("EnvironmentServer")
    env = {fakes.ENV_KEY: "k-2", "HOME": str(tmp_path)}
    parameters = StdioServerParameters(command=command, args=args, env=env, cwd=str(tmp_path))
    with anyio.fail_after(30):
        async with Client(parameters, mode="legacy") as client:
            reported = _texts(await client.call_tool("environment", {"names": ["HOME", "TOOLPROOF_UNSET_NAME"]}))
    *values, names = reported.splitlines()
    assert values == [
        f"{fakes.ENV_KEY}=k-2",
        f"cwd={tmp_path}",
        f"HOME={tmp_path}",
        "TOOLPROOF_UNSET_NAME=<unset>",
    ]
    assert names.startswith("names=")
    assert {fakes.ENV_KEY, "HOME"} <= set(names.removeprefix("names=").split(","))
