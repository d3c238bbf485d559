"""The harness's own tests: keep nested conformance runs affordable unless a test asks for more."""

from __future__ import annotations

import os

import pytest
from helpers import POSTGRES_URL, Run, run_and_load

# Nested runs of the suite explore a little (the dev profile); the CI-profile test asks for ci itself.
os.environ.setdefault("TOOLPROOF_HYPOTHESIS_PROFILE", "dev")


LONGEST_FIRST = (
    "test_witnesses.py",
    "test_witnesses_more.py",
    "test_recovery_profile.py",
    "test_cli.py",
    "test_install.py",
    "test_bench.py",
    "test_driver.py",
    "test_sample_impl.py",
)
"""Modules that take longest (``pytest --durations``, 2026-12-03), in the order xdist should hand them out: the two
halves of the witness matrix start at once on the two workers, the other long modules follow, and the short ones
fill whatever time is left on either worker (``--dist loadfile`` assigns modules in collection order)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the longest modules first (a stable sort: every module keeps its own order of tests)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The whole suite against the reference in-process, once per session."""
    return run_and_load("reference", None, tmp_path_factory.mktemp("reference"))
