"""The driver side of the driver protocol: any Python implementation behind ``/v1`` (starlette).

``toolproof serve-reference`` runs it for the reference; ``serve(MyImplementation(), ...)``
runs it for yours. Each open instance lives in its own task (an implementation's context
manager and task groups must be entered and left by one task); requests reach it through a
channel and run concurrently inside it, so a reader can look at a row while a step is still
executing its tool.
"""

from __future__ import annotations

import base64
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import uvicorn
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from toolproof.spec import (
    NOW_HEADER,
    ApprovalAnswer,
    ArtifactRef,
    ArtifactUpload,
    CatalogHistory,
    ConfigurationError,
    Credential,
    Dispositions,
    DriverInfo,
    Events,
    Implementation,
    Instance,
    InstanceHandle,
    Invocations,
    Metrics,
    OpenInstance,
    ResumeAnswer,
    ScopeQuery,
    ScriptModule,
    ScriptRequest,
    SimulatedCrash,
    StepRequest,
    Tables,
    ToolExecutionContext,
    openapi_document,
)

from ._admission import DriverOptions, admit
from ._hosted import ContextRegistry, HostedTool, PushedClock
from ._problems import Refused, problem
from ._scripts import ScriptFolder

_M = TypeVar("_M", bound=BaseModel)


class _RunIdConvertor(Convertor[str]):
    """A run id in a path: the whole escaped segment as the client sent it, decoded, whatever it holds (a ``/`` or a
    newline included), up to the route's next literal part."""

    regex = r"[\s\S]+?"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("run_id", _RunIdConvertor())


@dataclass
class _Hosted:
    """One open instance and the channel its requests arrive on."""

    clock: PushedClock
    send: anyio.abc.ObjectSendStream[tuple[Callable[[Instance], Awaitable[Any]], anyio.abc.ObjectSendStream[Any]]]
    dead: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)


