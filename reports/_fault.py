"""The fault matrix: what a call came to when its store failed a write at a point while the worker lived.

Laid out like the crash matrix: one table per implementation and fault mode, a row per fault point and kind, a
column per idempotency class; an entry lists the paths that ran there, passing ones grouped under what they
reached, failing ones one by one with what they reached instead.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from toolproof.spec import (
    FaultCell,
    FaultKind,
    FaultMode,
    FaultPath,
    FaultPoint,
    FaultRecovery,
    HarnessError,
    IdempotencyClass,
    SideEffect,
    Verdict,
    member_doc,
)

from ._results import RunInfo

FAULT_LEGEND: tuple[tuple[str, str], ...] = (
    ("Rows", "the write that failed (a persistence point, or the watermark inside mark_effect_sent) and how."),
    ("Columns", "the call's idempotency class."),
    (
        "Entries",
        "the paths that met the fault there (first submission, batch member, approval's answer, resumption, "
        "recovering sweep, bridge script; 'read-only' when the step's tools were READ_ONLY, 'own sweep' or 'own "
        "resubmission' when the instance whose write failed resolved the call itself, 'down' when the store stayed "
        "down for the instance), then what the submitter got and what recovery reached once the store returned. ✗ "
        "marks a cell that failed or errored, with what it reached.",
    ),
)
"""What the fault matrix's rows, columns and entries mean: both reports print it above the tables."""


@dataclass(frozen=True)
class FaultTable:
    """The cells of one implementation and fault mode, laid out as (point, kind) × idempotency class."""

    implementation: str
    mode: FaultMode
    rows: tuple[tuple[FaultPoint, FaultKind], ...]
    classes: tuple[IdempotencyClass, ...]
    cells: dict[tuple[FaultPoint, FaultKind, IdempotencyClass], tuple[FaultCell, ...]]


def fault_order(info: RunInfo) -> Callable[[FaultCell], tuple[int, ...]]:
    """Sort key: implementation as the run lists them, then mode, point, kind, class and path in spec order, the
    store coming back before it staying down, then the tools' side effect and who recovered in spec order."""
    implementations = {name: index for index, name in enumerate(info.implementations)}
    order = {
        kind: {member: index for index, member in enumerate(kind)}
        for kind in (FaultMode, FaultPoint, FaultKind, IdempotencyClass, FaultPath, SideEffect, FaultRecovery)
    }

    def key(cell: FaultCell) -> tuple[int, ...]:
        return (
            implementations.get(cell.implementation, len(implementations)),
            order[FaultMode][cell.mode],
            order[FaultPoint][cell.point],
            order[FaultKind][cell.kind],
            order[IdempotencyClass][cell.idempotency],
            order[FaultPath][cell.path],
            int(not cell.store_returns),
            # EXTERNAL_WRITE (the plain cell) first, then the others in spec order.
            int(cell.side_effect is not SideEffect.EXTERNAL_WRITE),
            order[SideEffect][cell.side_effect],
            order[FaultRecovery][cell.recovery],
        )

    return key


def fault_identity(cell: FaultCell) -> tuple[str, ...]:
    """What names one cell of a run: implementation, mode, point, kind, class, path, whether the store returned,
    the tools' side effect and who recovered."""
    return (
        cell.implementation,
        cell.mode,
        cell.point,
        cell.kind,
        cell.idempotency,
        cell.path,
        "returns" if cell.store_returns else "down",
        cell.side_effect,
        cell.recovery,
    )


def fault_tables(info: RunInfo, cells: Iterable[FaultCell]) -> list[FaultTable]:
    """One table per implementation (in the run's order) and mode that has cells."""
    ordered = sorted(cells, key=fault_order(info))
    tables: list[FaultTable] = []
    for implementation, mode in dict.fromkeys((c.implementation, c.mode) for c in ordered):
        grid: dict[tuple[FaultPoint, FaultKind, IdempotencyClass], tuple[FaultCell, ...]] = {}
        for cell in ordered:
            if (cell.implementation, cell.mode) == (implementation, mode):
                where = (cell.point, cell.kind, cell.idempotency)
                grid[where] = (*grid.get(where, ()), cell)
        rows = tuple(dict.fromkeys((point, kind) for point, kind, _ in grid))
        tables.append(FaultTable(implementation, mode, rows, tuple(IdempotencyClass), grid))
    return tables


