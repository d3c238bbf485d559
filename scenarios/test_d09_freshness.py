"""Decision 9: when a listing stops being fresh before its max age (D9.4), and a change it hid is recorded (D9.5).

Fresh, as D9.4 reads it: only an IDEMPOTENT READ_ONLY call may run on the server's last listing, and only while that
listing is younger than the server's ``listing_max_age_s`` (McpServerConfig, default 30 s; 0 never reuses one; a
listing exactly that old is stale), counted on the instance clock from when the listing began. The server's ttlMs,
where its era sends one (2026-07-28: the shortest of its pages, in milliseconds), shortens that age and never
lengthens it: a listing exactly the ttlMs old is stale, and a ttlMs of 0 is stale at once. cacheScope changes
nothing, since only the connection that listed reuses a listing. A ttlMs says how long a listing may be kept, not
that the tools stay as listed, so it lets no consequential call reuse a listing. A tools/list_changed from the server
makes the listing stale at once: a notice in the catalog history has already made every listing before it stale,
one in flight included. So does a lost connection, so the first read once a reconnect is due (D7.6) reconnects and
lists again. A silent change thus reaches at most the idempotent reads of one max age.

Judged here: an idempotent read from a 2026-07-28 server under a ttlMs above the max age (inside, at and past the
age), under one below it (inside, at and past the ttlMs), under 0, and under two pages of different ttlMs in either
order (``TTL_CASES``); a consequential call of each classification inside a positive ttlMs; an idempotent read 1 s
after a listing during which the server sent a notice, in both eras; and the first idempotent read once a reconnect
is due, inside the max age, after a lost stdio connection whose restarted server lists a changed tool, in both eras
(a process has to exit and start again, so over stdio, marked slow); and, in both eras over stdio, a listing in flight
when the connection is lost (a new session's tools/list answered, its resources/list cut off with a call the server
held), the server reconnected and its first listing answering an error: the next idempotent read must not run on
the listing that began before the loss. The rest is in-memory. D9.5: a change found by
an idempotent read once a ttlMs shorter than the max age has passed.
"""

from __future__ import annotations

import anyio
import pytest

from toolproof.fakes.mcp import ARRIVED, EXITED, HOLD_S, MID_LISTING_NOTICE, TTL_MS, stdio_command, ttl_drift_server
from toolproof.spec import (
    CatalogChange,
    CatalogChangeKind,
    Disposition,
    InvocationStatus,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    Success,
)

from ._bounds import bound
from ._harness import Harness, describe
from ._listing import (
    CONSEQUENTIAL,
    INSIDE_AGE_S,
    classified,
    definition_changed,
    drift_session,
    judge_second_calls,
)
from ._mcp import BOUND_S, CAP_S, ERAS, READ, memory, notified, of_kind

MODERN = "2026-07-28"
"""The era whose tools/list carries ttlMs."""

TTL_CASES: dict[str, tuple[float, tuple[int, ...], float, bool]] = {
    "ttl-past-the-age": (30.0, (60_000,), 45.0, True),
    "ttl-past-the-age-at-the-age": (30.0, (60_000,), 30.0, True),
    "ttl-past-the-age-inside-it": (30.0, (60_000,), 29.0, False),
    "past-the-ttl": (30.0, (5_000,), 10.0, True),
    "at-the-ttl": (30.0, (5_000,), 5.0, True),
    "inside-the-ttl": (30.0, (5_000,), 4.5, False),
    "zero-ttl": (30.0, (0,), 1.0, True),
    "shortest-page-last": (30.0, (60_000, 5_000), 10.0, True),
    "shortest-page-first": (30.0, (5_000, 60_000), 10.0, True),
}
"""listing_max_age_s, the ttlMs of each page of tools/list, the instance-clock seconds from an idempotent read to the
next, and whether the second must list again: the listing is fresh while younger than the max age shortened by the
shortest ttlMs (in milliseconds), so a ttlMs above the age changes nothing and one below it is the bound. Inside the
bound a read may reuse the listing (and call the changed tool) or list again; at it and past it, it lists again."""


