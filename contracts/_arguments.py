"""Arguments from a tool's input schema, with hypothesis.

``hypothesis-jsonschema`` is not a dependency, so this is a small generator for the subset
of JSON Schema tool specs use: ``type`` (one or a list), ``enum``, ``const``; objects with
``properties``, ``required`` and ``additionalProperties`` (extra members are never
generated); strings with ``minLength``, ``maxLength``, ``pattern``; numbers and integers
with ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``; arrays with
``items``, ``minItems``, ``maxItems``. Annotations (``title``, ``description``,
``default``, ``examples``, ``format``...) are ignored. Any other keyword makes its node a
single minimal value and is reported in a note. Every generated value is validated against
the whole schema with ``jsonschema``; values that fail are discarded.
"""

from __future__ import annotations

import math
from typing import Any

import jsonschema
from hypothesis import strategies as st

from toolproof.spec import SAFE_INTEGER, JsonObject

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "$comment", "$schema", "$id", "deprecated"}
    | {"readOnly", "writeOnly", "contentMediaType", "contentEncoding"}
)
_BY_TYPE: dict[str, frozenset[str]] = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "string": frozenset({"minLength", "maxLength", "pattern"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "boolean": frozenset(),
    "null": frozenset(),
}
_COMMON = frozenset({"type", "enum", "const"})
_MAX_TEXT = 24
_MAX_ITEMS = 4


def arguments_strategy(schema: JsonObject) -> tuple[st.SearchStrategy[JsonObject], list[str]]:
    """A strategy for arguments valid under ``schema``, and notes on what it could not generate.

    Raises:
        jsonschema.SchemaError: ``schema`` is not a valid JSON Schema.
    """
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema)
    notes: list[str] = []
    node = dict(schema)
    node.setdefault("type", "object")  # a tool's arguments are always an object
    strategy = _node(node, "arguments", notes)
    objects = strategy.filter(lambda value: isinstance(value, dict) and validator.is_valid(value))
    return objects, notes


def _node(schema: Any, where: str, notes: list[str]) -> st.SearchStrategy[Any]:
    if schema is True or schema == {}:
        return st.just({}) if where == "arguments" else st.one_of(st.none(), st.booleans(), st.text(max_size=8))
    if not isinstance(schema, dict):
        notes.append(f"{where}: schema {schema!r} admits nothing; generating None")
        return st.just(None)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    allowed = _ANNOTATIONS | _COMMON | frozenset().union(*(_BY_TYPE.get(t, frozenset()) for t in names))
    unknown = sorted(set(schema) - allowed)
    if unknown or not names or any(t not in _BY_TYPE for t in names):
        what = ", ".join(unknown) if unknown else f"type={types!r}"
        notes.append(f"{where}: the generator does not support {what}; only a minimal value is generated there")
        return st.just(_minimal(schema))
    return st.one_of(*(_typed(t, schema, where, notes) for t in names))


def _typed(kind: str, schema: dict[str, Any], where: str, notes: list[str]) -> st.SearchStrategy[Any]:
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties", {})
        required = list(schema.get("required", []))
        optional = [name for name in properties if name not in required]
        return st.fixed_dictionaries(
            {name: _node(properties.get(name, True), f"{where}.{name}", notes) for name in required},
            optional={name: _node(properties[name], f"{where}.{name}", notes) for name in optional},
        )
    if kind == "string":
        shortest = int(schema.get("minLength", 0))
        longest = int(schema.get("maxLength", max(shortest, _MAX_TEXT)))
        if "pattern" in schema:
            pattern = st.from_regex(schema["pattern"])
            return pattern.filter(lambda text: shortest <= len(text) <= longest)
        return st.text(min_size=shortest, max_size=min(longest, max(shortest, _MAX_TEXT)))
    low, high = _bounds(schema)
    if kind == "integer":
        exclusive_low, exclusive_high = "exclusiveMinimum" in schema, "exclusiveMaximum" in schema
        # Unbounded sides stop at I-JSON's safe integers: beyond them a number has no canonical form
        # (spec.canonical_json), so no key could be derived for the call.
        return st.integers(
            min_value=-SAFE_INTEGER if low is None else math.floor(low) + 1 if exclusive_low else math.ceil(low),
            max_value=SAFE_INTEGER if high is None else math.ceil(high) - 1 if exclusive_high else math.floor(high),
        )
    if kind == "number":
        return st.floats(
            min_value=low,
            max_value=high,
            exclude_min=low is not None and "exclusiveMinimum" in schema,
            exclude_max=high is not None and "exclusiveMaximum" in schema,
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "array":
        fewest = int(schema.get("minItems", 0))
        most = int(schema.get("maxItems", max(fewest, _MAX_ITEMS)))
        return st.lists(_node(schema.get("items", {}), f"{where}[]", notes), min_size=fewest, max_size=most)
    if kind == "boolean":
        return st.booleans()
    return st.none()


def _bounds(schema: dict[str, Any]) -> tuple[float | None, float | None]:
    low = schema.get("exclusiveMinimum", schema.get("minimum"))
    high = schema.get("exclusiveMaximum", schema.get("maximum"))
    return low, high


def _minimal(schema: dict[str, Any]) -> Any:
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key] and isinstance(schema[key][0], dict):
            return _minimal(schema[key][0])
    if isinstance(schema.get("allOf"), list):
        merged = {k: v for part in schema["allOf"] if isinstance(part, dict) for k, v in part.items()}
        return _minimal({**merged, **{k: v for k, v in schema.items() if k != "allOf"}})
    declared = schema.get("type")
    kind = str(declared[0]) if isinstance(declared, list) and declared else declared
    if kind == "object" or kind is None:
        properties = schema.get("properties", {})
        return {name: _minimal(properties.get(name, {})) for name in schema.get("required", [])}
    return {"string": "", "integer": 0, "number": 0.0, "boolean": False, "array": [], "null": None}.get(str(kind), {})
