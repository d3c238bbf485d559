"""Store faults: the fault plan in the reference's store, over the driver protocol, and the fault matrix in reports."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import duckdb
import pytest
from helpers import free_port, wait_for_driver

from toolproof._run import run_suite
from toolproof.fakes import CrashingTool, FakeClock, World
from toolproof.reference import ReferenceImplementation
from toolproof.reports import RunInfo, load_fault_cells, rerender, write_run
from toolproof.scenarios._faults_sqlite import unavailable
from toolproof.spec import (
    ContextItem,
    FaultCell,
    FaultKind,
    FaultMode,
    FaultPath,
    FaultPlan,
    FaultPoint,
    FaultRecovery,
    HarnessError,
    IdempotencyClass,
    InstanceConfig,
    InvocationStatus,
    ProposedCall,
    SideEffect,
    StepRequest,
    StoreFault,
    TrustLabel,
    Verdict,
)

CELL = "test_d04_store_faults.py::test_a_failed_store_write_acts_on_nothing_reports_nothing_and_is_recovered"


def _info() -> RunInfo:
    return RunInfo(
        run_id="run-1",
        implementations=["ref"],
        selected_rules=["D4.21"],
        started_at="2026-12-06T03:00:00+00:00",
        toolproof_version="0.1.0",
        profiles={"ref": ["core", "recovery"]},
    )


def _cell(
    path: FaultPath,
    verdict: Verdict = Verdict.PASS,
    *,
    store_returns: bool = True,
    side_effect: SideEffect = SideEffect.EXTERNAL_WRITE,
    recovery: FaultRecovery = FaultRecovery.ANOTHER_WORKER,
) -> FaultCell:
    return FaultCell(
        run_id="run-1",
        implementation="ref",
        mode=FaultMode.PLAN_SQLITE,
        point=FaultPoint.WATERMARK,
        kind=FaultKind.BUSY,
        idempotency=IdempotencyClass.NON_IDEMPOTENT,
        path=path,
        store_returns=store_returns,
        expected="StoreFault; SUCCEEDED",
        observed="answered [SUCCEEDED]" if verdict is Verdict.FAIL else "StoreFault; recovered SUCCEEDED",
        effects=1,
        verdict=verdict,
        evidence="D4.21: the tool acted" if verdict is Verdict.FAIL else "",
        side_effect=side_effect,
        recovery=recovery,
    )


def test_the_fault_matrix_is_stored_rendered_and_rendered_again(tmp_path: Path) -> None:
    cells = [_cell(FaultPath.FIRST), _cell(FaultPath.FIRST, store_returns=False), _cell(FaultPath.BATCH, Verdict.FAIL)]
    write_run(tmp_path, _info(), [], fault_cells=cells)
    assert sorted(c.path for c in load_fault_cells(tmp_path, "run-1")) == ["batch", "first", "first"]
    for _ in range(2):  # As written, then as rendered again from the database.
        text = (tmp_path / "report.md").read_text()
        assert "## Fault matrix" in text
        assert "### ref, plan-sqlite" in text
        row = next(line for line in text.splitlines() if line.startswith("| watermark, busy"))
        assert "first, first (down): StoreFault; SUCCEEDED, 1 effect kept" in row
        assert "**✗ batch fail: answered [SUCCEEDED] (expected StoreFault; SUCCEEDED)**" in row
        assert 'href="#fault-matrix"' in (tmp_path / "report.html").read_text()
        rerender(tmp_path)


def test_read_only_and_in_place_cells_are_told_apart_stored_and_rendered(tmp_path: Path) -> None:
    """A READ_ONLY twin and the in-place recoveries share point, kind, class and path with the plain cell: each is a
    cell of its own, stored with what sets it apart, and listed after the plain one in the same entry, marked with what sets it apart."""
    read_only = SideEffect.READ_ONLY
    cells = [
        _cell(FaultPath.FIRST, recovery=FaultRecovery.OWN_RESUBMISSION),
        _cell(FaultPath.BATCH, side_effect=read_only, store_returns=False),
        _cell(FaultPath.FIRST, recovery=FaultRecovery.OWN_SWEEP),
        _cell(FaultPath.FIRST, side_effect=read_only),
        _cell(FaultPath.FIRST),
    ]
    write_run(tmp_path, _info(), [], fault_cells=cells)
    loaded = load_fault_cells(tmp_path, "run-1")
    assert sorted((c.path, c.side_effect, c.recovery, c.store_returns) for c in loaded) == sorted(
        (c.path, c.side_effect, c.recovery, c.store_returns) for c in cells
    )
    for _ in range(2):
        row = next(line for line in (tmp_path / "report.md").read_text().splitlines() if line.startswith("| watermark"))
        paths = "first, first (own sweep), first (own resubmission), first (read-only), batch (read-only, down)"
        assert f"| {paths}: StoreFault; SUCCEEDED, 1 effect kept |" in row
        assert "first (own sweep)" in (tmp_path / "report.html").read_text()
        rerender(tmp_path)


def test_a_fault_matrix_from_before_side_effects_and_in_place_cells_reads_as_plain_cells(tmp_path: Path) -> None:
    """A folder written before fault cells carried the tools' side effect and who recovered still loads (as
    EXTERNAL_WRITE, another worker), and the next run into it adds the two columns."""
    write_run(tmp_path, _info(), [], fault_cells=[_cell(FaultPath.FIRST)])
    with duckdb.connect(str(tmp_path / "results.duckdb")) as connection:
        connection.execute("ALTER TABLE fault_matrix DROP COLUMN side_effect")
        connection.execute("ALTER TABLE fault_matrix DROP COLUMN recovery")
    (old,) = load_fault_cells(tmp_path, "run-1")
    assert (old.side_effect, old.recovery) == (SideEffect.EXTERNAL_WRITE, FaultRecovery.ANOTHER_WORKER)
    later = _info().model_copy(update={"run_id": "run-2", "started_at": "2026-12-06T04:00:00+00:00"})
    in_place = _cell(FaultPath.FIRST, recovery=FaultRecovery.OWN_SWEEP).model_copy(update={"run_id": "run-2"})
    write_run(tmp_path, later, [], fault_cells=[in_place])
    assert load_fault_cells(tmp_path, "run-2") == [in_place]
    assert load_fault_cells(tmp_path, "run-1") == [old]


def test_a_run_without_fault_cells_has_no_fault_matrix(tmp_path: Path) -> None:
    write_run(tmp_path, _info(), [])
    assert "Fault matrix" not in (tmp_path / "report.md").read_text()
    assert "fault-matrix" not in (tmp_path / "report.html").read_text()
    assert load_fault_cells(tmp_path, "run-1") == []


def test_a_fault_cell_given_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="given twice"):
        write_run(tmp_path, _info(), [], fault_cells=[_cell(FaultPath.FIRST), _cell(FaultPath.FIRST)])


def _step(number: int) -> StepRequest:
    call = ProposedCall(call_id="c1", tool_name="orders.place", arguments={"item": 1}, provenance={"item": ["u"]})
    return StepRequest(
        run_id="r", step_number=number, calls=[call], context=[ContextItem(id="u", trust=TrustLabel.USER, text="x")]
    )


@pytest.mark.parametrize("kind", list(FaultKind))
@pytest.mark.parametrize("point", [FaultPoint.RECORD, FaultPoint.CLAIM, FaultPoint.WATERMARK, FaultPoint.COMPLETE])
def test_the_reference_fails_the_planned_write_once_and_serves_the_next(
    tmp_path: Path, point: FaultPoint, kind: FaultKind
) -> None:
    async def main() -> None:
        world = World()
        config = InstanceConfig(store_dir=tmp_path / "s", workspace=tmp_path, fault=FaultPlan(point=point, kind=kind))
        async with ReferenceImplementation().open(config, [CrashingTool(world)], FakeClock()) as instance:
            with pytest.raises(StoreFault, match="the store failed"):
                await instance.submit(_step(1))
            [after] = await instance.submit(_step(2))
            assert after.status is InvocationStatus.SUCCEEDED
        ran = 1 if point is FaultPoint.COMPLETE else 0
        assert len(world.effects) == ran + 1

    anyio.run(main)


def test_a_store_that_stays_down_fails_every_later_write(tmp_path: Path) -> None:
    async def main() -> None:
        world = World()
        plan = FaultPlan(point=FaultPoint.RECORD, kind=FaultKind.CONNECTION_LOST, store_returns=False)
        config = InstanceConfig(store_dir=tmp_path / "s", workspace=tmp_path, fault=plan)
        async with ReferenceImplementation().open(config, [CrashingTool(world)], FakeClock()) as instance:
            for number in (1, 2, 3):
                with pytest.raises(StoreFault):
                    await instance.submit(_step(number))
        assert world.effects == []

    anyio.run(main)


@pytest.mark.slow
def test_the_fault_plan_crosses_the_driver_protocol(tmp_path: Path) -> None:
    """A served reference passes the watermark's cells (the fault meets the tool through the tool host's callback),
    and a served witness that swallows the failed watermark fails them."""
    cells = [f"{CELL}[plan-sqlite-watermark-{kind}-NON_IDEMPOTENT-first-True]" for kind in ("error", "busy")]
    verdicts = {}
    for impl in ("reference", "toolproof.reference.witnesses:swallows_failed_watermark"):
        port = free_port()
        command = [sys.executable, "-m", "toolproof", "serve-reference", "--port", str(port), "--impl", impl]
        server = subprocess.Popen(command)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for_driver(url, server)
            outcome = run_suite([url], "D4.21", tmp_path / impl.rsplit(":", 1)[-1], cells=cells)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        [verdicts[impl]] = [v["D4.21"] for v in outcome.verdicts.values()]
    assert verdicts == {
        "reference": Verdict.PASS,
        "toolproof.reference.witnesses:swallows_failed_watermark": Verdict.FAIL,
    }


REAL = "test_d04_store_faults_real.py::test_a_real_store_fault_acts_on_nothing_reports_nothing_and_is_recovered"
DISK = "test_d04_store_faults_real.py::test_a_full_disk_under_a_sqlite_store_acts_on_nothing_reports_nothing_and_is_recovered"


@pytest.mark.slow
@pytest.mark.postgres
def test_real_faults_pass_the_reference_and_reject_a_witness(tmp_path: Path, postgres_url: str) -> None:
    """PostgreSQL's trigger (raise and terminate) and lock timeout, and a full SQLite disk: the reference passes; a
    pipeline that answers SUCCEEDED for an unstored completion fails D4.22 under each."""
    cells = [
        f"{REAL}[pg-trigger-complete-NON_IDEMPOTENT-first-True]",
        f"{REAL}[pg-terminate-complete-NON_IDEMPOTENT-first-False]",
        f"{REAL}[pg-lock-timeout-complete-NON_IDEMPOTENT-first-True]",
        f"{DISK}[complete-NON_IDEMPOTENT]",
    ]
    witness = "toolproof.reference.witnesses:succeeds_without_stored_completion"
    outcome = run_suite(["reference", witness], "D4.22", tmp_path / "run", cells=cells, database_url=postgres_url)
    assert outcome.verdicts["reference"]["D4.22"] is Verdict.PASS
    assert outcome.verdicts["witness:succeeds_without_stored_completion"]["D4.22"] is Verdict.FAIL
    modes = {cell.mode for cell in load_fault_cells(tmp_path / "run", outcome.run_id)}
    assert modes == {
        FaultMode.PG_TRIGGER,
        FaultMode.PG_TERMINATE,
        FaultMode.PG_LOCK_TIMEOUT,
        FaultMode.SQLITE_FULL_DISK,
    }


READ_ONLY = (
    "test_d04_store_faults_real.py::test_a_sqlite_store_gone_read_only_acts_on_nothing_reports_nothing_and_is_recovered"
)


@pytest.mark.slow
def test_a_sqlite_store_gone_read_only_passes_the_reference_and_rejects_a_witness(tmp_path: Path) -> None:
    """The store's ext4 file system turned read-only after the effect: the reference passes; a pipeline that answers
    SUCCEEDED for the completion it could not store fails D4.22."""
    reason = unavailable(FaultMode.SQLITE_READ_ONLY)
    if reason is not None:
        pytest.skip(f"this machine cannot make a read-only store: {reason}")
    witness = "toolproof.reference.witnesses:succeeds_without_stored_completion"
    cells = [f"{READ_ONLY}[complete-NON_IDEMPOTENT]"]
    outcome = run_suite(["reference", witness], "D4.22", tmp_path / "run", cells=cells)
    assert outcome.verdicts["reference"]["D4.22"] is Verdict.PASS
    assert outcome.verdicts["witness:succeeds_without_stored_completion"]["D4.22"] is Verdict.FAIL
    faults = load_fault_cells(tmp_path / "run", outcome.run_id)
    assert {(cell.mode, cell.store_returns) for cell in faults} == {(FaultMode.SQLITE_READ_ONLY, False)}
