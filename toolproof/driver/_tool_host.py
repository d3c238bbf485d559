"""The tool host: the harness's tools, executed for a driver that calls them back.

The harness's fake tools execute here, in the harness, so the world ledger stays in the
harness; what a tool asks of its context (the watermark, artifacts, credentials) calls
the driver back. ``serving`` puts the host (or an in-process MCP fake) on a loopback port.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import uvicorn
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolproof.spec import (
    ArtifactRef,
    ArtifactUpload,
    Budget,
    ContextMember,
    Credential,
    ExecuteTool,
    HarnessError,
    Identity,
    ImplementationError,
    ScopeQuery,
    SimulatedCrash,
    Tool,
    ToolCancellation,
    ToolOutcome,
)

from ._http import tls_context
from ._problems import problem, raise_problem

_M = TypeVar("_M", bound=BaseModel)

SERVER_STOP_S = 5.0
"""How long a loopback server is given to stop by itself before it is cancelled."""


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class _PromptServer(uvicorn.Server):
    """A uvicorn server that starts stopping as soon as it is told to, not at its next tick a tenth of a second later
    (a run over a driver serves a tool host per instance: hundreds of stops)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.told = anyio.Event()

    def stop(self) -> None:
        """Stop: the main loop wakes now and returns; uvicorn's own shutdown follows."""
        self.should_exit = True
        self.told.set()

    async def main_loop(self) -> None:
        """uvicorn's loop (its once-a-second housekeeping in ``on_tick``), woken early by ``stop``."""
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            with anyio.move_on_after(0.1):
                await self.told.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown without its fixed pause of a tenth of a second: stop listening, ask every connection to
        close, wait (a few milliseconds a turn, ``SERVER_STOP_S`` at most) until they and their requests are done,
        then the application's lifespan shutdown."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        with anyio.move_on_after(SERVER_STOP_S):
            while self.server_state.connections or self.server_state.tasks:  # noqa: ASYNC110 - uvicorn sets no event
                await anyio.sleep(0.005)
        for task in self.server_state.tasks:
            task.cancel()
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port in this event loop; yields its base URL."""
    sock = _free_socket()
    port = sock.getsockname()[1]
    server = _PromptServer(uvicorn.Config(app, log_level="warning", lifespan="on"))
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve([sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        for _ in range(3000):  # uvicorn signals nothing but this flag; 30 s at most.
            if server.started:
                break
            await anyio.sleep(0.01)
        else:
            raise HarnessError("a loopback server of the harness did not start within 30 s")
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()
            # Let it stop by itself, even when the body raised: cancelled, uvicorn logs a CancelledError traceback
            # from its lifespan. Bounded: its shutdown closes idle connections and waits for open requests.
            with anyio.CancelScope(shield=True), anyio.move_on_after(SERVER_STOP_S):
                await stopped.wait()
    sock.close()


class UnreadableContext(ImplementationError):
    """A driver described a tool's context in a form the protocol does not give it: the driver's error.

    Said in the protocol's terms (the member's path, the kind it came as, what the document wants there), and
    remembered by the tool host so the harness reports it as the implementation's error, never as a traceback of
    a tool reading the member."""

    def __init__(self, member: str, detail: str) -> None:
        super().__init__(f"the driver's description of the tool's context cannot be read: {member}: {detail}")
        self.member = member
        """The member's path, ``context.identity``."""


class _Stand:
    """Base of the stand-ins the tool host builds: their public members are the described ones, and only those."""


def _stand_in_class(member: ContextMember, namespace: dict[str, Any]) -> type:
    # Named after the type the implementation handed over, so the harness's checks of a member's type see it.
    module, _, qualname = member.type_name.rpartition(".")
    name = qualname or "Member"
    cls = type(name if name.isidentifier() else "Member", (_Stand,), namespace)
    cls.__module__ = module or "unknown"
    cls.__qualname__ = qualname or "Member"
    return cls


