"""One example's execution attempts, the same loop wherever it runs (in a thread, or confined in a child).

The loop owns the deadline and cancellation; an ``AttemptHost`` owns everything about where
the example runs: how its events are recorded, what happens before a watermark, what the
world looks like after an attempt. What ``execute`` returned is judged on the spot, so an
attempt is plain data that can cross a process boundary.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from toolproof.spec import Identity, JsonObject, Tool, ToolSpec, canonical_sha256

from ._context import ContractContext, request_cancellation
from ._leftovers import AFTER_RETURN_S
from ._result import describe_error, describe_result, judge_result, narrated, reports_ok
from ._trace import EventKind
from ._transport import short_key

Snapshot = dict[str, str]
"""Workspace path (relative, ``/``-separated) -> sha256 of the file, or ``dir/``."""


@dataclass
class AttemptRun:
    """What one execution attempt did, as the harness saw it: plain data, judged where it ran."""

    number: int
    finished: bool = False
    """``execute`` returned."""
    ok: bool = False
    """It returned a result that says ok=True."""
    raised: str | None = None
    """What it raised, described (``Type: message``)."""
    cancelled: bool = False
    """The deadline passed and the harness cancelled the attempt."""
    result_findings: list[tuple[str, str]] = field(default_factory=list)
    """Rule IDs and what was seen, for what it returned (D1.1 to D1.4)."""
    narrated: str | None = None
    """Where the remote-failure probe's text appeared outside the failure detail."""
    workspace_after: Snapshot | None = None
    """The workspace when the attempt ended."""
    service_after: list[list[str]] | None = None
    """The service's distinct effects when the attempt ended (sorted)."""
    keys: list[str] = field(default_factory=list)
    """Idempotency keys the service received during the attempt."""
    left_running: str = ""
    """What the tool left running was still running ``AFTER_RETURN_S`` after the execution ended (``1 thread``)."""

    def to_json(self) -> dict[str, Any]:
        """The attempt as JSON (what a confined example sends back)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttemptRun:
        """The attempt ``to_json`` described."""
        data = dict(data)
        data["result_findings"] = [tuple(pair) for pair in data.get("result_findings", [])]
        return cls(**data)

    def state(self) -> tuple[Any, ...]:
        """The world after the attempt, as the idempotency check compares it."""
        return (sorted((self.workspace_after or {}).items()), self.service_after or [])


class AttemptHost(Protocol):
    """Where an example runs: it records events and knows the world."""

    def begin(self, number: int, deadline: float) -> None:
        """Attempt ``number`` starts; it must end by ``deadline`` (absolute ``time.time()``)."""
        ...

    def event(self, kind: EventKind, text: str) -> None:
        """One of the harness's own events (attempt header, watermark, cancellation, end)."""
        ...

    async def settle(self) -> None:
        """Bring the world's own observations up to date: before a watermark, and before an attempt's end."""
        ...

    def deadline_passed(self) -> None:
        """The deadline passed: held answers are released."""
        ...

    def running(self) -> str:
        """What the tool started since the attempt began and left running, in words; "" when nothing is."""
        ...

    async def finish(self, attempt: AttemptRun) -> None:
        """The attempt ended: fill in the world after it."""
        ...


def idempotency_key(spec: ToolSpec, arguments: JsonObject) -> str:
    """The key the contract hands the tool: stable for a tool, version and arguments, never the attempt.

    The contract's own key, not decision 10's (a tool only hands it on): sha256 of the RFC 8785 canonical JSON of
    ``[name, version, arguments]``.
    """
    return canonical_sha256([spec.name, spec.version, arguments])


def identity(spec: ToolSpec, arguments: JsonObject, attempt: int) -> Identity:
    """The identity of an attempt of the contract's one invocation."""
    return Identity(
        tenant="contract-tenant",
        run_id="contract-run",
        step_number=1,
        call_id="call-1",
        invocation_id="contract-invocation",
        tool_name=spec.name,
        tool_version=spec.version,
        attempt=attempt,
        idempotency_key=idempotency_key(spec, arguments),
    )


