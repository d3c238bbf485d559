"""Round 2, decision 18: pins plus catalog history, no snapshots table."""

from __future__ import annotations

from toolproof.reference.hooks import CatalogHistoryTable, McpAdapter, Pipeline, ReferenceImplementation
from toolproof.spec import CatalogChangeKind

from ._common import impl


class _ChangedWithoutHash(McpAdapter):
    def record(self, changes: list[CatalogHistoryTable]) -> None:
        for change in changes:
            if change.kind == CatalogChangeKind.CHANGED.value:
                # The mistake: a "changed" entry notes that the tool changed; its new hash "is in the session pins".
                change.definition_sha256 = None
        super().record(changes)


class _ChangedWithoutHashPipeline(Pipeline):
    mcp_class = _ChangedWithoutHash


def changed_recorded_without_hash() -> ReferenceImplementation:
    """D18 "with the MCP catalog history that fully answers what did this session advertise": a changed definition
    is recorded in the history without its new hash, so replaying the history to a later session's as_of_seq gives
    the old hash where that session pinned the new one."""
    return impl("r2-d18-changed-recorded-without-hash", _ChangedWithoutHashPipeline)
