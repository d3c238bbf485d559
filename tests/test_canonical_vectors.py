"""The cross-language vectors (spec/vectors/canonical-hashes.json) against the Python side, and the Python side
against RFC 8785 itself: its published examples, and a serializer written here from the RFC's text (ECMA-262's
Number::toString for numbers) that shares no code with the ``rfc8785`` library."""

from __future__ import annotations

import decimal
import hashlib
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from helpers.canonical_vectors import build, material

from toolproof.reference.hooks import idempotency_key as reference_idempotency_key
from toolproof.spec import (
    DEFINITION_FIELDS,
    CanonicalJsonError,
    ConfigurationError,
    ProposedCall,
    call_hash,
    canonical_json,
    canonical_sha256,
    canonical_vectors,
    definition_sha256,
    idempotency_key,
    script_hash,
)

ROOT = Path(__file__).resolve().parent.parent
VECTORS = canonical_vectors()


# --- an independent serializer, from RFC 8785 section 3.2 ------------------------------------------------------


def _es_number(x: float) -> str:
    """ECMA-262 Number::toString(x), the form RFC 8785 section 3.2.2.3 prescribes."""
    if x == 0:
        return "0"
    if x < 0:
        return "-" + _es_number(-x)
    # s, k, n: the shortest digit string s (k digits) with s * 10**(n - k) == x; repr is shortest round-trip.
    _sign, digits, exponent = decimal.Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0")
    exponent += len(digits) - len(text)
    text = text.lstrip("0")
    k = len(text)
    n = exponent + k
    if k <= n <= 21:
        return text + "0" * (n - k)
    if 0 < n <= 21:
        return text[:n] + "." + text[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + text
    e = f"e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return text + e if k == 1 else text[0] + "." + text[1:] + e


def _es_string(s: str) -> str:
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    return '"' + "".join(short.get(c, f"\\u{ord(c):04x}" if ord(c) < 0x20 else c) for c in s) + '"'


def _utf16_units(s: str) -> list[int]:
    units: list[int] = []
    for c in s:
        o = ord(c)
        units += [o] if o <= 0xFFFF else [0xD800 + ((o - 0x10000) >> 10), 0xDC00 + ((o - 0x10000) & 0x3FF)]
    return units


def _independent(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) < 2**53 else _es_number(float(value))
    if isinstance(value, float):
        assert math.isfinite(value)
        return _es_number(value)
    if isinstance(value, str):
        return _es_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_independent(v) for v in value) + "]"
    members = sorted(value.items(), key=lambda kv: _utf16_units(kv[0]))
    return "{" + ",".join(_es_string(k) + ":" + _independent(v) for k, v in members) + "}"


# --- RFC 8785's own examples, as its text gives them ------------------------------------------------------------

RFC_APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]
"""RFC 8785 appendix B: IEEE 754 bit patterns and the text JCS writes for them."""

RFC_3_2_2_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)
"""RFC 8785 section 3.2.2's canonical output for its example input (the vector of the same name)."""

RFC_3_2_3_ORDER = [
    "Carriage Return",
    "One",
    "Control",
    "Latin Small Letter O With Diaeresis",
    "Euro Sign",
    "Emoji: Grinning Face",
    "Hebrew Letter Dalet With Dagesh",
]
"""RFC 8785 section 3.2.3: the order its sorting example's values come out in."""


@pytest.mark.parametrize(("bits", "expected"), RFC_APPENDIX_B, ids=[b for b, _ in RFC_APPENDIX_B])
def test_numbers_are_written_as_rfc_8785_appendix_b_writes_them(bits: str, expected: str) -> None:
    (number,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonical_json(number).decode() == expected
    assert _es_number(number) == expected


@pytest.mark.parametrize("bits", ["7fffffffffffffff", "7ff0000000000000", "fff0000000000000"])
def test_nan_and_the_infinities_of_appendix_b_are_refused(bits: str) -> None:
    (number,) = struct.unpack(">d", bytes.fromhex(bits))
    with pytest.raises(CanonicalJsonError, match=r"^canonical JSON \(RFC 8785\) has no form for the value at \$: NaN"):
        canonical_json(number)


def test_the_rfc_examples_are_vectors_with_the_rfcs_output() -> None:
    by_name = {v["name"]: v for v in VECTORS["vectors"]}
    assert by_name["RFC 8785 section 3.2.2 example"]["canonical"] == RFC_3_2_2_OUTPUT
    ordered = json.loads(by_name["RFC 8785 section 3.2.3 key order (UTF-16 code units)"]["canonical"])
    assert list(ordered.values()) == RFC_3_2_3_ORDER


# --- every vector ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[v["name"] for v in VECTORS["vectors"]])
def test_vector_canonical_bytes_and_digest(vector: dict[str, Any]) -> None:
    picked = material(vector["kind"], json.loads(vector["input"]))
    canonical = vector["canonical"].encode("utf-8")
    assert canonical_json(picked) == canonical
    assert _independent(picked) == vector["canonical"]
    assert hashlib.sha256(canonical).hexdigest() == vector["sha256"] == canonical_sha256(picked)
    assert len(vector["sha256"]) == 64
    assert vector["sha256"] == vector["sha256"].lower()


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[v["name"] for v in VECTORS["vectors"]])
def test_vector_through_the_named_hash_function(vector: dict[str, Any]) -> None:
    value = json.loads(vector["input"])
    kind = vector["kind"]
    if kind == "canonical":
        got = canonical_sha256(value)
    elif kind == "definition_sha256":
        got = definition_sha256(value)
    elif kind == "idempotency_key":
        got = idempotency_key(**value)
        assert reference_idempotency_key(**value) == got
    elif kind == "call_hash":
        got = call_hash(value["tool_name"], value["arguments"])
    else:
        got = script_hash(value["script"], value["source"])
    assert got == vector["sha256"]


