"""``results.duckdb``: every run a folder holds, one transaction per run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import duckdb
from pydantic import BaseModel, ValidationError

from toolproof.spec import ConfigurationError, CrashCell, FaultCell, ResultRow, StaleExpectation

from ._columns import Column, columns_of, loaded, stored
from ._crash import crash_order
from ._results import RunInfo, row_order
from ._stale import stale_order

RESULTS_FILE = "results.duckdb"
"""Name of the database inside a results folder."""

# Each table holds one record type, a column per field (see _columns.py).
_SCHEMA: dict[str, type[BaseModel]] = {"results": ResultRow, "runs": RunInfo}
# Tables a database written by an older toolproof may lack: created on the next write, read as empty.
_OPTIONAL: dict[str, type[BaseModel]] = {
    "crash_matrix": CrashCell,
    "stale_expectations": StaleExpectation,
    "fault_matrix": FaultCell,
}
_COLUMNS: dict[str, tuple[Column, ...]] = {table: columns_of(model) for table, model in (_SCHEMA | _OPTIONAL).items()}
# Columns a table written by an older toolproof may lack, always the last of their table: added on the next
# write, read as the field's default (a NULL in a column added to old rows reads so too).
# Their position in the stored table does not matter: columns are always read and written by name.
_LATE: dict[str, frozenset[str]] = {
    "runs": frozenset(
        {"exit_code", "implementation_refs", "catalog_sha256", "shard", "whole_selection", "rerun_options", "wall_s"}
    ),
    "crash_matrix": frozenset({"path", "recovery"}),
    "fault_matrix": frozenset({"side_effect", "recovery"}),
}

_Model = TypeVar("_Model", bound=BaseModel)


def insert_run(
    db_path: Path,
    info: RunInfo,
    rows: Sequence[ResultRow],
    crash_cells: Sequence[CrashCell] = (),
    stale: Sequence[StaleExpectation] = (),
    *,
    fault_cells: Sequence[FaultCell] = (),
) -> None:
    """Append one run, its crash cells, fault cells and stale expectations to ``db_path`` (created when missing) in a
    single transaction.

    Raises:
        ConfigurationError: the file is not a toolproof results database, cannot be written,
            or already holds ``info.run_id``.
    """
    connection = _connect(db_path, read_only=False)
    # Closing without commit rolls the transaction back, so an error anywhere below leaves no trace of the run.
    try:
        connection.begin()
        if _tables(connection) & _COLUMNS.keys():
            _check_schema(connection, db_path)
        _create_missing(connection)
        if connection.execute("SELECT 1 FROM runs WHERE run_id = ?", [info.run_id]).fetchone():
            raise ConfigurationError(
                f"run_id={info.run_id!r} is already recorded in {str(db_path)!r}: give the run another id"
                " or write it to another folder"
            )
        _insert(connection, "runs", [info])
        _insert(connection, "results", rows)
        _insert(connection, "crash_matrix", crash_cells)
        _insert(connection, "stale_expectations", stale)
        _insert(connection, "fault_matrix", fault_cells)
        connection.commit()
    except duckdb.IOException as exc:
        raise ConfigurationError(
            f"cannot write results into {str(db_path.parent)!r}: {_first_line(exc)}; choose a folder you can write"
        ) from None
    finally:
        connection.close()


def load_run(out_dir: Path, run_id: str | None = None) -> tuple[RunInfo, list[ResultRow]]:
    """One run from ``out_dir/results.duckdb``: ``run_id``, or the latest by ``started_at`` when None.

    Returns:
        The run's info and its rows, implementations in the run's order, rules in catalog order.

    Raises:
        ConfigurationError: the folder, the database or the run is missing, or the file is not a
            toolproof results database.
    """
    info, rows, _, _ = load_everything(out_dir, run_id)
    return info, rows


def load_crash_cells(out_dir: Path, run_id: str | None = None) -> list[CrashCell]:
    """The crash cells of one run in ``out_dir``: ``run_id``, or the latest by ``started_at`` when None.

    A database written before the crash matrix existed holds none, and gives ``[]``.

    Returns:
        The cells, implementations in the run's order, then mode, crash point, class, position, decision path and
        recovery.

    Raises:
        ConfigurationError: as ``load_run``.
    """
    return load_everything(out_dir, run_id)[2]


def load_fault_cells(out_dir: Path, run_id: str) -> list[FaultCell]:
    """The fault cells of run ``run_id`` in ``out_dir`` (a database written before the fault matrix existed holds
    none, and gives ``[]``), in the order they were recorded.

    Raises:
        ConfigurationError: as ``load_run``.
    """
    db_path = out_dir / RESULTS_FILE
    connection = _connect(db_path, read_only=True)
    try:
        fetched = _select(connection, "fault_matrix", run_id)
        present = _present(connection, "fault_matrix")
    finally:
        connection.close()
    return _validated(FaultCell, present, fetched, db_path, f"a fault cell of run {run_id}")


def load_everything(
    out_dir: Path, run_id: str | None = None
) -> tuple[RunInfo, list[ResultRow], list[CrashCell], list[StaleExpectation]]:
    """``load_run``, ``load_crash_cells`` and the stale expectations of the same run, read in one connection."""
    if not out_dir.is_dir():
        raise ConfigurationError(
            f"no toolproof results in {str(out_dir)!r}: it is not a folder; give the folder a run was written to"
        )
    db_path = out_dir / RESULTS_FILE
    if not db_path.is_file():
        raise ConfigurationError(
            f"no toolproof results in {str(out_dir)!r}: {RESULTS_FILE} is missing; give the folder a run was written to"
        )
    connection = _connect(db_path, read_only=True)
    try:
        _check_schema(connection, db_path)
        runs = _load_infos(connection, db_path)
        info = _choose(runs, run_id, db_path)
        fetched = _select(connection, "results", info.run_id)
        crash_fetched = _select(connection, "crash_matrix", info.run_id)
        stale_fetched = _select(connection, "stale_expectations", info.run_id)
        present = {table: _present(connection, table) for table in ("results", "crash_matrix", "stale_expectations")}
    finally:
        connection.close()
    rows = _validated(ResultRow, present["results"], fetched, db_path, f"a results row of run {info.run_id}")
    cells = _validated(CrashCell, present["crash_matrix"], crash_fetched, db_path, f"a crash cell of run {info.run_id}")
    stale = _validated(
        StaleExpectation,
        present["stale_expectations"],
        stale_fetched,
        db_path,
        f"a stale expectation of run {info.run_id}",
    )
    return (
        info,
        sorted(rows, key=row_order(info)),
        sorted(cells, key=crash_order(info)),
        sorted(stale, key=stale_order(info)),
    )


def _insert(connection: duckdb.DuckDBPyConnection, table: str, records: Sequence[BaseModel]) -> None:
    # Table and column names come from the record types, never from input.
    if not records:
        return
    columns = _COLUMNS[table]
    names = ", ".join(column.name for column in columns)
    connection.executemany(
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})",
        [stored(record, columns) for record in records],
    )


def _select(connection: duckdb.DuckDBPyConnection, table: str, run_id: str) -> list[tuple[object, ...]]:
    # Table and column names come from the record types, never from input. A missing optional table holds nothing.
    if table not in _tables(connection):
        return []
    names = ", ".join(column.name for column in _present(connection, table))
    return connection.execute(f"SELECT {names} FROM {table} WHERE run_id = ?", [run_id]).fetchall()


def _present(connection: duckdb.DuckDBPyConnection, table: str) -> tuple[Column, ...]:
    """The table's columns as stored: all of them, or all but some late ones."""
    found = {
        str(name)
        for (name,) in connection.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = 'main' AND table_catalog = current_database() AND table_name = ?",
            [table],
        ).fetchall()
    }
    return tuple(column for column in _COLUMNS[table] if column.name in found)


