"""``toolproof run --shard K/N``: a deterministic share of the scenario cells, balanced by earlier durations.

Every shard collects the same cells in the same order (same catalog, implementations and selection), so each can
work out the whole assignment on its own and keep its part: no coordination between CI machines.

Without an earlier run (``--shard-durations``, or the last run in ``--out`` for ``--jobs``), the cells are weighed by
``cell_seconds.json``: each scenario's mean cell time in a whole run against the reference, shipped with the suite
(``python -m toolproof._cell_seconds RESULTS_FOLDER`` writes it again from a run's folder). A scenario it does
not know weighs the median of those it knows.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from toolproof.spec import ConfigurationError

from ._plugin import _rules_of, scenario_names

_SHARD = re.compile(r"(\d+)/(\d+)")
SHIPPED = Path(__file__).with_name("cell_seconds.json")
"""Scenario (``module.py::test_name``) -> mean seconds of its cells in a whole run against the reference."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``, both counted from 1 as ``--shard`` writes them."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` with 1 ≤ K ≤ N.

        Raises:
            ConfigurationError: the text is not of that form.
        """
        found = _SHARD.fullmatch(text.strip())
        if found is None:
            raise ConfigurationError(f"--shard {text!r}: write it K/N, e.g. 2/3 (the second of three shards)")
        index, count = int(found[1]), int(found[2])
        if count < 1 or not 1 <= index <= count:
            raise ConfigurationError(f"--shard {text}: K must be between 1 and N, and N at least 1")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def cell_key(implementation: str, cell: str) -> str:
    """How a cell is known across runs: its implementation and its name as reports give it."""
    return f"{implementation}::{cell}"


def scenario_of(cell: str) -> str:
    """``module.py::test_name`` of a cell's name (its parameters dropped)."""
    return cell.split("[", 1)[0]


def shipped_seconds() -> dict[str, float]:
    """``cell_seconds.json``: each scenario's mean cell time against the reference (empty when it is missing)."""
    try:
        loaded = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def shipped_durations(keys: Sequence[str]) -> dict[str, float]:
    """Each cell key's weight from ``cell_seconds.json``, for a run with no earlier one to balance by."""
    seconds = shipped_seconds()
    scenarios = {key: scenario_of(key.split("::", 1)[1]) for key in keys}  # A key is cell_key(implementation, cell).
    return {key: seconds[name] for key, name in scenarios.items() if name in seconds}


def write_shipped(cells: Mapping[str, float], target: Path = SHIPPED) -> int:
    """Write ``cell_seconds.json`` from cell name -> seconds of one whole run; returns how many scenarios it holds."""
    by_scenario: dict[str, list[float]] = {}
    for cell, seconds in cells.items():
        by_scenario.setdefault(scenario_of(cell), []).append(seconds)
    means = {name: round(statistics.fmean(times), 3) for name, times in sorted(by_scenario.items())}
    target.write_text(json.dumps(means, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return len(means)


def weights(keys: Sequence[str], durations: Mapping[str, float]) -> list[float]:
    """Each cell's weight: its duration in an earlier run, else the median of the recorded ones (1.0 when none is
    recorded, which balances by count)."""
    known = [durations[key] for key in keys if key in durations]
    default = statistics.median(known) if known else 1.0
    return [durations.get(key, default) for key in keys]


def assign(names: Sequence[str], weight: Sequence[float], count: int) -> list[int]:
    """The shard (0-based) of each cell: heaviest first onto the least-loaded shard, ties to the lower shard.

    ``names`` order cells of equal weight, so the same cells and weights give the same assignment in every process.
    """
    order = sorted(range(len(names)), key=lambda i: (-weight[i], names[i]))
    loads = [0.0] * count
    assigned = [0] * len(names)
    for i in order:
        shard = min(range(count), key=lambda s: (loads[s], s))
        assigned[i] = shard
        loads[shard] += weight[i]
    return assigned


@dataclass
class ShardSelector:
    """A pytest plugin keeping one shard's cells of what the scenarios plugin selected."""

    shard: Shard
    durations: Mapping[str, float] = field(default_factory=dict)
    """Cell key (``cell_key``) to seconds, from an earlier run; empty: by ``cell_seconds.json``."""
    judged: frozenset[str] = frozenset()
    """After collection: the rules the kept cells are tagged with (before the run's selection narrows them)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keys = [_key(item) for item in items]
        durations = self.durations or shipped_durations(keys)
        assigned = assign([item.nodeid for item in items], weights(keys, durations), self.shard.count)
        keep = [item for item, shard in zip(items, assigned, strict=True) if shard == self.shard.index - 1]
        dropped = [item for item, shard in zip(items, assigned, strict=True) if shard != self.shard.index - 1]
        judged = {rule for item in keep for rule in _rules_of(item)}
        self.judged = frozenset(judged)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


def _key(item: pytest.Item) -> str:
    callspec = getattr(item, "callspec", None)
    implementation = callspec.params.get("implementation") if callspec is not None else None
    return cell_key(getattr(implementation, "name", ""), scenario_names(item)[1])
