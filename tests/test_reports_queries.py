"""The query recipes for results.duckdb in docs/reports.md, run against a database write_run wrote.

The page's section "Querying results.duckdb" must carry exactly these queries, in this order,
one ```sql block each: the last test compares them.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from toolproof.reports import RunInfo, write_run
from toolproof.spec import CrashCell, ResultRow, Verdict

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reports.md"
SECTION = "## Querying results.duckdb"
_LATEST = "(SELECT run_id FROM runs ORDER BY started_at::TIMESTAMPTZ DESC LIMIT 1)"
_RULE_ORDER = "string_split(ltrim(rule_id, 'D'), '.')::INTEGER[]"

RECIPES: dict[str, str] = {
    "runs": """\
SELECT run_id, started_at, implementations, toolproof_version
FROM runs
ORDER BY started_at::TIMESTAMPTZ DESC;""",
    "failures": f"""\
SELECT implementation, rule_id, scenario, verdict, evidence
FROM results
WHERE verdict IN ('fail', 'error')
  AND run_id = {_LATEST}
ORDER BY implementation, {_RULE_ORDER}, scenario;""",
    "regressed": f"""\
WITH latest AS (
  SELECT run_id, row_number() OVER (ORDER BY started_at::TIMESTAMPTZ DESC) AS age FROM runs
), verdicts AS (
  SELECT run_id, implementation, rule_id,
         arg_min(verdict, CASE verdict WHEN 'fail' THEN 1 WHEN 'error' THEN 2 WHEN 'xfail' THEN 3
                                       WHEN 'pass' THEN 4 WHEN 'not-claimed' THEN 5 ELSE 6 END) AS verdict
  FROM results
  GROUP BY ALL
)
SELECT now.implementation, now.rule_id, before.verdict AS before, now.verdict AS now
FROM verdicts AS now
JOIN verdicts AS before USING (implementation, rule_id)
WHERE now.run_id = (SELECT run_id FROM latest WHERE age = 1)
  AND before.run_id = (SELECT run_id FROM latest WHERE age = 2)
  AND before.verdict IN ('pass', 'xfail') AND now.verdict IN ('fail', 'error')
ORDER BY now.implementation, {_RULE_ORDER.replace("rule_id", "now.rule_id")};""",
    "slowest": f"""\
SELECT implementation, scenario, max(duration_s) AS seconds,
       string_agg(rule_id, ' ' ORDER BY rule_id) AS rules
FROM results
WHERE scenario <> ''
  AND run_id = {_LATEST}
GROUP BY implementation, scenario
ORDER BY seconds DESC, implementation, scenario
LIMIT 10;""",
    "history": """\
SELECT runs.started_at, results.run_id, results.implementation, results.scenario, results.verdict
FROM results JOIN runs USING (run_id)
WHERE results.rule_id = 'D13.4'
ORDER BY runs.started_at::TIMESTAMPTZ, results.implementation, results.scenario;""",
    "crash": f"""\
SELECT implementation, mode, crash_point, idempotency, position, path, recovery, expected, observed, effects, duplicates
FROM crash_matrix
WHERE (verdict <> 'pass' OR duplicates > 0)
  AND run_id = {_LATEST}
ORDER BY ALL;""",
}


def run(run_id: str, started_at: str, verdicts: dict[str, tuple[Verdict, float]]) -> tuple[RunInfo, list[ResultRow]]:
    info = RunInfo(
        run_id=run_id,
        implementations=["ref"],
        selected_rules=["D2.1", "D10.1", "D13.1", "D13.4", "D7.1"],
        started_at=started_at,
        toolproof_version="0.1.0",
        profiles={"ref": ["core"]},
    )
    rows = [
        ResultRow(
            run_id=run_id,
            implementation="ref",
            rule_id=rule,
            scenario=f"test_{rule}.py::test_it",
            verdict=verdict,
            duration_s=seconds,
            evidence="" if verdict is Verdict.PASS else f"{rule}: broke\nreproduction:\n  submit",
        )
        for rule, (verdict, seconds) in verdicts.items()
    ]
    return info, rows


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("queries")
    # Written newest first: the recipes order runs by started_at, not by insertion.
    after, after_rows = run(
        "after",
        "2025-03-02T10:00:00+00:00",
        {
            "D2.1": (Verdict.FAIL, 0.5),
            "D10.1": (Verdict.ERROR, 3.0),
            "D13.1": (Verdict.PASS, 2.0),
            "D13.4": (Verdict.FAIL, 0.25),
        },
    )
    cell = CrashCell(
        run_id="after",
        implementation="ref",
        mode="simulated",
        crash_point="after_effect",
        idempotency="NON_IDEMPOTENT",
        position="single",
        expected="UNCERTAIN effect_unknown",
        observed="SUCCEEDED",
        effects=2,
        duplicates=1,
        verdict=Verdict.FAIL,
        evidence="D4.6: retried",
    )
    good = CrashCell.model_validate(cell.model_dump() | {"crash_point": "after_claim", "observed": cell.expected, "effects": 1, "duplicates": 0, "verdict": Verdict.PASS})  # fmt: skip
    write_run(out, after, after_rows, [cell, good])
    before, before_rows = run(
        "before",
        "2025-03-02T10:30:00+01:00",
        {
            "D2.1": (Verdict.PASS, 0.5),
            "D10.1": (Verdict.XFAIL, 1.0),
            "D13.1": (Verdict.PASS, 2.0),
            "D13.4": (Verdict.PASS, 0.25),
        },
    )
    write_run(out, before, before_rows)
    return out / "results.duckdb"


def query(db: Path, name: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as connection:
        return connection.execute(RECIPES[name]).fetchall()


def test_runs_latest_first_by_instant(db: Path) -> None:
    assert [r[0] for r in query(db, "runs")] == ["after", "before"]


def test_failures_of_the_latest_run(db: Path) -> None:
    assert [(r[1], r[3]) for r in query(db, "failures")] == [("D2.1", "fail"), ("D10.1", "error"), ("D13.4", "fail")]


def test_regressed_rules_between_the_two_latest_runs(db: Path) -> None:
    assert query(db, "regressed") == [
        ("ref", "D2.1", "pass", "fail"),
        ("ref", "D10.1", "xfail", "error"),
        ("ref", "D13.4", "pass", "fail"),
    ]


def test_slowest_scenarios_of_the_latest_run(db: Path) -> None:
    assert query(db, "slowest")[:2] == [
        ("ref", "test_D10.1.py::test_it", 3.0, "D10.1"),
        ("ref", "test_D13.1.py::test_it", 2.0, "D13.1"),
    ]


def test_a_rules_history_across_runs(db: Path) -> None:
    assert [(r[1], r[4]) for r in query(db, "history")] == [("before", "pass"), ("after", "fail")]


def test_crash_cells_that_went_wrong(db: Path) -> None:
    assert query(db, "crash") == [
        (
            "ref",
            "simulated",
            "after_effect",
            "NON_IDEMPOTENT",
            "single",
            "allow",
            "sweep",
            "UNCERTAIN effect_unknown",
            "SUCCEEDED",
            2,
            1,
        )
    ]


def test_the_page_carries_exactly_these_recipes() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/reports.md has no {SECTION!r} section"
    section = text[text.index(SECTION) :]
    following = re.search(r"\n## ", section[len(SECTION) :])
    if following:
        section = section[: len(SECTION) + following.start()]
    blocks = re.findall(r"```sql\n(.*?)\n```", section, re.DOTALL)
    assert blocks == list(RECIPES.values())
