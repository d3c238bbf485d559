"""Witnesses of decision 5: Name grammar, reserved domains and MCP naming.

Each is the reference with one deliberate defect, named for it; ``breaks`` names the rules it breaks."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

import mcp_types as types
from mcp import Client

from toolproof.reference.hooks import (
    Link,
    McpAdapter,
    McpTool,
    PinRow,
    Pipeline,
    Registry,
    RemoteTool,
    SessionPinTable,
    wire,
)
from toolproof.spec import (
    MAX_NAME_LENGTH,
    MAX_REMOTE_SEGMENT,
    RESERVED_DOMAINS,
    SKILL_SEGMENT,
    ConfigurationError,
    McpServerConfig,
    ReasonCode,
    Skill,
    Tool,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
    normalize_remote_name,
)

from ._registry import adapter_pipeline, witness


class _LaxNames(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        return spec


@witness("lax_names", ("D5.1", "D5.2"), "registers any name, reserved domains included")
class _LaxNamesPipeline(Pipeline):
    registry_class = _LaxNames


class _ReservedOpen(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        try:
            return Registry.admit(spec)
        except ConfigurationError as exc:
            if "reserved domain" in str(exc):
                return spec
            raise


@witness("reserved_domains_open", ("D5.2",), "lets builtins into the mcp and device domains")
class _ReservedDomainsOpen(Pipeline):
    registry_class = _ReservedOpen


class _BuiltinSourceReserved(Registry):
    @staticmethod
    def admit(spec: ToolSpec) -> ToolSpec:
        # The defect: the reservation is read as "source BUILTIN", so a device or sandbox tool takes an mcp.* name.
        if spec.source in (ToolSource.DEVICE, ToolSource.SANDBOX) and domain_of(spec.name) in RESERVED_DOMAINS:
            return spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
        return Registry.admit(spec)


@witness(
    "reserves_domains_for_builtin_source_only",
    ("D5.2",),
    "lets a tool configured with source DEVICE or SANDBOX into the mcp and device domains",
)
class _ReservesDomainsForBuiltinSourceOnly(Pipeline):
    registry_class = _BuiltinSourceReserved


class _CaseFolding(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        return super().resolve(name.strip().lower())


@witness("case_folding_lookup", ("D5.3",), "resolves names case-insensitively and ignores surrounding blanks")
class _CaseFoldingLookup(Pipeline):
    registry_class = _CaseFolding


class _LastWins(Registry):
    def __init__(self, tools: Sequence[Tool]) -> None:
        unique = {tool.spec.name: tool for tool in tools}
        super().__init__(list(unique.values()))


@witness("last_registration_wins", ("D5.4",), "lets a second registration of a name replace the first")
class _LastRegistrationWins(Pipeline):
    registry_class = _LastWins


class _PrefixFromServerInfo(McpAdapter):
    def prefix(self, server: McpServerConfig, client: Client) -> str:
        info = client.server_info
        return f"mcp.{normalize_remote_name(info.name if info else server.server_id)}."


witness("server_info_prefix", ("D5.5",), "names a server's tools after its serverInfo.name")(
    adapter_pipeline(_PrefixFromServerInfo)
)


class _NoNfkc(McpAdapter):
    def normalize(self, remote: str) -> str:
        segment = re.sub(r"[^a-z0-9_]+", "_", remote.lower())
        return (segment if segment[:1].isalpha() else "t_" + segment)[:64]


witness("no_nfkc", ("D5.6",), "normalizes without Unicode NFKC")(adapter_pipeline(_NoNfkc))


class _FirstWins(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, _ = super().register(link, [])
        for tool in tools:
            name = link.prefix + self.normalize(tool.name)
            if name not in registered:
                shape = wire(tool)
                registered[name] = RemoteTool(name, tool.name, self.definition_hash(tool), shape)
        return registered, set()


witness("first_name_wins", ("D5.7",), "resolves normalization collisions by catalog order, first wins")(
    adapter_pipeline(_FirstWins)
)


class _VerbatimNames(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        for tool in tools:
            if "." in tool.name and tool.name == tool.name.lower():
                registered.pop(link.prefix + self.normalize(tool.name), None)
                registered[tool.name] = RemoteTool(tool.name, tool.name, self.definition_hash(tool), wire(tool))
        return registered, dropped


witness("verbatim_dotted_names", ("D5.8",), "registers remote names that already look like dotted names as they are")(
    adapter_pipeline(_VerbatimNames)
)


_SEGMENTS = r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+"


_UNTRUSTED_SOURCES = frozenset({ToolSource.MCP, ToolSource.DEVICE, ToolSource.SANDBOX})


def _registry(admitted: Callable[[str], bool]) -> type[Pipeline]:
    """A pipeline whose registry judges a builtin's name with ``admitted(name)``; the rest of admission as ever."""

    class _Checked(Registry):
        @staticmethod
        def admit(spec: ToolSpec) -> ToolSpec:
            if not admitted(spec.name):
                raise ConfigurationError(f"tool name {spec.name!r} does not match the grammar (D5.1)")
            if spec.source is not ToolSource.MCP and domain_of(spec.name) in RESERVED_DOMAINS:
                raise ConfigurationError(f"tool {spec.name!r} is a builtin in a reserved domain (D5.2)")
            if spec.source in _UNTRUSTED_SOURCES:
                spec = spec.model_copy(update={"output_trust": TrustLabel.EXTERNAL_UNTRUSTED})
            return spec

    return type("_CheckedPipeline", (Pipeline,), {"registry_class": _Checked})


