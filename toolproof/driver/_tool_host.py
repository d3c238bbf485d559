"""The tool host: the harness's tools, executed for a driver that calls them back.

The harness's fake tools execute here, in the harness, so the world ledger stays in the
harness; what a tool asks of its context (the watermark, artifacts, credentials) calls
the driver back. ``serving`` puts the host (or an in-process MCP fake) on a loopback port.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from toolproof.spec import (
    ArtifactRef,
    ArtifactUpload,
    ContextBase,
    Credential,
    ExecuteTool,
    HarnessError,
    ScopeQuery,
    SimulatedCrash,
    Tool,
    ToolOutcome,
)

from ._problems import raise_problem


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
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


class _HostContext(ContextBase):
    """Decision 2's nine members, for a harness tool the driver executes; callables call the driver back."""

    __slots__ = ("_base", "_cancelled", "_client")

    def __init__(self, request: ExecuteTool, client: httpx2.AsyncClient) -> None:
        wire = request.context
        self._base = f"{wire.driver_url.rstrip('/')}/v1/contexts/{wire.context_id}"
        self._client = client
        self._cancelled = anyio.Event()
        super().__init__(
            identity=wire.identity,
            budget=wire.budget,
            deadline=wire.deadline,
            target=wire.target,
            workspace=Path(wire.workspace),
            artifact_writer=self._Artifacts(self),
            credential_resolver=self._Credentials(self),
            cancellation=self._Cancellation(self),
        )

    async def mark_effect_sent(self) -> None:
        """Commit the watermark in the driver; returns once it answered."""
        raise_problem(await self._client.post(f"{self._base}/effect-sent"))

    class _Artifacts:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        async def write(self, name: str, data: bytes) -> ArtifactRef:
            body = ArtifactUpload(name=name, data_base64=base64.b64encode(data).decode())
            response = await self._outer._client.post(f"{self._outer._base}/artifacts", json=body.model_dump())
            raise_problem(response)
            return ArtifactRef.model_validate_json(response.content)

    class _Credentials:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        async def resolve(self, scope: str) -> str | None:
            body = ScopeQuery(scope=scope)
            response = await self._outer._client.post(f"{self._outer._base}/credentials", json=body.model_dump())
            raise_problem(response)
            return Credential.model_validate_json(response.content).credential

    class _Cancellation:
        def __init__(self, outer: _HostContext) -> None:
            self._outer = outer

        def is_set(self) -> bool:
            return self._outer._cancelled.is_set()

        async def wait(self) -> None:
            await self._outer._cancelled.wait()


class ToolHost:
    """Executes the harness's tools for the driver (``/v1/tools/execute``, ``/v1/contexts/{id}/cancel``)."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = {tool.spec.name: tool for tool in tools}
        self.running: dict[str, tuple[_HostContext, anyio.CancelScope]] = {}
        self.client = httpx2.AsyncClient(timeout=None)

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
        """``POST /v1/contexts/{id}/cancel``: the tool's cancellation is set and its call cancelled."""
        found = self.running.get(request.path_params["context_id"])
        if found is not None:
            found[0]._cancelled.set()
            found[1].cancel()
        return Response(status_code=204)
