"""A crash point inside step 10 is the harness's tool dying: an implementation that lives on is told so.

The instance's crash plan is null there; the implementation must notice its tool died (in-process: the
``SimulatedCrash`` out of ``execute``; over HTTP: the tool host answering ``crash``, or vanishing mid-execute under
SIGKILL) and die too. The fake ``helpers.fake_pipelines:lives_on_tool_crash`` completes the call FAILED
``tool_crashed`` instead, which the old evidence reported only as "ended FAILED tool_crashed; expected SUCCEEDED".
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import run_and_load, served_driver

from toolproof._run import run_suite
from toolproof.reports import load_run

TESTS = Path(__file__).resolve().parent
FAKE = "helpers.fake_pipelines:lives_on_tool_crash"
SCENARIO = "test_d04_recovery.py::test_crash_at_every_point_is_recovered_by_the_watermark"
LIVED_ON = "yet the implementation lived on: "


def _evidence(rows: list[object]) -> str:
    return "\n".join(str(getattr(row, "evidence", "")) for row in rows)


def test_an_implementation_that_lives_on_after_its_tool_died_is_told_which_crash_was_expected(tmp_path: Path) -> None:
    cell = f"{SCENARIO}[simulated-before_watermark-IDEMPOTENT-single-allow-sweep]"
    outcome = run_suite([FAKE], None, tmp_path, cells=[cell])
    evidence = _evidence(load_run(tmp_path, outcome.run_id)[1])
    assert (
        "the crash expected was the harness's tool dying at before_watermark, inside step 10 (raise: the instance's "
        'crash plan was null and the tool host answered crash "raise"), ' + LIVED_ON + "it answered call-0 FAILED "
        "tool_crashed and before any recovery call-0's row was already FAILED tool_crashed"
    ) in evidence


def test_the_reference_dies_with_its_tool(tmp_path: Path) -> None:
    run = run_and_load("reference", "D4.3", tmp_path)
    assert LIVED_ON not in _evidence(run.rows)


@pytest.fixture
def served_fake() -> Iterator[str]:
    """The fake behind the driver protocol, under the supervisor (as ``serve-reference --impl`` runs it)."""
    with served_driver(
        lambda port: [
            *(sys.executable, "-m", "toolproof", "serve-reference", "--impl", FAKE),
            *("--port", str(port), "--root", tempfile.gettempdir()),
        ],
        TESTS,
    ) as url:
        yield url


@pytest.mark.slow
def test_a_driver_that_lives_on_when_its_tool_host_vanishes_is_told_so(served_fake: str, tmp_path: Path) -> None:
    """SIGKILL over HTTP: the harness's worker dies inside the tool, so the driver's execute loses its tool host; a
    driver that records FAILED tool_crashed then is told that it lived on, and which crash was expected."""
    cell = f"{SCENARIO}[sigkill-sqlite-after_watermark-NON_IDEMPOTENT-single-allow-sweep]"
    outcome = run_suite([served_fake], None, tmp_path, cells=[cell])
    evidence = _evidence(load_run(tmp_path, outcome.run_id)[1])
    assert (
        "the crash expected was the harness's tool dying at after_watermark, inside step 10 (sigkill: the instance's "
        "crash plan was null and its tool host vanished mid-execute), " + LIVED_ON + "before any recovery call-0's "
        "row was already UNCERTAIN effect_unknown"
    ) in evidence
