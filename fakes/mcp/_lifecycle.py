"""The connection's lifecycle: a server that speaks before the client is ready.

Each fake attacks the moments around a connection rather than one call: what it sends
while the client is still setting the connection up.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent, ToolsListChanged
from mcp.shared.exceptions import MCPError

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, ToolCall, echo, error, is_modern, text


class _NoticeOnListen(InMemorySubscriptionBus):
    """A bus whose every new listener first receives one tools/list_changed: the notice leads each listen stream."""

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        listener(ToolsListChanged())
        return unsubscribe


def _early_notice() -> FakeServer:
    # Handshake-era connections already sent their notice, by their initialize params: ``ctx.session`` is
    # built per request, the params object is the connection's own.
    noticed: list[object] = []

    async def notice_first(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        # The notice rides on the answer to the first request after initialize, ahead of it: on every
        # transport (streamable HTTP included, which has no standalone stream yet) it reaches the client
        # while the client is still setting the connection up.
        connection = ctx.session.client_params
        first = ctx.request_id is not None and ctx.method != "initialize" and all(c is not connection for c in noticed)
        if first and not is_modern(ctx):
            noticed.append(connection)
            fake.log.append(f"tools/list_changed before answering {ctx.method}")
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        return await call_next(ctx)

    async def list_resources(ctx: Context, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    async def list_prompts(ctx: Context, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[])

    fake = FakeServer(
        "EarlyNoticeServer",
        lambda: [ECHO],
        {"echo": echo},
        on_list_resources=list_resources,
        on_list_prompts=list_prompts,
        bus=_NoticeOnListen(),
    )
    fake.server.middleware.append(notice_first)
    return fake


EarlyNoticeServer = ServerFake(
    "EarlyNoticeServer",
    "sends one tools/list_changed as a connection starts (handshake era: ahead of its answer to the first request "
    "after initialize; 2026-07-28: as the first event of every listen stream)",
    _early_notice,
)


def exits_between_calls(fake: FakeServer) -> ToolCall:
    """Make ``fake`` end its process at the request after an ``exit`` call; returns ``exit``'s behaviour."""
    state = {"exiting": False}

    async def leave(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if not fake.served:
            return error("`exit` only exits a server running as a subprocess (stdio or HTTP)")
        state["exiting"] = True
        return text("exiting before the next request")

    async def exit_first(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        # The process ends as the next request arrives, before answering it: "between calls", never mid-answer.
        if state["exiting"] and ctx.request_id is not None:
            os._exit(0)
        return await call_next(ctx)

    fake.server.middleware.insert(0, exit_first)
    return leave


def _exits_between_calls() -> FakeServer:
    fake = FakeServer("ExitsBetweenCallsServer", lambda: [ECHO, EXIT], {"echo": echo})
    fake.tools["exit"] = exits_between_calls(fake)
    return fake


EXIT = types.Tool(name="exit", description="Ends the server process.", input_schema=TEXT_SCHEMA)
"""ExitsBetweenCallsServer's tool that ends the process before the next request is answered."""

ExitsBetweenCallsServer = ServerFake(
    "ExitsBetweenCallsServer",
    "after an `exit` call, its process exits as the next request arrives (stdio and HTTP only; a restart is a "
    "fresh server)",
    _exits_between_calls,
)


def _exits_mid_call() -> FakeServer:
    async def write(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if not fake.served:
            return error("`write` only exits a server running as a subprocess (stdio or HTTP)")
        os._exit(0)  # Mid-call: the request arrived, no answer ever leaves.

    fake = FakeServer("ExitsMidCallServer", lambda: [ECHO, WRITE], {"echo": echo, "write": write})
    return fake


WRITE = types.Tool(name="write", description="Writes a record.", input_schema=TEXT_SCHEMA)
"""ExitsMidCallServer's tool whose call ends the process before it answers."""

ExitsMidCallServer = ServerFake(
    "ExitsMidCallServer",
    "a `write` call ends its process after the request arrived and before any answer (stdio and HTTP only)",
    _exits_mid_call,
)


LISTINGS = ("tools", "prompts", "resources")
"""The listings ListingErrorServer's ``fail_listing`` can make answer an error (``tools/list``, ...)."""

LISTEN = "listen"
"""What ListingErrorServer's ``fail_listing`` also takes: the 2026-07-28 ``subscriptions/listen`` stream, ended with
an error (every stream open, and every later listen request answered with one)."""

FAIL_LISTING = types.Tool(
    name="fail_listing",
    description=(
        "From now on, answers the listing `text` names (tools, prompts or resources) with an error, of JSON-RPC code "
        "`code` (default -32603, internal error); `listen` ends every open subscriptions/listen stream with an error "
        "and refuses later ones."
    ),
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}, "code": {"type": "integer"}},
        "required": ["text"],
        "additionalProperties": False,
    },
)
"""ListingErrorServer's tool that makes one of its listings answer a JSON-RPC error."""

