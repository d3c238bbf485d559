"""The harness side of the driver protocol: the implementation port against a driver URL.

``HttpImplementation`` speaks ``spec.openapi_document()`` to a driver and serves the tool
host the driver calls back: the harness's fake tools execute here, so the world ledger
stays in the harness. In-process MCP fakes are served to the driver over streamable HTTP
from this process, so their request logs stay readable too.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import uvicorn
from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolproof.spec import (
    NOW_HEADER,
    Advertisement,
    ApprovalAnswer,
    ArtifactRef,
    ArtifactUpload,
    Budget,
    CatalogChange,
    CatalogHistory,
    Clock,
    ConfigurationError,
    Credential,
    Disposition,
    Dispositions,
    DriverInfo,
    Event,
    Events,
    ExecuteTool,
    HarnessError,
    Identity,
    Implementation,
    InstanceConfig,
    InstanceHandle,
    InvocationRow,
    Invocations,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    Metrics,
    OpenInstance,
    Problem,
    Profile,
    ResumeAnswer,
    ScopeQuery,
    ScriptRequest,
    ScriptRun,
    SimulatedCrash,
    StepRequest,
    Tables,
    Tool,
    ToolOutcome,
    crash_now,
    load_implementation,
)

CONNECT_PATIENCE_S = 60.0
"""How long a connection refused is retried: a supervised driver restarts after a SIGKILL crash."""
_DISPOSITION = TypeAdapter[Disposition](Disposition)


def is_driver_url(ref: str) -> bool:
    """Whether an implementation reference names a driver."""
    return ref.startswith(("http://", "https://"))


def load(ref: str) -> Implementation:
    """An implementation by entry-point name, ``package.module:factory``, or driver URL."""
    return HttpImplementation(ref) if is_driver_url(ref) else load_implementation(ref)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one leaf exception of nested single-member groups, or None."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup):
        if len(inner.exceptions) != 1:
            return None
        inner = inner.exceptions[0]
    return inner


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@asynccontextmanager
async def _serving(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app on a free loopback port in this event loop; yields its base URL."""
    sock = _free_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        for _ in range(3000):  # uvicorn signals nothing but this flag; 30 s at most.
            if server.started:
                break
            await anyio.sleep(0.01)
        else:
            raise HarnessError("a loopback server of the harness did not start within 30 s")
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
    sock.close()


def _raise_problem(response: httpx2.Response) -> None:
    if response.status_code < 400:
        return
    try:
        problem = Problem.model_validate_json(response.content)
    except ValueError:
        raise HarnessError(f"driver answered {response.status_code}: {response.text[:300]}") from None
    if problem.type == "simulated-crash":
        raise SimulatedCrash(problem.detail)
    if problem.type in ("configuration-error", "not-supported") or (
        problem.type == "invalid-request"
        and response.request.method == "POST"
        and response.request.url.path.endswith("/instances")
    ):
        raise ConfigurationError(problem.detail)
    raise HarnessError(f"driver answered {problem.status} {problem.type}: {problem.detail}")


class _HostContext:
    """Decision 2's nine members, for a harness tool the driver executes; callables call the driver back."""

    def __init__(self, request: ExecuteTool, client: httpx2.AsyncClient) -> None:
        wire = request.context
        self._base = f"{wire.driver_url.rstrip('/')}/v1/contexts/{wire.context_id}"
        self._client = client
        self._identity, self._budget, self._deadline = wire.identity, wire.budget, wire.deadline
        self._target, self._workspace = wire.target, Path(wire.workspace)
        self._cancelled = anyio.Event()
        self.artifact_writer = self._Artifacts(self)
        self.credential_resolver = self._Credentials(self)
        self.cancellation = self._Cancellation(self)

    @property
    def identity(self) -> Identity:
        """Who and what this execution is."""
        return self._identity

    @property
    def budget(self) -> Budget:
        """What the call may spend."""
        return self._budget

    @property
    def deadline(self) -> float:
        """When the tool must have returned."""
        return self._deadline

    @property
    def target(self) -> str | None:
        """The configured target."""
        return self._target

    @property
    def workspace(self) -> Path:
        """The run's workspace."""
        return self._workspace

    async def mark_effect_sent(self) -> None:
        """Commit the watermark in the driver; returns once it answered."""
        _raise_problem(await self._client.post(f"{self._base}/effect-sent"))

    class _Artifacts:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        async def write(self, name: str, data: bytes) -> ArtifactRef:
            body = ArtifactUpload(name=name, data_base64=base64.b64encode(data).decode())
            response = await self._outer._client.post(f"{self._outer._base}/artifacts", json=body.model_dump())
            _raise_problem(response)
            return ArtifactRef.model_validate_json(response.content)

    class _Credentials:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        async def resolve(self, scope: str) -> str | None:
            body = ScopeQuery(scope=scope)
            response = await self._outer._client.post(f"{self._outer._base}/credentials", json=body.model_dump())
            _raise_problem(response)
            return Credential.model_validate_json(response.content).credential

    class _Cancellation:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        def is_set(self) -> bool:
            return self._outer._cancelled.is_set()

        async def wait(self) -> None:
            await self._outer._cancelled.wait()


