"""Decision 5, builtin part: the name grammar, reserved domains, and unknown names."""

from __future__ import annotations

import pytest

from toolproof.fakes import EchoTool
from toolproof.spec import InvocationStatus, ReasonCode

from ._harness import Harness


async def _refuses_naming(harness: Harness, rule: str, names: list[str]) -> None:
    for name in names:
        error = await harness.refused(EchoTool(harness.world, name=name))
        harness.expect(rule, error is not None, f"a builtin registered as {name!r} was accepted at startup")
        harness.expect(rule, name in str(error), f"the startup error for {name!r} does not name it: {error}")


@pytest.mark.rules("D5.1")
async def test_builtin_outside_the_grammar_is_a_startup_error(harness: Harness) -> None:
    await _refuses_naming(harness, "D5.1", ["Files.Read", "files", "files.read-all", "files..read", "1files.read"])


@pytest.mark.rules("D5.2")
async def test_builtin_in_a_reserved_domain_is_a_startup_error(harness: Harness) -> None:
    await _refuses_naming(harness, "D5.2", ["mcp.files.read", "device.camera.snap"])


@pytest.mark.rules("D5.3")
async def test_unknown_or_ungrammatical_name_is_denied_unknown_tool(harness: Harness) -> None:
    async with harness.open(EchoTool(harness.world)) as session:
        for name in ("files.missing", "FILES.ECHO", "files.echo ", "mcp.evil.files_echo", "files"):
            d = harness.outcome("D5.3", await session.call(name, {"text": "t"}), f"a call to {name!r}")
            harness.expect(
                "D5.3",
                (d.status, d.reason_code) == (InvocationStatus.DENIED, ReasonCode.UNKNOWN_TOOL),
                f"a call to {name!r} was answered {d.status.value} {d.reason_code.value}",
            )
    harness.expect(
        "D5.3", harness.world.executions == [], f"an unknown name executed a tool: {harness.world.executions}"
    )


@pytest.mark.rules("D5.4")
async def test_duplicate_name_is_a_startup_error(harness: Harness) -> None:
    first, second = EchoTool(harness.world, name="files.echo"), EchoTool(harness.world, name="files.echo")
    error = await harness.refused(first, second)
    harness.expect("D5.4", error is not None, "two tools registered as 'files.echo' were accepted")
    harness.expect("D5.4", "files.echo" in str(error), f"the startup error does not name the duplicate: {error}")
