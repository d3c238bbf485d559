"""Decisions 5, 6, 8 and 9 for an MCP server's tools: their names, classification, what a result delivers, and what a
session pins and a call meets after the server's catalog changed.

A session is a run: it pins, at the run's first step, every server's catalog as then listed (D9.1). A call names a
pinned tool by its exact registered name (D5.3); the server is listed again before every call (the harness configures
``listing_max_age_s`` 0, so D9.4's reuse of a fresh listing is never a choice here), and a pinned tool the server
no longer lists answers tool_withdrawn (D9.3), one whose definition hash differs tool_definition_changed (D9.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolproof.spec import (
    READ_RESOURCE,
    ReasonCode,
    ToolSource,
    ToolSpec,
    TrustLabel,
    definition_sha256,
    mcp_tool_name,
)
from toolproof.spec import UNCLASSIFIED as _UNCLASSIFIED

from ._catalog import Behaviour, McpRemoteTool, McpServer, ModelTool

INPUT_SCHEMA: dict[str, Any] = {"type": "object"}
"""Every modelled remote tool's input schema: any object (arguments are the generic draws')."""
READ_RESOURCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"uri": {"type": "string"}},
    "required": ["uri"],
    "additionalProperties": False,
}
"""D8.1's interpretation: the synthetic read tool's arguments are one uri, a string, required."""
SYNTHETIC_VERSION = "(the implementation's definition of read_resource)"
"""The synthetic tool's version as the model states it: its definition (so its hash) is the implementation's own,
which the ADR does not fix; the judge holds every row of it to one value, the first it reads."""
RESOURCE_READ = "resources/read"
"""Where a synthetic tool's executions are counted in its server's log."""


def definition(remote: McpRemoteTool) -> dict[str, Any]:
    """The tool's definition in its wire form (decision 9 hashes it): what ``ModelledServer`` lists."""
    found: dict[str, Any] = {"name": remote.remote_name, "description": remote.description, "inputSchema": INPUT_SCHEMA}
    if remote.title is not None:
        found["title"] = remote.title
    if remote.read_only_hint is not None:
        found["annotations"] = {"readOnlyHint": remote.read_only_hint}
    return found


def classification_rules(server: McpServer) -> tuple[str, ...]:
    """The rule that classifies the server's tools: the operator's configuration (D6.1), or none (D6.2)."""
    return ("D6.1",) if server.classification is not None else ("D6.2",)


def behaviour(server: McpServer, remote: McpRemoteTool, spec: ToolSpec) -> tuple[Behaviour, tuple[str, ...]]:
    """What the adapter's tool does on each execution, and the rules that say so.

    D4.2's interpretation: the adapter marks a consequential call before sending it. D8.8 and D8.10: a result whose
    text is over the server's cap, counted in UTF-8 bytes, is not delivered: FAILED tool_error with no external
    detail; within the cap it is delivered unaltered (step 12 excerpts it against the instance's limit all the same,
    D12.1). An isError result is the remote's failure: tool_error, its text only ever external detail (D13.4).
    """
    mark = spec.consequential
    rules: tuple[str, ...] = ("D4.2",) if mark else ()
    size = sum(len(text.encode()) for text in remote.parts)
    if size > server.max_output_bytes:
        return Behaviour(mark=mark, ending="ERROR"), (*rules, "D8.8", "D8.10")
    if remote.is_error:
        return Behaviour(mark=mark, ending="ERROR", detail="\n".join(remote.parts)), (*rules, "D8.8")
    return Behaviour(parts=tuple((text, None) for text in remote.parts), mark=mark), (*rules, "D8.8")


@dataclass(frozen=True)
class McpTool:
    """A registered MCP tool: what the model runs for it, and the rules of the branches that shaped it."""

    tool: ModelTool
    rules: tuple[str, ...]
    remote_name: str


def _spec(server: McpServer, name: str, version: str, description: str, schema: dict[str, Any]) -> ToolSpec:
    """A tool of ``server`` as the registry holds it: the server's classification, the most restrictive when it has
    none (D6.1, D6.2), its output EXTERNAL_UNTRUSTED (D6.3), its deadline the server's call timeout."""
    c = server.classification or _UNCLASSIFIED
    return ToolSpec(
        name=name,
        version=version,
        description=description,
        source=ToolSource.MCP,
        side_effect=c.side_effect,
        risk=c.risk,
        idempotency=c.idempotency,
        required_scopes=c.required_scopes,
        input_schema=schema,
        output_trust=TrustLabel.EXTERNAL_UNTRUSTED,
        deadline_s=server.call_timeout_s,
    )