def _under_exclusive_cap(name: str) -> bool:
    # The defect: "at most 128" written as a strict comparison.
    return len(name) < MAX_NAME_LENGTH and re.fullmatch(_SEGMENTS, name) is not None


witness("name_cap_exclusive", ("D5.1",), "refuses a grammatical builtin name of exactly 128 characters")(
    _registry(_under_exclusive_cap)
)


def _segments_only(name: str) -> bool:
    return re.fullmatch(_SEGMENTS, name) is not None  # The defect: no length cap.


witness("name_length_uncapped", ("D5.1",), "registers a grammatical builtin name of any length")(
    _registry(_segments_only)
)


def _dollar_anchored(name: str) -> bool:
    # The defect: ``$`` also matches before a final newline.
    return len(name) <= MAX_NAME_LENGTH and re.match(rf"^{_SEGMENTS}$", name) is not None


witness("grammar_dollar_newline", ("D5.1",), "checks the name grammar with a $ that admits a trailing newline")(
    _registry(_dollar_anchored)
)


class _FoldingRegistry(Registry):
    def resolve(self, name: str) -> tuple[ToolSpec, Tool] | None:
        # The defect: a proposed name is NFKC-folded before the look-up, "as remote names are".
        return super().resolve(unicodedata.normalize("NFKC", name))


@witness("resolve_folds_nfkc", ("D5.3",), "NFKC-folds a proposed builtin name before looking it up")
class _ResolveFoldsNfkc(Pipeline):
    registry_class = _FoldingRegistry


class _RenormalizingResolve(McpAdapter):
    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        found = await super().resolve(run_id, name)
        domain, _, rest = name.partition(".")
        server, _, remote = rest.partition(".")
        if found is ReasonCode.UNKNOWN_TOOL and domain == "mcp" and remote:
            # The defect: an unpinned mcp.* name is normalized like a remote name and looked up again.
            again = f"mcp.{server}.{self.normalize(remote)}"
            if again != name:
                return await super().resolve(run_id, again)
        return found


@witness("mcp_resolve_normalizes", ("D5.3",), "normalizes an unpinned proposed mcp.* name and looks it up again")
class _McpResolveNormalizes(Pipeline):
    mcp_class = _RenormalizingResolve


def _replaced(folded: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", folded)


class _LowerThenNfkc(McpAdapter):
    def normalize(self, remote: str) -> str:
        segment = _replaced(unicodedata.normalize("NFKC", remote.lower()))  # The defect: lower case before NFKC.
        return (segment if segment[:1].isalpha() else "t_" + segment)[:MAX_REMOTE_SEGMENT]


witness("normalize_lower_before_nfkc", ("D5.6",), "lower-cases a remote name before NFKC, not after")(
    type("_LowerThenNfkcPipeline", (Pipeline,), {"mcp_class": _LowerThenNfkc})
)


class _CutThenPrefix(McpAdapter):
    def normalize(self, remote: str) -> str:
        segment = _replaced(unicodedata.normalize("NFKC", remote).lower())[:MAX_REMOTE_SEGMENT]
        return segment if segment[:1].isalpha() else "t_" + segment  # The defect: t_ prefixed after the cut.


witness(
    "normalize_cut_before_prefix",
    ("D5.6", "D5.7"),
    "cuts a normalized remote name to 64 characters before prefixing t_, not after",
)(type("_CutThenPrefixPipeline", (Pipeline,), {"mcp_class": _CutThenPrefix}))


class _PromptsNamedAsTools(McpAdapter):
    async def skills(self, link: Link) -> list[Skill]:
        return [
            skill.model_copy(update={"name": link.prefix + self.normalize(skill.prompt_name)})
            for skill in await super().skills(link)
        ]


witness("prompts_named_as_tools", ("D5.9",), "names a prompt's skill mcp.{server_id}.{name}, as a tool is named")(
    adapter_pipeline(_PromptsNamedAsTools)
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
    adapter_pipeline(_FirstPromptWins)
)


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
)(adapter_pipeline(_PromptSegmentOnClashOnly))


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
        # The defect (the reference's own, once): the rows are written as they come; a name clash breaks the
        # pin's unique key, the failed write is taken for another worker's pin, and the session reads back nothing.
        self.store.pin(rows)
        return self.store.pins(run_id)


witness(
    "skill_clash_loses_pin",
    ("D5.9",),
    "pins two skills of one name (prompts grouped by remote name): the pin's write fails and the session pins nothing",
)(adapter_pipeline(_SkillClashLosesPin))
