"""The scenarios plugin judges a phase by what it raised, not by the report's text."""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

import pytest

from toolproof.scenarios import PLUGIN
from toolproof.scenarios._plugin import NotClaimed, _judge, may_judge
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


class _Tags:
    """Collects each scenario cell's module and the rules its marker names."""

    def __init__(self) -> None:
        self.rules: dict[Path, set[str]] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker("rules")
            self.rules.setdefault(item.path, set()).update(marker.args if marker else ())


def _collect(*options: str) -> _Tags:
    tags = _Tags()
    folder = Path(str(files("toolproof.scenarios")))
    args = ["--pyargs", "toolproof.scenarios", "-p", PLUGIN, "--collect-only", "-p", "no:cacheprovider"]
    args += ["-c", os.devnull, "--rootdir", str(folder), "-p", "no:terminal", *options]
    assert pytest.main(args, plugins=[tags]) == pytest.ExitCode.OK
    return tags


def test_every_scenario_module_judges_only_rules_its_text_names() -> None:
    """``--rules`` skips importing a module that cannot judge a selected rule, read from its text (``may_judge``):
    a module whose cells judge a rule it does not name would silently drop out of such a run."""
    tags = _collect()
    assert len(tags.rules) >= 30
    beyond = {
        path.name: sorted(rules - may_judge(path)) for path, rules in tags.rules.items() if rules - may_judge(path)
    }
    assert beyond == {}


def test_a_rules_selection_imports_only_the_modules_that_can_judge_it() -> None:
    tags = _collect("--toolproof-rules", "D18")
    assert tags.rules, "no D18 scenario collected"
    assert {path.name for path in tags.rules} == {
        path.name
        for path in Path(str(files("toolproof.scenarios"))).glob("test_*.py")
        if "D18.1" in may_judge(path) or "D18.2" in may_judge(path)
    }
    assert all(
        name.startswith("test_d18_") or "D18" in " ".join(rules)
        for name, rules in ((p.name, r) for p, r in tags.rules.items())
    )
