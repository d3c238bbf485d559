"""Witnesses of the fifth red team's gaps in decisions 5, 7, 8 and 9 (issue 17): a lost connection of an unmarked call
taken for a crash, a prompt segment added only on a clash, resources judged once per server, notices debounced per
clock reading, and a skill-name clash that costs the session its whole pin."""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, McpTool, PinRow, Pipeline, SessionPinTable, Store
from toolproof.spec import (
    SKILL_SEGMENT,
    Clock,
    InstanceConfig,
    JsonObject,
    Skill,
    ToolExecutionContext,
    ToolResult,
    ToolSpec,
    TrustLabel,
)

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _CrashOnLostConnection(McpTool):
    def __init__(self, adapter: McpAdapter, inner: McpTool) -> None:
        super().__init__(adapter, inner.link, None, inner.spec)
        self.inner = inner

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        result = await self.inner.execute(arguments, context)
        if result.failure is not None and result.failure.kind == "REMOTE_UNAVAILABLE":
            # The defect: "the watermark decides, as in recovery" applied to every call: a lost connection raises
            # even when nothing was marked, so a READ_ONLY call lost mid-call completes FAILED tool_crashed.
            raise ConnectionError(result.failure.detail or "connection lost")
        return result


class _UnmarkedDropRaises(McpAdapter):
    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        found = super().pinned(run_id, name)
        if found is None:
            return None
        spec, tool = found
        return spec, _CrashOnLostConnection(self, tool)


witness(
    "unmarked_drop_raises",
    ("D7.5",),
    "lets a READ_ONLY MCP call whose connection is lost mid-call raise (tool_crashed) instead of remote_unavailable",
)(_mcp(_UnmarkedDropRaises))


class _PromptSegmentOnClashOnly(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        named = []
        for skill in await super().skills(link):
            short = f"{link.prefix}{self.normalize(skill.prompt_name)}"
            # The defect: "keep names short": the prompt segment only where a tool of the server has the name.
            named.append(skill if short in link.catalog else skill.model_copy(update={"name": short}))
        return named


witness(
    "prompt_segment_on_clash_only",
    ("D5.9",),
    "names a prompt mcp.{server}.{name}, adding the prompt segment only when a tool of the server is named alike",
)(_mcp(_PromptSegmentOnClashOnly))


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
)(_mcp(_ResourcesJudgedOnce))


class _NoticesDebounced(McpAdapter):
    def __init__(self, config: InstanceConfig, store: Store, clock: Clock) -> None:
        super().__init__(config, store, clock)
        self.last_notice: dict[str, float] = {}

    async def notified(self, link: Link) -> None:
        server_id, now = link.config.server_id, self.clock.now()
        if self.last_notice.get(server_id) == now:
            # The defect: a debounce on the instance clock: notices of one server at one clock reading are one.
            return
        self.last_notice[server_id] = now
        await super().notified(link)


witness(
    "notices_debounced_per_instant",
    ("D9.2",),
    "records one tools/list_changed per server and instance-clock reading, so a burst on a still clock is one entry",
)(_mcp(_NoticesDebounced))


class _SkillClashLosesPin(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        if not link.prompts:
            return []
        listed = await link.client.list_prompts()
        # Grouped by the remote name, so two prompts that normalize alike become two skills of one registered name.
        groups: dict[str, list[types.Prompt]] = {}
        for prompt in listed.prompts:
            groups.setdefault(prompt.name, []).append(prompt)
        return [
            Skill(
                name=f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(prompt.name)}",
                server_id=link.config.server_id,
                prompt_name=prompt.name,
                description=prompt.description or "",
                trust=TrustLabel.EXTERNAL_UNTRUSTED,
                read_only=True,
                cacheable=False,
            )
            for prompt, *others in groups.values()
            if not others
        ]

    def write_pin(self, run_id: str, rows: Sequence[PinRow | SessionPinTable]) -> list[PinRow]:
        # The defect (the reference's, before round 5): the rows are written as they come; a name clash breaks the
        # pin's unique key, the failed write is taken for another worker's pin, and the session reads back nothing.
        self.store.pin(rows)
        return self.store.pins(run_id)


witness(
    "skill_clash_loses_pin",
    ("D5.9",),
    "pins two skills of one name (prompts grouped by remote name): the pin's write fails and the session pins nothing",
)(_mcp(_SkillClashLosesPin))
