"""Decision 9 across sessions: each session's calls are judged against its own pin, whoever listed the catalog last.

A server's last listing is shared by every session of the instance (D9.4 lets an idempotent read reuse it while fresh),
and a pin is each session's own (D9.1, D9.6). So a listing that found a silent change, whoever made it, is compared
with the pin of the session that calls, never taken for that session's pin, and no session resolves another's pin.

D9.4, fresh or listed now: a session pins SilentDriftServer's catalog, calls one drifting tool (which changes it, each
hashed field alone and several at once: ``_listing.DRIFTS``), then the change is found by a listing someone else made:
a new session starting (advertise), a new session's first step (a call of ``echo``), a read of ``echo`` by the same
session past the max age, or, after a restart (a fresh instance over the same store and the same in-process server),
a new session starting there; then the first session calls the tool again, on that fresh listing. Both eras, an
IDEMPOTENT READ_ONLY server (the read runs on the fresh listing) and a consequential one (it lists again); a third
session pinned before the change and never called before it is judged alike. In-memory, and over stdio and
streamable HTTP (marked slow) for a new session's start. Judged by the server's own record of the calls it received
(its log, or the call log a subprocess fake keeps): the changed tool is never received again, and the call answers
UNAVAILABLE tool_definition_changed.

D9.6 and D9.1, sessions in either order: sessions ``old-a`` (pins, calls ``lookup``, which changes it) and
``old-b`` (pins before the change, never calls before it) and ``new`` (pins after it), then each calls ``lookup`` with
arguments only the changed definition accepts (``token``), the new session first or last, in one instance or after a
restart (the new session's pin and its first call in a fresh instance, where nothing was resolved yet, the old
sessions' calls after it). Both eras, read and consequential, in-memory, and over stdio and HTTP (slow) without the
restart (a subprocess fake does not outlive its instance). Judged by the server's record: it never receives the old
sessions' calls (D9.1: a session runs the definition it pinned, and only the changed one accepts those arguments);
``new`` succeeds and the server receives its call once (D9.6: it sees the current catalog); ``old-a`` and ``old-b``
answer tool_definition_changed (D9.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from toolproof.spec import Disposition, McpClassification, Success

from ._harness import Harness, Session, describe
from ._listing import DRIFTS, INSIDE_AGE_S, Calls, classified, definition_changed, logged_server
from ._mcp import ERAS, READ

KINDS: dict[str, McpClassification] = {
    "read": READ,
    "consequential": classified("external-write-non-idempotent"),
}
"""The server's classification: IDEMPOTENT READ_ONLY (a read may run on the last listing while it is fresh) and one
consequential classification (every call lists first)."""

STALE_AGE_S = 30.0
"""listing_max_age_s in the ``stale-own-read`` case; the scenario moves the clock past it once."""

FINDERS = {
    "new-session": "a new session (run-2) starting, by advertise",
    "new-session-step": "a new session's (run-2) first step, a call of echo",
    "stale-own-read": f"the same session's read of echo past listing_max_age_s={STALE_AGE_S:g}",
    "after-restart": "a new session (run-2) starting in a fresh instance over the same store and server",
}
"""Who lists the catalog after the silent change, before the first session calls the changed tool again."""


def _cells() -> list[object]:
    cells: list[object] = []
    for protocol in ERAS:
        for kind in KINDS:
            for finder in FINDERS:
                for tool in DRIFTS:
                    cells.append(
                        pytest.param("memory", protocol, kind, finder, tool, id=f"{protocol}-{kind}-{finder}-{tool}")
                    )
            for transport in ("stdio", "http"):
                cell = f"{protocol}-{kind}-new-session-lookup-{transport}"
                cells.append(
                    pytest.param(transport, protocol, kind, "new-session", "lookup", id=cell, marks=pytest.mark.slow)
                )
    return cells


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize(("transport", "protocol", "kind", "finder", "tool"), _cells())
async def test_a_change_another_listing_found_is_judged_against_the_callers_pin(
    harness: Harness, transport: str, protocol: str, kind: str, finder: str, tool: str
) -> None:
    name = f"mcp.drift.{tool}"
    age = STALE_AGE_S if finder == "stale-own-read" else INSIDE_AGE_S
    where = (
        f"{transport}, {protocol}, a {kind} server, listing_max_age_s={age:g}; the change found by {FINDERS[finder]}"
    )
    fields: dict[str, Any] = {"classification": KINDS[kind], "protocol": protocol, "listing_max_age_s": age}
    async with logged_server(harness, "drift", "SilentDriftServer", transport, **fields) as (config, calls):
        async with harness.open(mcp_servers=[config]) as session:
            await session.advertise()
            await session.advertise("run-3")  # Pins before the change, calls nothing before it.
            harness.success("D9.4", await session.call(name, {"text": "k"}, step_number=1), f"the first {name}")
            if finder == "new-session":
                await session.advertise("run-2")
            elif finder == "new-session-step":
                harness.success("D9.4", await session.call("mcp.drift.echo", {"text": "b"}, run_id="run-2"), "echo")
            elif finder == "stale-own-read":
                session.advance(STALE_AGE_S + 1.0)
                harness.success("D9.4", await session.call("mcp.drift.echo", {"text": "a"}, step_number=2), "echo")
            if finder != "after-restart":
                seconds = await _second_calls(session, name)
        if finder == "after-restart":
            harness.log.append("close the instance; open a fresh one over the same store and the same server")
            async with harness.open(mcp_servers=[config]) as session:
                await session.advertise("run-2")
                seconds = await _second_calls(session, name)
    received = calls().count(f"tools/call {tool}")
    for run, d in seconds.items():
        harness.expect(
            "D9.4",
            definition_changed(d),
            f"{name} in {run}, a session that pinned it before the server silently changed {DRIFTS[tool]}, was "
            f"answered {describe(d)} ({where}): the listing is compared with the caller's own pin, whoever made it, "
            "so expected UNAVAILABLE tool_definition_changed",
        )
    harness.expect(
        "D9.4",
        received == 1,
        f"the server received {name} {received} times ({where}): once before the change, and never again from the "
        f"sessions that pinned it before; the server's calls: {calls()}",
    )


async def _second_calls(session: Session, name: str) -> dict[str, Disposition]:
    """``name`` called again by the session that changed it and by the one that pinned before and never called it."""
    return {run: await session.call(name, {"text": "k"}, run_id=run, step_number=10) for run in ("run-1", "run-3")}


TOKEN = {"text": "k", "token": "t"}
"""Arguments only SilentDriftServer's changed ``lookup`` accepts (its definition before takes ``text`` alone)."""

