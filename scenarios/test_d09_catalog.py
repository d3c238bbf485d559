"""Decision 9 (and 18's MCP half): a session's catalog is pinned; changes are recorded, never applied."""

from __future__ import annotations

import pytest

from toolproof.fakes.mcp import PAGE_SIZE, http_server, stdio_command
from toolproof.spec import (
    Advertisement,
    CatalogChange,
    CatalogChangeKind,
    Disposition,
    InvocationStatus,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    Success,
    mcp_tool_name,
    replay_history,
)

from ._harness import Harness, describe
from ._mcp import ERAS, READ, memory, notified, of_kind, wire_hashes


def _pinned(ad: Advertisement) -> dict[str, str]:
    return {t.name: t.definition_sha256 for t in ad.tools}


@pytest.mark.rules("D9.1")
async def test_session_pins_names_and_full_definition_hashes(harness: Harness) -> None:
    servers = [
        memory(harness, sid, fake)
        for sid, fake in (
            ("lying", "LyingAnnotationsServer"),
            ("drift", "SilentDriftServer"),
            ("pages", "PaginatedCatalogServer"),
        )
    ]
    expected = {
        mcp_tool_name(config.server_id, remote): sha
        for config, fake in servers
        for remote, sha in wire_hashes(fake).items()
    }
    async with harness.open(mcp_servers=[c for c, _ in servers]) as session:
        pinned = _pinned(await session.advertise())
    harness.expect(
        "D9.1",
        pinned == expected,
        f"pinned {pinned}; the servers' full definitions hash to {expected}",
    )


@pytest.mark.rules("D9.2")
@pytest.mark.parametrize("protocol", ERAS)
async def test_list_changed_is_recorded_and_not_applied(harness: Harness, protocol: str) -> None:
    servers = [
        memory(harness, sid, fake, protocol=protocol)
        for sid, fake in (
            ("rug", "RugPullServer"),
            ("grow", "GrowingCatalogServer"),
            ("flood", "ListChangedFloodServer"),
        )
    ]
    async with harness.open(mcp_servers=[c for c, _ in servers]) as session:
        before = await session.advertise()
        for name in ("mcp.rug.transfer", "mcp.grow.grow", "mcp.flood.flood"):
            harness.success("D9.2", await session.call(name, {"text": "x"}), name)
        for config, _ in servers:
            harness.expect(
                "D9.2",
                await notified(session, config.server_id),
                f"tools/list_changed from {config.server_id} was not recorded in the catalog history",
            )
        await session.call("mcp.rug.echo", {"text": "after"})
        after = await session.advertise()
    harness.expect(
        "D9.2",
        _pinned(after) == _pinned(before),
        f"the session's advertisement changed mid-session: before {sorted(_pinned(before))}, after {sorted(_pinned(after))}",
    )


async def _withdrawn(harness: Harness, config: McpServerConfig) -> None:
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D9.3", await session.call("mcp.rug.transfer", {"text": "first"}), "the first transfer")
        d = await session.call("mcp.rug.transfer", {"text": "second"})
        harness.expect(
            "D9.3",
            (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.UNAVAILABLE, ReasonCode.TOOL_WITHDRAWN),
            f"a call to the withdrawn mcp.rug.transfer was answered {describe(d)}",
        )
        ad = await session.advertise()
        harness.expect(
            "D9.3", "mcp.rug.transfer" in ad.names(), f"the withdrawn tool left the advertisement: {ad.names()}"
        )


@pytest.mark.rules("D9.3")
@pytest.mark.parametrize("protocol", ERAS)
async def test_withdrawn_tool_stays_advertised_and_answers_unavailable(harness: Harness, protocol: str) -> None:
    config, fake = memory(harness, "rug", "RugPullServer", protocol=protocol)
    await _withdrawn(harness, config)
    harness.expect("D9.3", fake.log.count("tools/call transfer") == 1, f"the withdrawn tool was called: {fake.log}")


@pytest.mark.rules("D9.3")
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_withdrawn_tool_over_real_transports(harness: Harness, transport: str) -> None:
    if transport == "stdio":
        command = stdio_command("RugPullServer")
        await _withdrawn(
            harness,
            McpServerConfig(server_id="rug", transport=McpTransport.STDIO, command=command, classification=READ),
        )
        return
    async with http_server("RugPullServer") as url:
        await _withdrawn(
            harness, McpServerConfig(server_id="rug", transport=McpTransport.HTTP, url=url, classification=READ)
        )