def _bound_s(case: str) -> float:
    max_age_s, ttls, _, _ = TTL_CASES[case]
    return min(max_age_s, min(ttls) / 1000.0)


async def _ttl_session(harness: Harness, rule: str, case: str) -> tuple[Disposition, list[CatalogChange]]:
    """An IDEMPOTENT READ_ONLY TtlDriftServer sending the case's ttlMs: ``lookup`` called (and changed silently by
    the server), the clock moved, ``lookup`` called again: its disposition, and the catalog history."""
    max_age_s, ttls, advance_s, _ = TTL_CASES[case]
    config, _ = memory(
        harness, "ttl", "TtlDriftServer", protocol=MODERN, built=ttl_drift_server(*ttls), listing_max_age_s=max_age_s
    )
    harness.log.append(f"TtlDriftServer's tools/list: {len(ttls)} page(s), ttlMs {list(ttls)}")
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        harness.success(rule, await session.call("mcp.ttl.lookup", {"text": "k"}), "the first mcp.ttl.lookup")
        session.advance(advance_s)
        second = await session.call("mcp.ttl.lookup", {"text": "k"})
        history = await session.catalog_history()
    return second, history


def _where(case: str) -> str:
    max_age_s, ttls, advance_s, _ = TTL_CASES[case]
    return (
        f"an IDEMPOTENT READ_ONLY server ({MODERN}) listing_max_age_s={max_age_s:g} answering tools/list with ttlMs "
        f"{list(ttls)} (pages), the clock moved {advance_s:g} s between the calls"
    )


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("case", list(TTL_CASES))
async def test_an_idempotent_read_lists_again_once_the_servers_ttl_or_the_max_age_passed(
    harness: Harness, case: str
) -> None:
    second, _ = await _ttl_session(harness, "D9.4", case)
    _, _, advance_s, must_list = TTL_CASES[case]
    where = _where(case)
    if must_list:
        harness.expect(
            "D9.4",
            definition_changed(second),
            f"the second mcp.ttl.lookup, after the server silently changed it, was answered {describe(second)} "
            f"({where}): a listing {advance_s:g} s old is stale (fresh for {_bound_s(case):g} s: the max age, "
            "shortened never lengthened by the shortest ttlMs), so the read lists again; expected UNAVAILABLE "
            "tool_definition_changed",
        )
    else:
        harness.expect(
            "D9.4",
            definition_changed(second) or isinstance(second, Success),
            f"the second mcp.ttl.lookup was answered {describe(second)} ({where}): inside the listing's "
            f"{_bound_s(case):g} s a read may run on it (SUCCEEDED) or list again (UNAVAILABLE "
            "tool_definition_changed), nothing else",
        )


@pytest.mark.rules("D9.5")
@pytest.mark.parametrize(
    "case", [c for c, (age, ttls, _, must) in TTL_CASES.items() if must and min(ttls) < age * 1000]
)
async def test_a_silent_change_is_recorded_once_the_servers_ttl_passed(harness: Harness, case: str) -> None:
    _, history = await _ttl_session(harness, "D9.5", case)
    changed = [c.remote_name for c in of_kind(history, CatalogChangeKind.CHANGED, "ttl")]
    harness.expect(
        "D9.5",
        "lookup" in changed,
        f"{_where(case)}: the read past the server's ttlMs lists the catalog, and the silent change of lookup was "
        f"not recorded then; changes recorded: {changed}",
    )


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("classification", list(CONSEQUENTIAL))
async def test_a_consequential_call_lists_again_inside_the_servers_ttl(harness: Harness, classification: str) -> None:
    _, second, _, _ = await drift_session(
        harness,
        "memory",
        MODERN,
        classification=classified(classification),
        advance_s=1.0,
        built=ttl_drift_server(),
    )
    judge_second_calls(
        harness,
        second,
        f"memory, {MODERN}, {classification}, tools/list answered with ttlMs {TTL_MS} and the clock moved 1 s "
        f"between the calls, inside listing_max_age_s={INSIDE_AGE_S:g}: the server's ttl is no leave to reuse a "
        "listing for a consequential call",
    )


