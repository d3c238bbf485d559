"""The model judge: generated workloads run through the port, every observable held against spec.model.

Each cell draws workloads weighted towards one family of decisions and runs them through the
implementation with scripted fake tools; after every action the judge compares the dispositions, the
rows and events read back, the metrics, and what the fake world and the tools themselves saw, with
what the model allows. A divergence is reduced (actions, calls and tools dropped while it stays, within a budget of runs), and every rule
the model's branches name for it fails, with "model allowed ..., implementation gave ..." and the
workload as evidence. Examples per cell: the exploration profile's ``model_examples``
(``TOOLPROOF_HYPOTHESIS_PROFILE``: dev 5, ci 12, thorough 2,000), derandomized, so a cell's command
line reproduces its verdict. What the model covers, and what it does not: docs/model.md.
"""

from __future__ import annotations

import anyio
import pytest

from toolproof.spec import HarnessError

from ._exploration import selected_exploration
from ._harness import Harness
from ._model_explore import FAMILIES, FIXED, judge_workloads
from ._model_workloads import workloads

JUDGED = frozenset(
    # Written out, so the plugin's may_judge reads from this module's text which rules its cells judge.
    {
        "D1.2", "D1.3", "D1.4", "D1.5", "D2.1", "D2.2", "D2.3", "D2.5", "D2.6", "D2.8", "D3.2", "D3.3", "D3.4", "D3.5",
        "D3.7", "D3.10", "D3.11", "D4.1", "D4.2", "D4.3", "D4.4", "D4.5", "D4.6", "D4.7", "D4.8", "D4.10", "D4.11",
        "D4.12", "D4.14", "D4.15", "D4.16", "D4.18", "D4.19", "D4.20", "D4.21", "D4.22", "D5.3",
        "D5.7", "D6.1", "D6.2", "D6.3", "D6.4", "D8.1", "D8.8", "D8.9", "D8.10", "D9.1", "D9.3", "D9.4", "D10.1", "D10.2", "D10.3", "D10.4", "D10.5", "D11.1", "D11.2", "D11.3", "D11.5", "D11.6", "D11.7",
        "D12.1", "D12.2", "D12.3", "D12.4", "D12.5", "D13.2", "D13.3", "D13.4", "D13.5", "D13.6", "D14.2", "D14.3",
        "D14.4", "D14.5", "D15.2", "D15.4", "D16.1", "D16.2", "D16.4",
    }
)  # fmt: skip
if {rule for rules, _ in FAMILIES.values() for rule in rules} != JUDGED:
    raise HarnessError("scenarios/test_model.py: JUDGED differs from the rules of _model_explore.FAMILIES")


@pytest.mark.parametrize(
    "family", [pytest.param(name, marks=pytest.mark.rules(*rules)) for name, (rules, _) in sorted(FAMILIES.items())]
)
async def test_the_model_allows_what_the_implementation_does(harness: Harness, family: str) -> None:
    _, shape = FAMILIES[family]
    exploration = selected_exploration()
    found = await anyio.to_thread.run_sync(
        judge_workloads,
        harness.implementation,
        harness.directory,
        workloads(**shape),
        exploration.model_examples,
        exploration.shrink,
        None,
        FIXED.get(family, ()),
    )
    if found is None:
        return
    harness.log.append(f"model judge, cell {family}: {exploration.model_examples} workloads (derandomized)")
    for rule, message in found.problems:
        harness._violated(rule, f"{message}\nthe shrunk workload (cell {family}):\n{found.workload}")