def _fields(columns: Sequence[Column], values: Sequence[object], table: str) -> dict[str, object]:
    fields = loaded(columns, values)
    # A late column's NULL is a row written before it existed: the field's default says what that means.
    return {name: value for name, value in fields.items() if value is not None or name not in _LATE.get(table, ())}


def _validated(
    model: type[_Model], columns: Sequence[Column], fetched: list[tuple[object, ...]], db_path: Path, what: str
) -> list[_Model]:
    table = next(name for name, record in (_SCHEMA | _OPTIONAL).items() if record is model)
    try:
        return [model.model_validate(_fields(columns, values, table)) for values in fetched]
    except ValueError as exc:  # A ValidationError, or a JSON column that holds no JSON.
        raise _not_ours(db_path, f"{what} is invalid ({_first_line(exc)})") from None


def _connect(db_path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(db_path), read_only=read_only)
    except duckdb.Error as exc:
        raise _not_ours(db_path, _first_line(exc)) from None


def _tables(connection: duckdb.DuckDBPyConnection) -> set[str]:
    found = connection.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = 'main' AND table_catalog = current_database()"
    ).fetchall()
    return {str(name) for (name,) in found}


def _create_missing(connection: duckdb.DuckDBPyConnection) -> None:
    # Table and column names come from the record types, never from input, so formatting them in is safe.
    present = _tables(connection)
    for table, columns in _COLUMNS.items():
        if table in present:
            stored_names = {column.name for column in _present(connection, table)}
            for column in columns:
                if column.name not in stored_names:
                    connection.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {column.sql_type}")
            continue
        spec = ", ".join(f"{column.name} {column.sql_type}" for column in columns)
        key = ", PRIMARY KEY (run_id)" if table == "runs" else ""
        connection.execute(f"CREATE TABLE {table} ({spec}{key})")


