"""toolproof.reports: verdict roll-up, the results store and its renderers."""

from __future__ import annotations

import ast
import itertools
import json
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pydantic import ValidationError

import toolproof.reports as reports
from toolproof.reports import RunInfo, load_run, render_markdown, rerender, rule_verdicts, write_run
from toolproof.spec import ConfigurationError, HarnessError, ResultRow, Rule, Verdict, load_catalog

REPORTS_DIR = Path(reports.__file__).parent
FAIL_EVIDENCE = (
    "D1.1: a result claiming status='DENIED' completed DENIED\nreproduction:\n  call echo {'x': 1}\n  seed=7"
)


def row(
    rule_id: str,
    scenario: str,
    verdict: Verdict,
    *,
    implementation: str = "ref",
    run_id: str = "run-1",
    evidence: str = "",
) -> ResultRow:
    return ResultRow(
        run_id=run_id,
        implementation=implementation,
        rule_id=rule_id,
        scenario=scenario,
        verdict=verdict,
        duration_s=0.25,
        evidence=evidence,
    )


def info(
    *implementations: str,
    run_id: str = "run-1",
    rules: tuple[str, ...] = ("D2.1", "D1.1", "D1.2", "D7.1"),
    started_at: str = "2025-03-01T10:00:00+00:00",
    profiles: dict[str, list[str]] | None = None,
) -> RunInfo:
    names = list(implementations or ("ref",))
    return RunInfo(
        run_id=run_id,
        implementations=names,
        selected_rules=list(rules),
        started_at=started_at,
        toolproof_version="0.1.0",
        profiles=profiles if profiles is not None else {name: ["core", "mcp"] for name in names},
    )


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def stored(db: Path, sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(db), read_only=True) as connection:
        return connection.execute(sql).fetchall()


# --- rule_verdicts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.XFAIL], Verdict.FAIL),
        ([Verdict.PASS, Verdict.ERROR, Verdict.XFAIL], Verdict.ERROR),
        ([Verdict.PASS, Verdict.XFAIL, Verdict.NOT_CLAIMED], Verdict.XFAIL),
        ([Verdict.NOT_CLAIMED, Verdict.PASS], Verdict.PASS),
        ([Verdict.NOT_CLAIMED, Verdict.NOT_CLAIMED], Verdict.NOT_CLAIMED),
        ([Verdict.PASS], Verdict.PASS),
    ],
)
def test_rule_verdict_is_the_worst_scenario_verdict(verdicts: list[Verdict], expected: Verdict) -> None:
    rows = [row("D1.1", f"test_d01.py::test_{i}", v) for i, v in enumerate(verdicts)]
    random.Random(3).shuffle(rows)
    assert rule_verdicts(rows, ["D1.1"]) == {"D1.1": expected}


def test_rule_without_scenario_is_not_covered_unless_a_rule_level_row_says_not_claimed() -> None:
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.PASS),
        row("D7.1", "", Verdict.NOT_CLAIMED),
        row("D2.1", "", Verdict.NOT_COVERED),
    ]
    verdicts = rule_verdicts(rows, ["D7.1", "D2.1", "D1.2", "D1.1"])
    assert list(verdicts) == ["D7.1", "D2.1", "D1.2", "D1.1"]
    assert verdicts == {
        "D7.1": Verdict.NOT_CLAIMED,
        "D2.1": Verdict.NOT_COVERED,
        "D1.2": Verdict.NOT_COVERED,
        "D1.1": Verdict.PASS,
    }


def test_rule_scenario_rows_outrank_a_rule_level_not_claimed() -> None:
    rows = [row("D1.1", "", Verdict.NOT_CLAIMED), row("D1.1", "test_d01.py::test_a", Verdict.FAIL)]
    assert rule_verdicts(rows, ["D1.1"]) == {"D1.1": Verdict.FAIL}


@pytest.mark.parametrize("verdict", [Verdict.PASS, Verdict.FAIL, Verdict.ERROR, Verdict.XFAIL])
def test_a_rule_level_row_cannot_judge(verdict: Verdict) -> None:
    with pytest.raises(ValidationError, match=rf"verdict='{verdict.value}' is not allowed for a rule-level row"):
        row("D1.1", "", verdict)


