"""Round 5, decision 8 (D8.9, D8.10): the synthetic read_resource tool, and the output cap's verdict."""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolproof.reference.hooks import Link, McpAdapter, ReferenceImplementation
from toolproof.spec import ContentPart, ToolFailure, ToolResult, ToolSpec

from ._r5 import adapter_impl

# -- D8.9 ------------------------------------------------------------------------------------------------------


def resources_without_templates() -> ReferenceImplementation:
    """D8.9: only resources/list decides; resource templates are not looked at.

    The mistake: a server offering its resources through a template only gets no read_resource tool. Exposing
    input: TemplateResourcesServer.
    """

    class Adapter(McpAdapter):
        async def lists_resources(self, link: Link) -> bool:
            if not link.resources:
                return False
            cursor: str | None = None
            try:
                while True:
                    page = await link.client.list_resources(cursor=cursor)
                    if page.resources:
                        return True
                    if not (cursor := page.next_cursor):
                        return False
            except MCPError:
                return False

    return adapter_impl("resources_without_templates", Adapter)


def templates_asked_first() -> ReferenceImplementation:
    """D8.9: templates are listed before resources in one try, so a server without templates/list gets no tool.

    The mistake: the order of the two listings is swapped; a server that lists resources but answers
    resources/templates/list with an error (method not found) falls to "no resources". Exposing input: a server
    with resources and no templates handler.
    """

    class Adapter(McpAdapter):
        async def lists_resources(self, link: Link) -> bool:
            if not link.resources:
                return False
            try:
                if (await link.client.list_resource_templates()).resource_templates:
                    return True
                return bool((await link.client.list_resources()).resources)
            except MCPError:
                return False

    return adapter_impl("templates_asked_first", Adapter)


def resources_judged_once() -> ReferenceImplementation:
    """D8.9: whether a server has resources is judged at its first listing and kept in memory.

    The mistake: the answer is cached per server for the instance's lifetime ("resources rarely come and go"), so a
    server that gains (or loses) its resources later keeps (or never gets) the read tool in new sessions. Exposing
    input: a server listing no resources at the first session and one at a later session (or the reverse).
    """

    class Adapter(McpAdapter):
        async def lists_resources(self, link: Link) -> bool:
            cache: dict[str, bool] = self.__dict__.setdefault("resource_cache", {})
            if link.config.server_id not in cache:
                cache[link.config.server_id] = await super().lists_resources(link)
            return cache[link.config.server_id]

    return adapter_impl("resources_judged_once", Adapter)


# -- D8.10 -----------------------------------------------------------------------------------------------------


def cap_verdict_as_detail() -> ReferenceImplementation:
    """D8.10: the cap's refusal carries the adapter's own words as the failure's detail.

    The mistake: "tell the model why": over_cap() returns ToolFailure(kind=ERROR, detail='result exceeds the
    server's output cap'), enveloped as remote EXTERNAL_UNTRUSTED text. Exposing input: any result over the cap.
    """

    class Adapter(McpAdapter):
        def over_cap(self) -> ToolResult:
            return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="result exceeds the output cap"))

    return adapter_impl("cap_verdict_as_detail", Adapter)


def error_result_before_cap() -> ReferenceImplementation:
    """D8.10 (and D8.8): an isError result is turned into a failure before the cap is checked.

    The mistake: the isError branch comes first, so an over-cap isError result completes with its whole text as
    external_detail (tool_error, detail set) rather than with no detail. Exposing input: an isError result over the
    cap (MultibyteOutputServer's `error`).
    """

    class Adapter(McpAdapter):
        def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
            if result.is_error:
                parts = [self._text(block) for block in result.content]
                return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail="\n".join(parts)))
            return super().from_result(link, spec, result)

    return adapter_impl("error_result_before_cap", Adapter)


def resource_cap_remote_rejected() -> ReferenceImplementation:
    """D8.10: a resource read over the cap is refused as remote_rejected.

    The mistake: from_resource() has its own cap check, written as "the server sent too much: it rejected the read",
    so the read completes FAILED remote_rejected (whose fixed message says the remote refused). Exposing input: a
    resource read over the cap; tool calls over the cap are right.
    """

    class Adapter(McpAdapter):
        def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
            plain = super().from_resource(link, result)
            if plain.failure is not None and plain.failure.detail is None:
                return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED"))
            return plain

    return adapter_impl("resource_cap_remote_rejected", Adapter)


__all__ = ["ContentPart"]


def cap_refusal_transient() -> ReferenceImplementation:
    """D8.10: a result over the cap is refused as a transient failure ("a retry may get a smaller answer").

    The mistake: over_cap() returns kind TRANSIENT, so the call is retried and completes with the transient reason
    (retryable), not FAILED tool_error. Exposing input: a deterministic result over the cap.
    """

    class Adapter(McpAdapter):
        def over_cap(self) -> ToolResult:
            return ToolResult(ok=False, failure=ToolFailure(kind="TRANSIENT"))

    return adapter_impl("cap_refusal_transient", Adapter)
