"""Decision 4's CI profile: the complete crash matrix, 200 lease races on PostgreSQL, 200 state-machine examples.

Under the ``thorough`` marker (``nox -s model``), out of the default run to keep CI within 30 minutes: the whole
suite against the reference (``test_reference_run.py``) runs the same crash matrix on SQLite, simulated and SIGKILL,
with the ci profile's races; what only this test adds is the PostgreSQL half and the grid's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof._run import run_suite
from toolproof.reports import load_crash_cells, load_run
from toolproof.scenarios import PROFILE_VARIABLE, selected_exploration
from toolproof.spec import CrashPoint, IdempotencyClass, Verdict, load_catalog

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.thorough]


def test_recovery_passes_with_a_complete_crash_matrix(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROFILE_VARIABLE, "ci")
    assert selected_exploration().races >= 200
    outcome = run_suite(["reference"], "D4", tmp_path, database_url=postgres_url)

    d4 = [rule.id for rule in load_catalog().rules if rule.decision == 4 and rule.profile.value != "contract"]
    assert {rule: outcome.verdicts["reference"][rule] for rule in d4} == dict.fromkeys(d4, Verdict.PASS)

    cells = load_crash_cells(tmp_path, outcome.run_id)
    grid = {(c.mode, c.crash_point, c.idempotency, c.position, c.path, c.recovery) for c in cells}
    for mode, positions in (
        ("simulated", ("single", "first", "middle", "last")),
        ("sigkill-sqlite", ("single",)),
        ("sigkill-postgres", ("single",)),
    ):
        for point in CrashPoint:
            for idempotency in IdempotencyClass:
                for position in positions:
                    assert (mode, point.value, idempotency.value, position, "allow", "sweep") in grid
                if mode == "simulated":
                    assert (mode, point.value, idempotency.value, "single", "allow", "replay") in grid
    held_sigkill = ("after_record", "after_hold", "after_claim", "after_effect")
    for path in ("approval", "control"):
        for point in CrashPoint:
            for recovery in ("sweep", "replay"):
                assert ("simulated", point.value, "NON_IDEMPOTENT", "single", path, recovery) in grid
        for mode in ("sigkill-sqlite", "sigkill-postgres"):
            for point_name in held_sigkill:
                assert (mode, point_name, "NON_IDEMPOTENT", "single", path, "sweep") in grid
    assert len(cells) == 15 * 3 * 6 + 15 * 3 + 2 * (15 * 2 + 2 * len(held_sigkill))
    held = [c for c in cells if c.path != "allow" and c.crash_point in ("after_record", "after_hold")]
    assert held
    assert all(c.observed.startswith("SUSPENDED") for c in held)
    assert all(c.verdict is Verdict.PASS for c in cells)
    non = [c for c in cells if c.idempotency == IdempotencyClass.NON_IDEMPOTENT.value]
    assert sum(c.duplicates for c in non) == 0
    uncertain_unmarked = [
        c
        for c in cells
        if c.observed.startswith("UNCERTAIN")
        and c.crash_point not in ("after_watermark", "after_effect", "after_normalize", "after_excerpt")
    ]
    assert uncertain_unmarked == []

    _, rows = load_run(tmp_path, outcome.run_id)
    races = [r for r in rows if "racing" in r.scenario]
    assert {r.scenario.split("[")[-1] for r in races} == {"sqlite]", "postgres]"}
    assert all(r.verdict is Verdict.PASS for r in races)