def registered(server: McpServer, tools: tuple[McpRemoteTool, ...]) -> dict[str, McpTool]:
    """D5.5, D5.6: each remote name as ``mcp.{server_id}.{normalized}``; D5.7: names that normalize alike are all
    dropped. D6.1-D6.3: the spec's classification is the operator's (the most restrictive when none: D6.2), whatever
    the server annotates, and its output EXTERNAL_UNTRUSTED. Its version is its definition hash (decision 9)."""
    groups: dict[str, list[McpRemoteTool]] = {}
    for remote in tools:
        groups.setdefault(mcp_tool_name(server.server_id, remote.remote_name), []).append(remote)
    out: dict[str, McpTool] = {}
    synthetic = mcp_tool_name(server.server_id, READ_RESOURCE)
    if server.resource is not None:
        groups.pop(synthetic, None)  # D8.1: no remote tool takes the synthetic tool's name.
        out[synthetic] = _synthetic(server, synthetic)
    for name, (remote, *others) in groups.items():
        if others:
            continue
        spec = _spec(server, name, definition_sha256(definition(remote)), remote.description, INPUT_SCHEMA)
        acts, rules = behaviour(server, remote, spec)
        out[name] = McpTool(ModelTool(spec, acts), (*classification_rules(server), "D6.3", *rules), remote.remote_name)
    return out


def _synthetic(server: McpServer, name: str) -> McpTool:
    """Decision 8: a server that lists a resource gets one read tool, of the server's classification (D8.1's
    interpretation: every step any tool of the server gets), its read text capped and excerpted like a result."""
    spec = _spec(server, name, SYNTHETIC_VERSION, "", READ_RESOURCE_SCHEMA)
    remote = McpRemoteTool(READ_RESOURCE, parts=(server.resource or "",))
    acts, rules = behaviour(server, remote, spec)
    return McpTool(
        ModelTool(spec, acts), (*classification_rules(server), "D6.3", "D8.1", "D8.9", *rules), RESOURCE_READ
    )


def dropped(server: McpServer, tools: tuple[McpRemoteTool, ...]) -> set[str]:
    """D5.7: the registered names two or more remote names normalize to."""
    seen: dict[str, int] = {}
    for remote in tools:
        name = mcp_tool_name(server.server_id, remote.remote_name)
        seen[name] = seen.get(name, 0) + 1
    return {name for name, n in seen.items() if n > 1}


CLASSIFIED = ("D6.1", "D6.2")
"""The branches that classify a server's tools: step 5's hold or allow follows from them."""
RAN = ("D8.1", "D8.8", "D8.10")
"""The branches that shape what a run of the tool answers: the synthetic read tool, the output cap."""


def verdict_rules(rules: tuple[str, ...], held: bool, ran: bool) -> tuple[str, ...]:
    """Of an MCP tool's branch rules, those its call's disposition follows from: the classification for a call step 5
    held (or an allowed one an implementation held); for a call that ran, the cap when its result is over it, else
    the cap's "delivered unaltered" and, for the synthetic read tool, what it reads."""
    # The read tool is held as its server's tools are because it is one of them (D8.1's interpretation).
    classified = tuple(rule for rule in rules if held and rule in (*CLASSIFIED, "D8.1"))
    if not ran:
        return classified
    if "D8.10" in rules:
        return (*classified, "D8.8", "D8.10")
    return (*classified, *(rule for rule in rules if rule in ("D8.1", "D8.8")))


Resolution = McpTool | tuple[ReasonCode, tuple[str, ...]]
"""A pinned tool to run, or step 1's refusal and its rules."""


def resolve(pin: Mapping[str, McpTool], current: Mapping[str, McpTool], name: str) -> Resolution:
    """Step 1 for an ``mcp.`` name in a session: a name the session did not pin is unknown (D5.3, D9.1: the pin is the
    session's whole MCP catalog, a look-alike of a pinned name included); a pinned tool the server no longer lists is
    withdrawn (D9.3); one listed under another definition hash changed (D9.4); else the pinned tool."""
    pinned = pin.get(name)
    if pinned is None:
        # A tool the server lists now but the session did not pin is not the session's (D9.1).
        return ReasonCode.UNKNOWN_TOOL, ("D5.3", "D9.1") if name in current else ("D5.3",)
    now = current.get(name)
    if now is None:
        return ReasonCode.TOOL_WITHDRAWN, ("D9.3",)
    if now.tool.spec.version != pinned.tool.spec.version:
        return ReasonCode.TOOL_DEFINITION_CHANGED, ("D9.4",)
    return pinned
