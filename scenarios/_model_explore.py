"""Exploring with generated workloads, and making a diverging one small.

The cells of the model judge (FAMILIES) and their exploration (judge_workloads). A divergence is made
small by dropping actions, calls and tools while it stays.

Hypothesis's own shrinking replays a workload hundreds of times; a workload here opens a store
and runs tools, so the judge reduces greedily instead, within a budget of runs, keeping a
candidate only when it still diverges on a rule the original divergence named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import hypothesis
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from toolproof.spec import Implementation
from toolproof.spec.model import Overlap, Script, Submit, Workload

from ._model_crash import crashed
from ._model_judge import Divergence, Judge
from ._model_mcp import mcp_tour
from ._model_workloads import crash_tour, fault_tours, tour

BUDGET = 60
"""Judge runs a reduction may spend."""


def _diverges(implementation: Implementation, workload: Workload, directory: Path) -> Divergence | None:
    try:
        anyio.run(Judge(implementation, workload, directory).run)
    except Divergence as divergence:
        return divergence
    return None


def _candidates(workload: Workload) -> list[Workload]:
    """Smaller workloads: without one action (last first), one call of a step, one unused tool."""
    out: list[Workload] = []
    actions = list(workload.actions)
    for i in reversed(range(len(actions))):
        out.append(replace(workload, actions=tuple(actions[:i] + actions[i + 1 :])))
    steps = {id(a): a for a in actions if isinstance(a, Submit) and len(a.calls) > 1}  # A replay is the same object.
    for action in steps.values():
        for j in range(len(action.calls)):
            smaller = replace(action, calls=action.calls[:j] + action.calls[j + 1 :])
            out.append(replace(workload, actions=tuple(smaller if a is action else a for a in actions)))
    used = {c.tool_name for a in actions if isinstance(a, Submit | Script) for c in a.calls}
    used |= {c.tool_name for a in actions if isinstance(a, Overlap) for c in a.step.calls}
    for tool in workload.tools:
        if tool.spec.name not in used:
            out.append(replace(workload, tools=tuple(t for t in workload.tools if t is not tool)))
    return out


def reduce(
    implementation: Implementation, workload: Workload, found: Divergence, directory: Path, budget: int = BUDGET
) -> tuple[Workload, Divergence]:
    """A smaller workload that still diverges on one of ``found``'s rules, and its divergence."""
    runs = 0
    progress = True
    while progress and runs < budget:
        progress = False
        for candidate in _candidates(workload):
            if runs >= budget:
                break
            runs += 1
            again = _diverges(implementation, candidate, directory)
            if again is not None and set(again.rules) & set(found.rules):
                workload, found, progress = candidate, again, True
                break
    return workload, found


MCP_RULES = (
    *("D4.2", "D5.3", "D5.7", "D6.1", "D6.2", "D6.3", "D8.1", "D8.8", "D8.9"),
    *("D8.10", "D9.1", "D9.3", "D9.4", "D12.1", "D14.2", "D14.3"),
)
"""The rules the mcp cell judges (``_model_mcp``; the model's page ``mcp``)."""
FAMILIES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "results": (
        ("D1.2", "D1.3", "D1.4", "D1.5", "D6.4", "D12.1", "D12.2", "D12.3", "D12.4", "D12.5", "D2.8"),
        {"max_actions": 3},
    ),
    "steps": (
        ("D3.3", "D3.4", "D3.5", "D3.7", "D13.2", "D13.3", "D13.4", "D13.5", "D13.6", "D15.2", "D15.4", "D5.3"),
        {"max_actions": 6},
    ),
    "store_faults": (("D3.10", "D3.11", "D4.21", "D4.22"), {"max_actions": 3, "faults": True}),
    "crashes": (
        ("D3.2", "D4.3", "D4.4", "D4.5", "D4.6", "D4.8", "D4.12", "D4.14", "D4.15", "D4.16", "D4.18", "D4.19"),
        {"max_actions": 3, "then": crashed},
    ),
    "watermark": (
        ("D4.1", "D4.2", "D4.7", "D4.10", "D4.11", "D4.20", "D10.2", "D2.1", "D2.2", "D2.3", "D2.5", "D2.6"),
        {"max_actions": 4},
    ),
    "keys_breaker": (("D10.1", "D10.3", "D10.4", "D10.5", "D14.2", "D14.3", "D14.4", "D14.5"), {"max_actions": 10}),
    "mcp": (
        MCP_RULES,
        {"max_actions": 8, "mcp": True},
    ),
    "trust_control": (
        ("D11.1", "D11.2", "D11.3", "D11.5", "D11.6", "D11.7", "D16.1", "D16.2", "D16.4"),
        {"max_actions": 8},
    ),
}
"""Cell name -> (the rules a passing cell judged, how its workloads are drawn)."""
FIXED: dict[str, tuple[Workload, ...]] = {
    "crashes": (crash_tour(),),
    "store_faults": fault_tours(),
    "mcp": (mcp_tour(),),
}
"""Cell name -> the workloads it runs, in order, before the tour and the draws, whatever its budget (paths its draws
seldom reach)."""


def judge_workloads(
    implementation: Implementation,
    directory: Path,
    strategy: st.SearchStrategy[Workload],
    examples: int,
    shrink: bool,
    seed: int | None = None,
    fixed: Sequence[Workload] = (),
) -> Divergence | None:
    """Run the tour, ``fixed`` (a cell's ``FIXED``) and ``examples`` workloads (derandomized, or drawn from
    ``seed``); the reduced divergence found, or None."""
    options = settings(
        max_examples=examples,
        deadline=None,
        derandomize=seed is None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
        # Several explicit examples (a cell's fixed workloads, the tour) may each diverge: the first is the verdict,
        # not a group of them (which would read as the harness's error, not a rule's failure).
        report_multiple_bugs=False,
    )
    first: list[tuple[Workload, Divergence]] = []

    @options
    @given(strategy)
    @example(tour())
    def explore(workload: Workload) -> None:
        try:
            anyio.run(Judge(implementation, workload, directory).run)
        except Divergence as divergence:
            first.append((workload, divergence))
            raise

    for workload in reversed(fixed):  # Explicit examples: the outermost runs first, so in the order given.
        explore = example(workload)(explore)
    try:
        (explore if seed is None else hypothesis.seed(seed)(explore))()
    except Divergence:
        workload, divergence = first[0]
        return reduce(implementation, workload, divergence, directory)[1] if shrink else divergence
    return None
