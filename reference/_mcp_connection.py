"""The MCP adapter's first layer: connecting the configured servers (decision 7) and holding one ``Link`` each
(``_mcp_link``: what a link holds, and how an attempt to open one fails).

The adapter is four layers, one module each, each a subclass of the one before: connection
(here), catalog and drift (``_mcp_catalog``), classification and results (``_mcp_classify``),
session pins (``_mcp_pins``); ``McpAdapter`` (``_mcp``) is the last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Self, TextIO

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolproof.spec import (
    UNSATISFIABLE_SCOPE,
    CatalogChangeKind,
    Clock,
    ConfigurationError,
    InstanceConfig,
    McpServerConfig,
    McpTransport,
    admission_refusal,
    sole_exception,
)

from ._mcp_link import (
    HANDSHAKE_ONLY_ANSWERS,
    INPUT_REQUIRED_MAX_ROUNDS,
    RECONNECT_BACKOFF_CAP_S,
    RECONNECT_BACKOFF_S,
    STDERR_MARK,
    EraMismatch,
    Keeper,
    Link,
    Opening,
    answers,
    connection_lost,
    one_line,
    server_answered,
    stderr_log,
    unjudged,
)
from ._store import Store


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
        if UNSATISFIABLE_SCOPE in config.credentials:
            raise ConfigurationError(
                f"credentials grant the scope {UNSATISFIABLE_SCOPE!r}, which an unclassified MCP server's tools "
                "require so that no credential satisfies it; remove it, and classify the server instead (D6.2)"
            )
        seen: set[str] = set()
        for server in config.mcp_servers:
            if server.server_id in seen:
                raise ConfigurationError(f"MCP server_id {server.server_id!r} is configured twice (D5.5)")
            seen.add(server.server_id)
            refusal = admission_refusal(server, config.egress_allowlist)
            if refusal is not None:
                raise ConfigurationError(refusal)

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

    def _target(self, server: McpServerConfig, stack: AsyncExitStack, opening: Opening) -> Any:
        # Built per attempt: a stdio transport starts one process, with stderr appended to the server's log.
        if server.transport is McpTransport.MEMORY:
            if server.server is None:
                raise ConfigurationError(
                    f"MCP server {server.server_id!r}: transport memory needs an in-process server object"
                )
            return server.server
        if server.transport is McpTransport.STDIO:
            assert server.command  # Invariant: McpServerConfig requires it for stdio.
            parameters = self.stdio_parameters(server)
            opening.log = stderr_log(self.config, server)
            opening.log.parent.mkdir(parents=True, exist_ok=True)
            errlog: TextIO = stack.enter_context(opening.log.open("a", encoding="utf-8"))
            errlog.write(f"{STDERR_MARK}{server.command[0]} (server {server.server_id})\n")
            errlog.flush()
            return stdio_client(parameters, errlog=errlog)
        return server.url

    def stdio_parameters(self, server: McpServerConfig) -> StdioServerParameters:
        """D7.4: how one start of a stdio server runs it, the first and every restart alike: the configured
        command, env (over the SDK's safe defaults, which the SDK adds) and cwd."""
        assert server.command  # Invariant: McpServerConfig requires it for stdio.
        return StdioServerParameters(command=server.command[0], args=server.command[1:], env=server.env, cwd=server.cwd)

    def open_error(self, opening: Opening, exc: BaseException) -> ConfigurationError:
        """D7.7: the one typed error an attempt to open a server ends with (a reconnect attempt records its text)."""
        return opening.error(exc)

    async def verify(self, server: McpServerConfig, client: Client, opening: Opening) -> None:
        """D7.8: make sure a 2026-07-28 server speaks that era before open returns (a handshake already did).

        The SDK adopts a 2026-07-28 connection without a request, so a ``server/discover`` probe, bounded by the
        server's call timeout, must list the era. No fallback: a server that speaks only the other era is refused,
        and an error a handshake-era server answers the probe with (``HANDSHAKE_ONLY_ANSWERS``) says so.
        """
        if server.protocol == "legacy":
            return
        era = server.protocol
        answered = False
        try:
            with anyio.move_on_after(server.call_timeout_s):
                raw = await client.session.send_discover(era)
                answered = True
            if not answered:
                raise TimeoutError(f"server/discover had no answer within {server.call_timeout_s:g} s")
        except MCPError as exc:
            error = f"{exc.error.code} {one_line(exc.error.message)}"
            if exc.error.code in HANDSHAKE_ONLY_ANSWERS and server_answered(exc):
                opening.answer = (
                    f"answered server/discover with {error}: it speaks only the initialize handshake; "
                    'configure protocol = "legacy" (the adapter does not fall back to another era)'
                )
                raise EraMismatch(f"server/discover did not confirm {era}") from None
            raise
        try:
            result = types.DiscoverResult.model_validate(raw)
        except ValidationError as exc:
            opening.answer = "answered server/discover with something that is no DiscoverResult"
            raise EraMismatch(f"server/discover did not confirm {era}") from exc
        if era not in result.supported_versions:
            opening.answer = (
                f"answered server/discover supporting {', '.join(result.supported_versions) or 'no version'}, "
                f"not {era}; configure an era it speaks (the adapter does not fall back to another era)"
            )
            raise EraMismatch(f"server/discover did not confirm {era}")

    async def _connect(self, stack: AsyncExitStack, group: anyio.abc.TaskGroup, server: McpServerConfig) -> None:
        await group.start(self._keep, server)

    async def _keep(self, server: McpServerConfig, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # One task owns every client of one server for the instance's lifetime: an SDK client must be
        # closed by the task that opened it. A lost client is closed here and a new one opened (stdio:
        # a new process) each time a session asks for a reconnect attempt (``reconnect``).
        # A server may notify before the link exists (while it is still being probed): such notices
        # wait here and are recorded, once each, as soon as it does.
        keeper = Keeper()
        link_box: list[Link] = []
        early: list[types.ToolListChangedNotification] = []
        opening = Opening(server)

        async def on_message(message: IncomingMessage) -> None:
            await opening.seen(message)
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
        while True:
            answered = False  # Whether this attempt's outcome was told to the session that asked for it.
            opening = Opening(server)
            try:
                async with AsyncExitStack() as stack:
                    client = Client(self._target(server, stack, opening), **(options | self.client_options(server)))
                    await stack.enter_async_context(client)
                    self.opened(client)
                    await self.verify(server, client, opening)
                    # Probed rather than read from capabilities: a 2026-07-28 connection may not have discovered them.
                    resources = await answers(client.list_resources)
                    prompts = await answers(client.list_prompts)
                    if link_box:
                        link = link_box[0]
                        link.client, link.resources, link.prompts = client, resources, prompts
                    else:
                        link = Link(config=server, client=client, prefix=self.prefix(server, client), keeper=keeper)
                        link.resources, link.prompts = resources, prompts
                        link_box.append(link)
                        self.links[server.server_id] = link
                        for _ in early:
                            await self.notified(link)
                        early.clear()
                    if server.protocol != "legacy":
                        listening = await stack.enter_async_context(anyio.create_task_group())
                        stack.callback(listening.cancel_scope.cancel)
                        await listening.start(self.listen, link)
                    answered = True
                    if keeper.attempted is None:
                        task_status.started()
                    else:
                        keeper.failure = None
                        keeper.attempted.set()
                    await keeper.closing.wait()
            except Exception as exc:  # boundary: whatever a server does, it is that server's failure
                if isinstance(exc, ConfigurationError):
                    raise  # The configuration itself is refused (a memory server without its object).
                failure = self.open_error(opening, exc)
                if not link_box:
                    raise failure from None
                if not answered and keeper.attempted is not None:
                    keeper.failure = str(failure)
                    keeper.attempted.set()
                # Otherwise closing a lost client failed, as closing a dead connection may.
            keeper.closing = anyio.Event()
            await keeper.wanted.wait()
            keeper.wanted = anyio.Event()

    async def listen(self, link: Link, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """D7.5, a 2026-07-28 server: hold its listen subscription open for the connection's life (started once it is
        asked for); a hook, so a witness can take the boundary around it away."""
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

    def opened(self, client: Client) -> None:
        """A client just connected: the pipeline, not the SDK, judges a result's structure (D8.11, D8.12).

        The SDK checks structuredContent against the tool's latest listing, not the session's pin, and raises
        a RuntimeError in its own words, quoting the remote's structure; step 11 judges it against the pin.
        """
        client.session.validate_tool_result = unjudged  # type: ignore[method-assign]

    def prefix(self, server: McpServerConfig, client: Client) -> str:
        """Decision 5: the name prefix comes from the operator's server_id, never from serverInfo."""
        return f"mcp.{server.server_id}."

    async def notified(self, link: Link) -> None:
        """A server said its tool list changed (the catalog layer records it)."""

    async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
        """The link was lost, or an attempt to reconnect it succeeded or failed (the catalog layer records it)."""

    def lost(self, exc: BaseException) -> bool:
        """D7.5: whether a request's failure says the server's connection is gone (the transport closed or dropped),
        never an error the server answered, whatever its code."""
        return connection_lost(exc)

    async def lose(self, link: Link) -> None:
        """The link's connection is lost: its tools answer remote_unavailable until a reconnect succeeds."""
        if link.lost:
            return
        link.lost = True
        link.listed_at = None  # A lost link's listing is never reused: its catalog is listed afresh on reconnect.
        link.generation += 1
        link.attempts = 0
        link.retry_at = self.clock.now() + RECONNECT_BACKOFF_S
        if link.keeper is not None:
            link.keeper.closing.set()
        await self.connection_changed(link, CatalogChangeKind.DISCONNECTED)

    def backoff(self, attempts: int) -> float:
        """Instance-clock seconds between a failed reconnect attempt and the next: doubling, capped."""
        delay: float = RECONNECT_BACKOFF_S * 2.0 ** max(attempts - 1, 0)
        return min(delay, RECONNECT_BACKOFF_CAP_S)

    async def reconnect(self, link: Link) -> bool:
        """Whether the link is up; a lost link is reconnected first (stdio: restarted) if its backoff has passed.

        Each attempt is recorded in the catalog history, succeeded or failed.
        """
        keeper = link.keeper
        if not link.lost or keeper is None:
            return not link.lost
        async with keeper.lock:
            if not link.lost or self.clock.now() < link.retry_at:
                return not link.lost
            attempted = keeper.attempted = anyio.Event()
            keeper.wanted.set()
            await attempted.wait()  # Bounded: the client's read timeout bounds initialize.
            link.attempts += 1
            if keeper.failure is None:
                link.lost = False
                link.known = False  # Listed afresh: what changed while it was away is recorded then.
                await self.connection_changed(link, CatalogChangeKind.RECONNECTED)
                return True
            link.retry_at = self.clock.now() + self.backoff(link.attempts)
            await self.connection_changed(link, CatalogChangeKind.RECONNECT_FAILED, keeper.failure)
            return False
