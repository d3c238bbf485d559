"""The harness's own tests: keep nested conformance runs affordable unless a test asks for more."""

from __future__ import annotations

import os

import pytest
from helpers import POSTGRES_URL, CliRun, Run, shared_cli_run, shared_root

# Nested runs of the suite explore a little (the dev profile); the CI-profile test asks for ci itself.
os.environ.setdefault("TOOLPROOF_HYPOTHESIS_PROFILE", "dev")


LONGEST_FIRST = (
    "test_witnesses_part0.py",
    "test_witnesses_part1.py",
    "test_witnesses_part2.py",
    "test_witnesses_part3.py",
    "test_reference_run.py",
    "test_fake_mcp.py",
    "test_mcp_sweep.py",
    "test_check_server.py",
    "test_contracts_corpus.py",
    "test_recovery_profile.py",
    "test_cli.py",
    "test_install.py",
    "test_bench.py",
    "test_driver.py",
    "test_sample_impl.py",
)
"""Modules that take longest (``pytest --durations``, 2026-12-04), in the order xdist should hand them out: the four
parts of the witness matrix start at once, one on each worker (a worker done with its part takes over runs of
the others), the reference's whole run and the other long modules follow, and the short ones fill whatever time is
left (``--dist loadfile --no-loadscope-reorder`` assigns modules in collection order; xdist's default hands out the
modules with the most tests first)."""

LAST = ("test_witnesses.py",)
"""Modules collected last: the witness matrix as a whole, which waits for every part's runs."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the longest modules first and ``LAST`` last (a stable sort: every module keeps its order of tests)."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    rank |= {name: len(LONGEST_FIRST) + 1 + place for place, name in enumerate(LAST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))


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
def reference_cli(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """The README's main command, ``toolproof run --impl reference --out DIR``, as a user runs it: once per session,
    whichever xdist worker asks first (``test_cli.py`` judges the command, the witness matrix reads its rows)."""
    return shared_cli_run(shared_root(tmp_path_factory, "runs"), "reference", "--impl", "reference")


@pytest.fixture(scope="session")
def reference_run(reference_cli: CliRun) -> Run:
    """The whole suite against the reference, as ``reference_cli`` ran it."""
    assert reference_cli.result.returncode in (0, 1), reference_cli.result.stderr[-2000:]
    return reference_cli.run()
