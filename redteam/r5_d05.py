"""Round 5, decision 5 (D5.9): prompts as skills, their names kept apart from tools."""

from __future__ import annotations

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, ReferenceImplementation
from toolproof.spec import SKILL_SEGMENT, Skill, TrustLabel

from ._r5 import adapter_impl


def _skill(link: Link, name: str, prompt: types.Prompt) -> Skill:
    return Skill(
        name=name,
        server_id=link.config.server_id,
        prompt_name=prompt.name,
        description=prompt.description or "",
        trust=TrustLabel.EXTERNAL_UNTRUSTED,
        read_only=True,
        cacheable=False,
    )


def prompt_segment_only_on_clash() -> ReferenceImplementation:
    """D5.9: the prompt segment is added only when a tool of the same server has the prompt's name.

    The mistake: "keep names short; disambiguate only on a clash": a prompt is mcp.{server}.{name} unless the server
    currently lists a tool named alike, then mcp.{server}.prompt.{name}. A skill may then share a name with a tool of
    another session (the tool added later) or with the synthetic read_resource. Exposing input: any prompt with no
    tool twin (its skill name lacks the prompt segment).
    """

    class Adapter(McpAdapter):
        async def skills(self, link: Link) -> list[Skill]:
            if not link.prompts:
                return []
            listed = await link.client.list_prompts()
            groups: dict[str, list[types.Prompt]] = {}
            for prompt in listed.prompts:
                base = f"{link.prefix}{self.normalize(prompt.name)}"
                name = f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(prompt.name)}" if base in link.catalog else base
                groups.setdefault(name, []).append(prompt)
            return [_skill(link, n, p) for n, (p, *others) in groups.items() if not others]

    return adapter_impl("prompt_segment_only_on_clash", Adapter)


def alike_prompts_first_wins() -> ReferenceImplementation:
    """D5.9: of two prompts of one server that normalize alike, the first listed is kept.

    The mistake: "a prompt is read-only, so a collision is harmless: keep the first". Exposing input: two prompts
    normalizing alike ('Get-Item', 'get item'); the skill kept depends on listing order.
    """

    class Adapter(McpAdapter):
        async def skills(self, link: Link) -> list[Skill]:
            if not link.prompts:
                return []
            listed = await link.client.list_prompts()
            chosen: dict[str, types.Prompt] = {}
            for prompt in listed.prompts:
                chosen.setdefault(f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(prompt.name)}", prompt)
            return [_skill(link, n, p) for n, p in chosen.items()]

    return adapter_impl("alike_prompts_first_wins", Adapter)


def alike_prompts_grouped_by_remote_name() -> ReferenceImplementation:
    """D5.9: prompt collisions are detected on the remote name, not the normalized one.

    The mistake: duplicates are grouped by prompt.name (as a server's duplicate listing would be), so two prompts that
    normalize alike both become skills of one registered name. Exposing input: prompts 'Get-Item' and 'get item'.
    """

    class Adapter(McpAdapter):
        async def skills(self, link: Link) -> list[Skill]:
            if not link.prompts:
                return []
            listed = await link.client.list_prompts()
            groups: dict[str, list[types.Prompt]] = {}
            for prompt in listed.prompts:
                groups.setdefault(prompt.name, []).append(prompt)
            return [
                _skill(link, f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(p.name)}", p)
                for p, *others in groups.values()
                if not others
            ]

    return adapter_impl("alike_prompts_grouped_by_remote_name", Adapter)


def twin_prompt_yields_to_tool() -> ReferenceImplementation:
    """D5.9: a prompt whose name a tool of the same server also has is dropped ("the tool wins").

    The mistake: a tool and a prompt of one remote name are treated as a collision settled for the tool, so the
    server's prompt 'fetch' is no skill when it also ships a tool 'fetch'. Exposing input: TwinNamesServer.
    """

    class Adapter(McpAdapter):
        async def skills(self, link: Link) -> list[Skill]:
            tools = {entry.remote_name for entry in link.catalog.values() if entry.remote_name is not None}
            tool_names = {self.normalize(name) for name in tools}
            return [s for s in await super().skills(link) if self.normalize(s.prompt_name) not in tool_names]

    return adapter_impl("twin_prompt_yields_to_tool", Adapter)


def prompt_name_not_normalized() -> ReferenceImplementation:
    """D5.9: a skill is named from the prompt's remote name as sent, not its normalized form.

    The mistake: the prompt segment is there but normalization is skipped ("prompts are not called, so their names
    need not match the grammar"): 'Get Item' becomes mcp.{server}.prompt.Get Item. Exposing input: a prompt whose
    name is not already normalized (upper case, space, hyphen).
    """

    class Adapter(McpAdapter):
        async def skills(self, link: Link) -> list[Skill]:
            if not link.prompts:
                return []
            listed = await link.client.list_prompts()
            groups: dict[str, list[types.Prompt]] = {}
            for prompt in listed.prompts:
                groups.setdefault(f"{link.prefix}{SKILL_SEGMENT}.{prompt.name}", []).append(prompt)
            return [_skill(link, n, p) for n, (p, *others) in groups.items() if not others]

    return adapter_impl("prompt_name_not_normalized", Adapter)
