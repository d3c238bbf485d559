"""Decision 5 with decision 8: a server's prompts are named apart from every tool, so a tool and a prompt of one name
both stay available; prompts that normalize alike are both dropped.

D5.9 is judged on TwinNamesServer, which ships what a real fetch server does (a tool and a prompt named alike), a
prompt named ``read_resource`` beside its resources, and prompts that normalize alike. A call resolves only among
tools, and a normalized remote name never contains a dot, so a skill's fourth segment keeps every skill apart from
every tool, the synthetic read_resource tool included, on one server and beside a server whose id is ``prompt``.
Every skill is named with the segment, a prompt no tool is named like included. The two prompts that clash (each
other's case variant) are both dropped, and the clash costs those skills only: the session still pins its tools and
every other skill (a pin that lost everything over one clash fails D5.9). Both eras in-memory; 2026-07-28 over stdio
and streamable HTTP, marked slow.
"""

from __future__ import annotations

from collections import Counter

import pytest

from toolproof.fakes.mcp import SHARED_NAME, TWIN_PROMPT_NAMES, TWIN_RESOURCE_URI
from toolproof.spec import READ_RESOURCE, Advertisement, Success, mcp_skill_name, normalize_remote_name

from ._harness import Harness, Session, describe
from ._mcp import ERAS, memory, reached

KEPT = [
    name
    for name in TWIN_PROMPT_NAMES
    if Counter(map(normalize_remote_name, TWIN_PROMPT_NAMES))[normalize_remote_name(name)] == 1
]
"""TwinNamesServer's prompts that no other of its prompts normalizes like."""

SERVER_IDS = (("twin",), ("twin", "prompt"))
"""One server, and two (one of them with the id ``prompt``, the skill segment's own word)."""


def _judge_names(harness: Harness, ad: Advertisement, server_ids: tuple[str, ...], where: str) -> None:
    tools = [t.name for t in ad.tools]
    skills = [s.name for s in ad.skills]
    expected_tools = {f"mcp.{sid}.{n}" for sid in server_ids for n in ("echo", SHARED_NAME, READ_RESOURCE)}
    expected_skills = {mcp_skill_name(sid, p) for sid in server_ids for p in KEPT}
    harness.expect(
        "D5.9",
        set(tools) == expected_tools and len(tools) == len(expected_tools),
        f"{where}: the tools advertised are {sorted(tools)}; expected {sorted(expected_tools)} (a prompt of the same "
        "name takes no tool away)",
    )
    harness.expect(
        "D5.9",
        set(skills) == expected_skills and len(skills) == len(expected_skills),
        f"{where}: the skills advertised are {sorted(skills)}; expected {sorted(expected_skills)} (prompts named "
        f"mcp.{{server_id}}.prompt.{{normalized}}, and {sorted(set(TWIN_PROMPT_NAMES) - set(KEPT))}, which normalize "
        "alike, dropped)",
    )
    shared = sorted(set(tools) & set(skills))
    harness.expect("D5.9", not shared, f"{where}: a tool and a skill share the name(s) {shared}")


async def _judge_calls(harness: Harness, session: Session, server_id: str, where: str) -> None:
    d = await session.call(f"mcp.{server_id}.{SHARED_NAME}", {"text": "page"})
    harness.expect(
        "D5.9",
        isinstance(d, Success) and any("fetched page" in e.text for e in d.content),
        f"{where}: mcp.{server_id}.{SHARED_NAME}, a tool with a prompt of the same name, answered {describe(d)}",
    )
    d = await session.call(f"mcp.{server_id}.{READ_RESOURCE}", {"uri": TWIN_RESOURCE_URI})
    harness.expect(
        "D5.9",
        isinstance(d, Success) and any(TWIN_RESOURCE_URI in e.text for e in d.content),
        f"{where}: mcp.{server_id}.{READ_RESOURCE}, with a prompt named {READ_RESOURCE}, answered {describe(d)}",
    )


@pytest.mark.rules("D5.9")
@pytest.mark.parametrize("server_ids", SERVER_IDS, ids=["+".join(ids) for ids in SERVER_IDS])
@pytest.mark.parametrize("protocol", ERAS)
async def test_a_tool_and_a_prompt_of_one_name_both_stay_available(
    harness: Harness, protocol: str, server_ids: tuple[str, ...]
) -> None:
    configs = [memory(harness, sid, "TwinNamesServer", protocol=protocol)[0] for sid in server_ids]
    where = f"TwinNamesServer as {' and '.join(server_ids)} ({protocol})"
    async with harness.open(mcp_servers=configs) as session:
        _judge_names(harness, await session.advertise(), server_ids, where)
        for sid in server_ids:
            await _judge_calls(harness, session, sid, where)


@pytest.mark.rules("D5.9")
@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_tool_and_a_prompt_of_one_name_over_real_transports(harness: Harness, transport: str) -> None:
    where = f"TwinNamesServer over {transport}"
    async with (
        reached(harness, "twin", "TwinNamesServer", transport, protocol="2026-07-28") as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        _judge_names(harness, await session.advertise(), ("twin",), where)
        await _judge_calls(harness, session, "twin", where)
