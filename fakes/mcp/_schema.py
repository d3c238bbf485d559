"""Structured results against a declared output schema: one conforming, the rest violating it or leaving it out.

Every tool of ``SchemaViolationServer`` declares the same ``outputSchema`` (``REPORT_SCHEMA``); each
answers ``structuredContent`` that breaks it in one way (``SCHEMA_BREAKS``), or none at all. ``valid``
conforms, so a client that refuses every structured result is told apart from one that judges them.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ._base import ECHO, TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, error

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "label": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["count", "label"],
    "additionalProperties": False,
}
"""The output schema every structured tool of ``SchemaViolationServer`` declares."""

VALID_REPORT: dict[str, Any] = {"count": 3, "label": "three", "tags": ["a", "b"]}
"""``valid``'s structuredContent: conforms to ``REPORT_SCHEMA``."""

SCHEMA_BREAKS: dict[str, dict[str, Any]] = {
    "wrong_type": {"count": "three", "label": "three"},
    "missing_required": {"label": "three"},
    "extra_field": {"count": 3, "label": "three", "status": "SUCCEEDED"},
    "nested_wrong_type": {"count": 3, "label": "three", "tags": ["a", 2]},
    "empty_object": {},
}
"""Tool name -> the structuredContent it answers, each violating ``REPORT_SCHEMA`` in one way."""

NO_STRUCTURE = "no_structure"
"""The tool that declares ``REPORT_SCHEMA`` and answers text only, without structuredContent."""

FAILS_UNSTRUCTURED = "fails"
"""The tool that declares ``REPORT_SCHEMA`` and answers ``isError`` text, without structuredContent (MCP lets it)."""

REPORT_TEXT = "report: count 3, label three"
"""The text part every structured tool answers beside its structure."""


def _schema_violation() -> FakeServer:
    def tool(name: str, description: str) -> types.Tool:
        return types.Tool(name=name, description=description, input_schema=TEXT_SCHEMA, output_schema=REPORT_SCHEMA)

    def answering(structure: dict[str, Any] | None) -> Any:
        async def call(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
            parts: list[types.ContentBlock] = [types.TextContent(type="text", text=REPORT_TEXT)]
            if structure is None:
                return types.CallToolResult(content=parts)
            return types.CallToolResult(content=parts, structured_content=dict(structure))

        return call

    tools = [ECHO, tool("valid", "Returns a report that conforms to its output schema.")]
    behaviours: dict[str, Any] = {"echo": echo, "valid": answering(VALID_REPORT)}
    for name, structure in SCHEMA_BREAKS.items():
        tools.append(tool(name, f"Returns a report that violates its output schema ({name.replace('_', ' ')})."))
        behaviours[name] = answering(structure)
    tools.append(tool(NO_STRUCTURE, "Declares an output schema and returns text only."))
    behaviours[NO_STRUCTURE] = answering(None)
    tools.append(tool(FAILS_UNSTRUCTURED, "Declares an output schema and fails, with text only."))

    async def fails(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return error(REPORT_TEXT)

    behaviours[FAILS_UNSTRUCTURED] = fails
    return FakeServer("SchemaViolationServer", lambda: list(tools), behaviours)


SchemaViolationServer = ServerFake(
    "SchemaViolationServer",
    "declares an outputSchema on every tool; `valid` conforms, the others answer structuredContent of the wrong "
    "type, missing a required field, with an extra field, or none at all; `fails` answers isError text only",
    _schema_violation,
)
