"""The driver side of the driver protocol: any Python implementation behind ``/v1`` (starlette).

``toolproof serve-reference`` runs it for the reference; ``serve(MyImplementation(), ...)``
runs it for yours. This module is the protocol's routes; each open instance lives in its own
task (``_instances``), which a route's work is handed to.
"""

from __future__ import annotations

import base64
import logging
import time
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

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
    Credential,
    Dispositions,
    DriverInfo,
    Events,
    Implementation,
    InstanceHandle,
    Invocations,
    Metrics,
    OpenInstance,
    ResumeAnswer,
    ScopeQuery,
    ScriptModule,
    ScriptRequest,
    StepRequest,
    StoreFault,
    Tables,
    ToolExecutionContext,
    openapi_document,
)

from ._admission import DriverOptions, admit
from ._hosted import ContextRegistry
from ._instances import HostedInstance, OpenInstances, Work
from ._problems import Refused, problem
from ._scripts import ScriptFolder

_M = TypeVar("_M", bound=BaseModel)

log = logging.getLogger("toolproof.driver")
"""One line per instance the driver did not open, with its cause (Python's last-resort handler: stderr)."""


class _RunIdConvertor(Convertor[str]):
    """A run id in a path: the whole escaped segment as the client sent it, decoded, whatever it holds (a ``/`` or a
    newline included), up to the route's next literal part."""

    regex = r"[\s\S]+?"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("run_id", _RunIdConvertor())


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
        self.contexts = ContextRegistry()
        self.instances = OpenInstances(implementation, url, self.contexts)
        self.scripts = ScriptFolder(options.root)

    # -- lifecycle ---------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Instances live in a task group of the server's lifetime."""
        async with self.instances.hosting():
            yield

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

    def _hosted(self, request: Request) -> HostedInstance:
        hosted = self.instances.find(request.path_params["instance_id"])
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

    async def _on(self, request: Request, work: Work) -> Any:
        return await self.instances.on(self._hosted(request), work)

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
        try:
            body = admit(await self._body(request, OpenInstance), self.options)
            instance_id = await self.instances.open(body, _now_of(request))
        except Refused as exc:
            # The operator sees every refusal where the driver runs, not only the client that asked.
            log.warning("instance not opened (%s %s): %s", exc.status, exc.kind, exc.detail)
            raise
        return JSONResponse(InstanceHandle(instance_id=instance_id).model_dump(mode="json"), status_code=201)

    async def place_script(self, request: Request) -> Response:
        """``POST /v1/scripts``: the module is importable by this process and its children from now on."""
        body = await self._body(request, ScriptModule)
        self.scripts.place(body.module, body.source)
        return Response(status_code=204)

    async def close_instance(self, request: Request) -> Response:
        """``DELETE /v1/instances/{id}``."""
        if not await self.instances.close(request.path_params["instance_id"]):
            return problem(404, "not-found", f"no open instance {request.path_params['instance_id']!r}", "instance_id")
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
        """``POST /v1/contexts/{id}/effect-sent``: returns once the watermark is committed (503 ``store-fault``
        when the store failed to commit it)."""
        try:
            await self._context(request).mark_effect_sent()
        except StoreFault as fault:
            raise Refused(503, "store-fault", str(fault)) from None
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
