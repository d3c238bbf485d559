"""How a record becomes a table row: one column per field, its DuckDB type from the field's type.

The one place that maps a field's type to a column: adding a field to a record adds the column.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import NoneType, UnionType
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from toolproof.spec import HarnessError

# JSON lives in VARCHAR columns: DuckDB's JSON type is an extension, and loading one may reach the network.
_SCALARS: dict[object, str] = {bool: "BOOLEAN", int: "INTEGER", float: "DOUBLE", str: "VARCHAR"}
_JSON_ORIGINS = (list, tuple, dict)


@dataclass(frozen=True)
class Column:
    """One column of a results table."""

    name: str
    """The field's name."""
    sql_type: str
    """Its DuckDB type, as ``information_schema.columns.data_type`` spells it."""
    is_json: bool
    """Whether the value is stored as JSON text (lists and mappings)."""


def columns_of(model: type[BaseModel]) -> tuple[Column, ...]:
    """The columns of ``model``'s table, in field order.

    Raises:
        HarnessError: a field's type has no column type (only str, int, float, bool, a StrEnum, which is
            stored as its value, and lists or mappings, stored as JSON text, have one).
    """
    return tuple(_column(model, name, field.annotation) for name, field in model.model_fields.items())


def stored(record: BaseModel, columns: Sequence[Column]) -> list[object]:
    """The values of ``record`` to insert, in column order: enums as their values, JSON columns as text."""
    values: list[object] = []
    for column in columns:
        value = getattr(record, column.name)
        if column.is_json:
            value = json.dumps(value, sort_keys=True)
        elif isinstance(value, StrEnum):
            value = value.value
        values.append(value)
    return values


def loaded(columns: Sequence[Column], values: Sequence[object]) -> dict[str, Any]:
    """Field name to value for a fetched row, JSON columns decoded, ready for ``model_validate``.

    Raises:
        ValueError: a JSON column does not hold JSON.
    """
    fields: dict[str, Any] = {}
    for column, value in zip(columns, values, strict=True):
        fields[column.name] = json.loads(str(value)) if column.is_json and value is not None else value
    return fields


def _column(model: type[BaseModel], name: str, annotation: object) -> Column:
    if isinstance(annotation, UnionType) and NoneType in get_args(annotation):
        # ``X | None`` is X's column holding NULL.
        (inner,) = [arg for arg in get_args(annotation) if arg is not NoneType]
        return _column(model, name, inner)
    if isinstance(annotation, type) and issubclass(annotation, StrEnum):
        return Column(name, "VARCHAR", is_json=False)
    if annotation in _SCALARS:
        return Column(name, _SCALARS[annotation], is_json=False)
    if get_origin(annotation) in _JSON_ORIGINS:
        return Column(name, "VARCHAR", is_json=True)
    raise HarnessError(
        f"{model.__name__}.{name} has type {annotation!r}, which no results column can hold:"
        " use str, int, float, bool, a StrEnum, a list or a mapping, or one of these or None"
    )