class _ToolHost:
    """Executes the harness's tools for the driver."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.spec.name: tool for tool in tools}
        self.running: dict[str, tuple[_HostContext, anyio.CancelScope]] = {}
        self.client = httpx2.AsyncClient(timeout=None)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/tools/execute", self.execute, methods=["POST"]),
                Route("/v1/contexts/{context_id}/cancel", self.cancel, methods=["POST"]),
            ]
        )

    async def execute(self, request: Request) -> Response:
        body = ExecuteTool.model_validate_json(await request.body())
        tool = self.tools.get(body.tool)
        if tool is None:
            outcome = ToolOutcome(raised=f"LookupError: the harness registered no tool {body.tool!r}")
            return Response(outcome.model_dump_json(), media_type="application/json")
        context = _HostContext(body, self.client)
        outcome = ToolOutcome(raised="CancelledError: cancelled by the driver")
        with anyio.CancelScope() as scope:
            self.running[body.context.context_id] = (context, scope)
            try:
                result = await tool.execute(dict(body.arguments), context)
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
        found = self.running.get(request.path_params["context_id"])
        if found is not None:
            found[0]._cancelled.set()
            found[1].cancel()
        return Response(status_code=204)


class HttpInstance:
    """One instance behind a driver."""

    def __init__(
        self, impl: HttpImplementation, client: httpx2.AsyncClient, instance_id: str, clock: Clock, dies: bool
    ) -> None:
        self._impl = impl
        self._client = client
        self._base = f"/v1/instances/{instance_id}"
        self._clock = clock
        self._dies = dies

    async def _call(self, method: str, path: str, body: BaseModel | None = None) -> bytes:
        try:
            response = await self._client.request(
                method,
                self._base + path,
                content=body.model_dump_json() if body is not None else None,
                headers={NOW_HEADER: repr(self._clock.now()), "content-type": "application/json"},
            )
        except httpx2.TransportError as exc:
            if self._dies:
                crash_now("sigkill")  # The driver died at its crash point: this worker dies with it.
            raise HarnessError(f"the driver at {self._impl.url} stopped answering: {exc}") from None
        _raise_problem(response)
        return response.content

    async def submit(self, step: StepRequest) -> list[Disposition]:
        return Dispositions.model_validate_json(await self._call("POST", "/steps", step)).dispositions

    async def submit_measuring_memory(self, step: StepRequest) -> tuple[list[Disposition], int]:
        """Decision 12's memory, measured in the driver from the tools' results arriving to the step's end."""
        answer = Dispositions.model_validate_json(await self._call("POST", "/steps?probe=memory", step))
        return answer.dispositions, answer.memory_peak_bytes or 0

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        answer = ApprovalAnswer(invocation_id=invocation_id, approved=approved)
        return _DISPOSITION.validate_json(await self._call("POST", "/approvals", answer))

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        body = ResumeAnswer(invocation_id=invocation_id, answer=answer)
        return _DISPOSITION.validate_json(await self._call("POST", "/resumptions", body))

    async def sweep(self) -> list[Disposition]:
        return Dispositions.model_validate_json(await self._call("POST", "/sweeps")).dispositions

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        return ScriptRun.model_validate_json(await self._call("POST", "/scripts", request))

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        return Invocations.model_validate_json(await self._call("GET", f"/runs/{run_id}/invocations")).invocations

    async def events(self, run_id: str) -> list[Event]:
        return Events.model_validate_json(await self._call("GET", f"/runs/{run_id}/events")).events

    async def metrics(self) -> dict[str, int]:
        return Metrics.model_validate_json(await self._call("GET", "/metrics")).metrics

    async def store_tables(self) -> list[str]:
        return Tables.model_validate_json(await self._call("GET", "/tables")).tables

    async def advertise(self, run_id: str) -> Advertisement:
        return Advertisement.model_validate_json(await self._call("POST", f"/runs/{run_id}/advertisement"))

    async def catalog_history(self) -> list[CatalogChange]:
        return CatalogHistory.model_validate_json(await self._call("GET", "/catalog-history")).changes


