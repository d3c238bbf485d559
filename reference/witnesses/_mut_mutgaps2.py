"""Witnesses of the mutation-gate survivors' gaps: a synthetic read tool lost among several server tools of its
name (D8.1), a tail that keeps a part's final character when its cut falls inside it (D12.1), a lease claim that
compares the lease's owner but not the status it read (D4.9)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types
from sqlmodel import col, update

from toolproof.reference.hooks import (
    STEP_TABLE,
    CallState,
    InvocationTable,
    Link,
    McpAdapter,
    Pipeline,
    RemoteTool,
    Store,
)
from toolproof.spec import EXCERPT_MARKER_SOURCE, READ_RESOURCE, Envelope, EventKind, Step, Success

from ._registry import witness

# -- D8.1 -------------------------------------------------------------------------------------------------------


class _SyntheticAmongClaimants(McpAdapter):
    def register(self, link: Link, tools: Sequence[types.Tool]) -> tuple[dict[str, RemoteTool], set[str]]:
        registered, dropped = super().register(link, tools)
        synthetic = link.prefix + READ_RESOURCE
        claimants = [tool for tool in tools if link.prefix + self.normalize(tool.name) == synthetic]
        if link.resources and len(claimants) > 1:
            # The defect: the synthetic definition joins its name's group in front of the last server tool, not at
            # its head; with two or more server tools there a server tool heads the group, and the collision drops
            # the whole group, the synthetic read tool with it.
            registered.pop(synthetic, None)
        return registered, dropped


@witness(
    "read_resource_lost_among_claimants",
    ("D8.1",),
    "drops the synthetic read tool when two or more server tools normalize to read_resource",
)
class _ReadResourceLostAmongClaimants(Pipeline):
    mcp_class = _SyntheticAmongClaimants


# -- D12.1 ------------------------------------------------------------------------------------------------------

_excerpt = STEP_TABLE[Step.EXCERPT]


def _utf8_size(text: str) -> int:
    # ASCII text is measured without encoding it (an excerpted output is not to be copied).
    return len(text) if text.isascii() else len(text.encode())


async def _excerpt_keeping_final_characters(p: Pipeline, s: CallState) -> None:
    original = s.disposition.content if isinstance(s.disposition, Success) else []
    await _excerpt(p, s)
    if not isinstance(s.disposition, Success):
        return
    content = s.disposition.content
    markers = [at for at, e in enumerate(content) if e.source == EXCERPT_MARKER_SOURCE]
    if not markers:
        return  # Delivered whole.
    limit = p.config.max_output_bytes
    sizes = [_utf8_size(e.text) for e in original]
    cut = sum(sizes) - (limit - limit // 2)  # The tail's first byte, as the reference budgets it.
    start = 0
    for e, size in zip(original, sizes, strict=True):
        end = start + size
        if start < cut < end:
            final = e.text[-1]
            if end - len(final.encode()) < cut:
                # The defect: a part's end is taken for a boundary the tail may not cut short, so a cut inside the
                # part's final character keeps that whole character, over the tail's budget.
                piece = Envelope(trust=e.trust, source=e.source, text=final)
                at = markers[0] + 1
                s.disposition = s.disposition.model_copy(update={"content": [*content[:at], piece, *content[at:]]})
            return
        start = end


@witness(
    "tail_keeps_a_parts_final_character",
    ("D12.1",),
    "keeps the whole final character of a part when the tail's cut falls inside it, over the limit",
)
class _TailKeepsAPartsFinalCharacter(Pipeline):
    steps = STEP_TABLE | {Step.EXCERPT: _excerpt_keeping_final_characters}


# -- D4.9 -------------------------------------------------------------------------------------------------------


class _OwnerOnlyClaims(Store):
    """The instance's own store (its engine and every method), but a claim's compare-and-set leaves the status out."""

    def __init__(self, inner: Store) -> None:  # Shares the inner store's engine rather than opening its own.
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def claim(
        self, invocation_id: str, *, expect_status: str, expect_owner: str | None, changes: dict[str, Any]
    ) -> bool:
        # The defect: "nobody holds the lease" is taken for "nobody ran it": the row's status is not compared with
        # the one the claim was read in, so a row another worker completed (and so released) since is taken again.
        owner = col(InvocationTable.lease_owner)
        held = owner.is_(None) if expect_owner is None else owner == expect_owner
        mine = col(InvocationTable.invocation_id) == invocation_id
        with self.inner.engine.begin() as connection:
            if connection.execute(update(InvocationTable).where(mine, held).values(**changes)).rowcount != 1:
                return False
        self.inner.update(invocation_id, {}, [EventKind.STARTED])
        return True


@witness(
    "claim_ignores_the_status_read",
    ("D4.9",),
    "claims a row whose lease is free whatever status it reached since it was read, so a completed call runs again",
)
class _ClaimIgnoresTheStatusRead(Pipeline):
    def __init__(self, *, store: Store, **parts: Any) -> None:
        super().__init__(store=_OwnerOnlyClaims(store), **parts)
