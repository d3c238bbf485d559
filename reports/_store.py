"""``results.duckdb``: every run a folder holds, one transaction per run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import duckdb
from pydantic import BaseModel, ValidationError

from toolproof.spec import ConfigurationError, Verdict

from ._crash import CrashCell, crash_order
from ._results import ResultRow, RunInfo, row_order
from ._stale import StaleExpectation, stale_order

RESULTS_FILE = "results.duckdb"
"""Name of the database inside a results folder."""

_RESULTS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("implementation", "VARCHAR"),
    ("rule_id", "VARCHAR"),
    ("scenario", "VARCHAR"),
    ("verdict", "VARCHAR"),
    ("duration_s", "DOUBLE"),
    ("evidence", "VARCHAR"),
)
# JSON lives in VARCHAR columns: DuckDB's JSON type is an extension, and loading one may reach the network.
_RUNS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("implementations", "VARCHAR"),
    ("selected_rules", "VARCHAR"),
    ("started_at", "VARCHAR"),
    ("toolproof_version", "VARCHAR"),
    ("profiles", "VARCHAR"),
)
_CRASH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("implementation", "VARCHAR"),
    ("mode", "VARCHAR"),
    ("crash_point", "VARCHAR"),
    ("idempotency", "VARCHAR"),
    ("position", "VARCHAR"),
    ("expected", "VARCHAR"),
    ("observed", "VARCHAR"),
    ("effects", "INTEGER"),
    ("duplicates", "INTEGER"),
    ("verdict", "VARCHAR"),
    ("evidence", "VARCHAR"),
)
_STALE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("implementation", "VARCHAR"),
    ("file", "VARCHAR"),
    ("entry", "INTEGER"),
    ("target", "VARCHAR"),
    ("problem", "VARCHAR"),
)
_SCHEMA = {"results": _RESULTS_COLUMNS, "runs": _RUNS_COLUMNS}
# Tables a database written by an older toolproof may lack: created on the next write, read as empty.
_OPTIONAL = {"crash_matrix": _CRASH_COLUMNS, "stale_expectations": _STALE_COLUMNS}

_Model = TypeVar("_Model", bound=BaseModel)


def insert_run(
    db_path: Path,
    info: RunInfo,
    rows: Sequence[ResultRow],
    crash_cells: Sequence[CrashCell] = (),
    stale: Sequence[StaleExpectation] = (),
) -> None:
    """Append one run, its crash cells and its stale expectations to ``db_path`` (created when missing) in a
    single transaction.

    Raises:
        ConfigurationError: the file is not a toolproof results database, cannot be written,
            or already holds ``info.run_id``.
    """
    connection = _connect(db_path, read_only=False)
    # Closing without commit rolls the transaction back, so an error anywhere below leaves no trace of the run.
    try:
        connection.begin()
        if _tables(connection) & set(_SCHEMA | _OPTIONAL):
            _check_schema(connection, db_path)
        _create_missing(connection)
        if connection.execute("SELECT 1 FROM runs WHERE run_id = ?", [info.run_id]).fetchone():
            raise ConfigurationError(
                f"run_id={info.run_id!r} is already recorded in {str(db_path)!r}: give the run another id"
                " or write it to another folder"
            )
        connection.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)",
            [
                info.run_id,
                json.dumps(info.implementations),
                json.dumps(info.selected_rules),
                info.started_at,
                info.toolproof_version,
                json.dumps(info.profiles, sort_keys=True),
            ],
        )
        if rows:
            connection.executemany(
                "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    [r.run_id, r.implementation, r.rule_id, r.scenario, r.verdict.value, r.duration_s, r.evidence]
                    for r in rows
                ],
            )
        _insert(connection, "crash_matrix", _CRASH_COLUMNS, crash_cells)
        _insert(connection, "stale_expectations", _STALE_COLUMNS, stale)
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
        The cells, implementations in the run's order, then mode, crash point, class and position.

    Raises:
        ConfigurationError: as ``load_run``.
    """
    return load_everything(out_dir, run_id)[2]


