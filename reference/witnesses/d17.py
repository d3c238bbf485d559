"""Witnesses of decision 17: The programmatic orchestration bridge.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import inspect
import json
import math
import re
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from toolproof.reference.hooks import (
    DISPOSITION,
    STEP_TABLE,
    Bridge,
    CallState,
    ContextParts,
    Pipeline,
    PipelineHost,
    Resolved,
    bridge_call_id,
    dump_json,
)
from toolproof.spec import (
    Disposition,
    InvocationStatus,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    Step,
    StepRequest,
    Success,
    Suspended,
    load_object,
)

from ._registry import outside_the_pipeline, witness


class _DirectBridge(Bridge):
    """Calls tools straight from the bridge: no row, no key, no policy."""

    async def direct(self, step: StepRequest, call: ProposedCall) -> Success:
        found = self.pipeline.registry.resolve(call.tool_name)
        assert found is not None
        return await outside_the_pipeline(self.pipeline, step, call, found)


class _BypassingPipeline(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall):  # type: ignore[no-untyped-def]
        if call.call_id.startswith("script-"):
            bridge = _DirectBridge(self)
            return await bridge.direct(request, call)
        return await super().run_call(request, call)


@witness("bridge_bypasses_pipeline", ("D17.1",), "the bridge calls tools directly instead of re-entering the pipeline")
class _BridgeBypassesPipeline(_BypassingPipeline):
    pass


class _RandomIds(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        return f"script-{uuid.uuid4().hex[:16]}-{ordinal}"


@witness("random_call_ids", ("D17.2", "D17.3"), "the bridge draws call ids from a random source")
class _RandomCallIds(Pipeline):
    bridge_class = _RandomIds


class _LastCallOrdinal(Bridge):
    async def run(self, request: ScriptRequest) -> ScriptRun:
        result = await super().run(request)
        if result.status != "failed":
            return result
        # The defect: a raising script is reported at the ordinal of the last call it made, not the one it reached.
        message = re.sub(r"ordinal \d+", f"ordinal {len(result.call_ids)}", result.message, count=1)
        return result.model_copy(update={"message": message})


@witness(
    "raise_named_at_the_last_call",
    ("D17.8",),
    "reports a script that raised at the ordinal of the last call it made (0 before any), not the one it had reached",
)
class _RaiseNamedAtTheLastCall(Pipeline):
    bridge_class = _LastCallOrdinal


class _FreshIdsOnRerun(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # Salted with how much the run already recorded: stable within a run of the script, new on re-execution.
        salt = len(self.pipeline.store.invocations(request.run_id)) if ordinal == 1 else self.salt
        self.salt = salt
        return bridge_call_id(hashlib.sha256(f"{salt}{digest}".encode()).hexdigest(), ordinal)

    salt = 0


@witness("fresh_ids_on_rerun", ("D17.4", "D17.6"), "re-executes a script under new call ids, repeating completed calls")
class _FreshIdsOnRerunPipeline(Pipeline):
    bridge_class = _FreshIdsOnRerun


class _Overwrites(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        if recorded is not None and recorded.arguments_json != dump_json(call.arguments):
            self.pipeline.store.update(
                recorded.invocation_id,
                {"arguments_json": dump_json(call.arguments), "status": "RECORDED", "call_id": call.call_id + "-old"},
            )
        return ""


@witness("overwrites_on_divergence", ("D17.5",), "lets a diverging replay overwrite and re-run the recorded call")
class _OverwritesOnDivergence(Pipeline):
    bridge_class = _Overwrites


class _OrderedArguments(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        same_tool = recorded is not None and recorded.tool_name == call.tool_name
        # The defect: arguments that sort at or before the recorded ones pass for the recorded ones.
        if same_tool and recorded is not None and recorded.arguments_json >= dump_json(call.arguments):
            return ""
        return super().divergence(request, call, ordinal)


@witness(
    "divergence_only_upwards",
    ("D17.5",),
    "lets a replay through when its arguments' JSON sorts at or before the recorded ones (>= for ==)",
)
class _DivergenceOnlyUpwards(Pipeline):
    bridge_class = _OrderedArguments


class _NameHashBridge(Bridge):
    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        # The defect: the "script hash" is of the module:function reference only, not of its source.
        return bridge_call_id(hashlib.sha256(request.script.encode()).hexdigest(), ordinal)


@witness("script_hash_of_reference_only", ("D17.2",), "hashes the script's module:function name, not its source")
class _ScriptHashOfReferenceOnly(Pipeline):
    bridge_class = _NameHashBridge


# A sandbox of this witness's own: the script, handed a bridge that speaks JSON lines over stdout and stdin.
_SANDBOX = r"""
import json, sys
from toolproof.spec import load_object

