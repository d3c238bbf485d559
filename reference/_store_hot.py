"""The store's hot path on SQLite: the same statements as ``_store``'s Core path, run on one driver connection.

SQLAlchemy compiles each statement once (per set of columns it sets) and hands out its driver
connection (``engine.raw_connection()``, so the engine's connect hook has set WAL, FULL and the busy
timeout); a call's reads and its persist steps then run on that ``sqlite3`` connection with no pool
checkout, no cache-key generation and no row objects. Transactions are what they are on the Core path:
the driver opens one before the first write and ``commit`` ends it, one per public store method.
PostgreSQL keeps the Core path (``Store`` uses this only for SQLite).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import Enum
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from toolproof.spec import EventKind, TrustLabel

_TRUST_COLUMNS = ("origin_trust", "argument_trust")


def sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """The engine's connect hook on SQLite: WAL, FULL synchronous commits, a busy timeout."""
    # WAL lets readers see committed rows while a tool runs; FULL fsyncs every commit.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


_Form = tuple[str, tuple[str, ...], dict[str, Any]]
"""A compiled statement: its SQL text, the names of its positional parameters, and the literal values it holds."""

_FORMS: dict[tuple[int, str, str, frozenset[str]], tuple[ClauseElement, _Form]] = {}
"""Compiled forms shared by every store of the process: (statement, dialect, paramstyle, columns) -> form. The
statement is kept beside its form, so its id is never another's while the entry lives."""


class Statement:
    """A Core statement compiled for the engine's dialect, for each set of columns it is executed with (once per
    process: every store on SQLite compiles a statement to the same text)."""

    def __init__(self, engine: Engine, statement: ClauseElement) -> None:
        self._engine = engine
        self._statement = statement
        dialect = engine.dialect
        self._where = (id(statement), dialect.name, str(dialect.paramstyle))

    def bind(self, values: Mapping[str, Any]) -> tuple[str, list[Any]]:
        """SQL text and positional parameters for ``values`` (literal values the statement holds included)."""
        keys = frozenset(values)
        key = (*self._where, keys)
        found = _FORMS.get(key)
        if found is None or found[0] is not self._statement:
            compiled = self._statement.compile(dialect=self._engine.dialect, column_keys=sorted(keys))
            assert isinstance(compiled, SQLCompiler)  # Invariant: a DML or SELECT statement compiles to SQL.
            positions = tuple(compiled.positiontup or ())
            found = _FORMS[key] = (self._statement, (compiled.string, positions, dict(compiled.params)))
        sql, positions, literals = found[1]
        return sql, [_plain(values[name]) if name in values else literals[name] for name in positions]


def _plain(value: Any) -> Any:
    # What the Core path's bind processors do for the one non-native type (a trust label is stored as its value).
    return value.value if isinstance(value, Enum) else value