MID_LISTING_AGE_S = 30.0
"""NoticeMidListingServer's listing_max_age_s: the scenario moves past it once, to make the session list again."""


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_notice_while_a_listing_is_in_flight_makes_that_listing_stale(harness: Harness, protocol: str) -> None:
    config, fake = memory(
        harness, "mid", "NoticeMidListingServer", protocol=protocol, listing_max_age_s=MID_LISTING_AGE_S
    )
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        harness.success("D9.4", await session.call("mcp.mid.lookup", {"text": "k"}), "the first mcp.mid.lookup")
        session.advance(MID_LISTING_AGE_S + 1.0)
        harness.log.append(
            f"the listing is past its max age: the next read lists, and the server changes lookup, sends "
            f"tools/list_changed and holds its answer {HOLD_S:g} s (times the load factor) before answering the old catalog"
        )
        listed = await session.call("mcp.mid.lookup", {"text": "k"})
        harness.log.append(f"that read (its listing answered the old catalog) was answered {describe(listed)}")
        # Checked before waiting for the notice: a read that did not list would leave the server nothing to send.
        harness.expect(
            "D9.4",
            MID_LISTING_NOTICE in fake.log,
            f"the read {MID_LISTING_AGE_S + 1.0:g} s after the last listing, past listing_max_age_s="
            f"{MID_LISTING_AGE_S:g} ({protocol}), was answered {describe(listed)} without listing the catalog again "
            f"(the server saw no tools/list after its first lookup call): a listing that old is stale",
        )
        harness.expect(
            "D9.4", await notified(session, "mid"), "NoticeMidListingServer's tools/list_changed was never recorded"
        )
        session.advance(1.0)
        third = await session.call("mcp.mid.lookup", {"text": "k"})
    harness.expect(
        "D9.4",
        definition_changed(third),
        f"a read 1 s after a listing during which the server sent tools/list_changed ({protocol}, "
        f"listing_max_age_s={MID_LISTING_AGE_S:g}) was answered {describe(third)}: the notice, recorded, made that "
        f"listing stale though it was in flight, so the read lists again and finds lookup changed (expected "
        f"UNAVAILABLE tool_definition_changed); the server's log: {fake.log}",
    )


def _stateful_stdio_server(harness: Harness, server_id: str, fake: str, protocol: str) -> McpServerConfig:
    """A fake over stdio that keeps its state across restarts in ``<server_id>-state``, read-classified, its listings
    fresh for ``INSIDE_AGE_S``."""
    state = harness.directory / f"{server_id}-state"
    harness.log.append(
        f"mcp server {server_id}: {fake} over stdio, {protocol}, state in {state}, listing_max_age_s={INSIDE_AGE_S:g}"
    )
    return McpServerConfig(
        server_id=server_id,
        transport=McpTransport.STDIO,
        command=stdio_command(fake, state_dir=state),
        classification=READ,
        protocol=protocol,
        listing_max_age_s=INSIDE_AGE_S,
    )


