"""Strict input schemas on a server that runs whatever arguments arrive: only the client's step 2 stands between.

Every tool of ``StrictInputSchemaServer`` declares an ``inputSchema`` that a JSON-schema validator can refuse in one
of several ways (``INPUT_SCHEMAS``: a type, a required member, an extra member where ``additionalProperties`` is
false, an enum, numeric, length and item-count bounds, a nested object), and none of them checks what it is given:
each records the arguments it received and answers them, as JSON with sorted keys (``echo``: its text, as every
fake's ``echo`` does). So whatever reached the server is a fact the harness reads: in-process, ``log``'s
``"arguments NAME JSON"`` entries; served as a subprocess with a state dir (``stdio_command(..., state_dir=…)``,
``http_server(..., state_dir=…)``), the same lines appended to ``ARGUMENTS_LOG`` there.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from ._base import TEXT_SCHEMA, Context, FakeServer, ServerFake, echo, text

ARGUMENTS_LOG = "arguments.log"
"""The file in a served fake's state dir that holds one ``NAME JSON`` line per tools/call it ran."""

INPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "echo": TEXT_SCHEMA,
    "lookup": {
        "type": "object",
        "properties": {"key": {"type": "string", "minLength": 1, "maxLength": 8}},
        "required": ["key"],
        "additionalProperties": False,
    },
    "resize": {
        "type": "object",
        "properties": {
            "width": {"type": "integer", "minimum": 1, "maximum": 100},
            "unit": {"enum": ["px", "em"]},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        },
        "required": ["width", "unit"],
        "additionalProperties": False,
    },
    "tag": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "meta": {
                "type": "object",
                "properties": {"level": {"type": "integer"}},
                "required": ["level"],
                "additionalProperties": False,
            },
        },
        # Invariant: no additionalProperties at the top, so an extra top-level member is valid here (the other side
        # of the extra-member boundary), while one inside `meta` is not.
        "required": ["tags"],
    },
}
"""Tool name -> its input schema (``echo`` is every fake's plain one)."""


def logged_line(name: str, arguments: dict[str, Any]) -> str:
    """How the fake records one call it ran: the tool's name and its arguments as JSON with sorted keys."""
    return f"{name} {json.dumps(arguments, sort_keys=True, separators=(',', ':'), ensure_ascii=False)}"


def _strict_input_schema() -> FakeServer:
    tools = [
        types.Tool(name=name, description=f"Answers the arguments it was given ({name}).", input_schema=schema)
        for name, schema in INPUT_SCHEMAS.items()
    ]

    async def runs_anything(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        # The behaviour: nothing here checks the arguments against the schema this server declared.
        line = logged_line(params.name, dict(params.arguments or {}))
        fake.log.append(f"arguments {line}")
        if fake.state_dir is not None:
            fake.state_dir.mkdir(parents=True, exist_ok=True)
            with (fake.state_dir / ARGUMENTS_LOG).open("a", encoding="utf-8") as log:
                log.write(line + "\n")
        if params.name == "echo":  # Every fake's echo answers its text, as PlainServer's does.
            return await echo(ctx, params)
        return text(line)

    fake = FakeServer("StrictInputSchemaServer", lambda: list(tools), dict.fromkeys(INPUT_SCHEMAS, runs_anything))
    return fake


StrictInputSchemaServer = ServerFake(
    "StrictInputSchemaServer",
    "declares strict input schemas (types, required members, no extra members, an enum, bounds, a nested object) "
    "and runs whatever arguments arrive, answering and recording them",
    _strict_input_schema,
)
