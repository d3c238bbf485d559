"""Witnesses of decision 6: An MCP server does not classify itself; output trust floors.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import unicodedata

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Decision,
    Link,
    McpAdapter,
    Pipeline,
    PipelineHost,
    Registry,
    RemoteTool,
)
from toolproof.spec import (
    UNSATISFIABLE_SCOPE,
    IdempotencyClass,
    InstanceConfig,
    McpClassification,
    Risk,
    SideEffect,
    Step,
    Success,
    ToolSource,
    ToolSpec,
    TrustLabel,
)

from ._registry import adapter_pipeline, witness


class _NoFloors(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        Registry.admit(spec)
        return spec  # Keeps the declared output trust of device and sandbox tools.


@witness("trusts_declared_device_trust", ("D6.4",), "keeps the output trust a device or sandbox tool declares")
class _TrustsDeclaredDeviceTrust(Pipeline):
    registry_class = _NoFloors


class _TrustsAnnotations(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        hints = entry.definition.get("annotations") or {}
        if hints.get("readOnlyHint"):
            return McpClassification(
                side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT
            )
        return super().classify(link, entry)


witness("annotations_classify", ("D6.1",), "takes side effect, risk and idempotency from the server's annotations")(
    adapter_pipeline(_TrustsAnnotations)
)


class _PermissiveDefault(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        if link.config.classification is None:
            return McpClassification(
                side_effect=SideEffect.READ_ONLY, risk=Risk.LOW, idempotency=IdempotencyClass.IDEMPOTENT
            )
        return super().classify(link, entry)


witness("permissive_unclassified", ("D6.2",), "treats an unclassified server as read-only and idempotent")(
    adapter_pipeline(_PermissiveDefault)
)


class _GrantsTheUnsatisfiableScope(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        # The defect: the reserved scope is just another credential name.
        kept = {scope: value for scope, value in config.credentials.items() if scope != UNSATISFIABLE_SCOPE}
        super().check(config.model_copy(update={"credentials": kept}))


witness(
    "unsatisfiable_scope_grantable",
    ("D6.2",),
    "lets a credential named like the unclassified scope grant it, approving an unclassified server's calls",
)(adapter_pipeline(_GrantsTheUnsatisfiableScope))


async def _scopes_folded(p: PipelineHost, s: CallState) -> None:
    # The defect: scopes compared trimmed and case-folded, so a near miss of the reserved scope grants it.
    folded = {scope.strip().casefold(): value for scope, value in p.config.credentials.items()}
    config = p.config
    p.config = config.model_copy(update={"credentials": folded})
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        p.config = config


@witness("scopes_matched_loosely", ("D6.2",), "matches credential scopes trimmed and case-folded")
class _ScopesMatchedLoosely(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _scopes_folded}


class _ResourceToolReadOnly(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is not None:
            return spec
        # The defect: "reading a resource is a read", whatever the operator said of the server.
        return spec.model_copy(
            update={"side_effect": SideEffect.READ_ONLY, "risk": Risk.LOW, "idempotency": IdempotencyClass.IDEMPOTENT}
        )


witness(
    "resource_tool_always_read_only",
    ("D6.1", "D6.2"),
    "gives the synthetic read_resource tool READ_ONLY, LOW, IDEMPOTENT whatever its server's classification",
)(adapter_pipeline(_ResourceToolReadOnly))


class _TrustedOutput(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        return super().spec_for(link, entry).model_copy(update={"output_trust": TrustLabel.INTERNAL})


witness("trusted_mcp_output", ("D6.3",), "registers MCP tools with INTERNAL output trust")(
    adapter_pipeline(_TrustedOutput)
)


async def _scopes_nfkc(p: PipelineHost, s: CallState) -> None:
    # The defect: scopes compared in their NFKC form, so a full-width near miss of the reserved scope grants it.
    folded = {unicodedata.normalize("NFKC", scope): value for scope, value in p.config.credentials.items()}
    config = p.config
    p.config = config.model_copy(update={"credentials": folded})
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        p.config = config


@witness("scopes_matched_nfkc", ("D6.2",), "matches credential scopes in their NFKC form")
class _ScopesMatchedNfkc(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _scopes_nfkc}


async def _trusted_requests_skip_scopes(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.DECIDE](p, s)
    # The defect: a request the platform or the operator wrote is trusted to hold every scope it needs.
    if s.decision is Decision.APPROVAL and min(s.origin_trust, s.argument_trust) >= TrustLabel.OPERATOR:
        s.decision = Decision.ALLOW


@witness(
    "trusted_requests_skip_scopes",
    ("D6.2",),
    "lets a SYSTEM or OPERATOR request run a tool whose required scope no credential grants",
)
class _TrustedRequestsSkipScopes(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _trusted_requests_skip_scopes}


class _ClassifiedByServerInfo(McpAdapter):
    def classify(self, link: Link, entry: RemoteTool) -> McpClassification:
        if link.config.classification is None:
            # The defect: an unclassified server borrows the classification of a classified one announcing the same
            # serverInfo.name ("it is the same server, configured twice").
            name = link.client.server_info.name if link.client.server_info else None
            for other in self.links.values():
                info = other.client.server_info
                if other is not link and other.config.classification is not None and info and info.name == name:
                    return other.config.classification
        return super().classify(link, entry)


witness(
    "classification_by_server_info",
    ("D6.1",),
    "gives an unclassified server the classification of a classified one announcing the same serverInfo.name",
)(adapter_pipeline(_ClassifiedByServerInfo))


class _FloorsOnlyOverclaims(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        admitted = Registry.admit(spec)
        # The defect: only a label above INTERNAL counts as an overclaim; the spec's default INTERNAL is kept.
        if spec.source is not ToolSource.MCP and spec.output_trust <= TrustLabel.INTERNAL:
            return admitted.model_copy(update={"output_trust": spec.output_trust})
        return admitted


@witness(
    "device_floor_above_internal_only",
    ("D6.4",),
    "floors a device or sandbox tool's output only when it declares more than INTERNAL",
)
class _DeviceFloorAboveInternalOnly(Pipeline):
    registry_class = _FloorsOnlyOverclaims


async def _normalize_device_claim(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.NORMALIZE](p, s)
    spec = s.resolved.spec if s.resolved else None
    if not isinstance(s.disposition, Success) or spec is None or spec.source not in _ATTESTING:
        return
    result = p.parse_result(s.raw_result)
    if result is None or result.trust is None:
        return
    # The defect: a device attests its own reading, so the result's claim stands in for the registration floor.
    content = [e.model_copy(update={"trust": result.trust}) for e in s.disposition.content]
    s.disposition = s.disposition.model_copy(update={"content": content})


_ATTESTING = (ToolSource.DEVICE, ToolSource.SANDBOX)


@witness(
    "device_claim_replaces_floor",
    ("D6.4",),
    "delivers a device or sandbox tool's output at the trust its result claims instead of EXTERNAL_UNTRUSTED",
)
class _DeviceClaimReplacesFloor(Pipeline):
    steps = STEP_TABLE | {Step.NORMALIZE: _normalize_device_claim}
