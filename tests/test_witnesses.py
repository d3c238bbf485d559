"""The key self-test: every scenario fails against a witness, and the reference passes them all.

Each witness runs only the scenarios of the decisions it breaks (a run per witness), which
is enough to prove that every scenario can fail and keeps the matrix affordable. The runs are
split in two halves (this module and ``test_witnesses_more.py``), so two xdist workers share them.
"""

from __future__ import annotations

import pytest
from helpers import Run, shared_root, shared_run

from toolproof.reference.witnesses import WITNESSES
from toolproof.spec import Verdict, load_catalog

pytestmark = pytest.mark.slow


SOLO_DECISIONS = frozenset({"D4", "D17"})
"""Decisions whose scenarios include a crash matrix: their witnesses run alone, on their own rules only."""


def _groups() -> dict[str, list[str]]:
    """Witnesses that share a run: those of one decision, which each run the union of the group's rules. A witness
    seen through another decision's scenarios (``Witness.through``) runs alone, on its own selection."""
    groups: dict[str, list[str]] = {}
    for name, witness in WITNESSES.items():
        decision = witness.breaks[0].split(".")[0]
        groups.setdefault(name if decision in SOLO_DECISIONS or witness.through else decision, []).append(name)
    return groups


def partition(half: int) -> list[str]:
    """The groups one of the two witness modules runs: every other group, so each xdist worker runs about half
    the matrix (this module runs half 0 and then reads half 1, which ``test_witnesses_more.py`` runs)."""
    return list(_groups())[half::2]


def group_run(factory: pytest.TempPathFactory, key: str) -> Run:
    """The run of one group, made once per session by whichever worker asks first."""
    names = _groups()[key]
    rules = sorted({rule for name in names for rule in WITNESSES[name].selection.split(",")})
    impls = [f"toolproof.reference.witnesses:{name}" for name in names]
    return shared_run(shared_root(factory, "witness-runs"), key, impls, ",".join(rules))


@pytest.fixture(scope="module")
def witness_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every witness's run: this module's half first, then the other half, from its end: the other worker makes it
    from its start meanwhile, so whichever worker finishes first takes over the other's last groups."""
    runs = {}
    for key in partition(0) + partition(1)[::-1]:
        run = group_run(tmp_path_factory, key)
        runs.update(dict.fromkeys(_groups()[key], run))
    return runs


def _covered(run: Run) -> set[str]:
    return {r.rule_id for r in run.rows if r.scenario}


def test_reference_passes_every_covered_rule(reference_run: Run) -> None:
    covered = _covered(reference_run)
    assert covered, "no scenario ran against the reference"
    verdicts = reference_run.outcome.verdicts["reference"]
    assert {r: v for r, v in verdicts.items() if r in covered and v is not Verdict.PASS} == {}
    assert reference_run.outcome.exit_code == 0


def _function(scenario: str) -> str:
    """A parametrized scenario's cells share one check; a witness must make the check fail, in some cell."""
    return scenario.split("[", 1)[0]


def test_every_scenario_fails_against_some_witness(reference_run: Run, witness_runs: dict[str, Run]) -> None:
    scenarios = {_function(r.scenario) for r in reference_run.rows if r.scenario}
    caught = {
        _function(r.scenario)
        for run in {id(run): run for run in witness_runs.values()}.values()
        for r in run.rows
        if r.verdict is Verdict.FAIL and r.implementation.startswith("witness:")
    }
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


def judge_witness(name: str, run: Run) -> None:
    """The witness is rejected on every rule it breaks, and its report names each."""
    witness = WITNESSES[name]
    verdicts = run.outcome.verdicts[f"witness:{name}"]
    assert {rule: verdicts[rule] for rule in witness.breaks} == dict.fromkeys(witness.breaks, Verdict.FAIL)
    assert run.outcome.exit_code == 1
    report = (run.out / "report.md").read_text()
    for rule in witness.breaks:
        assert f"### witness:{name}: {rule}," in report
    assert "reproduction:" in report


@pytest.mark.parametrize("name", [name for key in partition(0) for name in _groups()[key]])
def test_witness_is_rejected_on_the_rules_it_breaks(name: str, witness_runs: dict[str, Run]) -> None:
    judge_witness(name, witness_runs[name])


def test_the_two_halves_hold_every_witness_once() -> None:
    halves = [name for half in (0, 1) for key in partition(half) for name in _groups()[key]]
    assert sorted(halves) == sorted(WITNESSES)