@dataclass(frozen=True)
class AttemptPlan:
    """How the attempts of one example run."""

    arguments: JsonObject
    attempts: int
    limit: float
    """Seconds each attempt may run."""
    target: str
    workspace: Path
    stall: bool = False
    """The context stalls after the watermark (the deadline probe)."""
    label: str = ""
    """Names a probe in the attempt headers."""


class _HostSink:
    """What the context records its watermark on: the host's events."""

    def __init__(self, host: AttemptHost) -> None:
        self._host = host

    def add(self, kind: EventKind, text: str, *, effect: bool = False) -> None:
        self._host.event(kind, text)


async def run_attempts(
    tool: Tool, spec: ToolSpec, plan: AttemptPlan, host: AttemptHost, into: list[AttemptRun]
) -> None:
    """Run ``plan.attempts`` executions of ``tool`` with the same arguments and key, each appended to ``into``.

    An attempt is appended when it starts, so an abandoned example keeps what its attempts did so far.
    """
    for number in range(1, plan.attempts + 1):
        attempt = AttemptRun(number)
        into.append(attempt)
        await _attempt(tool, spec, plan, host, attempt)


async def _attempt(tool: Tool, spec: ToolSpec, plan: AttemptPlan, host: AttemptHost, attempt: AttemptRun) -> None:
    number = attempt.number
    who = identity(spec, plan.arguments, number)
    deadline = time.time() + plan.limit
    host.begin(number, deadline)
    probe = f" of the {plan.label}" if plan.label else ""
    host.event(EventKind.ATTEMPT, f"attempt {number}{probe} (idempotency key {short_key(who.idempotency_key)})")

    context = ContractContext(
        identity=who,
        deadline=deadline,
        target=plan.target,
        workspace=plan.workspace,
        scopes=spec.required_scopes,
        trace=_HostSink(host),
        before_mark=host.settle,
        stall=plan.stall,
    )
    returned: Any = None
    async with anyio.create_task_group() as group:

        async def watchdog() -> None:
            await anyio.sleep(max(0.0, deadline - time.time()))
            attempt.cancelled = True
            host.event(EventKind.CANCEL, "deadline reached: the tool's scope cancelled, cancellation set")
            # Scope first: a tool waiting inside the context gets Cancelled rather than a normal return.
            group.cancel_scope.cancel()
            request_cancellation(context)
            host.deadline_passed()

        group.start_soon(watchdog)
        try:
            returned = await tool.execute(copy.deepcopy(plan.arguments), context)
            attempt.finished = True
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:  # The tool's exception is an observation, whatever its kind.
            attempt.raised = describe_error(exc)
        group.cancel_scope.cancel()
    await host.settle()
    if attempt.finished:
        attempt.ok = reports_ok(returned)
        attempt.result_findings = judge_result(spec, returned)
        attempt.narrated = narrated(returned)
        host.event(EventKind.END, describe_result(returned))
    elif attempt.raised is not None:
        host.event(EventKind.END, f"raised {attempt.raised}")
    else:
        host.event(EventKind.END, "cancelled at its deadline")
    attempt.left_running = await _wait_for_leftovers(host)
    if attempt.left_running:
        host.event(
            EventKind.END,
            f"{attempt.left_running} it left still running {AFTER_RETURN_S}s after the execution ended: "
            "what came later is not observed",
        )
    await host.settle()
    await host.finish(attempt)


async def _wait_for_leftovers(host: AttemptHost) -> str:
    """Wait, observing, until what the tool left running has ended; what still runs at the bound, in words."""
    end = time.monotonic() + AFTER_RETURN_S
    while running := host.running():
        if time.monotonic() >= end:
            return running
        await anyio.sleep(0.01)
    return ""
