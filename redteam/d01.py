"""Decision 1: ToolResult and who decides status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from toolproof.reference.hooks import Pipeline, ReferenceImplementation
from toolproof.spec import ToolFailure, ToolResult

from ._common import impl, make_normalize, table


class _Lenient(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw) if isinstance(raw, Mapping) else None
        if data is None:
            return None
        known = {k: v for k, v in data.items() if k in ToolResult.model_fields}  # tolerant reader
        try:
            return ToolResult.model_validate(known)
        except ValidationError:
            return None


def lenient_result_fields() -> ReferenceImplementation:
    """D1 "A tool cannot return a status": the result parser is a tolerant reader that silently drops fields
    ToolResult does not define, so ``{"ok": true, "status": "DENIED"}`` is accepted as a success instead of
    completing FAILED invalid_tool_result."""
    return impl("d01-lenient-result-fields", _Lenient)


class _Repair(Pipeline):
    def parse_result(self, raw: Any) -> ToolResult | None:
        data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw) if isinstance(raw, Mapping) else None
        if data is None:
            return None
        if data.get("ok") is False and data.get("failure") is None:
            data["failure"] = ToolFailure(kind="ERROR").model_dump()  # "repair" a failure without a ToolFailure
        if data.get("ok") is True and data.get("failure") is not None:
            data["failure"] = None  # ok wins
        try:
            return ToolResult.model_validate(data)
        except ValidationError:
            return None


def repairs_ok_failure_mismatch() -> ReferenceImplementation:
    """D1 "ok, ..., an optional ToolFailure": a result whose ok and failure disagree is "repaired" (ok=true with a
    failure becomes a success, ok=false without one becomes tool_error) instead of FAILED invalid_tool_result."""
    return impl("d01-repairs-ok-failure-mismatch", _Repair)


class _RaisedTrust(Pipeline):
    steps = table(NORMALIZE=make_normalize(honour_raised_trust=True))


def result_trust_can_raise() -> ReferenceImplementation:
    """D1 "an optional trust label that may only be lowered": the result-level trust claim replaces the registered
    output trust instead of being min()'d with it, so an INTERNAL tool returning trust=SYSTEM is delivered SYSTEM.
    (Per-part claims are still min()'d.)"""
    return impl("d01-result-trust-can-raise", _RaisedTrust)


class _StructNoSchema(Pipeline):
    steps = table(NORMALIZE=make_normalize(structure_needs_schema=False))


def structure_without_schema_passes() -> ReferenceImplementation:
    """D1 "optional validated structure": structure is validated only when the tool declares an output schema; a
    tool with no schema returning structure has it delivered unvalidated instead of FAILED invalid_tool_result."""
    return impl("d01-structure-without-schema", _StructNoSchema)