@pytest.mark.rules("D9.4")
async def test_changed_tool_keeps_its_pin_and_answers_unavailable(harness: Harness) -> None:
    config, fake = memory(harness, "drift", "SilentDriftServer")
    original = wire_hashes(fake)["lookup"]
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D9.4", await session.call("mcp.drift.lookup", {"text": "k"}), "the first lookup")
        d = await session.call("mcp.drift.lookup", {"text": "k", "token": "secret"})
        harness.expect(
            "D9.4",
            (d.status, getattr(d, "reason_code", None))
            == (InvocationStatus.UNAVAILABLE, ReasonCode.TOOL_DEFINITION_CHANGED),
            f"a call to the silently changed mcp.drift.lookup was answered {describe(d)}",
        )
        pinned = _pinned(await session.advertise())
    harness.expect("D9.4", pinned.get("mcp.drift.lookup") == original, f"the pin changed: {pinned}")
    harness.expect("D9.4", fake.log.count("tools/call lookup") == 1, f"the changed tool was called: {fake.log}")


@pytest.mark.rules("D9.5")
async def test_silent_change_is_recorded_at_the_next_listing(harness: Harness) -> None:
    config, fake = memory(harness, "drift", "SilentDriftServer")
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        harness.success("D9.5", await session.call("mcp.drift.lookup", {"text": "k"}), "the lookup")
        changed = wire_hashes(fake)["lookup"]
        await session.advertise("run-2")  # A new session lists the catalog.
        history = await session.catalog_history()
    recorded = [c.definition_sha256 for c in of_kind(history, CatalogChangeKind.CHANGED, "drift")]
    harness.expect(
        "D9.5",
        changed in recorded,
        f"the silent change of lookup (now {changed[:12]}) was not recorded; changes recorded: {recorded}",
    )


HISTORIES = {
    "plain": ("PlainServer", ()),
    "growing": ("GrowingCatalogServer", ()),
    "drifted": ("SilentDriftServer", ("lookup",)),
    "rug-pulled": ("RugPullServer", ("transfer",)),
    "paginated": ("PaginatedCatalogServer", ()),
    "grown-twice": ("GrowingCatalogServer", ("grow", "grow")),
}
"""A fake and the calls that move its catalog: histories of one tool added, two, two then one changed, two then one
withdrawn (with its notification), five, and two then two more added (with theirs): one record to six."""


@pytest.mark.rules("D9.5")
@pytest.mark.parametrize("history", list(HISTORIES))
async def test_fresh_instance_records_nothing_for_an_unchanged_catalog(harness: Harness, history: str) -> None:
    fake_name, calls = HISTORIES[history]
    config, fake = memory(harness, "srv", fake_name)
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise()
        for tool in calls:
            harness.success("D9.5", await session.call(f"mcp.srv.{tool}", {"text": "x"}), tool)
        await session.advertise("run-2")  # Lists the catalog again: what the calls changed is recorded now.
        before = [c for c in await session.catalog_history() if c.server_id == "srv"]
    current = {mcp_tool_name("srv", remote): sha for remote, sha in wire_hashes(fake).items()}
    replayed = replay_history(before, before[-1].seq) if before else {}
    stale = sorted(n for n in replayed.keys() | current.keys() if replayed.get(n) != current.get(n))
    harness.expect(
        "D9.5",
        not stale,
        f"after run-2's listing, the history ({len(before)} records) disagrees with the catalog the server lists on "
        f"{stale}: a change was not recorded when the adapter listed",
    )
    harness.log.append("close the instance; open a fresh one over the same store and the same, unchanged, server")
    async with harness.open(mcp_servers=[config]) as session:
        await session.advertise("run-3")  # The fresh adapter lists the catalog.
        after = [c for c in await session.catalog_history() if c.server_id == "srv"]
    added = [f"{c.kind.value} {c.registered_name}" for c in after if c not in before]
    harness.expect(
        "D9.5",
        after == before,
        f"over a history of {len(before)} records, a fresh instance listing the unchanged catalog {sorted(current)} recorded "
        f"{added}; the server changed nothing",
    )


@pytest.mark.rules("D9.6")
@pytest.mark.parametrize("new_run", ["run-2", "run-0", "a-run", "run-1-later"])  # Sorting after and before run-1.
async def test_new_session_sees_the_current_catalog(harness: Harness, new_run: str) -> None:
    servers = [memory(harness, sid, fake) for sid, fake in (("rug", "RugPullServer"), ("grow", "GrowingCatalogServer"))]
    async with harness.open(mcp_servers=[c for c, _ in servers]) as session:
        await session.advertise()
        for name in ("mcp.rug.transfer", "mcp.grow.grow"):
            harness.success("D9.6", await session.call(name, {"text": "x"}), name)
        names = (await session.advertise(new_run)).names()
    harness.expect(
        "D9.6",
        "mcp.rug.transfer" not in names and "mcp.grow.extra_1" in names,
        f"a session ({new_run}) started after the changes advertises {names}",
    )


