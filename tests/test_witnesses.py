"""The key self-test: every scenario fails against a witness, and the reference passes them all.

Each witness runs only the scenarios of the rules it breaks (in runs shared by a few witnesses of one decision),
which is enough to prove that every scenario can fail and keeps the matrix affordable. The runs are dealt to four
modules (``test_witnesses_part<k>.py``, ``helpers.witness_matrix``), which judge each witness; this module, collected
last, judges the matrix as a whole.
"""

from __future__ import annotations

import pytest
from helpers import Run
from helpers.witness_matrix import CHUNK, PARTS, groups, matrix_runs, partition, scenario_function, spared_failures

from toolproof.reference.witnesses import WITNESSES
from toolproof.spec import Verdict, load_catalog

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def witness_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every witness's run (this module is collected last: the parts' modules have made most of them by now)."""
    return matrix_runs(tmp_path_factory, list(groups()))


def _covered(run: Run) -> set[str]:
    return {r.rule_id for r in run.rows if r.scenario}


def _caught(runs: list[Run]) -> set[str]:
    """The scenario functions that failed for a witness in some cell of ``runs`` (a parametrized scenario's cells
    share one check; a witness must make the check fail, in some cell)."""
    return {
        scenario_function(r.scenario)
        for run in {id(run): run for run in runs}.values()
        for r in run.rows
        if r.verdict is Verdict.FAIL and r.implementation.startswith("witness:")
    }


def test_every_scenario_fails_against_some_witness(
    reference_run: Run, witness_runs: dict[str, Run], tmp_path_factory: pytest.TempPathFactory
) -> None:
    scenarios = {scenario_function(r.scenario) for r in reference_run.rows if r.scenario}
    caught = _caught(list(witness_runs.values()))
    # A matrix run spares a witness's cells once its rules have failed: the scenarios left unfailed run again for
    # the witnesses that spared them.
    again = spared_failures(tmp_path_factory, reference_run.rows, witness_runs, scenarios - caught)
    caught |= _caught([again]) if again is not None else set()
    assert sorted(scenarios - caught) == []


def test_every_crash_mode_and_point_fails_against_some_witness(
    reference_run: Run, witness_runs: dict[str, Run]
) -> None:
    """The crash matrix's checks can fail in every mode that ran, and at every kind of point."""
    cells = {r.scenario for r in reference_run.rows if "crash_at_every_point" in r.scenario}
    caught = {r.scenario for run in witness_runs.values() for r in run.rows if r.verdict is Verdict.FAIL}
    for mode in ("simulated", "sigkill-sqlite"):
        assert any(f"[{mode}-" in c for c in cells & caught), f"no witness fails a {mode} cell"
    for point in ("after_claim", "after_watermark", "after_effect", "after_complete"):
        assert any(f"-{point}-" in c for c in cells & caught), f"no witness fails a cell at {point}"


def test_every_covered_rule_has_a_witness(reference_run: Run) -> None:
    broken = {rule for witness in WITNESSES.values() for rule in witness.breaks}
    assert sorted(_covered(reference_run) - broken) == []


def test_witnesses_name_only_catalog_rules() -> None:
    known = {rule.id for rule in load_catalog().rules}
    assert {rule for w in WITNESSES.values() for rule in w.breaks} <= known


def test_the_parts_hold_every_witness_once() -> None:
    dealt = [name for part in range(PARTS) for key in partition(part) for name in groups()[key]]
    assert sorted(dealt) == sorted(WITNESSES)
    assert all(0 < len(names) <= CHUNK for names in groups().values())
