"""A run's expectations, as one object: read before the run, indexing its scenarios during it, applied after."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolproof.spec import ResultRow, StaleExpectation

from ._apply import apply_expectations
from ._file import LoadedExpectations, load_expectations
from ._index import ScenarioIndex


@dataclass(frozen=True)
class Expectations:
    """The expectations files of one run and the index of the scenarios it collects."""

    files: tuple[LoadedExpectations, ...]
    """The files, read and checked, in the order given."""
    index: ScenarioIndex = field(default_factory=ScenarioIndex)
    """A pytest plugin: pass it to the run's ``pytest.main`` so ``apply`` can tell why an entry matched nothing."""

    @classmethod
    def load(cls, paths: Sequence[Path], implementations: Sequence[str]) -> Expectations:
        """Read and check every file before the run starts.

        Raises:
            ExpectationsError: as ``load_expectations``.
        """
        files = tuple(load_expectations(paths, implementations))
        named = {e.scenario.split("::", 1)[0] for f in files for e in f.entries if e.scenario is not None}
        return cls(files, ScenarioIndex(modules=frozenset(named)))

    def apply(
        self, run_id: str, rows: Sequence[ResultRow], selected: frozenset[str]
    ) -> tuple[list[ResultRow], list[StaleExpectation]]:
        """The rows with the failures the files expect read ``xfail``, and the stale entries (``apply_expectations``)."""
        return apply_expectations(run_id, self.files, rows, selected, self.index)
