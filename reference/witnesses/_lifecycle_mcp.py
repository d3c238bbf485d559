"""Witnesses of the MCP connection's lifecycle (issue 17): each plants one old defect of the adapter."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, Pipeline

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _LosesEarlyNotice(McpAdapter):
    async def notified(self, link: Link) -> None:
        if not link.known:
            # The defect: a notice that comes before the adapter has listed the server's catalog (while it is
            # still setting the connection up) has nothing to be recorded against, so it is dropped.
            return
        await super().notified(link)


witness(
    "early_notice_lost",
    ("D9.2",),
    "drops a tools/list_changed that arrives before the adapter first listed the server's catalog",
)(_mcp(_LosesEarlyNotice))


class _ListenNoticeTwice(McpAdapter):
    async def notified(self, link: Link) -> None:
        await super().notified(link)
        if link.config.protocol != "legacy":
            # The defect: a 2026-07-28 notice is recorded from the listen stream and again from the message
            # handler the SDK tees it to.
            await super().notified(link)


witness(
    "listen_notice_twice",
    ("D9.2",),
    "records each tools/list_changed of a 2026-07-28 connection twice (from the listen stream and its tee)",
)(_mcp(_ListenNoticeTwice))


class _DeadServerStopsEveryRun(McpAdapter):
    async def listed(self, link: Link) -> bool:
        # The defect: the listing a new session (or a call) makes is not contained, so a dead server's
        # "Connection closed" escapes from every submit, builtin calls included.
        await self.refresh(link)
        return True


witness(
    "dead_server_stops_every_run",
    ("D7.4",),
    "lets a lost server's listing error escape, so after it dies every new run's submit raises",
)(_mcp(_DeadServerStopsEveryRun))


class _NeverReconnects(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        # The defect: a lost server stays lost for the instance's lifetime; nothing is attempted or recorded.
        return not link.lost


witness(
    "never_reconnects",
    ("D7.5",),
    "never restarts or reconnects a lost server: its tools answer remote_unavailable until the instance closes",
)(_mcp(_NeverReconnects))
