"""Witnesses of decisions 10 (the idempotency key) and 11 (labels and approvals)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace

from sqlmodel import select

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    ContextParts,
    Decision,
    InvocationTable,
    Pipeline,
    Resolved,
    StepFunction,
    idempotency_key,
)
from toolproof.spec import ContextItem, Outcome, ProposedCall, ReasonCode, Step, TrustLabel, lowest_trust

from ._registry import witness


def _key_without(*blank: str) -> StepFunction:
    """Step 1, then the key computed again with the ``blank`` inputs blanked."""

    async def resolve(p: Pipeline, s: CallState) -> None:
        await STEP_TABLE[Step.RESOLVE](p, s)
        inputs = {
            "tenant": s.request.tenant,
            "run_id": s.request.run_id,
            "step_number": s.request.step_number,
            "call_id": s.call.call_id,
            "tool_name": s.call.tool_name,
            "tool_version": s.resolved.spec.version if s.resolved else None,
            "arguments": s.call.arguments,
        }
        for name in blank:
            inputs[name] = 0 if name == "step_number" else ""
        s.key = idempotency_key(**inputs)  # type: ignore[arg-type]

    return resolve


@witness("tenantless_key", ("D10.1",), "leaves the tenant out of the key")
class _TenantlessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _key_without("tenant")}


@witness("stepless_key", ("D10.3",), "leaves step_number out of the key")
class _SteplessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _key_without("step_number")}


@witness("versionless_key", ("D10.5",), "leaves tool_version out of the key")
class _VersionlessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _key_without("tool_version")}


@witness("callless_key", ("D15.1",), "leaves call_id out of the key, so batch members collide")
class _CalllessKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _key_without("call_id")}


@witness("attempt_in_key", ("D10.2",), "mixes attempt_number into the key each execution carries")
class _AttemptInKey(Pipeline):
    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        key = hashlib.sha256(f"{s.key}/{s.attempt}".encode()).hexdigest()
        return replace(parts, identity=parts.identity.model_copy(update={"idempotency_key": key}))


async def _order_sensitive_key(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    s.key = hashlib.sha256((s.key + json.dumps(s.call.arguments)).encode()).hexdigest()


@witness("order_sensitive_key", ("D10.4",), "hashes the arguments in the order they arrived")
class _OrderSensitiveKey(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _order_sensitive_key}


# -- D11 ------------------------------------------------------------------------------------


async def _origin_from_first_item(p: Pipeline, s: CallState) -> None:
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


async def _provenance_defaults_to_origin(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    s.argument_trust = _labels(s.call, s.request.context, s.origin_trust, best=False)


@witness("provenance_defaults_to_origin", ("D11.2",), "gives an argument of unknown provenance the origin's label")
class _ProvenanceDefaultsToOrigin(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _provenance_defaults_to_origin}


async def _best_contributor_wins(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    s.argument_trust = _labels(s.call, s.request.context, TrustLabel.EXTERNAL_UNTRUSTED, best=True)


@witness("best_contributor_wins", ("D11.3",), "labels an argument by its most trusted contributor")
class _BestContributorWins(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _best_contributor_wins}


async def _text_match_provenance(p: Pipeline, s: CallState) -> None:
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


async def _never_asks_for_approval(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.DECIDE](p, s)
    if s.decision is Decision.APPROVAL:
        s.decision = Decision.ALLOW


@witness(
    "labels_ignored_by_policy", ("D11.5", "D11.6", "D11.7", "D11.8"), "never asks for approval, whatever the labels"
)
class _LabelsIgnoredByPolicy(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _never_asks_for_approval}


async def _holds_forever(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.HOLD](p, s)
    if s.decision is Decision.APPROVAL and s.existing is None:
        p.store.update(s.invocation_id, {"hold_expires_at": float("inf")})


@witness("unbounded_holds", ("D11.7", "D17.4", "D17.6"), "never expires an approval hold")
class _UnboundedHolds(Pipeline):
    steps = STEP_TABLE | {Step.HOLD: _holds_forever}


async def _denies_held_calls(p: Pipeline, s: CallState) -> None:
    row = p.store.get(s.invocation_id)
    if row.status == "AWAITING_APPROVAL":
        s.finish(ReasonCode.APPROVAL_DENIED)
        return
    await STEP_TABLE[Step.CLAIM](p, s)


@witness("approval_never_runs", ("D11.6", "D11.7", "D11.8"), "denies a call even when its hold is approved")
class _ApprovalNeverRuns(Pipeline):
    steps = STEP_TABLE | {Step.CLAIM: _denies_held_calls}


async def _runs_denied_calls(p: Pipeline, s: CallState) -> None:
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

    async def label(p: Pipeline, s: CallState) -> None:
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
