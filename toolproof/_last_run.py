"""What the results folder remembers of the last run, for the next one: how long it took, how long each cell took
(the progress line's ETA), and which cells failed (``--lf``), as pytest's cache does for its own runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from toolproof.spec import ConfigurationError, Verdict

if TYPE_CHECKING:
    from toolproof.reports import RunInfo
    from toolproof.spec import ResultRow

_FAILING = frozenset({Verdict.FAIL, Verdict.ERROR})


@dataclass(frozen=True)
class LastRun:
    """The latest run a results folder holds."""

    info: RunInfo
    rows: list[ResultRow]

    @classmethod
    def find(cls, out_dir: Path) -> LastRun | None:
        """The latest run in ``out_dir``; None when the folder holds none (or nothing toolproof can read)."""
        if not (out_dir / "results.duckdb").is_file():
            return None
        from toolproof.reports import load_run

        try:
            info, rows = load_run(out_dir)
        except ConfigurationError:
            return None
        return cls(info, rows)

    def durations(self) -> dict[tuple[str, str], float]:
        """(implementation, cell) -> how long the cell took."""
        found: dict[tuple[str, str], float] = {}
        for row in self.rows:
            if row.scenario:
                key = (row.implementation, row.scenario)
                found[key] = max(found.get(key, 0.0), row.duration_s)
        return found

    def took_s(self) -> float:
        """How long it took, start to its files (for a run recorded without that: its cells, together)."""
        return self.info.wall_s if self.info.wall_s is not None else sum(self.durations().values())

    def ran(self, refs: Sequence[str], rule_ids: Sequence[str]) -> bool:
        """Whether it ran these implementations on this selection of rules, whole (not a shard or some cells)."""
        return (
            sorted(self.info.implementation_refs.values()) == sorted(refs)
            and self.info.selected_rules == list(rule_ids)
            and self.info.shard is None
        )

    def failed_cells(self) -> list[str]:
        """The cells that failed or errored, in the order they ran."""
        return list(dict.fromkeys(row.scenario for row in self.rows if row.scenario and row.verdict in _FAILING))

    def failed_refs(self) -> list[str]:
        """The ``--impl`` of each implementation that failed a cell, in the run's order."""
        failing = {row.implementation for row in self.rows if row.scenario and row.verdict in _FAILING}
        return [self.info.implementation_refs.get(name, name) for name in self.info.implementations if name in failing]


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``), as a progress line shows a time."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"


def header(
    refs: Sequence[str],
    defaulted: bool,
    rules: str | None,
    rule_ids: Sequence[str],
    cells: Sequence[str],
    out_dir: Path,
    last: LastRun | None,
) -> str:
    """The first line of a run: what runs, against what, and how long it took the last time the folder saw it."""
    count = f"{len(rule_ids)} rule{'s' if len(rule_ids) != 1 else ''}"
    what = f"{count} (--rules {rules})" if rules else f"every rule ({count})"
    if cells:
        what += f", narrowed to {len(cells)} --cell"
    against = ", ".join(refs) + (" (the default --impl)" if defaulted else "")
    if last is not None and not cells and last.ran(refs, rule_ids):
        timing = f"it took {clock(last.took_s())} in its last run here ({last.info.run_id})"
    elif last is not None:
        timing = f"the last run in {str(out_dir)!r} ran another selection: no time to go by"
    else:
        timing = f"no earlier run in {str(out_dir)!r} to time it by"
    return f"toolproof: running {what} against {against}; {timing}"


class Eta:
    """The time a run has taken and how long it has left, for its progress lines: from the last run's cell
    durations when it ran the same selection, else from the cells done so far."""

    def __init__(self, last: LastRun | None, same_selection: bool, started: float) -> None:
        self._expected = last.durations() if last is not None else {}
        self._total = sum(self._expected.values()) if same_selection else None
        self._done = 0.0
        self._ran = 0.0
        self._started = started

    def after(self, implementation: str, cell: str, took_s: float, done: int, total: int, now: float) -> str:
        """``m:ss elapsed, ETA m:ss`` once ``done`` of ``total`` cells have run, the last being ``cell`` (which took
        ``took_s``)."""
        elapsed = now - self._started
        self._done += self._expected.get((implementation, cell), 0.0)
        self._ran += took_s
        by_mean = self._ran / done * (total - done) if done else 0.0  # Cells' own time: not the start-up's.
        left = max(0.0, self._total - self._done) if self._total else by_mean
        return f"{clock(elapsed)} elapsed, ETA {clock(left)}"