def test_a_scenario_that_cannot_judge_over_the_wire_makes_its_rule_not_covered_never_pass() -> None:
    # Over HTTP a scenario may be unable to judge its rule (spec.NotCovered): that beats a pass elsewhere.
    rows = [row("D4.9", "t.py::a", Verdict.PASS), row("D4.9", "t.py::b", Verdict.NOT_COVERED)]
    assert rule_verdicts(rows, ["D4.9"]) == {"D4.9": Verdict.NOT_COVERED}
    failing = [*rows, row("D4.9", "t.py::c", Verdict.FAIL)]
    assert rule_verdicts(failing, ["D4.9"]) == {"D4.9": Verdict.FAIL}


@pytest.fixture
def review_only_rule() -> Iterator[Rule]:
    """D17.7 marked review-only for the test, in the catalog every report reads (no rule of the real catalog is
    review-only today; the mechanism stays for a clause no run can judge)."""
    catalog = load_catalog()
    rules = catalog.rules
    marked = catalog.rule("D17.7").model_copy(update={"review_only": "A stand-in reason: no run could judge this one."})
    object.__setattr__(catalog, "rules", tuple(marked if rule.id == marked.id else rule for rule in rules))
    try:
        yield marked
    finally:
        object.__setattr__(catalog, "rules", rules)


def test_a_review_only_rule_reads_review_only_in_every_file_never_pass(tmp_path: Path, review_only_rule: Rule) -> None:
    reviewed = review_only_rule
    run = info(rules=("D1.1", reviewed.id), profiles={"ref": [reviewed.profile.value, "core"]})
    write_run(tmp_path, run, [row("D1.1", "test_d01.py::test_a", Verdict.PASS)])
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["rules"] == {"D1.1": "pass", reviewed.id: "review-only"}
    assert summary["conforms"] is True
    assert f"Review-only (a reviewer judges them, never a run): {reviewed.id}." in summary["verdict"]
    stored_rows = stored(
        tmp_path / "results.duckdb", f"SELECT verdict, evidence FROM results WHERE rule_id = '{reviewed.id}'"
    )
    assert stored_rows == [("review-only", f"review-only: {reviewed.review_only}")]
    assert f"Review-only (no run can judge it, a reviewer does): {reviewed.review_only}" in (
        tmp_path / "report.md"
    ).read_text(encoding="utf-8")
    assert f'<property name="review-only" value="{reviewed.id}" />' in (tmp_path / "junit.xml").read_text(
        encoding="utf-8"
    )
    assert "v-review-only" in (tmp_path / "report.html").read_text(encoding="utf-8")
    _, loaded = load_run(tmp_path)
    assert rule_verdicts(loaded, [reviewed.id]) == {reviewed.id: Verdict.REVIEW_ONLY}


def test_rule_verdicts_refuses_rows_of_two_implementations() -> None:
    rows = [row("D1.1", "t.py::a", Verdict.PASS), row("D1.1", "t.py::a", Verdict.PASS, implementation="other")]
    with pytest.raises(
        HarnessError, match=r"^rule_verdicts takes one implementation's rows, got implementations=\['other', 'ref'\]$"
    ):
        rule_verdicts(rows, ["D1.1"])


# --- write_run ---------------------------------------------------------------------------------------------


def test_write_run_writes_five_files_and_exact_columns(tmp_path: Path) -> None:
    write_run(tmp_path / "out", info(), [row("D1.1", "test_d01.py::test_a", Verdict.PASS)])
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "junit.xml",
        "report.html",
        "report.md",
        "results.duckdb",
        "summary.json",
    ]
    columns = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{}' ORDER BY ordinal_position"
    assert stored(out / "results.duckdb", columns.format("results")) == [
        ("run_id", "VARCHAR"),
        ("implementation", "VARCHAR"),
        ("rule_id", "VARCHAR"),
        ("scenario", "VARCHAR"),
        ("verdict", "VARCHAR"),
        ("duration_s", "DOUBLE"),
        ("evidence", "VARCHAR"),
    ]
    assert [name for name, _ in stored(out / "results.duckdb", columns.format("runs"))] == [
        "run_id",
        "implementations",
        "selected_rules",
        "started_at",
        "toolproof_version",
        "profiles",
        "exit_code",
        "implementation_refs",
        "catalog_sha256",
        "shard",
        "whole_selection",
        "wall_s",
        "rerun_options",
    ]
    runs = stored(out / "results.duckdb", "SELECT implementations, selected_rules, profiles FROM runs")
    assert [tuple(json.loads(str(cell)) for cell in r) for r in runs] == [
        (["ref"], ["D2.1", "D1.1", "D1.2", "D7.1"], {"ref": ["core", "mcp"]})
    ]


