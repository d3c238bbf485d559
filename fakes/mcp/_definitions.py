"""Tool definitions on the edges of canonical JSON: where a hash that is not RFC 8785 tells implementations apart.

Each tool of ``CanonicalEdgeServer`` holds one edge (``EDGES``) in its definition: float bounds Python
writes as ``10.0`` or ``1e-07`` and RFC 8785 as ``10`` and ``1e-7``, ``-0.0``, ``1e21``, property names
outside the Basic Multilingual Plane beside U+FB33 (code-point order and UTF-16 order disagree), an
integer a double holds only just, and text with control characters and U+2028. A definition hash
(decision 9) over anything but RFC 8785 differs from another implementation's on every one of them.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ._base import ECHO, Context, FakeServer, ServerFake, echo, text

EDGES: dict[str, dict[str, Any]] = {
    "float_bounds": {
        "type": "object",
        "properties": {"ratio": {"type": "number", "minimum": -0.0, "maximum": 10.0, "multipleOf": 1e-7}},
    },
    "large_float": {"type": "object", "properties": {"mass": {"type": "number", "maximum": 1e21, "minimum": 5e-324}}},
    "non_bmp_keys": {
        "type": "object",
        "properties": {"\U0001f600": {"type": "string"}, "\ufb33": {"type": "string"}, "z": {"type": "string"}},
    },
    "safe_integer_edge": {
        "type": "object",
        "properties": {"id": {"type": "integer", "minimum": -(2**53 - 1), "maximum": 2**53}},
    },
    "no_canonical_form": {
        "type": "object",
        "properties": {"count": {"type": "integer", "minimum": 0, "maximum": 2**64 - 1}},
    },
    "escapes": {
        "type": "object",
        "properties": {"line": {"type": "string", "pattern": "^[^\\u0000-\\u001f]*$", "default": "a\u2028b\x1f/"}},
    },
}
"""Tool name -> its input schema, each holding one edge of canonical JSON."""

EDGE_DESCRIPTIONS: dict[str, str] = {
    "float_bounds": "Bounds written as floats: -0.0, 10.0, a 1e-7 step.",
    "large_float": "Bounds at the ends of the double range: 1e21 and 5e-324.",
    "non_bmp_keys": "Property names outside the BMP beside U+FB33: \U0001f600 and \ufb33.",
    "safe_integer_edge": "Integer bounds at 2**53.",
    "no_canonical_form": "Integer bound 2**64 - 1, which no double holds: the definition has no RFC 8785 form.",
    "escapes": "Text with control characters \x01\t\n, U+2028 \u2028 and a solidus /.",
}
"""Tool name -> its description (``escapes``' own description holds the edge in text too)."""


def _canonical_edge() -> FakeServer:
    tools = [ECHO] + [
        types.Tool(
            name=name,
            title=f"Edge {name} \U0001f9ea",
            description=EDGE_DESCRIPTIONS[name],
            input_schema=schema,
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        for name, schema in EDGES.items()
    ]

    async def answer(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
        return text(f"{params.name}: ok")

    return FakeServer("CanonicalEdgeServer", lambda: list(tools), {"echo": echo, **dict.fromkeys(EDGES, answer)})


CanonicalEdgeServer = ServerFake(
    "CanonicalEdgeServer",
    "lists tools whose definitions sit on canonical JSON's edges (float bounds, -0.0, 1e21, non-BMP property "
    "names beside U+FB33, 2**53, control characters and U+2028): only an RFC 8785 definition hash matches "
    "another implementation's; `no_canonical_form` has a bound (2**64 - 1) no double holds, so no hash at all",
    _canonical_edge,
)
