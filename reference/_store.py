"""The reference store through sqlmodel: the invocation rows, their events and counters on the hot path.

The tables are in ``_tables``; the MCP catalog history and session pins in ``_store_mcp``. Every public
method is one committed transaction (a persist step or a read).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Table, bindparam, event, insert, inspect, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine, RowMapping
from sqlalchemy.exc import IntegrityError, NoResultFound
from sqlmodel import Session, SQLModel, create_engine

from toolproof.spec import EventKind, FaultPlan, InvocationStatus

from ._faults import FaultInjector, typed_faults
from ._store_hot import HotPath, event_rows, sqlite_pragmas
from ._store_mcp import PIN_READS, McpRecords
from ._store_reads import READS, read
from ._store_schema import create_tables
from ._tables import EventTable, InvocationTable, MetricTable, column_values


class DuplicateKey(Exception):
    """An invocation with this idempotency key already exists."""


# The hot path runs SQLAlchemy Core on the sqlmodel tables: statements are built once (so their cache keys and
# compiled forms are reused), rows come back as mappings, and a compare-and-set returns its row with RETURNING.
_INVOCATIONS: Table = SQLModel.metadata.tables[InvocationTable.__tablename__]
_EVENTS: Table = SQLModel.metadata.tables[EventTable.__tablename__]
_METRICS: Table = SQLModel.metadata.tables[MetricTable.__tablename__]
_EVENT_SOURCE = (_INVOCATIONS.c.run_id, _INVOCATIONS.c.status, _INVOCATIONS.c.reason_code)

_BY_ID = core_select(_INVOCATIONS).where(_INVOCATIONS.c.invocation_id == bindparam("b_id"))
_BY_KEY = core_select(_INVOCATIONS).where(_INVOCATIONS.c.idempotency_key == bindparam("b_key"))
_IDENTICAL = core_select(_INVOCATIONS).where(
    _INVOCATIONS.c.run_id == bindparam("b_run"), _INVOCATIONS.c.call_hash == bindparam("b_hash")
)
_INSERT_INVOCATION = insert(_INVOCATIONS)
_INSERT_EVENT = insert(_EVENTS)
# SET comes from the keys of the parameters passed with each execution (SQLAlchemy compiles one form per key set).
_UPDATE_BY_ID = update(_INVOCATIONS).where(_INVOCATIONS.c.invocation_id == bindparam("b_id"))
_UPDATE_IF_STATUS = _UPDATE_BY_ID.where(_INVOCATIONS.c.status == bindparam("b_status"))
_CLAIM_UNOWNED = _UPDATE_IF_STATUS.where(_INVOCATIONS.c.lease_owner.is_(None))
_CLAIM_OWNED = _UPDATE_IF_STATUS.where(_INVOCATIONS.c.lease_owner == bindparam("b_owner"))
# The hold: only a row recorded and never held (nor suspended) may be held, by exactly one worker.
_HOLD = _UPDATE_IF_STATUS.where(_INVOCATIONS.c.suspended_at.is_(None))
_MARK = _UPDATE_BY_ID.where(_INVOCATIONS.c.effect_sent_at.is_(None))
_METRIC_BUMP = update(_METRICS).where(_METRICS.c.name == bindparam("b_name")).values(value=_METRICS.c.value + 1)
_INSERT_METRIC = insert(_METRICS)


@functools.cache
def _upsert_metric(dialect: str) -> Any:
    """One-statement counter increment where the dialect has ON CONFLICT; None elsewhere (update, then insert)."""
    module: Any = {"sqlite": sqlite, "postgresql": postgresql}.get(dialect)
    if module is None:
        return None
    statement = module.insert(_METRICS).values(name=bindparam("b_name"), value=1)
    return statement.on_conflict_do_update(index_elements=[_METRICS.c.name], set_={"value": _METRICS.c.value + 1})


# What an event copies from the row it is about, returned by the write itself.
_RETURNS = {"update": _UPDATE_BY_ID, "update_if_status": _UPDATE_IF_STATUS, "claim": _CLAIM_UNOWNED}
_RETURNS = {name: row.returning(*_EVENT_SOURCE) for name, row in (_RETURNS | {"claim_owned": _CLAIM_OWNED}).items()}
_PLAIN = {"by_id": _BY_ID, "by_key": _BY_KEY, "identical": _IDENTICAL, "insert": _INSERT_INVOCATION, "mark": _MARK}


def _invocation(mapping: RowMapping) -> InvocationTable:
    return InvocationTable(**mapping)


class Store(McpRecords):
    """The reference store over one database URL."""

    def __init__(self, url: str, fault: FaultPlan | None = None) -> None:
        self.faults = FaultInjector(fault)
        """The instance's fault plan (``InstanceConfig.fault``): the writes it fails, where and how."""
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
        self.engine: Engine = create_engine(url, pool_pre_ping=not url.startswith("sqlite"))
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", sqlite_pragmas)
        create_tables(self.engine)
        # SQLite: the hot path's methods run on one driver connection (``_store_hot``); PostgreSQL keeps Core.
        hot = _PLAIN | _RETURNS | PIN_READS | READS | {"event": _INSERT_EVENT, "metric": _upsert_metric("sqlite")}
        self._hot = HotPath(self.engine, hot) if self.engine.dialect.name == "sqlite" else None
        if self._hot is not None:
            self._hot.connection.before_commit = self.faults.fail_sqlite
        dialect = self.engine.dialect
        self._returning = bool(dialect.update_returning)
        self._upsert = _upsert_metric(dialect.name)

    @classmethod
    def in_directory(cls, directory: Path, fault: FaultPlan | None = None) -> Store:
        """A SQLite file store in ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        return cls(f"sqlite:///{directory / 'toolproof.sqlite3'}", fault)

    def close(self) -> None:
        """Release connections."""
        if self._hot is not None:
            self._hot.close()
        self.engine.dispose()

    @property
    def hot_commits(self) -> int:
        """Transactions the SQLite hot path committed, past the engine's events (``toolproof bench`` counts them)."""
        return self._hot.connection.commits if self._hot is not None else 0

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One committed transaction."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session
            session.commit()

    def _one_by_id(self, connection: Connection, invocation_id: str) -> RowMapping | None:
        return connection.execute(_BY_ID, {"b_id": invocation_id}).mappings().first()

    @typed_faults
    def find_by_key(self, key: str) -> InvocationTable | None:
        """The invocation with ``key``, if any."""
        if self._hot is not None:
            row = self._hot.one("by_key", {"b_key": key})
            return None if row is None else InvocationTable(**row)
        with self.engine.connect() as connection:
            found = connection.execute(_BY_KEY, {"b_key": key}).mappings().first()
        return None if found is None else _invocation(found)

    @typed_faults
    def by_call(self, run_id: str, step_number: int, call_id: str) -> InvocationTable | None:
        """The first invocation recorded for ``call_id`` in that run and step."""
        found = self._read("by_call", {"b_run": run_id, "b_step": step_number, "b_call": call_id})
        return InvocationTable(**found[0]) if found else None

    def _read(self, name: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        return read(self._hot, self.engine, name, values)

    def tables(self) -> list[str]:
        """Table names in the store."""
        return sorted(inspect(self.engine).get_table_names())

    @typed_faults
    def _columns_or_none(self, invocation_id: str) -> dict[str, Any] | None:
        if self._hot is not None:
            return self._hot.one("by_id", {"b_id": invocation_id})
        with self.engine.connect() as connection:
            found = self._one_by_id(connection, invocation_id)
        return None if found is None else dict(found)

    def get_or_none(self, invocation_id: str) -> InvocationTable | None:
        """The invocation ``invocation_id``, if it exists."""
        found = self._columns_or_none(invocation_id)
        return None if found is None else InvocationTable(**found)

    def columns(self, invocation_id: str) -> dict[str, Any]:
        """The column values of invocation ``invocation_id`` (step 8 reads them without a row object);
        NoResultFound when there is none."""
        found = self._columns_or_none(invocation_id)
        if found is None:
            raise NoResultFound(f"no invocation {invocation_id!r}")
        return found

    def get(self, invocation_id: str) -> InvocationTable:
        """The invocation ``invocation_id``."""
        found = self.get_or_none(invocation_id)
        if found is None:
            raise NoResultFound(f"no invocation {invocation_id!r}")
        return found

    @typed_faults
    def insert(
        self, row: InvocationTable | Mapping[str, Any], events: Sequence[EventKind], metrics: Sequence[str] = ()
    ) -> None:
        """Insert ``row`` (a table row, or its column values) with its events in one transaction; DuplicateKey
        when the key exists."""
        values = column_values(row, _INVOCATIONS) if isinstance(row, InvocationTable) else dict(row)
        if self._hot is not None:
            try:
                self._hot.insert(values, events, metrics)
            except sqlite3.IntegrityError:
                raise DuplicateKey(values["idempotency_key"]) from None
            return
        try:
            with self.engine.begin() as connection:
                connection.execute(_INSERT_INVOCATION, values)
                self._emit(
                    connection,
                    values["run_id"],
                    values["invocation_id"],
                    values["status"],
                    values.get("reason_code"),
                    events,
                )
                self._bump(connection, metrics)
                self.faults.fail_core(connection)
        except IntegrityError:
            raise DuplicateKey(values["idempotency_key"]) from None

    @typed_faults
    def update(
        self,
        invocation_id: str,
        changes: dict[str, Any],
        events: Sequence[EventKind] = (),
        metrics: Sequence[str] = (),
        *,
        expect_status: InvocationStatus | None = None,
    ) -> bool:
        """Apply ``changes`` (and events, metrics) in one transaction; False when ``expect_status`` no longer holds."""
        if self._hot is not None and changes:
            params = changes | {"b_id": invocation_id}
            name = "update"
            if expect_status is not None:
                name, params["b_status"] = "update_if_status", expect_status.value
            if self._hot.update(name, params, events, metrics):
                return True
            if self.get_or_none(invocation_id) is None:
                raise NoResultFound(f"no invocation {invocation_id!r}")
            return False  # The row exists, so only the status condition can have failed.
        with self.engine.begin() as connection:
            found = self._apply(connection, invocation_id, changes, expect_status)
            if found is None:
                return False
            self._emit(connection, found["run_id"], invocation_id, found["status"], found["reason_code"], events)
            self._bump(connection, metrics)
            self.faults.fail_core(connection)
        return True

    def _apply(
        self, connection: Connection, invocation_id: str, changes: dict[str, Any], expect: InvocationStatus | None
    ) -> RowMapping | None:
        """What events say of the row after ``changes`` (run, status, reason); None when its status is not
        ``expect``. NoResultFound when there is no row."""
        if changes and self._returning:
            params = changes | {"b_id": invocation_id}
            if expect is None:
                statement = _RETURNS["update"]
            else:
                statement, params["b_status"] = _RETURNS["update_if_status"], expect.value
            found = connection.execute(statement, params).mappings().first()
            if found is None and self._one_by_id(connection, invocation_id) is None:
                raise NoResultFound(f"no invocation {invocation_id!r}")
            return found  # None: the row exists, so only the status condition can have failed.
        # Nothing to write, or no RETURNING: read the row, compare, then write and read it again.
        row = self._one_by_id(connection, invocation_id)
        if row is None:
            raise NoResultFound(f"no invocation {invocation_id!r}")
        if expect is not None and row["status"] != expect:
            return None
        if changes:
            connection.execute(_UPDATE_BY_ID, changes | {"b_id": invocation_id})
            row = self._one_by_id(connection, invocation_id)
            assert row is not None  # Invariant: the row was there a statement ago, in this transaction.
        return row

    @typed_faults
    def claim(
        self, invocation_id: str, *, expect_status: str, expect_owner: str | None, changes: dict[str, Any]
    ) -> bool:
        """Compare-and-set the lease: apply ``changes`` only if status and owner are still as read; False when
        another worker changed the row first. The row then holds ``changes``, so nothing is read back."""
        params = changes | {"b_id": invocation_id, "b_status": expect_status}
        if expect_owner is not None:
            params["b_owner"] = expect_owner
        if self._hot is not None:
            name = "claim" if expect_owner is None else "claim_owned"
            return self._hot.update(name, params, [EventKind.STARTED], ())
        with self.engine.begin() as connection:
            if self._returning:
                returning = _RETURNS["claim"] if expect_owner is None else _RETURNS["claim_owned"]
                claimed = connection.execute(returning, params).mappings().first()
            else:
                plain = _CLAIM_UNOWNED if expect_owner is None else _CLAIM_OWNED
                hit = connection.execute(plain, params).rowcount == 1
                claimed = self._one_by_id(connection, invocation_id) if hit else None
            if claimed is None:
                return False
            started = [EventKind.STARTED]
            self._emit(connection, claimed["run_id"], invocation_id, claimed["status"], claimed["reason_code"], started)
            self.faults.fail_core(connection)
        return True

    @typed_faults
    def hold(self, invocation_id: str, changes: dict[str, Any], events: Sequence[EventKind]) -> bool:
        """Compare-and-set into a held state (an approval hold or a control suspension): apply ``changes`` and
        ``events`` only while the row is RECORDED and not suspended; False when another worker held or claimed
        it first."""
        params = changes | {"b_id": invocation_id, "b_status": InvocationStatus.RECORDED.value}
        with self.engine.begin() as connection:
            if connection.execute(_HOLD, params).rowcount != 1:
                return False
            row = self._one_by_id(connection, invocation_id)
            assert row is not None  # Invariant: the statement just changed it, in this transaction.
            self._emit(connection, row["run_id"], invocation_id, row["status"], row["reason_code"], events)
            self.faults.fail_core(connection)
        return True

    @typed_faults
    def mark_effect_sent(self, invocation_id: str, now: float) -> None:
        """Commit the watermark; returns after the commit."""
        if self._hot is not None:
            if not self._hot.mark(invocation_id, now) and self.get_or_none(invocation_id) is None:
                raise NoResultFound(f"no invocation {invocation_id!r}")
            return
        with self.engine.begin() as connection:
            # No row changed: marked before (the first mark stands), or there is no such row.
            marked = connection.execute(_MARK, {"b_id": invocation_id, "effect_sent_at": now}).rowcount == 1
            if not marked and self._one_by_id(connection, invocation_id) is None:
                raise NoResultFound(f"no invocation {invocation_id!r}")
            self.faults.fail_core(connection)

    @typed_faults
    def identical(self, run_id: str, call_hash: str) -> list[InvocationTable]:
        """Earlier calls of ``run_id`` with the same tool and canonical arguments."""
        if self._hot is not None:
            found_rows = self._hot.all("identical", {"b_run": run_id, "b_hash": call_hash})
            return [InvocationTable(**row) for row in found_rows]
        with self.engine.connect() as connection:
            found = connection.execute(_IDENTICAL, {"b_run": run_id, "b_hash": call_hash}).mappings().all()
        return [_invocation(row) for row in found]

    @typed_faults
    def expired_holds(self, now: float) -> list[InvocationTable]:
        """Approval holds past their bound."""
        return [InvocationTable(**row) for row in self._read("expired_holds", {"b_now": now})]

    @typed_faults
    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        """Rows a dead worker left: RUNNING past the lease, or recorded and never claimed within one.

        Invariant: suspended control calls are excluded by predicate, whatever their age.
        """
        return [InvocationTable(**row) for row in self._read("orphans", {"b_now": now, "b_stranded": now - lease_s})]

    def invocations(self, run_id: str) -> list[InvocationTable]:
        """Rows of ``run_id`` in creation order."""
        return [InvocationTable(**row) for row in self._read("run_rows", {"b_run": run_id})]

    def events(self, run_id: str) -> list[EventTable]:
        """Events of ``run_id`` in emission order."""
        return [EventTable(**row) for row in self._read("run_events", {"b_run": run_id})]

    def metrics(self) -> dict[str, int]:
        """All counters."""
        return {row["name"]: row["value"] for row in self._read("metrics", {})}

    def _emit(
        self,
        connection: Connection,
        run_id: str,
        invocation_id: str,
        status: str | None,
        reason_code: str | None,
        events: Sequence[EventKind],
    ) -> None:
        if events:
            connection.execute(_INSERT_EVENT, event_rows(run_id, invocation_id, status, reason_code, events))

    def _bump(self, connection: Connection, metrics: Sequence[str]) -> None:
        for name in metrics:
            if self._upsert is not None:
                connection.execute(self._upsert, {"b_name": name})
            elif connection.execute(_METRIC_BUMP, {"b_name": name}).rowcount == 0:
                connection.execute(_INSERT_METRIC, {"name": name, "value": 1})
