"""The MCP adapter's first layer: connecting the configured servers (decision 7) and holding one ``Link`` each.

The adapter is four layers, one module each, each a subclass of the one before: connection
(here), catalog and drift (``_mcp_catalog``), classification and results (``_mcp_classify``),
session pins (``_mcp_pins``); ``McpAdapter`` (``_mcp``) is the last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import urlsplit

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError

from toolproof.spec import (
    Clock,
    ConfigurationError,
    InstanceConfig,
    McpOrigin,
    McpServerConfig,
    McpTransport,
    sole_exception,
)

from ._store import Store

INPUT_REQUIRED_MAX_ROUNDS = 3
"""How many input-required rounds a call may take before it fails (every request in them is declined)."""


@dataclass(frozen=True)
class RemoteTool:
    """One registered entry of a server's current catalog."""

    name: str
    """The registered name."""
    remote_name: str | None
    """None: the synthetic read_resource tool."""
    sha256: str
    definition: dict[str, Any]
    """The wire form (camelCase) of the remote definition."""


@dataclass
class Link:
    """One configured server: its connection and the adapter's view of its catalog."""

    config: McpServerConfig
    client: Client
    prefix: str
    catalog: dict[str, RemoteTool] = field(default_factory=dict)
    dropped: set[str] = field(default_factory=set)
    known: bool = False
    """Whether ``catalog`` reflects the store's history yet."""
    resources: bool = False
    """Whether the server answers resources/list (then it gets the synthetic read tool)."""
    prompts: bool = False
    """Whether the server answers prompts/list (then its prompts become skills)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)


async def _answers(method: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await method()
    except MCPError:
        return False
    return True


class McpConnections:
    """Connects every configured server for the instance's lifetime; refuses what decision 7 forbids."""

    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.links: dict[str, Link] = {}
        self.check(config)

    def check(self, config: InstanceConfig) -> None:
        """Refuse a configuration decision 7 forbids, naming the rule."""
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            if server.origin is not McpOrigin.TENANT:
                continue
            if server.transport is not McpTransport.HTTP:
                raise ConfigurationError(
                    f"tenant MCP server {server.server_id!r} uses {server.transport.value}: "
                    "tenant servers must use HTTP (D7.1)"
                )
            host = urlsplit(server.url or "").hostname
            if host not in config.egress_allowlist:
                raise ConfigurationError(
                    f"tenant MCP server {server.server_id!r} is on host {host!r}, "
                    "which is not on the egress allowlist (D7.2)"
                )

    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        """``mcp.Client`` options over the defaults: none, so sampling and roots are never advertised (decision 8)."""
        return {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Self]:
        """Connect every server for the instance's lifetime.

        The SDK's task groups wrap whatever the body raises; a single error is raised as itself.
        """
        try:
            async with AsyncExitStack() as stack:
                group = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(group.cancel_scope.cancel)
                for server in self.config.mcp_servers:
                    await self._connect(stack, group, server)
                yield self
        except BaseExceptionGroup as wrapped:
            leaf = sole_exception(wrapped)
            if leaf is None:
                raise
            raise leaf from None

    async def _connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup, server: McpServerConfig) -> None:
        target: Any
        if server.transport is McpTransport.MEMORY:
            if server.server is None:
                raise ConfigurationError(
                    f"MCP server {server.server_id!r}: transport memory needs an in-process server object"
                )
            target = server.server
        elif server.transport is McpTransport.STDIO:
            assert server.command  # Invariant: McpServerConfig requires it for stdio.
            target = StdioServerParameters(command=server.command[0], args=server.command[1:])
        else:
            target = server.url
        # A server may notify before the link exists (while it is still being probed): such notices
        # wait here and are recorded, once each, as soon as it does.
        link_box: list[Link] = []
        early: list[types.ToolListChangedNotification] = []

        async def on_message(message: IncomingMessage) -> None:
            # Invariant: every tools/list_changed on the wire reaches this handler exactly once, in both eras
            # (2026-07-28's listen events are teed here too), so this is the one place that records a notice.
            if isinstance(message, types.ToolListChangedNotification):
                if link_box:
                    await self.notified(link_box[0])
                else:
                    early.append(message)

        options: dict[str, Any] = {
            "mode": server.protocol,
            "cache": None,
            "message_handler": on_message,
            "input_required_max_rounds": INPUT_REQUIRED_MAX_ROUNDS,
            "read_timeout_seconds": server.call_timeout_s,
        }
        client = Client(target, **(options | self.client_options(server)))
        try:
            await stack.enter_async_context(client)
        except Exception as exc:
            raise ConfigurationError(f"MCP server {server.server_id!r} cannot be reached: {exc}") from None
        link = Link(config=server, client=client, prefix=self.prefix(server, client))
        # Probed rather than read from capabilities: a 2026-07-28 connection may not have discovered them.
        link.resources = await _answers(client.list_resources)
        link.prompts = await _answers(client.list_prompts)
        link_box.append(link)
        self.links[server.server_id] = link
        for _ in early:
            await self.notified(link)
        early.clear()
        if server.protocol != "legacy":
            await group.start(self._listen, link)

    async def _listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # 2026-07-28 has no standalone channel: tools/list_changed arrives on a listen subscription.
        # A server that cannot be listened to only loses notices; listings still record every change.
        # The subscription's events are only drained here: the SDK tees each one to the message handler,
        # which records it (recording here too would count one notice twice).
        started = False
        try:
            async with link.client.listen(tools_list_changed=True) as subscription:
                task_status.started()
                started = True
                async for _ in subscription:
                    pass
        except Exception:  # boundary: a broken subscription must not take the instance down
            if not started:
                task_status.started()

    def prefix(self, server: McpServerConfig, client: Client) -> str:
        """Decision 5: the name prefix comes from the operator's server_id, never from serverInfo."""
        return f"mcp.{server.server_id}."

    async def notified(self, link: Link) -> None:
        """A server said its tool list changed (the catalog layer records it)."""
