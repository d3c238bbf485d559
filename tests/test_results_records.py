"""The result records of ``toolproof.spec`` and the ``results.duckdb`` tables derived from them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from pydantic import BaseModel

from toolproof.reports import RunInfo, write_run
from toolproof.reports._columns import Column, columns_of
from toolproof.spec import (
    BatchPosition,
    CrashCell,
    CrashPoint,
    HarnessError,
    IdempotencyClass,
    RecoveryMode,
    ResultRow,
    StaleExpectation,
    Verdict,
)

TABLES: dict[str, type[BaseModel]] = {
    "results": ResultRow,
    "runs": RunInfo,
    "crash_matrix": CrashCell,
    "stale_expectations": StaleExpectation,
}
INFO = RunInfo(
    run_id="run-1",
    implementations=["ref"],
    selected_rules=["D4.6"],
    started_at="2025-03-01T10:00:00+00:00",
    toolproof_version="0.1.0",
    profiles={"ref": ["core", "recovery"]},
)
CELL = CrashCell(
    run_id="run-1",
    implementation="ref",
    mode=RecoveryMode.SIGKILL_SQLITE,
    crash_point=CrashPoint.AFTER_WATERMARK,
    idempotency=IdempotencyClass.NON_IDEMPOTENT,
    position=BatchPosition.SINGLE,
    expected="UNCERTAIN effect_unknown",
    observed="UNCERTAIN effect_unknown",
    effects=0,
    duplicates=0,
    verdict=Verdict.PASS,
)


def test_every_table_has_one_column_per_field_of_its_record_in_field_order(tmp_path: Path) -> None:
    write_run(tmp_path, INFO, [], [CELL])
    with duckdb.connect(str(tmp_path / "results.duckdb"), read_only=True) as connection:
        for table, record in TABLES.items():
            found = connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table],
            ).fetchall()
            assert [name for (name,) in found] == list(record.model_fields), table


def test_enums_are_stored_as_their_values_and_read_back_as_enums(tmp_path: Path) -> None:
    write_run(tmp_path, INFO, [], [CELL])
    with duckdb.connect(str(tmp_path / "results.duckdb"), read_only=True) as connection:
        stored = connection.execute("SELECT mode, crash_point, idempotency, position, verdict FROM crash_matrix")
        assert stored.fetchall() == [("sigkill-sqlite", "after_watermark", "NON_IDEMPOTENT", "single", "pass")]
        assert connection.execute("SELECT implementations, profiles FROM runs").fetchall() == [
            ('["ref"]', '{"ref": ["core", "recovery"]}')
        ]


def test_a_field_added_to_a_record_adds_its_column() -> None:
    class Annotated(CrashCell):
        note: str = ""
        attempts: int = 0
        retried: bool = False
        seconds: float = 0.0
        labels: tuple[str, ...] = ()

    assert columns_of(Annotated)[-5:] == (
        Column("note", "VARCHAR", is_json=False),
        Column("attempts", "INTEGER", is_json=False),
        Column("retried", "BOOLEAN", is_json=False),
        Column("seconds", "DOUBLE", is_json=False),
        Column("labels", "VARCHAR", is_json=True),
    )


def test_a_field_no_column_can_hold_is_refused_by_name() -> None:
    class Timed(BaseModel):
        when: datetime

    with pytest.raises(
        HarnessError,
        match=r"^Timed\.when has type <class 'datetime\.datetime'>, which no results column can hold:"
        r" use str, int, float, bool, a StrEnum, a list or a mapping, or one of these or None$",
    ):
        columns_of(Timed)
