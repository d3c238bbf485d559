"""Decision 8: resources, prompts, sampling, roots."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import McpServerConfig, Skill, TrustLabel

from ._common import impl


class _PrefetchAdapter(McpAdapter):
    resource_cache: dict[str, dict[str, Any]] = {}  # noqa: RUF012  (one process, one adapter: fine for a red team)

    async def prefetch(self, link: Link) -> None:
        if not link.resources:
            return
        listed = await link.client.list_resources()
        cache = self.resource_cache.setdefault(link.config.server_id, {})
        for resource in listed.resources:
            # The mistake: warm a cache of resource contents at session start "so reads are fast".
            cache[str(resource.uri)] = await link.client.read_resource(str(resource.uri))


class _Prefetch(Pipeline):
    mcp_class = _PrefetchAdapter


def resources_prefetched_at_session_start() -> ReferenceImplementation:
    """D8 "Resources become one synthetic per-server read tool ... not an automatic context source": every resource
    is read from the server when a session starts (a warm cache), outside any call and the pipeline."""
    return impl("d08-resources-prefetched", _Prefetch)


async def _decline_sampling(context: Any, params: Any) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="sampling declined")


class _SamplingAdapter(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        # The mistake: a callback is installed "to decline politely", which advertises the capability.
        return {"sampling_callback": _decline_sampling}


class _Sampling(Pipeline):
    mcp_class = _SamplingAdapter


def sampling_advertised_then_declined() -> ReferenceImplementation:
    """D8 "Sampling and roots are declined at capability negotiation": a sampling callback that always declines is
    installed, so the client advertises the sampling capability (requests are refused, negotiation is not)."""
    return impl("d08-sampling-advertised", _Sampling)


async def _no_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


class _RootsAdapter(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"list_roots_callback": _no_roots}  # The mistake: "answer with no roots" advertises roots.


class _Roots(Pipeline):
    mcp_class = _RootsAdapter


def roots_advertised_empty() -> ReferenceImplementation:
    """D8 "roots are declined at capability negotiation": a roots callback answering an empty list is installed, so
    roots is advertised and a roots request is answered (empty) instead of refused."""
    return impl("d08-roots-advertised-empty", _Roots)


class _CacheablePrompts(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        # The mistake: prompts are static text, so they are allowed into the cacheable prefix.
        return [s.model_copy(update={"cacheable": True}) for s in await super().skills(link)]


class _PromptsCacheable(Pipeline):
    mcp_class = _CacheablePrompts


def prompts_cacheable() -> ReferenceImplementation:
    """D8 "Prompts become read-only EXTERNAL_UNTRUSTED skills that never enter the cacheable prefix": the skills are
    marked cacheable."""
    return impl("d08-prompts-cacheable", _PromptsCacheable)


class _PromptsTrusted(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        # The mistake: an operator-configured server's prompts are "operator content".
        if link.config.origin.value == "operator":
            return [s.model_copy(update={"trust": TrustLabel.OPERATOR}) for s in await super().skills(link)]
        return await super().skills(link)


class _PromptsOperator(Pipeline):
    mcp_class = _PromptsTrusted


def operator_server_prompts_trusted() -> ReferenceImplementation:
    """D8 prompts are EXTERNAL_UNTRUSTED skills: prompts of an operator-configured server are labelled OPERATOR."""
    return impl("d08-operator-prompts-trusted", _PromptsOperator)


class _UncappedAdapter(McpAdapter):
    def output_cap(self, link: Link) -> int:
        return 1 << 62  # The mistake: "excerpting handles large output", so no per-server cap.


class _NoCap(Pipeline):
    mcp_class = _UncappedAdapter


def no_output_cap() -> ReferenceImplementation:
    """D8 (our D8.7) bounded MCP calls: the per-server output cap is not applied; an oversized result is
    excerpted and delivered instead of failing."""
    return impl("d08-no-output-cap", _NoCap)