def _check_schema(connection: duckdb.DuckDBPyConnection, db_path: Path) -> None:
    present = _tables(connection)
    for table, columns in _COLUMNS.items():
        if table in _OPTIONAL and table not in present:
            continue
        found = connection.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_schema = 'main' AND table_catalog = current_database() AND table_name = ?"
            " ORDER BY ordinal_position",
            [table],
        ).fetchall()
        if not found:
            raise _not_ours(db_path, f"it has no {table!r} table")
        wanted = {column.name: column.sql_type for column in columns}
        stored = {str(name): str(kind) for name, kind in found}
        late = _LATE.get(table, frozenset())
        # An older toolproof wrote the table without some late columns (added, at its end, on the next write).
        expected = {name: kind for name, kind in wanted.items() if name in stored or name not in late}
        if stored != expected:
            raise _not_ours(db_path, f"table {table!r} has columns {[str(n) for n, _ in found]}")


def _load_infos(connection: duckdb.DuckDBPyConnection, db_path: Path) -> list[RunInfo]:
    columns = _present(connection, "runs")
    names = ", ".join(column.name for column in columns)
    fetched = connection.execute(f"SELECT {names} FROM runs ORDER BY rowid").fetchall()
    infos: list[RunInfo] = []
    for values in fetched:
        try:
            infos.append(RunInfo.model_validate(_fields(columns, values, "runs")))
        except ValueError as exc:  # A ValidationError, or a JSON column that holds no JSON.
            raise _not_ours(db_path, f"run_id={values[0]!r} is invalid ({_first_line(exc)})") from None
    return infos


def _choose(runs: list[RunInfo], run_id: str | None, db_path: Path) -> RunInfo:
    if not runs:
        raise ConfigurationError(f"{str(db_path)!r} holds no runs: write a run there first")
    if run_id is None:
        # Latest start wins; among equal starts, the run written last.
        return max(enumerate(runs), key=lambda pair: (pair[1].started, pair[0]))[1]
    for info in runs:
        if info.run_id == run_id:
            return info
    known = ", ".join(info.run_id for info in runs)
    raise ConfigurationError(f"no run {run_id!r} in {str(db_path)!r}; the runs it holds: {known}")


def _not_ours(db_path: Path, detail: str) -> ConfigurationError:
    return ConfigurationError(
        f"{str(db_path)!r} is not a toolproof results database: {detail}; point at a folder a run was written to"
    )


def _first_line(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        # The first line of a ValidationError only counts errors; the first error says what is wrong.
        error = exc.errors()[0]
        return f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
