"""The harness's own tests: keep nested conformance runs affordable unless a test asks for more."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from toolproof._run import RunOutcome, run_suite
from toolproof.reports import load_run
from toolproof.spec import ResultRow

# Nested runs of the suite explore a little (the dev profile); the CI-profile test asks for ci itself.
os.environ.setdefault("TOOLPROOF_HYPOTHESIS_PROFILE", "dev")

POSTGRES_URL = os.environ.get("TOOLPROOF_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The PostgreSQL URL; fails loudly under CI when unreachable, skips with the reason elsewhere."""
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=5) as connection:
            connection.execute("select 1")
    except psycopg.Error as exc:
        message = f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return POSTGRES_URL


@pytest.fixture(scope="session")
def confinement() -> None:
    """Confinement for contract checks; fails loudly under CI when unavailable, skips with the reason elsewhere."""
    from toolproof.contracts import confinement_unavailable

    reason = confinement_unavailable()
    if reason is not None:
        message = f"contract checks cannot be confined here: {reason}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


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


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The whole suite against the reference in-process, once per session."""
    return run_and_load("reference", None, tmp_path_factory.mktemp("reference"))
