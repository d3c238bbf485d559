"""The model judge: generated workloads run through the port, every observable held against spec.model.

Each cell draws workloads weighted towards one family of decisions and runs them through the
implementation with scripted fake tools; after every action the judge compares the dispositions, the
rows and events read back, the metrics, and what the fake world and the tools themselves saw, with
what the model allows. A divergence is reduced (actions, calls and tools dropped while it stays, within a budget of runs), and every rule
the model's branches name for it fails, with "model allowed ..., implementation gave ..." and the
workload as evidence. Examples per cell: the exploration profile's ``model_examples``
(``TOOLPROOF_HYPOTHESIS_PROFILE``: dev 5, ci 20, thorough 2,000), derandomized, so a cell's command
line reproduces its verdict. What the model covers, and what it does not: docs/model.md.
"""

from __future__ import annotations

import anyio
import pytest

from ._exploration import selected_exploration
from ._harness import Harness
from ._model_explore import FAMILIES, judge_workloads
from ._model_workloads import workloads


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
    )
    if found is None:
        return
    harness.log.append(f"model judge, cell {family}: {exploration.model_examples} workloads (derandomized)")
    for rule, message in found.problems:
        harness._violated(rule, f"{message}\nthe shrunk workload (cell {family}):\n{found.workload}")
