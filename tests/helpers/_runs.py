"""A suite run in-process and what it stored; where the tests' PostgreSQL is."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock, Timeout

from toolproof._run import RunOutcome, run_suite
from toolproof.reports import load_run
from toolproof.spec import ResultRow, Verdict

_T = TypeVar("_T")

POSTGRES_URL = os.environ.get("TOOLPROOF_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
"""The PostgreSQL the tests use: ``$TOOLPROOF_DATABASE_URL``, else the local server (trust auth)."""


@dataclass(frozen=True)
class Run:
    """One suite run's outcome, its stored rows, and its folder."""

    outcome: RunOutcome
    rows: list[ResultRow]
    out: Path


def run_and_load(
    impls: str | list[str],
    rules: str | None,
    out: Path,
    impl_rules: dict[str, str] | None = None,
    first_failure: bool = False,
    *,
    first_rule_failure: bool = False,
    first_failure_of_any: bool = False,
    cells: Sequence[str] = (),
) -> Run:
    """Run the suite on ``impls`` side by side (all rules when ``rules`` is None; ``impl_rules`` narrows some
    implementations to rules of their own; ``first_failure`` stops a scenario at its first failed cell,
    ``first_rule_failure`` runs no cell whose rules have all failed already, ``first_failure_of_any`` stops a scenario
    at its first failed cell for any implementation; ``cells`` narrows the run to those scenarios) and read back
    what it stored."""
    outcome = run_suite(
        [impls] if isinstance(impls, str) else impls,
        rules,
        out,
        impl_rules=impl_rules,
        first_failure=first_failure,
        first_rule_failure=first_rule_failure,
        first_failure_of_any=first_failure_of_any,
        cells=cells,
    )
    return Run(outcome, load_run(out, outcome.run_id)[1], out)


@dataclass(frozen=True)
class CliRun:
    """``toolproof run …`` as a user runs it: the process's result and the folder it wrote."""

    result: subprocess.CompletedProcess[str]
    out: Path

    def run(self) -> Run:
        """The same run as ``run_and_load`` returns it, read back from what the command wrote."""
        summary = json.loads((self.out / "summary.json").read_text())
        (name,) = [summary["implementation"]] if "implementation" in summary else summary["implementations"]
        rules = summary["rules"] if "rules" in summary else summary["implementations"][name]["rules"]
        verdicts = {name: {rule: Verdict(verdict) for rule, verdict in rules.items()}}
        outcome = RunOutcome(summary["run_id"], self.out, verdicts, exit_code=summary["exit_code"])
        return Run(outcome, load_run(self.out, outcome.run_id)[1], self.out)


def shared_cli_run(root: Path, key: str, *args: str) -> CliRun:
    """``python -m toolproof run ARGS --out DIR`` once per session for ``key``, whichever worker asks first."""

    def make() -> CliRun:
        command = [sys.executable, "-m", "toolproof", "run", *args, "--out", str(root / key)]
        return CliRun(subprocess.run(command, capture_output=True, text=True, check=False), root / key)

    made = _once(root, key, make, wait=True)
    assert made is not None  # Invariant: a waiting call always gets the value.
    return made


def _once(root: Path, key: str, make: Callable[[], _T], *, wait: bool) -> _T | None:
    """``make()`` once per session for ``key`` (pickled in ``root``), whichever worker asks first; the others read
    it, after waiting for the one making it, or get None at once when ``wait`` is false."""
    lock = FileLock(root / f"{key}.lock")
    try:
        lock.acquire(timeout=-1 if wait else 0)
    except Timeout:
        return None
    try:
        stored = root / f"{key}.pickle"
        if stored.exists():
            made: _T = pickle.loads(stored.read_bytes())
            return made
        made = make()
        stored.write_bytes(pickle.dumps(made))
        return made
    finally:
        lock.release()


def shared_root(factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder this test session's xdist workers share (the session's own base folder without xdist)."""
    base = factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    root.mkdir(parents=True, exist_ok=True)
    return root


def shared_run(
    root: Path,
    key: str,
    impls: str | list[str],
    rules: str | None,
    impl_rules: dict[str, str] | None = None,
    first_failure: bool = False,
) -> Run:
    """``run_and_load`` once per session for ``key``, whichever worker asks first; the others wait and read it."""
    run = try_shared_run(root, key, impls, rules, impl_rules, first_failure, wait=True)
    assert run is not None  # Invariant: a waiting call always gets the run.
    return run


def try_shared_run(
    root: Path,
    key: str,
    impls: str | list[str],
    rules: str | None,
    impl_rules: dict[str, str] | None = None,
    first_failure: bool = False,
    *,
    first_rule_failure: bool = False,
    wait: bool = False,
) -> Run | None:
    """``shared_run``, or None at once when another worker is making that run now (and ``wait`` is false)."""

    def make() -> Run:
        return run_and_load(impls, rules, root / key, impl_rules, first_failure, first_rule_failure=first_rule_failure)

    return _once(root, key, make, wait=wait)
