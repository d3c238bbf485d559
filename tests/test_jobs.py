"""``toolproof run --jobs N``: the shards run side by side in processes of their own and merge into one run with the
verdicts of one process, a failure in any shard fails the run, and what cannot be split is refused in one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolproof.reports import diff_runs, load_run

pytestmark = pytest.mark.slow

RULES = "D13,D18"
"""Quick decisions, with cells enough for three shards."""
WITNESS = "toolproof.reference.witnesses:chatty_messages"
"""Fails D13.3 (the table's message with the tool name appended), a rule the harness checks on every cell."""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolproof", "run", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)


def test_a_run_in_jobs_gives_the_verdicts_of_one_process(tmp_path: Path) -> None:
    """A witness failing D13.3 on every cell and passing D18: the merged run keeps both, as one process gives them
    (the reference's whole run in shards is compared the same way by tests/test_shard.py's merge)."""
    impl = WITNESS
    whole = _run("--impl", impl, "--rules", RULES, "--out", str(tmp_path / "whole"), cwd=tmp_path)
    jobs = _run("--impl", impl, "--rules", RULES, "--out", str(tmp_path / "jobs"), "--jobs", "3", cwd=tmp_path)
    assert jobs.returncode == whole.returncode == 1, jobs.stderr
    assert not diff_runs(load_run(tmp_path / "whole"), load_run(tmp_path / "jobs")).changed
    info, rows = load_run(tmp_path / "jobs")
    assert info.shard is None
    assert info.wall_s is not None
    cells = sorted(row.scenario for row in rows if row.scenario and row.rule_id == "D13.3")
    assert cells == sorted(row.scenario for row in load_run(tmp_path / "whole")[1] if row.rule_id == "D13.3")
    assert len(cells) == len(set(cells))  # Every cell ran once, in one shard.
    shards = {line.split(" ", 2)[1] for line in jobs.stderr.splitlines() if line.startswith("shard ")}
    assert shards == {"1/3", "2/3", "3/3"}  # Each shard's progress is passed on, named by its shard.
    assert jobs.stdout.splitlines()[0] == whole.stdout.splitlines()[0]  # The same summary line.
    assert sum("toolproof: witness:chatty_messages: D13.3" in line for line in jobs.stderr.splitlines()) == 1
    assert "pass" in {verdict for rule, verdict in _rules(tmp_path / "jobs").items() if rule.startswith("D18")}


def _rules(out: Path) -> dict[str, str]:
    summary = json.loads((out / "summary.json").read_text())
    return {rule: str(verdict) for rule, verdict in summary["rules"].items()}


def test_more_jobs_than_cells_leaves_shards_empty_and_the_run_whole(tmp_path: Path) -> None:
    whole = _run("--rules", "D18", "--out", str(tmp_path / "whole"), "-q", cwd=tmp_path)
    jobs = _run("--rules", "D18", "--out", str(tmp_path / "jobs"), "-q", "--jobs", "8", cwd=tmp_path)
    assert jobs.returncode == whole.returncode == 0, jobs.stderr
    assert not diff_runs(load_run(tmp_path / "whole"), load_run(tmp_path / "jobs")).changed
    assert "shard" not in jobs.stderr  # --quiet: no progress from any shard.


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--shard", "1/2"], "give --shard K/N or --jobs N, not both"),
        (["-x"], "-x and --maxfail stop one process's run"),
        (["--maxfail", "2"], "-x and --maxfail stop one process's run"),
        (["--write-expectations", "draft.toml"], "--write-expectations drafts from one process's run"),
        (["--impl", "no.such.module:make"], "shard 1/2: "),
    ],
)
def test_what_jobs_cannot_split_is_refused_in_one_line(options: list[str], said: str, tmp_path: Path) -> None:
    result = _run("--rules", "D18", "--out", str(tmp_path / "out"), "--jobs", "2", *options, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # The header line at most, and the one line.
    assert not (tmp_path / "out" / "results.duckdb").exists()
    assert not (tmp_path / "draft.toml").exists()


def test_cells_chosen_by_name_run_in_one_process(tmp_path: Path) -> None:
    cell = "test_d18_storage.py::test_the_store_has_no_registry_snapshot_table"
    result = _run("--cell", cell, "--out", str(tmp_path / "out"), "--jobs", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--jobs 2: the cells --cell or --lf chose run in one process" in result.stderr


def _shard_processes(out: Path) -> list[int]:
    """Processes whose command line runs a shard of a run into ``out``'s scratch (toolproof-shards-…)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--shard" in command and any(b"toolproof-shards-" in part for part in command):
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the shards' processes")
def test_ctrl_c_stops_every_shard_and_writes_nothing(tmp_path: Path) -> None:
    before = set(_shard_processes(tmp_path))
    command = [sys.executable, "-m", "toolproof", "run", "--rules", "D4", "--out", str(tmp_path / "out"), "-j", "2"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    assert process.stderr is not None
    for line in process.stderr:  # Interrupted once a shard has judged a cell.
        if line.startswith("shard "):
            break
    process.send_signal(signal.SIGINT)
    _stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "out" / "results.duckdb").exists()
    deadline = time.monotonic() + 30
    while set(_shard_processes(tmp_path)) - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not set(_shard_processes(tmp_path)) - before, "a shard's process outlived the interrupted run"
