"""Decision 6, non-MCP part: device and sandbox output is never trusted above EXTERNAL_UNTRUSTED."""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool, ReturnsTool, device_tool
from toolproof.spec import ContentPart, ToolResult, ToolSource, TrustLabel

from ._harness import Harness


@pytest.mark.rules("D6.4")
async def test_device_and_sandbox_output_is_external_untrusted(harness: Harness) -> None:
    device = device_tool(harness.world, name="sensors.read", source=ToolSource.DEVICE)
    sandbox = device_tool(harness.world, name="sandbox_tools.run", source=ToolSource.SANDBOX)
    async with harness.open(device, sandbox) as session:
        for tool in (device, sandbox):
            d = harness.success("D6.4", await session.call(tool.spec.name, {"text": "reading"}), tool.spec.name)
            labels = {e.trust for e in d.content}
            harness.expect(
                "D6.4",
                labels == {TrustLabel.EXTERNAL_UNTRUSTED},
                f"{tool.spec.source.value} tool {tool.spec.name} declaring output_trust=OPERATOR delivered {sorted(labels)}",
            )


@pytest.mark.rules("D6.4")
@pytest.mark.parametrize("source", [ToolSource.DEVICE, ToolSource.SANDBOX], ids=lambda s: s.value)
async def test_every_declared_output_trust_is_floored(harness: Harness, source: ToolSource) -> None:
    # Every label a device or sandbox tool may declare, the spec's default (INTERNAL) included, and below it.
    tools = [
        EchoTool(harness.world, name=f"sensors.read_{label.value.lower()}", source=source, output_trust=label)
        for label in TrustLabel
    ]
    async with harness.open(*tools) as session:
        for tool in tools:
            d = harness.success("D6.4", await session.call(tool.spec.name, {"text": "reading"}), tool.spec.name)
            labels = {e.trust for e in d.content}
            harness.expect(
                "D6.4",
                labels == {TrustLabel.EXTERNAL_UNTRUSTED},
                f"{source.value} tool {tool.spec.name} declaring output_trust={tool.spec.output_trust.value} delivered "
                f"{sorted(label.value for label in labels)}; whatever it declares, its output is EXTERNAL_UNTRUSTED",
            )


@pytest.mark.rules("D6.4")
@pytest.mark.parametrize("source", [ToolSource.DEVICE, ToolSource.SANDBOX], ids=lambda s: s.value)
async def test_no_claim_a_device_or_sandbox_result_makes_raises_its_output(
    harness: Harness, source: ToolSource
) -> None:
    # Every label claimed on the whole result and on one part, by a tool declaring OPERATOR: a claim only lowers
    # (D1.3), and the floor of the source is EXTERNAL_UNTRUSTED, so every delivered part is EXTERNAL_UNTRUSTED.
    cases = [(label, where) for label in TrustLabel for where in ("whole", "part")]
    tools = [
        ReturnsTool(
            harness.world,
            ToolResult(
                ok=True,
                trust=label if where == "whole" else None,
                content=[ContentPart(text="reading", trust=label if where == "part" else None), ContentPart(text="x")],
            ),
            name=f"sensors.claims_{label.value.lower()}_{where}",
            source=source,
            output_trust=TrustLabel.OPERATOR,
        )
        for label, where in cases
    ]
    wrong: list[str] = []
    async with harness.open(*tools) as session:
        for (label, where), tool in zip(cases, tools, strict=True):
            d = harness.success("D6.4", await session.call(tool.spec.name, {"text": "reading"}), tool.spec.name)
            labels = [e.trust.value for e in d.content]
            if labels != [TrustLabel.EXTERNAL_UNTRUSTED.value] * 2:
                wrong.append(f"a claim of {label.value} on the {where} result was delivered as {labels}")
    harness.expect(
        "D6.4",
        not wrong,
        f"a {source.value} tool's output is EXTERNAL_UNTRUSTED whatever its result claims: {wrong}",
    )
