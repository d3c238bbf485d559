"""Round 2, decision 6: an MCP server does not classify itself."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation, RemoteTool
from toolproof.spec import IdempotencyClass, McpClassification, SideEffect

from ._common import impl


class _AnnotationsRefine(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        ceiling = link.config.effective_classification
        if link.config.classification is None:
            return ceiling  # Unclassified servers stay maximally restricted.
        annotations = entry.definition.get("annotations") or {}
        # The mistake: the operator's classification is taken as a ceiling, and the server's hints refine it
        # downward ("it can only make the tool look less dangerous than the operator allows").
        changes: dict[str, object] = {}
        if annotations.get("readOnlyHint") is True:
            changes["side_effect"] = SideEffect.READ_ONLY
        if annotations.get("idempotentHint") is True:
            changes["idempotency"] = IdempotencyClass.IDEMPOTENT
        return ceiling.model_copy(update=changes)


class _AnnotationsRefinePipeline(Pipeline):
    mcp_class = _AnnotationsRefine


def annotations_refine_operator_ceiling() -> ReferenceImplementation:
    """D6 "side_effect, risk, idempotency ... come from operator configuration ..., never from the server's own
    declaration": for a server the operator classified, the operator's classification is read as a ceiling that the
    tool's readOnlyHint / idempotentHint annotations lower, so a tool the server calls read-only is pinned READ_ONLY
    (and IDEMPOTENT) and runs without approval on untrusted context."""
    return impl("r2-d06-annotations-refine-ceiling", _AnnotationsRefinePipeline)
