"""Decision 1 (with decision 6's floors): what an accepted result delivers, and what makes a result invalid."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolproof.spec import ReasonCode, ToolSource, ToolSpec, TrustLabel, lowest_trust

from ._catalog import STRUCTURES, Behaviour
from ._schema import validates

UNTRUSTED_SOURCES = frozenset({ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX})


@dataclass(frozen=True)
class Delivery:
    """What a SUCCEEDED disposition carries: labelled parts, structure and the tool's own artifacts."""

    parts: tuple[tuple[str, TrustLabel], ...]
    """(text, delivered label) per content part, in order."""
    structured: dict[str, Any] | None
    artifacts: tuple[tuple[str, bytes], ...]
    """(name, bytes) the tool wrote, in order."""
    label_rules: tuple[str, ...]
    """The rules that set the labels (D1.3, and D6.3 or D6.4 for an untrusted source)."""


def floor(spec: ToolSpec) -> tuple[TrustLabel, tuple[str, ...]]:
    """The highest label the tool's output may carry: D6.3/D6.4 force EXTERNAL_UNTRUSTED for remote sources."""
    if spec.source is ToolSource.MCP:
        return TrustLabel.EXTERNAL_UNTRUSTED, ("D6.3", "D1.3")
    if spec.source in UNTRUSTED_SOURCES:
        return TrustLabel.EXTERNAL_UNTRUSTED, ("D6.4", "D1.3")
    return spec.output_trust, ("D1.3",)


def invalid_result(spec: ToolSpec, behaviour: Behaviour) -> ReasonCode | None:
    """D1.4: structure without a schema, or structure the schema refuses, is an invalid result."""
    structure = STRUCTURES[behaviour.structure]
    if structure is None:
        return None
    if spec.output_schema is None or not validates(spec.output_schema, structure):
        return ReasonCode.INVALID_TOOL_RESULT
    return None


def delivery(spec: ToolSpec, behaviour: Behaviour) -> Delivery:
    """D1.3 and D1.5: each part at the lowest of the floor, the result's claim and its own claim; all else as given."""
    top, rules = floor(spec)
    whole = lowest_trust(top, behaviour.result_trust or top)
    parts = tuple((text, lowest_trust(whole, label or whole)) for text, label in behaviour.parts)
    structure = STRUCTURES[behaviour.structure]
    artifacts = tuple((name, text.encode()) for name, text in behaviour.artifacts)
    return Delivery(parts, dict(structure) if structure is not None else None, artifacts, rules)
