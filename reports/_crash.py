"""The crash matrix: what a call's disposition and effects were when its worker died at a crash point."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from toolproof.spec import (
    BatchPosition,
    CrashCell,
    CrashPoint,
    DecisionPath,
    HarnessError,
    IdempotencyClass,
    RecoveryMode,
    RecoveryVia,
    ResultRow,
    Verdict,
    member_doc,
)

from ._results import RunInfo


@dataclass(frozen=True)
class CrashTable:
    """The cells of one implementation and crash mode, laid out as crash point × idempotency class."""

    implementation: str
    """Whose cells these are."""
    mode: RecoveryMode
    """How the crashes were made."""
    crash_points: tuple[CrashPoint, ...]
    """Row labels: every ``CrashPoint`` in spec order."""
    classes: tuple[IdempotencyClass, ...]
    """Column labels: every ``IdempotencyClass`` in spec order."""
    cells: dict[tuple[CrashPoint, IdempotencyClass], tuple[CrashCell, ...]]
    """(crash point, class) to its cells in ``BatchPosition``, ``DecisionPath`` then ``RecoveryVia`` order; a missing
    key is a cell no scenario ran."""


def crash_tables(info: RunInfo, cells: Iterable[CrashCell]) -> list[CrashTable]:
    """One table per implementation (in the run's order) and mode (alphabetical) that has cells."""
    ordered = sorted(cells, key=crash_order(info))
    tables: list[CrashTable] = []
    for implementation, mode in dict.fromkeys((c.implementation, c.mode) for c in ordered):
        own = [c for c in ordered if c.implementation == implementation and c.mode == mode]
        grid: dict[tuple[CrashPoint, IdempotencyClass], tuple[CrashCell, ...]] = {}
        for cell in own:
            grid[cell.crash_point, cell.idempotency] = (*grid.get((cell.crash_point, cell.idempotency), ()), cell)
        tables.append(
            CrashTable(
                implementation=implementation,
                mode=mode,
                crash_points=tuple(CrashPoint),
                classes=tuple(IdempotencyClass),
                cells=grid,
            )
        )
    return tables


def crash_order(info: RunInfo) -> Callable[[CrashCell], tuple[int, str, int, int, int, int, int, str]]:
    """Sort key for cells: implementation as the run lists them, mode (alphabetical), then crash point, class,
    position, decision path and recovery in spec order."""
    implementations = {name: index for index, name in enumerate(info.implementations)}
    points = {p: index for index, p in enumerate(CrashPoint)}
    classes = {k: index for index, k in enumerate(IdempotencyClass)}
    positions = {p: index for index, p in enumerate(BatchPosition)}
    paths = {p: index for index, p in enumerate(DecisionPath)}
    recoveries = {r: index for index, r in enumerate(RecoveryVia)}

    def key(cell: CrashCell) -> tuple[int, str, int, int, int, int, int, str]:
        return (
            implementations.get(cell.implementation, len(implementations)),
            cell.mode.value,
            points[cell.crash_point],
            classes[cell.idempotency],
            positions[cell.position],
            paths[cell.path],
            recoveries[cell.recovery],
            cell.implementation,
        )

    return key


def cell_identity(cell: CrashCell) -> tuple[str, ...]:
    """What names one cell of a run: implementation, mode, crash point, class, position, decision path, recovery."""
    return (
        cell.implementation,
        cell.mode,
        cell.crash_point,
        cell.idempotency,
        cell.position,
        cell.path,
        cell.recovery,
    )


def cell_where(cell: CrashCell) -> str:
    """``middle: `` or ``approval, replay: ``: what sets a cell apart from the plain one (a single allowed call
    recovered by a sweep) in its grid square; ``""`` for that one."""
    parts = [
        str(value)
        for value, plain in (
            (cell.position, BatchPosition.SINGLE),
            (cell.path, DecisionPath.ALLOW),
            (cell.recovery, RecoveryVia.SWEEP),
        )
        if value != plain
    ]
    return f"{', '.join(parts)}: " if parts else ""


def check_crash_cells(info: RunInfo, cells: Sequence[CrashCell]) -> None:
    """Refuse cells a run cannot hold: another run's, an unknown implementation, a repeat.

    Raises:
        HarnessError: the recovery suite produced a cell that does not fit the run.
    """
    seen: set[tuple[str, ...]] = set()
    for cell in cells:
        identity = cell_identity(cell)
        where = "crash cell " + "/".join(identity)
        if cell.run_id != info.run_id:
            raise HarnessError(f"{where} does not belong to run_id={info.run_id!r}: run_id={cell.run_id!r}")
        if cell.implementation not in info.implementations:
            raise HarnessError(
                f"{where} names implementation={cell.implementation!r}, not one of {info.implementations!r}"
            )
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
    """``1 effect`` / ``2 effects, 1 duplicate``: what the ledger saw; a rerun an IDEMPOTENT class allows says so."""
    text = f"{cell.effects} effect{'' if cell.effects == 1 else 's'}"
    if cell.duplicates:
        text += f", {cell.duplicates} duplicate{'' if cell.duplicates == 1 else 's'}"
    elif cell.effects > 1 and cell.idempotency is IdempotencyClass.IDEMPOTENT:
        text += " (rerun: harmless for IDEMPOTENT)"
    return text


def point_text(point: CrashPoint) -> str:
    """Where a crash point is, from its spec docstring: ``between steps 1 and 2``, ``inside step 10, …``."""
    doc = member_doc(point).rstrip(".")
    return doc[:1].lower() + doc[1:]


CRASH_LEGEND: tuple[tuple[str, str], ...] = (
    (
        "Rows",
        "where the worker died: after_<step> between two of the fourteen steps; before_watermark, after_watermark"
        " and after_effect inside step 10, where the tool itself dies.",
    ),
    ("Columns", "the crashed call's idempotency class."),
    (
        "Entries",
        "the disposition recovery reached, then the effects the world ledger kept for the call. An entry without"
        " a prefix is a call alone in its step (single); first:, middle: and last: give the crashed call's place"
        " in a batch of three (simulated crashes only).",
    ),
    (
        "Colours",
        "green (✓) recovery reached the disposition the rule requires with the effects it allows; red (✗) it did"
        " not, and the expected disposition follows when it reached another; orange (⚠) the scenario could not"
        " judge; — no scenario ran that combination.",
    ),
    (
        "Effects",
        "an IDEMPOTENT call that crashed past its effect is run again, and running it twice leaves the world as"
        " once, so two effects are green; a CONDITIONALLY_IDEMPOTENT call is retried under the same key and the"
        " service deduplicates, so one; a NON_IDEMPOTENT call past its watermark is never retried (UNCERTAIN"
        " effect_unknown), and an effect beyond its first is counted as a duplicate.",
    ),
)
"""What the crash matrix's rows, columns, entries and colours mean: both reports print it above the tables."""