REFUSE = types.Tool(
    name="refuse",
    description=(
        "Answers its own call with a JSON-RPC error of code `code` (default -32603, internal error) and message "
        "`message` (default: the record service refused the call)."
    ),
    input_schema={
        "type": "object",
        "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        "additionalProperties": False,
    },
)
"""ListingErrorServer's tool whose every call the server answers with a JSON-RPC error, the connection staying up."""

REFUSAL = "the record service refused the call"
"""The message of ``refuse``'s error when the call names none."""


def _listing_error() -> FakeServer:
    failing: dict[str, int] = {}
    bus = InMemorySubscriptionBus()
    feeds = ListenHandler(bus)
    breaks: list[anyio.Event] = []

    async def listen(ctx: Context, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        if LISTEN in failing:
            raise MCPError(failing[LISTEN], "the notice feed is offline")
        broken = anyio.Event()
        breaks.append(broken)
        served: list[types.SubscriptionsListenResult] = []
        async with anyio.create_task_group() as group:

            async def serve() -> None:
                served.append(await feeds(ctx, params))
                group.cancel_scope.cancel()

            group.start_soon(serve)
            await broken.wait()
            group.cancel_scope.cancel()
        if not served:  # Broken by fail_listing: the stream ends with an error, not the graceful close.
            raise MCPError(failing.get(LISTEN, types.INTERNAL_ERROR), "the notice feed went offline")
        return served[0]

    def answer(listing: str) -> None:
        if listing in failing:
            raise MCPError(failing[listing], f"the {listing} store is offline")

    def list_tools() -> list[types.Tool]:
        answer("tools")
        return [ECHO, FAIL_LISTING, REFUSE]

    async def list_prompts(ctx: Context, params: Any) -> types.ListPromptsResult:
        answer("prompts")
        return types.ListPromptsResult(prompts=[types.Prompt(name="brief", description="A short brief.")])

    async def list_resources(ctx: Context, params: Any) -> types.ListResourcesResult:
        answer("resources")
        return types.ListResourcesResult(resources=[])

    async def fail_listing(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        listing = str((params.arguments or {}).get("text", ""))
        if listing not in (*LISTINGS, LISTEN):
            return error(f"`fail_listing` takes one of {', '.join((*LISTINGS, LISTEN))}")
        code = (params.arguments or {}).get("code", types.INTERNAL_ERROR)
        if not isinstance(code, int):
            return error("`code` must be an integer")
        failing[listing] = code
        if listing == LISTEN:
            for broken in breaks:
                broken.set()
            return text("every listen stream ended with an error; listen answers an error from now on")
        return text(f"{listing}/list answers an error from now on")

    async def refuse(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        code = (params.arguments or {}).get("code", types.INTERNAL_ERROR)
        message = (params.arguments or {}).get("message", REFUSAL)
        raise MCPError(
            code if isinstance(code, int) else types.INTERNAL_ERROR, message if isinstance(message, str) else REFUSAL
        )

    return FakeServer(
        "ListingErrorServer",
        list_tools,
        {"echo": echo, "fail_listing": fail_listing, "refuse": refuse},
        bus=bus,
        on_list_prompts=list_prompts,
        on_list_resources=list_resources,
        on_subscriptions_listen=listen,
    )


ListingErrorServer = ServerFake(
    "ListingErrorServer",
    "answers its listings at connect; `refuse` answers its call with a JSON-RPC error (the code asked); after "
    "`fail_listing` (tools, prompts or resources) that listing answers a "
    "JSON-RPC error (internal error, or the code asked) while the connection and its tools stay up; after "
    "`fail_listing` listen, its "
    "2026-07-28 listen streams end with an error and later listen requests answer one",
    _listing_error,
)


ListenRefusedServer = ServerFake(
    "ListenRefusedServer",
    "serves no subscriptions/listen stream: a 2026-07-28 client's listen request is answered Method not found, while "
    "its tools and listings answer",
    lambda: FakeServer("ListenRefusedServer", lambda: [ECHO], {"echo": echo}, on_subscriptions_listen=None),
)
