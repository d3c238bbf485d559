"""Witnesses of the fifth red team's gaps in decision 7: a stdio server's env under the SDK's defaults or lost on a
restart, a server error or another server's loss taken for a loss, and reconnect schedules that stretch, stop or
go unrecorded over a long outage."""

from __future__ import annotations

from typing import Any

from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline
from toolproof.spec import CatalogChangeKind, InstanceConfig, McpServerConfig, McpTransport, ReasonCode, ToolSpec

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


# -- D7.4 ------------------------------------------------------------------------------------------------------


class _DefaultsOverEnv(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        # The defect: the SDK's default environment is laid over the configured env, not under it, so a configured
        # HOME or PATH loses to the worker's.
        servers = [
            server.model_copy(update={"env": server.env | get_default_environment()}) if server.env else server
            for server in config.mcp_servers
        ]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness(
    "stdio_defaults_over_env",
    ("D7.4",),
    "lays the SDK's default environment over a stdio server's configured env, so a configured HOME or PATH loses",
)(_mcp(_DefaultsOverEnv))


class _RestartForgetsEnv(McpAdapter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: set[str] = set()

    def stdio_parameters(self, server: McpServerConfig) -> StdioServerParameters:
        parameters = super().stdio_parameters(server)
        if server.server_id in self.started:
            # The defect: "a dead process's settings die with it": the restart loses the configured env and cwd,
            # so it gets the SDK's defaults and the worker's directory.
            parameters.env, parameters.cwd = None, None
        self.started.add(server.server_id)
        return parameters


witness(
    "restart_forgets_env",
    ("D7.4",),
    "restarts a lost stdio server without its configured env and cwd (the first start has them)",
)(_mcp(_RestartForgetsEnv))


# -- D7.5 ------------------------------------------------------------------------------------------------------


class _ErrorAnswerLosesServer(McpAdapter):
    async def failed(self, link: Link, exc: Exception) -> None:
        # The defect: any request that did not succeed means the server is gone, a JSON-RPC error it answered to
        # a listing included.
        await self.lose(link)


witness(
    "listing_error_loses_server",
    ("D7.5",),
    "takes a JSON-RPC error a live server answers to a listing (tools, prompts, resources) for a lost connection",
)(_mcp(_ErrorAnswerLosesServer))


class _LossTakesEveryServer(McpAdapter):
    async def lose(self, link: Link) -> None:
        await super().lose(link)
        for other in self.links.values():
            if other is not link and other.config.transport is not McpTransport.MEMORY:
                # The defect: "one process died, so the worker's MCP children are suspect": every other
                # subprocess or remote server is marked lost too, until its own reconnect is due.
                await super().lose(other)


witness(
    "loss_takes_every_server",
    ("D7.5",),
    "marks every other stdio or HTTP server lost with the one whose connection dropped",
)(_mcp(_LossTakesEveryServer))


class _LossTakesEveryInProcessServer(McpAdapter):
    async def lose(self, link: Link) -> None:
        await super().lose(link)
        for other in self.links.values():
            if other is not link and other.config.transport is McpTransport.MEMORY:
                # The defect, the other side of the one above: in-process servers are marked lost with it.
                await super().lose(other)


witness(
    "loss_takes_in_process_servers",
    ("D7.5",),
    "marks every in-process server lost with the stdio or HTTP one whose connection dropped",
)(_mcp(_LossTakesEveryInProcessServer))


# -- D7.6 ------------------------------------------------------------------------------------------------------


class _BackoffWithoutCap(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: the doubling is never capped, so after enough failures attempts are minutes apart.
        return 1.0 * 2.0**attempts


witness(
    "backoff_without_cap",
    ("D7.6",),
    "doubles the reconnect backoff without a cap, so after a long outage attempts are more than 60 s apart",
)(_mcp(_BackoffWithoutCap))


class _BackoffCapPlusMargin(McpAdapter):
    def backoff(self, attempts: int) -> float:
        # The defect: a second of margin on top of the cap ("so a clock that is a little fast never retries early").
        return min(super().backoff(attempts) + 1.0, 61.0)


witness(
    "backoff_cap_plus_margin",
    ("D7.6",),
    "caps the reconnect backoff at 61 s, so a need exactly 60 s after a failed attempt makes none",
)(_mcp(_BackoffCapPlusMargin))


class _DueOnlyAfter(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        if link.lost and self.clock.now() == link.retry_at:
            # The defect: the due time itself still waits (an exclusive bound).
            return False
        return await super().reconnect(link)


witness(
    "reconnect_due_exclusive",
    ("D7.6",),
    "makes no reconnect attempt at the instant it is due, only after it, so a need exactly 60 s later makes none",
)(_mcp(_DueOnlyAfter))


class _FailuresRecordedOnce(McpAdapter):
    async def connection_changed(self, link: Link, kind: CatalogChangeKind, detail: str = "") -> None:
        if kind is CatalogChangeKind.RECONNECT_FAILED and link.attempts > 1:
            # The defect: only the first failed attempt of an outage is recorded ("the rest say the same").
            return
        await super().connection_changed(link, kind, detail)


witness(
    "failed_attempts_recorded_once",
    ("D7.6",),
    "records only the first failed reconnect attempt of an outage in the catalog history",
)(_mcp(_FailuresRecordedOnce))


class _BreakerOpens(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        if link.lost and link.attempts >= 8:
            # The defect: a circuit breaker: after eight failed attempts the server is given up on for good.
            return False
        return await super().reconnect(link)


witness(
    "reconnect_breaker_opens",
    ("D7.6",),
    "stops reconnecting a server after eight failed attempts, so one back after a long outage is never used again",
)(_mcp(_BreakerOpens))


class _OnlySessionsReconnect(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        pinned_before = bool(self.store.pins(run_id))
        found = self.pinned(run_id, name) if pinned_before else None
        if found is not None and found[1].link.lost:
            # The defect: a call in a running session never reconnects its server; only a new session's
            # listing does.
            return ReasonCode.REMOTE_UNAVAILABLE
        return await super().resolve(run_id, name)


witness(
    "running_calls_never_reconnect",
    ("D7.6",),
    "reconnects a lost server only for a new session: a call in a running session answers remote_unavailable",
)(_mcp(_OnlySessionsReconnect))
