"""Round 6, decision 9: listing reuse (D9.4), unannounced changes (D9.5) and the definition hash (D9.1).

Written blind, from the ADR and the rule catalog (D9.1-D9.5 and their interpretations) only. Every pipeline is the
reference with one realistic mistake in one hook of the MCP adapter (a subclass overriding it, as round 5 does); its
docstring names the rule and the mistake. ``redteam/probe_r6.py`` shows each one misbehaving on its own input.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, ReferenceImplementation
from toolproof.spec import (
    LISTING_MAX_AGE_S,
    CatalogChangeKind,
    IdempotencyClass,
    SideEffect,
    ToolSpec,
)
from toolproof.spec._mcp import DEFINITION_FIELDS

from ._r5 import adapter_impl

READ, IDEMPOTENT = SideEffect.READ_ONLY, IdempotencyClass.IDEMPOTENT


def _fresh(adapter: McpAdapter, link: Link) -> bool:
    """The reference's freshness test of the link's last listing (no loss, no notice since, younger than its age)."""
    if link.lost or link.listed_at is None:
        return False
    return adapter.clock.now() - link.listed_at < link.fresh_for


# --- which calls may reuse a listing (D9.4: only IDEMPOTENT READ_ONLY) -------------------------------------------


class ReuseAnyRead(McpAdapter):
    """D9.4: every READ_ONLY call reuses a fresh listing, whatever its idempotency.

    The mistake: "a read cannot do harm, so it need not list" -- a NON_IDEMPOTENT or CONDITIONALLY_IDEMPOTENT
    read is consequential (D9.4's interpretation) and must list afresh; here it runs on a listing up to one max age
    old, so it calls a silently changed tool instead of answering tool_definition_changed.
    """

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        return spec.side_effect is READ and _fresh(self, link)


class ReuseIdempotentWorkspaceWrite(McpAdapter):
    """D9.4: an IDEMPOTENT WORKSPACE_WRITE call reuses a fresh listing, as an IDEMPOTENT READ_ONLY one does.

    The mistake: "only an external write leaves a mark outside the platform, and an idempotent one is safe to
    repeat" -- the idempotent workspace write (one step from IDEMPOTENT READ_ONLY) is consequential and must list
    afresh; here it calls a tool changed inside the max age.
    """

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if spec.idempotency is not IDEMPOTENT or spec.side_effect is SideEffect.EXTERNAL_WRITE:
            return False
        return _fresh(self, link)


class TtlCoversConsequential(McpAdapter):
    """D9.4: on a 2026-07-28 server that sends ttlMs, any call reuses the listing while the server's ttl lasts.

    The mistake: the server's cache directive is read as a promise that its list will not change for ttlMs, so
    every call (writes and non-idempotent reads included) may run on a listing inside it. Only an IDEMPOTENT
    READ_ONLY call may reuse; a consequential call lists afresh "however young the last listing". Handshake-era
    servers (no ttlMs) are handled as the reference does.
    """

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        link.ttl_sent = any("ttl_ms" in page.model_fields_set and page.ttl_ms > 0 for page in pages)  # type: ignore[attr-defined]
        return super().fresh_for(link, pages)

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if getattr(link, "ttl_sent", False) and _fresh(self, link):
            return True
        return super().reusable(link, spec)


class ReuseSameInstant(McpAdapter):
    """D9.4: a consequential call reuses a listing that began at this very instant of the instance clock.

    The mistake: "a listing made now cannot be stale, listing again is pure waste" -- a consequential call lists
    afresh however young the last listing; on a coarse (or frozen) clock a silent change made between two calls of
    the same instant is called by the second, a write, instead of answered tool_definition_changed.
    """

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if not link.lost and link.listed_at is not None and link.listed_at == self.clock.now():
            return True
        return super().reusable(link, spec)


# --- how long an idempotent read may reuse (D9.4's age bound) -----------------------------------------------------


class AgeInclusive(McpAdapter):
    """D9.4: a listing exactly ``listing_max_age_s`` old is still reused (``<=`` for ``<``).

    The mistake is the boundary: a listing that old is stale, and with listing_max_age_s = 0 ("never reuse") a
    listing made at this instant is reused on a coarse clock.
    """

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if spec.side_effect is not READ or spec.idempotency is not IDEMPOTENT:
            return False
        if link.lost or link.listed_at is None:
            return False
        return self.clock.now() - link.listed_at <= link.fresh_for


class ZeroAgeMeansDefault(McpAdapter):
    """D9.4: ``listing_max_age_s = 0`` falls back to the default 30 s (``config or DEFAULT``).

    The mistake: zero is read as "not set" -- 0 means never reuse a listing; here an idempotent read reuses one for
    the default max age after the operator turned reuse off.
    """

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        age = link.config.listing_max_age_s or LISTING_MAX_AGE_S
        for page in pages:
            if "ttl_ms" in page.model_fields_set:
                age = min(age, page.ttl_ms / 1000.0)
        return age


class TtlLengthens(McpAdapter):
    """D9.4: a 2026-07-28 server's ttlMs replaces the operator's max age (it may lengthen it).

    The mistake: the server's ttl is taken as the authority on its own catalog -- ttlMs may shorten the age,
    never lengthen it; a ttlMs above listing_max_age_s keeps a listing reusable past the operator's bound.
    """

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        ttls = [page.ttl_ms / 1000.0 for page in pages if "ttl_ms" in page.model_fields_set]
        return min(ttls) if ttls else link.config.listing_max_age_s


class TtlInSeconds(McpAdapter):
    """D9.4: ttlMs is read as seconds (the ``/ 1000`` is missing).

    The mistake is the unit: a ttlMs of 5000 (five seconds) shortens nothing under a 30 s max age, so a listing
    the server said is stale after five seconds is reused for 30; ttlMs 0 still shortens the age to 0.
    """

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        age = link.config.listing_max_age_s
        for page in pages:
            if "ttl_ms" in page.model_fields_set:
                age = min(age, float(page.ttl_ms))
        return age


class WallClockAge(McpAdapter):
    """D9.4: a listing's age is counted on the wall clock (``time.time()``), not the instance clock.

    The mistake: the age is measured where the listing's cost is (real seconds) -- the rule counts it on the
    instance clock; an instance whose clock moved past the max age while little real time passed (a frozen or
    injected clock, a suspended worker resumed) still reuses the listing.
    """

    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        link.wall_listed_at = time.time()  # type: ignore[attr-defined]
        return super().fresh_for(link, pages)

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if spec.side_effect is not READ or spec.idempotency is not IDEMPOTENT:
            return False
        if link.lost or link.listed_at is None:
            return False
        return time.time() - getattr(link, "wall_listed_at", 0.0) < link.fresh_for


# --- what makes a listing stale at once (D9.4: a notice, a lost connection) -------------------------------------


class NoticeKeepsListing(McpAdapter):
    """D9.4 (with D9.2): a tools/list_changed is recorded but does not make the last listing stale.

    The mistake: "decision 9 says a notice changes nothing a session sees" read as "changes nothing at all" -- the
    notice must make the listing stale at once, so the next idempotent read lists and answers the change; here it
    runs on the old listing until the max age passes.
    """

    def invalidate(self, link: Link) -> None:
        if link.lost:
            super().invalidate(link)


class InflightNoticeLost(McpAdapter):
    """D9.4: a notice that arrives while a listing is in flight does not stop that listing from being reused.

    The mistake: invalidating clears the timestamp but keeps no generation, so the listing that was running when
    the notice came sets its timestamp when it ends and is reused, although the notice is already in the history
    ("a notice has already made every listing before it stale, one in flight included").
    """

    def invalidate(self, link: Link) -> None:
        link.listed_at = None


class LossKeepsListing(McpAdapter):
    """D9.4: a lost connection leaves the last listing reusable; freshness is its age alone.

    The mistake: the listing cache is keyed by time only -- a lost connection makes the listing stale at once (a
    reconnected server is listed afresh); here an idempotent read inside the max age keeps reusing the listing of
    the lost connection, so it never reconnects nor sees what the restarted server changed.
    """

    async def lose(self, link: Link) -> None:
        listed_at, fresh_for = link.listed_at, link.fresh_for
        await super().lose(link)
        link.listed_at, link.fresh_for = listed_at, fresh_for

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if spec.side_effect is not READ or spec.idempotency is not IDEMPOTENT or link.listed_at is None:
            return False
        return self.clock.now() - link.listed_at < link.fresh_for


# --- the definition hash (D9.1) and what counts as a change (D9.4) ---------------------------------------------


class HashJsonDumps(McpAdapter):
    """D9.1: the definition hash is sha256 of ``json.dumps(sort_keys=True, separators=(",", ":"))``, not RFC 8785.

    The mistake: "sorted keys and no whitespace is canonical JSON" -- it agrees with RFC 8785 on ordinary
    definitions, but writes 1.0 as ``1.0`` (JCS ``1``), 1e-07 as ``1e-07`` (JCS ``1e-7``), sorts keys by code point
    (JCS by UTF-16 unit, so a non-BMP key sorts before U+FB33 there and after it here), and hashes 2**64 - 1, which
    has no RFC 8785 form, instead of dropping the tool.
    """

    def definition_hash(self, tool: types.Tool, definition: Mapping[str, Any] | None = None) -> str:
        from toolproof.reference.hooks import wire

        wired = wire(tool) if definition is None else definition
        material = {k: wired.get(k) for k in DEFINITION_FIELDS}
        text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TitleEditIgnored(McpAdapter):
    """D9.4: a change to a tool's title alone keeps the pinned hash ("the title is display-only").

    The mistake: when a listed definition differs from the previous one only in ``title``, the previous hash is
    kept, so the edit is neither recorded changed (D9.5) nor answered tool_definition_changed -- but "changed means
    any part of the hashed definition", and title is one of its fields.
    """

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, Any], set[str]]:
        registered, dropped = super().register(link, tools)
        for name, entry in list(registered.items()):
            before = link.catalog.get(name)
            if before is None or not before.definition or before.sha256 == entry.sha256:
                continue
            untitled = {k: v for k, v in entry.definition.items() if k != "title"}
            if untitled == {k: v for k, v in before.definition.items() if k != "title"}:
                registered[name] = type(entry)(entry.name, entry.remote_name, before.sha256, entry.definition)
        return registered, dropped


# --- when a silent change is recorded (D9.5) and what a new session lists (D9.5, D9.6) -------------------------


class UnannouncedUnrecorded(McpAdapter):
    """D9.5: a change or withdrawal is recorded only when a tools/list_changed announced it.

    The mistake: "the history is the record of what servers announced" -- a listing that follows a notice records
    its differences; one that finds a silent change or withdrawal applies it (calls still answer unavailable) but
    records nothing, so the catalog history never shows it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._announced: set[str] = set()

    async def notified(self, link: Link) -> None:
        self._announced.add(link.config.server_id)
        await super().notified(link)

    async def refresh(self, link: Link) -> None:
        server = link.config.server_id
        announced = server in self._announced
        self._announced.discard(server)
        self._silent = None if announced else server
        try:
            await super().refresh(link)
        finally:
            self._silent = None

    def record(self, changes: list[Any]) -> None:
        silent = getattr(self, "_silent", None)
        quiet = {CatalogChangeKind.CHANGED.value, CatalogChangeKind.WITHDRAWN.value}
        super().record([c for c in changes if not (c.server_id == silent and c.kind in quiet)])


class SessionStartReuses(McpAdapter):
    """D9.5 (D9.6): a new session pins from a fresh listing instead of listing every server when it starts.

    The mistake: session start is given an idempotent read's freshness -- a session starts by listing each
    server's catalog, so a change made silently since the last listing is recorded and the new session sees the
    current catalog; here a session started inside the max age pins the old catalog and records nothing.
    """

    _starting = False

    async def advertise(self, run_id: str) -> Any:
        self._starting = True
        try:
            return await super().advertise(run_id)
        finally:
            self._starting = False

    async def listed(self, link: Link) -> bool:
        if self._starting and _fresh(self, link):
            return True
        return await super().listed(link)


PIPELINES: dict[str, type[McpAdapter]] = {
    "reuse_any_read": ReuseAnyRead,
    "reuse_idempotent_workspace_write": ReuseIdempotentWorkspaceWrite,
    "ttl_covers_consequential": TtlCoversConsequential,
    "reuse_same_instant": ReuseSameInstant,
    "age_inclusive": AgeInclusive,
    "zero_age_means_default": ZeroAgeMeansDefault,
    "ttl_lengthens": TtlLengthens,
    "ttl_in_seconds": TtlInSeconds,
    "wall_clock_age": WallClockAge,
    "notice_keeps_listing": NoticeKeepsListing,
    "inflight_notice_lost": InflightNoticeLost,
    "loss_keeps_listing": LossKeepsListing,
    "hash_json_dumps": HashJsonDumps,
    "title_edit_ignored": TitleEditIgnored,
    "unannounced_unrecorded": UnannouncedUnrecorded,
    "session_start_reuses": SessionStartReuses,
}
"""Pipeline name -> the adapter subclass planting its mistake."""


def _factory(name: str) -> ReferenceImplementation:
    return adapter_impl(f"r6-{name}", PIPELINES[name])


reuse_any_read = _factory("reuse_any_read")
reuse_idempotent_workspace_write = _factory("reuse_idempotent_workspace_write")
ttl_covers_consequential = _factory("ttl_covers_consequential")
reuse_same_instant = _factory("reuse_same_instant")
age_inclusive = _factory("age_inclusive")
zero_age_means_default = _factory("zero_age_means_default")
ttl_lengthens = _factory("ttl_lengthens")
ttl_in_seconds = _factory("ttl_in_seconds")
wall_clock_age = _factory("wall_clock_age")
notice_keeps_listing = _factory("notice_keeps_listing")
inflight_notice_lost = _factory("inflight_notice_lost")
loss_keeps_listing = _factory("loss_keeps_listing")
hash_json_dumps = _factory("hash_json_dumps")
title_edit_ignored = _factory("title_edit_ignored")
unannounced_unrecorded = _factory("unannounced_unrecorded")
session_start_reuses = _factory("session_start_reuses")
