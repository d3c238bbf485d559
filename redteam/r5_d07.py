"""Round 5, decision 7 (D7.4-D7.6): stdio environment, a lost server, and reconnecting it."""

from __future__ import annotations

import os
from typing import Any

from mcp import StdioServerParameters
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

from toolproof.reference.hooks import Link, McpAdapter, McpTool, ReferenceImplementation
from toolproof.spec import CatalogChangeKind, McpServerConfig, McpTransport, ReasonCode, ToolSpec

from ._r5 import adapter_impl


def _stdio(server: McpServerConfig, **changes: Any) -> StdioServerParameters:
    assert server.command
    fields: dict[str, Any] = {"env": server.env, "cwd": server.cwd} | changes
    return StdioServerParameters(command=server.command[0], args=server.command[1:], **fields)


# -- D7.4 ------------------------------------------------------------------------------------------------------


def stdio_env_over_worker_env() -> ReferenceImplementation:
    """D7.4: a stdio server's env is laid over the worker's whole environment.

    The mistake: "the server should run like the worker does": env = os.environ | configured env, so a stdio server
    sees every variable of the worker (its credentials included). Exposing input: a worker variable outside the
    SDK's default list (e.g. TOOLPROOF_FAKE_API_KEY set in the worker, not in the configuration) read by the server.
    """

    class Adapter(McpAdapter):
        def _target(self, server: McpServerConfig) -> Any:
            if server.transport is not McpTransport.STDIO:
                return super()._target(server)
            return _stdio(server, env=dict(os.environ) | dict(server.env or {}))

    return adapter_impl("stdio_env_over_worker_env", Adapter)


def stdio_default_env_wins() -> ReferenceImplementation:
    """D7.4: configured env names the SDK's safe default already has (PATH, HOME, ...) are dropped.

    The mistake, a hardening gone wrong: "a configuration must not override PATH or HOME", so those names keep the
    worker's value; env is no longer over the default environment. Exposing input: a stdio server configured with
    HOME (or PATH, USER...) set to its own value.
    """

    class Adapter(McpAdapter):
        def _target(self, server: McpServerConfig) -> Any:
            if server.transport is not McpTransport.STDIO or not server.env:
                return super()._target(server)
            env = {k: v for k, v in server.env.items() if k not in DEFAULT_INHERITED_ENV_VARS}
            return _stdio(server, env=env)

    return adapter_impl("stdio_default_env_wins", Adapter)


def stdio_cwd_only_with_env() -> ReferenceImplementation:
    """D7.4: the configured cwd is honoured only when env is configured too.

    The mistake: env and cwd are applied together ("a server that needs a directory needs its key too"), so a server
    configured with cwd alone starts in the worker's directory. Exposing input: a stdio server with cwd and no env.
    """

    class Adapter(McpAdapter):
        def _target(self, server: McpServerConfig) -> Any:
            if server.transport is not McpTransport.STDIO:
                return super()._target(server)
            return _stdio(server, cwd=server.cwd if server.env else None)

    return adapter_impl("stdio_cwd_only_with_env", Adapter)


# -- D7.5 ------------------------------------------------------------------------------------------------------


def lost_server_catalog_forgotten() -> ReferenceImplementation:
    """D7.5: a server that cannot be listed has its catalog cleared in memory, so a new session pins none of it.

    The mistake: "a dead server has no tools": listed() empties link.catalog when the server is lost, so a new
    session started while it is down advertises none of its tools (its calls are unknown_tool, not
    remote_unavailable) even though the catalog history still has them. Exposing input: lose a server, start a new
    session, call one of its tools.
    """

    class Adapter(McpAdapter):
        async def listed(self, link: Link) -> bool:
            if await super().listed(link):
                return True
            link.catalog = {}
            return False

    return adapter_impl("lost_server_catalog_forgotten", Adapter)


def server_error_taken_for_loss() -> ReferenceImplementation:
    """D7.5: any failed request to a server makes it lost, an error the server answered included.

    The mistake: failed() calls lose() for every exception, so a server answering a JSON-RPC error to tools/list or
    prompts/list (alive and connected) is marked lost and its tools answer remote_unavailable. Exposing input: a
    server that answers an error to prompts/list (or tools/list) at a session start, then a call to its tool.
    """

    class Adapter(McpAdapter):
        async def failed(self, link: Link, exc: Exception) -> None:
            await self.lose(link)

    return adapter_impl("server_error_taken_for_loss", Adapter)


def first_listing_failure_propagates() -> ReferenceImplementation:
    """D7.5: the listing that first finds a server lost lets its error escape the session start.

    The mistake: listed() marks the link lost and re-raises "so the caller knows", so the step that starts a session
    while a server has just died fails as a whole (builtin calls in it included); later sessions, finding the link
    already lost, run. Exposing input: kill a server between sessions, then submit a step with a builtin call in a
    new run.
    """

    class Adapter(McpAdapter):
        async def listed(self, link: Link) -> bool:
            if not await self.reconnect(link):
                return False
            try:
                await self.refresh(link)
            except Exception as exc:
                await self.failed(link, exc)
                raise
            return True

    return adapter_impl("first_listing_failure_propagates", Adapter)


# -- D7.6 ------------------------------------------------------------------------------------------------------


def backoff_uncapped() -> ReferenceImplementation:
    """D7.6: reconnect backoff doubles without a cap.

    The mistake: the cap is forgotten; attempts 1, 2, 4, ... 64, 128 s apart: after the seventh failed attempt the
    next is more than 60 s away. Exposing input: a server kept down for eight or more attempts, the clock advanced
    61 s between needs.
    """

    class Adapter(McpAdapter):
        def backoff(self, attempts: int) -> float:
            return 1.0 * 2.0 ** max(attempts - 1, 0)

    return adapter_impl("backoff_uncapped", Adapter)


