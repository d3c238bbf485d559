"""The mutation gate (``mutation/``, ``nox -s mutation``): its survivors file, and the mutant hook the processes honour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from toolproof.driver import MUTANT_VARIABLE, install_mutant_from_environment
from toolproof.spec import load_catalog

ROOT = Path(__file__).resolve().parent.parent
SURVIVORS = ROOT / "mutation" / "survivors.toml"
RESULTS = ROOT / "mutation" / "results.jsonl"
CLASSES = {"equivalent", "not-constrained", "gap", "open"}


def _survivors() -> list[dict[str, object]]:
    entries: list[dict[str, object]] = tomllib.loads(SURVIVORS.read_text(encoding="utf-8")).get("survivor", [])
    return entries


def test_every_survivor_is_classified_with_a_reason() -> None:
    entries = _survivors()
    known = {rule.id for rule in load_catalog().rules}
    ids = [entry.get("id") for entry in entries]
    assert len(ids) == len(set(ids)), "a mutant is listed twice"
    for entry in entries:
        where = entry.get("id")
        for key in ("id", "module", "line", "operator", "diff", "classification", "reason"):
            assert entry.get(key) not in (None, ""), f"{where}: no {key}"
        assert isinstance(entry["line"], int), where
        assert entry["classification"] in CLASSES, f"{where}: {entry['classification']!r}"
        reason = str(entry["reason"])
        assert reason.strip() == reason, f"{where}: the reason has stray blanks"
        assert len(reason) > 20, f"{where}: the reason says too little"
        if entry["classification"] == "not-constrained":
            assert str(entry.get("clause", "")).strip(), f"{where}: which ADR clause leaves it open?"
        if entry["classification"] == "gap":
            rules = entry.get("rule")
            assert isinstance(rules, str), f"{where}: which rule ought to catch it?"
            assert rules, f"{where}: which rule ought to catch it?"
            assert set(rules.split(",")) <= known, f"{where}: {rules} names a rule the catalog does not have"


def test_every_surviving_mutant_of_the_committed_run_is_in_the_survivors_file() -> None:
    rows = [json.loads(line) for line in RESULTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    latest = {row["id"]: row for row in rows}  # A mutant judged again: its latest record counts, as in the score.
    survived = {i for i, row in latest.items() if row["outcome"] in ("survived", "uncovered")}
    listed = {entry["id"] for entry in _survivors()}
    assert survived - listed == set()
    assert listed - survived == set(), "an entry names no surviving mutant of results.jsonl"


def test_an_empty_variable_installs_nothing_and_a_malformed_one_is_refused() -> None:
    assert install_mutant_from_environment({MUTANT_VARIABLE: ""}) is None
    with pytest.raises(ValueError, match=r"package\.module=/path"):
        install_mutant_from_environment({MUTANT_VARIABLE: "toolproof.reference._keys"})


_PROBE = (
    "import sys; from toolproof.driver import install_mutant_from_environment as i; i();"
    " import toolproof.reference._keys as k; print(k.__file__); print(k.MUTANT)"
)


@pytest.mark.slow
def test_the_mutant_is_imported_in_place_of_its_module_with_the_modules_file(tmp_path: Path) -> None:
    real = ROOT / "reference" / "_keys.py"
    mutant = tmp_path / "mutant.py"
    mutant.write_text(real.read_text(encoding="utf-8") + "\nMUTANT = 'served'\n", encoding="utf-8")
    env = os.environ | {MUTANT_VARIABLE: f"toolproof.reference._keys={mutant}"}
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(real), "served"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["-m", "toolproof.scenarios._worker", "reference"],
        ["-m", "toolproof.driver", "reference", "0", "ROOT", "alone"],
    ],
    ids=["worker-zygote", "driver"],
)
def test_the_processes_the_scenarios_start_import_the_mutant(tmp_path: Path, command: list[str]) -> None:
    # A mutant that stops its importer: the process ends with its message before it serves anything.
    mutant = tmp_path / "mutant.py"
    mutant.write_text("raise SystemExit('the mutant was imported')\n", encoding="utf-8")
    env = os.environ | {MUTANT_VARIABLE: f"toolproof.reference._keys={mutant}"}
    argv = [sys.executable, *(str(tmp_path) if part == "ROOT" else part for part in command)]
    done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "the mutant was imported" in done.stderr
