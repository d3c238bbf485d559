"""A server whose catalog and answers are the model's data: the MCP half of the model judge's workloads.

``ModelledServer(server)`` lists ``server.tools`` (``toolproof.spec.model.McpServer``) until ``change`` gives it
another catalog, silently (no tools/list_changed), and answers each tool as its ``McpRemoteTool`` says. Every
``tools/call`` it receives lands in ``calls``: the remote name and the arguments, as the harness's own record of what
reached the server (decision 8's "observed, not claimed": the implementation's rows never count them).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from toolproof.spec.model import McpRemoteTool, McpServer
from toolproof.spec.model.mcp import RESOURCE_READ, definition

from ._base import Context, FakeServer, error

RESOURCE_URI = "res://record"
"""The one resource a modelled server with a resource lists."""


def _listed(remote: McpRemoteTool) -> types.Tool:
    """The remote tool as ``tools/list`` answers it: exactly the definition the model hashes."""
    return types.Tool.model_validate(definition(remote))


class ModelledServer:
    """An in-process MCP server answering as the model's ``McpServer`` declares."""

    def __init__(self, server: McpServer) -> None:
        self.server_id = server.server_id
        self.tools: dict[str, McpRemoteTool] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        """``(remote name, arguments)`` of every tools/call received, and ``("resources/read", {"uri": ...})`` of every
        resources/read, in arrival order."""
        self._catalog: tuple[McpRemoteTool, ...] = ()
        self.change(server.tools)
        self.resource = server.resource
        # A server without a resource answers resources/list with none, as SDK servers do (D8.9: no read tool).
        resources: dict[str, Any] = {"on_list_resources": self._resources}
        if server.resource is not None:
            resources["on_read_resource"] = self._read
        self.fake = FakeServer(f"modelled-{server.server_id}", self._list, {}, **resources)
        self.fake.tools = _AnyTool(self)

    async def _resources(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        listed = [types.Resource(uri=RESOURCE_URI, name="record")] if self.resource is not None else []
        return types.ListResourcesResult(resources=listed)

    async def _read(self, ctx: Context, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        """Every uri reads as the server's one resource text (the model's read tool answers alike whatever it asks)."""
        self.calls.append((RESOURCE_READ, {"uri": str(params.uri)}))
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=self.resource or "")])

    def change(self, tools: tuple[McpRemoteTool, ...]) -> None:
        """List ``tools`` from now on; a call of a name no longer listed answers isError (as a server that forgot it)."""
        self._catalog = tools
        self.tools = {remote.remote_name: remote for remote in tools}

    def _list(self) -> list[types.Tool]:
        return [_listed(remote) for remote in self._catalog]

    @property
    def sdk_server(self) -> Server[Any]:
        """The SDK server an implementation connects to in-process (transport memory)."""
        return self.fake.server

    async def answer(self, name: str, params: types.CallToolRequestParams) -> types.CallToolResult:
        """One call: noted, then answered as its remote tool declares."""
        self.calls.append((name, dict(params.arguments or {})))
        remote = self.tools.get(name)
        if remote is None:
            return error(f"unknown tool: {name!r}")
        content = [types.TextContent(type="text", text=text) for text in remote.parts]
        return types.CallToolResult(content=content, is_error=remote.is_error)


class _AnyTool(dict[str, Any]):
    """The fake's tool table: every name is answered by the modelled server (a name it does not list included)."""

    def __init__(self, owner: ModelledServer) -> None:
        super().__init__()
        self._owner = owner

    def get(self, name: str, default: Any = None) -> Any:
        async def behaviour(ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult:
            return await self._owner.answer(name, params)

        return behaviour
