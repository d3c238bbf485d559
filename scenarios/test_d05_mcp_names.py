"""Decision 5, MCP part: names come from the operator's server_id and one pinned normalization.

D5.6 is judged against spec ``normalize_remote_name`` in its order, over names built to tell orders apart
(NormalizationOrderServer: compatibility forms that are upper case, long names around the cap that start with a
non-letter), Unicode tricks and overlong names, in two instances over fresh stores, two sessions each: an order that
gives another name for some remote name (lower case before NFKC, the cut before ``t_``) fails it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import FakeServer
from toolproof.spec import (
    CatalogChangeKind,
    InvocationStatus,
    ReasonCode,
    Success,
    is_valid_name,
    mcp_tool_name,
    normalize_remote_name,
)

from ._harness import Harness, describe
from ._mcp import memory, of_kind


def _expected_names(server_id: str, fake: FakeServer) -> set[str]:
    """The names the pinned normalization gives the fake's catalog, collisions left out."""
    counts = Counter(normalize_remote_name(t.name) for t in fake.list_tools())
    return {mcp_tool_name(server_id, t.name) for t in fake.list_tools() if counts[normalize_remote_name(t.name)] == 1}


def _colliding(fake: FakeServer) -> set[str]:
    counts = Counter(normalize_remote_name(t.name) for t in fake.list_tools())
    return {t.name for t in fake.list_tools() if counts[normalize_remote_name(t.name)] > 1}


@pytest.mark.rules("D5.5")
async def test_server_id_comes_from_configuration_never_from_server_info(harness: Harness) -> None:
    plain, plain_fake = memory(harness, "plain", "PlainServer")
    imp, imp_fake = memory(harness, "imp", "ImpersonatorServer")
    async with harness.open(mcp_servers=[plain, imp]) as session:
        ad = await session.advertise()
        names = set(ad.names())
        harness.expect(
            "D5.5",
            names == _expected_names("plain", plain_fake) | _expected_names("imp", imp_fake),
            f"two servers, one impersonating the other's serverInfo.name, were advertised as {sorted(names)}",
        )
        for tool in ad.tools:
            harness.expect(
                "D5.5",
                tool.name.startswith(f"mcp.{tool.server_id}.") and tool.server_id in ("plain", "imp"),
                f"{tool.name} is advertised for server {tool.server_id!r}, not under its configured server_id",
            )
        await session.call("mcp.imp.exfiltrate", {"text": "x"})
        harness.expect(
            "D5.5",
            "tools/call exfiltrate" in imp_fake.log and not any("exfiltrate" in e for e in plain_fake.log),
            f"mcp.imp.exfiltrate did not reach the server configured as 'imp': imp={imp_fake.log} "
            f"plain={plain_fake.log}",
        )


@pytest.mark.rules("D5.6")
async def test_normalization_is_the_pinned_one_in_every_session(harness: Harness) -> None:
    servers = [
        memory(harness, sid, fake)
        for sid, fake in (
            ("tricks", "UnicodeTrickServer"),
            ("long", "OverlongNameServer"),
            ("order", "NormalizationOrderServer"),
        )
    ]
    expected = set().union(*(_expected_names(c.server_id, fake) for c, fake in servers))
    seen: list[set[str]] = []
    for _ in range(2):  # Two instances over fresh stores, two sessions each.
        async with harness.open(
            mcp_servers=[c for c, _ in servers], store_dir=harness.directory / f"s{len(seen)}"
        ) as session:
            for run in ("run-a", "run-b"):
                seen.append(set((await session.advertise(run)).names()))
    for names in seen:
        harness.expect(
            "D5.6",
            names == expected,
            f"advertised {sorted(names)}; the pinned normalization gives {sorted(expected)}",
        )


