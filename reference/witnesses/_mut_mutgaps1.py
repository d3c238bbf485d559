"""Witnesses for gaps the mutation gate found (issue 15): each makes a surviving mutant's mistake through the hooks."""

from __future__ import annotations

from sqlmodel import col, select

from toolproof.reference.hooks import CallState, InvocationTable, Link, McpAdapter, Pipeline, RemoteTool
from toolproof.spec import InvocationStatus, ReasonCode, SideEffect, StepRequest, Tool, ToolSpec, replay_history

from ._registry import witness

# -- D8.6 / D11.6 -----------------------------------------------------------------------------


@witness(
    "rebuilt_call_misses_mcp_pins",
    ("D8.6",),
    "looks a call rebuilt from its row up among the builtins only, so an approved MCP hold ends unknown_tool",
)
class _RebuiltCallMissesMcpPins(Pipeline):
    def lookup(self, run_id: str, name: str) -> tuple[ToolSpec, Tool] | None:
        # The mistake: step 1 asks the adapter for mcp.* names, so the row's look-up "only needs the registry".
        return self.registry.resolve(name)


# -- D5.3 / D15.2 -----------------------------------------------------------------------------


@witness(
    "batch_class_read_from_its_first_call",
    ("D15.2",),
    "reads a batch's classification from its first call as if that call always named a known tool",
)
class _BatchClassReadFromItsFirstCall(Pipeline):
    def qualifies(self, step: StepRequest) -> bool:
        if len(step.calls) < 2:
            return False
        # The mistake: the first member is looked up and indexed without asking whether the look-up found a tool.
        first = self.lookup(step.run_id, step.calls[0].tool_name)[0]  # type: ignore[index]
        if first.side_effect is not SideEffect.READ_ONLY:
            return False
        return super().qualifies(step)


# -- D9.5 -------------------------------------------------------------------------------------


class _ReplaysTwoRecords(McpAdapter):
    async def refresh(self, link: Link) -> None:
        if not link.known:
            history = [c for c in self.history() if c.server_id == link.config.server_id]
            if history:
                # The mistake: history[1] for history[-1] (a one-record history has only its first).
                last = history[min(1, len(history) - 1)].seq
                previous = replay_history(history, up_to_seq=last)
                link.catalog = {n: RemoteTool(n, None, sha, {}) for n, sha in previous.items()}
                link.known = True
        await super().refresh(link)


@witness(
    "fresh_adapter_replays_two_records",
    ("D9.5",),
    "a fresh adapter rebuilds a server's last catalog from its history's first two records, not all of them",
)
class _FreshAdapterReplaysTwoRecords(Pipeline):
    mcp_class = _ReplaysTwoRecords


# -- D14.5 ------------------------------------------------------------------------------------


@witness(
    "breaker_counts_runs_sorting_after",
    ("D14.5",),
    "counts the identical calls of every run whose id sorts at or after the current one",
)
class _BreakerCountsRunsSortingAfter(Pipeline):
    def prior_identical(self, s: CallState) -> list[tuple[InvocationStatus, ReasonCode | None]]:
        with self.store.transaction() as session:
            # The mistake: a range bound (>=, as in keyset paging) where the run should be matched exactly.
            stmt = select(InvocationTable).where(
                col(InvocationTable.run_id) >= s.request.run_id,
                InvocationTable.call_hash == s.call_hash,
            )
            rows = session.exec(stmt).all()
            return [(InvocationStatus(r.status), ReasonCode(r.reason_code) if r.reason_code else None) for r in rows]
