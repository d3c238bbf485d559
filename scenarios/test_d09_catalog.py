"""Decision 9 (and 18's MCP half): a session's catalog is pinned; changes are recorded, never applied.

D9.1: the pinned hashes have to be spec ``definition_sha256`` to the bit (sha256, as 64 lower-case hex digits, of the
RFC 8785 canonical JSON of the wire definition's ``DEFINITION_FIELDS``, a field the tool lacks as null), judged on
definitions whose RFC 8785 form differs from sorted-keys JSON (float bounds, non-BMP property names, control
characters) in-memory, over stdio and over streamable HTTP. A definition without that form (an integer bound no
double holds, say) has no hash and is not advertised; the reference records it as a dropped entry.
D9.1's session starts at advertise or at the run's first step, whichever comes first: started each way (advertised;
a first step calling an MCP, a builtin or an unknown tool; advertised, then a builtin step), a session keeps what it
pinned when another run changes the catalogs afterwards.

D9.2: notices are counted, not timed. A burst is sent while the instance clock stands still, as a coarse clock
would, and each notice is still one entry; both eras in-memory, 2026-07-28 over stdio and streamable HTTP.
(``test_d09_lifecycle``: a notice sent while the connection is set up; ``test_d09_mid_session``: a flood during a
call in flight.)

D9.4 here: a changed tool keeps its pin and is never called, and a recorded tools/list_changed makes the listing
stale at once for an IDEMPOTENT READ_ONLY read inside its max age. ``test_d09_mid_session`` and
``test_d09_freshness`` judge when a listing may be reused.

D18.2 replays the catalog history (added and changed set a hash, withdrawn removes) up to each session's
``as_of_seq``, over catalogs with changes and withdrawals and over every page of a paginated one. (The reference
keeps the pin in ``mcp_session_pins`` and the history in ``mcp_catalog_history``.)
"""

from __future__ import annotations

import contextlib

import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import FLOOD_COUNT, PAGE_SIZE, SERVERS, http_server, stdio_command
from toolproof.spec import (
    Advertisement,
    CanonicalJsonError,
    CatalogChange,
    CatalogChangeKind,
    Disposition,
    IdempotencyClass,
    InvocationStatus,
    McpClassification,
    McpServerConfig,
    McpTransport,
    ReasonCode,
    Risk,
    SideEffect,
    Success,
    definition_sha256,
    mcp_tool_name,
    replay_history,
)

from ._harness import Harness, Session, describe
from ._mcp import ERAS, READ, eventually, memory, notified, of_kind, reached, wire_hashes


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


_SESSION_STARTS = ("advertise", "mcp-step", "builtin-step", "refused-step", "advertise-then-builtin-step")
"""How a run's session starts: advertised, or a first step calling an MCP tool, a builtin tool or an unknown one (a
refused call), or advertised and then a builtin step."""


async def _start(session: Session, how: str) -> None:
    if how.startswith("advertise"):
        await session.advertise()
    if how == "mcp-step":
        await session.call("mcp.grow.echo", {"text": "first"})
    elif how.endswith("builtin-step"):
        await session.call("files.echo", {"text": "first"})
    elif how == "refused-step":
        await session.call("files.nowhere", {"text": "first"})


@pytest.mark.rules("D9.1")
@pytest.mark.parametrize("start", _SESSION_STARTS)
async def test_a_session_pins_when_it_starts_however_it_starts(harness: Harness, start: str) -> None:
    # run-1's session starts (advertised, or at its first step of any kind); then another run withdraws
    # mcp.rug.transfer and adds mcp.grow.extra_1. run-1 keeps what it pinned when it started.
    servers = [memory(harness, sid, fake) for sid, fake in (("rug", "RugPullServer"), ("grow", "GrowingCatalogServer"))]
    async with harness.open(EchoTool(harness.world), mcp_servers=[c for c, _ in servers]) as session:
        await _start(session, start)
        for name in ("mcp.rug.transfer", "mcp.grow.grow"):
            harness.success("D9.1", await session.call(name, {"text": "x"}, run_id="run-2"), f"run-2's {name}")
        for server_id in ("rug", "grow"):
            harness.expect("D9.1", await notified(session, server_id), f"{server_id}'s tools/list_changed unrecorded")
        names = (await session.advertise()).names()
        extra = await session.call("mcp.grow.extra_1", {"text": "x"})
    harness.expect(
        "D9.1",
        "mcp.rug.transfer" in names and "mcp.grow.extra_1" not in names,
        f"a session started by {start}, before another run changed the catalogs, advertises {sorted(names)}; it "
        "pinned mcp.rug.transfer and not mcp.grow.extra_1 when it started",
    )
    harness.expect(
        "D9.1",
        not isinstance(extra, Success),
        f"a session started by {start} before mcp.grow.extra_1 appeared called it: {describe(extra)}",
    )