class Bridge:
    def call(self, tool_name, arguments=None, provenance=None):
        print(json.dumps({"call": [tool_name, arguments or {}, provenance]}), flush=True)
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        return json.loads(line)

try:
    load_object(sys.argv[1], expect=callable, what="script", form="package.module:function")(Bridge())
except SystemExit:
    raise
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
    sys.exit(1)
print(json.dumps({"done": True}), flush=True)
"""


def _digest(ref: str) -> str:
    function: Any = load_object(ref, expect=callable, what="script", form="package.module:function")
    return hashlib.sha256(f"{ref}\n{inspect.getsource(function)}".encode()).hexdigest()


class _PerToolBridge(Bridge):
    async def run(self, request: ScriptRequest) -> ScriptRun:
        digest = _digest(request.script)
        counts: dict[str, int] = {}
        call_ids: list[str] = []
        dispositions: list[Disposition] = []
        process = await anyio.open_process([sys.executable, "-c", _SANDBOX, request.script])
        assert process.stdout is not None
        assert process.stdin is not None
        pending = ""
        try:
            async for chunk in TextReceiveStream(process.stdout):
                pending += chunk
                while "\n" in pending:
                    line, pending = pending.split("\n", 1)
                    message = json.loads(line)
                    if "done" in message:
                        return ScriptRun(status="completed", call_ids=call_ids, dispositions=dispositions)
                    if "error" in message:
                        text = f"the script raised at ordinal {len(call_ids) + 1}: {message['error']}"
                        return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
                    tool_name, arguments, provenance = message["call"]
                    # The defect: the ordinal is the tool's ("the second orders.a"), not the script's.
                    counts[tool_name] = counts.get(tool_name, 0) + 1
                    call = ProposedCall(
                        call_id=f"script-{digest[:16]}-{tool_name}-{counts[tool_name]}",
                        tool_name=tool_name,
                        arguments=arguments,
                        provenance=provenance or {name: [] for name in arguments},
                    )
                    call_ids.append(call.call_id)
                    diverged = self.divergence(request, call, len(call_ids))
                    if diverged:
                        return ScriptRun(
                            status="diverged", call_ids=call_ids, dispositions=dispositions, message=diverged
                        )
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
                    await process.stdin.send((DISPOSITION.dump_json(disposition).decode() + "\n").encode())
            text = "the sandbox ended early"
            return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
        finally:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await process.stdin.aclose()
            with anyio.move_on_after(2):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()


@witness("ordinal_counted_per_tool", ("D17.5",), "the bridge counts its call ordinal per tool name, not per script")
class _OrdinalCountedPerTool(Pipeline):
    bridge_class = _PerToolBridge


@witness(
    "script_calls_credit_the_context",
    ("D17.1",),
    "a script call's argument without contributors is credited to every context item of the request",
)
class _ScriptCallsCreditTheContext(Pipeline):
    scripting = False

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        self.scripting = True
        try:
            return await super().run_script(request)
        finally:
            self.scripting = False

    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        if self.scripting:
            # The defect: "the script was written from the whole context", so an argument the script names no
            # contributor for is credited to every item of the request.
            every = [item.id for item in request.context]
            provenance = {name: call.provenance.get(name) or every for name in call.arguments}
            call = call.model_copy(update={"provenance": provenance})
        return await super().run_call(request, call)


@dataclass
class _Parked:
    """A held run's sandbox, kept alive and waiting for its held call's answer."""

    process: Process
    lines: AsyncIterator[str]
    digest: str
    ordinal: int
    held: str
    """The held call's invocation."""


async def _sandbox_lines(process: Process) -> AsyncIterator[str]:
    assert process.stdout is not None
    pending = ""
    async for chunk in TextReceiveStream(process.stdout):
        pending += chunk
        while "\n" in pending:
            line, pending = pending.split("\n", 1)
            if line.strip():
                yield line