class HttpImplementation:
    """An implementation behind a driver URL (``toolproof run --impl http://127.0.0.1:PORT``)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        info = self._info()
        self._name = f"{info.name}@{self.url.split('://', 1)[1]}"
        self._profiles = frozenset(info.profiles)

    def _info(self) -> DriverInfo:
        give_up = time.monotonic() + CONNECT_PATIENCE_S
        while True:
            try:
                response = httpx2.get(f"{self.url}/v1/info", timeout=10)
                break
            except httpx2.ConnectError as exc:
                if time.monotonic() > give_up:
                    raise ConfigurationError(f"no driver answers at {self.url}: {exc}") from None
                time.sleep(0.2)
            except httpx2.HTTPError as exc:
                raise ConfigurationError(f"no driver answers at {self.url}: {exc}") from None
        try:
            return DriverInfo.model_validate_json(response.content)
        except ValueError:
            raise ConfigurationError(
                f"{self.url}/v1/info did not answer the driver protocol (toolproof-driver/1)"
            ) from None

    @property
    def name(self) -> str:
        """The driver's name and address."""
        return self._name

    @property
    def profiles(self) -> frozenset[Profile]:
        """What the driver claims."""
        return self._profiles

    def open(
        self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock
    ) -> AbstractAsyncContextManager[HttpInstance]:
        """Serve the tool host (and in-process MCP fakes), then open an instance in the driver."""
        return self._open(config, tools, clock)

    @asynccontextmanager
    async def _open(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[HttpInstance]:
        # The loopback servers' task groups wrap what the body raises; a single error is raised as itself.
        try:
            async with self._opened(config, tools, clock) as instance:
                yield instance
        except BaseExceptionGroup as group:
            leaf = _single(group)
            if leaf is None:
                raise
            raise leaf from None

    @asynccontextmanager
    async def _opened(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[HttpInstance]:
        # A client per instance: instances may live in other threads' event loops (lease races), and a
        # forked worker must not reuse its parent's connections.
        client = httpx2.AsyncClient(base_url=self.url, timeout=None)
        host = _ToolHost(tools)
        async with AsyncExitStack() as stack:
            stack.push_async_callback(client.aclose)
            stack.push_async_callback(host.client.aclose)
            host_url = await stack.enter_async_context(_serving(host.app()))
            servers = [await self._expose(stack, server) for server in config.mcp_servers]
            wire = config.model_copy(update={"mcp_servers": servers})
            body = OpenInstance(config=wire, tools=[t.spec for t in tools], tool_host=host_url)
            try:
                response = await client.post(
                    "/v1/instances",
                    content=body.model_dump_json(),
                    headers={NOW_HEADER: repr(clock.now()), "content-type": "application/json"},
                )
            except httpx2.TransportError as exc:
                raise HarnessError(f"the driver at {self.url} stopped answering: {exc}") from None
            _raise_problem(response)
            instance_id = InstanceHandle.model_validate_json(response.content).instance_id
            dies = config.crash is not None and config.crash.mode == "sigkill"
            try:
                yield HttpInstance(self, client, instance_id, clock, dies)
            finally:
                # The driver may have died with its instance (a crash plan): then nothing is left to close.
                shielded = anyio.CancelScope(shield=True)
                with shielded, anyio.move_on_after(30), contextlib.suppress(httpx2.TransportError):
                    await client.delete(f"/v1/instances/{instance_id}")

    @staticmethod
    async def _expose(stack: AsyncExitStack, server: McpServerConfig) -> McpServerConfig:
        # An operator's in-process fake cannot cross to the driver: serve that very object over HTTP.
        if server.transport is not McpTransport.MEMORY or server.server is None or server.origin is McpOrigin.TENANT:
            return server
        base = await stack.enter_async_context(_serving(server.server.streamable_http_app(host="127.0.0.1")))
        return server.model_copy(update={"transport": McpTransport.HTTP, "url": f"{base}/mcp", "server": None})
