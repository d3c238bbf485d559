"""The reference store through sqlmodel: ``tool_invocations``, ``tool_events``, ``tool_metrics``, and for MCP
``mcp_catalog_history`` and ``mcp_session_pins``.

Every public method is one committed transaction (a persist step or a read).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import UniqueConstraint, event, func, inspect, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, col, create_engine, select

from toolproof.spec import EventKind, InvocationStatus, ReasonCode


class InvocationTable(SQLModel, table=True):
    """One row per invocation (the ADR's ``tool_invocations``)."""

    __tablename__ = "tool_invocations"

    seq: int | None = Field(default=None, primary_key=True)
    invocation_id: str = Field(unique=True, index=True)
    tenant: str
    run_id: str = Field(index=True)
    step_number: int
    call_id: str
    tool_name: str
    tool_version: str | None = None
    attempt: int = 0
    idempotency_key: str = Field(unique=True)
    call_hash: str = Field(default="", index=True)
    arguments_json: str
    status: str
    reason_code: str | None = None
    decision: str | None = None
    origin_trust: str
    argument_trust: str
    effect_sent_at: float | None = None
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    suspended_at: float | None = None
    hold_expires_at: float | None = None
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    disposition_json: str | None = None


class EventTable(SQLModel, table=True):
    """Tool events: classification only, never payload."""

    __tablename__ = "tool_events"

    seq: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    invocation_id: str
    kind: str
    status: str | None = None
    reason_code: str | None = None
    data_json: str = "{}"
    created_at: float


class MetricTable(SQLModel, table=True):
    """Counters that survive a restart."""

    __tablename__ = "tool_metrics"

    name: str = Field(primary_key=True)
    value: int = 0


class CatalogHistoryTable(SQLModel, table=True):
    """Decision 9's catalog history: every change the MCP adapter saw, in order."""

    __tablename__ = "mcp_catalog_history"

    seq: int | None = Field(default=None, primary_key=True)
    server_id: str = Field(index=True)
    kind: str
    observed_at: float
    remote_name: str | None = None
    registered_name: str | None = None
    definition_sha256: str | None = None


class SessionPinTable(SQLModel, table=True):
    """What a session advertised, pinned when it started (decision 9; ADR-0020's pin extended to MCP)."""

    __tablename__ = "mcp_session_pins"
    __table_args__ = (UniqueConstraint("run_id", "kind", "name"),)

    seq: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    kind: str
    """``tool`` or ``skill``."""
    name: str
    server_id: str
    remote_name: str | None = None
    definition_sha256: str
    body_json: str
    """The pinned ToolSpec (tool) or Skill (skill), as JSON."""
    as_of_seq: int


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers see committed rows while a tool runs; FULL fsyncs every commit.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


class DuplicateKey(Exception):
    """An invocation with this idempotency key already exists."""


class Store:
    """The reference store over one database URL."""

    def __init__(self, url: str) -> None:
        if url.startswith("postgresql://"):
            url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
        self.engine: Engine = create_engine(url, pool_pre_ping=not url.startswith("sqlite"))
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        SQLModel.metadata.create_all(self.engine)

    @classmethod
    def in_directory(cls, directory: Path) -> Store:
        """A SQLite file store in ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        return cls(f"sqlite:///{directory / 'toolproof.sqlite3'}")

    def close(self) -> None:
        """Release connections."""
        self.engine.dispose()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One committed transaction."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session
            session.commit()

    def find_by_key(self, key: str) -> InvocationTable | None:
        """The invocation with ``key``, if any."""
        with Session(self.engine, expire_on_commit=False) as session:
            return session.exec(select(InvocationTable).where(InvocationTable.idempotency_key == key)).first()

    def by_call(self, run_id: str, step_number: int, call_id: str) -> InvocationTable | None:
        """The first invocation recorded for ``call_id`` in that run and step."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(InvocationTable).where(
                InvocationTable.run_id == run_id,
                InvocationTable.step_number == step_number,
                InvocationTable.call_id == call_id,
            )
            return session.exec(stmt.order_by(col(InvocationTable.seq))).first()

    def tables(self) -> list[str]:
        """Table names in the store."""
        return sorted(inspect(self.engine).get_table_names())

    def get_or_none(self, invocation_id: str) -> InvocationTable | None:
        """The invocation ``invocation_id``, if it exists."""
        with Session(self.engine, expire_on_commit=False) as session:
            return session.exec(select(InvocationTable).where(InvocationTable.invocation_id == invocation_id)).first()

    def get(self, invocation_id: str) -> InvocationTable:
        """The invocation ``invocation_id``."""
        with Session(self.engine, expire_on_commit=False) as session:
            row = session.exec(select(InvocationTable).where(InvocationTable.invocation_id == invocation_id)).one()
            return row

    def insert(self, row: InvocationTable, events: Sequence[EventKind], metrics: Sequence[str] = ()) -> None:
        """Insert ``row`` with its events in one transaction; DuplicateKey when the key exists."""
        try:
            with self.transaction() as session:
                session.add(row)
                self._emit(session, row, events)
                self._bump(session, metrics)
        except IntegrityError:
            raise DuplicateKey(row.idempotency_key) from None

    def update(
        self,
        invocation_id: str,
        changes: dict[str, Any],
        events: Sequence[EventKind] = (),
        metrics: Sequence[str] = (),
        *,
        expect_status: InvocationStatus | None = None,
    ) -> InvocationTable | None:
        """Apply ``changes`` (and events, metrics) in one transaction; None when ``expect_status`` no longer holds."""
        with self.transaction() as session:
            row = session.exec(select(InvocationTable).where(InvocationTable.invocation_id == invocation_id)).one()
            if expect_status is not None and row.status != expect_status:
                return None
            for name, value in changes.items():
                setattr(row, name, value)
            session.add(row)
            self._emit(session, row, events)
            self._bump(session, metrics)
            return row

    def claim(
        self, invocation_id: str, *, expect_status: str, expect_owner: str | None, changes: dict[str, Any]
    ) -> InvocationTable | None:
        """Compare-and-set the lease: apply ``changes`` only if status and owner are still as read."""
        with self.transaction() as session:
            stmt = (
                update(InvocationTable)
                .where(col(InvocationTable.invocation_id) == invocation_id)
                .where(col(InvocationTable.status) == expect_status)
                .where(
                    col(InvocationTable.lease_owner).is_(None)
                    if expect_owner is None
                    else col(InvocationTable.lease_owner) == expect_owner
                )
                .values(**changes)
            )
            if session.execute(stmt).rowcount != 1:  # type: ignore[attr-defined]
                return None
            row = session.exec(select(InvocationTable).where(InvocationTable.invocation_id == invocation_id)).one()
            self._emit(session, row, [EventKind.STARTED])
            return row

    def mark_effect_sent(self, invocation_id: str, now: float) -> None:
        """Commit the watermark; returns after the commit."""
        with self.transaction() as session:
            row = session.exec(select(InvocationTable).where(InvocationTable.invocation_id == invocation_id)).one()
            if row.effect_sent_at is None:
                row.effect_sent_at = now
                session.add(row)

    def identical(self, run_id: str, call_hash: str) -> list[InvocationTable]:
        """Earlier calls of ``run_id`` with the same tool and canonical arguments."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(InvocationTable).where(
                InvocationTable.run_id == run_id, InvocationTable.call_hash == call_hash
            )
            return list(session.exec(stmt).all())

    def expired_holds(self, now: float) -> list[InvocationTable]:
        """Approval holds past their bound."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(InvocationTable).where(
                InvocationTable.status == InvocationStatus.AWAITING_APPROVAL.value,
                col(InvocationTable.hold_expires_at) < now,
            )
            return list(session.exec(stmt.order_by(col(InvocationTable.seq))).all())

    def orphans(self, now: float, lease_s: float) -> list[InvocationTable]:
        """Rows a dead worker left: RUNNING past the lease, or recorded and never claimed within one.

        Invariant: suspended control calls are excluded by predicate, whatever their age.
        """
        with Session(self.engine, expire_on_commit=False) as session:
            running = (col(InvocationTable.status) == InvocationStatus.RUNNING.value) & (
                col(InvocationTable.lease_expires_at) < now
            )
            stranded = (col(InvocationTable.status) == InvocationStatus.RECORDED.value) & (
                col(InvocationTable.created_at) < now - lease_s
            )
            stmt = select(InvocationTable).where(col(InvocationTable.suspended_at).is_(None), running | stranded)
            return list(session.exec(stmt.order_by(col(InvocationTable.seq))).all())

    def invocations(self, run_id: str) -> list[InvocationTable]:
        """Rows of ``run_id`` in creation order."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(InvocationTable).where(InvocationTable.run_id == run_id).order_by(col(InvocationTable.seq))
            return list(session.exec(stmt).all())

    def events(self, run_id: str) -> list[EventTable]:
        """Events of ``run_id`` in emission order."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(EventTable).where(EventTable.run_id == run_id).order_by(col(EventTable.seq))
            return list(session.exec(stmt).all())

    def metrics(self) -> dict[str, int]:
        """All counters."""
        with Session(self.engine) as session:
            return {m.name: m.value for m in session.exec(select(MetricTable)).all()}

    def record_catalog(self, changes: Sequence[CatalogHistoryTable]) -> None:
        """Append catalog-history entries in one transaction."""
        if changes:
            with self.transaction() as session:
                session.add_all(changes)

    def catalog_history(self, server_id: str | None = None) -> list[CatalogHistoryTable]:
        """Catalog-history entries (of one server, or all) in recording order."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(CatalogHistoryTable)
            if server_id is not None:
                stmt = stmt.where(CatalogHistoryTable.server_id == server_id)
            return list(session.exec(stmt.order_by(col(CatalogHistoryTable.seq))).all())

    def last_catalog_seq(self) -> int:
        """The last catalog-history seq (0 when empty)."""
        with Session(self.engine) as session:
            return session.exec(select(func.max(CatalogHistoryTable.seq))).one() or 0

    def pins(self, run_id: str) -> list[SessionPinTable]:
        """The session pin of ``run_id`` (empty: the session has not started)."""
        with Session(self.engine, expire_on_commit=False) as session:
            stmt = select(SessionPinTable).where(SessionPinTable.run_id == run_id)
            return list(session.exec(stmt.order_by(col(SessionPinTable.seq))).all())

    def pin(self, rows: Sequence[SessionPinTable]) -> bool:
        """Write a session's pin in one transaction; False when another worker pinned it first."""
        try:
            with self.transaction() as session:
                session.add_all(rows)
        except IntegrityError:
            return False
        return True

    def unpin(self, run_id: str) -> None:
        """Forget the session pin of ``run_id`` (a witness applies catalog changes mid-session with it)."""
        with self.transaction() as session:
            for row in session.exec(select(SessionPinTable).where(SessionPinTable.run_id == run_id)).all():
                session.delete(row)

    @staticmethod
    def _emit(session: Session, row: InvocationTable, events: Sequence[EventKind]) -> None:
        now = time.time()
        for kind in events:
            session.add(
                EventTable(
                    run_id=row.run_id,
                    invocation_id=row.invocation_id,
                    kind=kind.value,
                    status=row.status,
                    reason_code=row.reason_code,
                    created_at=now,
                )
            )

    @staticmethod
    def _bump(session: Session, metrics: Sequence[str]) -> None:
        for name in metrics:
            metric = session.get(MetricTable, name) or MetricTable(name=name, value=0)
            metric.value += 1
            session.add(metric)


def dump_json(value: Any) -> str:
    """Canonical JSON text (sorted members, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def reason_or_none(value: str | None) -> ReasonCode | None:
    """Parse a stored reason code."""
    return ReasonCode(value) if value is not None else None
