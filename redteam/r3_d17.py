"""Round 3, decision 17: the bridge's divergence check, and the provenance of a script's arguments."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream

from toolproof.reference.hooks import DISPOSITION, Bridge, Pipeline, ReferenceImplementation
from toolproof.spec import Disposition, ProposedCall, ScriptRequest, ScriptRun, StepRequest, Suspended, TrustLabel

from ._common import impl


def _bridge_parts() -> Any:
    from toolproof.reference import _bridge

    return _bridge


class _KnobBridge(Bridge):
    """The reference bridge's run loop with one knob turned."""

    check_after_call = False
    user_for_unnamed = False

    def provenance(self, request: ScriptRequest, call: dict[str, Any]) -> dict[str, list[str]]:
        if call["provenance"]:
            return dict(call["provenance"])
        if self.user_for_unnamed:
            # The mistake: an argument the script names no contributor for is credited to the run's USER items
            # ("the script was written for the user").
            users = [item.id for item in request.context if item.trust is TrustLabel.USER]
            return {name: list(users) for name in call["arguments"]}
        return {name: [] for name in call["arguments"]}

    async def run(self, request: ScriptRequest) -> ScriptRun:
        b = _bridge_parts()
        digest = b.script_hash(request.script)
        process = await anyio.open_process([sys.executable, "-c", b.SANDBOX, request.script])
        call_ids: list[str] = []
        dispositions: list[Disposition] = []
        try:
            assert process.stdout is not None
            async for line in b._lines(TextReceiveStream(process.stdout)):
                message = json.loads(line)
                if "done" in message:
                    return ScriptRun(status="completed", call_ids=call_ids, dispositions=dispositions)
                if "error" in message:
                    text = f"the script raised at ordinal {len(call_ids) + 1}: {message['error']}"
                    return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
                ordinal = len(call_ids) + 1
                call = ProposedCall(
                    call_id=self.call_id(request, digest, ordinal),
                    tool_name=message["call"]["tool_name"],
                    arguments=message["call"]["arguments"],
                    provenance=self.provenance(request, message["call"]),
                )
                call_ids.append(call.call_id)
                diverged = "" if self.check_after_call else self.divergence(request, call, ordinal)
                if diverged:
                    return ScriptRun(status="diverged", call_ids=call_ids, dispositions=dispositions, message=diverged)
                step = StepRequest(
                    tenant=request.tenant,
                    run_id=request.run_id,
                    step_number=request.step_number,
                    calls=[call],
                    context=request.context,
                )
                disposition = await self.pipeline.run_call(step, call)
                dispositions.append(disposition)
                if self.check_after_call:
                    # The mistake: the replayed call is checked against the record only after it has run.
                    diverged = self.divergence(request, call, ordinal)
                    if diverged:
                        return ScriptRun(
                            status="diverged", call_ids=call_ids, dispositions=dispositions, message=diverged
                        )
                if isinstance(disposition, Suspended):
                    return ScriptRun(status="held", call_ids=call_ids, dispositions=dispositions)
                await b._send(process, {"disposition": json.loads(DISPOSITION.dump_json(disposition))})
            return ScriptRun(
                status="failed", call_ids=call_ids, dispositions=dispositions, message="the sandbox ended early"
            )
        finally:
            await b._tear_down(process)


class _AfterBridge(_KnobBridge):
    check_after_call = True


class _DivergenceCheckedAfterCall(Pipeline):
    bridge_class = _AfterBridge


def divergence_checked_after_call() -> ReferenceImplementation:
    """D17 (a script that diverges on replay is stopped, naming the ordinal, and nothing recorded is overwritten;
    D17.5): the divergence check runs after the replayed call went through the pipeline, so the diverging call (other
    arguments at a recorded ordinal) executes and is recorded under the recorded call_id before the script is
    stopped."""
    return impl("r3-divergence-checked-after-call", _DivergenceCheckedAfterCall)


class _UserBridge(_KnobBridge):
    user_for_unnamed = True


class _BridgeUnnamedArgumentsUser(Pipeline):
    bridge_class = _UserBridge


def bridge_unnamed_arguments_user() -> ReferenceImplementation:
    """D17 (a bridge call carries only the provenance the script gave it; an argument without a named contributor
    is EXTERNAL_UNTRUSTED; D17.1): an argument the script names no contributor for is credited to the request's USER
    items, so a script's consequential call with unprovenanced arguments is labelled USER and skips its approval
    when the context holds only USER items."""
    return impl("r3-bridge-unnamed-arguments-user", _BridgeUnnamedArgumentsUser)