ORDERS = {
    "new-last": ("old-a", "old-b", "new"),
    "new-first": ("new", "old-a", "old-b"),
}
"""The order in which the sessions call ``lookup`` after the change."""


def _order_cells() -> list[object]:
    cells: list[object] = []
    for protocol in ERAS:
        for kind in KINDS:
            for order in ORDERS:
                for restart in (False, True):
                    cell = f"{protocol}-{kind}-{order}" + ("-after-restart" if restart else "")
                    cells.append(pytest.param("memory", protocol, kind, order, restart, id=cell))
                for transport in ("stdio", "http"):
                    cell = f"{protocol}-{kind}-{order}-{transport}"
                    cells.append(pytest.param(transport, protocol, kind, order, False, id=cell, marks=pytest.mark.slow))
    return cells


@dataclass
class _Ordered:
    """What the three sessions met calling ``lookup`` after the change (``_ordered``)."""

    answered: dict[str, Disposition]
    """Session -> its call's disposition."""
    received: dict[str, int]
    """Session -> the calls of ``lookup`` the server received for it (its own record)."""
    calls: list[str]
    """Every call the server received, in order."""
    where: str


async def _ordered(
    harness: Harness, rule: str, transport: str, protocol: str, kind: str, order: str, restart: bool
) -> _Ordered:
    """Sessions old-a and old-b pin SilentDriftServer's catalog, old-a calls ``lookup`` (which changes it), session
    new pins after (in a fresh instance over the same store with ``restart``), then each calls ``lookup`` with
    ``TOKEN`` in ``ORDERS[order]`` (``rule``: the one the scenario judges, failed if old-a's first call fails)."""
    where = f"{transport}, {protocol}, a {kind} server, calls in the order {ORDERS[order]}" + (
        ", the new session pinned and the calls made in a fresh instance over the same store" if restart else ""
    )
    fields: dict[str, Any] = {"classification": KINDS[kind], "protocol": protocol, "listing_max_age_s": INSIDE_AGE_S}
    answered: dict[str, Disposition] = {}
    received: dict[str, int] = {}
    async with logged_server(harness, "drift", "SilentDriftServer", transport, **fields) as (config, calls):
        async with harness.open(mcp_servers=[config]) as session:
            await session.advertise("old-a")
            await session.advertise("old-b")
            harness.success(
                rule, await session.call("mcp.drift.lookup", {"text": "k"}, run_id="old-a"), "old-a's lookup"
            )
            if not restart:
                await session.advertise("new")
                await _in_order(session, order, calls, answered, received)
        if restart:
            harness.log.append("close the instance; open a fresh one over the same store and the same server")
            async with harness.open(mcp_servers=[config]) as session:
                await session.advertise("new")
                await _in_order(session, order, calls, answered, received)
        return _Ordered(answered, received, calls(), where)


