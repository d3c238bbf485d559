"""Witnesses of red-team gaps in decisions 10, 11 and 12: nested key order, labels, approvals, byte limits.

Each one is a pipeline the blind red team found passing the suite before its scenario was widened
(redteam/RESULTS.md); each plants its mistake through the public hooks only.
"""

from __future__ import annotations

import hashlib
import json

from toolproof.reference.hooks import STEP_TABLE, CallState, Decision, Pipeline
from toolproof.spec import (
    EXCERPT_MARKER_SOURCE,
    ConfigurationError,
    Disposition,
    Envelope,
    EventKind,
    InvocationStatus,
    ReasonCode,
    Step,
    Success,
    TrustLabel,
    lowest_trust,
)

from ._registry import witness

# -- D10 ------------------------------------------------------------------------------------


async def _top_level_sorted_key(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.RESOLVE](p, s)
    # The mistake: only the top-level members are put in order; a nested object hashes as it arrived.
    top_sorted = json.dumps(dict(sorted(s.call.arguments.items())), separators=(",", ":"))
    s.key = hashlib.sha256((s.key + top_sorted).encode()).hexdigest()


@witness("key_sorts_top_level_only", ("D10.4",), "sorts only the top-level argument members before hashing the key")
class _KeySortsTopLevelOnly(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _top_level_sorted_key}


# -- D11 ------------------------------------------------------------------------------------


async def _empty_context_trusted(p: Pipeline, s: CallState) -> None:
    await STEP_TABLE[Step.LABEL](p, s)
    if not s.request.context:
        # The mistake: "nothing in the room, so nothing untrusted in the room".
        s.origin_trust = TrustLabel.SYSTEM
        if not s.call.arguments:
            s.argument_trust = s.origin_trust


@witness("empty_context_trusted", ("D11.1",), "labels a request without context items SYSTEM")
class _EmptyContextTrusted(Pipeline):
    steps = STEP_TABLE | {Step.LABEL: _empty_context_trusted}


async def _unknown_contributor_skipped(p: Pipeline, s: CallState) -> None:
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


async def _decide_on_argument_only(p: Pipeline, s: CallState) -> None:
    origin = s.origin_trust
    s.origin_trust = s.argument_trust  # The mistake: the policy is shown the argument's label twice.
    try:
        await STEP_TABLE[Step.DECIDE](p, s)
    finally:
        s.origin_trust = origin


@witness("approval_ignores_origin", ("D11.5",), "decides approval from argument_trust alone, never origin_trust")
class _ApprovalIgnoresOrigin(Pipeline):
    steps = STEP_TABLE | {Step.DECIDE: _decide_on_argument_only}


async def _hold_every_consequential_call(p: Pipeline, s: CallState) -> None:
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


# -- D12 ------------------------------------------------------------------------------------


async def _limit_in_characters(p: Pipeline, s: CallState) -> None:
    if isinstance(s.disposition, Success) and sum(len(e.text) for e in s.disposition.content) <= (
        p.config.max_output_bytes
    ):
        return  # The mistake: characters are compared with a limit in bytes.
    await STEP_TABLE[Step.EXCERPT](p, s)


@witness("limit_counted_in_characters", ("D12.1",), "compares the output's character count with the byte limit")
class _LimitCountedInCharacters(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _limit_in_characters}


def _byte_cut(text: str, budget: int, *, tail: bool) -> bytes:
    """The first (or last) ``budget`` UTF-8 bytes of ``text``, wherever that falls (no more than ``budget``
    characters are encoded, so the cut stays bounded)."""
    if tail:
        return text[-budget:].encode()[-budget:] if budget else b""
    return text[:budget].encode()[:budget]


async def _excerpt_at_byte_offsets(p: Pipeline, s: CallState) -> None:
    original = s.disposition.content if isinstance(s.disposition, Success) else []
    await STEP_TABLE[Step.EXCERPT](p, s)
    if not isinstance(s.disposition, Success):
        return
    markers = [e for e in s.disposition.content if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return  # Delivered whole.
    limit = p.config.max_output_bytes
    budgets = {False: limit // 2, True: limit - limit // 2}
    pieces: dict[bool, list[Envelope]] = {False: [], True: []}
    for tail, ordered in ((False, original), (True, original[::-1])):
        left = budgets[tail]
        for e in ordered:
            if left <= 0:
                break
            data = _byte_cut(e.text, left, tail=tail)
            left -= len(data)
            if data:
                # The mistake: bytes cut mid-character are decoded leniently, as U+FFFD.
                piece = Envelope(trust=e.trust, source=e.source, text=data.decode("utf-8", errors="replace"))
                pieces[tail].append(piece)
    content = [*pieces[False], markers[0], *pieces[True][::-1]]
    s.disposition = s.disposition.model_copy(update={"content": content})


@witness("excerpt_cuts_inside_characters", ("D12.1", "D12.3"), "cuts head and tail at byte offsets, mid-character")
class _ExcerptCutsInsideCharacters(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_at_byte_offsets}
