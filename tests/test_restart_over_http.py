"""A store kept only in the driver's memory never passes a rule that needs a restart or a separate reader."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import run_and_load, served_driver

from toolproof.driver import child_command
from toolproof.spec import Verdict, load_catalog

TESTS = Path(__file__).resolve().parent
RULES = ("D3.8", "D11.8")
"""A separate reader (D3.8) and a restart over the same store (D11.8): behind a driver, instances of its process."""


@pytest.fixture
def memory_driver() -> Iterator[str]:
    """``helpers.fake_pipelines:memory_store`` (the reference, its store living as long as its process), served."""
    # Rooted at the temp folder: the harness's stores and workspaces are under it.
    root = Path(tempfile.gettempdir())
    with served_driver(
        lambda port: child_command("helpers.fake_pipelines:memory_store", port, root, [], supervised=False), TESTS
    ) as url:
        yield url


@pytest.mark.slow
def test_a_store_in_the_drivers_memory_never_passes_a_restart_rule(memory_driver: str, tmp_path: Path) -> None:
    run = run_and_load(memory_driver, ",".join(RULES), tmp_path / "out")
    [verdicts] = run.outcome.verdicts.values()
    assert {rule: verdicts[rule] for rule in RULES} == dict.fromkeys(RULES, Verdict.NOT_COVERED)
    for rule in RULES:
        reason = load_catalog().rule(rule).over_http
        assert reason
        evidence = {row.evidence for row in run.rows if row.rule_id == rule}
        assert evidence == {f"not covered here: over the driver protocol: {reason}"}


def test_the_same_store_passes_in_process_where_the_restart_rules_are_judged(tmp_path: Path) -> None:
    """The fake is a working pipeline: in one process its store holds what it wrote (judged by reopening it)."""
    run = run_and_load("helpers.fake_pipelines:memory_store", ",".join(RULES), tmp_path / "out")
    assert {rule: run.outcome.verdicts["memory-store"][rule] for rule in RULES} == dict.fromkeys(RULES, Verdict.PASS)
