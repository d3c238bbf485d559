"""Decision 6, non-MCP part: device and sandbox output is never trusted above EXTERNAL_UNTRUSTED."""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool, device_tool
from toolproof.spec import ToolSource, TrustLabel

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