def test_every_kind_and_edge_has_a_vector() -> None:
    kinds = {v["kind"] for v in VECTORS["vectors"]}
    assert (
        kinds
        == set(VECTORS["materials"])
        == {
            "canonical",
            "definition_sha256",
            "idempotency_key",
            "call_hash",
            "script_hash",
        }
    )
    assert VECTORS["materials"]["definition_sha256"].count(",") >= len(DEFINITION_FIELDS) - 1
    canonical = [v["canonical"] for v in VECTORS["vectors"]]
    for edge in ("1e+21", "1e-7", "0.1", "5e-324", "\u2028", "\\u001f", "\U0001f600", "\ufb33"):
        assert any(edge in text for text in canonical), edge


@pytest.mark.parametrize("invalid", VECTORS["invalid"], ids=[v["name"] for v in VECTORS["invalid"]])
def test_invalid_vectors_are_refused_naming_where(invalid: dict[str, Any]) -> None:
    value = json.loads(invalid["input"])
    with pytest.raises(CanonicalJsonError, match=r"^canonical JSON \(RFC 8785\) has no form for the value at \$") as e:
        canonical_json(value)
    assert isinstance(e.value, ConfigurationError)
    with pytest.raises(ValueError, match=r"has no form for the value at \$"):
        ProposedCall(call_id="c", tool_name="t.x", arguments={"v": value})


def test_the_file_is_what_the_generator_writes() -> None:
    assert build() == VECTORS
    assert "npm canonicalize" in VECTORS["description"]


def test_the_vectors_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"toolproof.spec" = ["vectors/*.json"]' in pyproject
    assert json.loads((ROOT / "spec" / "vectors" / "canonical-hashes.json").read_text(encoding="utf-8")) == VECTORS


# --- legal edges: a sweep -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2**53 - 1, b"9007199254740991"),
        (-(2**53 - 1), b"-9007199254740991"),
        (2**53, b"9007199254740992"),
        (2**1023, canonical_json(float(2**1023))),
        (-0.0, b"0"),
        (1.0, b"1"),
        ((1, "a"), b'[1,"a"]'),
        ({"\U0001f600": [], "\ufb33": {}}, '{"\U0001f600":[],"\ufb33":{}}'.encode()),
    ],
)
def test_legal_edges(value: object, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize(
    ("value", "where", "problem"),
    [
        (2**53 + 1, "$", "no IEEE 754 double equals this integer"),
        (-(2**53) - 1, "$", "no IEEE 754 double equals this integer"),
        (2**1024, "$", "no IEEE 754 double equals this integer"),
        ({"a": [1, math.inf]}, r"$.a[1]", "NaN and the infinities"),
        ({"a": {"b": "\udfff"}}, "$.a.b", "a lone surrogate"),
        ({1: "x"}, "$", "an object key must be a string"),
        ({"s": {1}}, "$.s", "set is not a JSON type"),
        ({"b": b"x"}, "$.b", "bytes is not a JSON type"),
    ],
)
def test_illegal_values_name_the_place_and_the_fix(value: object, where: str, problem: str) -> None:
    with pytest.raises(CanonicalJsonError) as e:
        canonical_json(value)
    assert e.value.path == where
    assert str(e.value).startswith(f"canonical JSON (RFC 8785) has no form for the value at {where}: {problem}")
    assert str(e.value).endswith(
        "; use I-JSON values only: finite numbers, integers a double holds exactly, strings without lone surrogates"
    )
