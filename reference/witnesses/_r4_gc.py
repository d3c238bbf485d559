"""Witnesses of the fourth red team's gaps in decisions 11 and 14: an approval policy that reads "consequential" too
narrowly, argument labels shared across the members of one batch, denials forgiven by a success, and a breaker
whose "identical" ignores which tool of a namespace was called."""

from __future__ import annotations

import hashlib

from toolproof.reference.hooks import STEP_TABLE, CallState, Decision, Pipeline, dump_json
from toolproof.spec import IdempotencyClass, InvocationStatus, ReasonCode, Step

from ._registry import witness

_label = STEP_TABLE[Step.LABEL]
_decide = STEP_TABLE[Step.DECIDE]
_resolve = STEP_TABLE[Step.RESOLVE]


async def _idempotent_writes_need_no_approval(p: Pipeline, s: CallState) -> None:
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


async def _label_best_of_the_batch(p: Pipeline, s: CallState) -> None:
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


@witness(
    "success_forgives_denials",
    ("D14.2",),
    "stops counting an identical call's denials once any identical call of the run has SUCCEEDED",
)
class _SuccessForgivesDenials(Pipeline):
    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        if any(status is InvocationStatus.SUCCEEDED for status, _ in prior):
            # The defect: "a person approved it once, so earlier refusals no longer speak for them": a success among
            # the earlier identical calls clears the denials. They still count for the loop (no reason, no denial).
            prior = [(status, None if status is InvocationStatus.DENIED else reason) for status, reason in prior]
        return super().trip(prior)


async def _resolve_hash_namespace(p: Pipeline, s: CallState) -> None:
    await _resolve(p, s)
    # The defect: "identical" is read as "the same server and arguments": the breaker hashes the tool's namespace
    # (the part before its last dot) with the arguments, so t.a and t.b with equal arguments share one counter.
    namespace = s.call.tool_name.rpartition(".")[0]
    s.call_hash = hashlib.sha256(dump_json([namespace, s.call.arguments]).encode()).hexdigest()


@witness(
    "identical_by_tool_namespace",
    ("D14.1",),
    "counts calls to different tools of one namespace with equal arguments as identical",
)
class _IdenticalByToolNamespace(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_hash_namespace}