def _not_over_the_wire(path: str) -> Any:
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{path} is not reachable over the driver protocol")

    return unavailable


class _HostContext:
    """Builds the stand-in of the context a driver's implementation handed a tool, member for member.

    Decision 2's callable members call the driver back; the values are the ones described; any
    other member (one decision 2 does not name) is a stand-in with the members it was described
    with, so a scenario inspecting the context sees what the implementation handed over.
    """

    def __init__(self, request: ExecuteTool, client: httpx2.AsyncClient, instance: object) -> None:
        wire = request.context
        self.base = f"{wire.driver_url.rstrip('/')}/v1/contexts/{wire.context_id}"
        self.client = client
        self.instance = instance
        self.cancelled = anyio.Event()
        self.context = self._build(wire.members, "context", top=True)

    def _build(self, members: Sequence[ContextMember], path: str, *, top: bool = False) -> Any:
        namespace: dict[str, Any] = {}
        for member in members:
            where = f"{path}.{member.name}"
            if member.kind == "callable":
                function = self._callback(where) or _not_over_the_wire(where)
                namespace[member.name] = _method(function)
            else:
                value = self._value(member, where, top=top)
                namespace[member.name] = _constant(value)
        owner = ContextMember(name="context", kind="object", type_name="toolproof.driver.ToolContext")
        return _stand_in_class(owner, namespace)() if top else namespace

    def _value(self, member: ContextMember, where: str, *, top: bool) -> Any:
        if member.is_instance:
            return self.instance
        if member.kind == "path" and isinstance(member.value, str):
            return Path(member.value)
        if top and member.name in _RECORDS:
            return _record(member, where)
        if member.kind in ("data", "object"):
            namespace = self._build(member.members, where)
            if member.name == "cancellation" and top:
                # The signal the driver forwards: set when (and only when) the implementation set its own.
                signal = {"is_set": _method(self._is_set), "wait": _method(self._wait)}
                namespace |= {name: signal[name] for name in signal if name in namespace}
            return _stand_in_class(member, namespace)()
        return member.value

    def _callback(self, where: str) -> Any:
        known = {
            "context.mark_effect_sent": self._mark,
            "context.artifact_writer.write": self._write,
            "context.credential_resolver.resolve": self._resolve,
        }
        return known.get(where)

    async def _mark(self) -> None:
        raise_problem(await self.client.post(f"{self.base}/effect-sent"))

    async def _write(self, name: str, data: bytes) -> ArtifactRef:
        body = ArtifactUpload(name=name, data_base64=base64.b64encode(data).decode())
        response = await self.client.post(f"{self.base}/artifacts", json=body.model_dump())
        raise_problem(response)
        return ArtifactRef.model_validate_json(response.content)

    async def _resolve(self, scope: str) -> str | None:
        response = await self.client.post(f"{self.base}/credentials", json=ScopeQuery(scope=scope).model_dump())
        raise_problem(response)
        return Credential.model_validate_json(response.content).credential

    def _is_set(self) -> bool:
        return self.cancelled.is_set()

    async def _wait(self) -> None:
        await self.cancelled.wait()


def stand_in_context(request: ExecuteTool, client: httpx2.AsyncClient, instance: object = None) -> Any:
    """The context a harness tool receives for ``request``: member for member the one the driver described.

    Callbacks go to the driver through ``client``; a member described as the instance under test is ``instance``.
    """
    return _HostContext(request, client, instance).context


_RECORDS: dict[str, type[BaseModel]] = {"identity": Identity, "budget": Budget}
"""Decision 2's members that are records: described as data, handed to the tool as the record itself."""


