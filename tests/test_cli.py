"""The toolproof command: what users see, including how bad input is refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CliRun
from typer.testing import CliRunner

from toolproof import __version__
from toolproof._cli import app
from toolproof.reports import load_run
from toolproof.spec import Profile, load_catalog

runner = CliRunner()


def _toolproof(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"toolproof {__version__}"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["run"],
        ["rules"],
        ["report"],
        ["diff"],
        ["impls"],
        ["check-tool"],
        ["check-server"],
        ["fake-mcp"],
        ["bench"],
        ["supervise"],
    ],
)
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_run_help_names_the_expectations_option() -> None:
    result = runner.invoke(app, ["run", "--help"])
    assert "--expectations" in result.output
    assert "stale" in result.output


def test_run_help_keeps_bracketed_text() -> None:
    """Rich reads ``[param]`` as a style tag and drops it unless it is escaped."""
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "240"})
    assert "module.py::test_name[param]" in result.output


def test_rules_json_covers_every_decision_with_well_formed_unique_ids() -> None:
    result = runner.invoke(app, ["rules", "--json"])
    assert result.exit_code == 0
    payload = json.loads(result.output)
    ids = [rule["id"] for rule in payload["rules"]]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"D([1-9]|1[0-8])\.[1-9][0-9]*", rule_id) for rule_id in ids)
    assert {rule["decision"] for rule in payload["rules"]} == set(range(1, 19))
    assert [d["number"] for d in payload["decisions"]] == list(range(1, 19))
    assert 60 <= len(ids) <= 150  # Atomic rules: bundled ones were split, 121 after the D2-D17 splits.


def test_rules_can_be_filtered_by_profile() -> None:
    result = runner.invoke(app, ["rules", "--json", "--profile", "mcp"])
    profiles = {rule["profile"] for rule in json.loads(result.output)["rules"]}
    assert profiles == {"mcp"}


def test_impls_lists_the_reference_and_the_witnesses() -> None:
    result = runner.invoke(app, ["impls"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0] == "reference"
    assert "toolproof.reference.witnesses:status_honouring" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["run", "--impl", "nonesuch"],
            "toolproof: error: unknown implementation 'nonesuch': registered names are reference; or give package.module:factory",
        ),
        (
            ["run", "--impl", "no_such_module:factory"],
            "toolproof: error: implementation 'no_such_module:factory': module 'no_such_module' cannot be imported (ModuleNotFoundError: No module named 'no_such_module')",
        ),
        (
            ["run", "--rules", "D99"],
            "toolproof: error: rule selector 'D99' matches no rule in the catalog: see `toolproof rules`",
        ),
        (["run", "--rules", "D1.99"], "toolproof: error: unknown rule id 'D1.99': see `toolproof rules`"),
        (
            ["run", "--rules", "banana"],
            "toolproof: error: rule selector 'banana' is neither a decision (D5) nor a rule id (D5.3): see `toolproof rules`",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = _toolproof(*args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.strip() == message
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_unwritable_out_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = _toolproof("run", "--out", str(blocker / "out"))
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"toolproof: error: --out {str(blocker / 'out')!r} is not a writable directory: {str(blocker)!r} is a file"
    )
    assert blocker.read_text() == "not a folder"


def test_report_of_a_folder_without_results_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _toolproof("report", str(tmp_path))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("toolproof: error: ")


@pytest.mark.slow  # The whole suite against the reference (the session's shared run): not the quick loop's.
def test_run_against_the_reference_writes_the_report_files(reference_cli: CliRun) -> None:
    out, result = reference_cli.out, reference_cli.result
    assert result.returncode == 0, result.stdout + result.stderr
    assert {p.name for p in out.iterdir()} == {
        "results.duckdb",
        "summary.json",
        "report.md",
        "report.html",
        "junit.xml",
    }
    summary = json.loads((out / "summary.json").read_text())
    assert summary["implementation"] == "reference"
    catalog = load_catalog()
    assert list(summary["rules"]) == [rule.id for rule in catalog.rules]
    _, rows = load_run(out)
    covered = {row.rule_id for row in rows if row.scenario}
    assert {1, 2, 3, 13} <= {catalog.rule(rule_id).decision for rule_id in covered}
    for rule in catalog.rules:
        expected = "pass" if rule.id in covered else ("review-only" if rule.review_only else "not-covered")
        if rule.profile is Profile.CONTRACT:
            expected = "not-claimed"  # Tool-side rules: no pipeline claims them.
        assert summary["rules"][rule.id] == expected, rule.id
    assert re.search(r"\[\s*1/\d+ [^\]]*elapsed, ETA [^\]]*\] pass", result.stderr), "no progress lines on stderr"


def test_run_against_a_witness_exits_1_and_names_the_rule(tmp_path: Path) -> None:
    result = _toolproof(
        "run",
        "--impl",
        "toolproof.reference.witnesses:narrates_remote_errors",
        "--rules",
        "D13",
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 1
    assert "fail: D13.4" in result.stdout
    report = (tmp_path / "report.md").read_text()
    assert "### witness:narrates_remote_errors: D13.4" in report
    assert "the remote error text reached message" in report


def test_report_rerenders_the_same_markdown(tmp_path: Path) -> None:
    assert _toolproof("run", "--rules", "D1", "--out", str(tmp_path), "-q").returncode == 0
    before = (tmp_path / "report.md").read_text()
    (tmp_path / "report.md").unlink()
    result = _toolproof("report", str(tmp_path))
    assert result.returncode == 0
    assert (tmp_path / "report.md").read_text() == before


def test_fake_mcp_list_prints_one_line_per_server_however_narrow_the_terminal() -> None:
    from toolproof.fakes.mcp import SERVERS

    result = CliRunner().invoke(app, ["fake-mcp", "--list"], terminal_width=40)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split("\t", 1)[0] for line in lines] == list(SERVERS)