class Driver:
    """The driver protocol's server for one implementation; ``app()`` is the ASGI application.

    Args:
        implementation: what the driver serves; any ``toolproof.spec.Implementation``.
        options: what the driver accepts (the root for stores and workspaces, stdio commands, supervision).
        url: the driver's own base URL, which a running tool's callbacks are sent to.
    """

    def __init__(self, implementation: Implementation, options: DriverOptions, url: str) -> None:
        self.implementation = implementation
        self.options = options
        self.url = url
        self.instances: dict[str, _Hosted] = {}
        self.contexts = ContextRegistry()
        self.scripts = ScriptFolder(options.root)
        self.group: anyio.abc.TaskGroup | None = None
        self._receive: dict[str, anyio.abc.ObjectReceiveStream[Any]] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Instances live in this task group for the server's lifetime."""
        async with anyio.create_task_group() as group:
            self.group = group
            yield
            group.cancel_scope.cancel()

    def app(self) -> Starlette:
        """The starlette application."""
        routes = [
            Route("/v1/info", self.info, methods=["GET"]),
            Route("/v1/openapi.json", self.openapi, methods=["GET"]),
            Route("/v1/instances", self.open_instance, methods=["POST"]),
            Route("/v1/scripts", self.place_script, methods=["POST"]),
            Route("/v1/instances/{instance_id}", self.close_instance, methods=["DELETE"]),
            Route("/v1/instances/{instance_id}/steps", self.submit, methods=["POST"]),
            Route("/v1/instances/{instance_id}/approvals", self.approve, methods=["POST"]),
            Route("/v1/instances/{instance_id}/resumptions", self.resume, methods=["POST"]),
            Route("/v1/instances/{instance_id}/sweeps", self.sweep, methods=["POST"]),
            Route("/v1/instances/{instance_id}/scripts", self.run_script, methods=["POST"]),
            Route("/v1/instances/{instance_id}/runs/{run_id:run_id}/invocations", self.invocations, methods=["GET"]),
            Route("/v1/instances/{instance_id}/runs/{run_id:run_id}/events", self.events, methods=["GET"]),
            Route("/v1/instances/{instance_id}/runs/{run_id:run_id}/advertisement", self.advertise, methods=["POST"]),
            Route("/v1/instances/{instance_id}/metrics", self.metrics, methods=["GET"]),
            Route("/v1/instances/{instance_id}/tables", self.tables, methods=["GET"]),
            Route("/v1/instances/{instance_id}/catalog-history", self.catalog_history, methods=["GET"]),
            Route("/v1/contexts/{context_id}/effect-sent", self.effect_sent, methods=["POST"]),
            Route("/v1/contexts/{context_id}/artifacts", self.artifact, methods=["POST"]),
            Route("/v1/contexts/{context_id}/credentials", self.credential, methods=["POST"]),
        ]
        return Starlette(
            routes=routes, lifespan=self.lifespan, exception_handlers={Refused: _refused, Exception: _failed}
        )

    # -- helpers -----------------------------------------------------------------------------

    @staticmethod
    async def _body(request: Request, model: type[_M]) -> _M:
        raw = await request.body()
        try:
            return model.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            raise Refused(422, "invalid-request", f"{where}: {first['msg']}", where) from None

    def _hosted(self, request: Request) -> _Hosted:
        hosted = self.instances.get(request.path_params["instance_id"])
        if hosted is None or hosted.dead:
            raise Refused(404, "not-found", f"no open instance {request.path_params['instance_id']!r}", "instance_id")
        raw = request.headers.get(NOW_HEADER)
        if raw is not None:
            try:
                now = float(raw)
            except ValueError:
                raise Refused(422, "invalid-request", f"header {NOW_HEADER}: not a number", NOW_HEADER) from None
            if now != now or now in (float("inf"), float("-inf")):
                raise Refused(422, "invalid-request", f"header {NOW_HEADER}: not a finite number", NOW_HEADER)
            hosted.clock.push(now)
        return hosted

    async def _on(self, request: Request, work: Callable[[Instance], Awaitable[Any]]) -> Any:
        hosted = self._hosted(request)
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
        if isinstance(result, Exception):
            raise result
        return result

    async def _host(self, instance_id: str, body: OpenInstance, started: anyio.Event, failed: list[str]) -> None:
        hosted = self.instances[instance_id]
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
        work: Callable[[Instance], Awaitable[Any]],
        reply: anyio.abc.ObjectSendStream[Any],
        hosted: _Hosted,
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

    # -- routes ------------------------------------------------------------------------------

    async def openapi(self, request: Request) -> Response:
        """``GET /v1/openapi.json``: the driver's half of the protocol document."""
        return JSONResponse(openapi_document("driver"))

    async def info(self, request: Request) -> Response:
        """``GET /v1/info``."""
        body = DriverInfo(name=self.implementation.name, profiles=sorted(self.implementation.profiles))
        return JSONResponse(body.model_dump(mode="json"))

    async def open_instance(self, request: Request) -> Response:
        """``POST /v1/instances``."""
        body = admit(await self._body(request, OpenInstance), self.options)
        assert self.group is not None  # Invariant: set by the lifespan before any request.
        instance_id = uuid.uuid4().hex
        send, receive = anyio.create_memory_object_stream[Any](64)
        self.instances[instance_id] = _Hosted(clock=PushedClock(_now_of(request)), send=send)
        self._receive[instance_id] = receive
        started, failed = anyio.Event(), list[str]()
        self.group.start_soon(self._host, instance_id, body, started, failed)
        await started.wait()
        if failed:
            self.instances.pop(instance_id, None)
            return problem(422, "configuration-error", failed[0])
        if self.instances[instance_id].dead:
            return problem(409, "simulated-crash", "the instance died while opening")
        return JSONResponse(InstanceHandle(instance_id=instance_id).model_dump(mode="json"), status_code=201)

    async def place_script(self, request: Request) -> Response:
        """``POST /v1/scripts``: the module is importable by this process and its children from now on."""
        body = await self._body(request, ScriptModule)
        self.scripts.place(body.module, body.source)
        return Response(status_code=204)

    async def close_instance(self, request: Request) -> Response:
        """``DELETE /v1/instances/{id}``."""
        hosted = self.instances.pop(request.path_params["instance_id"], None)
        if hosted is None:
            return problem(404, "not-found", f"no open instance {request.path_params['instance_id']!r}", "instance_id")
        await hosted.send.aclose()
        with anyio.move_on_after(30):
            await hosted.done.wait()
        return Response(status_code=204)

    async def submit(self, request: Request) -> Response:
        """``POST .../steps``."""
        step = await self._body(request, StepRequest)
        probe = request.query_params.get("probe")
        if probe not in (None, "memory"):
            raise Refused(422, "invalid-request", f"probe: unknown probe {probe!r}; the only one is memory", "probe")
        if probe is None:
            return _json(Dispositions(dispositions=await self._on(request, lambda i: i.submit(step))))
        self.contexts.trace_results = True
        try:
            dispositions = await self._on(request, lambda i: i.submit(step))
            peak = tracemalloc.get_traced_memory()[1] if tracemalloc.is_tracing() else 0
        finally:
            self.contexts.trace_results = False
            tracemalloc.stop()
        return _json(Dispositions(dispositions=dispositions, memory_peak_bytes=peak))

    async def approve(self, request: Request) -> Response:
        """``POST .../approvals``."""
        answer = await self._body(request, ApprovalAnswer)
        return _json(await self._on(request, lambda i: i.resolve_approval(answer.invocation_id, answer.approved)))

    async def resume(self, request: Request) -> Response:
        """``POST .../resumptions``."""
        answer = await self._body(request, ResumeAnswer)
        return _json(await self._on(request, lambda i: i.resume(answer.invocation_id, answer.answer)))

    async def sweep(self, request: Request) -> Response:
        """``POST .../sweeps``."""
        return _json(Dispositions(dispositions=await self._on(request, lambda i: i.sweep())))

    async def run_script(self, request: Request) -> Response:
        """``POST .../scripts``."""
        script = await self._body(request, ScriptRequest)
        return _json(await self._on(request, lambda i: i.run_script(script)))

    async def invocations(self, request: Request) -> Response:
        """``GET .../runs/{run_id}/invocations``."""
        run_id = request.path_params["run_id"]
        return _json(Invocations(invocations=await self._on(request, lambda i: i.invocations(run_id))))

    async def events(self, request: Request) -> Response:
        """``GET .../runs/{run_id}/events``."""
        run_id = request.path_params["run_id"]
        return _json(Events(events=await self._on(request, lambda i: i.events(run_id))))

    async def advertise(self, request: Request) -> Response:
        """``POST .../runs/{run_id}/advertisement``."""
        run_id = request.path_params["run_id"]
        return _json(await self._on(request, lambda i: i.advertise(run_id)))

    async def metrics(self, request: Request) -> Response:
        """``GET .../metrics``."""
        return _json(Metrics(metrics=await self._on(request, lambda i: i.metrics())))

    async def tables(self, request: Request) -> Response:
        """``GET .../tables``."""
        return _json(Tables(tables=await self._on(request, lambda i: i.store_tables())))

    async def catalog_history(self, request: Request) -> Response:
        """``GET .../catalog-history``."""
        return _json(CatalogHistory(changes=await self._on(request, lambda i: i.catalog_history())))

    def _context(self, request: Request) -> ToolExecutionContext:
        context = self.contexts.contexts.get(request.path_params["context_id"])
        if context is None:
            raise Refused(404, "not-found", "no tool is executing under this context id", "context_id")
        return context

    async def effect_sent(self, request: Request) -> Response:
        """``POST /v1/contexts/{id}/effect-sent``: returns once the watermark is committed."""
        await self._context(request).mark_effect_sent()
        return Response(status_code=204)

    async def artifact(self, request: Request) -> Response:
        """``POST /v1/contexts/{id}/artifacts``."""
        context = self._context(request)
        upload = await self._body(request, ArtifactUpload)
        try:
            data = base64.b64decode(upload.data_base64, validate=True)
        except ValueError:
            raise Refused(422, "invalid-request", "data_base64: not base64", "data_base64") from None
        ref: ArtifactRef = await context.artifact_writer.write(upload.name, data)
        return _json(ref)

    async def credential(self, request: Request) -> Response:
        """``POST /v1/contexts/{id}/credentials``."""
        context = self._context(request)
        query = await self._body(request, ScopeQuery)
        return _json(Credential(credential=await context.credential_resolver.resolve(query.scope)))


