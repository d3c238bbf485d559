"""The crash matrix: what a call's disposition and effects were when its worker died at a crash point."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolproof.spec import CrashPoint, HarnessError, IdempotencyClass, Verdict

from ._results import ResultRow, RunInfo

CRASH_VERDICTS = frozenset({Verdict.PASS, Verdict.FAIL, Verdict.ERROR})
"""Verdicts a crash cell may carry: the recovery scenario judged it, or could not."""

POSITIONS: tuple[str, ...] = ("single", "first", "middle", "last")
"""Where the crashed call sat in its step's batch, in the order cells are listed."""


class CrashCell(BaseModel):
    """One crash scenario's result: a worker killed at ``crash_point`` while running a call of one idempotency class."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str = Field(min_length=1)
    """The run this cell belongs to."""
    implementation: str = Field(min_length=1)
    """Name of the implementation under test."""
    mode: str = Field(min_length=1)
    """How the crash was made, e.g. ``simulated``, ``sigkill-sqlite``, ``sigkill-postgres``."""
    crash_point: str = Field(min_length=1)
    """Where the worker died: a ``spec.CrashPoint`` value."""
    idempotency: str = Field(min_length=1)
    """The crashed call's tool class: a ``spec.IdempotencyClass`` value."""
    position: str = Field(min_length=1)
    """The call's place in its batch: ``single``, ``first``, ``middle`` or ``last``."""
    expected: str
    """The disposition recovery must reach, e.g. ``SUCCEEDED`` or ``UNCERTAIN effect_unknown``."""
    observed: str
    """The disposition recovery reached."""
    effects: int = Field(ge=0)
    """Effects the world ledger recorded for the call."""
    duplicates: int = Field(ge=0)
    """Effects beyond the first, counted for NON_IDEMPOTENT calls."""
    verdict: Verdict
    """``pass``, ``fail`` or ``error``."""
    evidence: str = ""
    """Failure text with a reproduction; ``""`` on pass."""

    @model_validator(mode="after")
    def _consistent(self) -> CrashCell:
        # Invariant: a crash cell is always judged, and a duplicate is an effect beyond the first.
        if self.verdict not in CRASH_VERDICTS:
            choices = ", ".join(sorted(CRASH_VERDICTS))
            raise ValueError(f"verdict={self.verdict.value!r} is not allowed for a crash cell: use one of {choices}")
        if self.duplicates > max(self.effects - 1, 0):
            raise ValueError(
                f"duplicates={self.duplicates!r} exceeds effects={self.effects!r} minus the first:"
                " count only effects beyond the first"
            )
        return self

    @property
    def differs(self) -> bool:
        """Whether recovery reached another disposition than the expected one."""
        return self.observed != self.expected


@dataclass(frozen=True)
class CrashTable:
    """The cells of one implementation and crash mode, laid out as crash point × idempotency class."""

    implementation: str
    """Whose cells these are."""
    mode: str
    """How the crashes were made."""
    crash_points: tuple[str, ...]
    """Row labels: every ``CrashPoint`` in spec order, then any stored point the spec no longer has."""
    classes: tuple[str, ...]
    """Column labels: every ``IdempotencyClass`` in spec order, then any unknown stored class."""
    cells: dict[tuple[str, str], tuple[CrashCell, ...]]
    """(crash point, class) to its cells in ``POSITIONS`` order; a missing key is a cell no scenario ran."""


def crash_tables(info: RunInfo, cells: Iterable[CrashCell]) -> list[CrashTable]:
    """One table per implementation (in the run's order) and mode (alphabetical) that has cells."""
    ordered = sorted(cells, key=crash_order(info))
    tables: list[CrashTable] = []
    for implementation, mode in dict.fromkeys((c.implementation, c.mode) for c in ordered):
        own = [c for c in ordered if c.implementation == implementation and c.mode == mode]
        grid: dict[tuple[str, str], tuple[CrashCell, ...]] = {}
        for cell in own:
            grid[cell.crash_point, cell.idempotency] = (*grid.get((cell.crash_point, cell.idempotency), ()), cell)
        tables.append(
            CrashTable(
                implementation=implementation,
                mode=mode,
                crash_points=_labels([p.value for p in CrashPoint], (c.crash_point for c in own)),
                classes=_labels([k.value for k in IdempotencyClass], (c.idempotency for c in own)),
                cells=grid,
            )
        )
    return tables