def check_fault_cells(info: RunInfo, cells: Sequence[FaultCell]) -> None:
    """Every cell belongs to this run and one of its implementations, and none is given twice.

    Raises:
        HarnessError: naming the first cell that does not.
    """
    seen: set[tuple[str, ...]] = set()
    for cell in cells:
        identity = fault_identity(cell)
        where = "fault cell " + "/".join(str(part) for part in identity)
        if cell.run_id != info.run_id:
            raise HarnessError(f"{where} belongs to run {cell.run_id!r}, not {info.run_id!r}")
        if cell.implementation not in info.implementations:
            raise HarnessError(f"{where} names an implementation the run does not list")
        if identity in seen:
            raise HarnessError(f"{where} is given twice: record each fault cell once per run")
        seen.add(identity)


def _label(cell: FaultCell) -> str:
    """``batch``, ``batch (read-only, down)``, ``first (own sweep)``: the path, then in parentheses what sets the
    cell apart from the plain one (EXTERNAL_WRITE tools, another worker recovering, the store coming back)."""
    marks = []
    if cell.side_effect is not SideEffect.EXTERNAL_WRITE:
        marks.append(cell.side_effect.value.lower().replace("_", "-"))
    if cell.recovery is not FaultRecovery.ANOTHER_WORKER:
        marks.append(cell.recovery.value.replace("-", " "))
    if not cell.store_returns:
        marks.append("down")
    return f"{cell.path.value} ({', '.join(marks)})" if marks else cell.path.value


def entry_parts(cells: Sequence[FaultCell]) -> list[tuple[bool, str]]:
    """(failed, text) per part of one entry: passing paths grouped by what they reached, then each failing one."""
    passing: dict[str, list[str]] = {}
    parts: list[tuple[bool, str]] = []
    for cell in cells:
        if cell.verdict is Verdict.PASS:
            passing.setdefault(_reached(cell), []).append(_label(cell))
    parts += [(False, f"{', '.join(paths)}: {reached}") for reached, paths in passing.items()]
    for cell in cells:
        if cell.verdict is not Verdict.PASS:
            parts.append((True, f"✗ {_label(cell)} {cell.verdict.value}: {cell.observed} (expected {cell.expected})"))
    return parts


def _reached(cell: FaultCell) -> str:
    return f"{cell.expected}, {cell.effects} effect{'s' if cell.effects != 1 else ''} kept"


def row_label(point: FaultPoint, kind: FaultKind) -> str:
    """``claim, busy (step 8: taking the lease ...)``."""
    return f"{point.value}, {kind.value} ({member_doc(point).rstrip('.')})"


def markdown_fault_matrix(tables: Sequence[FaultTable]) -> list[str]:
    """The fault matrix section of ``report.md``; none when no store-fault scenario ran."""
    if not tables:
        return []
    lines = ["", "## Fault matrix", ""]
    lines += [f"- **{label}**: {text}" for label, text in FAULT_LEGEND]
    for table in tables:
        lines += ["", f"### {table.implementation}, {table.mode}", ""]
        lines.append("| Failed write | " + " | ".join(table.classes) + " |")
        lines.append("|" + " --- |" * (len(table.classes) + 1))
        for point, kind in table.rows:
            entries = []
            for idempotency in table.classes:
                parts = entry_parts(table.cells.get((point, kind, idempotency), ()))
                entries.append("; ".join(f"**{text}**" if failed else text for failed, text in parts) or "—")
            row = [row_label(point, kind), *entries]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    return lines


def html_fault_matrix(tables: Sequence[FaultTable]) -> list[str]:
    """The fault matrix section of ``report.html``; none when no store-fault scenario ran."""
    if not tables:
        return []
    lines = ['<section id="fault-matrix">', "<h2>Fault matrix</h2>"]
    legend = "".join(f"<dt>{html.escape(label)}</dt><dd>{html.escape(text)}</dd>" for label, text in FAULT_LEGEND)
    lines.append(f'<dl class="facts legend">{legend}</dl>')
    for table in tables:
        heads = "".join(f'<th scope="col">{html.escape(k)}</th>' for k in table.classes)
        lines.append(f"<h3>{html.escape(table.implementation)}, {html.escape(table.mode)}</h3>")
        lines.append(f'<table class="crash"><thead><tr><th scope="col">Failed write</th>{heads}</tr></thead><tbody>')
        for point, kind in table.rows:
            row = [f'<th scope="row">{html.escape(row_label(point, kind))}</th>']
            for idempotency in table.classes:
                parts = entry_parts(table.cells.get((point, kind, idempotency), ()))
                shown = "<br>".join(
                    f'<strong class="fail">{html.escape(text)}</strong>' if failed else html.escape(text)
                    for failed, text in parts
                )
                row.append(f"<td>{shown or '—'}</td>")
            lines.append(f"<tr>{''.join(row)}</tr>")
        lines.append("</tbody></table>")
    lines.append("</section>")
    return lines
