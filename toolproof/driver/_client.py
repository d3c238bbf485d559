"""The harness side of the driver protocol: the implementation port against a driver URL.

``HttpImplementation`` speaks ``spec.openapi_document()`` to a driver and serves the tool
host the driver calls back (``_tool_host``). In-process MCP fakes are served to the driver
over streamable HTTP from this process, so their request logs stay readable too.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

import anyio
import httpx2
from pydantic import BaseModel, JsonValue, ValidationError, create_model

from toolproof.spec import (
    DRIVER_PROTOCOL,
    NOW_HEADER,
    Advertisement,
    ApprovalAnswer,
    CatalogChange,
    CatalogHistory,
    Clock,
    ConfigurationError,
    Disposition,
    DriverInfo,
    Event,
    Events,
    HarnessError,
    Implementation,
    ImplementationError,
    InstanceConfig,
    InstanceHandle,
    InvocationRow,
    Invocations,
    InvocationStatus,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    Metrics,
    OpenInstance,
    Outcome,
    Profile,
    ResumeAnswer,
    ScriptModule,
    ScriptRequest,
    ScriptRun,
    StepRequest,
    Success,
    Suspended,
    Tables,
    Tool,
    crash_now,
    load_implementation,
    sole_exception,
)

from ._http import path_segment, tls_context
from ._problems import raise_problem
from ._tool_host import ToolHost, serving

CONNECT_PATIENCE_S = 60.0
"""How long a connection refused is retried: a supervised driver restarts after a SIGKILL crash."""
PROBE_TIMEOUT_S = 5.0
"""How long the first probe of a driver URL waits for an answer (the CLI's up-front check)."""
_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")

DISPOSITION_STATUSES = (*(status.value for status in InvocationStatus), "SUSPENDED")
"""What a disposition's ``status`` may be: a row status, or the suspension marker."""


class AnswerMismatch(ValueError):
    """A driver's answer that does not match the protocol's shape: where, in the answer's own terms."""


def _json_text(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _mismatch(where: str, exc: ValidationError) -> AnswerMismatch:
    """The first of ``exc``'s errors as a JSON path, what the protocol wants there, and what came."""
    error = exc.errors()[0]
    path = ".".join([where, *(str(part) for part in error["loc"])]).strip(".") or "the answer"
    return AnswerMismatch(f"{path}: {error['msg']} (got {_json_text(error['input'])})")


def _disposition(data: object, where: str = "") -> Disposition:
    """One disposition as the driver sent it; a field its shape does not have is kept, so scenarios see it.

    The shape is chosen by ``status`` (as the document's ``Disposition`` says), so a mismatch is named by the
    answer's own field, never by the union's branches."""
    if not isinstance(data, dict):
        raise AnswerMismatch(f"{where or 'the answer'}: a disposition is an object (got {_json_text(data)})")
    status = data.get("status")
    if status not in DISPOSITION_STATUSES:
        allowed = ", ".join(DISPOSITION_STATUSES)
        raise AnswerMismatch(f"{where + '.' if where else ''}status: one of {allowed} (got {_json_text(status)})")
    shape: type[BaseModel] = Success if status == "SUCCEEDED" else Suspended if status == "SUSPENDED" else Outcome
    extra = sorted(set(data) - set(shape.model_fields))
    if extra:
        fields: dict[str, Any] = {name: (JsonValue, None) for name in extra}
        shape = create_model(shape.__name__, __base__=shape, **fields)
    try:
        return cast(Disposition, shape.model_validate(data))
    except ValidationError as exc:
        raise _mismatch(where, exc) from None


def _dispositions(raw: bytes) -> list[Disposition]:
    return _listed(json.loads(raw))


def _listed(answer: object) -> list[Disposition]:
    """The dispositions of a parsed ``Dispositions`` answer."""
    if not isinstance(answer, dict) or not isinstance(answer.get("dispositions"), list):
        raise AnswerMismatch(f"dispositions: a list of dispositions (got {_json_text(answer)})")
    return [_disposition(d, f"dispositions.{i}") for i, d in enumerate(answer["dispositions"])]


def _off_protocol(request: str, exc: ValueError, protocol: str = "") -> str:
    """One line for an answer that does not match the protocol: an ``AnswerMismatch``, or a body that is not JSON."""
    what = str(exc) if isinstance(exc, AnswerMismatch) else f"the body is not JSON ({exc})"
    return f"the driver's answer to {request} does not match the protocol{protocol}: {what}"


def _model(model: type[_M], raw: bytes) -> _M:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise _mismatch("", exc) from None


def is_driver_url(ref: str) -> bool:
    """Whether an implementation reference names a driver."""
    return ref.startswith(("http://", "https://"))


def load(ref: str, *, patience_s: float = CONNECT_PATIENCE_S) -> Implementation:
    """An implementation by entry-point name, ``package.module:factory``, or driver URL. ``patience_s``: how long a
    driver refusing connections is retried (0: probed once, as the CLI does before a run; the default lets a
    supervised driver come back from a crash plan's SIGKILL)."""
    if is_driver_url(ref):
        return HttpImplementation(ref, patience_s=patience_s)
    if re.fullmatch(r"[\w.\-\[\]]+:\d+(/.*)?|[A-Za-z][\w+.\-]*://.*", ref):  # Else read as a module not importable.
        raise ConfigurationError(f"implementation {ref!r} looks like a driver's address: a URL starts with http://")
    return load_implementation(ref)


def _check_url(url: str) -> None:
    try:
        hostname, _port = urlsplit(url).hostname, urlsplit(url).port  # .port raises ValueError on a bad port.
    except ValueError as exc:
        raise ConfigurationError(f"driver URL {url!r} is malformed ({exc}); give http://HOST:PORT") from None
    if not hostname:
        raise ConfigurationError(f"driver URL {url!r} names no host; give http://HOST:PORT")


class HttpInstance:
    """One instance behind a driver."""

    def __init__(
        self,
        impl: HttpImplementation,
        client: httpx2.AsyncClient,
        instance_id: str,
        clock: Clock,
        dies: bool,
        host: ToolHost | None = None,
    ) -> None:
        self._impl = impl
        self._host = host
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
        if self._host is not None and self._host.fault is not None:
            # The driver handed a tool a context the tool host could not read: whatever it answered after, the
            # request failed by the driver's error, said in the protocol's terms.
            raise ImplementationError(str(self._host.fault))
        raise_problem(response)
        return response.content

    async def _answer(self, method: str, path: str, parse: Callable[[bytes], _T], body: BaseModel | None = None) -> _T:
        """The answer to one request, read by ``parse``; an answer off the protocol's shape is the driver's error,
        said in the answer's terms (a JSON path, what the document wants there, what came), never as Python."""
        raw = await self._call(method, path, body)
        try:
            return parse(raw)
        except ValueError as exc:  # AnswerMismatch, or no JSON at all.
            raise ImplementationError(_off_protocol(f"{method} {self._base}{path}", exc)) from None

    async def submit(self, step: StepRequest) -> list[Disposition]:
        """``POST .../steps``."""
        return await self._answer("POST", "/steps", _dispositions, step)

    async def submit_measuring_memory(self, step: StepRequest) -> tuple[list[Disposition], int | None]:
        """Decision 12's memory, measured in the driver from the tools' results arriving to the step's end; None
        when the driver answers null (it does not measure): never read as zero bytes, which would be a pass."""

        def parse(raw: bytes) -> tuple[list[Disposition], int | None]:
            answer = json.loads(raw)
            dispositions = _listed(answer)  # Refuses an answer that is no object, before its peak is read.
            peak = answer.get("memory_peak_bytes")
            return dispositions, peak if isinstance(peak, int) and not isinstance(peak, bool) else None

        return await self._answer("POST", "/steps?probe=memory", parse, step)

    async def resolve_approval(self, invocation_id: str, approved: bool) -> Disposition:
        """``POST .../approvals``."""
        answer = ApprovalAnswer(invocation_id=invocation_id, approved=approved)
        return await self._answer("POST", "/approvals", lambda raw: _disposition(json.loads(raw)), answer)

    async def resume(self, invocation_id: str, answer: str) -> Disposition:
        """``POST .../resumptions``."""
        body = ResumeAnswer(invocation_id=invocation_id, answer=answer)
        return await self._answer("POST", "/resumptions", lambda raw: _disposition(json.loads(raw)), body)

    async def sweep(self) -> list[Disposition]:
        """``POST .../sweeps``."""
        return await self._answer("POST", "/sweeps", _dispositions)

    async def run_script(self, request: ScriptRequest) -> ScriptRun:
        """``POST .../scripts``."""
        return await self._answer("POST", "/scripts", lambda raw: _model(ScriptRun, raw), request)

    async def invocations(self, run_id: str) -> list[InvocationRow]:
        """``GET .../runs/{run_id}/invocations``."""
        path = f"/runs/{path_segment(run_id)}/invocations"
        return (await self._answer("GET", path, lambda raw: _model(Invocations, raw))).invocations

    async def events(self, run_id: str) -> list[Event]:
        """``GET .../runs/{run_id}/events``."""
        return (
            await self._answer("GET", f"/runs/{path_segment(run_id)}/events", lambda raw: _model(Events, raw))
        ).events

    async def metrics(self) -> dict[str, int]:
        """``GET .../metrics``."""
        return (await self._answer("GET", "/metrics", lambda raw: _model(Metrics, raw))).metrics

    async def store_tables(self) -> list[str]:
        """``GET .../tables``."""
        return (await self._answer("GET", "/tables", lambda raw: _model(Tables, raw))).tables

    async def advertise(self, run_id: str) -> Advertisement:
        """``POST .../runs/{run_id}/advertisement``."""
        path = f"/runs/{path_segment(run_id)}/advertisement"
        return await self._answer("POST", path, lambda raw: _model(Advertisement, raw))

    async def catalog_history(self) -> list[CatalogChange]:
        """``GET .../catalog-history``."""
        return (await self._answer("GET", "/catalog-history", lambda raw: _model(CatalogHistory, raw))).changes


class HttpImplementation:
    """An implementation behind a driver URL (``toolproof run --impl http://127.0.0.1:PORT``)."""

    def __init__(self, url: str, *, patience_s: float = CONNECT_PATIENCE_S) -> None:
        _check_url(url)
        self.url = url.rstrip("/")
        info = self._info(patience_s)
        self._name = f"{info.name}@{self.url.split('://', 1)[1]}"
        self._profiles = frozenset(info.profiles)

    def _info(self, patience_s: float) -> DriverInfo:
        give_up = time.monotonic() + patience_s
        while True:
            try:
                response = httpx2.get(f"{self.url}/v1/info", timeout=PROBE_TIMEOUT_S if patience_s == 0 else 10)
                break
            except httpx2.ConnectError as exc:
                if time.monotonic() >= give_up:
                    raise ConfigurationError(f"no driver answers at {self.url}: {exc}") from None
                time.sleep(0.2)
            except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
                raise ConfigurationError(f"no driver answers at {self.url}: {exc}") from None
        try:
            return _model(DriverInfo, response.content)
        except ValueError as exc:
            raise ConfigurationError(_off_protocol(f"GET {self.url}/v1/info", exc, f" ({DRIVER_PROTOCOL})")) from None

    @property
    def name(self) -> str:
        """The driver's name and address."""
        return self._name

    @property
    def profiles(self) -> frozenset[Profile]:
        """What the driver claims."""
        return self._profiles

    async def place_script(self, module: str, source: str) -> bool:
        """``POST /v1/scripts``: ``module`` importable by the served implementation, as ``source``; False when the
        driver does not offer the operation (protocol revision 0).

        Raises:
            ImplementationError: the driver refused or failed the operation it offers.
        """
        async with httpx2.AsyncClient(base_url=self.url, timeout=60, verify=tls_context()) as client:
            try:
                response = await client.post(
                    "/v1/scripts",
                    content=ScriptModule(module=module, source=source).model_dump_json(),
                    headers={"content-type": "application/json"},
                )
            except httpx2.TransportError as exc:
                raise HarnessError(f"the driver at {self.url} stopped answering: {exc}") from None
        if response.status_code in (404, 405):
            return False
        raise_problem(response)
        return True

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
            leaf = sole_exception(group)
            if leaf is None:
                raise
            raise leaf from None

    @asynccontextmanager
    async def _opened(self, config: InstanceConfig, tools: Sequence[Tool], clock: Clock) -> AsyncIterator[HttpInstance]:
        # A client per instance: instances may live in other threads' event loops (lease races), and a
        # forked worker must not reuse its parent's connections.
        client = httpx2.AsyncClient(base_url=self.url, timeout=None, verify=tls_context())
        host = ToolHost(tools)
        async with AsyncExitStack() as stack:
            stack.push_async_callback(client.aclose)
            stack.push_async_callback(host.client.aclose)
            host_url = await stack.enter_async_context(serving(host.app()))
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
            raise_problem(response)
            try:
                instance_id = _model(InstanceHandle, response.content).instance_id
            except ValueError as exc:
                raise ImplementationError(_off_protocol("POST /v1/instances", exc)) from None
            dies = config.crash is not None and config.crash.mode == "sigkill"
            instance = HttpInstance(self, client, instance_id, clock, dies, host)
            host.instance = instance
            try:
                yield instance
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
        base = await stack.enter_async_context(serving(server.server.streamable_http_app(host="127.0.0.1")))
        return server.model_copy(update={"transport": McpTransport.HTTP, "url": f"{base}/mcp", "server": None})