def test_every_selected_rule_is_stored_with_rule_level_rows_for_the_uncovered(tmp_path: Path) -> None:
    run = info("ref", "other", profiles={"ref": ["core"], "other": ["core", "mcp"]})
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.PASS),
        row("D1.1", "test_d01.py::test_b", Verdict.PASS),
        row("D1.1", "test_d01.py::test_a", Verdict.FAIL, implementation="other", evidence=FAIL_EVIDENCE),
    ]
    write_run(tmp_path, run, rows)
    got = stored(
        tmp_path / "results.duckdb",
        "SELECT implementation, rule_id, scenario, verdict FROM results ORDER BY implementation, rule_id, scenario",
    )
    assert got == [
        ("other", "D1.1", "test_d01.py::test_a", "fail"),
        ("other", "D1.2", "", "not-covered"),
        ("other", "D2.1", "", "not-covered"),
        ("other", "D7.1", "", "not-covered"),
        ("ref", "D1.1", "test_d01.py::test_a", "pass"),
        ("ref", "D1.1", "test_d01.py::test_b", "pass"),
        ("ref", "D1.2", "", "not-covered"),
        ("ref", "D2.1", "", "not-covered"),
        # ref does not claim the mcp profile D7.1 belongs to.
        ("ref", "D7.1", "", "not-claimed"),
    ]


def test_summary_for_one_implementation_lists_rules_in_catalog_order(tmp_path: Path) -> None:
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.FAIL, evidence=FAIL_EVIDENCE),
        row("D2.1", "test_d02.py::test_a", Verdict.PASS),
        row("D7.1", "", Verdict.NOT_CLAIMED),
    ]
    write_run(tmp_path, info(), rows)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary == {
        "implementation": "ref",
        "run_id": "run-1",
        "rules": {"D1.1": "fail", "D1.2": "not-covered", "D2.1": "pass", "D7.1": "not-claimed"},
        "conforms": False,
        "exit_code": None,
        "verdict": "ref does not conform — core: 1 of 3 rules fail (D1.1); mcp: not judged (1 rule not claimed)."
        " Exit code not recorded. Not claimed: D7.1 (mcp). Not covered: D1.2.",
    }
    assert list(summary["rules"]) == ["D1.1", "D1.2", "D2.1", "D7.1"]


def test_summary_for_two_implementations_nests_rules_per_implementation(tmp_path: Path) -> None:
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.PASS),
        row("D1.1", "test_d01.py::test_a", Verdict.ERROR, implementation="other", evidence="boom"),
    ]
    write_run(tmp_path, info("ref", "other", rules=("D1.2", "D1.1")), rows)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary == {
        "run_id": "run-1",
        "implementations": {
            "ref": {"rules": {"D1.1": "pass", "D1.2": "not-covered"}},
            "other": {"rules": {"D1.1": "error", "D1.2": "not-covered"}},
        },
        "conforms": False,
        "exit_code": None,
        "verdict": "ref conforms — core: 1 of 2 rules pass; mcp: no rule selected; other does not conform — core:"
        " 1 of 2 rules fail (D1.1); mcp: no rule selected. Exit code not recorded. Not claimed: none."
        " Not covered: ref D1.2; other D1.2.",
    }
    assert list(summary["implementations"]) == ["ref", "other"]


def test_write_run_refuses_rows_of_an_unselected_rule(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"^row does not belong to run_id='run-1': rule_id='D3.1' was not selected"):
        write_run(tmp_path, info(), [row("D3.1", "t.py::t", Verdict.PASS)])
    assert list(tmp_path.iterdir()) == []


def test_write_run_refuses_a_selected_rule_the_catalog_lacks(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"^unknown rule id 'D99.1'"):
        write_run(tmp_path, info(rules=("D1.1", "D99.1")), [])


# --- report.md ---------------------------------------------------------------------------------------------


