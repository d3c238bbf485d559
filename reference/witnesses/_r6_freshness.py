"""Witnesses of round 6's gaps in D9.4: a listing kept fresh where the rule makes it stale, or a change not seen.

Each bends one of the adapter's freshness hooks (how long a listing lasts, which calls may reuse it, what makes it
stale) or what it counts as a change; the reference's own hooks are the correct reading of D9.4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import mcp_types as types

from toolproof.reference.hooks import Link, McpAdapter, Pipeline, RemoteTool
from toolproof.spec import IdempotencyClass, SideEffect, ToolSpec

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


def _ttls_s(pages: Sequence[types.ListToolsResult]) -> list[float]:
    """The ttlMs each page sent, in seconds (a handshake-era page sends none)."""
    return [page.ttl_ms / 1000.0 for page in pages if "ttl_ms" in page.model_fields_set]


def _idempotent_read(spec: ToolSpec) -> bool:
    return spec.side_effect is SideEffect.READ_ONLY and spec.idempotency is IdempotencyClass.IDEMPOTENT


# --- the server's ttlMs (2026-07-28) -----------------------------------------------------------------------------


class _TtlCoversEveryCall(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if link.config.protocol == "legacy" or link.lost or link.listed_at is None:
            return super().reusable(link, spec)
        # The defect: a server that says how long its list stays good is taken at its word for every call,
        # consequential ones included, as if the ttl were a promise not to change.
        return self.clock.now() - link.listed_at < link.fresh_for


witness(
    "ttl_covers_every_call",
    ("D9.4",),
    "lets a call of any classification run on a listing younger than a 2026-07-28 server's ttlMs, so a write calls "
    "a tool changed since",
)(_mcp(_TtlCoversEveryCall))


class _LongerAgeWins(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        ttls = _ttls_s(pages)
        # The defect: the operator's age and the server's ttl are both read as "may reuse for this long", and the
        # more generous one is kept, so a ttlMs above listing_max_age_s stretches it.
        return max(link.config.listing_max_age_s, min(ttls)) if ttls else link.config.listing_max_age_s


witness(
    "ttl_lengthens_max_age",
    ("D9.4", "D9.5"),
    "keeps a listing fresh for the longer of listing_max_age_s and the server's ttlMs, so reads run on a listing "
    "past its max age under a long ttlMs, and past the ttlMs under a short one",
)(_mcp(_LongerAgeWins))


class _TtlInSeconds(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        ttls = [float(page.ttl_ms) for page in pages if "ttl_ms" in page.model_fields_set]
        # The defect is the unit: ttlMs is milliseconds, taken here as seconds, so 5000 (five seconds) shortens a
        # 30 s max age to nothing and the listing stays fresh for the whole age.
        return min([link.config.listing_max_age_s, *ttls])


witness(
    "ttl_read_as_seconds",
    ("D9.4", "D9.5"),
    "reads ttlMs as seconds, so a listing the server called stale after five seconds is reused for the whole max age",
)(_mcp(_TtlInSeconds))


class _FirstPageTtl(McpAdapter):
    def fresh_for(self, link: Link, pages: Sequence[types.ListToolsResult]) -> float:
        # The defect: the first page's ttlMs is read as the whole listing's, not the shortest of its pages.
        return min([link.config.listing_max_age_s, *_ttls_s(pages[:1])])


witness(
    "ttl_of_first_page",
    ("D9.4", "D9.5"),
    "takes a paginated listing's ttlMs from its first page, so a shorter ttlMs on a later page is ignored",
)(_mcp(_FirstPageTtl))


# --- what makes a listing stale at once: a notice, a lost connection ---------------------------------------------


class _NoticeForgetsTimeOnly(McpAdapter):
    def invalidate(self, link: Link) -> None:
        # The defect: a notice only forgets when the last listing was made; the listing in flight, which began
        # before the notice, stamps its own time when it ends and is reused as fresh.
        link.listed_at = None


witness(
    "inflight_listing_outlives_notice",
    ("D9.4",),
    "lets a listing that was in flight when a tools/list_changed arrived be reused afterwards as fresh",
)(_mcp(_NoticeForgetsTimeOnly))


class _ListingOutlivesConnection(McpAdapter):
    async def lose(self, link: Link) -> None:
        listed_at = link.listed_at
        await super().lose(link)
        # The defect: a listing's freshness is its age alone, so losing the connection leaves it in place.
        link.listed_at = listed_at

    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        if not _idempotent_read(spec) or link.listed_at is None:
            return False
        return self.clock.now() - link.listed_at < link.fresh_for


witness(
    "lost_connection_keeps_listing",
    ("D9.4",),
    "lets an idempotent read reuse the listing of a lost connection, so inside the max age it never reconnects nor "
    "sees what the restarted server changed",
)(_mcp(_ListingOutlivesConnection))


# --- what counts as a change (D9.4: any part of the hashed definition) -------------------------------------------


def _without(definition: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in definition.items() if k != key}


class _EditIgnored(McpAdapter):
    ignored: ClassVar[str]
    """The wire field whose change alone is not taken for a change."""

    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        for name, entry in registered.items():
            before = link.catalog.get(name)
            if before is None or not before.definition or before.sha256 == entry.sha256:
                continue
            if _without(before.definition, self.ignored) == _without(entry.definition, self.ignored):
                # The defect: an edit of this field alone keeps the hash the tool had, so it is neither recorded
                # nor answered as a change.
                registered[name] = replace(entry, sha256=before.sha256)
        return registered, dropped


class _TitleEditIgnored(_EditIgnored):
    ignored = "title"


class _OutputSchemaEditIgnored(_EditIgnored):
    ignored = "outputSchema"


witness(
    "title_edit_not_a_change",
    ("D9.4", "D9.5"),
    "takes a tool whose title alone changed for unchanged (the title is for display), so it is called and the "
    "change is never recorded",
)(_mcp(_TitleEditIgnored))

witness(
    "output_schema_edit_not_a_change",
    ("D9.4", "D9.5"),
    "takes a tool whose output schema alone changed for unchanged (only its input is checked before a call), so "
    "it is called and the change is never recorded",
)(_mcp(_OutputSchemaEditIgnored))
