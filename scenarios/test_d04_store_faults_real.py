"""Decisions 3 and 4, real store faults: the harness fails the implementation's PostgreSQL store itself.

The cells of ``test_d04_store_faults.py``, judged alike (``_faults.fault_cell``), with the fault made by the
harness in the database it owns instead of asked of the implementation (``_faults_real``): a trigger on the ADR's
``tool_invocations`` columns that raises (pg-trigger) or terminates the implementation's own backend
(pg-terminate) on the point's write, at every point (the hold on an approval's path) x idempotency class, with the
store coming back and staying down (every write refused); and a second session holding the call's row under the
implementation's ``lock_timeout`` (pg-lock-timeout) at the watermark and the completion, every class. They apply
to any implementation that keeps the ADR's tables in the harness's database (``--database-url``). And a full disk
under a SQLite store in the cell's directory (sqlite-full-disk, ``_faults_sqlite``): a tmpfs in a private mount
namespace, filled before the record, around the watermark or after the effect, every class; and the same store gone
read-only (sqlite-read-only): an ext4 image in the namespace that an ext4 error turns read-only at the same moments,
through the files the implementation holds open, down until it is mounted again once the faulty instance closed;
not-covered where the machine cannot mount them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolproof.spec import FaultKind, FaultMode, FaultPath, FaultPoint, IdempotencyClass, Tool

from ._faults import FaultCase, fault_cell, fault_want, reachable
from ._faults_real import FaultTrigger, RowHolder, RowLockingTool, with_lock_timeout
from ._faults_sqlite import DISK_POINTS, READ_ONLY_POINTS, sqlite_fault_cell
from ._harness import Harness
from ._recovery import postgres_url

JUDGED = ("D3.10", "D3.11", "D4.3", "D4.7", "D4.21", "D4.22")
"""Every rule a cell of this module judges (``_faults.fault_want``); written here so ``--rules D3`` collects it."""
KINDS = {FaultMode.PG_TRIGGER: FaultKind.ERROR, FaultMode.PG_TERMINATE: FaultKind.CONNECTION_LOST}
"""The kind of fault each trigger mode is."""


def _cell(mode: FaultMode, point: FaultPoint, idempotency: IdempotencyClass, path: FaultPath, returns: bool) -> object:
    rules = fault_want(point, idempotency).rules
    assert set(rules) <= set(JUDGED)  # Invariant: the module names every rule its cells judge.
    marks = [pytest.mark.rules(*rules), pytest.mark.needs_database]
    return pytest.param(mode, point, idempotency, path, returns, marks=marks)


def _sqlite_cells(points: tuple[FaultPoint, ...]) -> list[object]:
    cells: list[object] = []
    for point in points:
        for idempotency in IdempotencyClass:
            rules = fault_want(point, idempotency).rules
            cells.append(pytest.param(point, idempotency, marks=[pytest.mark.rules(*rules), pytest.mark.slow]))
    return cells


@pytest.mark.parametrize(("point", "idempotency"), _sqlite_cells(DISK_POINTS))
async def test_a_full_disk_under_a_sqlite_store_acts_on_nothing_reports_nothing_and_is_recovered(
    harness: Harness, point: FaultPoint, idempotency: IdempotencyClass
) -> None:
    await sqlite_fault_cell(harness, FaultMode.SQLITE_FULL_DISK, point, idempotency)


@pytest.mark.parametrize(("point", "idempotency"), _sqlite_cells(READ_ONLY_POINTS))
async def test_a_sqlite_store_gone_read_only_acts_on_nothing_reports_nothing_and_is_recovered(
    harness: Harness, point: FaultPoint, idempotency: IdempotencyClass
) -> None:
    await sqlite_fault_cell(harness, FaultMode.SQLITE_READ_ONLY, point, idempotency)


def _cells() -> list[object]:
    cells: list[object] = []
    for mode in KINDS:
        for point in FaultPoint:
            path = FaultPath.APPROVED if point is FaultPoint.HOLD else FaultPath.FIRST
            assert reachable(point, path)
            for idempotency in IdempotencyClass:
                cells.append(_cell(mode, point, idempotency, path, True))
                if path is FaultPath.FIRST:
                    cells.append(_cell(mode, point, idempotency, path, False))
    for point in (FaultPoint.WATERMARK, FaultPoint.COMPLETE):
        for idempotency in IdempotencyClass:
            cells.append(_cell(FaultMode.PG_LOCK_TIMEOUT, point, idempotency, FaultPath.FIRST, True))
    return cells


# No function-level rules mark: each cell's own marks name the rules it judges.
@pytest.mark.parametrize(("mode", "point", "idempotency", "path", "store_returns"), _cells())
async def test_a_real_store_fault_acts_on_nothing_reports_nothing_and_is_recovered(
    harness: Harness,
    database_url: str | None,
    mode: FaultMode,
    point: FaultPoint,
    idempotency: IdempotencyClass,
    path: FaultPath,
    store_returns: bool,
) -> None:
    assert database_url is not None  # Invariant: the plugin skips needs_database cells without a URL.
    url = postgres_url(harness, database_url)
    if mode is FaultMode.PG_LOCK_TIMEOUT:
        holder = RowHolder(url)
        store_url = with_lock_timeout(url)

        def wrap(tool: Tool) -> Tool:
            return RowLockingTool(tool, holder, point)

        case = FaultCase(point, FaultKind.BUSY, idempotency, path, store_returns, mode, store_url)
        case.wrap, case.disarm = wrap, holder.release
        harness.cleanups.append(holder.release)
    else:
        terminate = mode is FaultMode.PG_TERMINATE
        trigger = FaultTrigger(url, point, "call-0", terminate=terminate, once=store_returns)
        case = FaultCase(point, KINDS[mode], idempotency, path, store_returns, mode, url)
        arm: Callable[[], None] = trigger.arm
        case.arm, case.disarm = arm, trigger.disarm
    await fault_cell(harness, case)
    if mode is FaultMode.PG_LOCK_TIMEOUT:
        assert holder.held > 0  # Invariant: the harness held the row (else the cell above failed first).
