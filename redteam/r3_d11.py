"""Round 3, decision 11: origin_trust, per-argument labels, and the approval hold's bound across a restart."""

from __future__ import annotations

from toolproof.reference.hooks import STEP_TABLE, CallState, Pipeline, ReferenceImplementation
from toolproof.spec import (
    ConfigurationError,
    Disposition,
    EventKind,
    InvocationStatus,
    ReasonCode,
    Step,
    Suspended,
    TrustLabel,
    lowest_trust,
)

from ._common import impl, table


async def _label_latest_item(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    context = s.request.context
    # The mistake: origin_trust is the label of the item the model answered last, not the least trusted present.
    s.origin_trust = context[-1].trust if context else TrustLabel.EXTERNAL_UNTRUSTED
    if not s.call.arguments:
        s.argument_trust = s.origin_trust


class _OriginFromLatestItem(Pipeline):
    steps = table(LABEL=_label_latest_item)


def origin_from_latest_item() -> ReferenceImplementation:
    """D11 (origin_trust is the minimum label over the context items present in the request; D11.1): origin_trust
    is the label of the request's last context item, so an EXTERNAL_UNTRUSTED page followed by a USER message
    gives origin USER."""
    return impl("r3-origin-from-latest-item", _OriginFromLatestItem)


def _most_trusted(labels: list[TrustLabel]) -> TrustLabel:
    return max(labels) if labels else TrustLabel.EXTERNAL_UNTRUSTED


async def _label_max_contributor(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    labels = {item.id: item.trust for item in s.request.context}
    per_argument = [
        # The mistake: an argument takes its best contributor's label ("the user vouched for it").
        _most_trusted([labels.get(source, TrustLabel.EXTERNAL_UNTRUSTED) for source in s.call.provenance.get(name, [])])
        for name in s.call.arguments
    ]
    s.argument_trust = lowest_trust(*per_argument) if per_argument else s.origin_trust


class _ArgumentLabelMaxOverContributors(Pipeline):
    steps = table(LABEL=_label_max_contributor)


def argument_label_max_over_contributors() -> ReferenceImplementation:
    """D11 (where any untrusted item contributed to a field the lower label stands; D11.3): an argument's label is
    the most trusted of its contributors (the minimum is still taken across arguments), so an argument built from a
    USER item and an EXTERNAL_UNTRUSTED item is labelled USER."""
    return impl("r3-argument-label-max-over-contributors", _ArgumentLabelMaxOverContributors)


async def _hold_remembering(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "approval" and s.existing is None:
        remembered: dict[str, float] = p.__dict__.setdefault("_r3_hold_bounds", {})
        remembered[s.invocation_id] = p.clock.now() + p.config.approval_timeout_s


class _HoldExpiryInMemory(Pipeline):
    steps = table(HOLD=_hold_remembering)

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        remembered: dict[str, float] = self.__dict__.setdefault("_r3_hold_bounds", {})
        bound = remembered.get(invocation_id)
        # The mistake: the bound is read from this worker's memory; a hold it did not open counts as unexpired.
        if bound is not None and self.clock.now() > bound:
            state.finish(ReasonCode.APPROVAL_EXPIRED)
        elif not approved:
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)


def hold_expiry_in_memory() -> ReferenceImplementation:
    """D11 (an approval hold is persisted, expires after its bound and survives a restart; D11.6): the hold's bound
    is checked against the worker's in-memory table of holds it opened, so after a restart (or in another worker) a
    late approval of an expired hold is honoured and the call executes."""
    return impl("r3-hold-expiry-in-memory", _HoldExpiryInMemory)
