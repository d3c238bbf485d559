"""The subset of JSON Schema the generated catalogs use, checked without a library.

Objects with typed ``properties``, ``required`` and ``additionalProperties``; types ``string``,
``number``, ``boolean``, ``array`` and ``object``. ``integer`` is never drawn: whether 1.0 is one is a
draft's choice, not the ADR's.
"""

from __future__ import annotations

from typing import Any


def _typed(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise ValueError(f"kind={kind!r} is outside the model's schema subset")


def validates(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` validates against ``schema`` (within the subset)."""
    if "type" in schema and not _typed(value, schema["type"]):
        return False
    if not isinstance(value, dict):
        return True
    properties: dict[str, Any] = schema.get("properties", {})
    if any(name not in value for name in schema.get("required", [])):
        return False
    if schema.get("additionalProperties", True) is False and any(name not in properties for name in value):
        return False
    return all(validates(properties[name], item) for name, item in value.items() if name in properties)
