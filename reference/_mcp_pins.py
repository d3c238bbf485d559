"""The MCP adapter's session layer (decisions 8, 9): a session pins what it advertises when it starts.

A pinned tool resolves from the pin for the whole session; a catalog change is recorded by the
catalog layer and reaches only sessions that start after it. A pinned tool the server withdrew or
changed since answers unavailable at call time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import mcp_types as types

from toolproof.spec import (
    SKILL_SEGMENT,
    AdvertisedTool,
    Advertisement,
    IdempotencyClass,
    ReasonCode,
    SideEffect,
    Skill,
    ToolSpec,
    TrustLabel,
)

from ._mcp_catalog import collector_paused_async
from ._mcp_classify import McpClassifier, McpTool
from ._mcp_link import Link
from ._tables import PinRow, SessionPinTable

SESSION_MARKER = "session"
"""Pin row kind that records that a session started (so an empty advertisement is still a pin)."""


class McpSessions(McpClassifier):
    """Pins each session's advertisement and resolves ``mcp.*`` names in it."""

    async def prefetch(self, link: Link) -> None:
        """Decision 8: nothing is read from a server at session start beyond its catalogs."""

    async def advertise(self, run_id: str) -> Advertisement:
        """The session's pin; pinned now from the current catalogs if the session has not started."""
        if not self.links:
            return Advertisement(run_id=run_id, as_of_seq=0, tools=[], skills=[])  # No server: nothing to pin.
        async with collector_paused_async():  # A pin of thousands of tools is that many rows and specs at once.
            rows = self.store.pins(run_id)
            if not rows:
                rows = await self._pin(run_id)
            return self._advertisement(run_id, rows)

    async def start(self, run_id: str) -> None:
        """The session of ``run_id`` starts (pins, from the current catalogs) unless it already has.

        Asks the store whether a pin exists without reading it: a call must not cost the whole catalog's pin.
        """
        if self.links and not self.store.pinned_once(run_id):
            await self.advertise(run_id)

    async def _pin(self, run_id: str) -> list[PinRow]:
        rows: list[PinRow] = []
        skills: list[Skill] = []
        for link in self.links.values():
            if await self.listed(link):
                try:
                    await self.prefetch(link)
                    skills.extend(await self.skills(link))
                except Exception as exc:  # boundary: a server's failure is that server's, never the session's
                    await self.failed(link, exc)
        as_of = self.store.last_catalog_seq()
        for link in self.links.values():
            for entry in link.catalog.values():
                spec = self.spec_for(link, entry)
                rows.append(
                    PinRow(
                        run_id=run_id,
                        kind="tool",
                        name=entry.name,
                        server_id=link.config.server_id,
                        remote_name=entry.remote_name,
                        definition_sha256=entry.sha256,
                        body_json=spec.model_dump_json(),
                        as_of_seq=as_of,
                    )
                )
        for skill in skills:
            rows.append(
                PinRow(
                    run_id=run_id,
                    kind="skill",
                    name=skill.name,
                    server_id=skill.server_id,
                    remote_name=skill.prompt_name,
                    definition_sha256="",
                    body_json=skill.model_dump_json(),
                    as_of_seq=as_of,
                )
            )
        marker = PinRow(
            run_id=run_id,
            kind=SESSION_MARKER,
            name="",
            server_id="",
            definition_sha256="",
            body_json="{}",
            as_of_seq=as_of,
        )
        return self.write_pin(run_id, [marker, *rows])

    def write_pin(self, run_id: str, rows: Sequence[PinRow | SessionPinTable]) -> list[PinRow]:
        """Write the session's pin and read it back; a concurrent pin of the same run wins, and both read it back.

        D5: rows of one kind that share a name are all dropped (a skills hook that named two prompts alike), so one
        name never stands for two surfaces and the clash costs those names only, never the whole pin. A write that
        fails with no pin of the run in the store was no concurrent pin: it raises rather than pin nothing.
        """
        counts = Counter((row.kind, row.name) for row in rows)
        kept = [row for row in rows if counts[(row.kind, row.name)] == 1]
        written = self.store.pin(kept)
        pinned = self.store.pins(run_id)
        if not written and not pinned:
            raise RuntimeError(f"the session pin of run {run_id!r} could not be written, and no other worker pinned it")
        return pinned

    async def listed(self, link: Link) -> bool:
        """Whether the server's catalog was listed just now (reconnecting a lost server first, when due).

        A server that cannot be listed keeps the catalog last recorded: a new session pins it, and its
        tools answer remote_unavailable until the server is back.
        """
        if not await self.reconnect(link):
            return False
        try:
            await self.refresh(link)
        except Exception as exc:  # boundary: a server's failure is that server's, never the session's
            await self.failed(link, exc)
            return False
        return True

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        """D9.4: whether a call of ``spec`` may run on the link's last listing instead of listing the catalog again.

        Only an IDEMPOTENT READ_ONLY call may, and only while the listing is fresh: younger than its age bound
        (``fresh_for``: the operator's ``listing_max_age_s``, or the server's shorter ``ttlMs``), with no
        tools/list_changed and no lost connection since it began. Any other call is consequential and lists first.
        """
        if spec.side_effect is not SideEffect.READ_ONLY or spec.idempotency is not IdempotencyClass.IDEMPOTENT:
            return False
        if link.lost or link.listed_at is None:
            return False
        return self.clock.now() - link.listed_at < link.fresh_for

    async def failed(self, link: Link, exc: Exception) -> None:
        """A request to the server failed: a lost connection makes the link lost (to be reconnected)."""
        if self.lost(exc):
            await self.lose(link)

    async def skills(self, link: Link) -> list[Skill]:
        """Decision 8: the server's prompts as read-only, untrusted, never-cacheable skills.

        D5.9: named ``{prefix}prompt.{normalized}``, a name no tool has; prompts that normalize alike are all dropped.
        """
        if not link.prompts:
            return []
        listed = await link.client.list_prompts()
        groups: dict[str, list[types.Prompt]] = {}
        for prompt in listed.prompts:
            groups.setdefault(f"{link.prefix}{SKILL_SEGMENT}.{self.normalize(prompt.name)}", []).append(prompt)
        return [
            Skill(
                name=name,
                server_id=link.config.server_id,
                prompt_name=prompt.name,
                description=prompt.description or "",
                trust=TrustLabel.EXTERNAL_UNTRUSTED,
                read_only=True,
                cacheable=False,
            )
            for name, (prompt, *others) in groups.items()
            if not others
        ]

    def _advertisement(self, run_id: str, rows: list[PinRow]) -> Advertisement:
        tools: list[AdvertisedTool] = []
        skills: list[Skill] = []
        as_of = 0
        for row in rows:
            as_of = row.as_of_seq
            if row.kind == "skill":
                skills.append(Skill.model_validate_json(row.body_json))
            elif row.kind == "tool":
                spec = ToolSpec.model_validate_json(row.body_json)
                tools.append(
                    AdvertisedTool(
                        name=row.name,
                        server_id=row.server_id,
                        remote_name=row.remote_name,
                        definition_sha256=row.definition_sha256,
                        source=spec.source,
                        side_effect=spec.side_effect,
                        risk=spec.risk,
                        idempotency=spec.idempotency,
                        required_scopes=spec.required_scopes,
                        output_trust=spec.output_trust,
                    )
                )
        return Advertisement(run_id=run_id, as_of_seq=as_of, tools=tools, skills=skills)

    def pinned(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | None:
        """The pinned spec and tool of ``name`` in the session of ``run_id``, without asking the server."""
        row = self.store.pin_of(run_id, "tool", name)
        if row is None or row.server_id not in self.links:
            return None
        spec = ToolSpec.model_validate_json(row.body_json)
        return spec, McpTool(self, self.links[row.server_id], row.remote_name, spec)

    async def resolve(self, run_id: str, name: str) -> tuple[ToolSpec, McpTool] | ReasonCode:
        """Step 1 for an ``mcp.*`` name: the pinned tool, unless its server withdrew or changed it since."""
        await self.start(run_id)
        found = self.pinned(run_id, name)
        if found is None:
            return ReasonCode.UNKNOWN_TOOL
        spec, tool = found
        link = tool.link
        if not self.reusable(link, spec) and not await self.listed(link):
            return ReasonCode.REMOTE_UNAVAILABLE
        current = link.catalog.get(name)
        if current is None:
            return ReasonCode.TOOL_WITHDRAWN
        if current.sha256 != spec.version:  # Invariant: a pinned MCP spec's version is its definition hash.
            return ReasonCode.TOOL_DEFINITION_CHANGED
        return found
