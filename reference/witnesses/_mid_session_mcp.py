"""Witnesses of decision 9 mid-session (D9.2, D9.4): a flood during a long call, a silent change between two calls."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline, Store
from toolproof.spec import Clock, InstanceConfig, JsonObject, ReasonCode, ToolExecutionContext, ToolResult, ToolSpec

from ._registry import witness


class _Counted(McpTool):
    def __init__(self, adapter: _BusyIgnoresNotices, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner
        self.busy = adapter.busy

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        server = self.link.config.server_id
        self.busy[server] = self.busy.get(server, 0) + 1
        try:
            return await self.inner.execute(arguments, context)
        finally:
            self.busy[server] -= 1


class _BusyIgnoresNotices(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.busy: dict[str, int] = {}
        """Server id -> its calls in flight."""

    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _Counted(self, tool)

    async def notified(self, link: Link) -> None:
        if self.busy.get(link.config.server_id, 0):
            # The defect: a notice that arrives while a call to its server is in flight is taken for that call's
            # own chatter and dropped.
            return
        await super().notified(link)


witness(
    "notices_dropped_during_call",
    ("D9.2",),
    "drops the tools/list_changed a server sends while one of its calls is in flight",
)(type("_BusyIgnoresNoticesPipeline", (Pipeline,), {"mcp_class": _BusyIgnoresNotices}))


class _SchemaOnlyAtCall(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        if found is not ReasonCode.TOOL_DEFINITION_CHANGED:
            return found
        # The defect: at call time only the input schema is compared with the pin, so a tool whose description or
        # annotations changed (a poisoned description) is still called under the definition the session pinned.
        pinned = self.pinned(run_id, name)
        if pinned is None:
            return found
        spec, tool = pinned
        current = tool.link.catalog[name].definition
        return pinned if current.get("inputSchema") == spec.input_schema else found


witness(
    "drift_judged_by_input_schema",
    ("D9.4",),
    "judges a pinned tool changed at call time by its input schema alone, so a silently changed description is called",
)(type("_SchemaOnlyAtCallPipeline", (Pipeline,), {"mcp_class": _SchemaOnlyAtCall}))
