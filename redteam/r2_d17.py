"""Round 2, decision 17: the programmatic orchestration bridge."""

from __future__ import annotations

import json
import sys
from typing import ClassVar

import anyio
from anyio.streams.text import TextReceiveStream

from toolproof.reference.hooks import DISPOSITION, Bridge, Pipeline, ReferenceImplementation
from toolproof.spec import Disposition, ProposedCall, ScriptRequest, ScriptRun, StepRequest, Suspended

from ._common import impl


class _KnobBridge(Bridge):
    """The reference bridge's run loop with one knob per mistake."""

    per_tool_ordinals: ClassVar[bool] = False
    provenance_from_context: ClassVar[bool] = False

    async def run(self, request: ScriptRequest) -> ScriptRun:
        from toolproof.reference._bridge import SANDBOX, _lines, _send, _tear_down, script_hash

        digest = script_hash(request.script)
        process = await anyio.open_process([sys.executable, "-c", SANDBOX, request.script])
        call_ids: list[str] = []
        dispositions: list[Disposition] = []
        per_tool: dict[str, int] = {}
        try:
            assert process.stdout is not None
            async for line in _lines(TextReceiveStream(process.stdout)):
                message = json.loads(line)
                if "done" in message:
                    return ScriptRun(status="completed", call_ids=call_ids, dispositions=dispositions)
                if "error" in message:
                    text = f"the script raised at ordinal {len(call_ids) + 1}: {message['error']}"
                    return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
                tool_name = message["call"]["tool_name"]
                arguments = message["call"]["arguments"]
                ordinal = len(call_ids) + 1
                if self.per_tool_ordinals:
                    # The mistake: the bridge counts calls per tool ("the third send_email"), not per script.
                    per_tool[tool_name] = per_tool.get(tool_name, 0) + 1
                    call_id = f"script-{digest[:16]}-{tool_name}-{per_tool[tool_name]}"
                else:
                    call_id = self.call_id(request, digest, ordinal)
                provenance = message["call"]["provenance"]
                if not provenance:
                    if self.provenance_from_context:
                        # The mistake: "the script was written from the whole context", so every argument is
                        # credited to every item of the request.
                        every = [item.id for item in request.context]
                        provenance = {name: list(every) for name in arguments}
                    else:
                        provenance = {name: [] for name in arguments}
                call = ProposedCall(call_id=call_id, tool_name=tool_name, arguments=arguments, provenance=provenance)
                call_ids.append(call.call_id)
                diverged = self.divergence(request, call, ordinal)
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
                if isinstance(disposition, Suspended):
                    return ScriptRun(status="held", call_ids=call_ids, dispositions=dispositions)
                await _send(process, {"disposition": json.loads(DISPOSITION.dump_json(disposition))})
            return ScriptRun(
                status="failed", call_ids=call_ids, dispositions=dispositions, message="the sandbox ended early"
            )
        finally:
            await _tear_down(process)


class _PerToolBridge(_KnobBridge):
    per_tool_ordinals = True


class _PerToolPipeline(Pipeline):
    bridge_class = _PerToolBridge


def ordinal_counted_per_tool() -> ReferenceImplementation:
    """D17 "call_id from the script hash and a bridge-counted call ordinal": the bridge counts an ordinal per tool
    name (the n-th call of that tool), not per script, so a replay that calls tools in another order, or calls a
    tool the first run did not call, is never found diverged at an ordinal and runs against (or beside) the
    recorded outcomes."""
    return impl("r2-d17-ordinal-counted-per-tool", _PerToolPipeline)


class _ContextProvenanceBridge(_KnobBridge):
    provenance_from_context = True


class _ContextProvenancePipeline(Pipeline):
    bridge_class = _ContextProvenanceBridge


def bridge_credits_whole_context() -> ReferenceImplementation:
    """D11 via D17 ("An argument whose provenance is unknown stays EXTERNAL_UNTRUSTED"): a bridge call whose script
    gives no provenance has every argument credited to every context item of the request, so with a trusted
    context (all USER) a script's consequential call is labelled USER and runs without approval instead of being
    held as EXTERNAL_UNTRUSTED."""
    return impl("r2-d17-bridge-credits-whole-context", _ContextProvenancePipeline)
