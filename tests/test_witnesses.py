"""The key self-test: every scenario fails against a witness, and the reference passes them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof._run import RunOutcome, run_suite
from toolproof.reference.witnesses import WITNESSES, Witness
from toolproof.reports import ResultRow, load_run
from toolproof.spec import Verdict, load_catalog

WITNESS_REFS = [f"toolproof.reference.witnesses:{name}" for name in WITNESSES]


@pytest.fixture(scope="module")
def everyone(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunOutcome, list[ResultRow]]:
    """One run of every scenario against the reference and every witness."""
    out = tmp_path_factory.mktemp("everyone")
    outcome = run_suite(["reference", *WITNESS_REFS], None, out)
    _, rows = load_run(out, outcome.run_id)
    return outcome, rows


def _covered(rows: list[ResultRow]) -> set[str]:
    return {r.rule_id for r in rows if r.implementation == "reference" and r.scenario}


@pytest.mark.slow
def test_reference_passes_every_covered_rule(everyone: tuple[RunOutcome, list[ResultRow]]) -> None:
    outcome, rows = everyone
    covered = _covered(rows)
    assert covered, "no scenario ran against the reference"
    not_passing = {r: v for r, v in outcome.verdicts["reference"].items() if r in covered and v is not Verdict.PASS}
    assert not_passing == {}


@pytest.mark.slow
def test_every_scenario_fails_against_some_witness(everyone: tuple[RunOutcome, list[ResultRow]]) -> None:
    _, rows = everyone
    scenarios = {r.scenario for r in rows if r.implementation == "reference" and r.scenario}
    caught = {r.scenario for r in rows if r.implementation.startswith("witness:") and r.verdict is Verdict.FAIL}
    assert sorted(scenarios - caught) == []


@pytest.mark.slow
def test_every_covered_rule_has_a_witness(everyone: tuple[RunOutcome, list[ResultRow]]) -> None:
    _, rows = everyone
    broken = {rule for witness in WITNESSES.values() for rule in witness.breaks}
    assert sorted(_covered(rows) - broken) == []


def test_witnesses_name_only_catalog_rules() -> None:
    known = {rule.id for rule in load_catalog().rules}
    assert {rule for w in WITNESSES.values() for rule in w.breaks} <= known


@pytest.mark.parametrize("witness", list(WITNESSES.values()), ids=list(WITNESSES))
def test_witness_is_rejected_on_the_rules_it_breaks(witness: Witness, tmp_path: Path) -> None:
    decisions = sorted({rule.split(".")[0] for rule in witness.breaks})
    outcome = run_suite([f"toolproof.reference.witnesses:{witness.name}"], ",".join(decisions), tmp_path)
    verdicts = outcome.verdicts[f"witness:{witness.name}"]
    assert {rule: verdicts[rule] for rule in witness.breaks} == {rule: Verdict.FAIL for rule in witness.breaks}
    assert outcome.exit_code == 1
    report = (tmp_path / "report.md").read_text()
    for rule in witness.breaks:
        assert f"### witness:{witness.name}: {rule}," in report
    assert "reproduction:" in report
