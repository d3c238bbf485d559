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