def test_report_names_a_failing_rule_with_its_catalog_text_and_evidence(tmp_path: Path) -> None:
    rows = [row("D1.1", "test_d01.py::test_claimed_status", Verdict.FAIL, evidence=FAIL_EVIDENCE)]
    write_run(tmp_path, info(), rows)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    rule = load_catalog().rule("D1.1")
    assert rule.interpretation is not None
    assert report.startswith("# toolproof run run-1: ref\n")
    assert f"- **D1.1** (core): {rule.text}\n  - Verdict: ref **fail**\n" in report
    assert "  - Scenarios: `test_d01.py::test_claimed_status`\n" in report
    assert f"  - Interpretation: {rule.interpretation}\n" in report
    assert "  - How it is judged: the docstrings of `scenarios/test_d01.py`\n" in report
    assert "## D1. ToolResult: what a tool returns, and no status" in report
    failures = report[report.index("## Failures") :]
    assert "### ref: D1.1, `test_d01.py::test_claimed_status` (fail)" in failures
    assert f"```text\n{FAIL_EVIDENCE}\n```" in failures


def test_report_names_each_module_that_judges_a_rule_once(tmp_path: Path) -> None:
    rows = [
        row("D1.2", "test_d01_b.py::test_two[x]", Verdict.PASS),
        row("D1.2", "test_d01_a.py::test_one", Verdict.PASS),
        row("D1.2", "test_d01_b.py::test_three", Verdict.PASS, implementation="other"),
    ]
    write_run(tmp_path, info("ref", "other"), rows)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")

    def entry(rule_id: str) -> list[str]:
        lines = report[report.index(f"- **{rule_id}**") :].splitlines()
        return [lines[0], *itertools.takewhile(lambda line: line.startswith("  - "), lines[1:])]

    assert (
        entry("D1.2")[-1]
        == "  - How it is judged: the docstrings of `scenarios/test_d01_a.py`, `scenarios/test_d01_b.py`"
    )
    assert not any("How it is judged" in line for line in entry("D2.1"))  # No scenario judged it: no module to name.


def test_report_counts_verdicts_per_implementation_and_decision() -> None:
    run = info("ref", "other", profiles={"ref": ["core"], "other": ["core", "mcp"]})
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.PASS),
        row("D1.1", "test_d01.py::test_a", Verdict.FAIL, implementation="other", evidence="x"),
    ]
    # No row for D7.1: ref's profiles alone make it not-claimed, as in the report write_run writes.
    report = render_markdown(run, rows)
    assert "| Implementation | Profiles | pass | fail | error | xfail | not-claimed | not-covered |" in report
    assert "| ref | core | 1 | 0 | 0 | 0 | 1 | 2 |" in report
    assert "| other | core, mcp | 0 | 1 | 0 | 0 | 0 | 3 |" in report
    assert "| D1 | ToolResult: what a tool returns, and no status | other | 0 | 1 | 0 | 0 | 0 | 1 |" in report


def test_report_is_independent_of_row_order() -> None:
    rows = [
        row("D1.1", f"test_d01.py::test_{i}", v, evidence="e" if v is Verdict.FAIL else "")
        for i, v in enumerate([Verdict.PASS, Verdict.FAIL, Verdict.XFAIL, Verdict.FAIL])
    ]
    shuffled = list(rows)
    random.Random(11).shuffle(shuffled)
    assert render_markdown(info(), rows) == render_markdown(info(), shuffled)


def test_report_fences_evidence_that_contains_a_fence() -> None:
    evidence = "reproduction:\n```python\ncall()\n```"
    report = render_markdown(info(), [row("D1.1", "t.py::t", Verdict.ERROR, evidence=evidence)])
    assert f"````text\n{evidence}\n````" in report


def test_report_without_failures_says_so() -> None:
    report = render_markdown(info(), [row("D1.1", "t.py::t", Verdict.PASS)])
    assert report.endswith("## Failures\n\nNo failures.\n")


# --- load_run, appending, rerender -------------------------------------------------------------------------


def test_a_second_run_appends_and_load_run_picks_the_latest_start(tmp_path: Path) -> None:
    later = info(run_id="later", started_at="2025-03-02T09:00:00+01:00")
    earlier = info(run_id="earlier", started_at="2025-03-02T08:30:00+00:00")
    write_run(tmp_path, later, [row("D1.1", "t.py::t", Verdict.PASS, run_id="later")])
    write_run(tmp_path, earlier, [row("D1.1", "t.py::t", Verdict.FAIL, run_id="earlier", evidence="x")])
    assert stored(tmp_path / "results.duckdb", "SELECT run_id FROM runs ORDER BY run_id") == [("earlier",), ("later",)]

    # 08:30Z is after 09:00+01:00 (08:00Z): ordering is by instant, not by text.
    latest, rows = load_run(tmp_path)
    assert latest == earlier
    assert {r.verdict for r in rows if r.rule_id == "D1.1"} == {Verdict.FAIL}

    chosen, rows = load_run(tmp_path, "later")
    assert chosen == later
    assert all(r.run_id == "later" for r in rows)
    assert len(rows) == 4


