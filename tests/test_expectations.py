"""Expectations files, two implementations in one report, and ``toolproof diff``.

Runs are kept small with ``--rules``; the witness ``chatty_messages`` breaks D13.3 (its messages
carry the tool name), so it gives a real failure to expect.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner, Result

from toolproof._cli import app
from toolproof.expectations import (
    ExpectationsError,
    LoadedExpectations,
    ScenarioIndex,
    apply_expectations,
    draft_expectations,
    load_expectations,
)
from toolproof.reports import RunInfo, write_run
from toolproof.spec import ResultRow, Verdict

WITNESS_REF = "toolproof.reference.witnesses:chatty_messages"
WITNESS = "witness:chatty_messages"
MESSAGE = "test_d13_outcomes.py::test_message_is_the_tables_message"
BATCH = "test_d15_batches.py::test_batch_with_a_non_qualifying_member_never_overlaps"
WRITE_CELL = BATCH + "[side_effect=WORKSPACE_WRITE]"
SMALL = "D13.1,D13.3,D13.7"  # A passing rule, the one the witness breaks, and one no pipeline claims.

runner = CliRunner()


def _run(*args: str) -> Result:
    return runner.invoke(app, ["run", "-q", *args])


def _toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _summary(out: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return loaded


# --- bad files: exit 2, one line naming the file and the entry, nothing written ---------------------------

ENTRY = '[[expect]]\nrule = "D13.3"\nverdict = "fail"\nreason = "known"\n'
BAD_FILES: dict[str, tuple[str | None, str]] = {
    "unreadable": (None, "expectations file '{file}': cannot be read (No such file or directory)"),
    "not-toml": (
        'implementation = "reference"\n[[expect]\n',
        "expectations file '{file}': not TOML: Expected ']]' at the end of an array declaration (at line 2, column 9)",
    ),
    "unknown-file-key": (
        'implementation = "reference"\nversion = 2\n',
        "expectations file '{file}': unknown key 'version': the file's keys are implementation and [[expect]] entries",
    ),
    "unknown-entry-key": (
        f'implementation = "reference"\n{ENTRY}\n[[expect]]\nrule = "D13.4"\nverdict = "fail"\nresaon = "typo"\n',
        "expectations file '{file}', entry 2 (rule 'D13.4'): unknown key 'resaon':"
        " an entry's keys are rule and/or scenario, verdict, reason and link",
    ),
    "unknown-rule": (
        'implementation = "reference"\n[[expect]]\nrule = "D13.99"\nverdict = "fail"\nreason = "x"\n',
        "expectations file '{file}', entry 1 (rule 'D13.99'): unknown rule id 'D13.99': see `toolproof rules`",
    ),
    "missing-reason": (
        'implementation = "reference"\n[[expect]]\nrule = "D13.3"\nverdict = "fail"\n',
        "expectations file '{file}', entry 1 (rule 'D13.3'): missing key 'reason':"
        " say in one line why the failure is expected",
    ),
    "two-line-reason": (
        'implementation = "reference"\n[[expect]]\nrule = "D13.3"\nverdict = "fail"\nreason = "one\\ntwo"\n',
        "expectations file '{file}', entry 1 (rule 'D13.3'): reason='one\\ntwo' must be one non-empty line",
    ),
    "bad-verdict": (
        'implementation = "reference"\n[[expect]]\nrule = "D13.3"\nverdict = "xfail"\nreason = "x"\n',
        "expectations file '{file}', entry 1 (rule 'D13.3'): verdict='xfail' is not allowed: use \"fail\" or \"error\"",
    ),
    "neither-rule-nor-scenario": (
        'implementation = "reference"\n[[expect]]\nverdict = "fail"\nreason = "known"\n',
        "expectations file '{file}', entry 1: give a rule (a rule ID), a scenario (module.py::test_name), or both",
    ),
    "malformed-scenario": (
        'implementation = "reference"\n[[expect]]\nscenario = "test_message"\nverdict = "fail"\nreason = "x"\n',
        "expectations file '{file}', entry 1 (scenario 'test_message'): scenario='test_message' is not"
        " module.py::test_name or module.py::test_name[param], as the report names scenarios",
    ),
    "other-implementation": (
        f'implementation = "minimal"\n{ENTRY}',
        "expectations file '{file}': implementation='minimal' is none of the implementations under test"
        " ('reference'): give the Implementation.name of an --impl (a driver's name without its @address will do)",
    ),
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_file_exits_2_with_one_line_naming_file_and_entry_and_writes_nothing(kind: str, tmp_path: Path) -> None:
    text, message = BAD_FILES[kind]
    file = tmp_path / "expect.toml"
    if text is not None:
        _toml(file, text)
    out = tmp_path / "out"
    result = _run("--impl", "reference", "--rules", "D13.3", "--out", str(out), "--expectations", str(file))
    assert result.exit_code == 2
    assert result.stderr == "toolproof: error: " + message.format(file=file) + "\n"
    assert not out.exists()


def test_the_loader_raises_a_typed_configuration_error(tmp_path: Path) -> None:
    file = _toml(tmp_path / "e.toml", 'implementation = "reference"\n[[expect]]\nrule = "D13.3"\nverdict = "fail"\n')
    with pytest.raises(
        ExpectationsError, match=r"^expectations file '.*e\.toml', entry 1 \(rule 'D13\.3'\): missing"
    ) as caught:
        load_expectations([file], ["reference"])
    assert (caught.value.path, caught.value.entry) == (str(file), "entry 1 (rule 'D13.3')")
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("named", "under_test", "loaded"),
    [
        ("typescript", ["typescript@127.0.0.1:8931", "reference"], "typescript@127.0.0.1:8931"),
        ("typescript@127.0.0.1:8931", ["typescript@127.0.0.1:8931"], "typescript@127.0.0.1:8931"),
        ("reference", ["reference", "reference@127.0.0.1:1"], "reference"),
    ],
)
def test_a_drivers_file_names_it_without_its_address(
    named: str, under_test: list[str], loaded: str, tmp_path: Path
) -> None:
    file = _toml(tmp_path / "e.toml", f'implementation = "{named}"\n{ENTRY}')
    (found,) = load_expectations([file], under_test)
    assert found.implementation == loaded


def test_a_name_two_drivers_under_test_share_is_refused(tmp_path: Path) -> None:
    file = _toml(tmp_path / "e.toml", f'implementation = "ts"\n{ENTRY}')
    with pytest.raises(
        ExpectationsError,
        match=r"^expectations file '.*e\.toml': implementation='ts' names 2 drivers under test"
        r" \('ts@127\.0\.0\.1:1', 'ts@127\.0\.0\.1:2'\): give one with its address$",
    ):
        load_expectations([file], ["ts@127.0.0.1:1", "ts@127.0.0.1:2"])


# --- runs ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    out = tmp_path_factory.mktemp("side-by-side")
    return _run("--impl", "reference", "--impl", WITNESS_REF, "--rules", SMALL, "--out", str(out)), out


def test_two_implementations_make_one_report_with_a_rule_by_implementation_matrix(
    side_by_side: tuple[Result, Path],
) -> None:
    result, out = side_by_side
    assert result.exit_code == 1
    summary = _summary(out)
    implementations = summary["implementations"]
    assert isinstance(implementations, dict)
    assert list(implementations) == ["reference", WITNESS]
    assert implementations["reference"]["rules"]["D13.3"] == "pass"
    assert implementations[WITNESS]["rules"]["D13.3"] == "fail"
    assert implementations[WITNESS]["rules"]["D13.1"] == "pass"
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## Rule × implementation\n\n| Rule | Profile | reference | witness:chatty_messages |\n" in markdown
    assert "| D13.3 | core | pass | **fail** |" in markdown
    assert "| D13.7 | contract | not-claimed | not-claimed |" in markdown
    page = (out / "report.html").read_text(encoding="utf-8")
    matrix = page[page.index('<section id="matrix">') : page.index("</section>", page.index('<section id="matrix">'))]
    assert '<th scope="col">reference</th><th scope="col">witness:chatty_messages</th>' in matrix
    d13_3 = matrix[matrix.index('href="#rule-D13.3"') :].split("</tr>")[0]
    assert [cell.split(">", 1)[1] for cell in d13_3.split('<td class="v ')[1:]] == [
        "✓ pass</td>",
        '<a href="#failure-1">✗ fail</a></td>',
    ]


@pytest.fixture(scope="module")
def expected_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path, Path]:
    folder = tmp_path_factory.mktemp("expected")
    file = _toml(
        folder / "chatty.toml",
        f'implementation = "{WITNESS}"\n[[expect]]\nrule = "D13.3"\nverdict = "fail"\n'
        'reason = "messages name the tool"\nlink = "https://example.org/issue/1"\n',
    )
    out = folder / "out"
    args = ["--impl", "reference", "--impl", WITNESS_REF, "--rules", SMALL, "--out", str(out), "--expectations"]
    return _run(*args, str(file)), out, file


def test_an_expected_failure_reads_xfail_apart_from_pass_and_the_run_passes(
    expected_run: tuple[Result, Path, Path],
) -> None:
    result, out, file = expected_run
    assert result.exit_code == 0, result.output
    assert f"{WITNESS}: rules: 1 pass, 1 xfail, 1 not-claimed;" in result.stdout
    assert result.stderr == ""
    summary = _summary(out)
    assert "stale_expectations" not in summary
    implementations = summary["implementations"]
    assert isinstance(implementations, dict)
    assert implementations["reference"]["rules"]["D13.3"] == "pass"
    assert implementations[WITNESS]["rules"]["D13.3"] == "xfail"
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| D13.3 | core | pass | xfail |" in markdown
    # The rule's own scenario, and the cells of other D13 scenarios where the harness's check of every outcome saw
    # the same messages (Rule.everywhere): the rule entry expects them all.
    assert "## Expected failures\n\n### " in markdown
    assert f"### {WITNESS}: D13.3, `{MESSAGE}` (xfail)" in markdown.split("## Expected failures", 1)[1]
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as connection:
        (evidence,) = connection.execute(
            "SELECT evidence FROM results WHERE implementation = ? AND rule_id = 'D13.3' AND scenario = ?",
            [WITNESS, MESSAGE],
        ).fetchone() or ("",)
    assert evidence.startswith("D13.3: unknown tool: message")  # The failure's own evidence is kept...
    # ...and the reason appended.
    assert evidence.endswith(f"\n\nexpected fail ({file} entry 1): messages name the tool https://example.org/issue/1")


def test_an_unexpected_pass_stays_pass_is_stale_and_fails_the_run(tmp_path: Path) -> None:
    file = _toml(
        tmp_path / "reference.toml",
        f'implementation = "reference"\n{ENTRY}\n'
        f'[[expect]]\nscenario = "{WRITE_CELL}"\nverdict = "error"\nreason = "one cell"\n',
    )
    out = tmp_path / "out"
    result = _run("--rules", "D13.3,D15.3", "--out", str(out), "--expectations", str(file))
    assert result.exit_code == 1
    assert "reference: rules: 2 pass;" in result.stdout
    problems = [
        # The other scenario judging D13.3 is the model judge's (test_model.py).
        (
            "rule D13.3",
            f"unexpected pass: {MESSAGE} passed D13.3 (and 1 more); nothing it names fails any more: remove the entry",
        ),
        (f"scenario {WRITE_CELL}", f"unexpected pass: {WRITE_CELL} passed D15.3"),
    ]
    assert result.stderr.splitlines() == [
        f"toolproof: stale expectation: {file} entry {n} ({target}): {problem}"
        for n, (target, problem) in enumerate(problems, 1)
    ]
    summary = _summary(out)
    assert summary["rules"] == {"D13.3": "pass", "D15.3": "pass"}
    assert summary["stale_expectations"] == [
        {"implementation": "reference", "file": str(file), "entry": n, "target": target, "problem": problem}
        for n, (target, problem) in enumerate(problems, 1)
    ]
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert (
        f"| reference | `{file}` | 1 | rule D13.3 | unexpected pass: {MESSAGE} passed D13.3 (and 1 more); nothing"
        in markdown
    )
    assert '<section id="stale">' in (out / "report.html").read_text(encoding="utf-8")
    # The stale entries are stored: re-rendering the folder keeps them.
    (out / "summary.json").unlink()
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    assert _summary(out)["stale_expectations"] == summary["stale_expectations"]


def test_an_entry_matching_nothing_although_selected_is_stale_and_one_outside_the_selection_is_not(
    tmp_path: Path,
) -> None:
    entries = [
        ("rule", "D13.7"),  # Selected, but no scenario judges it (a tool-side rule).
        ("scenario", "test_d13_outcomes.py::test_no_such_scenario"),
        ("scenario", BATCH + "[side_effect=NOPE]"),
        ("rule", "D5.1"),  # Not selected: left alone.
        ("scenario", "test_d09_catalog.py::test_list_changed_is_recorded_and_not_applied[legacy]"),  # Not selected.
    ]
    text = 'implementation = "reference"\n' + "".join(
        f'[[expect]]\n{key} = "{value}"\nverdict = "fail"\nreason = "r"\n' for key, value in entries
    )
    file = _toml(tmp_path / "reference.toml", text)
    result = _run("--rules", "D13.3,D13.7,D15.3", "--out", str(tmp_path / "out"), "--expectations", str(file))
    assert result.exit_code == 1, result.stderr
    assert result.stderr.splitlines() == [
        f"toolproof: stale expectation: {file} entry 1 (rule D13.7): no scenario of the suite judges D13.7,"
        " so nothing can fail",
        f"toolproof: stale expectation: {file} entry 2 (scenario test_d13_outcomes.py::test_no_such_scenario):"
        " the suite has no scenario test_d13_outcomes.py::test_no_such_scenario",
        f"toolproof: stale expectation: {file} entry 3 (scenario {BATCH}[side_effect=NOPE]):"
        f" the suite has no cell {BATCH}[side_effect=NOPE]",
    ]


# --- the matcher on its own ---------------------------------------------------------------------------------


def _row(scenario: str, verdict: Verdict, rule: str = "D4.6", implementation: str = "impl") -> ResultRow:
    return ResultRow(
        run_id="r",
        implementation=implementation,
        rule_id=rule,
        scenario=scenario,
        verdict=verdict,
        duration_s=0.1,
        evidence="" if verdict is Verdict.PASS else f"{rule}: broke",
    )


def _file(tmp_path: Path, *entries: str, implementation: str = "impl") -> LoadedExpectations:
    text = f'implementation = "{implementation}"\n' + "".join(f"[[expect]]\n{entry}\n" for entry in entries)
    (loaded,) = load_expectations([_toml(tmp_path / "e.toml", text)], [implementation, "other"])
    return loaded


INDEX = ScenarioIndex(
    rules={"t.py::crash": frozenset({"D4.6", "D4.7"}), "t.py::pg": frozenset({"D4.9"})},
    cells={"t.py::crash[a]", "t.py::crash[b]", "t.py::pg"},
    kept={"t.py::crash", "t.py::crash[a]", "t.py::crash[b]"},
)


def test_a_failure_and_the_rules_it_left_not_judged_are_expected_by_two_entries(tmp_path: Path) -> None:
    rows = [_row("t.py::crash[a]", Verdict.FAIL), _row("t.py::crash[a]", Verdict.ERROR, rule="D4.7")]
    loaded = _file(
        tmp_path,
        'scenario = "t.py::crash"\nverdict = "fail"\nreason = "dup"',
        'scenario = "t.py::crash"\nverdict = "error"\nreason = "not judged"',
    )
    result, stale = apply_expectations("r", [loaded], rows, frozenset({"D4.6", "D4.7"}), INDEX)
    assert [row.verdict for row in result] == [Verdict.XFAIL, Verdict.XFAIL]
    assert [row.evidence.splitlines()[-1] for row in result] == [
        f"expected fail ({loaded.path} entry 1): dup",
        f"expected error ({loaded.path} entry 2): not judged",
    ]
    assert stale == []


def test_another_failing_verdict_than_expected_stays_is_not_stale_and_says_so_in_words(tmp_path: Path) -> None:
    rows = [_row("t.py::crash[a]", Verdict.ERROR)]
    loaded = _file(tmp_path, 'rule = "D4.6"\nverdict = "fail"\nreason = "r"')
    result, stale = apply_expectations("r", [loaded], rows, frozenset({"D4.6"}), INDEX)
    assert [row.verdict for row in result] == [Verdict.ERROR]
    assert result[0].evidence == (
        f"D4.6: broke\n\n{loaded.path} entry 1 (rule D4.6) expected this scenario to fail, but it errored (the"
        " scenario could not judge: the implementation or the harness raised); the entry does not describe this"
        ' failure: if it is the one you know of, write verdict = "error"'
    )
    assert stale == []


def test_a_stale_rule_entry_lists_the_scenarios_that_still_fail_so_it_can_be_narrowed(tmp_path: Path) -> None:
    rows = [
        _row("t.py::crash[a]", Verdict.FAIL),
        _row("t.py::crash[b]", Verdict.PASS),
        _row("t.py::other", Verdict.PASS),
        _row("t.py::last[x]", Verdict.FAIL),
    ]
    loaded = _file(tmp_path, 'rule = "D4.6"\nverdict = "fail"\nreason = "r"')
    _, stale = apply_expectations("r", [loaded], rows, frozenset({"D4.6"}), INDEX)
    assert [item.problem for item in stale] == [
        "unexpected pass: t.py::crash[b] passed D4.6 (and 1 more); still failing: t.py::crash[a], t.py::last[x]:"
        " narrow the entry to scenario entries for these"
    ]


def test_a_cell_entry_names_one_cell_and_a_function_entry_every_cell(tmp_path: Path) -> None:
    rows = [_row("t.py::crash[a]", Verdict.FAIL), _row("t.py::crash[b]", Verdict.PASS)]
    cell = _file(tmp_path, 'scenario = "t.py::crash[a]"\nverdict = "fail"\nreason = "r"')
    result, stale = apply_expectations("r", [cell], rows, frozenset({"D4.6"}), INDEX)
    assert [row.verdict for row in result] == [Verdict.XFAIL, Verdict.PASS]
    assert stale == []
    function = _file(tmp_path, 'scenario = "t.py::crash"\nverdict = "fail"\nreason = "r"')
    result, stale = apply_expectations("r", [function], rows, frozenset({"D4.6"}), INDEX)
    # Every row an entry names must fail: one cell passing makes the whole entry stale.
    assert [row.verdict for row in result] == [Verdict.XFAIL, Verdict.PASS]
    assert [item.problem for item in stale] == ["unexpected pass: t.py::crash[b] passed D4.6"]


def test_a_rule_and_scenario_entry_names_that_scenarios_rows_of_that_rule_only(tmp_path: Path) -> None:
    # One scenario judging two rules, failing one: the entry expects that rule's row and leaves the other's pass.
    rows = [
        _row("t.py::crash[a]", Verdict.FAIL),
        _row("t.py::crash[a]", Verdict.PASS, rule="D4.7"),
        _row("t.py::crash[b]", Verdict.FAIL),
    ]
    both = _file(tmp_path, 'rule = "D4.6"\nscenario = "t.py::crash[a]"\nverdict = "fail"\nreason = "r"')
    result, stale = apply_expectations("r", [both], rows, frozenset({"D4.6", "D4.7"}), INDEX)
    assert [row.verdict for row in result] == [Verdict.XFAIL, Verdict.PASS, Verdict.FAIL]
    assert stale == []
    assert both.entries[0].target == "rule D4.6 in scenario t.py::crash[a]"
    # The same entry naming the rule the scenario passes is stale, as any entry naming a pass.
    passing = _file(tmp_path, 'rule = "D4.7"\nscenario = "t.py::crash[a]"\nverdict = "fail"\nreason = "r"')
    _, stale = apply_expectations("r", [passing], rows, frozenset({"D4.6", "D4.7"}), INDEX)
    assert [item.problem for item in stale] == ["unexpected pass: t.py::crash[a] passed D4.7"]


def test_an_entry_applies_to_its_implementation_only(tmp_path: Path) -> None:
    rows = [_row("t.py::crash[a]", Verdict.FAIL), _row("t.py::crash[a]", Verdict.FAIL, implementation="other")]
    loaded = _file(tmp_path, 'rule = "D4.6"\nverdict = "fail"\nreason = "r"')
    result, _ = apply_expectations("r", [loaded], rows, frozenset({"D4.6"}), INDEX)
    assert [row.verdict for row in result] == [Verdict.XFAIL, Verdict.FAIL]


def test_scenarios_that_did_not_run_for_want_of_a_database_leave_their_entries_alone(tmp_path: Path) -> None:
    loaded = _file(
        tmp_path,
        'rule = "D4.9"\nverdict = "fail"\nreason = "pg only"',
        'scenario = "t.py::pg"\nverdict = "fail"\nreason = "pg only"',
    )
    assert apply_expectations("r", [loaded], [], frozenset({"D4.9"}), INDEX) == ([], [])


def test_an_entry_whose_rows_are_all_not_claimed_is_stale(tmp_path: Path) -> None:
    rows = [_row("t.py::crash[a]", Verdict.NOT_CLAIMED)]
    loaded = _file(tmp_path, 'rule = "D4.6"\nverdict = "fail"\nreason = "r"')
    result, stale = apply_expectations("r", [loaded], rows, frozenset({"D4.6"}), INDEX)
    assert result == rows
    assert [item.problem for item in stale] == [
        "impl does not claim the profile: every scenario it names is not-claimed"
    ]


# --- toolproof diff -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    before, after = tmp_path_factory.mktemp("reference"), tmp_path_factory.mktemp("witness")
    assert _run("--rules", "D13.3,D13.4", "--out", str(before)).exit_code == 0
    assert _run("--impl", WITNESS_REF, "--rules", "D13.3,D13.4", "--out", str(after)).exit_code == 1
    return before, after


def test_diff_of_a_reference_and_a_witness_run_lists_the_changed_rule_and_exits_1(two_runs: tuple[Path, Path]) -> None:
    before, after = two_runs
    result = runner.invoke(app, ["diff", str(before), str(after)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"before: {re.escape(str(before))} run \S+ \(reference\)", lines[0])
    assert re.fullmatch(rf"after:  {re.escape(str(after))} run \S+ \({WITNESS}\)", lines[1])
    assert lines[2:] == [
        "",
        "| rule | implementation | before | after |",
        "| --- | --- | --- | --- |",
        f"| D13.3 | reference → {WITNESS} | pass | fail |",
        "",
        "1 changed, 0 only before, 0 only after (—: not in that run).",
    ]
    as_json = runner.invoke(app, ["diff", str(before), str(after), "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["changes"] == [
        {
            "rule": "D13.3",
            "implementation": WITNESS,
            "before": "pass",
            "after": "fail",
            "implementation_before": "reference",
        }
    ]


def test_diff_of_identical_runs_exits_0(two_runs: tuple[Path, Path]) -> None:
    before, _ = two_runs
    result = runner.invoke(app, ["diff", str(before), str(before)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "No verdict changed."
    assert json.loads(runner.invoke(app, ["diff", str(before), str(before), "--json"]).stdout)["changes"] == []


def _stored(folder: Path, run_id: str, started: str, names: list[str], verdicts: dict[str, dict[str, Verdict]]) -> None:
    rules = sorted({rule for table in verdicts.values() for rule in table})
    info = RunInfo(
        run_id=run_id,
        implementations=names,
        selected_rules=rules,
        started_at=started,
        toolproof_version="0.1.0",
        profiles={name: ["core"] for name in names},
    )
    rows = [
        ResultRow(
            run_id=run_id,
            implementation=name,
            rule_id=rule,
            scenario="t.py::t",
            verdict=verdict,
            duration_s=0.1,
            evidence="" if verdict is Verdict.PASS else "x",
        )
        for name, table in verdicts.items()
        for rule, verdict in table.items()
    ]
    write_run(folder, info, rows)


def test_diff_takes_a_run_by_id_pairs_by_name_and_lists_what_one_run_only_holds(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    old = {"a": {"D1.1": Verdict.PASS, "D1.2": Verdict.FAIL}, "b": {"D1.1": Verdict.PASS, "D1.2": Verdict.PASS}}
    _stored(folder, "old", "2025-01-01T00:00:00+00:00", ["a", "b"], old)
    new = {"a": {"D1.1": Verdict.FAIL, "D2.1": Verdict.PASS}, "c": {"D1.1": Verdict.PASS, "D2.1": Verdict.PASS}}
    _stored(folder, "new", "2025-01-02T00:00:00+00:00", ["a", "c"], new)
    result = runner.invoke(app, ["diff", f"{folder}@old", str(folder)])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == [f"before: {folder} run old (a, b)", f"after:  {folder} run new (a, c)"]
    assert result.stdout.splitlines()[5:] == [
        "| D1.1 | a | pass | fail |",
        "| D1.1 | c | — | pass |",
        "| D1.1 | b | pass | — |",
        "| D1.2 | a | fail | — |",
        "| D1.2 | b | pass | — |",
        "| D2.1 | a | — | pass |",
        "| D2.1 | c | — | pass |",
        "",
        "1 changed, 3 only before, 3 only after (—: not in that run).",
    ]


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("{tmp}/missing", "no toolproof results in '{tmp}/missing': it is not a folder;"),
        ("{tmp}/runs@nope", "no run 'nope' in '{tmp}/runs/results.duckdb'; the runs it holds: only"),
        ("{tmp}/runs@", "'{tmp}/runs@' ends in '@': give FOLDER or FOLDER@RUN_ID"),
    ],
    ids=["missing-folder", "unknown-run-id", "empty-run-id"],
)
def test_diff_of_bad_input_is_one_line_and_exit_2(argument: str, message: str, tmp_path: Path) -> None:
    _stored(tmp_path / "runs", "only", "2025-01-01T00:00:00+00:00", ["a"], {"a": {"D1.1": Verdict.PASS}})
    result = runner.invoke(app, ["diff", str(tmp_path / "runs"), argument.format(tmp=tmp_path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("toolproof: error: " + message.format(tmp=tmp_path))


# --- drafting a file from a run -----------------------------------------------------------------------------


def test_a_drafted_file_is_refused_until_its_reasons_are_written_then_expects_the_runs_failures(
    tmp_path: Path,
) -> None:
    draft = tmp_path / "witness.toml"
    first = _run(
        "--impl", WITNESS_REF, "--rules", SMALL, "--out", str(tmp_path / "a"), "--write-expectations", str(draft)
    )
    assert first.exit_code == 1
    assert f"expectations draft: {draft} (write its reasons, then delete its draft line)" in first.stdout
    text = draft.read_text(encoding="utf-8")
    assert f'implementation = "{WITNESS}"\n' in text
    assert '[[expect]]\nrule = "D13.3"\nverdict = "fail"\nreason = ""\n' in text
    refused = _run("--impl", WITNESS_REF, "--rules", SMALL, "--out", str(tmp_path / "b"), "--expectations", str(draft))
    assert refused.exit_code == 2
    assert refused.output == (
        f"toolproof: error: expectations file '{draft}': a draft written by --write-expectations (1 of its reasons"
        " still empty): write every reason, then delete the draft line\n"
    )
    assert not (tmp_path / "b" / "results.duckdb").exists()
    lines = [line for line in text.splitlines() if not line.startswith("draft = ")]
    draft.write_text("\n".join(lines).replace('reason = ""', 'reason = "messages name the tool"') + "\n")
    written = _run("--impl", WITNESS_REF, "--rules", SMALL, "--out", str(tmp_path / "c"), "--expectations", str(draft))
    assert written.exit_code == 0, written.output
    assert _summary(tmp_path / "c")["rules"] == {"D13.1": "pass", "D13.3": "xfail", "D13.7": "not-claimed"}


def test_a_draft_gives_a_rule_entry_when_every_scenario_fails_alike_and_cell_entries_otherwise() -> None:
    rows = [
        _row("t.py::crash[a]", Verdict.FAIL),
        _row("t.py::crash[b]", Verdict.PASS),
        _row("t.py::crash[c]", Verdict.ERROR),
        _row("t.py::crash[a]", Verdict.ERROR, rule="D4.7"),
        _row("t.py::other", Verdict.ERROR, rule="D4.7"),
        _row("t.py::fine", Verdict.PASS, rule="D4.8"),
        _row("t.py::crash[a]", Verdict.FAIL, rule="D4.9", implementation="other"),
    ]
    text = draft_expectations("impl", rows, "r")
    entries = re.findall(r'\[\[expect\]\]\n(\w+) = "([^"]+)"\nverdict = "(\w+)"\nreason = ""\n', text)
    assert entries == [
        ("scenario", "t.py::crash[a]", "fail"),
        ("scenario", "t.py::crash[c]", "error"),
        ("rule", "D4.7", "error"),
    ]
    assert "# every scenario of D4.7 (2): error. D4.7: broke\n" in text


def test_a_run_without_failures_drafts_a_file_that_loads(tmp_path: Path) -> None:
    text = draft_expectations("impl", [_row("t.py::fine", Verdict.PASS)])
    assert "draft = " not in text
    (loaded,) = load_expectations([_toml(tmp_path / "e.toml", text)], ["impl"])
    assert loaded.entries == ()


def test_write_expectations_refuses_an_existing_file_or_several_implementations_before_running(
    tmp_path: Path,
) -> None:
    existing = _toml(tmp_path / "mine.toml", "# mine\n")
    result = _run("--rules", "D13.1", "--out", str(tmp_path / "o"), "--write-expectations", str(existing))
    assert (result.exit_code, result.output) == (
        2,
        f"toolproof: error: --write-expectations '{existing}' already exists: give a new file\n",
    )
    assert existing.read_text(encoding="utf-8") == "# mine\n"
    two = _run(
        "--impl", "reference", "--impl", WITNESS_REF, "--rules", "D13.1", "--out", str(tmp_path / "o"),
        "--write-expectations", str(tmp_path / "new.toml"),
    )  # fmt: skip
    assert (two.exit_code, two.output) == (
        2,
        "toolproof: error: --write-expectations drafts one implementation's file, and the run has 2: give one --impl\n",
    )
    assert not (tmp_path / "new.toml").exists()
