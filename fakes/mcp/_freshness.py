"""What makes a listing stale before its age runs out: the server's own ttlMs, a notice mid-listing, a restart.

Each fake changes a tool in a way a client sees only by listing again at the right moment (D9.4): the
change is never announced in time for a client that keeps a listing it should have dropped.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.fakes import load_factor

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, error, text
from ._drift import DRIFTING, LOOKUP_AFTER, LOOKUP_BEFORE, silent_drift
from ._lifecycle import EXIT, exits_between_calls

TTL_MS = 10_000
"""TtlDriftServer's ``ttlMs`` when none is given: ten seconds."""


def ttl_drift_server(*ttls_ms: int) -> FakeServer:
    """A fresh TtlDriftServer: SilentDriftServer's catalog and silent changes, with a ``ttlMs`` on every page.

    Args:
        ttls_ms: The ``ttlMs`` of each page of ``tools/list``, in order: the catalog is split into that many pages
            (the last may be shorter). None: one page with ``TTL_MS``. Only a 2026-07-28 answer carries them.

    Raises:
        ValueError: The catalog does not split into that many non-empty pages.
    """
    ttls = ttls_ms or (TTL_MS,)
    size = 1 + len(DRIFTING)  # echo and the drifting tools.
    page_size = -(-size // len(ttls))
    if -(-size // page_size) != len(ttls) or min(ttls) < 0:
        raise ValueError(f"ttls_ms={ttls!r}: give one ttlMs >= 0 per page, for 1 to {size} pages of {size} tools")
    return silent_drift("TtlDriftServer", page_size=None if len(ttls) == 1 else page_size, ttl_ms=ttls)


TtlDriftServer = ServerFake(
    "TtlDriftServer",
    f"SilentDriftServer's catalog and silent changes, every tools/list answered with ttlMs {TTL_MS} (2026-07-28; "
    "`ttl_drift_server` sets each page's ttlMs)",
    ttl_drift_server,
)


LONG_TTL_MS = 3_600_000
"""The ttlMs of NoticeMidListingServer's and ChangedOnRestartServer's listings (an hour): without one a 2026-07-28
listing is stale at once (the SDK's default ttlMs is 0), and no client would ever have one to keep too long."""

MID_LISTING_NOTICE = "tools/list_changed while answering tools/list"
"""The entry NoticeMidListingServer's log gets when it sends its notice from inside a listing."""

HOLD_S = 0.25
"""How long NoticeMidListingServer holds its answer after its notice on an idle machine (times ``load_factor()``), so
the client takes the notice in while the listing is still in flight (a margin for delivery, not a claim about how
fast a client is)."""


def _notice_mid_listing() -> FakeServer:
    state = {"armed": False, "changed": False}

    async def lookup(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        state["armed"] = not state["changed"]  # Only the first listing after a call, and only once.
        return text("found")

    def catalog() -> list[types.Tool]:
        return [ECHO, LOOKUP_AFTER if state["changed"] else LOOKUP_BEFORE]

    async def notice_mid_listing(ctx: Context, call_next: Callable[[Context], Awaitable[Any]]) -> Any:
        if ctx.method != "tools/list" or not state["armed"]:
            return await call_next(ctx)
        answer = await call_next(ctx)  # The catalog as it stood before the change.
        state["armed"], state["changed"] = False, True
        fake.log.append(MID_LISTING_NOTICE)
        await fake.announce_tools_changed(ctx)
        await anyio.sleep(HOLD_S * load_factor())
        return answer

    fake = FakeServer("NoticeMidListingServer", catalog, {"echo": echo, "lookup": lookup}, ttl_ms=[LONG_TTL_MS])
    fake.server.middleware.append(notice_mid_listing)
    return fake


NoticeMidListingServer = ServerFake(
    "NoticeMidListingServer",
    "after the first `lookup` call, its next tools/list changes `lookup` (description, schema, annotations), sends "
    "tools/list_changed and only then answers, with the catalog from before the change (2026-07-28: ttlMs an hour)",
    _notice_mid_listing,
)


EXITED = "exited"
"""The file ChangedOnRestartServer leaves in its state directory when `exit` is called."""


def _changed_on_restart() -> FakeServer:
    def restarted() -> bool:
        return fake.state_dir is not None and (fake.state_dir / EXITED).exists()

    def catalog() -> list[types.Tool]:
        return [ECHO, EXIT, LOOKUP_AFTER if restarted() else LOOKUP_BEFORE]

    async def lookup(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return text("found")

    fake = FakeServer("ChangedOnRestartServer", catalog, {"echo": echo, "lookup": lookup}, ttl_ms=[LONG_TTL_MS])
    leave = exits_between_calls(fake)

    async def exit_and_remember(
        ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if fake.served and fake.state_dir is not None:
            fake.state_dir.mkdir(parents=True, exist_ok=True)
            (fake.state_dir / EXITED).touch()
        return await leave(ctx, params)

    fake.tools["exit"] = exit_and_remember
    return fake


ChangedOnRestartServer = ServerFake(
    "ChangedOnRestartServer",
    "ExitsBetweenCallsServer's `exit`; started again after it (stdio or HTTP with --state-dir, which remembers the "
    "exit), lists `lookup` changed (description, schema, annotations) and never says so (2026-07-28: ttlMs an hour)",
    _changed_on_restart,
)


ARRIVED = "exit-arrived"
"""The file LossMidListingServer leaves in its state directory once its `exit` call has arrived (and waits)."""

WARMING = "listed-after-restart"
"""The file LossMidListingServer leaves once its restarted process has answered tools/list with an error."""

EXIT_AT_LISTING = types.Tool(
    name="exit",
    description="Holds its call until a resources/list arrives, then ends the process (neither is ever answered).",
    input_schema=TEXT_SCHEMA,
)
"""LossMidListingServer's tool that ends the process while a listing of its catalog is in flight."""


def _loss_mid_listing() -> FakeServer:
    exiting = {"armed": False}

    def marked(name: str) -> bool:
        return fake.state_dir is not None and (fake.state_dir / name).exists()

    def mark(name: str) -> None:
        if fake.state_dir is not None:
            fake.state_dir.mkdir(parents=True, exist_ok=True)
            (fake.state_dir / name).touch()

    def catalog() -> list[types.Tool]:
        if marked(EXITED) and not marked(WARMING):
            mark(WARMING)
            raise MCPError(types.INTERNAL_ERROR, "the catalog is still loading")
        return [ECHO, EXIT_AT_LISTING, LOOKUP_AFTER if marked(EXITED) else LOOKUP_BEFORE]

    async def lookup(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return text("found")

    async def exit_at_listing(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        if not fake.served or fake.state_dir is None:
            return error("`exit` only exits a server running as a subprocess with a state directory")
        exiting["armed"] = True
        mark(ARRIVED)
        await anyio.sleep_forever()  # The process ends at the next resources/list, this call still unanswered.
        raise AssertionError("unreachable")

    async def list_resources(ctx: Context, params: Any) -> types.ListResourcesResult:
        if exiting["armed"]:
            mark(EXITED)  # Read by the next start: its catalog differs.
            os._exit(0)  # Mid-listing: tools/list was answered, resources/list never is, nor the held exit call.
        return types.ListResourcesResult(resources=[])

    fake = FakeServer(
        "LossMidListingServer",
        catalog,
        {"echo": echo, "lookup": lookup, "exit": exit_at_listing},
        ttl_ms=[LONG_TTL_MS],
        on_list_resources=list_resources,
    )
    return fake


LossMidListingServer = ServerFake(
    "LossMidListingServer",
    "an `exit` call is held until a resources/list arrives, and the process ends then, while a listing is in flight "
    "(stdio or HTTP with --state-dir); started again, its first tools/list answers an error and later ones list "
    "`lookup` changed, never announced (2026-07-28: ttlMs an hour)",
    _loss_mid_listing,
)
