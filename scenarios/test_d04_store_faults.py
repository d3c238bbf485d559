"""Decisions 3 and 4, store faults: the worker lives and a write at a persistence point fails.

The harness asks the implementation, through its fault plan (``InstanceConfig.fault``), to fail one write: the
record (step 6), the hold (7), the claim (8), the watermark inside ``mark_effect_sent`` (10) or the completion
(13); as a raised database error, a lost connection or a lock that timed out; with the store coming back after
that one write, or staying down for the instance. Every point x kind x idempotency class, on every path a call
can meet the point by: a first submission, the middle call of a sequential batch, an approval's answer, a
control call's resumption, the sweep that recovers a call a crashed worker left RUNNING, and a bridge script's
first call. A store that stays down is swept over every point x kind x class on the first submission. READ_ONLY IDEMPOTENT tools meet the record and claim faults too, alone and as a batch (which
then runs in parallel), with the store back or down.

Each cell judges, from the harness's world and the rows and events another instance reads:

- the submitter's answer: the typed error ``StoreFault``, never a disposition (D3.10, D4.21, D4.22);
- the world and the row left behind: before step 10 nothing ran and no row is further than its last committed
  write (D3.10); a failed watermark leaves no effect and the row RUNNING, unmarked (D4.21); a failed completion
  leaves the row RUNNING with its watermark (D4.22); no failed write leaves an event, and after a failed hold or
  claim the call's whole event list is what its committed writes left (D3.11);
- the same instance's next call: it succeeds with one effect while the store is back, and gets ``StoreFault``,
  touching nothing, while it is down (D3.11);
- recovery, once the store returns and the lease expired: another instance sweeps and replays (held calls are
  answered again); the call runs once (D3.10; D4.3 after a failed watermark), or is resolved as after a crash
  past its effect (D4.22: UNCERTAIN for NON_IDEMPOTENT, a retry under the same key otherwise), and the other
  calls of the step or script end SUCCEEDED with one effect each. The instance whose completion failed recovers
  the call the same way, by its own sweep or its own resubmission once its lease expired (D4.22).

The same cells run over PostgreSQL given a database URL; real faults the harness makes in a database it owns
(a trigger, a terminated backend, a lock timeout, a read-only or full SQLite file) are
``test_d04_store_faults_real.py``'s.
"""

from __future__ import annotations

import pytest

from toolproof.spec import FaultKind, FaultMode, FaultPath, FaultPoint, IdempotencyClass, SideEffect

from ._faults import FaultCase, fault_cell, fault_want, reachable
from ._faults_in_place import recovered_in_place
from ._harness import Harness
from ._recovery import postgres_url

JUDGED = ("D3.10", "D3.11", "D4.3", "D4.7", "D4.21", "D4.22")
"""Every rule a cell of this module judges (``_faults.fault_want``); written here so ``--rules D3`` collects it."""


def _cell(
    mode: FaultMode,
    point: FaultPoint,
    kind: FaultKind,
    idempotency: IdempotencyClass,
    path: FaultPath,
    store_returns: bool,
) -> object:
    rules = fault_want(point, idempotency).rules
    assert set(rules) <= set(JUDGED)  # Invariant: the module names every rule its cells judge.
    marks = [pytest.mark.rules(*rules)]
    if mode is FaultMode.PLAN_POSTGRES:
        marks += [pytest.mark.needs_database]
    if path is FaultPath.BRIDGE:
        marks += [pytest.mark.profiles("bridge")]
    return pytest.param(mode, point, kind, idempotency, path, store_returns, marks=marks)


def _cells() -> list[object]:
    cells: list[object] = []
    for mode in (FaultMode.PLAN_SQLITE, FaultMode.PLAN_POSTGRES):
        for path in FaultPath:
            for point in FaultPoint:
                if not reachable(point, path):
                    continue
                for kind in FaultKind:
                    for idempotency in IdempotencyClass:
                        cells.append(_cell(mode, point, kind, idempotency, path, True))
                        if path is FaultPath.FIRST:
                            cells.append(_cell(mode, point, kind, idempotency, path, False))
    return cells


def _store_url(harness: Harness, mode: FaultMode, database_url: str | None) -> str | None:
    """The PostgreSQL store a plan-postgres cell's instance uses; None (the SQLite file) for the other modes."""
    if mode is not FaultMode.PLAN_POSTGRES:
        return None
    assert database_url is not None  # Invariant: the plugin skips needs_database cells without a URL.
    return postgres_url(harness, database_url)


# No function-level rules mark: each cell's own marks name the rules it judges.
@pytest.mark.parametrize(("mode", "point", "kind", "idempotency", "path", "store_returns"), _cells())
async def test_a_failed_store_write_acts_on_nothing_reports_nothing_and_is_recovered(
    harness: Harness,
    database_url: str | None,
    mode: FaultMode,
    point: FaultPoint,
    kind: FaultKind,
    idempotency: IdempotencyClass,
    path: FaultPath,
    store_returns: bool,
) -> None:
    case = FaultCase(point, kind, idempotency, path, store_returns, mode, _store_url(harness, mode, database_url))
    await fault_cell(harness, case)


def _read_only_cells() -> list[object]:
    cells: list[object] = []
    for mode in (FaultMode.PLAN_SQLITE, FaultMode.PLAN_POSTGRES):
        for path in (FaultPath.FIRST, FaultPath.BATCH):
            for point in (FaultPoint.RECORD, FaultPoint.CLAIM):
                for store_returns in (True, False):
                    cell = _cell(mode, point, FaultKind.ERROR, IdempotencyClass.IDEMPOTENT, path, store_returns)
                    cells.append(cell)
    return cells


@pytest.mark.parametrize(("mode", "point", "kind", "idempotency", "path", "store_returns"), _read_only_cells())
async def test_a_read_only_call_whose_write_failed_never_runs_alone_or_in_a_parallel_batch(
    harness: Harness,
    database_url: str | None,
    mode: FaultMode,
    point: FaultPoint,
    kind: FaultKind,
    idempotency: IdempotencyClass,
    path: FaultPath,
    store_returns: bool,
) -> None:
    store_url = _store_url(harness, mode, database_url)
    case = FaultCase(point, kind, idempotency, path, store_returns, mode, store_url, side_effect=SideEffect.READ_ONLY)
    await fault_cell(harness, case)


@pytest.mark.rules("D4.22", "D4.7")
@pytest.mark.parametrize("by_sweep", [True, False], ids=["sweep", "resubmit"])
@pytest.mark.parametrize("idempotency", list(IdempotencyClass))
async def test_the_instance_whose_completion_failed_recovers_the_call_as_after_a_crash(
    harness: Harness, idempotency: IdempotencyClass, by_sweep: bool
) -> None:
    await recovered_in_place(harness, idempotency, by_sweep)
