"""A suite run in-process and what it stored; where the tests' PostgreSQL is."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from toolproof._run import RunOutcome, run_suite
from toolproof.reports import load_run
from toolproof.spec import ResultRow

POSTGRES_URL = os.environ.get("TOOLPROOF_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
"""The PostgreSQL the tests use: ``$TOOLPROOF_DATABASE_URL``, else the local server (trust auth)."""


@dataclass(frozen=True)
class Run:
    """One suite run's outcome, its stored rows, and its folder."""

    outcome: RunOutcome
    rows: list[ResultRow]
    out: Path


def run_and_load(impls: str | list[str], rules: str | None, out: Path) -> Run:
    """Run the suite on ``impls`` side by side (all rules when ``rules`` is None) and read back what it stored."""
    outcome = run_suite([impls] if isinstance(impls, str) else impls, rules, out)
    return Run(outcome, load_run(out, outcome.run_id)[1], out)


def shared_root(factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder this test session's xdist workers share (the session's own base folder without xdist)."""
    base = factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    root.mkdir(parents=True, exist_ok=True)
    return root


def shared_run(root: Path, key: str, impls: str | list[str], rules: str | None) -> Run:
    """``run_and_load`` once per session for ``key``, whichever worker asks first; the others wait and read it."""
    with FileLock(root / f"{key}.lock"):
        stored = root / f"{key}.pickle"
        if stored.exists():
            run: Run = pickle.loads(stored.read_bytes())
            return run
        run = run_and_load(impls, rules, root / key)
        stored.write_bytes(pickle.dumps(run))
        return run
