"""The verdict a report opens with: one line before any table, in report.md, report.html and summary.json."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from toolproof.reports import RunInfo, load_run, render_html, render_markdown, rerender, run_exit_code, write_run
from toolproof.spec import ResultRow, StaleExpectation, Verdict

FAILED = "D13.4: the remote error text reached message\nreproduction:\n  submit step=1"


def info(exit_code: int | None = 0, **profiles: list[str]) -> RunInfo:
    return RunInfo(
        run_id="run-1",
        implementations=list(profiles) or ["ref"],
        selected_rules=["D13.1", "D13.4", "D7.1", "D12.1", "D1.1"],
        started_at="2025-03-01T10:00:00+00:00",
        toolproof_version="0.1.0",
        profiles=dict(profiles) or {"ref": ["core", "recovery"]},
        exit_code=exit_code,
    )


def row(rule: str, verdict: Verdict, implementation: str = "ref", evidence: str = "") -> ResultRow:
    return ResultRow(
        run_id="run-1",
        implementation=implementation,
        rule_id=rule,
        scenario=f"test_x.py::test_{rule.replace('.', '_')}",
        verdict=verdict,
        duration_s=0.1,
        evidence=evidence,
    )


PASSING = [row("D13.1", Verdict.PASS), row("D13.4", Verdict.PASS), row("D1.1", Verdict.PASS)]


def verdict_line(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith("**Verdict:**"))


def test_a_conforming_run_says_so_with_its_exit_code_and_what_it_did_not_judge() -> None:
    text = render_markdown(info(), PASSING)
    assert verdict_line(text) == (
        "**Verdict:** ref conforms — core: 3 of 4 rules pass; recovery: no rule selected. Exit code 0."
        " Not claimed: D7.1 (mcp). Not covered: D12.1."
    )


def test_a_failing_implementation_does_not_conform_and_names_the_rules_per_profile() -> None:
    rows = [row("D13.1", Verdict.PASS), row("D13.4", Verdict.FAIL, evidence=FAILED), row("D1.1", Verdict.ERROR)]
    text = render_markdown(info(exit_code=1), rows)
    assert verdict_line(text).startswith(
        "**Verdict:** ref does not conform — core: 2 of 4 rules fail (D1.1, D13.4); recovery: no rule selected."
        " Exit code 1."
    )


def test_an_expected_failure_is_still_no_conformance_though_the_run_exits_0() -> None:
    rows = [*PASSING, row("D12.1", Verdict.XFAIL, evidence="expected fail")]
    assert "ref does not conform — core: 1 of 4 rules fail as expected (D12.1)" in verdict_line(
        render_markdown(info(), rows)
    )


def test_several_implementations_each_get_their_verdict_and_stale_expectations_are_counted() -> None:
    run = info(exit_code=1, ref=["core"], other=["core", "mcp"])
    rows = [*PASSING, *(r.model_copy(update={"implementation": "other"}) for r in PASSING)]
    stale = [
        StaleExpectation(
            run_id="run-1",
            implementation="other",
            file="x.toml",
            entry=1,
            target="rule D1.1",
            problem="unexpected pass",
        )
    ]
    assert verdict_line(render_markdown(run, rows, stale=stale)) == (
        "**Verdict:** ref conforms — core: 3 of 4 rules pass; other conforms — core: 3 of 4 rules pass;"
        " mcp: not judged (1 rule not covered). Exit code 1 (1 stale expectation). Not claimed: ref D7.1 (mcp)."
        " Not covered: ref D12.1; other D12.1, D7.1."
    )


def test_nothing_judged_is_neither_conforming_nor_failing() -> None:
    text = render_markdown(info(ref=["mcp"]), [])
    assert verdict_line(text).startswith("**Verdict:** ref not judged — mcp: not judged (1 rule not covered).")


def test_the_markdown_report_opens_with_the_verdict_before_any_table() -> None:
    lines = render_markdown(info(), PASSING).splitlines()
    assert lines[0].startswith("# toolproof run run-1")
    assert lines[2].startswith("**Verdict:** ref conforms")
    assert not any(line.startswith("|") for line in lines[:3])


def test_the_html_report_opens_with_the_verdict_in_plain_markup_before_any_table() -> None:
    page = render_html(info(exit_code=1), [row("D13.4", Verdict.FAIL, evidence=FAILED)])
    verdict = page.index('<p id="verdict" class="verdict v-fail"><strong>✗ Verdict:</strong> ref does not conform')
    assert verdict < page.index("<table")
    # No script builds it and nothing hides it: it reads without JavaScript.
    assert verdict < page.index("<script>")
    assert "hidden" not in page[page.rindex("<", 0, verdict) : page.index("</p>", verdict)]
    assert "Exit code 1." in page[verdict : page.index("</p>", verdict)]


def test_summary_json_carries_the_verdict_and_the_exit_code(tmp_path: Path) -> None:
    write_run(tmp_path, info(exit_code=0), PASSING)
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert (summary["conforms"], summary["exit_code"]) == (True, 0)
    assert summary["verdict"].startswith("ref conforms — core: 3 of 4 rules pass")


@pytest.mark.parametrize(
    ("verdicts", "stale", "expected"),
    [
        ({"D1.1": Verdict.PASS, "D1.2": Verdict.XFAIL, "D1.3": Verdict.NOT_COVERED}, 0, 0),
        ({"D1.1": Verdict.PASS, "D1.2": Verdict.ERROR}, 0, 1),
        ({"D1.1": Verdict.FAIL}, 0, 1),
        ({"D1.1": Verdict.PASS}, 1, 1),
        ({"D2.7": Verdict.NOT_CLAIMED}, 0, 5),
        ({"D1.2": Verdict.NOT_COVERED, "D17.7": Verdict.REVIEW_ONLY}, 0, 5),
        ({}, 0, 5),
        ({"D2.7": Verdict.NOT_CLAIMED}, 1, 1),
        ({"D1.1": Verdict.XFAIL}, 0, 0),
    ],
)
def test_the_exit_code_is_1_for_a_failure_an_error_or_a_stale_expectation_and_5_when_nothing_was_judged(
    verdicts: dict[str, Verdict], stale: int, expected: int
) -> None:
    entries = [
        StaleExpectation(run_id="r", implementation="ref", file="f", entry=1, target="rule D1.1", problem="p")
    ] * stale
    assert run_exit_code({"ref": verdicts}, entries) == expected


def test_a_run_recorded_before_exit_codes_were_stored_reads_not_recorded_and_gains_the_columns(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute(
            "CREATE TABLE results (run_id VARCHAR, implementation VARCHAR, rule_id VARCHAR, scenario VARCHAR,"
            " verdict VARCHAR, duration_s DOUBLE, evidence VARCHAR)"
        )
        connection.execute(
            "CREATE TABLE runs (run_id VARCHAR, implementations VARCHAR, selected_rules VARCHAR, started_at VARCHAR,"
            " toolproof_version VARCHAR, profiles VARCHAR, PRIMARY KEY (run_id))"
        )
        connection.execute(
            "INSERT INTO runs VALUES ('old', '[\"ref\"]', '[\"D1.1\"]', '2024-01-01T00:00:00+00:00', '0.0.9',"
            ' \'{"ref": ["core"]}\')'
        )
        connection.execute("INSERT INTO results VALUES ('old', 'ref', 'D1.1', 't.py::t', 'pass', 0.5, '')")
    rerender(tmp_path)
    assert "Exit code not recorded." in verdict_line((tmp_path / "report.md").read_text(encoding="utf-8"))
    write_run(tmp_path, info(exit_code=1).model_copy(update={"implementation_refs": {"ref": "pkg.mod:make"}}), PASSING)
    assert load_run(tmp_path, "old")[0].exit_code is None
    assert load_run(tmp_path, "old")[0].implementation_refs == {}
    latest = load_run(tmp_path)[0]
    assert (latest.exit_code, latest.implementation_refs) == (1, {"ref": "pkg.mod:make"})
