"""Decision 6, MCP part: a server never classifies itself, and its output is never trusted."""

from __future__ import annotations

import pytest

from toolproof.spec import UNCLASSIFIED, AdvertisedTool, McpClassification, Suspended, TrustLabel

from ._harness import Harness
from ._mcp import WRITE, memory


def _classification(tool: AdvertisedTool) -> McpClassification:
    return McpClassification(
        side_effect=tool.side_effect, risk=tool.risk, idempotency=tool.idempotency, required_scopes=tool.required_scopes
    )


@pytest.mark.rules("D6.1")
async def test_classification_comes_from_the_operator_never_from_annotations(harness: Harness) -> None:
    config, fake = memory(harness, "lying", "LyingAnnotationsServer", classification=WRITE)
    async with harness.open(mcp_servers=[config]) as session:
        ad = await session.advertise()
        for tool in ad.tools:
            harness.expect(
                "D6.1",
                _classification(tool) == WRITE,
                f"{tool.name} is classified {_classification(tool).model_dump(mode='json')}; "
                f"the operator configured {WRITE.model_dump(mode='json')}",
            )
        d = await session.call("mcp.lying.delete_everything", {"text": "all"})
        harness.expect(
            "D6.1",
            isinstance(d, Suspended) and d.reason == "approval" and "tools/call delete_everything" not in fake.log,
            "a tool annotated read-only but configured EXTERNAL_WRITE with an ungranted scope ran without approval: "
            f"{type(d).__name__} {fake.log}",
        )


@pytest.mark.rules("D6.2")
async def test_unclassified_server_is_maximally_restricted(harness: Harness) -> None:
    config, fake = memory(harness, "plain", "PlainServer", classification=None)
    async with harness.open(mcp_servers=[config], credentials={"files:delete": "granted"}) as session:
        ad = await session.advertise()
        harness.expect("D6.2", bool(ad.tools), "an unclassified server's tools were not advertised at all")
        for tool in ad.tools:
            harness.expect(
                "D6.2",
                _classification(tool) == UNCLASSIFIED,
                f"{tool.name} of an unclassified server is {_classification(tool).model_dump(mode='json')}, "
                f"not {UNCLASSIFIED.model_dump(mode='json')}",
            )
        d = await session.call("mcp.plain.echo", {"text": "hello"})
        harness.expect(
            "D6.2",
            isinstance(d, Suspended)
            and d.reason == "approval"
            and not any(e.startswith("tools/call") for e in fake.log),
            f"a call to an unclassified server's tool did not wait for approval: {type(d).__name__} {fake.log}",
        )


@pytest.mark.rules("D6.3")
async def test_mcp_output_is_untrusted_whatever_the_server_claims(harness: Harness) -> None:
    claims, _ = memory(harness, "claims", "ClaimsTrustServer")
    notes, _ = memory(harness, "notes", "InjectingResourceServer")
    async with harness.open(mcp_servers=[claims, notes]) as session:
        ad = await session.advertise()
        for tool in ad.tools:
            harness.expect(
                "D6.3",
                tool.output_trust is TrustLabel.EXTERNAL_UNTRUSTED,
                f"{tool.name} is registered with output_trust {tool.output_trust.value}",
            )
        calls = [("mcp.claims.fetch", {"text": "x"}), ("mcp.notes.read_resource", {"uri": "file:///notes/readme.txt"})]
        for name, arguments in calls:
            ok = harness.success("D6.3", await session.call(name, arguments), name)
            labels = {e.trust for e in ok.content}
            harness.expect(
                "D6.3",
                labels == {TrustLabel.EXTERNAL_UNTRUSTED},
                f"{name}'s output was delivered labelled {sorted(label.value for label in labels)}",
            )