def crash_order(info: RunInfo) -> Callable[[CrashCell], tuple[int, str, int, str, int, str, int, str, str]]:
    """Sort key for cells: implementation as the run lists them, mode, crash point, class and position in spec order."""
    implementations = {name: index for index, name in enumerate(info.implementations)}
    points = {p.value: index for index, p in enumerate(CrashPoint)}
    classes = {k.value: index for index, k in enumerate(IdempotencyClass)}
    positions = {name: index for index, name in enumerate(POSITIONS)}

    def key(cell: CrashCell) -> tuple[int, str, int, str, int, str, int, str, str]:
        # Unknown names sort after known ones, then by name: a stored run may predate the current spec.
        return (
            implementations.get(cell.implementation, len(implementations)),
            cell.mode,
            points.get(cell.crash_point, len(points)),
            cell.crash_point,
            classes.get(cell.idempotency, len(classes)),
            cell.idempotency,
            positions.get(cell.position, len(positions)),
            cell.position,
            cell.implementation,
        )

    return key


def check_crash_cells(info: RunInfo, cells: Sequence[CrashCell]) -> None:
    """Refuse cells a run cannot hold: another run's, an unknown implementation, crash point or class, a repeat.

    Raises:
        HarnessError: the recovery suite produced a cell that does not fit the run.
    """
    seen: set[tuple[str, str, str, str, str]] = set()
    points = {p.value for p in CrashPoint}
    classes = {k.value for k in IdempotencyClass}
    for cell in cells:
        where = f"crash cell {cell.implementation}/{cell.mode}/{cell.crash_point}/{cell.idempotency}/{cell.position}"
        if cell.run_id != info.run_id:
            raise HarnessError(f"{where} does not belong to run_id={info.run_id!r}: run_id={cell.run_id!r}")
        if cell.implementation not in info.implementations:
            raise HarnessError(
                f"{where} names implementation={cell.implementation!r}, not one of {info.implementations!r}"
            )
        if cell.crash_point not in points:
            raise HarnessError(f"{where} names crash_point={cell.crash_point!r}: use a spec.CrashPoint value")
        if cell.idempotency not in classes:
            raise HarnessError(f"{where} names idempotency={cell.idempotency!r}: use a spec.IdempotencyClass value")
        identity = (cell.implementation, cell.mode, cell.crash_point, cell.idempotency, cell.position)
        if identity in seen:
            raise HarnessError(f"{where} is given twice: record each crash once per run")
        seen.add(identity)


def unlisted_failures(cells: Sequence[CrashCell], failing: Sequence[ResultRow]) -> list[CrashCell]:
    """The failing or erroring cells whose evidence no failing scenario row of the same implementation already shows.

    A recovery scenario usually fails with the very text its cell records; listing it twice would only
    lengthen the failures a reviewer reads.
    """
    shown = {(row.implementation, row.evidence) for row in failing if row.evidence}
    return [
        cell for cell in cells if cell.verdict is not Verdict.PASS and (cell.implementation, cell.evidence) not in shown
    ]


def effects_text(cell: CrashCell) -> str:
    """``1 effect`` / ``2 effects, 1 duplicate``: what the ledger saw."""
    text = f"{cell.effects} effect{'' if cell.effects == 1 else 's'}"
    if cell.duplicates:
        text += f", {cell.duplicates} duplicate{'' if cell.duplicates == 1 else 's'}"
    return text


def _labels(known: list[str], stored: Iterable[str]) -> tuple[str, ...]:
    extra = sorted(set(stored) - set(known))
    return (*known, *extra)
