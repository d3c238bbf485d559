"""Witnesses of decision 11: Trust labels: origin_trust and carried argument provenance.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from sqlmodel import select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Decision,
    InvocationTable,
    Pipeline,
    PipelineHost,
    StepFunction,
)
from toolproof.spec import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    ConfigurationError,
    ContextItem,
    Disposition,
    EventKind,
    IdempotencyClass,
    InvocationStatus,
    Outcome,
    ProposedCall,
    ReasonCode,
    Step,
    Suspended,
    TrustLabel,
    lowest_trust,
)

from ._registry import witness


async def _origin_from_first_item(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    s.origin_trust = s.request.context[0].trust if s.request.context else TrustLabel.EXTERNAL_UNTRUSTED


@witness("origin_from_first_item", ("D11.1",), "takes origin_trust from the first context item")
class _OriginFromFirstItem(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _origin_from_first_item}


def _labels(call: ProposedCall, context: Sequence[ContextItem], missing: TrustLabel, best: bool) -> TrustLabel:
    by_id = {item.id: item.trust for item in context}
    labels = []
    for name in call.arguments:
        sources = [by_id.get(src, TrustLabel.EXTERNAL_UNTRUSTED) for src in call.provenance.get(name, [])]
        labels.append((max(sources) if best else lowest_trust(*sources)) if sources else missing)
    return min(labels, default=missing)


async def _provenance_defaults_to_origin(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    s.argument_trust = _labels(s.call, s.request.context, s.origin_trust, best=False)


@witness("provenance_defaults_to_origin", ("D11.2",), "gives an argument of unknown provenance the origin's label")
class _ProvenanceDefaultsToOrigin(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _provenance_defaults_to_origin}


async def _best_contributor_wins(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    s.argument_trust = _labels(s.call, s.request.context, TrustLabel.EXTERNAL_UNTRUSTED, best=True)


@witness("best_contributor_wins", ("D11.3",), "labels an argument by its most trusted contributor")
class _BestContributorWins(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _best_contributor_wins}


async def _text_match_provenance(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    user_text = " ".join(i.text for i in s.request.context if i.trust is TrustLabel.USER)
    values = [str(v) for v in s.call.arguments.values()]
    if values and all(len(v) >= 16 and v in user_text for v in values):
        s.argument_trust = TrustLabel.USER


@witness(
    "text_match_provenance", ("D11.4",), "raises an argument to USER when its text (16+ chars) appears in USER context"
)
class _TextMatchProvenance(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _text_match_provenance}


async def _never_asks_for_approval(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.DECIDE](p, s)
    if s.decision is Decision.APPROVAL:
        s.decision = Decision.ALLOW


@witness(
    "labels_ignored_by_policy", ("D11.5", "D11.6", "D11.7", "D11.8"), "never asks for approval, whatever the labels"
)
class _LabelsIgnoredByPolicy(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _never_asks_for_approval}


async def _holds_forever(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if s.decision is Decision.APPROVAL and s.existing is None:
        p.store.update(s.invocation_id, {"hold_expires_at": float("inf")})


@witness("unbounded_holds", ("D11.7", "D17.4", "D17.6"), "never expires an approval hold")
class _UnboundedHolds(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _holds_forever}


async def _denies_held_calls(p: PipelineHost, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    if row.status == "AWAITING_APPROVAL":
        s.finish(ReasonCode.APPROVAL_DENIED)
        return
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("approval_never_runs", ("D11.6", "D11.7", "D11.8"), "denies a call even when its hold is approved")
class _ApprovalNeverRuns(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _denies_held_calls}


async def _runs_denied_calls(p: PipelineHost, s: CallState) -> None:
    if isinstance(s.disposition, Outcome) and s.disposition.reason_code is ReasonCode.APPROVAL_DENIED:
        s.disposition = None
        await p.drive(s, Step.CLAIM)
        return
    await STEP_TABLE[Step.COMPLETE](p, s)


@witness("denial_runs_anyway", ("D11.6",), "runs a call whose approval was refused")
class _DenialRunsAnyway(Pipeline):
    steps = STEP_TABLE | {Step.COMPLETE: _runs_denied_calls}


@witness("holds_lost_on_restart", ("D11.8",), "expires every pending hold when the implementation starts")
class _HoldsLostOnRestart(Pipeline):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        with self.store.transaction() as session:
            for row in session.exec(select(InvocationTable).where(InvocationTable.status == "AWAITING_APPROVAL")):
                row.status, row.reason_code = "DENIED", ReasonCode.APPROVAL_EXPIRED.value
                session.add(row)


def _one_item_per_id(keep: str) -> StepFunction:
    """Step 3, then argument_trust again with each id's label taken from one item only: the ``keep`` one given."""

    async def label(p: PipelineHost, s: CallState) -> None:
        await STEP_TABLE[Step.LABEL](p, s)
        items = s.request.context if keep == "last" else list(reversed(s.request.context))
        by_id = {item.id: item.trust for item in items}  # The defect: a later item of the same id overwrites.
        per_argument = [
            lowest_trust(*(by_id.get(src, TrustLabel.EXTERNAL_UNTRUSTED) for src in s.call.provenance.get(name, [])))
            for name in s.call.arguments
        ]
        s.argument_trust = min(per_argument) if per_argument else s.origin_trust

    return label


