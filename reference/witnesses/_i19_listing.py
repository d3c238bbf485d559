"""Witnesses of issue 19's listing reuse (D9.4): each reuses a server's listing where the rule says list again."""

from __future__ import annotations

from toolproof.reference.hooks import Link, McpAdapter, Pipeline
from toolproof.spec import IdempotencyClass, SideEffect, ToolSpec

from ._registry import witness


def _mcp(adapter: type[McpAdapter]) -> type[Pipeline]:
    return type(f"_{adapter.__name__}Pipeline", (Pipeline,), {"mcp_class": adapter})


class _NeverRelists(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        # The defect: once a server is listed, every call runs on that listing, a consequential one included.
        return not link.lost and link.listed_at is not None


witness(
    "listing_reused_for_writes",
    ("D9.4",),
    "never lists a server again after its first listing, so a silently changed tool is called by a consequential call",
)(_mcp(_NeverRelists))


class _AgelessReads(McpAdapter):
    def reusable(self, link: Link, spec: ToolSpec) -> bool:
        # The defect: a read reuses any listing not invalidated by a notice, however old.
        read = spec.side_effect is SideEffect.READ_ONLY and spec.idempotency is IdempotencyClass.IDEMPOTENT
        return read and not link.lost and link.listed_at is not None


witness(
    "listing_max_age_ignored",
    ("D9.4",),
    "lets an idempotent read reuse a listing past listing_max_age_s, so a silent change is never caught by reads",
)(_mcp(_AgelessReads))


class _NoticeKeepsListing(McpAdapter):
    def invalidate(self, link: Link) -> None:
        # The defect: tools/list_changed is recorded, but the listing before it stays fresh.
        return None


witness(
    "list_changed_not_invalidating",
    ("D9.4",),
    "records tools/list_changed but keeps reusing the listing from before it for idempotent reads",
)(_mcp(_NoticeKeepsListing))