def _is_crash(exc: BaseException) -> bool:
    """Whether ``exc`` is a SimulatedCrash, bare or inside the implementation's task groups."""
    if isinstance(exc, SimulatedCrash):
        return True
    return isinstance(exc, BaseExceptionGroup) and any(_is_crash(e) for e in exc.exceptions)


def _now_of(request: Request) -> float:
    try:
        return float(request.headers.get(NOW_HEADER, ""))
    except ValueError:
        return time.time()


def _json(model: BaseModel) -> Response:
    # As the implementation built it: a field its answer's own type adds crosses the wire too, for the harness to judge.
    return Response(model.model_dump_json(serialize_as_any=True), media_type="application/json")


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return problem(exc.status, exc.kind, exc.detail, exc.field)


async def _failed(request: Request, exc: Exception) -> Response:
    # A bug in the implementation or the driver: a 500 with a problem body, never a bare traceback.
    return problem(500, "internal-error", f"{type(exc).__name__}: {exc}")


def serve(implementation: Implementation, port: int, options: DriverOptions) -> None:
    """Serve ``implementation`` behind the driver protocol on ``127.0.0.1:port`` until interrupted.

    Example:
        ``serve(MyPipeline(), 8787, DriverOptions(root=Path("/srv/toolproof")))``, then
        ``toolproof run --impl http://127.0.0.1:8787``.
    """
    driver = Driver(implementation, options, url=f"http://127.0.0.1:{port}")
    uvicorn.run(driver.app(), host="127.0.0.1", port=port, log_level="warning")
