"""The harness's own tests: keep nested conformance runs affordable unless a test asks for more."""

from __future__ import annotations

import os

import pytest

# Nested runs of the suite explore a little; the CI-profile test sets the full figures itself.
os.environ.setdefault("TOOLPROOF_STATEFUL_EXAMPLES", "10")
os.environ.setdefault("TOOLPROOF_RACES", "10")

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
