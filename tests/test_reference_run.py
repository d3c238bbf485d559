"""The reference passes every rule some scenario covers, in one whole run (shared with ``test_witnesses.py``)."""

from __future__ import annotations

import pytest
from helpers import Run

from toolproof.spec import Verdict

pytestmark = pytest.mark.slow


def test_reference_passes_every_covered_rule(reference_run: Run) -> None:
    covered = {r.rule_id for r in reference_run.rows if r.scenario}
    assert covered, "no scenario ran against the reference"
    verdicts = reference_run.outcome.verdicts["reference"]
    assert {r: v for r, v in verdicts.items() if r in covered and v is not Verdict.PASS} == {}
    assert reference_run.outcome.exit_code == 0
