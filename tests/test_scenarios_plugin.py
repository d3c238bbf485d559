"""The scenarios plugin judges a phase by what it raised, not by the report's text."""

from __future__ import annotations

import pytest

from toolproof.scenarios._plugin import NotClaimed, _judge
from toolproof.spec import Profile, Verdict


def _skipped(reason: str) -> pytest.TestReport:
    return pytest.TestReport(
        nodeid="test_x.py::test_y", location=("test_x.py", 1, "test_y"), keywords={}, outcome="skipped",
        longrepr=("test_x.py", 1, reason), when="setup",
    )  # fmt: skip


def test_not_claimed_is_a_skip_that_carries_the_implementation_and_the_missing_profiles() -> None:
    skip = NotClaimed("witness", [Profile.MCP, Profile.BRIDGE])
    assert isinstance(skip, pytest.skip.Exception)
    assert (skip.implementation, skip.missing) == ("witness", (Profile.MCP, Profile.BRIDGE))
    assert skip.msg == "not-claimed: witness does not claim profile mcp, bridge"


def test_a_not_claimed_skip_reads_not_claimed_with_no_evidence() -> None:
    skip = NotClaimed("witness", [Profile.MCP])
    assert _judge(_skipped(f"Skipped: {skip.msg}"), skip) == (Verdict.NOT_CLAIMED, "", None)


def test_any_other_skip_is_an_error_whatever_its_text_says() -> None:
    reason = "Skipped: not-claimed: a scenario that skipped itself"
    assert _judge(_skipped(reason), pytest.skip.Exception(reason)) == (
        Verdict.ERROR,
        f"scenario skipped: {reason}",
        None,
    )
