"""Witnesses whose defect shows only on a path another decision's scenarios walk: the harness's checks on
everything a scenario observes (``Rule.everywhere``: the outcome table, the event order) reject them there."""

from __future__ import annotations

from toolproof.reference.hooks import InvocationTable, Pipeline
from toolproof.spec import (
    Disposition,
    EventKind,
    InvocationStatus,
    Outcome,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
)

from ._registry import witness


@witness(
    "recovered_uncertain_message_explains",
    ("D13.3",),
    "a call recovery resolves UNCERTAIN gets a message that explains the crash instead of the table's",
    through=("D4.11",),
)
class _RecoveredUncertainMessageExplains(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        decided = await super().recover(row)
        if isinstance(decided, Outcome) and decided.status is InvocationStatus.UNCERTAIN:
            # The mistake: "more helpful" text for the one case the table's message seems too terse for.
            return decided.model_copy(update={"message": "The worker died after the effect was sent; check it."})
        return decided


def _expired_retryable(decided: Disposition) -> Disposition:
    if isinstance(decided, Outcome) and decided.reason_code is ReasonCode.APPROVAL_EXPIRED:
        # The mistake: "nobody answered, so asking again may work".
        return decided.model_copy(update={"retryable": not decided.retryable})
    return decided


@witness(
    "expired_approval_retryable",
    ("D13.2",),
    "an approval that expires is answered with retryable flipped against the table",
    through=("D11.7",),
)
class _ExpiredApprovalRetryable(Pipeline):
    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        return _expired_retryable(await super().resolve_approval(invocation_id, approved))

    async def sweep(self) -> list[Disposition]:
        return [_expired_retryable(d) for d in await super().sweep()]


@witness(
    "script_outcomes_prefixed",
    ("D13.3",),
    "the bridge prefixes each refused call's message with the ordinal it refused",
    through=("D17.4",),
)
class _ScriptOutcomesPrefixed(Pipeline):
    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        ran = await super().run_script(request)
        dispositions = [
            d.model_copy(update={"message": f"call {n}: {d.message}"}) if isinstance(d, Outcome) else d
            for n, d in enumerate(ran.dispositions)
        ]
        return ran.model_copy(update={"dispositions": dispositions})


@witness(
    "recovery_logged_after_decision",
    ("D3.7",),
    "a recovered call's tool_call.recovered event is written once more after the call completes",
    through=("D4.11",),
)
class _RecoveryLoggedAfterDecision(Pipeline):
    async def recover(self, row: InvocationTable) -> Disposition:
        decided = await super().recover(row)
        # The mistake: the sweep logs what it decided, after the decision it logs.
        self.store.update(row.invocation_id, {}, [EventKind.RECOVERED])
        return decided


@witness(
    "resume_completes_twice",
    ("D3.7", "D16.4"),
    "a resumed control call writes a tool_call.completed for the suspension as well as for the call",
)
class _ResumeCompletesTwice(Pipeline):
    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        self.store.update(invocation_id, {}, [EventKind.COMPLETED])  # The mistake: the suspension "completes".
        return await super().resume(invocation_id, answer)