class HotConnection:
    """One driver connection of ``engine`` and a lock: the store's methods run on it one at a time."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._proxy = engine.raw_connection()
        self.connection = self._driver_connection()
        self._lock = threading.RLock()
        self.commits = 0
        """Transactions that committed a write on this connection (``toolproof bench`` counts them)."""
        self.before_commit: Callable[[sqlite3.Connection], None] = _nothing
        """Called inside each transaction after its statements, before it commits (the store's fault plan)."""

    def _driver_connection(self) -> sqlite3.Connection:
        connection = self._proxy.driver_connection
        assert isinstance(connection, sqlite3.Connection)  # Invariant: Store builds this only for SQLite.
        return connection

    def close(self) -> None:
        """Give the connection back (Store.close disposes of the pool after)."""
        self._proxy.close()

    def _reconnect(self) -> None:
        """The connection was lost: drop it from the pool and take a fresh one, so the next call is served."""
        self._proxy.invalidate()
        self._proxy = self.engine.raw_connection()
        self.connection = self._driver_connection()

    def one(self, statement: Statement, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first row ``statement`` returns, as a column-name mapping, or None (no transaction is opened)."""
        rows = self.all(statement, values, limit=1)
        return rows[0] if rows else None

    def all(self, statement: Statement, values: Mapping[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
        """Every row ``statement`` returns (at most ``limit``), as column-name mappings."""
        sql, params = statement.bind(values)
        with self._lock:
            cursor = self.connection.execute(sql, params)
            rows = cursor.fetchmany(limit) if limit is not None else cursor.fetchall()
            names = [column[0] for column in cursor.description] if rows else []
            cursor.close()
        return [_loaded(dict(zip(names, row, strict=True))) for row in rows]

    @contextmanager
    def transaction(self) -> Iterator[Writer]:
        """One committed transaction; rolled back on any error, which propagates."""
        with self._lock:
            try:
                yield Writer(self.connection)
                self.before_commit(self.connection)
                if self.connection.in_transaction:
                    self.commits += 1
                self.connection.commit()
            except BaseException:
                try:
                    self.connection.rollback()
                except sqlite3.ProgrammingError:  # Closed under us: nothing was committed; serve on a new one.
                    self._reconnect()
                raise


def _nothing(_connection: sqlite3.Connection) -> None:
    return None


def _loaded(row: dict[str, Any]) -> dict[str, Any]:
    # What the Core path's result processors do: a stored trust label is loaded as the enum.
    for name in _TRUST_COLUMNS:
        value = row.get(name)
        if value is not None:
            row[name] = TrustLabel(value)
    return row


class Writer:
    """The statements of one open transaction."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def execute(self, statement: Statement, values: Mapping[str, Any]) -> int:
        """Run a write; the number of rows it changed."""
        sql, params = statement.bind(values)
        return self.connection.execute(sql, params).rowcount

    def returning(self, statement: Statement, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """Run a write with RETURNING; the first row it returned, or None."""
        sql, params = statement.bind(values)
        cursor = self.connection.execute(sql, params)
        row = cursor.fetchone()
        cursor.fetchall()  # Exhaust it: the statement is done before the next one runs.
        return tuple(row) if row is not None else None

    def many(self, statement: Statement, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run a write once per row (all rows share one set of columns)."""
        if rows:
            sql, _ = statement.bind(rows[0])
            self.connection.executemany(sql, [statement.bind(row)[1] for row in rows])


def event_rows(
    run_id: str,
    invocation_id: str,
    status: str | None,
    reason_code: str | None,
    events: Sequence[EventKind],
) -> list[dict[str, Any]]:
    """The rows ``events`` add: classification copied from the row they are about, never payload."""
    now = time.time()
    return [
        {
            "run_id": run_id,
            "invocation_id": invocation_id,
            "kind": kind.value,
            "status": status,
            "reason_code": reason_code,
            "data_json": "{}",
            "created_at": now,
        }
        for kind in events
    ]


class HotPath:
    """The store's hot-path methods on one driver connection; ``Store`` calls them for SQLite.

    Args:
        engine: The store's SQLite engine.
        statements: The Core statements by name (``by_id``, ``by_key``, ``identical``, ``insert``, ``event``,
            ``update``, ``update_if_status``, ``claim``, ``claim_owned``, ``mark``, ``metric``), as the
            Core path runs them.
    """

    def __init__(self, engine: Engine, statements: Mapping[str, ClauseElement]) -> None:
        self.connection = HotConnection(engine)
        self.statements = {name: Statement(engine, statement) for name, statement in statements.items()}

    def close(self) -> None:
        """Give the connection back."""
        self.connection.close()

    def one(self, name: str, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The first row statement ``name`` reads, or None."""
        return self.connection.one(self.statements[name], values)

    def all(self, name: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every row statement ``name`` reads."""
        return self.connection.all(self.statements[name], values)

    def insert(self, values: Mapping[str, Any], events: Sequence[EventKind], metrics: Sequence[str]) -> None:
        """Insert a row, its events and counters in one transaction; ``sqlite3.IntegrityError`` on a taken key."""
        with self.connection.transaction() as writer:
            writer.execute(self.statements["insert"], values)
            self._after(
                writer,
                values["run_id"],
                values["invocation_id"],
                values["status"],
                values.get("reason_code"),
                events,
                metrics,
            )

    def update(self, name: str, params: Mapping[str, Any], events: Sequence[EventKind], metrics: Sequence[str]) -> bool:
        """Statement ``name`` (an UPDATE ... RETURNING of the row ``params["b_id"]``), then the events and counters,
        one commit; False when no row matched."""
        with self.connection.transaction() as writer:
            found = writer.returning(self.statements[name], params)
            if found is None:
                return False
            self._after(writer, found[0], params["b_id"], found[1], found[2], events, metrics)
        return True

    def mark(self, invocation_id: str, now: float) -> bool:
        """Set the watermark unless set; whether a row changed."""
        with self.connection.transaction() as writer:
            return writer.execute(self.statements["mark"], {"b_id": invocation_id, "effect_sent_at": now}) == 1

    def _after(
        self,
        writer: Writer,
        run_id: str,
        invocation_id: str,
        status: str | None,
        reason_code: str | None,
        events: Sequence[EventKind],
        metrics: Sequence[str],
    ) -> None:
        writer.many(self.statements["event"], event_rows(run_id, invocation_id, status, reason_code, events))
        for name in metrics:
            writer.execute(self.statements["metric"], {"b_name": name})