async def _stop(process: Process) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    with anyio.move_on_after(2):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    await process.aclose()


class _ParkingBridge(Bridge):
    """Parks a held run's sandbox instead of tearing it down, and lets it go on once its hold is resolved."""

    async def run(self, request: ScriptRequest) -> ScriptRun:
        parked: dict[tuple[str, int, str], _Parked] = getattr(self.pipeline, "parked")  # noqa: B009
        where = (request.run_id, request.step_number, request.script)
        old = parked.pop(where, None)
        if old is not None:
            row = self.pipeline.store.get_or_none(old.held)
            if row is None or row.disposition_json is None:
                parked[where] = old  # Still held: it keeps waiting.
            else:
                # The defect: the held run was never torn down, so once its hold is resolved it goes on, beside the
                # re-execution below.
                assert old.process.stdin is not None
                await old.process.stdin.send(row.disposition_json.encode() + b"\n")
                await self.drive(request, old, parked, where)
        digest = _digest(request.script)
        process = await anyio.open_process([sys.executable, "-c", _SANDBOX, request.script])
        fresh = _Parked(process, _sandbox_lines(process), digest, 0, "")
        return await self.drive(request, fresh, parked, where)

    async def drive(
        self, request: ScriptRequest, run: _Parked, parked: dict[tuple[str, int, str], _Parked], where: Any
    ) -> ScriptRun:
        call_ids: list[str] = []
        dispositions: list[Disposition] = []
        keep = False
        try:
            async for line in run.lines:
                message = json.loads(line)
                if "done" in message:
                    return ScriptRun(status="completed", call_ids=call_ids, dispositions=dispositions)
                if "error" in message:
                    text = f"the script raised: {message['error']}"
                    return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
                tool_name, arguments, provenance = message["call"]
                run.ordinal += 1
                call = ProposedCall(
                    call_id=bridge_call_id(run.digest, run.ordinal),
                    tool_name=tool_name,
                    arguments=arguments,
                    provenance=provenance or {name: [] for name in arguments},
                )
                call_ids.append(call.call_id)
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
                    run.held, keep = disposition.invocation_id, True
                    parked[where] = run
                    return ScriptRun(status="held", call_ids=call_ids, dispositions=dispositions)
                assert run.process.stdin is not None
                await run.process.stdin.send((DISPOSITION.dump_json(disposition).decode() + "\n").encode())
            return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message="ended early")
        finally:
            if not keep:
                await _stop(run.process)


@witness(
    "held_run_goes_on",
    ("D17.7",),
    "keeps a held script's sandbox waiting instead of tearing it down, so it goes on beside the re-execution",
)
class _HeldRunGoesOn(Pipeline):
    bridge_class = _ParkingBridge

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.parked: dict[tuple[str, int, str], _Parked] = {}


class _ContextlessBridge(Bridge):
    async def run(self, request: ScriptRequest) -> ScriptRun:
        # The defect: the sandbox never saw the model's context, so the calls it makes are submitted with none.
        return await super().run(request.model_copy(update={"context": []}))


@witness(
    "script_calls_lose_the_context",
    ("D17.1",),
    "submits a script's calls with an empty context, so none is labelled by the request's items",
)
class _ScriptCallsLoseTheContext(Pipeline):
    bridge_class = _ContextlessBridge


class _TenantlessBridge(Bridge):
    async def run(self, request: ScriptRequest) -> ScriptRun:
        # The defect: the sandbox's request is a script's run, step and context; the tenant stays with the model step.
        return await super().run(request.model_copy(update={"tenant": "default"}))


@witness(
    "script_calls_lose_their_tenant",
    ("D17.1", "D2.3"),
    "runs, keys and records every script call under a tenant of its own, not the script request's",
)
class _ScriptCallsLoseTheirTenant(Pipeline):
    bridge_class = _TenantlessBridge


