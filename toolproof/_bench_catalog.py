"""Hostile scale in ``toolproof bench``: a 10,000-tool catalog registered, and pinned against a list_changed.

A stand-in until the MCP adapter lands: there is no adapter to normalize remote names yet
(decision 5), so the bench builds MCP-sourced ToolSpecs from MCP-shaped definitions and
registers them through the reference registry (name grammar, reserved domains, the
output-trust floor of decision 6), and pins with a SHA-256 of each definition's canonical
JSON, comparing it against a changed catalog of the same size (decision 9).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolproof.reference._registry import Registry
from toolproof.spec import (
    ContentPart,
    JsonObject,
    ToolExecutionContext,
    ToolResult,
    ToolSource,
    ToolSpec,
)

STAND_IN = (
    "stand-in until the MCP adapter lands: MCP-sourced ToolSpecs built from MCP-shaped definitions and "
    "registered through reference Registry (no remote-name normalization yet); pinning = SHA-256 of each "
    "definition's canonical JSON, diffed against a changed catalog of the same size"
)
"""How the figure is labelled wherever it is shown."""

SERVER_ID = "bench"
"""The server the catalog claims to come from."""


def definitions(size: int, revision: int = 0) -> list[dict[str, Any]]:
    """``size`` MCP-shaped tool definitions (``name``, ``description``, ``inputSchema``).

    Revision 1 is a list_changed of the same size: every 100th tool reworded, every 200th
    withdrawn and as many new ones added.
    """
    result: list[dict[str, Any]] = []
    withdrawn = 0
    for index in range(size):
        if revision and index % 200 == 199:
            withdrawn += 1
            continue
        reworded = revision and index % 100 == 0
        result.append(_definition(f"tool_{index:05d}", "now also deletes" if reworded else "reads one record"))
    result.extend(_definition(f"added_{index:05d}", "a newcomer") for index in range(withdrawn))
    return result


def _definition(name: str, summary: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{name}: {summary}",
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["id"],
            "additionalProperties": False,
        },
    }


class CatalogTool:
    """A registered catalog entry; the bench never executes it."""

    def __init__(self, spec: ToolSpec) -> None:
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        """The registered spec."""
        return self._spec

    async def execute(self, arguments: JsonObject, context: ToolExecutionContext) -> ToolResult:
        """Answer without doing anything (the bench measures registration only)."""
        return ToolResult(ok=True, content=[ContentPart(text="unused")])


def register(catalog: Sequence[dict[str, Any]]) -> Registry:
    """Build a ToolSpec per definition and register them all (decision 5 grammar, decision 6 trust floor)."""
    tools = [
        CatalogTool(
            ToolSpec(
                name=f"mcp.{SERVER_ID}.{item['name']}",
                description=item["description"],
                source=ToolSource.MCP,
                input_schema=item["inputSchema"],
            )
        )
        for item in catalog
    ]
    return Registry(tools)


def _digest(item: dict[str, Any]) -> str:
    canonical = json.dumps(item, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def pin(catalog: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Name to SHA-256 of the canonical JSON definition: what a session pinned."""
    return {item["name"]: _digest(item) for item in catalog}


@dataclass(frozen=True, slots=True)
class CatalogChange:
    """What a list_changed would change against the pin (recorded, not applied mid-session)."""

    added: int
    """Names the pin does not have."""
    withdrawn: int
    """Pinned names the new catalog lacks (they stay advertised and answer unavailable)."""
    changed: int
    """Pinned names whose definition differs."""


def check_pin(pinned: dict[str, str], catalog: Sequence[dict[str, Any]]) -> CatalogChange:
    """Hash the new catalog and compare it with ``pinned``."""
    current = pin(catalog)
    return CatalogChange(
        added=sum(1 for name in current if name not in pinned),
        withdrawn=sum(1 for name in pinned if name not in current),
        changed=sum(1 for name, digest in current.items() if name in pinned and pinned[name] != digest),
    )
