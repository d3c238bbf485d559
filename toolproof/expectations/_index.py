"""Which scenarios the suite holds, gathered while pytest collects them, so an entry can be told stale."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolproof.scenarios import scenario_names


@dataclass(eq=False)  # A plugin: pytest keys hooks by it, so it hashes by identity.
class ScenarioIndex:
    """Which scenario functions the suite holds, the rules each judges, and which the run kept.

    A pytest plugin: it reads every collected scenario before the scenarios plugin deselects what the
    run does not need, so an entry for a scenario outside the selection is told from one for no scenario.
    """

    rules: dict[str, frozenset[str]] = field(default_factory=dict)
    """Scenario function (``module.py::test_name``) to the rules it judges, for every scenario collected."""
    cells: set[str] = field(default_factory=set)
    """Every scenario cell collected (``module.py::test_name[param]``; a function without cells is its own)."""
    kept: set[str] = field(default_factory=set)
    """Scenario functions and cells the run went on to execute."""
    modules: frozenset[str] = frozenset()
    """Scenario modules (``module.py``) an entry names: collected whatever the run selects, so an entry for a
    scenario outside the selection is not taken for one the suite lacks (``--rules`` skips importing modules that
    cannot judge a selected rule)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        return False if collection_path.name in self.modules else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker("rules")
            judged = frozenset(str(rule) for rule in marker.args) if marker else frozenset()
            function, cell = scenario_names(item)
            self.rules[function] = self.rules.get(function, frozenset()) | judged
            self.cells.add(cell)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.kept = {name for item in session.items for name in scenario_names(item)}
