"""Decision 11: origin_trust, argument_trust, approval."""

from __future__ import annotations

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
    EventKind,
    InvocationStatus,
    ReasonCode,
    Step,
    ToolKind,
    TrustLabel,
    lowest_trust,
)

from ._common import impl, table

_reference_label = STEP_TABLE[Step.LABEL]
_reference_decide = STEP_TABLE[Step.DECIDE]


async def _label_empty_trusted(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    if not s.request.context:
        s.origin_trust = TrustLabel.SYSTEM  # The mistake: "nothing in the room, nothing untrusted in the room".
        if not s.call.arguments:
            s.argument_trust = s.origin_trust


class _EmptyContextTrusted(Pipeline):
    steps = table(LABEL=_label_empty_trusted)


def empty_context_is_trusted() -> ReferenceImplementation:
    """D11 "Trust labels have a defined and fail-closed origin": a request with no context items gets origin_trust
    SYSTEM (min over nothing taken as the top label) instead of EXTERNAL_UNTRUSTED."""
    return impl("d11-empty-context-trusted", _EmptyContextTrusted)


async def _label_verbatim(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    user_texts = [i.text for i in s.request.context if i.trust >= TrustLabel.USER and len(i.text) >= 16]
    labels = []
    for name, value in s.call.arguments.items():
        text = value if isinstance(value, str) else None
        sources = s.call.provenance.get(name)
        known = {i.id: i.trust for i in s.request.context}
        label = lowest_trust(*(known.get(x, TrustLabel.EXTERNAL_UNTRUSTED) for x in sources or []))
        if text and len(text) >= 16 and any(text in u for u in user_texts):
            label = max(label, TrustLabel.USER)  # The mistake: a verbatim 16-character match raises the label.
        labels.append(label)
    if labels:
        s.argument_trust = min(labels)


class _Verbatim(Pipeline):
    steps = table(LABEL=_label_verbatim)


def verbatim_match_raises_label() -> ReferenceImplementation:
    """D11 "not inferred by matching argument text against USER-labelled context": an argument whose text (16+
    characters) appears verbatim in a USER item is raised to USER, even when an EXTERNAL_UNTRUSTED item contributed
    it (quoting the user)."""
    return impl("d11-verbatim-match-raises", _Verbatim)


async def _label_skip_unknown(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    known = {i.id: i.trust for i in s.request.context}
    per = []
    for name in s.call.arguments:
        sources = [known[x] for x in s.call.provenance.get(name, []) if x in known]  # unknown ids are skipped
        per.append(lowest_trust(*sources))
    if per:
        s.argument_trust = min(per)


class _SkipUnknown(Pipeline):
    steps = table(LABEL=_label_skip_unknown)


def unknown_contributor_ignored() -> ReferenceImplementation:
    """D11 "An argument whose provenance is unknown stays EXTERNAL_UNTRUSTED": a contributor id that is not in the
    request is skipped rather than counted EXTERNAL_UNTRUSTED, so provenance ["user-1", "gone"] labels USER."""
    return impl("d11-unknown-contributor-ignored", _SkipUnknown)


async def _label_missing_takes_origin(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    known = {i.id: i.trust for i in s.request.context}
    per = []
    for name in s.call.arguments:
        if name not in s.call.provenance:
            per.append(s.origin_trust)  # The mistake: no provenance recorded -> "came from the request".
        else:
            per.append(lowest_trust(*(known.get(x, TrustLabel.EXTERNAL_UNTRUSTED) for x in s.call.provenance[name])))
    if per:
        s.argument_trust = min(per)


class _MissingOrigin(Pipeline):
    steps = table(LABEL=_label_missing_takes_origin)


def missing_provenance_takes_origin() -> ReferenceImplementation:
    """D11 "argument_trust defaults to EXTERNAL_UNTRUSTED": an argument with no provenance entry takes the
    request's origin_trust, so with an all-USER context an argument of unknown provenance reads USER."""
    return impl("d11-missing-provenance-takes-origin", _MissingOrigin)


async def _label_max(p: Pipeline, s: CallState) -> None:
    await _reference_label(p, s)
    known = {i.id: i.trust for i in s.request.context}
    per = [
        lowest_trust(*(known.get(x, TrustLabel.EXTERNAL_UNTRUSTED) for x in s.call.provenance.get(name, [])))
        for name in s.call.arguments
    ]
    if per:
        s.argument_trust = max(per)  # The mistake: the call's label is its best argument's.


class _MaxArgs(Pipeline):
    steps = table(LABEL=_label_max)


def argument_trust_max_over_arguments() -> ReferenceImplementation:
    """D11 "where any untrusted item contributed to a field the lower label stands": per-argument labels are
    min'd correctly but the call's argument_trust is the max over its arguments."""
    return impl("d11-argument-trust-max", _MaxArgs)


@resolved_step
async def _decide_argument_only(p: Pipeline, s: CallState, r: Resolved) -> None:
    if s.existing is not None:
        s.decision = Decision(s.existing.decision or Decision.ALLOW)
        return
    spec = r.spec
    if spec.name in p.config.denied_tools:
        s.decision = Decision.DENY
        s.finish(ReasonCode.POLICY_DENIED)
        return
    if spec.kind is ToolKind.CONTROL:
        s.decision = Decision.CONTROL
        return
    untrusted = s.argument_trust is TrustLabel.EXTERNAL_UNTRUSTED  # The mistake: origin_trust not consulted.
    unsatisfiable = bool(spec.required_scopes - set(p.config.credentials))
    s.decision = Decision.APPROVAL if spec.consequential and (untrusted or unsatisfiable) else Decision.ALLOW


class _ArgumentOnly(Pipeline):
    steps = table(DECIDE=_decide_argument_only)


def approval_checks_argument_label_only() -> ReferenceImplementation:
    """D11 (policy consumes argument_trust and origin_trust): approval looks only at argument_trust, so a
    consequential call with trusted arguments made while untrusted content was in the room runs without approval."""
    return impl("d11-approval-argument-only", _ArgumentOnly)


class _NoExpiryOnAnswer(Pipeline):
    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        if not approved:  # The mistake: expiry is the sweep's job, an answer is always honoured.
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)


def late_approval_honoured() -> ReferenceImplementation:
    """D11/D17 "Approval holds are bounded (default 300s)": an approval answered after the bound (before any sweep
    ran) is honoured and the call executes, instead of DENIED approval_expired."""
    return impl("d11-late-approval-honoured", _NoExpiryOnAnswer)
