"""``toolproof run --shard K/N``: a deterministic share of the scenario cells, balanced by earlier durations.

Every shard collects the same cells in the same order (same catalog, implementations and selection), so each can
work out the whole assignment on its own and keep its part: no coordination between CI machines.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from toolproof.spec import ConfigurationError

from ._plugin import _rules_of, scenario_names

_SHARD = re.compile(r"(\d+)/(\d+)")


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
    """Cell key (``cell_key``) to seconds, from an earlier run; empty: balance by count."""
    judged: frozenset[str] = frozenset()
    """After collection: the rules the kept cells are tagged with (before the run's selection narrows them)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keys = [_key(item) for item in items]
        assigned = assign([item.nodeid for item in items], weights(keys, self.durations), self.shard.count)
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
