"""Witnesses of the mutation-gate survivors' gaps: a synthetic read tool lost among several server tools of its
name (D8.1), a tail that keeps a part's final character when its cut falls inside it (D12.1)."""

from __future__ import annotations

from collections.abc import Sequence

import mcp_types as types

from toolproof.reference.hooks import STEP_TABLE, CallState, Link, McpAdapter, Pipeline, RemoteTool
from toolproof.spec import EXCERPT_MARKER_SOURCE, READ_RESOURCE, Envelope, Step, Success

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
