"""What decision 9's listing scenarios share: SilentDriftServer's silent changes, and the calls that must see them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from toolproof.fakes import EchoTool
from toolproof.fakes.mcp import FakeServer, http_server, served_calls, stdio_command
from toolproof.spec import (
    Advertisement,
    CatalogChange,
    Disposition,
    IdempotencyClass,
    InvocationStatus,
    McpClassification,
    McpServerConfig,
    McpTransport,
    Outcome,
    ReasonCode,
    Risk,
    SideEffect,
)

from ._harness import Harness, Session, describe
from ._mcp import READ, memory, reached

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


Calls = Callable[[], list[str]]
"""Reads the ``"tools/call NAME"`` lines a fake server received so far, in arrival order: the server's own record."""


@asynccontextmanager
async def logged_server(
    harness: Harness,
    server_id: str,
    fake: str,
    transport: str,
    *,
    classification: McpClassification = READ,
    protocol: str = "legacy",
    **fields: Any,
) -> AsyncIterator[tuple[McpServerConfig, Calls]]:
    """The fake ``fake`` reached over ``transport`` (``_mcp.TRANSPORTS``) for the block, and a reader of the calls it
    received: in-process its ``log``; over stdio and streamable HTTP the call log it keeps in its state directory."""
    if transport == "memory":
        config, built = memory(harness, server_id, fake, classification=classification, protocol=protocol, **fields)
        yield config, lambda: [line for line in built.log if line.startswith("tools/call ")]
        return
    state = harness.directory / f"{server_id}-state"
    common: dict[str, Any] = {"server_id": server_id, "classification": classification, "protocol": protocol}
    harness.log.append(f"mcp server {server_id}: {fake} over {transport}, {protocol}, call log in {state} {fields}")
    if transport == "stdio":
        command = stdio_command(fake, state_dir=state)
        yield (
            McpServerConfig(transport=McpTransport.STDIO, command=command, **common, **fields),
            lambda: served_calls(state),
        )
        return
    async with http_server(fake, state_dir=state) as url:
        yield McpServerConfig(transport=McpTransport.HTTP, url=url, **common, **fields), lambda: served_calls(state)


STALE_AGE_S = 30.0
"""listing_max_age_s of a read-classified server whose listing a scenario lets go stale (moving the clock past it)."""

ERRING_KINDS: dict[str, tuple[McpClassification, float, float]] = {
    **{name: (classified(name), INSIDE_AGE_S, 0.0) for name in CONSEQUENTIAL},
    "read-stale": (READ, STALE_AGE_S, STALE_AGE_S + 1.0),
    "read-fresh": (READ, INSIDE_AGE_S, 0.0),
}
"""ListingErrorServer's classification, listing_max_age_s, and the seconds the clock moves once a listing fails: every
consequential classification and an idempotent read past the max age list before the call (D9.4); an idempotent read
inside it may run on the last listing."""


def must_list(kind: str) -> bool:
    """Whether a call under ``ERRING_KINDS[kind]`` lists the catalog before it runs (D9.4)."""
    return kind != "read-fresh"


@dataclass
class Erring:
    """What ListingErrorServer's ``echo`` met once one of its listings answered an error (``erring_calls``)."""

    answered: dict[str, Disposition]
    """Run -> its call of ``echo`` after the listing failed: the running session (run-1) and a new one (run-2)."""
    received: dict[str, int]
    """Run -> the calls of ``echo`` the server received for it (its own record)."""
    builtin: Disposition
    """A builtin call (files.echo) made meanwhile."""
    history: list[CatalogChange]
    where: str


async def erring_calls(
    harness: Harness, transport: str, protocol: str, kind: str, listing: str, code: int, *, restart: bool = False
) -> Erring:
    """ListingErrorServer classified as ``ERRING_KINDS[kind]``: a session calls ``echo``, ``fail_listing`` makes
    ``listing`` answer errors of ``code``, the clock moves as the kind says, then (in a fresh instance over the same
    store and server, with ``restart``) the session and a new one call ``echo``, and a builtin is called."""
    classification, age, advance_s = ERRING_KINDS[kind]
    where = (
        f"{transport}, {protocol}, {kind} (listing_max_age_s={age:g}, the clock moved {advance_s:g} s), {listing}/list "
        f"answering an error of code {code} while connected"
        + (", then a fresh instance over the same store" if restart else "")
    )
    fields: dict[str, Any] = {"classification": classification, "protocol": protocol, "listing_max_age_s": age}
    answered: dict[str, Disposition] = {}
    received: dict[str, int] = {}
    async with logged_server(harness, "erring", "ListingErrorServer", transport, **fields) as (config, calls):
        tools = [EchoTool(harness.world)]
        async with harness.open(*tools, mcp_servers=[config]) as session:
            harness.success("D9.4", await session.call("mcp.erring.echo", {"text": "up"}), "mcp.erring.echo")
            asked = {"text": listing, "code": code}
            harness.success("D9.4", await session.call("mcp.erring.fail_listing", asked), f"fail_listing {asked}")
            session.advance(advance_s)
            if not restart:
                builtin = await _erring_echoes(session, calls, answered, received)
                history = await session.catalog_history()
        if restart:
            harness.log.append("close the instance; open a fresh one over the same store and the same server")
            async with harness.open(*tools, mcp_servers=[config]) as session:
                builtin = await _erring_echoes(session, calls, answered, received)
                history = await session.catalog_history()
    return Erring(answered, received, builtin, history, where)


async def _erring_echoes(
    session: Session, calls: Calls, answered: dict[str, Disposition], received: dict[str, int]
) -> Disposition:
    for run in ("run-1", "run-2"):
        before = calls().count("tools/call echo")
        answered[run] = await session.call("mcp.erring.echo", {"text": run}, run_id=run, step_number=10)
        received[run] = calls().count("tools/call echo") - before
    return await session.call("files.echo", {"text": "builtin"}, step_number=11)


def remote_unavailable(d: Disposition) -> bool:
    """Whether ``d`` is UNAVAILABLE remote_unavailable."""
    return isinstance(d, Outcome) and (d.status, d.reason_code) == (
        InvocationStatus.UNAVAILABLE,
        ReasonCode.REMOTE_UNAVAILABLE,
    )
