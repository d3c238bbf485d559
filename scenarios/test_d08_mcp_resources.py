"""Decision 8: a server gets the synthetic read tool only when it has resources to read.

D8.9 is judged over every shape of a server's resources surface (``HAS_RESOURCES``): resources/list not answered,
answered empty, only a template (RFC 6570 URIs, read with a concrete URI), only resources, both, and a resource or a
template listed only on a later page. It is judged at
each listing, like any tool of the catalog: a server whose resources or templates appear or go after its first
listing gets, or loses, the tool in the next new session (``CHANGES``). Both eras in-memory; over stdio and
streamable HTTP (marked slow), the empty and the template-only shape in the handshake era and the changes in
2026-07-28.
"""

from __future__ import annotations

import pytest

from toolproof.fakes.mcp import PAGED_RESOURCE_URI, PUBLISHED_URI, TEMPLATE, TWIN_RESOURCE_URI
from toolproof.spec import READ_RESOURCE, Outcome, ReasonCode, Success

from ._harness import Harness, Session, describe
from ._mcp import ERAS, reached

HAS_RESOURCES = {
    "PlainServer": False,  # resources/list is not answered at all
    "EmptyResourcesServer": False,  # answered, with nothing (and no templates)
    "TemplateResourcesServer": True,  # no resource listed, one template
    "InjectingResourceServer": True,  # one resource listed, templates not answered
    "TwinNamesServer": True,  # a resource and a template
    "PagedResourcesServer": True,  # one resource, on the second page of resources/list
    "PagedTemplatesServer": True,  # no resource; one template, on the second page of resources/templates/list
}
"""Every shape of a server's resources surface, and whether it has resources to read (D8.9)."""

READABLE = {
    "TemplateResourcesServer": TEMPLATE.replace("{name}", "guide"),
    "TwinNamesServer": TWIN_RESOURCE_URI,
    "PagedResourcesServer": PAGED_RESOURCE_URI,
    "PagedTemplatesServer": TEMPLATE.replace("{name}", "guide"),
}
"""A URI each server with resources answers, to show the synthetic tool reads it."""


async def _judge(harness: Harness, fake: str, transport: str, protocol: str) -> None:
    expected = HAS_RESOURCES[fake]
    synthetic = f"mcp.res.{READ_RESOURCE}"
    async with (
        reached(harness, "res", fake, transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        if True:
            ad = await session.advertise()
            names = [t.name for t in ad.tools if t.remote_name is None]
            harness.expect(
                "D8.9",
                names == ([synthetic] if expected else []),
                f"{fake} ({transport}, {protocol}) {'has' if expected else 'has no'} resources; the session "
                f"advertised {names} as its synthetic read tool(s)",
            )
            uri = READABLE.get(fake, "file:///docs/guide")
            d = await session.call(synthetic, {"uri": uri})
    if expected:
        if fake in READABLE:
            harness.expect(
                "D8.9",
                isinstance(d, Success) and any(uri in e.text for e in d.content),
                f"{synthetic} of {fake} did not read {uri}: {describe(d)}",
            )
        return
    harness.expect(
        "D8.9",
        isinstance(d, Outcome) and d.reason_code is ReasonCode.UNKNOWN_TOOL,
        f"{synthetic}, which {fake} should not have, answered {describe(d)}; expected unknown_tool",
    )


@pytest.mark.rules("D8.9")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("fake", list(HAS_RESOURCES))
async def test_read_resource_is_advertised_only_for_a_server_with_resources(
    harness: Harness, fake: str, protocol: str
) -> None:
    await _judge(harness, fake, "memory", protocol)


@pytest.mark.rules("D8.9")
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("fake", ["EmptyResourcesServer", "TemplateResourcesServer"])
async def test_read_resource_follows_resources_over_real_transports(
    harness: Harness, fake: str, transport: str
) -> None:
    await _judge(harness, fake, transport, "legacy")


CHANGES = ("resource", "retract", "template", "retract")
"""ChangingResourcesServer's surface changed between sessions, each time by the session before: a resource appears,
all go, a template appears, all go (both directions, resources and templates)."""


async def _judge_session(harness: Harness, session: Session, offered: str, where: str) -> None:
    expected = offered in ("resource", "template")
    synthetic = f"mcp.res.{READ_RESOURCE}"
    names = [t.name for t in (await session.advertise()).tools if t.remote_name is None]
    harness.expect(
        "D8.9",
        names == ([synthetic] if expected else []),
        f"{where}: the server {'lists' if expected else 'no longer lists'} a resource or template, and the new "
        f"session {session.run_id} advertised {names} as its synthetic read tool(s) (judged at each listing)",
    )
    uri = PUBLISHED_URI if offered == "resource" else TEMPLATE.replace("{name}", "guide")
    d = await session.call(synthetic, {"uri": uri})
    if expected:
        harness.expect(
            "D8.9",
            isinstance(d, Success) and any(uri in e.text for e in d.content),
            f"{where}: {synthetic} of session {session.run_id} did not read {uri}: {describe(d)}",
        )
    else:
        harness.expect(
            "D8.9",
            isinstance(d, Outcome) and d.reason_code is ReasonCode.UNKNOWN_TOOL,
            f"{where}: {synthetic}, which session {session.run_id} should not have, answered {describe(d)}; "
            "expected unknown_tool",
        )


async def _changing(harness: Harness, transport: str, protocol: str) -> None:
    async with (
        reached(harness, "res", "ChangingResourcesServer", transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as first,
    ):
        where = f"ChangingResourcesServer ({transport}, {protocol}) before anything was published"
        await _judge_session(harness, first, "nothing", where)
        session = first
        for n, change in enumerate(CHANGES, start=2):
            tool = "mcp.res.retract" if change == "retract" else "mcp.res.publish"
            harness.success("D8.9", await session.call(tool, {"text": change}), f"{tool} ({change})")
            where = f"ChangingResourcesServer ({transport}, {protocol}) after {tool} ({change})"
            session = Session(harness, first.instance, run_id=f"run-{n}")
            await _judge_session(harness, session, change, where)


@pytest.mark.rules("D8.9")
@pytest.mark.parametrize("protocol", ERAS)
async def test_read_resource_follows_resources_that_come_and_go(harness: Harness, protocol: str) -> None:
    await _changing(harness, "memory", protocol)


@pytest.mark.rules("D8.9")
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_read_resource_follows_resources_that_come_and_go_over_real_transports(
    harness: Harness, transport: str
) -> None:
    await _changing(harness, transport, "2026-07-28")
