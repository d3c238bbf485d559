"""Witnesses of the second red-team round's gaps in keys, holds, the breaker and the bridge: inputs run together
into one key, arrays sorted as if they were sets, one retry too many, the hold bound taken from the ADR instead of
the configuration, a breaker blind to the current step or to control tools, ordinals counted per tool, and script
calls credited to the whole context."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import sys
from typing import Any

import anyio
from anyio.streams.text import TextReceiveStream

from toolproof.reference.hooks import (
    DISPOSITION,
    STEP_TABLE,
    Bridge,
    CallState,
    Pipeline,
    StepFunction,
    idempotency_key,
)
from toolproof.spec import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    Disposition,
    InvocationStatus,
    JsonObject,
    ProposedCall,
    ReasonCode,
    ScriptRequest,
    ScriptRun,
    Step,
    StepRequest,
    Suspended,
    ToolKind,
    load_object,
)

from ._registry import witness

_resolve = STEP_TABLE[Step.RESOLVE]
_execute = STEP_TABLE[Step.EXECUTE]
_hold = STEP_TABLE[Step.HOLD]


def _resolve_joined(separator: str) -> StepFunction:
    """Step 1 whose key hashes its inputs joined by `separator`: nothing marks where one input ends when the
    separator is empty, and an input may itself contain a non-empty one, unescaped."""

    async def resolve(p: Pipeline, s: CallState) -> None:
        await _resolve(p, s)
        version = s.resolved.spec.version if s.resolved is not None else ""
        request = s.request
        # The defect: the inputs are joined as plain text, no length or escape keeping them apart.
        text = separator.join(
            [
                "key/1",
                request.tenant,
                request.run_id,
                str(request.step_number),
                s.call.call_id,
                s.call.tool_name,
                version,
                json.dumps(s.call.arguments, sort_keys=True, separators=(",", ":")),
            ]
        )
        s.key = hashlib.sha256(text.encode()).hexdigest()

    return resolve


@witness("key_inputs_joined_unescaped", ("D10.1",), "joins the key's inputs with '|' though an input may contain it")
class _KeyInputsJoinedUnescaped(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_joined("|")}


@witness("key_inputs_run_together", ("D10.1",), "hashes the key's inputs concatenated with no boundary between them")
class _KeyInputsRunTogether(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_joined("")}


def _as_sets(value: Any) -> Any:
    """``value`` with every array, at every depth, sorted: arrays read as sets."""
    if isinstance(value, dict):
        return {name: _as_sets(member) for name, member in value.items()}
    if isinstance(value, list):
        return sorted((_as_sets(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return value


async def _resolve_arrays_as_sets(p: Pipeline, s: CallState) -> None:
    await _resolve(p, s)
    arguments: JsonObject = _as_sets(s.call.arguments)  # The defect: element order "is not meaningful".
    s.key = idempotency_key(
        tenant=s.request.tenant,
        run_id=s.request.run_id,
        step_number=s.request.step_number,
        call_id=s.call.call_id,
        tool_name=s.call.tool_name,
        tool_version=s.resolved.spec.version if s.resolved is not None else None,
        arguments=arguments,
    )


@witness("key_sorts_arrays", ("D10.4",), "sorts the elements of every array before deriving the key")
class _KeySortsArrays(Pipeline):
    steps = STEP_TABLE | {Step.RESOLVE: _resolve_arrays_as_sets}


async def _execute_one_retry_too_many(p: Pipeline, s: CallState) -> None:
    config = p.config
    # The defect: max_attempts read as the retries after the first execution, so one execution more is allowed.
    p.config = config.model_copy(update={"max_attempts": config.max_attempts + 1})
    try:
        await _execute(p, s)
    finally:
        p.config = config


@witness("max_attempts_counts_retries", ("D10.2",), "retries a TRANSIENT failure max_attempts times after the first")
class _MaxAttemptsCountsRetries(Pipeline):
    steps = STEP_TABLE | {Step.EXECUTE: _execute_one_retry_too_many}


async def _hold_for_the_default(p: Pipeline, s: CallState) -> None:
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


def _history(
    p: Pipeline, s: CallState, *, earlier_steps_only: bool
) -> list[tuple[InvocationStatus, ReasonCode | None]]:
    """The run's identical calls as the breaker reads them (optionally those of earlier steps only)."""
    return [
        (InvocationStatus(row.status), ReasonCode(row.reason_code) if row.reason_code else None)
        for row in p.store.identical(s.request.run_id, s.call_hash)
        if not earlier_steps_only or row.step_number < s.request.step_number
    ]


@witness(
    "breaker_blind_to_its_batch",
    ("D14.2", "D14.3", "D14.4"),
    "the breaker counts identical calls of earlier steps only, not those earlier in the same batch",
)
class _BreakerBlindToItsBatch(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        # The defect: "prior" read as "in a prior step".
        return _history(self, s, earlier_steps_only=True)


@witness("breaker_spares_control_tools", ("D16.1",), "step 4's breaker sees no history for a CONTROL tool's calls")
class _BreakerSparesControlTools(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        if s.resolved is not None and s.resolved.spec.kind is ToolKind.CONTROL:
            return []  # The defect: a control call acts on the run, not the world, "so it cannot loop".
        return super().prior_identical(s)


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