def _record(member: ContextMember, where: str) -> BaseModel:
    """A decision 2 record as described: kind ``data`` whose ``value`` is the record's JSON object, or the driver's
    error naming what came instead."""
    model = _RECORDS[member.name]
    schema = f"components.schemas.{model.__name__}"
    if member.kind != "data":
        raise UnreadableContext(
            where,
            f'described as kind "{member.kind}"; the protocol describes it as kind "data", its value the {schema} object',
        )
    try:
        return model.model_validate(member.value)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = ".".join(["value", *(str(part) for part in error["loc"])])
        got = json.dumps(error["input"], default=str)[:80]
        raise UnreadableContext(
            where, f"{path}: {error['msg']} (got {got}); the value is the {schema} object"
        ) from None


def _constant(value: Any) -> property:
    """A read-only member of a stand-in that answers ``value``."""

    def read(_self: object) -> Any:
        return value

    return property(read)


def _method(function: Any) -> Any:
    """``function`` as a method of a stand-in: called without the stand-in, as the described member was."""
    return staticmethod(function)


class ToolHost:
    """Executes the harness's tools for the driver (``/v1/tools/execute``, ``/v1/contexts/{id}/cancel``)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.spec.name: tool for tool in tools}
        self.instance: object = None
        """The harness's handle on the instance: what a context member that is the instance stands for."""
        self.running: dict[str, tuple[_HostContext, anyio.CancelScope]] = {}
        self.client = httpx2.AsyncClient(timeout=None, verify=tls_context())
        self.fault: UnreadableContext | None = None
        """The first context description the host could not read: the harness reports it as the driver's error."""

    def app(self) -> Starlette:
        """The starlette application."""
        return Starlette(
            routes=[
                Route("/v1/tools/execute", self.execute, methods=["POST"]),
                Route("/v1/contexts/{context_id}/cancel", self.cancel, methods=["POST"]),
            ]
        )

    async def execute(self, request: Request) -> Response:
        """``POST /v1/tools/execute``: what the tool returned, raised, or that it crashed."""
        body = await _read(request, ExecuteTool)
        if isinstance(body, Response):
            return body
        tool = self.tools.get(body.tool)
        if tool is None:
            outcome = ToolOutcome(raised=f"the harness registered no tool named {json.dumps(body.tool)}")
            return Response(outcome.model_dump_json(), media_type="application/json")
        try:
            context = _HostContext(body, self.client, self.instance)
        except UnreadableContext as exc:
            self.fault = self.fault or exc
            return problem(422, "invalid-request", str(exc), exc.member.replace("context.", "context.members.", 1))
        outcome = ToolOutcome(raised="the driver stopped waiting for the tool", cancelled=True)
        with anyio.CancelScope() as scope:
            self.running[body.context.context_id] = (context, scope)
            try:
                result = await tool.execute(dict(body.arguments), context.context)
                data = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
                outcome = ToolOutcome(result=to_jsonable_python(data, fallback=repr))
            except SimulatedCrash:
                outcome = ToolOutcome(crash="raise")
            except Exception as exc:  # A tool's exception is data for the driver's step 11.
                outcome = ToolOutcome(raised=f"{type(exc).__name__}: {exc}")
            finally:
                self.running.pop(body.context.context_id, None)
        return Response(outcome.model_dump_json(), media_type="application/json")

    async def cancel(self, request: Request) -> Response:
        """``POST /v1/contexts/{id}/cancel``: the stand-in's signal is set as the implementation's was, and the
        tool's work cancelled when the implementation stopped waiting for it."""
        news = await _read(request, ToolCancellation)
        if isinstance(news, Response):
            return news
        found = self.running.get(request.path_params["context_id"])
        if found is not None:
            if news.signal_set:
                found[0].cancelled.set()
            if news.stopped:
                found[1].cancel()
        return Response(status_code=204)


async def _read(request: Request, model: type[_M]) -> _M | Response:
    """The request's body as ``model``, or the 422 problem naming the field that was wrong."""
    try:
        return model.model_validate_json(await request.body())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return problem(422, "invalid-request", f"{where}: {first['msg']}", where)
