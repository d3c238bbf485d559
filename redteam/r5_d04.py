"""Round 5, decision 4 (D4.2): an MCP call whose connection drops after the watermark was set."""

from __future__ import annotations

from toolproof.reference.hooks import McpTool, ReferenceImplementation, connection_lost
from toolproof.spec import JsonObject, McpTransport, SideEffect, ToolExecutionContext, ToolFailure, ToolResult

from ._r5 import tool_impl


def _execute(*, unavailable_when: str) -> type[McpTool]:
    class Tool(McpTool):
        async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
            marked = self._spec.side_effect is not SideEffect.READ_ONLY
            if marked:
                await context.mark_effect_sent()
            try:
                if self._remote_name is None:
                    return self._adapter.from_resource(
                        self._link, await self._link.client.read_resource(str(arguments["uri"]))
                    )
                result = await self._link.client.call_tool(self._remote_name, dict(arguments))
            except Exception as exc:
                if connection_lost(exc):
                    await self._adapter.lose(self._link)
                    config = self._link.config
                    safe = {
                        "http": config.transport is McpTransport.HTTP,
                        "new_era": config.protocol != "legacy",
                        "always": True,
                        "never": False,
                    }[unavailable_when]
                    if (marked or unavailable_when == "never") and not safe:
                        raise
                    return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_UNAVAILABLE", detail=str(exc)))
                return await super().execute(arguments, context)  # not reached for a lost connection
            return self._adapter.from_result(self._link, self._spec, result)

    return Tool


def drop_unavailable_over_http() -> ReferenceImplementation:
    """D4.2: a marked NON_IDEMPOTENT MCP call whose HTTP connection drops answers remote_unavailable.

    The mistake: "an HTTP request that failed never reached the server", so over HTTP a lost connection is taken
    for a retryable remote_unavailable even after the watermark; over stdio (the process exited) it still raises
    and resolves UNCERTAIN effect_unknown. Exposing input: ExitsMidCallServer over HTTP, classified NON_IDEMPOTENT.
    """
    return tool_impl("drop_unavailable_over_http", _execute(unavailable_when="http"))


def drop_unavailable_new_era() -> ReferenceImplementation:
    """D4.2: on the 2026-07-28 protocol a marked call whose connection drops answers remote_unavailable.

    The mistake: "2026-07-28 requests are stateless, so a dropped one is simply resent", so a lost connection
    after the watermark is remote_unavailable there; the handshake era still resolves UNCERTAIN effect_unknown.
    Exposing input: ExitsMidCallServer (stdio or HTTP) on protocol 2026-07-28, classified NON_IDEMPOTENT.
    """
    return tool_impl("drop_unavailable_new_era", _execute(unavailable_when="new_era"))


def drop_always_raises() -> ReferenceImplementation:
    """D7.5 (and D4.20): a lost connection always raises, marked or not, so the watermark alone decides.

    The mistake: "the watermark decides, exactly as in recovery" is applied to every MCP call: a READ_ONLY (unmarked)
    call whose connection drops raises and completes FAILED tool_crashed, not UNAVAILABLE remote_unavailable.
    Exposing input: a READ_ONLY-classified server whose process exits mid-call (ExitsMidCallServer `write`); a
    drop between calls is found by the listing at step 1 and is right.
    """
    return tool_impl("drop_always_raises", _execute(unavailable_when="never"))
