"""Witnesses of decision 8: Resources, prompts, sampling and roots map deliberately.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    Link,
    McpAdapter,
    Pipeline,
    PipelineHost,
    RemoteTool,
    Store,
    wire,
)
from toolproof.spec import (
    READ_RESOURCE,
    Clock,
    ContentPart,
    Disposition,
    InstanceConfig,
    McpServerConfig,
    ProposedCall,
    ReasonCode,
    Skill,
    Step,
    StepRequest,
    Tool,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
)

from ._registry import adapter_pipeline, outside_the_pipeline, reads_a_resource, witness


class _ToolPerResource(McpAdapter):
    async def refresh(self, link: Link) -> None:
        await super().refresh(link)
        if not link.resources:
            return
        synthetic = link.catalog.pop(link.prefix + READ_RESOURCE, None)
        for resource in (await link.client.list_resources()).resources:
            name = link.prefix + self.normalize(resource.name)
            link.catalog[name] = RemoteTool(name, None, synthetic.sha256 if synthetic else "", {})


witness("tool_per_resource", ("D8.1",), "exposes each resource as its own tool instead of one read_resource")(
    adapter_pipeline(_ToolPerResource)
)


class _Prefetches(McpAdapter):
    async def prefetch(self, link: Link) -> None:
        if link.resources:
            for resource in (await link.client.list_resources()).resources:
                await link.client.read_resource(str(resource.uri))


witness("prefetched_resources", ("D8.2",), "reads every resource when a session starts")(adapter_pipeline(_Prefetches))


class _CacheableSkills(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        return [s.model_copy(update={"cacheable": True}) for s in await super().skills(link)]


witness("cacheable_skills", ("D8.3",), "lets MCP prompts into the cacheable prefix")(adapter_pipeline(_CacheableSkills))


async def _answer_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="sure"), model="witness"
    )


async def _answer_roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///")])


class _AdvertisesSampling(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"sampling_callback": _answer_sampling}


witness("sampling_advertised", ("D8.4",), "advertises sampling and answers a server's sampling requests")(
    adapter_pipeline(_AdvertisesSampling)
)


class _AdvertisesRoots(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"list_roots_callback": _answer_roots}


witness("roots_advertised", ("D8.5",), "advertises roots and answers a server's roots requests")(
    adapter_pipeline(_AdvertisesRoots)
)


@witness("mcp_beside_pipeline", ("D8.6",), "runs MCP calls straight through the adapter, leaving no row or event")
class _McpBesidePipeline(Pipeline):
    async def run_call(self, request: StepRequest, call: ProposedCall) -> Disposition:
        if self.mcp is None or not call.tool_name.startswith("mcp."):
            return await super().run_call(request, call)
        found = await self.mcp.resolve(request.run_id, call.tool_name)
        if isinstance(found, ReasonCode):
            return await super().run_call(request, call)
        return await outside_the_pipeline(self, request, call, found)


class _Unbounded(McpAdapter):
    def client_options(self, server: McpServerConfig) -> dict[str, Any]:
        return {"read_timeout_seconds": None, "input_required_max_rounds": 1_000_000}

    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        return super().spec_for(link, entry).model_copy(update={"deadline_s": 3600.0})


witness("unbounded_mcp_calls", ("D8.7",), "gives MCP calls an hour and unlimited input-required rounds")(
    adapter_pipeline(_Unbounded)
)


class _NoOutputCap(McpAdapter):
    def output_cap(self, link: Link) -> int:
        return 1 << 40


witness("no_mcp_output_cap", ("D8.8",), "delivers MCP results of any size")(adapter_pipeline(_NoOutputCap))


def _shown(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    return f"[{getattr(block, 'type', 'content')} omitted]"


class _CapInCharacters(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        if result.structured_content is not None or result.is_error:
            return super().from_result(link, spec, result)
        parts = [_shown(block) for block in result.content]
        if sum(len(p) for p in parts) > self.output_cap(link):  # The defect: characters, not bytes.
            return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail="over the output cap"))
        return ToolResult(ok=True, content=[ContentPart(text=p) for p in parts])


@witness("mcp_cap_in_characters", ("D8.8",), "compares an MCP result's characters, not its bytes, with the cap")
class _McpCapInCharacters(Pipeline):
    mcp_class = _CapInCharacters


class _RemoteReadResource(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        synthetic = link.prefix + READ_RESOURCE
        claimants = [t for t in tools if link.prefix + self.normalize(t.name) == synthetic]
        if len(claimants) == 1:
            # The defect: a server's own tool of the synthetic tool's name takes the name.
            tool = claimants[0]
            registered[synthetic] = RemoteTool(synthetic, tool.name, self.definition_hash(tool), wire(tool))
            dropped.discard(tool.name)
        return registered, dropped


@witness("remote_read_resource_wins", ("D8.1",), "lets a server's own read_resource tool take the synthetic name")
class _RemoteReadResourceWins(Pipeline):
    mcp_class = _RemoteReadResource


@witness(
    "rebuilt_call_misses_mcp_pins",
    ("D8.6",),
    "looks a call rebuilt from its row up among the builtins only, so an approved MCP hold ends unknown_tool",
)
class _RebuiltCallMissesMcpPins(Pipeline):
    def lookup(self, run_id: str, name: str) -> tuple[ToolSpec, Tool] | None:
        # The mistake: step 1 asks the adapter for mcp.* names, so the row's look-up "only needs the registry".
        return self.registry.resolve(name)


class _SyntheticAmongClaimants(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        synthetic = link.prefix + READ_RESOURCE
        claimants = [tool for tool in tools if link.prefix + self.normalize(tool.name) == synthetic]
        if link.resources and len(claimants) > 1:
            # The defect: the synthetic definition joins its name's group in front of the last server tool, not at
            # its head; with two or more server tools there a server tool heads the group, and the collision drops
            # the whole group, the synthetic read tool with it.
            registered.pop(synthetic, None)
        return registered, dropped


@witness(
    "read_resource_lost_among_claimants",
    ("D8.1",),
    "drops the synthetic read tool when two or more server tools normalize to read_resource",
)
class _ReadResourceLostAmongClaimants(Pipeline):
    mcp_class = _SyntheticAmongClaimants


class _ResourcesPastTheCap(McpAdapter):
    def from_resource(self, link: Link, result: types.ReadResourceResult) -> ToolResult:
        # The defect: the output cap guards tools/call only; a resource read is delivered at any size.
        texts = [
            item.text if isinstance(item, types.TextResourceContents) else f"[binary resource {item.uri}]"
            for item in result.contents
        ]
        return ToolResult(ok=True, content=[ContentPart(text=t) for t in texts])


@witness("resource_read_uncapped", ("D8.8",), "the synthetic read_resource tool delivers a resource over the cap")
class _ResourceReadUncapped(Pipeline):
    mcp_class = _ResourcesPastTheCap


class _ErrorCutToCap(McpAdapter):
    def from_result(self, link: Link, spec: ToolSpec, result: types.CallToolResult) -> ToolResult:
        if not result.is_error:
            return super().from_result(link, spec, result)
        parts = [self._text(block) for block in result.content]
        size = sum(len(p.encode()) for p in parts)
        if result.structured_content is not None:
            size += len(json.dumps(result.structured_content))
        if size <= self.output_cap(link):
            return super().from_result(link, spec, result)
        # The defect: "an error is only diagnostics", so an oversized one is cut down to the cap and delivered
        # (excerpted) as the outcome's external_detail instead of refused.
        cut = "\n".join(parts).encode()[: self.output_cap(link)].decode(errors="ignore")
        return ToolResult(ok=False, failure=ToolFailure(kind="ERROR", detail=cut))


@witness(
    "mcp_error_result_cut_to_cap",
    ("D8.8",),
    "delivers an MCP isError result over the server's cap cut down to the cap, in external_detail",
)
class _McpErrorResultCutToCap(Pipeline):
    mcp_class = _ErrorCutToCap


class _ResourceReadGrace(McpAdapter):
    def spec_for(self, link: Link, entry: RemoteTool) -> ToolSpec:
        spec = super().spec_for(link, entry)
        if entry.remote_name is not None:
            return spec
        # The defect: "a resource may be large, and reading changes nothing", so the synthetic read tool gets twice
        # the server's call_timeout_s; a hanging resources/read is then ended by the client library's own timeout
        # (remote_rejected), not by the pipeline's deadline.
        return spec.model_copy(update={"deadline_s": 2 * link.config.call_timeout_s})


@witness(
    "mcp_resource_read_deadline_doubled",
    ("D8.7",),
    "gives the synthetic read_resource tool twice the server's call_timeout_s, so a hanging read is not deadline_exceeded",
)
class _McpResourceReadDeadlineDoubled(Pipeline):
    mcp_class = _ResourceReadGrace


class _SdkJudgesStructure(McpAdapter):
    def opened(self, client: Client) -> None:
        # The defect: the SDK's own check stays on, so a result that breaks its schema raises a RuntimeError,
        # answered remote_rejected with the SDK's words (quoting the remote's structure) as remote text.
        return


witness(
    "schema_verdict_as_remote",
    ("D8.11", "D8.12"),
    "leaves the output-schema check to the SDK: a violating or missing structure is answered remote_rejected, the "
    "SDK's words enveloped as the remote's",
)(type("_SdkJudgesStructurePipeline", (Pipeline,), {"mcp_class": _SdkJudgesStructure}))


@witness(
    "mcp_structure_unjudged",
    ("D8.11",),
    "delivers an MCP server's structuredContent as valid without checking it against the pinned output schema",
)
class _StructureUnjudged(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        # The defect: a server's structure is taken as the SDK client would have checked it; nothing here does.
        if spec.source is ToolSource.MCP and result.structured is not None:
            return True
        return super().accepts_structure(spec, result)


@witness(
    "missing_structure_accepted",
    ("D8.12",),
    "delivers an MCP success without structuredContent although the tool's pinned definition declares an output schema",
)
class _MissingStructureAccepted(Pipeline):
    def accepts_structure(self, spec: ToolSpec, result: ToolResult) -> bool:
        # The defect: a builtin tool may omit its structure, so an MCP tool may too.
        return result.structured is None or super().accepts_structure(spec, result)


class _AnsweringIsHaving(McpAdapter):
    async def lists_resources(self, link: Link) -> bool:
        return link.resources  # Whether resources/list was answered at connect, even with nothing.


witness("read_tool_without_resources", ("D8.9",), "gives every server that answers resources/list a read tool")(
    adapter_pipeline(_AnsweringIsHaving)
)


class _CapVerdictAsRemoteText(McpAdapter):
    def over_cap(self) -> ToolResult:
        detail = "the result is over this server's output cap"  # The adapter's words, enveloped as the remote's.
        return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))


witness(
    "cap_verdict_as_remote_text",
    ("D8.10",),
    "answers an over-cap result remote_rejected, its own words in a remote external_detail",
)(adapter_pipeline(_CapVerdictAsRemoteText))


class _ResourcesJudgedOnce(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.judged: dict[str, bool] = {}

    async def lists_resources(self, link: Link) -> bool:
        # The defect: "resources rarely come and go": a server's first answer is kept for the instance's lifetime.
        server_id = link.config.server_id
        if server_id not in self.judged:
            self.judged[server_id] = await super().lists_resources(link)
        return self.judged[server_id]


witness(
    "resources_judged_once",
    ("D8.9",),
    "judges whether a server has resources at its first listing only, so resources that come or go later are missed",
)(adapter_pipeline(_ResourcesJudgedOnce))


class _FirstPageOfResources(McpAdapter):
    async def lists_resources(self, link: Link) -> bool:
        if not link.resources:
            return False
        # The defect: one page of each listing is taken for the whole, so what a later page lists is never seen.
        try:
            if (await link.client.list_resources()).resources:
                return True
            return bool((await link.client.list_resource_templates()).resource_templates)
        except MCPError:
            return False


witness(
    "resources_first_page_only",
    ("D8.9",),
    "reads only the first page of resources/list and of resources/templates/list when judging a server's resources",
)(adapter_pipeline(_FirstPageOfResources))


async def _validate_all_but_the_read_tool(p: PipelineHost, s: CallState) -> None:
    if reads_a_resource(s):
        return  # The defect: "the adapter wrote that schema itself, so its calls need no check".
    await STEP_TABLE[Step.VALIDATE](p, s)


@witness(
    "read_tool_arguments_unvalidated",
    ("D8.1",),
    "skips step 2 for the synthetic read_resource tool, so a uri that is no string (or none) is sent to the server",
)
class _ReadToolArgumentsUnvalidated(Pipeline):
    steps = STEP_TABLE | {Step.VALIDATE: _validate_all_but_the_read_tool}
