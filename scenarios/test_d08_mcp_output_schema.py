"""Decisions 1, 6 and 13 on MCP: a server's structured result is judged against the output schema the session pinned.

D8.11 is swept over structure that breaks the schema in one way each (a wrong type, a missing required field, an
extra field under additionalProperties false, a wrong type inside an array, an empty object), beside a conforming
result that has to be delivered unchanged; D8.12 over a text-only success and an isError result without structure
(FAILED tool_error, its text the external_detail: an MCP schema binds only a success). Both eras, in-memory, over
stdio and over streamable HTTP. An implementation on the MCP SDK meets one trap here: the SDK client checks
structure against its own latest listing, not the session's pin, and raises in its own words; the reference turns
that check off and judges at step 11, as for every tool.
"""

from __future__ import annotations

import json

import pytest

from toolproof.fakes.mcp import FAILS_UNSTRUCTURED, NO_STRUCTURE, REPORT_TEXT, SCHEMA_BREAKS, VALID_REPORT
from toolproof.spec import Disposition, InvocationStatus, Outcome, ReasonCode, Success

from ._harness import Harness, describe
from ._mcp import ERAS, reached, transport_params

FAKE = "SchemaViolationServer"
"""Every tool of it declares the same output schema; ``valid`` conforms, the others break it or answer none."""


def _refused(d: Disposition) -> bool:
    return (
        isinstance(d, Outcome)
        and (d.status, d.reason_code) == (InvocationStatus.FAILED, ReasonCode.INVALID_TOOL_RESULT)
        and d.external_detail is None
    )


def _answered(d: Disposition) -> str:
    if isinstance(d, Outcome) and d.external_detail is not None:
        return f"{describe(d)} with external_detail {d.external_detail.text[:160]!r}"
    if isinstance(d, Success):
        return f"{describe(d)} with structure {json.dumps(d.structured)}"
    return describe(d)


async def _calls(harness: Harness, transport: str, protocol: str, tools: list[str]) -> dict[str, Disposition]:
    async with (
        reached(harness, "schema", FAKE, transport, protocol=protocol) as config,
        harness.open(mcp_servers=[config]) as session,
    ):
        return {tool: await session.call(f"mcp.schema.{tool}", {"text": "x"}) for tool in tools}


async def _judge_violations(harness: Harness, transport: str, protocol: str) -> None:
    calls = await _calls(harness, transport, protocol, ["valid", *SCHEMA_BREAKS])
    valid = harness.success(
        "D8.11", calls["valid"], f"mcp.schema.valid, whose structure conforms ({transport}, {protocol}),"
    )
    harness.expect(
        "D8.11",
        valid.structured == VALID_REPORT and [e.text for e in valid.content] == [REPORT_TEXT],
        f"mcp.schema.valid's conforming result was delivered altered: structure {valid.structured}, "
        f"content {[e.text for e in valid.content]}",
    )
    for tool, structure in SCHEMA_BREAKS.items():
        harness.expect(
            "D8.11",
            _refused(calls[tool]),
            f"mcp.schema.{tool} answered structuredContent {json.dumps(structure)}, which violates its declared output "
            f"schema ({transport}, {protocol}); it was answered {_answered(calls[tool])}: expected FAILED "
            "invalid_tool_result with no external_detail (neither the structure nor the text delivered, and the "
            "verdict is the pipeline's, not the remote's)",
        )


async def _judge_missing(harness: Harness, transport: str, protocol: str) -> None:
    calls = await _calls(harness, transport, protocol, ["valid", NO_STRUCTURE, FAILS_UNSTRUCTURED])
    harness.success("D8.12", calls["valid"], f"mcp.schema.valid, whose structure conforms ({transport}, {protocol}),")
    failed = calls[FAILS_UNSTRUCTURED]
    harness.expect(
        "D8.12",
        isinstance(failed, Outcome)
        and (failed.status, failed.reason_code) == (InvocationStatus.FAILED, ReasonCode.TOOL_ERROR)
        and failed.external_detail is not None
        and failed.external_detail.text == REPORT_TEXT,
        f"mcp.schema.{FAILS_UNSTRUCTURED} answered isError text without structure, which its output schema does not "
        f"bind ({transport}, {protocol}); it was answered {_answered(failed)}: expected FAILED tool_error with its "
        "text as external_detail",
    )
    d = calls[NO_STRUCTURE]
    harness.expect(
        "D8.12",
        _refused(d),
        f"mcp.schema.{NO_STRUCTURE} declares an output schema and answered text only, no structuredContent "
        f"({transport}, {protocol}); it was answered {_answered(d)}: expected FAILED invalid_tool_result with no "
        "external_detail",
    )


@pytest.mark.rules("D8.11")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_structure_violating_the_pinned_output_schema_is_an_invalid_result(
    harness: Harness, transport: str, protocol: str
) -> None:
    await _judge_violations(harness, transport, protocol)


@pytest.mark.rules("D8.12")
@pytest.mark.parametrize("protocol", ERAS)
@pytest.mark.parametrize("transport", transport_params())
async def test_missing_structure_under_a_declared_output_schema_is_an_invalid_result(
    harness: Harness, transport: str, protocol: str
) -> None:
    await _judge_missing(harness, transport, protocol)
