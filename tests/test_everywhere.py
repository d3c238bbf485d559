"""The harness's checks on everything a scenario observes (``Rule.everywhere``): a violation seen in another
decision's scenario fails the rule in that cell, only when the rule is selected, and its rerun command reruns it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from helpers import Run, run_and_load
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof.reference.witnesses import WITNESSES
from toolproof.reports import load_run
from toolproof.spec import Verdict, load_catalog

pytestmark = pytest.mark.slow

WITNESS = "toolproof.reference.witnesses:expired_approval_retryable"


@pytest.fixture(scope="module")
def seen_through_d11(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return run_and_load([WITNESS], "D13.2,D11.7", tmp_path_factory.mktemp("d11"))


def test_the_rules_checked_everywhere_are_named_in_the_catalog() -> None:
    everywhere = {rule.id for rule in load_catalog().rules if rule.everywhere}
    assert everywhere == {"D3.7", "D13.2", "D13.3", "D13.4"}


def test_a_violation_seen_in_another_decisions_scenario_fails_the_rule_in_that_cell(seen_through_d11: Run) -> None:
    rows = seen_through_d11.rows
    failing = [row for row in rows if row.rule_id == "D13.2" and row.verdict is Verdict.FAIL]
    assert failing, "the witness's flipped retryable was never rejected"
    # Seen where approvals expire (decision 11's scenarios), with what the table says and what came instead; the
    # model's cells, whose tour lets an approval expire, reject it there too, by their own comparison.
    assert all(row.scenario.startswith(("test_d11_", "test_model.py::")) for row in failing)
    seen = [row for row in failing if row.scenario.startswith("test_d11_")]
    assert seen, "the check never rejected it in decision 11's scenarios"
    assert all("retryable=True; the table assigns DENIED and retryable=False" in row.evidence for row in seen)
    assert all("seen by the check the harness makes on everything a scenario observes" in r.evidence for r in seen)
    # The scenario's own rules keep their own verdicts: the witness breaks nothing decision 11 asks.
    own = {row.rule_id: row.verdict for row in rows if row.rule_id.startswith("D11.")}
    assert set(own.values()) == {Verdict.PASS}
    assert seen_through_d11.outcome.verdicts[f"witness:{WITNESSES['expired_approval_retryable'].name}"]["D13.2"] is (
        Verdict.FAIL
    )
    assert seen_through_d11.outcome.exit_code == 1


def test_a_rule_not_selected_is_not_judged_by_the_check(tmp_path: Path) -> None:
    run = run_and_load([WITNESS], "D11.7", tmp_path / "d11-only")
    assert {row.rule_id.split(".")[0] for row in run.rows} == {"D11"}
    assert run.outcome.exit_code == 0


def test_the_rerun_command_of_such_a_failure_reruns_exactly_that_cell(seen_through_d11: Run, tmp_path: Path) -> None:
    row = next(r for r in seen_through_d11.rows if r.rule_id == "D13.2" and r.scenario.startswith("test_d11_"))
    report = (seen_through_d11.out / "report.md").read_text(encoding="utf-8")
    commands = [shlex.split(c) for c in re.findall(r"^Rerun: `(.+)`$", report, flags=re.MULTILINE)]
    words = next(w for w in commands if w[w.index("--cell") + 1] == row.scenario)
    assert words[words.index("--rules") + 1] == "D13.2"
    assert words[words.index("--impl") + 1] == WITNESS
    words[-1] = str(tmp_path / "rerun")
    result = CliRunner().invoke(app, ["run", "-q", *words[2:]])
    assert result.exit_code == 1, result.output
    info, rows = load_run(tmp_path / "rerun")
    assert info.selected_rules == ["D13.2"]
    assert [(r.rule_id, r.scenario, r.verdict) for r in rows] == [("D13.2", row.scenario, Verdict.FAIL)]
