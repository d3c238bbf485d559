"""Decision 6: MCP classification and output trust floors."""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation, Registry, RemoteTool
from toolproof.spec import (
    ConfigurationError,
    IdempotencyClass,
    McpClassification,
    Risk,
    SideEffect,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
    is_valid_name,
)

from ._common import impl


class _AnnotationAdapter(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        if link.config.classification is not None:
            return link.config.classification
        annotations: dict[str, Any] = entry.definition.get("annotations") or {}
        if annotations.get("readOnlyHint") is True:
            # The mistake: an unclassified server's read-only hint is trusted "as the best information we have".
            return McpClassification(
                side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT
            )
        return link.config.effective_classification


class _Annotations(Pipeline):
    mcp_class = _AnnotationAdapter


def unclassified_trusts_read_only_hint() -> ReferenceImplementation:
    """D6 "An MCP server does not classify itself": for a server without operator classification, a tool annotated
    readOnlyHint=true is classified READ_ONLY/LOW/IDEMPOTENT (and so runs without approval)."""
    return impl("d06-unclassified-trusts-read-only-hint", _Annotations)


_MILD = McpClassification(
    side_effect=SideEffect.EXTERNAL_WRITE, risk=Risk.CRITICAL, idempotency=IdempotencyClass.NON_IDEMPOTENT
)


class _MildAdapter(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        # The mistake: the restrictive default omits the unsatisfiable scope ("untrusted output already forces
        # approval").
        return link.config.classification or _MILD


class _MildDefault(Pipeline):
    mcp_class = _MildAdapter


def unclassified_default_no_scope() -> ReferenceImplementation:
    """D6 "the most restrictive combination the type system permits": the default classification is
    EXTERNAL_WRITE/CRITICAL/NON_IDEMPOTENT but without a required scope no credential grants, so with trusted
    context a call to an unclassified server runs without approval."""
    return impl("d06-unclassified-default-no-scope", _MildDefault)


class _McpOnlyFloor(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        if not is_valid_name(spec.name):
            raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar (D5.1)")
        if spec.source is not ToolSource.MCP and domain_of(spec.name) in ("mcp", "device"):
            raise ConfigurationError(f"tool {spec.name!r} is a builtin in a reserved domain (D5.2)")
        if spec.source is ToolSource.MCP:  # The mistake: the floor is applied to MCP only.
            spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
        return spec


class _DeviceTrustKept(Pipeline):
    registry_class = _McpOnlyFloor


def device_sandbox_trust_kept() -> ReferenceImplementation:
    """D6 "output_trust is forced to EXTERNAL_UNTRUSTED for every MCP, device, and sandbox source": only MCP is
    forced; a DEVICE or SANDBOX tool declaring INTERNAL output is delivered INTERNAL."""
    return impl("d06-device-sandbox-trust-kept", _DeviceTrustKept)


class _InternalResourceAdapter(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is None:
            # The mistake: the synthetic read tool is "ours", so its output gets the builtin default.
            spec = spec.model_copy(update={"output_trust": TrustLabel.INTERNAL})
        return spec


class _ResourceInternal(Pipeline):
    mcp_class = _InternalResourceAdapter


def read_resource_output_internal() -> ReferenceImplementation:
    """D6 / D8: the synthetic mcp.{server}.read_resource tool is labelled INTERNAL (the builtin default) instead
    of EXTERNAL_UNTRUSTED, so resource text is delivered as trusted."""
    return impl("d06-read-resource-output-internal", _ResourceInternal)
