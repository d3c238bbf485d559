"""The instances a driver has open, each in a task of its own, its requests arriving through a channel.

An implementation's context manager and task groups must be entered and left by one task, so each open instance
lives in its own task; requests reach it through a channel and run concurrently inside it, so a reader can look at
a row while a step is still executing its tool. A request gets back what its work returned, or the refusal its
failure means.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from toolproof.spec import ConfigurationError, Implementation, Instance, OpenInstance, SimulatedCrash, StoreFault

from ._hosted import ContextRegistry, HostedTool, PushedClock
from ._problems import Refused

Work = Callable[[Instance], Awaitable[Any]]
"""What one request asks of an open instance."""


@dataclass
class HostedInstance:
    """One open instance and the channel its requests arrive on."""

    clock: PushedClock
    """The instance's clock, as the harness pushes it."""
    send: anyio.abc.ObjectSendStream[tuple[Work, anyio.abc.ObjectSendStream[Any]]]
    """Where a request puts its work, and the stream its answer comes back on."""
    dead: bool = False
    """The instance died (at its crash point, or failing) or closed: it takes no more work."""
    done: anyio.Event = field(default_factory=anyio.Event)
    """Set once the instance's task has left its context."""


class OpenInstances:
    """The instances one driver has open, hosted in a task group that lives as long as the server.

    Args:
        implementation: what each instance is opened from.
        url: the driver's own base URL, which a running tool's callbacks are sent to.
        contexts: where a hosted tool's execution context waits for those callbacks.
    """

    def __init__(self, implementation: Implementation, url: str, contexts: ContextRegistry) -> None:
        self.implementation = implementation
        self.url = url
        self.contexts = contexts
        self._group: anyio.abc.TaskGroup | None = None
        self._hosted: dict[str, HostedInstance] = {}
        self._receive: dict[str, anyio.abc.ObjectReceiveStream[Any]] = {}

    @asynccontextmanager
    async def hosting(self) -> AsyncIterator[None]:
        """Instances live in this task group while it is entered (the server's lifetime)."""
        async with anyio.create_task_group() as group:
            self._group = group
            yield
            group.cancel_scope.cancel()

    async def open(self, body: OpenInstance, now: float) -> str:
        """Open one instance from ``body``, its clock at ``now``; its id.

        Raises:
            Refused: the implementation refused the configuration (422), or the instance died while opening (409).
        """
        assert self._group is not None  # Invariant: hosting() is entered before any request.
        instance_id = uuid.uuid4().hex
        send, receive = anyio.create_memory_object_stream[Any](64)
        self._hosted[instance_id] = HostedInstance(clock=PushedClock(now), send=send)
        self._receive[instance_id] = receive
        started, failed = anyio.Event(), list[str]()
        self._group.start_soon(self._host, instance_id, body, started, failed)
        await started.wait()
        if failed:
            self._hosted.pop(instance_id, None)
            raise Refused(422, "configuration-error", failed[0])
        if self._hosted[instance_id].dead:
            raise Refused(409, "simulated-crash", "the instance died while opening")
        return instance_id

    async def close(self, instance_id: str) -> bool:
        """Close an open instance and wait (30 s at most) for it to leave its context; False when none is open."""
        hosted = self._hosted.pop(instance_id, None)
        if hosted is None:
            return False
        await hosted.send.aclose()
        with anyio.move_on_after(30):
            await hosted.done.wait()
        return True

    def find(self, instance_id: str) -> HostedInstance:
        """The open instance ``instance_id``.

        Raises:
            Refused: no such instance, or it died (404).
        """
        hosted = self._hosted.get(instance_id)
        if hosted is None or hosted.dead:
            raise Refused(404, "not-found", f"no open instance {instance_id!r}", "instance_id")
        return hosted

    async def on(self, hosted: HostedInstance, work: Work) -> Any:
        """Run ``work`` in ``hosted``'s task; what it returned.

        Raises:
            Refused: the instance closed (404), died at its crash point (409), refused a configuration (422), or
                its store failed a write the work needed (503).
            Exception: whatever else the work raised.
        """
        reply_send, reply_receive = anyio.create_memory_object_stream[Any](1)
        try:
            await hosted.send.send((work, reply_send))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise Refused(404, "not-found", "the instance closed", "instance_id") from None
        async with reply_receive:
            try:
                result = await reply_receive.receive()
            except anyio.EndOfStream:
                raise Refused(404, "not-found", "the instance closed", "instance_id") from None
        if isinstance(result, SimulatedCrash):
            raise Refused(409, "simulated-crash", "the instance died at its crash point")
        if isinstance(result, ConfigurationError):
            raise Refused(422, "configuration-error", str(result))
        if isinstance(result, StoreFault):
            raise Refused(503, "store-fault", str(result))
        if isinstance(result, Exception):
            raise result
        return result

    async def _host(self, instance_id: str, body: OpenInstance, started: anyio.Event, failed: list[str]) -> None:
        hosted = self._hosted[instance_id]
        receive = self._receive[instance_id]
        tools = [HostedTool(spec, body.tool_host, self.url, self.contexts) for spec in body.tools]
        try:
            async with self.implementation.open(body.config, tools, hosted.clock) as instance:
                for tool in tools:
                    tool.instance = instance
                started.set()
                async with anyio.create_task_group() as group, receive:
                    async for work, reply in receive:
                        group.start_soon(self._run, instance, work, reply, hosted, group)
        except BaseException as exc:
            if isinstance(exc, ConfigurationError):
                failed.append(str(exc))
            elif _is_crash(exc):
                pass  # The instance died at its crash point.
            elif isinstance(exc, Exception):  # boundary: a failing implementation is reported, not crashed on
                failed.append(f"the implementation failed: {type(exc).__name__}: {exc}")
            else:
                raise
        finally:
            hosted.dead = True
            started.set()
            hosted.done.set()

    async def _run(
        self,
        instance: Instance,
        work: Work,
        reply: anyio.abc.ObjectSendStream[Any],
        hosted: HostedInstance,
        group: anyio.abc.TaskGroup,
    ) -> None:
        async with reply:
            try:
                result: Any = await work(instance)
            except BaseException as exc:
                if not _is_crash(exc):
                    if not isinstance(exc, Exception):
                        raise  # Cancellation and the like belong to the task group.
                    result = exc  # boundary: every failure becomes an answer, never a dead server
                else:
                    hosted.dead = True
                    await reply.send(SimulatedCrash("simulated crash"))
                    group.cancel_scope.cancel()  # The instance is dead: leave its context now.
                    return
            await reply.send(result)


def _is_crash(exc: BaseException) -> bool:
    """Whether ``exc`` is a SimulatedCrash, bare or inside the implementation's task groups."""
    if isinstance(exc, SimulatedCrash):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_is_crash(e) for e in exc.exceptions)