def test_load_run_returns_what_write_run_stored(tmp_path: Path) -> None:
    run = info("ref", "other")
    rows = [
        row("D2.1", "test_d02.py::test_a", Verdict.XFAIL, evidence="known"),
        row("D1.1", "test_d01.py::test_a", Verdict.PASS, implementation="other"),
    ]
    write_run(tmp_path, run, rows)
    loaded_info, loaded = load_run(tmp_path)
    assert loaded_info == run
    assert [(r.implementation, r.rule_id, r.scenario, r.verdict) for r in loaded] == [
        ("ref", "D1.1", "", Verdict.NOT_COVERED),
        ("ref", "D1.2", "", Verdict.NOT_COVERED),
        ("ref", "D2.1", "test_d02.py::test_a", Verdict.XFAIL),
        ("ref", "D7.1", "", Verdict.NOT_COVERED),
        ("other", "D1.1", "test_d01.py::test_a", Verdict.PASS),
        ("other", "D1.2", "", Verdict.NOT_COVERED),
        ("other", "D2.1", "", Verdict.NOT_COVERED),
        ("other", "D7.1", "", Verdict.NOT_COVERED),
    ]
    assert loaded[2].evidence == "known"
    assert loaded[2].duration_s == 0.25


def test_rerender_reproduces_identical_files(tmp_path: Path) -> None:
    rows = [
        row("D1.1", "test_d01.py::test_a", Verdict.FAIL, evidence=FAIL_EVIDENCE),
        row("D2.1", "test_d02.py::test_a", Verdict.PASS),
    ]
    write_run(tmp_path, info(), rows)
    rendered = ["junit.xml", "report.html", "report.md", "summary.json"]
    written = {name: (tmp_path / name).read_bytes() for name in rendered}
    (tmp_path / "report.md").unlink()
    (tmp_path / "report.html").unlink()
    (tmp_path / "summary.json").write_text("{}", encoding="utf-8")
    (tmp_path / "junit.xml").write_text("<x/>", encoding="utf-8")
    rerender(tmp_path)
    assert {name: (tmp_path / name).read_bytes() for name in rendered} == written
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*rendered, "results.duckdb"])


def test_rerender_of_an_older_run_renders_that_run(tmp_path: Path) -> None:
    write_run(tmp_path, info(run_id="a"), [row("D1.1", "t.py::t", Verdict.PASS, run_id="a")])
    report_a = (tmp_path / "report.md").read_text(encoding="utf-8")
    write_run(tmp_path, info(run_id="b", started_at="2025-03-05T00:00:00Z"), [])
    assert (tmp_path / "report.md").read_text(encoding="utf-8") != report_a
    rerender(tmp_path, "a")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == report_a


def test_a_repeated_run_id_is_refused_and_the_store_is_unchanged(tmp_path: Path) -> None:
    write_run(tmp_path, info(), [row("D1.1", "t.py::t", Verdict.PASS)])
    with pytest.raises(ConfigurationError, match=r"^run_id='run-1' is already recorded in '.*results\.duckdb': "):
        write_run(tmp_path, info(), [row("D1.1", "t.py::t", Verdict.FAIL, evidence="x")])
    assert stored(tmp_path / "results.duckdb", "SELECT count(*) FROM results") == [(4,)]


def test_a_failure_midway_leaves_no_half_written_run(tmp_path: Path) -> None:
    write_run(tmp_path, info(run_id="good"), [row("D1.1", "t.py::t", Verdict.PASS, run_id="good")])
    # A lone surrogate cannot be stored: the insert fails after the runs row and some results went in.
    bad = [
        row("D1.1", "t.py::a", Verdict.PASS, run_id="bad"),
        row("D1.1", "t.py::b", Verdict.FAIL, run_id="bad", evidence="\ud800"),
    ]
    with pytest.raises(duckdb.Error):
        write_run(tmp_path, info(run_id="bad", started_at="2026-01-01T00:00:00+00:00"), bad)
    assert stored(tmp_path / "results.duckdb", "SELECT DISTINCT run_id FROM results") == [("good",)]
    assert stored(tmp_path / "results.duckdb", "SELECT run_id FROM runs") == [("good",)]
    assert load_run(tmp_path)[0].run_id == "good"


