"""Round 4, decision 11: where origin_trust and argument_trust come from, and the approval they require, each
pipeline one realistic mistake: one class of several (side effects), one member of a batch, an empty contributor
list, state kept in memory.
"""

from __future__ import annotations

from typing import Any

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Decision,
    Pipeline,
    ReferenceImplementation,
    Resolved,
    resolved_step,
)
from toolproof.spec import (
    ConfigurationError,
    Disposition,
    InstanceConfig,
    ReasonCode,
    SideEffect,
    Step,
    Suspended,
    ToolKind,
    ToolSpec,
    TrustLabel,
    lowest_trust,
)

from ._common import impl, table

_label = STEP_TABLE[Step.LABEL]


def _external_write_only_policy(
    spec: ToolSpec, config: InstanceConfig, origin: TrustLabel, argument: TrustLabel
) -> Decision:
    if spec.name in config.denied_tools:
        return Decision.DENY
    if spec.kind is ToolKind.CONTROL:
        return Decision.CONTROL
    untrusted = min(origin, argument) is TrustLabel.EXTERNAL_UNTRUSTED
    unsatisfiable = bool(spec.required_scopes - set(config.credentials))
    # The mistake: "workspace writes stay in the sandbox", so only an external write needs approval when untrusted.
    if (spec.side_effect is SideEffect.EXTERNAL_WRITE and untrusted) or (spec.consequential and unsatisfiable):
        return Decision.APPROVAL
    return Decision.ALLOW


@resolved_step
async def _decide_external_only(p: Pipeline, s: CallState, r: Resolved) -> None:
    if s.existing is not None:
        s.decision = Decision(s.existing.decision or Decision.ALLOW)
        return
    s.decision = _external_write_only_policy(r.spec, p.config, s.origin_trust, s.argument_trust)
    if s.decision is Decision.DENY:
        s.finish(ReasonCode.POLICY_DENIED)


class _ExternalWriteOnly(Pipeline):
    steps = table(DECIDE=_decide_external_only)


def approval_external_write_only() -> ReferenceImplementation:
    """D11 (an untrusted consequential call requires approval; D11.5): only EXTERNAL_WRITE tools are held when the
    origin or an argument is EXTERNAL_UNTRUSTED; a WORKSPACE_WRITE tool called from an untrusted context runs
    without approval."""
    return impl("r4-approval-external-write-only", _ExternalWriteOnly)


async def _label_over_contributors(p: Pipeline, s: CallState) -> None:
    await _label(p, s)
    named = {source for sources in s.call.provenance.values() for source in sources}
    present = [item.trust for item in s.request.context if item.id in named]
    if present:
        # The mistake: "was untrusted content in the room" is read as "did an untrusted item feed this call": origin
        # is the minimum over the items the call's provenance names, not over every item of the request.
        s.origin_trust = lowest_trust(*present)


class _OriginOverContributors(Pipeline):
    steps = table(LABEL=_label_over_contributors)


def origin_over_contributors_only() -> ReferenceImplementation:
    """D11 (origin_trust is the minimum over the context items present in the request; D11.1): origin is computed
    over the items named in the call's provenance only, so a request with [USER u, EXTERNAL_UNTRUSTED x] whose
    call names only u as contributor gets origin USER and a consequential call runs without approval."""
    return impl("r4-origin-over-contributors-only", _OriginOverContributors)


async def _label_cached(p: Pipeline, s: CallState) -> None:
    cache: dict[tuple[str, str, int], tuple[TrustLabel, TrustLabel]] = p.__dict__.setdefault("label_cache", {})
    step = (s.request.tenant, s.request.run_id, s.request.step_number)
    if step in cache:
        # The mistake: "labels are a property of the request", so they are computed for the first call of a step
        # and reused for its batch-mates, whose provenance may differ.
        s.origin_trust, s.argument_trust = cache[step]
        return
    await _label(p, s)
    cache[step] = (s.origin_trust, s.argument_trust)


class _LabelCachedPerStep(Pipeline):
    steps = table(LABEL=_label_cached)


def argument_label_cached_per_step() -> ReferenceImplementation:
    """D11 (an argument's label is the minimum over its own contributors; D11.3): labels are computed for the
    first call of a step and reused for the other members of the batch, so in a USER-only request the batch
    [call 1 with provenance {'p': ['u']}, call 2 with no provenance (unknown: EXTERNAL_UNTRUSTED)] runs the second
    consequential call unapproved, its row labelled USER."""
    return impl("r4-argument-label-cached-per-step", _LabelCachedPerStep)


class _PendingHoldsInMemory(Pipeline):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pending: set[str] = set()

    async def run_call(self, request: Any, call: Any) -> Disposition:
        disposition = await super().run_call(request, call)
        if isinstance(disposition, Suspended) and disposition.reason == "approval":
            self.pending.add(disposition.invocation_id)
        return disposition

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        # The mistake: the worker answers only the holds it opened itself (kept in memory); the row says
        # AWAITING_APPROVAL, but after a restart (or in another worker) the hold is "not awaiting approval".
        if invocation_id not in self.pending:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        self.pending.discard(invocation_id)
        return await super().resolve_approval(invocation_id, approved)


def pending_holds_in_memory() -> ReferenceImplementation:
    """D11 (approval holds; D11.8 a hold survives a restart): the approval endpoint accepts answers only for holds
    this worker opened (a set in memory), so after a restart over the same store the row still says
    AWAITING_APPROVAL but approving it raises 'not awaiting approval' and the call can never run."""
    return impl("r4-pending-holds-in-memory", _PendingHoldsInMemory)


async def _label_empty_contributors(p: Pipeline, s: CallState) -> None:
    await _label(p, s)
    labels = {item.id: item.trust for item in s.request.context}
    per_argument = []
    for name in s.call.arguments:
        sources = s.call.provenance.get(name)
        if sources is None:
            per_argument.append(TrustLabel.EXTERNAL_UNTRUSTED)
        elif not sources:
            # The mistake: an argument whose provenance names no contributor is read as "written by the model from
            # the request as a whole", and takes the origin's label instead of EXTERNAL_UNTRUSTED.
            per_argument.append(s.origin_trust)
        else:
            per_argument.append(lowest_trust(*(labels.get(x, TrustLabel.EXTERNAL_UNTRUSTED) for x in sources)))
    s.argument_trust = min(per_argument) if per_argument else s.origin_trust


class _EmptyContributors(Pipeline):
    steps = table(LABEL=_label_empty_contributors)


def empty_contributors_take_origin() -> ReferenceImplementation:
    """D11 (an argument whose provenance is unknown stays EXTERNAL_UNTRUSTED; D11.2, and D17.1 for the bridge): an
    argument whose provenance entry is an empty list takes origin_trust, so in a USER-only request a consequential
    call with provenance {'p': []} (what the bridge sends for a script that names no contributor) runs unapproved;
    an argument missing from provenance is still EXTERNAL_UNTRUSTED."""
    return impl("r4-empty-contributors-take-origin", _EmptyContributors)