async def _in_order(
    session: Session, order: str, calls: Calls, answered: dict[str, Disposition], received: dict[str, int]
) -> None:
    """Each session of ``ORDERS[order]`` calls ``lookup`` with ``TOKEN``: its disposition, and the calls of
    ``lookup`` the server received for it."""
    for run in ORDERS[order]:
        before = calls().count("tools/call lookup")
        answered[run] = await session.call("mcp.drift.lookup", TOKEN, run_id=run, step_number=10)
        received[run] = calls().count("tools/call lookup") - before


ORDER_CELLS = pytest.mark.parametrize(("transport", "protocol", "kind", "order", "restart"), _order_cells())


@pytest.mark.rules("D9.1")
@ORDER_CELLS
async def test_a_session_never_runs_a_definition_another_session_pinned(
    harness: Harness, transport: str, protocol: str, kind: str, order: str, restart: bool
) -> None:
    seen = await _ordered(harness, "D9.1", transport, protocol, kind, order, restart)
    # Only the changed definition accepts TOKEN: a call the server received ran that definition.
    for run in ("old-a", "old-b"):
        harness.expect(
            "D9.1",
            seen.received[run] == 0,
            f"{run}, which pinned lookup before the server changed it, called it with arguments only the changed "
            f"definition accepts, and the server received {seen.received[run]} call(s) of it ({seen.where}): a "
            f"session runs the definition it pinned, never one another session pinned; answered "
            f"{describe(seen.answered[run])}",
        )


@pytest.mark.rules("D9.6")
@ORDER_CELLS
async def test_a_session_started_after_a_change_calls_the_changed_definition(
    harness: Harness, transport: str, protocol: str, kind: str, order: str, restart: bool
) -> None:
    seen = await _ordered(harness, "D9.6", transport, protocol, kind, order, restart)
    new = seen.answered["new"]
    harness.expect(
        "D9.6",
        isinstance(new, Success) and seen.received["new"] == 1,
        f"the session that pinned lookup after the server changed it was answered {describe(new)}, and the server "
        f"received {seen.received['new']} call(s) of it ({seen.where}): that session sees the server's current "
        "catalog, and the tool is unchanged since it pinned it (expected SUCCEEDED, received once)",
    )


@pytest.mark.rules("D9.4")
@ORDER_CELLS
async def test_sessions_pinned_before_a_change_answer_it_changed_in_any_order(
    harness: Harness, transport: str, protocol: str, kind: str, order: str, restart: bool
) -> None:
    seen = await _ordered(harness, "D9.4", transport, protocol, kind, order, restart)
    for run in ("old-a", "old-b"):
        harness.expect(
            "D9.4",
            definition_changed(seen.answered[run]),
            f"{run}, which pinned lookup before the server changed it, was answered {describe(seen.answered[run])} "
            f"({seen.where}): expected UNAVAILABLE tool_definition_changed; the server's calls: {seen.calls}",
        )