@pytest.mark.rules("D5.7")
async def test_names_that_normalize_alike_are_all_dropped_and_recorded(harness: Harness) -> None:
    servers = [
        memory(harness, sid, fake)
        for sid, fake in (
            ("mail", "CollidingNamesServer"),
            ("dup", "DuplicateNamesServer"),
            ("long", "OverlongNameServer"),
            ("order", "NormalizationOrderServer"),
        )
    ]
    async with harness.open(mcp_servers=[c for c, _ in servers]) as session:
        names = set((await session.advertise()).names())
        history = await session.catalog_history()
        for config, fake in servers:
            sid = config.server_id
            for remote in _colliding(fake):
                name = mcp_tool_name(sid, remote)
                harness.expect("D5.7", name not in names, f"{name} (from {remote!r}, which collides) was advertised")
                recorded = {c.remote_name for c in of_kind(history, CatalogChangeKind.DROPPED, sid)}
                harness.expect(
                    "D5.7", remote in recorded, f"dropping {remote!r} of {sid} was not recorded (dropped: {recorded})"
                )
        d = await session.call("mcp.mail.send_mail", {"text": "x"})
        harness.expect(
            "D5.7",
            (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
            f"a call to the dropped mcp.mail.send_mail was answered {describe(d)}",
        )
        mail = servers[0][1]
        harness.expect("D5.7", not any(e.startswith("tools/call") for e in mail.log), f"a dropped tool ran: {mail.log}")


@pytest.mark.rules("D5.8")
async def test_nothing_a_server_sends_lands_outside_its_prefix(harness: Harness) -> None:
    servers = [
        memory(harness, sid, fake)
        for sid, fake in (
            ("reserved", "ReservedDomainServer"),
            ("tricks", "UnicodeTrickServer"),
            ("long", "OverlongNameServer"),
            ("order", "NormalizationOrderServer"),
        )
    ]
    builtin = EchoTool(harness.world, name="workspace.write_text")
    async with harness.open(builtin, mcp_servers=[c for c, _ in servers]) as session:
        ad = await session.advertise()
        for tool in ad.tools:
            harness.expect(
                "D5.8",
                tool.name.startswith(f"mcp.{tool.server_id}.")
                and tool.name.count(".") == 2
                and is_valid_name(tool.name),
                f"{tool.name!r} (remote {tool.remote_name!r}) is outside mcp.{tool.server_id}. or the grammar",
            )
        harness.success("D5.8", await session.call("workspace.write_text", {"text": "mine"}), "the builtin")
        reserved = servers[0][1]
        harness.expect(
            "D5.8",
            bool(harness.world.executions) and "tools/call workspace.write_text" not in reserved.log,
            f"a call to the builtin workspace.write_text reached the server: {reserved.log}",
        )


MCP_LOOK_ALIKES = (
    "mcp.plain.Echo",
    "mcp.plain.ECHO",
    "mcp.plain.\uff45\uff43\uff48\uff4f",  # fullwidth
    "mcp.plain.\uff45cho",
    "mcp.plain.\u212fcho",  # script small e
    "mcp.plain.\u1d31cho",  # modifier capital E
    "mcp.plain.\U0001d41echo",  # mathematical bold e
    "mcp.plain.echo\n",
    "mcp.plain.echo ",
    "mcp.Plain.echo",
    "MCP.PLAIN.ECHO",
    "\uff4d\uff43\uff50.plain.echo",  # fullwidth "mcp"
    "mcp.plain.t_echo",
)
"""Proposed names outside the grammar, or not pinned, that decision 5's normalization (or NFKC, or lower case)
would carry to the pinned mcp.plain.echo."""


@pytest.mark.rules("D5.3")
@pytest.mark.profiles("mcp")
async def test_proposed_mcp_name_is_resolved_exactly_never_normalized(harness: Harness) -> None:
    plain, fake = memory(harness, "plain", "PlainServer")
    async with harness.open(mcp_servers=[plain]) as session:
        # A call by the pinned name first, so the look-alikes follow a session that reached the server (its own
        # verdict is D5.5's and D8.6's, not this rule's).
        pinned = await session.call("mcp.plain.echo", {"text": "x"})
        for name in MCP_LOOK_ALIKES:
            d = await session.call(name, {"text": "x"})
            harness.expect(
                "D5.3",
                (d.status, getattr(d, "reason_code", None)) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"a call to {name!r} (only mcp.plain.echo is pinned) was answered {describe(d)}",
            )
    calls = [e for e in fake.log if e.startswith("tools/call")]
    expected = ["tools/call echo"] if isinstance(pinned, Success) else []
    harness.expect("D5.3", calls == expected, f"the server saw {calls}; only the call by the pinned name may reach it")
