"""``run_suite(impl_rules=…)``: an implementation of a side-by-side run judged only on rules of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Run, run_and_load

from toolproof._run import run_suite
from toolproof.spec import ConfigurationError, Verdict

WITNESS = "toolproof.reference.witnesses:registry_snapshots"
"""Breaks D18.1 only."""


def test_a_narrowed_implementation_runs_only_the_cells_of_its_own_rules(tmp_path: Path) -> None:
    run = run_and_load(["reference", WITNESS], "D18", tmp_path / "out", {WITNESS: "D18.1"})
    mine = [row for row in run.rows if row.implementation == "witness:registry_snapshots" and row.scenario]
    theirs = [row for row in run.rows if row.implementation == "reference" and row.scenario]
    assert mine, "the narrowed witness ran no cell"
    assert {row.rule_id for row in theirs} >= {"D18.1", "D18.2"}
    # Every cell it ran judges D18.1; the reference's cells that judge only D18.2 are not among them.
    by_cell: dict[str, set[str]] = {}
    for row in theirs:
        by_cell.setdefault(row.scenario, set()).add(row.rule_id)
    assert {row.scenario for row in mine} == {cell for cell, rules in by_cell.items() if "D18.1" in rules}
    assert {cell for cell, rules in by_cell.items() if "D18.1" not in rules}, "D18 has no cell outside D18.1 here"
    verdicts = run.outcome.verdicts
    assert verdicts["witness:registry_snapshots"]["D18.1"] is Verdict.FAIL
    assert verdicts["witness:registry_snapshots"]["D18.2"] is Verdict.NOT_COVERED
    assert verdicts["reference"] == {"D18.1": Verdict.PASS, "D18.2": Verdict.PASS}


def test_a_narrowing_for_an_implementation_not_in_the_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not one of the implementations"):
        run_suite(["reference"], "D18", tmp_path / "out", impl_rules={WITNESS: "D18.1"})
    assert not (tmp_path / "out" / "results.duckdb").exists()


def test_a_narrowing_to_an_unknown_rule_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"D18\.99"):
        run_suite(["reference", WITNESS], "D18", tmp_path / "out", impl_rules={WITNESS: "D18.99"})


UNRECORDED = "toolproof.reference.witnesses:first_listing_unrecorded"
"""Breaks D18.2: fails both cells of the paginated-history scenario."""
PAGINATED = "test_d09_catalog.py::test_history_of_a_paginated_catalog_answers_the_whole_catalog"


def _cells(run: Run, scenario: str) -> list[tuple[str, str]]:
    return [
        (row.scenario, row.verdict.value)
        for row in run.rows
        if row.scenario.split("[", 1)[0] == scenario and row.implementation == "witness:first_listing_unrecorded"
    ]


def test_first_failure_runs_no_more_cells_of_a_scenario_that_failed(tmp_path: Path) -> None:
    every = run_and_load([UNRECORDED], "D18.2", tmp_path / "every")
    first = run_and_load([UNRECORDED], "D18.2", tmp_path / "first", first_failure=True)
    assert [verdict for _, verdict in _cells(every, PAGINATED)] == ["fail", "fail"]
    assert [verdict for _, verdict in _cells(first, PAGINATED)] == ["fail"]
    # The verdicts are the run's all the same, and a scenario that passes runs every cell.
    assert first.outcome.verdicts == every.outcome.verdicts
    assert first.outcome.exit_code == every.outcome.exit_code == 1


PROMPTS_AS_TOOLS = "toolproof.reference.witnesses:prompts_named_as_tools"
"""Breaks D5.9: fails more than one of its scenarios."""


def _failed_scenarios(run: Run) -> set[str]:
    return {row.scenario.split("[", 1)[0] for row in run.rows if row.verdict is Verdict.FAIL}


def test_first_rule_failure_runs_no_more_cells_of_a_rule_that_failed(tmp_path: Path) -> None:
    every = run_and_load([PROMPTS_AS_TOOLS], "D5.9", tmp_path / "every", first_failure=True)
    first = run_and_load([PROMPTS_AS_TOOLS], "D5.9", tmp_path / "first", first_failure=True, first_rule_failure=True)
    assert len(_failed_scenarios(every)) > 1
    assert len(_failed_scenarios(first)) == 1
    assert {row.scenario for row in first.rows} < {row.scenario for row in every.rows}
    # The witness is rejected on the rule all the same.
    assert first.outcome.verdicts == every.outcome.verdicts
    assert first.outcome.exit_code == every.outcome.exit_code == 1
