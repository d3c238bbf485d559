"""What decision 9's listing scenarios share: SilentDriftServer's silent changes, and the calls that must see them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from toolproof.fakes.mcp import FakeServer
from toolproof.spec import (
    Advertisement,
    CatalogChange,
    Disposition,
    IdempotencyClass,
    InvocationStatus,
    McpClassification,
    McpServerConfig,
    Outcome,
    ReasonCode,
    Risk,
    SideEffect,
)

from ._harness import Harness, describe
from ._mcp import memory, reached

DRIFTS = {
    "lookup": "its description, input schema and annotations",
    "summarize": "its description only (schema and annotations kept)",
    "label": "its title only",
    "report": "its output schema only",
}
"""SilentDriftServer's tools that change, unannounced, after their first call, and what changes: every field of the
hashed definition (D9.1) is changed alone by one of them, beside one that changes three at once."""


CONSEQUENTIAL = {
    "read-non-idempotent": (SideEffect.READ_ONLY, IdempotencyClass.NON_IDEMPOTENT),
    "read-conditionally-idempotent": (SideEffect.READ_ONLY, IdempotencyClass.CONDITIONALLY_IDEMPOTENT),
    "workspace-write-idempotent": (SideEffect.WORKSPACE_WRITE, IdempotencyClass.IDEMPOTENT),
    "external-write-idempotent": (SideEffect.EXTERNAL_WRITE, IdempotencyClass.IDEMPOTENT),
    "external-write-non-idempotent": (SideEffect.EXTERNAL_WRITE, IdempotencyClass.NON_IDEMPOTENT),
}
"""D9.4's consequential calls: every operator classification but IDEMPOTENT READ_ONLY, each one step from it included
(low risk and no scopes, so each runs without approval)."""

INSIDE_AGE_S = 3600.0
"""A listing_max_age_s the scenario never reaches: every call is inside it."""


def classified(name: str) -> McpClassification:
    """The low-risk classification of ``CONSEQUENTIAL[name]``."""
    side_effect, idempotency = CONSEQUENTIAL[name]
    return McpClassification(side_effect=side_effect, risk=Risk.LOW, idempotency=idempotency)


def pinned(ad: Advertisement) -> dict[str, str]:
    """Registered name -> pinned definition hash."""
    return {t.name: t.definition_sha256 for t in ad.tools}


def definition_changed(d: Disposition) -> bool:
    """Whether ``d`` is D9.4's answer to a changed tool: UNAVAILABLE tool_definition_changed."""
    return isinstance(d, Outcome) and (d.status, d.reason_code) == (
        InvocationStatus.UNAVAILABLE,
        ReasonCode.TOOL_DEFINITION_CHANGED,
    )


async def drift_session(
    harness: Harness,
    transport: str,
    protocol: str,
    *,
    classification: McpClassification,
    max_age_s: float = INSIDE_AGE_S,
    advance_s: float = 0.0,
    built: FakeServer | None = None,
) -> tuple[dict[str, str], dict[str, Disposition], dict[str, str], list[CatalogChange]]:
    """One session of SilentDriftServer (or ``built``, in-memory) calling each drifting tool twice, the instance
    clock moved ``advance_s`` between the two: the pin before, each second call's disposition, the pin after, and the
    catalog history."""
    where = f"{transport}, {protocol}"
    fields: dict[str, Any] = {"classification": classification, "protocol": protocol, "listing_max_age_s": max_age_s}
    server = (
        reached(harness, "drift", "SilentDriftServer", transport, **fields)
        if built is None
        else _in_memory(harness, "drift", built, **fields)
    )
    async with server as config, harness.open(mcp_servers=[config]) as session:
        before = pinned(await session.advertise())
        second: dict[str, Disposition] = {}
        for tool in DRIFTS:
            name = f"mcp.drift.{tool}"
            harness.success("D9.4", await session.call(name, {"text": "k"}), f"the first {name} ({where})")
            if advance_s:
                session.advance(advance_s)
            second[tool] = await session.call(name, {"text": "k"})
        after = pinned(await session.advertise())
        history = await session.catalog_history()
    return before, second, after, history


@asynccontextmanager
async def _in_memory(
    harness: Harness, server_id: str, built: FakeServer, **fields: Any
) -> AsyncIterator[McpServerConfig]:
    yield memory(harness, server_id, built.server.name, built=built, **fields)[0]


def judge_second_calls(harness: Harness, second: dict[str, Disposition], where: str) -> None:
    """D9.4: each second call, after its tool changed silently, answers tool_definition_changed."""
    for tool, change in DRIFTS.items():
        d = second[tool]
        harness.expect(
            "D9.4",
            definition_changed(d),
            f"the second mcp.drift.{tool} of the session, after the server silently changed {change}, was answered "
            f"{describe(d)} ({where}): expected UNAVAILABLE tool_definition_changed",
        )
