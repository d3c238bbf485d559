"""Evidence says what was observed before what it suggests: an empty read, a missing refusal."""

from __future__ import annotations

from pathlib import Path

from helpers import run_and_load

from toolproof.spec import Verdict


def _evidence(run_rows: list[object], rule: str) -> str:
    return "\n".join(str(getattr(row, "evidence", "")) for row in run_rows if getattr(row, "rule_id", None) == rule)


def test_d10_1_says_the_read_of_a_runs_rows_came_back_empty(tmp_path: Path) -> None:
    """A port that reads a run's rows by its id still percent-encoded (``run-call_id%7Ctool``) finds none: D10.1
    fails saying the read came back empty, not that the calls got the keys ``[None, None]``."""
    ref = "helpers.fake_pipelines:undecoded_run_ids"
    run = run_and_load(ref, "D10.1", tmp_path)
    assert run.outcome.verdicts["undecoded-run-ids"]["D10.1"] is Verdict.FAIL
    evidence = _evidence(run.rows, "D10.1")
    assert "succeeded in run 'run-call_id|tool', but the read of that run's rows came back empty" in evidence
    assert "over HTTP its path segment must be decoded" in evidence
    assert "keys [None, None]" not in evidence


def test_d14_1_says_no_loop_refusal_was_seen_before_blaming_member_order(tmp_path: Path) -> None:
    """A pipeline that trips the loop a call too late (witness ``loop_at_six``, D14.3) fails D14.1's member-order
    scenario saying no refusal came even for calls in one member order, rather than that order split the calls."""
    run = run_and_load("toolproof.reference.witnesses:loop_at_six", "D14.1", tmp_path)
    rows = [row for row in run.rows if "argument_order" in str(getattr(row, "scenario", ""))]
    evidence = _evidence(rows, "D14.1")
    assert evidence.startswith("D14.1: no loop refusal was seen: 5 calls with the very same arguments")
    assert "so member order could not be judged" in evidence


def test_d14_1_still_blames_member_order_when_the_refusal_is_there(tmp_path: Path) -> None:
    run = run_and_load("toolproof.reference.witnesses:order_sensitive_identity", "D14.1", tmp_path)
    rows = [row for row in run.rows if "argument_order" in str(getattr(row, "scenario", ""))]
    evidence = _evidence(rows, "D14.1")
    assert "calls whose arguments differ only in member order were answered" in evidence
    assert "no loop refusal was seen" not in evidence
