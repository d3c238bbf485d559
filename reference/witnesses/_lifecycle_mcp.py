"""Witnesses of the MCP connection's lifecycle (issue 17): each plants one old defect of the adapter."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline
from toolproof.spec import JsonObject, ToolExecutionContext, ToolFailure, ToolResult, ToolSpec

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
    ("D7.5",),
    "lets a lost server's listing error escape, so after it dies every new run's submit raises",
)(_mcp(_DeadServerStopsEveryRun))


class _NeverReconnects(McpAdapter):
    async def reconnect(self, link: Link) -> bool:
        # The defect: a lost server stays lost for the instance's lifetime; nothing is attempted or recorded.
        return not link.lost


witness(
    "never_reconnects",
    ("D7.6",),
    "never restarts or reconnects a lost server: its tools answer remote_unavailable until the instance closes",
)(_mcp(_NeverReconnects))


class _UnavailableAfterMark(McpTool):
    def __init__(self, adapter: McpAdapter, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        try:
            return await self.inner.execute(arguments, context)
        except Exception as exc:
            # The defect: a lost connection is "the server could not be reached", even after the call was marked
            # and sent, so a NON_IDEMPOTENT write that may have happened is answered retryable remote_unavailable.
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))


class _DropAfterMarkUnavailable(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _UnavailableAfterMark(self, tool)


witness(
    "drop_after_mark_unavailable",
    ("D4.2",),
    "answers a marked MCP call whose connection dropped remote_unavailable instead of leaving it to the watermark",
)(_mcp(_DropAfterMarkUnavailable))
