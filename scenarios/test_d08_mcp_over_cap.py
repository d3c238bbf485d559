"""Decisions 8 and 13: a result refused over its server's cap is the adapter's verdict, and says so.

D8.10 is swept over every kind of result a server can send over its cap (``RESULTS``: text in one part and in
several, isError, structured, a resource read), both eras in-memory, and text, isError and resource reads over stdio.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.fakes.mcp import repeat_uri
from toolproof.spec import READ_RESOURCE, InvocationStatus, Outcome, ReasonCode

from ._harness import Harness, describe
from ._mcp import ERAS, reached

CAP = 1024
"""The servers' output cap in these scenarios, in bytes."""

OVER = 4 * CAP
"""A result size well over the cap."""

RESULTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "text": ("MultibyteOutputServer", "repeat", {"unit": "a", "count": OVER, "parts": 1, "error": False}),
    "text-parts": (
        "MultibyteOutputServer",
        "repeat",
        {"unit": "\u00e9", "count": CAP // 3, "parts": 2, "error": False},
    ),
    "isError": ("MultibyteOutputServer", "repeat", {"unit": "a", "count": OVER, "parts": 1, "error": True}),
    "structured": ("HugeOutputServer", "dump_structured", {"bytes": OVER}),
    "resource": ("MultibyteOutputServer", READ_RESOURCE, {"uri": repeat_uri("a", OVER)}),
}
"""Every kind of result a server can send over the cap: (fake, tool, arguments)."""


async def _judge(harness: Harness, kind: str, transport: str, protocol: str) -> None:
    fake, tool, arguments = RESULTS[kind]
    async with (
        reached(harness, "big", fake, transport, protocol=protocol, max_output_bytes=CAP) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        d = await session.call(f"mcp.big.{tool}", arguments)
    what = f"a {kind} result of {fake} over the {CAP}-byte cap ({transport}, {protocol})"
    harness.expect(
        "D8.10",
        isinstance(d, Outcome)
        and (d.status, d.reason_code) == (InvocationStatus.FAILED, ReasonCode.TOOL_ERROR)
        and d.external_detail is None,
        f"{what} was answered {describe(d)}: expected FAILED tool_error with no external_detail, since the verdict is "
        f"the adapter's and no remote text is delivered"
        + (
            f" (external_detail {d.external_detail.model_dump()})"
            if isinstance(d, Outcome) and d.external_detail
            else ""
        ),
    )


@pytest.mark.rules("D8.10")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("kind", list(RESULTS))
async def test_an_over_cap_result_is_the_adapters_failure_with_no_remote_detail(
    harness: Harness, kind: str, protocol: str
) -> None:
    await _judge(harness, kind, "memory", protocol)


@pytest.mark.rules("D8.10")
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["text", "isError", "resource"])
async def test_an_over_cap_result_over_stdio(harness: Harness, kind: str) -> None:
    await _judge(harness, kind, "stdio", "2026-07-28")