@pytest.mark.rules("D9.1")
@pytest.mark.parametrize("transport", ["memory", *(pytest.param(t, marks=pytest.mark.slow) for t in ("stdio", "http"))])
async def test_definition_hashes_are_rfc_8785_on_canonical_edges(harness: Harness, transport: str) -> None:
    # Each tool holds one edge where Python's sort_keys JSON and RFC 8785 write a definition apart: a float bound
    # (10.0, 1e-7, -0.0), 1e21, non-BMP property names beside U+FB33, 2**53, control characters and U+2028; one
    # (no_canonical_form) has a bound no double holds, so no hash: it cannot be pinned.
    fake = "CanonicalEdgeServer"
    async with (
        reached(harness, "edge", fake, transport) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        pinned = _pinned(await session.advertise())
    expected: dict[str, str] = {}
    for tool in SERVERS[fake].build().list_tools():
        with contextlib.suppress(CanonicalJsonError):
            definition = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
            expected[mcp_tool_name("edge", tool.name)] = definition_sha256(definition)
    differing = sorted(name for name in expected.keys() | pinned.keys() if pinned.get(name) != expected.get(name))
    harness.expect(
        "D9.1",
        not differing,
        f"{fake} over {transport}: the pinned hashes of {differing} are not definition_sha256 (sha256 of the "
        f"RFC 8785 canonical JSON of the definition; none for a definition without that form, which is not "
        f"advertised): pinned {[pinned.get(n) for n in differing]}, expected {[expected.get(n) for n in differing]}",
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


BURSTS = {
    "flood": ("ListChangedFloodServer", "mcp.flood.flood", 1, FLOOD_COUNT),
    "grow": ("GrowingCatalogServer", "mcp.grow.grow", 2, 2),
}
"""server id -> (fake, tool, calls, notices the calls send): one call sending a burst, or two calls one notice each."""


async def _burst(harness: Harness, server_id: str, transport: str, protocol: str) -> None:
    # The instance clock never moves here: every notice of the burst arrives at one clock reading, as it does on a
    # coarse clock, and each is still one entry (D9.2: none lost, none counted twice).
    fake, tool, calls, sent = BURSTS[server_id]
    async with (
        reached(harness, server_id, fake, transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        for n in range(calls):
            harness.success("D9.2", await session.call(tool, {"text": f"burst {n}"}), f"{tool} #{n + 1}")

        async def count() -> int:
            return len(of_kind(await session.instance.catalog_history(), CatalogChangeKind.NOTIFIED, server_id))

        async def all_in() -> bool:
            return await count() >= sent

        await eventually(harness, all_in, f"the {sent} tools/list_changed {fake} sent to be recorded")
        # A round trip through the pipeline and the server: a notice counted twice would be in by now.
        harness.success("D9.2", await session.call(f"mcp.{server_id}.echo", {"text": "after"}), "echo")
        recorded = await count()
    harness.expect(
        "D9.2",
        recorded == sent,
        f"{fake} ({transport}, {protocol}), the instance clock frozen: {calls} {tool} call(s) sent {sent} "
        f"tools/list_changed; the catalog history recorded {recorded} notified entries (one per notice, none lost, "
        "none counted twice)",
    )


@pytest.mark.rules("D9.2")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("server_id", list(BURSTS))
async def test_every_notice_of_a_burst_is_recorded(harness: Harness, server_id: str, protocol: str) -> None:
    await _burst(harness, server_id, "memory", protocol)


@pytest.mark.rules("D9.2")
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_every_notice_of_a_burst_is_recorded_over_real_transports(harness: Harness, transport: str) -> None:
    await _burst(harness, "flood", transport, "2026-07-28")


async def _withdrawn(harness: Harness, config: McpServerConfig) -> None:
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D9.3", await session.call("mcp.rug.transfer", {"text": "first"}), "the first transfer")
        # A read may run on a fresh listing (D9.4) until the server's notice arrives: the second call waits for it.
        harness.expect("D9.3", await notified(session, "rug"), "RugPullServer's tools/list_changed was never recorded")
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


WRITES = McpClassification(
    side_effect=SideEffect.EXTERNAL_WRITE, risk=Risk.LOW, idempotency=IdempotencyClass.NON_IDEMPOTENT
)
"""A consequential classification that runs without approval: every call to such a server lists its catalog first."""


@pytest.mark.rules("D9.4")
async def test_changed_tool_keeps_its_pin_and_answers_unavailable(harness: Harness) -> None:
    config, fake = memory(harness, "drift", "SilentDriftServer", classification=WRITES)
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


@pytest.mark.rules("D9.4")
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_list_changed_notice_makes_the_next_read_list_again(harness: Harness, protocol: str) -> None:
    # An IDEMPOTENT READ_ONLY server and a max age the frozen clock never reaches: only the notice makes the
    # listing stale, and the read after it must see the withdrawal.
    config, fake = memory(harness, "rug", "RugPullServer", protocol=protocol, listing_max_age_s=3600.0)
    async with harness.open(mcp_servers=[config]) as session:
        harness.success("D9.4", await session.call("mcp.rug.transfer", {"text": "first"}), "the first transfer")
        harness.expect("D9.4", await notified(session, "rug"), "RugPullServer's tools/list_changed was never recorded")
        d = await session.call("mcp.rug.transfer", {"text": "second"})
    harness.expect(
        "D9.4",
        (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.UNAVAILABLE, ReasonCode.TOOL_WITHDRAWN),
        f"after the server's tools/list_changed was recorded, an idempotent read of the withdrawn mcp.rug.transfer "
        f"inside listing_max_age_s=3600 ({protocol}) was answered {describe(d)}: the notice must make the listing "
        "stale at once (expected UNAVAILABLE tool_withdrawn)",
    )
    harness.expect("D9.4", fake.log.count("tools/call transfer") == 1, f"the withdrawn tool was called: {fake.log}")


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