# --- configuration errors ----------------------------------------------------------------------------------


def test_load_run_on_an_empty_folder_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as caught:
        load_run(tmp_path)
    assert re.fullmatch(
        rf"no toolproof results in {re.escape(repr(str(tmp_path)))}: results\.duckdb is missing;"
        r" give the folder a run was written to",
        one_line(caught),
    )


def test_load_run_on_a_missing_folder_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"^no toolproof results in '.*nowhere': it is not a folder;"):
        load_run(tmp_path / "nowhere")


def test_load_run_on_a_garbage_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "results.duckdb").write_bytes(b"this is not a database\n" * 100)
    with pytest.raises(ConfigurationError) as caught:
        load_run(tmp_path)
    assert re.fullmatch(
        r"'.*results\.duckdb' is not a toolproof results database: .+; point at a folder .+", one_line(caught)
    )


def test_a_foreign_duckdb_database_is_refused_for_reading_and_writing(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("CREATE TABLE results (id INTEGER)")
    with pytest.raises(
        ConfigurationError, match=r"is not a toolproof results database: table 'results' has columns \['id'\];"
    ):
        load_run(tmp_path)
    with pytest.raises(
        ConfigurationError, match=r"is not a toolproof results database: table 'results' has columns \['id'\];"
    ):
        write_run(tmp_path, info(), [])
    assert stored(tmp_path / "results.duckdb", "SELECT count(*) FROM results") == [(0,)]


def test_an_empty_duckdb_database_without_runs_is_refused_for_reading_but_written_into(tmp_path: Path) -> None:
    duckdb.connect(str(tmp_path / "results.duckdb")).close()
    with pytest.raises(ConfigurationError, match=r"is not a toolproof results database: it has no 'results' table;"):
        load_run(tmp_path)
    write_run(tmp_path, info(), [])
    assert load_run(tmp_path)[0] == info()


def test_load_run_of_an_unknown_run_id_names_the_runs_there(tmp_path: Path) -> None:
    write_run(tmp_path, info(), [])
    with pytest.raises(ConfigurationError) as caught:
        load_run(tmp_path, "nope")
    assert re.fullmatch(r"no run 'nope' in '.*results\.duckdb'; the runs it holds: run-1", one_line(caught))


def test_an_out_dir_under_a_regular_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    out = tmp_path / "plain" / "out"
    with pytest.raises(ConfigurationError) as caught:
        write_run(out, info(), [])
    assert re.fullmatch(
        rf"cannot write results into {re.escape(repr(str(out)))}: Not a directory;"
        r" choose a folder you can create and write",
        one_line(caught),
    )


def test_an_out_dir_that_is_a_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"^cannot write results into '.*plain': it is a file, not a folder;"):
        write_run(tmp_path / "plain", info(), [])


def test_run_info_rejects_a_start_that_is_not_iso_8601() -> None:
    with pytest.raises(ValidationError, match=r"started_at='yesterday' is not ISO 8601"):
        info(started_at="yesterday")


# --- package shape -----------------------------------------------------------------------------------------


def test_public_surface_is_the_list_of_re_exports() -> None:
    assert sorted(reports.__all__) == [
        "CallObservation",
        "EraCheck",
        "ErrorShape",
        "Finding",
        "FindingKind",
        "ListedPrompt",
        "ListedTool",
        "RunDiff",
        "RunInfo",
        "RunVerdict",
        "ServerCheck",
        "ServerCheckReport",
        "ServerRequest",
        "VerdictChange",
        "diff_runs",
        "load_crash_cells",
        "load_fault_cells",
        "load_run",
        "load_shards",
        "merge_shards",
        "render_assumptions",
        "render_html",
        "render_junit",
        "render_markdown",
        "render_server_check_html",
        "render_server_check_text",
        "rerender",
        "rule_verdicts",
        "run_exit_code",
        "run_verdict",
        "selected_rules",
        "server_check_section",
        "verdict_table",
        "write_run",
    ]
    for name in reports.__all__:
        assert getattr(reports, name).__module__ == "toolproof.reports"


def test_reports_imports_only_spec_pydantic_duckdb_and_the_stdlib() -> None:
    allowed = {"pydantic", "duckdb", "toolproof.spec"} | set(sys.stdlib_module_names)
    for path in sorted(REPORTS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed or name.startswith("toolproof.spec"), f"{path.name} imports {name}"
