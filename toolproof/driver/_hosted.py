"""The driver's view of the harness: its clock as pushed, and its tools as ordinary ``Tool``s.

A hosted tool executes in the harness's tool host; while it runs, its execution context
waits in the ``ContextRegistry`` for the callbacks (watermark, artifacts, credentials)
the tool host makes to the driver.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tracemalloc
import uuid
from collections import deque
from pathlib import PurePath
from typing import Any

import anyio
import httpx2
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from toolproof.spec import (
    CONTEXT_DESCRIPTION_DEPTH,
    CONTEXT_DESCRIPTION_OBJECTS,
    ContextMember,
    ExecuteTool,
    JsonObject,
    SimulatedCrash,
    ToolCancellation,
    ToolContext,
    ToolExecutionContext,
    ToolOutcome,
    ToolSpec,
    crash_now,
)

from ._http import tls_context

MAX_DESCRIBED_MEMBERS = 500
"""Members described per object at most: a description stays small whatever the implementation hands over."""
MAX_DESCRIBED_IN_ALL = 20_000
"""Members described per context at most (a whole pipeline's graph, store included, takes under 2,000)."""


def public_names(obj: object) -> list[str]:
    """The members a tool can reach by name: a pydantic record's fields, else every attribute not starting with
    ``_`` (a dataclass's methods included: ``mark_effect_sent`` is one)."""
    if isinstance(obj, BaseModel):
        return list(type(obj).model_fields)
    return [name for name in dir(obj) if not name.startswith("_")]


def _type_name(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def describe_context(obj: object, instance: object) -> list[ContextMember]:
    """The public members of ``obj`` (a tool's context) and of every object they lead to, as the wire describes them.

    The walk is breadth first, so each object is described (with its members) where it is first reached, at its
    shorter path; reached again (a cycle, a shared object), it is described by kind and type name only. It does not
    enter the instance under test (``is_instance`` says what it is), and it stops expanding objects after
    ``CONTEXT_DESCRIPTION_OBJECTS`` of them or ``CONTEXT_DESCRIPTION_DEPTH`` levels (and after
    ``MAX_DESCRIBED_IN_ALL`` members): whatever the context leads to, however deep, is on the wire, within those
    bounds.
    """
    top: list[dict[str, Any]] = []
    seen: dict[int, object] = {id(obj): obj}  # Holding each object keeps its id from being reused.
    frontier: deque[tuple[object, list[dict[str, Any]], int]] = deque([(obj, top, 1)])
    described = 0
    while frontier and described < MAX_DESCRIBED_IN_ALL:
        owner, into, depth = frontier.popleft()
        try:
            names = public_names(owner)[:MAX_DESCRIBED_MEMBERS]
        except Exception:  # boundary: an object whose members cannot be listed is described without them
            continue
        described += len(names)
        for name in names:
            try:
                value = getattr(owner, name)
            except Exception as exc:  # boundary: a property that raises is described, not propagated
                into.append({"name": name, "kind": "unreadable", "type_name": type(exc).__name__})
                continue
            member = _member(name, value, instance)
            into.append(member)
            expandable = "members" in member and not member["is_instance"] and id(value) not in seen
            if expandable and depth < CONTEXT_DESCRIPTION_DEPTH and len(seen) <= CONTEXT_DESCRIPTION_OBJECTS:
                seen[id(value)] = value
                frontier.append((value, member["members"], depth + 1))
    return [ContextMember.model_validate(member) for member in top]


def _member(name: str, value: object, instance: object) -> dict[str, Any]:
    """One member without what lies below it: a ``data`` or ``object`` member's ``members`` are filled by the walk."""
    fields: dict[str, Any] = {"name": name, "type_name": _type_name(value), "is_instance": value is instance}
    if value is None:
        return {"kind": "null", **fields}
    if isinstance(value, bool):
        return {"kind": "boolean", "value": value, **fields}
    if isinstance(value, int | float):
        finite = value == value and value not in (float("inf"), float("-inf"))
        return {"kind": "number", "value": value if finite else repr(value), **fields}
    if isinstance(value, str | bytes):
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        return {"kind": "string", "value": text, **fields}
    if isinstance(value, PurePath):
        return {"kind": "path", "value": str(value), **fields}
    if isinstance(value, BaseModel) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        data = to_jsonable_python(value, fallback=repr)
        return {"kind": "data", "value": data, "members": [], **fields}
    if callable(value):
        return {"kind": "callable", **fields}
    return {"kind": "object", "members": [], **fields}


class PushedClock:
    """The harness's clock as last pushed in the ``Toolproof-Now`` header."""

    def __init__(self, now: float) -> None:
        self._now = now

    def now(self) -> float:
        """The last time the harness said it was."""
        return self._now

    def push(self, now: float | None) -> None:
        """Move to ``now`` when the harness sent one."""
        if now is not None:
            self._now = now


class ContextRegistry:
    """Execution contexts of tools executing now, by the id the tool host calls back with."""

    def __init__(self) -> None:
        self.contexts: dict[str, ToolExecutionContext] = {}
        self.trace_results = False
        """``?probe=memory``: start tracing memory as soon as a tool's result has arrived."""


class HostedTool:
    """A harness tool, executed by the tool host; the pipeline under test sees an ordinary ``Tool``."""

    def __init__(self, spec: ToolSpec, host: str, driver_url: str, contexts: ContextRegistry) -> None:
        self._spec = spec
        self._host = host.rstrip("/")
        self._driver_url = driver_url
        self._contexts = contexts
        self.instance: object = None
        """The instance the driver serves, once open: a context member that is it is described as such."""

    @property
    def spec(self) -> ToolSpec:
        """The spec the harness registered."""
        return self._spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> Any:
        """Run the tool in the harness; its mark, artifacts and credentials call back to this driver."""
        context_id = uuid.uuid4().hex
        self._contexts.contexts[context_id] = context
        wire = ToolContext(
            context_id=context_id, driver_url=self._driver_url, members=describe_context(context, self.instance)
        )
        request = ExecuteTool(tool=self._spec.name, arguments=arguments, context=wire)
        try:
            async with (
                httpx2.AsyncClient(timeout=None, verify=tls_context()) as client,
                anyio.create_task_group() as group,
            ):
                group.start_soon(self._forward_signal, client, context_id, context)
                try:
                    answer: httpx2.Response | None = await client.post(
                        f"{self._host}/v1/tools/execute", json=request.model_dump(mode="json")
                    )
                except httpx2.TransportError:
                    answer = None  # Raised outside the task group, so it is not wrapped in a group.
                group.cancel_scope.cancel()
            if answer is None:
                # The harness worker holding the tool died (a SIGKILL crash point): this call's worker died
                # with it. Nothing more is written for it; the row stays as it was for recovery to judge.
                raise SimulatedCrash("the harness worker executing the tool vanished")
            outcome = ToolOutcome.model_validate_json(answer.content)
        except anyio.get_cancelled_exc_class():
            # The implementation stopped waiting: the tool host learns whether its signal was set by then.
            news = ToolCancellation(signal_set=_signal_set(context), stopped=True)
            with anyio.CancelScope(shield=True), anyio.move_on_after(5), contextlib.suppress(httpx2.TransportError):
                async with httpx2.AsyncClient(timeout=5, verify=tls_context()) as client:
                    await client.post(f"{self._host}/v1/contexts/{context_id}/cancel", json=news.model_dump())
            raise
        finally:
            self._contexts.contexts.pop(context_id, None)
        if self._contexts.trace_results and not tracemalloc.is_tracing():
            tracemalloc.start()  # From here on, what the pipeline allocates is the implementation's own.
        if outcome.crash is not None:
            crash_now(outcome.crash)
        if outcome.raised is not None:
            raise RuntimeError(f"the harness tool raised {outcome.raised}")
        return outcome.result

    async def _forward_signal(self, client: httpx2.AsyncClient, context_id: str, context: ToolExecutionContext) -> None:
        """When the implementation sets the context's cancellation signal, the tool host's stand-in is set too."""
        try:
            await context.cancellation.wait()
        except Exception:  # boundary: a context without a usable signal has nothing to forward
            return
        news = ToolCancellation(signal_set=True, stopped=False)
        with contextlib.suppress(httpx2.TransportError):
            await client.post(f"{self._host}/v1/contexts/{context_id}/cancel", json=news.model_dump())


def _signal_set(context: ToolExecutionContext) -> bool:
    try:
        return bool(context.cancellation.is_set())
    except Exception:  # boundary: the implementation's signal, whatever it is
        return False
