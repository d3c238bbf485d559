"""A failure's reproduction: the report gives a command that reruns exactly that cell, and ``--cell`` selects it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolproof._cli import app
from toolproof.reports import load_run
from toolproof.spec import Verdict

WITNESS = "toolproof.reference.witnesses:narrates_remote_errors"
NARRATED = "test_d13_outcomes.py::test_remote_error_text_is_enveloped_never_narrated"
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["run", "-q", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def witness_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("witness")
    code, output = run("--impl", WITNESS, "--rules", "D13", "--out", str(out))
    assert code == 1, output
    return out


def test_each_failure_names_the_command_that_reruns_its_cell_and_the_command_does(
    witness_run: Path, tmp_path: Path
) -> None:
    report = (witness_run / "report.md").read_text(encoding="utf-8")
    commands = re.findall(r"^Rerun: `(.+)`$", report, flags=re.MULTILINE)
    failing = [row for row in load_run(witness_run)[1] if row.verdict is Verdict.FAIL]
    # The witness narrates the remote's text: the message is not the table's (D13.3) and the text is not
    # enveloped (D13.4), each in more than one cell. One command per failing row, no more, no fewer.
    assert {row.rule_id for row in failing} == {"D13.3", "D13.4"}
    assert len(commands) == len(failing)
    # The narrated cell fails D13.4 (its own rule) and D13.3 (the harness's check of every outcome): two commands.
    assert sum(NARRATED in c for c in commands) == 2
    words = shlex.split(next(c for c in commands if NARRATED in c and "--rules D13.4" in c))
    assert words == [
        "toolproof",
        "run",
        "--impl",
        WITNESS,
        "--rules",
        "D13.4",
        "--cell",
        NARRATED,
        "--out",
        "toolproof-rerun",
    ]
    words[-1] = str(tmp_path / "rerun")
    code, output = run(*words[2:])
    assert code == 1, output
    info, rows = load_run(tmp_path / "rerun")
    # Exactly that cell, judged on exactly that rule: the same failure, nothing else ran.
    assert info.selected_rules == ["D13.4"]
    assert [(row.scenario, row.verdict) for row in rows] == [(NARRATED, Verdict.FAIL)]
    assert rows[0].evidence == next(r.evidence for r in failing if r.scenario == NARRATED and r.rule_id == "D13.4")


def test_the_html_report_shows_the_command_and_wraps_long_evidence(witness_run: Path) -> None:
    page = (witness_run / "report.html").read_text(encoding="utf-8")
    assert (
        f'<dt>Rerun</dt><dd><code class="command">toolproof run --impl {WITNESS} --rules D13.4 --cell {NARRATED}'
        " --out toolproof-rerun</code></dd>"
    ) in page
    rule = re.search(r"pre\.evidence \{[^}]*\}", page)
    assert rule is not None
    assert "white-space: pre-wrap" in rule[0]
    assert "overflow-x" not in rule[0]


def test_a_cell_alone_selects_the_rules_it_judges(tmp_path: Path) -> None:
    cell = "test_d15_batches.py::test_batch_with_a_non_qualifying_member_never_overlaps[idempotency=NON_IDEMPOTENT]"
    code, output = run("--cell", f"scenarios/{cell}", "--out", str(tmp_path))
    assert code == 0, output
    info, rows = load_run(tmp_path)
    assert info.selected_rules == ["D15.3"]
    assert [(row.scenario, row.verdict) for row in rows] == [(cell, Verdict.PASS)]


def test_a_cell_that_selects_nothing_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, output = run(
        "--rules",
        "D1",
        "--cell",
        "test_nothing.py::test_nothing",
        "--cell",
        NARRATED,
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2
    assert output == (
        "toolproof: error: --cell test_nothing.py::test_nothing: the suite has no such scenario or cell; name it as"
        " the report does, module.py::test_name or module.py::test_name[param]; --cell"
        f" {NARRATED}: it judges D13.4, which --rules does not select\n"
    )
    assert not (tmp_path / "out" / "results.duckdb").exists()
