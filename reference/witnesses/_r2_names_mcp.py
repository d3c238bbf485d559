"""Witnesses of the second red team's name and MCP gaps: the name cap and grammar, exact resolution, the pinned
normalization's order, the allowlist's host, the output cap's unit, the synthetic resource tool, and a paginated
catalog."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, McpTool, Pipeline, Registry, RemoteTool, wire
from toolproof.spec import (
    MAX_NAME_LENGTH,
    MAX_REMOTE_SEGMENT,
    READ_RESOURCE,
    RESERVED_DOMAINS,
    ConfigurationError,
    ContentPart,
    InstanceConfig,
    McpOrigin,
    ReasonCode,
    Tool,
    ToolFailure,
    ToolResult,
    ToolSource,
    ToolSpec,
    TrustLabel,
    domain_of,
)

from ._registry import witness

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


class _UserinfoHost(McpAdapter):
    def check(self, config: InstanceConfig) -> None:
        stripped = []
        for server in config.mcp_servers:
            if server.origin is McpOrigin.TENANT and server.url:
                # The defect: the host is read as the authority up to its first ':' or '@', so userinfo that names
                # an allowed host stands in for the real one.
                host = re.split(r"[:@]", urlsplit(server.url).netloc, maxsplit=1)[0].lower()
                if host not in config.egress_allowlist:
                    raise ConfigurationError(f"tenant MCP server {server.server_id!r} host {host!r} not allowed (D7.2)")
                server = server.model_copy(update={"url": f"http://{config.egress_allowlist[0]}/"})
            stripped.append(server)
        super().check(config.model_copy(update={"mcp_servers": stripped}))


@witness("allowlist_userinfo_host", ("D7.2",), "reads a tenant URL's userinfo as its host for the egress allowlist")
class _AllowlistUserinfoHost(Pipeline):
    mcp_class = _UserinfoHost


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


class _FirstPage:
    """A client whose tools/list stops at the first page."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def list_tools(self, cursor: str | None = None, **options: Any) -> types.ListToolsResult:
        page: types.ListToolsResult = await self.client.list_tools(**options)
        return page.model_copy(update={"next_cursor": None})  # The defect: next_cursor ignored.

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class _FirstPageOnly(McpAdapter):
    async def refresh(self, link: Link) -> None:
        client = link.client
        link.client = _FirstPage(client)  # type: ignore[assignment]  # a stand-in with the one method refresh uses
        try:
            await super().refresh(link)
        finally:
            link.client = client


@witness(
    "catalog_first_page",
    ("D9.1", "D9.3", "D9.6", "D18.2"),
    "lists a server's catalog from the first page of tools/list only",
)
class _CatalogFirstPage(Pipeline):
    mcp_class = _FirstPageOnly


class _PinsByRange(McpAdapter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        exact = self.store.pins
        seen: list[str] = []

        def pins(run_id: str) -> list[Any]:
            rows = exact(run_id)
            if rows:
                seen.append(run_id)
                return rows
            # The mistake: a session with no pin of its own reads the next one at or after its id (a range query).
            later = sorted(r for r in seen if r >= run_id)
            return exact(later[0]) if later else []

        self.store.pins = pins  # type: ignore[method-assign]


@witness("pins_read_by_range", ("D9.6",), "a new session whose run id sorts before a pinned one's reads that pin")
class _PinsReadByRange(Pipeline):
    mcp_class = _PinsByRange