def load_everything(
    out_dir: Path, run_id: str | None = None
) -> tuple[RunInfo, list[ResultRow], list[CrashCell], list[StaleExpectation]]:
    """``load_run``, ``load_crash_cells`` and the stale expectations of the same run, read in one connection."""
    if not out_dir.is_dir():
        raise ConfigurationError(
            f"no toolproof results at out_dir={str(out_dir)!r}: it is not a folder; give the folder a run was written to"
        )
    db_path = out_dir / RESULTS_FILE
    if not db_path.is_file():
        raise ConfigurationError(
            f"no toolproof results at out_dir={str(out_dir)!r}: {RESULTS_FILE} is missing;"
            " give the folder a run was written to"
        )
    connection = _connect(db_path, read_only=True)
    try:
        _check_schema(connection, db_path)
        runs = _load_infos(connection, db_path)
        info = _choose(runs, run_id, db_path)
        fetched = _select(connection, "results", _RESULTS_COLUMNS, info.run_id)
        crash_fetched = _select(connection, "crash_matrix", _CRASH_COLUMNS, info.run_id)
        stale_fetched = _select(connection, "stale_expectations", _STALE_COLUMNS, info.run_id)
    finally:
        connection.close()
    rows = _validated(ResultRow, _RESULTS_COLUMNS, fetched, db_path, f"a results row of run_id={info.run_id!r}")
    cells = _validated(CrashCell, _CRASH_COLUMNS, crash_fetched, db_path, f"a crash cell of run_id={info.run_id!r}")
    stale = _validated(
        StaleExpectation, _STALE_COLUMNS, stale_fetched, db_path, f"a stale expectation of run_id={info.run_id!r}"
    )
    return (
        info,
        sorted(rows, key=row_order(info)),
        sorted(cells, key=crash_order(info)),
        sorted(stale, key=stale_order(info)),
    )


def _insert(
    connection: duckdb.DuckDBPyConnection,
    table: str,
    columns: tuple[tuple[str, str], ...],
    records: Sequence[BaseModel],
) -> None:
    # Table and column names are the constants above, never input.
    if not records:
        return
    names = ", ".join(name for name, _ in columns)
    connection.executemany(
        f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})",
        [[_stored_value(record, name) for name, _ in columns] for record in records],
    )


def _select(
    connection: duckdb.DuckDBPyConnection, table: str, columns: tuple[tuple[str, str], ...], run_id: str
) -> list[tuple[object, ...]]:
    # Table and column names are the constants above, never input. A missing optional table holds nothing.
    if table not in _tables(connection):
        return []
    names = ", ".join(name for name, _ in columns)
    return connection.execute(f"SELECT {names} FROM {table} WHERE run_id = ?", [run_id]).fetchall()


def _validated(
    model: type[_Model],
    columns: tuple[tuple[str, str], ...],
    fetched: list[tuple[object, ...]],
    db_path: Path,
    what: str,
) -> list[_Model]:
    names = [name for name, _ in columns]
    try:
        return [model.model_validate(dict(zip(names, values, strict=True))) for values in fetched]
    except ValidationError as exc:
        raise _not_ours(db_path, f"{what} is invalid ({_first_line(exc)})") from None


def _stored_value(record: BaseModel, name: str) -> object:
    value = getattr(record, name)
    return value.value if isinstance(value, Verdict) else value


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
    # Table and column names are the constants above, never input, so formatting them in is safe.
    present = _tables(connection)
    for table, columns in (_SCHEMA | _OPTIONAL).items():
        if table in present:
            continue
        spec = ", ".join(f"{name} {kind}" for name, kind in columns)
        key = ", PRIMARY KEY (run_id)" if table == "runs" else ""
        connection.execute(f"CREATE TABLE {table} ({spec}{key})")


def _check_schema(connection: duckdb.DuckDBPyConnection, db_path: Path) -> None:
    present = _tables(connection)
    for table, expected in (_SCHEMA | _OPTIONAL).items():
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
        if tuple((str(n), str(k)) for n, k in found) != expected:
            raise _not_ours(db_path, f"table {table!r} has columns {[str(n) for n, _ in found]}")


def _load_infos(connection: duckdb.DuckDBPyConnection, db_path: Path) -> list[RunInfo]:
    fetched = connection.execute(
        "SELECT run_id, implementations, selected_rules, started_at, toolproof_version, profiles"
        " FROM runs ORDER BY rowid"
    ).fetchall()
    infos: list[RunInfo] = []
    for run_id, implementations, rules, started_at, version, profiles in fetched:
        try:
            infos.append(
                RunInfo(
                    run_id=run_id,
                    implementations=json.loads(implementations),
                    selected_rules=json.loads(rules),
                    started_at=started_at,
                    toolproof_version=version,
                    profiles=json.loads(profiles),
                )
            )
        except (ValidationError, ValueError, TypeError) as exc:
            raise _not_ours(db_path, f"run_id={run_id!r} is invalid ({_first_line(exc)})") from None
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
    known = [info.run_id for info in runs]
    raise ConfigurationError(f"run_id={run_id!r} is not in {str(db_path)!r}: it holds runs {known!r}")


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
