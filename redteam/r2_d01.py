"""Round 2, decision 1: what a tool returns, and how its result is delivered."""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import Envelope, Step, Success

from ._common import impl, table

_reference_normalize = STEP_TABLE[Step.NORMALIZE]


async def _normalize_part_claim_wins(p: Pipeline, s: CallState) -> None:
    await _reference_normalize(p, s)
    if not isinstance(s.disposition, Success) or s.resolved is None:
        return
    result = p.parse_result(s.raw_result)
    assert result is not None  # Invariant: a Success came from a parsed result.
    spec = s.resolved.spec
    floor = spec.output_trust if result.trust is None else min(spec.output_trust, result.trust)
    # The mistake: a part's own label "is more specific than the result's", so it replaces the floor.
    content = [
        Envelope(trust=part.trust if part.trust is not None else floor, source=spec.name, text=part.text)
        for part in result.content
    ]
    s.disposition = s.disposition.model_copy(update={"content": content})


class _PartClaimWins(Pipeline):
    steps = table(NORMALIZE=_normalize_part_claim_wins)


def part_claim_replaces_floor() -> ReferenceImplementation:
    """D1 "an optional trust label that may only be lowered": a content part's own trust label replaces the
    tool's registered output label instead of being min()'d with it, so an INTERNAL tool's part claiming SYSTEM is
    delivered SYSTEM (the result-level label is still only lowered)."""
    return impl("r2-d01-part-claim-replaces-floor", _PartClaimWins)


async def _normalize_drops_empty(p: Pipeline, s: CallState) -> None:
    await _reference_normalize(p, s)
    if isinstance(s.disposition, Success):
        # The mistake: "an empty part carries nothing", so it is left out of the delivered content.
        kept = [e for e in s.disposition.content if e.text]
        s.disposition = s.disposition.model_copy(update={"content": kept})


class _DropsEmptyParts(Pipeline):
    steps = table(NORMALIZE=_normalize_drops_empty)


def empty_parts_dropped() -> ReferenceImplementation:
    """D1 "ToolResult carries ok, content, ...": content parts whose text is empty are dropped from the SUCCEEDED
    disposition, so the content delivered is not the content the tool returned (part count and order change)."""
    return impl("r2-d01-empty-parts-dropped", _DropsEmptyParts)


def _type_only_conforms(instance: Any, schema: Any) -> bool:
    expected = schema.get("type")
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool}
    return expected is None or expected not in kinds or isinstance(instance, kinds[expected])


async def _normalize_type_only(p: Pipeline, s: CallState) -> None:
    from toolproof.reference import _execute

    original = _execute.conforms
    _execute.conforms = _type_only_conforms  # type: ignore[assignment]
    try:
        await _reference_normalize(p, s)
    finally:
        _execute.conforms = original


class _TypeOnlyStructure(Pipeline):
    steps = table(NORMALIZE=_normalize_type_only)


def structure_checks_top_level_type_only() -> ReferenceImplementation:
    """D1 "optional validated structure": the structure is "validated" by checking only the output schema's
    top-level type (an object is an object), so a structure missing a required member or with a member of the
    wrong type is delivered instead of completing FAILED invalid_tool_result."""
    return impl("r2-d01-structure-top-level-type-only", _TypeOnlyStructure)


_reference_excerpt = STEP_TABLE[Step.EXCERPT]


async def _excerpt_keeps_only_full_output(p: Pipeline, s: CallState) -> None:
    before = s.disposition
    await _reference_excerpt(p, s)
    if s.disposition is not before and isinstance(s.disposition, Success):
        # The mistake: an excerpted output's artifacts are "the full output now", so the list is replaced.
        s.disposition = s.disposition.model_copy(update={"artifacts": s.disposition.artifacts[-1:]})


class _ExcerptReplacesArtifacts(Pipeline):
    steps = table(EXCERPT=_excerpt_keeps_only_full_output)


def excerpt_replaces_tool_artifacts() -> ReferenceImplementation:
    """D1 "ToolResult carries ok, content, ..., artifacts" (delivered with the success) + D12 "artifactized": when
    the output is excerpted, the disposition's artifacts are replaced by the full-output artifact, so the artifacts
    the tool itself wrote through the artifact writer are no longer referenced from the SUCCEEDED disposition."""
    return impl("r2-d01-excerpt-replaces-tool-artifacts", _ExcerptReplacesArtifacts)
