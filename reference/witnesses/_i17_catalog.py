"""Witnesses of issue 17's catalog and result defects (D5.9, D7.4, D8.9, D8.10): each the old behaviour, planted."""

from __future__ import annotations

import os

from toolproof.reference.hooks import Link, McpAdapter, Pipeline
from toolproof.spec import (
    SKILL_SEGMENT,
    InstanceConfig,
    McpTransport,
    Skill,
    ToolFailure,
    ToolResult,
    TrustLabel,
)

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _AnsweringIsHaving(McpAdapter):
    async def lists_resources(self, link: Link) -> bool:
        return link.resources  # Whether resources/list was answered at connect, even with nothing.


witness("read_tool_without_resources", ("D8.9",), "gives every server that answers resources/list a read tool")(
    _mcp(_AnsweringIsHaving)
)


class _PromptsNamedAsTools(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        return [
            skill.model_copy(update={"name": link.prefix + self.normalize(skill.prompt_name)})
            for skill in await super().skills(link)
        ]


witness("prompts_named_as_tools", ("D5.9",), "names a prompt's skill mcp.{server_id}.{name}, as a tool is named")(
    _mcp(_PromptsNamedAsTools)
)


class _FirstPromptWins(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        kept = await super().skills(link)
        taken = {skill.name for skill in kept}
        if not link.prompts:
            return kept
        for prompt in (await link.client.list_prompts()).prompts:
            name = f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(prompt.name)}"
            if name not in taken:  # The first of prompts that normalize alike takes the name.
                taken.add(name)
                kept.append(
                    Skill(
                        name=name,
                        server_id=link.config.server_id,
                        prompt_name=prompt.name,
                        description=prompt.description or "",
                        trust=TrustLabel.EXTERNAL_UNTRUSTED,
                        read_only=True,
                        cacheable=False,
                    )
                )
        return kept


witness("first_prompt_wins", ("D5.9",), "keeps the first of a server's prompts that normalize alike")(
    _mcp(_FirstPromptWins)
)


class _CapVerdictAsRemoteText(McpAdapter):
    def over_cap(self) -> ToolResult:
        detail = "the result is over this server's output cap"  # The adapter's words, enveloped as the remote's.
        return ToolResult(ok=False, failure=ToolFailure(kind="REMOTE_REJECTED", detail=detail))


witness(
    "cap_verdict_as_remote_text",
    ("D8.10",),
    "answers an over-cap result remote_rejected, its own words in a remote external_detail",
)(_mcp(_CapVerdictAsRemoteText))


class _StdioEnvIgnored(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        servers = [server.model_copy(update={"env": None, "cwd": None}) for server in config.mcp_servers]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness("stdio_env_ignored", ("D7.4",), "starts a stdio server without its configured env and cwd")(
    _mcp(_StdioEnvIgnored)
)


class _WorkerEnvInherited(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        super().check(config)
        servers = [
            server.model_copy(update={"env": dict(os.environ) | (server.env or {})})
            if server.transport is McpTransport.STDIO
            else server
            for server in config.mcp_servers
        ]
        self.config = config.model_copy(update={"mcp_servers": servers})


witness("stdio_inherits_worker_env", ("D7.4",), "starts a stdio server with the worker's whole environment")(
    _mcp(_WorkerEnvInherited)
)
