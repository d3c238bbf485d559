"""The second half of the witness matrix (``test_witnesses.partition(1)``), on its own module so that another
xdist worker runs it while ``test_witnesses.py`` runs the first half; each group's run is made once per session."""

from __future__ import annotations

import pytest
from test_witnesses import _groups, group_run, judge_witness, partition

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", [name for key in partition(1) for name in _groups()[key]])
def test_witness_is_rejected_on_the_rules_it_breaks(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    key = next(key for key, names in _groups().items() if name in names)
    judge_witness(name, group_run(tmp_path_factory, key))