def backoff_jitter_over_cap() -> ReferenceImplementation:
    """D7.6: 10% jitter is added after the cap, so capped attempts are 66 s apart.

    The mistake: "spread the reconnects of many workers": delay = min(doubling, 60) * 1.1 (deterministic here), so
    at the cap the next attempt is due 66 s after a failure. Exposing input: a server down for seven or more
    attempts, the clock advanced by more than 60 s and less than 66 s.
    """

    class Adapter(McpAdapter):
        def backoff(self, attempts: int) -> float:
            return super().backoff(attempts) * 1.1

    return adapter_impl("backoff_jitter_over_cap", Adapter)


def reconnect_failures_collapsed() -> ReferenceImplementation:
    """D7.6: consecutive failed reconnect attempts are recorded once ("keep the history short").

    The mistake: the adapter remembers in memory the last connection kind it recorded per server and skips a
    reconnect_failed that follows another. Exposing input: two or more failed attempts in a row.
    """

    class Adapter(McpAdapter):
        last: dict[str, CatalogChangeKind]

        async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
            last = self.__dict__.setdefault("last", {})
            repeated = kind is CatalogChangeKind.RECONNECT_FAILED and last.get(link.config.server_id) is kind
            last[link.config.server_id] = kind
            if not repeated:
                await super().connection_changed(link, kind, detail)

    return adapter_impl("reconnect_failures_collapsed", Adapter)


def reconnect_gives_up() -> ReferenceImplementation:
    """D7.6: after five failed reconnect attempts the server is given up on (a circuit breaker).

    The mistake: reconnect() stops trying once link.attempts reaches 5, so a server back after a longer outage is
    never used again, by a new session or a call. Exposing input: six failed attempts, then the server back and a
    new session.
    """

    class Adapter(McpAdapter):
        async def reconnect(self, link: Link) -> bool:
            if link.lost and link.attempts >= 5:
                return False
            return await super().reconnect(link)

    return adapter_impl("reconnect_gives_up", Adapter)


def calls_never_reconnect() -> ReferenceImplementation:
    """D7.6: only a new session reconnects a lost server; a call to one of its tools answers remote_unavailable.

    The mistake: resolve() short-cuts a lost link ("the session pinned it while it was down"), so the first need being
    a call in a running session makes no attempt and records none. Exposing input: lose a server, advance past the
    backoff, call its tool in the session that was running.
    """

    class Adapter(McpAdapter):
        async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
            await self.advertise(run_id)
            found = self.pinned(run_id, name)
            if found is not None and found[1].link.lost:
                return ReasonCode.REMOTE_UNAVAILABLE
            return await super().resolve(run_id, name)

    return adapter_impl("calls_never_reconnect", Adapter)


# -- further paths: every server, the restart, HTTP, the due time ---------------------------------------------


def lose_marks_every_server() -> ReferenceImplementation:
    """D7.5: one lost connection marks every configured server lost ("the MCP layer is down").

    The mistake: lose() sets lost on every link, so the tools of a healthy server answer remote_unavailable too
    until their (needless) reconnects. Exposing input: two servers, one lost, a call to the other's tool.
    """

    class Adapter(McpAdapter):
        async def lose(self, link: Link) -> None:
            for other in list(self.links.values()):
                await super().lose(other)

    return adapter_impl("lose_marks_every_server", Adapter)


def restart_drops_env() -> ReferenceImplementation:
    """D7.4: a restarted stdio server (a reconnect) is started without its configured env and cwd.

    The mistake: the restart path builds the process's parameters "fresh", from the command alone, so the first
    start has the operator's env and cwd and every restart has the SDK's defaults and the worker's directory.
    Exposing input: EnvironmentServer (or any server reading its key) made to exit, reconnected, and asked again.
    """

    class Adapter(McpAdapter):
        def _target(self, server: McpServerConfig) -> Any:
            target = super()._target(server)
            self.__dict__.setdefault("targets", {})[server.server_id] = target
            return target

        async def reconnect(self, link: Link) -> bool:
            target = self.__dict__.get("targets", {}).get(link.config.server_id)
            if link.lost and isinstance(target, StdioServerParameters):
                target.env, target.cwd = None, None
            return await super().reconnect(link)

    return adapter_impl("restart_drops_env", Adapter)


def http_never_reconnected() -> ReferenceImplementation:
    """D7.6: a lost HTTP server is never reconnected ("HTTP is stateless: the next request reconnects by itself").

    The mistake: reconnect() tries only stdio servers (restarting the process); a lost HTTP link stays lost, no attempt
    is recorded, and a new session never uses the server again. Exposing input: an HTTP server lost and back
    on the same URL, then a new session.
    """

    class Adapter(McpAdapter):
        async def reconnect(self, link: Link) -> bool:
            if link.config.transport is McpTransport.HTTP:
                return not link.lost
            return await super().reconnect(link)

    return adapter_impl("http_never_reconnected", Adapter)


def reconnect_due_strictly_after() -> ReferenceImplementation:
    """D7.6: an attempt is made only strictly after it is due (an off-by-one at the backoff boundary).

    The mistake: ``now <= retry_at`` waits, so at the cap a need exactly 60 s after a failed attempt makes no attempt
    (the next need after that does): attempts more than 60 s apart. Exposing input: a server kept down until the
    backoff reaches the cap, then a need exactly 60 s after the last failure.
    """

    class Adapter(McpAdapter):
        async def reconnect(self, link: Link) -> bool:
            if link.lost and self.clock.now() <= link.retry_at:
                return False
            return await super().reconnect(link)

    return adapter_impl("reconnect_due_strictly_after", Adapter)