@witness("duplicate_id_last_item_wins", ("D11.3",), "labels a contributor by the last context item bearing its id")
class _DuplicateIdLastItemWins(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _one_item_per_id("last")}


@witness("duplicate_id_first_item_wins", ("D11.3",), "labels a contributor by the first context item bearing its id")
class _DuplicateIdFirstItemWins(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _one_item_per_id("first")}


async def _empty_context_trusted(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    if not s.request.context:
        # The mistake: "nothing in the room, so nothing untrusted in the room".
        s.origin_trust = TrustLabel.SYSTEM
        if not s.call.arguments:
            s.argument_trust = s.origin_trust


@witness("empty_context_trusted", ("D11.1",), "labels a request without context items SYSTEM")
class _EmptyContextTrusted(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _empty_context_trusted}


async def _unknown_contributor_skipped(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    if not s.call.arguments:
        return
    known = {item.id: item.trust for item in s.request.context}
    per_argument = [
        # The mistake: a contributor id the request does not hold is left out instead of counted untrusted.
        lowest_trust(*(known[src] for src in s.call.provenance.get(name, []) if src in known))
        for name in s.call.arguments
    ]
    s.argument_trust = min(per_argument)


@witness("unknown_contributor_skipped", ("D11.3",), "skips provenance ids that are not in the request")
class _UnknownContributorSkipped(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _unknown_contributor_skipped}


async def _decide_on_argument_only(p: PipelineHost, s: CallState) -> None:
    origin = s.origin_trust
    s.origin_trust = s.argument_trust  # The mistake: the policy is shown the argument's label twice.
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        s.origin_trust = origin


@witness("approval_ignores_origin", ("D11.5",), "decides approval from argument_trust alone, never origin_trust")
class _ApprovalIgnoresOrigin(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _decide_on_argument_only}


async def _hold_every_consequential_call(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.DECIDE](p, s)
    spec = s.resolved.spec if s.resolved else None
    if s.existing is None and s.decision is Decision.ALLOW and spec is not None and spec.consequential:
        s.decision = Decision.APPROVAL  # The mistake: "safe by default", whatever the labels say.


@witness("approval_for_every_consequential_call", ("D11.5",), "holds consequential calls even when fully trusted")
class _ApprovalForEveryConsequentialCall(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _hold_every_consequential_call}


@witness("late_approval_honoured", ("D11.7",), "honours an answer given after the hold's bound if no sweep ran")
class _LateApprovalHonoured(Pipeline):
    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        if not approved:  # The mistake: expiry is left to the sweep; an answer is taken as given.
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)


_hold = STEP_TABLE[Step.HOLD]


async def _hold_for_the_default(p: PipelineHost, s: CallState) -> None:
    config = p.config
    # The defect: a hold is bounded by the ADR's default, whatever approval_timeout_s the instance was given.
    p.config = config.model_copy(update={"approval_timeout_s": DEFAULT_APPROVAL_TIMEOUT_S})
    try:
        await _hold(p, s)
    finally:
        p.config = config


@witness(
    "hold_bound_ignores_configuration",
    ("D11.7", "D17.4"),
    "bounds every approval hold by the default 300 s, not the configured approval_timeout_s",
)
class _HoldBoundIgnoresConfiguration(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _hold_for_the_default}


_label = STEP_TABLE[Step.LABEL]


async def _origin_from_the_last_item(p: PipelineHost, s: CallState) -> None:
    await _label(p, s)
    items = s.request.context
    was = s.origin_trust
    # The defect: the item the model saw last speaks for the request ("the latest turn is what it acted on").
    s.origin_trust = items[-1].trust if items else TrustLabel.EXTERNAL_UNTRUSTED
    if not s.call.arguments and s.argument_trust is was:
        s.argument_trust = s.origin_trust  # A call without arguments takes origin_trust, as the reference does.


@witness(
    "origin_from_last_context_item",
    ("D11.1", "D11.5"),
    "takes origin_trust from the request's last context item, not the minimum over all of them",
)
class _OriginFromLastContextItem(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _origin_from_the_last_item}


def _holds_opened_here(p: PipelineHost) -> set[str]:
    held: set[str] = p.__dict__.setdefault("_holds_opened_here", set())
    return held


async def _hold_and_remember(p: PipelineHost, s: CallState) -> None:
    await _hold(p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "approval":
        _holds_opened_here(p).add(s.invocation_id)


@witness(
    "hold_bound_known_to_its_worker",
    ("D11.7",),
    "checks a hold's bound only when the worker that opened it answers it; after a restart or in another worker a "
    "late answer is taken as given",
)
class _HoldBoundKnownToItsWorker(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _hold_and_remember}

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        if invocation_id in _holds_opened_here(self):
            return await super().resolve_approval(invocation_id, approved)
        row = self.store.get_or_none(invocation_id)
        if row is None or row.status != InvocationStatus.AWAITING_APPROVAL.value:
            raise ConfigurationError(f"invocation {invocation_id!r} is not awaiting approval")
        state = self.state_from_row(row)
        # The defect: a hold this worker did not open has no bound it knows of, so the answer stands as given.
        if not approved:
            state.finish(ReasonCode.APPROVAL_DENIED)
        self.store.update(invocation_id, {}, [EventKind.APPROVAL_RESOLVED])
        return await self.drive(state, Step.CLAIM)


_decide = STEP_TABLE[Step.DECIDE]


async def _idempotent_writes_need_no_approval(p: PipelineHost, s: CallState) -> None:
    await _decide(p, s)
    spec = s.resolved.spec if s.resolved else None
    if s.decision is Decision.APPROVAL and spec is not None and spec.idempotency is IdempotencyClass.IDEMPOTENT:
        # The defect: "an idempotent write can be repeated harmlessly, so it needs no person", whatever the labels.
        s.decision = Decision.ALLOW


@witness(
    "approval_skips_idempotent_writes",
    ("D11.5",),
    "lets IDEMPOTENT consequential calls run unapproved when their origin or argument is EXTERNAL_UNTRUSTED",
)
class _ApprovalSkipsIdempotentWrites(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _idempotent_writes_need_no_approval}


async def _label_best_of_the_batch(p: PipelineHost, s: CallState) -> None:
    own = s.call
    labels = []
    for member in s.request.calls:
        s.call = member
        await _label(p, s)
        labels.append(s.argument_trust)
    s.call = own
    await _label(p, s)
    # The defect: "the step was built from the user's request", so every member gets the best label in its batch.
    s.argument_trust = max(labels, default=s.argument_trust)


@witness(
    "argument_label_best_of_batch",
    ("D11.3", "D11.5"),
    "gives every member of a batch the highest argument_trust of any member, not the minimum over its own contributors",
)
class _ArgumentLabelBestOfBatch(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _label_best_of_the_batch}


def _per_argument(s: CallState, label_of: Callable[[str, list[str] | None], TrustLabel]) -> TrustLabel:
    """argument_trust from ``label_of(argument, its contributors or None)``; no arguments: the origin's label."""
    labels = [label_of(name, s.call.provenance.get(name)) for name in s.call.arguments]
    return min(labels) if labels else s.origin_trust


def _exact_ids(s: CallState) -> Callable[[str, list[str] | None], TrustLabel]:
    """The reference's reading: each contributor's lowest label by exact id, unknown ones EXTERNAL_UNTRUSTED."""
    by_id: dict[str, TrustLabel] = {}
    for item in s.request.context:
        by_id[item.id] = lowest_trust(item.trust, by_id.get(item.id, item.trust))
    return lambda name, ids: lowest_trust(*(by_id.get(i, TrustLabel.EXTERNAL_UNTRUSTED) for i in ids or []))


async def _origin_skips_empty_items(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    # The defect: an item with no text "contributed nothing", so it does not count toward origin_trust.
    s.origin_trust = lowest_trust(*(item.trust for item in s.request.context if item.text.strip()))
    s.argument_trust = _per_argument(s, _exact_ids(s))


@witness("origin_skips_empty_items", ("D11.1",), "leaves context items with empty text out of origin_trust")
class _OriginSkipsEmptyItems(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _origin_skips_empty_items}


async def _empty_provenance_takes_origin(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    exact = _exact_ids(s)
    # The defect: an empty contributor list is read as "the model wrote it itself", labelled like the request.
    s.argument_trust = _per_argument(s, lambda name, ids: s.origin_trust if ids == [] else exact(name, ids))


@witness(
    "empty_provenance_takes_origin", ("D11.3",), "labels an argument with an empty contributor list as origin_trust"
)
class _EmptyProvenanceTakesOrigin(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _empty_provenance_takes_origin}


async def _quotes_stand_in_for_provenance(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    exact = _exact_ids(s)
    known = {item.id for item in s.request.context}

    def label(name: str, ids: list[str] | None) -> TrustLabel:
        value = s.call.arguments[name]
        if not any(i in known for i in ids or []) and isinstance(value, str) and len(value) >= 16:
            # The defect: with no usable provenance, an argument found verbatim in an item takes that item's label.
            quoted = [item.trust for item in s.request.context if value in item.text]
            if quoted:
                return max(quoted)
        return exact(name, ids)

    s.argument_trust = _per_argument(s, label)


@witness(
    "quotes_stand_in_for_provenance",
    ("D11.4",),
    "labels an argument without usable provenance by the item whose text it quotes",
)
class _QuotesStandInForProvenance(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _quotes_stand_in_for_provenance}


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip().casefold()


async def _provenance_ids_folded(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    by_id: dict[str, TrustLabel] = {}
    for item in s.request.context:
        by_id[_folded(item.id)] = lowest_trust(item.trust, by_id.get(_folded(item.id), item.trust))
    # The defect: contributor ids matched case-folded, trimmed and NFKC-normalized.
    s.argument_trust = _per_argument(
        s, lambda name, ids: lowest_trust(*(by_id.get(_folded(i), TrustLabel.EXTERNAL_UNTRUSTED) for i in ids or []))
    )


@witness("provenance_ids_folded", ("D11.3",), "matches contributor ids case-folded, trimmed and NFKC-normalized")
class _ProvenanceIdsFolded(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _provenance_ids_folded}


async def _argument_minimum_alphabetical(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    labels: dict[str, list[TrustLabel]] = {}
    for item in s.request.context:
        labels.setdefault(item.id, []).append(item.trust)
    per_argument = []
    for name in s.call.arguments:
        found = [
            t for source in s.call.provenance.get(name, []) for t in labels.get(source, [TrustLabel.EXTERNAL_UNTRUSTED])
        ]
        # The defect: the minimum of one argument's contributors is the alphabetically first label.
        per_argument.append(TrustLabel(min(t.value for t in found)) if found else TrustLabel.EXTERNAL_UNTRUSTED)
    s.argument_trust = lowest_trust(*per_argument) if per_argument else s.origin_trust


@witness(
    "argument_minimum_alphabetical",
    ("D11.3",),
    "takes an argument's lowest contributor as the alphabetically first label",
)
class _ArgumentMinimumAlphabetical(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _argument_minimum_alphabetical}


@witness(
    "approval_covers_its_batch",
    ("D11.6",),
    "approving one held member of a batch approves every other held member of its step",
)
class _ApprovalCoversItsBatch(Pipeline):
    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        row = self.store.get_or_none(invocation_id)
        answered = await super().resolve_approval(invocation_id, approved)
        if row is None or not approved:
            return answered
        # The defect: one approval answers the step, so the siblings held with it run too.
        for other in self.store.invocations(row.run_id):
            if (
                other.invocation_id != invocation_id
                and other.step_number == row.step_number
                and other.status == InvocationStatus.AWAITING_APPROVAL.value
            ):
                await super().resolve_approval(other.invocation_id, True)
        return answered


async def _hold_bounded_from_record(p: PipelineHost, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if isinstance(s.disposition, Suspended) and s.disposition.reason == "approval":
        row = p.store.get(s.invocation_id)
        # The mistake: the bound counts from the row's created_at, not from the instant the hold opened.
        p.store.update(s.invocation_id, {"hold_expires_at": row.created_at + p.config.approval_timeout_s})


@witness(
    "hold_bound_from_created_at",
    ("D11.7",),
    "counts an approval hold's bound from the row's created_at, so a hold a recovering worker opens late is cut short",
)
class _HoldBoundFromCreatedAt(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _hold_bounded_from_record}
