"""Writes ``spec/vectors/canonical-hashes.json`` from the inputs below, with the Python side (``rfc8785``).

``python tests/helpers/canonical_vectors.py > spec/vectors/canonical-hashes.json``. The file is then
checked independently of the library by ``tests/test_canonical_vectors.py`` (RFC 8785's own examples,
and a serializer written from the RFC's text).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from toolproof.spec import (
    DEFINITION_FIELDS,
    KEY_VERSION,
    SCRIPT_HASH_VERSION,
    canonical_json,
    canonical_sha256,
)

DESCRIPTION = (
    "Cross-language test vectors for the hashes and keys toolproof defines on RFC 8785 (JCS) canonical JSON "
    "(spec/_canonical.py). For each entry of `vectors`: parse `input` (JSON text) with your language's JSON "
    "parser; build the material `kind` names (`materials` says how); canonicalize it (Python: PyPI rfc8785; "
    "TypeScript: npm canonicalize); its UTF-8 bytes must equal `canonical` encoded as UTF-8, and sha256 of "
    "them, as 64 lower-case hex digits, must equal `sha256`. Every entry of `invalid` must be refused (Python "
    "raises toolproof.spec.CanonicalJsonError): JSON.parse reads some of them silently (an integer no double "
    "holds rounds, 1e400 becomes Infinity, a lone surrogate stays), so a JavaScript side checks the parsed "
    "value itself (Number.isFinite, String.prototype.isWellFormed) and cannot see a rounded integer at all: "
    "never send one. The Python side is checked by tests/test_canonical_vectors.py; a TypeScript pipeline "
    "checks this same file with npm canonicalize."
)

MATERIALS = {
    "canonical": "the parsed input itself",
    "definition_sha256": (
        "decision 9: an object of the input's members "
        + ", ".join(DEFINITION_FIELDS)
        + " (a member the input lacks is null; any other member is dropped)"
    ),
    "idempotency_key": (
        f'decision 10: the array ["{KEY_VERSION}", tenant, run_id, step_number, call_id, tool_name, '
        "tool_version, arguments] of the input's members (tool_version null for a call that resolved to no tool)"
    ),
    "call_hash": "decision 12: the array [tool_name, arguments] of the input's members",
    "script_hash": f'decision 17: the array ["{SCRIPT_HASH_VERSION}", script, source] of the input\'s members',
}

# (name, kind, input as JSON text); escapes are written as the JSON text has them.
VECTORS: list[tuple[str, str, str]] = [
    ("empty object", "canonical", "{}"),
    ("empty array", "canonical", "[]"),
    ("literals", "canonical", "[null, true, false]"),
    (
        "RFC 8785 section 3.2.2 example",
        "canonical",
        r'{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        r' "string": "\u20ac$\u000F\u000aA\u0027\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}',
    ),
    (
        "RFC 8785 section 3.2.3 key order (UTF-16 code units)",
        "canonical",
        r'{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",'
        r' "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",'
        r' "\u00f6": "Latin Small Letter O With Diaeresis"}',
    ),
    ("non-BMP key sorts before U+FB33 (code points would not)", "canonical", r'{"\ufb33": 1, "\ud83d\ude00": 2}'),
    ("keys: upper case before lower, prefix first", "canonical", '{"b": 1, "a": 2, "B": 3, "aa": 4, "": 5}'),
    (
        "nested objects and arrays",
        "canonical",
        '{"z": [{"b": [3, {"d": 1, "c": 2}], "a": null}], "a": {"y": [], "x": {}}}',
    ),
    ("array order is kept", "canonical", '[3, 1, 2, "b", "a"]'),
    ("float 1e21 (exponent from 21 digits)", "canonical", "1e21"),
    ("float 1e20 (21 digits, no exponent)", "canonical", "1e20"),
    ("float 1e-7 (exponent below 1e-6)", "canonical", "1e-7"),
    ("float 1e-6 (no exponent)", "canonical", "0.000001"),
    ("float 0.1", "canonical", "0.1"),
    ("float -0.0 is 0", "canonical", "-0.0"),
    ("float 5e-324 (smallest subnormal)", "canonical", "5e-324"),
    ("float max", "canonical", "1.7976931348623157e308"),
    ("1.0 and 1 are one number", "canonical", "[1.0, 1, 100.0, 1.5e3, -2.50]"),
    ("safe integers at the edge", "canonical", "[9007199254740991, -9007199254740991]"),
    ("integers a double holds exactly", "canonical", "[9007199254740992, 18446744073709551616, 1e23]"),
    ("RFC 8785 appendix B numbers", "canonical", "[4.5, 0.002, 1e-27, 1e30, 333333333.3333333, 1424953923781206.2]"),
    (
        "control characters: short escapes, else lower-case \\u00XX",
        "canonical",
        r'"\u0000\u0001\b\t\n\u000b\f\r\u000e\u001f \u007f"',
    ),
    ("quote, backslash and solidus", "canonical", r'"\"\\\/"'),
    ("U+2028, U+2029 and non-ASCII stay as UTF-8", "canonical", r'"\u2028\u2029 \u00e9\u20ac\ud83d\ude00 \ufeff"'),
    ("unicode strings, keys and values", "canonical", r'{"na\u00efve": "caf\u00e9", "\u65e5\u672c": "\u8a9e"}'),
    (
        "MCP tool definition (wire form)",
        "definition_sha256",
        json.dumps(
            {
                "name": "search_docs",
                "title": "Search the docs",
                "description": "Searches the documentation \u2014 returns at most `limit` passages.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                        "threshold": {"type": "number", "minimum": 0.0, "maximum": 1.0, "multipleOf": 1e-7},
                    },
                    "required": ["query"],
                    "additionalProperties": False,
                },
                "annotations": {"readOnlyHint": True, "openWorldHint": False},
                "_meta": {"not": "hashed"},
            }
        ),
    ),
    (
        "MCP tool definition, non-BMP property names and a float bound",
        "definition_sha256",
        r'{"name": "react", "description": "Adds a reaction.", "inputSchema": {"type": "object", "properties": '
        r'{"\ufb33": {"type": "string"}, "\ud83d\ude00": {"type": "number", "maximum": 10.0}}}}',
    ),
    ("MCP tool definition, name only", "definition_sha256", '{"name": "echo"}'),
    (
        "idempotency key",
        "idempotency_key",
        '{"tenant": "tenant-1", "run_id": "run-1", "step_number": 3, "call_id": "call-1", "tool_name": '
        '"files.write", "tool_version": "2", "arguments": {"path": "notes/a.txt", "text": "hello", "mode": 420}}',
    ),
    (
        "idempotency key, floats and unicode in the arguments",
        "idempotency_key",
        r'{"tenant": "t", "run_id": "r", "step_number": 0, "call_id": "c", "tool_name": "pay.send", '
        r'"tool_version": "1", "arguments": {"amount": 10.50, "note": "\u20ac \ud83d\ude00", "rate": 1e-7}}',
    ),
    (
        "idempotency key, a call that resolved to no tool",
        "idempotency_key",
        '{"tenant": "t", "run_id": "r", "step_number": 1, "call_id": "c", "tool_name": "no.such", '
        '"tool_version": null, "arguments": {}}',
    ),
    ("call hash", "call_hash", '{"tool_name": "files.read", "arguments": {"path": "a.txt", "lines": [1, 2]}}'),
    (
        "call hash, member order does not matter",
        "call_hash",
        '{"tool_name": "files.read", "arguments": {"lines": [1, 2], "path": "a.txt"}}',
    ),
    ("call hash, non-BMP keys", "call_hash", r'{"tool_name": "t.x", "arguments": {"\ufb33": 1, "\ud83d\ude00": 2.0}}'),
    (
        "script hash",
        "script_hash",
        json.dumps(
            {
                "script": "orchestration.scripts:copy_all",
                "source": 'def copy_all(bridge):\n    for name in ("a", "b"):\n        bridge.call("files.copy", {"name": name})\n',
            }
        ),
    ),
]

# (name, input as JSON text Python's parser reads, why it is refused)
INVALID: list[tuple[str, str, str]] = [
    ("an integer no double holds (2**53 + 1)", "9007199254740993", "no IEEE 754 double equals it"),
    ("nested, negative (-(2**64) - 1)", '{"a": [0, -18446744073709551617]}', "no IEEE 754 double equals it"),
    ("a number beyond the double range", "1e400", "it parses as Infinity"),
    ("NaN (not JSON; Python's parser reads it)", "NaN", "NaN is not a JSON number"),
    ("a lone high surrogate", r'"\ud83d"', "not a Unicode scalar value"),
    ("a lone low surrogate in a key", r'{"\ude00": 1}', "not a Unicode scalar value"),
]


def material(kind: str, value: Any) -> Any:
    """What ``kind`` canonicalizes, from the parsed input."""
    if kind == "canonical":
        return value
    if kind == "definition_sha256":
        return {field: value.get(field) for field in DEFINITION_FIELDS}
    if kind == "idempotency_key":
        inputs = ("tenant", "run_id", "step_number", "call_id", "tool_name", "tool_version", "arguments")
        return [KEY_VERSION, *(value[name] for name in inputs)]
    if kind == "call_hash":
        return [value["tool_name"], value["arguments"]]
    if kind == "script_hash":
        return [SCRIPT_HASH_VERSION, value["script"], value["source"]]
    raise ValueError(f"unknown kind={kind!r}")


def build() -> dict[str, Any]:
    """The vectors document, computed with the library."""
    vectors = []
    for name, kind, text in VECTORS:
        picked = material(kind, json.loads(text))
        vectors.append(
            {
                "name": name,
                "kind": kind,
                "input": text,
                "canonical": canonical_json(picked).decode("utf-8"),
                "sha256": canonical_sha256(picked),
            }
        )
    invalid = [{"name": name, "input": text, "why": why} for name, text, why in INVALID]
    return {
        "description": DESCRIPTION,
        "canonicalization": "RFC 8785 (JSON Canonicalization Scheme)",
        "hash": "sha256 of the canonical UTF-8 bytes, 64 lower-case hex digits",
        "materials": MATERIALS,
        "vectors": vectors,
        "invalid": invalid,
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(build(), indent=2, ensure_ascii=True) + "\n")
