"""The programmatic orchestration bridge (decision 17): a script in a sandbox process, every call
re-entering the one pipeline.

The sandbox is a child process running the script with a bridge object whose ``call`` sends
the request over stdout and waits for the disposition on stdin. The host synthesizes
``call_id`` from the script's hash and the ordinal it counts, so a replayed script meets its
recorded outcomes at step 8. A held call tears the sandbox down; running the script again
re-executes it from the start against what was recorded.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
from collections.abc import Callable
from typing import Any, cast

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from pydantic import ValidationError

from toolproof.spec import (
    ConfigurationError,
    Disposition,
    ProposedCall,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    Suspended,
    load_object,
)
from toolproof.spec import script_hash as spec_script_hash

from ._host import PipelineHost
from ._state import DISPOSITION
from ._tables import dump_json

# The sandbox: loads the script, hands it a bridge, speaks JSON lines. Kept as source so the child imports nothing
# of toolproof but the script's own module: the host has already loaded the reference through the spec's loader
# (script_hash), so the child resolves it plainly, with the working directory first on sys.path as there.
SANDBOX = r"""
import importlib, json, sys

class Bridge:
    def call(self, tool_name, arguments=None, provenance=None):
        request = {"tool_name": tool_name, "arguments": arguments or {}, "provenance": provenance}
        sys.stdout.write(json.dumps({"call": request}) + "\n")
        sys.stdout.flush()
        reply = json.loads(sys.stdin.readline() or '{"stop": true}')
        if reply.get("stop"):
            sys.exit(0)
        return reply["disposition"]

try:
    module_name, _, attribute = sys.argv[1].partition(":")
    script = importlib.import_module(module_name)
    for part in attribute.split("."):
        script = getattr(script, part)
    script(Bridge())
except SystemExit:
    raise
except BaseException as exc:
    sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
    sys.stdout.flush()
    sys.exit(1)
sys.stdout.write(json.dumps({"done": True}) + "\n")
sys.stdout.flush()
"""


def script_hash(ref: str) -> str:
    """Decision 17's script hash (``spec.script_hash``) of the script's reference and source: the same script hashes
    the same in any worker.

    Raises:
        ConfigurationError: ``ref`` does not load as a callable (``spec.LoadError``), or its source
            cannot be read.
    """
    function = load_object(ref, expect=callable, what="script", form="package.module:function")
    try:
        source = inspect.getsource(cast(Callable[..., object], function))
    except (OSError, TypeError) as exc:
        raise ConfigurationError(f"script {ref!r}: its source cannot be read ({type(exc).__name__}: {exc})") from exc
    return spec_script_hash(ref, source)


def bridge_call_id(digest: str, ordinal: int) -> str:
    """Decision 17: call_id from the script hash and the ordinal the bridge counts."""
    return f"script-{digest[:16]}-{ordinal}"


class Bridge:
    """Runs scripts for one pipeline."""

    def __init__(self, pipeline: PipelineHost) -> None:
        self.pipeline = pipeline

    def call_id(self, request: ScriptRequest, digest: str, ordinal: int) -> str:
        """The call_id of the ``ordinal``-th call (witnesses change it)."""
        return bridge_call_id(digest, ordinal)

    async def run(self, request: ScriptRequest) -> ScriptRun:
        """Run the script to completion, to a hold, to a divergence, or to its failure."""
        digest = script_hash(request.script)
        process = await anyio.open_process([sys.executable, "-c", SANDBOX, request.script])
        call_ids: list[str] = []
        dispositions: list[Disposition] = []
        try:
            assert process.stdout is not None
            lines = _lines(TextReceiveStream(process.stdout))
            async for line in lines:
                message = json.loads(line)
                if "done" in message:
                    return ScriptRun(status="completed", call_ids=call_ids, dispositions=dispositions)
                if "error" in message:
                    text = f"the script raised at ordinal {len(call_ids) + 1}: {message['error']}"
                    return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
                ordinal = len(call_ids) + 1
                try:
                    call = ProposedCall(
                        call_id=self.call_id(request, digest, ordinal),
                        tool_name=message["call"]["tool_name"],
                        arguments=message["call"]["arguments"],
                        provenance=message["call"]["provenance"] or {name: [] for name in message["call"]["arguments"]},
                    )
                except ValidationError as exc:  # Arguments no call can carry (no RFC 8785 form, say): it fails here.
                    problem = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                    text = f"the script proposed a call no pipeline can take at ordinal {ordinal}: {problem}"
                    return ScriptRun(status="failed", call_ids=call_ids, dispositions=dispositions, message=text)
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
                disposition = await self.pipeline.run_call(step, call)  # The one pipeline function.
                dispositions.append(disposition)
                if isinstance(disposition, Suspended):
                    return ScriptRun(status="held", call_ids=call_ids, dispositions=dispositions)
                await _send(process, {"disposition": json.loads(DISPOSITION.dump_json(disposition))})
            return ScriptRun(
                status="failed", call_ids=call_ids, dispositions=dispositions, message="the sandbox ended early"
            )
        finally:
            await _tear_down(process)

    def divergence(self, request: ScriptRequest, call: ProposedCall, ordinal: int) -> str:
        """Why this call differs from what is recorded at its ordinal, or "" when it does not."""
        recorded = self.pipeline.store.by_call(request.run_id, request.step_number, call.call_id)
        if recorded is None:
            return ""
        if recorded.tool_name == call.tool_name and recorded.arguments_json == dump_json(call.arguments):
            return ""
        return (
            f"the script diverged on replay at ordinal {ordinal}: it was recorded calling {recorded.tool_name} "
            f"{recorded.arguments_json}, it now calls {call.tool_name} {dump_json(call.arguments)}; "
            "the script is stopped and nothing recorded was changed"
        )


async def _lines(stream: TextReceiveStream) -> Any:
    buffer = ""
    async for chunk in stream:
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            if line.strip():
                yield line


async def _send(process: Process, message: dict[str, Any]) -> None:
    assert process.stdin is not None
    await process.stdin.send((json.dumps(message) + "\n").encode())


async def _tear_down(process: Process) -> None:
    """The sandbox never outlives its run: ask it to stop, then kill it."""
    if process.returncode is None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await _send(process, {"stop": True})
        with anyio.move_on_after(2):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    await process.aclose()