@witness(
    "script_calls_numbered_as_steps",
    ("D17.1", "D2.3"),
    "runs the n-th call of a script at the script request's step plus n, as though each call were a step of its own",
)
class _ScriptCallsNumberedAsSteps(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        if call.call_id.startswith("script-"):
            # The defect: a script's calls follow its step, one step each.
            ordinal = int(call.call_id.rsplit("-", 1)[1])
            request = request.model_copy(update={"step_number": request.step_number + ordinal})
        return await super().run_call(request, call)


class _OrderedDivergenceBridge(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        if recorded is None:
            return ""
        # The defect: the arguments are compared member by member in the order each side lists them.
        same = list(json.loads(recorded.arguments_json).items()) == list(call.arguments.items())
        if recorded.tool_name == call.tool_name and same:
            return ""
        return f"the script diverged on replay at ordinal {ordinal}"


@witness(
    "divergence_reads_member_order",
    ("D17.3",),
    "takes a replayed script call whose argument members are written out of sorted order for a divergence",
)
class _DivergenceReadsMemberOrder(Pipeline):
    bridge_class = _OrderedDivergenceBridge


# -- Per-call rules skipped on the bridge's path: each witness treats a script's calls as the script's own business.

_IN_A_SCRIPT: contextvars.ContextVar[bool] = contextvars.ContextVar("in_a_script", default=False)
"""Whether the call being run was made by a script: set while the bridge runs one."""


class _MarkingBridge(Bridge):
    async def run(self, request: ScriptRequest) -> ScriptRun:
        token = _IN_A_SCRIPT.set(True)
        try:
            return await super().run(request)
        finally:
            _IN_A_SCRIPT.reset(token)


async def _excerpt_unless_in_a_script(p: PipelineHost, s: CallState) -> None:
    if not _IN_A_SCRIPT.get():  # The defect: a script is a program, so it is handed the whole output.
        await STEP_TABLE[Step.EXCERPT](p, s)


@witness(
    "script_outputs_never_excerpted",
    ("D12.1",),
    "delivers the output of a call a script made whole, however far over the limit, since a program reads it",
)
class _ScriptOutputsNeverExcerpted(Pipeline):
    bridge_class = _MarkingBridge
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_unless_in_a_script}


@witness(
    "script_calls_never_trip_the_breaker",
    ("D14.3",),
    "never trips the loop breaker on a call a script made: a script's loops are taken for polling",
)
class _ScriptCallsNeverTripTheBreaker(Pipeline):
    bridge_class = _MarkingBridge

    def trip(self, prior: list[tuple[InvocationStatus, ReasonCode | None]]) -> ReasonCode | None:
        return None if _IN_A_SCRIPT.get() else super().trip(prior)


@witness(
    "script_calls_without_a_deadline",
    ("D2.4",),
    "runs a call a script made with no deadline, leaving the sandbox to bound the whole script",
)
class _ScriptCallsWithoutADeadline(Pipeline):
    bridge_class = _MarkingBridge

    def context_parts(self, s: CallState, r: Resolved) -> ContextParts:
        parts = super().context_parts(s, r)
        return dataclasses.replace(parts, deadline=math.inf) if _IN_A_SCRIPT.get() else parts


class _OneAttempt:
    """The pipeline as step 10 sees it on a script's call: one attempt allowed, everything else the pipeline's."""

    def __init__(self, pipeline: PipelineHost) -> None:
        self.pipeline = pipeline
        self.config = pipeline.config.model_copy(update={"max_attempts": 1})

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pipeline, name)


async def _execute_once_in_a_script(p: PipelineHost, s: CallState) -> None:
    # The defect: a script sees its call's TRANSIENT failure and may retry it itself, so the step never does.
    host: Any = _OneAttempt(p) if _IN_A_SCRIPT.get() else p
    await STEP_TABLE[Step.EXECUTE](host, s)


@witness(
    "script_transient_failures_never_retried",
    ("D10.2",),
    "never retries a TRANSIENT failure of a call a script made: the script is handed the failure to retry itself",
)
class _ScriptTransientFailuresNeverRetried(Pipeline):
    bridge_class = _MarkingBridge
    steps = STEP_TABLE | {Step.EXECUTE: _execute_once_in_a_script}


class _TerminalRowsOnly(Bridge):
    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        # The defect: only a finished call is "what was recorded"; a held, suspended or running one is still open, so
        # the replay is let through to the pipeline, which records the other call beside it.
        if recorded is None or not InvocationStatus(recorded.status).is_terminal:
            return ""
        return super().divergence(request, call, ordinal)


@witness(
    "divergence_on_terminal_rows_only",
    ("D17.5",),
    "compares a replayed script call only with a recorded row in a terminal status",
)
class _DivergenceOnTerminalRowsOnly(Pipeline):
    bridge_class = _TerminalRowsOnly