async def _paged_catalog(
    harness: Harness, protocol: str
) -> tuple[set[str], list[Advertisement], list[CatalogChange], dict[str, Disposition]]:
    """Two sessions of PaginatedCatalogServer, the catalog reordered between them: the whole catalog's names, what
    the sessions advertised, the history, and each call's disposition by name (echo's after it moved from the first
    page to the last)."""
    config, fake = memory(harness, "pages", "PaginatedCatalogServer", protocol=protocol)
    everything = {mcp_tool_name("pages", remote) for remote in wire_hashes(fake)}
    async with harness.open(mcp_servers=[config]) as session:
        first = await session.advertise()
        # search and export are listed on the second and third pages; shuffle reverses the order without changing
        # the catalog, so echo, first on the first page, is last on the last one when it is called.
        calls = {
            name: await session.call(f"mcp.pages.{name}", {"text": "x"})
            for name in ("search", "export", "shuffle", "echo")
        }
        second = await session.advertise("run-2")
        history = await session.catalog_history()
    return everything, [first, second], history, calls


@pytest.mark.rules("D9.6")
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_session_sees_every_page_of_the_catalog(harness: Harness, protocol: str) -> None:
    everything, sessions, _, calls = await _paged_catalog(harness, protocol)
    for ad in sessions:
        harness.expect(
            "D9.6",
            set(ad.names()) == everything,
            f"session {ad.run_id} of a server listing its catalog in pages of {PAGE_SIZE} advertises "
            f"{sorted(ad.names())}, not the whole catalog {sorted(everything)}",
        )
    for name in ("search", "export"):
        harness.success("D9.6", calls[name], f"mcp.pages.{name}, listed on a later page,")


@pytest.mark.rules("D9.3")
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_tool_moved_to_a_later_page_is_not_withdrawn(harness: Harness, protocol: str) -> None:
    _, _, history, calls = await _paged_catalog(harness, protocol)
    harness.expect(
        "D9.3",
        isinstance(calls["echo"], Success),
        f"mcp.pages.echo, still listed (moved from the first page to the last), was answered {describe(calls['echo'])}",
    )
    withdrawn = [c.remote_name for c in of_kind(history, CatalogChangeKind.WITHDRAWN, "pages")]
    harness.expect(
        "D9.3", withdrawn == [], f"tools the server still lists, on a later page, were recorded withdrawn: {withdrawn}"
    )


@pytest.mark.rules("D18.2")
@pytest.mark.parametrize("protocol", ERAS)
async def test_history_of_a_paginated_catalog_answers_the_whole_catalog(harness: Harness, protocol: str) -> None:
    everything, sessions, history, _ = await _paged_catalog(harness, protocol)
    for ad in sessions:
        replayed = replay_history(history, ad.as_of_seq)
        harness.expect(
            "D18.2",
            replayed == _pinned(ad) and set(replayed) == everything,
            f"session {ad.run_id}: the history up to seq {ad.as_of_seq} answers {sorted(replayed)}, the pin says "
            f"{sorted(_pinned(ad))}, the catalog (every page) is {sorted(everything)}",
        )


@pytest.mark.rules("D18.2")
async def test_advertisement_is_answered_by_pin_and_catalog_history(harness: Harness) -> None:
    servers = [memory(harness, sid, fake) for sid, fake in (("rug", "RugPullServer"), ("drift", "SilentDriftServer"))]
    async with harness.open(mcp_servers=[c for c, _ in servers]) as session:
        first = await session.advertise()
        for name in ("mcp.rug.transfer", "mcp.drift.lookup"):
            harness.success("D18.2", await session.call(name, {"text": "x"}), name)
        second = await session.advertise("run-2")
        history = await session.catalog_history()
        tables = await session.instance.store_tables()
    harness.expect("D18.2", "tool_registry_snapshots" not in tables, f"the store has a snapshot table: {tables}")
    for ad in (first, second):
        replayed = replay_history(history, ad.as_of_seq)
        harness.expect(
            "D18.2",
            replayed == _pinned(ad),
            f"session {ad.run_id}: the history up to seq {ad.as_of_seq} answers {replayed}, the pin says {_pinned(ad)}",
        )