@pytest.mark.rules("D9.4")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_the_first_read_once_a_reconnect_is_due_lists_the_restarted_catalog(
    harness: Harness, protocol: str
) -> None:
    config = _stateful_stdio_server(harness, "restart", "ChangedOnRestartServer", protocol)
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        harness.success("D9.4", await session.call("mcp.restart.exit", {"text": "now"}), "mcp.restart.exit")
        gone = await session.call("mcp.restart.echo", {"text": "gone?"})  # The process exits as it arrives.
        harness.expect("D9.4", not isinstance(gone, Success), f"mcp.restart.echo after exit: {describe(gone)}")
        session.advance(CAP_S)  # D7.6: a reconnect is due this long after the loss, well inside the max age.
        first = await session.call("mcp.restart.lookup", {"text": "k"})
        then = await session.call("mcp.restart.echo", {"text": "back"})
    where = f"stdio, {protocol}, {CAP_S:g} s after the connection was lost, inside listing_max_age_s={INSIDE_AGE_S:g}"
    harness.expect(
        "D9.4",
        definition_changed(first),
        f"the first idempotent read once a reconnect was due ({where}) was answered {describe(first)}: the lost "
        "connection made the last listing stale, so the read reconnects and lists the restarted server's catalog, "
        "in which lookup changed (expected UNAVAILABLE tool_definition_changed)",
    )
    harness.success("D9.4", then, f"mcp.restart.echo, unchanged by the restart, after it ({where})")


@pytest.mark.rules("D9.4")
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_listing_in_flight_when_the_connection_is_lost_is_never_reused(harness: Harness, protocol: str) -> None:
    config = _stateful_stdio_server(harness, "held", "LossMidListingServer", protocol)
    state = harness.directory / "held-state"  # Where the fake records what it saw (_stateful_stdio_server's).
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        harness.success("D9.4", await session.call("mcp.held.lookup", {"text": "k"}), "the first mcp.held.lookup")
        exited: list[Disposition] = []
        async with anyio.create_task_group() as group:

            async def exit_call() -> None:
                exited.append(await session.call("mcp.held.exit", {"text": "now"}))

            group.start_soon(exit_call)
            # A bound on waiting for the server to hold the call, never a claim about how long it took.
            with anyio.move_on_after(bound(harness, BOUND_S, "the server to receive mcp.held.exit")):
                while True:
                    if (state / ARRIVED).exists():
                        break
                    await anyio.sleep(0.02)
            if not (state / ARRIVED).exists():
                harness.fail("D9.4", "mcp.held.exit, an idempotent read of a live server, never reached the server")
            harness.log.append("the server holds mcp.held.exit; a new session (run-2) lists the catalog meanwhile")
            # The new session's listing: tools/list answered, then the process ends as resources/list arrives, the
            # held call cut off with it, so the loss is found while that listing is in flight.
            await session.advertise("run-2")
        harness.log.append(f"mcp.held.exit was answered {describe(exited[0]) if exited else 'nothing'}")
        if not (state / EXITED).exists():
            # The server ends its process at the first resources/list after the held call: a new session's listing
            # that asks none stages no loss mid-listing, and leaves this scenario nothing to judge.
            harness.log.append("the new session's listing asked no resources/list: no loss was staged mid-listing")
            return
        session.advance(CAP_S)  # D7.6: a reconnect is due this long after the loss, well inside the max age.
        first = await session.call("mcp.held.lookup", {"text": "k"})
        harness.log.append(
            f"the first read once a reconnect was due (the restarted server answers that tools/list with an error) "
            f"was answered {describe(first)}"
        )
        then = await session.call("mcp.held.lookup", {"text": "k"})
    where = (
        f"stdio, {protocol}: the connection was lost while a new session's listing was in flight (tools/list "
        f"answered, resources/list not), {CAP_S:g} s later the server was reconnected and answered its first "
        f"tools/list with an error, inside listing_max_age_s={INSIDE_AGE_S:g}"
    )
    unavailable = (then.status, getattr(then, "reason_code", None)) == (
        InvocationStatus.UNAVAILABLE,
        ReasonCode.REMOTE_UNAVAILABLE,
    )
    harness.expect(
        "D9.4",
        definition_changed(then) or unavailable,
        f"the next idempotent read ({where}) was answered {describe(then)}: it ran on a listing that began before "
        "the connection was lost, which a lost connection makes stale, so it lists again and finds lookup changed "
        "(expected UNAVAILABLE tool_definition_changed, or remote_unavailable were the catalog still unlisted)",
    )
