"""Part 1 of the witness matrix (``helpers.witness_matrix``): each witness of this part is rejected on the rules it
breaks. The part's runs are made when its first test asks; a worker that runs this module takes over unstarted runs of
other parts too, so every worker stays busy while the matrix has work left."""

from __future__ import annotations

import pytest
from helpers import Run
from helpers.witness_matrix import groups, judge_witness, matrix_runs, partition

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def witness_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    return matrix_runs(tmp_path_factory, partition(1))


@pytest.mark.parametrize("name", [name for key in partition(1) for name in groups()[key]])
def test_witness_is_rejected_on_the_rules_it_breaks(name: str, witness_runs: dict[str, Run]) -> None:
    judge_witness(name, witness_runs[name])
